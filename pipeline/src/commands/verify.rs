//! `coreb verify <release>`: check the published files against the release's MANIFEST, then
//! rebuild the release from the MANIFEST (build manifest, pinned sources, response store in
//! replay mode) into a temporary directory and compare every checksum.

use std::collections::BTreeMap;
use std::process::ExitCode;

use anyhow::{Context, bail};

use crate::cli::{StageName, VerifyArgs};
use crate::engine::{Engine, FileEntry, ReleaseManifest, hash_tree};
use crate::manifest::{ManifestFile, RunPlan, lexical_join};
use crate::printer::Printer;

/// Differences between two file lists, one line each.
pub fn differences(expected: &BTreeMap<String, FileEntry>, actual: &BTreeMap<String, FileEntry>) -> Vec<String> {
    let mut out = Vec::new();
    for (path, e) in expected {
        match actual.get(path) {
            None => out.push(format!("missing   {path}")),
            Some(a) if a.sha256 != e.sha256 => out.push(format!("differs   {path}: expected sha256 {}, got {}", e.sha256, a.sha256)),
            Some(_) => {}
        }
    }
    for path in actual.keys().filter(|p| !expected.contains_key(*p)) {
        out.push(format!("extra     {path}"));
    }
    out
}

/// Run `coreb verify`.
pub fn verify(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let VerifyArgs { release } = args;
    let printer = Printer::new(false);
    let dir = fs_err::canonicalize(&release)?;
    let manifest_path = dir.join("MANIFEST.json");
    let manifest: ReleaseManifest = serde_json::from_str(&fs_err::read_to_string(&manifest_path)?)
        .with_context(|| format!("`{}` is not a release MANIFEST", manifest_path.display()))?;

    let mut problems = differences(&manifest.files, &hash_tree(&dir)?);
    for p in &problems {
        printer.out(format!("published: {p}"));
    }

    // Rebuild from the embedded build manifest, resolved where the original lives so that
    // its relative paths (sources, response store) mean the same.
    let build_path = lexical_join(&dir, std::path::Path::new(&manifest.build_manifest.path));
    let base = build_path.parent().context("the build manifest path has no parent")?;
    if !base.is_dir() {
        bail!("cannot rebuild: the build manifest's directory `{}` does not exist", base.display());
    }
    let file: ManifestFile = toml::from_str(&manifest.build_manifest.text)
        .with_context(|| format!("the build manifest embedded in `{}`", manifest_path.display()))?;
    let scratch = tempfile::tempdir()?;
    let mut plan = RunPlan::resolve(&build_path, file, None)?;
    plan.manifest_text = manifest.build_manifest.text.clone();
    // A rebuild never calls an endpoint: every answer must come from the response store.
    plan.llm.mode = stages::services::llm::StoreMode::Replay;
    plan.output_dir = scratch.path().join("build");
    plan.publish_dir = scratch.path().join("release");
    printer.status(format!("rebuilding `{}` in {}", manifest.version, scratch.path().display()));
    let engine = Engine::new(plan, printer, false)?;
    engine.run_until(StageName::Release)?;

    let rebuilt = scratch.path().join("release");
    let rebuilt_manifest = fs_err::read(rebuilt.join("MANIFEST.json"))?;
    let diffs = differences(&manifest.files, &hash_tree(&rebuilt)?);
    for d in &diffs {
        printer.out(format!("rebuilt:   {d}"));
    }
    problems.extend(diffs);
    if rebuilt_manifest != fs_err::read(&manifest_path)? {
        problems.push("MANIFEST.json differs".into());
        printer.out("rebuilt:   differs   MANIFEST.json");
    }
    if problems.is_empty() {
        printer.out(format!("{}: {} files verified, rebuilt byte-identical", manifest.version, manifest.files.len() + 1));
        Ok(ExitCode::SUCCESS)
    } else {
        printer.out(format!("{}: {} difference(s)", manifest.version, problems.len()));
        Ok(ExitCode::from(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(sha: &str) -> FileEntry {
        FileEntry { sha256: sha.into(), bytes: 1 }
    }

    #[test]
    fn differences_name_missing_changed_and_extra_files() {
        let expected = BTreeMap::from([("a".to_owned(), entry("1")), ("b".to_owned(), entry("2")), ("c".to_owned(), entry("3"))]);
        let actual = BTreeMap::from([("a".to_owned(), entry("1")), ("b".to_owned(), entry("9")), ("d".to_owned(), entry("4"))]);
        assert_eq!(
            differences(&expected, &actual),
            ["differs   b: expected sha256 2, got 9", "missing   c", "extra     d"]
        );
        assert!(differences(&expected, &expected).is_empty());
    }
}
