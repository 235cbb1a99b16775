//! Evaluation results per task with breakdowns by subtask and language, rendered as JSON
//! (serde), Markdown tables and two SVG plots written by hand (grouped bars of nDCG@k per
//! subtask; the query distribution). Pure: returns strings, writes nothing.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::beir::Dataset;
use super::listwise::{ListwiseConfig, ListwiseStats};
use super::prompts::PromptsUsed;
use super::significance::{BootstrapConfig, Interval, PairedComparison, bootstrap_ci, compare};
use coreb_trec::coreb::{AtK, QueryResult, Summary, summarize};

/// One query's measures, kept for significance tests and the results store.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct QueryScores {
    /// Query id.
    pub qid: String,
    /// Subtask, when the release has one.
    #[serde(default)]
    pub subtask: Option<String>,
    /// Language constraint, when the release has one.
    #[serde(default)]
    pub language: Option<String>,
    /// Absent from the run (scored 0).
    #[serde(default)]
    pub missing: bool,
    /// Measures at each k.
    pub at_k: AtK,
}

/// Bootstrap intervals of the mean of every measure at each k.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AtKIntervals {
    /// nDCG@k.
    pub ndcg: Vec<Option<Interval>>,
    /// MAP@k.
    pub map: Vec<Option<Interval>>,
    /// Recall@k.
    pub recall: Vec<Option<Interval>>,
    /// P@k.
    pub precision: Vec<Option<Interval>>,
    /// MRR@k.
    pub mrr: Vec<Option<Interval>>,
    /// R-cap@k.
    pub r_cap: Vec<Option<Interval>>,
}

/// Intervals of a task, its subtasks and languages (queries resampled within each group).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TaskIntervals {
    /// All queries.
    pub overall: AtKIntervals,
    /// Per subtask.
    pub by_subtask: BTreeMap<String, AtKIntervals>,
    /// Per language.
    pub by_language: BTreeMap<String, AtKIntervals>,
}

/// The measure named `name` (`ndcg`, `map`, `recall`, `p`/`precision`, `mrr`, `r_cap`).
pub fn measure<'a>(at_k: &'a AtK, name: &str) -> Option<&'a Vec<f64>> {
    Some(match name {
        "ndcg" => &at_k.ndcg,
        "map" => &at_k.map,
        "recall" => &at_k.recall,
        "p" | "precision" => &at_k.precision,
        "mrr" => &at_k.mrr,
        "r_cap" | "rcap" => &at_k.r_cap,
        _ => return None,
    })
}

/// The measures of an [`AtK`], in the order the report, its intervals and the results store
/// list them: nDCG, MAP, recall, P, MRR, R-cap.
pub(crate) const AT_K: [fn(&AtK) -> &Vec<f64>; 6] =
    [|a| &a.ndcg, |a| &a.map, |a| &a.recall, |a| &a.precision, |a| &a.mrr, |a| &a.r_cap];

fn intervals(queries: &[&QueryScores], ks: usize, cfg: &BootstrapConfig) -> AtKIntervals {
    let per = |f: fn(&AtK) -> &Vec<f64>| -> Vec<Option<Interval>> {
        (0..ks)
            .map(|i| bootstrap_ci(&queries.iter().map(|q| f(&q.at_k)[i]).collect::<Vec<_>>(), cfg))
            .collect()
    };
    let [ndcg, map, recall, precision, mrr, r_cap] = AT_K.map(per);
    AtKIntervals { ndcg, map, recall, precision, mrr, r_cap }
}

/// Queries grouped by a label.
type Grouped<'a> = BTreeMap<String, Vec<&'a QueryScores>>;

/// Groups of queries: all, by subtask, by language.
fn groups(queries: &[QueryScores]) -> (Vec<&QueryScores>, Grouped<'_>, Grouped<'_>) {
    let (mut subtasks, mut languages): (Grouped<'_>, Grouped<'_>) = Default::default();
    for q in queries {
        if let Some(s) = &q.subtask {
            subtasks.entry(s.clone()).or_default().push(q);
        }
        if let Some(l) = &q.language {
            languages.entry(l.clone()).or_default().push(q);
        }
    }
    (queries.iter().collect(), subtasks, languages)
}

