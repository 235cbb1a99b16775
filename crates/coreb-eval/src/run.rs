//! The evaluation loop of `coreb eval`: evaluate a BEIR folder, or a directory of BEIR folders
//! (a release, one per task), with a built-in retriever (BM25, dense embeddings with
//! query/document prompts) or a TREC run file, optionally reranked (pointwise `/rerank` or
//! `/score`, or listwise through the LLM gateway); write JSON (with per-query scores,
//! bootstrap intervals and the prompts used), a Markdown report, SVG plots and the runs;
//! check the release gates and record the results in the store when asked.
//!
//! [`EvalOptions`] holds the options as plain data (the command line's flags, named after
//! them in the messages); [`evaluate`] runs the loop.

mod setup;

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use coreb_base::durable;
use coreb_base::printer::Printer;
use coreb_trec::Run;
use coreb_trec::coreb::{CorebConfig, evaluate as score, summarize};

use crate::beir::{self, Dataset};
use crate::bm25::Bm25Config;
use crate::gates::GatesConfig;
use crate::leaderboard::store::{RecordRequest, record, release_of};
use crate::prompts::{PromptOverrides, PromptsUsed};
use crate::report::{self, EvalReport, RerankDelta};
use crate::significance::BootstrapConfig;
use setup::{DenseSetup, PromptChoice, Reranker};

/// How a reranker is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RerankApi {
    /// `POST <base>/rerank`.
    Rerank,
    /// `POST <base>/score` (vLLM).
    Score,
    /// Chat completions, RankGPT-style windows.
    Listwise,
}

/// How requests reach an OpenAI-compatible endpoint (`--api-key-env` … `--replay`).
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Environment variable holding the API key (`''`: the endpoint needs none).
    pub api_key_env: String,
    /// Requests in flight at once.
    pub concurrency: usize,
    /// Attempts per request, the first included.
    pub max_attempts: u32,
    /// Whole-request timeout in seconds.
    pub timeout_secs: f64,
    /// The response store of chat answers.
    pub store: PathBuf,
    /// Serve chat answers from the store only.
    pub replay: bool,
}

/// What `--manifest` contributes: its `[gates]` and its `[eval]` prompts.
#[derive(Debug, Clone, Default)]
pub struct ManifestSettings {
    /// `[gates]`.
    pub gates: GatesConfig,
    /// `[eval] prompts_file`, absolute.
    pub prompts_file: Option<PathBuf>,
    /// `[eval]`'s prompt overrides.
    pub prompts: PromptOverrides,
}

/// The options of an evaluation, one per flag of `coreb eval` (see its `--help`).
#[derive(Debug, Clone)]
pub struct EvalOptions {
    /// A release directory or a BEIR folder.
    pub dir: PathBuf,
    /// Built-in retriever: `bm25` or `embed:<model>`.
    pub retriever: String,
    /// A TREC run file evaluated instead of a retriever.
    pub run: Option<PathBuf>,
    /// Keep a code query's own document in the `run` file's ranking.
    pub keep_self: bool,
    /// Cut-offs of the @k metrics.
    pub k: Vec<usize>,
    /// Where the JSON results, the Markdown report, the plots and the runs are written.
    pub out: Option<PathBuf>,
    /// Print the results as JSON on stdout (else Markdown).
    pub json: bool,
    /// Documents retrieved per query.
    pub depth: usize,
    /// Qrels split evaluated.
    pub split: String,
    /// Base URL of the embeddings / rerank endpoint.
    pub base_url: String,
    /// The reranker's model, if any.
    pub rerank: Option<String>,
    /// How the reranker is called.
    pub rerank_api: RerankApi,
    /// Documents of the first stage reranked.
    pub rerank_depth: usize,
    /// Base URL of the reranker (default: `base_url`).
    pub rerank_base_url: Option<String>,
    /// Environment variable of the reranker's key (default: the client's).
    pub rerank_api_key_env: Option<String>,
    /// Listwise: candidates per window.
    pub window: usize,
    /// Listwise: how far each window moves up.
    pub step: usize,
    /// Listwise: words of each passage shown (0: all).
    pub max_words: usize,
    /// Query template for every task.
    pub query_prompt: Option<String>,
    /// Document template for every task.
    pub doc_prompt: Option<String>,
    /// Preset used whatever the model.
    pub prompt_preset: Option<String>,
    /// Preset file (default: the built-in presets).
    pub prompts: Option<PathBuf>,
    /// The build manifest whose `[eval]` and `[gates]` apply (read by the loader given to
    /// [`evaluate`]).
    pub manifest: Option<PathBuf>,
    /// Embedding cache directory (default: `.coreb-cache/embeddings`).
    pub cache: Option<PathBuf>,
    /// Do not read or write the embedding cache.
    pub no_cache: bool,
    /// Texts per embeddings request.
    pub batch_size: usize,
    /// `dimensions` asked of the embeddings endpoint.
    pub dimensions: Option<u32>,
    /// Keep vectors as returned instead of L2-normalising them.
    pub no_normalize: bool,
    /// Bootstrap resamples of every interval (0: none).
    pub resamples: usize,
    /// Seed of the bootstrap.
    pub seed: u64,
    /// Check the release gates and fail if any fails.
    pub gates: bool,
    /// Record the results in the results store.
    pub record: bool,
    /// The results store (default: `results/` beside the release).
    pub results: Option<PathBuf>,
    /// The name the leaderboard shows.
    pub model_name: Option<String>,
    /// The model's declared training cutoff, as given.
    pub cutoff: Option<String>,
    /// How requests reach the endpoints.
    pub client: ClientOptions,
    /// The version of the tool, recorded with the results.
    pub tool_version: String,
}

