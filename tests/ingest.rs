//! ingest, dedup and filter through the real binary on the LiveCodeBench rows of tests/fixtures/data.

use std::path::{Path, PathBuf};

use coreb_data::problem::Problem;
use coreb_data::tables::{ProblemReader, ProblemWriter};
use serde_json::Value;

use crate::support::{coreb, fixture_data, run, text};

const LCB: &str = "lcb/lcb_v6_examples.jsonl";

/// A manifest in `dir` reading `source`, with extra TOML appended.
fn manifest(dir: &Path, source: &Path, extra: &str) -> PathBuf {
    let path = dir.join("m.toml");
    let body = format!(
        "version = \"v202504\"\noutput_dir = \"build\"\nreleases_dir = \"releases\"\n\n[[sources]]\nname = \"lcb\"\nurl = \"{}\"\n{extra}",
        source.display()
    );
    fs_err::write(&path, body).unwrap();
    path
}

fn stage_json(stage: &str, manifest: &Path) -> Value {
    let out = run(coreb().args([stage, "--json"]).arg(manifest));
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 1, "one JSON object: {stdout}");
    serde_json::from_str(&stdout).unwrap()
}

fn problems(dir: &Path, stage: &str) -> Vec<Problem> {
    ProblemReader::read_all(&dir.join("build/artifacts").join(stage).join("problems.parquet"))
        .unwrap()
}

