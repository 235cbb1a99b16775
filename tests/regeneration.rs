//! Regeneration by anyone (issue 48): results know the release they were computed on (`coreb
//! eval --run` refuses a run of another release, `--allow-partial` scores the subset it
//! ranks, `coreb compare` and `coreb leaderboard` refuse to mix releases), audits and `coreb
//! programs` read the build that made the release, and the smaller fixes a new user ran into.
//!
//! A second release is the committed sample with every id renamed to `v202504` (its graded
//! Parquet qrels removed, so its BEIR qrels are read).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{coreb, root, run, stderr, stderr_has, stdout_has, text, written};

fn sample() -> PathBuf {
    root().join("releases/sample/v202503")
}

/// Copy a release, renaming `from_version` to `to_version` in every text file when asked; the
/// Parquet qrels are left out of a renamed copy (they hold the old ids), and its MANIFEST's
/// files list what the copy holds, so that the renamed copy is an intact release of its own
/// (`eval` and `compare` refuse a damaged one).
fn copy_release(from: &Path, to: &Path, rename: Option<(&str, &str)>) {
    copy_tree(from, to, rename);
    let manifest_path = to.join("MANIFEST.json");
    if rename.is_none() || !manifest_path.exists() {
        return;
    }
    let mut manifest: Value =
        serde_json::from_str(&fs_err::read_to_string(&manifest_path).unwrap()).unwrap();
    let files = manifest["files"].as_object_mut().unwrap();
    files.retain(|name, _| to.join(name).is_file());
    for (name, entry) in files.iter_mut() {
        let bytes = fs_err::read(to.join(name)).unwrap();
        *entry = serde_json::json!({
            "sha256": coreb_base::hashing::sha256_hex(&bytes),
            "bytes": bytes.len(),
        });
    }
    fs_err::write(&manifest_path, serde_json::to_string_pretty(&manifest).unwrap()).unwrap();
}

/// Copy a directory tree, renaming as [`copy_release`] does.
fn copy_tree(from: &Path, to: &Path, rename: Option<(&str, &str)>) {
    fs_err::create_dir_all(to).unwrap();
    for e in fs_err::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_tree(&p, &dest, rename);
        } else if let Some((old, new)) = rename {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if name.ends_with("_qrels.parquet") {
                continue;
            }
            match fs_err::read_to_string(&p) {
                Ok(t) => fs_err::write(&dest, t.replace(old, new)).unwrap(),
                Err(_) => drop(fs_err::copy(&p, &dest).unwrap()),
            }
        } else {
            fs_err::copy(&p, &dest).unwrap();
        }
    }
}

