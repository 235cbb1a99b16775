//! The leaderboard (issue #18): `coreb eval --record` fills the results store, `coreb
//! leaderboard` writes a static site and prints the same numbers with `--json`; the site is
//! driven in headless Chromium from `file://` through its own controls and its numbers are
//! checked against the store (computed again in Python from the Parquet files) and against
//! `coreb leaderboard --json`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::support::{copy_tree, coreb, python, root, run, stderr_has, stdout_has, text, written};

/// The sample's manifest made into `version`, covering `[start, end]` only (so: the sample's
/// problems of that month), with absolute paths, its own empty releases directory and its own
/// copy of the sample's response store. The queries prompt names the build's most similar
/// other problems, so a build of fewer problems asks other questions: [`author_store`] writes
/// the sample's authored answers under this build's keys.
pub(crate) fn shifted_manifest(dir: &Path, version: &str, start: &str, end: &str) -> PathBuf {
    let sample = fs_err::read_to_string(root().join("manifests/sample.toml")).unwrap();
    let abs = root().display().to_string();
    let mut out = String::new();
    for line in sample.lines() {
        let line = match line.split_once(" = ").map(|(k, _)| k.trim()) {
            Some("version") => format!("version = \"{version}\""),
            Some("start") => format!("start = \"{start}\""),
            Some("end") => format!("end = \"{end}\""),
            Some("releases_dir") => format!("releases_dir = \"{}\"", dir.join("earlier").display()),
            Some("output_dir") => format!("output_dir = \"{}\"", dir.join("build").display()),
            Some("response_store") => {
                format!("response_store = \"{}\"", dir.join("store").display())
            }
            _ => line.replace("\"../", &format!("\"{abs}/")),
        };
        out.push_str(&line);
        out.push('\n');
    }
    fs_err::create_dir_all(dir.join("earlier")).unwrap();
    copy_tree(&root().join("tests/fixtures/sample/store"), &dir.join("store"));
    written(dir.join(format!("{version}.toml")), out)
}

/// Write the sample's authored answers for the problems of `[start, end]` into the store of
/// `manifest` under its own build's request keys (`coreb store author`, as
/// tests/fixtures/sample/README.md describes).
pub(crate) fn author_store(manifest: &Path, start: &str, end: &str) {
    let fixtures = root().join("tests/fixtures/sample");
    let authored = manifest.with_extension("authored");
    fs_err::create_dir_all(&authored).unwrap();
    for line in fs_err::read_to_string(fixtures.join("problems.jsonl")).unwrap().lines() {
        let row: Value = serde_json::from_str(line).unwrap();
        let (id, date) =
            (row["question_id"].as_str().unwrap(), row["contest_date"].as_str().unwrap());
        let day = &date[..10];
        if start <= day && day <= end {
            fs_err::copy(
                fixtures.join(format!("authored/{id}.json")),
                authored.join(format!("{id}.json")),
            )
            .unwrap();
        }
    }
    let out = run(coreb().args(["store", "author"]).arg(manifest).arg(&authored));
    assert!(out.status.success(), "authoring {}: {}", manifest.display(), text(&out));
}

/// Per query, its judgements `(doc, relevance)`.
type Judgements = BTreeMap<String, Vec<(String, i64)>>;

/// Ids of a BEIR folder: the corpus, and per query its judgements.
fn beir_ids(task: &Path) -> (Vec<String>, Judgements) {
    let corpus = fs_err::read_to_string(task.join("corpus.jsonl")).unwrap();
    let docs = corpus
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["_id"].as_str().unwrap().to_owned())
        .collect();
    let mut qrels = Judgements::new();
    for line in fs_err::read_to_string(task.join("qrels/test.tsv")).unwrap().lines().skip(1) {
        let f: Vec<&str> = line.split('\t').collect();
        qrels.entry(f[0].to_owned()).or_default().push((f[1].to_owned(), f[2].parse().unwrap()));
    }
    (docs, qrels)
}

