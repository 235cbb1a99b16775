//! trec_eval's own conformance suite (`make quicktest`: its commands and expected outputs, in
//! tests/fixtures/trec_eval/, NIST licence beside them) run through the library and through the
//! `coreb-trec` binary: the output must be trec_eval's, byte for byte.

use std::path::{Path, PathBuf};
use std::process::Command;

use coreb_trec::command::{CommandError, parse_args, trec_eval};

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
    let want = std::fs::read_to_string(fixtures().join(expected)).expect("expected output");
    if got != want {
        let diff: Vec<String> = got
            .lines()
            .zip(want.lines())
            .filter(|(g, w)| g != w)
            .take(10)
            .map(|(g, w)| format!("got  {g}\nwant {w}"))
            .collect();
        panic!(
            "{expected}: output differs ({} vs {} lines)\n{}",
            got.lines().count(),
            want.lines().count(),
            diff.join("\n")
        );
    }
}

/// Each `make quicktest` case: trec_eval's flags, qrels, results, expected output.
const CASES: &[(&[&str], &str, &str, &str)] = &[
    (&[], "qrels.test", "results.test", "out.test"),
    (&["-m", "all_trec"], "qrels.test", "results.test", "out.test.a"),
    (&["-m", "all_trec", "-q"], "qrels.test", "results.test", "out.test.aq"),
    (&["-m", "all_trec", "-q", "-c"], "qrels.test", "results.trunc", "out.test.aqc"),
    (&["-m", "all_trec", "-q", "-c", "-M100"], "qrels.test", "results.trunc", "out.test.aqcM"),
    (
        &["-m", "all_trec", "-mrelstring.20", "-q", "-l2"],
        "qrels.rel_level",
        "results.test",
        "out.test.aql",
    ),
    (
        &[
            "-q",
            "-miprec_at_recall..10,.20,.25,.75,.50",
            "-m",
            "P.5,7,3",
            "-m",
            "recall.20,2000",
            "-m",
            "Rprec_mult.5.0,0.2,0.35",
            "-mutility.2,-1,0,0",
            "-m",
            "11pt_avg..25,.5,.75",
            "-mndcg.1=3,2=9,4=4.5",
            "-mndcg_cut.10,20,23.4",
            "-msuccess.2,5,20",
        ],
        "qrels.test",
        "results.test",
        "out.test.meas_params",
    ),
];

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
