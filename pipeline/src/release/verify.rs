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
//! and column ([`first_table_difference`]). A release without a kit is rebuilt where it was
//! built, from its build manifest's relative paths.
//!
//! A downloaded release is untrusted input. The embedded build manifest is the release
//! author's: its sandbox settings and the commands it would have the judge run are refused
//! unless `--trust-release-sandbox` is given ([`check_release_sandbox`](crate::manifest::check_release_sandbox)), in the kit's
//! `build.toml` too; the kit's directories are its own (a `build.toml` pointing one elsewhere
//! is refused); no name of the release reaches outside its folder or the temporary directory
//! (links are never followed, `..` and absolute names are refused).
//!
//! What differs is sorted into two layers ([`Verified`]). The data: every table, BEIR file,
//! qrels, the card, the kit (answers, build manifest, prompts), and every field of the
//! MANIFEST but the versions; a difference there fails, named by its file and first differing
//! row and field — a verdict that a toolchain here decides otherwise is one (the `passed` of a
//! code document, the test-check counts of the MANIFEST). The provenance: the versions of
//! coreb and the judge's toolchains ([`PROVENANCE_FILES`], [`PROVENANCE_FIELDS`]); a machine
//! with another patch release of the JDK or g++ reproduces every data file and differs there
//! alone, which is reported, naming each version, and fails only under `--strict` (byte
//! identity).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use crate::artifacts::hash_tree;
use crate::engine::Engine;
use crate::engine::stage_name::StageName;
use crate::manifest::{EmbeddedManifest, ManifestFile, RunPlan, lexical_join};
use crate::printer::Printer;
use coreb_data::releases::{FileEntry, PROVENANCE_FIELDS, PROVENANCE_FILES, ReleaseManifest};

