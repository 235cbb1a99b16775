//! `coreb audit <release> <audit>`: contamination audits of a published release.
//!
//! - `overlap <corpus>` ([`overlap`]): every item of a JSONL/Parquet corpus is checked against
//!   the release's documents (problem statements, `text_corpus` texts, `code_corpus` codes):
//!   exact hash hits (sha256 of the normalised text) and long word n-gram overlap; worst
//!   offenders listed.
//! - `rewrite` ([`rewrite`]): how far each rewritten statement (`text_corpus` rows of kind
//!   `full`) moved from its source statement (`problems.parquet`): n-gram containment and
//!   Jaccard; with `--tests` (or `--build-dir`), also how the tests were carried over, read
//!   from the build's `rewrite` artifact.
//! - `model` ([`model`]): pass@1 of a model endpoint on the original problems (with their
//!   tests) against the rewritten ones (with the rewritten tests), per contest month: the
//!   drop is CoREB's contamination signal. Solutions come from the `generate` stage through
//!   the LLM gateway and a response store, verdicts from the `execute` stage's sandbox.
//!
//! The release alone holds the source problems and their tests; the rewritten problems with
//! their tests live in the build's artifact store, found through the build manifest embedded
//! in `MANIFEST.json` ([`BuildLookup`]) or `--build-dir`. Does NOT rebuild a missing
//! artifact: the error says which file is missing and how to make it.

pub(crate) mod model;
mod overlap;
mod rewrite;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use coreb_data::rewritten::RewrittenProblem;

use crate::artifacts::read_record;
use crate::cli::{AuditArgs, AuditKind};
use crate::engine::ReleaseManifest;
use crate::manifest::{ManifestFile, lexical_join};
use coreb_base::durable;
use coreb_base::printer::Printer;

/// Run `coreb audit`.
pub fn audit(args: AuditArgs) -> anyhow::Result<ExitCode> {
    let AuditArgs { release, audit, out, json } = args;
    let printer = Printer::new(json);
    if !release.join("MANIFEST.json").exists() {
        bail!("`{}`: not a release directory (no `MANIFEST.json`)", release.display());
    }
    let mut code = ExitCode::SUCCESS;
    let (name, value, md) = match audit {
        AuditKind::Overlap(a) => {
            let r = overlap::overlap(&release, &a)?;
            let md = overlap::markdown(&r);
            ("overlap", serde_json::to_value(&r)?, md)
        }
        AuditKind::Rewrite(a) => {
            let r = rewrite::rewrite(&release, &a, &printer)?;
            let md = rewrite::markdown(&r);
            ("rewrite", serde_json::to_value(&r)?, md)
        }
        AuditKind::Model(a) => {
            let r = model::model(&release, a, &printer)?;
            if r.unanswered > 0 {
                // The report is still written; the exit code tells scripts it is incomplete.
                printer.status(format!(
                    "warning: {} samples got no answer from the endpoint (see `unanswered`); run again to ask for them (stored answers are not asked again)",
                    r.unanswered
                ));
                code = ExitCode::from(1);
            }
            let md = model::markdown(&r);
            ("model", serde_json::to_value(&r)?, md)
        }
    };
    if let Some(dir) = out {
        durable::write(&dir.join(format!("{name}.json")), &serde_json::to_vec_pretty(&value)?)?;
        durable::write(&dir.join(format!("{name}.md")), md.as_bytes())?;
        printer.status(format!("wrote `{}` and `{}`", dir.join(format!("{name}.json")).display(), dir.join(format!("{name}.md")).display()));
    }
    if json {
        printer.json_line(&value);
    } else {
        printer.out(md);
    }
    Ok(code)
}

/// The contest month (`YYYY-MM`) of a contest date.
fn month(contest_date: &str) -> String {
    contest_date.chars().take(7).collect()
}

/// Where the build a release was made from keeps its artifacts, found through the build
/// manifest embedded in the release's `MANIFEST.json`.
pub(crate) struct BuildLookup {
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
        let manifest: ReleaseManifest = serde_json::from_str(&fs_err::read_to_string(&path)?).with_context(|| format!("`{}`: not a release manifest", path.display()))?;
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

    /// The rewritten problems of the build's `rewrite` artifact, checked against its record.
    pub fn rewritten(&self) -> anyhow::Result<Vec<RewrittenProblem>> {
        let dir = self.build_dir.join("artifacts/rewrite");
        let record_path = dir.join("record.json");
        if !record_path.exists() {
            bail!(
                "the build's rewrite artifact is missing: `{}` does not exist (the build directory `{}` is the `output_dir` of the release's build manifest `{}`, or `--build-dir`); run `coreb build {} --until rewrite`, or pass `--build-dir` with the directory the release was built in",
                record_path.display(),
                self.build_dir.display(),
                self.manifest_path.display(),
                self.manifest_path.display()
            );
        }
        let record = read_record(&record_path)?;
        let Some(output) = record.outputs.get("rewritten") else {
            bail!("`{}`: no `rewritten` output", record_path.display());
        };
        let path = dir.join(&output.file);
        let sha256 = coreb_base::hashing::sha256_file(&path).with_context(|| format!("the build's rewrite artifact: hashing `{}`", path.display()))?;
        if sha256 != output.sha256 {
            bail!("`{}`: sha256 `{sha256}` differs from the `{}` its record `{}` holds; rebuild the stage", path.display(), output.sha256, record_path.display());
        }
        crate::engine::llm::read_jsonl(&path)
    }
}
