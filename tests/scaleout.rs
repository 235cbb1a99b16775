//! Issue #16: the build stages as shard processes (`--shard i/N`) and their merge, through the
//! Slurm recipe (`scripts/slurm/`). The sample built as 3 shard processes per stage is the
//! same release, file for file, as one process; a merge refuses a missing shard or one made
//! from another plan, naming it.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{coreb, failed_naming, root, run, same_release_as, text, tree_sha256};

fn sample_manifest() -> PathBuf {
    root().join("manifests/sample.toml")
}

/// The Slurm recipe's submit script with the array loop done by this shell
/// (`COREB_SLURM=shell`: the N tasks of each stage as N processes at once,
/// `SLURM_ARRAY_TASK_ID` set per process, then the dependent merge job): the fallback for
/// machines without Slurm. [`the_slurm_recipe_on_a_real_single_node_slurm_builds_the_committed_release`]
/// runs the same scripts through real `sbatch`.
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
            assert!(
                log.contains(&format!("{stage}: shard {i}/3 written to")),
                "{stage} shard {i}/3 did not run:\n{log}"
            );
        }
        assert!(
            log.contains(&format!("{stage}: merging 3 shard parts")),
            "{stage} was not merged from its parts:\n{log}"
        );
    }
    // The merged LLM stages asked the endpoint nothing: every answer was in the store.
    for line in log.lines().filter(|l| l.contains(": done in") && l.contains("requests sent")) {
        assert!(line.contains(" 0 requests sent"), "{line}");
    }

    let single = dir.path().join("single");
    let mut one = coreb();
    one.arg("build")
        .arg(sample_manifest())
        .args(["--jobs", "1", "--output-dir"])
        .arg(single.join("build"))
        .arg("--publish-dir")
        .arg(single.join("release"));
    let out = run(&mut one);
    assert!(out.status.success(), "{}", text(&out));
    let (a, b) = (tree_sha256(&sharded.join("release")), tree_sha256(&single.join("release")));
    assert!(a.len() >= 20, "{a:?}");
    assert_eq!(a, b, "3 shard processes + merge vs 1 process: the releases differ");
    // The LLM stages' and qrels' artifacts too (the records hold keys and fingerprints;
    // `execute`'s verdicts hold each test's measured wall and CPU time, which differ from run
    // to run however it is run — what the release takes from them is compared above).
    for stage in ["rewrite", "distract", "abbreviate", "generate", "queries", "qrels"] {
        let files = |d: &Path| {
            tree_sha256(&d.join("build/artifacts").join(stage))
                .into_iter()
                .filter(|(p, _)| p != "record.json")
                .collect::<Vec<_>>()
        };
        assert_eq!(files(&sharded), files(&single), "artifacts of `{stage}`");
    }
}

/// A copy of the sample manifest in `dir` with absolute paths, `edit` applied.
/// The Slurm recipe through real `sbatch` job arrays on a private single-node Slurm
/// (`scripts/slurm/single-node.sh`: munged, slurmctld and slurmd from Debian's `slurm-wlm` and
/// `munge`, which `scripts/setup` installs): every stage as a 3-task array, each depending on
/// the one before, then the merge job; the release is the committed one, file for file. Where
/// Slurm cannot start (the script exits 3 and says why: no packages, not root, a daemon that
/// dies) the test says so and stops; the shell fallback above runs the same task scripts.
#[test]
fn the_slurm_recipe_on_a_real_single_node_slurm_builds_the_committed_release() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut cmd = Command::new("bash");
    cmd.arg(root().join("scripts/slurm/single-node.sh"))
        .arg(dir.path().join("slurm"))
        .arg("bash")
        .arg(root().join("scripts/slurm/submit.sh"))
        .arg(sample_manifest())
        .arg("3")
        .current_dir(dir.path())
        .env("COREB_SLURM", "slurm")
        .env("COREB_SLURM_WAIT", "1")
        .env("COREB", env!("CARGO_BIN_EXE_coreb"))
        .env("COREB_OUTPUT_DIR", out.join("build"))
        .env("COREB_PUBLISH_DIR", out.join("release"));
    let result = run(&mut cmd);
    if result.status.code() == Some(3) {
        eprintln!("no single-node Slurm here, so only the shell fallback ran: {}", text(&result));
        return;
    }
    let logs = || {
        let mut all = String::new();
        for entry in fs_err::read_dir(dir.path()).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "log") {
                all += &format!(
                    "== {}\n{}\n",
                    path.display(),
                    fs_err::read_to_string(&path).unwrap_or_default()
                );
            }
        }
        all
    };
    assert!(result.status.success(), "{}\n{}", text(&result), logs());
    // Each array task wrote its own Slurm log (`coreb-<job name>-<array job>_<task>.log`).
    let stderr = String::from_utf8_lossy(&result.stderr);
    for (stage, line) in ["rewrite", "distract", "abbreviate", "generate", "execute", "queries"]
        .iter()
        .filter_map(|s| {
            stderr.lines().find(|l| l.starts_with(&format!("{s}: array job "))).map(|l| (*s, l))
        })
    {
        let job = line.rsplit(' ').next().unwrap();
        for task in 0..3 {
            let log = fs_err::read_to_string(
                dir.path().join(format!("coreb-coreb-shard-{job}_{task}.log")),
            )
            .unwrap_or_default();
            assert!(
                log.contains(&format!("{stage}: shard {task}/3 written to")),
                "{stage} task {task} (array job {job}):\n{log}\n{}",
                logs()
            );
        }
    }
    assert_eq!(stderr.lines().filter(|l| l.contains(": array job ")).count(), 6, "{stderr}");
    same_release_as(
        &root().join("releases/sample/v202503"),
        &out.join("release"),
        &format!("the release built through Slurm is not the committed one\n{}", logs()),
    );
}

