//! Issue #11: a release means the same in every client. One run of each task scored through
//! four paths (`coreb eval --run`, `coreb trec-eval` on the BEIR qrels, pytrec_eval and BEIR's
//! `EvaluateRetrieval` at their defaults); `coreb eval --run` drops a code query's own
//! document unless `--keep-self`; `coreb check` passes on the sample and fails, by name, on
//! each planted defect.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::support::{coreb, python, root, run, text, written};

const TASKS: [&str; 3] = ["text2code", "code2code", "code2text"];

fn committed() -> PathBuf {
    root().join("releases/sample/v202503")
}

/// nDCG@10, MAP@10, Recall@10 per query id.
type Scores = BTreeMap<String, [f64; 3]>;

fn json_out(cmd: &mut std::process::Command) -> serde_json::Value {
    let out = run(cmd);
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("JSON on stdout: {e}\n{}", text(&out)))
}

/// A BM25 run of every task of the sample (ids are unique across tasks, so one file holds
/// all three), written by `coreb eval`.
fn bm25_run(dir: &Path) -> PathBuf {
    let out = dir.join("bm25");
    json_out(coreb().arg("eval").arg(committed()).arg("--out").arg(&out).arg("--json"));
    let mut all = String::new();
    for task in TASKS {
        let run_text = fs_err::read_to_string(out.join(format!("{task}.run.trec"))).unwrap();
        // BM25 finds nothing for a query that shares no token with the corpus: such a query
        // gets the task's first document at score 0, so every path scores every query.
        let ranked: std::collections::BTreeSet<&str> =
            run_text.lines().filter_map(|l| l.split(' ').next()).collect();
        let first_doc = fs_err::read_to_string(committed().join(task).join("corpus.jsonl"))
            .unwrap()
            .lines()
            .next()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["_id"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .unwrap();
        for line in
            fs_err::read_to_string(committed().join(task).join("queries.jsonl")).unwrap().lines()
        {
            let q: serde_json::Value = serde_json::from_str(line).unwrap();
            let qid = q["_id"].as_str().unwrap();
            if !ranked.contains(qid) {
                all.push_str(&format!("{qid} Q0 {first_doc} 1 0 bm25\n"));
            }
        }
        all.push_str(&run_text);
    }
    written(dir.join("all.run.trec"), all)
}

/// The BEIR qrels of every task in TREC format (`qid 0 doc rel`).
fn beir_qrels_as_trec(release: &Path, path: &Path) {
    let mut trec = String::new();
    for task in TASKS {
        let tsv = fs_err::read_to_string(release.join(task).join("qrels/test.tsv")).unwrap();
        for line in tsv.lines().skip(1) {
            let f: Vec<&str> = line.split('\t').collect();
            trec.push_str(&format!("{} 0 {} {}\n", f[0], f[1], f[2]));
        }
    }
    fs_err::write(path, trec).unwrap();
}

fn eval_scores(v: &serde_json::Value) -> Scores {
    let mut out = Scores::new();
    for task in v["tasks"].as_array().unwrap() {
        for q in task["queries"].as_array().unwrap() {
            let at = &q["at_k"];
            let get = |m: &str| at[m][0].as_f64().unwrap();
            out.insert(
                q["qid"].as_str().unwrap().to_owned(),
                [get("ndcg"), get("map"), get("recall")],
            );
        }
    }
    out
}

fn trec_scores(stdout: &str) -> Scores {
    let mut out = Scores::new();
    for line in stdout.lines() {
        let f: Vec<&str> = line.split('\t').map(str::trim).collect();
        if f.len() != 3 || f[1] == "all" {
            continue;
        }
        let slot = match f[0] {
            "ndcg_cut_10" => 0,
            "map_cut_10" => 1,
            "recall_10" => 2,
            _ => continue,
        };
        out.entry(f[1].to_owned()).or_insert([f64::NAN; 3])[slot] = f[2].parse().unwrap();
    }
    out
}

fn python_scores(v: &serde_json::Value) -> Scores {
    v.as_object()
        .unwrap()
        .iter()
        .map(|(q, m)| {
            let m = m.as_array().unwrap();
            (q.clone(), [m[0].as_f64().unwrap(), m[1].as_f64().unwrap(), m[2].as_f64().unwrap()])
        })
        .collect()
}

#[test]
fn one_run_scores_the_same_through_four_paths() {
    let dir = tempfile::tempdir().unwrap();
    let run_file = bm25_run(dir.path());
    let queries: usize = TASKS
        .iter()
        .map(|t| {
            fs_err::read_to_string(committed().join(t).join("queries.jsonl"))
                .unwrap()
                .lines()
                .count()
        })
        .sum();

    let coreb_eval = eval_scores(&json_out(
        coreb()
            .arg("eval")
            .arg(committed())
            .arg("--run")
            .arg(&run_file)
            .args(["--k", "10", "--json"]),
    ));
    let qrels = dir.path().join("qrels.trec");
    beir_qrels_as_trec(&committed(), &qrels);
    let out = run(coreb()
        .args(["trec-eval", "-q", "-m", "ndcg_cut.10", "-m", "map_cut.10", "-m", "recall.10"])
        .arg(&qrels)
        .arg(&run_file));
    assert!(out.status.success(), "{}", text(&out));
    let trec = trec_scores(&String::from_utf8_lossy(&out.stdout));
    let out = python()
        .arg(root().join("tests/python/four_paths.py"))
        .arg(committed())
        .arg(&run_file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let py: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let (pytrec, beir) = (python_scores(&py["pytrec_eval"]), python_scores(&py["beir"]));

    let paths = [("coreb trec-eval", &trec), ("pytrec_eval", &pytrec), ("beir", &beir)];
    assert_eq!(coreb_eval.len(), queries, "every query of the three tasks is scored");
    for (name, scores) in paths {
        let differ: Vec<&String> = scores
            .keys()
            .filter(|q| !coreb_eval.contains_key(*q))
            .chain(coreb_eval.keys().filter(|q| !scores.contains_key(*q)))
            .collect();
        assert!(differ.is_empty(), "{name} and coreb eval score different queries: {differ:?}");
        for (qid, ours) in &coreb_eval {
            let theirs = scores[qid];
            for (m, (a, b)) in
                ["nDCG@10", "MAP@10", "Recall@10"].iter().zip(ours.iter().zip(theirs))
            {
                // trec_eval prints 4 decimals: agreeing to 4 decimals is being within half a
                // unit of the 4th.
                assert!(
                    (a - b).abs() <= 5e-5 + 1e-12,
                    "{qid} {m}: coreb eval {a:.5} vs {name} {b:.5}"
                );
            }
        }
    }
    // Not a vacuous agreement: BM25 ranks hard negatives above positives somewhere, and the
    // numbers spread.
    let partial = coreb_eval.values().filter(|v| v[0] > 0.0 && v[0] < 1.0).count();
    assert!(partial > 10, "only {partial} queries with 0 < nDCG@10 < 1");
}

#[test]
fn eval_run_drops_a_code_query_s_own_document_unless_keep_self() {
    // A run that ranks each code2code query's own (anchor) document first, then its positives.
    let queries = fs_err::read_to_string(committed().join("code2code/queries.jsonl")).unwrap();
    let tsv = fs_err::read_to_string(committed().join("code2code/qrels/test.tsv")).unwrap();
    let mut run_text = String::new();
    for line in queries.lines() {
        let q: serde_json::Value = serde_json::from_str(line).unwrap();
        let (qid, own) = (q["_id"].as_str().unwrap(), q["source_doc_id"].as_str().unwrap());
        run_text.push_str(&format!("{qid} Q0 {own} 1 9.0 self\n"));
        for (i, l) in tsv.lines().skip(1).filter(|l| l.starts_with(&format!("{qid}\t"))).enumerate()
        {
            let doc = l.split('\t').nth(1).unwrap();
            run_text.push_str(&format!(
                "{qid} Q0 {doc} {} {} self\n",
                i + 2,
                5.0 - i as f64 * 0.01
            ));
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let run_file = dir.path().join("self.run.trec");
    fs_err::write(&run_file, run_text).unwrap();
    let folder = committed().join("code2code");
    let ndcg = |extra: &[&str]| {
        let v = json_out(
            coreb()
                .arg("eval")
                .arg(&folder)
                .arg("--run")
                .arg(&run_file)
                .args(["--k", "10", "--json"])
                .args(extra),
        );
        v["tasks"][0]["overall"]["at_k"]["ndcg"][0].as_f64().unwrap()
    };
    let (dropped, kept) = (ndcg(&[]), ndcg(&["--keep-self"]));
    assert!(
        (dropped - 1.0).abs() < 1e-12,
        "own document dropped: every positive ranks first ({dropped})"
    );
    assert!(kept < 0.9, "--keep-self leaves the own document in first place ({kept})");
}

#[test]
fn the_sample_release_passes_every_check() {
    let out = run(coreb().arg("check").arg(committed()));
    assert!(out.status.success(), "{}", text(&out));
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("| check | scope | figure | threshold | status |"), "{table}");
    let v = json_out(coreb().arg("check").arg(committed()).arg("--json"));
    let results = v["results"].as_array().unwrap();
    let names: std::collections::BTreeSet<&str> =
        results.iter().map(|r| r["check"].as_str().unwrap()).collect();
    for name in [
        "id_unique",
        "id_format",
        "id_earlier_releases",
        "unjudged_relevant",
        "hard_negative_coverage",
        "single_language_positives",
        "self_retrieval",
        "beir_parquet_equivalence",
        "language_named",
        "lengths",
        "empty_texts",
        "duplicate_texts",
    ] {
        assert!(names.contains(name), "{name} missing from {names:?}");
    }
    assert!(results.iter().all(|r| r["passed"] == true), "{v:#}");
}

/// Copy the sample release into `dir`.
fn copy_release(dir: &Path) -> PathBuf {
    let to = dir.join("v202503");
    let mut stack = vec![committed()];
    while let Some(d) = stack.pop() {
        for e in fs_err::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(committed()).unwrap();
            if p.is_dir() {
                fs_err::create_dir_all(to.join(rel)).unwrap();
                stack.push(p);
            } else {
                fs_err::create_dir_all(to.join(rel).parent().unwrap()).unwrap();
                fs_err::copy(&p, to.join(rel)).unwrap();
            }
        }
    }
    to
}

/// Edit a Parquet config with pandas (as a user's script would).
fn pandas(release: &Path, code: &str) {
    let script = format!("import pandas as pd, sys\nroot = sys.argv[1]\n{code}\n");
    let out = python().arg("-c").arg(script).arg(release).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
}

/// `coreb check` on a release with a planted defect fails, and `name` is among the failed
/// checks, in the JSON results and in the lines it prints on stderr.
fn fails_check(release: &Path, name: &str) {
    let out = run(coreb().arg("check").arg(release).arg("--json"));
    assert!(!out.status.success(), "a planted defect must fail: {}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let failed: Vec<&str> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["passed"] == false)
        .map(|r| r["check"].as_str().unwrap())
        .collect();
    assert!(failed.contains(&name), "`{name}` not among the failed checks {failed:?}");
    let out = run(coreb().arg("check").arg(release));
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("check `{name}` failed for")), "{stderr}");
}

#[test]
fn each_planted_defect_fails_its_check() {
    let dir = tempfile::tempdir().unwrap();

    // A colliding id: a code2text query takes a text2code query's id.
    let r = copy_release(&dir.path().join("collide"));
    pandas(
        &r,
        "t = pd.read_parquet(f'{root}/text2code_queries.parquet')\nq = pd.read_parquet(f'{root}/code2text_queries.parquet')\nq.loc[0, 'query_id'] = t.loc[0, 'query_id']\nq.to_parquet(f'{root}/code2text_queries.parquet', index=False)",
    );
    fails_check(&r, "id_unique");

    // An unjudged sibling solution: a text2code summary query loses one of its positives.
    let r = copy_release(&dir.path().join("sibling"));
    pandas(
        &r,
        "q = pd.read_parquet(f'{root}/text2code_qrels.parquet')\ndrop = q.index[(q.relevance == 2) & q.query_id.str.contains('_canonical_')][0]\nq.drop(index=drop).to_parquet(f'{root}/text2code_qrels.parquet', index=False)",
    );
    fails_check(&r, "unjudged_relevant");

    // A hard negative marked relevant in the BEIR qrels.
    let r = copy_release(&dir.path().join("hardneg"));
    let out = python()
        .arg("-c")
        .arg("import pandas as pd, sys\nq = pd.read_parquet(sys.argv[1] + '/text2code_qrels.parquet')\nh = q[q.relevance == 1].iloc[0]\nprint(f'{h.query_id}\\t{h.doc_id}\\t1')")
        .arg(&r)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let tsv = r.join("text2code/qrels/test.tsv");
    let mut body = fs_err::read_to_string(&tsv).unwrap();
    body.push_str(&String::from_utf8_lossy(&out.stdout));
    fs_err::write(&tsv, body).unwrap();
    fails_check(&r, "beir_parquet_equivalence");

    // A code2code self-match: an anchor that no query judges back in the code2code corpus.
    let r = copy_release(&dir.path().join("selfmatch"));
    let corpus_ids = fs_err::read_to_string(r.join("code2code/corpus.jsonl")).unwrap();
    let own = fs_err::read_to_string(r.join("code2code/queries.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["source_doc_id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .find(|id| !corpus_ids.contains(&format!("\"_id\":\"{id}\"")))
        .expect("an anchor the code2code corpus leaves out");
    let own = own.as_str();
    let anchor = fs_err::read_to_string(r.join("text2code/corpus.jsonl"))
        .unwrap()
        .lines()
        .find(|l| l.contains(&format!("\"_id\":\"{own}\"")))
        .unwrap()
        .to_owned();
    let corpus = r.join("code2code/corpus.jsonl");
    let mut body = fs_err::read_to_string(&corpus).unwrap();
    body.push_str(&anchor);
    body.push('\n');
    fs_err::write(&corpus, body).unwrap();
    fails_check(&r, "self_retrieval");

    // Another release beside it that published the same ids.
    let r = copy_release(&dir.path().join("twice"));
    fs_err::rename(&r, dir.path().join("twice/v202502")).unwrap();
    let r = copy_release(&dir.path().join("twice"));
    fails_check(&r, "id_earlier_releases");
}
