//! `coreb trec-eval` against trec_eval's own conformance suite (`make quicktest` commands and
//! expected outputs in tests/fixtures/data/trec_eval/), plus bad-input errors.

use crate::support::{coreb, fixture_data as data, python, root, run, text};

#[path = "../crates/coreb-trec/tests/quicktest/mod.rs"]
mod quicktest;

/// `coreb trec-eval` on the `make quicktest` case whose expected output is `expected`.
fn check(expected: &str) {
    let (args, qrels, results, _) =
        quicktest::CASES.iter().find(|c| c.3 == expected).expect("a quicktest case");
    let dir = data("trec_eval");
    let out = run(coreb().arg("trec-eval").args(*args).arg(dir.join(qrels)).arg(dir.join(results)));
    assert!(out.status.success(), "{}", text(&out));
    quicktest::assert_same_output(&String::from_utf8_lossy(&out.stdout), &dir.join(expected));
}

#[test]
fn default_measures() {
    check("out.test");
}

#[test]
fn all_trec() {
    check("out.test.a");
}

#[test]
fn all_trec_per_query() {
    check("out.test.aq");
}

#[test]
fn complete_over_qrels_queries() {
    check("out.test.aqc");
}

#[test]
fn complete_with_max_retrieved() {
    check("out.test.aqcM");
}

#[test]
fn graded_levels_and_relstring() {
    check("out.test.aql");
}

#[test]
fn measure_parameters() {
    check("out.test.meas_params");
}

/// trec_eval 10.0 recounts `num_rel all` under `-c` from the whole qrels file: every
/// judgement above 0, whatever `-l` (`m_num_rel.c`, `te_calc_avg_num_rel`).
fn complete_num_rel(qrels: &std::path::Path, results: &std::path::Path) -> (String, usize) {
    let out =
        run(coreb().args(["trec-eval", "-c", "-l", "2", "-m", "num_rel"]).arg(qrels).arg(results));
    assert!(out.status.success(), "{}", text(&out));
    let above_zero = fs_err::read_to_string(qrels)
        .unwrap()
        .lines()
        .filter(|l| {
            l.split_whitespace().nth(3).and_then(|r| r.parse::<i64>().ok()).is_some_and(|r| r > 0)
        })
        .count();
    (String::from_utf8_lossy(&out.stdout).into_owned(), above_zero)
}

#[test]
fn complete_num_rel_is_trec_eval_10s() {
    let dir = data("trec_eval");
    let (got, want) = complete_num_rel(&dir.join("qrels.rel_level"), &dir.join("results.test"));
    assert_eq!(got, format!("num_rel               \tall\t{want}\n"));
    // Without `-c` it is the sum over the evaluated queries at level 2: fewer.
    let out = run(coreb()
        .args(["trec-eval", "-l", "2", "-m", "num_rel"])
        .arg(dir.join("qrels.rel_level"))
        .arg(dir.join("results.test")));
    let plain: usize =
        String::from_utf8_lossy(&out.stdout).split('\t').nth(2).unwrap().trim().parse().unwrap();
    assert!(plain < want, "{plain} vs {want}");
}

#[test]
fn complete_num_rel_on_the_sample() {
    // The sample's graded text2code judgements (2 and 1) in TREC format, and a BM25 run.
    let release = root().join("releases/sample/v202503");
    let dir = tempfile::tempdir().unwrap();
    let qrels = dir.path().join("qrels.trec");
    let script = "import pandas as pd, sys\nq = pd.read_parquet(sys.argv[1])\nopen(sys.argv[2], 'w').write(''.join(f'{r.query_id} 0 {r.doc_id} {r.relevance}\\n' for r in q.itertuples()))";
    let out = python()
        .arg("-c")
        .arg(script)
        .arg(release.join("text2code_qrels.parquet"))
        .arg(&qrels)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let eval = run(coreb().arg("eval").arg(release.join("text2code")).arg("--out").arg(dir.path()));
    assert!(eval.status.success(), "{}", text(&eval));
    let (got, want) = complete_num_rel(&qrels, &dir.path().join("text2code.run.trec"));
    assert_eq!(got, format!("num_rel               \tall\t{want}\n"));
    let graded = fs_err::read_to_string(&qrels).unwrap();
    assert!(graded.lines().any(|l| l.ends_with(" 1")), "the graded qrels hold hard negatives");
}

fn fails_with(qrels: &str, results: &str, args: &[&str], needles: &[&str]) {
    let dir = tempfile::tempdir().expect("tempdir");
    fs_err::write(dir.path().join("qrels"), qrels).expect("write");
    fs_err::write(dir.path().join("run"), results).expect("write");
    let out = run(coreb()
        .arg("trec-eval")
        .args(args)
        .arg(dir.path().join("qrels"))
        .arg(dir.path().join("run")));
    assert!(!out.status.success(), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    for n in needles {
        assert!(err.contains(n), "missing `{n}` in: {err}");
    }
}

#[test]
fn duplicate_doc_in_run_names_file_and_lines() {
    fails_with(
        "1 0 a 1\n",
        "1 Q0 a 1 2.0 r\n1 Q0 b 2 1.0 r\n1 Q0 a 3 0.5 r\n",
        &[],
        &["run:3", "`a`", "line 1"],
    );
}

#[test]
fn malformed_lines_name_file_and_line() {
    fails_with("1 0 a 1\n1 0 b\n", "1 Q0 a 1 2.0 r\n", &[], &["qrels:2", "malformed"]);
    fails_with("1 0 a 1\n", "1 Q0 a 1 2.0 r\n1 Q0 b 2 x r\n", &[], &["run:2", "`x`"]);
    fails_with("1 0 a 1\n", "1 Q0 a 1 2.0 r\n", &["-m", "nosuch"], &["nosuch", "unknown measure"]);
}

#[test]
fn huge_relevance_values_are_one_level_each_not_a_dense_array() {
    // trec_eval (and coreb before) sized an array by the highest relevance: 10^12 and i64::MAX
    // asked for terabytes and aborted. Each is one level; the ideal ranking is a, c, b.
    let dir = tempfile::tempdir().expect("tempdir");
    let qrels = format!("1 0 a 1000000000000\n1 0 b 0\n1 0 c 1\n2 0 x {}\n2 0 y 3\n", i64::MAX);
    fs_err::write(dir.path().join("qrels"), qrels).expect("write");
    fs_err::write(
        dir.path().join("run"),
        "1 Q0 a 1 3.0 r\n1 Q0 c 2 2.0 r\n1 Q0 b 3 1.0 r\n2 Q0 y 1 2.0 r\n2 Q0 x 2 1.0 r\n",
    )
    .expect("write");
    let out = run(coreb()
        .arg("trec-eval")
        .args(["-q", "-m", "all_trec"])
        .arg(dir.path().join("qrels"))
        .arg(dir.path().join("run")));
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let value = |measure: &str, query: &str| -> f64 {
        let line = stdout
            .lines()
            .find(|l| l.split_whitespace().take(2).eq([measure, query]))
            .unwrap_or_else(|| panic!("no {measure} {query}: {stdout}"));
        line.split_whitespace().nth(2).unwrap().parse().unwrap()
    };
    assert_eq!(value("ndcg", "1"), 1.0);
    assert_eq!(value("num_rel", "1"), 2.0);
    // Query 2 ranks the i64::MAX document second: far below the ideal, but a number.
    let ndcg2 = value("ndcg", "2");
    assert!(ndcg2 > 0.0 && ndcg2 < 1.0, "{ndcg2}");
    assert_eq!(value("num_rel", "all"), 4.0);
}