/// How a test-written retriever ranks a query's documents.
#[derive(Clone, Copy)]
enum Style {
    /// Its positives first: a model that has seen the problems.
    Positives,
    /// Three other documents, then its positives.
    Late,
    /// Positives at every other rank after one other document.
    Interleaved,
    /// Only other documents.
    Misses,
}

/// A TREC run over a BEIR folder (positives: each query's highest judgement).
fn write_run(task: &Path, style: Style, out: &Path) {
    let (docs, qrels) = beir_ids(task);
    let mut text = String::new();
    for (q, judged) in &qrels {
        let top = judged.iter().map(|(_, r)| *r).max().unwrap();
        let pos: Vec<&str> =
            judged.iter().filter(|(_, r)| *r == top).map(|(d, _)| d.as_str()).collect();
        let judged_ids: Vec<&str> = judged.iter().map(|(d, _)| d.as_str()).collect();
        let others: Vec<&str> =
            docs.iter().map(String::as_str).filter(|d| !judged_ids.contains(d)).take(12).collect();
        let ranked: Vec<&str> = match style {
            Style::Positives => pos.iter().chain(&others).copied().collect(),
            Style::Late => others[..3].iter().chain(&pos).chain(&others[3..]).copied().collect(),
            Style::Interleaved => {
                let mut v = vec![others[0]];
                for (i, p) in pos.iter().enumerate() {
                    v.push(p);
                    v.push(others[(i + 1) % others.len()]);
                }
                v
            }
            Style::Misses => others.clone(),
        };
        let mut seen = std::collections::BTreeSet::new();
        for (rank, d) in ranked.into_iter().filter(|d| seen.insert(*d)).enumerate() {
            text.push_str(&format!("{q} Q0 {d} {} {} test\n", rank + 1, 100 - rank));
        }
    }
    fs_err::write(out, text).unwrap();
}

