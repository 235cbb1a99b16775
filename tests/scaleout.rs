//! Issue #16: the build stages as shard processes (`--shard i/N`) and their merge, through the
//! Slurm recipe (`scripts/slurm/`). The sample built as 3 shard processes per stage is the
//! same release, file for file, as one process; a merge refuses a missing shard or one made
//! from another plan, naming it.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{coreb, root, run, text, tree_sha256};

fn sample_manifest() -> PathBuf {
    root().join("manifests/sample.toml")
}

/// The Slurm recipe's submit script with the array loop done by this shell
/// (`COREB_SLURM=shell`: the N tasks of each stage as N processes at once,
/// `SLURM_ARRAY_TASK_ID` set per process, then the dependent merge job). This machine has no
/// Slurm daemons (no `slurm-wlm`), so the recipe runs as its documented fallback.
fn submit(out: &Path, shards: u32) -> Command {
    let mut cmd = Command::new("bash");
    cmd.arg(root().join("scripts/slurm/submit.sh"))
        .arg(sample_manifest())
        .arg(shards.to_string())
        .env("COREB_SLURM", "shell")
        .env("COREB", env!("CARGO_BIN_EXE_coreb"))
        .env("COREB_OUTPUT_DIR", out.join("build"))
        .env("COREB_PUBLISH_DIR", out.join("release"))
        .env("SLURM_CPUS_PER_TASK", "1");
    cmd
}

#[test]
fn the_sample_as_three_shard_processes_is_the_release_of_one_process() {
    let dir = tempfile::tempdir().unwrap();
    let sharded = dir.path().join("sharded");
    let out = run(&mut submit(&sharded, 3));
    assert!(out.status.success(), "{}", text(&out));
    let log = String::from_utf8_lossy(&out.stderr);
    for stage in ["rewrite", "distract", "abbreviate", "generate", "execute", "queries"] {
        for i in 0..3 {
            assert!(log.contains(&format!("{stage}: shard {i}/3 written to")), "{stage} shard {i}/3 did not run:\n{log}");
        }
        assert!(log.contains(&format!("{stage}: merging 3 shard parts")), "{stage} was not merged from its parts:\n{log}");
    }
    // The merged LLM stages asked the endpoint nothing: every answer was in the store.
    for line in log.lines().filter(|l| l.contains(": done in") && l.contains("requests sent")) {
        assert!(line.contains(" 0 requests sent"), "{line}");
    }

    let single = dir.path().join("single");
    let mut one = coreb();
    one.arg("build").arg(sample_manifest()).args(["--jobs", "1", "--output-dir"]).arg(single.join("build")).arg("--publish-dir").arg(single.join("release"));
    let out = run(&mut one);
    assert!(out.status.success(), "{}", text(&out));
    let (a, b) = (tree_sha256(&sharded.join("release")), tree_sha256(&single.join("release")));
    assert!(a.len() >= 20, "{a:?}");
    assert_eq!(a, b, "3 shard processes + merge vs 1 process: the releases differ");
    // The LLM stages' and qrels' artifacts too (the records hold keys and fingerprints;
    // `execute`'s verdicts hold each test's measured wall and CPU time, which differ from run
    // to run however it is run — what the release takes from them is compared above).
    for stage in ["rewrite", "distract", "abbreviate", "generate", "queries", "qrels"] {
        let files = |d: &Path| tree_sha256(&d.join("build/artifacts").join(stage)).into_iter().filter(|(p, _)| p != "record.json").collect::<Vec<_>>();
        assert_eq!(files(&sharded), files(&single), "artifacts of `{stage}`");
    }
}

/// A copy of the sample manifest in `dir` with absolute paths, `edit` applied.
fn manifest_copy(dir: &Path, edit: impl Fn(String) -> String) -> PathBuf {
    let text = fs_err::read_to_string(sample_manifest()).unwrap().replace("\"../", &format!("\"{}/", root().display()));
    let path = dir.join("other.toml");
    let edited = edit(text.clone());
    assert_ne!(edited, text, "the edit changed nothing");
    fs_err::write(&path, edited).unwrap();
    path
}

#[test]
fn a_merge_refuses_a_missing_shard_and_one_from_another_plan() {
    let dir = tempfile::tempdir().unwrap();
    let build = dir.path().join("build");
    let stage = |manifest: &Path, args: &[&str]| {
        let mut cmd = coreb();
        cmd.args(args).arg(manifest).arg("--output-dir").arg(&build);
        run(&mut cmd)
    };
    let m = sample_manifest();
    // Only the stages that shard take `--shard`.
    let out = stage(&m, &["filter", "--shard", "0/3"]);
    assert!(!out.status.success() && text(&out).contains("stage `filter` does not run as shard processes"), "{}", text(&out));
    let out = stage(&m, &["merge", "rewrite"]);
    assert!(!out.status.success() && text(&out).contains("no shard parts in"), "{}", text(&out));

    for i in ["0/3", "2/3"] {
        let out = stage(&m, &["rewrite", "--shard", i, "--json"]);
        assert!(out.status.success(), "{}", text(&out));
        let line: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(line["shards"], 3, "{line}");
    }
    // A rerun of a complete shard does nothing.
    let out = stage(&m, &["rewrite", "--shard", "2/3"]);
    assert!(out.status.success() && text(&out).contains("shard 2/3 is complete"), "{}", text(&out));

    let missing = stage(&m, &["merge", "rewrite"]);
    let msg = text(&missing);
    assert!(!missing.status.success() && msg.contains("shard 1/3 is missing") && msg.contains("--shard 1/3`"), "{msg}");
    assert!(!msg.contains("shard 0/3") && !msg.contains("shard 2/3"), "{msg}");
    // Nor does a later stage go on without it.
    let later = stage(&m, &["generate"]);
    assert!(!later.status.success() && text(&later).contains("shard 1/3 is missing"), "{}", text(&later));

    // Shard 1 made from another plan: a changed filter setting changes the key of rewrite
    // (its upstream fingerprint), though the problems and answers stay the same.
    let other = manifest_copy(dir.path(), |t| t.replace("min_confidence = 0.25", "min_confidence = 0.24"));
    let out = stage(&other, &["rewrite", "--shard", "1/3"]);
    assert!(out.status.success(), "{}", text(&out));
    let stale = stage(&m, &["merge", "rewrite"]);
    let msg = text(&stale);
    assert!(!stale.status.success() && msg.contains("shard 1/3 was made from another plan"), "{msg}");

    // Made again from this plan, the shards merge.
    let out = stage(&m, &["rewrite", "--shard", "1/3"]);
    assert!(out.status.success(), "{}", text(&out));
    let merged = stage(&m, &["merge", "rewrite", "--json"]);
    assert!(merged.status.success(), "{}", text(&merged));
    let line: serde_json::Value = serde_json::from_slice(&merged.stdout).unwrap();
    assert_eq!((line["stage"].as_str(), line["rows_out"].as_u64()), (Some("rewrite"), Some(10)), "{line}");
    assert!(!build.join("artifacts/parts/rewrite").exists(), "the merged parts are left behind");
}
