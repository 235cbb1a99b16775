//! The build engine: the stages of a [`RunPlan`] in the order of one table (`STAGES`), each
//! run only when its input key differs from the stored one, and what each did reported.
//!
//! A stage is one value: a unit struct in its own module that implements `stage::Stage` — its
//! name, the stages it reads, its key, its run, its merge of shard parts and its typed summary
//! (`summary::Summary`). The engine runs every row the same way (`stage::Runner`): key →
//! stored record of that key (reused) → parts of its shard processes (merged) or a run →
//! commit through a `crate::artifacts::StageWriter` or a part
//! (`crate::shard::PartWriter`). A stage's run loads its inputs from the artifact store,
//! calls its functions of the `coreb-stages` crate (pure: no I/O) and writes its outputs; the stage
//! modules are the only place where stages meet files. They are given a
//! `context::StageContext` (plan, store, printer, worker threads, async runtime, LLM gateway
//! and prompts, judge, shard state), never the engine.
//!
//! `release_build` finds the build a published release was made from again, for the audits
//! of `coreb audit`. The corpus runner of `coreb corpus` is not part of the engine
//! (`crate::corpus`); both use `crate::shard` for shard processes and their parts.
//!
//! After each stage the engine checks what it left (`Engine::check_kept`): a stage that
//! leaves nothing, or an LLM stage that keeps less than `llm.min_kept_share` of its items,
//! stops the build there with its rejections counted by reason and the path of its
//! `rejections.jsonl`, rather than letting later stages run on nothing.

mod abbreviate;
pub(crate) mod ask_each;
pub(crate) mod context;
pub(crate) mod control;
pub(crate) mod dedup;
mod distract;
pub(crate) mod execute;
mod fetch;
mod filter;
mod fused;
pub(crate) mod gateway;
mod generate;
mod ingest;
pub mod judge;
pub(crate) mod llm;
mod overrides;
pub(crate) mod preflight;
mod qrels;
mod queries;
mod release;
pub(crate) mod release_build;
mod rewrite;
pub(crate) mod stage;
// Its module docs name crate-private items of the engine and the command line.
#[allow(rustdoc::private_intra_doc_links)]
pub mod stage_name;
pub(crate) mod summary;
pub(crate) mod window;

pub(crate) use fetch::FetchSummary;
pub(crate) use ingest::FetchLocal;
pub(crate) use overrides::PlanOverrides;
pub(crate) use release::ReleaseSummary;
pub(crate) use stage::StageReport;

use context::StageContext;
use stage::{Runner, Upstream};
use stage_name::StageName;
use summary::{Counts, Reasons};

use crate::artifacts::ArtifactStore;
use crate::manifest::RunPlan;
use crate::printer::Printer;

/// Makes the engine's table from the rows of [`crate::stage_rows::stage_rows!`].
macro_rules! stage_table {
    ($({ $_doc:tt $_variant:ident $_name:ident [$run:expr] $($_rest:tt)* })*) => {
        /// The build, in order: one row per stage, made from the rows of
        /// [`crate::stage_rows::stage_rows!`] (adding a stage is one module implementing
        /// [`stage::Stage`] and one row there).
        pub(crate) const STAGES: [&dyn Runner; StageName::ALL.len()] = [$(&$run),*];
    };
}

crate::stage_rows::stage_rows!(stage_table);

/// Runs the stages of one plan.
pub(crate) struct Engine {
    cx: StageContext,
    /// Print every stage's JSON summary (`build --json`), not only the last one.
    json_every_stage: bool,
}

impl Engine {
    /// An engine over `plan`'s output directory.
    pub(crate) fn new(
        plan: RunPlan,
        printer: Printer,
        json_every_stage: bool,
    ) -> anyhow::Result<Self> {
        Ok(Engine { cx: StageContext::new(plan, printer)?, json_every_stage })
    }

    /// Run the last stage as shard process `slice` (`--shard i/N`).
    pub(crate) fn with_shard(mut self, slice: Option<crate::shard::ShardSpec>) -> Self {
        self.cx.set_shard(slice);
        self
    }

    /// `coreb merge <stage>`: refuse when `stage` is neither complete nor sharded.
    pub(crate) fn merging(mut self, stage: StageName) -> Self {
        self.cx.set_merging(stage);
        self
    }

    /// Answer LLM requests with `gateway` instead of the manifest's endpoint and store.
    pub(crate) fn with_gateway(
        mut self,
        gateway: std::sync::Arc<dyn coreb_llm::LlmGateway>,
    ) -> Self {
        self.cx.set_gateway(gateway);
        self
    }

    /// Where the shard processes of `stage` write their parts.
    pub(crate) fn parts_dir(&self, stage: StageName) -> std::path::PathBuf {
        self.cx.parts_dir(stage)
    }

