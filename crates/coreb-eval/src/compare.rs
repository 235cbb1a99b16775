//! Two systems on the same release, per task and subtask, on one measure (`coreb compare A
//! B`): means, the paired difference B − A with its bootstrap interval, the Wilcoxon
//! signed-rank p-value and the paired randomisation p-value (see [`crate::significance`]). A
//! and B are results files of `coreb eval` (which keep every query's measures) or TREC run
//! files evaluated on a release.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::beir;
use crate::leaderboard::store::release_identity;
use crate::report::{self, GroupComparisons, QueryScores, ReleaseIdentity, measure};
use crate::run::{dataset_dirs, drop_own_documents, run_coverage};
use crate::significance::{BootstrapConfig, PairedComparison, RANDOMIZATION_ROUNDS};
use anyhow::{Context as _, bail};
use coreb_trec::Run;
use coreb_trec::coreb::{AtK, CorebConfig, evaluate};
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
struct ResultsFile {
    retriever: String,
    ks: Vec<usize>,
    tasks: Vec<ResultsTask>,
    /// Absent from results of an older coreb, `null` for a bare BEIR folder.
    #[serde(default)]
    release: Option<ReleaseIdentity>,
    /// How a `--run` file met the release's queries (`partial`: `--allow-partial`).
    #[serde(default)]
    run_coverage: Option<crate::report::RunCoverage>,
}

#[derive(Deserialize)]
struct ResultsTask {
    task: String,
    #[serde(default)]
    queries: Option<Vec<QueryScores>>,
}

/// One side: its label and per task the queries' values of the compared measure (as a
/// one-cut-off `AtK`).
struct Side {
    label: String,
    tasks: BTreeMap<String, Vec<QueryScores>>,
    /// The release it was evaluated on, when known.
    release: Option<ReleaseIdentity>,
}

/// One task's comparison.
#[derive(Debug, Serialize)]
pub struct TaskComparison {
    /// The task.
    pub task: String,
    /// All its queries.
    pub overall: PairedComparison,
    /// Per subtask.
    pub by_subtask: BTreeMap<String, PairedComparison>,
}

/// The whole comparison.
#[derive(Debug, Serialize)]
pub struct Comparison {
    /// `ndcg@10` …
    pub metric: String,
    /// System A.
    pub a: String,
    /// System B.
    pub b: String,
    /// Bootstrap settings of the intervals.
    pub bootstrap: BootstrapConfig,
    /// Rounds of the randomisation test.
    pub randomization_rounds: usize,
    /// The release both were evaluated on (`null` when a side does not record it: results of
    /// a bare BEIR folder or of an older coreb).
    pub release: Option<ReleaseIdentity>,
    /// When A and B are a release and its control release: which is which (queries are
    /// paired by id, which a control shares with its release).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control: Option<ControlPair>,
    /// Per task, in name order.
    pub tasks: Vec<TaskComparison>,
}

/// A comparison of results on a release and on its control release.
#[derive(Debug, Clone, Serialize)]
pub struct ControlPair {
    /// The release (rewritten problems).
    pub release: ReleaseIdentity,
    /// Its control (the same month, not rewritten).
    pub control: ReleaseIdentity,
    /// Which side was evaluated on the control: `A` or `B`.
    pub control_side: String,
}

fn parse_metric(metric: &str) -> anyhow::Result<(String, usize)> {
    let bad = || {
        anyhow::Error::new(coreb_base::errors::Usage(format!(
            "`--metric`: expected `<measure>@<k>` with measure ndcg, map, recall, p, mrr or r_cap, got `{metric}`"
        )))
    };
    let (name, k) = metric.split_once('@').ok_or_else(bad)?;
    let name = name.to_ascii_lowercase();
    let k: usize = k.parse().map_err(|_| bad())?;
    measure(&AtK::default(), &name).ok_or_else(bad)?;
    Ok((name, k))
}

/// Keep only the value at cut-off index `i` of measure `name`, as nDCG of a one-k `AtK`.
fn pick(q: &QueryScores, name: &str, i: usize) -> QueryScores {
    let v = measure(&q.at_k, name).and_then(|v| v.get(i).copied()).unwrap_or(0.0);
    QueryScores { at_k: AtK { ndcg: vec![v], ..AtK::default() }, ..q.clone() }
}

