//! `release`: publishes `<releases_dir>/<version>/` — the eight Parquet configs, the
//! BEIR folder of each task, the source problems, the dataset card and `MANIFEST.json` — into
//! a temporary directory that is renamed into place only when complete.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::Context;
use coreb_base::hashing::{sha256_file, sha256_hex};
use coreb_data::problem::{Platform, ProblemId};
use coreb_data::qrels::{QrelsOutput, QrelsStats, Task};
use coreb_data::tables::published::{
    write_code_corpus, write_qrels, write_queries, write_text_corpus,
};
use coreb_data::tables::{ProblemReader, ProblemWriter};
use coreb_eval::gates::GatesConfig;
use coreb_judge::ToolchainVersions;
use coreb_llm::run::WrittenBy;
use coreb_stages::release::{CONFIGS, CardInfo, beir, check_disjoint, dataset_card, license_text};
use coreb_trec::Qrels;
use serde::{Deserialize, Serialize};

use super::context::{StageContext, StageOutput};
use super::control::Controlled;
use super::execute::ExecuteSummary;
use super::fetch::FetchSummary;
use super::stage::{Done, Stage, StageReport, Upstream};
use super::stage_name::StageName;
use super::summary::{Counts, Reasons, StageFacts, Summary};
use crate::artifacts::{TOOL_VERSION, hash_tree, input_key};
use crate::manifest::RunPlan;
use coreb_base::durable;
use coreb_data::releases::{BuildManifest, ReleaseManifest, Replaced};

/// `to` relative to the directory `from` (both absolute and normalised).
pub fn relative_path(from: &Path, to: &Path) -> String {
    let a: Vec<_> = from.components().collect();
    let b: Vec<_> = to.components().collect();
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut rel = PathBuf::new();
    for _ in common..a.len() {
        rel.push("..");
    }
    for c in &b[common..] {
        rel.push(c);
    }
    rel.display().to_string()
}

/// Problem ids of every release before this one (from their `problems.parquet`).
fn earlier_problem_ids(plan: &RunPlan) -> anyhow::Result<Vec<(String, BTreeSet<ProblemId>)>> {
    let mut out = Vec::new();
    for release in super::dedup::earlier_releases(plan)? {
        let ids = ProblemReader::open(&release.path)?
            .map(|p| p.map(|p| p.id))
            .collect::<Result<_, _>>()?;
        out.push((release.version, ids));
    }
    Ok(out)
}

/// `[purpose]`: for a test release, the gate that it shares no problem with any training
/// release it names (refused naming every shared problem; a named release that is itself a
/// test release is refused too); what the MANIFEST records under `purpose`.
pub fn purpose_gate(
    version: &str,
    purpose: &crate::manifest::PurposeFile,
    ids: &BTreeSet<ProblemId>,
) -> anyhow::Result<coreb_data::releases::Purpose> {
    use coreb_data::releases::{ControlOf, Purpose, Role};
    let mut named = Vec::new();
    for dir in &purpose.training {
        let manifest_path = dir.join("MANIFEST.json");
        let manifest = ReleaseManifest::read(&manifest_path)
            .with_context(|| format!("`purpose.training`: `{}`", dir.display()))?;
        if manifest.purpose.as_ref().map(|p| p.role) == Some(Role::Test) {
            anyhow::bail!(
                "`purpose.training`: `{}` is a test release, not a training release",
                dir.display()
            );
        }
        let theirs: BTreeSet<ProblemId> = ProblemReader::open(&dir.join("problems.parquet"))?
            .map(|p| p.map(|p| p.id))
            .collect::<Result<_, _>>()?;
        let shared: Vec<&str> = ids.intersection(&theirs).map(ProblemId::as_str).collect();
        if !shared.is_empty() {
            anyhow::bail!(
                "test release `{version}` shares {} problem(s) with its training release `{}` (`{}`): {}",
                shared.len(),
                manifest.version,
                dir.display(),
                shared.join(", ")
            );
        }
        named.push(ControlOf {
            version: manifest.version,
            manifest_sha256: sha256_file(&manifest_path)?,
        });
    }
    Ok(Purpose {
        role: purpose.role,
        training_releases: named,
    })
}

