//! Runs the LLM stages (`rewrite`, `distract`, `abbreviate`, `generate`, `queries`) through
//! one gateway and response store.
//!
//! Each LLM stage's key holds its configuration, the models and sampling of its stage, the
//! hashes of its prompts and schemas, the structured-output mode of its JSON answers and the
//! upstream fingerprints; the store mode and endpoint are not part of it (a stored response
//! is the same whoever serves it). A stage whose previous run rejected items is run again, so
//! that answers that arrived since are used (what was answered before comes from the store,
//! cut and rejected answers included).
//!
//! A stage's summary (its fingerprint) holds what it produced and why items were rejected
//! (`rejections_by_reason`), never where the answers came from: the store/endpoint counts
//! ([`run_facts`]) and the gateway's requests, tokens and cost of the run (`requests`) go to
//! the record's `local` part, so a rerun served from the store leaves downstream stages
//! untouched.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use coreb_data::problem::Problem;
use coreb_data::rewritten::RewrittenProblem;
use coreb_data::rewritten::as_problem;
use coreb_data::tables::ProblemWriter;
use coreb_data::tables::references::{ReferenceRow, write_references};
use coreb_data::tables::solutions::write_solutions;
use coreb_llm::batch::state_dir_of;
use coreb_llm::gateway::{Gateway, api_key_from_env};
use coreb_llm::prompt::Prompts;
use coreb_llm::run::{ModelPlan, Rejection, count_by_reason};
use coreb_llm::store::ResponseStore;
use coreb_llm::{BatchGateway, Counted, LlmGateway, LlmStage, Transport};
use serde::Serialize;
use serde::de::DeserializeOwned;
use stages::rewrite::{RewritePlans, RewritePrompts};

use super::{Engine, StageReport};
use crate::artifacts::{StageRecord, input_key};
use crate::engine::stage::StageName;

/// The gateway, prompts and runtime the LLM stages share.
pub struct LlmContext {
    runtime: tokio::runtime::Runtime,
    gateway: Arc<dyn LlmGateway>,
    prompts: Prompts,
}

impl LlmContext {
    /// The context of a plan: its prompts, and `gateway` or else a [`Gateway`] over its store.
    pub fn new(plan: &crate::manifest::RunPlan, gateway: Option<Arc<dyn LlmGateway>>) -> anyhow::Result<Self> {
        let prompts = Prompts::load(&plan.prompts_dir).with_context(|| format!("loading prompts from `{}`", plan.prompts_dir.display()))?;
        let gateway: Arc<dyn LlmGateway> = match gateway {
            Some(g) => g,
            None => {
                let key = api_key_from_env(&plan.llm)?;
                let gateway = Gateway::new(&plan.llm, ResponseStore::open(&plan.response_store), key.clone())?;
                match plan.llm.transport {
                    Transport::Sync => Arc::new(gateway),
                    Transport::Batch => Arc::new(BatchGateway::new(&plan.llm, gateway, key, state_dir_of(&plan.response_store))?),
                }
            }
        };
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(plan.jobs.max(1)).enable_all().build()?;
        Ok(LlmContext { runtime, gateway, prompts })
    }
}

impl LlmContext {
    /// Run one LLM stage's future on the runtime with a progress bar counting its requests
    /// (answers from the store count too; on a terminal a bar, elsewhere a line now and then).
    fn run<T>(&self, engine: &Engine, stage: StageName, f: impl AsyncFnOnce(&dyn LlmGateway) -> T) -> T {
        let bar = engine.printer.progress(None, stage.as_str(), false);
        let tick = || bar.inc(1);
        let counted = Counted { inner: self.gateway.as_ref(), progress: &tick };
        let out = self.runtime.block_on(f(&counted));
        bar.finish_and_clear();
        out
    }