/// Which retriever produces the first-stage run.
enum Retriever {
    Bm25,
    Embed { model: String },
    RunFile(PathBuf),
}

impl Retriever {
    /// `--run`, else `--retriever` (`bm25` or `embed:<model>`).
    fn from_args(args: &EvalOptions) -> anyhow::Result<Retriever> {
        Ok(match (&args.run, args.retriever.as_str()) {
            (Some(path), _) => Retriever::RunFile(path.clone()),
            (None, "bm25") => Retriever::Bm25,
            (None, r) => match r.strip_prefix("embed:") {
                Some(model) if !model.is_empty() => Retriever::Embed { model: model.to_owned() },
                _ => bail!("`--retriever`: expected `bm25` or `embed:<model>`, got `{r}`"),
            },
        })
    }

    /// The first stage's name in the report.
    fn label(&self) -> String {
        match self {
            Retriever::Bm25 => "bm25".to_owned(),
            Retriever::Embed { model } => format!("embed:{model}"),
            Retriever::RunFile(p) => format!("run:{}", p.display()),
        }
    }
}

/// Everything an evaluation needs before the first task: the checked arguments, the
/// retriever and reranker set up, the BEIR folders found.
struct Setup {
    retriever: Retriever,
    k: Vec<usize>,
    split: String,
    keep_self: bool,
    gates: Option<GatesConfig>,
    dirs: Vec<PathBuf>,
    /// The `--run` file, read.
    external: Option<Run>,
    runtime: tokio::runtime::Runtime,
    dense: Option<DenseSetup>,
    reranker: Option<Reranker>,
    /// Depth of the first-stage run (deeper when a reranker reads it).
    first_depth: usize,
    first_label: String,
    bootstrap: Option<BootstrapConfig>,
}

/// What one task's evaluation leaves: its report, its runs (the first stage's too when
/// reranked) and its failed gates.
struct TaskOutcome {
    report: crate::report::TaskReport,
    runs: Vec<(String, Run)>,
    gate_failures: Vec<crate::gates::GateFailure>,
}

