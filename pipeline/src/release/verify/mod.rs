//! Verify a release (`coreb verify <release>`): check the published files against the
//! release's MANIFEST, then rebuild the release into a temporary directory and compare every
//! checksum.
//!
//! A release carries its regeneration kit (`regeneration/`: the answers, the build manifest
//! with the kit's paths, the prompts, the versions; the `release` stage writes it), so it is
//! rebuilt from the kit alone, wherever it lies: the kit copied into a temporary directory,
//! its answers imported into a response store there, the sources found by sha256 among the
//! files of `--sources DIR` (or downloaded from their pinned URLs), the build run offline in
//! replay mode. A difference names the file and, for a Parquet table, the first differing row
//! and column (`first_table_difference`). A release without a kit is rebuilt where it was
//! built, from its build manifest's relative paths.
//!
//! A downloaded release is untrusted input. The embedded build manifest is the release
//! author's: its sandbox settings and the commands it would have the judge run are refused
//! unless `--trust-release-sandbox` is given (`manifest::check_release_sandbox`), in the kit's
//! `build.toml` too; the kit's directories are its own (a `build.toml` pointing one elsewhere
//! is refused); no name of the release reaches outside its folder or the temporary directory
//! (links are never followed, `..` and absolute names are refused).
//!
//! What differs is sorted into two layers (`Verified`). The data: every table, BEIR file,
//! qrels, the card, the kit (answers, build manifest, prompts), and every field of the
//! MANIFEST but the versions; a difference there fails, named by its file and first differing
//! row and field — a verdict that a toolchain here decides otherwise is one (the `passed` of a
//! code document, the test-check counts of the MANIFEST). The provenance: the versions of
//! coreb and the judge's toolchains ([`PROVENANCE_FILES`], [`PROVENANCE_FIELDS`]); a machine
//! with another patch release of the JDK or g++ reproduces every data file and differs there
//! alone, which is reported, naming each version, and fails only under `--strict` (byte
//! identity).
//!
//! [`PROVENANCE_FILES`]: coreb_data::releases::PROVENANCE_FILES
//! [`PROVENANCE_FIELDS`]: coreb_data::releases::PROVENANCE_FIELDS

mod compare;
mod rebuild;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use crate::printer::Printer;
use compare::summary_versions;
pub use compare::toolchain_difference;
use coreb_data::releases::{FileEntry, ReleaseManifest};
use rebuild::{rebuild_from_kit, rebuild_where_built};

use super::kit::{KIT_DIR, KIT_MANIFEST};

/// A file of a release that is not as its MANIFEST says: missing, different, extra, not a
/// plain file, or (for `coreb check`) not readable as the table it should be.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(crate) struct Damage {
    /// Its path in the release (with `/`).
    pub(crate) file: String,
    /// `missing`, `differs`, `extra`, `not a file` or `unreadable`.
    pub(crate) kind: &'static str,
    /// What differs (the two sha256), what it is instead of a file, why it cannot be read.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(crate) detail: String,
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
pub(crate) fn damage(
    expected: &BTreeMap<String, FileEntry>,
    actual: &BTreeMap<String, FileEntry>,
) -> Vec<Damage> {
    let at = |file: &str, kind, detail| Damage { file: file.to_owned(), kind, detail };
    let mut out = Vec::new();
    for (path, e) in expected {
        match actual.get(path) {
            None => out.push(at(path, "missing", String::new())),
            Some(a) if a.sha256 != e.sha256 => out.push(at(
                path,
                "differs",
                format!("expected sha256 {}, got {}", e.sha256, a.sha256),
            )),
            Some(_) => {}
        }
    }
    for path in actual.keys().filter(|p| !expected.contains_key(*p)) {
        out.push(at(path, "extra", String::new()));
    }
    out
}

