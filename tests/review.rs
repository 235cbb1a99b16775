//! Issue #50: human validation of the rewrites. The sample built into a temporary directory;
//! its review page driven in headless Chromium by three reviewers; `coreb review report`
//! against reference implementations (scikit-learn, statsmodels, krippendorff); byte-identical
//! pages; files of another release or draw refused; hostile text shown as text.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::Value;

use crate::support::{
    copy_tree, coreb, python, root, run, same_release_as, stderr_has, text, tree_sha256, written,
};

const QUESTIONS: [&str; 5] = ["intent", "tests", "disguise", "distractors", "summary"];

struct Built {
    _dir: tempfile::TempDir,
    release: PathBuf,
    build: PathBuf,
}

/// The sample, built once for every test of this module.
fn built() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let (build, release) = (dir.path().join("build"), dir.path().join("releases/v202503"));
        let out = run(coreb()
            .arg("build")
            .arg(root().join("manifests/sample.toml"))
            .arg("--output-dir")
            .arg(&build)
            .arg("--publish-dir")
            .arg(&release));
        assert!(out.status.success(), "{}", text(&out));
        Built { _dir: dir, release, build }
    })
}

fn page(release: &Path, build: &Path, n: &str, seed: &str, out: &Path) -> String {
    let o = run(coreb()
        .arg("review")
        .arg(release)
        .args(["--sample", n, "--seed", seed, "--out"])
        .arg(out)
        .arg("--build-dir")
        .arg(build));
    assert!(o.status.success(), "{}", text(&o));
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The page's embedded data.
fn page_data(html: &str) -> Value {
    let start = html.find("<script type=\"application/json\" id=\"review-data\">").unwrap();
    let body = &html[start..];
    let json = &body[body.find('>').unwrap() + 1..body.find("</script>").unwrap()];
    serde_json::from_str(json).unwrap()
}

fn browser(args: &[&std::ffi::OsStr]) -> Value {
    let out = run(python().arg(root().join("tests/python/review_browser.py")).args(args));
    assert!(
        out.status.success(),
        "the browser driver failed (chromium and websocket-client come from .ci/run and scripts/setup-python): {}",
        text(&out)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let requests: Vec<&str> =
        v["requests"].as_array().unwrap().iter().map(|r| r.as_str().unwrap()).collect();
    assert!(
        requests.iter().all(|u| u.starts_with("file://")),
        "the page asked the network: {requests:?}"
    );
    assert_eq!(v["errors"], serde_json::json!([]), "script errors");
    v
}

/// Reviewer `r`'s answer to question `q` of the `i`-th problem (`None`: left unanswered).
fn answer(r: usize, i: usize, q: usize) -> Option<&'static str> {
    let a = ["yes", "no", "unsure"];
    match r {
        0 => Some(if (i + q).is_multiple_of(4) {
            "no"
        } else if (i * q) % 5 == 3 {
            "unsure"
        } else {
            "yes"
        }),
        1 => {
            let mine = answer(0, i, q).unwrap();
            Some(if (i + 2 * q).is_multiple_of(3) {
                a[(a.iter().position(|x| *x == mine).unwrap() + 1) % 3]
            } else {
                mine
            })
        }
        _ => (!(i + q).is_multiple_of(5)).then_some(if (i + q) % 3 == 1 { "no" } else { "yes" }),
    }
}

fn report(release: &Path, files: &[PathBuf], out: &Path, extra: &[&str]) -> Value {
    let o = run(coreb()
        .args(["review", "report"])
        .arg(release)
        .args(files)
        .arg("--out")
        .arg(out)
        .args(extra));
    assert!(o.status.success(), "{}", text(&o));
    serde_json::from_str(&fs_err::read_to_string(out.join("review.json")).unwrap()).unwrap()
}

fn close(a: &Value, b: &Value, what: &str) {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => assert!((x - y).abs() < 1e-9, "{what}: coreb {x}, reference {y}"),
        _ => assert_eq!(a, b, "{what}"),
    }
}

fn against_reference(review: &Value, files: &[PathBuf]) {
    let out = run(python().arg(root().join("tests/python/review_reference.py")).args(files));
    assert!(out.status.success(), "{}", text(&out));
    let reference: Value = serde_json::from_slice(&out.stdout).unwrap();
    for q in review["questions"].as_array().unwrap() {
        let key = q["key"].as_str().unwrap();
        let r = &reference[key];
        for f in ["yes", "of", "share", "low", "high"] {
            close(&q["yes"][f], &r[f], &format!("{key}.{f}"));
        }
        for f in ["cohen_kappa", "fleiss_kappa", "krippendorff_alpha"] {
            close(&q[f], &r[f], &format!("{key}.{f}"));
        }
    }
}

