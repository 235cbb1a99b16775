//! Nothing silently wrong (issue 60): the exit codes as the README's table says, one check per
//! kind of input that every command taking it calls (a run against a release, a store, a
//! release's files against its MANIFEST, a releases dir, a window), inputs that are what they
//! say, and every refusal naming the file, line, field or setting with the input left as it
//! was.

use std::path::{Path, PathBuf};

use crate::support::{
    copy_tree, coreb, refused, root, run, stderr, stdout_has, text, tree_sha256, written,
};

fn sample_release() -> PathBuf {
    root().join("releases/sample/v202503")
}

/// The sample's BM25 run of every task, as `coreb eval --out` writes it, in one file.
fn bm25_run(dir: &Path) -> PathBuf {
    let out = run(coreb()
        .arg("eval")
        .arg(sample_release())
        .arg("--out")
        .arg(dir.join("bm25"))
        .arg("--json"));
    assert!(out.status.success(), "{}", text(&out));
    let mut runs: Vec<PathBuf> = fs_err::read_dir(dir.join("bm25"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".run.trec"))
        .collect();
    runs.sort();
    assert_eq!(runs.len(), 3, "{runs:?}");
    let all: String = runs.iter().map(|p| fs_err::read_to_string(p).unwrap()).collect();
    written(dir.join("all.run.trec"), all)
}

#[test]
fn exit_codes_are_the_readmes_0_done_1_failed_2_usage() {
    let dir = tempfile::tempdir().unwrap();
    // 0: done.
    let ok = run(coreb().args(["verify", "--checksums"]).arg(sample_release()));
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok));
    let help = run(coreb().arg("--help"));
    assert_eq!(help.status.code(), Some(0));
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("Exit codes:") && help.contains("the command was wrong"), "{help}");
    // 1: the work failed (a release that differs from its MANIFEST).
    let copy = dir.path().join("v202503");
    copy_tree(&sample_release(), &copy);
    fs_err::write(copy.join("text2code/queries.jsonl"), "{}\n").unwrap();
    let damaged = run(coreb().args(["verify", "--checksums"]).arg(&copy));
    assert_eq!(damaged.status.code(), Some(1), "{}", text(&damaged));
    // 2: the command was wrong, also for values checked after parsing.
    let bad_corpus = dir.path().join("corpus.toml");
    fs_err::write(&bad_corpus, "[output\ndir = 1\n").unwrap();
    let missing = dir.path().join("no-such-dir");
    let cases: Vec<(Vec<std::ffi::OsString>, Vec<String>)> = vec![
        (
            vec!["plan".into(), "2025-4".into(), "--no-pin".into()],
            vec!["`YYYY-MM`".into(), "2025-4".into()],
        ),
        (
            vec!["eval".into(), sample_release().into(), "--k".into(), "0".into()],
            vec!["`--k`".into()],
        ),
        (
            vec!["eval".into(), missing.clone().into()],
            vec![missing.display().to_string(), "DIR".into()],
        ),
        (vec!["corpus".into(), bad_corpus.clone().into()], vec![bad_corpus.display().to_string()]),
        (
            vec!["corpus".into(), missing.join("corpus.toml").into()],
            vec!["corpus.toml".into(), "MANIFEST".into()],
        ),
        (
            vec!["trec-eval".into(), missing.join("qrels").into(), missing.join("run").into()],
            vec!["QRELS".into(), "no such file".into()],
        ),
        (
            vec!["compare".into(), missing.join("a.json").into(), missing.join("b.json").into()],
            vec!["a.json".into(), "(A)".into()],
        ),
        (
            vec!["eval".into(), sample_release().into(), "--retriever".into(), "bm26".into()],
            vec!["`--retriever`".into(), "bm26".into()],
        ),
        (
            vec![
                "judge".into(),
                missing.join("p.jsonl").into(),
                missing.join("s.py").into(),
                "--lang".into(),
                "python".into(),
            ],
            vec!["PROBLEM".into(), "p.jsonl".into()],
        ),
    ];
    for (args, names) in cases {
        let out = run(coreb().args(&args));
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        refused(&out, 2, &names);
    }
    // Nothing was planned in the working directory.
    assert!(!root().join("manifests/v202504.toml").exists());
}

