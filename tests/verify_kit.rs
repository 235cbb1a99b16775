//! `coreb verify RELEASE --sources DIR` from anywhere (issue 48): a release rebuilt from its
//! own regeneration kit in a temporary directory, with nothing but the binary, the release
//! folder as downloaded and a folder holding its source file under another name, from an empty
//! working directory; the same from the release's kit folder in `coreb export`'s output; and
//! hostile or damaged kits (a directory pointed outside, a `..` name, a link, a truncated
//! answers file, a manifest that loosens the sandbox) each refused with the entry named, exit
//! 1, nothing written outside the temporary directories.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::support::{copy_tree, coreb, root, run, stderr, stdout_has, text, tree_sha256};

fn committed() -> PathBuf {
    root().join("releases/sample/v202503")
}

/// Three fresh temporary directories: the release copy's, the sources', an empty working one.
struct Dirs {
    _tmp: tempfile::TempDir,
    release: PathBuf,
    sources: PathBuf,
    cwd: PathBuf,
    outside: PathBuf,
}

impl Dirs {
    fn new() -> Dirs {
        let tmp = tempfile::tempdir().unwrap();
        let (release, sources, cwd, outside) = (
            tmp.path().join("a/v202503"),
            tmp.path().join("b"),
            tmp.path().join("c"),
            tmp.path().join("outside"),
        );
        copy_tree(&committed(), &release);
        // The source file under another name, in a subfolder among other files.
        fs_err::create_dir_all(sources.join("lcb")).unwrap();
        fs_err::copy(
            root().join("tests/fixtures/sample/problems.jsonl"),
            sources.join("lcb/downloaded-2025.jsonl"),
        )
        .unwrap();
        fs_err::write(sources.join("notes.txt"), "not a source\n").unwrap();
        fs_err::create_dir_all(&cwd).unwrap();
        Dirs { _tmp: tmp, release, sources, cwd, outside }
    }

    /// `coreb verify <release> --sources <dir>` run from the empty working directory, with
    /// no API key in the environment.
    fn verify(&self, release: &Path, extra: &[&str]) -> Output {
        run(coreb()
            .current_dir(&self.cwd)
            .env_remove("OPENAI_API_KEY")
            .arg("verify")
            .arg(release)
            .arg("--sources")
            .arg(&self.sources)
            .args(extra))
    }

    /// Nothing was written in the working directory or outside.
    fn nothing_written_outside(&self) {
        assert!(
            fs_err::read_dir(&self.cwd).unwrap().next().is_none(),
            "verify wrote into its working directory"
        );
        assert!(!self.outside.exists(), "verify wrote `{}`", self.outside.display());
    }
}

/// Replace the kit file `name` of `release` with `bytes`, and its MANIFEST entry with theirs:
/// a kit changed by its author, consistent with its MANIFEST.
fn rewrite_kit_file(release: &Path, name: &str, bytes: &[u8]) {
    let path = release.join(name);
    fs_err::write(&path, bytes).unwrap();
    let manifest_path = release.join("MANIFEST.json");
    let mut manifest: serde_json::Value =
        serde_json::from_str(&fs_err::read_to_string(&manifest_path).unwrap()).unwrap();
    manifest["files"][name] = serde_json::json!({ "sha256": coreb_base::hashing::sha256_hex(bytes), "bytes": bytes.len() });
    fs_err::write(&manifest_path, serde_json::to_string_pretty(&manifest).unwrap() + "\n").unwrap();
}

/// A refusal: exit 1, before any rebuild, with every `needle` in its error.
fn refused(out: &Output, needles: &[&str]) {
    assert_eq!(out.status.code(), Some(1), "{}", text(out));
    let err = stderr(out);
    for n in needles {
        assert!(err.contains(n), "`{n}` not in the error: {}", text(out));
    }
    assert!(!err.contains("panicked"), "{}", text(out));
    assert!(!err.contains("rebuilding"), "a refused kit was rebuilt: {}", text(out));
}

