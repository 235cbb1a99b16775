//! The stage graph: run the stages of a [`RunPlan`] in order, each one only when its input
//! key differs from the stored one, and report what each did.
//!
//! Each stage runner (one module per stage) loads its inputs from the artifact store, calls
//! the stage function of the `stages` crate and writes its outputs through a
//! [`StageWriter`](crate::artifacts::StageWriter). The runners are the only place where stages
//! meet files.
//!
//! [`release_build`] finds the build a published release was made from again, for the
//! audits of `coreb audit`.
//!
//! The corpus runner of `coreb corpus` is not part of the engine ([`crate::corpus`]); both use
//! [`crate::shard`] for shard processes and their parts.
//!
//! After each stage the engine checks what it left ([`Engine::check_kept`]): a stage that
//! leaves nothing, or an LLM stage that keeps less than `llm.min_kept_share` of its items,
//! stops the build there with its rejections counted by reason and the path of its
//! `rejections.jsonl`, rather than letting later stages run on nothing.

pub mod control;
mod dedup;
pub mod execute;
mod fetch;
mod filter;
mod ingest;
pub mod llm;
mod overrides;
pub mod preflight;
mod qrels;
mod release;
pub mod release_build;
pub mod stage;

pub use overrides::PlanOverrides;
pub use release::{KIT_ANSWERS, KIT_DIR, KIT_MANIFEST, relative_path};

use std::path::PathBuf;

use crate::artifacts::{ArtifactStore, StageRecord, StageWriter};
use crate::engine::stage::StageName;
use crate::manifest::RunPlan;
use crate::shard::{Lock, PartMarker, PartWriter, ShardSpec};
use coreb_base::printer::Printer;

/// What one stage did in a build.
#[derive(Debug, Clone)]
pub struct StageReport {
    /// The stage.
    pub stage: StageName,
    /// Skipped because its inputs were unchanged.
    pub skipped: bool,
    /// Its record (outputs, summary).
    pub record: StageRecord,
}

impl StageReport {
    /// The `--json` summary: `stage`, `rows_in`, `rows_out`, `rejected`, `outputs`
    /// and the stage-specific counts.
    pub fn to_json(&self, store: &ArtifactStore) -> serde_json::Value {
        let dir = store.stage_dir(self.stage.as_str());
        let mut value = serde_json::json!({
            "stage": self.stage.as_str(),
            "skipped": self.skipped,
            "outputs": self.record.outputs.values().map(|o| dir.join(&o.file)).collect::<Vec<_>>(),
        });
        if let (Some(obj), Some(summary)) = (value.as_object_mut(), self.record.summary.as_object()) {
            for (k, v) in summary {
                obj.entry(k.clone()).or_insert_with(|| v.clone());
            }
            // Local facts (paths) are shown to the user, though kept out of fingerprints.
            if let Some(local) = self.record.local.as_object() {
                for (k, v) in local {
                    obj.insert(k.clone(), v.clone());
                }
            }
            for k in ["rows_in", "rows_out", "rejected"] {
                obj.entry(k).or_insert(serde_json::json!(0));
            }
        }
        value
    }
}

/// Runs stages for one plan.
pub struct Engine {
    plan: RunPlan,
    store: ArtifactStore,
    printer: Printer,
    pool: rayon::ThreadPool,
    /// Print every stage's JSON summary (`build --json`), not only the last one.
    json_every_stage: bool,
    /// A gateway to use instead of the manifest's (authoring the sample's store, tests).
    gateway: Option<std::sync::Arc<dyn coreb_llm::LlmGateway>>,
    llm: std::sync::OnceLock<llm::LlmContext>,
    judge: std::sync::OnceLock<execute::Judge>,
    /// `--shard i/N`: the last stage of the run writes this part only.
    shard: Option<ShardSpec>,
    /// `coreb merge <stage>`: that stage must be complete or have its parts.
    merging: Option<StageName>,
    /// The stage that runs as a shard process now.
    sharded: std::sync::OnceLock<StageName>,
}

/// Where a stage writes: its directory in the artifact store (a whole run) or its part (a
/// shard process).
pub enum StageOutput {
    /// The whole stage.
    Whole(StageWriter),
    /// Part `slice` of the stage.
    Part(PartWriter, ShardSpec),
}

impl StageOutput {
    /// Where to write an output file.
    pub fn path(&self, file: &str) -> PathBuf {
        match self {
            StageOutput::Whole(w) => w.path(file),
            StageOutput::Part(p, _) => p.path(file),
        }
    }