/// Bootstrap intervals of every summary of a task.
pub fn task_intervals(task: &TaskReport, ks: usize, cfg: &BootstrapConfig) -> TaskIntervals {
    let (all, subtasks, languages) = groups(&task.queries);
    TaskIntervals {
        overall: intervals(&all, ks, cfg),
        by_subtask: subtasks.iter().map(|(k, v)| (k.clone(), intervals(v, ks, cfg))).collect(),
        by_language: languages.iter().map(|(k, v)| (k.clone(), intervals(v, ks, cfg))).collect(),
    }
}

/// Paired comparisons of one measure at each k, for a task and its subtasks.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct GroupComparisons {
    /// All queries, one per k.
    pub overall: Vec<PairedComparison>,
    /// Per subtask, one per k.
    pub by_subtask: BTreeMap<String, Vec<PairedComparison>>,
}

/// Compare `metric` of `a` and `b` (matched by query id; both must hold the same queries).
pub fn compare_queries(
    a: &[QueryScores],
    b: &[QueryScores],
    metric: &str,
    ks: usize,
    cfg: &BootstrapConfig,
) -> Result<GroupComparisons, String> {
    let index: BTreeMap<&str, &QueryScores> = b.iter().map(|q| (q.qid.as_str(), q)).collect();
    if a.len() != b.len() || a.iter().any(|q| !index.contains_key(q.qid.as_str())) {
        return Err(format!("the two sides hold different queries ({} and {})", a.len(), b.len()));
    }
    let pick = |q: &QueryScores, i: usize| measure(&q.at_k, metric).and_then(|v| v.get(i).copied());
    let cmp = |qs: &[&QueryScores]| -> Result<Vec<PairedComparison>, String> {
        (0..ks)
            .map(|i| {
                let mut va = Vec::with_capacity(qs.len());
                let mut vb = Vec::with_capacity(qs.len());
                for q in qs {
                    va.push(pick(q, i).ok_or_else(|| format!("unknown measure `{metric}`"))?);
                    vb.push(
                        pick(index[q.qid.as_str()], i)
                            .ok_or_else(|| format!("unknown measure `{metric}`"))?,
                    );
                }
                Ok(compare(&va, &vb, cfg))
            })
            .collect()
    };
    let (all, subtasks, _) = groups(a);
    Ok(GroupComparisons {
        overall: cmp(&all)?,
        by_subtask: subtasks
            .iter()
            .map(|(k, v)| Ok((k.clone(), cmp(v)?)))
            .collect::<Result<_, String>>()?,
    })
}

/// The reranking of a task against its first stage.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RerankDelta {
    /// The first stage's results.
    pub first_stage: Summary,
    /// nDCG@k of the reranked run against the first stage (B = reranked, A = first stage).
    pub ndcg: GroupComparisons,
}

/// How the run was reranked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RerankInfo {
    /// `rerank`, `score` or `listwise`.
    pub api: String,
    /// The reranking model.
    pub model: String,
    /// Candidates reranked per query.
    pub depth: usize,
    /// The first stage.
    pub first_stage: String,
    /// Listwise settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listwise: Option<ListwiseConfig>,
    /// What listwise reranking did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listwise_stats: Option<ListwiseStats>,
    /// The template a pointwise reranker's texts were written in (`qwen3`; none: as they are).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
}

/// Results of one task (one BEIR folder).
#[derive(Debug, Clone, Serialize)]
pub struct TaskReport {
    /// Task (folder) name.
    pub task: String,
    /// Documents in the corpus.
    pub num_docs: usize,
    /// Lowest relevance counted as relevant (2 for graded CoREB qrels, 1 for binary ones).
    pub level: i64,
    /// All judged queries.
    pub overall: Summary,
    /// Per subtask (empty when queries carry none).
    pub by_subtask: BTreeMap<String, Summary>,
    /// Per language constraint (empty when queries carry none).
    pub by_language: BTreeMap<String, Summary>,
    /// 95 % (by default) bootstrap intervals of every summary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ci: Option<TaskIntervals>,
    /// Against the first stage, when the run was reranked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rerank: Option<RerankDelta>,
    /// An MTEB task folder's task and main score (`coreb export --layout mteb`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mteb: Option<MtebScore>,
    /// Every query's measures, in query-id order.
    pub queries: Vec<QueryScores>,
}

