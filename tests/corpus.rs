//! `coreb corpus` and `coreb audit` (issue 7): a training corpus built from CoSQA plus planted
//! duplicates, near-duplicates, non-English/URL/HTML texts and rows copied from the sample
//! release; every planted item must be caught with the right reason, and nothing else may be
//! reported as contaminated.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::{Value, json};

use crate::support::{coreb, failed_naming, fixture_data, root, run, text, toy_embed};

fn read_jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect()
}

fn by_id(rows: Vec<Value>) -> BTreeMap<String, String> {
    rows.into_iter()
        .map(|r| (r["_id"].as_str().unwrap().to_owned(), r["text"].as_str().unwrap().to_owned()))
        .collect()
}

const SAMPLE: &str = "releases/sample/v202503";

/// The CoSQA pairs (query id, doc id) in qrels order, with their texts.
fn cosqa_pairs() -> Vec<(String, String, String, String)> {
    let queries = by_id(read_jsonl(&fixture_data("cosqa/queries.jsonl")));
    let docs = by_id(read_jsonl(&fixture_data("cosqa/corpus.jsonl")));
    std::fs::read_to_string(fixture_data("cosqa/qrels/test.tsv"))
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            let c: Vec<&str> = l.split('\t').collect();
            (c[0].to_owned(), c[1].to_owned(), queries[c[0]].clone(), docs[c[1]].clone())
        })
        .collect()
}

