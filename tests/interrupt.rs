//! `execute` stopped part-way, by SIGINT, SIGTERM or `kill -9`, resumes: the rerun judges no
//! solution the stopped run committed (counted from the stage's record and the journal, not
//! timed), and the release is the committed one byte for byte.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{coreb, root, run, same_release_as, text};

fn build(out: &Path, until: Option<&str>) -> Command {
    let mut cmd = coreb();
    cmd.arg("build")
        .arg(root().join("manifests/sample.toml"))
        .args(["--jobs", "1", "--output-dir"])
        .arg(out.join("build"))
        .arg("--publish-dir")
        .arg(out.join("release"));
    if let Some(stage) = until {
        cmd.args(["--until", stage]);
    }
    cmd
}

fn journal(out: &Path) -> PathBuf {
    out.join("build/artifacts/.journal/execute")
}

/// The solutions the journal holds.
fn committed(out: &Path) -> usize {
    let mut n = 0;
    for entry in fs_err::read_dir(journal(out)).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().unwrap().to_string_lossy().starts_with("commit-") {
            let problems: Vec<serde_json::Value> =
                serde_json::from_slice(&fs_err::read(&path).unwrap()).unwrap();
            n += problems.iter().map(|p| p["solutions"].as_array().unwrap().len()).sum::<usize>();
        }
    }
    n
}

/// Start `execute` (the stages before it done), wait for its first commit, send `signal`.
fn stop_part_way(out: &Path, signal: i32) -> std::process::Output {
    let ready = run(&mut build(out, Some("generate")));
    assert!(ready.status.success(), "{}", text(&ready));
    let child =
        build(out, Some("execute")).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let first = journal(out).join("commit-000001.json");
    let start = Instant::now();
    while !first.exists() {
        assert!(start.elapsed() < Duration::from_secs(120), "execute committed nothing in 120 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: a signal to our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
    child.wait_with_output().unwrap()
}

/// Run the build again (`suggested`: the command the stopped run's message gives, as given)
/// and check that it resumed.
fn resume_and_check(out: &Path, kept: usize, what: &str, suggested: Option<&str>) {
    assert!(kept > 0 && kept < 100, "{what}: not part-way: {kept} of 100 solutions committed");
    let again = match suggested {
        Some(line) => {
            let words: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(words[..2], ["coreb", "build"], "{what}: {line}");
            run(coreb().args(&words[1..]))
        }
        None => run(&mut build(out, None)),
    };
    assert!(again.status.success(), "{what}: {}", text(&again));
    let record: serde_json::Value = serde_json::from_slice(
        &fs_err::read(out.join("build/artifacts/execute/record.json")).unwrap(),
    )
    .unwrap();
    let (resumed, judged) = (
        record["local"]["solutions_resumed"].as_u64(),
        record["local"]["solutions_judged"].as_u64(),
    );
    assert_eq!(
        resumed,
        Some(kept as u64),
        "{what}: the rerun judged committed solutions again: {}",
        record["local"]
    );
    assert_eq!(
        judged.unwrap() + resumed.unwrap(),
        record["summary"]["rows_out"].as_u64().unwrap(),
        "{what}: {}",
        record["local"]
    );
    assert!(
        String::from_utf8_lossy(&again.stderr)
            .contains(&format!("{kept} solutions judged by an interrupted run were kept")),
        "{what}: {}",
        text(&again)
    );
    assert!(!journal(out).exists(), "{what}: the journal outlives the committed stage");
    same_release_as(&root().join("releases/sample/v202503"), &out.join("release"), what);
}

#[test]
fn sigint_and_sigterm_stop_execute_cleanly_and_the_rerun_resumes() {
    for (signal, status, name) in [(libc::SIGINT, 130, "SIGINT"), (libc::SIGTERM, 143, "SIGTERM")] {
        let dir = tempfile::tempdir().unwrap();
        let stopped = stop_part_way(dir.path(), signal);
        assert_eq!(stopped.status.code(), Some(status), "{name}: {}", text(&stopped));
        let stderr = String::from_utf8_lossy(&stopped.stderr);
        let kept = committed(dir.path());
        // One line: the signal, what was kept, how to resume.
        let line = stderr
            .lines()
            .find(|l| l.starts_with("execute stopped by"))
            .unwrap_or_else(|| panic!("{name}: no line says what was kept: {stderr}"));
        assert!(
            line.contains(name)
                && line.contains(&format!("{kept} of 100 solutions judged are kept"))
                && line.contains("run the same command again"),
            "{line}"
        );
        // The stage's working directory is not left for a later run to mistake.
        assert!(!dir.path().join("build/artifacts/.execute.tmp").exists(), "{name}");
        assert!(
            !dir.path().join("build/artifacts/execute").exists(),
            "{name}: an interrupted execute was committed"
        );
        // The suggestion is what resumes: it keeps `--output-dir` and `--publish-dir`.
        let suggested = line
            .split_once("again (`")
            .and_then(|(_, rest)| rest.split_once("`)"))
            .map(|(cmd, _)| cmd)
            .unwrap_or_else(|| panic!("{name}: no command suggested: {line}"));
        assert!(
            suggested.contains(&format!("--output-dir {}", dir.path().join("build").display())),
            "{suggested}"
        );
        resume_and_check(dir.path(), kept, name, Some(suggested));
    }
}

#[test]
fn kill_9_in_execute_loses_only_the_window_running() {
    let dir = tempfile::tempdir().unwrap();
    let killed = stop_part_way(dir.path(), libc::SIGKILL);
    assert!(!killed.status.success());
    resume_and_check(dir.path(), committed(dir.path()), "kill -9", None);
}