#[test]
fn a_copied_release_rebuilds_byte_for_byte_from_its_kit_with_its_source_found_by_sha256() {
    let dirs = Dirs::new();
    let (before, sources_before) = (tree_sha256(&dirs.release), tree_sha256(&dirs.sources));
    let out = dirs.verify(&dirs.release, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("rebuilt byte-identical from its regeneration kit"), "{}", text(&out));
    assert!(!stdout.contains("differs"), "{}", text(&out));
    assert!(
        stderr(&out).contains("downloaded-2025.jsonl"),
        "the source is found by sha256 under its other name: {}",
        text(&out)
    );
    assert_eq!(tree_sha256(&dirs.release), before, "verify changed the release");
    assert_eq!(tree_sha256(&dirs.sources), sources_before, "verify changed the sources");
    dirs.nothing_written_outside();

    // Without the source: named, with its sha256.
    fs_err::remove_dir_all(dirs.sources.join("lcb")).unwrap();
    let out = dirs.verify(&dirs.release, &[]);
    refused(
        &out,
        &[
            "source `sample`",
            "d462574dd9d000ac8e75d72ebf2c7a4757493d4648fdd0728a3c19b3b1b815a0",
            "is not among the files of",
        ],
    );
}

#[test]
fn the_kit_folder_of_an_export_rebuilds_the_release_and_its_exported_tables() {
    let dirs = Dirs::new();
    let export = dirs.release.parent().unwrap().parent().unwrap().join("export");
    let out = run(coreb().arg("export").arg(&dirs.release).arg(&export));
    assert!(out.status.success(), "{}", text(&out));
    let kit = export.join("regeneration/v202503");
    assert!(
        kit.join("MANIFEST.json").is_file() && kit.join("answers.jsonl.gz").is_file(),
        "the export carries the kit and its MANIFEST"
    );
    let out = run(coreb().args(["verify", "--checksums"]).arg(&kit));
    assert!(out.status.success(), "{}", text(&out));
    stdout_has(&out, "16 files match");
    // Only the export is left: the release folder it came from is gone.
    fs_err::remove_dir_all(dirs.release.parent().unwrap()).unwrap();
    let before = tree_sha256(&export);
    let out = dirs.verify(&kit, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("kit files and exported tables verified, rebuilt byte-identical"),
        "{}",
        text(&out)
    );
    assert_eq!(tree_sha256(&export), before, "verify changed the export");
    dirs.nothing_written_outside();

    // An exported kit file damaged: refused, named, before any rebuild.
    let prompt = kit.join("prompts/rewrite.toml");
    let mut bytes = fs_err::read(&prompt).unwrap();
    bytes.push(b'#');
    fs_err::write(&prompt, bytes).unwrap();
    refused(
        &dirs.verify(&export, &[]),
        &["differs   regeneration/prompts/rewrite.toml", "refusing to rebuild"],
    );
}

