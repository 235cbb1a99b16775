//! Shared test helpers.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub mod http;
pub use http::{Reply, Request};

/// The `coreb` binary under test.
pub fn coreb() -> Command {
    Command::new(env!("CARGO_BIN_EXE_coreb"))
}

/// The project root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("pipeline/ has a parent").to_owned()
}

/// `tests/fixtures/data/<rel>`: public test data copied into the repository (its README gives
/// each file's source and licence). trec_eval's conformance suite (`trec_eval/…`) lives with
/// the evaluator crate, in `crates/coreb-trec/tests/fixtures/`.
pub fn fixture_data(rel: &str) -> PathBuf {
    if rel == "trec_eval" || rel.starts_with("trec_eval/") {
        return root().join("crates/coreb-trec/tests/fixtures").join(rel);
    }
    root().join("tests/fixtures/data").join(rel)
}

/// The Python interpreter of the test venv (`scripts/setup-python` makes it; `.ci/run` runs
/// that): `$COREB_PYTHON` if set, else `<root>/.venv/bin/python`. Panics with the command to
/// run when neither exists, so a missing client is a clear failure, never a silent skip.
pub fn python() -> Command {
    let path = std::env::var_os("COREB_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join(".venv/bin/python"));
    assert!(
        path.exists(),
        "no test venv at `{}`: run `scripts/setup-python` (or set COREB_PYTHON)",
        path.display()
    );
    Command::new(path)
}

/// A Python client run offline with its caches in `dir`, so nothing outside the test is
/// read or written.
pub fn offline_python(dir: &Path) -> std::process::Command {
    let mut cmd = python();
    cmd.env("HF_HOME", dir.join("hf"))
        .env("HF_DATASETS_CACHE", dir.join("hf/datasets"))
        .env("HF_HUB_OFFLINE", "1")
        .env("HF_DATASETS_OFFLINE", "1")
        .env("MTEB_CACHE", dir.join("mteb"))
        .env("TOKENIZERS_PARALLELISM", "false");
    cmd
}

/// Run a command, returning its output; panics only on a failure to start.
pub fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("start coreb")
}

/// stdout + stderr as text, for assertion messages.
pub fn text(out: &Output) -> String {
    format!(
        "status: {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// stderr as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// stdout as text.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `out`'s stderr holds `needle` (the whole output in the failure message).
#[track_caller]
pub fn stderr_has(out: &Output, needle: &str) {
    assert!(stderr(out).contains(needle), "`{needle}` not in stderr:\n{}", text(out));
}

/// `out`'s stdout holds `needle` (the whole output in the failure message).
#[track_caller]
pub fn stdout_has(out: &Output, needle: &str) {
    assert!(stdout(out).contains(needle), "`{needle}` not in stdout:\n{}", text(out));
}

/// `out` failed and its output (stdout and stderr) holds every one of `names`; returns that
/// output, for further checks.
#[track_caller]
pub fn failed_naming(out: &Output, names: &[&str]) -> String {
    let said = text(out);
    assert!(!out.status.success(), "{said}");
    for n in names {
        assert!(said.contains(n), "`{n}` not named in:\n{said}");
    }
    said
}

/// `out` exited with `code` and its stderr holds every one of `names`.
#[track_caller]
pub fn refused(out: &Output, code: i32, names: &[&str]) {
    assert_eq!(out.status.code(), Some(code), "{}", text(out));
    let err = stderr(out);
    for n in names {
        assert!(err.contains(n), "`{n}` not named in:\n{err}");
    }
}

/// A deterministic bag-of-words embedding: one dimension per hashed lower-case word (the toy
/// embeddings endpoint of the tests' local servers).
pub fn toy_embed(text: &str) -> Vec<f32> {
    let mut v = vec![0.0f32; 64];
    for w in text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
        let h = w
            .to_lowercase()
            .bytes()
            .fold(7u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
        v[(h % 64) as usize] += 1.0;
    }
    v
}

/// A planned manifest whose window holds no new problem: `build --check` and `build --until
/// ingest` (`build(mode)` runs `coreb build` with those arguments) both exit 1 saying so and
/// naming `latest` (the last contest), never as an empty build ("it kept 0").
pub fn builds_refuse_an_empty_window(build: impl Fn(&[&str]) -> Output, latest: &str) {
    for args in [&["--check"][..], &["--until", "ingest"][..]] {
        let out = build(args);
        let stderr = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", text(&out));
        assert!(
            stderr.contains("no new problems")
                && stderr.contains(latest)
                && !stderr.contains("it kept 0"),
            "{args:?}: {stderr}"
        );
    }
}

/// Write `contents` to the file `path`; returns `path`.
pub fn written(path: PathBuf, contents: impl AsRef<[u8]>) -> PathBuf {
    fs_err::write(&path, contents).unwrap();
    path
}

/// The JSON report a script prints as the last non-empty line of its stdout, once `out` has
/// succeeded.
#[track_caller]
pub fn json_report<T: serde::de::DeserializeOwned>(out: &Output) -> T {
    assert!(out.status.success(), "{}", text(out));
    let last = out.stdout.rsplit(|b| *b == b'\n').find(|l| !l.is_empty()).unwrap_or_default();
    serde_json::from_slice(last)
        .unwrap_or_else(|e| panic!("JSON report on stdout: {e}\n{}", text(out)))
}

/// Copy the directory tree `from` to `to` (plain files and directories; `to` is made).
pub fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    fs_err::create_dir_all(to).unwrap();
    for e in fs_err::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_tree(&p, &dest);
        } else {
            fs_err::copy(&p, &dest).unwrap();
        }
    }
}

