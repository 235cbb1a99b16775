//! What a stage is given to run with ([`StageContext`]): the plan, the artifact store, the
//! printer, the worker threads, the async runtime, the LLM gateway and prompts, the judge, and
//! this process's shard state (which items it handles, where its part goes). The services are
//! made on first use, once per build, and shared by every stage that needs them.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

use super::fused::FusedIngest;
use super::gateway::LlmContext;
use super::judge::{Judge, preflight};
use super::stage_name::StageName;
use crate::artifacts::{ArtifactStore, StageRecord, StageWriter, TOOL_FINGERPRINT, TOOL_VERSION};
use crate::manifest::RunPlan;
use crate::printer::Printer;
use crate::shard::{
    Lock, PartMarker, PartWriter, ShardSpec, complete_parts, in_slice, parse_part_name, part_done,
    part_name, read_part_marker,
};

/// Everything a stage runs with; the engine makes one per build and hands it to each stage.
pub(crate) struct StageContext {
    plan: RunPlan,
    store: ArtifactStore,
    printer: Printer,
    pool: rayon::ThreadPool,
    /// The async runtime of downloads, LLM requests and the preflight's endpoint check.
    runtime: OnceLock<tokio::runtime::Runtime>,
    /// A gateway to use instead of the manifest's (authoring the sample's store, tests).
    gateway: Option<Arc<dyn coreb_llm::LlmGateway>>,
    llm: OnceLock<LlmContext>,
    judge: OnceLock<Judge>,
    /// `--shard i/N`: the last stage of the run writes this part only.
    shard: Option<ShardSpec>,
    /// `coreb merge <stage>`: that stage must be complete or have its parts.
    merging: Option<StageName>,
    /// The stage that runs as a shard process now.
    sharded: OnceLock<StageName>,
    /// `ingest`'s table, decoded while `fetch` hashed the local sources (or that pass's error),
    /// taken by `ingest` when its turn comes.
    fused_ingest: Mutex<Option<anyhow::Result<FusedIngest>>>,
}

impl StageContext {
    /// The context of a build of `plan`: its artifact store opened, `plan.jobs` worker threads.
    pub(crate) fn new(plan: RunPlan, printer: Printer) -> anyhow::Result<Self> {
        // The store is made in `output_dir`: one that cannot be is named, not an OS error.
        super::preflight::refuse_output_dir(&plan)?;
        let store = ArtifactStore::open(&plan.output_dir.join("artifacts"))?;
        let pool = rayon::ThreadPoolBuilder::new().num_threads(plan.jobs).build()?;
        Ok(StageContext {
            plan,
            store,
            printer,
            pool,
            runtime: OnceLock::new(),
            gateway: None,
            llm: OnceLock::new(),
            judge: OnceLock::new(),
            shard: None,
            merging: None,
            sharded: OnceLock::new(),
            fused_ingest: Mutex::new(None),
        })
    }

    /// Answer LLM requests with `gateway` instead of the manifest's endpoint and store.
    pub(crate) fn set_gateway(&mut self, gateway: Arc<dyn coreb_llm::LlmGateway>) {
        self.gateway = Some(gateway);
    }

    /// Run the last stage as shard process `slice`.
    pub(crate) fn set_shard(&mut self, slice: Option<ShardSpec>) {
        self.shard = slice;
    }

    /// `coreb merge <stage>`: refuse when `stage` is neither complete nor sharded.
    pub(crate) fn set_merging(&mut self, stage: StageName) {
        self.merging = Some(stage);
    }

    /// The resolved plan.
    pub(crate) fn plan(&self) -> &RunPlan {
        &self.plan
    }

    /// The artifact store.
    pub(crate) fn store(&self) -> &ArtifactStore {
        &self.store
    }

    /// Where status lines and progress go.
    pub(crate) fn printer(&self) -> &Printer {
        &self.printer
    }

    /// The build's worker threads (`--jobs`).
    pub(crate) fn pool(&self) -> &rayon::ThreadPool {
        &self.pool
    }

    /// The async runtime, made on first use (`plan.jobs` worker threads).
    pub(crate) fn runtime(&self) -> anyhow::Result<&tokio::runtime::Runtime> {
        if let Some(rt) = self.runtime.get() {
            return Ok(rt);
        }
        let rt = coreb_http::runtime(Some(self.plan.jobs)).context("starting the async runtime")?;
        Ok(self.runtime.get_or_init(|| rt))
    }

    /// Whether a gateway of the caller's answers LLM requests (no key, no store needed).
    pub(crate) fn own_gateway(&self) -> bool {
        self.gateway.is_some()
    }