#[test]
fn a_kit_manifest_pointing_outside_the_temporary_directory_is_refused() {
    let dirs = Dirs::new();
    let build_toml = dirs.release.join("regeneration/build.toml");
    let original = fs_err::read_to_string(&build_toml).unwrap();
    let outside = dirs.outside.display().to_string();
    for (key, value) in [
        ("response_store", outside.as_str()),
        ("output_dir", "../.."),
        ("prompts_dir", "/etc"),
        ("releases_dir", "../../releases"),
    ] {
        let kit_value = match key {
            "response_store" => "store",
            "output_dir" => "build",
            "prompts_dir" => "prompts",
            _ => "releases",
        };
        let from = format!("{key} = \"{kit_value}\"");
        assert!(original.contains(&from), "{original}");
        rewrite_kit_file(
            &dirs.release,
            "regeneration/build.toml",
            original.replace(&from, &format!("{key} = \"{value}\"")).as_bytes(),
        );
        refused(
            &dirs.verify(&dirs.release, &[]),
            &[
                "regeneration/build.toml",
                &format!("`{key} = \"{value}\"`"),
                "outside the temporary directory",
            ],
        );
    }
    // A local source outside `sources/`.
    let source = "url = \"sources/problems.jsonl\"";
    assert!(original.contains(source));
    rewrite_kit_file(
        &dirs.release,
        "regeneration/build.toml",
        original.replace(source, "url = \"sources/../../../x.jsonl\"").as_bytes(),
    );
    refused(
        &dirs.verify(&dirs.release, &[]),
        &["regeneration/build.toml", "sources[0].url", "outside the kit"],
    );
    // A damaged manifest: named with its line.
    rewrite_kit_file(
        &dirs.release,
        "regeneration/build.toml",
        original.replace("[window]", "[window").as_bytes(),
    );
    refused(&dirs.verify(&dirs.release, &[]), &["regeneration/build.toml", "line "]);
    dirs.nothing_written_outside();
}

#[test]
fn a_kit_manifest_that_loosens_the_sandbox_is_refused_unless_trusted() {
    let dirs = Dirs::new();
    let build_toml = dirs.release.join("regeneration/build.toml");
    let original = fs_err::read_to_string(&build_toml).unwrap();
    let hostile = format!(
        "{original}\n[stages.execute.sandbox]\nuid_base = 0\n\n[stages.execute.python]\nrun = [\"sh\", \"-c\", \"id\"]\n"
    );
    rewrite_kit_file(&dirs.release, "regeneration/build.toml", hostile.as_bytes());
    refused(
        &dirs.verify(&dirs.release, &[]),
        &[
            "regeneration/build.toml",
            "`stages.execute.sandbox.uid_base`",
            "`stages.execute.python.run`",
            "--trust-release-sandbox",
        ],
    );
    dirs.nothing_written_outside();
}

#[test]
fn names_that_leave_the_release_and_links_in_it_are_refused() {
    let dirs = Dirs::new();
    // A MANIFEST naming a kit file above the release.
    let manifest_path = dirs.release.join("MANIFEST.json");
    let original = fs_err::read_to_string(&manifest_path).unwrap();
    let mut manifest: serde_json::Value = serde_json::from_str(&original).unwrap();
    let entry = manifest["files"]["regeneration/prompts/rewrite.toml"].clone();
    manifest["files"]["regeneration/prompts/../../../escape.toml"] = entry.clone();
    fs_err::write(&manifest_path, serde_json::to_string_pretty(&manifest).unwrap()).unwrap();
    refused(
        &dirs.verify(&dirs.release, &[]),
        &[
            "MANIFEST.json",
            "`regeneration/prompts/../../../escape.toml`",
            "not a plain relative path",
        ],
    );
    manifest["files"].as_object_mut().unwrap().remove("regeneration/prompts/../../../escape.toml");
    manifest["files"]["/etc/passwd"] = entry;
    fs_err::write(&manifest_path, serde_json::to_string_pretty(&manifest).unwrap()).unwrap();
    refused(&dirs.verify(&dirs.release, &[]), &["`/etc/passwd`"]);
    fs_err::write(&manifest_path, &original).unwrap();

    // A prompt that is a link to a file outside the release: never followed.
    fs_err::create_dir_all(&dirs.outside).unwrap();
    let target = dirs.outside.join("rewrite.toml");
    fs_err::copy(dirs.release.join("regeneration/prompts/rewrite.toml"), &target).unwrap();
    let prompt = dirs.release.join("regeneration/prompts/rewrite.toml");
    fs_err::remove_file(&prompt).unwrap();
    std::os::unix::fs::symlink(&target, &prompt).unwrap();
    refused(
        &dirs.verify(&dirs.release, &[]),
        &["regeneration/prompts/rewrite.toml", "a symbolic link", "refusing to rebuild"],
    );
    fs_err::remove_file(&prompt).unwrap();
    fs_err::copy(&target, &prompt).unwrap();
    // The whole kit a link to a copy outside.
    let kit = dirs.release.join("regeneration");
    copy_tree(&kit, &dirs.outside.join("kit"));
    fs_err::remove_dir_all(&kit).unwrap();
    std::os::unix::fs::symlink(dirs.outside.join("kit"), &kit).unwrap();
    let before = tree_sha256(&dirs.outside);
    refused(&dirs.verify(&dirs.release, &[]), &["not a file regeneration", "a symbolic link"]);
    assert_eq!(tree_sha256(&dirs.outside), before);
    assert!(fs_err::read_dir(&dirs.cwd).unwrap().next().is_none());
}