/// The shared rows, parsed independently of coreb.
fn raw_rows() -> Vec<Value> {
    fs_err::read_to_string(fixture_data(LCB))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn ingests_all_1044_problems_with_their_tests() {
    let dir = tempfile::tempdir().unwrap();
    let m = manifest(dir.path(), &fixture_data(LCB), "");
    let summary = stage_json("ingest", &m);
    assert_eq!(summary["stage"], "ingest");
    assert_eq!(summary["rows_in"], 1044);
    assert_eq!(summary["rows_out"], 1044);
    assert_eq!(summary["rejected"], 0);

    let got = problems(dir.path(), "ingest");
    let raw = raw_rows();
    assert_eq!(got.len(), 1044);
    for (p, r) in got.iter().zip(&raw) {
        assert_eq!(p.id.as_str(), format!("lcb_{}", r["question_id"].as_str().unwrap()));
        let public: Vec<Value> =
            serde_json::from_str(r["public_test_cases"].as_str().unwrap()).unwrap();
        assert_eq!(p.public_tests.len(), public.len(), "{}", p.id);
        assert!(!p.public_tests.is_empty(), "{}", p.id);
        assert_eq!(p.public_tests[0].input, public[0]["input"].as_str().unwrap());
        assert_eq!(p.public_tests[0].output, public[0]["output"].as_str().unwrap());
        // The shared file's private tests are encoded empty lists.
        assert!(p.private_tests.is_empty());
        assert_eq!(
            p.func_name.is_some(),
            p.platform == coreb_data::problem::Platform::Leetcode,
            "{}",
            p.id
        );
    }
}

#[test]
fn window_selects_contest_dates() {
    let dir = tempfile::tempdir().unwrap();
    let m = manifest(
        dir.path(),
        &fixture_data(LCB),
        "[window]\nstart = \"2025-01-01\"\nend = \"2025-04-30\"\n",
    );
    let summary = stage_json("ingest", &m);
    let expected = raw_rows()
        .iter()
        .filter(|r| {
            let d = &r["contest_date"].as_str().unwrap()[..10];
            ("2025-01-01"..="2025-04-30").contains(&d)
        })
        .count();
    assert!(expected > 100);
    assert_eq!(summary["rows_out"], expected as u64);
    assert_eq!(summary["out_of_window"], 1044 - expected as u64);
    let got = problems(dir.path(), "ingest");
    assert_eq!(got.len(), expected);
    assert!(got.iter().all(|p| ("2025-01-01"..="2025-04-30").contains(&p.contest_day())));
}

/// The shared file plus planted duplicates: a duplicated row, a whitespace variant, a case
/// variant and a problem re-published under another id.
#[test]
fn dedup_catches_planted_duplicates_and_reports_clusters() {
    let dir = tempfile::tempdir().unwrap();
    let original = fs_err::read_to_string(fixture_data(LCB)).unwrap();
    let lines: Vec<&str> = original.lines().collect();
    let mut planted: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
    let row =
        |i: usize| -> serde_json::Map<String, Value> { serde_json::from_str(lines[i]).unwrap() };

    planted.push(lines[10].to_owned()); // duplicated row
    let mut ws = row(20);
    let content =
        ws["question_content"].as_str().unwrap().replace(' ', " \t ").replace('\n', "\n\n");
    ws["question_content"] = content.into();
    ws["question_id"] = "ws_variant".into();
    planted.push(Value::Object(ws).to_string());
    let mut case = row(30);
    case["question_content"] = case["question_content"].as_str().unwrap().to_uppercase().into();
    case["question_id"] = "case_variant".into();
    case["contest_date"] = "2030-01-01T00:00:00".into();
    planted.push(Value::Object(case).to_string());
    let mut reid = row(40);
    let c = reid["question_content"].as_str().unwrap().to_owned();
    reid["question_content"] = format!("{c}\nNote: this problem was re-published.").into();
    reid["question_id"] = "reidentified".into();
    reid["contest_date"] = "2030-02-01T00:00:00".into();
    planted.push(Value::Object(reid).to_string());

    let source = dir.path().join("planted.jsonl");
    fs_err::write(&source, planted.join("\n") + "\n").unwrap();
    let m = manifest(dir.path(), &source, "");
    let summary = stage_json("dedup", &m);
    assert_eq!(summary["rows_in"], 1048);
    assert_eq!(summary["rows_out"], 1044);
    assert_eq!(summary["duplicate_ids"], 1);
    assert_eq!(summary["exact_duplicates"], 1);
    assert_eq!(summary["near_duplicates"], 2);

    let kept = problems(dir.path(), "dedup");
    let ids: Vec<&str> = kept.iter().map(|p| p.id.as_str()).collect();
    for planted_id in ["lcb_ws_variant", "lcb_case_variant", "lcb_reidentified"] {
        assert!(!ids.contains(&planted_id), "{planted_id} kept");
    }
    let report: Value = serde_json::from_str(
        &fs_err::read_to_string(dir.path().join("build/artifacts/dedup/duplicates.json")).unwrap(),
    )
    .unwrap();
    let clusters = report["clusters"].as_array().unwrap();
    assert_eq!(clusters.len(), 4, "{report:#}");
    let id_of = |i: usize| format!("lcb_{}", row(i)["question_id"].as_str().unwrap());
    let find = |kept: &str| {
        clusters
            .iter()
            .find(|c| c["kept"] == kept)
            .unwrap_or_else(|| panic!("no cluster kept {kept}"))
    };
    assert_eq!(find(&id_of(10))["dropped"][0]["reason"], "duplicate_id");
    assert_eq!(find(&id_of(20))["dropped"][0]["reason"], "exact_duplicate");
    assert_eq!(find(&id_of(20))["dropped"][0]["id"], "lcb_ws_variant");
    assert_eq!(find(&id_of(30))["dropped"][0]["reason"], "near_duplicate");
    let reid = &find(&id_of(40))["dropped"][0];
    assert_eq!(
        (reid["id"].as_str(), reid["reason"].as_str()),
        (Some("lcb_reidentified"), Some("near_duplicate"))
    );
    assert!(reid["jaccard"].as_f64().unwrap() >= 0.7);
    assert_eq!(find(&id_of(40))["kept_because"], "earliest contest_date");
    assert_eq!(report["parameters"]["num_perm"], 128);
}

#[test]
fn problems_of_earlier_releases_are_not_published_again() {
    let dir = tempfile::tempdir().unwrap();
    // A release of the previous month holding three of the shared problems.
    let all = {
        let m = manifest(dir.path(), &fixture_data(LCB), "");
        stage_json("ingest", &m);
        problems(dir.path(), "ingest")
    };
    let release = dir.path().join("releases/v202503");
    fs_err::create_dir_all(&release).unwrap();
    let mut w = ProblemWriter::create(&release.join("problems.parquet")).unwrap();
    for p in &all[100..103] {
        w.write(p.clone()).unwrap();
    }
    w.finish().unwrap();
    // A later release must not count when this one is (re)built.
    let later = dir.path().join("releases/v202506");
    fs_err::create_dir_all(&later).unwrap();
    fs_err::copy(release.join("problems.parquet"), later.join("problems.parquet")).unwrap();

    let m = manifest(dir.path(), &fixture_data(LCB), "");
    let summary = stage_json("dedup", &m);
    assert_eq!(summary["in_earlier_release"], 3);
    assert_eq!(summary["rows_out"], 1041);
    let report: Value = serde_json::from_str(
        &fs_err::read_to_string(dir.path().join("build/artifacts/dedup/duplicates.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(report["earlier_releases"].as_array().unwrap().len(), 1);
    assert_eq!(report["clusters"][0]["dropped"][0]["release"], "v202503");
}

#[test]
fn filter_reports_every_rejection() {
    let dir = tempfile::tempdir().unwrap();
    let m =
        manifest(dir.path(), &fixture_data(LCB), "[stages.filter]\nmin_statement_chars = 900\n");
    let summary = stage_json("filter", &m);
    let rejected = summary["rejected"].as_u64().unwrap();
    assert!(rejected > 10, "{summary}");
    assert_eq!(summary["rows_out"].as_u64().unwrap() + rejected, 1044);
    let report =
        fs_err::read_to_string(dir.path().join("build/artifacts/filter/rejections.jsonl")).unwrap();
    assert_eq!(report.lines().count() as u64, rejected);
    let first: Value = serde_json::from_str(report.lines().next().unwrap()).unwrap();
    assert_eq!(first["rejection"]["reason"], "too_short");
    assert!(
        problems(dir.path(), "filter").iter().all(|p| p.question_content.chars().count() >= 900)
    );
}

#[test]
fn unchanged_stages_are_skipped_and_changed_ones_rerun() {
    let dir = tempfile::tempdir().unwrap();
    let m = manifest(dir.path(), &fixture_data(LCB), "");
    let build = |m: &Path| {
        let out = run(coreb().args(["build", "--until", "filter", "--json"]).arg(m));
        assert!(out.status.success(), "{}", text(&out));
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .collect::<Vec<_>>()
    };
    let first = build(&m);
    assert_eq!(first.len(), 4);
    assert!(first.iter().all(|s| s["skipped"] == false));
    let second = build(&m);
    assert_eq!(
        second.iter().map(|s| s["skipped"].as_bool().unwrap()).collect::<Vec<_>>(),
        [false, true, true, true]
    );
    let m = manifest(dir.path(), &fixture_data(LCB), "[stages.filter]\nmin_tests = 2\n");
    let third = build(&m);
    assert_eq!(
        third.iter().map(|s| s["skipped"].as_bool().unwrap()).collect::<Vec<_>>(),
        [false, true, true, false]
    );
}

/// A first build hashes a local source while ingesting it, reading it once; a rerun hashes
/// it first, so that an unchanged file skips decoding. Both ways record the same stages.
#[test]
fn a_first_build_hashes_its_local_source_as_it_ingests_it_and_records_what_fetch_would() {
    let record = |dir: &Path, stage: &str| -> Value {
        serde_json::from_str(
            &fs_err::read_to_string(dir.join("build/artifacts").join(stage).join("record.json"))
                .unwrap(),
        )
        .unwrap()
    };
    let lines: Vec<String> =
        fs_err::read_to_string(fixture_data(LCB)).unwrap().lines().map(str::to_owned).collect();
    let rerun = tempfile::tempdir().unwrap();
    let source = rerun.path().join("rows.jsonl");
    fs_err::write(&source, lines[..300].join("\n") + "\n").unwrap();
    let m = manifest(rerun.path(), &source, "");
    stage_json("ingest", &m);
    let first = record(rerun.path(), "fetch");
    assert_eq!(
        first["summary"]["sources"][0]["sha256"],
        coreb_base::hashing::sha256_file(&source).unwrap()
    );
    assert_eq!(first["summary"]["sources"][0]["bytes"], fs_err::metadata(&source).unwrap().len());
    // Unchanged: hashed first, found, nothing decoded.
    assert_eq!(stage_json("ingest", &m)["skipped"], true);
    // Changed: hashed first, not found, decoded from the fetch record.
    fs_err::write(&source, lines[..500].join("\n") + "\n").unwrap();
    assert_eq!(stage_json("ingest", &m)["rows_out"], 500);

    // The same file in a fresh build: hashed while it is ingested, the same records.
    let fresh = tempfile::tempdir().unwrap();
    let mut out = run(coreb().args(["ingest", "--json"]).arg(manifest(fresh.path(), &source, "")));
    assert!(out.status.success(), "{}", text(&out));
    for stage in ["fetch", "ingest"] {
        let (a, b) = (record(rerun.path(), stage), record(fresh.path(), stage));
        assert_eq!(
            (&a["key"], &a["summary"], &a["outputs"]),
            (&b["key"], &b["summary"], &b["outputs"]),
            "{stage}"
        );
    }

    // A pinned checksum that the file does not have: fetch's error, and no ingest recorded.
    let pinned = tempfile::tempdir().unwrap();
    let pin = format!("sha256 = \"{}\"\n", "0".repeat(64));
    out = run(coreb().args(["ingest"]).arg(manifest(pinned.path(), &source, &pin)));
    assert!(!out.status.success());
    assert!(text(&out).contains("checksum mismatch"), "{}", text(&out));
    assert!(!pinned.path().join("build/artifacts/ingest/record.json").exists());
    assert!(!pinned.path().join("build/artifacts/fetch/record.json").exists());
}

#[test]
fn same_input_same_bytes_whatever_the_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let m = manifest(dir.path(), &fixture_data(LCB), "");
    let mut digests = Vec::new();
    for jobs in ["1", "2", "5"] {
        let _ = fs_err::remove_dir_all(dir.path().join("build"));
        let out = run(coreb().args(["build", "--until", "filter", "--jobs", jobs]).arg(&m));
        assert!(out.status.success(), "{}", text(&out));
        let files: Vec<String> = [
            "ingest/problems.parquet",
            "dedup/problems.parquet",
            "dedup/duplicates.json",
            "filter/problems.parquet",
        ]
        .iter()
        .map(|f| {
            coreb_base::hashing::sha256_file(&dir.path().join("build/artifacts").join(f)).unwrap()
        })
        .collect();
        digests.push(files);
    }
    assert_eq!(digests[0], digests[1]);
    assert_eq!(digests[0], digests[2]);
}

/// Workers decode rows out of order; what they report must not depend on which finished first.
#[test]
fn the_first_bad_row_in_input_order_is_reported_whatever_the_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines = shared_lines(300);
    // A late bad row that fails fast, behind an early one that needs its whole row parsed.
    lines[240] = "not json at all".into();
    lines[60] = lines[60].replace("\"difficulty\"", "\"hardness\"");
    lines[150] = lines[150].replace("\"platform\": \"", "\"platform\": \"not-");
    for jobs in ["1", "3", "8"] {
        let (ok, stderr) = ingest_lines_with(dir.path(), &lines, "", &["--jobs", jobs]);
        assert!(!ok);
        assert!(stderr.contains("bad.jsonl:61: `difficulty`"), "jobs = {jobs}: {stderr}");
        let (ok, _) = ingest_lines_with(
            dir.path(),
            &lines,
            "[stages.ingest]\non_bad_row = \"skip\"\n",
            &["--jobs", jobs],
        );
        assert!(ok);
        let report =
            fs_err::read_to_string(dir.path().join("build/artifacts/ingest/rejections.jsonl"))
                .unwrap();
        let listed: Vec<u64> = report
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap()["line"].as_u64().unwrap())
            .collect();
        assert_eq!(listed, [61, 151, 241], "jobs = {jobs}");
        let kept = problems(dir.path(), "ingest");
        let expected: Vec<String> = raw_rows()
            .iter()
            .take(300)
            .enumerate()
            .filter(|(i, _)| ![60, 150, 240].contains(i))
            .map(|(_, r)| r["question_id"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            kept.iter().map(|p| p.question_id.clone()).collect::<Vec<_>>(),
            expected,
            "jobs = {jobs}"
        );
    }
}

/// Write `lines` as a source, ingest it, return (success, stderr).
fn ingest_lines(dir: &Path, lines: &[String], extra: &str) -> (bool, String) {
    ingest_lines_with(dir, lines, extra, &[])
}

/// [`ingest_lines`] with more arguments (`--jobs N`).
fn ingest_lines_with(dir: &Path, lines: &[String], extra: &str, args: &[&str]) -> (bool, String) {
    let source = dir.join("bad.jsonl");
    fs_err::write(&source, lines.join("\n") + "\n").unwrap();
    let m = manifest(dir, &source, extra);
    let out = run(coreb().arg("ingest").args(args).arg(&m));
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn shared_lines(n: usize) -> Vec<String> {
    fs_err::read_to_string(fixture_data(LCB)).unwrap().lines().take(n).map(str::to_owned).collect()
}

#[test]
fn bad_rows_name_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let good = shared_lines(3);
    let cases: Vec<(String, &str)> = vec![
        (good[1][..good[1].len() / 2].to_owned(), "EOF while parsing"),
        ("this is not json".to_owned(), ":2: `(line)`"),
        (good[1].replace("\"difficulty\"", "\"hardness\""), ":2: `difficulty`: missing field"),
        (
            good[1]
                .replace(
                    "\\\"testtype\\\": \\\"functional\\\"",
                    "\\\"testtype\\\": \\\"interactive\\\"",
                )
                .replace(
                    "\\\"testtype\\\": \\\"stdin\\\"",
                    "\\\"testtype\\\": \\\"interactive\\\"",
                ),
            ":2: `public_test_cases[0].testtype`: unknown testtype `interactive`",
        ),
    ];
    for (bad, expect) in cases {
        let lines = vec![good[0].clone(), bad, good[2].clone()];
        let (ok, stderr) = ingest_lines(dir.path(), &lines, "");
        assert!(!ok);
        assert!(
            stderr.contains("bad.jsonl") && stderr.contains(expect),
            "expected `{expect}` in:\n{stderr}"
        );
    }
    // Bad base64 / zlib / pickle in private_test_cases.
    let mut row: serde_json::Map<String, Value> = serde_json::from_str(&good[1]).unwrap();
    for (blob, expect) in [
        ("@@not-base64@@", "not JSON and not base64"),
        ("aGVsbG8gd29ybGQ=", "bad zlib data"),
        ("eJzLSM3JyQcABiwCFQ==", "bad pickle"),
    ] {
        row["private_test_cases"] = blob.into();
        let (ok, stderr) = ingest_lines(dir.path(), &[Value::Object(row.clone()).to_string()], "");
        assert!(!ok);
        assert!(stderr.contains(":1: `private_test_cases`") && stderr.contains(expect), "{stderr}");
    }
}

#[test]
fn skip_mode_lists_bad_rows_and_keeps_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines = shared_lines(5);
    lines[1] = "{\"truncated\": ".into();
    lines[3] = lines[3]
        .replace("\"platform\": \"leetcode\"", "\"platform\": \"topcoder\"")
        .replace("\"platform\": \"atcoder\"", "\"platform\": \"topcoder\"");
    let source = dir.path().join("rows.jsonl");
    fs_err::write(&source, lines.join("\n")).unwrap();
    let m = manifest(dir.path(), &source, "[stages.ingest]\non_bad_row = \"skip\"\n");
    let summary = stage_json("ingest", &m);
    assert_eq!(
        (summary["rows_in"].as_u64(), summary["rows_out"].as_u64(), summary["rejected"].as_u64()),
        (Some(5), Some(3), Some(2))
    );
    let report =
        fs_err::read_to_string(dir.path().join("build/artifacts/ingest/rejections.jsonl")).unwrap();
    let rows: Vec<Value> = report.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!((rows[0]["line"].as_u64(), rows[1]["line"].as_u64()), (Some(2), Some(4)));
    assert_eq!(rows[1]["field"], "platform");
}

#[test]
fn a_failed_run_loses_nothing_already_built() {
    let dir = tempfile::tempdir().unwrap();
    let good = shared_lines(4);
    let (ok, _) = ingest_lines(dir.path(), &good, "");
    assert!(ok);
    let table = dir.path().join("build/artifacts/ingest/problems.parquet");
    let before = coreb_base::hashing::sha256_file(&table).unwrap();
    let mut bad = good.clone();
    bad.push("{ broken".into());
    let (ok, stderr) = ingest_lines(dir.path(), &bad, "");
    assert!(!ok && stderr.contains("bad.jsonl:5"), "{stderr}");
    assert_eq!(coreb_base::hashing::sha256_file(&table).unwrap(), before);
    assert_eq!(ProblemReader::read_all(&table).unwrap().len(), 4);
}

#[test]
fn a_50_mb_field_is_ingested_and_a_limit_refuses_it_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let good = shared_lines(1);
    let mut row: serde_json::Map<String, Value> = serde_json::from_str(&good[0]).unwrap();
    let big_input = "7 ".repeat(25 << 20);
    let tests = serde_json::json!([{ "input": big_input, "output": "7\n", "testtype": "stdin" }])
        .to_string();
    assert!(tests.len() > 50 << 20);
    row["private_test_cases"] = tests.into();
    let lines = [Value::Object(row).to_string(), shared_lines(2)[1].clone()];
    let (ok, stderr) = ingest_lines(dir.path(), &lines, "");
    assert!(ok, "{stderr}");
    let got = problems(dir.path(), "ingest");
    assert_eq!(got[0].private_tests[0].input.len(), 50 << 20);
    assert_eq!(got.len(), 2);
    let (ok, stderr) =
        ingest_lines(dir.path(), &lines, "[stages.ingest]\nmax_line_bytes = 10000000\n");
    assert!(
        !ok && stderr.contains("bad.jsonl:1: `(line)`") && stderr.contains("max_line_bytes"),
        "{stderr}"
    );
}