use super::kit::{KIT_ANSWERS, KIT_DIR, KIT_MANIFEST, check_kit_manifest, import_answers};

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
pub fn damage(
    expected: &BTreeMap<String, FileEntry>,
    actual: &BTreeMap<String, FileEntry>,
) -> Vec<Damage> {
    let at = |file: &str, kind, detail| Damage {
        file: file.to_owned(),
        kind,
        detail,
    };
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

/// Differences between two file lists, one line each.
pub fn differences(
    expected: &BTreeMap<String, FileEntry>,
    actual: &BTreeMap<String, FileEntry>,
) -> Vec<String> {
    damage(expected, actual)
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// What a directory holds, read without following a link: each plain file's path (with
/// `/`) → sha256 and size, and the entries that are neither a file nor a directory (a
/// symbolic link, a device …). A downloaded release is untrusted: nothing here leaves the
/// directory.
pub fn list_release(
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
                files.insert(
                    rel,
                    FileEntry {
                        sha256,
                        bytes: fs_err::metadata(&path)?.len(),
                    },
                );
            } else {
                let what = if kind.is_symlink() {
                    "a symbolic link"
                } else {
                    "not a regular file"
                };
                odd.push(Damage {
                    file: rel,
                    kind: "not a file",
                    detail: what.into(),
                });
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
            [one] => Ok((
                one.clone(),
                Located::ExportedKit {
                    export: Some(dir.to_owned()),
                },
            )),
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

/// Check the release at `release` against its MANIFEST, rebuild it and compare every
/// checksum; each difference is printed and returned, one line each (none: verified).
///
/// A release that carries its regeneration kit (`regeneration/`) is rebuilt from the kit
/// alone in a temporary directory (`rebuild_from_kit`), wherever it lies; the kit folder of
/// a release in `coreb export`'s output is verified the same way, and the export's data
/// files of that release compared with the rebuilt release's export. A release without a
/// kit is rebuilt where it was built, from its build manifest's paths.
///
/// What differs is sorted into two layers ([`Verified`]): the data (every other file, the
/// MANIFEST's other fields) and the provenance (the versions of coreb and the toolchains:
/// [`PROVENANCE_FILES`], [`PROVENANCE_FIELDS`]). The last line printed says which; with
/// `strict`, that a provenance difference fails byte identity.
pub fn verify(
    release: &Path,
    sources: Option<&Path>,
    trust_release_sandbox: bool,
    strict: bool,
    printer: Printer,
) -> anyhow::Result<Verified> {
    let given = fs_err::canonicalize(release)?;
    let (dir, located) = locate(&given)?;
    let found = match located {
        Located::Release if fs_err::symlink_metadata(dir.join(KIT_DIR)).is_ok() => {
            rebuild_from_kit(&dir, None, sources, trust_release_sandbox, printer)?
        }
        Located::Release => {
            if sources.is_some() {
                bail!(
                    "`{}` carries no regeneration kit (`{KIT_DIR}/`): `--sources` rebuilds from a kit; without it the release is rebuilt from its build manifest's paths",
                    dir.display()
                );
            }
            rebuild_where_built(&dir, trust_release_sandbox, printer)?
        }
        Located::ExportedKit { export } => {
            rebuild_from_kit(&dir, Some(export), sources, trust_release_sandbox, printer)?
        }
    };
    found.summary(strict, &printer);
    Ok(found)
}

/// What a rebuild found, in two layers: the data and the provenance.
#[derive(Debug, Default)]
pub struct Verified {
    /// The release's version.
    pub version: String,
    /// What was compared (`41 files`, `kit files and exported tables`).
    pub what: String,
    /// Each difference in the data, one line: a published file not as its MANIFEST says, a
    /// rebuilt file that differs (with its first differing row and field), a field of the
    /// MANIFEST outside the provenance. Any fails the verification.
    pub data: Vec<String>,
    /// Each provenance file that differs ([`PROVENANCE_FILES`], `MANIFEST.json` where it
    /// differs in [`PROVENANCE_FIELDS`] alone), one line: a failure under `--strict` only.
    pub provenance: Vec<String>,
    /// Each version that differs, one line (`java `javac`: 17.0.15 in the release, 17.0.19
    /// here`).
    pub versions: Vec<String>,
    /// Whether it was rebuilt from its regeneration kit.
    pub from_kit: bool,
}

impl Verified {
    /// Whether the verification failed: a data difference, or with `strict` (byte identity)
    /// any difference.
    pub fn failed(&self, strict: bool) -> bool {
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
                if self.from_kit {
                    " from its regeneration kit"
                } else {
                    ""
                }
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
        .map(|(p, e)| {
            (
                if p == "README.md" {
                    p
                } else {
                    format!("{prefix}{p}")
                },
                e,
            )
        })
        .collect();
    let expected: BTreeMap<String, FileEntry> = manifest
        .files
        .iter()
        .filter(|(p, _)| p.starts_with(&prefix) || *p == "README.md")
        .map(|(p, e)| (p.clone(), e.clone()))
        .collect();
    let mut damaged = damage(&expected, &actual);
    damaged.extend(odd.into_iter().map(|d| Damage {
        file: format!("{prefix}{}", d.file),
        ..d
    }));
    Ok(damaged)
}

/// `coreb verify --checksums`: [`checksums`] of a release folder, or of the kit folder of a
/// release in `coreb export`'s output (its kit files only: the export holds no other file of
/// the release as published). Also returns how many of the MANIFEST's files it checked.
pub fn checksums_of(path: &Path) -> anyhow::Result<(ReleaseManifest, Vec<Damage>, usize)> {
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

/// Rebuild the release whose MANIFEST is at `dir/MANIFEST.json` from its regeneration kit, in
/// a temporary directory, and compare every checksum. `export` is `None` for a release
/// folder (its kit is `dir/regeneration/`), and `Some` for an exported kit folder (`dir`
/// itself; the export it is in, when it is in one).
///
/// A downloaded release is untrusted: nothing of it is followed or opened outside `dir`
/// (its file list is read without following a link, every listed name must be a plain
/// relative path); a damaged kit, a kit manifest that points a directory outside the kit or
/// sets sandbox settings (unless `trusted`), a truncated answers file are errors naming the
/// entry; nothing is written outside the temporary directory. The sources are found by
/// sha256 among the files of `sources`; one not there is downloaded from its pinned URL
/// (the fetch stage, sha256 checked); without `sources`, a local source is looked for where
/// the build manifest names it, relative to the release, and taken only if its sha256 is
/// the pinned one (so a release verifies in the checkout that built it).
///
/// The steps: read the kit's manifest (`read_kit_manifest`), check it (`check_kit`), copy it
/// and import its answers (`copy_kit`), place the sources (`place_sources`), plan
/// (`rebuild_plan`), rebuild (`rebuild`), compare (`compare_rebuilt`, `compare_export`).
fn rebuild_from_kit(
    dir: &Path,
    export: Option<Option<PathBuf>>,
    sources: Option<&Path>,
    trusted: bool,
    printer: Printer,
) -> anyhow::Result<Verified> {
    let embedded = read_kit_manifest(dir)?;
    let (kit_dir, mut found) = check_kit(dir, &embedded, export.is_some(), trusted, &printer)?;
    let scratch = tempfile::tempdir()?;
    let kit = copy_kit(&embedded.release, &kit_dir, scratch.path(), &printer)?;
    let mut file: ManifestFile = embedded.file.clone();
    place_sources(&mut file, &embedded, &kit, sources, &printer)?;
    // Earlier releases are read beside the release (in the scratch for an exported kit).
    let releases_dir = match (&export, dir.parent()) {
        (None, Some(parent)) => parent.to_owned(),
        _ => scratch.path().join("earlier"),
    };
    let plan = rebuild_plan(
        dir,
        &embedded,
        file,
        &kit,
        releases_dir,
        scratch.path(),
        &printer,
    )?;
    printer.status(format!(
        "rebuilding `{}` from its kit in {}",
        embedded.release.version,
        scratch.path().display()
    ));
    let rebuilt = rebuild(plan, printer)?;
    compare_rebuilt(
        &embedded.release,
        &fs_err::read(&embedded.manifest_file)?,
        export.is_none().then_some(dir),
        &rebuilt,
        &mut found,
        &printer,
    )?;
    if let Some(Some(export)) = &export {
        found.data.extend(compare_export(
            export,
            &rebuilt,
            &embedded.release.version,
            scratch.path(),
            &printer,
        )?);
    }
    Ok(found)
}

/// The build manifest the release at `dir` embeds, every name its MANIFEST lists checked to
/// be a plain relative path.
fn read_kit_manifest(dir: &Path) -> anyhow::Result<EmbeddedManifest> {
    let embedded = EmbeddedManifest::read(dir)?;
    for name in embedded.release.files.keys() {
        safe_relative(
            name,
            &format!("`{}`: `files`", embedded.manifest_file.display()),
        )?;
    }
    Ok(embedded)
}

/// Checksums first: every file of the release (of the kit, for an exported kit) against its
/// MANIFEST, each difference printed; a damaged kit is refused. Then the manifests: the
/// embedded one and the kit's, neither loosening the sandbox (unless `trusted`). Returns the
/// kit's folder and what was found so far.
fn check_kit(
    dir: &Path,
    embedded: &EmbeddedManifest,
    exported: bool,
    trusted: bool,
    printer: &Printer,
) -> anyhow::Result<(PathBuf, Verified)> {
    let manifest = &embedded.release;
    let kit_prefix = format!("{KIT_DIR}/");
    let (kit_dir, damaged) = if exported {
        (dir.to_owned(), exported_kit_checksums(dir, manifest)?)
    } else {
        let (_, damaged) = checksums(dir)?;
        (dir.join(KIT_DIR), damaged)
    };
    for d in &damaged {
        printer.out(format!("published: {d}"));
    }
    let kit_damage: Vec<String> = damaged
        .iter()
        .filter(|d| d.file == KIT_DIR || d.file.starts_with(&kit_prefix))
        .map(ToString::to_string)
        .collect();
    if !kit_damage.is_empty() {
        bail!(
            "the regeneration kit of `{}` is not as its MANIFEST lists it; refusing to rebuild from it:\n  {}",
            dir.display(),
            kit_damage.join("\n  ")
        );
    }
    let found = Verified {
        version: manifest.version.clone(),
        what: if exported {
            "kit files and exported tables".to_owned()
        } else {
            format!("{} files", manifest.files.len() + 1)
        },
        data: damaged.iter().map(ToString::to_string).collect(),
        from_kit: true,
        ..Verified::default()
    };
    embedded.check_sandbox(trusted)?;
    check_kit_manifest(&kit_dir.join(KIT_MANIFEST), trusted)?;
    Ok((kit_dir, found))
}

/// The kit, copied file by file (as listed, links never followed) into `scratch/kit`, its
/// answers imported into a response store there (`kit/store`). Returns the copy's folder.
fn copy_kit(
    manifest: &ReleaseManifest,
    kit_dir: &Path,
    scratch: &Path,
    printer: &Printer,
) -> anyhow::Result<PathBuf> {
    let kit_prefix = format!("{KIT_DIR}/");
    let kit = scratch.join("kit");
    fs_err::create_dir_all(&kit)?;
    for name in manifest.files.keys().filter(|p| p.starts_with(&kit_prefix)) {
        let rel = safe_relative(&name[kit_prefix.len()..], "the kit")?;
        let to = kit.join(&rel);
        if let Some(parent) = to.parent() {
            fs_err::create_dir_all(parent)?;
        }
        fs_err::copy(kit_dir.join(&rel), &to)?;
    }
    let shown = kit_dir.join(KIT_ANSWERS);
    let answers = import_answers(&kit.join(KIT_ANSWERS), &shown, scratch, &kit.join("store"))?;
    printer.status(format!(
        "imported {answers} answers from `{}`",
        shown.display()
    ));
    Ok(kit)
}

/// The sources, found by sha256 among the files of `sources` (else downloaded from their
/// pinned URL by the fetch stage, or, without `sources`, taken where the build manifest names
/// them when their sha256 is the pinned one), placed in `kit/sources/`, where `file` then
/// names them.
fn place_sources(
    file: &mut ManifestFile,
    embedded: &EmbeddedManifest,
    kit: &Path,
    sources: Option<&Path>,
    printer: &Printer,
) -> anyhow::Result<()> {
    let manifest_path = &embedded.manifest_file;
    let index = match sources {
        Some(s) => {
            files_by_sha256(s).with_context(|| format!("reading `--sources {}`", s.display()))?
        }
        None => BTreeMap::new(),
    };
    fs_err::create_dir_all(kit.join("sources"))?;
    let builder_dir = embedded.dir().to_owned();
    for (i, source) in file.sources.iter_mut().enumerate() {
        // The name becomes a file name in the scratch: the fetch stage's own rule first.
        coreb_stages::fetch::Source::resolve(&source.name, "x", source.sha256.as_deref(), kit)
            .map_err(|e| anyhow::anyhow!("`{}`: `sources[{i}]`: {e}", manifest_path.display()))?;
        let pin = source.sha256.as_deref().map(str::to_ascii_lowercase);
        let local = kit.join("sources").join(&source.name);
        let is_url = source.url.starts_with("http://") || source.url.starts_with("https://");
        if let Some(found) = pin.as_deref().and_then(|p| index.get(p)) {
            printer.status(format!(
                "source `{}`: `{}` (sha256 {})",
                source.name,
                found.display(),
                pin.as_deref().unwrap_or_default()
            ));
            place(found, &local)?;
        } else if is_url {
            printer.status(format!(
                "source `{}`: downloading {} (its sha256 pin checked)",
                source.name, source.url
            ));
            continue;
        } else if let Some(dir) = sources {
            match &pin {
                Some(p) => bail!(
                    "source `{}` (sha256 {p}) is not among the files of `{}`",
                    source.name,
                    dir.display()
                ),
                None => bail!(
                    "source `{}` has no sha256 pin in the build manifest: it cannot be found among the files of `{}`",
                    source.name,
                    dir.display()
                ),
            }
        } else {
            let Some(p) = &pin else {
                bail!(
                    "source `{}` is a local file with no sha256 pin: pass `--sources DIR`",
                    source.name
                )
            };
            let path = match source.url.strip_prefix("file://") {
                Some(abs) => PathBuf::from(abs),
                None => lexical_join(&builder_dir, Path::new(&source.url)),
            };
            let matches = fs_err::metadata(&path).is_ok_and(|m| m.is_file())
                && coreb_base::hashing::sha256_file(&path).is_ok_and(|h| &h == p);
            if !matches {
                bail!(
                    "source `{}` is a local file of the release's builder (`{}`), not here with sha256 {p}: pass `--sources DIR`, a folder holding it (found by sha256)",
                    source.name,
                    source.url
                );
            }
            printer.status(format!(
                "source `{}`: `{}` (where the build manifest names it; sha256 {p})",
                source.name,
                path.display()
            ));
            place(&path, &local)?;
        }
        source.url = format!("sources/{}", source.name);
    }
    Ok(())
}

/// The plan of the rebuild: the embedded build manifest with every directory in the scratch
/// (the kit's `build`, `prompts`, `store`; the release in `scratch/rebuilt/`), earlier
/// releases read from `releases_dir`, the build manifest's path recorded as the builder
/// recorded it, replay only (a rebuild never calls an endpoint), and the card's recorded
/// human review, if any.
fn rebuild_plan(
    dir: &Path,
    embedded: &EmbeddedManifest,
    mut file: ManifestFile,
    kit: &Path,
    releases_dir: PathBuf,
    scratch: &Path,
    printer: &Printer,
) -> anyhow::Result<RunPlan> {
    let manifest = &embedded.release;
    file.output_dir = PathBuf::from("build");
    file.prompts_dir = Some(PathBuf::from("prompts"));
    file.response_store = Some(PathBuf::from("store"));
    file.releases_dir = Some(releases_dir);
    file.eval.prompts_file = None;
    let mut plan = RunPlan::resolve(&kit.join(KIT_MANIFEST), file, None).with_context(|| {
        format!(
            "the build manifest embedded in `{}`",
            embedded.manifest_file.display()
        )
    })?;
    plan.manifest_text = manifest.build_manifest.text.clone();
    // Recorded as the builder recorded it: relative to where the release belongs. Only named,
    // never opened.
    plan.manifest_path = lexical_join(
        &plan.releases_dir.join(&plan.version),
        Path::new(&manifest.build_manifest.path),
    );
    plan.recorded_manifest_path = Some(manifest.build_manifest.path.clone());
    // A rebuild never calls an endpoint: every answer must come from the kit.
    plan.llm.mode = coreb_llm::StoreMode::Replay;
    plan.publish_dir = scratch.join("rebuilt").join(&plan.version);
    if let Some(review) = recorded_review(dir, manifest, &scratch.join("review"))? {
        printer.status(format!("the card carries a recorded human review: its section is taken from the published `README.md` ({})", review.display()));
        plan.review_dir = Some(review);
    }
    Ok(plan)
}

/// Run the build of `plan` through its `release` stage; returns where it published the
/// release.
fn rebuild(plan: RunPlan, printer: Printer) -> anyhow::Result<PathBuf> {
    let rebuilt = plan.publish_dir.clone();
    let engine = Engine::new(plan, printer, false)?;
    engine.run_until(StageName::Release)?;
    Ok(rebuilt)
}

/// The rebuilt release at `rebuilt` against the published MANIFEST (`published_manifest`,
/// its bytes), every difference printed and sorted into `found`'s layers: a provenance file
/// ([`PROVENANCE_FILES`]) or a MANIFEST that differs only in the versions it records is
/// provenance; any other file, or field of the MANIFEST, is data. Where the published files
/// are at hand (`published`, the release folder), a differing file is described by its first
/// differing row and field: a Parquet table's row and column, a JSON Lines file's line and
/// field, a TSV file's line and column, another text file's line.
fn compare_rebuilt(
    manifest: &ReleaseManifest,
    published_manifest: &[u8],
    published: Option<&Path>,
    rebuilt: &Path,
    found: &mut Verified,
    printer: &Printer,
) -> anyhow::Result<()> {
    // The card last: it is made from the data, so it differs when they do.
    let mut diffs = damage(&manifest.files, &hash_tree(rebuilt)?);
    diffs.sort_by_key(|d| d.file == coreb_data::releases::CARD);
    for mut d in diffs {
        if d.kind == "differs" && PROVENANCE_FILES.contains(&d.file.as_str()) {
            printer.out(format!("provenance: {d}"));
            found.provenance.push(d.file.clone());
            continue;
        }
        if let (Some(dir), "differs") = (published, d.kind) {
            let (a, b) = (dir.join(&d.file), rebuilt.join(&d.file));
            let how = if d.file.ends_with(".parquet") {
                Some(describe_table_difference(&a, &b))
            } else if d.file.ends_with(".gz") {
                None
            } else {
                Some(describe_text_difference(&a, &b))
            };
            if let Some(how) = how {
                d.detail = format!("{}; {how}", d.detail);
            }
        }
        printer.out(format!("rebuilt:   {d}"));
        found.data.push(d.to_string());
    }
    let rebuilt_manifest = fs_err::read(rebuilt.join("MANIFEST.json"))?;
    match manifest_difference(published_manifest, &rebuilt_manifest) {
        ManifestDifference::Same => {}
        ManifestDifference::Provenance(versions) => {
            for v in &versions {
                printer.out(format!("toolchain: {v}"));
            }
            printer.out(
                "provenance: differs   MANIFEST.json: only in the versions it records (and the entries of the files above)",
            );
            found.provenance.push("MANIFEST.json".to_owned());
            found.versions = versions;
        }
        ManifestDifference::Data(how) => {
            let line = format!("differs   MANIFEST.json: {how}");
            printer.out(format!("rebuilt:   {line}"));
            found.data.push(line);
        }
    }
    Ok(())
}

/// The rebuilt release exported as `coreb export` writes it, against the export's data files
/// of its split (`data/<config>/<split>.parquet`): one line per difference.
fn compare_export(
    export: &Path,
    rebuilt: &Path,
    version: &str,
    scratch: &Path,
    printer: &Printer,
) -> anyhow::Result<Vec<String>> {
    let out = scratch.join("export");
    super::export::export_hf_coreb(rebuilt, &out)
        .with_context(|| format!("exporting the rebuilt release `{version}`"))?;
    let split = super::export::split_name(version);
    let mut problems = Vec::new();
    for config in coreb_stages::release::CONFIGS {
        let rel = format!("data/{config}/{split}.parquet");
        let (published, again) = (export.join(&rel), out.join(&rel));
        let line = match fs_err::symlink_metadata(&published) {
            Err(_) => Some(format!("missing   {rel}")),
            Ok(m) if !m.is_file() => Some(format!("not a file {rel}")),
            Ok(_)
                if coreb_base::hashing::sha256_file(&published)?
                    == coreb_base::hashing::sha256_file(&again)? =>
            {
                None
            }
            Ok(_) => Some(format!(
                "differs   {rel}: {}",
                describe_table_difference(&published, &again)
            )),
        };
        if let Some(l) = line {
            printer.out(format!("exported:  {l}"));
            problems.push(l);
        }
    }
    Ok(problems)
}

/// Where two text files first differ, in words (for a `differs` line): the line, and in a
/// JSON Lines file the field, in a TSV file the column (named by the header line).
pub fn describe_text_difference(published: &Path, rebuilt: &Path) -> String {
    match first_line_difference(published, rebuilt) {
        Ok(Some(d)) => d,
        Ok(None) => "the same lines (the files differ in their line endings)".into(),
        Err(e) => format!("cannot compare the files: {e:#}"),
    }
}

/// The first line where the text file at `rebuilt` differs from the one at `published`,
/// read line by line; `None` when every line is the same.
fn first_line_difference(published: &Path, rebuilt: &Path) -> anyhow::Result<Option<String>> {
    use std::io::BufRead as _;
    let lines = |p: &Path| -> anyhow::Result<_> {
        Ok(std::io::BufReader::new(fs_err::File::open(p)?).split(b'\n'))
    };
    let (mut a, mut b) = (lines(published)?, lines(rebuilt)?);
    let name = published.to_string_lossy();
    let (jsonl, tsv) = (name.ends_with(".jsonl"), name.ends_with(".tsv"));
    let mut header: Vec<String> = Vec::new();
    for n in 1usize.. {
        let (x, y) = (a.next().transpose()?, b.next().transpose()?);
        let (x, y) = match (x, y) {
            (None, None) => return Ok(None),
            (Some(x), Some(y)) if x == y => {
                if n == 1 && tsv {
                    header = String::from_utf8_lossy(&x)
                        .split('\t')
                        .map(str::to_owned)
                        .collect();
                }
                continue;
            }
            (x, y) => (x, y),
        };
        let shown = |l: &Option<Vec<u8>>| match l {
            None => "nothing (the file ends)".to_owned(),
            Some(l) => format!("`{}`", clip(&String::from_utf8_lossy(l))),
        };
        let (Some(xl), Some(yl)) = (&x, &y) else {
            return Ok(Some(format!(
                "first difference at line {n}: published {}, rebuilt {}",
                shown(&x),
                shown(&y)
            )));
        };
        if jsonl
            && let (Ok(va), Ok(vb)) = (
                serde_json::from_slice::<serde_json::Value>(xl),
                serde_json::from_slice::<serde_json::Value>(yl),
            )
            && let Some((field, pa, pb)) = first_json_difference(&va, &vb, "")
        {
            return Ok(Some(format!(
                "first difference at line {n}, field `{field}`: published {pa}, rebuilt {pb}"
            )));
        }
        if tsv {
            let (xs, ys) = (String::from_utf8_lossy(xl), String::from_utf8_lossy(yl));
            let (ca, cb): (Vec<&str>, Vec<&str>) =
                (xs.split('\t').collect(), ys.split('\t').collect());
            if ca.len() == cb.len()
                && let Some(i) = ca.iter().zip(&cb).position(|(p, q)| p != q)
            {
                let column = header
                    .get(i)
                    .map_or_else(|| format!("{}", i + 1), |h| format!("{} (`{h}`)", i + 1));
                return Ok(Some(format!(
                    "first difference at line {n}, column {column}: published `{}`, rebuilt `{}`",
                    clip(ca[i]),
                    clip(cb[i])
                )));
            }
        }
        return Ok(Some(format!(
            "first difference at line {n}: published {}, rebuilt {}",
            shown(&x),
            shown(&y)
        )));
    }
    Ok(None)
}

/// Where two Parquet tables first differ, in words (for a `differs` line).
pub fn describe_table_difference(published: &Path, rebuilt: &Path) -> String {
    match first_table_difference(published, rebuilt) {
        Ok(Some(d)) => d,
        Ok(None) => "the same rows and columns (the files differ in their encoding)".into(),
        Err(e) => format!("cannot compare the tables: {e:#}"),
    }
}

/// The first row and column where the Parquet table at `rebuilt` differs from the one at
/// `published` ("row 3, column `text`: published …, rebuilt …"), or how their columns or row
/// counts differ; `None` when they hold the same values.
pub fn first_table_difference(published: &Path, rebuilt: &Path) -> anyhow::Result<Option<String>> {
    let read = |path: &Path| -> anyhow::Result<arrow_array::RecordBatch> {
        let batches: Vec<arrow_array::RecordBatch> = coreb_data::tables::read_batches(path, 8192)?
            .collect::<Result<_, _>>()
            .with_context(|| format!("reading `{}` as Parquet", path.display()))?;
        let schema = match batches.first() {
            Some(b) => b.schema(),
            None => {
                return Ok(arrow_array::RecordBatch::new_empty(std::sync::Arc::new(
                    arrow_schema::Schema::empty(),
                )));
            }
        };
        Ok(arrow_select::concat::concat_batches(&schema, &batches)?)
    };
    let (a, b) = (
        read(published).context("the published table")?,
        read(rebuilt).context("the rebuilt table")?,
    );
    let fields = |batch: &arrow_array::RecordBatch| {
        batch
            .schema()
            .fields()
            .iter()
            .map(|f| format!("{}: {}", f.name(), f.data_type()))
            .collect::<Vec<_>>()
    };
    if a.schema().fields() != b.schema().fields() {
        let (fa, fb) = (fields(&a), fields(&b));
        let first = fa
            .iter()
            .zip(&fb)
            .position(|(x, y)| x != y)
            .unwrap_or(fa.len().min(fb.len()));
        let at = |f: &[String]| {
            f.get(first)
                .map_or_else(|| "none".to_owned(), |s| format!("`{s}`"))
        };
        return Ok(Some(format!(
            "columns differ from column {first}: published {}, rebuilt {}",
            at(&fa),
            at(&fb)
        )));
    }
    let rows = a.num_rows().min(b.num_rows());
    let mut first: Option<(usize, usize)> = None;
    for (j, (ca, cb)) in a.columns().iter().zip(b.columns()).enumerate() {
        let limit = first.map_or(rows, |(r, _)| r);
        if ca.slice(0, limit).to_data() == cb.slice(0, limit).to_data() {
            continue;
        }
        // The first differing row of this column: halve the prefix that still differs.
        let (mut lo, mut hi) = (0, limit);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if ca.slice(0, mid).to_data() == cb.slice(0, mid).to_data() {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let row = lo;
        if first.is_none_or(|(r, _)| row < r) {
            first = Some((row, j));
        }
    }
    let schema = a.schema();
    if let Some((row, j)) = first {
        let name = schema.field(j).name();
        // A verdict (`code_corpus.passed`): the judge here decided the solution otherwise.
        let verdict = match (name.as_str(), a.column_by_name("code_id")) {
            ("passed", Some(id)) if row < id.len() => format!(
                " (the verdict of {}: the judge decided it otherwise here)",
                cell(id, row)
            ),
            _ => String::new(),
        };
        return Ok(Some(format!(
            "first difference at row {row}, column `{name}`: published {}, rebuilt {}{verdict}",
            cell(a.column(j), row),
            cell(b.column(j), row)
        )));
    }
    if a.num_rows() != b.num_rows() {
        return Ok(Some(format!(
            "the first {rows} rows are the same; published {} rows, rebuilt {} (first differing row {rows})",
            a.num_rows(),
            b.num_rows()
        )));
    }
    Ok(None)
}

/// One cell, shown briefly: a string or number as such, anything else by its type.
fn cell(array: &arrow_array::ArrayRef, row: usize) -> String {
    use arrow_array::Array as _;
    if array.is_null(row) {
        return "null".into();
    }
    let any = array.as_any();
    let shown = if let Some(s) = any.downcast_ref::<arrow_array::StringArray>() {
        format!("{:?}", s.value(row))
    } else if let Some(s) = any.downcast_ref::<arrow_array::LargeStringArray>() {
        format!("{:?}", s.value(row))
    } else if let Some(v) = any.downcast_ref::<arrow_array::Int64Array>() {
        v.value(row).to_string()
    } else if let Some(v) = any.downcast_ref::<arrow_array::Int32Array>() {
        v.value(row).to_string()
    } else if let Some(v) = any.downcast_ref::<arrow_array::BooleanArray>() {
        v.value(row).to_string()
    } else {
        return format!("a {} value", array.data_type());
    };
    if shown.chars().count() > 80 {
        format!("{}…", shown.chars().take(80).collect::<String>())
    } else {
        shown
    }
}

/// Rebuild a release without a kit where it was built: the embedded build manifest resolved
/// from the release's location, so that its relative paths (sources, response store) mean
/// the same; output in a temporary directory.
fn rebuild_where_built(
    dir: &Path,
    trust_release_sandbox: bool,
    printer: Printer,
) -> anyhow::Result<Verified> {
    let (manifest, damaged) = checksums(dir)?;
    let mut found = Verified {
        version: manifest.version.clone(),
        what: format!("{} files", manifest.files.len() + 1),
        data: damaged.iter().map(ToString::to_string).collect(),
        ..Verified::default()
    };

    let embedded = EmbeddedManifest::read(dir)?;
    embedded.check_sandbox(trust_release_sandbox)?;
    for p in &found.data {
        printer.out(format!("published: {p}"));
    }
    let base = embedded.dir();
    if !base.is_dir() {
        bail!(
            "cannot rebuild: the release carries no regeneration kit and the build manifest's directory `{}` does not exist",
            base.display()
        );
    }
    let scratch = tempfile::tempdir()?;
    let mut plan = RunPlan::resolve(&embedded.path, embedded.file.clone(), None)?;
    plan.manifest_text = manifest.build_manifest.text.clone();
    // A rebuild never calls an endpoint: every answer must come from the response store.
    plan.llm.mode = coreb_llm::StoreMode::Replay;
    plan.output_dir = scratch.path().join("build");
    plan.publish_dir = scratch.path().join("release");
    printer.status(format!(
        "rebuilding `{}` in {}",
        manifest.version,
        scratch.path().display()
    ));
    let rebuilt = rebuild(plan, printer)?;
    compare_rebuilt(
        &manifest,
        &fs_err::read(&embedded.manifest_file)?,
        Some(dir),
        &rebuilt,
        &mut found,
        &printer,
    )?;
    Ok(found)
}

/// How a rebuilt MANIFEST differs from the published one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ManifestDifference {
    /// Byte for byte the same.
    Same,
    /// Only in the provenance ([`PROVENANCE_FIELDS`]) and the files' entries (each file is
    /// compared on its own): one line per version that differs (`java `javac`: 17.0.15 in
    /// the release, 17.0.19 here`).
    Provenance(Vec<String>),
    /// In the data: the first differing field, in words.
    Data(String),
}

/// The published and the rebuilt MANIFEST, in two layers: the same, different only in the
/// versions they record (the provenance; the file entries are left to the file comparison),
/// or different in a field of the data (named: ``field `counts.qrels.anchors`: published 39,
/// rebuilt 38``).
pub fn manifest_difference(published: &[u8], rebuilt: &[u8]) -> ManifestDifference {
    use serde_json::Value;
    if published == rebuilt {
        return ManifestDifference::Same;
    }
    let parse = |bytes: &[u8], which: &str| {
        serde_json::from_slice::<Value>(bytes).map_err(|e| {
            ManifestDifference::Data(format!("the {which} MANIFEST is not JSON ({e})"))
        })
    };
    let (a, b) = match (parse(published, "published"), parse(rebuilt, "rebuilt")) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    let mut versions = Vec::new();
    let text = |v: Option<&Value>| match v {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => "(none)".to_owned(),
    };
    let (ca, cb) = (a.pointer("/tool_version"), b.pointer("/tool_version"));
    if ca != cb {
        versions.push(format!(
            "coreb: {} in the release, {} here",
            text(ca),
            text(cb)
        ));
    }
    let none = Value::Null;
    versions.extend(toolchain_notes(
        a.pointer("/stages/execute/toolchains").unwrap_or(&none),
        b.pointer("/stages/execute/toolchains").unwrap_or(&none),
    ));
    // The published MANIFEST with the rebuilt one's provenance and file entries: written as
    // coreb writes it, it is the rebuilt one when nothing else differs (and the published one
    // when it was written as coreb writes it).
    let as_coreb_writes = |v: &Value| {
        serde_json::from_value::<ReleaseManifest>(v.clone())
            .ok()
            .and_then(|m| serde_json::to_string_pretty(&m).ok())
            .map(|t| t + "\n")
    };
    let mut same = a.clone();
    for pointer in PROVENANCE_FIELDS.into_iter().chain(["/files"]) {
        set_pointer(&mut same, pointer, b.pointer(pointer).cloned());
    }
    let canonical = as_coreb_writes(&a).as_deref().map(str::as_bytes) == Some(published);
    if canonical && as_coreb_writes(&same).as_deref().map(str::as_bytes) == Some(rebuilt) {
        return ManifestDifference::Provenance(versions);
    }
    ManifestDifference::Data(match first_json_difference(&same, &b, "") {
        Some((field, x, y)) => format!("field `{field}`: published {x}, rebuilt {y}"),
        None => "the same fields, not written as coreb writes them".to_owned(),
    })
}

/// When two MANIFESTs differ only in the versions they record (and the files' entries), one
/// line per version that differs (none: the same); `None` when a field of the data differs.
pub fn toolchain_difference(published: &[u8], rebuilt: &[u8]) -> Option<Vec<String>> {
    match manifest_difference(published, rebuilt) {
        ManifestDifference::Same => Some(Vec::new()),
        ManifestDifference::Provenance(versions) => Some(versions),
        ManifestDifference::Data(_) => None,
    }
}

/// `value` at the JSON `pointer` set to `to` (removed when `None`); a missing parent is left
/// missing.
fn set_pointer(value: &mut serde_json::Value, pointer: &str, to: Option<serde_json::Value>) {
    let (parent, key) = pointer.rsplit_once('/').unwrap_or(("", pointer));
    let Some(serde_json::Value::Object(map)) = value.pointer_mut(parent) else {
        return;
    };
    match to {
        Some(v) => {
            map.insert(key.to_owned(), v);
        }
        None => {
            map.remove(key);
        }
    }
}

/// One line per program whose version differs between two `toolchains` objects (language →
/// program → version): ``java `java`: 17.0.15 in the release, 17.0.19 here``, the versions
/// shown by their first differing word.
///
/// A version one side does not record (a container's `deb:<package>` versions, where the
/// other build ran outside it) reads "none recorded".
fn toolchain_notes(published: &serde_json::Value, rebuilt: &serde_json::Value) -> Vec<String> {
    use std::collections::BTreeSet;
    let (ta, tb) = (
        published.as_object().cloned().unwrap_or_default(),
        rebuilt.as_object().cloned().unwrap_or_default(),
    );
    let mut notes = Vec::new();
    let languages: BTreeSet<&String> = ta.keys().chain(tb.keys()).collect();
    for lang in languages {
        let (pa, pb) = (
            ta.get(lang).and_then(|v| v.as_object()),
            tb.get(lang).and_then(|v| v.as_object()),
        );
        let programs: BTreeSet<&String> = pa
            .into_iter()
            .flat_map(|m| m.keys())
            .chain(pb.into_iter().flat_map(|m| m.keys()))
            .collect();
        for program in programs {
            let version = |m: Option<&serde_json::Map<String, serde_json::Value>>| {
                m.and_then(|m| m.get(program))
                    .and_then(|v| v.as_str())
                    .unwrap_or(NOT_RECORDED)
                    .to_owned()
            };
            let (va, vb) = (version(pa), version(pb));
            if va != vb {
                let (sa, sb) = if va == NOT_RECORDED || vb == NOT_RECORDED {
                    (va, vb)
                } else {
                    versions_apart(&va, &vb)
                };
                notes.push(format!(
                    "{lang} `{program}`: {sa} in the release, {sb} here"
                ));
            }
        }
    }
    notes
}

const NOT_RECORDED: &str = "none recorded";

/// The versions verify's last line names: three at most, those both sides record first (a
/// patch release rather than a package list one side lacks); every one has its `toolchain:`
/// line above it.
fn summary_versions(versions: &[String]) -> String {
    let mut named: Vec<&str> = versions.iter().map(String::as_str).collect();
    named.sort_by_key(|v| v.contains(NOT_RECORDED));
    match named.len() {
        0 => "no version".to_owned(),
        1..=3 => named.join("; "),
        n => format!(
            "{}; and {} more (the `toolchain:` lines above)",
            named[..2].join("; "),
            n - 2
        ),
    }
}

/// Two version strings shown by the first word where they differ (`openjdk version "17.0.15"
/// 2025-04-15; …` and `… "17.0.19" …`: `17.0.15`, `17.0.19`), or whole when their words do not
/// line up.
fn versions_apart(a: &str, b: &str) -> (String, String) {
    let words = |s: &str| -> Vec<String> {
        s.split(|c: char| c.is_whitespace() || c == ';')
            .filter(|w| !w.is_empty())
            .map(|w| {
                w.trim_matches(|c| matches!(c, '"' | '(' | ')' | '[' | ']' | ','))
                    .to_owned()
            })
            .collect()
    };
    let (wa, wb) = (words(a), words(b));
    if wa.len() == wb.len()
        && let Some((x, y)) = wa.iter().zip(&wb).find(|(x, y)| x != y)
    {
        return (x.clone(), y.clone());
    }
    (format!("`{a}`"), format!("`{b}`"))
}

/// The first field (a dotted path, `[i]` for an array's item) where two JSON values differ,
/// and each value there, shown briefly; `None` when they are equal.
fn first_json_difference(
    a: &serde_json::Value,
    b: &serde_json::Value,
    at: &str,
) -> Option<(String, String, String)> {
    use serde_json::Value;
    if a == b {
        return None;
    }
    let shown = |v: Option<&Value>| match v {
        None => "nothing".to_owned(),
        Some(v) => clip(&v.to_string()),
    };
    let join = |key: &str| {
        if at.is_empty() {
            key.to_owned()
        } else {
            format!("{at}.{key}")
        }
    };
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for key in keys {
                match (x.get(key), y.get(key)) {
                    (Some(va), Some(vb)) => {
                        if let Some(d) = first_json_difference(va, vb, &join(key)) {
                            return Some(d);
                        }
                    }
                    (va, vb) => return Some((join(key), shown(va), shown(vb))),
                }
            }
            None
        }
        (Value::Array(x), Value::Array(y)) => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                if let Some(d) = first_json_difference(va, vb, &format!("{at}[{i}]")) {
                    return Some(d);
                }
            }
            Some((
                at.to_owned(),
                format!("{} items", x.len()),
                format!("{} items", y.len()),
            ))
        }
        _ => Some((at.to_owned(), shown(Some(a)), shown(Some(b)))),
    }
}

/// At most 80 characters of `s`, an ellipsis after.
fn clip(s: &str) -> String {
    if s.chars().count() > 80 {
        format!("{}…", s.chars().take(80).collect::<String>())
    } else {
        s.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(sha: &str) -> FileEntry {
        FileEntry {
            sha256: sha.into(),
            bytes: 1,
        }
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
        assert_eq!(
            differences(&expected, &actual),
            [
                "differs   b: expected sha256 2, got 9",
                "missing   c",
                "extra     d"
            ]
        );
        assert!(differences(&expected, &expected).is_empty());
    }

    #[test]
    fn a_differing_table_names_its_first_differing_row_and_column() {
        use coreb_data::tables::columns::{Column, write};
        let dir = tempfile::tempdir().unwrap();
        let table = |name: &str, texts: &[&str], ids: &[i64]| {
            let path = dir.path().join(name);
            let texts = texts.iter().map(|t| Some((*t).to_owned())).collect();
            write(
                &path,
                &[
                    Column::int("id", ids.iter().copied().map(Some).collect()),
                    Column::str("text", texts),
                ],
            )
            .unwrap();
            path
        };
        let published = table("a.parquet", &["x", "y", "z", "w"], &[1, 2, 3, 4]);
        assert_eq!(
            first_table_difference(&published, &published).unwrap(),
            None
        );
        // Row 2 differs in `text`, row 3 in `id`: the first row wins.
        let rebuilt = table("b.parquet", &["x", "y", "Z", "w"], &[1, 2, 3, 5]);
        assert_eq!(
            first_table_difference(&published, &rebuilt)
                .unwrap()
                .as_deref(),
            Some("first difference at row 2, column `text`: published \"z\", rebuilt \"Z\"")
        );
        // At one row, the first column in the table's order.
        let both = table("c.parquet", &["x", "Y", "z", "w"], &[1, 9, 3, 4]);
        assert_eq!(
            first_table_difference(&published, &both)
                .unwrap()
                .as_deref(),
            Some("first difference at row 1, column `id`: published 2, rebuilt 9")
        );
        let shorter = table("d.parquet", &["x", "y", "z"], &[1, 2, 3]);
        assert_eq!(
            first_table_difference(&published, &shorter)
                .unwrap()
                .as_deref(),
            Some(
                "the first 3 rows are the same; published 4 rows, rebuilt 3 (first differing row 3)"
            )
        );
        let other = dir.path().join("e.parquet");
        write(
            &other,
            &[
                Column::int("id", vec![Some(1)]),
                Column::int("text", vec![Some(1)]),
            ],
        )
        .unwrap();
        assert_eq!(
            first_table_difference(&published, &other)
                .unwrap()
                .as_deref(),
            Some("columns differ from column 1: published `text: Utf8`, rebuilt `text: Int64`")
        );
        // A truncated file: the comparison says it cannot read it, naming it.
        let bytes = fs_err::read(&published).unwrap();
        let damaged = dir.path().join("damaged.parquet");
        fs_err::write(&damaged, &bytes[..bytes.len() / 2]).unwrap();
        let said = describe_table_difference(&damaged, &published);
        assert!(
            said.starts_with("cannot compare the tables") && said.contains("damaged.parquet"),
            "{said}"
        );
    }

    #[test]
    fn names_of_a_release_stay_inside_it() {
        for bad in [
            "../x",
            "a/../../x",
            "/etc/passwd",
            "",
            "a//b",
            "a\\..\\b",
            "./a",
        ] {
            assert!(safe_relative(bad, "`files`").is_err(), "{bad}");
        }
        assert_eq!(
            safe_relative("regeneration/prompts/a.toml", "`files`").unwrap(),
            PathBuf::from("regeneration/prompts/a.toml")
        );
    }

    /// The sample's MANIFEST, as a JSON value to change.
    fn sample_manifest() -> serde_json::Value {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../releases/sample/v202503/MANIFEST.json");
        serde_json::from_slice(&fs_err::read(path).unwrap()).unwrap()
    }

    fn written(v: &serde_json::Value) -> Vec<u8> {
        let m: ReleaseManifest = serde_json::from_value(v.clone()).unwrap();
        (serde_json::to_string_pretty(&m).unwrap() + "\n").into_bytes()
    }

    #[test]
    fn a_manifest_differs_in_its_provenance_or_in_its_data() {
        let published = sample_manifest();
        let bytes = written(&published);
        assert_eq!(
            manifest_difference(&bytes, &bytes),
            ManifestDifference::Same
        );
        // Another JDK patch release, another coreb, another checksum of `versions.json`.
        let mut other = published.clone();
        let java = &mut other["stages"]["execute"]["toolchains"]["java"];
        java["java"] = java["java"]
            .as_str()
            .unwrap()
            .replace("17.0.15", "17.0.19")
            .into();
        java["javac"] = "javac 17.0.19".into();
        java["deb:openjdk-17-jdk-headless"] = "17.0.19+10-1~deb12u1".into();
        other["tool_version"] = "0.1.1".into();
        other["files"]["regeneration/versions.json"]["sha256"] = "0".repeat(64).into();
        assert_eq!(
            manifest_difference(&bytes, &written(&other)),
            ManifestDifference::Provenance(vec![
                "coreb: 0.1.0 in the release, 0.1.1 here".to_owned(),
                "java `deb:openjdk-17-jdk-headless`: none recorded in the release, 17.0.19+10-1~deb12u1 here".to_owned(),
                "java `java`: 17.0.15 in the release, 17.0.19 here".to_owned(),
                "java `javac`: 17.0.15 in the release, 17.0.19 here".to_owned(),
            ])
        );
        assert!(toolchain_difference(&bytes, &written(&other)).is_some());
        // A verdict's count of the test check: the data, named by its field.
        let mut verdict = other.clone();
        verdict["stages"]["execute"]["test_check"]["tests_passed"] = 7.into();
        assert_eq!(
            manifest_difference(&bytes, &written(&verdict)),
            ManifestDifference::Data(
                "field `stages.execute.test_check.tests_passed`: published 8, rebuilt 7".into()
            )
        );
        assert_eq!(toolchain_difference(&bytes, &written(&verdict)), None);
        // The same values written otherwise (not as coreb writes them) are not the same file.
        let compact = serde_json::to_vec(&published).unwrap();
        assert_eq!(
            manifest_difference(&compact, &bytes),
            ManifestDifference::Data("the same fields, not written as coreb writes them".into())
        );
    }

    #[test]
    fn a_differing_text_file_names_its_line_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str, text: &str| {
            let path = dir.path().join(name);
            fs_err::write(&path, text).unwrap();
            path
        };
        let a = file(
            "a.tsv",
            "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t1\n",
        );
        let b = file(
            "b.tsv",
            "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t2\n",
        );
        assert_eq!(
            describe_text_difference(&a, &b),
            "first difference at line 3, column 3 (`score`): published `1`, rebuilt `2`"
        );
        let a = file(
            "a.jsonl",
            "{\"_id\": \"d1\", \"text\": \"x\"}\n{\"_id\": \"d2\", \"text\": \"y\"}\n",
        );
        let b = file(
            "b.jsonl",
            "{\"_id\": \"d1\", \"text\": \"x\"}\n{\"_id\": \"d2\", \"text\": \"z\"}\n",
        );
        assert_eq!(
            describe_text_difference(&a, &b),
            "first difference at line 2, field `text`: published \"y\", rebuilt \"z\""
        );
        let c = file("c.md", "# v1\n");
        let d = file("d.md", "# v1\n\n## Human validation\n");
        assert_eq!(
            describe_text_difference(&c, &d),
            "first difference at line 2: published nothing (the file ends), rebuilt ``"
        );
    }

    #[test]
    fn the_summary_names_versions_both_sides_record_first_and_three_at_most() {
        let line = |lang: &str, a: &str, b: &str| format!("{lang}: {a} in the release, {b} here");
        let versions = vec![
            line("cpp `deb:g++`", NOT_RECORDED, "4:12.2.0-3"),
            line("go `deb:golang-go`", NOT_RECORDED, "2:1.19~1"),
            line("java `java`", "17.0.15", "17.0.19"),
            line("java `javac`", "17.0.15", "17.0.19"),
        ];
        assert_eq!(
            summary_versions(&versions),
            "java `java`: 17.0.15 in the release, 17.0.19 here; java `javac`: 17.0.15 in the release, 17.0.19 here; and 2 more (the `toolchain:` lines above)"
        );
        assert_eq!(summary_versions(&versions[..1]), versions[0]);
        assert_eq!(summary_versions(&[]), "no version");
    }

    #[test]
    fn versions_are_shown_by_their_first_differing_word() {
        assert_eq!(
            versions_apart(
                "openjdk version \"17.0.15\" 2025-04-15; OpenJDK Runtime Environment (build 17.0.15+6-Debian-1deb12u1)",
                "openjdk version \"17.0.19\" 2025-10-21; OpenJDK Runtime Environment (build 17.0.19+10-Debian-1deb12u1)"
            ),
            ("17.0.15".to_owned(), "17.0.19".to_owned())
        );
        assert_eq!(
            versions_apart(
                "g++ (Debian 12.2.0-14+deb12u1) 12.2.0",
                "g++ (Debian 12.2.0-14+deb12u2) 12.2.0"
            ),
            (
                "12.2.0-14+deb12u1".to_owned(),
                "12.2.0-14+deb12u2".to_owned()
            )
        );
        assert_eq!(
            versions_apart("Python 3.11.2", "Python 3.12.1 (x)"),
            (
                "`Python 3.11.2`".to_owned(),
                "`Python 3.12.1 (x)`".to_owned()
            )
        );
    }
}
