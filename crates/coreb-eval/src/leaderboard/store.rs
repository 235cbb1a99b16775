//! The results store under the releases directory and what the leaderboard reads beside it:
//! the releases' MANIFESTs and the model audit reports. `coreb eval --record` writes through
//! [`record()`], `coreb leaderboard` reads through [`load`].
//!
//! The store (`<releases_dir>/results/`) holds one Parquet file per recorded evaluation,
//! `<release>/<record_id>.parquet`, written once through a temporary file and never changed:
//! the store only grows, and recording the same run again (same record id: same model,
//! cutoff, release, run files, cut-offs, prompts) writes nothing, so the store reads as one
//! Parquet dataset (`pd.read_parquet("releases/results")`). Model audit reports put under
//! `<releases_dir>/audits/` (any depth, named `model.json`) are shown with their release.
//!
//! The analytics are [`super`]'s (polars over the store); this module reads the releases'
//! MANIFESTs and the audits, lists the store and writes it.

use coreb_data::releases::ReleaseManifest;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use coreb_base::hashing::sha256_file;
use coreb_base::report::Report;
use serde::Deserialize;

use super::frames::StoreFrames;
use super::record::{self, ContestWindow, ModelLabel, RecordMeta, ReleaseRef};
use super::{AuditFigure, Leaderboard, ReleaseInfo, View};
use crate::report::{EvalReport, ReleaseIdentity};

/// The store's directory name under the releases directory.
pub const RESULTS_DIR: &str = "results";

/// Where model audit reports are found under the releases directory.
pub const AUDITS_DIR: &str = "audits";

/// The release a `coreb eval` directory belongs to: the directory itself when it holds a
/// `MANIFEST.json`, else its parent (a task's BEIR folder inside a release). Returns the
/// release directory, its manifest and the manifest's sha256.
pub fn release_of(dir: &Path) -> anyhow::Result<(PathBuf, ReleaseManifest, String)> {
    match find_release(dir)? {
        Some(found) => Ok(found),
        None => bail!(
            "`--record`: `{}` is not a release nor a task folder of one (no `MANIFEST.json` in it or its parent)",
            dir.display()
        ),
    }
}

/// Like [`release_of`], but `None` for a directory that belongs to no release (a bare BEIR
/// folder).
pub fn find_release(dir: &Path) -> anyhow::Result<Option<(PathBuf, ReleaseManifest, String)>> {
    let candidates = [Some(dir), dir.parent()];
    let Some(release) =
        candidates.into_iter().flatten().find(|d| d.join("MANIFEST.json").is_file())
    else {
        return Ok(None);
    };
    let path = release.join("MANIFEST.json");
    let manifest = ReleaseManifest::read(&path)?;
    let sha256 = sha256_file(&path).with_context(|| format!("hashing `{}`", path.display()))?;
    Ok(Some((release.to_owned(), manifest, sha256)))
}

/// The identity results on `dir` record: its release's version and MANIFEST sha256, `None`
/// for a bare BEIR folder.
pub fn release_identity(dir: &Path) -> anyhow::Result<Option<ReleaseIdentity>> {
    Ok(find_release(dir)?.map(|(_, manifest, manifest_sha256)| ReleaseIdentity {
        version: manifest.version,
        manifest_sha256,
        controls: manifest.controls.map(|c| crate::report::ControlledRelease {
            version: c.version,
            manifest_sha256: c.manifest_sha256,
        }),
    }))
}

/// Now, as RFC 3339 UTC to the second (the only clock reading of the store: the record order).
fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
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
pub struct RecordRequest<'a> {
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
    /// `--category`, as given (`code`, `general`, `closed`).
    pub category: Option<&'a str>,
    /// sha256 of each task's run file.
    pub run_sha256: BTreeMap<String, String>,
    /// The version of the tool that recorded it.
    pub tool_version: String,
}

