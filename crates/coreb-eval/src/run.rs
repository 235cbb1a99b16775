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

#[cfg(feature = "clap")]
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use coreb_base::durable;
use coreb_base::report::Report;
use coreb_trec::Run;
use coreb_trec::coreb::{CorebConfig, evaluate as score, summarize};

use crate::beir::{self, Dataset};
use crate::bm25::Bm25Config;
use crate::gates::GatesConfig;
use crate::leaderboard::store::{
    RecordRequest, find_release, record, release_identity, release_of,
};
use crate::prompts::{PromptOverrides, PromptsUsed};
use crate::report::{self, EvalReport, ReleaseIdentity, RerankDelta, RunCoverage};
use crate::significance::BootstrapConfig;
use setup::{DenseSetup, PromptChoice, Reranker};

/// How a reranker is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(ValueEnum))]
pub enum RerankApi {
    /// `POST <base>/rerank`.
    Rerank,
    /// `POST <base>/score` (vLLM).
    Score,
    /// Chat completions, RankGPT-style windows.
    Listwise,
}

/// How a pointwise reranker's query and documents are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(ValueEnum))]
pub enum RerankTemplate {
    /// The texts as they are.
    #[default]
    None,
    /// Qwen3-Reranker's template ([`crate::mteb::qwen3_reranker_texts`]).
    Qwen3,
}