    /// What the gateway did for `stages` in this run: requests sent, HTTP attempts, answers
    /// from the store, cut or filtered answers, failures, tokens and cost (each LLM stage
    /// runs once per build, so the gateway's totals of its stages are this run's).
    /// `None` for a gateway that keeps no accounts (authoring the sample's store).
    fn requests(&self, stages: &[LlmStage]) -> Option<serde_json::Value> {
        let usage = self.gateway.usage();
        if usage.is_empty() {
            return None;
        }
        let rows: Vec<_> = usage.into_iter().filter(|r| stages.iter().any(|s| s.as_str() == r.stage)).collect();
        let sum = |f: fn(&coreb_llm::UsageRow) -> u64| rows.iter().map(f).sum::<u64>();
        Some(serde_json::json!({
            "sent": sum(|r| r.sent),
            "attempts": sum(|r| r.attempts),
            "from_store": sum(|r| r.from_store),
            "from_endpoint": sum(|r| r.from_endpoint),
            "incomplete": sum(|r| r.incomplete),
            "failed": sum(|r| r.failed),
            "prompt_tokens": sum(|r| r.prompt_tokens),
            "completion_tokens": sum(|r| r.completion_tokens),
            "cost": rows.iter().map(|r| r.cost).fold(0.0, |a, b| a + b),
            "from_batch": sum(|r| r.from_batch),
            "batch_cost": rows.iter().map(|r| r.batch_cost).fold(0.0, |a, b| a + b),
        }))
    }
}

/// A stage's config as it runs: under the batch transport every item is in flight at once,
/// so that a stage's missing requests make one batch (its concurrency setting bounds
/// synchronous calls only, and is still the one keyed and recorded).
fn as_run<C: Clone>(engine: &Engine, config: &C, concurrency: impl FnOnce(&mut C) -> &mut usize) -> C {
    let mut run = config.clone();
    if engine.plan.llm.transport == Transport::Batch {
        *concurrency(&mut run) = usize::MAX;
    }
    run
}

/// Write one JSON object per line.
pub fn write_jsonl<T: Serialize>(path: &Path, rows: &[T]) -> anyhow::Result<()> {
    let mut f = std::io::BufWriter::new(fs_err::File::create(path)?);
    for r in rows {
        serde_json::to_writer(&mut f, r)?;
        f.write_all(b"\n")?;
    }
    f.into_inner().map_err(|e| anyhow::anyhow!("writing `{}`: {}", path.display(), e.error()))?.sync_all()?;
    Ok(())
}

/// Read one JSON object per line.
pub fn read_jsonl<T: DeserializeOwned>(path: &Path) -> anyhow::Result<Vec<T>> {
    Ok(coreb_base::jsonl::read(path)?)
}

/// Read one JSON object per line, a line at a time, keeping what `f` makes of each: only
/// one line and the kept rows are in memory.
fn read_jsonl_map<T: DeserializeOwned, U>(path: &Path, mut f: impl FnMut(T) -> U) -> anyhow::Result<Vec<U>> {
    Ok(coreb_base::jsonl::rows(path)?.map(|row| row.map(&mut f)).collect::<Result<_, _>>()?)
}

/// The output of an LLM stage listing the store keys of the answers it used, one a line.
pub const ANSWER_KEYS: &str = "answer_keys.txt";

/// A cached LLM stage is reused only when it rejected nothing (and recorded the answers it
/// used: one cached before they were recorded runs again, from the store).
fn reusable(engine: &Engine, stage: StageName, key: &str) -> anyhow::Result<Option<StageReport>> {
    Ok(engine.cached(stage, key)?.filter(|r| r.record.summary.get("rejected").and_then(serde_json::Value::as_u64) == Some(0) && r.record.outputs.contains_key("answer_keys")))
}

/// What of `[llm]` and the prompts decides a stage's answers: per LLM stage its models,
/// sampling, prompt and, for JSON answers, the schema and structured-output mode.
fn llm_key(engine: &Engine, ctx: &LlmContext, stages: &[LlmStage]) -> serde_json::Value {
    let llm = &engine.plan.llm;
    let keyed = |s: LlmStage| {
        let prompt = ctx.prompts.of(s);
        let schema = prompt.and_then(|p| p.schema.as_ref()).map(|schema| (llm.structured_output, &schema.sha256));
        serde_json::json!([s.as_str(), llm.models(s), llm.sampling(s), prompt.map(|p| &p.sha256), schema])
    };
    serde_json::json!(stages.iter().map(|s| keyed(*s)).collect::<Vec<_>>())
}