/// What a directory holds, read without following a link: each plain file's path (with
/// `/`) → sha256 and size, and the entries that are neither a file nor a directory (a
/// symbolic link, a device …). A downloaded release is untrusted: nothing here leaves the
/// directory.
fn list_release(
    dir: &std::path::Path,
) -> anyhow::Result<(BTreeMap<String, FileEntry>, Vec<Damage>)> {
    let mut files = BTreeMap::new();
    let mut odd = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in fs_err::read_dir(&d)? {
            let path = entry?.path();
            let rel = path
                .strip_prefix(dir)
                .unwrap_or(&path)
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            let kind = fs_err::symlink_metadata(&path)?.file_type();
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file() {
                let sha256 = coreb_base::hashing::sha256_file(&path)
                    .with_context(|| format!("hashing `{}`", path.display()))?;
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
pub(crate) fn checksums(
    release: &std::path::Path,
) -> anyhow::Result<(ReleaseManifest, Vec<Damage>)> {
    let manifest = ReleaseManifest::read(&release.join("MANIFEST.json"))?;
    let (mut files, odd) = list_release(release)?;
    files.remove("MANIFEST.json");
    let mut problems = damage(&manifest.files, &files);
    problems.extend(odd);
    Ok((manifest, problems))
}

/// Where a release to verify was found: a release folder, or the kit folder of one release in
/// `coreb export`'s output (`<export>/regeneration/<version>/`, which holds its MANIFEST).
enum Located {
    /// A release folder (`MANIFEST.json` and every file it lists).
    Release,
    /// An exported release's kit folder, and the export it belongs to (`None`: not inside one).
    ExportedKit { export: Option<PathBuf> },
}

/// What `dir` (canonical) holds: a release, an exported kit, or an export with one release.
fn locate(dir: &Path) -> anyhow::Result<(PathBuf, Located)> {
    if dir.join(".coreb-export").is_file() {
        // An export: its single release's kit, or the list to choose from.
        let kits: Vec<PathBuf> = match fs_err::read_dir(dir.join(KIT_DIR)) {
            Ok(rd) => {
                let mut v: Vec<PathBuf> = rd
                    .filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| p.join("MANIFEST.json").is_file())
                    .collect();
                v.sort();
                v
            }
            Err(_) => Vec::new(),
        };
        return match kits.as_slice() {
            [one] => Ok((one.clone(), Located::ExportedKit { export: Some(dir.to_owned()) })),
            [] => bail!(
                "`{}` is a `coreb export` holding no release with its MANIFEST (`{KIT_DIR}/<version>/MANIFEST.json`): export it again with this coreb",
                dir.display()
            ),
            many => {
                let list: Vec<String> = many.iter().map(|p| format!("`{}`", p.display())).collect();
                bail!(
                    "`{}` is a `coreb export` of {} releases: verify one of them: {}",
                    dir.display(),
                    many.len(),
                    list.join(", ")
                )
            }
        };
    }
    if !dir.join("MANIFEST.json").is_file() {
        bail!(
            "`{}` holds no `MANIFEST.json`: pass a release folder (`releases/<version>`) or the kit of one in `coreb export`'s output (`<export>/{KIT_DIR}/<version>`)",
            dir.display()
        );
    }
    if dir.join(KIT_MANIFEST).is_file() && !dir.join(KIT_DIR).exists() {
        let export = dir
            .parent()
            .and_then(Path::parent)
            .filter(|e| e.join(".coreb-export").is_file())
            .map(Path::to_owned);
        return Ok((dir.to_owned(), Located::ExportedKit { export }));
    }
    Ok((dir.to_owned(), Located::Release))
}

/// Runs a build plan through its `release` stage: the engine, which `coreb verify` gives (the
/// release's home sits below the engine and never starts one itself).
pub(crate) type Build<'a> = &'a dyn Fn(crate::manifest::RunPlan, Printer) -> anyhow::Result<()>;

/// Check the release at `release` against its MANIFEST, rebuild it and compare every
/// checksum; each difference is printed and returned, one line each (none: verified).
///
/// A release that carries its regeneration kit (`regeneration/`) is rebuilt from the kit
/// alone in a temporary directory (`rebuild_from_kit`), wherever it lies; the kit folder of
/// a release in `coreb export`'s output is verified the same way, and the export's data
/// files of that release compared with the rebuilt release's export. A release without a
/// kit is rebuilt where it was built, from its build manifest's paths.
///
/// What differs is sorted into two layers (`Verified`): the data (every other file, the
/// MANIFEST's other fields) and the provenance (the versions of coreb and the toolchains:
/// [`PROVENANCE_FILES`], [`PROVENANCE_FIELDS`]). The last line printed says which; with
/// `strict`, that a provenance difference fails byte identity.
///
/// [`PROVENANCE_FILES`]: coreb_data::releases::PROVENANCE_FILES
/// [`PROVENANCE_FIELDS`]: coreb_data::releases::PROVENANCE_FIELDS
pub(crate) fn verify(
    release: &Path,
    sources: Option<&Path>,
    trust_release_sandbox: bool,
    strict: bool,
    printer: Printer,
    build: Build<'_>,
) -> anyhow::Result<Verified> {
    let given = fs_err::canonicalize(release)?;
    let (dir, located) = locate(&given)?;
    let found = match located {
        Located::Release if fs_err::symlink_metadata(dir.join(KIT_DIR)).is_ok() => {
            rebuild_from_kit(&dir, None, sources, trust_release_sandbox, printer, build)?
        }
        Located::Release => {
            if sources.is_some() {
                bail!(
                    "`{}` carries no regeneration kit (`{KIT_DIR}/`): `--sources` rebuilds from a kit; without it the release is rebuilt from its build manifest's paths",
                    dir.display()
                );
            }
            rebuild_where_built(&dir, trust_release_sandbox, printer, build)?
        }
        Located::ExportedKit { export } => {
            rebuild_from_kit(&dir, Some(export), sources, trust_release_sandbox, printer, build)?
        }
    };
    found.summary(strict, &printer);
    Ok(found)
}

/// What a rebuild found, in two layers: the data and the provenance.
#[derive(Debug, Default)]
pub(crate) struct Verified {
    /// The release's version.
    pub(crate) version: String,
    /// What was compared (`41 files`, `kit files and exported tables`).
    pub(crate) what: String,
    /// Each difference in the data, one line: a published file not as its MANIFEST says, a
    /// rebuilt file that differs (with its first differing row and field), a field of the
    /// MANIFEST outside the provenance. Any fails the verification.
    pub(crate) data: Vec<String>,
    /// Each provenance file that differs ([`PROVENANCE_FILES`], `MANIFEST.json` where it
    /// differs in [`PROVENANCE_FIELDS`] alone), one line: a failure under `--strict` only.
    ///
    /// [`PROVENANCE_FILES`]: coreb_data::releases::PROVENANCE_FILES
    /// [`PROVENANCE_FIELDS`]: coreb_data::releases::PROVENANCE_FIELDS
    pub(crate) provenance: Vec<String>,
    /// Each version that differs, one line (`java `javac`: 17.0.15 in the release, 17.0.19
    /// here`).
    pub(crate) versions: Vec<String>,
    /// Whether it was rebuilt from its regeneration kit.
    pub(crate) from_kit: bool,
}

impl Verified {
    /// Whether the verification failed: a data difference, or with `strict` (byte identity)
    /// any difference.
    pub(crate) fn failed(&self, strict: bool) -> bool {
        !self.data.is_empty() || (strict && !self.provenance.is_empty())
    }

    /// The last line: byte-identical; the data identical and the provenance not (with the
    /// versions); or the data differences, the first named.
    fn summary(&self, strict: bool, printer: &Printer) {
        let v = &self.version;
        let what = &self.what;
        if let Some(first) = self.data.first() {
            printer.out(format!(
                "{v}: {} difference(s) in the data; the first: {first}",
                self.data.len()
            ));
        } else if self.provenance.is_empty() {
            printer.out(format!(
                "{v}: {what} verified, rebuilt byte-identical{}",
                if self.from_kit { " from its regeneration kit" } else { "" }
            ));
        } else {
            let versions = summary_versions(&self.versions);
            printer.out(format!(
                "{v}: every data file identical ({what}); only the provenance differs ({}): {versions}",
                self.provenance.join(", ")
            ));
            if strict {
                printer.out(format!(
                    "{v}: --strict: not byte-identical: {} file(s) differ",
                    self.provenance.len()
                ));
            }
        }
    }
}

/// A path of a release's file list as plain components (no `..`, no root, nothing empty),
/// else an error naming it: a name in a downloaded release never reaches outside its folder.
fn safe_relative(name: &str, what: &str) -> anyhow::Result<PathBuf> {
    use std::path::Component;
    let path = Path::new(name);
    let plain = !name.is_empty()
        && !name.contains('\\')
        && path.components().all(|c| matches!(c, Component::Normal(_)))
        && !name.split('/').any(str::is_empty);
    if !plain {
        bail!(
            "{what} names `{name}`: not a plain relative path inside the release folder (refused: it could reach outside it)"
        );
    }
    Ok(path.to_owned())
}

/// The human review a published card carries (`coreb review report --record` adds its
/// section; it is a person's input, not a build output, so the kit does not hold it): written
/// into `to` as the `release` stage reads a recorded review (`card.md`, and `review.json`
/// naming the data the review was of, the published release's data digest, and its MANIFEST:
/// the published one with the card before the section). A rebuild whose data are the
/// published ones shows it, whatever toolchain versions it records. `None` when the card has
/// no such section, or it is not the last one (then the rebuild's card lacks it and the
/// comparison says so).
fn recorded_review(
    release: &Path,
    manifest: &ReleaseManifest,
    to: &Path,
) -> anyhow::Result<Option<PathBuf>> {
    let heading = format!("\n{}\n", coreb_data::releases::HUMAN_VALIDATION);
    let Ok(card) = fs_err::read_to_string(release.join("README.md")) else {
        return Ok(None);
    };
    let Some(at) = card.find(&heading) else {
        return Ok(None);
    };
    let (before, section) = (&card[..at], &card[at + 1..]);
    if coreb_data::releases::with_human_validation(before, section) != card {
        return Ok(None);
    }
    let mut reviewed = manifest.clone();
    reviewed.files.insert(
        "README.md".into(),
        FileEntry {
            sha256: coreb_base::hashing::sha256_hex(before.as_bytes()),
            bytes: before.len() as u64,
        },
    );
    let digest = coreb_base::hashing::sha256_hex(
        (serde_json::to_string_pretty(&reviewed)? + "\n").as_bytes(),
    );
    fs_err::create_dir_all(to)?;
    fs_err::write(to.join(super::review::report::CARD_SECTION), section)?;
    fs_err::write(
        to.join("review.json"),
        serde_json::to_string_pretty(
            &serde_json::json!({ "release": manifest.version, "release_sha256": digest, "data_sha256": manifest.data_sha256() }),
        )? + "\n",
    )?;
    Ok(Some(to.to_owned()))
}

/// Every plain file below `dir` (links followed: the folder is the user's), by sha256.
fn files_by_sha256(dir: &Path) -> anyhow::Result<BTreeMap<String, PathBuf>> {
    let mut found = BTreeMap::new();
    let mut stack = vec![dir.to_owned()];
    let mut all = Vec::new();
    while let Some(d) = stack.pop() {
        for entry in fs_err::read_dir(&d)? {
            let path = entry?.path();
            let meta = fs_err::metadata(&path)?;
            if meta.is_dir() {
                stack.push(path);
            } else if meta.is_file() {
                all.push(path);
            }
        }
    }
    all.sort();
    for path in all {
        let sha = coreb_base::hashing::sha256_file(&path)
            .with_context(|| format!("hashing `{}`", path.display()))?;
        found.entry(sha).or_insert(path);
    }
    Ok(found)
}

/// Put `from` at `to` (a hard link where the file system allows, else a copy).
fn place(from: &Path, to: &Path) -> anyhow::Result<()> {
    if std::fs::hard_link(from, to).is_err() {
        fs_err::copy(from, to)?;
    }
    Ok(())
}

/// The files of an exported kit folder (`<export>/regeneration/<version>/`, with the
/// release's MANIFEST) against the MANIFEST's `regeneration/` entries, named as in the release.
fn exported_kit_checksums(dir: &Path, manifest: &ReleaseManifest) -> anyhow::Result<Vec<Damage>> {
    let prefix = format!("{KIT_DIR}/");
    let (files, odd) = list_release(dir)?;
    // The kit's files, and the release's card (`README.md`) beside them.
    let actual: BTreeMap<String, FileEntry> = files
        .into_iter()
        .filter(|(p, _)| p != "MANIFEST.json")
        .map(|(p, e)| (if p == "README.md" { p } else { format!("{prefix}{p}") }, e))
        .collect();
    let expected: BTreeMap<String, FileEntry> = manifest
        .files
        .iter()
        .filter(|(p, _)| p.starts_with(&prefix) || *p == "README.md")
        .map(|(p, e)| (p.clone(), e.clone()))
        .collect();
    let mut damaged = damage(&expected, &actual);
    damaged.extend(odd.into_iter().map(|d| Damage { file: format!("{prefix}{}", d.file), ..d }));
    Ok(damaged)
}

/// `coreb verify --checksums`: [`checksums`] of a release folder, or of the kit folder of a
/// release in `coreb export`'s output (its kit files only: the export holds no other file of
/// the release as published). Also returns how many of the MANIFEST's files it checked.
pub(crate) fn checksums_of(path: &Path) -> anyhow::Result<(ReleaseManifest, Vec<Damage>, usize)> {
    let (dir, located) = locate(&fs_err::canonicalize(path)?)?;
    match located {
        Located::Release => {
            let (manifest, damaged) = checksums(&dir)?;
            let n = manifest.files.len();
            Ok((manifest, damaged, n))
        }
        Located::ExportedKit { .. } => {
            let manifest = ReleaseManifest::read(&dir.join("MANIFEST.json"))?;
            let damaged = exported_kit_checksums(&dir, &manifest)?;
            let n = manifest
                .files
                .keys()
                .filter(|p| p.starts_with(&format!("{KIT_DIR}/")) || *p == "README.md")
                .count();
            Ok((manifest, damaged, n))
        }
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
        let expected = BTreeMap::from([
            ("a".to_owned(), entry("1")),
            ("b".to_owned(), entry("2")),
            ("c".to_owned(), entry("3")),
        ]);
        let actual = BTreeMap::from([
            ("a".to_owned(), entry("1")),
            ("b".to_owned(), entry("9")),
            ("d".to_owned(), entry("4")),
        ]);
        let lines: Vec<String> =
            damage(&expected, &actual).iter().map(ToString::to_string).collect();
        assert_eq!(lines, ["differs   b: expected sha256 2, got 9", "missing   c", "extra     d"]);
        assert!(damage(&expected, &expected).is_empty());
    }

    #[test]
    fn names_of_a_release_stay_inside_it() {
        for bad in ["../x", "a/../../x", "/etc/passwd", "", "a//b", "a\\..\\b", "./a"] {
            assert!(safe_relative(bad, "`files`").is_err(), "{bad}");
        }
        assert_eq!(
            safe_relative("regeneration/prompts/a.toml", "`files`").unwrap(),
            PathBuf::from("regeneration/prompts/a.toml")
        );
    }
}