/// Planted pair id → the reason it must be dropped for, and the pair it duplicates.
type Expected = BTreeMap<String, (&'static str, Option<String>)>;

/// Planted rows and the reason each must be dropped for (`reason`, and `of` for duplicates).
fn planted() -> (Vec<Value>, Expected) {
    let pairs = cosqa_pairs();
    let cosqa_id = |p: &(String, String, String, String)| format!("cosqa:{}:{}", p.0, p.1);
    // Long codes, so that a one-word edit stays above the Jaccard threshold.
    let mut long: Vec<&(String, String, String, String)> = pairs
        .iter()
        .filter(|p| p.3.split_whitespace().count() > 60 && p.3.contains("return"))
        .collect();
    long.sort_by_key(|p| p.0.clone());
    let (a, b, c) = (long[0], long[1], long[2]);
    let release_code = read_jsonl(&root().join(SAMPLE).join("text2code/corpus.jsonl"));
    let release_text = read_jsonl(&root().join(SAMPLE).join("code2text/corpus.jsonl"));
    let code0 = release_code[0]["text"].as_str().unwrap().to_owned();
    let code1 = release_code[17]["text"].as_str().unwrap().to_owned();
    let full: Vec<String> = release_text
        .iter()
        .filter(|t| t["kind"] == "full")
        .map(|t| t["text"].as_str().unwrap().to_owned())
        .collect();
    let problems_statement_prefix: String = {
        // A long stretch of a release text (not the whole), inside a new text.
        let words: Vec<&str> = full[3].split_whitespace().collect();
        format!(
            "Here is a task I found online. {} Write a fast solution for it.",
            words[..words.len() * 2 / 3].join(" ")
        )
    };
    let edited = b.3.replacen("return", "yield", 1);
    assert_ne!(edited, b.3, "the planted edit changes the code");
    let rows = vec![
        json!({"id": "exact", "text": a.2, "code": a.3}),
        json!({"id": "case_ws", "text": format!("  {}  ", a.2.to_uppercase()), "code": a.3.replace("    ", "\t").replace('\n', "\n\n")}),
        json!({"id": "edit", "text": b.2, "code": edited}),
        json!({"id": "url", "text": "read the docs at https://docs.python.org/3/library/json.html first", "code": "import json\njson.loads('{}')"}),
        json!({"id": "html", "text": "python strip the <div> and </p> tags from a page", "code": "import re\nre.sub('<[^>]+>', '', page)"}),
        json!({"id": "german", "text": "Wie kann ich in Python eine Liste von Zahlen sortieren und dabei die doppelten Werte entfernen?", "code": "sorted(set(values))"}),
        json!({"id": "short", "text": "sort", "code": "xs.sort()"}),
        json!({"id": "rel_code", "text": "count the cut positions that split an array into parts with an even sum difference", "code": code0}),
        json!({"id": "rel_code_ws", "text": "a solution for counting partitions with equal parity", "code": code1.replace('\n', "\n   \n")}),
        json!({"id": "rel_text", "text": full[0], "code": c.3}),
        json!({"id": "rel_text_part", "text": problems_statement_prefix, "code": "def solve():\n    pass"}),
    ];
    let mut expected = BTreeMap::new();
    expected.insert("planted:exact".to_owned(), ("exact_duplicate", Some(cosqa_id(a))));
    expected.insert("planted:case_ws".to_owned(), ("near_duplicate", Some(cosqa_id(a))));
    expected.insert("planted:edit".to_owned(), ("near_duplicate", Some(cosqa_id(b))));
    expected.insert("planted:url".to_owned(), ("url", None));
    expected.insert("planted:html".to_owned(), ("html", None));
    expected.insert("planted:german".to_owned(), ("language", None));
    expected.insert("planted:short".to_owned(), ("too_short", None));
    for id in ["rel_code", "rel_code_ws", "rel_text", "rel_text_part"] {
        expected.insert(format!("planted:{id}"), ("contaminated", None));
    }
    (rows, expected)
}

fn write_corpus(dir: &Path) -> (std::path::PathBuf, Expected) {
    let (rows, expected) = planted();
    let planted_path = dir.join("planted.jsonl");
    std::fs::write(&planted_path, rows.iter().map(|r| format!("{r}\n")).collect::<String>())
        .unwrap();
    let manifest = dir.join("corpus.toml");
    std::fs::write(
        &manifest,
        format!(
            "releases_dir = {:?}\n[output]\ndir = \"out\"\nshards = 4\n[[source]]\nname = \"cosqa\"\nformat = \"beir\"\npath = {:?}\n[[source]]\nname = \"planted\"\nformat = \"jsonl\"\npath = \"planted.jsonl\"\nid_field = \"id\"\n",
            root().join("releases").display().to_string(),
            fixture_data("cosqa").display().to_string(),
        ),
    )
    .unwrap();
    (manifest, expected)
}

#[test]
fn corpus_catches_every_planted_item_and_resumes_by_shard() {
    let dir = tempfile::tempdir().unwrap();
    let (manifest, expected) = write_corpus(dir.path());
    let out = run(coreb().arg("corpus").arg(&manifest).arg("--json"));
    assert!(out.status.success(), "{}", text(&out));
    let stats: Value = serde_json::from_slice(&out.stdout).expect("JSON summary");
    assert_eq!(stats["rows_in"], 511, "{}", text(&out));

    let dropped = read_jsonl(&dir.path().join("out/dropped.jsonl"));
    let reason_of: BTreeMap<String, &Value> =
        dropped.iter().map(|d| (d["id"].as_str().unwrap().to_owned(), d)).collect();
    for (id, (reason, of)) in &expected {
        let d = reason_of.get(id).unwrap_or_else(|| panic!("planted `{id}` was not dropped"));
        assert_eq!(d["reason"], *reason, "{id}: {d}");
        if let Some(of) = of {
            assert_eq!(d["of"], *of, "{id}: {d}");
        }
    }
    // Exactly the planted items are contaminated or fail the language filter: CoSQA has none.
    let ids_with = |reasons: &[&str]| -> BTreeSet<String> {
        dropped
            .iter()
            .filter(|d| reasons.contains(&d["reason"].as_str().unwrap()))
            .map(|d| d["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let planted_with = |reasons: &[&str]| -> BTreeSet<String> {
        expected
            .iter()
            .filter(|(_, (r, _))| reasons.contains(r))
            .map(|(id, _)| id.clone())
            .collect()
    };
    assert_eq!(ids_with(&["contaminated"]), planted_with(&["contaminated"]));
    assert_eq!(
        ids_with(&["url", "html", "language", "too_short"]),
        planted_with(&["url", "html", "language", "too_short"])
    );
    let hash_hits: BTreeSet<&str> =
        dropped.iter().filter(|d| d["kind"] == "hash").map(|d| d["id"].as_str().unwrap()).collect();
    assert_eq!(
        hash_hits,
        BTreeSet::from(["planted:rel_code", "planted:rel_code_ws", "planted:rel_text"])
    );
    let part = reason_of["planted:rel_text_part"];
    assert_eq!(part["kind"], "ngram", "{part}");
    assert!(part["doc"].as_str().unwrap().starts_with("text_v202503_"), "{part}");

    // Records: one per kept pair, negatives never the positive, every partition present.
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/report.json")).unwrap())
            .unwrap();
    let rows_out = report["stats"]["rows_out"].as_u64().unwrap();
    assert!(rows_out > 200, "{report}");
    assert_eq!(report["stats"]["rows_in"].as_u64().unwrap(), rows_out + dropped.len() as u64);
    let mut records = 0;
    for s in 0..4 {
        let shard = format!("shard={s:03}");
        assert!(dir.path().join("out/train").join(&shard).join("part.parquet").exists());
        assert!(dir.path().join("out/rerank").join(&shard).join("part.parquet").exists());
        for r in read_jsonl(&dir.path().join("out/jsonl/train").join(&shard).join("part.jsonl")) {
            records += 1;
            let negs: Vec<&Value> = r["hard_neg"]
                .as_array()
                .unwrap()
                .iter()
                .chain(r["easy_neg"].as_array().unwrap())
                .collect();
            assert!(!negs.is_empty());
            assert!(negs.iter().all(|n| *n != &r["pos"]), "{r}");
        }
    }
    assert_eq!(records, rows_out);
    let md = std::fs::read_to_string(dir.path().join("out/report.md")).unwrap();
    assert!(md.contains("| decontaminate | contaminated | 4 |"), "{md}");
    assert!(md.contains("### near_duplicate"), "{md}");

    // Resume: a rerun does nothing; a shard without its marker is redone, identically.
    let before = std::fs::read(dir.path().join("out/report.json")).unwrap();
    let again = run(coreb().arg("corpus").arg(&manifest));
    assert!(
        again.status.success() && text(&again).contains("all 4 shards complete"),
        "{}",
        text(&again)
    );
    std::fs::remove_file(dir.path().join("out/train/shard=002/_SUCCESS")).unwrap();
    let parquet = std::fs::read(dir.path().join("out/train/shard=002/part.parquet")).unwrap();
    let redo = run(coreb().arg("corpus").arg(&manifest));
    assert!(redo.status.success() && text(&redo).contains("curating 1 shards"), "{}", text(&redo));
    assert_eq!(std::fs::read(dir.path().join("out/report.json")).unwrap(), before);
    assert_eq!(
        std::fs::read(dir.path().join("out/train/shard=002/part.parquet")).unwrap(),
        parquet
    );

    // A torn shard whose marker survived (a power cut before the data reached the disk) is
    // detected by the sizes and sha256s its `_SUCCESS` records, and redone: one truncated,
    // one edited at the same size.
    let torn = dir.path().join("out/rerank/shard=001/part.parquet");
    let rerank = std::fs::read(&torn).unwrap();
    std::fs::write(&torn, &rerank[..rerank.len() / 2]).unwrap();
    let edited = dir.path().join("out/jsonl/train/shard=003/part.jsonl");
    let jsonl = std::fs::read(&edited).unwrap();
    let mut flipped = jsonl.clone();
    flipped[10] ^= 0x20;
    std::fs::write(&edited, &flipped).unwrap();
    let redo = run(coreb().arg("corpus").arg(&manifest));
    assert!(redo.status.success() && text(&redo).contains("curating 2 shards"), "{}", text(&redo));
    assert_eq!(std::fs::read(&torn).unwrap(), rerank);
    assert_eq!(std::fs::read(&edited).unwrap(), jsonl);
    assert_eq!(std::fs::read(dir.path().join("out/report.json")).unwrap(), before);
}

#[test]
fn corpus_manifest_errors_name_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("bad.toml");
    std::fs::write(&manifest, "[output]\ndir = \"out\"\nshard = 4\n[[source]]\nname = \"x\"\nformat = \"jsonl\"\npath = \"x.jsonl\"\n").unwrap();
    let out = run(coreb().arg("corpus").arg(&manifest));
    failed_naming(&out, &["shard"]);
    std::fs::write(&manifest, "[output]\ndir = \"out\"\n[[source]]\nname = \"x\"\nformat = \"jsonl\"\npath = \"x.jsonl\"\n").unwrap();
    std::fs::write(dir.path().join("x.jsonl"), "{\"text\": \"read a file in python\"}\n").unwrap();
    let out = run(coreb().arg("corpus").arg(&manifest));
    failed_naming(&out, &["x.jsonl`:1: field `code` is missing"]);
}

#[test]
fn audit_overlap_flags_exactly_the_planted_release_copies() {
    let dir = tempfile::tempdir().unwrap();
    let (_, expected) = write_corpus(dir.path());
    let out = run(coreb()
        .arg("audit")
        .arg(root().join(SAMPLE))
        .args(["overlap"])
        .arg(dir.path().join("planted.jsonl"))
        .args(["--fields", "text,code", "--id-field", "id", "--json", "--out"])
        .arg(dir.path().join("audit")));
    assert!(out.status.success(), "{}", text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let flagged: BTreeSet<String> = report["flagged"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| format!("planted:{}", h["id"].as_str().unwrap()))
        .collect();
    let contaminated: BTreeSet<String> = expected
        .iter()
        .filter(|(_, (r, _))| *r == "contaminated")
        .map(|(id, _)| id.clone())
        .collect();
    assert_eq!(flagged, contaminated);
    assert_eq!(report["hash_hits"], 3);
    assert_eq!(report["ngram_hits"], 1);
    assert_eq!(report["items"], 11);
    // Hash hits rank first among the worst offenders.
    assert_eq!(report["worst"][0]["kind"], "hash");
    assert!(dir.path().join("audit/overlap.md").exists());
}

#[test]
fn audit_rewrite_measures_every_rewritten_statement() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(coreb()
        .arg("audit")
        .arg(root().join(SAMPLE))
        .args(["rewrite", "--json", "--out"])
        .arg(dir.path()));
    assert!(out.status.success(), "{}", text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["problems"], 10, "{report}");
    assert_eq!(report["missing"].as_array().unwrap().len(), 0);
    let distances = report["distances"].as_array().unwrap();
    let c: Vec<f64> = distances.iter().map(|d| d["containment"].as_f64().unwrap()).collect();
    // Rewrites moved (no rewrite is a copy) but describe the same task (some overlap remains).
    assert!(c.iter().all(|&x| x > 0.0 && x < 0.9), "{c:?}");
    assert!(c.windows(2).all(|w| w[0] >= w[1]), "least moved first: {c:?}");
    assert!(report["tests_kept"].as_str().unwrap().starts_with("not audited"));
    let md = std::fs::read_to_string(dir.path().join("rewrite.md")).unwrap();
    assert!(md.contains("# Rewrite audit: `sample/v202503`"), "{md}");
    // Not a release.
    let bad = run(coreb().arg("audit").arg(dir.path()).arg("rewrite"));
    failed_naming(&bad, &["not a release directory"]);
}

/// A loopback HTTP server ([`crate::support::http`]) answering each request with
/// `respond(request) → (status, body)`; returns `http://127.0.0.1:<port>`.
fn loopback(
    respond: impl Fn(&crate::support::Request) -> (&'static str, Vec<u8>) + Send + Sync + 'static,
) -> String {
    crate::support::http::serve(move |request| {
        let (status, body) = respond(request);
        crate::support::Reply::new(status, body)
    })
    .url()
}

/// A local OpenAI-compatible `/v1/embeddings` server; counts the texts it embedded.
fn embed_server() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let c2 = std::sync::Arc::clone(&count);
    let base = loopback(move |request| {
        let inputs = request.json()["input"].as_array().cloned().unwrap_or_default();
        c2.fetch_add(inputs.len(), std::sync::atomic::Ordering::SeqCst);
        let data: Vec<Value> = inputs
            .iter()
            .enumerate()
            .map(|(i, t)| json!({"index": i, "embedding": toy_embed(t.as_str().unwrap_or(""))}))
            .collect();
        ("200 OK", json!({"data": data}).to_string().into_bytes())
    });
    (format!("{base}/v1"), count)
}

#[test]
fn alignment_uses_the_embeddings_endpoint_when_configured() {
    let (base, count) = embed_server();
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("corpus.toml");
    std::fs::write(
        &manifest,
        format!(
            "[output]\ndir = \"out\"\n[[source]]\nname = \"cosqa\"\nformat = \"beir\"\npath = {:?}\n[embed]\nbase_url = {base:?}\nmodel = \"toy\"\napi_key_env = \"COREB_TEST_NO_KEY\"\n",
            fixture_data("cosqa").display().to_string()
        ),
    )
    .unwrap();
    let out = run(coreb().arg("corpus").arg(&manifest).arg("--json"));
    assert!(out.status.success(), "{}", text(&out));
    let stats: Value = serde_json::from_slice(&out.stdout).unwrap();
    // Texts and codes of the pairs left after dedup (align); the negatives' are the same
    // texts again, which the client embeds once per run.
    let dropped = read_jsonl(&dir.path().join("out/dropped.jsonl"));
    let pairs = cosqa_pairs();
    let duplicates: BTreeSet<&str> = dropped
        .iter()
        .filter(|d| d["reason"] == "exact_duplicate" || d["reason"] == "near_duplicate")
        .filter_map(|d| d["id"].as_str())
        .collect();
    let distinct: BTreeSet<&String> = pairs
        .iter()
        .filter(|p| !duplicates.contains(format!("cosqa:{}:{}", p.0, p.1).as_str()))
        .flat_map(|p| [&p.2, &p.3])
        .collect();
    assert_eq!(
        500 - duplicates.len() as u64,
        500 - stats["near_duplicate"].as_u64().unwrap()
            - stats["exact_duplicate"].as_u64().unwrap()
    );
    assert_eq!(count.load(std::sync::atomic::Ordering::SeqCst), distinct.len(), "{stats}");
    // The reported similarity of a misaligned pair is the cosine of the endpoint's vectors.
    let mut checked = 0;
    for d in dropped.iter().filter(|d| d["reason"] == "misaligned").take(5) {
        let id = d["id"].as_str().unwrap();
        let p = pairs.iter().find(|p| format!("cosqa:{}:{}", p.0, p.1) == id).unwrap();
        let (a, b) = (toy_embed(&p.2), toy_embed(&p.3));
        let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
        let cos = a.iter().zip(&b).map(|(x, y)| x * y).sum::<f32>() / (norm(&a) * norm(&b));
        assert!((d["similarity"].as_f64().unwrap() as f32 - cos).abs() < 1e-4, "{d} vs {cos}");
        checked += 1;
    }
    assert!(checked > 0);
}

/// Every file below `dir` (relative path → bytes), for comparing two output trees.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                files.insert(
                    p.strip_prefix(dir).unwrap().display().to_string(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    files
}

#[test]
fn corpus_output_is_byte_identical_whatever_the_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let (manifest, _) = write_corpus(dir.path());
    let mut trees = Vec::new();
    for threads in ["1", "3"] {
        let out = run(coreb().arg("corpus").arg(&manifest).env("RAYON_NUM_THREADS", threads));
        assert!(out.status.success(), "{}", text(&out));
        trees.push(tree(&dir.path().join("out")));
        std::fs::remove_dir_all(dir.path().join("out")).unwrap();
    }
    assert!(
        trees[0].contains_key("dropped.jsonl")
            && trees[0].keys().any(|k| k.ends_with("part.parquet")),
        "{:?}",
        trees[0].keys()
    );
    assert_eq!(trees[0].keys().collect::<Vec<_>>(), trees[1].keys().collect::<Vec<_>>());
    for (name, bytes) in &trees[0] {
        if trees[1][name] != *bytes {
            let (a, b) = (String::from_utf8_lossy(bytes), String::from_utf8_lossy(&trees[1][name]));
            let first = a.lines().zip(b.lines()).find(|(x, y)| x != y);
            panic!("`{name}` differs between 1 and 3 threads: {first:?}");
        }
    }
}

#[test]
fn jsonl_rows_with_extra_fields_escapes_and_numeric_ids_are_read_like_json() {
    let dir = tempfile::tempdir().unwrap();
    let rows = [
        r#"{"meta": {"nested": [1, 2, {"text": "not this"}]}, "id": 7, "text": "read a json file in python", "code": "import json\njson.load(f)"}"#,
        "",
        r#"{"c\u006fde": "def add(a, b):\n    return a + b", "id": "x\"y", "text": "add two numbers in python \u00e9", "extra": null}"#,
        r#"{"id": -3, "text": "reverse a list in place", "code": "xs.reverse()", "text": "reverse a python list in place"}"#,
    ];
    std::fs::write(dir.path().join("x.jsonl"), rows.join("\r\n")).unwrap();
    let manifest = dir.path().join("c.toml");
    std::fs::write(
        &manifest,
        "[output]\ndir = \"out\"\n[align]\nenabled = false\n[negatives]\nhard = 0\neasy = 0\n[[source]]\nname = \"x\"\nformat = \"jsonl\"\npath = \"x.jsonl\"\nid_field = \"id\"\n",
    )
    .unwrap();
    let out = run(coreb().arg("corpus").arg(&manifest));
    assert!(out.status.success(), "{}", text(&out));
    let records = read_jsonl(&dir.path().join("out/jsonl/train/shard=000/part.jsonl"));
    let got: Vec<(String, String, String)> = records
        .iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap().to_owned(),
                r["query"].as_str().unwrap().to_owned(),
                r["pos"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (
                "x:7".to_owned(),
                "read a json file in python".to_owned(),
                "import json\njson.load(f)".to_owned()
            ),
            (
                "x:x\"y".to_owned(),
                "add two numbers in python é".to_owned(),
                "def add(a, b):\n    return a + b".to_owned()
            ),
            // A repeated key: the last value, as serde_json's map keeps it.
            (
                "x:-3".to_owned(),
                "reverse a python list in place".to_owned(),
                "xs.reverse()".to_owned()
            ),
        ]
    );
    // A field of the wrong type is reported with its file, line and value.
    std::fs::remove_dir_all(dir.path().join("out")).unwrap();
    std::fs::write(dir.path().join("x.jsonl"), "{\"id\": 1, \"text\": \"a text long enough\", \"code\": \"x\"}\n{\"id\": true, \"text\": \"t\", \"code\": \"c\"}\n").unwrap();
    let out = run(coreb().arg("corpus").arg(&manifest));
    failed_naming(&out, &["x.jsonl`:2: field `id`: expected a string, found `true`"]);
}

