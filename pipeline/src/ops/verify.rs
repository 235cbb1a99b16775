//! Verify a release (`coreb verify <release>`): check the published files against the release's MANIFEST, then
//! rebuild the release from the MANIFEST (build manifest, pinned sources, response store in
//! replay mode) into a temporary directory and compare every checksum.
//!
//! The embedded build manifest is the release author's: its sandbox settings and the
//! commands it would have the judge run are refused unless `--trust-release-sandbox` is given
//! ([`check_release_sandbox`]). A machine whose toolchains differ from the ones the MANIFEST
//! records (`stages.execute.toolchains`) can still reproduce every file: that difference alone
//! is reported, not counted as a failure; any verdict it changes shows up in the data files.

use std::collections::BTreeMap;

use anyhow::{Context, bail};

use crate::artifacts::hash_tree;
use crate::engine::Engine;
use crate::engine::stage::StageName;
use crate::manifest::{ManifestFile, RunPlan, check_release_sandbox, lexical_join};
use coreb_base::printer::Printer;
use coreb_data::releases::{FileEntry, ReleaseManifest};

/// A file of a release that is not as its MANIFEST says: missing, different, extra, not a
/// plain file, or (for `coreb check`) not readable as the table it should be.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Damage {
    /// Its path in the release (with `/`).
    pub file: String,
    /// `missing`, `differs`, `extra`, `not a file` or `unreadable`.
    pub kind: &'static str,
    /// What differs (the two sha256), what it is instead of a file, why it cannot be read.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub detail: String,
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:<9} {}", self.kind, self.file)?;
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
    }
}

/// Differences between two file lists, file by file.
pub fn damage(expected: &BTreeMap<String, FileEntry>, actual: &BTreeMap<String, FileEntry>) -> Vec<Damage> {
    let at = |file: &str, kind, detail| Damage { file: file.to_owned(), kind, detail };
    let mut out = Vec::new();
    for (path, e) in expected {
        match actual.get(path) {
            None => out.push(at(path, "missing", String::new())),
            Some(a) if a.sha256 != e.sha256 => out.push(at(path, "differs", format!("expected sha256 {}, got {}", e.sha256, a.sha256))),
            Some(_) => {}
        }
    }
    for path in actual.keys().filter(|p| !expected.contains_key(*p)) {
        out.push(at(path, "extra", String::new()));
    }
    out
}

/// Differences between two file lists, one line each.
pub fn differences(expected: &BTreeMap<String, FileEntry>, actual: &BTreeMap<String, FileEntry>) -> Vec<String> {
    damage(expected, actual).iter().map(ToString::to_string).collect()
}

/// What a directory holds, read without following a link: each plain file's path (with
/// `/`) → sha256 and size, and the entries that are neither a file nor a directory (a
/// symbolic link, a device …). A downloaded release is untrusted: nothing here leaves the
/// directory.
pub fn list_release(dir: &std::path::Path) -> anyhow::Result<(BTreeMap<String, FileEntry>, Vec<Damage>)> {
    let mut files = BTreeMap::new();
    let mut odd = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in fs_err::read_dir(&d)? {
            let path = entry?.path();
            let rel = path.strip_prefix(dir).unwrap_or(&path).components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/");
            let kind = fs_err::symlink_metadata(&path)?.file_type();
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file() {
                let sha256 = coreb_base::hashing::sha256_file(&path).with_context(|| format!("hashing `{}`", path.display()))?;
                files.insert(rel, FileEntry { sha256, bytes: fs_err::metadata(&path)?.len() });
            } else {
                let what = if kind.is_symlink() { "a symbolic link" } else { "not a regular file" };
                odd.push(Damage { file: rel, kind: "not a file", detail: what.into() });
            }
        }
    }
    odd.sort_by(|a, b| a.file.cmp(&b.file));
    Ok((files, odd))
}

/// Every file of the release at `release` against the sha256 its MANIFEST lists, without
/// rebuilding: the MANIFEST and each damaged, missing or extra file (none: intact).
pub fn checksums(release: &std::path::Path) -> anyhow::Result<(ReleaseManifest, Vec<Damage>)> {
    let manifest = ReleaseManifest::read(&release.join("MANIFEST.json"))?;
    let (mut files, odd) = list_release(release)?;
    files.remove("MANIFEST.json");
    let mut problems = damage(&manifest.files, &files);
    problems.extend(odd);
    Ok((manifest, problems))
}

