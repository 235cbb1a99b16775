//! Operating a build: the preflight (`build --check`, and before the first stage of every
//! build), what exit codes mean, `--jobs 0`, a build that waits for another naming it, and
//! `coreb plan --out` writing a manifest whose paths resolve from its new place.

use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use crate::support::{builds_refuse_an_empty_window, coreb, refused, root, run, stderr_has, text};

fn sample() -> std::path::PathBuf {
    root().join("manifests/sample.toml")
}

/// `coreb build` of the sample (with `flags`) into `<dir>/build`, publishing into `publish`.
fn build_sample(flags: &[&str], dir: &Path, publish: &Path) -> std::process::Output {
    let mut cmd = coreb();
    cmd.arg("build").arg(sample()).args(flags).arg("--output-dir").arg(dir.join("build"));
    run(cmd.arg("--publish-dir").arg(publish))
}

#[test]
fn build_check_runs_the_preflight_alone_and_prints_the_plan() {
    let dir = tempfile::tempdir().unwrap();
    let out = build_sample(&["--check"], dir.path(), &dir.path().join("r/v202503"));
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("preflight passed") && stdout.contains("v202503"), "{stdout}");
    for stage in ["fetch", "execute", "release"] {
        assert!(
            stdout
                .lines()
                .any(|l| l.trim_start().starts_with(stage) && l.contains("not built yet")),
            "{stage}: {stdout}"
        );
    }
    // Nothing was built.
    assert!(!dir.path().join("build/artifacts/fetch").exists() && !dir.path().join("r").exists());
}

#[test]
fn an_unwritable_releases_dir_fails_before_the_first_stage_with_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-dir");
    fs_err::write(&file, "").unwrap();
    let out = build_sample(&[], dir.path(), &file.join("v202503"));
    refused(&out, 1, &["preflight", "`releases_dir`", "not-a-dir"]);
    assert!(
        !dir.path().join("build/artifacts/fetch").exists(),
        "a stage ran before the preflight failed"
    );
    // `--check` says the same, with the same status.
    let check = build_sample(&["--check"], dir.path(), &file.join("v202503"));
    assert_eq!(check.status.code(), Some(1), "{}", text(&check));
}

#[test]
fn usage_errors_exit_2_and_failed_work_exits_1() {
    let missing = run(coreb().args(["build", "no/such/manifest.toml"]));
    assert_eq!(missing.status.code(), Some(2), "{}", text(&missing));
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    fs_err::write(&bad, "version = \"v2025\"\n").unwrap();
    let out = run(coreb().arg("build").arg(&bad));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    stderr_has(&out, "bad.toml");
}

#[test]
fn jobs_0_means_every_core() {
    let out = run(coreb().arg("build").arg(sample()).args(["--jobs", "0", "--show-plan"]));
    assert!(out.status.success(), "{}", text(&out));
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let cores = std::thread::available_parallelism().unwrap().get() as u64;
    assert_eq!(plan["jobs"].as_u64(), Some(cores));
}

#[test]
fn a_build_waiting_for_the_lock_names_its_holder() {
    let dir = tempfile::tempdir().unwrap();
    let artifacts = dir.path().join("build/artifacts");
    fs_err::create_dir_all(&artifacts).unwrap();
    let lock = artifacts.join(".lock");
    fs_err::write(&lock, "pid 4242 (`coreb build other.toml`)").unwrap();
    let held = std::fs::OpenOptions::new().read(true).write(true).open(&lock).unwrap();
    // SAFETY: flock on a descriptor this test owns.
    assert_eq!(unsafe { libc::flock(held.as_raw_fd(), libc::LOCK_EX) }, 0);
    let mut child = coreb()
        .arg("build")
        .arg(sample())
        .args(["--until", "fetch", "--output-dir"])
        .arg(dir.path().join("build"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (found, said) = std::sync::mpsc::channel();
    // Reads every line (a closed pipe would fail the build's later lines).
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("waiting for the lock") {
                let _ = found.send(line);
            }
        }
    });
    let line = said.recv_timeout(Duration::from_secs(300)).expect("no line says the build waits");
    assert!(child.try_wait().unwrap().is_none(), "the build went on while the lock was held");
    drop(held);
    reader.join().unwrap();
    assert!(line.contains("pid 4242") && line.contains("coreb build other.toml"), "{line}");
    assert!(child.wait().unwrap().success());
}