#[test]
fn a_run_against_a_release_is_checked_by_eval_and_compare_alike() {
    let dir = tempfile::tempdir().unwrap();
    let all = bm25_run(dir.path());
    let text_of = fs_err::read_to_string(&all).unwrap();
    // Part of a release: one query's lines gone.
    let first = text_of.split_whitespace().next().unwrap().to_owned();
    let partial = dir.path().join("partial.run.trec");
    fs_err::write(
        &partial,
        text_of
            .lines()
            .filter(|l| l.split_whitespace().next() != Some(first.as_str()))
            .map(|l| format!("{l}\n"))
            .collect::<String>(),
    )
    .unwrap();
    // Another release's: every query id unknown.
    let other = dir.path().join("other.run.trec");
    fs_err::write(&other, text_of.lines().map(|l| format!("other-{l}\n")).collect::<String>())
        .unwrap();
    for (run_file, why) in [(&partial, "cut short?"), (&other, "another release?")] {
        let name = run_file.display().to_string();
        let eval = run(coreb().arg("eval").arg(sample_release()).arg("--run").arg(run_file));
        refused(&eval, 1, &[&name, why]);
        // `--allow-partial` is suggested where it would score something.
        assert_eq!(
            stderr(&eval).contains("--allow-partial"),
            run_file == &partial,
            "{}",
            text(&eval)
        );
        let compare = run(coreb()
            .arg("compare")
            .arg(&all)
            .arg(run_file)
            .arg("--release")
            .arg(sample_release()));
        refused(&compare, 1, &[&name, why]);
        // `compare` has no `--allow-partial`: it suggests none.
        assert!(!stderr(&compare).contains("--allow-partial"), "{}", text(&compare));
    }
    // The results of a partial run (`--allow-partial`) are not compared either.
    let scored = run(coreb()
        .arg("eval")
        .arg(sample_release())
        .arg("--run")
        .arg(&partial)
        .arg("--allow-partial")
        .arg("--out")
        .arg(dir.path().join("partial")));
    assert!(scored.status.success(), "{}", text(&scored));
    let full = run(coreb()
        .arg("eval")
        .arg(sample_release())
        .arg("--run")
        .arg(&all)
        .arg("--out")
        .arg(dir.path().join("full")));
    assert!(full.status.success(), "{}", text(&full));
    let results = |d: &str| {
        fs_err::read_dir(dir.path().join(d))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|x| x == "json"))
            .unwrap()
    };
    let compare = run(coreb().arg("compare").arg(results("full")).arg(results("partial")));
    refused(&compare, 1, &["partial run", "--allow-partial"]);
    // The whole run against itself: compared.
    let same = run(coreb()
        .arg("compare")
        .arg(results("full"))
        .arg(&all)
        .arg("--release")
        .arg(sample_release()));
    assert!(same.status.success(), "{}", text(&same));
}

#[test]
fn a_damaged_release_is_refused_before_a_result_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let all = bm25_run(dir.path());
    let copy = dir.path().join("releases/v202503");
    copy_tree(&sample_release(), &copy);
    let qrels = copy.join("text2code/qrels/test.tsv");
    let kept = fs_err::read_to_string(&qrels).unwrap();
    // One judgement dropped: the scores would change, the MANIFEST sha256 would not.
    let cut: String =
        kept.lines().take(kept.lines().count() - 1).map(|l| format!("{l}\n")).collect();
    fs_err::write(&qrels, cut).unwrap();
    let before = tree_sha256(dir.path());
    let named = ["text2code/qrels/test.tsv", "MANIFEST.json", "coreb verify --checksums"];
    let eval = run(coreb().arg("eval").arg(&copy));
    refused(&eval, 1, &named);
    let task = run(coreb().arg("eval").arg(copy.join("code2text")));
    refused(&task, 1, &named);
    let record = run(coreb()
        .arg("eval")
        .arg(&copy)
        .args(["--record", "--results"])
        .arg(dir.path().join("results")));
    refused(&record, 1, &named);
    let compare = run(coreb().arg("compare").arg(&all).arg(&all).arg("--release").arg(&copy));
    refused(&compare, 1, &named);
    assert_eq!(tree_sha256(dir.path()), before, "a refusal wrote something");
    // The suggested command names the same file.
    let verify = run(coreb().args(["verify", "--checksums"]).arg(&copy));
    refused(&verify, 1, &[]);
    stdout_has(&verify, "text2code/qrels/test.tsv");
}