    /// The resolved plan.
    pub(crate) fn plan(&self) -> &RunPlan {
        self.cx.plan()
    }

    /// The artifact store.
    pub(crate) fn store(&self) -> &ArtifactStore {
        self.cx.store()
    }

    /// Run every stage of the table up to and including `until`; stop after a stage that leaves
    /// too little ([`Engine::check_kept`]). A build that reaches `execute` first checks that
    /// every toolchain its languages need is there (before any stage runs).
    ///
    /// With `--shard i/N` the stages before `until` run (or are found complete) under the
    /// artifact store's lock, one process at a time; then `until` runs on this process's slice
    /// without the lock, writing its part only.
    pub(crate) fn run_until(&self, until: StageName) -> anyhow::Result<Vec<StageReport>> {
        if let Some(slice) = self.cx.shard() {
            anyhow::ensure!(
                until.shardable(),
                "stage `{until}` does not run as shard processes (only {} do); run it without `--shard {}/{}`",
                shardable_list(),
                slice.index,
                slice.count
            );
        }
        for note in self.preflight(until)? {
            self.cx.printer().status(note);
        }
        let mut lock = Some(self.cx.lock()?);
        let mut reports: Vec<StageReport> = Vec::new();
        for row in STAGES.into_iter().filter(|r| r.name() <= until) {
            let stage = row.name();
            if self.cx.shard().is_some() && stage == until {
                lock = None;
                self.cx.run_sharded(stage);
            }
            let started = std::time::Instant::now();
            let report = row.run(&self.cx, &Upstream::new(stage, &reports, until))?;
            self.announce(&report, report.wall().unwrap_or_else(|| started.elapsed()));
            if self.cx.slice_of(stage).is_none() {
                self.check_kept(&report)?;
            }
            reports.push(report);
        }
        drop(lock);
        Ok(reports)
    }

    /// Check, before any stage runs, what the build up to `until` needs
    /// ([`preflight::Preflight`]), and the judge's toolchains when it reaches `execute`.
    fn preflight(&self, until: StageName) -> anyhow::Result<Vec<String>> {
        let store = self.cx.store();
        let llm_recorded = STAGES
            .into_iter()
            .filter(|r| r.name().asks_models() && r.name() <= until)
            .all(|r| matches!(store.record(r.name().as_str()), Ok(Some(_))));
        let check = preflight::Preflight {
            plan: self.cx.plan(),
            until,
            own_gateway: self.cx.own_gateway(),
            llm_recorded,
        };
        let notes = check.check(|| Ok(self.cx.runtime()?.handle().clone()))?;
        // A control build (`[control]`) needs its published release before any stage runs.
        crate::release::control::controlled(self.cx.plan())?;
        if until >= StageName::Execute {
            self.cx.judge()?;
        }
        Ok(notes)
    }

    /// `coreb build --check`: the preflight alone, then the plan: one line per stage up to
    /// `until`, saying whether the artifact store holds a record of it (a recorded stage whose
    /// inputs are unchanged is skipped).
    pub(crate) fn check(&self, until: StageName) -> anyhow::Result<Vec<String>> {
        let mut notes = self.preflight(until)?;
        let plan = self.cx.plan();
        if until >= StageName::Ingest {
            notes.extend(self.window_check()?);
        }
        let mut lines = vec![
            format!(
                "preflight passed: `{}` can build `{}` ({} worker threads, LLM mode {:?})",
                plan.manifest_path.display(),
                plan.version,
                plan.jobs,
                plan.llm.mode
            ),
            format!("  artifacts: {}", self.cx.store().stage_dir("").display()),
            format!("  publishes: {}", plan.publish_dir.display()),
        ];
        lines.extend(notes.into_iter().map(|n| format!("  {n}")));
        for row in STAGES.into_iter().filter(|r| r.name() <= until) {
            let state = match self.cx.store().record(row.name().as_str())? {
                Some(_) => "recorded: skipped if its inputs are unchanged",
                None => "not built yet: runs",
            };
            lines.push(format!("{:>12}  {state}", row.name().as_str()));
        }
        Ok(lines)
    }

    /// `--check`'s look at the window: refused when no source has a problem in it
    /// ([`window`]); while a source is remote (it is read once fetched), a note instead.
    fn window_check(&self) -> anyhow::Result<Option<String>> {
        use coreb_stages::fetch::Location;
        let plan = self.cx.plan();
        let mut local = Vec::new();
        let mut remote = Vec::new();
        for s in &plan.sources {
            match &s.location {
                Location::Local(path) => local.push((s.name.clone(), path.clone())),
                Location::Http(_) => remote.push(format!("`{}`", s.name)),
            }
        }
        if remote.is_empty() {
            window::check_files(&plan.window, &local, plan.stages.ingest.max_line_bytes)?;
            return Ok(None);
        }
        Ok(Some(format!(
            "the window is checked against {} when `fetch` has fetched it",
            remote.join(", ")
        )))
    }