/// Evaluate: check the options (the `record` ones before any work), read the manifest through
/// `load_manifest`, evaluate every task, then record (`record`), write (`out`) and print the
/// report; fails when a listwise window got no answer or a release gate fails.
pub fn evaluate(args: &EvalOptions, load_manifest: &dyn Fn(&Path) -> anyhow::Result<ManifestSettings>, printer: &Printer) -> anyhow::Result<()> {
    let setup = Setup::new(args, load_manifest)?;
    let mut tasks = Vec::new();
    let mut runs = Vec::new();
    let mut gate_failures = Vec::new();
    let mut prompts_used = setup.dense.as_ref().map(DenseSetup::prompts_used);
    for d in &setup.dirs {
        let outcome = setup.evaluate_dir(d, printer, &mut prompts_used)?;
        tasks.push(outcome.report);
        runs.extend(outcome.runs);
        gate_failures.extend(outcome.gate_failures);
    }
    let rerank_info = setup.reranker.as_ref().map(|r| r.info(&setup.first_label));
    if let Some(stats) = rerank_info.as_ref().and_then(|r| r.listwise_stats).filter(|s| s.failed > 0) {
        bail!(
            "listwise reranking: {} of {} windows got no answer (kept in first-stage order); nothing written. A rerun asks only for those (answers are in the store)",
            stats.failed,
            stats.windows
        );
    }
    let label = match &setup.reranker {
        Some(r) => format!("{}+{}", setup.first_label, r.label()),
        None => setup.first_label.clone(),
    };
    let report = EvalReport { retriever: label, ks: setup.k.clone(), tasks, bootstrap: setup.bootstrap, prompts: prompts_used, rerank: rerank_info };
    if args.record {
        setup.record(args, &report, &runs, printer)?;
    }
    setup.write(args.out.as_deref(), args.json, &report, &runs, printer)?;
    if setup.gates.is_some() {
        if gate_failures.is_empty() {
            printer.status("all release gates passed");
        } else {
            for f in &gate_failures {
                eprintln!("{f}");
            }
            bail!("{} release gate(s) failed", gate_failures.len());
        }
    }
    Ok(())
}

impl Setup {
    /// Check the arguments (the `--record` ones before any work), load the manifest's gates
    /// and prompts, find the BEIR folders and set up the retriever and the reranker.
    fn new(args: &EvalOptions, load_manifest: &dyn Fn(&Path) -> anyhow::Result<ManifestSettings>) -> anyhow::Result<Setup> {
        if args.k.is_empty() || args.k.contains(&0) {
            bail!("`--k`: cut-offs must be positive integers");
        }
        let retriever = Retriever::from_args(args)?;
        if args.record {
            // Fail before the work, not after it.
            release_of(&args.dir)?;
            if let Some(c) = &args.cutoff {
                crate::leaderboard::record::parse_cutoff(c).context("`--cutoff`")?;
            }
            if matches!(retriever, Retriever::RunFile(_)) && args.model_name.is_none() {
                bail!("`--record` with `--run`: name the model with `--model-name`");
            }
        }
        let manifest = match &args.manifest {
            Some(path) => Some(load_manifest(path).with_context(|| format!("loading `{}`", path.display()))?),
            None => None,
        };
        let gates = args.gates.then(|| manifest.as_ref().map(|m| m.gates.clone()).unwrap_or_default());
        let prompts = PromptChoice::resolve(args, manifest.as_ref())?;
        if !matches!(retriever, Retriever::Embed { .. }) && prompts.given_on_command_line {
            bail!("`--query-prompt`, `--doc-prompt` and `--prompt-preset` apply to `--retriever embed:<model>`");
        }
        let dirs = dataset_dirs(&args.dir)?;
        let external = match &retriever {
            Retriever::RunFile(p) => Some(Run::read(p).with_context(|| format!("reading run `{}`", p.display()))?),
            _ => None,
        };
        let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
        let dense = match &retriever {
            Retriever::Embed { model } => Some(DenseSetup::new(model, args, prompts)?),
            _ => None,
        };
        let reranker = Reranker::new(args)?;
        let first_depth = if reranker.is_some() { args.depth.max(args.rerank_depth) } else { args.depth };
        let bootstrap = (args.resamples > 0).then_some(BootstrapConfig { resamples: args.resamples, seed: args.seed, ..BootstrapConfig::default() });
        Ok(Setup {
            first_label: retriever.label(),
            retriever,
            k: args.k.clone(),
            split: args.split.clone(),
            keep_self: args.keep_self,
            gates,
            dirs,
            external,
            runtime,
            dense,
            reranker,
            first_depth,
            bootstrap,
        })
    }