/// `coreb eval <dir> --json` (no bootstrap), which must succeed.
fn eval_json(dir: &Path, extra: &[&str]) -> Value {
    let out = run(coreb().arg("eval").arg(dir).args(["--resamples", "0", "--json"]).args(extra));
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// BM25's runs of every task of `release`, as one TREC run file at `path`.
fn bm25_run(release: &Path, path: &Path) {
    let out_dir = path.with_extension("d");
    let out =
        run(coreb().arg("eval").arg(release).args(["--resamples", "0", "--out"]).arg(&out_dir));
    assert!(out.status.success(), "{}", text(&out));
    let mut all = String::new();
    for task in ["code2code", "code2text", "text2code"] {
        all.push_str(&fs_err::read_to_string(out_dir.join(format!("{task}.run.trec"))).unwrap());
    }
    fs_err::write(path, all).unwrap();
}

fn ndcg10(summary: &Value) -> f64 {
    summary["at_k"]["ndcg"][2].as_f64().unwrap()
}

#[test]
fn eval_refuses_a_run_of_another_release_and_scores_the_subset_a_partial_run_ranks() {
    let tmp = tempfile::tempdir().unwrap();
    let other = tmp.path().join("v202504");
    copy_release(&sample(), &other, Some(("v202503", "v202504")));
    let (run_a, run_b) = (tmp.path().join("a.trec"), tmp.path().join("b.trec"));
    bm25_run(&sample(), &run_a);
    bm25_run(&other, &run_b);

    // The release's own run matches; its results name the release and its MANIFEST's sha256.
    let own = eval_json(&sample(), &["--run", run_a.to_str().unwrap()]);
    let sha = coreb_base::hashing::sha256_file(&sample().join("MANIFEST.json")).unwrap();
    assert_eq!(own["release"], serde_json::json!({ "version": "v202503", "manifest_sha256": sha }));
    assert!(
        own.get("run_coverage").is_none() || own["run_coverage"]["partial"] == false,
        "{}",
        own["run_coverage"]
    );

    // A run of the other release: refused, with the counts, before anything is written.
    let out_dir = tmp.path().join("refused");
    let out =
        run(coreb().arg("eval").arg(sample()).arg("--run").arg(&run_b).arg("--out").arg(&out_dir));
    assert!(!out.status.success(), "{}", text(&out));
    let err = stderr(&out);
    assert!(err.contains("ranks none of the") && err.contains("a run of another release"), "{err}");
    assert!(!out_dir.exists(), "a refused evaluation wrote `{}`", out_dir.display());
    // Even with `--allow-partial` there is nothing to score.
    let out =
        run(coreb().arg("eval").arg(sample()).arg("--run").arg(&run_b).arg("--allow-partial"));
    assert!(!out.status.success() && stderr(&out).contains("ranks none of the"), "{}", text(&out));

    // Half the text2code queries of the sample's run, plus the other release's lines.
    let run_a_text = fs_err::read_to_string(&run_a).unwrap();
    let t2c: Vec<&str> = run_a_text.lines().filter(|l| l.starts_with("t2c_")).collect();
    let mut qids: Vec<&str> = t2c.iter().map(|l| l.split(' ').next().unwrap()).collect();
    qids.dedup();
    let kept: Vec<&str> = qids.iter().step_by(2).copied().collect();
    let mut partial: String = t2c
        .iter()
        .filter(|l| kept.contains(&l.split(' ').next().unwrap()))
        .map(|l| format!("{l}\n"))
        .collect();
    let foreign = fs_err::read_to_string(&run_b)
        .unwrap()
        .lines()
        .find(|l| l.starts_with("t2c_"))
        .unwrap()
        .to_owned();
    partial.push_str(&foreign);
    partial.push('\n');
    let partial_run = tmp.path().join("partial.trec");
    fs_err::write(&partial_run, partial).unwrap();
    let task = sample().join("text2code");
    let out = run(coreb().arg("eval").arg(&task).arg("--run").arg(&partial_run));
    assert!(!out.status.success(), "{}", text(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("ranks {} of the {} queries", kept.len(), qids.len()))
            && err.contains("1 of its")
            && err.contains("--allow-partial"),
        "{err}"
    );

    // `--allow-partial` scores exactly the queries the run ranks, as the full run scores them.
    let v = eval_json(&task, &["--run", partial_run.to_str().unwrap(), "--allow-partial"]);
    assert_eq!(
        v["run_coverage"],
        serde_json::json!({ "matched": kept.len(), "queries": qids.len(), "unknown": 1, "partial": true })
    );
    let scored = &v["tasks"][0];
    assert_eq!(scored["overall"]["num_queries"].as_u64(), Some(kept.len() as u64));
    let full = eval_json(&task, &["--run", run_a.to_str().unwrap()]);
    let per_query = full["tasks"][0]["queries"].as_array().unwrap();
    let subset: Vec<f64> = per_query
        .iter()
        .filter(|q| kept.contains(&q["qid"].as_str().unwrap()))
        .map(|q| q["at_k"]["ndcg"][2].as_f64().unwrap())
        .collect();
    let mean = subset.iter().sum::<f64>() / subset.len() as f64;
    assert!(
        (ndcg10(&scored["overall"]) - mean).abs() < 1e-12,
        "{} vs {mean}",
        ndcg10(&scored["overall"])
    );
    // The count is in the human output too; and a partial run is never recorded.
    let out = run(coreb().arg("eval").arg(&task).arg("--run").arg(&partial_run).args([
        "--allow-partial",
        "--resamples",
        "0",
    ]));
    assert!(out.status.success(), "{}", text(&out));
    stdout_has(&out, &format!("{} of {} queries scored", kept.len(), qids.len()));
    let out = run(coreb().arg("eval").arg(&task).arg("--run").arg(&partial_run).args([
        "--allow-partial",
        "--record",
        "--model-name",
        "m",
    ]));
    assert!(!out.status.success() && stderr(&out).contains("--allow-partial"), "{}", text(&out));
}

#[test]
fn compare_refuses_results_of_two_releases_and_a_bare_beir_folder_records_none() {
    let tmp = tempfile::tempdir().unwrap();
    let other = tmp.path().join("v202504");
    copy_release(&sample(), &other, Some(("v202503", "v202504")));
    let results = |dir: &Path, name: &str, extra: &[&str]| -> PathBuf {
        let out_dir = tmp.path().join(name);
        let out = run(coreb()
            .arg("eval")
            .arg(dir)
            .args(["--resamples", "0", "--out"])
            .arg(&out_dir)
            .args(extra));
        assert!(out.status.success(), "{}", text(&out));
        out_dir.join("results.json")
    };
    let (a, a10) = (results(&sample(), "a", &[]), results(&sample(), "a10", &["--k", "1,5,10,20"]));
    let b = results(&other, "b", &[]);
    let out = run(coreb().arg("compare").arg(&a).arg(&b));
    assert!(!out.status.success(), "{}", text(&out));
    let err = stderr(&out);
    assert!(
        err.contains("release `v202503`")
            && err.contains("release `v202504`")
            && err.contains("different releases"),
        "{err}"
    );
    let sha_b = coreb_base::hashing::sha256_file(&other.join("MANIFEST.json")).unwrap();
    assert!(err.contains(&sha_b), "{err}");

    // Same version, another MANIFEST: refused too.
    let rebuilt = tmp.path().join("rebuilt/v202503");
    copy_release(&sample(), &rebuilt, None);
    let mut manifest = fs_err::read(rebuilt.join("MANIFEST.json")).unwrap();
    manifest.push(b'\n');
    fs_err::write(rebuilt.join("MANIFEST.json"), manifest).unwrap();
    let out = run(coreb().arg("compare").arg(&a).arg(results(&rebuilt, "r", &[])));
    assert!(!out.status.success() && stderr(&out).contains("different releases"), "{}", text(&out));

    // Two results of one release compare, and say which release.
    let out = run(coreb().arg("compare").arg(&a).arg(&a10));
    assert!(out.status.success(), "{}", text(&out));
    stdout_has(&out, "Both on release `v202503`");

    // A BEIR folder outside a release: `release` is null, and the command says so.
    let beir = tmp.path().join("beir");
    copy_release(&sample().join("text2code"), &beir, None);
    let out = run(coreb()
        .arg("eval")
        .arg(&beir)
        .args(["--resamples", "0", "--out"])
        .arg(tmp.path().join("bare")));
    assert!(
        out.status.success() && stderr(&out).contains("the results record no release"),
        "{}",
        text(&out)
    );
    let bare: Value = serde_json::from_str(
        &fs_err::read_to_string(tmp.path().join("bare/results.json")).unwrap(),
    )
    .unwrap();
    assert!(bare.get("release").is_some_and(Value::is_null), "{bare}");
}

#[test]
fn the_leaderboard_refuses_two_manifests_of_one_version_and_says_when_it_has_no_results() {
    let tmp = tempfile::tempdir().unwrap();
    let releases = tmp.path().join("releases");
    let release = releases.join("v202503");
    copy_release(&sample(), &release, None);
    let store = tmp.path().join("store");
    let leaderboard = || {
        run(coreb()
            .arg("leaderboard")
            .arg("--releases-dir")
            .arg(&releases)
            .arg("--results")
            .arg(&store)
            .arg("--json"))
    };

    let out = leaderboard();
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        stderr(&out).contains(&format!("no results recorded in `{}`", store.display()))
            && stderr(&out).contains("--record"),
        "{}",
        text(&out)
    );

    let record = |dir: &Path| {
        let out = run(coreb()
            .arg("eval")
            .arg(dir)
            .args(["--resamples", "0", "--record", "--results"])
            .arg(&store));
        assert!(out.status.success(), "{}", text(&out));
    };
    record(&release);
    let out = leaderboard();
    assert!(out.status.success(), "{}", text(&out));
    let first_records: Vec<PathBuf> =
        fs_err::read_dir(store.join("v202503")).unwrap().map(|e| e.unwrap().path()).collect();

    // The same version rebuilt into other bytes, recorded into the same store.
    let rebuilt = tmp.path().join("elsewhere/v202503");
    copy_release(&sample(), &rebuilt, None);
    let mut manifest = fs_err::read(rebuilt.join("MANIFEST.json")).unwrap();
    manifest.push(b'\n');
    fs_err::write(rebuilt.join("MANIFEST.json"), &manifest).unwrap();
    record(&rebuilt);
    let out = leaderboard();
    assert!(!out.status.success(), "{}", text(&out));
    let err = stderr(&out);
    let (sha_a, sha_b) = (
        coreb_base::hashing::sha256_file(&release.join("MANIFEST.json")).unwrap(),
        coreb_base::hashing::sha256_hex(&manifest),
    );
    assert!(
        err.contains("two different MANIFESTs") && err.contains(&sha_a) && err.contains(&sha_b),
        "{err}"
    );

    // Only the rebuilt one's records, against the published one: refused as another build.
    for f in first_records {
        fs_err::remove_file(f).unwrap();
    }
    let out = leaderboard();
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        stderr(&out).contains("another build of the release") && stderr(&out).contains(&sha_b),
        "{}",
        text(&out)
    );
}