/// Record an evaluation in the store; returns the record's file and whether it was written
/// (`false`: the same record was already there).
pub fn record(report: &EvalReport, req: RecordRequest<'_>) -> anyhow::Result<(PathBuf, bool)> {
    let (release_dir, manifest, manifest_sha256) = release_of(req.dir)?;
    let cutoff = req.cutoff.map(record::parse_cutoff).transpose().context("`--cutoff`")?;
    let category = req.category.map(record::parse_category).transpose().context("`--category`")?;
    if req.model.trim().is_empty() || req.model.chars().any(char::is_control) {
        bail!(
            "`--model-name`: `{}` is not a name (empty, or holds control characters)",
            req.model.escape_debug()
        );
    }
    let meta = RecordMeta {
        label: ModelLabel { model: req.model, retriever: req.retriever, cutoff, category },
        release: ReleaseRef {
            version: manifest.version.clone(),
            manifest_sha256,
            window: ContestWindow::from(&manifest.window),
        },
        run_sha256: req.run_sha256,
        tool_version: req.tool_version,
    };
    let store = match req.results {
        Some(p) => p.to_owned(),
        None => release_dir
            .parent()
            .map(|p| p.join(RESULTS_DIR))
            .unwrap_or_else(|| PathBuf::from(RESULTS_DIR)),
    };
    let id = record::record_id(report, &meta);
    let path = store.join(&manifest.version).join(format!("{id}.parquet"));
    if path.is_file() {
        return Ok((path, false));
    }
    fs_err::create_dir_all(path.parent().unwrap_or(&store))?;
    let rows = record::rows(report, &meta, &utc_now());
    super::table::write_results(&path, &rows)
        .with_context(|| format!("writing the results store `{}`", store.display()))?;
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

/// Every release under `dir`: its subdirectories with a `MANIFEST.json`, with that file's
/// sha256.
fn published_releases(dir: &Path) -> anyhow::Result<Vec<(ReleaseInfo, String)>> {
    let mut out = Vec::new();
    if !dir.is_dir() {
        bail!("`{}`: no such releases directory", dir.display());
    }
    let mut dirs: Vec<PathBuf> = fs_err::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("MANIFEST.json").is_file())
        .collect();
    dirs.sort();
    for d in dirs {
        let path = d.join("MANIFEST.json");
        let m = ReleaseManifest::read(&path)?;
        let sha256 = sha256_file(&path).with_context(|| format!("hashing `{}`", path.display()))?;
        out.push((
            ReleaseInfo::from_manifest(&m.version, ContestWindow::from(&m.window), &m.counts),
            sha256,
        ));
    }
    Ok(out)
}

/// Refuse a store that would mix two builds of one release: records of one version made on
/// two `MANIFEST.json`s, or on another MANIFEST than the one published under `releases_dir`.
/// The leaderboard never averages numbers of different bytes under one version's name.
fn check_digests(
    store: &StoreFrames,
    results: &Path,
    published: &[(ReleaseInfo, String)],
) -> anyhow::Result<()> {
    let digests = store.digests()?;
    let record_file = |d: &super::frames::ReleaseDigest| {
        results.join(&d.release).join(format!("{}.parquet", d.example_record))
    };
    for pair in digests.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        if a.release == b.release {
            bail!(
                "the results store `{}` holds records of release `{}` made on two different MANIFESTs: {} record(s) on sha256 `{}` (such as `{}`) and {} on `{}` (such as `{}`); the release was rebuilt into other bytes. Move the records of the stale build out of the store (or record into another `--results`), then run again",
                results.display(),
                a.release,
                a.records,
                a.manifest_sha256,
                record_file(a).display(),
                b.records,
                b.manifest_sha256,
                record_file(b).display()
            );
        }
    }
    for d in &digests {
        if let Some((_, sha)) = published
            .iter()
            .find(|(info, sha)| info.version == d.release && *sha != d.manifest_sha256)
        {
            bail!(
                "the results store `{}` holds {} record(s) of release `{}` made on a MANIFEST with sha256 `{}` (such as `{}`), but the published `{}` has sha256 `{sha}`: they are results of another build of the release. Evaluate the published release again, or move those records out of the store",
                results.display(),
                d.records,
                d.release,
                d.manifest_sha256,
                record_file(d).display(),
                d.release
            );
        }
    }
    Ok(())
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

