//! The build a published release was made from, found again for `coreb audit` (the
//! [`ReleaseBuild`] its rewrite and model audits read): `--build-dir`, else the `output_dir`
//! of the build manifest embedded in the release's `MANIFEST.json` ([`EmbeddedManifest`]), whose `rewrite` artifact
//! holds the rewritten problems with their tests (and the other stages' artifacts the review
//! page reads, [`ReleaseBuild::artifact`]). Does NOT rebuild a missing artifact: the
//! error says which file is missing and how to make it.
//!
//! A build directory is read only when it is the build of this release: where it holds a
//! `release` record, the MANIFEST that record published must be the release's (same
//! sha256); and its `rewrite` record must carry the parameters, prompts and models the
//! MANIFEST records for `rewrite`. A build made elsewhere (`--output-dir`), or another build
//! in the directory the manifest names, is refused with both sides named, never read.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use coreb_curation::audit::ReleaseBuild;
use coreb_data::rewritten::RewrittenProblem;
use coreb_judge::ExecuteConfig;

use super::rewrite::RewriteSummary;
use super::summary::{StageFacts, Summary};
use crate::artifacts::{StageRecord, read_record};
use crate::manifest::{EmbeddedManifest, ManifestFile, lexical_join};
use coreb_data::releases::ReleaseManifest;

/// Where the build a release was made from keeps its artifacts, found through the build
/// manifest embedded in the release's `MANIFEST.json`.
pub(crate) struct BuildLookup {
    /// The release's `MANIFEST.json`.
    pub(crate) manifest: ReleaseManifest,
    /// The embedded build manifest, parsed.
    pub(crate) build: ManifestFile,
    /// Where the build manifest was when the release was built.
    pub(crate) manifest_path: PathBuf,
    /// The directory the build manifest's relative paths start from.
    manifest_dir: PathBuf,
    /// The build directory (`output_dir`, or `--build-dir`).
    pub(crate) build_dir: PathBuf,
    /// Whether `build_dir` was given (`--build-dir`) rather than found through the manifest.
    pub(crate) given: bool,
    /// sha256 of the release's `MANIFEST.json`.
    pub(crate) manifest_sha256: String,
    /// The release's `MANIFEST.json`.
    pub(crate) manifest_file: PathBuf,
    /// What the MANIFEST records of `generate`.
    generate: Option<StageFacts>,
}

impl BuildLookup {
    /// Read `release/MANIFEST.json` and resolve the build directory (`build_dir` wins).
    pub(crate) fn open(release: &Path, build_dir: Option<&Path>) -> anyhow::Result<Self> {
        let EmbeddedManifest { manifest_file, release: manifest, file: build, path: manifest_path } =
            EmbeddedManifest::read(release)?;
        let manifest_dir =
            manifest_path.parent().map_or_else(|| manifest_path.clone(), Path::to_owned);
        let given = build_dir.is_some();
        let build_dir = match build_dir {
            Some(d) => std::path::absolute(d).with_context(|| format!("`{}`", d.display()))?,
            None => lexical_join(&manifest_dir, &build.output_dir),
        };
        let manifest_sha256 = coreb_base::hashing::sha256_file(&manifest_file)
            .with_context(|| format!("hashing `{}`", manifest_file.display()))?;
        let generate =
            manifest.stages.get("generate").and_then(|g| serde_json::from_value(g.clone()).ok());
        Ok(BuildLookup {
            manifest,
            build,
            manifest_path,
            manifest_dir,
            build_dir,
            given,
            manifest_sha256,
            manifest_file,
            generate,
        })
    }

    /// Refuse to run the judge of a build manifest that sets the sandbox's settings, unless
    /// `trusted` (`--trust-release-sandbox`).
    pub(crate) fn check_sandbox(&self, trusted: bool) -> anyhow::Result<()> {
        crate::manifest::check_release_sandbox(
            &self.manifest.build_manifest.text,
            &self.manifest_file,
            trusted,
        )
    }

    /// Where the build directory came from, for messages.
    fn origin(&self) -> String {
        if self.given {
            format!("the build directory `{}` (`--build-dir`)", self.build_dir.display())
        } else {
            format!(
                "the build directory `{}` (the `output_dir` of the release's build manifest `{}`)",
                self.build_dir.display(),
                self.manifest_path.display()
            )
        }
    }