/// `manifests/sample.toml` with the rewrite stage's concurrency changed (a setting that changes
/// the build's rewrite record, not an answer), its paths made absolute, written into `dir`.
fn altered_manifest(dir: &Path) -> PathBuf {
    let text = fs_err::read_to_string(root().join("manifests/sample.toml")).unwrap();
    assert!(
        !text.contains("[stages.rewrite]"),
        "the sample sets `[stages.rewrite]`: update this test"
    );
    let text = text.replace("\"../", &format!("\"{}/", root().display()))
        + "\n[stages.rewrite]\nconcurrency = 3\n";
    written(dir.join("altered.toml"), text)
}

#[test]
fn audits_read_the_build_that_made_the_release_and_refuse_another() {
    let tmp = tempfile::tempdir().unwrap();
    // The release published where the sample manifest would look for its build through the
    // embedded path: `<tmp>/releases/sample/v202503` → `<tmp>/build/sample`.
    let published = tmp.path().join("releases/sample/v202503");
    let made = tmp.path().join("made");
    let build = |manifest: &Path, until: &str, out: &Path, publish: Option<&Path>| {
        let mut cmd = coreb();
        cmd.arg("build").arg(manifest).args(["--until", until, "--output-dir"]).arg(out);
        if let Some(p) = publish {
            cmd.arg("--publish-dir").arg(p);
        }
        let o = run(&mut cmd);
        assert!(o.status.success(), "{}", text(&o));
    };
    build(&root().join("manifests/sample.toml"), "release", &made, Some(&published));
    let audit = |build_dir: Option<&Path>| {
        let mut cmd = coreb();
        cmd.arg("audit").arg(&published).args(["rewrite", "--tests", "--json"]);
        if let Some(d) = build_dir {
            cmd.arg("--build-dir").arg(d);
        }
        run(&mut cmd)
    };
    // The build that made it is read.
    let out = audit(Some(&made));
    assert!(out.status.success(), "{}", text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["tests_kept"]["problems"].as_u64(), Some(10), "{}", report["tests_kept"]);

    // Another build (other rewrite settings) where the embedded manifest points: refused, named.
    let manifest = altered_manifest(tmp.path());
    let other = tmp.path().join("build/sample");
    build(&manifest, "rewrite", &other, None);
    let out = audit(None);
    assert!(!out.status.success(), "{}", text(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("the build directory `{}`", other.display()))
            && err.contains("holds another build")
            && err.contains("`parameters`"),
        "{err}"
    );
    assert!(err.contains("--build-dir"), "{err}");
    let out = audit(Some(&other));
    assert!(
        !out.status.success() && stderr(&out).contains("(`--build-dir`) holds another build"),
        "{}",
        text(&out)
    );

    // A release whose MANIFEST is not the one the build published: refused by the digest.
    let edited = tmp.path().join("edited/v202503");
    copy_release(&published, &edited, None);
    let mut bytes = fs_err::read(edited.join("MANIFEST.json")).unwrap();
    bytes.push(b'\n');
    fs_err::write(edited.join("MANIFEST.json"), &bytes).unwrap();
    let out = run(coreb()
        .arg("audit")
        .arg(&edited)
        .args(["rewrite", "--tests", "--build-dir"])
        .arg(&made));
    assert!(!out.status.success(), "{}", text(&out));
    let err = stderr(&out);
    assert!(
        err.contains("published a MANIFEST with sha256")
            && err.contains(&coreb_base::hashing::sha256_hex(&bytes)),
        "{err}"
    );
}

