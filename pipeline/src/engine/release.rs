//! `release`: publishes `<releases_dir>/<version>/` — the eight Parquet configs, the
//! BEIR folder of each task, the source problems, the dataset card and `MANIFEST.json` — into
//! a temporary directory that is renamed into place only when complete.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use anyhow::Context;
use coreb_base::hashing::{sha256_file, sha256_hex};
use coreb_data::problem::ProblemId;
use coreb_data::qrels::{QrelsOutput, QrelsStats};
use coreb_eval::gates::GatesConfig;
use coreb_llm::run::WrittenBy;
use coreb_stages::release::{CONFIGS, CardInfo, check_disjoint, dataset_card, license_text};
use serde::{Deserialize, Serialize};

use super::context::{StageContext, StageOutput};
use super::control::Controlled;
use super::execute::ExecuteSummary;
use super::fetch::FetchSummary;
use super::stage::{Done, Stage, StageReport, Upstream};
use super::stage_name::StageName;
use super::summary::{Counts, Reasons, StageFacts, Summary};
use crate::artifacts::{TOOL_VERSION, hash_tree, input_key};
use crate::release::gates::{earlier_problem_ids, gate, purpose_gate};
use crate::release::kit::write_kit;
use crate::release::layout::{relative_path, write_source_problems, write_tables};
use crate::release::publish::{Published, published_state, release_exists};
use crate::release::review::recorded::{RecordedReview, recorded_review};
use coreb_base::durable;
use coreb_data::releases::{BuildManifest, ReleaseManifest, Replaced};

/// The `release` stage.
pub struct Release;

/// The stages whose LLM answers the release's regeneration kit carries, and whose authors
/// its card counts.
const ANSWERED: [StageName; 6] = [
    StageName::Rewrite,
    StageName::Distract,
    StageName::Abbreviate,
    StageName::Generate,
    StageName::Execute,
    StageName::Queries,
];

/// What `release` published: the version, its counts and BM25's nDCG@10 per task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReleaseSummary {
    /// Problems published.
    pub rows_in: u64,
    /// Problems published.
    pub rows_out: u64,
    /// Always 0.
    pub rejected: u64,
    /// The version.
    pub release: String,
    /// The composition's counts.
    pub counts: QrelsStats,
    /// BM25's nDCG@10 per task (4 decimals).
    pub bm25_ndcg10: BTreeMap<String, f64>,
}

impl Summary for ReleaseSummary {
    fn counts(&self) -> Counts {
        Counts {
            rows_in: self.rows_in,
            rows_out: self.rows_out,
            rejected: self.rejected,
        }
    }

    fn reasons(&self) -> Reasons {
        Reasons::Counts(vec![("rejected", self.rejected)])
    }
}

/// Where the release was published on this machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReleaseLocal {
    /// The publish directory.
    pub published: PathBuf,
}

/// The MANIFEST's `counts`.
#[derive(Serialize)]
struct ReleaseCounts<'a> {
    llm_answers_written_by: WrittenBy,
    qrels: &'a QrelsStats,
    bm25_ndcg10: &'a BTreeMap<String, f64>,
    gates: &'a GatesConfig,
    checks_passed: usize,
}

/// What the release's key was made of that its run needs again.
pub struct Prepared {
    /// The build manifest's path relative to where the release belongs.
    manifest_rel: String,
    stages: BTreeMap<String, StageFacts>,
    models: BTreeSet<String>,
    controlled: Option<Controlled>,
    review: Option<RecordedReview>,
}