#[test]
fn a_store_is_checked_by_every_store_command() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-store");
    let name = missing.display().to_string();
    for args in
        [vec!["stats"], vec!["export", "out.jsonl"], vec!["prune"], vec!["prune", "--dry-run"]]
    {
        let out = run(coreb()
            .arg("store")
            .arg(args[0])
            .arg(&missing)
            .args(&args[1..])
            .current_dir(dir.path()));
        refused(&out, 2, &[&name, "STORE", "no such file or directory"]);
    }
    assert!(!missing.exists() && !dir.path().join("out.jsonl").exists());
    // An unknown `--reason` is refused, naming the kinds there are; a known one prunes.
    let store = dir.path().join("store");
    copy_tree(&root().join("tests/fixtures/sample/store"), &store);
    let before = tree_sha256(&store);
    let out = run(coreb().args(["store", "prune"]).arg(&store).args(["--reason", "shcema"]));
    refused(&out, 2, &["`--reason`", "shcema", "schema", "not_json"]);
    assert_eq!(tree_sha256(&store), before);
    let out =
        run(coreb().args(["store", "prune"]).arg(&store).args(["--reason", "schema", "--dry-run"]));
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn a_releases_dir_that_is_not_there_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let nowhere = dir.path().join("nowhere");
    let name = nowhere.display().to_string();
    let check = run(coreb().arg("check").arg(sample_release()).arg("--releases-dir").arg(&nowhere));
    refused(&check, 2, &[&name, "--releases-dir"]);
    let export = run(coreb()
        .args(["export", "--layout", "hf-coreb"])
        .arg(&nowhere)
        .arg(dir.path().join("out")));
    refused(&export, 2, &[&name, "RELEASES_DIR"]);
    let board = run(coreb()
        .arg("leaderboard")
        .arg("--releases-dir")
        .arg(&nowhere)
        .arg("--out")
        .arg(dir.path().join("site")));
    refused(&board, 2, &[&name, "--releases-dir"]);
    // A file where a directory is read.
    let file = dir.path().join("file");
    fs_err::write(&file, "").unwrap();
    let check = run(coreb().arg("check").arg(sample_release()).arg("--releases-dir").arg(&file));
    refused(&check, 2, &["not a directory", "--releases-dir"]);
    assert!(!dir.path().join("out").exists() && !dir.path().join("site").exists());
}

/// A manifest of the sample's sources with another window, written beside nothing.
fn manifest_with_window(dir: &Path, start: &str, end: &str) -> PathBuf {
    let text = fs_err::read_to_string(root().join("manifests/sample.toml"))
        .unwrap()
        .replace("start = \"2025-01-01\"", &format!("start = \"{start}\""))
        .replace("end = \"2025-03-31\"", &format!("end = \"{end}\""));
    let rebased = text.replace("\"../", &format!("\"{}/", root().display()));
    written(dir.join("m.toml"), rebased)
}

#[test]
fn a_window_is_of_dates_that_exist_and_overlaps_no_release_unless_asked() {
    let dir = tempfile::tempdir().unwrap();
    // A day the calendar lacks: refused by the build (its preflight too) and by plan.
    let feb30 = manifest_with_window(dir.path(), "2025-01-01", "2025-02-30");
    let check = run(coreb()
        .arg("build")
        .arg(&feb30)
        .arg("--check")
        .arg("--output-dir")
        .arg(dir.path().join("build")));
    refused(&check, 2, &["`window`", "2025-02-30", "m.toml"]);
    let base = manifest_with_window(dir.path(), "2025-02-30", "2025-03-31");
    let releases = dir.path().join("releases");
    fs_err::create_dir_all(&releases).unwrap();
    let out = dir.path().join("plan/v202504.toml");
    let plan = run(coreb()
        .args(["plan", "2025-04", "--no-pin", "--from"])
        .arg(&base)
        .arg("--releases-dir")
        .arg(&releases)
        .arg("--out")
        .arg(&out));
    refused(&plan, 2, &["`window`", "2025-02-30", "m.toml"]);
    assert!(!dir.path().join("plan").exists(), "refused after writing");

    // `--from` (the remedy `plan` itself suggests) over a published release's window.
    let base = manifest_with_window(dir.path(), "2025-01-01", "2025-03-31");
    copy_tree(&sample_release(), &releases.join("v202503"));
    let plan_march = |extra: &[&str]| {
        run(coreb()
            .args(["plan", "2025-03", "--no-pin", "--from"])
            .arg(&base)
            .arg("--releases-dir")
            .arg(&releases)
            .arg("--out")
            .arg(&out)
            .args(extra))
    };
    refused(
        &plan_march(&[]),
        2,
        &["overlaps", "`v202503` (2025-01-01 … 2025-03-31)", "--allow-overlap"],
    );
    assert!(!out.exists());
    let allowed = plan_march(&["--allow-overlap"]);
    assert!(allowed.status.success(), "{}", text(&allowed));
    let written = fs_err::read_to_string(&out).unwrap();
    assert!(written.contains("end = \"2025-03-31\""), "{written}");

    // A manifest already there is overwritten only with `--force`.
    fs_err::write(&out, "# written by hand\n").unwrap();
    refused(&plan_march(&["--allow-overlap"]), 2, &[&out.display().to_string(), "--force"]);
    assert_eq!(fs_err::read_to_string(&out).unwrap(), "# written by hand\n");
    let forced = plan_march(&["--allow-overlap", "--force"]);
    assert!(forced.status.success(), "{}", text(&forced));
    assert_ne!(fs_err::read_to_string(&out).unwrap(), "# written by hand\n");
}

