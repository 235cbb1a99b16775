//! `coreb leaderboard` and `coreb eval --record`: the results store under the releases
//! directory and the static site made from it.
//!
//! The store (`<releases_dir>/results/`) holds one Parquet file per recorded evaluation,
//! `<release>/<record_id>.parquet`, written once through a temporary file and never changed:
//! the store only grows, and recording the same run again (same record id: same model,
//! cutoff, release, run files, cut-offs, prompts) writes nothing, so the store reads as one
//! Parquet dataset (`pd.read_parquet("releases/results")`). Model audit reports put under
//! `<releases_dir>/audits/` (any depth, named `model.json`) are shown with their release.
//!
//! The analytics are [`coreb_eval::leaderboard`]'s (polars over the store); this module reads the
//! releases' MANIFESTs and the audits, lists the store and writes the site.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use coreb_base::hashing::sha256_file;
use coreb_eval::leaderboard::frames::StoreFrames;
use coreb_eval::leaderboard::record::{self, RecordMeta, ReleaseRef};
use coreb_eval::leaderboard::{self as board, AuditFigure, Leaderboard, ReleaseInfo, View, ViewSpec};
use coreb_eval::report::EvalReport;
use serde::Deserialize;

use crate::cli::LeaderboardArgs;
use crate::engine::ReleaseManifest;
use coreb_base::printer::Printer;

/// The store's directory name under the releases directory.
pub const RESULTS_DIR: &str = "results";

/// Where model audit reports are found under the releases directory.
pub const AUDITS_DIR: &str = "audits";

/// The release a `coreb eval` directory belongs to: the directory itself when it holds a
/// `MANIFEST.json`, else its parent (a task's BEIR folder inside a release).
pub(crate) fn release_of(dir: &Path) -> anyhow::Result<(PathBuf, ReleaseManifest, String)> {
    let candidates = [Some(dir), dir.parent()];
    let Some(release) = candidates.into_iter().flatten().find(|d| d.join("MANIFEST.json").is_file()) else {
        bail!("`--record`: `{}` is not a release nor a task folder of one (no `MANIFEST.json` in it or its parent)", dir.display());
    };
    let path = release.join("MANIFEST.json");
    let manifest: ReleaseManifest = serde_json::from_str(&fs_err::read_to_string(&path)?).with_context(|| format!("`{}`: not a release manifest", path.display()))?;
    let sha256 = sha256_file(&path).with_context(|| format!("hashing `{}`", path.display()))?;
    Ok((release.to_owned(), manifest, sha256))
}

/// Now, as RFC 3339 UTC to the second (the only clock reading of the store: the record order).
fn utc_now() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem / 60 % 60, rem % 60)
}

/// What `coreb eval --record` records besides the report.
pub(crate) struct RecordRequest<'a> {
    /// The directory evaluated.
    pub dir: &'a Path,
    /// `--results`.
    pub results: Option<&'a Path>,
    /// The name shown.
    pub model: String,
    /// The retriever label.
    pub retriever: String,
    /// `--cutoff`, as given.
    pub cutoff: Option<&'a str>,
    /// sha256 of each task's run file.
    pub run_sha256: BTreeMap<String, String>,
}

/// Record an evaluation in the store; returns the record's file and whether it was written
/// (`false`: the same record was already there).
pub(crate) fn record(report: &EvalReport, req: RecordRequest<'_>) -> anyhow::Result<(PathBuf, bool)> {
    let (release_dir, manifest, manifest_sha256) = release_of(req.dir)?;
    let cutoff = req.cutoff.map(record::parse_cutoff).transpose().context("`--cutoff`")?;
    if req.model.trim().is_empty() || req.model.chars().any(char::is_control) {
        bail!("`--model-name`: `{}` is not a name (empty, or holds control characters)", req.model.escape_debug());
    }
    let meta = RecordMeta {
        model: req.model,
        retriever: req.retriever,
        cutoff,
        release: ReleaseRef { version: manifest.version.clone(), manifest_sha256, window_start: manifest.window.start.clone(), window_end: manifest.window.end.clone() },
        run_sha256: req.run_sha256,
        tool_version: env!("CARGO_PKG_VERSION").to_owned(),
    };
    let store = match req.results {
        Some(p) => p.to_owned(),
        None => release_dir.parent().map(|p| p.join(RESULTS_DIR)).unwrap_or_else(|| PathBuf::from(RESULTS_DIR)),
    };
    let id = record::record_id(report, &meta);
    let path = store.join(&manifest.version).join(format!("{id}.parquet"));
    if path.is_file() {
        return Ok((path, false));
    }
    fs_err::create_dir_all(path.parent().unwrap_or(&store))?;
    let rows = record::rows(report, &meta, &utc_now());
    coreb_eval::results::write_results(&path, &rows).with_context(|| format!("writing the results store `{}`", store.display()))?;
    Ok((path, true))
}

