//! `coreb audit <release> model` and `coreb audit <release> rewrite --tests` (issue 7, parts b
//! and c) on the committed sample release `releases/sample/v202503`, with the rewrite artifact
//! of the sample built offline (`--until rewrite`, replay) into a temp dir.
//!
//! The model audit runs against an OpenAI-compatible server on 127.0.0.1 that tells original
//! from rewritten prompts by their title: it answers every original problem with a correct
//! program, and each rewritten one by contest month — wrong in 2025-01, correct only for even
//! seeds (sample 0 of 2) in 2025-02, correct in 2025-03 — so every pass@1 is known in advance.
//! Solutions really run in the sandbox (python3).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::support::{copy_tree, coreb, root, run, stderr_has, text};

const KEY: &str = "sk-audit-secret-7c1d";

fn release() -> PathBuf {
    root().join("releases/sample/v202503")
}

/// Build the sample up to `rewrite` into `dir` (offline, replay; well under a second).
fn build_rewrite(dir: &Path) {
    let out = run(coreb()
        .arg("build")
        .arg(root().join("manifests/sample.toml"))
        .args(["--until", "rewrite", "--output-dir"])
        .arg(dir));
    assert!(out.status.success(), "{}", text(&out));
}

/// A temp dir with the sample built up to `rewrite` in `build/`, and the server's knowledge of
/// that build.
fn built_with_answers() -> (tempfile::TempDir, Arc<Answers>) {
    let dir = tempfile::tempdir().unwrap();
    build_rewrite(&dir.path().join("build"));
    let answers = Arc::new(answers(&dir.path().join("build")));
    (dir, answers)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Side {
    Original,
    Rewritten,
}

/// What the server knows: which title is which problem and version, each problem's month,
/// and a correct program for each version.
struct Answers {
    by_title: BTreeMap<String, (String, Side)>,
    month: BTreeMap<String, String>,
    correct: BTreeMap<(String, Side), String>,
}

fn answers(build: &Path) -> Answers {
    let mut a =
        Answers { by_title: BTreeMap::new(), month: BTreeMap::new(), correct: BTreeMap::new() };
    let problems =
        fs_err::read_to_string(root().join("tests/fixtures/sample/problems.jsonl")).unwrap();
    for line in problems.lines().filter(|l| !l.trim().is_empty()) {
        let p: Value = serde_json::from_str(line).unwrap();
        let qid = p["question_id"].as_str().unwrap().to_owned();
        a.by_title.insert(
            p["question_title"].as_str().unwrap().to_owned(),
            (qid.clone(), Side::Original),
        );
        a.month.insert(qid.clone(), p["contest_date"].as_str().unwrap()[..7].to_owned());
        // The sample's authored python answer that passes its rewritten tests solves the
        // original too (same algorithm and I/O), except `abc388_a`, whose suffix changed; a
        // LeetCode answer is the solution only, so for the original its method takes the
        // original name back (the judge's driver calls the starter's method).
        let authored: Value = serde_json::from_str(
            &fs_err::read_to_string(
                root().join(format!("tests/fixtures/sample/authored/{qid}.json")),
            )
            .unwrap(),
        )
        .unwrap();
        let response = authored["solutions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["language"] == "python" && s["expected"] == "pass")
            .and_then(|s| s["response"].as_str())
            .unwrap()
            .to_owned();
        let meta: Value = serde_json::from_str(p["metadata"].as_str().unwrap_or("{}")).unwrap();
        let original = match (qid.as_str(), meta["func_name"].as_str()) {
            ("abc388_a", _) => {
                "<code>\nS = input().strip()\nprint(S[0] + \"UPC\")\n</code>".to_owned()
            }
            (_, Some(name)) => response.replace(
                &format!("def {}(", authored["rewrite"]["func_name"].as_str().unwrap()),
                &format!("def {name}("),
            ),
            (_, None) => response.clone(),
        };
        a.correct.insert((qid.clone(), Side::Original), original);
        a.correct.insert((qid, Side::Rewritten), response);
    }
    for line in
        fs_err::read_to_string(build.join("artifacts/rewrite/rewritten.jsonl")).unwrap().lines()
    {
        let r: Value = serde_json::from_str(line).unwrap();
        let qid = r["id"].as_str().unwrap().strip_prefix("lcb_").unwrap().to_owned();
        let clash =
            a.by_title.insert(r["title"].as_str().unwrap().to_owned(), (qid, Side::Rewritten));
        assert!(clash.is_none(), "a rewritten title equals an original one");
    }
    assert_eq!(a.by_title.len(), 20);
    a
}

const WRONG: &str = "Here is my solution.\n<code>\nprint(-7654321)\n</code>";

impl Answers {
    /// Which problem and version a generate prompt is for.
    fn which(&self, body: &Value) -> (String, Side) {
        let user = body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default();
        let title = user
            .split_once("Title: ")
            .and_then(|(_, rest)| rest.split_once("\n\nStatement:"))
            .map(|(t, _)| t)
            .unwrap_or_default();
        self.by_title.get(title).cloned().unwrap_or_else(|| panic!("unknown title `{title}`"))
    }

    /// The policy of the module doc.
    fn answer(&self, body: &Value) -> String {
        let (qid, side) = self.which(body);
        let seed = body["seed"].as_u64().unwrap_or(0);
        let correct = match (side, self.month[&qid].as_str()) {
            (Side::Original, _) => true,
            (Side::Rewritten, "2025-01") => false,
            (Side::Rewritten, "2025-02") => seed.is_multiple_of(2),
            (Side::Rewritten, _) => true,
        };
        if correct { self.correct[&(qid, side)].clone() } else { WRONG.to_owned() }
    }

    /// The pass@1 the policy gives a rewritten problem of `month` over `samples` (seeds 0..).
    fn expected_rewritten(month: &str, samples: u64) -> f64 {
        match month {
            "2025-01" => 0.0,
            "2025-02" => {
                (0..samples).filter(|s| s.is_multiple_of(2)).count() as f64 / samples as f64
            }
            _ => 1.0,
        }
    }
}

/// A loopback chat-completions server; `reply(body, attempt)` gives status and answer text,
/// `attempt` counting from 1 per distinct request body.
struct Server {
    url: String,
    hits: Arc<AtomicUsize>,
    auth: Arc<Mutex<Vec<String>>>,
}

fn start(reply: impl Fn(&Value, u32) -> (u16, String) + Send + Sync + 'static) -> Server {
    let hits = Arc::new(AtomicUsize::new(0));
    let auth: Arc<Mutex<Vec<String>>> = Arc::default();
    let attempts: Mutex<BTreeMap<String, u32>> = Mutex::default();
    let (h, a) = (hits.clone(), auth.clone());
    let server = crate::support::http::serve(move |req| {
        h.fetch_add(1, Ordering::SeqCst);
        a.lock().unwrap().push(req.header("authorization").unwrap_or_default().to_owned());
        let body = req.json();
        let attempt = {
            let mut a = attempts.lock().unwrap();
            let n = a.entry(body.to_string()).or_insert(0);
            *n += 1;
            *n
        };
        let (status, answer) = reply(&body, attempt);
        let payload = if status == 200 {
            json!({"id": "c", "object": "chat.completion", "created": 1, "model": body["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}})
        } else {
            json!({"error": {"message": answer}})
        };
        crate::support::Reply::new(&format!("{status} X"), payload.to_string())
            .header("content-type: application/json")
    });
    Server { url: format!("{}/v1", server.url()), hits, auth }
}

/// `coreb audit <release> model` against `url` with the sample's build and a store in `dir`.
fn model_audit(dir: &Path, url: &str, extra: &[&str]) -> Command {
    let mut cmd = coreb();
    cmd.arg("audit")
        .arg(release())
        .args(["model", "--endpoint", url, "--model", "audit-model", "--jobs", "2", "--build-dir"])
        .arg(dir.join("build"))
        .arg("--store")
        .arg(dir.join("store"))
        .args(extra)
        .env("OPENAI_API_KEY", KEY);
    cmd
}

fn window<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["windows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["window"] == name)
        .unwrap_or_else(|| panic!("no window {name}: {report}"))
}

fn close(a: &Value, b: f64) -> bool {
    a.as_f64().is_some_and(|a| (a - b).abs() < 1e-12)
}

/// Every file under `dir` (recursively), as (path relative to `dir`, path).
fn files(dir: &Path) -> Vec<(PathBuf, PathBuf)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(PathBuf, PathBuf)>) {
        for e in fs_err::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.push((p.strip_prefix(root).unwrap().to_owned(), p));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out
}

/// Every file under `dir`, as text.
fn all_text(dir: &Path) -> String {
    files(dir)
        .into_iter()
        .map(|(_, p)| String::from_utf8_lossy(&fs_err::read(p).unwrap()).into_owned())
        .collect()
}

#[test]
fn model_audit_reports_the_pass_at_1_drop_per_window_and_replays_offline() {
    let (dir, answers) = built_with_answers();
    let a = answers.clone();
    let server = start(move |body, _| (200, a.answer(body)));

    let out_dir = dir.path().join("report");
    let mut cmd = model_audit(dir.path(), &server.url, &["--samples", "2", "--json", "--out"]);
    let out = run(cmd.arg(&out_dir));
    assert!(out.status.success(), "{}", text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    // 10 problems × 2 versions × 2 samples, each asked once.
    assert_eq!(server.hits.load(Ordering::SeqCst), 40);
    assert!(server.auth.lock().unwrap().iter().all(|h| h == &format!("Bearer {KEY}")));

    assert_eq!(report["release"], "sample/v202503");
    assert_eq!(
        (report["model"].as_str(), report["language"].as_str(), report["samples"].as_u64()),
        (Some("audit-model"), Some("python"), Some(2))
    );
    assert_eq!(report["unanswered"], 0);
    let mut per_month: BTreeMap<String, usize> = BTreeMap::new();
    for m in answers.month.values() {
        *per_month.entry(m.clone()).or_default() += 1;
    }
    assert_eq!(per_month.len(), 3);
    assert_eq!(report["windows"].as_array().unwrap().len(), 3);
    let mut sum_rewritten = 0.0;
    for (month, n) in &per_month {
        let w = window(&report, month);
        let r = Answers::expected_rewritten(month, 2);
        sum_rewritten += r * *n as f64;
        assert_eq!(w["problems"].as_u64(), Some(*n as u64), "{w}");
        assert!(close(&w["pass_at_1_original"], 1.0), "{w}");
        assert!(close(&w["pass_at_1_rewritten"], r), "{w}");
        assert!(close(&w["drop"], 1.0 - r), "{w}");
        assert!(close(&w["relative_drop"], 1.0 - r), "{w}");
    }
    let overall = &report["overall"];
    assert_eq!(overall["problems"], 10);
    assert!(close(&overall["pass_at_1_original"], 1.0), "{overall}");
    assert!(close(&overall["pass_at_1_rewritten"], sum_rewritten / 10.0), "{overall}");
    assert!(close(&overall["drop"], 1.0 - sum_rewritten / 10.0), "{overall}");
    // Per problem: every original sample passed; rewritten ones as the policy says.
    let problems = report["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 10);
    for p in problems {
        let qid = p["problem_id"].as_str().unwrap().strip_prefix("lcb_").unwrap();
        let month = &answers.month[qid];
        assert_eq!(p["window"].as_str(), Some(month.as_str()));
        assert_eq!(
            (p["original"]["answered"].as_u64(), p["original"]["passed"].as_u64()),
            (Some(2), Some(2)),
            "{p}"
        );
        let passed = (Answers::expected_rewritten(month, 2) * 2.0) as u64;
        assert_eq!(
            (p["rewritten"]["answered"].as_u64(), p["rewritten"]["passed"].as_u64()),
            (Some(2), Some(passed)),
            "{p}"
        );
    }
    let md = fs_err::read_to_string(out_dir.join("model.md")).unwrap();
    assert!(md.contains("# Model audit: `audit-model` on `sample/v202503`"), "{md}");
    assert!(md.contains("| 2025-01 | 2 | 1.000 | 0.000 | +1.000 | +100.0% |"), "{md}");
    assert!(md.contains("| `lcb_abc388_a` | 2025-01 | 2/2 | 0/2 |"), "{md}");
    let written: Value =
        serde_json::from_str(&fs_err::read_to_string(out_dir.join("model.json")).unwrap()).unwrap();
    assert_eq!(written, report);
    // The key is sent, never written or printed.
    for place in [all_text(&dir.path().join("store")), all_text(&out_dir), text(&out)] {
        assert!(!place.contains(KEY));
    }

    // Offline rerun from the store: nothing sent, no key needed, the same report.
    let mut cmd =
        model_audit(dir.path(), "http://127.0.0.1:9/v1", &["--samples", "2", "--json", "--replay"]);
    let again = run(cmd.env_remove("OPENAI_API_KEY"));
    assert!(again.status.success(), "{}", text(&again));
    let mut replayed: Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(replayed["endpoint"], "http://127.0.0.1:9/v1");
    replayed["endpoint"] = report["endpoint"].clone();
    assert_eq!(replayed, report);
    assert_eq!(server.hits.load(Ordering::SeqCst), 40);
    // A third sample is not in the store: replay names the missing request.
    let mut cmd = model_audit(dir.path(), &server.url, &["--samples", "3", "--replay"]);
    let miss = run(&mut cmd);
    assert!(!miss.status.success());
    stderr_has(&miss, "replay: no stored response");
    assert_eq!(server.hits.load(Ordering::SeqCst), 40);
}

#[test]
fn model_audit_retries_5xx_and_reports_samples_left_unanswered() {
    let (dir, answers) = built_with_answers();
    let a = answers.clone();
    // Two 500s before every answer; the original of `3750` (2025-03) never gets one.
    let server = start(move |body, attempt| match a.which(body) {
        (qid, Side::Original) if qid == "3750" => (500, "overloaded".into()),
        _ if attempt <= 2 => (500, "overloaded".into()),
        _ => (200, a.answer(body)),
    });
    let mut cmd =
        model_audit(dir.path(), &server.url, &["--samples", "1", "--max-attempts", "3", "--json"]);
    let out = run(&mut cmd);
    // The report is complete otherwise, but the exit code says a sample is missing.
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(server.hits.load(Ordering::SeqCst), 20 * 3);
    assert_eq!(report["unanswered"], 1);
    let march = window(&report, "2025-03");
    assert_eq!(
        (march["problems"].as_u64(), march["excluded"].as_u64()),
        (Some(4), Some(1)),
        "{march}"
    );
    let p = report["problems"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["problem_id"] == "lcb_3750")
        .unwrap();
    assert_eq!(
        (p["original"]["answered"].as_u64(), &p["original"]["pass_at_1"], &p["drop"]),
        (Some(0), &Value::Null, &Value::Null),
        "{p}"
    );
    // Sample 0 has seed 0: February's rewrites pass too, so only January drops.
    assert!(close(&window(&report, "2025-02")["pass_at_1_rewritten"], 1.0));
    assert!(close(&window(&report, "2025-01")["drop"], 1.0));
    assert_eq!(report["overall"]["problems"], 9);
    assert!(close(&report["overall"]["pass_at_1_rewritten"], 7.0 / 9.0), "{}", report["overall"]);
}

#[test]
fn model_audit_stops_on_401_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    build_rewrite(&dir.path().join("build"));
    let server = start(|_, _| (401, "invalid api key".into()));
    let out_dir = dir.path().join("report");
    let out = run(model_audit(dir.path(), &server.url, &["--out"]).arg(&out_dir));
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("refused the credentials (HTTP 401)") && stderr.contains("API key"),
        "{stderr}"
    );
    assert!(!stderr.contains(KEY));
    assert!(!out_dir.join("model.json").exists());
    // The run stopped: no more than the requests already in flight were sent.
    assert!(server.hits.load(Ordering::SeqCst) <= 8, "{}", server.hits.load(Ordering::SeqCst));

    // Without the key variable nothing is sent and the variable is named.
    let mut cmd = model_audit(dir.path(), &server.url, &["--api-key-env", "AUDIT_KEY_UNSET"]);
    let out = run(cmd.env_remove("AUDIT_KEY_UNSET"));
    assert!(!out.status.success());
    stderr_has(&out, "`AUDIT_KEY_UNSET` is not set");
}

#[test]
fn a_missing_rewrite_artifact_is_named_and_the_manifest_lookup_finds_a_built_one() {
    // The release where the sample manifest expects it: `<tmp>/releases/sample/v202503`, whose
    // embedded manifest (`../../../manifests/sample.toml`) builds into `<tmp>/build/sample`.
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("releases/sample/v202503");
    copy_tree(&release(), &copy);
    let expected = dir.path().join("build/sample/artifacts/rewrite/record.json");
    let audit = |args: &[&str]| run(coreb().arg("audit").arg(&copy).args(args));

    let out = audit(&["model", "--endpoint", "http://127.0.0.1:9/v1", "--model", "m"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("`{}` does not exist", expected.display()))
            && stderr.contains("--build-dir"),
        "{stderr}"
    );
    let out = audit(&["rewrite", "--tests"]);
    stderr_has(&out, &expected.display().to_string());
    // `--build-dir` pointing elsewhere is named too.
    let empty = dir.path().join("empty");
    let out = audit(&[
        "model",
        "--endpoint",
        "http://127.0.0.1:9/v1",
        "--model",
        "m",
        "--build-dir",
        empty.to_str().unwrap(),
    ]);
    stderr_has(&out, &empty.join("artifacts/rewrite/record.json").display().to_string());
    // Without `--tests` the rewrite audit does not look for the build.
    let out = audit(&["rewrite", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report["tests_kept"].as_str().unwrap().starts_with("not audited"));

    // Built where the manifest says: found without `--build-dir`.
    build_rewrite(&dir.path().join("build/sample"));
    let out = audit(&["rewrite", "--tests", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let t = &report["tests_kept"];
    assert_eq!((t["problems"].as_u64(), t["same_count"].as_u64()), (Some(10), Some(10)), "{t}");
    assert_eq!(t["count_changed"], json!([]));
    assert_eq!(t["not_in_artifact"], json!([]));
    // The sample README's table: `abc388_a`, `abc399_a` and `3709` have their 8 public tests
    // rewritten; the other 19 tests are context-independent and kept byte for byte.
    let totals = &t["totals"];
    assert_eq!(
        [
            &totals["source"],
            &totals["rewritten"],
            &totals["kept"],
            &totals["kept_long"],
            &totals["model"],
            &totals["bijection"],
            &totals["identical"],
            &totals["kept_but_changed"]
        ],
        [
            &json!(27),
            &json!(27),
            &json!(19),
            &json!(0),
            &json!(8),
            &json!(0),
            &json!(19),
            &json!(0)
        ],
        "{totals}"
    );
    let rows = report["distances"].as_array().unwrap();
    let rewritten: Vec<&str> = rows
        .iter()
        .filter(|d| d["tests"]["model"].as_u64() > Some(0))
        .map(|d| d["problem_id"].as_str().unwrap())
        .collect();
    assert_eq!(rewritten.len(), 3);
    for id in ["lcb_abc388_a", "lcb_abc399_a", "lcb_3709"] {
        assert!(rewritten.contains(&id), "{rewritten:?}");
    }
    // A damaged artifact is refused, not read.
    let jsonl = dir.path().join("build/sample/artifacts/rewrite/rewritten.jsonl");
    let mut bytes = fs_err::read(&jsonl).unwrap();
    bytes.extend_from_slice(b"\n");
    fs_err::write(&jsonl, bytes).unwrap();
    let out = audit(&["rewrite", "--tests"]);
    assert!(!out.status.success());
    stderr_has(&out, "differs from the");
}