/// Attach each audit report (`model.json` of `coreb audit <release> model`) to its release
/// (by the last component of its `release` field); a report of no release in `releases` is
/// a warning, the same report twice is shown once.
pub fn attach_audits(
    releases: &mut [ReleaseInfo],
    files: &[PathBuf],
    sink: &dyn Report,
) -> anyhow::Result<()> {
    for path in files {
        let report: AuditReport = serde_json::from_str(&fs_err::read_to_string(path)?)
            .with_context(|| format!("`{}`: not a `coreb audit … model` report", path.display()))?;
        let version = report.release.rsplit('/').next().unwrap_or(&report.release);
        let Some(release) = releases.iter_mut().find(|r| r.version == version) else {
            sink.status(&format!("warning: `{}` audits release `{}`, which is neither published nor recorded: not shown", path.display(), report.release));
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

/// The leaderboard and its store: the releases published under `releases_dir`, the records
/// of the store `results`, the audits under `<releases_dir>/audits/` and `audits`.
pub fn load(
    releases_dir: &Path,
    results: &Path,
    audits: &[PathBuf],
    sink: &dyn Report,
) -> anyhow::Result<(Leaderboard, StoreFrames)> {
    let published = published_releases(releases_dir)?;
    let store = StoreFrames::open(&store_files(results)?)
        .with_context(|| format!("reading the results store `{}`", results.display()))?;
    check_digests(&store, results, &published)?;
    let mut lb = super::build(published.into_iter().map(|(info, _)| info).collect(), &store)?;
    let mut audit_files = find_audits(&releases_dir.join(AUDITS_DIR))?;
    audit_files.extend(audits.iter().cloned());
    attach_audits(&mut lb.releases, &audit_files, sink)?;
    Ok((lb, store))
}

/// Write the site (`index.html` and its data) into `dir`.
pub fn write_site(lb: &Leaderboard, dir: &Path) -> anyhow::Result<()> {
    fs_err::create_dir_all(dir)?;
    for (name, content) in super::site::files(lb)? {
        coreb_base::durable::write(&dir.join(name), content.as_bytes())?;
    }
    Ok(())
}

/// The view as a Markdown table.
pub fn markdown(lb: &Leaderboard, view: &View) -> String {
    use std::fmt::Write as _;
    let window = format!(
        "{} … {}",
        view.from.as_deref().or(lb.months.first().map(String::as_str)).unwrap_or("—"),
        view.to.as_deref().or(lb.months.last().map(String::as_str)).unwrap_or("—")
    );
    let mut out = format!(
        "# Leaderboard: {}, releases {window}{}\n\n",
        view.metric,
        if view.after_cutoff { ", after each model's cutoff" } else { "" }
    );
    if let Some(c) = &view.category {
        let _ = writeln!(out, "Category: {c}.\n");
    }
    let _ = writeln!(
        out,
        "| # | model | category | cutoff | {} | avg | overall (queries) | releases |",
        lb.tasks.join(" | ")
    );
    let _ = writeln!(out, "|---:|---|---|---|{}---:|---:|---:|", "---:|".repeat(lb.tasks.len()));
    for r in &view.rows {
        let tasks: Vec<String> = lb
            .tasks
            .iter()
            .map(|t| {
                r.tasks
                    .get(t)
                    .and_then(Option::as_ref)
                    .map(|m| format!("{:.4} ({})", m.mean, m.releases))
                    .unwrap_or_else(|| "–".into())
            })
            .collect();
        let avg = r.average.map(|a| format!("{a:.4}")).unwrap_or_else(|| "–".into());
        let overall =
            r.overall.map(|o| format!("{o:.4} ({})", r.queries)).unwrap_or_else(|| "–".into());
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {avg} | {overall} | {} |",
            r.rank,
            r.model,
            r.category,
            r.cutoff.as_deref().unwrap_or("–"),
            tasks.join(" | "),
            r.releases.len()
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_now_is_rfc3339() {
        let now = utc_now();
        assert_eq!(now.len(), 20, "{now}");
        assert!(now.as_str() > "2024-01-01T00:00:00Z");
        assert!(now.ends_with('Z') && &now[4..5] == "-" && &now[10..11] == "T", "{now}");
    }
}