/// The record files of a store, sorted (`*.parquet` one level under it; an absent store is
/// empty).
fn store_files(store: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    if !store.is_dir() {
        return Ok(files);
    }
    for entry in fs_err::read_dir(store)? {
        let dir = entry?.path();
        if !dir.is_dir() {
            continue;
        }
        for f in fs_err::read_dir(&dir)? {
            let f = f?.path();
            if f.extension().is_some_and(|e| e == "parquet") {
                files.push(f);
            }
        }
    }
    files.sort();
    Ok(files)
}

/// Every release under `dir`: its subdirectories with a `MANIFEST.json`.
fn published_releases(dir: &Path) -> anyhow::Result<Vec<ReleaseInfo>> {
    let mut out = Vec::new();
    if !dir.is_dir() {
        bail!("`{}`: no such releases directory", dir.display());
    }
    let mut dirs: Vec<PathBuf> = fs_err::read_dir(dir)?.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.join("MANIFEST.json").is_file()).collect();
    dirs.sort();
    for d in dirs {
        let path = d.join("MANIFEST.json");
        let m: ReleaseManifest = serde_json::from_str(&fs_err::read_to_string(&path)?).with_context(|| format!("`{}`: not a release manifest", path.display()))?;
        out.push(ReleaseInfo::from_manifest(&m.version, m.window.start.clone(), m.window.end.clone(), &m.counts));
    }
    Ok(out)
}

/// The fields of a `coreb audit <release> model` report that the leaderboard shows.
#[derive(Debug, Deserialize)]
struct AuditReport {
    release: String,
    model: String,
    language: String,
    samples: u32,
    overall: AuditOverall,
}

#[derive(Debug, Deserialize)]
struct AuditOverall {
    problems: usize,
    pass_at_1_original: f64,
    pass_at_1_rewritten: f64,
    drop: f64,
    relative_drop: Option<f64>,
}

/// `model.json` files under `dir` (depth ≤ 4), sorted.
fn find_audits(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    let mut stack = vec![(dir.to_owned(), 0)];
    while let Some((d, depth)) = stack.pop() {
        if !d.is_dir() || depth > 4 {
            continue;
        }
        for e in fs_err::read_dir(&d)? {
            let p = e?.path();
            if p.is_dir() {
                stack.push((p, depth + 1));
            } else if p.file_name().is_some_and(|n| n == "model.json") {
                found.push(p);
            }
        }
    }
    found.sort();
    Ok(found)
}

/// Attach each audit to its release (by the last component of its `release` field).
fn attach_audits(releases: &mut [ReleaseInfo], files: &[PathBuf], printer: &Printer) -> anyhow::Result<()> {
    for path in files {
        let report: AuditReport = serde_json::from_str(&fs_err::read_to_string(path)?).with_context(|| format!("`{}`: not a `coreb audit … model` report", path.display()))?;
        let version = report.release.rsplit('/').next().unwrap_or(&report.release);
        let Some(release) = releases.iter_mut().find(|r| r.version == version) else {
            printer.status(format!("warning: `{}` audits release `{}`, which is neither published nor recorded: not shown", path.display(), report.release));
            continue;
        };
        let o = report.overall;
        let figure = AuditFigure {
            model: report.model,
            language: report.language,
            samples: report.samples,
            problems: o.problems,
            pass_at_1_original: o.pass_at_1_original,
            pass_at_1_rewritten: o.pass_at_1_rewritten,
            drop: o.drop,
            relative_drop: o.relative_drop,
        };
        if !release.audits.contains(&figure) {
            release.audits.push(figure);
        }
    }
    for r in releases.iter_mut() {
        r.audits.sort_by(|a, b| (&a.model, &a.language).cmp(&(&b.model, &b.language)));
    }
    Ok(())
}

/// The leaderboard and its store.
pub(crate) fn load(releases_dir: &Path, results: &Path, audits: &[PathBuf], printer: &Printer) -> anyhow::Result<(Leaderboard, StoreFrames)> {
    let published = published_releases(releases_dir)?;
    let store = StoreFrames::open(&store_files(results)?).with_context(|| format!("reading the results store `{}`", results.display()))?;
    let mut lb = board::build(published, &store)?;
    let mut audit_files = find_audits(&releases_dir.join(AUDITS_DIR))?;
    audit_files.extend(audits.iter().cloned());
    attach_audits(&mut lb.releases, &audit_files, printer)?;
    Ok((lb, store))
}

