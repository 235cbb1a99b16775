//! The CoREB paper's evaluation protocol in `coreb eval` and `coreb compare`, against local
//! servers: query/document prompts per task and subtask (and provider input types), the
//! embedding cache keyed by endpoint and prompt, duplicates sent once, pointwise `/rerank`
//! and `/score`, listwise reranking through the LLM gateway against a reference sliding-window
//! implementation (with malformed answers), replay offline, and the statistics against numpy
//! and scipy in the test venv.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::support::{coreb, python, root, run, stderr_has, stdout_has, text, written};

fn release() -> PathBuf {
    root().join("tests/fixtures/eval/release")
}

/// `(task, query id, subtask, text)` of a fixture query.
type FixtureQuery = (String, String, String, String);

/// `(task, query id, subtask, text)` of the fixture release, and `(task, doc id, text)`.
fn fixture() -> (Vec<FixtureQuery>, Vec<(String, String, String)>) {
    let (mut queries, mut docs) = (Vec::new(), Vec::new());
    for task in ["code2text", "text2code"] {
        let dir = release().join(task);
        for l in fs_err::read_to_string(dir.join("queries.jsonl")).unwrap().lines() {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            queries.push((
                task.to_owned(),
                v["_id"].as_str().unwrap().to_owned(),
                v["subtask"].as_str().unwrap_or("").to_owned(),
                v["text"].as_str().unwrap().to_owned(),
            ));
        }
        for l in fs_err::read_to_string(dir.join("corpus.jsonl")).unwrap().lines() {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let title = v["title"].as_str().unwrap_or("");
            let body = v["text"].as_str().unwrap();
            let full = if title.is_empty() { body.to_owned() } else { format!("{title}\n{body}") };
            docs.push((task.to_owned(), v["_id"].as_str().unwrap().to_owned(), full));
        }
    }
    (queries, docs)
}

fn words(t: &str) -> BTreeSet<String> {
    t.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// A deterministic bag-of-words embedding.
fn embed(text: &str) -> Vec<f32> {
    let mut v = vec![0f32; 64];
    for w in words(text) {
        let h = w.bytes().fold(7u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
        v[(h % 64) as usize] += 1.0;
    }
    v
}

/// Shared words of a query and a document: the toy rerankers' score.
fn overlap(q: &str, d: &str) -> f64 {
    words(q).intersection(&words(d)).count() as f64
}

/// Each document's index and its overlap with the query (the toy rerankers' scores of a
/// request's JSON strings).
fn overlaps<'a>(
    query: &'a serde_json::Value,
    documents: &'a serde_json::Value,
) -> impl Iterator<Item = (usize, f64)> + 'a {
    let q = query.as_str().unwrap();
    documents.as_array().unwrap().iter().map(|d| overlap(q, d.as_str().unwrap())).enumerate()
}

/// What the toy chat model answers for a window: its ranking by word overlap (ties: the lower
/// identifier first), then spoiled by the first passage's length: exact, incomplete (last one
/// left out), with chatter and a repeat, or no identifier at all.
fn chat_answer(query: &str, passages: &[String]) -> String {
    let mut order: Vec<usize> = (0..passages.len()).collect();
    order.sort_by(|&a, &b| {
        overlap(query, &passages[b]).total_cmp(&overlap(query, &passages[a])).then(a.cmp(&b))
    });
    let ids: Vec<String> = order.iter().map(|i| format!("[{}]", i + 1)).collect();
    match passages[0].len() % 4 {
        0 => ids.join(" > "),
        1 => ids[..ids.len() - 1].join(" > "),
        2 => format!("Ranking: {} > {}", ids.join(" > "), ids[0]),
        _ => "I cannot decide.".to_owned(),
    }
}

/// Every request a test server saw.
#[derive(Default)]
struct Seen {
    /// `(input_type or task field, text)` of every embedded text.
    embedded: Mutex<Vec<(String, String)>>,
    rerank: Mutex<u32>,
    score: Mutex<u32>,
    chat: Mutex<u32>,
}