/// sha256 of every file under `dir`, relative paths sorted.
pub fn tree_sha256(dir: &std::path::Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in fs_err::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().display().to_string();
                out.push((rel, coreb_base::hashing::sha256_file(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// A built release against a committed one: byte-identical — except that on a machine whose
/// toolchains differ from those the committed MANIFEST records (a CI image with another point
/// release of g++, the JDK or Ruby) its provenance (the MANIFEST and `regeneration/versions.json`)
/// may differ in those versions alone.
pub fn same_release_as(committed: &std::path::Path, built: &std::path::Path, what: &str) {
    let (got, expected) = (tree_sha256(built), tree_sha256(committed));
    if got == expected {
        return;
    }
    let others = |t: Vec<(String, String)>| {
        t.into_iter()
            .filter(|(p, _)| {
                p != "MANIFEST.json"
                    && !coreb_data::releases::PROVENANCE_FILES.contains(&p.as_str())
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(others(got), others(expected), "{what}");
    let read = |d: &std::path::Path| fs_err::read(d.join("MANIFEST.json")).unwrap();
    let notes = coreb::release::verify::toolchain_difference(&read(committed), &read(built));
    let notes = notes
        .unwrap_or_else(|| panic!("{what}: MANIFEST.json differs beyond the toolchain versions"));
    eprintln!(
        "{what}: MANIFEST.json differs only in the toolchain versions of this machine: {notes:?}"
    );
}

/// An AtCoder-style (stdin) problem `lcb_<id>` with these public tests.
pub fn stdin_problem(
    id: &str,
    title: &str,
    statement: &str,
    tests: &[(&str, &str)],
) -> coreb_data::problem::Problem {
    use coreb_data::problem::{Platform, Problem, ProblemId, TestType};
    Problem {
        id: ProblemId::from_question_id(id),
        question_title: title.into(),
        question_content: statement.into(),
        platform: Platform::Atcoder,
        question_id: id.into(),
        contest_id: "abc1".into(),
        contest_date: "2025-01-04T00:00:00".into(),
        starter_code: String::new(),
        difficulty: "easy".into(),
        public_tests: test_cases(tests, TestType::Stdin),
        private_tests: Vec::new(),
        func_name: None,
        metadata: "{}".into(),
        answer: Default::default(),
    }
}

/// Test cases of one type from (input, expected output) pairs.
pub fn test_cases(
    tests: &[(&str, &str)],
    testtype: coreb_data::problem::TestType,
) -> Vec<coreb_data::problem::TestCase> {
    let case = |(i, o): &(&str, &str)| coreb_data::problem::TestCase {
        input: (*i).into(),
        output: (*o).into(),
        testtype,
    };
    tests.iter().map(case).collect()
}

/// A BEIR `qrels/*.tsv` (`query-id corpus-id score`, a header line) in trec_eval's four
/// columns (`query 0 doc relevance`).
pub fn trec_qrels(tsv: &std::path::Path) -> String {
    fs_err::read_to_string(tsv)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            format!("{} 0 {} {}\n", f[0], f[1], f[2])
        })
        .collect()
}

/// Every line of a JSON Lines file, parsed (a test's reading of what coreb wrote: any error
/// panics, naming the file).
pub fn jsonl(path: &std::path::Path) -> Vec<serde_json::Value> {
    fs_err::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        .collect()
}