fn load(path: &Path, release: Option<&Path>, name: &str, k: usize) -> anyhow::Result<Side> {
    let text = fs_err::read_to_string(path)?;
    if text.trim_start().starts_with('{') {
        let file: ResultsFile = serde_json::from_str(&text)
            .with_context(|| format!("`{}`: not a results file of `coreb eval`", path.display()))?;
        if let Some(c) = file.run_coverage.filter(|c| c.partial) {
            bail!(
                "`{}`: the results of a partial run ({} of {} queries scored, `--allow-partial`): a comparison needs every query of the release on both sides",
                path.display(),
                c.matched,
                c.queries
            );
        }
        let Some(i) = file.ks.iter().position(|x| *x == k) else {
            bail!("`{}`: evaluated at k = {:?}, not {k}", path.display(), file.ks);
        };
        let mut tasks = BTreeMap::new();
        for t in file.tasks {
            let Some(queries) = t.queries else {
                bail!(
                    "`{}`: task `{}` has no per-query measures (written by an older coreb); evaluate again",
                    path.display(),
                    t.task
                );
            };
            tasks.insert(t.task, queries.iter().map(|q| pick(q, name, i)).collect());
        }
        return Ok(Side { label: file.retriever, tasks, release: file.release });
    }
    let Some(release) = release else {
        bail!(
            "`{}` is a run file: `--release` names the release it is evaluated on",
            path.display()
        );
    };
    let run = Run::parse_owned(text, path)
        .with_context(|| format!("reading run `{}`", path.display()))?;
    if run.queries.is_empty() {
        return Err(coreb_trec::EvalError::empty_run(path).into());
    }
    // The check of `coreb eval --run`: a run of another release, or of part of it, is refused
    // (a query it does not rank would count as a zero on its side).
    let dirs = dataset_dirs(release)?;
    run_coverage(&run, path, release, &dirs, "test", None)?;
    let mut tasks = BTreeMap::new();
    for dir in dirs {
        let data = beir::read_dir(&dir, "test")
            .with_context(|| format!("reading BEIR folder `{}`", dir.display()))?;
        let cfg = CorebConfig::for_qrels(&data.qrels, vec![k]);
        // As `coreb eval --run` scores it: a code query's own document is not ranked.
        let (run, _) = drop_own_documents(&data, &run);
        let results = evaluate(&data.qrels, &run, &cfg);
        let task = report::task_report(&data, &results, &cfg.ks, cfg.level);
        tasks.insert(data.name.clone(), task.queries.iter().map(|q| pick(q, name, 0)).collect());
    }
    Ok(Side {
        label: format!("run:{}", path.display()),
        tasks,
        release: release_identity(release)?,
    })
}

/// What to compare.
#[derive(Debug, Clone)]
pub struct CompareOptions {
    /// System A: a results file of `coreb eval` or a TREC run file.
    pub a: PathBuf,
    /// System B, likewise.
    pub b: PathBuf,
    /// The release a run file is evaluated on.
    pub release: Option<PathBuf>,
    /// The measure, `<measure>@<k>` (`ndcg@10` …).
    pub metric: String,
    /// Bootstrap resamples of the intervals.
    pub resamples: usize,
    /// Seed of the bootstrap.
    pub seed: u64,
}

