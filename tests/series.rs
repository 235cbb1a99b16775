//! Issue #32: releases that continue the published CoREB series. The sample, built with every
//! composition switch set to the series' behaviour, against the CoREB authors' own dataset
//! maker (`QueryCorpusDatasetMaker` of the PyPI package `coreb` 0.1.0, run unmodified by
//! `tests/python/series_conformance.py` on the same build): the same queries, positives and
//! hard-negative candidates subtask by subtask but for the maker's listed defects; the search
//! cap; and a definition set back to coreb's earlier one is caught.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{coreb, python, root, run, text, written};

/// The sample manifest with absolute paths, building into `dir`, with `qrels` lines added to
/// `[stages.qrels]`, and the two checks a release with the series' constrained texts fails by
/// design waived.
fn manifest(dir: &Path, name: &str, qrels: &str) -> PathBuf {
    let sample = fs_err::read_to_string(root().join("manifests/sample.toml"))
        .unwrap()
        .replace("\"../", &format!("\"{}/", root().display()));
    let mut text = String::new();
    for line in sample.lines() {
        let line = match line.split(" = ").next() {
            Some("output_dir") => format!("output_dir = \"{}\"", dir.join("build").display()),
            Some("releases_dir") => format!("releases_dir = \"{}\"", dir.join(name).display()),
            _ => line.to_owned(),
        };
        text.push_str(&line);
        text.push('\n');
        if line == "[stages.qrels]" {
            text.push_str(qrels);
        }
    }
    assert!(text.contains(qrels), "no [stages.qrels] in the sample manifest");
    text.push_str("\n[gates]\nwaive = [\"language_named\", \"duplicate_texts\"]\n");
    written(dir.join(format!("{name}.toml")), text)
}

/// Build `manifest` (into the shared build directory: only `qrels` and `release` differ
/// between the manifests) and return its release.
fn build(manifest: &Path, dir: &Path, name: &str) -> PathBuf {
    let out = run(coreb().arg("build").arg(manifest));
    assert!(out.status.success(), "{}", text(&out));
    dir.join(name).join("v202503")
}

/// Run the conformance script; its report and whether it passed.
fn conformance(
    dir: &Path,
    release: &Path,
    work: &str,
    cap: usize,
    uncapped: Option<&Path>,
) -> (Value, std::process::Output) {
    let mut cmd = python();
    cmd.arg(root().join("tests/python/series_conformance.py"))
        .arg(release)
        .arg(dir.join("build/artifacts"))
        .arg(dir.join(work))
        .arg(cap.to_string());
    if let Some(u) = uncapped {
        cmd.arg(u);
    }
    cmd.env("HF_HUB_OFFLINE", "1").env("TRANSFORMERS_OFFLINE", "1").env("HF_HOME", dir.join("hf"));
    let out = cmd.output().unwrap();
    let report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("a JSON report on stdout: {e}\n{}", text(&out)));
    (report, out)
}