/// A loopback file server: `path → body`; anything else is a 404. Counts the requests.
fn file_server(
    files: Vec<(&'static str, Vec<u8>)>,
) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let h2 = std::sync::Arc::clone(&hits);
    let base = loopback(move |request| {
        h2.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let path = request.line.split_whitespace().nth(1).unwrap_or("");
        match files.iter().find(|(p, _)| *p == path) {
            Some((_, body)) => ("200 OK", body.clone()),
            None => ("404 Not Found", Vec::new()),
        }
    });
    (base, hits)
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

#[test]
fn http_sources_are_downloaded_checked_and_read_plain_or_gzipped() {
    use std::io::Write;
    let rows: String = (0..40).map(|i| format!("{}\n", json!({"id": i, "text": format!("task number {i}: sort the list of records by field {i}"), "code": format!("def f{i}(xs):\n    return sorted(xs, key=lambda r: r[{i}])")}))).collect();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(rows.as_bytes()).unwrap();
    let gz = gz.finish().unwrap();
    let (base, hits) = file_server(vec![
        ("/pairs.jsonl", rows.clone().into_bytes()),
        ("/pairs.jsonl.gz", gz.clone()),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("c.toml");
    let write = |plain: &str, gz_sha: &str| {
        std::fs::write(
            &manifest,
            format!(
                "[output]\ndir = \"out\"\nshards = 2\n[align]\nenabled = false\n[negatives]\nhard = 0\neasy = 0\n\
                 [[source]]\nname = \"plain\"\nformat = \"jsonl\"\nurl = \"{base}{plain}\"\nid_field = \"id\"\n\
                 [[source]]\nname = \"packed\"\nformat = \"jsonl\"\nurl = \"{base}/pairs.jsonl.gz\"\nsha256 = \"{gz_sha}\"\nid_field = \"id\"\n"
            ),
        )
        .unwrap()
    };
    write("/pairs.jsonl", &sha256(&gz));
    let out = run(coreb().arg("corpus").arg(&manifest).arg("--json"));
    assert!(out.status.success(), "{}", text(&out));
    let stats: Value = serde_json::from_slice(&out.stdout).unwrap();
    // Both copies are read; the gzipped one is all exact duplicates of the plain one.
    assert_eq!(stats["rows_in"], 80, "{stats}");
    assert_eq!(stats["exact_duplicate"], 40, "{stats}");
    assert_eq!(stats["rows_out"], 40, "{stats}");
    assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 2);
    let cache = dir.path().join("out/.sources");
    let cached = |prefix: &str| -> Vec<std::path::PathBuf> {
        std::fs::read_dir(&cache)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name().unwrap().to_str().unwrap().starts_with(prefix)
                    && p.extension().is_none_or(|e| e != "url")
            })
            .collect()
    };
    let (plain, packed) = (cached("plain-"), cached("packed-"));
    assert_eq!(plain.len(), 1, "{plain:?}");
    assert_eq!(std::fs::read(&plain[0]).unwrap(), rows.as_bytes());
    assert!(packed[0].to_str().unwrap().ends_with(".gz"), "{packed:?}");
    assert_eq!(std::fs::read(&packed[0]).unwrap(), gz);
    // A rerun of a changed plan reuses the checked downloads.
    std::fs::remove_dir_all(dir.path().join("out/train")).unwrap();
    let out = run(coreb().arg("corpus").arg(&manifest));
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 2);

    // A wrong pin fails, naming the source and both hashes; nothing is kept of the download.
    std::fs::remove_dir_all(dir.path().join("out")).unwrap();
    let wrong = "0".repeat(64);
    write("/pairs.jsonl", &wrong);
    let out = run(coreb().arg("corpus").arg(&manifest));
    failed_naming(&out, &["fetching source `packed`", "checksum mismatch", &wrong, &sha256(&gz)]);
    assert!(cached("packed-").is_empty(), "{:?}", cached("packed-"));

    // A 404 fails at once, naming the source and the URL.
    write("/missing.jsonl", &sha256(&gz));
    let out = run(coreb().arg("corpus").arg(&manifest));
    let not_found = format!("`{base}/missing.jsonl` answered HTTP 404");
    failed_naming(&out, &["fetching source `plain`", &not_found]);

    // `path` and `url` together, or a URL of another scheme, are manifest errors.
    std::fs::write(&manifest, "[output]\ndir = \"out\"\n[[source]]\nname = \"x\"\nformat = \"jsonl\"\npath = \"x.jsonl\"\nurl = \"http://127.0.0.1:1/x\"\n").unwrap();
    let out = run(coreb().arg("corpus").arg(&manifest));
    failed_naming(&out, &["source `x`: `path`: give exactly one of `path` and `url`"]);
    std::fs::write(&manifest, "[output]\ndir = \"out\"\n[[source]]\nname = \"x\"\nformat = \"jsonl\"\nurl = \"ftp://h/x\"\n").unwrap();
    let out = run(coreb().arg("corpus").arg(&manifest));
    failed_naming(&out, &["`url`: `ftp://h/x` is not an http:// or https:// URL"]);
}

