//! The stage graph: run the stages of a [`RunPlan`] in order, each one only when its input
//! key differs from the stored one, and report what each did.
//!
//! Each stage runner (one module per stage) loads its inputs from the artifact store, calls
//! the stage function of the `stages` crate and writes its outputs through a
//! [`StageWriter`](crate::store::StageWriter). The runners are the only place where stages
//! meet files.
//!
//! After each stage the engine checks what it left ([`Engine::check_kept`]): a stage that
//! leaves nothing, or an LLM stage that keeps less than `llm.min_kept_share` of its items,
//! stops the build there with its rejections counted by reason and the path of its
//! `rejections.jsonl`, rather than letting later stages run on nothing.

mod dedup;
pub mod execute;
mod fetch;
mod filter;
mod ingest;
pub mod llm;
mod qrels;
mod release;

pub use release::{FileEntry, ReleaseManifest, hash_tree, relative_path};


use crate::cli::StageName;
use crate::manifest::RunPlan;
use crate::printer::Printer;
use crate::store::{ArtifactStore, StageRecord};

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
    /// The `--json` summary (DESIGN §2): `stage`, `rows_in`, `rows_out`, `rejected`, `outputs`
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
    gateway: Option<std::sync::Arc<dyn stages::services::llm::LlmGateway>>,
    llm: std::sync::OnceLock<llm::LlmContext>,
    judge: std::sync::OnceLock<execute::Judge>,
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
        })
    }

    /// Answer LLM requests with `gateway` instead of the manifest's endpoint and store.
    pub fn with_gateway(mut self, gateway: std::sync::Arc<dyn stages::services::llm::LlmGateway>) -> Self {
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
    pub fn run_until(&self, until: StageName) -> anyhow::Result<Vec<StageReport>> {
        if until >= StageName::Execute {
            self.judge()?;
        }
        let mut reports: Vec<StageReport> = Vec::new();
        for stage in StageName::ALL.into_iter().filter(|s| *s <= until) {
            let started = std::time::Instant::now();
            let upstream = |name: StageName| -> anyhow::Result<&StageRecord> {
                reports
                    .iter()
                    .find(|r| r.stage == name)
                    .map(|r| &r.record)
                    .ok_or_else(|| anyhow::anyhow!("stage `{name}` did not run before `{stage}`"))
            };
            let report = match stage {
                StageName::Fetch => fetch::run(self)?,
                StageName::Ingest => ingest::run(self, upstream(StageName::Fetch)?)?,
                StageName::Dedup => dedup::run(self, upstream(StageName::Ingest)?)?,
                StageName::Filter => filter::run(self, upstream(StageName::Dedup)?)?,
                StageName::Rewrite => llm::rewrite(self, upstream(StageName::Filter)?)?,
                StageName::Distract => llm::distract(self, upstream(StageName::Rewrite)?)?,
                StageName::Abbreviate => llm::abbreviate(self, upstream(StageName::Rewrite)?)?,
                StageName::Generate => llm::generate(self, upstream(StageName::Rewrite)?)?,
                StageName::Execute => execute::run(self, upstream(StageName::Rewrite)?, upstream(StageName::Generate)?)?,
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
                    let llm_stages: Vec<&StageRecord> = [StageName::Rewrite, StageName::Distract, StageName::Abbreviate, StageName::Generate, StageName::Execute, StageName::Queries]
                        .into_iter()
                        .map(&upstream)
                        .collect::<anyhow::Result<_>>()?;
                    release::run(self, upstream(StageName::Fetch)?, upstream(StageName::Filter)?, upstream(StageName::Qrels)?, &llm_stages)?
                }
            };
            self.announce(&report, started.elapsed());
            self.check_kept(&report)?;
            reports.push(report);
        }
        Ok(reports)
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
                format!(", {} requests sent, {} answers from the store", m("sent"), m("from_store"))
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
        let file = record.outputs.get(role).ok_or_else(|| anyhow::anyhow!("stage `{}` has no `{role}` output", record.stage))?;
        Ok(self.store.stage_dir(&record.stage).join(&file.file))
    }

    /// Look a stage up by key; on a hit, report it as skipped.
    fn cached(&self, stage: StageName, key: &str) -> anyhow::Result<Option<StageReport>> {
        Ok(self.store.lookup(stage.as_str(), key)?.map(|record| StageReport { stage, skipped: true, record }))
    }
}
