//! trec_eval's `make quicktest` cases and the byte-for-byte comparison of an output with the
//! expected one: shared by this crate's conformance test and the `coreb trec-eval` integration
//! test of the workspace (`tests/trec_eval.rs`), which run the same cases.

use std::path::Path;

/// Each `make quicktest` case: trec_eval's flags, qrels, results, expected output.
pub const CASES: &[(&[&str], &str, &str, &str)] = &[
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

/// `got` is the expected output in `expected`, byte for byte; else panic with the first
/// differing lines.
pub fn assert_same_output(got: &str, expected: &Path) {
    let want = std::fs::read_to_string(expected).expect("expected output");
    if got != want {
        let diff: Vec<String> = got
            .lines()
            .zip(want.lines())
            .filter(|(g, w)| g != w)
            .take(10)
            .map(|(g, w)| format!("got  {g}\nwant {w}"))
            .collect();
        panic!(
            "{}: output differs ({} vs {} lines)\n{}",
            expected.display(),
            got.lines().count(),
            want.lines().count(),
            diff.join("\n")
        );
    }
}