#[test]
fn a_truncated_or_corrupt_answers_file_is_refused_with_its_line() {
    let dirs = Dirs::new();
    let name = "regeneration/answers.jsonl.gz";
    let gz = fs_err::read(dirs.release.join(name)).unwrap();
    // Truncated, its MANIFEST entry untouched: a damaged kit file.
    fs_err::write(dirs.release.join(name), &gz[..gz.len() / 2]).unwrap();
    refused(
        &dirs.verify(&dirs.release, &[]),
        &["differs   regeneration/answers.jsonl.gz", "refusing to rebuild"],
    );
    // Truncated by its author, the MANIFEST agreeing: the gzip stream ends early.
    rewrite_kit_file(&dirs.release, name, &gz[..gz.len() / 2]);
    refused(
        &dirs.verify(&dirs.release, &[]),
        &["regeneration/answers.jsonl.gz`, line ", "truncated"],
    );
    // A complete gzip file whose second line is cut short.
    let mut text = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&gz[..]), &mut text).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let damaged = format!("{}\n{}\n", lines[0], &lines[1][..lines[1].len() / 2]);
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut enc, damaged.as_bytes()).unwrap();
    rewrite_kit_file(&dirs.release, name, &enc.finish().unwrap());
    refused(
        &dirs.verify(&dirs.release, &[]),
        &["regeneration/answers.jsonl.gz`, line 2: not a valid response-store entry"],
    );
    // An entry whose answer was edited: its key no longer matches.
    let edited = lines[0].replacen("\"request\":{", "\"request\":{\"temperature\":1.5,", 1);
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut enc, format!("{edited}\n").as_bytes()).unwrap();
    rewrite_kit_file(&dirs.release, name, &enc.finish().unwrap());
    let out = dirs.verify(&dirs.release, &[]);
    refused(&out, &["regeneration/answers.jsonl.gz`, line 1"]);
    dirs.nothing_written_outside();
}

/// The copy's MANIFEST read, changed by `edit`, and written back as coreb writes it.
fn edit_manifest(release: &Path, edit: impl FnOnce(&mut coreb_data::releases::ReleaseManifest)) {
    let path = release.join("MANIFEST.json");
    let mut manifest = coreb_data::releases::ReleaseManifest::read(&path).unwrap();
    edit(&mut manifest);
    fs_err::write(&path, serde_json::to_string_pretty(&manifest).unwrap() + "\n").unwrap();
}

/// A file of the copy replaced by `bytes`, its MANIFEST entry with it (its checksums true).
fn replace_file(release: &Path, name: &str, bytes: &[u8]) {
    fs_err::write(release.join(name), bytes).unwrap();
    edit_manifest(release, |m| {
        m.files.insert(
            name.to_owned(),
            coreb_data::releases::FileEntry {
                sha256: coreb_base::hashing::sha256_hex(bytes),
                bytes: bytes.len() as u64,
            },
        );
    });
}