#[test]
fn plan_out_writes_a_manifest_whose_paths_resolve_from_its_place_and_sets_the_fast_switches() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("elsewhere/manifests");
    let out_path = ws.join("v202505.toml");
    let out = run(coreb()
        .args(["plan", "2025-05", "--no-pin", "--from"])
        .arg(sample())
        .arg("--releases-dir")
        .arg(root().join("releases/sample"))
        .arg("--out")
        .arg(&out_path));
    assert!(out.status.success(), "{}", text(&out));
    let shown = run(coreb().arg("build").arg(&out_path).arg("--show-plan"));
    assert!(shown.status.success(), "{}", text(&shown));
    let plan: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    let canonical = |p: &Path| fs_err::canonicalize(p).unwrap();
    // The same prompts and builds directory the sample's manifest names, from the new place.
    assert_eq!(
        canonical(Path::new(plan["prompts_dir"].as_str().unwrap())),
        canonical(&root().join("prompts"))
    );
    assert_eq!(Path::new(plan["output_dir"].as_str().unwrap()), root().join("build/v202505"));
    assert_eq!(
        canonical(Path::new(plan["releases_dir"].as_str().unwrap())),
        canonical(&root().join("releases/sample"))
    );
    let execute = &plan["stages"]["execute"];
    assert_eq!(execute["idle_slots"].as_u64(), Some(8), "{execute}");
    assert_eq!(execute["mode"], "labels", "{execute}");
    assert_eq!(execute["reuse"].as_array().map(Vec::len), Some(4), "{execute}");
    // `batch` saved no wall time in the month bench (docs/building.md): not a month default.
    assert_eq!(execute.get("batch"), None, "{execute}");
}

/// Issue #58: a month whose sources hold no problem in its window is refused by `plan` (which
/// writes nothing), by `build --check` and by `build` before anything is decoded, each naming
/// the sources' latest contest and what to do; exit 1.
#[test]
fn a_month_with_nothing_new_is_refused_naming_the_last_contest() {
    let dir = tempfile::tempdir().unwrap();
    let latest = dir.path().join("releases/v202503");
    fs_err::create_dir_all(&latest).unwrap();
    fs_err::copy(
        root().join("releases/sample/v202503/MANIFEST.json"),
        latest.join("MANIFEST.json"),
    )
    .unwrap();
    let manifests = dir.path().join("manifests");
    let out_path = manifests.join("v202612.toml");
    let plan = |pin: bool| {
        let mut cmd = coreb();
        cmd.args(["plan", "2026-12", "--from"])
            .arg(sample())
            .arg("--releases-dir")
            .arg(dir.path().join("releases"))
            .arg("--out")
            .arg(&out_path);
        if !pin {
            cmd.arg("--no-pin");
        }
        run(&mut cmd)
    };
    let refused = plan(true);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    for needle in [
        "no new problems",
        "2025-04-01 … 2026-12-31",
        "`sample`: 10 problems, the latest contest on 2025-03-29",
        "wait for a new release",
        "--source NAME=URL",
        "nothing was written",
    ] {
        assert!(stderr.contains(needle), "{needle}: {stderr}");
    }
    assert!(!manifests.exists(), "no manifest, and no directory made for it");
    assert!(!root().join("build/v202612").exists(), "the build directory made to fetch is removed");
    // Unpinned, nothing is fetched or checked; `build --check` and `build` then refuse it.
    let written = plan(false);
    assert!(written.status.success(), "{}", text(&written));
    let build = dir.path().join("build");
    builds_refuse_an_empty_window(
        |args| run(coreb().arg("build").arg(&out_path).args(args).arg("--output-dir").arg(&build)),
        "the latest contest on 2025-03-29",
    );
}