fn eval_record(dir: &Path, extra: &[&str]) -> String {
    let out =
        run(coreb().arg("eval").arg(dir).args(["--resamples", "100", "--record"]).args(extra));
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// sha256 of every file of the store.
fn store_state(store: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for d in fs_err::read_dir(store).unwrap() {
        let d = d.unwrap().path();
        if d.is_dir() {
            for f in fs_err::read_dir(&d).unwrap() {
                let f = f.unwrap().path();
                out.push((f.display().to_string(), coreb_base::hashing::sha256_file(&f).unwrap()));
            }
        }
    }
    out.sort();
    out
}

fn leaderboard_json(releases: &Path, extra: &[&str]) -> Value {
    let out = run(coreb()
        .arg("leaderboard")
        .arg("--releases-dir")
        .arg(releases)
        .arg("--json")
        .args(extra));
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

/// Three releases (the committed sample and two months rebuilt from its problems), three
/// retrievers, the site in headless Chromium.
#[test]
fn the_site_in_headless_chromium_shows_the_stores_numbers_as_its_controls_move() {
    let tmp = tempfile::tempdir().unwrap();
    let releases = tmp.path().join("releases");
    copy_tree(&root().join("releases/sample/v202503"), &releases.join("v202503"));

    // Two more releases: the sample's January and February problems, built for real (replaying
    // the sample's response store, judging every solution), side by side.
    let builds: Vec<_> =
        [("v202501", "2025-01-01", "2025-01-31"), ("v202502", "2025-02-01", "2025-02-28")]
            .iter()
            .map(|(v, start, end)| {
                let manifest = shifted_manifest(&tmp.path().join(v), v, start, end);
                author_store(&manifest, start, end);
                let child = coreb()
                    .arg("build")
                    .arg(&manifest)
                    .arg("--output-dir")
                    .arg(tmp.path().join(v).join("build"))
                    .arg("--publish-dir")
                    .arg(releases.join(v))
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap();
                (v.to_string(), child)
            })
            .collect();
    for (v, child) in builds {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{v}: {}", text(&out));
    }

    // BM25 on every release; then once more, which changes nothing.
    for v in ["v202501", "v202502", "v202503"] {
        let log = eval_record(&releases.join(v), &[]);
        assert!(log.contains("recorded in"), "{log}");
    }
    let store = releases.join("results");
    let before = store_state(&store);
    assert_eq!(before.len(), 3, "{before:?}");
    let log = eval_record(&releases.join("v202502"), &[]);
    assert!(log.contains("already recorded"), "{log}");
    assert_eq!(store_state(&store), before, "re-recording the same run changed the store");

    // Two retrievers whose runs the test writes, one task at a time. `alpha` has seen January
    // (cutoff 2025-01): perfect on releases whose window starts by then, worse after. `beta`
    // (cutoff 2024-12) is mediocre everywhere; its first text2code record on v202501 is
    // superseded by a later one.
    let runs = tmp.path().join("runs");
    fs_err::create_dir_all(&runs).unwrap();
    let after_alpha = |v: &str| v == "v202502";
    let first_beta = runs.join("beta-first.trec");
    write_run(&releases.join("v202501/text2code"), Style::Misses, &first_beta);
    eval_record(
        &releases.join("v202501/text2code"),
        &["--run", first_beta.to_str().unwrap(), "--model-name", "beta", "--cutoff", "2024-12"],
    );
    for v in ["v202501", "v202502", "v202503"] {
        for task in ["code2code", "code2text", "text2code"] {
            let dir = releases.join(v).join(task);
            for (model, style, cutoff, category) in [
                (
                    "alpha",
                    if after_alpha(v) { Style::Late } else { Style::Positives },
                    "2025-01",
                    "code",
                ),
                ("beta", Style::Interleaved, "2024-12", "general"),
            ] {
                let path = runs.join(format!("{model}-{v}-{task}.trec"));
                write_run(&dir, style, &path);
                eval_record(
                    &dir,
                    &[
                        "--run",
                        path.to_str().unwrap(),
                        "--model-name",
                        model,
                        "--cutoff",
                        cutoff,
                        "--category",
                        category,
                    ],
                );
            }
        }
    }

    // A model audit of v202502, where `coreb audit <release> model --out releases/audits/…` puts it.
    let audit = serde_json::json!({
        "release": releases.join("v202502").display().to_string(), "model": "gpt-test", "endpoint": "http://127.0.0.1:9/v1",
        "language": "python", "samples": 2, "sampling": {}, "prompt_sha256": "00", "windows": [], "problems": [], "unanswered": 0,
        "overall": {"window": "all", "problems": 3, "excluded": 0, "pass_at_1_original": 0.5, "pass_at_1_rewritten": 0.25, "drop": 0.25, "relative_drop": 0.5}
    });
    fs_err::create_dir_all(releases.join("audits/v202502-gpt-test")).unwrap();
    fs_err::write(releases.join("audits/v202502-gpt-test/model.json"), audit.to_string()).unwrap();

    // The site.
    let site = tmp.path().join("site");
    let out = run(coreb()
        .arg("leaderboard")
        .arg("--releases-dir")
        .arg(&releases)
        .arg("--out")
        .arg(&site));
    assert!(out.status.success(), "{}", text(&out));
    let page = fs_err::read_to_string(site.join("index.html")).unwrap();
    let data = fs_err::read_to_string(site.join("data.js")).unwrap();
    assert!(
        page.contains("<script src=\"data.js\">")
            && data.starts_with("window.COREB_LEADERBOARD = ")
    );
    let all = leaderboard_json(&releases, &[]);
    assert_eq!(all["months"], serde_json::json!(["2025-01", "2025-02", "2025-03"]));
    let models: Vec<&str> =
        all["models"].as_array().unwrap().iter().map(|m| m["name"].as_str().unwrap()).collect();
    assert_eq!(models, ["alpha", "beta", "bm25"]);
    let beta = &all["models"][1];
    assert_eq!(
        (beta["cutoff"].as_str(), beta["records"].as_u64(), beta["superseded"].as_u64()),
        (Some("2024-12-31"), Some(10), Some(1))
    );
    // Categories as recorded (beta's first record named none: its later ones' holds); BM25 was
    // recorded without one.
    let categories: Vec<&Value> =
        all["models"].as_array().unwrap().iter().map(|m| &m["category"]).collect();
    assert_eq!(categories, [&Value::from("code"), &Value::from("general"), &Value::Null]);
    // The site is written again byte for byte.
    let again = tmp.path().join("site2");
    assert!(
        run(coreb()
            .arg("leaderboard")
            .arg("--releases-dir")
            .arg(&releases)
            .arg("--out")
            .arg(&again))
        .status
        .success()
    );
    assert_eq!(fs_err::read(again.join("data.js")).unwrap(), data.as_bytes());

    // The browser.
    let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("leaderboard/leaderboard.png");
    let out = run(python()
        .arg(root().join("tests/python/leaderboard_browser.py"))
        .arg("--site")
        .arg(&site)
        .arg("--releases")
        .arg(&releases)
        .arg("--store")
        .arg(&store)
        .arg("--screenshot")
        .arg(&shot));
    assert!(
        out.status.success(),
        "the browser driver failed (chromium and websocket-client come from .ci/run and scripts/setup-python): {}",
        text(&out)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    eprintln!("leaderboard screenshot: {}", shot.display());
    let png = fs_err::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG") && png.len() > 20_000, "screenshot of {} bytes", png.len());

    // Offline: nothing but file:// was asked for, and no script error.
    let requests: Vec<&str> =
        report["requests"].as_array().unwrap().iter().map(|r| r.as_str().unwrap()).collect();
    assert!(requests.iter().all(|u| u.starts_with("file://")), "{requests:?}");
    assert_eq!(report["errors"], serde_json::json!([]), "script errors");
    assert_eq!(report["records"], 22, "3 BM25 + 9 alpha + 10 beta records");

    let states = report["states"].as_array().unwrap();
    let expected_steps = [
        ("2025-01", "2025-03", false, ""),
        ("2025-01", "2025-03", true, ""),
        ("2025-02", "2025-03", true, ""),
        ("2025-02", "2025-02", true, ""),
        ("2025-02", "2025-02", false, ""),
        ("2025-01", "2025-02", false, ""),
        ("2025-01", "2025-02", false, "code"),
        ("2025-01", "2025-02", false, "unknown"),
        ("2025-01", "2025-02", true, "general"),
        ("2025-01", "2025-02", false, ""),
    ];
    assert_eq!(states.len(), expected_steps.len());
    let mut alpha_averages = Vec::new();
    let mut overalls = BTreeMap::new();
    for (state, (from, to, after, category)) in states.iter().zip(expected_steps) {
        let step = state["step"].as_str().unwrap();
        assert_eq!(
            (
                state["from"].as_str().unwrap(),
                state["to"].as_str().unwrap(),
                state["after_cutoff"].as_bool().unwrap(),
                state["category"].as_str().unwrap()
            ),
            (from, to, after, category),
            "{step}: the control did not move as pressed"
        );
        let mut args = vec!["--from", from, "--to", to];
        if after {
            args.push("--after-cutoff");
        }
        if !category.is_empty() {
            args.extend(["--category", category]);
        }
        let view = &leaderboard_json(&releases, &args)["view"];
        let board = &state["page"]["board"];
        // Every model is in the table, in the order of --json.
        let order: Vec<&str> =
            view["rows"].as_array().unwrap().iter().map(|r| r["model"].as_str().unwrap()).collect();
        assert_eq!(state["page"]["order"], serde_json::json!(order), "{step}");
        // The category filter hides every other category's rows: the page shows exactly the
        // store's models of that category.
        let in_category: Vec<&str> = state["categories"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(_, c)| category.is_empty() || c.as_str() == Some(category))
            .map(|(m, _)| m.as_str())
            .collect();
        let mut shown: Vec<&str> = order.clone();
        shown.sort();
        assert_eq!(shown, in_category, "{step}: the rows of the category");
        for (model, row) in board.as_object().unwrap() {
            assert_eq!(row["_category"], state["categories"][model], "{step}: {model}'s category");
        }
        for row in view["rows"].as_array().unwrap() {
            let model = row["model"].as_str().unwrap();
            let page_row = &board[model];
            let store_row = &state["store"][model];
            for task in ["code2code", "code2text", "text2code", "average", "overall"] {
                let (page_cell, store_cell) = (&page_row[task], &store_row[task]);
                let json_value = match task {
                    "average" | "overall" => row[task].as_f64(),
                    _ => row["tasks"][task]["mean"].as_f64(),
                };
                match (page_cell.is_null(), json_value) {
                    (true, None) => assert!(
                        store_cell.is_null(),
                        "{step}: {model} {task}: store has {store_cell}"
                    ),
                    (false, Some(json)) => {
                        let shown: f64 = page_cell["text"].as_str().unwrap().parse().unwrap();
                        let value = page_cell["value"].as_f64().unwrap();
                        let stored = store_cell[0].as_f64().unwrap_or_else(|| {
                            panic!("{step}: {model} {task}: not in the store's numbers")
                        });
                        assert!(
                            close(value, stored, 1e-12) && close(value, json, 1e-12),
                            "{step}: {model} {task}: page {value}, store {stored}, --json {json}"
                        );
                        assert_eq!(
                            page_cell["text"].as_str().unwrap(),
                            format!("{json:.4}"),
                            "{step}: {model} {task}"
                        );
                        assert!(close(shown, stored, 5.1e-5));
                        if task == "overall" {
                            // The queries it weighs: the page's, the store's, --json's.
                            let n = row["queries"].as_u64().unwrap();
                            assert_eq!(
                                (page_cell["queries"].as_u64(), store_cell[1].as_u64()),
                                (Some(n), Some(n)),
                                "{step}: {model}: queries weighed"
                            );
                            overalls.insert((step.to_owned(), model.to_owned()), json);
                        } else if task != "average" {
                            let n = row["tasks"][task]["releases"].as_u64().unwrap();
                            assert_eq!(
                                (page_cell["releases"].as_u64(), store_cell[1].as_u64()),
                                (Some(n), Some(n)),
                                "{step}: {model} {task}: releases averaged"
                            );
                        }
                    }
                    (p, j) => panic!(
                        "{step}: {model} {task}: page shows a value: {}, --json has one: {}",
                        !p,
                        j.is_some()
                    ),
                }
            }
            let used: Vec<&str> =
                row["releases"].as_array().unwrap().iter().map(|r| r.as_str().unwrap()).collect();
            assert_eq!(
                page_row["_releases"],
                serde_json::json!(used),
                "{step}: {model}: releases used"
            );
            if model == "alpha" {
                alpha_averages.push(row["average"].as_f64());
            }
        }
        // The per-task breakdowns (the page shows the first task: code2code) against the store.
        for (kind, key) in [("subtasks", "by_subtask"), ("languages", "by_language")] {
            for g in view[key].as_array().unwrap().iter().filter(|g| g["task"] == "code2code") {
                let (model, group) = (g["model"].as_str().unwrap(), g["group"].as_str().unwrap());
                let cell = &state["page"][kind][model][group];
                let prefix = if kind == "subtasks" { "subtask" } else { "language" };
                let stored = &state["store_groups"][format!("{model}|code2code|{prefix}:{group}")];
                assert!(
                    close(
                        cell["value"].as_f64().unwrap(),
                        g["mean"]["mean"].as_f64().unwrap(),
                        1e-12
                    ),
                    "{step}: {kind} {model} {group}"
                );
                assert!(
                    close(cell["value"].as_f64().unwrap(), stored[0].as_f64().unwrap(), 1e-12),
                    "{step}: {kind} {model} {group}: store {stored}"
                );
            }
        }
        // The plot: one point per model and release with every task, at the --json value.
        let points = state["page"]["plot"].as_array().unwrap();
        let series: Vec<&Value> =
            view["series"].as_array().unwrap().iter().filter(|p| p["task"] == "average").collect();
        assert_eq!(points.len(), series.len(), "{step}: plot points");
        for p in series {
            let hit = points
                .iter()
                .find(|q| q[0] == p["model"] && q[1] == p["release"])
                .unwrap_or_else(|| panic!("{step}: no point for {p}"));
            assert!(close(hit[2].as_f64().unwrap(), p["value"].as_f64().unwrap(), 1e-12));
        }
    }
    // Filtering by category leaves each model's overall score as it is without the filter (the
    // same window), and the ranking is by it.
    let overall = |step: usize, model: &str| {
        overalls
            .get(&(states[step]["step"].as_str().unwrap().to_owned(), model.to_owned()))
            .copied()
    };
    // (beta's cutoff precedes every release: the toggle keeps them all.)
    let same = [(6, "alpha"), (7, "bm25"), (8, "beta"), (9, "alpha"), (9, "beta"), (9, "bm25")];
    for (step, model) in same {
        assert!(overall(step, model).is_some(), "{step} {model}");
        assert_eq!(overall(step, model), overall(5, model), "{step}: {model}");
    }
    for state in states {
        let order = state["page"]["order"].as_array().unwrap();
        let scores: Vec<f64> = order
            .iter()
            .filter_map(|m| {
                state["page"]["board"][m.as_str().unwrap()]["overall"]["value"].as_f64()
            })
            .collect();
        assert!(
            scores.windows(2).all(|w| w[0] >= w[1]),
            "{}: ranked by overall score: {scores:?}",
            state["step"]
        );
    }
    // The controls changed the numbers: alpha is perfect before its cutoff and not after.
    assert!(alpha_averages[0].unwrap() > alpha_averages[1].unwrap() + 0.05, "{alpha_averages:?}");
    assert_eq!(alpha_averages[1], alpha_averages[3], "only v202502 is after alpha's cutoff");
    assert!(alpha_averages[5].unwrap() > alpha_averages[4].unwrap(), "{alpha_averages:?}");

    // The releases' own figures: problems, queries, BM25 band, audit drop.
    let texts = &report["releases_text"];
    for rel in all["releases"].as_array().unwrap() {
        let v = rel["version"].as_str().unwrap();
        let row = texts[v].as_str().unwrap();
        assert!(row.contains(&format!("\t{}\t", rel["problems"])), "{v}: {row}");
        let bm25 = format!("text2code {:.4}", rel["bm25_ndcg10"]["text2code"].as_f64().unwrap());
        assert!(row.contains(&bm25) && row.contains("[0.05, 0.95]"), "{v}: {row}");
        let checks = rel["checks_passed"]
            .as_u64()
            .unwrap_or_else(|| panic!("{v}: the MANIFEST records the validity checks passed"));
        assert!(checks > 0 && row.contains(&format!("{checks} passed")), "{v}: {row}");
        assert!(
            row.contains(&format!("{:.3}", rel["hard_negative_share"].as_f64().unwrap())),
            "{v}: {row}"
        );
    }
    assert_eq!(all["releases"][0]["problems"], 2);
    assert_eq!(all["releases"][1]["problems"], 3);
    assert!(
        texts["v202502"]
            .as_str()
            .unwrap()
            .contains("gpt-test (python): 0.500 → 0.250 (−0.250, 50.0 %)"),
        "{}",
        texts["v202502"]
    );
}

#[test]
fn recording_needs_a_release_a_name_for_a_run_and_a_real_cutoff() {
    let tmp = tempfile::tempdir().unwrap();
    let release = tmp.path().join("v202503");
    copy_tree(&root().join("releases/sample/v202503"), &release);
    let not_release = tmp.path().join("beir");
    copy_tree(&release.join("text2code"), &not_release);
    let (task, some_file) = (release.join("text2code"), release.join("MANIFEST.json"));
    let cases: Vec<(Vec<&std::ffi::OsStr>, &str)> = vec![
        (vec![not_release.as_os_str()], "is not a release nor a task folder"),
        (vec![release.as_os_str(), "--cutoff".as_ref(), "2025-02-30".as_ref()], "`--cutoff`"),
        (vec![task.as_os_str(), "--run".as_ref(), some_file.as_os_str()], "--model-name"),
    ];
    for (args, expected) in cases {
        let out = run(coreb().arg("eval").args(&args).arg("--record"));
        assert!(!out.status.success(), "{}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(expected),
            "{expected}: {}",
            text(&out)
        );
    }
    // A category is code, general or closed: anything else is a usage error (exit 2).
    let out =
        run(coreb().arg("eval").arg(&release).args(["--record", "--category", "open-weights"]));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    stderr_has(
        &out,
        "`--category`: `open-weights`: expected a model category, one of `code`, `general`, `closed`",
    );
    assert!(!tmp.path().join("results").exists(), "a refused record wrote something");
    // Flags that only make sense with --record are refused without it.
    let out = run(coreb().arg("eval").arg(&release).args(["--model-name", "x"]));
    assert!(!out.status.success(), "{}", text(&out));
    stderr_has(&out, "--record");
    // A bad window or metric is a clear error.
    for (args, expected) in [
        (vec!["--from", "2025-3"], "expected a month"),
        (vec!["--from", "2025-03", "--to", "2025-01"], "starts"),
        (vec!["--metric", "ndcg@7"], "not in the results store"),
        (vec!["--category", "open"], "possible values: code, general, closed, unknown"),
    ] {
        fs_err::create_dir_all(tmp.path().join("results")).unwrap();
        let mut cmd: Command = coreb();
        cmd.arg("leaderboard").arg("--releases-dir").arg(tmp.path()).arg("--json").args(&args);
        if expected.contains("results store") {
            assert!(
                run(coreb().arg("eval").arg(&release).args(["--record", "--resamples", "0"]))
                    .status
                    .success()
            );
        }
        let out = run(&mut cmd);
        assert!(
            !out.status.success() && String::from_utf8_lossy(&out.stderr).contains(expected),
            "{expected}: {}",
            text(&out)
        );
    }
}

/// `scripts/monthly.sh` with the month's plan, build and verify stubbed (they need the network
/// and an endpoint): it records BM25 on every release, regenerates the site, and a second run
/// records nothing new.
#[test]
fn monthly_records_the_baselines_on_every_release_and_regenerates_the_site() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    for d in ["scripts", "manifests", "releases"] {
        fs_err::create_dir_all(repo.join(d)).unwrap();
    }
    fs_err::copy(root().join("scripts/monthly.sh"), repo.join("scripts/monthly.sh")).unwrap();
    // An earlier release: the sample's files under another version and window.
    let earlier = repo.join("releases/v202502");
    copy_tree(&root().join("releases/sample/v202503"), &earlier);
    let mut manifest: Value =
        serde_json::from_str(&fs_err::read_to_string(earlier.join("MANIFEST.json")).unwrap())
            .unwrap();
    manifest["version"] = "v202502".into();
    manifest["window"] = serde_json::json!({"start": "2025-02-01", "end": "2025-02-28"});
    fs_err::write(earlier.join("MANIFEST.json"), manifest.to_string()).unwrap();
    let plan = shifted_manifest(&tmp.path().join("plan"), "v202503", "2025-01-01", "2025-03-31");
    let stub = tmp.path().join("coreb-stub");
    fs_err::write(
        &stub,
        r#"#!/usr/bin/env bash
set -euo pipefail
case "$1" in
  plan) cp "$STUB_MANIFEST" "manifests/v${2/-/}.toml" ;;
  build) cp -r "$STUB_RELEASE" "releases/$(basename "$2" .toml)"; echo '{}' ;;
  verify) ;;
  *) exec "$REAL_COREB" "$@" ;;