    /// Commit the stage, or finish the part (its marker holds the key, the summary and the
    /// local facts).
    pub fn commit(
        self,
        engine: &Engine,
        stage: StageName,
        key: &str,
        outputs: &[(&str, &str)],
        summary: serde_json::Value,
        local: serde_json::Value,
    ) -> anyhow::Result<StageReport> {
        match self {
            StageOutput::Whole(w) => {
                let record = w.commit_with_local(key, outputs, summary, local)?;
                let parts = engine.parts_dir(stage);
                if parts.exists() {
                    fs_err::remove_dir_all(&parts)?;
                }
                Ok(StageReport { stage, skipped: false, record })
            }
            StageOutput::Part(p, slice) => {
                let facts = serde_json::json!({"summary": summary, "local": local, "outputs": outputs.iter().map(|(r, f)| (*r, *f)).collect::<std::collections::BTreeMap<_, _>>()});
                let marker =
                    PartMarker { plan: key.to_owned(), shard: slice.index, shards: slice.count, files: Default::default(), facts: facts.as_object().cloned().unwrap_or_default() };
                let dir = p.finish(&marker)?;
                engine.printer.status(format!(
                    "{:>10}: shard {}/{} written to `{}`; `coreb merge {stage} {}` (or any later stage) combines the shards once all are complete",
                    stage.as_str(),
                    slice.index,
                    slice.count,
                    dir.display(),
                    engine.plan.manifest_path.display()
                ));
                Ok(part_report(stage, marker))
            }
        }
    }
}

/// The report of a finished part: its summary and local facts as a record (no outputs).
fn part_report(stage: StageName, marker: PartMarker) -> StageReport {
    let record = StageRecord {
        stage: stage.as_str().to_owned(),
        key: marker.plan,
        tool_version: crate::artifacts::TOOL_VERSION.to_owned(),
        tool_fingerprint: crate::artifacts::TOOL_FINGERPRINT.to_owned(),
        outputs: Default::default(),
        summary: marker.facts.get("summary").cloned().unwrap_or_default(),
        local: marker.facts.get("local").cloned().unwrap_or_default(),
    };
    StageReport { stage, skipped: false, record }
}

impl Engine {
    /// An engine over `plan`'s output directory.
    pub fn new(plan: RunPlan, printer: Printer, json_every_stage: bool) -> anyhow::Result<Self> {
        let store = ArtifactStore::open(&plan.output_dir.join("artifacts"))?;
        let pool = rayon::ThreadPoolBuilder::new().num_threads(plan.jobs).build()?;
        Ok(Engine {
            plan,
            store,
            printer,
            pool,
            json_every_stage,
            gateway: None,
            llm: std::sync::OnceLock::new(),
            judge: std::sync::OnceLock::new(),
            shard: None,
            merging: None,
            sharded: std::sync::OnceLock::new(),
        })
    }

    /// Run the last stage as shard process `slice` (`--shard i/N`).
    pub fn with_shard(mut self, slice: Option<ShardSpec>) -> Self {
        self.shard = slice;
        self
    }

    /// `coreb merge <stage>`: refuse when `stage` is neither complete nor sharded.
    pub fn merging(mut self, stage: StageName) -> Self {
        self.merging = Some(stage);
        self
    }

    /// Where the shard processes of `stage` write their parts.
    pub fn parts_dir(&self, stage: StageName) -> PathBuf {
        self.store.stage_dir("parts").join(stage.as_str())
    }

    /// The shard this process runs `stage` as, if it does.
    fn slice_of(&self, stage: StageName) -> Option<ShardSpec> {
        self.shard.filter(|_| self.sharded.get() == Some(&stage))
    }

    /// Whether item `id` is handled by this process in `stage` (all are, but in a shard
    /// process).
    pub fn handles(&self, stage: StageName, id: &str) -> bool {
        self.slice_of(stage).is_none_or(|slice| crate::shard::in_slice(id, slice))
    }

    /// Where `stage` writes in this process.
    pub fn begin(&self, stage: StageName) -> anyhow::Result<StageOutput> {
        Ok(match self.slice_of(stage) {
            Some(slice) => StageOutput::Part(PartWriter::begin(&self.parts_dir(stage), slice)?, slice),
            None => StageOutput::Whole(self.store.begin(stage.as_str())?),
        })
    }

    /// In a shard process: the report of this stage's part when it is already complete for
    /// `key`.
    fn part_hit(&self, stage: StageName, key: &str) -> anyhow::Result<Option<StageReport>> {
        let Some(slice) = self.slice_of(stage) else { return Ok(None) };
        let dir = self.parts_dir(stage).join(crate::shard::part_name(slice));
        if !crate::shard::part_done(&self.parts_dir(stage), slice, key) {
            return Ok(None);
        }
        self.printer.status(format!("{:>10}: shard {}/{} is complete (`{}`); nothing to do", stage.as_str(), slice.index, slice.count, dir.display()));
        let mut report = part_report(stage, crate::shard::read_part_marker(&dir)?);
        report.skipped = true;
        Ok(Some(report))
    }