/// The task of an MTEB task folder and its main score, as MTEB names them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MtebScore {
    /// MTEB's task name (`CorebT2CReranking`).
    pub task: String,
    /// `Retrieval` or `Reranking` (each query's candidates only).
    #[serde(rename = "type")]
    pub kind: String,
    /// The measure (`ndcg_at_10`, `map_at_10`).
    pub main_score: String,
    /// Its value.
    pub value: f64,
    /// Queries with a candidate list (`None`: the whole corpus ranked).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub candidate_lists: Option<usize>,
}

/// The whole evaluation.
#[derive(Debug, Clone, Serialize)]
pub struct EvalReport {
    /// Retriever description (`bm25`, `embed:<model>`, `run:<file>` ...).
    pub retriever: String,
    /// Cut-offs.
    pub ks: Vec<usize>,
    /// One entry per task, in name order.
    pub tasks: Vec<TaskReport>,
    /// Bootstrap settings of every interval (`None`: no intervals).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bootstrap: Option<BootstrapConfig>,
    /// The prompts a dense retriever was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompts: Option<PromptsUsed>,
    /// How the run was reranked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rerank: Option<RerankInfo>,
    /// The release evaluated: its version and the sha256 of its `MANIFEST.json`; `null` for a
    /// BEIR folder that is no release (no `MANIFEST.json` in it or its parent).
    pub release: Option<ReleaseIdentity>,
    /// How many of the evaluated queries a `--run` file ranks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_coverage: Option<RunCoverage>,
}

/// Which release results were computed on: results of two releases are never paired.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ReleaseIdentity {
    /// Release version (`v202503`).
    pub version: String,
    /// sha256 of its `MANIFEST.json` (which holds the sha256 of every file of the release).
    pub manifest_sha256: String,
    /// For a control release: the release it controls (its MANIFEST's `controls`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controls: Option<ControlledRelease>,
}

/// The release a control release controls: its version and MANIFEST sha256.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ControlledRelease {
    /// Release version.
    pub version: String,
    /// sha256 of its `MANIFEST.json`.
    pub manifest_sha256: String,
}

impl ReleaseIdentity {
    /// Whether this is the control release of `other` (`other` is no control itself).
    pub fn is_control_of(&self, other: &ReleaseIdentity) -> bool {
        other.controls.is_none()
            && self.controls.as_ref().is_some_and(|c| {
                c.version == other.version && c.manifest_sha256 == other.manifest_sha256
            })
    }
}

impl std::fmt::Display for ReleaseIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "release `{}` (MANIFEST sha256 `{}`)", self.version, self.manifest_sha256)?;
        match &self.controls {
            Some(c) => write!(
                f,
                ", the control of the release with MANIFEST sha256 `{}`",
                c.manifest_sha256
            ),
            None => Ok(()),
        }
    }
}

/// How a `--run` file's query ids meet the evaluated queries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct RunCoverage {
    /// Evaluated queries (those with judgements) the run ranks: the queries scored.
    pub matched: usize,
    /// Evaluated queries.
    pub queries: usize,
    /// Query ids of the run that are no query of the release.
    pub unknown: usize,
    /// Whether only the matched queries were scored (`--allow-partial`).
    pub partial: bool,
}

/// Group query results by the dataset's query metadata.
pub fn task_report(
    data: &Dataset,
    results: &[QueryResult],
    ks: &[usize],
    level: i64,
) -> TaskReport {
    let meta: BTreeMap<&str, (Option<&str>, Option<&str>)> = data
        .queries
        .iter()
        .map(|q| (q.id.as_str(), (q.subtask.as_deref(), q.language_constraint.as_deref())))
        .collect();
    let mut subtasks: BTreeMap<String, Vec<&QueryResult>> = BTreeMap::new();
    let mut languages: BTreeMap<String, Vec<&QueryResult>> = BTreeMap::new();
    for r in results {
        if let Some((s, l)) = meta.get(r.qid.as_str()) {
            if let Some(s) = s {
                subtasks.entry((*s).to_owned()).or_default().push(r);
            }
            if let Some(l) = l {
                languages.entry((*l).to_owned()).or_default().push(r);
            }
        }
    }
    let queries = results
        .iter()
        .map(|r| {
            let (subtask, language) = meta.get(r.qid.as_str()).copied().unwrap_or((None, None));
            QueryScores {
                qid: r.qid.clone(),
                subtask: subtask.map(str::to_owned),
                language: language.map(str::to_owned),
                missing: r.missing,
                at_k: r.at_k.clone(),
            }
        })
        .collect();
    TaskReport {
        task: data.name.clone(),
        num_docs: data.corpus.len(),
        level,
        overall: summarize(ks, results),
        by_subtask: subtasks.into_iter().map(|(k, v)| (k, summarize(ks, v))).collect(),
        by_language: languages.into_iter().map(|(k, v)| (k, summarize(ks, v))).collect(),
        ci: None,
        rerank: None,
        mteb: None,
        queries,
    }
}