    /// Evaluate the BEIR folder `d`: its first-stage run, reranked when asked, scored (with
    /// intervals, and against the first stage when reranked) and gated when asked.
    fn evaluate_dir(&self, d: &Path, printer: &Printer, prompts_used: &mut Option<PromptsUsed>) -> anyhow::Result<TaskOutcome> {
        let mut data = beir::read_dir(d, &self.split).with_context(|| format!("reading BEIR folder `{}`", d.display()))?;
        // A release's BEIR qrels hold the positives only; its Parquet qrels add the hard
        // negatives (relevance 1) that the intrusion rate and the gates need.
        if self.split == "test"
            && let Some(graded) = beir::release_qrels(d).with_context(|| format!("reading the graded qrels beside `{}`", d.display()))?
        {
            data.qrels = graded;
        }
        printer.status(format!("{}: {} docs, {} queries", data.name, data.corpus.len(), data.queries.len()));
        let first = self.first_stage(&data, printer, prompts_used)?;
        let run = match &self.reranker {
            Some(r) => r.rerank(&self.runtime, printer, &data, &first)?,
            None => first.clone(),
        };
        let gate_failures = match &self.gates {
            Some(config) => check_gates(&data, &run, matches!(self.retriever, Retriever::Bm25) && self.reranker.is_none(), config),
            None => Vec::new(),
        };
        let cfg = CorebConfig::for_qrels(&data.qrels, self.k.clone());
        let results = score(&data.qrels, &run, &cfg);
        let mut task = report::task_report(&data, &results, &cfg.ks, cfg.level);
        if let Some(b) = &self.bootstrap {
            task.ci = Some(report::task_intervals(&task, cfg.ks.len(), b));
        }
        let mut runs = Vec::new();
        if self.reranker.is_some() {
            let first_results = score(&data.qrels, &first, &cfg);
            let first_task = report::task_report(&data, &first_results, &cfg.ks, cfg.level);
            let ndcg = report::compare_queries(&first_task.queries, &task.queries, "ndcg", cfg.ks.len(), &self.bootstrap.unwrap_or_default()).map_err(anyhow::Error::msg)?;
            task.rerank = Some(RerankDelta { first_stage: summarize(&cfg.ks, &first_results), ndcg });
            runs.push((format!("{}.first", data.name), first));
        }
        runs.push((data.name.clone(), run));
        Ok(TaskOutcome { report: task, runs, gate_failures })
    }

    /// The first-stage run of one task: the `--run` file's (without the queries' own
    /// documents unless `--keep-self`), BM25's or the dense retriever's.
    fn first_stage(&self, data: &Dataset, printer: &Printer, prompts_used: &mut Option<PromptsUsed>) -> anyhow::Result<Run> {
        Ok(match (&self.retriever, &self.external, &self.dense) {
            (_, Some(r), _) if self.keep_self => r.clone(),
            (_, Some(r), _) => {
                let (kept, dropped) = drop_own_documents(data, r);
                if dropped > 0 {
                    printer.status(format!("{}: dropped {dropped} own document(s) of code queries from the run (--keep-self keeps them)", data.name));
                }
                kept
            }
            (Retriever::Bm25, _, _) => crate::bm25_run(data, Bm25Config::default(), self.first_depth),
            (_, _, Some(setup)) => {
                let (run, task_prompts) = setup.run(&self.runtime, printer, data, self.first_depth)?;
                if let Some(used) = prompts_used {
                    used.tasks.insert(data.name.clone(), task_prompts);
                }
                run
            }
            _ => unreachable!("every retriever is handled above"),
        })
    }

    /// `--record`: add the report to the results store, with the sha256 of each task's run.
    fn record(&self, args: &EvalOptions, report: &EvalReport, runs: &[(String, Run)], printer: &Printer) -> anyhow::Result<()> {
        let run_sha256 = runs
            .iter()
            .filter(|(name, _)| !name.ends_with(".first"))
            .map(|(name, run)| -> anyhow::Result<(String, String)> {
                let sha = match (&self.retriever, &self.reranker) {
                    // The user's own file, as given.
                    (Retriever::RunFile(path), None) => coreb_base::hashing::sha256_file(path).with_context(|| format!("hashing `{}`", path.display()))?,
                    // The run coreb made, as `--out` writes it.
                    _ => coreb_base::hashing::sha256_hex(run.to_trec(self.first_depth).as_bytes()),
                };
                Ok((name.clone(), sha))
            })
            .collect::<anyhow::Result<_>>()?;
        let model = match (&args.model_name, &self.retriever) {
            (Some(name), _) => name.clone(),
            (None, Retriever::RunFile(_)) => bail!("`--record` with `--run`: name the model with `--model-name`"),
            (None, _) => report.retriever.clone(),
        };
        let request = RecordRequest {
            dir: &args.dir,
            results: args.results.as_deref(),
            model,
            retriever: report.retriever.clone(),
            cutoff: args.cutoff.as_deref(),
            run_sha256,
            tool_version: args.tool_version.clone(),
        };
        let (path, written) = record(report, request)?;
        printer.status(if written { format!("recorded in `{}`", path.display()) } else { format!("already recorded: `{}` (nothing written)", path.display()) });
        Ok(())
    }

