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
//! unless `--trust-release-sandbox` is given ([`check_release_sandbox`]), in the kit's
//! `build.toml` too; the kit's directories are its own (a `build.toml` pointing one elsewhere
//! is refused); no name of the release reaches outside its folder or the temporary directory
//! (links are never followed, `..` and absolute names are refused). A machine whose
//! toolchains differ from the ones the MANIFEST records (`stages.execute.toolchains`) can
//! still reproduce every file: that difference alone is reported, not counted as a failure;
//! any verdict it changes shows up in the data files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use crate::artifacts::hash_tree;
use crate::engine::Engine;
use crate::engine::stage_name::StageName;
use crate::manifest::{
    EmbeddedManifest, ManifestFile, RunPlan, check_release_sandbox, lexical_join,
};
use crate::printer::Printer;
use coreb_data::releases::{FileEntry, ReleaseManifest};

pub use crate::engine::{KIT_ANSWERS, KIT_DIR, KIT_MANIFEST};

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
pub fn verify(
    release: &Path,
    sources: Option<&Path>,
    trust_release_sandbox: bool,
    printer: Printer,
) -> anyhow::Result<Vec<String>> {
    let given = fs_err::canonicalize(release)?;
    let (dir, located) = locate(&given)?;
    match located {
        Located::Release if fs_err::symlink_metadata(dir.join(KIT_DIR)).is_ok() => {
            rebuild_from_kit(&dir, None, sources, trust_release_sandbox, printer)
        }
        Located::Release => {
            if sources.is_some() {
                bail!(
                    "`{}` carries no regeneration kit (`{KIT_DIR}/`): `--sources` rebuilds from a kit; without it the release is rebuilt from its build manifest's paths",
                    dir.display()
                );
            }
            rebuild_where_built(&dir, trust_release_sandbox, printer)
        }
        Located::ExportedKit { export } => {
            rebuild_from_kit(&dir, Some(export), sources, trust_release_sandbox, printer)
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

/// The kit's `build.toml`, checked: parsed (a damaged file is an error with its line), its
/// four directories the kit's own (`build`, `releases`, `store`, `prompts`), its local
/// sources in `sources/`, no sandbox settings unless trusted.
fn check_kit_manifest(path: &Path, trusted: bool) -> anyhow::Result<()> {
    let bytes = fs_err::read(path)?;
    let text = String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "`{}`: not UTF-8 text (byte {})",
            path.display(),
            e.utf8_error().valid_up_to()
        )
    })?;
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        anyhow::anyhow!("`{}`: {}", path.display(), e.to_string().trim_end())
    })?;
    for (key, kit_value) in [
        ("output_dir", "build"),
        ("releases_dir", "releases"),
        ("response_store", "store"),
        ("prompts_dir", "prompts"),
    ] {
        match table.get(key) {
            Some(toml::Value::String(v)) if v == kit_value => {}
            Some(v) => bail!(
                "`{}`: `{key} = {v}`: a kit's `{key}` is `\"{kit_value}\"`, inside the kit (refused: a kit never points a rebuild outside the temporary directory it is rebuilt in)",
                path.display()
            ),
            None => bail!(
                "`{}`: no `{key}` (a kit's is `\"{kit_value}\"`)",
                path.display()
            ),
        }
    }
    for (i, source) in table
        .get("sources")
        .and_then(toml::Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let Some(url) = source.get("url").and_then(toml::Value::as_str) else {
            continue;
        };
        if url.contains("://") {
            continue;
        }
        let file = url
            .strip_prefix("sources/")
            .filter(|f| !f.is_empty() && !f.contains('/') && *f != ".." && *f != ".");
        if file.is_none() {
            bail!(
                "`{}`: `sources[{i}].url = \"{url}\"`: a kit's local source is `sources/<file>` (refused: it would reach outside the kit)",
                path.display()
            );
        }
    }
    // Whether it says what the embedded manifest says is checked by the rebuild: the rebuilt
    // kit's `build.toml` is made from the embedded manifest, and compared.
    check_release_sandbox(&text, path, trusted)
}