/// A small deterministic generator (xorshift) for test corpora.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a>(&mut self, words: &[&'a str]) -> &'a str {
        words[(self.next() % words.len() as u64) as usize]
    }
}

const ENGLISH: &[&str] = &[
    "how",
    "do",
    "i",
    "read",
    "write",
    "sort",
    "parse",
    "merge",
    "split",
    "count",
    "find",
    "remove",
    "the",
    "a",
    "list",
    "file",
    "string",
    "number",
    "values",
    "keys",
    "from",
    "into",
    "with",
    "without",
    "python",
    "dictionary",
    "lines",
    "words",
    "order",
    "first",
    "last",
    "each",
    "every",
    "element",
    "items",
    "table",
    "column",
    "row",
    "date",
    "time",
    "quickly",
    "safely",
    "large",
    "small",
    "nested",
    "empty",
    "unique",
    "duplicate",
    "characters",
    "spaces",
    "text",
    "json",
    "data",
    "results",
    "output",
];

/// Rows of a generated corpus (`id`, `text`, `code`) and what each planted row must be
/// dropped for: `groups` base pairs, then (shuffled) per group two near copies whose texts
/// differ from the base (one word of the text, or an identifier of the code), an exact copy
/// under a new id, and a row repeating the base's id with other content.
fn generated_corpus(groups: usize) -> (Vec<Value>, BTreeMap<String, (&'static str, String)>) {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut bases = Vec::new();
    for g in 0..groups {
        let text: Vec<&str> = (0..16).map(|_| rng.pick(ENGLISH)).collect();
        let code: Vec<String> =
            (0..70).map(|i| format!("{}_{}", rng.pick(ENGLISH), (rng.next() % 1000) + i)).collect();
        bases.push((
            format!("g{g}"),
            text.join(" "),
            format!("def f{g}({}):\n    return {}", code[..3].join(", "), code[3..].join(" + ")),
        ));
    }
    let mut rows: Vec<Value> =
        bases.iter().map(|(id, t, c)| json!({"id": id, "text": t, "code": c})).collect();
    let mut later = Vec::new();
    let mut expected = BTreeMap::new();
    for (id, text, code) in &bases {
        let mut words: Vec<&str> = text.split(' ').collect();
        words[7] = if words[7] == "quickly" { "safely" } else { "quickly" };
        let edited = words.join(" ");
        let first = code.split(['(', ',', ' ']).nth(1).unwrap().to_owned();
        let renamed = code.replacen(&first, "renamed_value", 1);
        later.push(json!({"id": format!("{id}n1"), "text": edited, "code": code}));
        later.push(json!({"id": format!("{id}n2"), "text": text, "code": renamed}));
        later.push(json!({"id": format!("{id}x"), "text": text, "code": code}));
        later.push(json!({"id": id, "text": format!("{edited} again"), "code": "pass"}));
        let of = format!("gen:{id}");
        expected.insert(format!("gen:{id}n1"), ("near_duplicate", of.clone()));
        expected.insert(format!("gen:{id}n2"), ("near_duplicate", of.clone()));
        expected.insert(format!("gen:{id}x"), ("exact_duplicate", of.clone()));
    }
    for i in (1..later.len()).rev() {
        later.swap(i, (rng.next() % (i as u64 + 1)) as usize);
    }
    rows.extend(later);
    (rows, expected)
}

/// `[align]` off and no negatives: a generated corpus manifest that only deduplicates.
const DEDUP_ONLY: &str = "[align]\nenabled = false\n[negatives]\nhard = 0\neasy = 0\n";

fn write_generated(
    dir: &Path,
    groups: usize,
    shards: u32,
    extra: &str,
) -> (std::path::PathBuf, Vec<Value>, BTreeMap<String, (&'static str, String)>) {
    let (rows, expected) = generated_corpus(groups);
    std::fs::write(
        dir.join("gen.jsonl"),
        rows.iter().map(|r| format!("{r}\n")).collect::<String>(),
    )
    .unwrap();
    let manifest = dir.join("gen.toml");
    std::fs::write(
        &manifest,
        format!("[output]\ndir = \"out\"\nshards = {shards}\n{extra}[[source]]\nname = \"gen\"\nformat = \"jsonl\"\npath = \"gen.jsonl\"\nid_field = \"id\"\n"),
    )
    .unwrap();
    (manifest, rows, expected)
}

/// The lines of every file matching `out/<dir>/*/<file>` (or of one file), sorted: the
/// records whatever the partitioning.
fn sorted_lines(paths: impl IntoIterator<Item = std::path::PathBuf>) -> Vec<String> {
    let mut lines: Vec<String> = paths
        .into_iter()
        .flat_map(|p| {
            std::fs::read_to_string(&p).unwrap().lines().map(str::to_owned).collect::<Vec<_>>()
        })
        .collect();
    lines.sort();
    lines
}

/// Issue 20: near-copies whose texts differ land in other shards than their originals, yet the
/// curated output (kept ids and every record, every drop and the counts) is the same for 1, 2,
/// 7 and 16 output shards and for 1 and 2 threads; exact copies and repeated ids are removed
/// globally too.
#[test]
fn corpus_keeps_the_same_rows_at_any_shard_and_thread_count() {
    use coreb_base::shard::{id_hash, shard_of_id};
    let dir = tempfile::tempdir().unwrap();
    let (manifest, rows, expected) = write_generated(dir.path(), 40, 1, DEDUP_ONLY);
    let base_text = std::fs::read_to_string(&manifest).unwrap();
    // The planted copies really are spread: most sit in another shard than their original.
    let shard = |id: &str, n: u32| shard_of_id(id_hash(id), n);
    let apart = expected.iter().filter(|(id, (_, of))| shard(id, 16) != shard(of, 16)).count();
    assert!(
        apart * 10 > expected.len() * 8,
        "{apart} of {} copies in another shard",
        expected.len()
    );

    let mut reference: Option<(Vec<String>, Vec<String>, Value)> = None;
    for shards in [1u32, 2, 7, 16] {
        std::fs::write(
            &manifest,
            base_text.replace("shards = 1\n", &format!("shards = {shards}\n")),
        )
        .unwrap();
        let mut trees = Vec::new();
        for threads in ["1", "2"] {
            let out = run(coreb()
                .arg("corpus")
                .arg(&manifest)
                .arg("--json")
                .env("RAYON_NUM_THREADS", threads));
            assert!(out.status.success(), "{}", text(&out));
            trees.push(tree(&dir.path().join("out")));
            let records = sorted_lines(
                (0..shards)
                    .map(|s| dir.path().join(format!("out/jsonl/train/shard={s:03}/part.jsonl"))),
            );
            let dropped = sorted_lines([dir.path().join("out/dropped.jsonl")]);
            let report: Value = serde_json::from_str(
                &std::fs::read_to_string(dir.path().join("out/report.json")).unwrap(),
            )
            .unwrap();
            let got = (records, dropped, report["stats"].clone());
            match &reference {
                None => reference = Some(got),
                Some(r) => {
                    assert_eq!(r.2, got.2, "counts at {shards} shards, {threads} threads");
                    assert!(
                        r.0 == got.0,
                        "the kept records differ at {shards} shards, {threads} threads"
                    );
                    assert!(
                        r.1 == got.1,
                        "the dropped pairs differ at {shards} shards, {threads} threads"
                    );
                }
            }
            std::fs::remove_dir_all(dir.path().join("out")).unwrap();
        }
        assert!(
            trees[0] == trees[1],
            "the output differs between 1 and 2 threads at {shards} shards"
        );
    }
    let (records, dropped, stats) = reference.unwrap();
    assert_eq!(records.len() + dropped.len(), rows.len());
    // Every planted copy is dropped for its reason, in favour of its original.
    let dropped: BTreeMap<String, Value> = dropped
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|d| (d["id"].as_str().unwrap().to_owned(), d))
        .collect();
    for (id, (reason, of)) in &expected {
        let d = dropped.get(id).unwrap_or_else(|| panic!("`{id}` was kept"));
        assert_eq!(
            (d["reason"].as_str().unwrap(), d["of"].as_str().unwrap()),
            (*reason, of.as_str()),
            "{d}"
        );
    }
    assert_eq!(stats["rows_in"], rows.len());
    assert_eq!(stats["duplicate_id"], 40, "{stats}");
    assert_eq!(stats["exact_duplicate"], 40, "{stats}");
    assert_eq!(stats["near_duplicate"], 80, "{stats}");
    // Only originals are kept.
    assert!(
        records.iter().all(|r| serde_json::from_str::<Value>(r).unwrap()["id"]
            .as_str()
            .unwrap()
            .chars()
            .skip(5)
            .all(|c| c.is_ascii_digit())),
        "{records:?}"
    );
}

/// Issue 16: `coreb corpus --shard i/N` in separate processes, then `coreb merge corpus`, writes
/// the same files byte for byte as one process; the merge refuses while a part is missing or
/// was made from another plan, naming it.
#[test]
fn corpus_shard_processes_and_merge_equal_one_process() {
    let dir = tempfile::tempdir().unwrap();
    // Alignment and negatives on: they run within each of the 3 output shards.
    let (manifest, _, _) = write_generated(dir.path(), 30, 3, "");
    let out = run(coreb().arg("corpus").arg(&manifest));
    assert!(out.status.success(), "{}", text(&out));
    let one = tree(&dir.path().join("out"));
    assert!(
        one.contains_key("train/shard=002/part.parquet") && one.contains_key("dropped.jsonl"),
        "{:?}",
        one.keys()
    );
    std::fs::remove_dir_all(dir.path().join("out")).unwrap();

    let shard = |i: u32, manifest: &Path| {
        let out =
            run(coreb().arg("corpus").arg(manifest).args(["--shard", &format!("{i}/4"), "--json"]));
        assert!(out.status.success(), "{}", text(&out));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["shard"], i, "{v}");
        v
    };
    let merge = || run(coreb().args(["merge", "corpus"]).arg(&manifest).arg("--json"));
    let nothing = merge();
    failed_naming(&nothing, &["no shard parts in"]);
    let mut read = 0;
    for i in [0, 1, 3] {
        read += shard(i, &manifest)["rows"].as_u64().unwrap();
    }
    let missing = merge();
    failed_naming(&missing, &["shard 2/4 is missing"]);
    read += shard(2, &manifest)["rows"].as_u64().unwrap();
    assert_eq!(read, 150);
    // A part made from another plan (here another threshold) is refused.
    let other = dir.path().join("other.toml");
    std::fs::write(
        &other,
        std::fs::read_to_string(&manifest)
            .unwrap()
            .replace("[[source]]", "[dedup]\nthreshold = 0.8\n[[source]]"),
    )
    .unwrap();
    shard(1, &other);
    let stale = merge();
    failed_naming(&stale, &["shard 1/4 was made from another plan"]);
    shard(1, &manifest);
    // A complete part is not redone.
    let again = run(coreb().arg("corpus").arg(&manifest).args(["--shard", "1/4"]));
    assert!(
        again.status.success()
            && text(&again).contains("is complete (`")
            && text(&again).contains("nothing to do"),
        "{}",
        text(&again)
    );
    let merged = merge();
    assert!(merged.status.success(), "{}", text(&merged));
    let four = tree(&dir.path().join("out"));
    assert_eq!(one.keys().collect::<Vec<_>>(), four.keys().collect::<Vec<_>>());
    for (name, bytes) in &one {
        assert!(
            four[name] == *bytes,
            "`{name}` differs between one process and 4 shard processes + merge"
        );
    }
    // Bad shard specs are refused by the command line.
    let bad = run(coreb().arg("corpus").arg(&manifest).args(["--shard", "4/4"]));
    failed_naming(&bad, &["the shard must be in 0..4"]);
}