#[test]
fn programs_reads_the_build_of_output_dir_and_creates_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let manifest = root().join("manifests/sample.toml");
    // `coreb programs` of the sample's build found through `flag` (`--output-dir`,
    // `--build-dir`) = `build`, into `out`.
    let programs_of = |flag: &str, build: &Path, out: &Path| {
        run(coreb().arg("programs").arg(&manifest).arg(flag).arg(build).arg("--out").arg(out))
    };
    let missing = tmp.path().join("missing");
    let out = programs_of("--output-dir", &missing, &tmp.path().join("p0"));
    assert!(!out.status.success(), "{}", text(&out));
    stderr_has(&out, &format!("no build at `{}`", missing.join("artifacts").display()));
    assert!(!missing.exists(), "`coreb programs` created `{}`", missing.display());

    let built = tmp.path().join("built");
    let out = run(coreb()
        .arg("build")
        .arg(&manifest)
        .args(["--until", "generate", "--output-dir"])
        .arg(&built));
    assert!(out.status.success(), "{}", text(&out));
    let programs = tmp.path().join("programs");
    let out = programs_of("--build-dir", &built, &programs);
    assert!(out.status.success(), "{}", text(&out));
    let index = fs_err::read_to_string(programs.join("index.jsonl")).unwrap();
    assert!(!index.is_empty());
    for line in index.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        assert!(programs.join(v["file"].as_str().unwrap()).is_file(), "{line}");
    }
}