/// Compare A and B: per task, all its queries and per subtask.
pub fn compare(opts: &CompareOptions) -> anyhow::Result<Comparison> {
    let (name, k) = parse_metric(&opts.metric)?;
    let side_a = load(&opts.a, opts.release.as_deref(), &name, k)?;
    let side_b = load(&opts.b, opts.release.as_deref(), &name, k)?;
    let (mut side_a, mut side_b) = (side_a, side_b);
    let mut control = None;
    if let (Some(ra), Some(rb)) = (&side_a.release, &side_b.release)
        && ra != rb
    {
        // A release and its declared control (issue 50): the one pair of releases compared.
        let pair = if rb.is_control_of(ra) {
            Some((ra.clone(), rb.clone(), "B"))
        } else if ra.is_control_of(rb) {
            Some((rb.clone(), ra.clone(), "A"))
        } else {
            None
        };
        let Some((release, of, which)) = pair else {
            bail!(
                "A (`{}`) was evaluated on {ra} and B (`{}`) on {rb}: results of different releases are not compared (only a release and its control release, whose MANIFEST names it under `controls`)",
                opts.a.display(),
                opts.b.display()
            );
        };
        // The release's queries about problems the control leaves out have no pair.
        let (on_release, on_control) =
            if which == "B" { (&mut side_a, &side_b) } else { (&mut side_b, &side_a) };
        for (task, queries) in on_release.tasks.iter_mut() {
            let Some(ours) = on_control.tasks.get(task) else {
                continue;
            };
            let ids: std::collections::BTreeSet<&str> =
                ours.iter().map(|q| q.qid.as_str()).collect();
            queries.retain(|q| ids.contains(q.qid.as_str()));
        }
        control = Some(ControlPair { release, control: of, control_side: which.to_owned() });
    }
    let release = side_a.release.clone().filter(|_| side_b.release.is_some() && control.is_none());
    if side_a.tasks.keys().ne(side_b.tasks.keys()) {
        bail!(
            "A has tasks {:?} and B {:?}: not results on the same release",
            side_a.tasks.keys().collect::<Vec<_>>(),
            side_b.tasks.keys().collect::<Vec<_>>()
        );
    }
    let bootstrap = BootstrapConfig {
        resamples: opts.resamples,
        seed: opts.seed,
        ..BootstrapConfig::default()
    };
    let mut tasks = Vec::new();
    for (task, qa) in &side_a.tasks {
        let qb = &side_b.tasks[task];
        let GroupComparisons { mut overall, by_subtask } =
            report::compare_queries(qa, qb, "ndcg", 1, &bootstrap).map_err(|e| {
                anyhow::anyhow!("task `{task}`: {e}: not results on the same release")
            })?;
        tasks.push(TaskComparison {
            task: task.clone(),
            overall: overall.remove(0),
            by_subtask: by_subtask.into_iter().map(|(s, mut v)| (s, v.remove(0))).collect(),
        });
    }
    Ok(Comparison {
        metric: format!("{name}@{k}"),
        a: side_a.label,
        b: side_b.label,
        bootstrap,
        randomization_rounds: RANDOMIZATION_ROUNDS,
        release,
        control,
        tasks,
    })
}

/// The comparison as Markdown: one table row per task and group.
pub fn to_markdown(c: &Comparison) -> String {
    let mut out = format!(
        "# {}: B − A\n\nA = `{}`, B = `{}`. Paired over queries: the mean difference with its {:.0} % percentile bootstrap interval ({} resamples, seed {}), the Wilcoxon signed-rank p-value (two-sided, zero differences dropped) and the sign-flip randomisation p-value ({} rounds).\n\n",
        c.metric,
        c.a,
        c.b,
        c.bootstrap.confidence * 100.0,
        c.bootstrap.resamples,
        c.bootstrap.seed,
        c.randomization_rounds
    );
    match (&c.release, &c.control) {
        (_, Some(p)) => {
            let other = if p.control_side == "B" { "A" } else { "B" };
            let _ = writeln!(
                out,
                "{other} on {}, {} on its control release (the same month without the counterfactual rewrite, MANIFEST sha256 `{}`): queries paired by id (same problem, subtask and language), so B − A is what {}.\n",
                p.release,
                p.control_side,
                p.control.manifest_sha256,
                if p.control_side == "B" { "undoing the rewrite changes" } else { "the rewrite changes" }
            );
        }
        (Some(r), None) => {
            let _ = writeln!(out, "Both on {r}.\n");
        }
        (None, None) => out.push_str("The release of A or B is not recorded (a bare BEIR folder, or results of an older coreb): queries are paired by id only.\n\n"),
    }
    out.push_str("| task | group | queries | A | B | Δ | 95 % CI | Wilcoxon p | randomisation p |\n|---|---|---:|---:|---:|---:|---|---:|---:|\n");
    let p = |p: Option<f64>| {
        p.map_or_else(
            || "–".to_owned(),
            |p| {
                if p < 1e-4 { format!("{p:.1e}") } else { format!("{p:.4}") }
            },
        )
    };
    for t in &c.tasks {
        for (group, r) in std::iter::once(("all", &t.overall))
            .chain(t.by_subtask.iter().map(|(g, r)| (g.as_str(), r)))
        {
            let ci = r
                .ci
                .map_or_else(|| "–".to_owned(), |ci| format!("[{:+.4}, {:+.4}]", ci.low, ci.high));
            let _ = writeln!(
                out,
                "| {} | {group} | {} | {:.4} | {:.4} | {:+.4} | {ci} | {} | {} |",
                t.task,
                r.queries,
                r.mean_a,
                r.mean_b,
                r.difference,
                p(r.wilcoxon_p),
                p(r.randomization_p)
            );
        }
    }
    out
}