/// The `release` stage.
pub struct Release;

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
        let recorded = answered()
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

        let answered = answered()
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

/// A human review recorded by `coreb review report --record` for release `version` of
/// `releases_dir`: its card section and the data digest (and MANIFEST sha256) of the release
/// it reviewed.
#[derive(Debug, serde::Serialize)]
struct RecordedReview {
    /// `<releases_dir>/reviews/<version>/`.
    #[serde(skip)]
    dir: PathBuf,
    /// The card's "Human validation" section (`card.md`).
    section: String,
    /// `release_sha256` of `review.json`.
    reviewed_sha256: String,
    /// `data_sha256` of `review.json` (absent in a review recorded before reviews named
    /// their data: then the MANIFEST's digest decides).
    #[serde(skip_serializing_if = "Option::is_none")]
    data_sha256: Option<String>,
}

/// What the release stage reads of a recorded review's `review.json`: which release it is of.
#[derive(Deserialize)]
struct ReviewOf {
    /// The release's version.
    release: Option<String>,
    /// The sha256 of the MANIFEST reviewed.
    release_sha256: Option<String>,
    /// The digest of the data reviewed ([`ReleaseManifest::data_sha256`]).
    data_sha256: Option<String>,
}

/// The review recorded beside the releases (`<releases_dir>/reviews/<version>/card.md` and
/// `review.json`), if any: the `release` stage puts its section into the card again, so that
/// a rebuild of a reviewed release publishes the card the review re-published.
fn recorded_review(
    releases_dir: &Path,
    version: &str,
    review_dir: Option<&Path>,
) -> anyhow::Result<Option<RecordedReview>> {
    let json = match review_dir {
        Some(dir) => dir.join("review.json"),
        None => coreb_eval::gates::review_path(&releases_dir.join(version), version),
    };
    let dir = json.parent().map(Path::to_owned).unwrap_or_default();
    let card = dir.join(coreb_curation::review::report::CARD_SECTION);
    if !card.is_file() {
        return Ok(None);
    }
    let review: ReviewOf = serde_json::from_str(&fs_err::read_to_string(&json)?)
        .with_context(|| format!("reading `{}`", json.display()))?;
    let reviewed_sha256 = review
        .release_sha256
        .with_context(|| format!("`{}`: no `release_sha256`", json.display()))?;
    if review.release.as_deref() != Some(version) {
        anyhow::bail!(
            "`{}` is a review of `{}`, not of `{version}`",
            json.display(),
            review.release.unwrap_or_default()
        );
    }
    Ok(Some(RecordedReview {
        section: fs_err::read_to_string(&card)?,
        reviewed_sha256,
        data_sha256: review.data_sha256,
        dir,
    }))
}

/// The folder of a release that holds its regeneration kit.
pub const KIT_DIR: &str = "regeneration";

/// The kit's files (under [`KIT_DIR`]): the answers, the build manifest, the versions.
pub const KIT_ANSWERS: &str = "answers.jsonl.gz";
/// The kit's `versions.json`.
#[derive(Serialize)]
struct KitVersions<'a> {
    /// coreb's version.
    coreb: &'a str,
    /// Each language's programs and their versions.
    toolchains: &'a ToolchainVersions,
}

/// The build manifest with its paths relative to the kit.
pub const KIT_MANIFEST: &str = "build.toml";
/// coreb's version and the toolchains' versions.
pub const KIT_VERSIONS: &str = "versions.json";