/// Issue 35: a shard process parses only the lines that start in its byte range of the plain
/// JSONL sources (taken together) and counts the others, so every row keeps its position and
/// line-number id; gzipped sources are read whole by every process and kept by id hash. The
/// output of 2, 3 and 7 shard processes + merge is the one process's, file for file, with blank
/// lines, a source without an id field, one without a final newline and a gzipped one.
#[test]
fn corpus_shard_processes_read_only_their_byte_range() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let (rows, _) = generated_corpus(30);
    let line = |r: &Value| format!("{r}\n");
    let third = rows.len() / 3;
    let mut a = String::new();
    for (i, r) in rows[..third].iter().enumerate() {
        a.push_str(&line(r));
        if i % 7 == 3 {
            a.push_str("  \n\n");
        }
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(rows[third..2 * third].iter().map(line).collect::<String>().as_bytes()).unwrap();
    // No id field: ids are line numbers; no newline after the last line.
    let c: String = rows[2 * third..]
        .iter()
        .map(|r| json!({"t": r["text"], "c": r["code"]}).to_string())
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(dir.path().join("a.jsonl"), &a).unwrap();
    std::fs::write(dir.path().join("b.jsonl.gz"), gz.finish().unwrap()).unwrap();
    std::fs::write(dir.path().join("c.jsonl"), &c).unwrap();
    let manifest = dir.path().join("m.toml");
    std::fs::write(
        &manifest,
        "[output]\ndir = \"out\"\nshards = 2\n[align]\nenabled = false\n[negatives]\nhard = 0\neasy = 0\n\
         [[source]]\nname = \"a\"\nformat = \"jsonl\"\npath = \"a.jsonl\"\nid_field = \"id\"\n\
         [[source]]\nname = \"b\"\nformat = \"jsonl\"\npath = \"b.jsonl.gz\"\nid_field = \"id\"\n\
         [[source]]\nname = \"c\"\nformat = \"jsonl\"\npath = \"c.jsonl\"\ntext_field = \"t\"\ncode_field = \"c\"\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let one = run(coreb().arg("corpus").arg(&manifest));
    assert!(one.status.success(), "{}", text(&one));
    let reference = tree(&out);
    assert!(reference["dropped.jsonl"].len() > 100, "a corpus with duplicates");
    std::fs::remove_dir_all(&out).unwrap();
    for n in [2u32, 3, 7] {
        let (mut read, mut counted) = (0, Vec::new());
        for i in 0..n {
            let o = run(coreb().arg("corpus").arg(&manifest).args([
                "--shard",
                &format!("{i}/{n}"),
                "--json",
            ]));
            assert!(o.status.success(), "{}", text(&o));
            let v: Value = serde_json::from_slice(&o.stdout).unwrap();
            counted.push(v["rows_in"].as_u64().unwrap());
            read += v["rows"].as_u64().unwrap();
        }
        assert_eq!(read, rows.len() as u64, "every row in exactly one of {n} parts");
        // A process counts the input's rows up to where it stops reading: past its range only
        // up to the last source read whole (`b.jsonl.gz`); the last one reads to the end.
        assert_eq!(counted.last(), Some(&(rows.len() as u64)), "{counted:?}");
        assert!(
            counted.iter().all(|&c| c <= rows.len() as u64)
                && counted.iter().any(|&c| c < rows.len() as u64),
            "{counted:?}"
        );
        if n == 2 {
            // Parts whose rows do not add up to the input's are refused.
            let marker = out.join("parts/part=000-of-002/_SUCCESS");
            let saved = std::fs::read(&marker).unwrap();
            let mut m: Value = serde_json::from_slice(&saved).unwrap();
            m["rows"] = json!(m["rows"].as_u64().unwrap() + 1);
            std::fs::write(&marker, m.to_string()).unwrap();
            let refused = run(coreb().args(["merge", "corpus"]).arg(&manifest));
            failed_naming(&refused, &["were made from different inputs"]);
            std::fs::write(&marker, saved).unwrap();
            // A spool file edited at the same size is hashed as the merge streams it: the part is
            // refused (in the words of a part whose file does not match its marker) before the
            // output shard that read it is committed.
            let spool = out.join("parts/part=001-of-002/spool/shard=000.bin");
            let saved = std::fs::read(&spool).unwrap();
            let mut bytes = saved.clone();
            *bytes.last_mut().unwrap() ^= 1;
            std::fs::write(&spool, bytes).unwrap();
            let refused = run(coreb().args(["merge", "corpus"]).arg(&manifest));
            failed_naming(
                &refused,
                &[
                    "cannot merge the corpus shards yet",
                    "shard 1/2 is damaged",
                    "spool/shard=000.bin` no longer matches the `_SUCCESS` of its part",
                    "--shard 1/2`",
                ],
            );
            assert!(
                !out.join("train/shard=000/_SUCCESS").exists()
                    && !out.join("train/shard=000/part.parquet").exists(),
                "nothing of output shard 0 committed"
            );
            std::fs::write(&spool, saved).unwrap();
        }
        let merged = run(coreb().args(["merge", "corpus"]).arg(&manifest));
        assert!(merged.status.success(), "{}", text(&merged));
        assert_same_tree(
            &reference,
            &tree(&out),
            &format!("{n} shard processes reading byte ranges + merge"),
        );
        std::fs::remove_dir_all(&out).unwrap();
    }
    // A malformed line in the first half of `a.jsonl` stops the process whose range holds it,
    // naming the file and line, and not the other: it is not parsed there.
    std::fs::write(dir.path().join("a.jsonl"), format!("{{\"id\": \"bad\", \"text\": 1\n{}", &a))
        .unwrap();
    let first = run(coreb().arg("corpus").arg(&manifest).args(["--shard", "0/2"]));
    failed_naming(&first, &["a.jsonl`:1"]);
    let second = run(coreb().arg("corpus").arg(&manifest).args(["--shard", "1/2"]));
    assert!(second.status.success(), "{}", text(&second));
}

/// The files of two output trees are the same, byte for byte.
fn assert_same_tree(want: &BTreeMap<String, Vec<u8>>, got: &BTreeMap<String, Vec<u8>>, what: &str) {
    assert_eq!(want.keys().collect::<Vec<_>>(), got.keys().collect::<Vec<_>>(), "{what}");
    for (name, bytes) in want {
        assert!(got[name] == *bytes, "`{name}` differs: {what}");
    }
}

/// Issue 35: the near-duplicate decision split into an exact step, band-range tasks and a
/// clustering step, each a separate process, writes the same output byte for byte as one
/// process, for 1, 2 and 8 band tasks and 1 and 3 output shards (and the kept records are the
/// same at both shard counts); run step by step as a scheduler runs them, too. A band task's
/// part left incomplete (a task killed before its `_SUCCESS`: only its temporary directory
/// remains) is redone alone by a rerun; a damaged part is refused, naming the command that
/// redoes it.
#[test]
fn corpus_split_dedup_equals_one_process_for_any_task_count() {
    let dir = tempfile::tempdir().unwrap();
    let (manifest, rows, _) = write_generated(dir.path(), 40, 1, DEDUP_ONLY);
    let base_text = std::fs::read_to_string(&manifest).unwrap();
    let out = dir.path().join("out");
    let mut references = BTreeMap::new();
    for shards in [1u32, 3] {
        std::fs::write(
            &manifest,
            base_text.replace("shards = 1\n", &format!("shards = {shards}\n")),
        )
        .unwrap();
        let one = run(coreb().arg("corpus").arg(&manifest));
        assert!(one.status.success(), "{}", text(&one));
        let reference = tree(&out);
        std::fs::remove_dir_all(&out).unwrap();
        for tasks in [1, 2, 8] {
            let split = run(coreb()
                .arg("corpus")
                .arg(&manifest)
                .args(["--dedup-tasks", &tasks.to_string()]));
            assert!(split.status.success(), "{}", text(&split));
            assert!(
                text(&split).contains(&format!(
                    "near-duplicates in {tasks} band tasks: {tasks} to run, 0 complete"
                )),
                "{}",
                text(&split)
            );
            assert!(
                !out.join("dedup").exists() && !out.join("parts").exists(),
                "the steps' files are removed"
            );
            assert_same_tree(
                &reference,
                &tree(&out),
                &format!("{tasks} band tasks vs one process at {shards} output shards"),
            );
            std::fs::remove_dir_all(&out).unwrap();
        }
        references.insert(shards, reference);
    }
    let kept = |t: &BTreeMap<String, Vec<u8>>| {
        let mut lines: Vec<String> = t
            .iter()
            .filter(|(k, _)| k.starts_with("jsonl/train/"))
            .flat_map(|(_, v)| {
                String::from_utf8(v.clone()).unwrap().lines().map(str::to_owned).collect::<Vec<_>>()
            })
            .collect();
        lines.sort();
        lines
    };
    let (one_shard, three_shards) = (kept(&references[&1]), kept(&references[&3]));
    assert!(
        !one_shard.is_empty() && one_shard.len() < rows.len() && one_shard == three_shards,
        "the kept records at 1 and 3 output shards"
    );

    // Step by step, as a scheduler runs them: 2 shard processes, the exact step, 4 band
    // tasks, the clustering step, then the merge, which uses their result.
    let step = |args: &[&str]| run(coreb().arg("corpus").arg(&manifest).args(args).arg("--json"));
    let ok = |o: std::process::Output| {
        assert!(o.status.success(), "{}", text(&o));
        serde_json::from_slice::<Value>(&o.stdout).unwrap()
    };
    let steps = |bands_tasks: u32| {
        ok(step(&["--shard", "0/2"]));
        ok(step(&["--shard", "1/2"]));
        let early = step(&["--dedup-step", "bands", "--task", "0/4"]);
        failed_naming(&early, &["--dedup-step exact`"]);
        let exact = ok(step(&["--dedup-step", "exact"]));
        assert_eq!(
            (exact["input_rows"].as_u64(), exact["dropped"].as_u64()),
            (Some(rows.len() as u64), Some(80)),
            "{exact}"
        );
        for i in 0..bands_tasks {
            let v = ok(step(&["--dedup-step", "bands", "--task", &format!("{i}/{bands_tasks}")]));
            assert!(
                v["peak_rss_mib"].as_f64().unwrap() > 0.0 && v["candidates"].as_u64().is_some(),
                "{v}"
            );
        }
    };
    std::fs::write(&manifest, base_text.replace("shards = 1\n", "shards = 3\n")).unwrap();
    steps(4);
    let clusters = ok(step(&["--dedup-step", "clusters"]));
    assert_eq!(clusters["near_duplicates"].as_u64(), Some(80), "{clusters}");
    let again = ok(step(&["--dedup-step", "clusters"]));
    assert_eq!(again["done"], true, "{again}");
    let merged = run(coreb().args(["merge", "corpus"]).arg(&manifest));
    assert!(
        merged.status.success() && text(&merged).contains("with the duplicates of the split steps"),
        "{}",
        text(&merged)
    );
    assert_same_tree(&references[&3], &tree(&out), "the steps run one by one, then the merge");
    std::fs::remove_dir_all(&out).unwrap();

    // A killed band task and a damaged one.
    steps(4);
    let bands = out.join("dedup/bands");
    std::fs::remove_dir_all(bands.join("part=002-of-004")).unwrap();
    std::fs::create_dir_all(bands.join(".part=002-of-004.tmp")).unwrap();
    std::fs::write(bands.join(".part=002-of-004.tmp/candidates.bin"), b"torn").unwrap();
    let damaged = bands.join("part=001-of-004/candidates.bin");
    let mut bytes = std::fs::read(&damaged).unwrap();
    bytes.push(0);
    std::fs::write(&damaged, bytes).unwrap();
    let refused = step(&["--dedup-step", "clusters"]);
    failed_naming(
        &refused,
        &[
            "shard 1/4 is damaged",
            "--dedup-step bands --task 1/4`",
            "shard 2/4 is missing",
            "--dedup-step bands --task 2/4`",
        ],
    );
    let rerun = run(coreb().args(["merge", "corpus"]).arg(&manifest).args(["--dedup-tasks", "4"]));
    let said = text(&rerun);
    assert!(
        rerun.status.success()
            && said.contains("near-duplicates in 4 band tasks: 2 to run, 2 complete"),
        "{said}"
    );
    assert!(
        said.contains("dedup bands 1/4:")
            && said.contains("dedup bands 2/4:")
            && !said.contains("dedup bands 0/4")
            && !said.contains("dedup bands 3/4"),
        "{said}"
    );
    assert!(!said.contains("dedup exact 0/1"), "the exact step was complete: {said}");
    assert_same_tree(&references[&3], &tree(&out), "after redoing two band tasks");

    // A shard part's sketch file edited at the same size: the exact step, which reads it,
    // refuses, naming it and the command that redoes the part.
    std::fs::remove_dir_all(&out).unwrap();
    ok(step(&["--shard", "0/2"]));
    ok(step(&["--shard", "1/2"]));
    let sketches = out.join("parts/part=001-of-002/sketches.bin");
    let mut bytes = std::fs::read(&sketches).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&sketches, bytes).unwrap();
    let refused = step(&["--dedup-step", "exact"]);
    failed_naming(&refused, &["sketches.bin` no longer matches", "--shard 1/2`"]);
}

