//! `rewrite`: the counterfactual rewrite of each filtered problem by the models (statement,
//! starter code, tests, and the reference solution the changed tests are checked with), a
//! window of problems at a time. A control build (`[control]`) runs [`super::control`]'s
//! pass-through in its place: the same outputs, the problems as they are.

use std::collections::BTreeMap;
use std::io::Write;

use coreb_data::problem::Problem;
use coreb_data::rewritten::as_problem;
use coreb_data::tables::ProblemWriter;
use coreb_data::tables::references::{ReferenceRow, write_references};
use coreb_llm::LlmStage;
use coreb_llm::run::{Rejection, WrittenBy};
use coreb_stages::rewrite::{RewriteConfig, RewritePlans, RewritePrompts, RewriteStats};
use serde::{Deserialize, Serialize};

use super::context::{StageContext, StageOutput};
use super::control::{self, ControlSummary};
use super::llm::{
    Asked, LlmCounts, LlmLocal, LlmStats, LlmSummary, as_run, finish, llm_key, reusable, show_first,
};
use super::stage::{Done, Stage, StageReport, Upstream};
use super::stage_name::StageName;
use super::summary::{Counts, Reasons, StageFacts, Summary};
use crate::artifacts::input_key;

/// The `rewrite` stage.
pub(super) struct Rewrite;

/// `rewrite`'s counts: its answers' ([`LlmCounts`]) and how each test was carried over.
pub(super) type RewriteCounts = RewriteStats<LlmCounts>;

/// The counts of `stats`, and where its answers came from: (store, endpoint).
fn counts_of(stats: RewriteStats) -> (RewriteCounts, (u64, u64)) {
    let mut answered = (0, 0);
    let counts = stats.map_llm(|llm| {
        let (counts, from) = LlmCounts::of(llm);
        answered = from;
        counts
    });
    (counts, answered)
}

impl LlmStats for RewriteCounts {
    fn written_by(&self) -> WrittenBy {
        self.llm.written_by
    }
}

/// `rewrite`'s summary: the models' rewrite, or a control build's pass-through.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub(super) enum RewriteSummary {
    /// Rewritten by the models.
    Rewritten(LlmSummary<RewriteCounts, RewriteConfig>),
    /// A control build's problems, as they are.
    Control(ControlSummary),
}

impl RewriteSummary {
    fn inner(&self) -> &dyn Summary {
        match self {
            RewriteSummary::Rewritten(s) => s,
            RewriteSummary::Control(s) => s,
        }
    }
}

impl Summary for RewriteSummary {
    fn counts(&self) -> Counts {
        self.inner().counts()
    }

    fn reasons(&self) -> Reasons {
        self.inner().reasons()
    }

    fn facts(&self) -> Option<StageFacts> {
        self.inner().facts()
    }

    fn written_by(&self) -> WrittenBy {
        self.inner().written_by()
    }
}

/// How this build rewrites.
pub(super) enum Mode {
    /// By the models.
    Models,
    /// As the control of a published release.
    Control(control::Prepared),
}

impl Stage for Rewrite {
    const NAME: StageName = StageName::Rewrite;
    type Summary = RewriteSummary;
    type Local = LlmLocal;
    type Prepared = Mode;

    fn key(&self, cx: &StageContext, up: &Upstream<'_>) -> anyhow::Result<(String, Mode)> {
        let filter = up.record(StageName::Filter)?;
        if cx.plan().control.is_some() {
            let (key, prepared) = control::key(cx, filter)?;
            return Ok((key, Mode::Control(prepared)));
        }
        let llm = llm_key(cx.plan(), cx.llm()?, &LLM);
        Ok((
            input_key(StageName::Rewrite.as_str(), &(&cx.plan().stages.rewrite, llm), &[filter])?,
            Mode::Models,
        ))
    }

    fn reuse(&self, cx: &StageContext, hit: &StageReport) -> anyhow::Result<bool> {
        Ok(cx.plan().control.is_some() || reusable(hit))
    }

    fn run(
        &self,
        cx: &StageContext,
        up: &Upstream<'_>,
        mode: Mode,
        out: &StageOutput,
    ) -> anyhow::Result<Done<RewriteSummary, LlmLocal>> {
        match mode {
            Mode::Control(prepared) => {
                let done = control::rewrite(cx, up.record(StageName::Filter)?, prepared, out)?;
                Ok(Done {
                    outputs: done.outputs,
                    summary: RewriteSummary::Control(done.summary),
                    local: done.local,
                    wall: None,
                    on_commit: None,
                })
            }
            Mode::Models => {
                let done = rewrite(cx, up, out)?;
                Ok(Done {
                    outputs: done.outputs,
                    summary: RewriteSummary::Rewritten(done.summary),
                    local: done.local,
                    wall: None,
                    on_commit: None,
                })
            }
        }
    }
}

