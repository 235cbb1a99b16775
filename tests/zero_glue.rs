//! Issue #15: a release loads with zero glue, and the repository stands alone.
//!
//! - The sample release through `datasets` (default config, every named config, the task
//!   folders' MTEB configs), BEIR's `GenericDataLoader` and MTEB's evaluation of a model
//!   (tests/python/zero_glue.py); MTEB's nDCG@10 equals `coreb eval --run` on MTEB's own
//!   predictions to 4 decimals.
//! - No file the tests, benchmarks or scripts use refers to the workspace's `shared` directory
//!   beside the repository (a clone has none).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::support::{coreb, json_report, offline_python, root, run, text, tree_sha256};

fn committed() -> PathBuf {
    root().join("releases/sample/v202503")
}

#[test]
fn the_sample_loads_in_datasets_beir_and_mteb_and_mteb_agrees_with_coreb_eval() {
    let dir = tempfile::tempdir().unwrap();
    let out = offline_python(dir.path())
        .arg(root().join("tests/python/zero_glue.py"))
        .arg(committed())
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    let report: serde_json::Value = json_report(&out);
    let checked: Vec<&str> =
        report["checked"].as_array().unwrap().iter().filter_map(|v| v.as_str()).collect();
    for want in [
        "load_dataset(<release>) = code_corpus",
        "load_dataset(<release>, 'code2text_qrels')",
        "load_dataset(<release>/code2code[, corpus|queries])",
        "load_dataset('parquet', <release>/problems.parquet)",
        "GenericDataLoader(<release>/code2text)",
        "mteb.evaluate(coreb_tasks(<release>))",
    ] {
        assert!(checked.contains(&want), "{want} not checked: {checked:?}");
    }
    assert_eq!(checked.len(), 1 + 8 + 1 + 3 + 3 + 1, "{checked:?}");

    let mteb: BTreeMap<String, f64> =
        serde_json::from_value(report["mteb_ndcg_at_10"].clone()).unwrap();
    let run_file = PathBuf::from(report["run"].as_str().unwrap());
    let eval = |extra: &[&str]| -> BTreeMap<String, (f64, u64)> {
        let out = run(coreb()
            .arg("eval")
            .arg(committed())
            .arg("--run")
            .arg(&run_file)
            .args(["--k", "10", "--json"])
            .args(extra));
        assert!(out.status.success(), "{}", text(&out));
        let eval: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        eval["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["task"].as_str().unwrap().to_owned(),
                    (
                        t["overall"]["at_k"]["ndcg"][0].as_f64().unwrap(),
                        t["overall"]["missing"].as_u64().unwrap(),
                    ),
                )
            })
            .collect()
    };
    // A code2code query's own document stays in the series' corpus (an anchor can be another
    // query's positive): MTEB ranks it, as `--keep-self` does; CoREB's number drops it.
    let (ours, kept) = (eval(&[]), eval(&["--keep-self"]));
    assert_eq!(mteb.keys().collect::<Vec<_>>(), ours.keys().collect::<Vec<_>>());
    assert!(
        ours["code2code"].0 > kept["code2code"].0,
        "dropping the query's own document scores higher: {ours:?} vs {kept:?}"
    );
    for (task, theirs) in &mteb {
        let (ndcg, missing) = kept[task];
        assert_eq!(missing, 0, "{task}: MTEB's predictions rank every query");
        assert!(
            (ndcg - theirs).abs() <= 5e-5,
            "{task}: MTEB nDCG@10 {theirs:.6} vs coreb eval --run {ndcg:.6} on MTEB's predictions"
        );
        // A real model's number, not a degenerate one.
        assert!(*theirs > 0.05 && *theirs < 0.999, "{task}: nDCG@10 {theirs}");
    }
}