/// Decompress the kit's answers (`answers.jsonl.gz`) and import them into the response
/// store `store` (the store's own import: every key checked against its request). A
/// truncated or corrupt file, or an entry that is not a valid one, is an error naming
/// `shown` (the file in the release) and the line. Returns the number of answers.
///
/// A downloaded kit is untrusted: its answers are decompressed as a stream within bounds that
/// do not grow with the file ([`answers_bounds`]): a line longer than [`ANSWERS_MAX_LINE`],
/// more than [`ANSWERS_MAX_LINES`] lines, or more than [`ANSWERS_MAX_RATIO`] times the
/// compressed size (at least 64 MiB, at most [`ANSWERS_MAX_BYTES`]) is refused at its first
/// byte past, before it fills the disk or the memory.
pub fn import_answers(gz: &Path, shown: &Path, work: &Path, store: &Path) -> anyhow::Result<u64> {
    let bounds = answers_bounds(fs_err::metadata(gz)?.len());
    import_answers_capped(gz, shown, work, store, &bounds)
}

/// The human review a published card carries (`coreb review report --record` adds its
/// section; it is a person's input, not a build output, so the kit does not hold it): written
/// into `to` as the `release` stage reads a recorded review (`card.md`, and `review.json`
/// naming the MANIFEST the review was of: the published one with the card before the
/// section). `None` when the card has no such section, or it is not the last one (then the
/// rebuild's card lacks it and the comparison says so).
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
    fs_err::write(
        to.join(coreb_curation::review::report::CARD_SECTION),
        section,
    )?;
    fs_err::write(
        to.join("review.json"),
        serde_json::to_string_pretty(
            &serde_json::json!({ "release": manifest.version, "release_sha256": digest }),
        )? + "\n",
    )?;
    Ok(Some(to.to_owned()))
}

/// How many times its compressed size a kit's answers may decompress to.
pub const ANSWERS_MAX_RATIO: u64 = 200;
/// The most a kit's answers may decompress to, whatever their compressed size.
pub const ANSWERS_MAX_BYTES: u64 = 4 << 30;
/// The longest line (one stored answer, its request with it) of a kit's answers.
pub const ANSWERS_MAX_LINE: usize = 32 << 20;
/// The most lines (answers) of a kit's answers.
pub const ANSWERS_MAX_LINES: u64 = 10_000_000;

/// The bounds of the answers of a kit whose `answers.jsonl.gz` has `compressed` bytes.
pub fn answers_bounds(compressed: u64) -> coreb_base::jsonl::LineBounds {
    coreb_base::jsonl::LineBounds {
        total_bytes: compressed
            .saturating_mul(ANSWERS_MAX_RATIO)
            .clamp(64 << 20, ANSWERS_MAX_BYTES),
        line_bytes: ANSWERS_MAX_LINE,
        lines: ANSWERS_MAX_LINES,
    }
}

