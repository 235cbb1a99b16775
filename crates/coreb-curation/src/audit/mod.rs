//! Contamination audits of a published release (`coreb audit <release> <audit>`).
//!
//! - [`overlap`]: every item of a JSONL/Parquet corpus is checked against the release's
//!   documents (problem statements, `text_corpus` texts, `code_corpus` codes): exact hash hits
//!   (sha256 of the normalised text) and long word n-gram overlap; worst offenders listed.
//! - [`rewrite`]: how far each rewritten statement (`text_corpus` rows of kind `full`) moved
//!   from its source statement (`problems.parquet`): n-gram containment and Jaccard; with the
//!   tests asked for, also how the tests were carried over, read from the build's `rewrite`
//!   artifact.
//! - [`model`]: pass@1 of a model endpoint on the original problems (with their tests) against
//!   the rewritten ones (with the rewritten tests), per contest month: the drop is CoREB's
//!   contamination signal. Solutions come from the `generate` stage through the LLM gateway
//!   and a response store, verdicts from the judge (`coreb_judge`) in the sandbox; the binary
//!   runs both (`coreb::ops::model_audit`), this module holds the audit's own part.
//!
//! The release alone holds the source problems and their tests; the rewritten problems with
//! their tests live in the build's artifact store, which the engine finds (through the build
//! manifest embedded in `MANIFEST.json`, or a build directory given) and hands in as a
//! [`ReleaseBuild`]. Does NOT rebuild a missing artifact, nor parse a manifest itself.

pub mod model;
pub mod overlap;
pub mod rewrite;

use std::path::{Path, PathBuf};

use anyhow::bail;
use coreb_base::durable;
use coreb_data::rewritten::RewrittenProblem;
use coreb_judge::ExecuteConfig;

/// The build a release was made from, as the audits that need its artifacts read it. The
/// engine implements it (it knows the manifests and the artifact store).
pub trait ReleaseBuild {
    /// The build directory (its `artifacts/` hold the stage outputs).
    fn build_dir(&self) -> &Path;
    /// The rewritten problems of the build's `rewrite` artifact, checked against its record.
    fn rewritten(&self) -> anyhow::Result<Vec<RewrittenProblem>>;
    /// The file of output `output` of the build's `stage` artifact, checked against its
    /// record (an error naming the missing file and how to make it).
    fn artifact(&self, stage: &str, output: &str) -> anyhow::Result<PathBuf>;
    /// The build's prompt templates (its manifest's `prompts_dir`).
    fn prompts_dir(&self) -> PathBuf;
    /// sha256 of the `generate` prompt the release was built with, when its manifest says.
    fn generate_prompt_sha256(&self) -> Option<&str>;
    /// The build's `[stages.execute]` configuration: the judge's settings, which the model
    /// audit judges with.
    fn execute(&self) -> &ExecuteConfig;
}

/// Refuse a directory that is not a release (no `MANIFEST.json`).
pub fn check_release(release: &Path) -> anyhow::Result<()> {
    if !release.join("MANIFEST.json").exists() {
        bail!("`{}`: not a release directory (no `MANIFEST.json`)", release.display());
    }
    Ok(())
}

/// The report of one audit.
#[derive(Debug, Clone)]
pub enum Report {
    /// The overlap audit.
    Overlap(overlap::OverlapReport),
    /// The rewrite audit.
    Rewrite(rewrite::RewriteReport),
    /// The model audit.
    Model(model::ModelReport),
}

impl Report {
    /// The audit's name: `overlap`, `rewrite` or `model` (the stem of its files).
    pub fn name(&self) -> &'static str {
        match self {
            Report::Overlap(_) => "overlap",
            Report::Rewrite(_) => "rewrite",
            Report::Model(_) => "model",
        }
    }

    /// The report as JSON.
    pub fn to_json(&self) -> serde_json::Result<serde_json::Value> {
        match self {
            Report::Overlap(r) => serde_json::to_value(r),
            Report::Rewrite(r) => serde_json::to_value(r),
            Report::Model(r) => serde_json::to_value(r),
        }
    }

    /// The report in Markdown.
    pub fn markdown(&self) -> String {
        match self {
            Report::Overlap(r) => overlap::markdown(r),
            Report::Rewrite(r) => rewrite::markdown(r),
            Report::Model(r) => model::markdown(r),
        }
    }
}

/// Write `<name>.json` (pretty) and `<name>.md` into `dir`; returns their paths.
pub fn write(
    dir: &Path,
    name: &str,
    json: &serde_json::Value,
    markdown: &str,
) -> anyhow::Result<(PathBuf, PathBuf)> {
    let (json_path, md_path) = (dir.join(format!("{name}.json")), dir.join(format!("{name}.md")));
    durable::write(&json_path, &serde_json::to_vec_pretty(json)?)?;
    durable::write(&md_path, markdown.as_bytes())?;
    Ok((json_path, md_path))
}

/// The contest month (`YYYY-MM`) of a contest date.
fn month(contest_date: &str) -> String {
    contest_date.chars().take(7).collect()
}