    /// `--out`: the JSON, the Markdown, the plots and the runs coreb made; then the report on
    /// stdout (JSON with `--json`, else Markdown).
    fn write(&self, out: Option<&Path>, json: bool, report: &EvalReport, runs: &[(String, Run)], printer: &Printer) -> anyhow::Result<()> {
        let json_text = serde_json::to_string_pretty(report)?;
        let markdown = report::to_markdown(report);
        if let Some(out) = out {
            fs_err::create_dir_all(out)?;
            durable::write(&out.join("results.json"), json_text.as_bytes())?;
            durable::write(&out.join("report.md"), markdown.as_bytes())?;
            durable::write(&out.join("ndcg.svg"), report::ndcg_svg(report).as_bytes())?;
            durable::write(&out.join("queries.svg"), report::query_distribution_svg(report).as_bytes())?;
            for (name, run) in runs {
                // An external run is the user's own file: only what coreb made is written.
                if self.external.is_none() || (self.reranker.is_some() && !name.ends_with(".first")) {
                    durable::write(&out.join(format!("{name}.run.trec")), run.to_trec(self.first_depth).as_bytes())?;
                }
            }
            printer.status(format!("wrote {}", out.display()));
        }
        if json {
            printer.out(json_text);
        } else {
            printer.out(markdown.trim_end());
        }
        Ok(())
    }
}

/// `run` without each query's own document (a code query's `source_doc_id`): CoREB never
/// ranks a query for itself. Returns the run and how many entries were dropped.
pub fn drop_own_documents(data: &Dataset, run: &Run) -> (Run, usize) {
    let own: std::collections::HashMap<&str, &str> = data.queries.iter().filter_map(|q| q.source_doc_id.as_deref().map(|d| (q.id.as_str(), d))).collect();
    let mut kept = Run::new(run.run_id.clone());
    let mut dropped = 0;
    for (qid, entries) in &run.queries {
        for e in entries {
            let doc = run.doc(e);
            if own.get(qid.as_str()) == Some(&doc) {
                dropped += 1;
            } else {
                kept.push(qid, doc, e.score);
            }
        }
    }
    (kept, dropped)
}

/// The release gates of one task; BM25 nDCG@10 comes from `run` when it is the plain BM25
/// run, else from a fresh BM25 run.
fn check_gates(data: &Dataset, run: &Run, run_is_bm25: bool, gates: &GatesConfig) -> Vec<crate::gates::GateFailure> {
    let ndcg10 = if run_is_bm25 {
        let cfg = CorebConfig::for_qrels(&data.qrels, vec![10]);
        let results = score(&data.qrels, run, &cfg);
        coreb_trec::coreb::summarize(&cfg.ks, &results).at_k.ndcg[0]
    } else {
        crate::bm25_ndcg10(data)
    };
    crate::gates::check_task(data, ndcg10, gates)
}

/// The BEIR folders to evaluate: `dir` itself, or its BEIR subfolders in name order.
pub fn dataset_dirs(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    if beir::is_beir_dir(dir) {
        return Ok(vec![dir.to_owned()]);
    }
    let mut subs: Vec<PathBuf> = fs_err::read_dir(dir)?.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| beir::is_beir_dir(p)).collect();
    subs.sort();
    if subs.is_empty() {
        bail!("`{}`: not a BEIR folder (corpus.jsonl, queries.jsonl, qrels/) and holds none", dir.display());
    }
    Ok(subs)
}
