//! The main job end to end: the bundled sample builds offline into a release that is
//! byte-identical to the committed one (`releases/sample/v202503`), whatever `--jobs`, after
//! `kill -9` at several points, and through `coreb verify`; Python users can load it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::support::{coreb, python, root, run, same_release_as, stdout_has, text, tree_sha256};

fn committed() -> PathBuf {
    root().join("releases/sample/v202503")
}

fn sample_manifest() -> PathBuf {
    root().join("manifests/sample.toml")
}

fn build(out: &Path, jobs: &str) -> Command {
    let mut cmd = coreb();
    cmd.arg("build")
        .arg(sample_manifest())
        .args(["--jobs", jobs, "--output-dir"])
        .arg(out.join("build"))
        .arg("--publish-dir")
        .arg(out.join("release"));
    cmd
}

#[test]
fn the_sample_rebuilds_byte_identical_whatever_the_jobs() {
    let expected = tree_sha256(&committed());
    assert!(expected.len() >= 20, "the committed sample release is incomplete: {expected:?}");
    let mut said_passed = false;
    for jobs in ["1", "2"] {
        let dir = tempfile::tempdir().unwrap();
        let out = run(&mut build(dir.path(), jobs));
        assert!(out.status.success(), "{}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("release `v202503` published in")
                && stderr.contains("all release gates passed"),
            "{stderr}"
        );
        // Issue #22: execute's summary says how many solutions passed.
        said_passed |= stderr
            .lines()
            .any(|l| l.trim_start().starts_with("execute: done") && l.contains(" of 100 passed"));
        same_release_as(&committed(), &dir.path().join("release"), &format!("--jobs {jobs}"));
    }
    assert!(said_passed, "execute's summary line does not say how many passed");
}

#[test]
fn kill_9_at_any_point_then_build_again_gives_the_same_release() {
    let dir = tempfile::tempdir().unwrap();
    // Interrupt the same build directory again and again, each time a little later.
    for delay_ms in [300u64, 1500, 4000, 9000] {
        let mut child = build(dir.path(), "2")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        // SIGKILL: no destructor, no cleanup.
        let _ = child.kill();
        let _ = child.wait();
    }
    let out = run(&mut build(dir.path(), "2"));
    assert!(out.status.success(), "{}", text(&out));
    same_release_as(&committed(), &dir.path().join("release"), "after kill -9");
    // Nothing half-written is left where a later run would take it for complete.
    let leftovers: Vec<_> = fs_err::read_dir(dir.path().join("build/artifacts"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn verify_rebuilds_the_committed_release() {
    let out = run(coreb().arg("verify").arg(committed()));
    assert!(out.status.success(), "{}", text(&out));
    stdout_has(&out, "rebuilt byte-identical");
}

#[test]
fn a_failed_gate_stops_the_publish_and_says_which() {
    let dir = tempfile::tempdir().unwrap();
    // The sample's own manifest with an impossible BM25 band.
    let text_in = fs_err::read_to_string(sample_manifest()).unwrap();
    let manifest = root().join("manifests/.gate-test.toml");
    // And texts longer than 50 characters are refused: the `lengths` check fails too.
    let body = format!("{text_in}\n[gates]\nbm25_ndcg10_max = 0.01\nmax_text_chars = 50\n");
    fs_err::write(&manifest, body).unwrap();
    let out = run(coreb()
        .arg("build")
        .arg(&manifest)
        .arg("--output-dir")
        .arg(dir.path().join("build"))
        .arg("--publish-dir")
        .arg(dir.path().join("release")));
    let _ = fs_err::remove_file(&manifest);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not published") && stderr.contains("bm25"), "{stderr}");
    // A failed check names itself, its figure and at most 5 offending ids.
    let line = stderr
        .lines()
        .find(|l| l.contains("check `lengths` failed for `code_corpus.code`"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(line.contains("rows; chars") && line.contains("(threshold chars ≤ 50)"), "{line}");
    let ids = line.split("; first: ").nth(1).unwrap_or_else(|| panic!("{line}"));
    assert_eq!(ids.matches("`code_v202503_").count(), 5, "{line}");
    assert!(!dir.path().join("release").exists(), "nothing was published");
}

#[test]
fn python_users_can_load_the_release() {
    let out =
        python().arg(root().join("scripts/read_release.py")).arg(committed()).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("release loads and is consistent"), "{stdout}");
    assert!(stdout.contains("text2code_qrels"));
}

#[test]
fn plan_writes_next_months_manifest_after_the_latest_release() {
    let dir = tempfile::tempdir().unwrap();
    // A releases directory whose latest release is the sample (window ends 2025-03-31).
    let latest = dir.path().join("releases/v202503");
    fs_err::create_dir_all(&latest).unwrap();
    fs_err::copy(committed().join("MANIFEST.json"), latest.join("MANIFEST.json")).unwrap();
    let out_path = dir.path().join("manifests/v202505.toml");
    let out = run(coreb()
        .args(["plan", "2025-05", "--no-pin", "--releases-dir"])
        .arg(dir.path().join("releases"))
        .arg("--out")
        .arg(&out_path)
        .args(["--source", "test7=https://example.invalid/test7.jsonl"]));
    assert!(out.status.success(), "{}", text(&out));
    let manifest: toml::Value =
        toml::from_str(&fs_err::read_to_string(&out_path).unwrap()).unwrap();
    assert_eq!(manifest["version"].as_str(), Some("v202505"));
    assert_eq!(
        manifest["window"]["start"].as_str(),
        Some("2025-04-01"),
        "the day after the latest release"
    );
    assert_eq!(manifest["window"]["end"].as_str(), Some("2025-05-31"));
    let sources = manifest["sources"].as_array().unwrap();
    assert_eq!(sources.len(), 2);
    assert!(sources[0]["sha256"].as_str().is_some(), "the sample's pin is kept");
    assert_eq!(sources[1]["name"].as_str(), Some("test7"));
    // Models and stage parameters are the previous release's.
    assert_eq!(manifest["llm"]["stages"]["generate"]["models"].as_array().unwrap().len(), 2);
    assert_eq!(manifest["stages"]["qrels"]["seed"].as_integer(), Some(20250101));
    // A month the latest release already covers is refused.
    let out = run(coreb()
        .args(["plan", "2025-03", "--no-pin", "--releases-dir"])
        .arg(dir.path().join("releases"))
        .arg("--out")
        .arg(dir.path().join("x.toml")));
    assert!(!out.status.success());
}