/// The facts a stage's summary records (and the release MANIFEST copies) about its prompts,
/// schemas and structured output.
fn llm_facts(ctx: &LlmContext, engine: &Engine, stages: &[LlmStage], summary: &mut serde_json::Value) {
    let schemas: std::collections::BTreeMap<&str, &str> =
        stages.iter().filter_map(|s| ctx.prompts.of(*s)?.schema.as_ref().map(|schema| (s.as_str(), schema.sha256.as_str()))).collect();
    if let Some(obj) = summary.as_object_mut()
        && !schemas.is_empty()
    {
        obj.insert("schemas".into(), serde_json::json!(schemas));
        obj.insert("structured_output".into(), serde_json::json!(engine.plan.llm.structured_output));
    }
}

/// Where answers came from (the store or the endpoint) depends on the run, not on the inputs:
/// those counts are taken out of `summary` (wherever they sit in its `stats`) and returned,
/// summed, for the record's `local` facts — shown, but kept out of the stage's fingerprint, so
/// that a rerun answered from the store does not re-run `execute` and every later stage.
pub(super) fn run_facts(summary: &mut serde_json::Value) -> serde_json::Value {
    const RUN_COUNTS: [&str; 2] = ["from_store", "from_endpoint"];
    fn take(v: &mut serde_json::Value, sums: &mut [u64; 2]) {
        let Some(obj) = v.as_object_mut() else { return };
        for (i, k) in RUN_COUNTS.iter().enumerate() {
            if let Some(n) = obj.remove(*k) {
                sums[i] += n.as_u64().unwrap_or(0);
            }
        }
        for child in obj.values_mut() {
            take(child, sums);
        }
    }
    let mut sums = [0u64; 2];
    if let Some(stats) = summary.get_mut("stats") {
        take(stats, &mut sums);
    }
    serde_json::json!({ RUN_COUNTS[0]: sums[0], RUN_COUNTS[1]: sums[1] })
}

/// Commit an LLM stage: its rows, its rejections and their counts by reason; the requests of
/// this run are kept out of the fingerprint.
#[allow(clippy::too_many_arguments)]
fn commit_llm(
    engine: &Engine,
    ctx: &LlmContext,
    stage: StageName,
    llm: &[LlmStage],
    key: &str,
    writer: super::StageOutput,
    outputs: &[(&str, &str)],
    rows_out: usize,
    rejected: &[Rejection],
    mut summary: serde_json::Value,
) -> anyhow::Result<StageReport> {
    write_jsonl(&writer.path("rejections.jsonl"), rejected)?;
    llm_facts(ctx, engine, llm, &mut summary);
    if let Some(obj) = summary.as_object_mut() {
        obj.insert("rows_out".into(), serde_json::json!(rows_out));
        obj.insert("rejected".into(), serde_json::json!(rejected.len()));
        obj.insert("rejections_by_reason".into(), serde_json::json!(count_by_reason(rejected)));
    }
    // The store keys of every answer this stage was given: what a release's regeneration kit
    // carries of the response store.
    let keys: std::collections::BTreeSet<String> = llm.iter().flat_map(|s| ctx.gateway.answers_used(*s)).collect();
    fs_err::write(writer.path(ANSWER_KEYS), keys.iter().map(|k| format!("{k}\n")).collect::<String>())?;
    let mut outputs = outputs.to_vec();
    outputs.push(("rejections", "rejections.jsonl"));
    outputs.push(("answer_keys", ANSWER_KEYS));
    let mut local = run_facts(&mut summary);
    if let (Some(obj), Some(requests)) = (local.as_object_mut(), ctx.requests(llm)) {
        obj.insert("requests".into(), requests);
    }
    let report = writer.commit(engine, stage, key, &outputs, summary, local)?;
    announce_rejections(engine, stage, rejected);
    Ok(report)
}

/// Show the first rejections (all are in the stage's `rejections.jsonl`).
fn announce_rejections(engine: &Engine, stage: StageName, rejected: &[Rejection]) {
    for r in rejected.iter().take(5) {
        engine.printer.status(format!("{:>10}: rejected `{}` ({}): {}", stage.as_str(), r.item, r.model, r.reason));
    }
    if rejected.len() > 5 {
        engine.printer.status(format!("{:>10}: … and {} more (see rejections.jsonl)", stage.as_str(), rejected.len() - 5));
    }
}