fn import_answers_capped(
    gz: &Path,
    shown: &Path,
    work: &Path,
    store: &Path,
    bounds: &coreb_base::jsonl::LineBounds,
) -> anyhow::Result<u64> {
    use coreb_base::jsonl::BoundedError;
    use std::io::Write as _;
    let jsonl = work.join("answers.jsonl");
    let reader = std::io::BufReader::new(flate2::read::GzDecoder::new(fs_err::File::open(gz)?));
    let mut out = std::io::BufWriter::new(fs_err::File::create(&jsonl)?);
    let read = coreb_base::jsonl::bounded_lines(reader, bounds, |line| out.write_all(line));
    if let Err(e) = read {
        drop(out);
        let _ = fs_err::remove_file(&jsonl);
        let shown = shown.display();
        match e {
            BoundedError::Io { line, source } => {
                bail!("`{shown}`, line {line}: truncated or corrupt gzip data ({source})")
            }
            BoundedError::Truncated { line } => {
                bail!("`{shown}`, line {line}: the file ends inside the line (truncated)")
            }
            other => bail!(
                "`{shown}`, {other} (a kit's answers are at most {ANSWERS_MAX_RATIO}x their compressed size, at least 64 MiB and at most 4 GiB, in lines of at most 32 MiB)"
            ),
        }
    }
    out.flush()?;
    drop(out);
    fs_err::create_dir_all(store)?;
    let at = |line: Option<usize>| line.map(|l| format!(", line {l}")).unwrap_or_default();
    let report = coreb_llm::ResponseStore::open(store)
        .import(&jsonl, false)
        .map_err(|e| match e {
            coreb_llm::StoreError::Parse { line, source, .. } => anyhow::anyhow!(
                "`{}`{}: not a valid response-store entry: {source}",
                shown.display(),
                at(line)
            ),
            coreb_llm::StoreError::Inconsistent { line, problem, .. } => {
                anyhow::anyhow!("`{}`{}: {problem}", shown.display(), at(line))
            }
            other => anyhow::Error::new(other)
                .context(format!("importing the answers of `{}`", shown.display())),
        })?;
    if let Some(key) = report.conflicts.first() {
        bail!(
            "`{}`: the answer `{key}` is given twice, with different content ({} such key(s))",
            shown.display(),
            report.conflicts.len()
        );
    }
    Ok(report.added + report.unchanged)
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
fn rebuild_from_kit(
    dir: &Path,
    export: Option<Option<PathBuf>>,
    sources: Option<&Path>,
    trusted: bool,
    printer: Printer,
) -> anyhow::Result<Vec<String>> {
    let embedded = EmbeddedManifest::read(dir)?;
    let manifest_path = embedded.manifest_file.clone();
    let manifest = &embedded.release;
    for name in manifest.files.keys() {
        safe_relative(name, &format!("`{}`: `files`", manifest_path.display()))?;
    }
    // 1. Checksums first: every file of the release (of the kit, for an exported kit).
    let kit_prefix = format!("{KIT_DIR}/");
    let (kit_dir, damaged) = match export {
        None => {
            let (_, damaged) = checksums(dir)?;
            (dir.join(KIT_DIR), damaged)
        }
        Some(_) => (dir.to_owned(), exported_kit_checksums(dir, manifest)?),
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
    let mut problems: Vec<String> = damaged.iter().map(ToString::to_string).collect();

    // 2. The manifests: the embedded one and the kit's, neither loosening the sandbox.
    embedded.check_sandbox(trusted)?;
    check_kit_manifest(&kit_dir.join(KIT_MANIFEST), trusted)?;
    let mut file: ManifestFile = embedded.file.clone();

    // 3. The kit, copied file by file (as listed, links never followed) into the scratch.
    let scratch = tempfile::tempdir()?;
    let kit = scratch.path().join("kit");
    fs_err::create_dir_all(&kit)?;
    for name in manifest.files.keys().filter(|p| p.starts_with(&kit_prefix)) {
        let rel = safe_relative(&name[kit_prefix.len()..], "the kit")?;
        let to = kit.join(&rel);
        if let Some(parent) = to.parent() {
            fs_err::create_dir_all(parent)?;
        }
        fs_err::copy(kit_dir.join(&rel), &to)?;
    }
    let shown = |f: &str| kit_dir.join(f);
    let answers = import_answers(
        &kit.join(KIT_ANSWERS),
        &shown(KIT_ANSWERS),
        scratch.path(),
        &kit.join("store"),
    )?;
    printer.status(format!(
        "imported {answers} answers from `{}`",
        shown(KIT_ANSWERS).display()
    ));

    // 4. The sources, by sha256.
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
        coreb_stages::fetch::Source::resolve(&source.name, "x", source.sha256.as_deref(), &kit)
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

    // 5. The plan: every directory in the scratch; earlier releases read beside the release.
    let releases_dir = match (&export, dir.parent()) {
        (None, Some(parent)) => parent.to_owned(),
        _ => scratch.path().join("earlier"),
    };
    file.output_dir = PathBuf::from("build");
    file.prompts_dir = Some(PathBuf::from("prompts"));
    file.response_store = Some(PathBuf::from("store"));
    file.releases_dir = Some(releases_dir);
    file.eval.prompts_file = None;
    let mut plan = RunPlan::resolve(&kit.join(KIT_MANIFEST), file, None).with_context(|| {
        format!(
            "the build manifest embedded in `{}`",
            manifest_path.display()
        )
    })?;
    plan.manifest_text = manifest.build_manifest.text.clone();
    // Recorded as the builder recorded it: relative to where the release belongs. Only named,
    // never opened.
    plan.manifest_path = lexical_join(
        &plan.releases_dir.join(&plan.version),
        Path::new(&manifest.build_manifest.path),
    );
    // A rebuild never calls an endpoint: every answer must come from the kit.
    plan.llm.mode = coreb_llm::StoreMode::Replay;
    plan.publish_dir = scratch.path().join("rebuilt").join(&plan.version);
    if let Some(review) = recorded_review(dir, manifest, &scratch.path().join("review"))? {
        printer.status(format!("the card carries a recorded human review: its section is taken from the published `README.md` ({})", review.display()));
        plan.review_dir = Some(review);
    }
    printer.status(format!(
        "rebuilding `{}` from its kit in {}",
        manifest.version,
        scratch.path().display()
    ));
    let rebuilt = plan.publish_dir.clone();
    let engine = Engine::new(plan, printer, false)?;
    engine.run_until(StageName::Release)?;

    // 6. Every checksum.
    let mut diffs = damage(&manifest.files, &hash_tree(&rebuilt)?);
    for d in &mut diffs {
        let published = dir.join(&d.file);
        if d.kind == "differs" && d.file.ends_with(".parquet") && export.is_none() {
            d.detail = format!(
                "{}; {}",
                d.detail,
                describe_table_difference(&published, &rebuilt.join(&d.file))
            );
        }
    }
    for d in &diffs {
        printer.out(format!("rebuilt:   {d}"));
    }
    problems.extend(diffs.iter().map(ToString::to_string));
    compare_manifests(
        &fs_err::read(&manifest_path)?,
        &fs_err::read(rebuilt.join("MANIFEST.json"))?,
        &mut problems,
        &printer,
    );
    if let Some(Some(export)) = &export {
        problems.extend(compare_export(
            export,
            &rebuilt,
            &manifest.version,
            scratch.path(),
            &printer,
        )?);
    }
    let what = if export.is_some() {
        "kit files and exported tables".to_owned()
    } else {
        format!("{} files", manifest.files.len() + 1)
    };
    if problems.is_empty() {
        printer.out(format!(
            "{}: {what} verified, rebuilt byte-identical from its regeneration kit",
            manifest.version
        ));
    } else {
        printer.out(format!(
            "{}: {} difference(s)",
            manifest.version,
            problems.len()
        ));
    }
    Ok(problems)
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
    crate::ops::export::export_hf_coreb(rebuilt, &out)
        .with_context(|| format!("exporting the rebuilt release `{version}`"))?;
    let split = crate::ops::export::split_name(version);
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

/// The published and the rebuilt MANIFEST: the same, or different only in the toolchain
/// versions (reported, not counted), or a difference.
fn compare_manifests(
    published: &[u8],
    rebuilt: &[u8],
    problems: &mut Vec<String>,
    printer: &Printer,
) {
    if rebuilt == published {
        return;
    }
    match toolchain_difference(published, rebuilt) {
        Some(notes) => {
            for n in notes {
                printer.out(format!("toolchain: {n}"));
            }
            printer
                .out("rebuilt:   MANIFEST.json differs only in the toolchain versions it records");
        }
        None => {
            problems.push("MANIFEST.json differs".into());
            printer.out("rebuilt:   differs   MANIFEST.json");
        }
    }
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
        return Ok(Some(format!(
            "first difference at row {row}, column `{name}`: published {}, rebuilt {}",
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
) -> anyhow::Result<Vec<String>> {
    let (manifest, damaged) = checksums(dir)?;
    let mut problems: Vec<String> = damaged.iter().map(ToString::to_string).collect();

    let embedded = EmbeddedManifest::read(dir)?;
    embedded.check_sandbox(trust_release_sandbox)?;
    for p in &problems {
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
    let engine = Engine::new(plan, printer, false)?;
    engine.run_until(StageName::Release)?;

    let rebuilt = scratch.path().join("release");
    let mut diffs = damage(&manifest.files, &hash_tree(&rebuilt)?);
    for d in diffs
        .iter_mut()
        .filter(|d| d.kind == "differs" && d.file.ends_with(".parquet"))
    {
        d.detail = format!(
            "{}; {}",
            d.detail,
            describe_table_difference(&dir.join(&d.file), &rebuilt.join(&d.file))
        );
    }
    for d in &diffs {
        printer.out(format!("rebuilt:   {d}"));
    }
    problems.extend(diffs.iter().map(ToString::to_string));
    compare_manifests(
        &fs_err::read(&embedded.manifest_file)?,
        &fs_err::read(rebuilt.join("MANIFEST.json"))?,
        &mut problems,
        &printer,
    );
    if problems.is_empty() {
        printer.out(format!(
            "{}: {} files verified, rebuilt byte-identical",
            manifest.version,
            manifest.files.len() + 1
        ));
    } else {
        printer.out(format!(
            "{}: {} difference(s)",
            manifest.version,
            problems.len()
        ));
    }
    Ok(problems)
}

/// When two MANIFESTs differ only in `stages.execute.toolchains`, one line per program whose
/// version differs; `None` when anything else differs.
pub fn toolchain_difference(published: &[u8], rebuilt: &[u8]) -> Option<Vec<String>> {
    let (Ok(mut a), Ok(mut b)) = (
        serde_json::from_slice::<serde_json::Value>(published),
        serde_json::from_slice::<serde_json::Value>(rebuilt),
    ) else {
        return None;
    };
    let pointer = "/stages/execute/toolchains";
    let ta = a
        .pointer_mut(pointer)
        .map(std::mem::take)
        .unwrap_or_default();
    let tb = b
        .pointer_mut(pointer)
        .map(std::mem::take)
        .unwrap_or_default();
    if a != b || ta == tb {
        return None;
    }
    let mut notes = Vec::new();
    let (ta, tb) = (
        ta.as_object().cloned().unwrap_or_default(),
        tb.as_object().cloned().unwrap_or_default(),
    );
    let languages: std::collections::BTreeSet<&String> = ta.keys().chain(tb.keys()).collect();
    for lang in languages {
        let (pa, pb) = (
            ta.get(lang).and_then(|v| v.as_object()),
            tb.get(lang).and_then(|v| v.as_object()),
        );
        let programs: std::collections::BTreeSet<&String> = pa
            .into_iter()
            .flat_map(|m| m.keys())
            .chain(pb.into_iter().flat_map(|m| m.keys()))
            .collect();
        for program in programs {
            let va = pa
                .and_then(|m| m.get(program))
                .and_then(|v| v.as_str())
                .unwrap_or("(none)");
            let vb = pb
                .and_then(|m| m.get(program))
                .and_then(|v| v.as_str())
                .unwrap_or("(none)");
            if va != vb {
                notes.push(format!(
                    "{lang} `{program}`: the release was built with `{va}`, this machine has `{vb}`"
                ));
            }
        }
    }
    Some(notes)
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

    #[test]
    fn answers_import_names_the_line_of_a_bad_entry() {
        use std::io::Write as _;
        let dir = tempfile::tempdir().unwrap();
        let gz = dir.path().join("answers.jsonl.gz");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(b"{\"format\": 1}\n").unwrap();
        fs_err::write(&gz, enc.finish().unwrap()).unwrap();
        let err = import_answers(
            &gz,
            Path::new("kit/answers.jsonl.gz"),
            dir.path(),
            &dir.path().join("store"),
        )
        .unwrap_err();
        assert!(
            format!("{err:#}")
                .starts_with("`kit/answers.jsonl.gz`, line 1: not a valid response-store entry"),
            "{err:#}"
        );
        fs_err::write(&gz, b"not gzip").unwrap();
        let err = import_answers(
            &gz,
            Path::new("kit/answers.jsonl.gz"),
            dir.path(),
            &dir.path().join("store"),
        )
        .unwrap_err();
        assert!(
            format!("{err:#}")
                .starts_with("`kit/answers.jsonl.gz`, line 1: truncated or corrupt gzip data"),
            "{err:#}"
        );
    }

    /// A gzip bomb: past any bound (bytes in all, bytes a line, lines) it is refused, naming
    /// the line, whether the data has newlines or is one endless line; nothing of it is
    /// imported. The bounds of a real kit do not grow with its size.
    #[test]
    fn answers_that_decompress_past_a_bound_are_refused() {
        use std::io::Write as _;
        let dir = tempfile::tempdir().unwrap();
        let gz = dir.path().join("answers.jsonl.gz");
        let bounds = coreb_base::jsonl::LineBounds {
            total_bytes: 6_144,
            line_bytes: 1_024,
            lines: 3_000,
        };
        for (body, said) in [
            (
                b"{}\n".repeat(4000),
                "line 2049: more than 6144 bytes in all",
            ),
            (vec![0u8; 12_000], "line 1: longer than 1024 bytes"),
            (b"\n".repeat(4000), "line 3001: more than 3000 lines"),
        ] {
            let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
            enc.write_all(&body).unwrap();
            fs_err::write(&gz, enc.finish().unwrap()).unwrap();
            let store = dir.path().join("store");
            let err = import_answers_capped(
                &gz,
                Path::new("kit/answers.jsonl.gz"),
                dir.path(),
                &store,
                &bounds,
            )
            .unwrap_err();
            assert!(
                format!("{err:#}").starts_with(&format!("`kit/answers.jsonl.gz`, {said}: refused")),
                "{err:#}"
            );
            assert!(!store.exists(), "nothing imported");
            assert!(!dir.path().join("answers.jsonl").exists());
        }
        let huge = answers_bounds(u64::MAX);
        assert_eq!(
            (huge.total_bytes, huge.line_bytes, huge.lines),
            (ANSWERS_MAX_BYTES, ANSWERS_MAX_LINE, ANSWERS_MAX_LINES)
        );
        assert_eq!(answers_bounds(1).total_bytes, 64 << 20);
    }

    #[test]
    fn only_toolchain_versions_may_differ() {
        let m = |gpp: &str, seed: u64| {
            serde_json::to_vec(&serde_json::json!({"seeds": {"qrels": seed}, "stages": {"execute": {"toolchains": {"cpp": {"g++": gpp}}}}})).unwrap()
        };
        let notes = toolchain_difference(&m("g++ 12", 1), &m("g++ 13", 1)).unwrap();
        assert_eq!(
            notes,
            ["cpp `g++`: the release was built with `g++ 12`, this machine has `g++ 13`"]
        );
        assert_eq!(toolchain_difference(&m("g++ 12", 1), &m("g++ 13", 2)), None);
        assert_eq!(toolchain_difference(&m("g++ 12", 1), &m("g++ 12", 2)), None);
    }
}