/// A local OpenAI-compatible server: `/v1/embeddings`, `/v1/rerank`, `/v1/score` and
/// `/v1/chat/completions` (the toy listwise model).
fn server() -> (String, Arc<Seen>) {
    let seen = Arc::new(Seen::default());
    let s = Arc::clone(&seen);
    let server = crate::support::http::serve(move |req| {
        let body = req.json();
        let resp = if req.line.contains("/v1/embeddings") {
            let kind = body
                .get("input_type")
                .or(body.get("task"))
                .and_then(|v| v.as_str())
                .unwrap_or("")
                .to_owned();
            let inputs: Vec<String> = body["input"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_str().unwrap().to_owned())
                .collect();
            let data: Vec<serde_json::Value> = inputs
                .iter()
                .enumerate()
                .map(|(i, t)| serde_json::json!({"index": i, "embedding": embed(t)}))
                .collect();
            s.embedded.lock().unwrap().extend(inputs.into_iter().map(|t| (kind.clone(), t)));
            serde_json::json!({ "data": data })
        } else if req.line.contains("/v1/rerank") {
            *s.rerank.lock().unwrap() += 1;
            let results: Vec<serde_json::Value> = overlaps(&body["query"], &body["documents"])
                .map(|(i, score)| serde_json::json!({"index": i, "relevance_score": score}))
                .collect();
            serde_json::json!({ "results": results })
        } else if req.line.contains("/v1/score") {
            *s.score.lock().unwrap() += 1;
            let data: Vec<serde_json::Value> = overlaps(&body["text_1"], &body["text_2"])
                .map(
                    |(i, score)| serde_json::json!({"index": i, "object": "score", "score": score}),
                )
                .collect();
            serde_json::json!({ "data": data })
        } else if req.line.contains("/v1/chat/completions") {
            *s.chat.lock().unwrap() += 1;
            let user =
                body["messages"].as_array().unwrap().iter().find(|m| m["role"] == "user").unwrap()
                    ["content"]
                    .as_str()
                    .unwrap()
                    .to_owned();
            let (query, passages) = read_window(&user);
            let answer = chat_answer(&query, &passages);
            serde_json::json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 10, "completion_tokens": 5}})
        } else {
            serde_json::json!({})
        };
        crate::support::Reply::json(&resp)
    });
    (format!("{}/v1", server.url()), seen)
}

/// The query and the passages of a listwise prompt (`Search query: …`, `[i] text` blocks).
fn read_window(user: &str) -> (String, Vec<String>) {
    let query = user.lines().find_map(|l| l.strip_prefix("Search query: ")).unwrap().to_owned();
    let marker = regex::Regex::new(r"(?m)^\[(\d+)\] ").unwrap();
    let starts: Vec<(usize, usize)> =
        marker.find_iter(user).map(|m| (m.start(), m.end())).collect();
    let tail = user.rfind("\n\nSearch query: ").unwrap();
    let passages = starts
        .iter()
        .enumerate()
        .map(|(i, &(_, end))| user[end..starts.get(i + 1).map_or(tail, |n| n.0)].trim().to_owned())
        .collect();
    (query, passages)
}