pub(super) fn rewrite(engine: &Engine, filter: &StageRecord) -> anyhow::Result<StageReport> {
    let stage = StageName::Rewrite;
    let ctx = engine.llm()?;
    let config = &engine.plan.stages.rewrite;
    let llm = [LlmStage::Rewrite, LlmStage::RewriteTests, LlmStage::Reference, LlmStage::AdaptReference];
    let key = input_key(stage.as_str(), &(config, llm_key(engine, ctx, &llm)), &[filter])?;
    if let Some(hit) = reusable(engine, stage, &key)? {
        return Ok(hit);
    }
    // A merge asks the store for what the shard processes answered.
    engine.shard_parts(stage, &key)?;
    let input = engine.output(filter, "problems")?;
    let plans = RewritePlans::for_config(&engine.plan.llm);
    let run_config = as_run(engine, config, |c| &mut c.concurrency);
    let prompts = RewritePrompts::of(&ctx.prompts);
    let writer = engine.begin(stage)?;
    // The problems go through the model a window at a time and their rewrites are written as
    // they come: only a window's tests are in memory, never the month's (issue #13).
    let mut sink = RewriteSink::create(&writer)?;
    ctx.run(engine, stage, async |g| -> anyhow::Result<()> {
        let mut problems = coreb_data::tables::ProblemReader::open(&input)?.filter(|p| p.as_ref().map_or(true, |p| engine.handles(stage, p.id.as_str())));
        loop {
            let window = rewrite_window(&mut problems)?;
            if window.is_empty() {
                return Ok(());
            }
            sink.add(stages::rewrite::rewrite(&run_config, &plans, &prompts, window, g).await?)?;
        }
    })?;
    let RewriteSink { jsonl, table, references, reference_failures, rejected, stats, written } = sink;
    jsonl.commit()?;
    table.finish()?;
    let summary = serde_json::json!({
        "rows_in": stats.llm.items_in,
        "stats": stats,
        "parameters": config,
        "prompts": {
            "rewrite": ctx.prompts.rewrite.sha256,
            "rewrite_tests": ctx.prompts.rewrite_tests.sha256,
            "reference": ctx.prompts.reference.sha256,
            "adapt_reference": ctx.prompts.adapt_reference.sha256,
        },
        "models": engine.plan.llm.models(LlmStage::Rewrite),
    });
    // Beside the rewritten problems (JSON lines, and a problems table for `execute`): how
    // each test was carried over with the problem's reference solution (`execute` re-checks
    // the changed tests with it).
    write_references(&writer.path("references.parquet"), &references)?;
    write_jsonl(&writer.path("reference_failures.jsonl"), &reference_failures)?;
    for f in reference_failures.iter().take(5) {
        engine.printer.status(format!("{:>10}: no reference for `{}` ({}): {}; its changed tests stay unchecked", stage.as_str(), f.item, f.model, f.reason));
    }
    let outputs = [("rewritten", "rewritten.jsonl"), ("problems", "problems.parquet"), ("references", "references.parquet"), ("reference_failures", "reference_failures.jsonl")];
    commit_llm(engine, ctx, stage, &llm, &key, writer, &outputs, written, &rejected, summary)
}

/// Problems rewritten together: at most this many, or as many as fill [`REWRITE_WINDOW_BYTES`]
/// of tests. A window is wide enough for `concurrency` requests in flight.
const REWRITE_WINDOW_ROWS: usize = 256;
const REWRITE_WINDOW_BYTES: usize = 256 << 20;

/// The next window of problems to rewrite (empty at the end).
fn rewrite_window(problems: &mut impl Iterator<Item = Result<Problem, coreb_data::tables::TableError>>) -> anyhow::Result<Vec<Problem>> {
    let (mut window, mut bytes) = (Vec::new(), 0usize);
    while window.len() < REWRITE_WINDOW_ROWS && bytes < REWRITE_WINDOW_BYTES {
        let Some(p) = problems.next() else { break };
        let p = p?;
        bytes += p.public_tests.iter().chain(&p.private_tests).map(|t| t.input.len() + t.output.len()).sum::<usize>();
        window.push(p);
    }
    Ok(window)
}

/// What `rewrite` writes, window after window: the rewritten problems as JSON lines and as a
/// problems table, and what is kept whole (small) until the end.
struct RewriteSink {
    jsonl: coreb_base::durable::AtomicFile,
    table: ProblemWriter,
    references: Vec<ReferenceRow>,
    reference_failures: Vec<Rejection>,
    rejected: Vec<Rejection>,
    stats: stages::rewrite::RewriteStats,
    written: usize,
}