/// The view as a Markdown table.
fn markdown(lb: &Leaderboard, view: &View) -> String {
    use std::fmt::Write as _;
    let window = format!(
        "{} … {}",
        view.from.as_deref().or(lb.months.first().map(String::as_str)).unwrap_or("—"),
        view.to.as_deref().or(lb.months.last().map(String::as_str)).unwrap_or("—")
    );
    let mut out = format!("# Leaderboard: {}, releases {window}{}\n\n", view.metric, if view.after_cutoff { ", after each model's cutoff" } else { "" });
    let _ = writeln!(out, "| # | model | cutoff | {} | avg | releases |", lb.tasks.join(" | "));
    let _ = writeln!(out, "|---:|---|---|{}---:|---:|", "---:|".repeat(lb.tasks.len()));
    for r in &view.rows {
        let tasks: Vec<String> =
            lb.tasks.iter().map(|t| r.tasks.get(t).and_then(Option::as_ref).map(|m| format!("{:.4} ({})", m.mean, m.releases)).unwrap_or_else(|| "–".into())).collect();
        let avg = r.average.map(|a| format!("{a:.4}")).unwrap_or_else(|| "–".into());
        let _ = writeln!(out, "| {} | {} | {} | {} | {avg} | {} |", r.rank, r.model, r.cutoff.as_deref().unwrap_or("–"), tasks.join(" | "), r.releases.len());
    }
    out
}

/// Run `coreb leaderboard`.
pub fn leaderboard(args: LeaderboardArgs) -> anyhow::Result<ExitCode> {
    let LeaderboardArgs { releases_dir, results, out, audits, json, from, to, after_cutoff, metric } = args;
    let printer = Printer::new(json);
    let results = results.unwrap_or_else(|| releases_dir.join(RESULTS_DIR));
    let (lb, store) = load(&releases_dir, &results, &audits, &printer)?;
    let view = board::view(&lb, &store, &ViewSpec { from, to, after_cutoff, metric })?;
    let out = match (out, json) {
        (Some(o), _) => Some(o),
        (None, false) => Some(PathBuf::from("build/leaderboard")),
        (None, true) => None,
    };
    if let Some(dir) = &out {
        fs_err::create_dir_all(dir)?;
        for (name, content) in coreb_eval::leaderboard::site::files(&lb)? {
            coreb_base::durable::write(&dir.join(name), content.as_bytes())?;
        }
        printer.status(format!(
            "leaderboard: {} releases, {} models, {} values from {} record(s) in `{}`; wrote `{}`",
            lb.releases.len(),
            lb.models.len(),
            lb.cells.len(),
            lb.models.iter().map(|m| m.records).sum::<u64>(),
            results.display(),
            dir.join("index.html").display()
        ));
    }
    if json {
        #[derive(serde::Serialize)]
        struct Printed<'a> {
            #[serde(flatten)]
            leaderboard: &'a Leaderboard,
            view: &'a View,
        }
        printer.out(serde_json::to_string_pretty(&Printed { leaderboard: &lb, view: &view })?);
    } else {
        printer.out(markdown(&lb, &view).trim_end());
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_now_is_rfc3339() {
        let now = utc_now();
        assert_eq!(now.len(), 20, "{now}");
        assert!(now.ends_with('Z') && &now[4..5] == "-" && &now[10..11] == "T", "{now}");
        assert!(now.as_str() > "2024-01-01T00:00:00Z");
    }

    #[test]
    fn an_audit_report_as_coreb_audit_writes_it_is_read() {
        use crate::commands::audit::model::{ModelReport, WindowPass};
        let overall = WindowPass { window: "all".into(), problems: 10, excluded: 0, pass_at_1_original: 0.6, pass_at_1_rewritten: 0.45, drop: 0.15, relative_drop: Some(0.25) };
        let report = ModelReport {
            release: "releases/v202503".into(),
            model: "m".into(),
            endpoint: "http://127.0.0.1:1/v1".into(),
            language: coreb_data::solution::Language::Python,
            samples: 2,
            sampling: Default::default(),
            prompt_sha256: "ab".into(),
            windows: vec![overall.clone()],
            overall,
            problems: Vec::new(),
            unanswered: 0,
        };
        let text = serde_json::to_string_pretty(&report).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("model.json");
        fs_err::write(&path, &text).unwrap();
        let mut releases = vec![ReleaseInfo::from_store("v202503", None, None), ReleaseInfo::from_store("v202504", None, None)];
        attach_audits(&mut releases, &[path.clone(), path], &Printer::new(true)).unwrap();
        assert_eq!(releases[0].audits.len(), 1, "the same report given twice is shown once");
        assert_eq!((releases[0].audits[0].drop, releases[0].audits[0].relative_drop), (0.15, Some(0.25)));
        assert!(releases[1].audits.is_empty());
    }
}
