//! What a stage is to the engine: the [`Stage`] trait each stage module implements — its name
//! ([`StageName`], of [`super::stage_name`]), the stages it reads, its key, its run, its merge
//! of shard parts and its typed summary. The engine walks its table of stages
//! ([`super::STAGES`]) and runs each through [`Runner`], the one copy of look up → merge or
//! run → commit.

use std::any::Any;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::context::{StageContext, StageOutput};
use super::stage_name::StageName;
use super::summary::Summary;
use crate::artifacts::{ArtifactStore, StageRecord};
use crate::shard::PartMarker;

/// One stage of the build: a unit struct in its own module, one row of the engine's table.
///
/// The engine ([`Runner::run`]) computes the stage's [`key`](Stage::key); reuses the stored
/// record of that key (unless [`reuse`](Stage::reuse) refuses it); otherwise gives the stage
/// where to write ([`output`](Stage::output)) and calls [`run`](Stage::run), or
/// [`merge`](Stage::merge) when the stage's shard processes left their parts; commits what it
/// returns ([`Done`]: output files, typed summary, local facts) as the stage's record (or, in a
/// shard process, as its part); then lets the stage [`announce`](Stage::announce) it. A stage
/// reads and writes through the [`StageContext`] it is given, never through the engine.
pub(crate) trait Stage: Sync + 'static {
    /// Its name: its row of the build ([`crate::stage_rows::stage_rows!`]) says what it
    /// reads, whether it runs as shard processes and whether it asks models.
    const NAME: StageName;
    /// Its summary: what it produced, counted, and the facts downstream keys and the release
    /// MANIFEST read. Part of the record's fingerprint, so it holds nothing of the machine or
    /// the run.
    type Summary: Summary + Serialize + DeserializeOwned;
    /// What its record keeps outside the fingerprint: where it ran, what the run measured
    /// (`()` for nothing: `null` in `record.json`).
    type Local: Serialize + DeserializeOwned + Send + Sync + 'static;
    /// What the key was made of that the run needs again (read once, used twice).
    type Prepared;

    /// The stage's input key (its configuration and the fingerprints of its upstream records,
    /// [`crate::artifacts::input_key`]), and what the run needs of what went into it.
    fn key(&self, cx: &StageContext, up: &Upstream<'_>)
    -> anyhow::Result<(String, Self::Prepared)>;

    /// Whether a stored record of this key may stand for a run (default: yes).
    fn reuse(&self, _cx: &StageContext, _hit: &StageReport) -> anyhow::Result<bool> {
        Ok(true)
    }

    /// Where the run writes (default: a fresh directory of the stage, or of its part in a
    /// shard process).
    fn output(
        &self,
        cx: &StageContext,
        _prepared: &mut Self::Prepared,
    ) -> anyhow::Result<StageOutput> {
        cx.begin(Self::NAME)
    }

    /// Run the stage: write its outputs into `out` and say what they are.
    fn run(
        &self,
        cx: &StageContext,
        up: &Upstream<'_>,
        prepared: Self::Prepared,
        out: &StageOutput,
    ) -> anyhow::Result<Done<Self::Summary, Self::Local>>;

    /// Combine the complete parts of its shard processes into `out` (default: run it whole,
    /// as the LLM stages do: the response store answers what the shards asked).
    fn merge(
        &self,
        cx: &StageContext,
        up: &Upstream<'_>,
        prepared: Self::Prepared,
        _parts: Vec<(PathBuf, PartMarker)>,
        out: &StageOutput,
    ) -> anyhow::Result<Done<Self::Summary, Self::Local>> {
        self.run(cx, up, prepared, out)
    }

    /// Lines of its own after it ran or was found unchanged (before the engine's line).
    fn announce(&self, _cx: &StageContext, _report: &StageReport) {}
}

/// What a stage's run made, for the engine to commit.
pub(crate) struct Done<S, L> {
    /// Its output files: (role, file name).
    pub(crate) outputs: Vec<(&'static str, &'static str)>,
    /// Its summary.
    pub(crate) summary: S,
    /// Its local facts.
    pub(crate) local: L,
    /// How long it took, when not the time its run took (a stage run ahead of its turn).
    pub(crate) wall: Option<Duration>,
    /// What to do once it is committed (a journal whose work is in the outputs now).
    pub(crate) on_commit: Option<Box<dyn FnOnce() -> anyhow::Result<()>>>,
}