fn table(out: &mut String, label: &str, ks: &[usize], rows: &[(String, &Summary)]) {
    let mut head = format!("| {label} | queries |");
    let mut rule = String::from("|---|---:|");
    for name in ["nDCG", "MAP", "Recall", "P", "MRR", "R-cap"] {
        for k in ks {
            let _ = write!(head, " {name}@{k} |");
            rule.push_str("---:|");
        }
    }
    head.push_str(" HN intrusion |");
    rule.push_str("---:|");
    let _ = writeln!(out, "{head}\n{rule}");
    for (name, s) in rows {
        let _ = write!(out, "| {name} | {} |", s.num_queries);
        for measure in AT_K {
            for v in measure(&s.at_k) {
                let _ = write!(out, " {v:.4} |");
            }
        }
        match s.intrusion_rate {
            Some(r) => {
                let _ = writeln!(out, " {r:.4} ({}) |", s.with_hard_negatives);
            }
            None => {
                let _ = writeln!(out, " – |");
            }
        }
    }
    out.push('\n');
}

/// The Markdown report.
pub fn to_markdown(report: &EvalReport) -> String {
    let mut out = format!("# Evaluation: `{}`\n\n", report.retriever);
    match &report.release {
        Some(r) => {
            let _ = writeln!(out, "On {r}.\n");
        }
        None => {
            out.push_str("On a BEIR folder without a `MANIFEST.json`: no release is recorded.\n\n")
        }
    }
    if let Some(c) = &report.run_coverage.filter(|c| c.partial) {
        let _ = writeln!(
            out,
            "Partial run (`--allow-partial`): {} of {} queries scored (those the run ranks); {} query ids of the run are no query of the release.\n",
            c.matched, c.queries, c.unknown
        );
    }
    out.push_str(
        "Graded qrels: relevance 2 counts as relevant and relevance 1 (hard negative) earns no \
         gain in nDCG; binary qrels (0/1): relevance 1 is relevant. \
         R-cap@k = relevant in top k / min(k, R). HN intrusion = share of queries with a hard \
         negative where one ranks above the best positive (queries with hard negatives in \
         brackets).\n\n",
    );
    let overall: Vec<(String, &Summary)> =
        report.tasks.iter().map(|t| (t.task.clone(), &t.overall)).collect();
    out.push_str("## Tasks\n\n");
    table(&mut out, "task", &report.ks, &overall);
    for t in &report.tasks {
        if let Some(m) = &t.mteb {
            let _ = writeln!(
                out,
                "MTEB `{}` ({}{}): main score {} = {:.5}\n",
                m.task,
                m.kind,
                if m.candidate_lists.is_some() && m.kind == "Reranking" {
                    ", each query's candidates only"
                } else {
                    ""
                },
                m.main_score,
                m.value
            );
        }
    }
    for t in &report.tasks {
        if !t.by_subtask.is_empty() {
            let _ = writeln!(out, "## {}: by subtask\n", t.task);
            let rows: Vec<(String, &Summary)> =
                t.by_subtask.iter().map(|(k, v)| (k.clone(), v)).collect();
            table(&mut out, "subtask", &report.ks, &rows);
        }
        if !t.by_language.is_empty() {
            let _ = writeln!(out, "## {}: by language\n", t.task);
            let rows: Vec<(String, &Summary)> =
                t.by_language.iter().map(|(k, v)| (k.clone(), v)).collect();
            table(&mut out, "language", &report.ks, &rows);
        }
        if t.overall.missing > 0 {
            let _ = writeln!(
                out,
                "{}: {} queries had no results and score 0.\n",
                t.task, t.overall.missing
            );
        }
    }
    if let Some(b) = &report.bootstrap {
        intervals_markdown(&mut out, report, b);
    }
    if let Some(r) = &report.rerank {
        rerank_markdown(&mut out, report, r);
    }
    if let Some(p) = &report.prompts {
        let _ = writeln!(
            out,
            "## Prompts\n\nPreset `{}` from {}.\n\n| task | side | template | request fields |\n|---|---|---|---|",
            p.preset, p.source
        );
        let show = |t: &str| t.replace('\n', "\\n").replace('|', "\\|");
        for (task, tp) in &p.tasks {
            let _ = writeln!(
                out,
                "| {task} | documents | `{}` | {:?} |",
                show(&tp.document.template),
                tp.document.fields
            );
            for (sub, q) in &tp.queries {
                let label =
                    if sub.is_empty() { "queries".to_owned() } else { format!("queries ({sub})") };
                let _ = writeln!(
                    out,
                    "| {task} | {label} | `{}` | {:?} |",
                    show(&q.template),
                    q.fields
                );
            }
        }
        out.push('\n');
    }
    out
}