impl RewriteSink {
    fn create(writer: &super::StageOutput) -> anyhow::Result<Self> {
        Ok(RewriteSink {
            jsonl: coreb_base::durable::AtomicFile::create(&writer.path("rewritten.jsonl"))?,
            table: ProblemWriter::create(&writer.path("problems.parquet"))?,
            references: Vec::new(),
            reference_failures: Vec::new(),
            rejected: Vec::new(),
            stats: Default::default(),
            written: 0,
        })
    }

    fn add(&mut self, out: stages::rewrite::RewriteOutput) -> anyhow::Result<()> {
        for p in out.problems {
            serde_json::to_writer(&mut self.jsonl, &p)?;
            self.jsonl.write_all(b"\n")?;
            self.references.push(ReferenceRow::of(&p));
            self.table.write(as_problem(&p))?;
            self.written += 1;
        }
        self.reference_failures.extend(out.reference_failures);
        self.rejected.extend(out.rejected);
        self.stats += out.stats;
        Ok(())
    }
}

/// The rewritten problems of a rewrite record, without their test bodies: every test keeps
/// its type, with an empty input and output. The stages after `rewrite` read statements,
/// starters and test types; the tests themselves are in the record's `problems` table, for
/// `execute`. Read a line at a time, so a month's tests (GBs of JSON at N = 200) are never
/// in memory at once (issue #13).
pub fn rewritten(engine: &Engine, rewrite: &StageRecord) -> anyhow::Result<Vec<RewrittenProblem>> {
    read_jsonl_map(&engine.output(rewrite, "rewritten")?, |mut p: RewrittenProblem| {
        for t in p.public_tests.iter_mut().chain(p.private_tests.iter_mut()) {
            (t.input, t.output) = (String::new(), String::new());
        }
        p
    })
}

macro_rules! simple_stage {
    ($name:ident, $stage:expr, $llm:expr, $cfg:ident, $prompt:ident, $func:path, $field:ident, $file:expr) => {
        pub(super) fn $name(engine: &Engine, rewrite: &StageRecord) -> anyhow::Result<StageReport> {
            let stage = $stage;
            let ctx = engine.llm()?;
            let config = &engine.plan.stages.$cfg;
            let key = input_key(stage.as_str(), &(config, llm_key(engine, ctx, &[$llm])), &[rewrite])?;
            if let Some(hit) = reusable(engine, stage, &key)? {
                return Ok(hit);
            }
            engine.shard_parts(stage, &key)?;
            let mut problems = rewritten(engine, rewrite)?;
            problems.retain(|p| engine.handles(stage, p.id.as_str()));
            let plan = ModelPlan::for_stage(&engine.plan.llm, $llm);
            let run_config = as_run(engine, config, |c| &mut c.concurrency);
            let out = ctx.run(engine, stage, async |g| $func(&run_config, &plan, &ctx.prompts.$prompt, &problems, g).await)?;
            let summary = serde_json::json!({
                "rows_in": out.stats.items_in,
                "stats": out.stats,
                "parameters": config,
                "prompts": { $file: out.prompt_sha256 },
                "models": engine.plan.llm.models($llm),
            });
            let writer = engine.begin(stage)?;
            let file = concat!($file, ".jsonl");
            write_jsonl(&writer.path(file), &out.$field)?;
            commit_llm(engine, ctx, stage, &[$llm], &key, writer, &[($file, file)], out.$field.len(), &out.rejected, summary)
        }
    };
}

simple_stage!(distract, StageName::Distract, LlmStage::Distract, distract, distract, stages::distract::distract, distractors, "distractors");
simple_stage!(abbreviate, StageName::Abbreviate, LlmStage::Abbreviate, abbreviate, abbreviate, stages::abbreviate::abbreviate, summaries, "summaries");

