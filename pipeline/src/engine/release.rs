//! `release`: publishes `<releases_dir>/<version>/` — the eight Parquet configs, the
//! BEIR folder of each task, the source problems, the dataset card, the regeneration kit and
//! `MANIFEST.json`. The stage is its key (what the MANIFEST records of the build) and a call:
//! what the build made goes to [`crate::release::make`], which gates, writes and publishes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use anyhow::Context;
use coreb_base::hashing::sha256_file;
use coreb_data::qrels::{QrelsOutput, QrelsStats};
use coreb_llm::run::WrittenBy;
use serde::{Deserialize, Serialize};

use super::context::{StageContext, StageOutput};
use super::execute::ExecuteSummary;
use super::fetch::FetchSummary;
use super::stage::{Done, Stage, StageReport, Upstream};
use super::stage_name::StageName;
use super::summary::{Counts, StageFacts, Summary};
use crate::artifacts::input_key;
use crate::release::layout::relative_path;
use crate::release::make::{Built, Keyed, make};
use crate::release::review::recorded::recorded_review;

/// The `release` stage.
pub(super) struct Release;

/// The stages whose LLM answers the release's regeneration kit carries, and whose authors
/// its card counts: those it reads from `rewrite` up to (not including) `qrels`.
fn answered() -> impl Iterator<Item = StageName> {
    StageName::Release
        .reads()
        .iter()
        .copied()
        .filter(|s| (StageName::Rewrite..StageName::Qrels).contains(s))
}

/// What `release` published: the version, its counts and BM25's nDCG@10 per task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ReleaseSummary {
    /// Problems published, in and out; 0 rejected.
    #[serde(flatten)]
    pub(crate) rows: Counts,
    /// The version.
    pub(crate) release: String,
    /// The composition's counts.
    pub(crate) counts: QrelsStats,
    /// BM25's nDCG@10 per task (4 decimals).
    pub(crate) bm25_ndcg10: BTreeMap<String, f64>,
}

impl Summary for ReleaseSummary {
    fn counts(&self) -> Counts {
        self.rows
    }
}

/// Where the release was published on this machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct ReleaseLocal {
    /// The publish directory.
    pub(crate) published: PathBuf,
}

impl Stage for Release {
    const NAME: StageName = StageName::Release;
    type Summary = ReleaseSummary;
    type Local = ReleaseLocal;
    type Prepared = Keyed;

    fn key(&self, cx: &StageContext, up: &Upstream<'_>) -> anyhow::Result<(String, Keyed)> {
        let plan = cx.plan();
        // Relative to where the release belongs, so that a rebuild elsewhere (`verify`) records
        // the same path.
        let manifest_rel = plan.recorded_manifest_path.clone().unwrap_or_else(|| {
            relative_path(&plan.releases_dir.join(&plan.version), &plan.manifest_path)
        });
        let recorded = answered()
            .chain([StageName::Filter, StageName::Qrels])
            .map(|s| up.report(s))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let (stages, models) = stage_facts(&recorded);
        let controlled = crate::release::control::controlled(plan)?;
        let review =
            recorded_review(&plan.releases_dir, &plan.version, plan.review_dir.as_deref())?;
        let key = input_key(
            StageName::Release.as_str(),
            &(
                &plan.version,
                &plan.window,
                &manifest_rel,
                &plan.manifest_text,
                &plan.gates,
                &stages,
                controlled.as_ref().map(|c| &c.of),
                &review,
            ),
            &[
                up.record(StageName::Fetch)?,
                up.record(StageName::Filter)?,
                up.record(StageName::Qrels)?,
            ],
        )?;
        Ok((key, Keyed { manifest_rel, stages, models, controlled, review }))
    }

    /// Skipped only while the published copy is still the one this record describes.
    fn reuse(&self, cx: &StageContext, hit: &StageReport) -> anyhow::Result<bool> {
        let published = cx.plan().publish_dir.join("MANIFEST.json");
        Ok(published.exists()
            && hit.record.outputs.get("manifest").map(|m| m.sha256.as_str())
                == Some(sha256_file(&published)?.as_str()))
    }

    /// What the build made, handed to [`make`], which publishes the release.
    fn run(
        &self,
        cx: &StageContext,
        up: &Upstream<'_>,
        keyed: Keyed,
        out: &StageOutput,
    ) -> anyhow::Result<Done<ReleaseSummary, ReleaseLocal>> {
        let plan = cx.plan();
        let qrels: QrelsOutput = {
            let path = cx.output(up.record(StageName::Qrels)?, "qrels")?;
            serde_json::from_str(&fs_err::read_to_string(&path)?)
                .with_context(|| format!("reading `{}`", path.display()))?
        };
        let answered = answered().map(|s| up.report(s)).collect::<anyhow::Result<Vec<_>>>()?;
        let written_by = answered.iter().fold(WrittenBy::default(), |mut sum, r| {
            sum += r.summary().written_by();
            sum
        });
        let answer_keys = answered
            .iter()
            .map(|r| &r.record)
            .filter(|r| r.outputs.contains_key("answer_keys"))
            .map(|r| cx.output(r, "answer_keys"))
            .collect::<anyhow::Result<_>>()?;
        let built = Built {
            filtered: cx.output(up.record(StageName::Filter)?, "problems")?,
            answer_keys,
            written_by,
            toolchains: &up.summary::<ExecuteSummary>(StageName::Execute)?.toolchains,
            sources: &up.summary::<FetchSummary>(StageName::Fetch)?.sources,
            ambiguous: up
                .summary::<super::qrels::QrelsSummary>(StageName::Qrels)?
                .ambiguous_answers
                .clone(),
            qrels,
        };
        let made = make(plan, keyed, &built, cx.printer())?;
        fs_err::write(out.path("MANIFEST.json"), &made.manifest)?;
        let summary = ReleaseSummary {
            rows: Counts {
                rows_in: made.problems as u64,
                rows_out: made.problems as u64,
                rejected: 0,
            },
            release: plan.version.clone(),
            counts: built.qrels.stats,
            bm25_ndcg10: made.bm25_ndcg10,
        };
        Ok(Done::new(
            &[("manifest", "MANIFEST.json")],
            summary,
            ReleaseLocal { published: plan.publish_dir.clone() },
        ))
    }
}

/// What the MANIFEST records of each stage ([`StageFacts`]: parameters, prompts, models, and
/// for execute the toolchain versions, time limits and the counts of the re-check of changed
/// tests), by stage name, and every model named. Part of the release's key: a new compiler
/// version that changes no verdict still changes the MANIFEST.
fn stage_facts(reports: &[&StageReport]) -> (BTreeMap<String, StageFacts>, BTreeSet<String>) {
    let mut stages = BTreeMap::new();
    let mut models: BTreeSet<String> = BTreeSet::new();
    for r in reports {
        let facts = r.summary().facts().unwrap_or_default();
        models.extend(facts.models.iter().flatten().cloned());
        stages.insert(r.stage.as_str().to_owned(), facts);
    }
    (stages, models)
}
