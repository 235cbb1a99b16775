//! Rebuilding a release and comparing it with the published one: from its regeneration kit
//! (`rebuild_from_kit`, in named steps) or where it was built (`rebuild_where_built`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use super::compare::{
    ManifestDifference, describe_table_difference, describe_text_difference, manifest_difference,
};
use super::{
    Build, Verified, checksums, damage, exported_kit_checksums, files_by_sha256, place,
    recorded_review, safe_relative,
};
use crate::artifacts::hash_tree;
use crate::manifest::{EmbeddedManifest, ManifestFile, RunPlan, lexical_join};
use crate::printer::Printer;
use crate::release::kit::{KIT_ANSWERS, KIT_DIR, KIT_MANIFEST, check_kit_manifest, import_answers};
use coreb_data::releases::{PROVENANCE_FILES, ReleaseManifest};

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
pub(super) fn rebuild_from_kit(
    dir: &Path,
    export: Option<Option<PathBuf>>,
    sources: Option<&Path>,
    trusted: bool,
    printer: Printer,
    build: Build<'_>,
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
    let plan = rebuild_plan(dir, &embedded, file, &kit, releases_dir, scratch.path(), &printer)?;
    printer.status(format!(
        "rebuilding `{}` from its kit in {}",
        embedded.release.version,
        scratch.path().display()
    ));
    let rebuilt = rebuild(plan, printer, build)?;
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
        safe_relative(name, &format!("`{}`: `files`", embedded.manifest_file.display()))?;
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
    printer.status(format!("imported {answers} answers from `{}`", shown.display()));
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
        format!("the build manifest embedded in `{}`", embedded.manifest_file.display())
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

/// Run the build of `plan` through its `release` stage (`build`: the engine, which the caller
/// gives); returns where it published the release.
fn rebuild(plan: RunPlan, printer: Printer, build: Build<'_>) -> anyhow::Result<PathBuf> {
    let rebuilt = plan.publish_dir.clone();
    build(plan, printer)?;
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
    crate::release::export::export_hf_coreb(rebuilt, &out)
        .with_context(|| format!("exporting the rebuilt release `{version}`"))?;
    let split = crate::release::export::split_name(version);
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
            Ok(_) => {
                Some(format!("differs   {rel}: {}", describe_table_difference(&published, &again)))
            }
        };
        if let Some(l) = line {
            printer.out(format!("exported:  {l}"));
            problems.push(l);
        }
    }
    Ok(problems)
}

/// Rebuild a release without a kit where it was built: the embedded build manifest resolved
/// from the release's location, so that its relative paths (sources, response store) mean
/// the same; output in a temporary directory.
pub(super) fn rebuild_where_built(
    dir: &Path,
    trust_release_sandbox: bool,
    printer: Printer,
    build: Build<'_>,
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
    printer.status(format!("rebuilding `{}` in {}", manifest.version, scratch.path().display()));
    let rebuilt = rebuild(plan, printer, build)?;
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
