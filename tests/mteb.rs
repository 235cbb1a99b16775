//! Issue 57: CoREB where the field runs it, MTEB's CoREB(v1) tasks.
//!
//! `coreb export --layout mteb` writes the sample as MTEB's six tasks; MTEB's own task classes
//! (the pinned mteb of the test venv, only their dataset moved) evaluate an encoder written in
//! the test (tests/python/mteb_tasks.py), and `coreb eval <task folder> --run <MTEB's
//! predictions>` gives MTEB's main score, nDCG@10, MAP@10 and Recall@10 to 4 decimals on every
//! task, code2code included; the retrieval tasks give CoREB's own numbers on the release.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::support::{coreb, json_report, jsonl, offline_python, python, root, run, text};

fn sample() -> PathBuf {
    root().join("releases/sample/v202503")
}

fn export(out: &Path, extra: &[&str]) {
    let o = run(coreb().args(["export", "--layout", "mteb"]).arg(sample()).arg(out).args(extra));
    assert!(o.status.success(), "{}", text(&o));
}

/// A temp dir, and the sample exported with `--layout mteb` into its `mteb/`.
fn exported() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("mteb");
    export(&out, &[]);
    (dir, out)
}

/// `coreb eval <dir> --run <run> --json --k 10` (plus `extra`): its first task's report.
fn eval(dir: &Path, run_file: &Path, extra: &[&str]) -> serde_json::Value {
    let o = run(coreb()
        .arg("eval")
        .arg(dir)
        .arg("--run")
        .arg(run_file)
        .args(["--k", "10", "--json", "--resamples", "0"])
        .args(extra));
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["tasks"][0].clone()
}

#[test]
fn mtebs_own_tasks_on_the_export_agree_with_coreb_eval_on_every_task() {
    let (dir, out) = exported();
    let release = out.join("v202503");
    let o = offline_python(&dir.path().join("python"))
        .arg(root().join("tests/python/mteb_tasks.py"))
        .arg(&release)
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    let report: BTreeMap<String, serde_json::Value> = json_report(&o);
    assert_eq!(report.len(), 6, "{report:?}");
    for (task, mteb) in &report {
        let folder = PathBuf::from(mteb["folder"].as_str().unwrap());
        let run_file = PathBuf::from(mteb["run"].as_str().unwrap());
        let ours = eval(&folder, &run_file, &[]);
        let reranking = task.ends_with("Reranking");
        let main = &ours["mteb"];
        assert_eq!(main["task"], task.as_str());
        assert_eq!(main["main_score"], if reranking { "map_at_10" } else { "ndcg_at_10" });
        let at10 = |m: &str| ours["overall"]["at_k"][m][0].as_f64().unwrap();
        assert_eq!(ours["overall"]["missing"], 0, "{task}: MTEB ranks every query");
        assert_eq!(ours["overall"]["num_queries"].as_u64(), mteb["queries"].as_u64(), "{task}");
        for (theirs, mine) in [
            ("main_score", main["value"].as_f64().unwrap()),
            ("ndcg_at_10", at10("ndcg")),
            ("map_at_10", at10("map")),
            ("recall_at_10", at10("recall")),
        ] {
            let theirs_v = mteb[theirs].as_f64().unwrap();
            assert!(
                (theirs_v - mine).abs() <= 5e-5,
                "{task}: MTEB {theirs} {theirs_v:.6} vs coreb eval {mine:.6}"
            );
        }
        // A real model's number, not a degenerate one.
        let score = mteb["main_score"].as_f64().unwrap();
        assert!(score > 0.05 && score < 0.999, "{task}: {score}");
        if reranking {
            assert_eq!(mteb["candidates"], serde_json::json!([17]), "{task}");
        }
    }
    // The retrieval tasks are CoREB's: on the release's own task folder `coreb eval` (a
    // code2code query's own document dropped) gives MTEB's number.
    for (task, coreb_task) in [
        ("CorebT2CRetrieval", "text2code"),
        ("CorebC2CRetrieval", "code2code"),
        ("CorebC2TRetrieval", "code2text"),
    ] {
        let run_file = PathBuf::from(report[task]["run"].as_str().unwrap());
        let on_release = eval(&sample().join(coreb_task), &run_file, &[]);
        let theirs = report[task]["ndcg_at_10"].as_f64().unwrap();
        let ndcg = on_release["overall"]["at_k"]["ndcg"][0].as_f64().unwrap();
        assert!(
            (theirs - ndcg).abs() <= 5e-5,
            "{task}: MTEB {theirs:.6} vs coreb eval on the release's {coreb_task} {ndcg:.6}"
        );
    }
}