/// Issue #61: the recipe of `scripts/ray/` on a Ray cluster started here (a head and two
/// workers, `scripts/ray/local-cluster.sh`, from the venv `scripts/setup-ray` makes): every
/// sharded stage as 3 Ray tasks, then the merge. A shard that fails on every attempt stops the
/// run before the merge, naming it; the same command again resumes (the complete shards and
/// stages do nothing), a task that fails once is retried, and the release is the committed one, file for
/// file. Where Ray cannot start (the script exits 3 and says why) the test says so and stops,
/// except under CI, where it fails.
#[test]
fn the_ray_recipe_on_a_local_cluster_fails_resumes_and_builds_the_committed_release() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = d.join("out");
    // The binary, but for planted failures: `execute` shard 1/3 fails while `fail-always`
    // exists, `queries` shard 0/3 fails once while `fail-once` does.
    let wrapper = d.join("coreb.sh");
    fs_err::write(
        &wrapper,
        format!(
            "#!/usr/bin/env bash\nargs=\"$*\"\nif [ \"$1\" = execute ] && [[ \"$args\" == *'--shard 1/3'* ]] && [ -e {d}/fail-always ]; then echo 'planted failure' >&2; exit 1; fi\nif [ \"$1\" = queries ] && [[ \"$args\" == *'--shard 0/3'* ]] && [ -e {d}/fail-once ]; then rm {d}/fail-once; echo 'planted failure, once' >&2; exit 1; fi\nexec {bin} \"$@\"\n",
            d = d.display(),
            bin = env!("CARGO_BIN_EXE_coreb"),
        ),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .unwrap();
    let venv = std::env::var_os("COREB_RAY_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join(".venv-ray"));
    let runs = d.join("runs.sh");
    let run_py = format!(
        "{} {} build {} 3 --coreb {} --retries 1 --output-dir {} --publish-dir {}",
        venv.join("bin/python").display(),
        root().join("scripts/ray/run.py").display(),
        sample_manifest().display(),
        wrapper.display(),
        out.join("build").display(),
        out.join("release").display(),
    );
    fs_err::write(
        &runs,
        format!(
            "set -u\ncd {d}\ntouch fail-always\n{run_py} --logs logs-1 >run-1.txt 2>&1; echo $? >status-1\n[ -e {release} ] && touch published-1\nrm fail-always\ntouch fail-once\n{run_py} --logs logs-2 >run-2.txt 2>&1; echo $? >status-2\n",
            d = d.display(),
            release = out.join("release").display(),
        ),
    )
    .unwrap();
    let mut cmd = Command::new("bash");
    cmd.arg(root().join("scripts/ray/local-cluster.sh"))
        .arg(d.join("cluster"))
        .arg("bash")
        .arg(&runs);
    let result = run(&mut cmd);
    if result.status.code() == Some(3) {
        assert!(std::env::var_os("CI").is_none(), "Ray cannot start under CI: {}", text(&result));
        eprintln!("no Ray cluster here, so the Ray recipe did not run: {}", text(&result));
        return;
    }
    assert!(result.status.success(), "{}", text(&result));
    let read = |name: &str| fs_err::read_to_string(d.join(name)).unwrap_or_default();
    let (first, second) = (read("run-1.txt"), read("run-2.txt"));
    let cluster_logs = || {
        ["head.log", "worker-1.log", "worker-2.log"]
            .map(|f| read(&format!("cluster/{f}")))
            .join("\n")
    };

    // The first run: execute's shard 1 fails on both attempts, and nothing after it runs.
    assert_eq!(read("status-1").trim(), "1", "{first}\n{}", cluster_logs());
    assert!(
        first.contains("execute 1/3: attempt 1 failed (exit 1); retrying")
            && first.contains("execute 1/3: failed (exit 1) after 2 attempt(s)")
            && first.contains("planted failure"),
        "{first}"
    );
    for done in ["rewrite 0/3: done", "generate 2/3: done", "execute 0/3: done"] {
        assert!(first.contains(done), "{done}: {first}");
    }
    assert!(
        !first.contains("queries") && !first.contains("merge:"),
        "a step ran after a failed shard: {first}"
    );
    assert!(!d.join("published-1").exists(), "published without the merge");

    // The second: the complete shards do nothing, the failed one runs, a task that fails once
    // is retried, and the merge publishes.
    assert_eq!(read("status-2").trim(), "0", "{second}\n{}", cluster_logs());
    // `rewrite` was merged by the first run's later shards: found complete, not made again.
    assert!(
        read("logs-2/rewrite-1.log").contains("rewrite: unchanged, skipped"),
        "{}",
        read("logs-2/rewrite-1.log")
    );
    assert!(
        read("logs-2/execute-0.log").contains("shard 0/3 is complete"),
        "{}",
        read("logs-2/execute-0.log")
    );
    assert!(
        read("logs-2/execute-1.log").contains("execute: shard 1/3 written to"),
        "{}",
        read("logs-2/execute-1.log")
    );
    assert!(
        second.contains("queries 0/3: attempt 1 failed (exit 1); retrying")
            && second.contains("queries 0/3: done")
            && second.contains("merge: done"),
        "{second}"
    );
    // The last stage's parts are merged by the merge (the earlier ones by later shards).
    assert!(
        read("logs-2/merge-0.log").contains("queries: merging 3 shard parts"),
        "{}",
        read("logs-2/merge-0.log")
    );
    // The tasks ran on more than one node of the cluster.
    let nodes: std::collections::BTreeSet<&str> = first
        .lines()
        .chain(second.lines())
        .filter_map(|l| l.split(" on node ").nth(1))
        .filter_map(|rest| rest.split_whitespace().next())
        .collect();
    assert!(nodes.len() >= 2, "every task on one node: {nodes:?}\n{second}");
    same_release_as(
        &root().join("releases/sample/v202503"),
        &out.join("release"),
        "the release built through Ray is not the committed one",
    );
}

fn manifest_copy(dir: &Path, edit: impl Fn(String) -> String) -> PathBuf {
    let text = fs_err::read_to_string(sample_manifest())
        .unwrap()
        .replace("\"../", &format!("\"{}/", root().display()));
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
    // Only the stages that shard take `--shard` (the others do not offer it).
    let out = stage(&m, &["filter", "--shard", "0/3"]);
    failed_naming(&out, &["unexpected argument '--shard'"]);
    let out = stage(&m, &["merge", "rewrite"]);
    failed_naming(&out, &["no shard parts in"]);

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
    let msg = failed_naming(&missing, &["shard 1/3 is missing", "--shard 1/3`"]);
    assert!(!msg.contains("shard 0/3") && !msg.contains("shard 2/3"), "{msg}");
    // Nor does a later stage go on without it.
    let later = stage(&m, &["generate"]);
    failed_naming(&later, &["shard 1/3 is missing"]);

    // Shard 1 made from another plan: a changed filter setting changes the key of rewrite
    // (its upstream fingerprint), though the problems and answers stay the same.
    let other =
        manifest_copy(dir.path(), |t| t.replace("min_confidence = 0.25", "min_confidence = 0.24"));
    let out = stage(&other, &["rewrite", "--shard", "1/3"]);
    assert!(out.status.success(), "{}", text(&out));
    let stale = stage(&m, &["merge", "rewrite"]);
    failed_naming(&stale, &["shard 1/3 was made from another plan"]);

    // Made again from this plan, the shards merge.
    let out = stage(&m, &["rewrite", "--shard", "1/3"]);
    assert!(out.status.success(), "{}", text(&out));
    let merged = stage(&m, &["merge", "rewrite", "--json"]);
    assert!(merged.status.success(), "{}", text(&merged));
    let line: serde_json::Value = serde_json::from_slice(&merged.stdout).unwrap();
    assert_eq!(
        (line["stage"].as_str(), line["rows_out"].as_u64()),
        (Some("rewrite"), Some(10)),
        "{line}"
    );
    assert!(!build.join("artifacts/parts/rewrite").exists(), "the merged parts are left behind");
}