/// The LLM stages of `rewrite`.
const LLM: [LlmStage; 4] =
    [LlmStage::Rewrite, LlmStage::RewriteTests, LlmStage::Reference, LlmStage::AdaptReference];

/// Rewrite the filtered problems of this process (all, or its shard's) a window at a time.
fn rewrite(
    cx: &StageContext,
    up: &Upstream<'_>,
    out: &StageOutput,
) -> anyhow::Result<Done<LlmSummary<RewriteCounts, RewriteConfig>, LlmLocal>> {
    let stage = StageName::Rewrite;
    let ctx = cx.llm()?;
    let plan = cx.plan();
    let config = &plan.stages.rewrite;
    let input = cx.output(up.record(StageName::Filter)?, "problems")?;
    let plans = RewritePlans::for_config(&plan.llm);
    let run_config = as_run(plan, config, |c| &mut c.concurrency);
    let prompts = RewritePrompts::of(&ctx.prompts);
    // The problems go through the model a window at a time and their rewrites are written as
    // they come: only a window's tests are in memory, never the month's (issue #13).
    let mut sink = RewriteSink::create(out)?;
    ctx.run(cx.runtime()?, cx.printer(), stage, async |g| -> anyhow::Result<()> {
        let mut problems = coreb_data::tables::ProblemReader::open(&input)?
            .filter(|p| p.as_ref().map_or(true, |p| cx.handles(stage, p.id.as_str())));
        loop {
            let window = rewrite_window(&mut problems)?;
            if window.is_empty() {
                return Ok(());
            }
            sink.add(
                coreb_stages::rewrite::rewrite(&run_config, &plans, &prompts, window, g).await?,
            )?;
        }
    })?;
    let RewriteSink { jsonl, table, references, reference_failures, rejected, stats, written } =
        sink;
    jsonl.commit()?;
    table.finish()?;
    // Beside the rewritten problems (JSON lines, and a problems table for `execute`): how
    // each test was carried over with the problem's reference solution (`execute` re-checks
    // the changed tests with it).
    write_references(&out.path("references.parquet"), &references)?;
    coreb_base::jsonl::write(&out.path("reference_failures.jsonl"), &reference_failures)?;
    show_first(cx, stage, &reference_failures, |f| {
        format!(
            "no reference for `{}` ({}): {}; its changed tests stay unchecked",
            f.item, f.model, f.reason
        )
    });
    // The prompts of `rewrite` and its sub-steps, by name.
    let prompts: BTreeMap<String, String> =
        [LlmStage::Rewrite, LlmStage::RewriteTests, LlmStage::Reference, LlmStage::AdaptReference]
            .into_iter()
            .map(|s| (s.as_str().to_owned(), ctx.prompts[s].sha256.clone()))
            .collect();
    let asked = Asked {
        rows_in: stats.llm.items_in,
        rows_out: written,
        rejected: &rejected,
        stats: counts_of(stats),
        parameters: config.clone(),
        prompts,
        dropped_queries: None,
    };
    let outputs = [
        ("rewritten", "rewritten.jsonl"),
        ("problems", "problems.parquet"),
        ("references", "references.parquet"),
        ("reference_failures", "reference_failures.jsonl"),
    ];
    finish(cx, stage, &LLM, out, &outputs, asked)
}

/// Problems rewritten together: at most this many, or as many as fill [`REWRITE_WINDOW_BYTES`]
/// of tests. A window is wide enough for `concurrency` requests in flight.
const REWRITE_WINDOW_ROWS: usize = 256;
const REWRITE_WINDOW_BYTES: usize = 256 << 20;

/// The next window of problems to rewrite (empty at the end).
fn rewrite_window(
    problems: &mut impl Iterator<Item = Result<Problem, coreb_data::tables::TableError>>,
) -> anyhow::Result<Vec<Problem>> {
    let (mut window, mut bytes) = (Vec::new(), 0usize);
    while window.len() < REWRITE_WINDOW_ROWS && bytes < REWRITE_WINDOW_BYTES {
        let Some(p) = problems.next() else { break };
        let p = p?;
        bytes += p
            .public_tests
            .iter()
            .chain(&p.private_tests)
            .map(|t| t.input.len() + t.output.len())
            .sum::<usize>();
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
    stats: RewriteStats,
    written: usize,
}

impl RewriteSink {
    fn create(out: &StageOutput) -> anyhow::Result<Self> {
        Ok(RewriteSink {
            jsonl: coreb_base::durable::AtomicFile::create(&out.path("rewritten.jsonl"))?,
            table: ProblemWriter::create(&out.path("problems.parquet"))?,
            references: Vec::new(),
            reference_failures: Vec::new(),
            rejected: Vec::new(),
            stats: Default::default(),
            written: 0,
        })
    }

    fn add(&mut self, out: coreb_stages::rewrite::RewriteOutput) -> anyhow::Result<()> {
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