esac
"#,
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs_err::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).unwrap();
    let monthly = || {
        let mut cmd = Command::new("bash");
        cmd.arg(repo.join("scripts/monthly.sh"))
            .arg("2025-03")
            .env("COREB", &stub)
            .env("REAL_COREB", env!("CARGO_BIN_EXE_coreb"))
            .env("STUB_MANIFEST", &plan)
            .env("STUB_RELEASE", root().join("releases/sample/v202503"))
            .env_remove("EMBED_MODEL");
        run(&mut cmd)
    };
    let out = monthly();
    assert!(out.status.success(), "{}", text(&out));
    let store = repo.join("releases/results");
    let first = store_state(&store);
    let versions: Vec<&str> = first
        .iter()
        .map(|(p, _)| if p.contains("/v202502/") { "v202502" } else { "v202503" })
        .collect();
    assert_eq!(versions, ["v202502", "v202503"], "{first:?}");
    assert!(
        repo.join("build/leaderboard/index.html").is_file()
            && repo.join("build/leaderboard/data.js").is_file()
    );
    let data = fs_err::read_to_string(repo.join("build/leaderboard/data.js")).unwrap();
    assert!(data.contains("\"name\":\"bm25\""), "{}", &data[..data.len().min(400)]);
    // Next month's run of the same month: every run is already recorded.
    fs_err::remove_dir_all(repo.join("releases/v202503")).unwrap();
    let out = monthly();
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(store_state(&store), first);
}