impl Stage for Release {
    const NAME: StageName = StageName::Release;
    const UPSTREAM: &'static [StageName] = &[
        StageName::Fetch,
        StageName::Filter,
        StageName::Rewrite,
        StageName::Distract,
        StageName::Abbreviate,
        StageName::Generate,
        StageName::Execute,
        StageName::Queries,
        StageName::Qrels,
    ];
    type Summary = ReleaseSummary;
    type Local = ReleaseLocal;
    type Prepared = Prepared;

    fn key(&self, cx: &StageContext, up: &Upstream<'_>) -> anyhow::Result<(String, Prepared)> {
        let plan = cx.plan();
        // Relative to where the release belongs, so that a rebuild elsewhere (`verify`) records
        // the same path.
        let manifest_rel = plan.recorded_manifest_path.clone().unwrap_or_else(|| {
            relative_path(&plan.releases_dir.join(&plan.version), &plan.manifest_path)
        });
        let recorded = ANSWERED
            .into_iter()
            .chain([StageName::Filter, StageName::Qrels])
            .map(|s| up.report(s))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let (stages, models) = stage_facts(&recorded);
        let controlled = super::control::controlled(plan)?;
        let review = recorded_review(
            &plan.releases_dir,
            &plan.version,
            plan.review_dir.as_deref(),
        )?;
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
        Ok((
            key,
            Prepared {
                manifest_rel,
                stages,
                models,
                controlled,
                review,
            },
        ))
    }

    /// Skipped only while the published copy is still the one this record describes.
    fn reuse(&self, cx: &StageContext, hit: &StageReport) -> anyhow::Result<bool> {
        let published = cx.plan().publish_dir.join("MANIFEST.json");
        Ok(published.exists()
            && hit
                .record
                .outputs
                .get("manifest")
                .map(|m| m.sha256.as_str())
                == Some(sha256_file(&published)?.as_str()))
    }

    fn run(
        &self,
        cx: &StageContext,
        up: &Upstream<'_>,
        prepared: Prepared,
        out: &StageOutput,
    ) -> anyhow::Result<Done<ReleaseSummary, ReleaseLocal>> {
        let plan = cx.plan();
        let Prepared {
            manifest_rel,
            stages,
            models,
            controlled,
            review,
        } = prepared;
        let out_qrels: QrelsOutput = {
            let path = cx.output(up.record(StageName::Qrels)?, "qrels")?;
            serde_json::from_str(&fs_err::read_to_string(&path)?)
                .with_context(|| format!("reading `{}`", path.display()))?
        };
        let ids: BTreeSet<ProblemId> = out_qrels
            .tasks
            .values()
            .flat_map(|t| t.queries.iter().map(|q| q.source_problem_id.clone()))
            .collect();
        check_disjoint(&ids, &earlier_problem_ids(plan)?)?;
        let purpose = match &plan.purpose {
            Some(p) => Some(purpose_gate(&plan.version, p, &ids)?),
            None => None,
        };

        let parent = plan
            .publish_dir
            .parent()
            .context("the publish directory has no parent")?;
        fs_err::create_dir_all(parent)?;
        let tmp = parent.join(format!(".{}.tmp", plan.version));
        if tmp.exists() {
            fs_err::remove_dir_all(&tmp)?;
        }
        fs_err::create_dir_all(&tmp)?;
        write_tables(&tmp, &plan.version, &out_qrels)?;
        let platforms = write_source_problems(
            &cx.output(up.record(StageName::Filter)?, "problems")?,
            &tmp,
            &ids,
        )?;

        let answered = ANSWERED
            .into_iter()
            .map(|s| up.report(s))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let written_by = answered.iter().fold(WrittenBy::default(), |mut sum, r| {
            sum += r.summary().written_by();
            sum
        });
        let info = CardInfo {
            version: &plan.version,
            window: &plan.window,
            models: models.into_iter().collect(),
            problems: ids.len(),
            tool_version: TOOL_VERSION,
            platforms: platforms.into_iter().collect(),
            written_by,
            config_bytes: CONFIGS
                .into_iter()
                .map(|c| Ok((c, fs_err::metadata(tmp.join(format!("{c}.parquet")))?.len())))
                .collect::<std::io::Result<_>>()?,
        };
        let mut card = dataset_card(&info, &out_qrels);
        if let Some(c) = &controlled {
            card.push_str(&super::control::card_section(&c.of));
        }
        fs_err::write(tmp.join("README.md"), card)?;
        fs_err::write(tmp.join("LICENSE"), license_text(&info))?;

        let toolchains = &up.summary::<ExecuteSummary>(StageName::Execute)?.toolchains;
        write_kit(cx, &tmp, &answered, toolchains)?;
        let (bm25, checks_passed) = gate(plan, &tmp, &out_qrels)?;
        if let Some(c) = &controlled {
            let (paired, problems) = super::control::check_queries(&tmp, c).inspect_err(|_| {
                let _ = fs_err::remove_dir_all(&tmp);
            })?;
            cx.printer().status(format!("   release: the control of `{}`: {paired} queries on {problems} problems map one to one onto the release's", c.of.version));
        }

        let counts = ReleaseCounts {
            llm_answers_written_by: written_by,
            qrels: &out_qrels.stats,
            bm25_ndcg10: &bm25,
            gates: &plan.gates,
            checks_passed,
        };
        let mut manifest = ReleaseManifest {
            format: "coreb-release-manifest/1".into(),
            version: plan.version.clone(),
            tool_version: TOOL_VERSION.into(),
            window: plan.window.clone(),
            build_manifest: BuildManifest {
                path: manifest_rel,
                sha256: sha256_hex(plan.manifest_text.as_bytes()),
                text: plan.manifest_text.clone(),
            },
            sources: up
                .summary::<FetchSummary>(StageName::Fetch)?
                .sources
                .clone(),
            stages: stages
                .into_iter()
                .map(|(stage, facts)| Ok((stage, serde_json::to_value(facts)?)))
                .collect::<serde_json::Result<_>>()?,
            seeds: BTreeMap::from([
                ("dedup".to_owned(), plan.stages.dedup.seed),
                ("qrels".to_owned(), plan.stages.qrels.seed),
            ]),
            counts: serde_json::to_value(&counts)?,
            files: hash_tree(&tmp)?,
            replaces: None,
            controls: controlled.map(|c| c.of),
            purpose,
        };
        let mut text = serde_json::to_string_pretty(&manifest)? + "\n";
        if let Some(r) = &review {
            // The card as `coreb review report --record` re-published it: only when the review is
            // of the data this build makes (whatever machine made them; a review recorded
            // before reviews named their data: of this build's MANIFEST before the card changed).
            let of_this_release = match &r.data_sha256 {
                Some(data) => *data == manifest.data_sha256(),
                None => r.reviewed_sha256 == sha256_hex(text.as_bytes()),
            };
            if of_this_release {
                let card = coreb_data::releases::with_human_validation(
                    &fs_err::read_to_string(tmp.join("README.md"))?,
                    &r.section,
                );
                fs_err::write(tmp.join("README.md"), &card)?;
                manifest.files.insert(
                    "README.md".into(),
                    coreb_data::releases::FileEntry {
                        sha256: sha256_hex(card.as_bytes()),
                        bytes: card.len() as u64,
                    },
                );
                text = serde_json::to_string_pretty(&manifest)? + "\n";
                cx.printer().status(format!(
                    "   release: the card shows the human review recorded in `{}`",
                    r.dir.display()
                ));
            } else {
                cx.printer().status(format!(
                    "   release: the human review recorded in `{}` is of another build of `{}` ({}): the card does not show it",
                    r.dir.display(),
                    plan.version,
                    match &r.data_sha256 {
                        Some(data) => format!("data sha256 `{data}`, this build's `{}`", manifest.data_sha256()),
                        None => format!("MANIFEST sha256 `{}`", r.reviewed_sha256),
                    }
                ));
            }
        }
        let publish = match published_state(&plan.publish_dir, &manifest.files, &text)? {
            Published::Absent => true,
            Published::Same(existing) => {
                // The same release again: nothing to publish (a replaced one keeps its record).
                text = existing;
                false
            }
            Published::Other {
                changes,
                manifest_sha256,
            } => {
                if !plan.replace {
                    fs_err::remove_dir_all(&tmp)?;
                    return Err(release_exists(&plan.version, &plan.publish_dir, &changes));
                }
                manifest.replaces = Some(Replaced { manifest_sha256 });
                text = serde_json::to_string_pretty(&manifest)? + "\n";
                true
            }
        };
        if publish {
            durable::write(&tmp.join("MANIFEST.json"), text.as_bytes())?;
            // Every published file is on disk before the release appears under its name.
            durable::replace_dir(&tmp, &plan.publish_dir)?;
        } else {
            fs_err::remove_dir_all(&tmp)?;
        }
        fs_err::write(out.path("MANIFEST.json"), &text)?;
        let summary = ReleaseSummary {
            rows_in: ids.len() as u64,
            rows_out: ids.len() as u64,
            rejected: 0,
            release: plan.version.clone(),
            counts: out_qrels.stats,
            bm25_ndcg10: bm25,
        };
        Ok(Done::new(
            &[("manifest", "MANIFEST.json")],
            summary,
            ReleaseLocal {
                published: plan.publish_dir.clone(),
            },
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