/// Check the release at `release` against its MANIFEST, rebuild it and compare every
/// checksum; each difference is printed and returned, one line each (none: verified).
pub fn verify(release: &std::path::Path, trust_release_sandbox: bool, printer: Printer) -> anyhow::Result<Vec<String>> {
    let dir = fs_err::canonicalize(release)?;
    let manifest_path = dir.join("MANIFEST.json");
    let (manifest, damaged) = checksums(&dir)?;
    let mut problems: Vec<String> = damaged.iter().map(ToString::to_string).collect();

    check_release_sandbox(&manifest.build_manifest.text, &manifest_path, trust_release_sandbox)?;
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
    let file: ManifestFile = toml::from_str(&manifest.build_manifest.text).with_context(|| format!("the build manifest embedded in `{}`", manifest_path.display()))?;
    let scratch = tempfile::tempdir()?;
    let mut plan = RunPlan::resolve(&build_path, file, None)?;
    plan.manifest_text = manifest.build_manifest.text.clone();
    // A rebuild never calls an endpoint: every answer must come from the response store.
    plan.llm.mode = coreb_llm::StoreMode::Replay;
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
    let published_manifest = fs_err::read(&manifest_path)?;
    if rebuilt_manifest != published_manifest {
        match toolchain_difference(&published_manifest, &rebuilt_manifest) {
            Some(notes) => {
                for n in notes {
                    printer.out(format!("toolchain: {n}"));
                }
                printer.out("rebuilt:   MANIFEST.json differs only in the toolchain versions it records");
            }
            None => {
                problems.push("MANIFEST.json differs".into());
                printer.out("rebuilt:   differs   MANIFEST.json");
            }
        }
    }
    if problems.is_empty() {
        printer.out(format!("{}: {} files verified, rebuilt byte-identical", manifest.version, manifest.files.len() + 1));
    } else {
        printer.out(format!("{}: {} difference(s)", manifest.version, problems.len()));
    }
    Ok(problems)
}

/// When two MANIFESTs differ only in `stages.execute.toolchains`, one line per program whose
/// version differs; `None` when anything else differs.
pub fn toolchain_difference(published: &[u8], rebuilt: &[u8]) -> Option<Vec<String>> {
    let (Ok(mut a), Ok(mut b)) = (serde_json::from_slice::<serde_json::Value>(published), serde_json::from_slice::<serde_json::Value>(rebuilt)) else {
        return None;
    };
    let pointer = "/stages/execute/toolchains";
    let ta = a.pointer_mut(pointer).map(std::mem::take).unwrap_or_default();
    let tb = b.pointer_mut(pointer).map(std::mem::take).unwrap_or_default();
    if a != b || ta == tb {
        return None;
    }
    let mut notes = Vec::new();
    let (ta, tb) = (ta.as_object().cloned().unwrap_or_default(), tb.as_object().cloned().unwrap_or_default());
    let languages: std::collections::BTreeSet<&String> = ta.keys().chain(tb.keys()).collect();
    for lang in languages {
        let (pa, pb) = (ta.get(lang).and_then(|v| v.as_object()), tb.get(lang).and_then(|v| v.as_object()));
        let programs: std::collections::BTreeSet<&String> = pa.into_iter().flat_map(|m| m.keys()).chain(pb.into_iter().flat_map(|m| m.keys())).collect();
        for program in programs {
            let va = pa.and_then(|m| m.get(program)).and_then(|v| v.as_str()).unwrap_or("(none)");
            let vb = pb.and_then(|m| m.get(program)).and_then(|v| v.as_str()).unwrap_or("(none)");
            if va != vb {
                notes.push(format!("{lang} `{program}`: the release was built with `{va}`, this machine has `{vb}`"));
            }
        }
    }
    Some(notes)
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
        assert_eq!(differences(&expected, &actual), ["differs   b: expected sha256 2, got 9", "missing   c", "extra     d"]);
        assert!(differences(&expected, &expected).is_empty());
    }

    #[test]
    fn only_toolchain_versions_may_differ() {
        let m = |gpp: &str, seed: u64| serde_json::to_vec(&serde_json::json!({"seeds": {"qrels": seed}, "stages": {"execute": {"toolchains": {"cpp": {"g++": gpp}}}}})).unwrap();
        let notes = toolchain_difference(&m("g++ 12", 1), &m("g++ 13", 1)).unwrap();
        assert_eq!(notes, ["cpp `g++`: the release was built with `g++ 12`, this machine has `g++ 13`"]);
        assert_eq!(toolchain_difference(&m("g++ 12", 1), &m("g++ 13", 2)), None);
        assert_eq!(toolchain_difference(&m("g++ 12", 1), &m("g++ 12", 2)), None);
    }
}