    /// The LLM context, made on first use (prompts loaded, gateway opened).
    pub(crate) fn llm(&self) -> anyhow::Result<&LlmContext> {
        if let Some(ctx) = self.llm.get() {
            return Ok(ctx);
        }
        let ctx = LlmContext::new(&self.plan, self.gateway.clone())?;
        Ok(self.llm.get_or_init(|| ctx))
    }

    /// The sandbox and toolchains, set up (and checked: [`preflight`]) on first use.
    pub(crate) fn judge(&self) -> anyhow::Result<&Judge> {
        if let Some(j) = self.judge.get() {
            return Ok(j);
        }
        let judge = preflight(&self.plan)?;
        Ok(self.judge.get_or_init(|| judge))
    }

    /// Keep `ingest`'s work done in `fetch`'s pass (or the pass's error, which `ingest` reports
    /// at its turn) until `ingest` takes it ([`StageContext::take_fused_ingest`]).
    pub(super) fn put_fused_ingest(&self, work: anyhow::Result<FusedIngest>) {
        *self.fused_ingest.lock().unwrap_or_else(|e| e.into_inner()) = Some(work);
    }

    /// `ingest`'s work done in `fetch`'s pass, if there was such a pass (taken once).
    pub(super) fn take_fused_ingest(&self) -> Option<anyhow::Result<FusedIngest>> {
        self.fused_ingest.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// The shard process this build runs, if it is one (`--shard i/N`).
    pub(crate) fn shard(&self) -> Option<ShardSpec> {
        self.shard
    }

    /// Mark `stage` as the one this shard process runs.
    pub(super) fn run_sharded(&self, stage: StageName) {
        let _ = self.sharded.set(stage);
    }

    /// Where the shard processes of `stage` write their parts.
    pub(crate) fn parts_dir(&self, stage: StageName) -> PathBuf {
        self.store.stage_dir("parts").join(stage.as_str())
    }

    /// The shard this process runs `stage` as, if it does.
    pub(crate) fn slice_of(&self, stage: StageName) -> Option<ShardSpec> {
        self.shard.filter(|_| self.sharded.get() == Some(&stage))
    }

    /// Whether item `id` is handled by this process in `stage` (all are, but in a shard
    /// process).
    pub(crate) fn handles(&self, stage: StageName, id: &str) -> bool {
        self.slice_of(stage).is_none_or(|slice| in_slice(id, slice))
    }

    /// Where `stage` writes in this process.
    pub(crate) fn begin(&self, stage: StageName) -> anyhow::Result<StageOutput> {
        Ok(match self.slice_of(stage) {
            Some(slice) => {
                StageOutput::Part(PartWriter::begin(&self.parts_dir(stage), slice)?, slice)
            }
            None => StageOutput::Whole(self.store.begin(stage.as_str())?),
        })
    }

    /// The path of one output (`role`) of a completed stage.
    pub(crate) fn output(&self, record: &StageRecord, role: &str) -> anyhow::Result<PathBuf> {
        self.store.output(record, role)
    }

    /// The stored record of `stage` made from `key`, if there is one; in a shard process, the
    /// record of this process's complete part of that key.
    pub(crate) fn cached(
        &self,
        stage: StageName,
        key: &str,
    ) -> anyhow::Result<Option<StageRecord>> {
        if let Some(record) = self.store.lookup(stage.as_str(), key)? {
            return Ok(Some(record));
        }
        let Some(slice) = self.slice_of(stage) else {
            return Ok(None);
        };
        let dir = self.parts_dir(stage).join(part_name(slice));
        if !part_done(&self.parts_dir(stage), slice, key) {
            return Ok(None);
        }
        self.printer.status(format!(
            "{:>10}: shard {}/{} is complete (`{}`); nothing to do",
            stage.as_str(),
            slice.index,
            slice.count,
            dir.display()
        ));
        Ok(Some(part_record(stage, read_part_marker(&dir)?)?))
    }

    /// In a whole run of `stage` (key `key`): the complete parts of its shard processes, if
    /// there are any; an error naming each missing, incomplete or stale part.
    pub(crate) fn shard_parts(
        &self,
        stage: StageName,
        key: &str,
    ) -> anyhow::Result<Option<Vec<(PathBuf, PartMarker)>>> {
        if self.slice_of(stage).is_some() {
            return Ok(None);
        }
        let dir = self.parts_dir(stage);
        let any = dir.exists()
            && fs_err::read_dir(&dir)?.any(|e| {
                e.is_ok_and(|e| e.file_name().to_str().and_then(parse_part_name).is_some())
            });
        if !any && self.merging != Some(stage) {
            return Ok(None);
        }
        let rerun = |i: u32, n: u32| {
            format!("run `coreb {stage} {} --shard {i}/{n}`", self.plan.manifest_path.display())
        };
        let parts = complete_parts(&dir, key, stage.as_str(), rerun)?;
        self.printer.status(format!(
            "{:>10}: merging {} shard parts from `{}`",
            stage.as_str(),
            parts.len(),
            dir.display()
        ));
        Ok(Some(parts))
    }

    /// The lock that serialises writers of this build's artifact store.
    pub(super) fn lock(&self) -> anyhow::Result<Lock> {
        let path = self.store.stage_dir(".lock");
        Lock::exclusive(&path, |holder| {
            self.printer.status(format!(
                "waiting for the lock on the build directory `{}`, held by {holder}",
                self.plan.output_dir.display()
            ))
        })
    }
}

/// What a build stage's part marker holds besides the convention's fields: the part's summary,
/// local facts and outputs, as its record would (JSON, like `record.json`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct PartFacts {
    /// The part's local facts.
    #[serde(default)]
    pub(crate) local: serde_json::Value,
    /// Its output files by role.
    #[serde(default)]
    pub(crate) outputs: BTreeMap<String, String>,
    /// Its summary.
    #[serde(default)]
    pub(crate) summary: serde_json::Value,
}