fn eval(args: &[&str], cwd: &Path) -> serde_json::Value {
    let out = run(coreb().current_dir(cwd).arg("eval").arg(release()).args(args).args([
        "--json",
        "--api-key-env",
        "",
    ]));
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

#[test]
fn prompts_reach_the_server_per_task_and_side_and_repeats_are_sent_once() {
    let (base, seen) = server();
    let dir = tempfile::tempdir().unwrap();
    let presets = written(
        dir.path().join("presets.toml"),
        "format = 1\n[instructions]\n\"text2code\" = \"T2C\"\n\"text2code/search\" = \"T2C-search\"\n\"code2text\" = \"C2T\"\n\
         [[preset]]\nname = \"toy\"\nmodels = [\"toy-*\"]\nquery = \"Q[{instruction}]: {text}\"\ndocument = \"D: {text}\"\n\
         query_fields = { input_type = \"query\" }\ndocument_fields = { input_type = \"document\" }\n\
         [[preset]]\nname = \"none\"\nmodels = [\"*\"]\n",
    );
    let v = eval(
        &[
            "--retriever",
            "embed:toy-embed",
            "--base-url",
            &base,
            "--prompts",
            presets.to_str().unwrap(),
            "--no-cache",
            "--batch-size",
            "3",
        ],
        dir.path(),
    );
    let (queries, docs) = fixture();
    let instruction = |task: &str, sub: &str| match (task, sub) {
        ("text2code", "search") => "T2C-search",
        ("text2code", _) => "T2C",
        _ => "C2T",
    };
    let mut want: Vec<(String, String)> = queries
        .iter()
        .map(|(t, _, s, q)| ("query".to_owned(), format!("Q[{}]: {q}", instruction(t, s))))
        .collect();
    want.extend(docs.iter().map(|(_, _, d)| ("document".to_owned(), format!("D: {d}"))));
    want.sort();
    want.dedup();
    let mut got = seen.embedded.lock().unwrap().clone();
    got.sort();
    assert_eq!(
        got, want,
        "every query prompt reached the server only with queries, every document prompt only with documents, each text once"
    );
    assert_eq!(v["prompts"]["preset"], "toy");
    assert_eq!(
        v["prompts"]["tasks"]["text2code"]["queries"]["search"]["template"],
        "Q[T2C-search]: {text}"
    );
    assert_eq!(
        v["prompts"]["tasks"]["text2code"]["queries"]["canonical"]["template"],
        "Q[T2C]: {text}"
    );
    assert_eq!(v["prompts"]["tasks"]["code2text"]["document"]["fields"]["input_type"], "document");
    assert!(!dir.path().join(".coreb-cache").exists(), "--no-cache writes no cache");

    // Without prompts a code2text query is the very text of a text2code document: it is sent
    // once, and so is every other repeated text.
    seen.embedded.lock().unwrap().clear();
    eval(
        &[
            "--retriever",
            "embed:toy-embed",
            "--base-url",
            &base,
            "--prompt-preset",
            "none",
            "--no-cache",
        ],
        dir.path(),
    );
    let sent: Vec<String> = seen.embedded.lock().unwrap().iter().map(|(_, t)| t.clone()).collect();
    let all: Vec<&String> = queries.iter().map(|q| &q.3).chain(docs.iter().map(|d| &d.2)).collect();
    let distinct: BTreeSet<&String> = all.iter().copied().collect();
    assert!(distinct.len() < all.len(), "the fixture repeats a text");
    assert_eq!(
        sent.len(),
        distinct.len(),
        "{} texts, {} distinct, {} sent",
        all.len(),
        distinct.len(),
        sent.len()
    );
    // Prompt flags without a dense retriever are refused.
    let out = run(coreb().arg("eval").arg(release()).args(["--query-prompt", "q: "]));
    assert!(!out.status.success(), "{}", text(&out));
    stderr_has(&out, "apply to `--retriever embed:");
}

#[test]
fn the_cache_separates_endpoints_and_prompts() {
    let (a, seen_a) = server();
    let (b, seen_b) = server();
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let go = |base: &str, extra: &[&str]| {
        eval(
            &[
                &[
                    "--retriever",
                    "embed:same-name",
                    "--base-url",
                    base,
                    "--cache",
                    cache.to_str().unwrap(),
                ],
                extra,
            ]
            .concat(),
            dir.path(),
        )
    };
    let count = |s: &Arc<Seen>| s.embedded.lock().unwrap().len();
    let first = go(&a, &[]);
    let sent_a = count(&seen_a);
    assert!(sent_a > 0);
    // Another endpoint with the same model name gets its own requests.
    let other = go(&b, &[]);
    assert_eq!(count(&seen_b), sent_a, "the cache of endpoint A was not reused for endpoint B");
    assert_eq!(other["tasks"], first["tasks"]);
    // The same endpoint again: everything from the cache.
    go(&a, &[]);
    assert_eq!(count(&seen_a), sent_a);
    // A new query prompt: only the queries are embedded again.
    go(&a, &["--query-prompt", "search: "]);
    let (queries, _) = fixture();
    let new: BTreeSet<String> =
        seen_a.embedded.lock().unwrap()[sent_a..].iter().map(|(_, t)| t.clone()).collect();
    let want: BTreeSet<String> = queries.iter().map(|q| format!("search: {}", q.3)).collect();
    assert_eq!(new, want);
}

fn ranked_ids(run_file: &Path) -> BTreeMap<String, Vec<String>> {
    let mut lines: Vec<(String, i64, String)> = fs_err::read_to_string(run_file)
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[0].to_owned(), f[3].parse().unwrap(), f[2].to_owned())
        })
        .collect();
    lines.sort();
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (q, _, d) in lines {
        out.entry(q).or_default().push(d);
    }
    out
}