#[test]
fn trec_eval_reads_a_releases_beir_qrels() {
    let tmp = tempfile::tempdir().unwrap();
    let task = sample().join("text2code");
    let tsv = task.join("qrels/test.tsv");
    // The same judgements in trec_eval's own four columns.
    let trec = crate::support::trec_qrels(&tsv);
    let qrels = tmp.path().join("qrels.trec");
    fs_err::write(&qrels, trec).unwrap();
    let out_dir = tmp.path().join("bm25");
    assert!(
        run(coreb().arg("eval").arg(&task).args(["--resamples", "0", "--out"]).arg(&out_dir))
            .status
            .success()
    );
    let run_file = out_dir.join("text2code.run.trec");
    let trec_eval = |q: &Path| {
        run(coreb()
            .args(["trec-eval", "-m", "ndcg_cut.10", "-m", "recall.10"])
            .arg(q)
            .arg(&run_file))
    };
    let (beir, own) = (trec_eval(&tsv), trec_eval(&qrels));
    assert!(beir.status.success(), "{}", text(&beir));
    assert!(own.status.success(), "{}", text(&own));
    assert_eq!(String::from_utf8_lossy(&beir.stdout), String::from_utf8_lossy(&own.stdout));
    stdout_has(&beir, "ndcg_cut_10");
    // A line of neither shape names its line.
    let bad = tmp.path().join("bad.tsv");
    fs_err::write(&bad, "query-id\tcorpus-id\tscore\nq1\td1\n").unwrap();
    let out = trec_eval(&bad);
    assert!(
        !out.status.success() && stderr(&out).contains("bad.tsv:2: malformed line"),
        "{}",
        text(&out)
    );
}