/// How requests reach an OpenAI-compatible endpoint, shared by `coreb eval` and `coreb audit
/// … model` (each sets its own defaults of `--concurrency`, `--timeout-secs` and `--store`).
#[derive(Debug, Clone)]
#[cfg_attr(feature = "clap", derive(Args))]
pub struct ClientOptions {
    /// Environment variable holding the API key, sent only to the endpoint it is for (`''`:
    /// the endpoint needs none).
    #[cfg_attr(feature = "clap", arg(long, default_value = "OPENAI_API_KEY"))]
    pub api_key_env: String,
    /// Requests in flight at once.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 4))]
    pub concurrency: usize,
    /// Attempts per request (429, 5xx, timeouts), the first included.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 6))]
    pub max_attempts: u32,
    /// Whole-request timeout in seconds.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 120.0))]
    pub timeout_secs: f64,
    /// The response store of chat answers: kept here, so a rerun sends nothing it already has.
    #[cfg_attr(feature = "clap", arg(long, default_value = ".coreb-cache/rerank-responses"))]
    pub store: PathBuf,
    /// Serve chat answers from the store only; a missing answer is an error (offline rerun).
    #[cfg_attr(feature = "clap", arg(long))]
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

/// The options of an evaluation: the flags of `coreb eval` (parsed by the `coreb` binary).
#[derive(Debug, Clone)]
#[cfg_attr(feature = "clap", derive(Args))]
pub struct EvalOptions {
    /// A release directory or a BEIR folder (`corpus.jsonl`, `queries.jsonl`, `qrels/test.tsv`).
    pub dir: PathBuf,
    /// Built-in retriever: `bm25` or `embed:<model>`.
    #[cfg_attr(feature = "clap", arg(long, default_value = "bm25"))]
    pub retriever: String,
    /// Evaluate this TREC run file instead of running a retriever. A code query's own
    /// document (`source_doc_id`) is dropped from its ranking, as CoREB scores it.
    #[cfg_attr(feature = "clap", arg(long))]
    pub run: Option<PathBuf>,
    /// Keep a code query's own document in a `--run` ranking (it then counts as a miss).
    #[cfg_attr(feature = "clap", arg(long, requires = "run"))]
    pub keep_self: bool,
    /// Score only the queries a `--run` file ranks, when it does not rank every query of the
    /// release (by default such a run, of another release or cut short, is refused); the
    /// counts are in the output and `results.json` (`run_coverage`). Not with `--record`.
    #[cfg_attr(feature = "clap", arg(long, requires = "run", conflicts_with = "record"))]
    pub allow_partial: bool,
    /// Cut-offs for the @k metrics.
    #[cfg_attr(feature = "clap", arg(long, value_delimiter = ',', default_value = "1,5,10"))]
    pub k: Vec<usize>,
    /// Write JSON results, the Markdown report and plots here.
    #[cfg_attr(feature = "clap", arg(long))]
    pub out: Option<PathBuf>,
    /// Print the results as JSON on stdout.
    #[cfg_attr(feature = "clap", arg(long))]
    pub json: bool,
    /// Documents retrieved per query.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 100))]
    pub depth: usize,
    /// Qrels split to evaluate (`qrels/<split>.tsv`).
    #[cfg_attr(feature = "clap", arg(long, default_value = "test"))]
    pub split: String,
    /// Base URL of the OpenAI-compatible embeddings / rerank endpoint (with `/v1`).
    #[cfg_attr(feature = "clap", arg(long, default_value = "https://api.openai.com/v1"))]
    pub base_url: String,
    /// Rerank the top `--rerank-depth` documents of the first stage with this model.
    #[cfg_attr(feature = "clap", arg(long))]
    pub rerank: Option<String>,
    /// How the reranker is called: `rerank` (`POST /rerank`: Cohere, Jina, vLLM), `score`
    /// (vLLM's `POST /score`) or `listwise` (a chat model through the LLM gateway,
    /// RankGPT-style sliding windows).
    #[cfg_attr(feature = "clap", arg(long, value_enum, default_value = "rerank"))]
    pub rerank_api: RerankApi,
    /// How many top documents of the first stage are reranked (the CoREB paper: 128).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 128))]
    pub rerank_depth: usize,
    /// Base URL of the reranker (default: `--base-url`).
    #[cfg_attr(feature = "clap", arg(long))]
    pub rerank_base_url: Option<String>,
    /// Environment variable holding the reranker's key (default: `--api-key-env`).
    #[cfg_attr(feature = "clap", arg(long))]
    pub rerank_api_key_env: Option<String>,
    /// `rerank`/`score`: how query and documents are written for the reranker: `none` (as the
    /// release has them) or `qwen3` (Qwen3-Reranker's chat template, the task's instruction
    /// in `<Instruct>:`, then `<Query>:` and `<Document>:`).
    #[cfg_attr(feature = "clap", arg(long, value_enum, default_value = "none"))]
    pub rerank_template: RerankTemplate,
    /// Listwise: candidates per window.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 10))]
    pub window: usize,
    /// Listwise: how far each window moves up.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 5))]
    pub step: usize,
    /// Listwise: words of each passage shown to the model (0: all).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 300))]
    pub max_words: usize,
    /// Query template for every task (`{text}`, optional `{instruction}`; without `{text}`:
    /// a prefix), replacing the preset's.
    #[cfg_attr(feature = "clap", arg(long))]
    pub query_prompt: Option<String>,
    /// Document template for every task, replacing the preset's.
    #[cfg_attr(feature = "clap", arg(long))]
    pub doc_prompt: Option<String>,
    /// Use this preset whatever the model (`none`: raw texts).
    #[cfg_attr(feature = "clap", arg(long))]
    pub prompt_preset: Option<String>,
    /// Preset file (default: the built-in `prompts/eval/presets.toml`).
    #[cfg_attr(feature = "clap", arg(long))]
    pub prompts: Option<PathBuf>,
    /// Take `[eval]` (prompts) and `[gates]` (thresholds) from this build manifest.
    #[cfg_attr(feature = "clap", arg(long))]
    pub manifest: Option<PathBuf>,
    /// Embedding cache directory (default: `.coreb-cache/embeddings`).
    #[cfg_attr(feature = "clap", arg(long, conflicts_with = "no_cache"))]
    pub cache: Option<PathBuf>,
    /// Do not read or write the embedding cache.
    #[cfg_attr(feature = "clap", arg(long))]
    pub no_cache: bool,
    /// Texts per embeddings request.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 64))]
    pub batch_size: usize,
    /// `dimensions` asked of the embeddings endpoint.
    #[cfg_attr(feature = "clap", arg(long))]
    pub dimensions: Option<u32>,
    /// Keep vectors as returned (dot product) instead of L2-normalising them (cosine).
    #[cfg_attr(feature = "clap", arg(long))]
    pub no_normalize: bool,
    /// Bootstrap resamples of every confidence interval (0: none).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 1000))]
    pub resamples: usize,
    /// Seed of the bootstrap (recorded in the results).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 20_250_101))]
    pub seed: u64,
    /// Also check the release gates (thresholds of `--manifest`, else the defaults) and fail
    /// if any gate fails.
    #[cfg_attr(feature = "clap", arg(long))]
    pub gates: bool,
    /// Record the results in the results store (`<releases dir>/results`, see `--results`)
    /// for `coreb leaderboard`: one row per task, subtask, language and metric. Recording the
    /// same run again changes nothing. The directory must be a release or one of its tasks.
    #[cfg_attr(feature = "clap", arg(long))]
    pub record: bool,
    /// The results store `--record` writes to (default: `results/` beside the release).
    #[cfg_attr(feature = "clap", arg(long, requires = "record"))]
    pub results: Option<PathBuf>,
    /// The name the leaderboard shows (default: the retriever, `bm25` or `embed:<model>`;
    /// needed with `--run`).
    #[cfg_attr(feature = "clap", arg(long, requires = "record"))]
    pub model_name: Option<String>,
    /// The model's declared training cutoff, `YYYY-MM-DD` or `YYYY-MM` (its last day): the
    /// leaderboard can average only over releases whose problems all come after it.
    #[cfg_attr(feature = "clap", arg(long, requires = "record"))]
    pub cutoff: Option<String>,
    /// The model's category, which the leaderboard filters by: `code` (a code model),
    /// `general` (a general-purpose one) or `closed` (served only behind an API). A record
    /// without one is shown as `unknown`.
    #[cfg_attr(feature = "clap", arg(long, requires = "record"))]
    pub category: Option<String>,
    /// How requests reach the endpoints.
    #[cfg_attr(feature = "clap", command(flatten))]
    pub client: ClientOptions,
    /// The version of the tool, recorded with the results.
    #[cfg_attr(feature = "clap", arg(skip = String::from(env!("CARGO_PKG_VERSION"))))]
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
                _ => coreb_base::usage!(
                    "`--retriever`: expected `bm25` or `embed:<model>`, got `{r}`"
                ),
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
    /// How the `--run` file meets the evaluated queries (checked before any task is scored).
    coverage: Option<RunCoverage>,
    /// The release evaluated (`None`: a bare BEIR folder).
    release: Option<ReleaseIdentity>,
    /// The runtime the endpoints are asked on (the caller's).
    runtime: tokio::runtime::Handle,
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
/// `load_manifest`, evaluate every task (an endpoint asked on `runtime`), then record
/// (`record`), write (`out`) and print the report; fails when a listwise window got no answer
/// or a release gate fails.
pub fn evaluate(
    args: &EvalOptions,
    load_manifest: &dyn Fn(&Path) -> anyhow::Result<ManifestSettings>,
    sink: &dyn Report,
    runtime: &tokio::runtime::Handle,
) -> anyhow::Result<()> {
    let (setup, report, runs, gate_failures) = run_tasks(args, load_manifest, sink, runtime)?;
    match (&report.release, &report.run_coverage) {
        (None, _) => sink.status(&format!("note: `{}` has no `MANIFEST.json` (nor its parent): the results record no release", args.dir.display())),
        (Some(_), Some(c)) if c.partial => {
            sink.status(&format!("partial run: {} of {} queries scored (`--allow-partial`); {} query ids of the run are no query of the release", c.matched, c.queries, c.unknown))
        }
        _ => {}
    }
    if args.record {
        setup.record(args, &report, &runs, sink)?;
    }
    setup.write(args.out.as_deref(), args.json, &report, &runs, sink)?;
    if setup.gates.is_some() {
        if gate_failures.is_empty() {
            sink.status("all release gates passed");
        } else {
            let list: Vec<String> = gate_failures.iter().map(ToString::to_string).collect();
            bail!("{} release gate(s) failed:\n{}", gate_failures.len(), list.join("\n"));
        }
    }
    Ok(())
}

/// The report [`evaluate`] makes, returned: nothing recorded, written or printed, no gate
/// enforced (the Python module's `evaluate_release` is `coreb eval --run` through this).
pub fn report(
    args: &EvalOptions,
    load_manifest: &dyn Fn(&Path) -> anyhow::Result<ManifestSettings>,
    sink: &dyn Report,
    runtime: &tokio::runtime::Handle,
) -> anyhow::Result<EvalReport> {
    Ok(run_tasks(args, load_manifest, sink, runtime)?.1)
}

/// Every task evaluated: the setup, the report, the runs made and the gates failed.
#[allow(clippy::type_complexity)]
fn run_tasks(
    args: &EvalOptions,
    load_manifest: &dyn Fn(&Path) -> anyhow::Result<ManifestSettings>,
    sink: &dyn Report,
    runtime: &tokio::runtime::Handle,
) -> anyhow::Result<(Setup, EvalReport, Vec<(String, Run)>, Vec<crate::gates::GateFailure>)> {
    let setup = Setup::new(args, load_manifest, runtime.clone())?;
    let mut tasks = Vec::new();
    let mut runs = Vec::new();
    let mut gate_failures = Vec::new();
    let mut prompts_used = setup.dense.as_ref().map(DenseSetup::prompts_used);
    for d in &setup.dirs {
        let outcome = setup.evaluate_dir(d, sink, &mut prompts_used)?;
        tasks.push(outcome.report);
        runs.extend(outcome.runs);
        gate_failures.extend(outcome.gate_failures);
    }
    let rerank_info = setup.reranker.as_ref().map(|r| r.info(&setup.first_label));
    if let Some(stats) =
        rerank_info.as_ref().and_then(|r| r.listwise_stats).filter(|s| s.failed > 0)
    {
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
    let report = EvalReport {
        retriever: label,
        ks: setup.k.clone(),
        tasks,
        bootstrap: setup.bootstrap,
        prompts: prompts_used,
        rerank: rerank_info,
        release: setup.release.clone(),
        run_coverage: setup.coverage,
    };
    Ok((setup, report, runs, gate_failures))
}

impl Setup {
    /// Check the arguments (the `--record` ones before any work), load the manifest's gates
    /// and prompts, find the BEIR folders and set up the retriever and the reranker.
    fn new(
        args: &EvalOptions,
        load_manifest: &dyn Fn(&Path) -> anyhow::Result<ManifestSettings>,
        runtime: tokio::runtime::Handle,
    ) -> anyhow::Result<Setup> {
        if args.k.is_empty() || args.k.contains(&0) {
            coreb_base::usage!("`--k`: cut-offs must be positive integers");
        }
        let retriever = Retriever::from_args(args)?;
        if args.record {
            // Fail before the work, not after it.
            release_of(&args.dir)?;
            if let Some(c) = &args.cutoff {
                crate::leaderboard::record::parse_cutoff(c).context("`--cutoff`")?;
            }
            if let Some(c) = &args.category
                && let Err(e) = crate::leaderboard::record::parse_category(c)
            {
                coreb_base::usage!("`--category`: {e}");
            }
            if matches!(retriever, Retriever::RunFile(_)) && args.model_name.is_none() {
                coreb_base::usage!("`--record` with `--run`: name the model with `--model-name`");
            }
        }
        let manifest = match &args.manifest {
            Some(path) => {
                Some(load_manifest(path).with_context(|| format!("loading `{}`", path.display()))?)
            }
            None => None,
        };
        let gates =
            args.gates.then(|| manifest.as_ref().map(|m| m.gates.clone()).unwrap_or_default());
        let prompts = PromptChoice::resolve(args, manifest.as_ref())?;
        if !matches!(retriever, Retriever::Embed { .. }) && prompts.given_on_command_line {
            coreb_base::usage!(
                "`--query-prompt`, `--doc-prompt` and `--prompt-preset` apply to `--retriever embed:<model>`"
            );
        }
        let dirs = dataset_dirs(&args.dir)?;
        let external = match &retriever {
            Retriever::RunFile(p) => {
                Some(Run::read(p).with_context(|| format!("reading run `{}`", p.display()))?)
            }
            _ => None,
        };
        let coverage = match (&retriever, &external) {
            (Retriever::RunFile(path), Some(run)) => Some(run_coverage(
                run,
                path,
                &args.dir,
                &dirs,
                &args.split,
                Some(args.allow_partial),
            )?),
            _ => None,
        };
        let release = release_identity(&args.dir)?;
        let dense = match &retriever {
            Retriever::Embed { model } => Some(DenseSetup::new(model, args, prompts)?),
            _ => None,
        };
        let reranker = Reranker::new(args)?;
        let first_depth =
            if reranker.is_some() { args.depth.max(args.rerank_depth) } else { args.depth };
        let bootstrap = (args.resamples > 0).then_some(BootstrapConfig {
            resamples: args.resamples,
            seed: args.seed,
            ..BootstrapConfig::default()
        });
        Ok(Setup {
            first_label: retriever.label(),
            retriever,
            k: args.k.clone(),
            split: args.split.clone(),
            keep_self: args.keep_self,
            gates,
            dirs,
            external,
            coverage,
            release,
            runtime,
            dense,
            reranker,
            first_depth,
            bootstrap,
        })
    }

    /// Evaluate the BEIR folder `d`: its first-stage run, reranked when asked, scored (with
    /// intervals, and against the first stage when reranked) and gated when asked.
    fn evaluate_dir(
        &self,
        d: &Path,
        sink: &dyn Report,
        prompts_used: &mut Option<PromptsUsed>,
    ) -> anyhow::Result<TaskOutcome> {
        let mut data = beir::read_dir(d, &self.split)
            .with_context(|| format!("reading BEIR folder `{}`", d.display()))?;
        // A release's BEIR qrels hold the positives only; its Parquet qrels add the hard
        // negatives (relevance 1) that the intrusion rate and the gates need.
        if self.split == "test"
            && let Some(graded) = beir::release_qrels(d)
                .with_context(|| format!("reading the graded qrels beside `{}`", d.display()))?
        {
            data.qrels = graded;
        }
        if let (Some(run), Some(c)) = (&self.external, &self.coverage)
            && c.partial
        {
            // `--allow-partial`: only the queries the run ranks are scored.
            data.qrels.queries.retain(|qid, _| run.queries.contains_key(qid));
            data.queries.retain(|q| run.queries.contains_key(&q.id));
        }
        // An MTEB task folder: its task, and each query's candidates where it has them.
        let mteb = crate::mteb::read_folder(d, &self.split)
            .with_context(|| format!("reading the MTEB task folder `{}`", d.display()))?;
        let candidates = mteb.as_ref().and_then(|m| m.candidates.as_ref());
        sink.status(&format!(
            "{}: {} docs, {} queries{}",
            data.name,
            data.corpus.len(),
            data.queries.len(),
            match (&mteb, candidates) {
                (Some(m), Some(c)) if m.task.protocol == crate::mteb::Protocol::Reranking =>
                    format!(" (MTEB reranking: {} candidate lists)", c.len()),
                (Some(_), Some(c)) => format!(" (MTEB retrieval: {} candidate lists)", c.len()),
                _ => String::new(),
            }
        ));
        let mut first = self.first_stage(&data, mteb.as_ref(), sink, prompts_used)?;
        if let Some(lists) = candidates {
            let (kept, dropped) = crate::mteb::restrict(&first, lists);
            if dropped > 0 && self.external.is_some() {
                sink.status(&format!(
                    "{}: dropped {dropped} document(s) of the run outside the queries' candidates",
                    data.name
                ));
            }
            first = kept;
            // A built-in retriever ranks every candidate, and a reranker sees them all, as
            // MTEB's reranking does; a `--run` alone is scored as it is.
            if self.external.is_none() || self.reranker.is_some() {
                crate::mteb::complete(&mut first, lists);
            }
        }
        let run = match &self.reranker {
            Some(r) => r.rerank(&self.runtime, sink, &data, &first)?,
            None => first.clone(),
        };
        let gate_failures = match &self.gates {
            Some(config) => check_gates(
                &data,
                &run,
                matches!(self.retriever, Retriever::Bm25) && self.reranker.is_none(),
                config,
            ),
            None => Vec::new(),
        };
        let cfg = CorebConfig::for_qrels(&data.qrels, self.k.clone());
        let results = score(&data.qrels, &run, &cfg);
        let mut task = report::task_report(&data, &results, &cfg.ks, cfg.level);
        if let Some(b) = &self.bootstrap {
            task.ci = Some(report::task_intervals(&task, cfg.ks.len(), b));
        }
        if let Some(m) = &mteb {
            let Some(at10) = cfg.ks.iter().position(|k| *k == 10) else {
                bail!(
                    "`{}`: MTEB's main score of `{}` is {}: `--k` must hold 10",
                    d.display(),
                    m.task.name,
                    m.task.main_score()
                );
            };
            let value = match m.task.protocol {
                crate::mteb::Protocol::Retrieval => task.overall.at_k.ndcg[at10],
                crate::mteb::Protocol::Reranking => task.overall.at_k.map[at10],
            };
            task.mteb = Some(report::MtebScore {
                task: m.task.name.to_owned(),
                kind: m.task.kind().to_owned(),
                main_score: m.task.main_score().to_owned(),
                value,
                candidate_lists: candidates.map(|c| c.len()),
            });
        }
        let mut runs = Vec::new();
        if self.reranker.is_some() {
            let first_results = score(&data.qrels, &first, &cfg);
            let first_task = report::task_report(&data, &first_results, &cfg.ks, cfg.level);
            let ndcg = report::compare_queries(
                &first_task.queries,
                &task.queries,
                "ndcg",
                cfg.ks.len(),
                &self.bootstrap.unwrap_or_default(),
            )
            .map_err(anyhow::Error::msg)?;
            task.rerank =
                Some(RerankDelta { first_stage: summarize(&cfg.ks, &first_results), ndcg });
            runs.push((format!("{}.first", data.name), first));
        }
        runs.push((data.name.clone(), run));
        Ok(TaskOutcome { report: task, runs, gate_failures })
    }

    /// The first-stage run of one task: the `--run` file's (without the queries' own
    /// documents unless `--keep-self`), BM25's or the dense retriever's.
    fn first_stage(
        &self,
        data: &Dataset,
        mteb: Option<&crate::mteb::Folder>,
        sink: &dyn Report,
        prompts_used: &mut Option<PromptsUsed>,
    ) -> anyhow::Result<Run> {
        // Candidate lists are cut from a ranking of the whole corpus, so every candidate is in it.
        let depth = match mteb {
            Some(m) if m.candidates.is_some() => self.first_depth.max(data.corpus.len()),
            _ => self.first_depth,
        };
        Ok(match (&self.retriever, &self.external, &self.dense) {
            (_, Some(r), _) if self.keep_self => r.clone(),
            (_, Some(r), _) => {
                let (kept, dropped) = drop_own_documents(data, r);
                if dropped > 0 {
                    sink.status(&format!("{}: dropped {dropped} own document(s) of code queries from the run (--keep-self keeps them)", data.name));
                }
                kept
            }
            (Retriever::Bm25, _, _) => crate::bm25_run(data, Bm25Config::default(), depth),
            (_, _, Some(setup)) => {
                // An MTEB task folder takes the prompts of the CoREB task it is made from
                // (MTEB's task prompts are CoREB's instructions).
                let renamed;
                let prompted = match mteb {
                    Some(m) => {
                        renamed = Dataset { name: m.task.coreb_task.to_owned(), ..data.clone() };
                        &renamed
                    }
                    None => data,
                };
                let (run, task_prompts) = setup.run(&self.runtime, sink, prompted, depth)?;
                if let Some(used) = prompts_used {
                    used.tasks.insert(data.name.clone(), task_prompts);
                }
                run
            }
            _ => unreachable!("every retriever is handled above"),
        })
    }

    /// `--record`: add the report to the results store, with the sha256 of each task's run.
    fn record(
        &self,
        args: &EvalOptions,
        report: &EvalReport,
        runs: &[(String, Run)],
        sink: &dyn Report,
    ) -> anyhow::Result<()> {
        let run_sha256 = runs
            .iter()
            .filter(|(name, _)| !name.ends_with(".first"))
            .map(|(name, run)| -> anyhow::Result<(String, String)> {
                let sha = match (&self.retriever, &self.reranker) {
                    // The user's own file, as given.
                    (Retriever::RunFile(path), None) => coreb_base::hashing::sha256_file(path)
                        .with_context(|| format!("hashing `{}`", path.display()))?,
                    // The run coreb made, as `--out` writes it.
                    _ => coreb_base::hashing::sha256_hex(run.to_trec(self.first_depth).as_bytes()),
                };
                Ok((name.clone(), sha))
            })
            .collect::<anyhow::Result<_>>()?;
        let model = match (&args.model_name, &self.retriever) {
            (Some(name), _) => name.clone(),
            (None, Retriever::RunFile(_)) => {
                bail!("`--record` with `--run`: name the model with `--model-name`")
            }
            (None, _) => report.retriever.clone(),
        };
        let request = RecordRequest {
            dir: &args.dir,
            results: args.results.as_deref(),
            model,
            retriever: report.retriever.clone(),
            cutoff: args.cutoff.as_deref(),
            category: args.category.as_deref(),
            run_sha256,
            tool_version: args.tool_version.clone(),
        };
        let (path, written) = record(report, request)?;
        sink.status(&if written {
            format!("recorded in `{}`", path.display())
        } else {
            format!("already recorded: `{}` (nothing written)", path.display())
        });
        Ok(())
    }

    /// `--out`: the JSON, the Markdown, the plots and the runs coreb made; then the report on
    /// stdout (JSON with `--json`, else Markdown).
    fn write(
        &self,
        out: Option<&Path>,
        json: bool,
        report: &EvalReport,
        runs: &[(String, Run)],
        sink: &dyn Report,
    ) -> anyhow::Result<()> {
        let json_text = serde_json::to_string_pretty(report)?;
        let markdown = report::to_markdown(report);
        if let Some(out) = out {
            fs_err::create_dir_all(out)?;
            durable::write(&out.join("results.json"), json_text.as_bytes())?;
            durable::write(&out.join("report.md"), markdown.as_bytes())?;
            durable::write(&out.join("ndcg.svg"), report::ndcg_svg(report).as_bytes())?;
            durable::write(
                &out.join("queries.svg"),
                report::query_distribution_svg(report).as_bytes(),
            )?;
            for (name, run) in runs {
                // An external run is the user's own file: only what coreb made is written.
                if self.external.is_none() || (self.reranker.is_some() && !name.ends_with(".first"))
                {
                    durable::write(
                        &out.join(format!("{name}.run.trec")),
                        run.to_trec(self.first_depth).as_bytes(),
                    )?;
                }
            }
            sink.status(&format!("wrote {}", out.display()));
        }
        if json {
            sink.result(&json_text);
        } else {
            sink.result(markdown.trim_end());
        }
        Ok(())
    }
}

/// `run` without each query's own document (a code query's `source_doc_id`): CoREB never
/// ranks a query for itself. Returns the run and how many entries were dropped.
pub fn drop_own_documents(data: &Dataset, run: &Run) -> (Run, usize) {
    let own: std::collections::HashMap<&str, &str> = data
        .queries
        .iter()
        .filter_map(|q| q.source_doc_id.as_deref().map(|d| (q.id.as_str(), d)))
        .collect();
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
fn check_gates(
    data: &Dataset,
    run: &Run,
    run_is_bm25: bool,
    gates: &GatesConfig,
) -> Vec<crate::gates::GateFailure> {
    let ndcg10 = if run_is_bm25 {
        let cfg = CorebConfig::for_qrels(&data.qrels, vec![10]);
        let results = score(&data.qrels, run, &cfg);
        coreb_trec::coreb::summarize(&cfg.ks, &results).at_k.ndcg[0]
    } else {
        crate::bm25_ndcg10(data)
    };
    crate::gates::check_task(data, ndcg10, gates)
}

/// How the query ids of `run` (the `--run` file `path`) meet the queries judged in the `split`
/// qrels of the BEIR folders `dirs` evaluated from `dir`. A run must rank every evaluated
/// query and name no query the release lacks (the queries of every task of the release count,
/// so a run of all tasks scores one task folder); otherwise it is refused, unless
/// `allow_partial` is `Some(true)` (`--allow-partial`), which scores the matched queries and
/// needs at least one (`None`: the command has no `--allow-partial`, `coreb compare`).
pub(crate) fn run_coverage(
    run: &Run,
    path: &Path,
    dir: &Path,
    dirs: &[PathBuf],
    split: &str,
    allow_partial: Option<bool>,
) -> anyhow::Result<RunCoverage> {
    let partial = allow_partial == Some(true);
    let mut judged = std::collections::BTreeSet::new();
    for d in dirs {
        let qrels_path = d.join("qrels").join(format!("{split}.tsv"));
        let text = fs_err::read_to_string(&qrels_path)?;
        judged.extend(beir::parse_qrels(&text, &qrels_path)?.queries.into_keys());
    }
    // Every query of the release (or of the folders evaluated, outside a release).
    let release_dirs = match find_release(dir)? {
        Some((release, _, _)) if release != dir => dataset_dirs(&release)?,
        _ => dirs.to_vec(),
    };
    let mut known = judged.clone();
    for d in &release_dirs {
        let queries_path = d.join("queries.jsonl");
        let text = fs_err::read_to_string(&queries_path)?;
        known.extend(beir::parse_queries(&text, &queries_path)?.into_iter().map(|q| q.id));
    }
    let matched = judged.iter().filter(|q| run.queries.contains_key(*q)).count();
    let unknown: Vec<&String> = run.queries.keys().filter(|q| !known.contains(*q)).collect();
    let coverage = RunCoverage { matched, queries: judged.len(), unknown: unknown.len(), partial };
    if matched == judged.len() && unknown.is_empty() {
        return Ok(RunCoverage { partial: false, ..coverage });
    }
    let foreign = if unknown.is_empty() {
        String::new()
    } else {
        format!(
            "; {} of its {} query ids are no query of `{}` (such as {})",
            unknown.len(),
            run.queries.len(),
            dir.display(),
            crate::ticked(unknown.iter().take(3))
        )
    };
    if matched == 0 {
        bail!(
            "run `{}` ranks none of the {} queries of `{}`{foreign}: a run of another release?",
            path.display(),
            judged.len(),
            dir.display()
        );
    }
    if !partial {
        let remedy = match allow_partial {
            Some(_) => format!(" (`--allow-partial` scores the {matched} it ranks)"),
            None => String::new(),
        };
        bail!(
            "run `{}` ranks {matched} of the {} queries of `{}`{foreign}: a run of another release, or cut short?{remedy}",
            path.display(),
            judged.len(),
            dir.display()
        );
    }
    Ok(coverage)
}

/// The BEIR folders to evaluate: `dir` itself, or its BEIR subfolders in name order.
pub fn dataset_dirs(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    if beir::is_beir_dir(dir) {
        return Ok(vec![dir.to_owned()]);
    }
    let mut subs: Vec<PathBuf> = fs_err::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| beir::is_beir_dir(p))
        .collect();
    subs.sort();
    if subs.is_empty() {
        bail!(
            "`{}`: not a BEIR folder (corpus.jsonl, queries.jsonl, qrels/) and holds none",
            dir.display()
        );
    }
    Ok(subs)
}