#[test]
fn pointwise_rerank_and_score_endpoints_rerank_the_top_documents() {
    let (base, seen) = server();
    let dir = tempfile::tempdir().unwrap();
    let (queries, _) = fixture();
    let mut outs = Vec::new();
    for api in ["rerank", "score"] {
        let out = dir.path().join(api);
        let v = eval(
            &[
                "--rerank",
                "toy-rr",
                "--rerank-api",
                api,
                "--rerank-depth",
                "3",
                "--rerank-base-url",
                &base,
                "--out",
                out.to_str().unwrap(),
            ],
            dir.path(),
        );
        assert_eq!(v["retriever"], format!("bm25+{api}:toy-rr"));
        assert_eq!(v["rerank"]["depth"], 3);
        let t2c = &v["tasks"][1];
        let d = &t2c["rerank"]["ndcg"]["overall"][2];
        let first = t2c["rerank"]["first_stage"]["at_k"]["ndcg"][2].as_f64().unwrap();
        assert!((d["mean_a"].as_f64().unwrap() - first).abs() < 1e-12);
        assert!(
            (d["mean_b"].as_f64().unwrap() - t2c["overall"]["at_k"]["ndcg"][2].as_f64().unwrap())
                .abs()
                < 1e-12
        );
        assert!(t2c["rerank"]["ndcg"]["by_subtask"]["search"].is_array());
        let report = fs_err::read_to_string(out.join("report.md")).unwrap();
        assert!(report.contains("ΔnDCG@10 of reranking"), "{report}");
        outs.push((
            ranked_ids(&out.join("text2code.run.trec")),
            ranked_ids(&out.join("text2code.first.run.trec")),
        ));
    }
    assert_eq!(*seen.rerank.lock().unwrap(), queries.len() as u32, "one /rerank call per query");
    assert_eq!(*seen.score.lock().unwrap(), queries.len() as u32, "one /score call per query");
    assert_eq!(outs[0].0, outs[1].0, "both shapes give the same order");
    for (q, ranked) in &outs[0].0 {
        assert_eq!(
            ranked.len(),
            outs[0].1[q].len().min(3),
            "{q}: the reranked run holds the top 3"
        );
        let first: BTreeSet<&String> = outs[0].1[q].iter().take(3).collect();
        assert_eq!(ranked.iter().collect::<BTreeSet<_>>(), first, "{q}: the same three documents");
    }
}

/// The reference: sliding windows as documented, answers read as documented.
fn reference_order(
    query: &str,
    mut docs: Vec<(String, String)>,
    window: usize,
    step: usize,
) -> Vec<String> {
    let bracketed = regex::Regex::new(r"\[(\d+)\]").unwrap();
    let bare = regex::Regex::new(r"\d+").unwrap();
    let mut end = docs.len();
    loop {
        let start = end.saturating_sub(window);
        let texts: Vec<String> = docs[start..end].iter().map(|d| d.1.clone()).collect();
        let answer = chat_answer(query, &texts);
        let m = end - start;
        let mut ids: Vec<usize> =
            bracketed.captures_iter(&answer).map(|c| c[1].parse().unwrap()).collect();
        if ids.is_empty() {
            ids = bare.find_iter(&answer).map(|x| x.as_str().parse().unwrap()).collect();
        }
        let mut order: Vec<usize> = Vec::new();
        for id in ids {
            if id >= 1 && id <= m && !order.contains(&(id - 1)) {
                order.push(id - 1);
            }
        }
        let missing: Vec<usize> = (0..m).filter(|i| !order.contains(i)).collect();
        order.extend(missing);
        let old = docs[start..end].to_vec();
        for (slot, i) in order.into_iter().enumerate() {
            docs[start + slot] = old[i].clone();
        }
        if start == 0 || end <= step {
            break;
        }
        end -= step;
    }
    docs.into_iter().map(|d| d.0).collect()
}