    /// Refuse a build directory that did not make this release: its `release` record (when
    /// the build went that far) published another MANIFEST, or its `rewrite` record (`rewrite`)
    /// has other parameters, prompts or models than the MANIFEST records for `rewrite`.
    fn check_same_build(&self, rewrite: &StageRecord, rewrite_record: &Path) -> anyhow::Result<()> {
        let hint = "pass `--build-dir` with the directory this release was built in (`coreb build … --output-dir`)";
        let release_record = self.build_dir.join("artifacts/release/record.json");
        if release_record.exists() {
            let record = read_record(&release_record)?;
            let published = record.outputs.get("manifest").map(|m| m.sha256.as_str()).unwrap_or("");
            if published != self.manifest_sha256 {
                bail!(
                    "{} holds another build: its release record `{}` published a MANIFEST with sha256 `{published}`, but `{}` has sha256 `{}`; {hint}",
                    self.origin(),
                    release_record.display(),
                    self.manifest_file.display(),
                    self.manifest_sha256
                );
            }
        }
        let facts = self.manifest.stages.get("rewrite").and_then(|f| f.as_object());
        let Some(facts) = facts else {
            bail!(
                "`{}`: records nothing of the `rewrite` stage, so no build can be matched to it",
                self.manifest_file.display()
            );
        };
        // What the build's rewrite record would give the MANIFEST, against what it gave.
        let summary: RewriteSummary = serde_json::from_value(rewrite.summary.clone())
            .with_context(|| format!("`{}`: not a `rewrite` record", rewrite_record.display()))?;
        let built = serde_json::to_value(summary.facts().unwrap_or_default())?;
        for (key, value) in facts {
            let built = built.get(key).unwrap_or(&serde_json::Value::Null);
            if built != value {
                bail!(
                    "{} holds another build: its rewrite record `{}` has `{key}` = {built}, but `{}` records {value} for `rewrite`; {hint}",
                    self.origin(),
                    rewrite_record.display(),
                    self.manifest_file.display()
                );
            }
        }
        Ok(())
    }
}

impl ReleaseBuild for BuildLookup {
    fn build_dir(&self) -> &Path {
        &self.build_dir
    }

    fn rewritten(&self) -> anyhow::Result<Vec<RewrittenProblem>> {
        Ok(coreb_base::jsonl::read(&self.artifact("rewrite", "rewritten")?)?)
    }

    fn artifact(&self, stage: &str, output: &str) -> anyhow::Result<PathBuf> {
        let dir = self.build_dir.join("artifacts").join(stage);
        let record_path = dir.join("record.json");
        if !record_path.exists() {
            // Suggest building only with a manifest that is there: a release moved or
            // downloaded names one of another machine, or of a directory since moved.
            let remedy = if self.manifest_path.is_file() && !self.given {
                format!(
                    "run `coreb build {} --until {stage}`, or pass `--build-dir` with the directory the release was built in",
                    crate::manifest::shell_word(&self.manifest_path.to_string_lossy())
                )
            } else if self.given {
                "pass `--build-dir` with the directory the release was built in".to_owned()
            } else {
                format!(
                    "`{}` is not there (the release was moved or downloaded, and builds nothing here): pass `--build-dir` with the directory the release was built in",
                    self.manifest_path.display()
                )
            };
            bail!(
                "the build's {stage} artifact is missing: `{}` does not exist ({}); {remedy}",
                record_path.display(),
                self.origin(),
            );
        }
        let record = read_record(&record_path)?;
        // Only the build of this release is read (its rewrite record decides).
        if stage == "rewrite" {
            self.check_same_build(&record, &record_path)?;
        } else {
            let rewrite_record = self.build_dir.join("artifacts/rewrite/record.json");
            self.check_same_build(&read_record(&rewrite_record)?, &rewrite_record)?;
        }
        let Some(entry) = record.outputs.get(output) else {
            bail!("`{}`: no `{output}` output", record_path.display());
        };
        let path = dir.join(&entry.file);
        let sha256 = coreb_base::hashing::sha256_file(&path).with_context(|| {
            format!("the build's {stage} artifact: hashing `{}`", path.display())
        })?;
        if sha256 != entry.sha256 {
            bail!(
                "`{}`: sha256 `{sha256}` differs from the `{}` its record `{}` holds; rebuild the stage",
                path.display(),
                entry.sha256,
                record_path.display()
            );
        }
        Ok(path)
    }

    fn prompts_dir(&self) -> PathBuf {
        lexical_join(
            &self.manifest_dir,
            self.build.prompts_dir.as_deref().unwrap_or(Path::new("../prompts")),
        )
    }

    fn generate_prompt_sha256(&self) -> Option<&str> {
        self.generate.as_ref()?.prompts.as_ref()?.get("generate").map(String::as_str)
    }

    fn execute(&self) -> &ExecuteConfig {
        &self.build.stages.execute
    }
}