/// The release's regeneration kit, under `regeneration/`: what a stranger needs besides the
/// public sources (which the MANIFEST names by sha256) to rebuild it — exactly the LLM answers
/// the build used (`answers.jsonl.gz`: the response store's entries, one compact JSON object
/// a line sorted by key, the format of `coreb store export`), the build manifest with its
/// paths relative to the kit (`build.toml`), the prompts (`prompts/`), and the versions of
/// coreb and of the toolchains (`versions.json`). Every byte depends on the build's inputs
/// alone, so a rebuild writes the same kit.
fn write_kit(
    cx: &StageContext,
    tmp: &Path,
    llm_stages: &[&StageReport],
    toolchains: &ToolchainVersions,
) -> anyhow::Result<()> {
    use std::io::Write as _;
    let plan = cx.plan();
    let kit = tmp.join(KIT_DIR);
    fs_err::create_dir_all(kit.join("prompts"))?;

    let mut keys = BTreeSet::new();
    for r in llm_stages
        .iter()
        .map(|r| &r.record)
        .filter(|r| r.outputs.contains_key("answer_keys"))
    {
        let path = cx.output(r, "answer_keys")?;
        keys.extend(
            fs_err::read_to_string(&path)?
                .lines()
                .filter(|l| !l.is_empty())
                .map(str::to_owned),
        );
    }
    let store = coreb_llm::ResponseStore::open(&plan.response_store);
    let mut gz = flate2::GzBuilder::new()
        .mtime(0)
        .write(Vec::new(), flate2::Compression::best());
    for key in &keys {
        let mut entry = store.get(key)?.with_context(|| {
            format!(
                "the build used the answer `{key}`, which the response store `{}` does not hold",
                plan.response_store.display()
            )
        })?;
        // What a stage made of the answer is not an input: the rebuild's stages decide again.
        entry.rejected = None;
        gz.write_all(serde_json::to_string(&entry)?.as_bytes())?;
        gz.write_all(b"\n")?;
    }
    fs_err::write(kit.join(KIT_ANSWERS), gz.finish()?)?;

    for stage in coreb_llm::LlmStage::ALL {
        for name in [format!("{stage}.toml"), format!("{stage}.schema.json")] {
            let from = plan.prompts_dir.join(&name);
            if from.is_file() {
                fs_err::copy(&from, kit.join("prompts").join(&name))?;
            }
        }
    }
    fs_err::write(kit.join(KIT_MANIFEST), kit_manifest(&plan.manifest_text)?)?;
    let versions = KitVersions {
        coreb: TOOL_VERSION,
        toolchains,
    };
    // Through a JSON value, whose maps sort their keys: the languages by name.
    fs_err::write(
        kit.join(KIT_VERSIONS),
        serde_json::to_string_pretty(&serde_json::to_value(&versions)?)? + "\n",
    )?;
    Ok(())
}

/// The build manifest with its paths relative to the kit: the response store `store/` (made
/// from `answers.jsonl.gz` with `coreb store import`), the prompts `prompts/`, artifacts in
/// `build/`, the release in `releases/`; a local source is looked for in `sources/` (a source
/// with a URL keeps it).
pub fn kit_manifest(text: &str) -> anyhow::Result<String> {
    let mut table: toml::Table = text.parse().context("the build manifest")?;
    for (key, value) in [
        ("output_dir", "build"),
        ("releases_dir", "releases"),
        ("response_store", "store"),
        ("prompts_dir", "prompts"),
    ] {
        table.insert(key.to_owned(), toml::Value::String(value.to_owned()));
    }
    if let Some(sources) = table.get_mut("sources").and_then(toml::Value::as_array_mut) {
        for source in sources.iter_mut().filter_map(toml::Value::as_table_mut) {
            let Some(url) = source.get("url").and_then(toml::Value::as_str) else {
                continue;
            };
            if !url.contains("://") {
                let file = Path::new(url)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                source.insert(
                    "url".to_owned(),
                    toml::Value::String(format!("sources/{file}")),
                );
            }
        }
    }
    Ok(format!(
        "# The build manifest of this release, its paths relative to this folder (`regeneration/`).\n# Put the source files in `sources/`, `coreb store import store answers.jsonl` (gunzipped),\n# then `coreb build build.toml` rebuilds the release offline.\n{}",
        toml::to_string(&table)?
    ))
}

/// Why a release that is already published with other content is not replaced: the
/// files that would change, and what to do.
fn release_exists(version: &str, dir: &Path, changes: &[String]) -> anyhow::Error {
    let list: Vec<String> = changes.iter().map(|c| format!("  {c}")).collect();
    anyhow::anyhow!(
        "release `{version}` is already published in `{}` with other content: published releases are immutable, and publishing would change {} file(s):\n{}\npublish it under another version, or pass `--replace` to replace it (the new MANIFEST records the sha256 of the MANIFEST it replaces)",
        dir.display(),
        changes.len(),
        list.join("\n")
    )
}