#[test]
fn listwise_reranking_follows_the_reference_sliding_window_and_replays_offline() {
    let (base, seen) = server();
    let dir = tempfile::tempdir().unwrap();
    let (queries, docs) = fixture();
    // A first stage that lists every document of the task, in reverse id order.
    let mut first = String::new();
    for (task, qid, _, _) in &queries {
        let mut ids: Vec<&String> = docs.iter().filter(|d| &d.0 == task).map(|d| &d.1).collect();
        ids.reverse();
        for (rank, id) in ids.iter().enumerate() {
            first.push_str(&format!("{qid} Q0 {id} {} {} first\n", rank + 1, 100 - rank));
        }
    }
    let run_file = written(dir.path().join("first.trec"), &first);
    let store = dir.path().join("store");
    let out = dir.path().join("out");
    let args = |out: &Path| -> Vec<String> {
        [
            "--run",
            run_file.to_str().unwrap(),
            "--rerank",
            "toy-chat",
            "--rerank-api",
            "listwise",
            "--rerank-base-url",
            &base,
            "--window",
            "3",
            "--step",
            "2",
            "--rerank-depth",
            "7",
            "--store",
            store.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let a = args(&out);
    let v = eval(&a.iter().map(String::as_str).collect::<Vec<_>>(), dir.path());
    let stats = &v["rerank"]["listwise_stats"];
    for kind in ["exact", "repaired", "unparseable"] {
        assert!(stats[kind].as_u64().unwrap() > 0, "the toy model gave {kind} answers: {stats}");
    }
    assert_eq!(stats["failed"], 0);
    let calls = *seen.chat.lock().unwrap();
    assert_eq!(u64::from(calls), stats["windows"].as_u64().unwrap());
    let text_of: BTreeMap<&String, &String> = docs.iter().map(|d| (&d.1, &d.2)).collect();
    for task in ["code2text", "text2code"] {
        let got = ranked_ids(&out.join(format!("{task}.run.trec")));
        for (t, qid, _, qtext) in queries.iter().filter(|q| q.0 == task) {
            let mut ids: Vec<&String> = docs.iter().filter(|d| &d.0 == t).map(|d| &d.1).collect();
            ids.reverse();
            let candidates: Vec<(String, String)> =
                ids.iter().map(|id| ((*id).clone(), text_of[id].clone())).collect();
            assert_eq!(got[qid], reference_order(qtext, candidates, 3, 2), "{qid}");
        }
    }
    // Offline: the same answers from the store, nothing sent.
    let out2 = dir.path().join("out2");
    let mut b = args(&out2);
    b.push("--replay".into());
    let again = eval(&b.iter().map(String::as_str).collect::<Vec<_>>(), dir.path());
    assert_eq!(*seen.chat.lock().unwrap(), calls, "replay sent nothing");
    assert_eq!(again["tasks"], v["tasks"]);
    assert_eq!(again["rerank"]["listwise_stats"]["from_store"], stats["windows"]);
    for task in ["code2text", "text2code"] {
        assert_eq!(
            fs_err::read(out.join(format!("{task}.run.trec"))).unwrap(),
            fs_err::read(out2.join(format!("{task}.run.trec"))).unwrap()
        );
    }
}

/// Per-query values of a synthetic results file: `n` queries whose nDCG@10 follow `f`.
fn results_file(path: &Path, tasks: &[(&str, Vec<f64>)]) {
    let tasks: Vec<serde_json::Value> = tasks
        .iter()
        .map(|(name, values)| {
            let queries: Vec<serde_json::Value> = values
                .iter()
                .enumerate()
                .map(|(i, v)| serde_json::json!({"qid": format!("{name}_q{i:04}"), "subtask": if i % 3 == 0 { "a" } else { "b" }, "at_k": {"ndcg": [*v], "map": [0.0], "recall": [0.0], "precision": [0.0], "mrr": [0.0], "r_cap": [0.0]}}))
                .collect();
            serde_json::json!({"task": name, "queries": queries})
        })
        .collect();
    fs_err::write(path, serde_json::json!({"retriever": path.file_stem().unwrap().to_str().unwrap(), "ks": [10], "tasks": tasks}).to_string()).unwrap();
}

#[test]
fn bootstrap_and_tests_equal_numpy_and_scipy() {
    let dir = tempfile::tempdir().unwrap();
    let script = root().join("tests/python/significance_check.py");
    // coreb eval's intervals, recomputed from its own per-query values.
    let out = dir.path().join("bm25");
    eval(&["--out", out.to_str().unwrap()], dir.path());
    let check = run(python().arg(&script).arg("eval").arg(out.join("results.json")));
    assert!(check.status.success(), "{}", text(&check));
    // Run files are evaluated on `--release`; a run against itself differs by nothing.
    let run_file = out.join("text2code.run.trec");
    let same = run(coreb()
        .arg("compare")
        .arg(&run_file)
        .arg(&run_file)
        .arg("--release")
        .arg(release().join("text2code"))
        .args(["--metric", "mrr@10", "--json"]));
    assert!(same.status.success(), "{}", text(&same));
    let same: serde_json::Value = serde_json::from_slice(&same.stdout).unwrap();
    assert_eq!(same["metric"], "mrr@10");
    assert_eq!(same["tasks"][0]["overall"]["difference"], 0.0);
    assert!(same["tasks"][0]["overall"]["wilcoxon_p"].is_null());
    let no_release = run(coreb().arg("compare").arg(&run_file).arg(&run_file));
    stderr_has(&no_release, "`--release`");
    // coreb compare on crafted per-query values: every branch of the Wilcoxon test.
    let lcg = |seed: u64, n: usize, levels: u64| -> Vec<f64> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = x
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                ((x >> 33) % levels) as f64 / levels as f64
            })
            .collect()
    };
    let distinct = |n: usize, shift: f64| -> Vec<f64> {
        (0..n)
            .map(|i| ((i * 37 % 101) as f64 + shift * (i as f64 * 0.37 + 0.5).sin()) / 101.0)
            .collect()
    };
    // Each case: its name, then side A's and side B's per-query values.
    let cases = [
        ("exact_n8", distinct(8, 0.0), distinct(8, 0.9)),
        ("exact_n40", distinct(40, 0.0), distinct(40, 0.7)),
        ("perm_n10", lcg(1, 10, 4), lcg(11, 10, 4)),
        ("asym_n30", lcg(2, 30, 5), lcg(12, 30, 5)),
        ("asym_n300", lcg(3, 300, 8), lcg(13, 300, 8)),
        ("same", vec![0.5; 20], vec![0.5; 20]),
    ];
    let a: Vec<(&str, Vec<f64>)> = cases.iter().map(|(n, x, _)| (*n, x.clone())).collect();
    let b: Vec<(&str, Vec<f64>)> = cases.iter().map(|(n, _, y)| (*n, y.clone())).collect();
    // The exact branch needs differences without zeros or ties; the permutation branch (n ≤ 13)
    // and the normal approximation need ties or zeros. A case's |B − A|, and how many distinct
    // values they take:
    let abs_diffs = |i: usize| -> (Vec<f64>, usize) {
        let (_, x, y) = &cases[i];
        let d: Vec<f64> = x.iter().zip(y).map(|(x, y)| (y - x).abs()).collect();
        let distinct = d.iter().map(|x| x.to_bits()).collect::<BTreeSet<u64>>().len();
        (d, distinct)
    };
    for i in [0, 1] {
        let (d, distinct) = abs_diffs(i);
        assert!(d.iter().all(|x| *x > 0.0) && distinct == d.len(), "{}: {d:?}", cases[i].0);
    }
    for i in [2, 3, 4] {
        let (d, distinct) = abs_diffs(i);
        assert!(d.contains(&0.0) || distinct < d.len(), "{}", cases[i].0);
    }
    let (fa, fb) = (dir.path().join("A.json"), dir.path().join("B.json"));
    results_file(&fa, &a);
    results_file(&fb, &b);
    let out = run(coreb().arg("compare").arg(&fa).arg(&fb).args(["--json"]));
    assert!(out.status.success(), "{}", text(&out));
    let cmp = written(dir.path().join("compare.json"), &out.stdout);
    let check = run(python().arg(&script).arg("compare").arg(&fa).arg(&fb).arg(&cmp));
    assert!(check.status.success(), "{}", text(&check));
    let printed = String::from_utf8_lossy(&check.stdout);
    assert!(
        printed.contains("perm_n10 (n=10) wilcoxon p") && printed.contains("0 failed"),
        "{printed}"
    );
    // The human table, and results of another release are refused.
    let human = run(coreb().arg("compare").arg(&fa).arg(&fb));
    stdout_has(&human, "| asym_n300 | all | 300 |");
    results_file(&fb, &b[..2]);
    let bad = run(coreb().arg("compare").arg(&fa).arg(&fb));
    assert!(!bad.status.success(), "{}", text(&bad));
    stderr_has(&bad, "not results on the same release");
}

