//! A small month (issue #13): `bench/month` at N = 5 — the LCB-shaped generator (private
//! tests base64 → zlib → pickle), the simulated endpoint with latency and injected faults, and
//! `coreb` built live against it stage by stage — so the path the N = 200 benchmark takes
//! keeps working. `bench/month/run.py` itself checks what the test asserts on: every stage
//! succeeds, no request is answered twice, the rebuild sends nothing, and every solution's
//! verdicts are the ones its planted outcome demands; the test adds that the bare-process
//! floor, running the judge's own programs, agrees on every pass/fail, and that `execute` with
//! `reuse` (issue #34) gives every solution the plain run's verdicts, and `execute` for labels
//! (issue #61) its pass/fail. It runs with
//! `skip_private_after_public_failure`, as a cheap month would.

use serde_json::Value;

use crate::support::{python, root, run, text};

#[test]
fn a_small_month_builds_live_against_the_simulated_endpoint_with_faults() {
    let dir = tempfile::tempdir().unwrap();
    let figures = dir.path().join("figures.json");
    let mut cmd = python();
    cmd.arg(root().join("bench/month/run.py"))
        .args([
            "--n",
            "6",
            "--tests",
            "4",
            "--max-elements",
            "3000",
            "--latency-ms",
            "5",
            "--fault-rate",
            "35",
            "--stall-secs",
            "3",
            "--timeout",
            "2",
        ])
        .args([
            "--models",
            "m-alpha",
            "--cpu-ms",
            "1000",
            "--wall-ms",
            "2000",
            "--concurrency",
            "4",
            "--skip-private-after-public-failure",
        ])
        .arg("--coreb")
        .arg(env!("CARGO_BIN_EXE_coreb"))
        .arg("--dir")
        .arg(dir.path().join("month"))
        .arg("--json")
        .arg(&figures);
    let out = run(&mut cmd);
    assert!(out.status.success(), "{}", text(&out));
    let f: Value = serde_json::from_str(&fs_err::read_to_string(&figures).unwrap()).unwrap();
    assert_eq!(f["failures"], serde_json::json!([]), "{f:#}");
    // Faults were planted and every one was retried: each stage that asked got its answers.
    let endpoint = f["endpoint"].as_object().unwrap();
    let faults: u64 = endpoint
        .values()
        .flat_map(|s| s["faults"].as_object().unwrap().values())
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert!(faults >= 5, "too few planted faults to mean anything: {f:#}");
    for stage in
        ["rewrite", "reference", "adapt_reference", "distract", "abbreviate", "queries", "generate"]
    {
        let s = &endpoint[stage];
        // Problems with rewritten tests (word tests) get a reference and its adaptation.
        assert!(s["answered"].as_u64().unwrap_or(0) > 0, "{stage} answered nothing: {f:#}");
        assert_eq!(
            s["requests"].as_u64().unwrap(),
            s["answered"].as_u64().unwrap()
                + s["faults"]
                    .as_object()
                    .unwrap()
                    .values()
                    .map(|v| v.as_u64().unwrap())
                    .sum::<u64>(),
            "{stage}: {f:#}"
        );
    }
    // Every solution judged, each as planted; more than one kind of outcome was planted.
    assert_eq!(f["verdicts"]["solutions"], 30, "{f:#}");
    let by = f["verdicts"]["by_outcome"].as_object().unwrap();
    assert!(by.len() >= 3, "{f:#}");
    for (outcome, c) in by {
        assert_eq!(c["solutions"], c["as_planted"], "{outcome}: {f:#}");
    }
    // The floor ran the judge's own programs (`coreb programs`: LeetCode solutions in their
    // drivers) as bare processes, with the same gate, and reached the same pass/fail.
    assert_eq!(f["execute_floor"]["solutions"], 30, "{f:#}");
    assert_eq!(f["execute_floor"]["agree_with_judge"], 30, "{f:#}");
    // Issue #34: `execute` again with the faster starts of Python and Ruby gave every
    // solution the plain run's verdicts, and the faster starts were taken.
    assert_eq!(f["execute_reuse"]["solutions"], 30, "{f:#}");
    assert_eq!(f["execute_reuse"]["verdicts_differ"], 0, "{f:#}");
    assert!(f["execute_reuse"]["fast_starts"].as_u64().unwrap() > 0, "{f:#}");
    // Issue #61: `execute` for labels gave every solution the plain run's pass/fail and every
    // test it ran the plain run's verdict, stopped the failing ones, and the month's figures
    // name its wall beside the plain run's.
    assert_eq!(f["execute_labels"]["solutions"], 30, "{f:#}");
    assert_eq!(f["execute_labels"]["verdicts_differ"], 0, "{f:#}");
    let stopped: u64 = f["execute_labels"]["stopped_by"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert!(stopped > 0, "{f:#}");
    assert!(f["execute_labels"]["judging"]["test_runs"].as_u64().unwrap() > 0, "{f:#}");
    for run in ["plain", "labels"] {
        assert!(f["month_wall_s"][run].as_f64().unwrap() > 0.0, "{f:#}");
    }
}