fn fmt_ci(ci: Option<&Interval>) -> String {
    ci.map_or_else(|| "–".to_owned(), |c| format!("[{:.4}, {:.4}]", c.low, c.high))
}

fn fmt_p(p: Option<f64>) -> String {
    p.map_or_else(
        || "–".to_owned(),
        |p| {
            if p < 1e-4 { format!("{p:.1e}") } else { format!("{p:.4}") }
        },
    )
}

fn intervals_markdown(out: &mut String, report: &EvalReport, b: &BootstrapConfig) {
    let _ = writeln!(
        out,
        "## nDCG with {:.0} % bootstrap intervals\n\nPercentile bootstrap over queries: {} resamples, seed {}.\n",
        b.confidence * 100.0,
        b.resamples,
        b.seed
    );
    let mut head = String::from("| task | group | queries |");
    let mut rule = String::from("|---|---|---:|");
    for k in &report.ks {
        let _ = write!(head, " nDCG@{k} | 95 % CI |");
        rule.push_str("---:|---|");
    }
    let _ = writeln!(out, "{head}\n{rule}");
    for t in &report.tasks {
        let Some(ci) = &t.ci else { continue };
        let mut rows = vec![("all".to_owned(), &t.overall, &ci.overall)];
        rows.extend(
            t.by_subtask.iter().filter_map(|(k, s)| Some((k.clone(), s, ci.by_subtask.get(k)?))),
        );
        for (group, s, c) in rows {
            let _ = write!(out, "| {} | {group} | {} |", t.task, s.num_queries);
            for (v, i) in s.at_k.ndcg.iter().zip(&c.ndcg) {
                let _ = write!(out, " {v:.4} | {} |", fmt_ci(i.as_ref()));
            }
            out.push('\n');
        }
    }
    out.push('\n');
}