/// Issue #58: `scripts/monthly.sh` for a month whose sources hold nothing new (the plan's
/// refusal, stubbed here) says "no new problems", builds nothing and exits 3; any other
/// failure of the plan keeps its own status.
#[test]
fn monthly_says_no_new_problems_with_its_own_exit_status() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    fs_err::create_dir_all(repo.join("scripts")).unwrap();
    fs_err::copy(root().join("scripts/monthly.sh"), repo.join("scripts/monthly.sh")).unwrap();
    let stub = tmp.path().join("coreb-stub");
    fs_err::write(
        &stub,
        r#"#!/usr/bin/env bash
case "$1" in
  plan) echo "error: $STUB_PLAN" >&2; exit "$STUB_STATUS" ;;
  *) echo "unexpected: $*" >&2; exit 99 ;;
esac
"#,
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs_err::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).unwrap();
    let monthly = |message: &str, status: &str| {
        run(Command::new("bash")
            .arg(repo.join("scripts/monthly.sh"))
            .arg("2026-12")
            .env("COREB", &stub)
            .env("STUB_PLAN", message)
            .env("STUB_STATUS", status))
    };
    let empty = monthly(
        "no new problems: no source has a problem with a contest date in the window 2025-04-07 … 2026-12-31",
        "1",
    );
    assert_eq!(empty.status.code(), Some(3), "{}", text(&empty));
    stdout_has(&empty, "no new problems for v202612");
    assert!(!repo.join("build").exists(), "nothing built");
    let failed = monthly("fetching source `test6`: connection refused", "1");
    assert_eq!(failed.status.code(), Some(1), "{}", text(&failed));
    let usage = monthly("month: expected `YYYY-MM`", "2");
    assert_eq!(usage.status.code(), Some(2), "{}", text(&usage));
}