/// What the publish directory holds, against the release about to be published.
enum Published {
    /// Nothing: publish.
    Absent,
    /// This release, byte for byte (its MANIFEST may also record what it replaced): its
    /// MANIFEST text.
    Same(String),
    /// Another release (or other files).
    Other {
        /// One line per file that would be added, removed or changed.
        changes: Vec<String>,
        /// sha256 of its `MANIFEST.json`, if it has one.
        manifest_sha256: Option<String>,
    },
}

/// Compare the directory `dir` with the release whose files are `files` and whose MANIFEST
/// is `manifest`.
fn published_state(
    dir: &Path,
    files: &BTreeMap<String, coreb_data::releases::FileEntry>,
    manifest: &str,
) -> anyhow::Result<Published> {
    if !dir.exists() {
        return Ok(Published::Absent);
    }
    let existing = crate::artifacts::hash_files(dir, |_| true)?;
    let manifest_path = dir.join("MANIFEST.json");
    let (old_text, manifest_sha256) = if manifest_path.is_file() {
        let bytes = fs_err::read(&manifest_path)?;
        (
            String::from_utf8(bytes.clone()).ok(),
            Some(sha256_hex(&bytes)),
        )
    } else {
        (None, None)
    };
    let mut changes = Vec::new();
    for (path, entry) in files {
        match existing.get(path) {
            None => changes.push(format!("added   {path}")),
            Some(e) if e.sha256 != entry.sha256 => changes.push(format!("changed {path}")),
            Some(_) => {}
        }
    }
    for path in existing
        .keys()
        .filter(|p| *p != "MANIFEST.json" && !files.contains_key(*p))
    {
        changes.push(format!("removed {path}"));
    }
    let same_manifest = old_text
        .as_deref()
        .is_some_and(|old| without_replaces(old) == without_replaces(manifest));
    if !same_manifest {
        changes.push(format!(
            "{} MANIFEST.json",
            if manifest_sha256.is_some() {
                "changed"
            } else {
                "added  "
            }
        ));
    }
    Ok(match (changes.is_empty(), old_text) {
        (true, Some(old)) => Published::Same(old),
        _ => Published::Other {
            changes,
            manifest_sha256,
        },
    })
}