fn rerank_markdown(out: &mut String, report: &EvalReport, r: &RerankInfo) {
    let Some(last) = report.ks.len().checked_sub(1) else {
        return;
    };
    let k = report.ks[last];
    let _ = writeln!(
        out,
        "## ΔnDCG@{k} of reranking\n\n`{}` reranked the top {} of `{}` through `{}`. Δ = reranked − first stage; the interval is the paired bootstrap of the mean difference, the p-values the paired Wilcoxon signed-rank and randomisation tests.\n",
        r.model, r.depth, r.first_stage, r.api
    );
    let _ = writeln!(
        out,
        "| task | group | queries | first stage | reranked | Δ | 95 % CI | Wilcoxon p | randomisation p |\n|---|---|---:|---:|---:|---:|---|---:|---:|"
    );
    for t in &report.tasks {
        let Some(d) = &t.rerank else { continue };
        let mut rows: Vec<(String, &PairedComparison)> =
            d.ndcg.overall.get(last).map(|c| ("all".to_owned(), c)).into_iter().collect();
        rows.extend(d.ndcg.by_subtask.iter().filter_map(|(g, v)| Some((g.clone(), v.get(last)?))));
        for (group, c) in rows {
            let _ = writeln!(
                out,
                "| {} | {group} | {} | {:.4} | {:.4} | {:+.4} | {} | {} | {} |",
                t.task,
                c.queries,
                c.mean_a,
                c.mean_b,
                c.difference,
                fmt_ci(c.ci.as_ref()),
                fmt_p(c.wilcoxon_p),
                fmt_p(c.randomization_p)
            );
        }
    }
    if let Some(s) = &r.listwise_stats {
        let _ = writeln!(
            out,
            "\nListwise: {} windows over {} queries; answers exact {}, repaired {}, unparseable {}, failed {}; {} from the response store, {} from the endpoint.",
            s.windows,
            s.queries,
            s.exact,
            s.repaired,
            s.unparseable,
            s.failed,
            s.from_store,
            s.from_endpoint
        );
    }
    out.push('\n');
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

const COLORS: &[&str] = &["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948"];

/// Grouped bars: `groups` of `(label, values)` with one bar per series, values in [0, `max`].
fn bar_chart(
    title: &str,
    series: &[String],
    groups: &[(String, Vec<f64>)],
    max: f64,
    fmt: &dyn Fn(f64) -> String,
) -> String {
    let (w, h, left, right, top, bottom) = (760.0, 400.0, 56.0, 16.0, 68.0, 88.0);
    let plot_w = w - left - right;
    let plot_h = h - top - bottom;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="22" text-anchor="middle" font-size="15" font-weight="bold">{}</text>"#,
        w / 2.0,
        esc(title)
    );
    for i in 0..=5 {
        let v = max * f64::from(i) / 5.0;
        let y = top + plot_h - plot_h * f64::from(i) / 5.0;
        let _ = writeln!(
            s,
            r##"<line x1="{left}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/>"##,
            w - right
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            left - 6.0,
            y + 4.0,
            fmt(v)
        );
    }
    let _ = writeln!(
        s,
        r#"<line x1="{left}" y1="{top}" x2="{left}" y2="{:.1}" stroke="black"/>"#,
        top + plot_h
    );
    let _ = writeln!(
        s,
        r#"<line x1="{left}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="black"/>"#,
        top + plot_h,
        w - right,
        top + plot_h
    );
    let n = groups.len().max(1) as f64;
    let group_w = plot_w / n;
    let bar_w = (group_w * 0.8 / series.len().max(1) as f64).min(48.0);
    for (gi, (label, vals)) in groups.iter().enumerate() {
        let gx = left + group_w * gi as f64 + (group_w - bar_w * vals.len() as f64) / 2.0;
        for (si, v) in vals.iter().enumerate() {
            let bh = if max > 0.0 { (v / max).clamp(0.0, 1.0) * plot_h } else { 0.0 };
            let x = gx + bar_w * si as f64;
            let y = top + plot_h - bh;
            let color = COLORS[si % COLORS.len()];
            let _ = writeln!(
                s,
                r#"<rect x="{x:.1}" y="{y:.1}" width="{:.1}" height="{bh:.1}" fill="{color}"><title>{} {}: {}</title></rect>"#,
                bar_w - 2.0,
                esc(label),
                esc(&series[si]),
                fmt(*v)
            );
            if bar_w >= 22.0 {
                let _ = writeln!(
                    s,
                    r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="9">{}</text>"#,
                    x + bar_w / 2.0 - 1.0,
                    y - 3.0,
                    fmt(*v)
                );
            }
        }
        let cx = left + group_w * (gi as f64 + 0.5);
        let ly = top + plot_h + 14.0;
        let _ = writeln!(
            s,
            r#"<text x="{cx:.1}" y="{ly:.1}" text-anchor="end" transform="rotate(-30 {cx:.1} {ly:.1})">{}</text>"#,
            esc(label)
        );
    }
    let mut lx = left;
    for (si, name) in series.iter().enumerate() {
        let _ = writeln!(
            s,
            r#"<rect x="{lx:.1}" y="34" width="10" height="10" fill="{}"/><text x="{:.1}" y="43">{}</text>"#,
            COLORS[si % COLORS.len()],
            lx + 14.0,
            esc(name)
        );
        lx += 34.0 + 7.5 * name.len() as f64;
    }
    s.push_str("</svg>\n");
    s
}