/// A generated corpus of `groups` groups in `dir` (alignment and negatives off, `shards` output
/// shards) curated by one process: its manifest, its output directory (removed again) and the
/// files that were in it.
fn one_process_output(
    dir: &Path,
    groups: usize,
    shards: u32,
) -> (std::path::PathBuf, std::path::PathBuf, BTreeMap<String, Vec<u8>>) {
    let (manifest, _, _) = write_generated(dir, groups, shards, DEDUP_ONLY);
    let out = dir.join("out");
    let one = run(coreb().arg("corpus").arg(&manifest));
    assert!(one.status.success(), "{}", text(&one));
    let reference = tree(&out);
    std::fs::remove_dir_all(&out).unwrap();
    (manifest, out, reference)
}

/// Issue 35: the corpus recipe for Slurm (`scripts/slurm/corpus.sh`: a shard array, the exact
/// job, a band-task array, the clustering job and the merge job, each `afterok` the one before)
/// writes the one-process output, through its shell fallback and through real `sbatch` on the
/// private single-node Slurm of `scripts/slurm/single-node.sh`; where Slurm cannot start (the
/// script exits 3 and says why) the test says so after the fallback.
#[test]
fn corpus_slurm_recipe_writes_the_one_process_output() {
    use std::process::Command;
    let dir = tempfile::tempdir().unwrap();
    let (manifest, out, reference) = one_process_output(dir.path(), 30, 3);
    let recipe = |wrapper: &[std::path::PathBuf], mode: &str| {
        let mut cmd = Command::new("bash");
        cmd.args(wrapper)
            .arg(root().join("scripts/slurm/corpus.sh"))
            .arg(&manifest)
            .args(["2", "4"])
            .current_dir(dir.path())
            .env("COREB_SLURM", mode)
            .env("COREB_SLURM_WAIT", "1")
            .env("COREB", env!("CARGO_BIN_EXE_coreb"))
            .env("SLURM_CPUS_PER_TASK", "1");
        run(&mut cmd)
    };
    let shell = recipe(&[], "shell");
    let said = text(&shell);
    assert!(
        shell.status.success() && said.contains("with the duplicates of the split steps"),
        "{said}"
    );
    for (step, tasks) in [("shard", 2), ("bands", 4)] {
        for i in 0..tasks {
            let line = if step == "shard" {
                format!("shard {i}/2: ")
            } else {
                format!("dedup bands {i}/4 written to")
            };
            assert!(said.contains(&line), "{step} {i} did not run: {said}");
        }
    }
    assert_same_tree(&reference, &tree(&out), "the corpus recipe's shell fallback vs one process");
    std::fs::remove_dir_all(&out).unwrap();

    let slurm = recipe(
        &[root().join("scripts/slurm/single-node.sh"), dir.path().join("slurm"), "bash".into()],
        "slurm",
    );
    if slurm.status.code() == Some(3) {
        eprintln!("no single-node Slurm here, so only the shell fallback ran: {}", text(&slurm));
        return;
    }
    let logs = || {
        let mut all = String::new();
        for entry in std::fs::read_dir(dir.path()).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "log") {
                all += &format!(
                    "== {}\n{}\n",
                    path.display(),
                    std::fs::read_to_string(&path).unwrap_or_default()
                );
            }
        }
        all
    };
    assert!(slurm.status.success(), "{}\n{}", text(&slurm), logs());
    let stderr = String::from_utf8_lossy(&slurm.stderr);
    let job = |step: &str| {
        stderr
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{step}: job ")))
            .unwrap_or_else(|| panic!("no {step} job: {stderr}"))
            .trim()
            .to_owned()
    };
    for i in 0..4 {
        let log = std::fs::read_to_string(
            dir.path().join(format!("coreb-coreb-corpus-bands-{}_{i}.log", job("bands"))),
        )
        .unwrap_or_default();
        assert!(
            log.contains(&format!("dedup bands {i}/4 written to")),
            "band task {i}:\n{log}\n{}",
            logs()
        );
    }
    let merge = std::fs::read_to_string(
        dir.path().join(format!("coreb-coreb-corpus-merge-{}.log", job("merge"))),
    )
    .unwrap_or_default();
    assert!(merge.contains("with the duplicates of the split steps"), "{merge}\n{}", logs());
    for step in ["shard", "exact", "clusters"] {
        job(step);
    }
    assert_same_tree(&reference, &tree(&out), "the corpus recipe through Slurm vs one process");
}

