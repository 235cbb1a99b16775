//! The control release (issue 50): the sample built without the counterfactual rewrite
//! (`manifests/sample-control.toml`) rebuilds byte-identical to the committed
//! `releases/sample/control/v202503`; its MANIFEST names the release it controls; `coreb
//! compare` pairs BM25's per-query scores on the release and on its control, and still refuses
//! two unrelated releases, or a control of another release.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{
    copy_tree, coreb, refused, root, run, same_release_as, stderr_has, text, written,
};

fn release() -> PathBuf {
    root().join("releases/sample/v202503")
}

fn control() -> PathBuf {
    root().join("releases/sample/control/v202503")
}

/// `coreb eval <dir> --out <tmp>/<name>`: its `results.json`.
fn results(tmp: &Path, dir: &Path, name: &str) -> PathBuf {
    let out_dir = tmp.join(name);
    let out = run(coreb().arg("eval").arg(dir).args(["--resamples", "0", "--out"]).arg(&out_dir));
    assert!(out.status.success(), "{}", text(&out));
    out_dir.join("results.json")
}

#[test]
fn the_control_rebuilds_byte_identical_and_names_its_release() {
    let manifest: Value =
        serde_json::from_str(&fs_err::read_to_string(control().join("MANIFEST.json")).unwrap())
            .unwrap();
    let sha = coreb_base::hashing::sha256_file(&release().join("MANIFEST.json")).unwrap();
    assert_eq!(
        manifest["controls"],
        serde_json::json!({"version": "v202503", "manifest_sha256": sha}),
        "the control's MANIFEST names the committed release"
    );
    // No LLM request rewrote anything, and no test was changed.
    assert_eq!(
        manifest["stages"]["rewrite"]["models"],
        serde_json::json!([]),
        "{}",
        manifest["stages"]["rewrite"]
    );
    let card = fs_err::read_to_string(control().join("README.md")).unwrap();
    assert!(
        card.contains("## Control release") && card.contains(&sha),
        "the card says what it controls"
    );

    let dir = tempfile::tempdir().unwrap();
    let out = run(coreb()
        .arg("build")
        .arg(root().join("manifests/sample-control.toml"))
        .args(["--jobs", "2", "--output-dir"])
        .arg(dir.path().join("build"))
        .arg("--publish-dir")
        .arg(dir.path().join("release")));
    assert!(out.status.success(), "{}", text(&out));
    stderr_has(&out, "kept as they are (not rewritten)");
    stderr_has(&out, "map one to one onto the release's");
    same_release_as(&control(), &dir.path().join("release"), "the control release");
}

#[test]
fn a_control_is_built_only_of_a_published_release_of_its_month() {
    let dir = tempfile::tempdir().unwrap();
    let text_of = fs_err::read_to_string(root().join("manifests/sample-control.toml")).unwrap();
    // The manifest's paths made absolute, so that its variants can live in the temp dir.
    let write = |name: &str, body: String| {
        written(dir.path().join(name), body.replace("\"../", &format!("\"{}/", root().display())))
    };
    let missing = write(
        "missing.toml",
        text_of.replace("releases/sample/v202503\"", "releases/sample/v209912\""),
    );
    let out =
        run(coreb().arg("build").arg(&missing).arg("--output-dir").arg(dir.path().join("b1")));
    refused(&out, 1, &["holds no `MANIFEST.json`"]);

    let other_month =
        write("month.toml", text_of.replace("version = \"v202503\"", "version = \"v202504\""));
    let out =
        run(coreb().arg("build").arg(&other_month).arg("--output-dir").arg(dir.path().join("b2")));
    refused(&out, 1, &["a control is of the same month"]);

    let beside =
        write("beside.toml", text_of.replace("releases/sample/control\"", "releases/sample\""));
    let out = run(coreb().arg("build").arg(&beside).arg("--output-dir").arg(dir.path().join("b3")));
    refused(&out, 2, &["`releases_dir` of its own"]);
}

#[test]
fn compare_pairs_bm25_on_the_release_and_on_its_control() {
    let tmp = tempfile::tempdir().unwrap();
    let on_release = results(tmp.path(), &release(), "release");
    let on_control = results(tmp.path(), &control(), "control");
    let out = run(coreb().arg("compare").arg(&on_release).arg(&on_control).arg("--json"));
    assert!(out.status.success(), "{}", text(&out));
    let c: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(c["control"]["control_side"], "B", "{c}");
    assert_eq!(c["control"]["release"]["version"], "v202503");
    let tasks = c["tasks"].as_array().unwrap();
    assert_eq!(
        tasks.iter().map(|t| t["task"].as_str().unwrap()).collect::<Vec<_>>(),
        ["code2code", "code2text", "text2code"]
    );
    // Every query of the control is paired with the release's query of the same id.
    let queries = |dir: &Path, task: &str| {
        fs_err::read_to_string(dir.join(task).join("queries.jsonl")).unwrap().lines().count() as u64
    };
    for t in tasks {
        let task = t["task"].as_str().unwrap();
        assert_eq!(
            t["overall"]["queries"].as_u64(),
            Some(queries(&control(), task)),
            "{task}: {t}"
        );
        assert!(t["by_subtask"].as_object().is_some_and(|s| !s.is_empty()), "{t}");
        let (a, b, d) = (
            t["overall"]["mean_a"].as_f64().unwrap(),
            t["overall"]["mean_b"].as_f64().unwrap(),
            t["overall"]["difference"].as_f64().unwrap(),
        );
        assert!((b - a - d).abs() < 1e-9, "{t}");
    }
    // The same, as Markdown, says which side is the control; swapped sides pair too.
    let out = run(coreb().arg("compare").arg(&on_control).arg(&on_release));
    assert!(out.status.success(), "{}", text(&out));
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.contains("A on its control release") && md.contains("queries paired by id"), "{md}");

    // A control of another release (its `controls` sha256 altered) is refused like any
    // unrelated release.
    let forged = tmp.path().join("forged/v202503");
    copy_tree(&control(), &forged);
    let m = fs_err::read_to_string(forged.join("MANIFEST.json")).unwrap();
    let sha = coreb_base::hashing::sha256_file(&release().join("MANIFEST.json")).unwrap();
    fs_err::write(forged.join("MANIFEST.json"), m.replace(&sha, &"0".repeat(64))).unwrap();
    let out =
        run(coreb().arg("compare").arg(&on_release).arg(results(tmp.path(), &forged, "forged")));
    refused(&out, 1, &["different releases are not compared"]);
}