impl<S, L> Done<S, L> {
    /// Outputs, summary and local facts, nothing else.
    pub(crate) fn new(outputs: &[(&'static str, &'static str)], summary: S, local: L) -> Self {
        Done { outputs: outputs.to_vec(), summary, local, wall: None, on_commit: None }
    }
}

/// What one stage did in a build: its record as stored, and its summary and local facts typed.
#[derive(Clone)]
pub(crate) struct StageReport {
    /// The stage.
    pub(crate) stage: StageName,
    /// Skipped because its inputs were unchanged.
    pub(crate) skipped: bool,
    /// Its record (outputs, summary, local facts) as `record.json` holds it.
    pub(crate) record: StageRecord,
    summary: Arc<dyn Summary>,
    local: Arc<dyn Any + Send + Sync>,
    wall: Option<Duration>,
}

impl std::fmt::Debug for StageReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StageReport")
            .field("stage", &self.stage)
            .field("skipped", &self.skipped)
            .field("summary", &self.summary)
            .finish_non_exhaustive()
    }
}

impl StageReport {
    /// The report of stage `T` from its record (stored, or a part's), its summary and local
    /// facts read back as `T`'s types.
    pub(crate) fn of<T: Stage>(skipped: bool, record: StageRecord) -> anyhow::Result<StageReport> {
        let what = |part: &str| format!("the `{part}` of the `{}` record", T::NAME);
        let summary: T::Summary =
            serde_json::from_value(record.summary.clone()).with_context(|| what("summary"))?;
        let local: T::Local =
            serde_json::from_value(record.local.clone()).with_context(|| what("local"))?;
        Ok(StageReport {
            stage: T::NAME,
            skipped,
            record,
            summary: Arc::new(summary),
            local: Arc::new(local),
            wall: None,
        })
    }

    /// Its summary, as every stage's reads (counts, MANIFEST facts).
    pub(crate) fn summary(&self) -> &dyn Summary {
        self.summary.as_ref()
    }

    /// Its summary as stage type `S` (an error names the stage when it is another's).
    pub(crate) fn summary_as<S: Summary>(&self) -> anyhow::Result<&S> {
        let any: &dyn Any = self.summary.as_ref();
        any.downcast_ref().with_context(|| {
            format!("the summary of `{}` is not a `{}`", self.stage, std::any::type_name::<S>())
        })
    }

    /// Its local facts as type `L` (`None`: the stage keeps others).
    pub(crate) fn local_as<L: 'static>(&self) -> Option<&L> {
        self.local.downcast_ref()
    }

    /// How long it took, when its run said (a stage run ahead of its turn).
    pub(crate) fn wall(&self) -> Option<Duration> {
        self.wall
    }

    /// The `--json` summary: `stage`, `skipped`, `outputs`, the summary's keys, the local
    /// facts (shown, though kept out of fingerprints), and `rows_in`, `rows_out`, `rejected`
    /// (0 where the stage has none).
    pub(crate) fn to_json(&self, store: &ArtifactStore) -> serde_json::Value {
        let dir = store.stage_dir(self.stage.as_str());
        let mut line = serde_json::json!({
            "stage": self.stage.as_str(),
            "skipped": self.skipped,
            "outputs": self.record.outputs.values().map(|o| dir.join(&o.file)).collect::<Vec<_>>(),
        });
        if let (Some(obj), Some(summary)) = (line.as_object_mut(), self.record.summary.as_object())
        {
            for (k, v) in summary {
                obj.entry(k.clone()).or_insert_with(|| v.clone());
            }
            for (k, v) in self.record.local.as_object().into_iter().flatten() {
                obj.insert(k.clone(), v.clone());
            }
            let counts = self.summary.counts();
            for (k, n) in [
                ("rows_in", counts.rows_in),
                ("rows_out", counts.rows_out),
                ("rejected", counts.rejected),
            ] {
                obj.entry(k).or_insert(serde_json::json!(n));
            }
        }
        line
    }
}

/// The records of the stages a stage reads, and how far the build goes.
pub(crate) struct Upstream<'a> {
    /// The stage being run.
    stage: StageName,
    /// The stages that ran (or were found unchanged) before it.
    reports: &'a [StageReport],
    /// The last stage of the build.
    until: StageName,
}