#[test]
fn the_key_goes_only_to_the_configured_base_url() {
    // `elsewhere` records what reaches it; `base` redirects every request there.
    let (elsewhere, seen_elsewhere) = server();
    let auth = Arc::new(Mutex::new(Vec::new()));
    let auth2 = Arc::clone(&auth);
    let target = format!("{elsewhere}/embeddings");
    let addr = crate::support::http::serve(move |req| {
        auth2.lock().unwrap().push(req.header("authorization").unwrap_or("").to_owned());
        crate::support::Reply::new("307 Temporary Redirect", Vec::new())
            .header(format!("Location: {target}"))
    })
    .addr;
    let dir = tempfile::tempdir().unwrap();
    let out = run(coreb()
        .current_dir(dir.path())
        .arg("eval")
        .arg(release())
        .args([
            "--retriever",
            "embed:m",
            "--no-cache",
            "--base-url",
            &format!("http://{addr}/v1"),
            "--api-key-env",
            "COREB_SECRET_KEY",
        ])
        .env("COREB_SECRET_KEY", "sk-secret"));
    assert!(!out.status.success(), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("HTTP 307") && err.contains("not followed") && err.contains(&elsewhere),
        "{err}"
    );
    assert_eq!(
        auth.lock().unwrap().first().map(String::as_str),
        Some("Bearer sk-secret"),
        "the configured base URL got the key"
    );
    assert!(seen_elsewhere.embedded.lock().unwrap().is_empty(), "nothing reached the other host");
    assert!(!err.contains("sk-secret"), "the key is never printed: {err}");
}

