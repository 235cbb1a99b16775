//! Making and publishing a release, step by step: the `release` stage keys it ([`Keyed`]),
//! hands over what the build made ([`Built`]), and [`make`] runs the steps — gate the
//! problems, write the tables, the card, the kit, run the gates, check the control, write the
//! MANIFEST, show the recorded review, publish — into a temporary directory that is renamed
//! into place only when complete.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::Context;
use coreb_base::durable;
use coreb_base::hashing::sha256_hex;
use coreb_data::problem::{Platform, ProblemId};
use coreb_data::qrels::{QrelsOutput, QrelsStats};
use coreb_data::releases::{
    BuildManifest, FileEntry, Purpose, ReleaseManifest, Replaced, SourcePin,
};
use coreb_eval::gates::GatesConfig;
use coreb_judge::ToolchainVersions;
use coreb_llm::run::WrittenBy;
use coreb_stages::release::{CONFIGS, CardInfo, check_disjoint, dataset_card, license_text};
use serde::Serialize;

use super::control::{self, Controlled};
use super::facts::StageFacts;
use super::gates::{earlier_problem_ids, gate, purpose_gate};
use super::kit::write_kit;
use super::layout::{write_source_problems, write_tables};
use super::publish::{Published, published_state, release_exists};
use super::review::recorded::RecordedReview;
use crate::artifacts::{TOOL_VERSION, hash_tree};
use crate::manifest::RunPlan;
use crate::printer::Printer;

/// What the release's key was made of that making it needs again.
pub(crate) struct Keyed {
    /// The build manifest's path relative to where the release belongs.
    pub(crate) manifest_rel: String,
    /// What the MANIFEST records of each stage, by stage name.
    pub(crate) stages: BTreeMap<String, StageFacts>,
    /// Every model named.
    pub(crate) models: BTreeSet<String>,
    /// The release this one is the control of (`[control]`).
    pub(crate) controlled: Option<Controlled>,
    /// The human review recorded beside the releases.
    pub(crate) review: Option<RecordedReview>,
}

/// What the build made that the release publishes.
pub(crate) struct Built<'a> {
    /// The composition: corpora, queries and judgements of every task.
    pub(crate) qrels: QrelsOutput,
    /// The filtered problems table (the source problems are taken from it).
    pub(crate) filtered: PathBuf,
    /// The `answer_keys` files of the LLM stages: the answers the kit carries.
    pub(crate) answer_keys: Vec<PathBuf>,
    /// Who wrote the LLM answers, summed over the LLM stages.
    pub(crate) written_by: WrittenBy,
    /// The judge's toolchains and their versions.
    pub(crate) toolchains: &'a ToolchainVersions,
    /// The sources' pins.
    pub(crate) sources: &'a [SourcePin],
    /// The problems `qrels` left out for answers that can differ (the card lists them).
    pub(crate) ambiguous: Vec<coreb_stages::ambiguity::Ambiguity>,
}