impl<'a> Upstream<'a> {
    /// What stage `stage` reads: the reports of the build so far.
    pub(crate) fn new(stage: StageName, reports: &'a [StageReport], until: StageName) -> Self {
        Upstream { stage, reports, until }
    }

    /// The last stage of the build.
    pub(crate) fn until(&self) -> StageName {
        self.until
    }

    /// The report of upstream stage `name`: refused unless the stage's row declares that it
    /// reads `name` ([`StageName::reads`]), so that what a stage reads is what its key can
    /// name.
    pub(crate) fn report(&self, name: StageName) -> anyhow::Result<&'a StageReport> {
        let stage = self.stage;
        if !stage.reads().contains(&name) {
            let declared: Vec<&str> = stage.reads().iter().map(|s| s.as_str()).collect();
            anyhow::bail!(
                "stage `{stage}` read the record of `{name}`, which its row of the stage table does \
                 not declare (it reads: {}); add `{name:?}` to the `reads` of its row in \
                 `pipeline/src/engine/stage_name.rs`",
                if declared.is_empty() { "nothing".to_owned() } else { declared.join(", ") }
            );
        }
        self.reports
            .iter()
            .find(|r| r.stage == name)
            .with_context(|| format!("stage `{name}` did not run before `{}`", self.stage))
    }

    /// The record of upstream stage `name`.
    pub(crate) fn record(&self, name: StageName) -> anyhow::Result<&'a StageRecord> {
        Ok(&self.report(name)?.record)
    }

    /// The summary of upstream stage `name`, as its type `S`.
    pub(crate) fn summary<S: Summary>(&self, name: StageName) -> anyhow::Result<&'a S> {
        self.report(name)?.summary_as()
    }
}

/// A row of the engine's table: a [`Stage`] behind one object-safe face, and the one copy of
/// look up → (merge or run) → commit that every stage goes through.
pub(crate) trait Runner: Sync {
    /// The stage's name.
    fn name(&self) -> StageName;
    /// Run it (or find it unchanged) after the stages of `up`.
    fn run(&self, cx: &StageContext, up: &Upstream<'_>) -> anyhow::Result<StageReport>;
}

impl<T: Stage> Runner for T {
    fn name(&self) -> StageName {
        T::NAME
    }

    fn run(&self, cx: &StageContext, up: &Upstream<'_>) -> anyhow::Result<StageReport> {
        for name in T::NAME.reads() {
            up.report(*name)?;
        }
        let (key, mut prepared) = self.key(cx, up)?;
        if let Some(record) = cx.cached(T::NAME, &key)? {
            let hit = StageReport::of::<T>(true, record)?;
            if self.reuse(cx, &hit)? {
                self.announce(cx, &hit);
                return Ok(hit);
            }
        }
        let parts = cx.shard_parts(T::NAME, &key)?;
        let out = self.output(cx, &mut prepared)?;
        let done = match parts {
            Some(parts) => self.merge(cx, up, prepared, parts, &out)?,
            None => self.run(cx, up, prepared, &out)?,
        };
        let Done { outputs, summary, local, wall, on_commit } = done;
        let record = out.commit(cx, T::NAME, &key, &outputs, &summary, &local)?;
        if let Some(then) = on_commit {
            then()?;
        }
        let report = StageReport {
            stage: T::NAME,
            skipped: false,
            record,
            summary: Arc::new(summary),
            local: Arc::new(local),
            wall,
        };
        self.announce(cx, &report);
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stage_reading_a_stage_its_row_does_not_declare_is_refused() {
        let up = Upstream::new(StageName::Filter, &[], StageName::Release);
        // Declared (`filter` reads `dedup`): the error is only that it did not run here.
        let err = up.record(StageName::Dedup).unwrap_err().to_string();
        assert_eq!(err, "stage `dedup` did not run before `filter`");
        // Not declared: refused whatever ran, naming the stage, what it reads and where to
        // declare it.
        let err = up.record(StageName::Ingest).unwrap_err().to_string();
        assert!(
            err.starts_with(
                "stage `filter` read the record of `ingest`, which its row of the stage table \
                 does not declare (it reads: dedup)"
            ),
            "{err}"
        );
        assert!(err.contains("add `Ingest` to the `reads` of its row"), "{err}");
        let fetch = Upstream::new(StageName::Fetch, &[], StageName::Release);
        let err = fetch.report(StageName::Ingest).unwrap_err().to_string();
        assert!(err.contains("(it reads: nothing)"), "{err}");
    }
}