    /// In a whole run of `stage` (key `key`): the complete parts of its shard processes, if
    /// there are any; an error naming each missing, incomplete or stale part.
    pub fn shard_parts(&self, stage: StageName, key: &str) -> anyhow::Result<Option<Vec<(PathBuf, PartMarker)>>> {
        if self.slice_of(stage).is_some() {
            return Ok(None);
        }
        let dir = self.parts_dir(stage);
        let any = dir.exists() && fs_err::read_dir(&dir)?.any(|e| e.is_ok_and(|e| e.file_name().to_str().and_then(crate::shard::parse_part_name).is_some()));
        if !any && self.merging != Some(stage) {
            return Ok(None);
        }
        let rerun = |i: u32, n: u32| format!("run `coreb {stage} {} --shard {i}/{n}`", self.plan.manifest_path.display());
        let parts = crate::shard::complete_parts(&dir, key, stage.as_str(), rerun)?;
        self.printer.status(format!("{:>10}: merging {} shard parts from `{}`", stage.as_str(), parts.len(), dir.display()));
        Ok(Some(parts))
    }

    /// The lock that serialises writers of this build's artifact store.
    fn lock(&self) -> anyhow::Result<Lock> {
        let path = self.store.stage_dir(".lock");
        Lock::exclusive(&path, |holder| self.printer.status(format!("waiting for the lock on the build directory `{}`, held by {holder}", self.plan.output_dir.display())))
    }

    /// Answer LLM requests with `gateway` instead of the manifest's endpoint and store.
    pub fn with_gateway(mut self, gateway: std::sync::Arc<dyn coreb_llm::LlmGateway>) -> Self {
        self.gateway = Some(gateway);
        self
    }

    /// The LLM context, made on first use (prompts loaded, gateway opened).
    fn llm(&self) -> anyhow::Result<&llm::LlmContext> {
        if let Some(ctx) = self.llm.get() {
            return Ok(ctx);
        }
        let ctx = llm::LlmContext::new(&self.plan, self.gateway.clone())?;
        Ok(self.llm.get_or_init(|| ctx))
    }

    /// The sandbox and toolchains, set up (and checked: [`execute::preflight`]) on first use.
    fn judge(&self) -> anyhow::Result<&execute::Judge> {
        if let Some(j) = self.judge.get() {
            return Ok(j);
        }
        let judge = execute::preflight(&self.plan)?;
        Ok(self.judge.get_or_init(|| judge))
    }

    /// The resolved plan.
    pub fn plan(&self) -> &RunPlan {
        &self.plan
    }

    /// The artifact store.
    pub fn store(&self) -> &ArtifactStore {
        &self.store
    }