fn help(args: &[&str]) -> String {
    let out = run(coreb().args(args).arg("--help"));
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn help_texts_name_what_the_commands_take() {
    let export = help(&["export"]);
    assert!(
        export.contains("split=\"release_v2503\"") && !export.contains("release_v202503"),
        "{export}"
    );
    let judge = help(&["judge"]);
    assert!(judge.contains("--problem-id") && !judge.contains("`--problem`"), "{judge}");
    for stage in ["fetch", "ingest", "dedup", "filter", "qrels", "release"] {
        assert!(!help(&[stage]).contains("--shard"), "`coreb {stage} --help` offers `--shard`");
    }
    for stage in ["rewrite", "distract", "abbreviate", "generate", "execute", "queries"] {
        assert!(help(&[stage]).contains("--shard"), "`coreb {stage} --help` lost `--shard`");
    }
    let out = run(coreb().args(["fetch", "manifests/sample.toml", "--shard", "0/2"]));
    assert!(!out.status.success() && stderr(&out).contains("--shard"), "{}", text(&out));
    assert!(help(&["programs"]).contains("--output-dir"));
    assert!(help(&["eval"]).contains("--allow-partial"));
}

#[test]
fn store_stats_of_a_missing_store_is_an_error_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("no-store");
    for sub in [vec!["stats"], vec!["export"]] {
        let mut cmd = coreb();
        cmd.arg("store").args(&sub).arg(&missing);
        if sub == ["export"] {
            cmd.arg(tmp.path().join("out.jsonl"));
        }
        let out = run(&mut cmd);
        assert!(!out.status.success(), "{}", text(&out));
        assert!(
            stderr(&out)
                .contains(&format!("`{}` (STORE): no such file or directory", missing.display())),
            "{}",
            text(&out)
        );
    }
    let out = run(coreb().args(["store", "stats"]).arg(root().join("tests/fixtures/sample/store")));
    assert!(out.status.success(), "{}", text(&out));
    stdout_has(&out, "entries");
}

#[test]
fn export_takes_a_single_release_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let (one, all) = (tmp.path().join("one"), tmp.path().join("all"));
    let out = run(coreb().arg("export").arg(sample()).arg(&one));
    assert!(out.status.success(), "{}", text(&out));
    let out = run(coreb().arg("export").arg(root().join("releases/sample")).arg(&all));
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        crate::support::tree_sha256(&one),
        crate::support::tree_sha256(&all),
        "one release exported alone differs from its directory's export"
    );
    let empty = tmp.path().join("empty");
    fs_err::create_dir_all(&empty).unwrap();
    let out = run(coreb().arg("export").arg(&empty).arg(tmp.path().join("x")));
    assert!(!out.status.success() && stderr(&out).contains("pass a release"), "{}", text(&out));
}