impl PartFacts {
    /// The facts of a part's marker.
    pub(crate) fn of(marker: &PartMarker) -> anyhow::Result<PartFacts> {
        serde_json::from_value(serde_json::Value::Object(marker.facts.clone()))
            .context("a part's `_SUCCESS`: its summary")
    }
}

/// The record of a finished part: its summary and local facts (no outputs).
fn part_record(stage: StageName, marker: PartMarker) -> anyhow::Result<StageRecord> {
    let facts = PartFacts::of(&marker)?;
    Ok(StageRecord {
        stage: stage.as_str().to_owned(),
        key: marker.plan,
        tool_version: TOOL_VERSION.to_owned(),
        tool_fingerprint: TOOL_FINGERPRINT.to_owned(),
        outputs: Default::default(),
        summary: facts.summary,
        local: facts.local,
    })
}

/// Where a stage writes: its directory in the artifact store (a whole run) or its part (a
/// shard process).
pub(crate) enum StageOutput {
    /// The whole stage.
    Whole(StageWriter),
    /// Part `slice` of the stage.
    Part(PartWriter, ShardSpec),
}

impl StageOutput {
    /// Where to write an output file.
    pub(crate) fn path(&self, file: &str) -> PathBuf {
        match self {
            StageOutput::Whole(w) => w.path(file),
            StageOutput::Part(p, _) => p.path(file),
        }
    }

    /// Whether this is a shard process's part.
    pub(crate) fn is_part(&self) -> bool {
        matches!(self, StageOutput::Part(..))
    }

    /// Commit the stage (its record; the parts it merged are removed), or finish the part (its
    /// marker holds the key, the summary and the local facts); returns the record.
    pub(crate) fn commit(
        self,
        cx: &StageContext,
        stage: StageName,
        key: &str,
        outputs: &[(&str, &str)],
        summary: &impl Serialize,
        local: &impl Serialize,
    ) -> anyhow::Result<StageRecord> {
        match self {
            StageOutput::Whole(w) => {
                let record = w.commit_with_local(key, outputs, summary, local)?;
                let parts = cx.parts_dir(stage);
                if parts.exists() {
                    fs_err::remove_dir_all(&parts)?;
                }
                Ok(record)
            }
            StageOutput::Part(p, slice) => {
                let outputs =
                    outputs.iter().map(|(r, f)| ((*r).to_owned(), (*f).to_owned())).collect();
                let facts = PartFacts {
                    local: serde_json::to_value(local)?,
                    outputs,
                    summary: serde_json::to_value(summary)?,
                };
                let facts = serde_json::to_value(facts)?.as_object().cloned().unwrap_or_default();
                let marker = PartMarker {
                    plan: key.to_owned(),
                    shard: slice.index,
                    shards: slice.count,
                    files: Default::default(),
                    facts,
                };
                let dir = p.finish(&marker)?;
                cx.printer.status(format!(
                    "{:>10}: shard {}/{} written to `{}`; `coreb merge {stage} {}` (or any later stage) combines the shards once all are complete",
                    stage.as_str(),
                    slice.index,
                    slice.count,
                    dir.display(),
                    cx.plan.manifest_path.display()
                ));
                part_record(stage, marker)
            }
        }
    }
}