/// Issue 35: `kill -9` of two of four band tasks while they run (as soon as their temporary
/// part directory appears), then a rerun: exactly the tasks killed before their `_SUCCESS` are
/// redone, the complete ones are not, and the output is the one-process output.
#[test]
fn kill_9_of_band_tasks_then_a_rerun_redoes_only_their_parts() {
    let dir = tempfile::tempdir().unwrap();
    let (manifest, out, reference) = one_process_output(dir.path(), 2000, 2);
    for args in [&["--shard", "0/2"][..], &["--shard", "1/2"], &["--dedup-step", "exact"]] {
        let o = run(coreb().arg("corpus").arg(&manifest).args(args));
        assert!(o.status.success(), "{}", text(&o));
    }
    let bands = out.join("dedup/bands");
    let mut killed = Vec::new();
    for i in 0..4 {
        let tmp = bands.join(format!(".part={i:03}-of-004.tmp"));
        let mut child = coreb()
            .arg("corpus")
            .arg(&manifest)
            .args(["--dedup-step", "bands", "--task", &format!("{i}/4")])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Tasks 1 and 2 are killed; 0 and 3 run to the end.
        while (i == 1 || i == 2) && !tmp.exists() && child.try_wait().unwrap().is_none() {
            std::hint::spin_loop();
        }
        if i == 1 || i == 2 {
            // SIGKILL: no destructor, no cleanup.
            let _ = child.kill();
        }
        let status = child.wait().unwrap();
        assert!(i == 1 || i == 2 || status.success(), "band task {i} failed");
        if !bands.join(format!("part={i:03}-of-004/_SUCCESS")).exists() {
            assert!(!status.success(), "task {i} exited successfully without its part");
            killed.push(i);
        }
    }
    assert!(
        !killed.is_empty(),
        "no band task was killed before it finished: make the corpus larger"
    );
    let rerun = run(coreb().args(["merge", "corpus"]).arg(&manifest).args(["--dedup-tasks", "4"]));
    let said = text(&rerun);
    assert!(rerun.status.success(), "{said}");
    assert!(
        said.contains(&format!(
            "near-duplicates in 4 band tasks: {} to run, {} complete",
            killed.len(),
            4 - killed.len()
        )),
        "{killed:?}: {said}"
    );
    for i in 0..4 {
        assert_eq!(
            said.contains(&format!("dedup bands {i}/4:")),
            killed.contains(&i),
            "task {i} (killed: {killed:?}): {said}"
        );
    }
    assert!(!said.contains("dedup exact 0/1"), "the exact step was complete: {said}");
    assert_same_tree(&reference, &tree(&out), "after kill -9 of band tasks and a rerun");
}