#[test]
fn an_export_into_the_release_it_reads_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let releases = dir.path().join("releases");
    copy_tree(&sample_release(), &releases.join("v202503"));
    let before = tree_sha256(&releases);
    for (from, into) in [
        (releases.join("v202503"), releases.join("v202503/hf")),
        (releases.clone(), releases.join("v202503")),
        (releases.join("v202503"), releases.clone()),
    ] {
        let out = run(coreb().args(["export", "--layout", "hf-coreb"]).arg(&from).arg(&into));
        refused(&out, 2, &[&into.display().to_string(), "outside"]);
    }
    assert_eq!(tree_sha256(&releases), before, "the release changed");
}

#[test]
fn a_report_without_record_leaves_the_recorded_review() {
    let dir = tempfile::tempdir().unwrap();
    let releases = dir.path().join("sample");
    copy_tree(&sample_release(), &releases.join("v202503"));
    copy_tree(&root().join("releases/sample/reviews"), &releases.join("reviews"));
    let before = tree_sha256(dir.path());
    let files = ["example-reviewer-a.jsonl", "example-reviewer-b.jsonl"]
        .map(|f| root().join("tests/fixtures/sample/review").join(f));
    let report = |extra: &[&str]| {
        run(coreb()
            .args(["review", "report"])
            .arg(releases.join("v202503"))
            .args(&files)
            .args(extra))
    };
    refused(&report(&[]), 2, &["review.json", "--record", "--out"]);
    assert_eq!(tree_sha256(dir.path()), before, "the recorded review changed");
    // What the message suggests works: elsewhere, and recorded again.
    let elsewhere = dir.path().join("elsewhere");
    let out = report(&["--out", elsewhere.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(elsewhere.join("review.json").is_file());
    let again = report(&["--record"]);
    assert!(again.status.success(), "{}", text(&again));
}

#[test]
fn a_file_where_a_directory_is_written_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    fs_err::write(&file, "mine\n").unwrap();
    let name = file.display().to_string();
    // The build's output_dir, under `--check` too: the preflight names the setting (exit 1).
    for check in [true, false] {
        let mut cmd = coreb();
        cmd.arg("build")
            .arg(root().join("manifests/sample.toml"))
            .arg("--output-dir")
            .arg(&file)
            .arg("--publish-dir")
            .arg(dir.path().join("r/v202503"));
        if check {
            cmd.arg("--check");
        }
        refused(&run(&mut cmd), 1, &["preflight", "`output_dir`", &name]);
    }
    // A directory to write, for the commands that write one (exit 2).
    let review = run(coreb()
        .arg("review")
        .arg(sample_release())
        .args(["--sample", "2", "--seed", "1", "--out"])
        .arg(&file));
    refused(&review, 2, &[&name, "--out", "not a directory"]);
    let import = run(coreb()
        .args(["store", "import"])
        .arg(&file)
        .arg(root().join("releases/sample/v202503/README.md")));
    refused(&import, 2, &[&name, "STORE", "not a directory"]);
    let eval = run(coreb().arg("eval").arg(sample_release()).arg("--out").arg(file.join("sub")));
    refused(&eval, 2, &[&name, "--out"]);
    assert_eq!(fs_err::read_to_string(&file).unwrap(), "mine\n");
    assert!(!dir.path().join("r").exists());
}

#[test]
fn eval_with_a_model_stopped_by_a_signal_says_what_was_kept() {
    use crate::support::http::{Reply, serve};
    // An endpoint that takes every request and never answers: the eval is surely at work.
    let server = serve(|_| {
        Reply::new("200 OK", b"{}".to_vec()).stall_after(0, std::time::Duration::from_secs(600))
    });
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let mut child = coreb()
        .arg("eval")
        .arg(root().join("tests/fixtures/eval/release"))
        .args(["--retriever", "embed:toy-embed", "--base-url"])
        .arg(format!("{}/v1", server.url()))
        .args(["--api-key-env", "COREB_TEST_KEY", "--cache"])
        .arg(&cache)
        .env("COREB_TEST_KEY", "sk-test")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the event needed (a request reached the endpoint), bounded for a busy machine.
    let start = std::time::Instant::now();
    while server.hits() == 0 {
        assert!(child.try_wait().unwrap().is_none(), "eval ended before asking");
        assert!(start.elapsed() < std::time::Duration::from_secs(300), "no request in 300 s");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: a signal to our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let out = child.wait_with_output().unwrap();
    refused(
        &out,
        130,
        &[
            "coreb eval stopped by SIGINT",
            "no result was written or recorded",
            &cache.display().to_string(),
            "run the same command again",
        ],
    );
}