#[test]
fn manifest_errors_name_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let m = manifest(dir.path(), &fixture_data(LCB), "[stages.dedup]\nshingles = 4\n");
    let out = run(coreb().arg("ingest").arg(&m));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("m.toml")
            && stderr.contains("line 9")
            && stderr.contains("unknown field `shingles`"),
        "{stderr}"
    );
    let m = manifest(dir.path(), &dir.path().join("missing.jsonl"), "");
    let out = run(coreb().arg("ingest").arg(&m));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("missing.jsonl"), "{stderr}");
}

#[test]
fn show_plan_prints_the_resolved_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let m =
        manifest(dir.path(), Path::new("data/../rows.jsonl"), "[stages.dedup]\nthreshold = 0.8\n");
    let out = run(coreb().args(["build", "--show-plan"]).arg(&m));
    assert!(out.status.success(), "{}", text(&out));
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    let root = fs_err::canonicalize(dir.path()).unwrap();
    assert_eq!(plan["output_dir"], root.join("build").display().to_string());
    assert_eq!(
        plan["sources"][0]["location"]["local"],
        root.join("rows.jsonl").display().to_string()
    );
    assert_eq!(plan["stages"]["dedup"]["threshold"], 0.8);
    assert_eq!(plan["stages"]["dedup"]["num_perm"], 128);
    assert_eq!(plan["stages"]["filter"]["language"], "eng");
    assert!(!root.join("build").exists(), "--show-plan runs nothing");
}