/// The groups plotted: every (task, subtask), or every task when no subtask is known.
fn plot_groups(report: &EvalReport) -> Vec<(String, &Summary)> {
    let multi = report.tasks.len() > 1;
    let mut groups = Vec::new();
    for t in &report.tasks {
        if t.by_subtask.is_empty() {
            groups.push((t.task.clone(), &t.overall));
        } else {
            for (st, s) in &t.by_subtask {
                groups.push((if multi { format!("{}/{st}", t.task) } else { st.clone() }, s));
            }
        }
    }
    groups
}

/// Grouped bars of nDCG@k (one bar per k) per subtask.
pub fn ndcg_svg(report: &EvalReport) -> String {
    let series: Vec<String> = report.ks.iter().map(|k| format!("nDCG@{k}")).collect();
    let groups: Vec<(String, Vec<f64>)> =
        plot_groups(report).into_iter().map(|(l, s)| (l, s.at_k.ndcg.clone())).collect();
    bar_chart(
        &format!("nDCG@k per subtask — {}", report.retriever),
        &series,
        &groups,
        1.0,
        &|v| format!("{v:.2}"),
    )
}

/// Bars of the number of queries per subtask.
pub fn query_distribution_svg(report: &EvalReport) -> String {
    let groups: Vec<(String, Vec<f64>)> =
        plot_groups(report).into_iter().map(|(l, s)| (l, vec![s.num_queries as f64])).collect();
    let max = groups.iter().map(|g| g.1[0]).fold(0.0, f64::max);
    // At least 5 so that the five grid steps fall on whole queries.
    let max = if max <= 5.0 { 5.0 } else { nice_ceiling(max) };
    bar_chart("Queries per subtask", &["queries".to_owned()], &groups, max, &|v| format!("{v:.0}"))
}

fn nice_ceiling(v: f64) -> f64 {
    let mag = 10f64.powf(v.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if m * mag >= v {
            return m * mag;
        }
    }
    10.0 * mag
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::beir::{Dataset, Query};
    use coreb_trec::coreb::{CorebConfig, evaluate};
    use coreb_trec::{Qrels, Run};

    #[test]
    fn breakdowns_markdown_and_svg() {
        let q = |id: &str, st: &str, lang: &str| Query {
            id: id.into(),
            text: String::new(),
            subtask: Some(st.into()),
            language_constraint: Some(lang.into()),
            source_doc_id: None,
        };
        let data = Dataset {
            name: "text2code".into(),
            corpus: vec![],
            queries: vec![
                q("q1", "canonical", "python"),
                q("q2", "full", "python"),
                q("q3", "full", "cpp"),
            ],
            qrels: Qrels::from_triples([("q1", "d1", 2), ("q2", "d2", 2), ("q3", "d3", 2)])
                .unwrap(),
        };
        let mut run = Run::new("t");
        run.push("q1", "d1", 1.0);
        run.push("q2", "d9", 2.0);
        run.push("q2", "d2", 1.0);
        let cfg = CorebConfig::default();
        let res = evaluate(&data.qrels, &run, &cfg);
        let t = task_report(&data, &res, &cfg.ks, cfg.level);
        assert_eq!(t.by_subtask["canonical"].at_k.ndcg[0], 1.0);
        assert_eq!(t.by_subtask["full"].num_queries, 2);
        assert_eq!(t.by_subtask["full"].missing, 1);
        assert_eq!(t.by_language["cpp"].at_k.ndcg[2], 0.0);
        assert_eq!(t.queries.len(), 3);
        assert_eq!(t.queries[2].language.as_deref(), Some("cpp"));
        let mut t = t;
        let b = BootstrapConfig::default();
        t.ci = Some(task_intervals(&t, cfg.ks.len(), &b));
        let report = EvalReport {
            retriever: "bm25".into(),
            ks: cfg.ks.clone(),
            tasks: vec![t],
            bootstrap: Some(b),
            prompts: None,
            rerank: None,
            release: None,
            run_coverage: None,
        };
        let md = to_markdown(&report);
        assert!(md.contains("| canonical | 1 | 1.0000 |"), "{md}");
        let svg = ndcg_svg(&report);
        assert!(
            svg.starts_with("<svg") && svg.contains("nDCG@10") && svg.contains(">full<"),
            "{svg}"
        );
        assert_eq!(svg.matches("<rect x=").count(), 6 + 3, "2 groups × 3 ks + 3 legend boxes");
        assert!(query_distribution_svg(&report).contains("Queries per subtask"));
    }
}