#[test]
fn reviewers_in_chromium_and_the_report_against_reference_implementations() {
    let b = built();
    let tmp = tempfile::tempdir().unwrap();
    let pages = tmp.path().join("page");
    page(&b.release, &b.build, "6", "7", &pages);
    let html = fs_err::read_to_string(pages.join("index.html")).unwrap();
    let data = page_data(&html);
    let ids: Vec<String> =
        data["ids"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_owned()).collect();
    assert_eq!(ids.len(), 6);
    assert_eq!(
        data["release_sha256"].as_str().unwrap(),
        coreb_base::hashing::sha256_file(&b.release.join("MANIFEST.json")).unwrap()
    );
    // Stratified: every platform of the release is drawn.
    let platforms: std::collections::BTreeSet<&str> = data["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["platform"].as_str().unwrap())
        .collect();
    assert!(platforms.len() >= 2, "{platforms:?}");
    // Each problem carries the four distractors, a summary and tests marked by origin.
    for p in data["problems"].as_array().unwrap() {
        assert_eq!(p["distractors"].as_array().unwrap().len(), 4, "{}", p["id"]);
        assert!(
            p["summary"].is_string()
                && p["statement_diff"].as_array().unwrap().iter().any(|s| s["op"] != "="),
            "{}",
            p["id"]
        );
        assert!(
            p["tests"].as_array().unwrap().iter().all(|t| t["origin"].is_string()),
            "{}",
            p["id"]
        );
    }

    let plans: Vec<Value> = ["ada", "bob", "cyd"]
        .iter()
        .enumerate()
        .map(|(r, name)| {
            let answers: serde_json::Map<String, Value> = ids
                .iter()
                .enumerate()
                .map(|(i, id)| (id.clone(), QUESTIONS.iter().enumerate().filter_map(|(q, key)| Some((key.to_string(), Value::from(answer(r, i, q)?)))).collect()))
                .collect();
            serde_json::json!({"reviewer": name, "answers": answers, "notes": {ids[0].clone(): {"intent": format!("{name}: checked by hand")}}})
        })
        .collect();
    let plan = tmp.path().join("plan.json");
    fs_err::write(&plan, serde_json::to_string(&plans).unwrap()).unwrap();
    let files_dir = tmp.path().join("answers");
    fs_err::create_dir_all(&files_dir).unwrap();
    let v = browser(&[
        "--page".as_ref(),
        pages.join("index.html").as_os_str(),
        "--plan".as_ref(),
        plan.as_os_str(),
        "--out".as_ref(),
        files_dir.as_os_str(),
    ]);
    for (r, p) in v["reviewers"].as_array().unwrap().iter().zip(&plans) {
        assert_eq!(r["restored"]["reviewer"], p["reviewer"], "the name survives a reload");
        assert_eq!(r["restored"]["answers"], p["answers"], "the answers survive a reload");
        assert!(
            r["link"]["href"].as_str().unwrap().starts_with("blob:")
                && r["link"]["download"].as_str().unwrap().ends_with(".jsonl"),
            "{}",
            r["link"]
        );
    }
    let file = |name: &str| files_dir.join(format!("{name}.jsonl"));
    let first: Value =
        serde_json::from_str(fs_err::read_to_string(file("ada")).unwrap().lines().next().unwrap())
            .unwrap();
    assert_eq!(
        (
            first["reviewer"].as_str(),
            first["release_sha256"].as_str(),
            first["draw"]["seed"].as_u64()
        ),
        (Some("ada"), data["release_sha256"].as_str(), Some(7))
    );

    // Two reviewers: Cohen's κ; the problems they disagree on, listed.
    let two = [file("ada"), file("bob")];
    let review = report(&b.release, &two, &tmp.path().join("two"), &[]);
    against_reference(&review, &two);
    assert!(
        review["questions"][0]["cohen_kappa"].is_number()
            && review["questions"][0]["fleiss_kappa"].is_null()
    );
    let expected: Vec<(String, &str)> = ids
        .iter()
        .enumerate()
        .flat_map(|(i, id)| {
            QUESTIONS
                .iter()
                .enumerate()
                .filter(move |(q, _)| answer(0, i, *q) != answer(1, i, *q))
                .map(move |(_, k)| (id.clone(), *k))
        })
        .collect();
    let listed: Vec<(String, &str)> = review["disagreements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["problem_id"].as_str().unwrap().to_owned(), d["question"].as_str().unwrap()))
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(listed, expected);
    let md = fs_err::read_to_string(tmp.path().join("two/review.md")).unwrap();
    assert!(
        md.contains(&format!("- `{}` {}", expected[0].0, expected[0].1))
            && md.contains("ada: checked by hand"),
        "{md}"
    );

    // Three reviewers, one leaving answers out: Fleiss' κ and α with missing answers.
    let three = [file("ada"), file("bob"), file("cyd")];
    let review = report(&b.release, &three, &tmp.path().join("three"), &[]);
    against_reference(&review, &three);
    assert!(
        review["questions"][0]["fleiss_kappa"].is_number()
            && review["questions"][0]["fleiss_items"].as_u64() < Some(6)
    );

    // Recorded: the card gains its section, the MANIFEST the card's checksum; data untouched.
    let copy = tmp.path().join("releases/v202503");
    copy_tree(&b.release, &copy);
    let before = tree_sha256(&copy);
    let recorded = report(&copy, &two, &tmp.path().join("releases/reviews/v202503"), &["--record"]);
    let card = fs_err::read_to_string(copy.join("README.md")).unwrap();
    assert!(
        card.contains("## Human validation") && card.contains("2 reviewer(s) (ada, bob)"),
        "{card}"
    );
    let manifest: Value =
        serde_json::from_str(&fs_err::read_to_string(copy.join("MANIFEST.json")).unwrap()).unwrap();
    assert_eq!(
        manifest["files"]["README.md"]["sha256"].as_str().unwrap(),
        coreb_base::hashing::sha256_file(&copy.join("README.md")).unwrap()
    );
    let after = tree_sha256(&copy);
    let data_files = |t: &[(String, String)]| {
        t.iter()
            .filter(|(p, _)| p != "README.md" && p != "MANIFEST.json")
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(data_files(&after), data_files(&before), "a data file changed");
    assert_eq!(
        recorded["published_sha256"].as_str().unwrap(),
        coreb_base::hashing::sha256_file(&copy.join("MANIFEST.json")).unwrap()
    );
    // The answers still belong to the release once its card is re-published, once only.
    let again = report(&copy, &two, &tmp.path().join("releases/reviews/v202503"), &["--record"]);
    assert_eq!(again["release_sha256"], recorded["release_sha256"]);
    assert_eq!(
        fs_err::read_to_string(copy.join("README.md"))
            .unwrap()
            .matches("## Human validation")
            .count(),
        1
    );
}

#[test]
fn the_same_seed_writes_the_same_folder_byte_for_byte() {
    let b = built();
    let tmp = tempfile::tempdir().unwrap();
    page(&b.release, &b.build, "5", "11", &tmp.path().join("a"));
    page(&b.release, &b.build, "5", "11", &tmp.path().join("b"));
    assert_eq!(tree_sha256(&tmp.path().join("a")), tree_sha256(&tmp.path().join("b")));
    let ids = |dir: &str| {
        page_data(&fs_err::read_to_string(tmp.path().join(dir).join("index.html")).unwrap())["ids"]
            .clone()
    };
    let others: std::collections::BTreeSet<String> = (0..6)
        .map(|s| {
            let dir = format!("s{s}");
            page(&b.release, &b.build, "5", &s.to_string(), &tmp.path().join(&dir));
            ids(&dir).to_string()
        })
        .collect();
    assert!(others.len() > 1, "the seed does not change the draw");
}

#[test]
fn a_file_of_another_release_or_another_draw_is_refused() {
    let b = built();
    let tmp = tempfile::tempdir().unwrap();
    page(&b.release, &b.build, "4", "3", &tmp.path().join("page"));
    let data = page_data(&fs_err::read_to_string(tmp.path().join("page/index.html")).unwrap());
    let line = |problem: &Value, question: &str, sha: &str, seed: u64| {
        serde_json::json!({"format": "coreb-review/1", "release": "v202503", "release_sha256": sha, "draw": {"seed": seed, "sample": 4, "ids_sha256": data["draw"]["ids_sha256"]},
            "reviewer": "ada", "problem_id": problem, "question": question, "answer": "yes", "note": ""})
        .to_string()
    };
    let sha = data["release_sha256"].as_str().unwrap();
    let write =
        |name: &str, lines: Vec<String>| written(tmp.path().join(name), lines.join("\n") + "\n");
    let good: Vec<String> = QUESTIONS.iter().map(|q| line(&data["ids"][0], q, sha, 3)).collect();
    let ok = write("ok.jsonl", good.clone());
    // `coreb review report` of `files` into `<tmp>/<out>`.
    let report = |files: &[&Path], out: &str| {
        let mut cmd = coreb();
        cmd.args(["review", "report"]).arg(&b.release).args(files);
        run(cmd.arg("--out").arg(tmp.path().join(out)))
    };
    let refused = |files: &[&Path], out: &str, needle: String| {
        let o = report(files, out);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && err.contains(&needle), "{err}");
    };
    assert!(report(&[&ok], "out").status.success());

    let mut other_release = good.clone();
    other_release[2] = line(&data["ids"][0], "disguise", &"0".repeat(64), 3);
    let f = write("other-release.jsonl", other_release);
    refused(&[&f], "out2", format!("`{}`:3: an answer about another release", f.display()));

    let other_draw = write("other-draw.jsonl", vec![line(&data["ids"][1], "intent", sha, 4)]);
    let needle = format!("`{}`:1: another draw (seed 4", other_draw.display());
    refused(&[&ok, &other_draw], "out3", needle);
    assert!(!tmp.path().join("out3/review.json").exists(), "nothing written on a refusal");
}

#[test]
fn hostile_statements_and_code_show_as_text_and_run_nothing() {
    let b = built();
    let tmp = tempfile::tempdir().unwrap();
    let build = tmp.path().join("build");
    copy_tree(&b.build.join("artifacts"), &build.join("artifacts"));
    // Plant markup in every rewritten statement and reference solution, as an LLM could write.
    let payload = "</script><script>window.pwned = 'script'</script><img src=x onerror=\"window.pwned = 'img'\"> & done";
    let rewrite = build.join("artifacts/rewrite");
    let path = rewrite.join("rewritten.jsonl");
    let lines: Vec<String> = fs_err::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| {
            let mut p: Value = serde_json::from_str(l).unwrap();
            p["statement"] = Value::from(format!("{}\n{payload}", p["statement"].as_str().unwrap()));
            p["reference"] = serde_json::json!({"model": "m", "original": "pass", "adapted": format!("print('<script>window.pwned = 1</script>')  # {payload}")});
            p.to_string()
        })
        .collect();
    fs_err::write(&path, lines.join("\n") + "\n").unwrap();
    let record_path = rewrite.join("record.json");
    let mut record: Value =
        serde_json::from_str(&fs_err::read_to_string(&record_path).unwrap()).unwrap();
    record["outputs"]["rewritten"]["sha256"] =
        Value::from(coreb_base::hashing::sha256_file(&path).unwrap());
    fs_err::write(&record_path, record.to_string()).unwrap();

    page(&b.release, &build, "3", "1", &tmp.path().join("page"));
    let html = fs_err::read_to_string(tmp.path().join("page/index.html")).unwrap();
    assert_eq!(html.matches("<script").count(), 2, "only the page's own two script elements");
    let v = browser(&[
        "--page".as_ref(),
        tmp.path().join("page/index.html").as_os_str(),
        "--xss".as_ref(),
    ]);
    let xss = &v["xss"];
    assert_eq!(xss["pwned"], Value::Null, "the payload ran");
    assert_eq!((xss["images"].as_u64(), xss["scripts"].as_u64()), (Some(0), Some(2)));
    let shown = xss["text"].as_str().unwrap();
    assert!(
        shown.contains("<img src=x onerror=\"window.pwned = 'img'\"> & done")
            && shown.contains("print('<script>window.pwned = 1</script>')"),
        "the payload is not shown as text"
    );
}

/// The sample's manifest with its paths made absolute and `extra` appended, at `path`.
fn sample_manifest_with(path: &Path, extra: &str) -> PathBuf {
    let text = fs_err::read_to_string(root().join("manifests/sample.toml")).unwrap();
    fs_err::write(path, text.replace("\"../", &format!("\"{}/", root().display())) + extra)
        .unwrap();
    path.to_owned()
}

#[test]
fn the_review_gate_refuses_to_publish_below_the_recorded_review_and_publishes_at_it() {
    let b = built();
    let tmp = tempfile::tempdir().unwrap();
    // The sample's recorded review (made-up answers of two example reviewers: 10 problems,
    // intent 19 "yes" of 20 = 0.95), beside the releases this build publishes into.
    let releases = tmp.path().join("releases");
    copy_tree(&root().join("releases/sample/reviews"), &releases.join("reviews"));
    let figures: Value = serde_json::from_str(
        &fs_err::read_to_string(releases.join("reviews/v202503/review.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        (
            figures["figures"]["reviewed"].as_u64(),
            figures["figures"]["intent_yes"].as_u64(),
            figures["figures"]["intent_answers"].as_u64()
        ),
        (Some(10), Some(19), Some(20))
    );
    // The built sample's stages, so that only `release` runs again.
    let build = tmp.path().join("build");
    copy_tree(&b.build, &build);
    let publish = releases.join("v202503");
    let build_with = |name: &str, gate: &str| {
        let manifest =
            sample_manifest_with(&tmp.path().join(name), &format!("\n[gates]\nreview = {gate}\n"));
        run(coreb()
            .arg("build")
            .arg(manifest)
            .arg("--output-dir")
            .arg(&build)
            .arg("--publish-dir")
            .arg(&publish))
    };
    for (name, gate, threshold) in [
        ("few.toml", "{ min_reviewed = 11, min_intent = 0.9 }", "≥ 11 reviewed, intent ≥ 0.90"),
        ("strict.toml", "{ min_reviewed = 10, min_intent = 0.96 }", "≥ 10 reviewed, intent ≥ 0.96"),
    ] {
        let out = build_with(name, gate);
        assert_eq!(out.status.code(), Some(1), "{name}: {}", text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("release `v202503` not published")
                && err.contains("check `review` failed"),
            "{name}: {err}"
        );
        assert!(
            err.contains("10 problems reviewed, intent kept 0.9500 (19 of 20)")
                && err.contains(threshold),
            "{name}: {err}"
        );
        assert!(!publish.exists(), "{name}: something was published");
    }
    let out = build_with("at.toml", "{ min_reviewed = 10, min_intent = 0.95 }");
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        publish.join("MANIFEST.json").is_file()
            && String::from_utf8_lossy(&out.stderr).contains("all release gates passed"),
        "{}",
        text(&out)
    );
}

#[test]
fn the_committed_sample_card_shows_its_recorded_review_and_a_rebuild_keeps_it() {
    let b = built();
    let committed = root().join("releases/sample/v202503");
    let card = fs_err::read_to_string(committed.join("README.md")).unwrap();
    let section =
        fs_err::read_to_string(root().join("releases/sample/reviews/v202503/card.md")).unwrap();
    assert!(
        card.contains(section.trim_end()) && section.starts_with("## Human validation"),
        "{card}"
    );
    // The build (with `--publish-dir` elsewhere) publishes the same card and MANIFEST.
    same_release_as(&committed, &b.release, "the sample built with its recorded review");
    let review: Value = serde_json::from_str(
        &fs_err::read_to_string(root().join("releases/sample/reviews/v202503/review.json"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        review["published_sha256"].as_str().unwrap(),
        coreb_base::hashing::sha256_file(&committed.join("MANIFEST.json")).unwrap()
    );
    // The recorded review is pinned to the sample's data (not to its MANIFEST, which records
    // the machine's toolchain versions).
    let manifest =
        coreb_data::releases::ReleaseManifest::read(&committed.join("MANIFEST.json")).unwrap();
    assert_eq!(review["data_sha256"].as_str().unwrap(), manifest.data_sha256());
    // A review of other data (here another manifest, and other data reviewed) is not shown.
    let tmp = tempfile::tempdir().unwrap();
    let releases = tmp.path().join("releases");
    copy_tree(&root().join("releases/sample/reviews"), &releases.join("reviews"));
    let json = releases.join("reviews/v202503/review.json");
    let other = fs_err::read_to_string(&json)
        .unwrap()
        .replace(review["release_sha256"].as_str().unwrap(), &"1".repeat(64))
        .replace(review["data_sha256"].as_str().unwrap(), &"2".repeat(64));
    fs_err::write(&json, other).unwrap();
    let manifest = sample_manifest_with(&tmp.path().join("m.toml"), "");
    let text_of = fs_err::read_to_string(&manifest).unwrap().replace(
        &format!("\"{}/releases/sample\"", root().display()),
        &format!("\"{}\"", releases.display()),
    );
    fs_err::write(&manifest, text_of).unwrap();
    let build = tmp.path().join("build");
    copy_tree(&b.build, &build);
    let out = run(coreb().arg("build").arg(&manifest).arg("--output-dir").arg(&build));
    assert!(out.status.success(), "{}", text(&out));
    stderr_has(&out, "is of another build of `v202503`");
    assert!(
        !fs_err::read_to_string(releases.join("v202503/README.md"))
            .unwrap()
            .contains("## Human validation")
    );
}