/// Every file under `tests/`, `bench/` and `scripts/` (and `.ci/`) that is text.
fn text_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs_err::read_dir(dir) else {
        return;
    };
    for e in entries {
        let path = e.unwrap().path();
        if path.is_dir() {
            text_files(&path, out);
        } else if fs_err::read_to_string(&path).is_ok() {
            out.push(path);
        }
    }
}

#[test]
fn nothing_the_tests_use_refers_to_a_directory_beside_the_repository() {
    let mut files = Vec::new();
    for d in ["tests", "bench", "scripts", ".ci"] {
        text_files(&root().join(d), &mut files);
    }
    assert!(files.len() > 20, "only {} files scanned", files.len());
    // Spelled in two pieces so this file does not match itself.
    let needles = [format!("../{}", "shared"), format!("/work/{}", "shared")];
    let offending: Vec<String> = files
        .iter()
        .flat_map(|f| {
            let body = fs_err::read_to_string(f).unwrap();
            let rel = f.strip_prefix(root()).unwrap_or(f).display().to_string();
            body.lines()
                .enumerate()
                .filter(|(_, l)| needles.iter().any(|n| l.contains(n.as_str())))
                .map(|(i, l)| format!("{rel}:{}: {}", i + 1, l.trim()))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        offending.is_empty(),
        "the repository must stand alone (a clone has no `shared` directory beside it):\n{}",
        offending.join("\n")
    );
}

/// The packages of `scripts/debian-packages.txt`.
fn package_list() -> Vec<String> {
    fs_err::read_to_string(root().join("scripts/debian-packages.txt"))
        .unwrap()
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim().to_owned())
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn every_package_the_judge_can_ask_for_is_in_the_one_list() {
    let list = package_list();
    for program in ["python3", "g++", "javac", "java", "go", "ruby"] {
        let package = coreb_judge::toolchain::debian_package(program).unwrap();
        assert!(
            list.iter().any(|p| p == package),
            "`{package}` (for `{program}`) is not in scripts/debian-packages.txt: {list:?}"
        );
    }
    assert!(
        list.iter().any(|p| p == "util-linux") && list.iter().any(|p| p == "python3-venv"),
        "{list:?}"
    );
    // The Dockerfile and scripts/test (the README's test command, which .ci/run runs) install
    // through scripts/setup, not a list of their own.
    let runs = |user: &str, command: &str| {
        let body = fs_err::read_to_string(root().join(user)).unwrap();
        assert!(!body.contains("golang-go"), "{user} keeps its own package list");
        body.lines().map(str::trim_start).filter(|l| !l.starts_with('#')).any(|l| {
            l.starts_with(command)
                || l.contains(&format!("RUN {command}"))
                || l.contains(&format!("/{command}\""))
        })
    };
    assert!(runs("Dockerfile", "scripts/setup"), "the Dockerfile does not run scripts/setup");
    assert!(runs("scripts/test", "scripts/setup"), "scripts/test does not run scripts/setup");
    assert!(runs(".ci/run", "scripts/test"), ".ci/run does not run scripts/test");
}

/// `scripts/setup` on a machine where `golang-go` and `ruby` are missing: `--check` names them;
/// without it, apt-get installs exactly those (a fake `dpkg-query` and `apt-get` on PATH).
#[test]
fn setup_names_and_installs_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    fs_err::create_dir_all(&bin).unwrap();
    let log = dir.path().join("apt.log");
    let scripts = [
        (
            "dpkg-query",
            "#!/bin/sh\nfor a; do p=\"$a\"; done\ncase \" $MISSING \" in *\" $p \"*) exit 1;; esac\nprintf 'install ok installed'\n",
        ),
        ("apt-get", "#!/bin/sh\necho \"$*\" >> \"$APT_LOG\"\n"),
        ("sudo", "#!/bin/sh\nexec \"$@\"\n"),
    ];
    for (name, body) in scripts {
        let path = bin.join(name);
        fs_err::write(&path, body).unwrap();
        std::process::Command::new("chmod").arg("+x").arg(&path).status().unwrap();
    }
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let setup = |missing: &str, args: &[&str]| {
        run(std::process::Command::new(root().join("scripts/setup"))
            .args(args)
            .env("PATH", &path)
            .env("MISSING", missing)
            .env("APT_LOG", &log))
    };
    let apt = || fs_err::read_to_string(&log).unwrap_or_default();

    let out = setup("golang-go ruby", &["--check"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("missing: golang-go ruby"), "{}", text(&out));
    assert_eq!(apt(), "", "--check installs nothing");

    let out = setup("golang-go ruby", &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(apt(), "update -qq\ninstall -y -qq --no-install-recommends golang-go ruby\n");

    fs_err::remove_file(&log).unwrap();
    let out = setup("", &[]);
    assert!(out.status.success() && text(&out).contains("every package"), "{}", text(&out));
    assert_eq!(apt(), "", "nothing missing, nothing installed");
}

#[test]
fn the_published_layout_export_loads_like_the_published_dataset() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("coreb-hf");
    let export = |out: &Path| {
        run(coreb()
            .args(["export", "--layout", "hf-coreb"])
            .arg(root().join("releases/sample"))
            .arg(out))
    };
    let out = export(&out_dir);
    assert!(out.status.success(), "{}", text(&out));
    assert!(out_dir.join("data/code2text_queries/release_v2503.parquet").is_file());
    // Unchanged configs are the release's bytes.
    assert_eq!(
        fs_err::read(out_dir.join("data/text2code_qrels/release_v2503.parquet")).unwrap(),
        fs_err::read(committed().join("text2code_qrels.parquet")).unwrap()
    );
    // The release's regeneration kit rides along, byte for byte, with the release's MANIFEST.
    let mut kit = tree_sha256(&committed().join("regeneration"));
    kit.push((
        "MANIFEST.json".into(),
        coreb_base::hashing::sha256_file(&committed().join("MANIFEST.json")).unwrap(),
    ));
    kit.push((
        "README.md".into(),
        coreb_base::hashing::sha256_file(&committed().join("README.md")).unwrap(),
    ));
    kit.sort();
    assert_eq!(tree_sha256(&out_dir.join("regeneration/v202503")), kit);
    // A second export replaces the first, byte for byte; a directory that is not an export is refused.
    let first = tree_sha256(&out_dir);
    let again = export(&out_dir);
    assert!(again.status.success(), "{}", text(&again));
    assert_eq!(tree_sha256(&out_dir), first, "the export is not reproducible");
    let other = dir.path().join("mine");
    fs_err::create_dir_all(&other).unwrap();
    fs_err::write(other.join("notes.txt"), "mine").unwrap();
    let refused = export(&other);
    assert!(
        !refused.status.success() && text(&refused).contains("is not an export of coreb"),
        "{}",
        text(&refused)
    );
    let empty = run(coreb().arg("export").arg(dir.path().join("mine")).arg(dir.path().join("x")));
    assert!(
        !empty.status.success() && text(&empty).contains("no release under"),
        "{}",
        text(&empty)
    );

    let out = offline_python(dir.path())
        .arg(root().join("tests/python/hf_coreb_export.py"))
        .arg(&out_dir)
        .arg("release_v2503")
        .arg(committed())
        .output()
        .unwrap();
    let report: serde_json::Value = json_report(&out);
    // The sample has every subtask of the published dataset: text2code 3 kinds × (any + 5
    // languages), code2code 3, code2text 2 kinds × (any + 5 languages) + c2t_match.
    let subtasks = |t: &str| report["subtasks"][t].as_array().unwrap().len();
    assert_eq!(
        (subtasks("text2code"), subtasks("code2code"), subtasks("code2text")),
        (18, 3, 13),
        "{report}"
    );
    assert_eq!(report["configs"]["code_corpus"], 100, "{report}");
}