/// What was published.
pub(crate) struct Made {
    /// The MANIFEST's text.
    pub(crate) manifest: String,
    /// How many problems the release holds.
    pub(crate) problems: usize,
    /// BM25's nDCG@10 per task (4 decimals).
    pub(crate) bm25_ndcg10: BTreeMap<String, f64>,
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

/// Make release `plan.version` from what the build made and publish it at `plan.publish_dir`
/// (unless the same release is there already; another one is replaced only with
/// `plan.replace`).
pub(crate) fn make(
    plan: &RunPlan,
    keyed: Keyed,
    built: &Built<'_>,
    printer: &Printer,
) -> anyhow::Result<Made> {
    let ids = problem_ids(&built.qrels);
    let purpose = gate_problems(plan, &ids)?;
    let tmp = staging_dir(plan)?;
    write_tables(&tmp, &plan.version, &built.qrels)?;
    let platforms = write_source_problems(&built.filtered, &tmp, &ids)?;
    write_card(plan, &tmp, &keyed, built, ids.len(), platforms)?;
    write_kit(plan, &tmp, &built.answer_keys, built.toolchains)?;
    let (bm25, checks_passed) = gate(plan, &tmp, &built.qrels)?;
    check_control(&tmp, keyed.controlled.as_ref(), printer)?;
    let counts = ReleaseCounts {
        llm_answers_written_by: built.written_by,
        qrels: &built.qrels.stats,
        bm25_ndcg10: &bm25,
        gates: &plan.gates,
        checks_passed,
    };
    let mut manifest = release_manifest(plan, &tmp, &keyed, built, &counts, purpose)?;
    let text = show_review(plan, &tmp, &mut manifest, keyed.review.as_ref(), printer)?;
    let text = publish(plan, &tmp, manifest, text)?;
    Ok(Made { manifest: text, problems: ids.len(), bm25_ndcg10: bm25 })
}

/// The source problems of the release's queries.
fn problem_ids(qrels: &QrelsOutput) -> BTreeSet<ProblemId> {
    qrels
        .tasks
        .values()
        .flat_map(|t| t.queries.iter().map(|q| q.source_problem_id.clone()))
        .collect()
}

/// The gates on the problems, before anything is written: none of an earlier release, and for
/// a test release none of its training releases (what the MANIFEST records under `purpose`).
fn gate_problems(plan: &RunPlan, ids: &BTreeSet<ProblemId>) -> anyhow::Result<Option<Purpose>> {
    check_disjoint(ids, &earlier_problem_ids(plan)?)?;
    plan.purpose.as_ref().map(|p| purpose_gate(&plan.version, p, ids)).transpose()
}

/// The release's temporary directory beside the publish directory (`.<version>.tmp`), empty.
fn staging_dir(plan: &RunPlan) -> anyhow::Result<PathBuf> {
    let parent = plan.publish_dir.parent().context("the publish directory has no parent")?;
    fs_err::create_dir_all(parent)?;
    let tmp = parent.join(format!(".{}.tmp", plan.version));
    if tmp.exists() {
        fs_err::remove_dir_all(&tmp)?;
    }
    fs_err::create_dir_all(&tmp)?;
    Ok(tmp)
}

/// The dataset card (`README.md`, with the problems left out for answers that can differ and
/// the control section of a control release) and the `LICENSE`.
fn write_card(
    plan: &RunPlan,
    tmp: &Path,
    keyed: &Keyed,
    built: &Built<'_>,
    problems: usize,
    platforms: BTreeSet<Platform>,
) -> anyhow::Result<()> {
    let info = CardInfo {
        version: &plan.version,
        window: &plan.window,
        models: keyed.models.iter().cloned().collect(),
        problems,
        tool_version: TOOL_VERSION,
        platforms: platforms.into_iter().collect(),
        written_by: built.written_by,
        config_bytes: CONFIGS
            .into_iter()
            .map(|c| Ok((c, fs_err::metadata(tmp.join(format!("{c}.parquet")))?.len())))
            .collect::<std::io::Result<_>>()?,
    };
    let mut card = dataset_card(&info, &built.qrels);
    card.push_str(&coreb_stages::ambiguity::card_section(&built.ambiguous));
    if let Some(c) = &keyed.controlled {
        card.push_str(&control::card_section(&c.of));
    }
    fs_err::write(tmp.join("README.md"), card)?;
    fs_err::write(tmp.join("LICENSE"), license_text(&info))?;
    Ok(())
}

/// A control release's queries map one to one onto those of the release it controls (else
/// the temporary directory is removed and the error says why).
fn check_control(
    tmp: &Path,
    controlled: Option<&Controlled>,
    printer: &Printer,
) -> anyhow::Result<()> {
    let Some(c) = controlled else {
        return Ok(());
    };
    let (paired, problems) = control::check_queries(tmp, c).inspect_err(|_| {
        let _ = fs_err::remove_dir_all(tmp);
    })?;
    printer.status(format!("   release: the control of `{}`: {paired} queries on {problems} problems map one to one onto the release's", c.of.version));
    Ok(())
}

/// The MANIFEST of the files in `tmp`.
fn release_manifest(
    plan: &RunPlan,
    tmp: &Path,
    keyed: &Keyed,
    built: &Built<'_>,
    counts: &ReleaseCounts<'_>,
    purpose: Option<Purpose>,
) -> anyhow::Result<ReleaseManifest> {
    Ok(ReleaseManifest {
        format: "coreb-release-manifest/1".into(),
        version: plan.version.clone(),
        tool_version: TOOL_VERSION.into(),
        window: plan.window.clone(),
        build_manifest: BuildManifest {
            path: keyed.manifest_rel.clone(),
            sha256: sha256_hex(plan.manifest_text.as_bytes()),
            text: plan.manifest_text.clone(),
        },
        sources: built.sources.to_vec(),
        stages: keyed
            .stages
            .iter()
            .map(|(stage, facts)| Ok((stage.clone(), serde_json::to_value(facts)?)))
            .collect::<serde_json::Result<_>>()?,
        seeds: BTreeMap::from([
            ("dedup".to_owned(), plan.stages.dedup.seed),
            ("qrels".to_owned(), plan.stages.qrels.seed),
        ]),
        counts: serde_json::to_value(counts)?,
        files: hash_tree(tmp)?,
        replaces: None,
        controls: keyed.controlled.as_ref().map(|c| c.of.clone()),
        purpose,
    })
}

/// The MANIFEST's text, after putting the recorded human review's section into the card when
/// the review is of the data this build makes.
fn show_review(
    plan: &RunPlan,
    tmp: &Path,
    manifest: &mut ReleaseManifest,
    review: Option<&RecordedReview>,
    printer: &Printer,
) -> anyhow::Result<String> {
    let text = serde_json::to_string_pretty(&*manifest)? + "\n";
    let Some(r) = review else {
        return Ok(text);
    };
    // The card as `coreb review report --record` re-published it: only when the review is
    // of the data this build makes (whatever machine made them; a review recorded
    // before reviews named their data: of this build's MANIFEST before the card changed).
    let of_this_release = match &r.data_sha256 {
        Some(data) => *data == manifest.data_sha256(),
        None => r.reviewed_sha256 == sha256_hex(text.as_bytes()),
    };
    if !of_this_release {
        printer.status(format!(
            "   release: the human review recorded in `{}` is of another build of `{}` ({}): the card does not show it",
            r.dir.display(),
            plan.version,
            match &r.data_sha256 {
                Some(data) => format!("data sha256 `{data}`, this build's `{}`", manifest.data_sha256()),
                None => format!("MANIFEST sha256 `{}`", r.reviewed_sha256),
            }
        ));
        return Ok(text);
    }
    let card = coreb_data::releases::with_human_validation(
        &fs_err::read_to_string(tmp.join("README.md"))?,
        &r.section,
    );
    fs_err::write(tmp.join("README.md"), &card)?;
    manifest.files.insert(
        "README.md".into(),
        FileEntry { sha256: sha256_hex(card.as_bytes()), bytes: card.len() as u64 },
    );
    printer.status(format!(
        "   release: the card shows the human review recorded in `{}`",
        r.dir.display()
    ));
    Ok(serde_json::to_string_pretty(&*manifest)? + "\n")
}

/// Publish `tmp` at `plan.publish_dir` with the MANIFEST `text`: renamed into place when
/// nothing is there, dropped when the same release is (whose MANIFEST text is returned), and
/// refused when another release is, unless `plan.replace` (then the MANIFEST records the one
/// it replaces). Returns the published MANIFEST's text.
fn publish(
    plan: &RunPlan,
    tmp: &Path,
    mut manifest: ReleaseManifest,
    text: String,
) -> anyhow::Result<String> {
    let (publish, text) = match published_state(&plan.publish_dir, &manifest.files, &text)? {
        Published::Absent => (true, text),
        // The same release again: nothing to publish (a replaced one keeps its record).
        Published::Same(existing) => (false, existing),
        Published::Other { changes, manifest_sha256 } => {
            if !plan.replace {
                fs_err::remove_dir_all(tmp)?;
                return Err(release_exists(&plan.version, &plan.publish_dir, &changes));
            }
            manifest.replaces = Some(Replaced { manifest_sha256 });
            (true, serde_json::to_string_pretty(&manifest)? + "\n")
        }
    };
    if publish {
        durable::write(&tmp.join("MANIFEST.json"), text.as_bytes())?;
        // Every published file is on disk before the release appears under its name.
        durable::replace_dir(tmp, &plan.publish_dir)?;
    } else {
        fs_err::remove_dir_all(tmp)?;
    }
    Ok(text)
}
