//! trec_eval's own conformance suite (`make quicktest`: its commands and expected outputs, in
//! tests/fixtures/trec_eval/, NIST licence beside them) run through the library and through the
//! `coreb-trec` binary: the output must be trec_eval's, byte for byte.

use std::path::{Path, PathBuf};
use std::process::Command;

use coreb_trec::command::{CommandError, parse_args, trec_eval};

mod quicktest;
use quicktest::{CASES, assert_same_output};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/trec_eval")
}

fn args(flags: &[&str], qrels: &str, results: &str) -> Vec<String> {
    let dir = fixtures();
    flags
        .iter()
        .map(|f| f.to_string())
        .chain([qrels, results].map(|f| dir.join(f).display().to_string()))
        .collect()
}

fn assert_same(got: &str, expected: &str) {
    assert_same_output(got, &fixtures().join(expected));
}

#[test]
fn library_matches_every_quicktest_output() {
    for (flags, qrels, results, expected) in CASES {
        let parsed = parse_args(args(flags, qrels, results)).expect("trec_eval's flags parse");
        let got = trec_eval(&parsed).unwrap_or_else(|e| panic!("{expected}: {e}"));
        assert_same(&got, expected);
    }
}

#[test]
fn binary_matches_trec_eval_and_names_bad_input() {
    let (flags, qrels, results, expected) = CASES[5];
    let out = Command::new(env!("CARGO_BIN_EXE_coreb-trec"))
        .args(args(flags, qrels, results))
        .output()
        .expect("run coreb-trec");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_same(&String::from_utf8_lossy(&out.stdout), expected);

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("qrels"), "1 0 a 1\n").unwrap();
    std::fs::write(dir.path().join("run"), "1 Q0 a 1 2.0 r\n1 Q0 b 2 x r\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_coreb-trec"))
        .arg(dir.path().join("qrels"))
        .arg(dir.path().join("run"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("reading run") && err.contains("run:2") && err.contains("`x`"), "{err}");

    let out = Command::new(env!("CARGO_BIN_EXE_coreb-trec"))
        .arg("-Z")
        .arg("q")
        .arg("r")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "a usage error exits 2");
}

#[test]
fn unknown_measure_is_refused_before_reading() {
    let parsed = parse_args(args(&["-m", "nosuch"], "qrels.test", "results.test")).unwrap();
    let err = trec_eval(&parsed).unwrap_err();
    assert!(matches!(err, CommandError::Eval(_)) && err.to_string().contains("nosuch"), "{err}");
}