#[test]
fn the_series_composition_matches_the_authors_maker_but_for_its_listed_defects() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Every switch at the series' behaviour; the cap above the sample's counts.
    let series = "constrained_text = \"same\"\nmax_queries_per_type = 1000\n";
    let release = build(&manifest(d, "series", series), d, "series");
    let (report, out) = conformance(d, &release, "maker", 1000, None);
    assert!(out.status.success(), "{}", text(&out));
    let counts = &report["counts"]["queries"];
    for task in ["text2code", "code2code", "code2text"] {
        assert_eq!(
            counts[task]["coreb"], counts[task]["maker"],
            "{task}: query counts per subtask"
        );
    }
    // The sample's shape: 10 problems solved in five languages.
    assert_eq!(counts["text2code"]["coreb"]["search_any"], 30);
    assert_eq!(counts["code2code"]["coreb"]["cross_lang"], 29);
    assert_eq!(counts["code2text"]["coreb"]["canonical_retro_any"], 10);
    // The listed defects are there, and nothing else differs.
    let listed = &report["listed_differences"];
    assert!(listed["search_per_language_variant"].as_u64().unwrap() > 0, "{report}");
    assert!(listed["cross_lang_earlier_translations"].as_u64().unwrap() > 0, "{report}");
    let draws = &report["counts"]["pooled_draws"];
    assert!(
        draws["coreb"].as_u64().unwrap() > 0 && draws["maker"].as_u64().unwrap() > 0,
        "both draw hard negatives from the pooled tiers: {draws}"
    );
    let uncapped = d.join("uncapped.json");
    fs_err::write(&uncapped, serde_json::to_vec(&report).unwrap()).unwrap();

    // The cap: every search subtask holds min(cap, candidates); the maker, sampling its
    // dropped per-language keys with the rest, keeps fewer real `any` queries.
    let capped = build(
        &manifest(d, "capped", "constrained_text = \"same\"\nmax_queries_per_type = 20\n"),
        d,
        "capped",
    );
    let (report, out) = conformance(d, &capped, "maker-capped", 20, Some(&uncapped));
    assert!(out.status.success(), "{}", text(&out));
    let any = &report["capped"]["search_any"];
    assert_eq!(
        (any["candidates"].as_u64(), any["coreb"].as_u64()),
        (Some(30), Some(20)),
        "{report}"
    );
    assert!(any["maker"].as_u64().unwrap() < 20, "{report}");

    // `profile = "coreb"` rebuilds the sample as coreb composed it before it followed the
    // series: every data file of that release, byte for byte (its sha256s are a fixture; only
    // the MANIFEST, which records the switches, the card, and the regeneration kit, which
    // quotes the build manifest, differ).
    let earlier = build(&manifest(d, "earlier", "profile = \"coreb\"\n"), d, "earlier");
    let want =
        fs_err::read_to_string(root().join("tests/fixtures/sample/coreb-profile-v202503.sha256"))
            .unwrap();
    let got: Vec<(String, String)> = crate::support::tree_sha256(&earlier)
        .into_iter()
        .filter(|(f, _)| {
            f != "MANIFEST.json" && f != "README.md" && !f.starts_with("regeneration/")
        })
        .collect();
    let mut want: Vec<(String, String)> = want
        .lines()
        .map(|l| l.split_once("  ").map(|(h, f)| (f.to_owned(), h.to_owned())).unwrap())
        .collect();
    want.sort();
    assert_eq!(got, want, "profile = \"coreb\" no longer rebuilds the earlier sample release");

    // `code_document = "program"`: a functional problem's documents are whole programs, the
    // solution inside the judge's driver (a `main` reading stdin), as the series' are; a stdin
    // problem's documents do not change.
    let programs = build(&manifest(d, "programs", "code_document = \"program\"\n"), d, "programs");
    let problems =
        coreb_data::tables::ProblemReader::read_all(&programs.join("problems.parquet")).unwrap();
    let functional: std::collections::BTreeSet<String> =
        problems.iter().filter(|p| p.is_functional()).map(|p| p.id.to_string()).collect();
    let code = |release: &Path| -> std::collections::BTreeMap<String, (String, String)> {
        fs_err::read_to_string(release.join("text2code/corpus.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .map(|d| {
                (
                    d["_id"].as_str().unwrap().to_owned(),
                    (
                        d["problem_id"].as_str().unwrap().to_owned(),
                        d["text"].as_str().unwrap().to_owned(),
                    ),
                )
            })
            .collect()
    };
    let (whole, solutions) = (code(&programs), code(&release));
    assert_eq!(whole.keys().collect::<Vec<_>>(), solutions.keys().collect::<Vec<_>>());
    let mut wrapped = 0;
    for (id, (problem, text)) in &whole {
        let solution = &solutions[id].1;
        if functional.contains(problem) {
            assert!(
                text.len() > solution.len()
                    && (text.contains(solution.trim()) || text.contains("main")),
                "{id}: not a whole program:\n{text}"
            );
            wrapped += 1;
        } else {
            assert_eq!(text, solution, "{id}: a stdin problem's document changed");
        }
    }
    assert!(wrapped >= 50, "{wrapped} functional documents");

    // A definition set back to coreb's earlier one is caught, by subtask.
    let anchored = build(
        &manifest(d, "anchored", &format!("{series}cross_lang = \"anchor\"\n")),
        d,
        "anchored",
    );
    let (_, out) = conformance(d, &anchored, "maker-anchored", 1000, None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && stderr.contains("difference(s) the issue does not list")
            && stderr.contains("cross_lang"),
        "{}",
        text(&out)
    );
}