/// A MANIFEST without its `replaces` record (`None`: not a MANIFEST).
fn without_replaces(text: &str) -> Option<ReleaseManifest> {
    let mut manifest: ReleaseManifest = serde_json::from_str(text).ok()?;
    manifest.replaces = None;
    Some(manifest)
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

/// The eight Parquet configs and, per task, the BEIR/MTEB folder (corpus, queries, qrels,
/// card), into the release's temporary directory.
fn write_tables(tmp: &Path, version: &str, out: &QrelsOutput) -> anyhow::Result<()> {
    write_code_corpus(&tmp.join("code_corpus.parquet"), &out.code_corpus)?;
    write_text_corpus(&tmp.join("text_corpus.parquet"), &out.text_corpus)?;
    for task in Task::ALL {
        let set = out.tasks.get(&task).cloned().unwrap_or_default();
        write_queries(
            &tmp.join(format!("{}_queries.parquet", task.as_str())),
            &set.queries,
        )?;
        write_qrels(
            &tmp.join(format!("{}_qrels.parquet", task.as_str())),
            &set.qrels,
        )?;
        let files = beir(task, version, out);
        let dir = tmp.join(task.as_str());
        fs_err::create_dir_all(dir.join("qrels"))?;
        fs_err::write(dir.join("corpus.jsonl"), files.corpus)?;
        fs_err::write(dir.join("queries.jsonl"), files.queries)?;
        fs_err::write(dir.join("qrels/test.tsv"), files.qrels)?;
        fs_err::write(dir.join("qrels/test.jsonl"), files.qrels_jsonl)?;
        fs_err::write(dir.join("README.md"), files.card)?;
    }
    Ok(())
}

/// The source problems of the release (`problems.parquet`, for later releases' disjointness
/// checks), taken from the filtered problems; returns their platforms.
fn write_source_problems(
    filtered: &Path,
    tmp: &Path,
    ids: &BTreeSet<ProblemId>,
) -> anyhow::Result<BTreeSet<Platform>> {
    let mut problems = ProblemWriter::create(&tmp.join("problems.parquet"))?;
    let mut platforms = BTreeSet::new();
    for p in ProblemReader::open(filtered)? {
        let p = p?;
        if ids.contains(&p.id) {
            platforms.insert(p.platform);
            problems.write(p)?;
        }
    }
    problems.finish()?;
    Ok(platforms)
}

/// The gates, on the BEIR folders exactly as they will be published (with the graded
/// judgements, whose hard negatives the BEIR qrels leave out), then every validity check of
/// `coreb check` on the release files. On a failure the temporary directory is removed and
/// the error lists every failed gate; else returns BM25's nDCG@10 per task (4 decimals) and
/// the number of checks passed.
fn gate(
    plan: &RunPlan,
    tmp: &Path,
    out: &QrelsOutput,
) -> anyhow::Result<(BTreeMap<String, f64>, usize)> {
    let mut failures = Vec::new();
    let mut bm25 = BTreeMap::new();
    for task in Task::ALL {
        let mut data = coreb_eval::beir::read_dir(&tmp.join(task.as_str()), "test")?;
        let graded = out.tasks.get(&task).map(|t| {
            t.qrels
                .iter()
                .map(|r| {
                    (
                        r.query_id.0.as_str(),
                        r.doc_id.0.as_str(),
                        i64::from(r.relevance.0),
                    )
                })
                .collect::<Vec<_>>()
        });
        data.qrels = Qrels::from_triples(graded.unwrap_or_default())?;
        let ndcg10 = coreb_eval::bm25_ndcg10(&data);
        bm25.insert(task.as_str().to_owned(), (ndcg10 * 1e4).round() / 1e4);
        failures.extend(
            coreb_eval::gates::check_task(&data, ndcg10, &plan.gates)
                .iter()
                .map(ToString::to_string),
        );
    }
    let earlier: Vec<PathBuf> = super::dedup::earlier_releases(plan)?
        .into_iter()
        .filter_map(|r| r.path.parent().map(Path::to_owned))
        .collect();
    let checks = coreb_eval::check::check_release(
        tmp,
        &plan.version,
        &earlier,
        &plan.gates,
        &plan.stages.qrels.composition(),
    )?;
    failures.extend(checks.failures().iter().map(ToString::to_string));
    if !failures.is_empty() {
        fs_err::remove_dir_all(tmp)?;
        let list: Vec<String> = failures.iter().map(|f| format!("  - {f}")).collect();
        anyhow::bail!(
            "release `{}` not published: {} gate(s) failed:\n{}",
            plan.version,
            failures.len(),
            list.join("\n")
        );
    }
    Ok((bm25, checks.results.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_release_sharing_a_problem_with_its_training_release_is_refused() {
        use coreb_data::releases::Role;
        let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("../releases/sample/v202503");
        let purpose = crate::manifest::PurposeFile {
            role: Role::Test,
            training: vec![sample.clone()],
        };
        let ids = |v: &[&str]| -> BTreeSet<ProblemId> {
            v.iter()
                .map(|i| ProblemId::from_raw((*i).to_owned()))
                .collect()
        };
        let e = purpose_gate(
            "v209912",
            &purpose,
            &ids(&["lcb_3704", "lcb_new", "lcb_3709"]),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("shares 2 problem(s) with its training release `v202503`")
                && e.ends_with(": lcb_3704, lcb_3709"),
            "{e}"
        );
        let ok = purpose_gate("v209912", &purpose, &ids(&["lcb_new"])).unwrap();
        assert_eq!(ok.role, Role::Test);
        assert_eq!(ok.training_releases[0].version, "v202503");
        assert_eq!(
            ok.training_releases[0].manifest_sha256,
            sha256_file(&sample.join("MANIFEST.json")).unwrap()
        );
    }

    #[test]
    fn relative_paths() {
        assert_eq!(
            relative_path(
                Path::new("/p/build/sample/releases/v1"),
                Path::new("/p/manifests/sample.toml")
            ),
            "../../../../manifests/sample.toml"
        );
        assert_eq!(
            relative_path(Path::new("/p/releases/v1"), Path::new("/p/releases/v1/x")),
            "x"
        );
    }
}