    /// Run every stage up to and including `until`; stop after a stage that leaves too little
    /// ([`Engine::check_kept`]). A build that reaches `execute` first checks that every
    /// toolchain its languages need is there (before any stage runs).
    ///
    /// With `--shard i/N` the stages before `until` run (or are found complete) under the
    /// artifact store's lock, one process at a time; then `until` runs on this process's slice
    /// without the lock, writing its part only.
    pub fn run_until(&self, until: StageName) -> anyhow::Result<Vec<StageReport>> {
        if let Some(slice) = self.shard {
            anyhow::ensure!(
                until.shardable(),
                "stage `{until}` does not run as shard processes (only rewrite, distract, abbreviate, generate, execute and queries do); run it without `--shard {}/{}`",
                slice.index,
                slice.count
            );
        }
        for note in self.preflight(until)? {
            self.printer.status(note);
        }
        let mut lock = Some(self.lock()?);
        let mut reports: Vec<StageReport> = Vec::new();
        // `ingest`, when it ran together with `fetch`, and how long it took.
        let mut ingested: Option<(StageReport, std::time::Duration)> = None;
        for stage in StageName::ALL.into_iter().filter(|s| *s <= until) {
            if self.shard.is_some() && stage == until {
                lock = None;
                let _ = self.sharded.set(stage);
            }
            let started = std::time::Instant::now();
            let upstream = |name: StageName| -> anyhow::Result<&StageRecord> {
                reports.iter().find(|r| r.stage == name).map(|r| &r.record).ok_or_else(|| anyhow::anyhow!("stage `{name}` did not run before `{stage}`"))
            };
            let mut wall = None;
            let report = match stage {
                StageName::Fetch if until >= StageName::Ingest && ingest::reads_sources_once(self)? => {
                    let (fetched, read, report) = ingest::run_with_fetch(self)?;
                    // Both ran from the start: `fetch` until its last byte was read, `ingest` to the end.
                    ingested = Some((report, started.elapsed()));
                    wall = Some(read);
                    fetched
                }
                StageName::Fetch => fetch::run(self)?,
                StageName::Ingest => match ingested.take() {
                    Some((report, took)) => {
                        wall = Some(took);
                        report
                    }
                    None => ingest::run(self, upstream(StageName::Fetch)?)?,
                },
                StageName::Dedup => dedup::run(self, upstream(StageName::Ingest)?)?,
                StageName::Filter => filter::run(self, upstream(StageName::Dedup)?)?,
                StageName::Rewrite if self.plan.control.is_some() => control::rewrite(self, upstream(StageName::Filter)?)?,
                StageName::Rewrite => llm::rewrite(self, upstream(StageName::Filter)?)?,
                StageName::Distract => llm::distract(self, upstream(StageName::Rewrite)?)?,
                StageName::Abbreviate => llm::abbreviate(self, upstream(StageName::Rewrite)?)?,
                StageName::Generate => llm::generate(self, upstream(StageName::Rewrite)?)?,
                StageName::Execute => execute::run(self, upstream(StageName::Filter)?, upstream(StageName::Rewrite)?, upstream(StageName::Generate)?)?,
                StageName::Queries => llm::queries(self, upstream(StageName::Rewrite)?)?,
                StageName::Qrels => qrels::run(
                    self,
                    qrels::Inputs {
                        rewrite: upstream(StageName::Rewrite)?,
                        distract: upstream(StageName::Distract)?,
                        abbreviate: upstream(StageName::Abbreviate)?,
                        generate: upstream(StageName::Generate)?,
                        execute: upstream(StageName::Execute)?,
                        queries: upstream(StageName::Queries)?,
                    },
                )?,
                StageName::Release => {
                    let llm_stages: Vec<&StageRecord> =
                        [StageName::Rewrite, StageName::Distract, StageName::Abbreviate, StageName::Generate, StageName::Execute, StageName::Queries]
                            .into_iter()
                            .map(&upstream)
                            .collect::<anyhow::Result<_>>()?;
                    release::run(self, upstream(StageName::Fetch)?, upstream(StageName::Filter)?, upstream(StageName::Qrels)?, &llm_stages)?
                }
            };
            self.announce(&report, wall.unwrap_or_else(|| started.elapsed()));
            if self.slice_of(stage).is_none() {
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
        let llm = [StageName::Rewrite, StageName::Distract, StageName::Abbreviate, StageName::Generate, StageName::Queries];
        let llm_recorded = llm.into_iter().filter(|s| *s <= until).all(|s| matches!(self.store.record(s.as_str()), Ok(Some(_))));
        let notes = preflight::Preflight { plan: &self.plan, until, own_gateway: self.gateway.is_some(), llm_recorded }.check()?;
        // A control build (`[control]`) needs its published release before any stage runs.
        control::controlled(self)?;
        if until >= StageName::Execute {
            self.judge()?;
        }
        Ok(notes)
    }

    /// `coreb build --check`: the preflight alone, then the plan: one line per stage up to
    /// `until`, saying whether the artifact store holds a record of it (a recorded stage whose
    /// inputs are unchanged is skipped).
    pub fn check(&self, until: StageName) -> anyhow::Result<Vec<String>> {
        let notes = self.preflight(until)?;
        let plan = &self.plan;
        let mut lines = vec![
            format!("preflight passed: `{}` can build `{}` ({} worker threads, LLM mode {:?})", plan.manifest_path.display(), plan.version, plan.jobs, plan.llm.mode),
            format!("  artifacts: {}", self.store.stage_dir("").display()),
            format!("  publishes: {}", plan.publish_dir.display()),
        ];
        lines.extend(notes.into_iter().map(|n| format!("  {n}")));
        for stage in StageName::ALL.into_iter().filter(|s| *s <= until) {
            let state = match self.store.record(stage.as_str())? {
                Some(_) => "recorded: skipped if its inputs are unchanged",
                None => "not built yet: runs",
            };
            lines.push(format!("{:>12}  {state}", stage.as_str()));
        }
        Ok(lines)
    }

    fn announce(&self, report: &StageReport, wall: std::time::Duration) {
        let s = &report.record.summary;
        let n = |k: &str| s.get(k).and_then(serde_json::Value::as_u64).unwrap_or(0);
        let what = if report.skipped { "unchanged, skipped".to_owned() } else { format!("done in {:.1} s", wall.as_secs_f64()) };
        // Stages that judge say how many passed: "0 of 92 passed" is the news.
        let passed = s.get("passed").and_then(serde_json::Value::as_u64).map(|p| format!(", {p} of {} passed", n("rows_out"))).unwrap_or_default();
        let requests = match report.record.local.get("requests").filter(|_| !report.skipped) {
            Some(r) => {
                let m = |k: &str| r.get(k).and_then(serde_json::Value::as_u64).unwrap_or(0);
                let batch = match m("from_batch") {
                    0 => String::new(),
                    n => format!(", {n} answers by batch (cost {:.6} at the batch price)", r.get("batch_cost").and_then(serde_json::Value::as_f64).unwrap_or(0.0)),
                };
                format!(", {} requests sent, {} answers from the store{batch}", m("sent"), m("from_store"))
            }
            None => String::new(),
        };
        self.printer.status(format!(
            "{:>10}: {what}: {} in, {} out{passed}, {} rejected{requests}  ({})",
            report.stage.as_str(),
            n("rows_in"),
            n("rows_out"),
            n("rejected"),
            self.store.stage_dir(report.stage.as_str()).display()
        ));
        if self.json_every_stage {
            let mut line = report.to_json(&self.store);
            if let Some(obj) = line.as_object_mut() {
                obj.insert("wall_secs".into(), serde_json::json!((wall.as_secs_f64() * 1e3).round() / 1e3));
            }
            self.printer.json_line(&line);
        }
    }

    /// Stop the build after a stage that left nothing, or after an LLM stage that kept less
    /// than `llm.min_kept_share` of its items: the error names the stage, its counts, its
    /// rejections by reason and its `rejections.jsonl`.
    pub fn check_kept(&self, report: &StageReport) -> anyhow::Result<()> {
        let s = &report.record.summary;
        let n = |k: &str| s.get(k).and_then(serde_json::Value::as_u64).unwrap_or(0);
        let (rows_in, rows_out) = (n("rows_in"), n("rows_out"));
        let share = self.plan.llm.min_kept_share;
        let llm_stage = matches!(report.stage, StageName::Rewrite | StageName::Distract | StageName::Abbreviate | StageName::Generate | StageName::Queries);
        let why = match report.stage {
            StageName::Fetch | StageName::Release => return Ok(()),
            _ if rows_out == 0 => "none are left".to_owned(),
            _ if llm_stage && (rows_out as f64) < share * rows_in as f64 => format!("fewer than `llm.min_kept_share` = {share} of them"),
            _ => return Ok(()),
        };
        let stage = report.stage.as_str();
        let mut message = format!("the build stops after stage `{stage}`: it kept {rows_out} of its {rows_in} items: {why}");
        let reasons: Vec<String> = match s.get("rejections_by_reason").and_then(serde_json::Value::as_object) {
            Some(by) => by.iter().map(|(k, v)| format!("{k} {v}")).collect(),
            // Stages without typed rejections: their other counts (out of window, language …).
            None => s
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(k, v)| !["rows_in", "rows_out", "bytes", "bytes_in"].contains(&k.as_str()) && v.as_u64().is_some_and(|v| v > 0))
                .map(|(k, v)| format!("{k} {v}"))
                .collect(),
        };
        if !reasons.is_empty() {
            let label = if s.get("rejections_by_reason").is_some() { "rejections by reason" } else { "counts" };
            message.push_str(&format!("\n  {label}: {}", reasons.join(", ")));
        }
        if report.record.outputs.contains_key("rejections") {
            message.push_str(&format!("\n  every rejection with its reason: {}", self.output(&report.record, "rejections")?.display()));
        }
        if llm_stage {
            message.push_str("\n  (answers already received are stored: a rerun asks only what is still missing)");
        }
        anyhow::bail!(message)
    }

    /// The path of one output (`role`) of a completed stage.
    pub fn output(&self, record: &StageRecord, role: &str) -> anyhow::Result<std::path::PathBuf> {
        self.store.output(record, role)
    }

    /// Look a stage up by key; on a hit, report it as skipped. In a shard process a
    /// complete part of this key is a hit too.
    fn cached(&self, stage: StageName, key: &str) -> anyhow::Result<Option<StageReport>> {
        if let Some(record) = self.store.lookup(stage.as_str(), key)? {
            return Ok(Some(StageReport { stage, skipped: true, record }));
        }
        self.part_hit(stage, key)
    }
}
