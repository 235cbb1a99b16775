//! Issue #51: `coreb init` makes a benchmark workspace outside the repository, in which the
//! binary alone builds the sample (byte for byte the committed release), plans the next
//! month from the workspace's releases, evaluates and exports.

use std::path::Path;

use crate::support::{
    builds_refuse_an_empty_window, coreb, root, run, same_release_as, stderr_has, text,
};

/// `coreb <args>` run in `dir`; panics with its output unless it succeeds.
fn in_dir(dir: &Path, args: &[&str]) -> std::process::Output {
    let out = run(coreb().args(args).current_dir(dir));
    assert!(out.status.success(), "coreb {}: {}", args.join(" "), text(&out));
    out
}

#[test]
fn a_workspace_builds_plans_evaluates_and_exports_the_sample() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("bench");
    let out = run(coreb().arg("init").arg(&ws));
    assert!(out.status.success(), "{}", text(&out));
    for file in [
        "README.md",
        ".gitignore",
        "manifests/sample.toml",
        "manifests/month.example.toml",
        "prompts/rewrite.toml",
        "prompts/eval/presets.toml",
        "tests/fixtures/sample/problems.jsonl",
        "scripts/monthly.sh",
        "schedule/crontab",
        "schedule/coreb-monthly.timer",
        "schedule/monthly.sbatch",
    ] {
        assert!(ws.join(file).is_file(), "no {file} in the workspace");
    }
    assert!(ws.join("releases").is_dir());
    // The prompts and the sample are the repository's, byte for byte; nothing names the checkout.
    for file in [
        "manifests/sample.toml",
        "prompts/generate.toml",
        "prompts/queries.schema.json",
        "tests/fixtures/sample/problems.jsonl",
    ] {
        assert_eq!(
            fs_err::read(ws.join(file)).unwrap(),
            fs_err::read(root().join(file)).unwrap(),
            "{file}"
        );
    }
    let checkout = root().display().to_string();
    for file in [
        "README.md",
        ".gitignore",
        "manifests/month.example.toml",
        "schedule/crontab",
        "schedule/monthly.sbatch",
        "schedule/coreb-monthly.service",
    ] {
        assert!(
            !fs_err::read_to_string(ws.join(file)).unwrap().contains(&checkout),
            "{file} names the checkout"
        );
    }

    // A second init into the same directory is refused, as a usage error, and writes nothing.
    let before = crate::support::tree_sha256(&ws);
    let again = run(coreb().arg("init").arg(&ws));
    assert_eq!(again.status.code(), Some(2), "{}", text(&again));
    stderr_has(&again, "is not empty");
    assert_eq!(crate::support::tree_sha256(&ws), before);

    // The sample, built with the workspace as the current directory: the committed release.
    in_dir(&ws, &["build", "manifests/sample.toml"]);
    same_release_as(
        &root().join("releases/sample/v202503"),
        &ws.join("releases/sample/v202503"),
        "the sample built in a workspace",
    );

    // The next month: `coreb plan` finds the workspace's release (and, with the default
    // `releases/`, says where the sample's series is instead of only `--from`).
    let plain = run(coreb().args(["plan", "2025-04", "--no-pin"]).current_dir(&ws));
    assert!(!plain.status.success(), "{}", text(&plain));
    assert!(
        String::from_utf8_lossy(&plain.stderr).contains("--releases-dir")
            && String::from_utf8_lossy(&plain.stderr).contains("v202503"),
        "{}",
        text(&plain)
    );
    // The sample's source ends on 2025-03-29: April has nothing new, and `plan` says so
    // (exit 1), naming the last contest, and writes nothing (issue #58).
    let empty = run(coreb()
        .args(["plan", "2025-04", "--releases-dir", "releases/sample"])
        .current_dir(&ws));
    let stderr = String::from_utf8_lossy(&empty.stderr);
    assert_eq!(empty.status.code(), Some(1), "{}", text(&empty));
    assert!(
        stderr.contains("no new problems")
            && stderr.contains("2025-04-01 … 2025-04-30")
            && stderr.contains("the latest contest on 2025-03-29")
            && stderr.contains("--source NAME=URL")
            && stderr.contains("nothing was written"),
        "{stderr}"
    );
    assert!(!ws.join("manifests/v202504.toml").exists());
    assert!(!ws.join("build/v202504").exists());
    // Unpinned, nothing is fetched and nothing checked: the manifest is written.
    in_dir(&ws, &["plan", "2025-04", "--releases-dir", "releases/sample", "--no-pin"]);
    // `build --check` and `build` refuse it the same way, before anything is decoded.
    builds_refuse_an_empty_window(
        |args| run(coreb().args(["build", "manifests/v202504.toml"]).args(args).current_dir(&ws)),
        "2025-03-29",
    );
    let planned: toml::Value =
        toml::from_str(&fs_err::read_to_string(ws.join("manifests/v202504.toml")).unwrap())
            .unwrap();
    assert_eq!(planned["window"]["start"].as_str(), Some("2025-04-01"), "{planned}");
    assert_eq!(planned["window"]["end"].as_str(), Some("2025-04-30"), "{planned}");
    assert_eq!(planned["releases_dir"].as_str(), Some("../releases/sample"), "{planned}");
    // The errata switch is carried over, written out.
    assert_eq!(
        planned["stages"]["filter"]["livecodebench_errata"].as_bool(),
        Some(true),
        "{planned}"
    );
    assert_eq!(
        planned["sources"][0]["url"].as_str(),
        Some("../tests/fixtures/sample/problems.jsonl"),
        "{planned}"
    );
    assert_eq!(
        planned["sources"][0]["sha256"].as_str(),
        Some("d462574dd9d000ac8e75d72ebf2c7a4757493d4648fdd0728a3c19b3b1b815a0"),
        "{planned}"
    );
    // The month template resolves (its sources are remote: nothing is fetched here).
    in_dir(&ws, &["build", "manifests/month.example.toml", "--show-plan"]);

    // Evaluation in the workspace gives the numbers of the committed release.
    let tasks = |out: std::process::Output| {
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()["tasks"].clone()
    };
    let here = tasks(in_dir(&ws, &["eval", "releases/sample/v202503", "--json"]));
    let committed = tasks(in_dir(&root(), &["eval", "releases/sample/v202503", "--json"]));
    assert_eq!(here.as_array().map(Vec::len), Some(3), "{here}");
    assert_eq!(here, committed);

    // And the export of the workspace's releases.
    in_dir(&ws, &["export", "releases/sample", "exports/coreb"]);
    assert!(ws.join("exports/coreb/README.md").is_file(), "the export has no dataset card");
}