    /// The build's line about a stage: what it did, its counts, and for an LLM stage the
    /// requests it sent; with `--json`, its JSON summary too.
    fn announce(&self, report: &StageReport, wall: std::time::Duration) {
        let summary = report.summary();
        let Counts { rows_in, rows_out, rejected } = summary.counts();
        let what = if report.skipped {
            "unchanged, skipped".to_owned()
        } else {
            format!("done in {:.1} s", wall.as_secs_f64())
        };
        // Stages that judge say how many passed: "0 of 92 passed" is the news.
        let passed =
            summary.passed().map(|p| format!(", {p} of {rows_out} passed")).unwrap_or_default();
        let requests = match report
            .local_as::<llm::LlmLocal>()
            .and_then(|l| l.requests.as_ref())
            .filter(|_| !report.skipped)
        {
            Some(r) => {
                let batch = match r.from_batch {
                    0 => String::new(),
                    n => format!(
                        ", {n} answers by batch (cost {:.6} at the batch price)",
                        r.batch_cost
                    ),
                };
                format!(
                    ", {} requests sent, {} answers from the store{batch}",
                    r.sent, r.from_store
                )
            }
            None => String::new(),
        };
        let store = self.cx.store();
        self.cx.printer().status(format!(
            "{:>10}: {what}: {rows_in} in, {rows_out} out{passed}, {rejected} rejected{requests}  ({})",
            report.stage.as_str(),
            store.stage_dir(report.stage.as_str()).display()
        ));
        if self.json_every_stage {
            let mut line = report.to_json(store);
            if let Some(obj) = line.as_object_mut() {
                obj.insert(
                    "wall_secs".into(),
                    serde_json::json!((wall.as_secs_f64() * 1e3).round() / 1e3),
                );
            }
            self.cx.printer().json_line(&line);
        }
    }

    /// Stop the build after a stage that left nothing, or after an LLM stage that kept less
    /// than `llm.min_kept_share` of its items: the error names the stage, its counts, its
    /// rejections by reason and its `rejections.jsonl`.
    fn check_kept(&self, report: &StageReport) -> anyhow::Result<()> {
        let summary = report.summary();
        let Counts { rows_in, rows_out, .. } = summary.counts();
        let share = self.cx.plan().llm.min_kept_share;
        let llm_stage = report.stage.asks_models();
        let why = match report.stage {
            StageName::Fetch | StageName::Release => return Ok(()),
            _ if rows_out == 0 => "none are left".to_owned(),
            _ if llm_stage && (rows_out as f64) < share * rows_in as f64 => {
                format!("fewer than `llm.min_kept_share` = {share} of them")
            }
            _ => return Ok(()),
        };
        let stage = report.stage.as_str();
        let mut message = format!(
            "the build stops after stage `{stage}`: it kept {rows_out} of its {rows_in} items: {why}"
        );
        let (label, reasons): (&str, Vec<String>) = match summary.reasons() {
            Reasons::ByReason(by) => {
                ("rejections by reason", by.iter().map(|(k, n)| format!("{k} {n}")).collect())
            }
            // Stages without typed rejections: their other counts (out of window, language …).
            Reasons::Counts(counts) => (
                "counts",
                counts
                    .into_iter()
                    .filter(|(_, n)| *n > 0)
                    .map(|(k, n)| format!("{k} {n}"))
                    .collect(),
            ),
        };
        if !reasons.is_empty() {
            message.push_str(&format!("\n  {label}: {}", reasons.join(", ")));
        }
        if report.record.outputs.contains_key("rejections") {
            message.push_str(&format!(
                "\n  every rejection with its reason: {}",
                self.cx.output(&report.record, "rejections")?.display()
            ));
        }
        if llm_stage {
            message.push_str("\n  (answers already received are stored: a rerun asks only what is still missing)");
        }
        anyhow::bail!(message)
    }
}

/// The stages that run as shard processes, for messages: `a, b and c`.
fn shardable_list() -> String {
    let names: Vec<&str> =
        STAGES.into_iter().filter(|r| r.name().shardable()).map(|r| r.name().as_str()).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_pipeline_order() {
        let names: Vec<StageName> = STAGES.into_iter().map(|r| r.name()).collect();
        assert_eq!(names, StageName::ALL);
        let shardable: Vec<&str> =
            StageName::ALL.into_iter().filter(|s| s.shardable()).map(StageName::as_str).collect();
        let (last, rest) = shardable.split_last().unwrap();
        assert_eq!(shardable_list(), format!("{} and {last}", rest.join(", ")));
    }
}
