//! The build a published release was made from, found again for `coreb audit` (the
//! [`ReleaseBuild`] its rewrite and model audits read): the build manifest embedded in the
//! release's `MANIFEST.json` names the build directory, whose `rewrite` artifact holds the
//! rewritten problems with their tests (and the other stages' artifacts the review page
//! reads, [`ReleaseBuild::artifact`]). Does NOT rebuild a missing artifact: the error says
//! which file is missing and how to make it.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use coreb_curation::audit::ReleaseBuild;
use coreb_data::rewritten::RewrittenProblem;
use stages::execute::ExecuteConfig;

use crate::artifacts::read_record;
use crate::manifest::{ManifestFile, lexical_join};
use coreb_data::releases::ReleaseManifest;

/// Where the build a release was made from keeps its artifacts, found through the build
/// manifest embedded in the release's `MANIFEST.json`.
pub struct BuildLookup {
    /// The release's `MANIFEST.json`.
    pub manifest: ReleaseManifest,
    /// The embedded build manifest, parsed.
    pub build: ManifestFile,
    /// Where the build manifest was when the release was built.
    pub manifest_path: PathBuf,
    /// The directory the build manifest's relative paths start from.
    pub manifest_dir: PathBuf,
    /// The build directory (`output_dir`, or `--build-dir`).
    pub build_dir: PathBuf,
}

impl BuildLookup {
    /// Read `release/MANIFEST.json` and resolve the build directory (`build_dir` wins).
    pub fn open(release: &Path, build_dir: Option<&Path>) -> anyhow::Result<Self> {
        let path = release.join("MANIFEST.json");
        let manifest = ReleaseManifest::read(&path)?;
        let build: ManifestFile =
            toml::from_str(&manifest.build_manifest.text).map_err(|e| anyhow::anyhow!("`{}`: `build_manifest.text`: {}", path.display(), e.to_string().trim_end()))?;
        let release_abs = std::path::absolute(release).with_context(|| format!("`{}`", release.display()))?;
        let manifest_path = lexical_join(&release_abs, Path::new(&manifest.build_manifest.path));
        let manifest_dir = manifest_path.parent().map_or_else(|| release_abs.clone(), Path::to_owned);
        let build_dir = match build_dir {
            Some(d) => std::path::absolute(d).with_context(|| format!("`{}`", d.display()))?,
            None => lexical_join(&manifest_dir, &build.output_dir),
        };
        Ok(BuildLookup { manifest, build, manifest_path, manifest_dir, build_dir })
    }
}

impl ReleaseBuild for BuildLookup {
    fn build_dir(&self) -> &Path {
        &self.build_dir
    }

    fn rewritten(&self) -> anyhow::Result<Vec<RewrittenProblem>> {
        crate::engine::llm::read_jsonl(&self.artifact("rewrite", "rewritten")?)
    }

    fn artifact(&self, stage: &str, output: &str) -> anyhow::Result<PathBuf> {
        let dir = self.build_dir.join("artifacts").join(stage);
        let record_path = dir.join("record.json");
        if !record_path.exists() {
            bail!(
                "the build's {stage} artifact is missing: `{}` does not exist (the build directory `{}` is the `output_dir` of the release's build manifest `{}`, or `--build-dir`); run `coreb build {} --until {stage}`, or pass `--build-dir` with the directory the release was built in",
                record_path.display(),
                self.build_dir.display(),
                self.manifest_path.display(),
                self.manifest_path.display()
            );
        }
        let record = read_record(&record_path)?;
        let Some(entry) = record.outputs.get(output) else {
            bail!("`{}`: no `{output}` output", record_path.display());
        };
        let path = dir.join(&entry.file);
        let sha256 = coreb_base::hashing::sha256_file(&path).with_context(|| format!("the build's {stage} artifact: hashing `{}`", path.display()))?;
        if sha256 != entry.sha256 {
            bail!("`{}`: sha256 `{sha256}` differs from the `{}` its record `{}` holds; rebuild the stage", path.display(), entry.sha256, record_path.display());
        }
        Ok(path)
    }

    fn prompts_dir(&self) -> PathBuf {
        lexical_join(&self.manifest_dir, self.build.prompts_dir.as_deref().unwrap_or(Path::new("../prompts")))
    }

    fn generate_prompt_sha256(&self) -> Option<&str> {
        self.manifest.stages.get("generate").and_then(|g| g["prompts"]["generate"].as_str())
    }

    fn execute(&self) -> &ExecuteConfig {
        &self.build.stages.execute
    }
}