#[test]
fn a_manifest_gives_the_prompts_and_the_gate_thresholds() {
    let (base, seen) = server();
    let dir = tempfile::tempdir().unwrap();
    let manifest = written(
        dir.path().join("m.toml"),
        "version = \"v202504\"\noutput_dir = \"build\"\n[[sources]]\nname = \"s\"\nurl = \"rows.jsonl\"\n\
         [gates]\nbm25_ndcg10_max = 1.01\n[eval.prompts]\nquery = \"M: \"\n",
    );
    // The toy embedder with the manifest's settings, then `extra`.
    let toy = |extra: &[&str]| {
        let mut args = vec!["--retriever", "embed:toy", "--base-url", &base, "--no-cache"];
        args.extend(["--manifest", manifest.to_str().unwrap()]);
        eval(&[&args[..], extra].concat(), dir.path())
    };
    let v = toy(&[]);
    assert_eq!(v["prompts"]["overrides"]["query"], "M: ");
    let (queries, _) = fixture();
    let sent: BTreeSet<String> =
        seen.embedded.lock().unwrap().iter().map(|(_, t)| t.clone()).collect();
    assert!(queries.iter().all(|q| sent.contains(&format!("M: {}", q.3))), "{sent:?}");
    // The command line wins over the manifest.
    seen.embedded.lock().unwrap().clear();
    toy(&["--query-prompt", "C: "]);
    assert!(seen.embedded.lock().unwrap().iter().any(|(_, t)| t.starts_with("C: ")));
    // `--gates` takes the manifest's thresholds: code2text's BM25 nDCG@10 of 1 is inside
    // [0.05, 1.01], so only its missing hard negative fails.
    let out =
        run(coreb().arg("eval").arg(release()).args(["--gates", "--manifest"]).arg(&manifest));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && err.contains("gate `hard_negatives`")
            && !err.contains("bm25_band")
            && err.contains("1 release gate(s) failed"),
        "{}",
        text(&out)
    );
    // A bad `[eval]` key is refused with the file and line.
    fs_err::write(&manifest, "version = \"v202504\"\noutput_dir = \"build\"\n[[sources]]\nname = \"s\"\nurl = \"rows.jsonl\"\n[eval.prompts]\nquerry = \"x\"\n").unwrap();
    let out = run(coreb().arg("eval").arg(release()).arg("--manifest").arg(&manifest));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("m.toml") && err.contains("unknown field `querry`"),
        "{err}"
    );
}