/// `queries` sees every problem of the build (a problem's similar problems are looked for
/// among all of them) and asks for those of its shard only.
pub(super) fn queries(engine: &Engine, rewrite: &StageRecord) -> anyhow::Result<StageReport> {
    let stage = StageName::Queries;
    let ctx = engine.llm()?;
    let config = &engine.plan.stages.queries;
    let key = input_key(stage.as_str(), &(config, llm_key(engine, ctx, &[LlmStage::Queries])), &[rewrite])?;
    if let Some(hit) = reusable(engine, stage, &key)? {
        return Ok(hit);
    }
    engine.shard_parts(stage, &key)?;
    let problems = rewritten(engine, rewrite)?;
    let asked = |id: &coreb_data::problem::ProblemId| engine.handles(stage, id.as_str());
    let plan = ModelPlan::for_stage(&engine.plan.llm, LlmStage::Queries);
    let out = ctx.run(engine, stage, async |g| stages::queries::queries(config, &plan, &ctx.prompts.queries, &problems, Some(&asked), g).await)?;
    let summary = serde_json::json!({
        "rows_in": out.stats.items_in,
        "stats": out.stats,
        "dropped_queries": out.dropped_queries,
        "parameters": config,
        "prompts": { "queries": out.prompt_sha256 },
        "models": engine.plan.llm.models(LlmStage::Queries),
    });
    let writer = engine.begin(stage)?;
    write_jsonl(&writer.path("queries.jsonl"), &out.queries)?;
    commit_llm(engine, ctx, stage, &[LlmStage::Queries], &key, writer, &[("queries", "queries.jsonl")], out.queries.len(), &out.rejected, summary)
}

pub(super) fn generate(engine: &Engine, rewrite: &StageRecord) -> anyhow::Result<StageReport> {
    let stage = StageName::Generate;
    let ctx = engine.llm()?;
    let config = &engine.plan.stages.generate;
    let key = input_key(stage.as_str(), &(config, llm_key(engine, ctx, &[LlmStage::Generate])), &[rewrite])?;
    if let Some(hit) = reusable(engine, stage, &key)? {
        return Ok(hit);
    }
    engine.shard_parts(stage, &key)?;
    let mut problems = rewritten(engine, rewrite)?;
    problems.retain(|p| engine.handles(stage, p.id.as_str()));
    let plan = ModelPlan::for_stage(&engine.plan.llm, LlmStage::Generate);
    let run_config = as_run(engine, config, |c| &mut c.concurrency);
    let out = ctx.run(engine, stage, async |g| stages::generate::generate(&run_config, &plan, &ctx.prompts.generate, &problems, g).await)?;
    let writer = engine.begin(stage)?;
    write_solutions(&writer.path("solutions.parquet"), &out.solutions)?;
    let summary = serde_json::json!({
        "rows_in": out.stats.items_in,
        "stats": out.stats,
        "parameters": config,
        "prompts": {"generate": out.prompt_sha256},
        "models": engine.plan.llm.models(LlmStage::Generate),
    });
    commit_llm(engine, ctx, stage, &[LlmStage::Generate], &key, writer, &[("solutions", "solutions.parquet")], out.solutions.len(), &out.rejected, summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::artifacts::ArtifactStore;

    /// Issue #22: a stage re-run that got its answers from the store instead of the endpoint
    /// produced the same files, but its record's fingerprint changed with the counts, so
    /// `execute` (keyed by it) and everything after ran again on every build.
    #[test]
    fn where_answers_came_from_is_not_part_of_the_fingerprint() {
        let dir = tempfile::tempdir().unwrap();
        let store = ArtifactStore::open(dir.path()).unwrap();
        let commit = |from_store: u64, from_endpoint: u64| {
            let writer = store.begin("generate").unwrap();
            fs_err::write(writer.path("solutions.parquet"), "same solutions").unwrap();
            let mut summary = serde_json::json!({
                "rows_in": 4, "rows_out": 4, "rejected": 0, "parameters": {"samples": 1},
                "stats": {"items_in": 4, "items_out": 4, "from_store": from_store, "from_endpoint": from_endpoint, "nested": {"from_store": 1}},
            });
            let local = run_facts(&mut summary);
            writer.commit_with_local("k", &[("solutions", "solutions.parquet")], summary, local).unwrap()
        };
        let live = commit(0, 4);
        let replayed = commit(4, 0);
        assert_eq!(live.fingerprint(), replayed.fingerprint());
        assert_eq!(input_key("execute", &(), &[&live]).unwrap(), input_key("execute", &(), &[&replayed]).unwrap());
        assert_eq!(replayed.local, serde_json::json!({"from_store": 5, "from_endpoint": 0}));
        assert!(replayed.summary["stats"].get("from_store").is_none());
        assert_eq!(replayed.summary["stats"]["items_out"], 4);
    }
}