/// Issue 62: a release built with another patch release of the JDK (its MANIFEST and
/// `versions.json` say so, their checksums true) is the same data: verify says which versions
/// differ and exits 0; `--strict` asks for byte identity and fails. The card keeps its
/// recorded review, which is pinned to the data.
#[test]
fn a_release_built_with_another_jdk_patch_verifies_naming_the_versions() {
    let dirs = Dirs::new();
    let versions = "regeneration/versions.json";
    let recorded = fs_err::read_to_string(dirs.release.join(versions)).unwrap();
    assert!(recorded.contains("17.0.15"), "{recorded}");
    let other = |s: &str| s.replace("17.0.15", "17.0.4");
    replace_file(&dirs.release, versions, other(&recorded).as_bytes());
    edit_manifest(&dirs.release, |m| {
        let java = &mut m.stages.get_mut("execute").unwrap()["toolchains"]["java"];
        for program in ["java", "javac"] {
            java[program] = other(java[program].as_str().unwrap()).into();
        }
    });
    let out = run(coreb().args(["verify", "--checksums"]).arg(&dirs.release));
    assert!(out.status.success(), "checksums kept true: {}", text(&out));

    let out = dirs.verify(&dirs.release, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "toolchain: java `java`: 17.0.4 in the release, ",
        "toolchain: java `javac`: 17.0.4 in the release, ",
        "provenance: differs   regeneration/versions.json",
        "v202503: every data file identical (42 files); only the provenance differs (regeneration/versions.json, MANIFEST.json): java `java`: 17.0.4 in the release, ",
    ] {
        assert!(stdout.contains(needle), "`{needle}` not said: {}", text(&out));
    }
    // Nothing of the data differs: the card (with its recorded review) neither.
    assert!(!stdout.contains("rebuilt:"), "{}", text(&out));
    dirs.nothing_written_outside();

    let out = dirs.verify(&dirs.release, &["--strict"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    stdout_has(&out, "v202503: --strict: not byte-identical: 2 file(s) differ");
}

/// A copy placed where the recorded build manifest path (`../../../manifests/sample.toml`,
/// relative to where the release was published) climbs above the filesystem's root, as a copy
/// at `/rel/v202503` in a container: the rebuild records the published path as it is, so
/// nothing differs.
#[test]
fn a_copy_whose_recorded_manifest_path_climbs_above_the_root_verifies() {
    let dirs = Dirs::new();
    let climbing = format!("{}manifests/sample.toml", "../".repeat(64));
    edit_manifest(&dirs.release, |m| m.build_manifest.path = climbing.clone());
    let out = dirs.verify(&dirs.release, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("build_manifest.path"), "{}", text(&out));
    assert!(!stdout.contains("rebuilt:"), "{}", text(&out));
    dirs.nothing_written_outside();
}

/// Issue 62: one qrels row changed in a copy (its checksums true) is a data difference: exit 1,
/// the file named first, with its line and column.
#[test]
fn a_release_with_one_qrels_row_changed_fails_naming_the_file_and_row() {
    let dirs = Dirs::new();
    let name = "text2code/qrels/test.tsv";
    let tsv = fs_err::read_to_string(dirs.release.join(name)).unwrap();
    let mut lines: Vec<String> = tsv.lines().map(str::to_owned).collect();
    assert_eq!(lines[0], "query-id\tcorpus-id\tscore");
    assert!(lines[2].ends_with("\t2"), "{}", lines[2]);
    lines[2] = format!("{}\t1", lines[2].strip_suffix("\t2").unwrap());
    replace_file(&dirs.release, name, (lines.join("\n") + "\n").as_bytes());

    let out = dirs.verify(&dirs.release, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(
            "v202503: 2 difference(s) in the data; the first: differs   text2code/qrels/test.tsv: expected sha256"
        ) && stdout.contains(
            "first difference at line 3, column 3 (`score`): published `1`, rebuilt `2`"
        ),
        "{}",
        text(&out)
    );
    dirs.nothing_written_outside();
}