#[test]
fn the_export_composes_the_reranking_lists_and_keeps_codes_own_document_out() {
    let (dir, out) = exported();
    let release = out.join("v202503");
    for task in [
        "CorebT2CRetrieval",
        "CorebC2CRetrieval",
        "CorebC2TRetrieval",
        "CorebT2CReranking",
        "CorebC2CReranking",
        "CorebC2TReranking",
    ] {
        let folder = release.join(task);
        let card = fs_err::read_to_string(folder.join("README.md")).unwrap();
        assert!(
            card.contains("config_name: corpus") && card.contains("path: qrels/test.jsonl"),
            "{task}: {card}"
        );
        let file: serde_json::Value =
            serde_json::from_str(&fs_err::read_to_string(folder.join("mteb_task.json")).unwrap())
                .unwrap();
        assert_eq!(file["task"], task);
        assert_eq!(file["release"], "v202503");
        let qrels = jsonl(&folder.join("qrels/test.jsonl"));
        // Relevance level 2: a hard negative is never judged 1, which MTEB would count.
        assert!(qrels.iter().all(|q| q["score"] == 2 || q["score"] == 0), "{task}");
        if !task.ends_with("Reranking") {
            continue;
        }
        assert!(card.contains("config_name: top_ranked"), "{task}");
        let queries: BTreeMap<String, serde_json::Value> = jsonl(&folder.join("queries.jsonl"))
            .into_iter()
            .map(|q| (q["_id"].as_str().unwrap().to_owned(), q))
            .collect();
        let corpus: BTreeMap<String, String> = jsonl(&folder.join("corpus.jsonl"))
            .into_iter()
            .map(|d| {
                (
                    d["_id"].as_str().unwrap().to_owned(),
                    d["problem_id"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        let lists = jsonl(&folder.join("top_ranked/test.jsonl"));
        assert_eq!(lists.len(), queries.len(), "{task}");
        let mut used = std::collections::BTreeSet::new();
        for l in &lists {
            let q = &queries[l["query-id"].as_str().unwrap()];
            let docs: Vec<&str> =
                l["corpus-ids"].as_array().unwrap().iter().map(|d| d.as_str().unwrap()).collect();
            assert_eq!(docs.len(), 17, "{task}: {q}");
            used.extend(docs.iter().map(|d| (*d).to_owned()));
            assert!(
                docs.iter().all(|d| Some(*d) != q["source_doc_id"].as_str()),
                "{task}: a query's own document is never its candidate"
            );
            let problem = q["source_problem_id"].as_str().unwrap();
            let same = docs.iter().filter(|d| corpus[**d] == problem).count();
            assert!((2..17).contains(&same), "{task}: {same} of its problem's");
        }
        assert_eq!(used, corpus.keys().cloned().collect(), "{task}: the corpus is the candidates");
    }
    // code2code retrieval: a list of every document but the query's own.
    let c2c = release.join("CorebC2CRetrieval");
    let docs: std::collections::BTreeSet<String> = jsonl(&c2c.join("corpus.jsonl"))
        .into_iter()
        .map(|d| d["_id"].as_str().unwrap().to_owned())
        .collect();
    let own: BTreeMap<String, String> = jsonl(&c2c.join("queries.jsonl"))
        .into_iter()
        .map(|q| {
            (q["_id"].as_str().unwrap().to_owned(), q["source_doc_id"].as_str().unwrap().to_owned())
        })
        .collect();
    let mut without_own = 0;
    for l in jsonl(&c2c.join("top_ranked/test.jsonl")) {
        let list: std::collections::BTreeSet<String> = l["corpus-ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_str().unwrap().to_owned())
            .collect();
        let mut expected = docs.clone();
        without_own += usize::from(expected.remove(&own[l["query-id"].as_str().unwrap()]));
        assert_eq!(list, expected);
    }
    assert!(without_own > 40, "most anchors are in the corpus: {without_own}");
    // Reproducible byte for byte; `--keep-self` gives the published shape.
    let again = dir.path().join("again");
    export(&again, &[]);
    assert_eq!(crate::support::tree_sha256(&out), crate::support::tree_sha256(&again));
    export(&again, &["--keep-self", "--candidates", "9"]);
    assert!(!again.join("v202503/CorebC2CRetrieval/top_ranked").exists());
    let lists = jsonl(&again.join("v202503/CorebT2CReranking/top_ranked/test.jsonl"));
    assert!(lists.iter().all(|l| l["corpus-ids"].as_array().unwrap().len() == 9));
    // A list of one is a usage error (exit 2); anything but an earlier export is refused.
    let o =
        run(coreb().args(["export", "--layout", "mteb"]).arg(sample()).arg(root().join("docs")));
    assert!(!o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("not an export of coreb"), "{}", text(&o));
    let o = run(coreb()
        .args(["export", "--layout", "mteb", "--candidates", "1"])
        .arg(sample())
        .arg(dir.path().join("one")));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("`--candidates`"), "{}", text(&o));
}

/// `coreb export --layout reranker-train` (then `extra`) of `release` into `out`.
fn reranker_train(release: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    run(coreb().args(["export", "--layout", "reranker-train"]).args(extra).arg(release).arg(out))
}

/// A test release gives no training records: the export into `<dir>/refused` exits 1 saying
/// so and writes nothing.
fn reranker_train_refused(test: &Path, dir: &Path) {
    let out = dir.join("refused");
    let o = reranker_train(test, &out, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("is a test release"), "{}", text(&o));
    assert!(!out.exists());
}

#[test]
fn reranker_training_records_of_a_training_release_load_in_datasets_and_a_test_release_is_refused()
{
    let dir = tempfile::tempdir().unwrap();
    let (train, test) = (dir.path().join("train"), dir.path().join("test"));
    let script = root().join("tests/python/reranker_train.py");
    let o =
        python().arg(&script).arg("prepare").arg(sample()).arg(&train).arg(&test).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let (train, test) = (train.join("v202503"), test.join("v202503"));
    let out = dir.path().join("records");
    let o = reranker_train(&train, &out, &[]);
    assert!(o.status.success(), "{}", text(&o));
    let o = python()
        .env("HF_HOME", dir.path().join("hf"))
        .env("HF_DATASETS_OFFLINE", "1")
        .arg(&script)
        .arg("check")
        .arg(&out)
        .arg(&train)
        .arg(&test)
        .output()
        .unwrap();
    let counts: serde_json::Value = json_report(&o);
    assert_eq!(counts["records"].as_u64().unwrap(), 3 * counts["positives"].as_u64().unwrap());
    // Seeded: the same records again, byte for byte; another seed draws other negatives.
    let again = dir.path().join("again");
    let o = reranker_train(&train, &again, &[]);
    assert!(o.status.success(), "{}", text(&o));
    let read = |d: &Path| fs_err::read(d.join("train.jsonl")).unwrap();
    assert_eq!(read(&out), read(&again));
    let o = reranker_train(&train, &again, &["--seed", "7"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_ne!(read(&out), read(&again));
    // A test release gives no training records.
    reranker_train_refused(&test, dir.path());
}

/// A local server speaking vLLM's `/v1/score` (`text_1`, `text_2` → `data[{index, score}]`) and
/// `/v1/rerank` (`query`, `documents` → `results[{index, relevance_score}]`), scoring by shared
/// words; it keeps every (query, documents) it was sent.
#[allow(clippy::type_complexity)]
fn vllm_like() -> (String, std::sync::Arc<std::sync::Mutex<Vec<(String, Vec<String>)>>>) {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let s = std::sync::Arc::clone(&seen);
    let server = crate::support::http::serve(move |req| {
        let body = req.json();
        let score = req.line.contains("/v1/score");
        let (q, docs) = if score {
            (&body["text_1"], &body["text_2"])
        } else {
            (&body["query"], &body["documents"])
        };
        let q = q.as_str().unwrap().to_owned();
        let docs: Vec<String> =
            docs.as_array().unwrap().iter().map(|d| d.as_str().unwrap().to_owned()).collect();
        let words = |t: &str| -> std::collections::BTreeSet<String> {
            t.split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
                .map(str::to_lowercase)
                .collect()
        };
        let qw = words(&q);
        let scored: Vec<serde_json::Value> = docs
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let s = words(d).intersection(&qw).count() as f64;
                if score {
                    serde_json::json!({"index": i, "object": "score", "score": s})
                } else {
                    serde_json::json!({"index": i, "relevance_score": s})
                }
            })
            .collect();
        s.lock().unwrap().push((q, docs));
        crate::support::Reply::json(&if score {
            serde_json::json!({ "data": scored })
        } else {
            serde_json::json!({ "results": scored })
        })
    });
    (format!("{}/v1", server.url()), seen)
}

#[test]
fn the_qwen3_reranker_recipe_reranks_each_querys_candidates_in_its_template() {
    let (dir, out) = exported();
    let folder = out.join("v202503/CorebC2TReranking");
    let lists: BTreeMap<String, Vec<String>> = jsonl(&folder.join("top_ranked/test.jsonl"))
        .into_iter()
        .map(|l| {
            (
                l["query-id"].as_str().unwrap().to_owned(),
                l["corpus-ids"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|d| d.as_str().unwrap().to_owned())
                    .collect(),
            )
        })
        .collect();
    for api in ["score", "rerank"] {
        let (base, seen) = vllm_like();
        let o = run(coreb()
            .arg("eval")
            .arg(&folder)
            .args(["--rerank", "Qwen/Qwen3-Reranker-8B", "--rerank-api", api])
            .args(["--rerank-template", "qwen3", "--rerank-base-url", &base])
            .args(["--api-key-env", "", "--json", "--resamples", "0"])
            .arg("--out")
            .arg(dir.path().join(api)));
        assert!(o.status.success(), "{}", text(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["rerank"]["template"], "qwen3");
        let task = &v["tasks"][0];
        assert_eq!(task["mteb"]["main_score"], "map_at_10");
        assert_eq!(
            task["mteb"]["value"], task["overall"]["at_k"]["map"][2],
            "MAP@10 is the main score"
        );
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), lists.len(), "{api}: one call per query");
        for (q, docs) in seen.iter() {
            assert!(
                q.starts_with("<|im_start|>system\nJudge whether the Document meets the requirements")
                    && q.contains("<|im_start|>user\n<Instruct>: Retrieve the most relevant problem description for the given code implementation.\n<Query>: "),
                "{q}"
            );
            assert_eq!(docs.len(), 17, "{api}: the query's candidates, all of them");
            assert!(docs.iter().all(|d| d.starts_with("<Document>: ")
                && d.ends_with("<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n")));
        }
        // The reranked run ranks each query's candidates, nothing else.
        let run_text =
            fs_err::read_to_string(dir.path().join(api).join("CorebC2TReranking.run.trec"))
                .unwrap();
        for line in run_text.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            assert!(lists[f[0]].iter().any(|d| d == f[2]), "{line}");
        }
    }
}

/// The sample's problems of `[start, end]` built for real (`coreb build`, replaying the sample's
/// answers) as release `version` with `purpose` appended to its manifest, published into
/// `publish`; returns the build's output.
fn build_with_purpose(
    dir: &Path,
    version: &str,
    (start, end): (&str, &str),
    purpose: &str,
    publish: &Path,
) -> std::process::Output {
    let manifest = crate::leaderboard::shifted_manifest(&dir.join(version), version, start, end);
    crate::leaderboard::author_store(&manifest, start, end);
    let mut text = fs_err::read_to_string(&manifest).unwrap();
    text.push_str(purpose);
    fs_err::write(&manifest, text).unwrap();
    run(coreb()
        .arg("build")
        .arg(&manifest)
        .arg("--output-dir")
        .arg(dir.join(version).join("build"))
        .arg("--publish-dir")
        .arg(publish))
}

/// The ids (`lcb_<question_id>`) of the sample's problems whose contest day lies in
/// `[start, end]`, sorted.
fn sample_problems(start: &str, end: &str) -> Vec<String> {
    let rows = jsonl(&root().join("tests/fixtures/sample/problems.jsonl"));
    let mut ids: Vec<String> = rows
        .iter()
        .filter(|r| {
            let day = &r["contest_date"].as_str().unwrap()[..10];
            start <= day && day <= end
        })
        .map(|r| format!("lcb_{}", r["question_id"].as_str().unwrap()))
        .collect();
    ids.sort();
    ids
}

/// The `[purpose]` gate end to end, through real builds: a training release (the sample's
/// January), then test releases naming it. One sharing its problems (January and February) is
/// refused at the `release` stage (exit 1, a gate), naming every shared problem, and publishes
/// nothing; a disjoint one (February) is published with its purpose in its MANIFEST, and
/// `coreb export --layout reranker-train` refuses it while it exports the training release.
#[test]
fn a_test_release_is_published_only_when_disjoint_from_its_training_release() {
    let dir = tempfile::tempdir().unwrap();
    let releases = dir.path().join("releases");
    let train = releases.join("v202501");
    let o = build_with_purpose(
        dir.path(),
        "v202501",
        ("2025-01-01", "2025-01-31"),
        "\n[purpose]\nrole = \"training\"\n",
        &train,
    );
    assert!(o.status.success(), "{}", text(&o));
    let manifest = |d: &Path| -> serde_json::Value {
        serde_json::from_str(&fs_err::read_to_string(d.join("MANIFEST.json")).unwrap()).unwrap()
    };
    assert_eq!(manifest(&train)["purpose"]["role"], "training");
    let january = sample_problems("2025-01-01", "2025-01-31");
    assert!(!january.is_empty());
    let naming = format!("\n[purpose]\nrole = \"test\"\ntraining = [\"{}\"]\n", train.display());

    // Overlapping: January's problems are in both. (Each test build has its own empty
    // `releases_dir`, so the refusal is the purpose gate's, not the series' disjointness.)
    let overlapping = releases.join("v202502");
    let o = build_with_purpose(
        dir.path(),
        "v202502",
        ("2025-01-01", "2025-02-28"),
        &naming,
        &overlapping,
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let message = format!(
        "test release `v202502` shares {} problem(s) with its training release `v202501` (`{}`): {}",
        january.len(),
        train.display(),
        january.join(", ")
    );
    assert!(text(&o).contains(&message), "{message}\n{}", text(&o));
    assert!(!overlapping.exists(), "a refused test release was published");

    // Disjoint: February alone.
    let test = releases.join("v202503");
    let o = build_with_purpose(dir.path(), "v202503", ("2025-02-01", "2025-02-28"), &naming, &test);
    assert!(o.status.success(), "{}", text(&o));
    let purpose = &manifest(&test)["purpose"];
    assert_eq!(purpose["role"], "test");
    assert_eq!(purpose["training_releases"][0]["version"], "v202501");
    assert_eq!(
        purpose["training_releases"][0]["manifest_sha256"].as_str(),
        Some(coreb_base::hashing::sha256_file(&train.join("MANIFEST.json")).unwrap().as_str())
    );

    // The reranker's training records: from the training release, never from the test one.
    reranker_train_refused(&test, dir.path());
    let records = dir.path().join("records");
    let o = reranker_train(&train, &records, &[]);
    assert!(o.status.success(), "{}", text(&o));
    let february = sample_problems("2025-02-01", "2025-02-28");
    let exported = jsonl(&records.join("train.jsonl"));
    assert!(!exported.is_empty());
    for r in &exported {
        let p = r["problem_id"].as_str().unwrap();
        assert!(january.iter().any(|j| j == p) && !february.iter().any(|f| f == p), "{r}");
    }
}
