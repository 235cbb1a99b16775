//! `coreb eval`: BM25 on CoSQA (the baseline's quality bar), a release-shaped folder with
//! per-task/subtask breakdowns and report files, an external run, and dense retrieval plus
//! reranking against a local OpenAI-compatible server that answers 429 and 500 first.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::support::fixture_data as data;
use crate::support::{coreb, root, run, stderr_has, text, toy_embed as embed};

fn eval_json(args: &[&str]) -> serde_json::Value {
    let out = run(coreb().arg("eval").args(args).arg("--json"));
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

fn ndcg(task: &serde_json::Value, i: usize) -> f64 {
    task["overall"]["at_k"]["ndcg"][i].as_f64().expect("ndcg value")
}

#[test]
fn bm25_on_cosqa_reaches_034_and_agrees_with_trec_eval() {
    let dir = data("cosqa");
    let out_dir = tempfile::tempdir().expect("tempdir");
    let v = eval_json(&[dir.to_str().unwrap(), "--out", out_dir.path().to_str().unwrap()]);
    let task = &v["tasks"][0];
    assert_eq!(task["overall"]["num_queries"], 500);
    assert_eq!(task["level"], 1, "CoSQA's qrels are binary");
    let ndcg10 = ndcg(task, 2);
    assert!(ndcg10 >= 0.34, "BM25 nDCG@10 on CoSQA test = {ndcg10:.4}");
    // The run written in TREC format gives the same number through `coreb trec-eval`.
    let run_file = out_dir.path().join("cosqa.run.trec");
    let qrels = out_dir.path().join("qrels.trec");
    fs_err::write(&qrels, crate::support::trec_qrels(&dir.join("qrels/test.tsv"))).unwrap();
    let out =
        run(coreb().args(["trec-eval", "-m", "ndcg_cut.10", "-c"]).arg(&qrels).arg(&run_file));
    assert!(out.status.success(), "{}", text(&out));
    let line = String::from_utf8_lossy(&out.stdout).to_string();
    let te: f64 = line.split('\t').nth(2).unwrap().trim().parse().unwrap();
    assert!((te - ndcg10).abs() < 5e-5, "trec-eval {te} vs eval {ndcg10}");
}

#[test]
fn release_folder_with_breakdowns_and_reports() {
    let rel = root().join("tests/fixtures/eval/release");
    let out_dir = tempfile::tempdir().expect("tempdir");
    let v = eval_json(&[
        rel.to_str().unwrap(),
        "--k",
        "1,5",
        "--out",
        out_dir.path().to_str().unwrap(),
    ]);
    let tasks = v["tasks"].as_array().unwrap();
    assert_eq!(
        tasks.iter().map(|t| t["task"].as_str().unwrap()).collect::<Vec<_>>(),
        ["code2text", "text2code"]
    );
    let t2c = &tasks[1];
    assert_eq!(t2c["level"], 2);
    assert_eq!(t2c["by_subtask"]["canonical"]["num_queries"], 2);
    assert_eq!(t2c["by_language"]["cpp"]["num_queries"], 1);
    assert_eq!(t2c["overall"]["ks"], serde_json::json!([1, 5]));
    // BM25 puts the wrong-but-similar `sum(nums) ** 2` (a hard negative) first for the
    // canonical query: the intrusion rate sees it.
    assert!(t2c["overall"]["intrusion_rate"].as_f64().unwrap() > 0.0);
    for f in ["results.json", "report.md", "ndcg.svg", "queries.svg", "text2code.run.trec"] {
        assert!(out_dir.path().join(f).is_file(), "{f} missing");
    }
    let md = fs_err::read_to_string(out_dir.path().join("report.md")).unwrap();
    assert!(md.contains("## text2code: by subtask") && md.contains("| canonical | 2 |"), "{md}");
    let svg = fs_err::read_to_string(out_dir.path().join("ndcg.svg")).unwrap();
    assert!(svg.contains("text2code/canonical") && svg.contains("nDCG@5"));
    let run_text = fs_err::read_to_string(out_dir.path().join("text2code.run.trec")).unwrap();
    let first = run_text.lines().next().unwrap();
    assert_eq!(first.split(' ').count(), 6, "TREC run line: {first}");
}

#[test]
fn external_run_and_bad_inputs() {
    let rel = root().join("tests/fixtures/eval/release/text2code");
    let dir = tempfile::tempdir().expect("tempdir");
    let run_file = dir.path().join("perfect.trec");
    fs_err::write(
        &run_file,
        "q_canonical_0001 Q0 code_v0_00001 1 9 p\nq_canonical_0002 Q0 code_v0_00003 1 9 p\nq_search_0001 Q0 code_v0_00005 1 9 p\nq_search_0002 Q0 code_v0_00001 1 9 p\n",
    )
    .unwrap();
    let v = eval_json(&[rel.to_str().unwrap(), "--run", run_file.to_str().unwrap()]);
    assert_eq!(ndcg(&v["tasks"][0], 0), 1.0);
    assert_eq!(v["tasks"][0]["overall"]["intrusion_rate"], 0.0);
    fs_err::write(&run_file, "q1 Q0 d 1 9 p\nq1 Q0 d 2 8 p\n").unwrap();
    let out = run(coreb().arg("eval").arg(&rel).arg("--run").arg(&run_file));
    assert!(!out.status.success());
    stderr_has(&out, "perfect.trec:2");
    let out = run(coreb().arg("eval").arg(dir.path()));
    stderr_has(&out, "not a BEIR folder");
    let out = run(coreb().arg("eval").arg(&rel).args(["--retriever", "tfidf"]));
    stderr_has(&out, "`--retriever`");
}

#[test]
fn release_gates_report_each_failure() {
    let rel = root().join("tests/fixtures/eval/release");
    let out = run(coreb().arg("eval").arg(&rel).arg("--gates"));
    assert!(!out.status.success(), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    // code2text: BM25 finds every positive (nDCG@10 = 1 > 0.95) and one query of two lacks a
    // hard negative; text2code passes.
    assert!(
        err.contains("gate `bm25_band` failed for task `code2text`") && err.contains("leak"),
        "{err}"
    );
    assert!(
        err.contains("gate `hard_negatives` failed for task `code2text`: 1 of 2 queries")
            && err.contains("`q_full_0002`"),
        "{err}"
    );
    assert!(!err.contains("task `text2code`"), "{err}");
    assert!(err.contains("2 release gate(s) failed"), "{err}");
    let ok = run(coreb().arg("eval").arg(rel.join("text2code")).arg("--gates"));
    assert!(ok.status.success(), "{}", text(&ok));
    assert!(String::from_utf8_lossy(&ok.stderr).contains("all release gates passed"));
}

#[derive(Default)]
struct Seen {
    embedding_calls: AtomicUsize,
    rerank_calls: AtomicUsize,
    auth: Mutex<Vec<String>>,
}

/// A local OpenAI-compatible server: the first embeddings request gets 429 with
/// `Retry-After: 1`, the second a 500, then real answers; `/v1/rerank` scores by shared words.
fn start_server() -> (String, Arc<Seen>) {
    let seen = Arc::new(Seen::default());
    let s2 = Arc::clone(&seen);
    let server = crate::support::http::serve(move |request| {
        if let Some(auth) = request.header("authorization") {
            s2.auth.lock().unwrap().push(format!("authorization: {auth}"));
        }
        let req = request.json();
        let request_line = &request.line;
        let (status, extra, resp) = if request_line.contains("/v1/embeddings") {
            let n = s2.embedding_calls.fetch_add(1, Ordering::SeqCst);
            match n {
                0 => (
                    "429 Too Many Requests",
                    "Retry-After: 1\r\n",
                    r#"{"error":"slow down"}"#.to_owned(),
                ),
                1 => ("500 Internal Server Error", "", "boom".to_owned()),
                _ => {
                    let data: Vec<serde_json::Value> =
                        req["input"].as_array().unwrap().iter().enumerate().map(|(i, t)| serde_json::json!({"index": i, "embedding": embed(t.as_str().unwrap())})).collect();
                    ("200 OK", "", serde_json::json!({"data": data}).to_string())
                }
            }
        } else if request_line.contains("/v1/rerank") {
            s2.rerank_calls.fetch_add(1, Ordering::SeqCst);
            let q = embed(req["query"].as_str().unwrap());
            let results: Vec<serde_json::Value> = req["documents"]
                .as_array()
                .unwrap()
                .iter()
                .enumerate()
                .map(|(i, d)| {
                    let e = embed(d.as_str().unwrap());
                    let score: f32 = e.iter().zip(&q).map(|(a, b)| a.min(*b)).sum();
                    serde_json::json!({"index": i, "relevance_score": score})
                })
                .collect();
            ("200 OK", "", serde_json::json!({"results": results}).to_string())
        } else {
            ("404 Not Found", "", String::new())
        };
        let reply =
            crate::support::Reply::new(status, resp).header("Content-Type: application/json");
        if extra.is_empty() { reply } else { reply.header(extra.trim_end()) }
    });
    (format!("{}/v1", server.url()), seen)
}

fn dense_eval(base: &str, cache: &Path, extra: &[&str]) -> serde_json::Value {
    let rel = root().join("tests/fixtures/eval/release");
    let out = run(coreb()
        .arg("eval")
        .arg(&rel)
        .args([
            "--retriever",
            "embed:toy-embed",
            "--base-url",
            base,
            "--api-key-env",
            "COREB_TEST_KEY",
            "--json",
            "--cache",
        ])
        .arg(cache)
        .args(extra)
        .env("COREB_TEST_KEY", "sk-test"));
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice(&out.stdout).expect("JSON")
}

#[test]
fn dense_retrieval_retries_caches_and_reranks() {
    let (base, seen) = start_server();
    let cache = tempfile::tempdir().expect("tempdir");
    let started = std::time::Instant::now();
    let v = dense_eval(&base, cache.path(), &[]);
    assert!(started.elapsed() >= std::time::Duration::from_secs(1), "Retry-After: 1 was honoured");
    // 429, 500, then corpus + queries of two tasks (four batches).
    assert_eq!(seen.embedding_calls.load(Ordering::SeqCst), 6);
    assert_eq!(v["retriever"], "embed:toy-embed");
    assert!(ndcg(&v["tasks"][1], 2) > 0.5, "{v}");
    assert!(seen.auth.lock().unwrap().iter().all(|a| a.ends_with("Bearer sk-test")));
    // A rerun is served from the cache: no embeddings request at all.
    let again = dense_eval(&base, cache.path(), &[]);
    assert_eq!(seen.embedding_calls.load(Ordering::SeqCst), 6);
    assert_eq!(again["tasks"], v["tasks"]);
    // Reranking the top documents goes through /v1/rerank, one call per query.
    let reranked =
        dense_eval(&base, cache.path(), &["--rerank", "toy-rerank", "--rerank-depth", "3"]);
    assert_eq!(seen.rerank_calls.load(Ordering::SeqCst), 6);
    assert_eq!(reranked["retriever"], "embed:toy-embed+rerank:toy-rerank");
}

#[test]
fn dense_retrieval_gives_up_with_a_clear_error() {
    let addr = crate::support::http::serve(|_| {
        crate::support::Reply::new("401 Unauthorized", "bad api key!")
    })
    .addr;
    let rel = root().join("tests/fixtures/eval/release/text2code");
    let cache = tempfile::tempdir().expect("tempdir");
    let out = run(coreb()
        .arg("eval")
        .arg(&rel)
        .args(["--retriever", "embed:m", "--base-url", &format!("http://{addr}/v1"), "--cache"])
        .arg(cache.path()));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("HTTP 401")
            && err.contains("bad api key!")
            && err.contains("after 1 attempts"),
        "{err}"
    );
}
