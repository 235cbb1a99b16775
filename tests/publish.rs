//! Published releases as others receive them (issues #47, #48): a published version is
//! immutable unless replaced on purpose; `coreb verify --checksums` and `coreb check` name a
//! damaged file without rebuilding.

use std::path::PathBuf;

use crate::support::{copy_tree, coreb, root, run, stdout, text, tree_sha256};

fn committed() -> PathBuf {
    root().join("releases/sample/v202503")
}

/// A copy of the committed sample release in a fresh temporary directory.
fn sample_copy() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let release = dir.path().join("v202503");
    copy_tree(&committed(), &release);
    (dir, release)
}

#[test]
fn a_published_release_is_not_rewritten_unless_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let publish = dir.path().join("release");
    copy_tree(&committed(), &publish);
    let before = tree_sha256(&publish);
    // The sample's manifest with another hard-negative seed, beside it (its paths are relative).
    let manifest = root().join("manifests/.immutable-test.toml");
    let sample = fs_err::read_to_string(root().join("manifests/sample.toml")).unwrap();
    assert!(sample.contains("seed = 20250101"));
    fs_err::write(&manifest, sample.replace("seed = 20250101", "seed = 20250102")).unwrap();
    let build = |replace: bool| {
        let mut cmd = coreb();
        cmd.arg("build")
            .arg(&manifest)
            .arg("--output-dir")
            .arg(dir.path().join("build"))
            .arg("--publish-dir")
            .arg(&publish);
        if replace {
            cmd.arg("--replace");
        }
        run(&mut cmd)
    };
    let refused = build(false);
    let after_refusal = tree_sha256(&publish);
    let replaced = build(true);
    let after_replace = tree_sha256(&publish);
    // Publishing the same release again (its stage forgotten, so it runs) changes nothing,
    // and without `--replace`: the MANIFEST keeps its record of what it replaced.
    fs_err::remove_dir_all(dir.path().join("build/artifacts/release")).unwrap();
    let again = build(false);
    let _ = fs_err::remove_file(&manifest);

    assert_ne!(refused.status.code(), Some(0), "{}", text(&refused));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("release `v202503` is already published") && err.contains("--replace"),
        "{err}"
    );
    assert!(err.contains("changed MANIFEST.json"), "{err}");
    assert!(
        err.lines().any(|l| l.trim_start().starts_with("changed ") && l.contains("_qrels.parquet")),
        "the changed qrels are named: {err}"
    );
    assert_eq!(after_refusal, before, "a refused publish leaves the release byte-identical");
    assert!(!dir.path().join(".v202503.tmp").exists());

    assert!(replaced.status.success(), "{}", text(&replaced));
    let new: serde_json::Value =
        serde_json::from_str(&fs_err::read_to_string(publish.join("MANIFEST.json")).unwrap())
            .unwrap();
    let old_sha = coreb_base::hashing::sha256_file(&committed().join("MANIFEST.json")).unwrap();
    assert_eq!(
        new["replaces"]["manifest_sha256"],
        serde_json::json!(old_sha),
        "{}",
        new["replaces"]
    );
    assert_eq!(new["seeds"]["qrels"], 20250102);
    assert_ne!(after_replace, before);
    assert!(again.status.success(), "{}", text(&again));
    assert_eq!(tree_sha256(&publish), after_replace, "the same content is a no-op");
}

#[test]
fn verify_checksums_names_a_damaged_file_without_rebuilding() {
    let (_dir, release) = sample_copy();
    let started = std::time::Instant::now();
    let out = run(coreb().args(["verify", "--checksums"]).arg(&release));
    assert!(out.status.success(), "{}", text(&out));
    assert!(stdout(&out).contains("files match the sha256 in MANIFEST.json"), "{}", text(&out));
    assert!(started.elapsed().as_secs_f64() < 10.0, "no rebuild: {:?}", started.elapsed());

    // One byte flipped in the middle of a table, a file added, one removed, a link planted.
    let table = release.join("code2text_qrels.parquet");
    let mut bytes = fs_err::read(&table).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x01;
    fs_err::write(&table, bytes).unwrap();
    fs_err::write(release.join("text2code/notes.txt"), "added").unwrap();
    fs_err::remove_file(release.join("LICENSE")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", release.join("code2code/passwd")).unwrap();
    let out = run(coreb().args(["verify", "--checksums"]).arg(&release));
    assert_ne!(out.status.code(), Some(0), "{}", text(&out));
    let said = stdout(&out);
    for line in [
        "published: differs   code2text_qrels.parquet: expected sha256",
        "published: missing   LICENSE",
        "published: extra     text2code/notes.txt",
        "published: not a file code2code/passwd: a symbolic link",
        "4 difference(s)",
    ] {
        assert!(said.contains(line), "{line}: {}", text(&out));
    }
}

#[test]
fn check_names_a_truncated_table_in_its_json() {
    let (_dir, release) = sample_copy();
    let table = release.join("text2code_qrels.parquet");
    let bytes = fs_err::read(&table).unwrap();
    fs_err::write(&table, &bytes[..bytes.len() / 2]).unwrap();
    for with_manifest in [true, false] {
        if !with_manifest {
            // Without its MANIFEST, the table is found unreadable all the same.
            fs_err::remove_file(release.join("MANIFEST.json")).unwrap();
        }
        let out = run(coreb().args(["check", "--json"]).arg(&release));
        assert_ne!(out.status.code(), Some(0), "{}", text(&out));
        assert_ne!(
            out.status.code(),
            Some(2),
            "a damaged file is a failed check, not a usage error: {}",
            text(&out)
        );
        let report: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(&out)));
        assert_eq!(report["passed"], false);
        let damaged = report["damaged"].as_array().unwrap();
        assert_eq!(damaged.len(), 1, "{report}");
        assert_eq!(damaged[0]["file"], "text2code_qrels.parquet", "{report}");
        assert_eq!(damaged[0]["kind"], "unreadable", "{report}");
        assert!(report["error"].as_str().unwrap().contains("text2code_qrels.parquet"), "{report}");
    }
    // Without `--json`, stderr names it, once.
    let out = run(coreb().arg("check").arg(&release));
    assert_ne!(out.status.code(), Some(0), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("damaged: unreadable text2code_qrels.parquet: not a readable Parquet table"),
        "{err}"
    );
    assert_eq!(err.matches("not a readable Parquet table").count(), 1, "{err}");

    // A readable table that differs from its MANIFEST is named, the checks still run on it,
    // and the check fails.
    let (_dir, release) = sample_copy();
    fs_err::write(release.join("README.md"), "edited").unwrap();
    let out = run(coreb().args(["check", "--json"]).arg(&release));
    assert_ne!(out.status.code(), Some(0), "{}", text(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["damaged"][0]["file"], "README.md", "{report}");
    assert!(report["results"].as_array().unwrap().len() >= 15, "{report}");
}
