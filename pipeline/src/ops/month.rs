//! The manifest of the next monthly release (`coreb plan <YYYY-MM>`). The window runs from
//! the day after the latest release's window to the month's end; everything else (sources,
//! stage parameters, models, prompts) is taken from the latest release's build manifest (or
//! `--from`), new sources are added with `--source`, and every source is fetched once and
//! pinned by its sha256. A month whose window none of the fetched sources has a problem in
//! is refused, and nothing is written ([`crate::engine::window`]).

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use crate::engine::stage_name::StageName;
use crate::engine::{Engine, FetchLocal, FetchSummary};
use crate::manifest::{EmbeddedManifest, ManifestFile, RunPlan, SourceFile, lexical_join};
use crate::printer::Printer;
use coreb_base::durable;
use coreb_data::releases::ReleaseManifest;

use coreb_data::problem::days_in_month as days_in;

/// Parse `YYYY-MM`.
fn parse_month(s: &str) -> Option<(u32, u32)> {
    let (y, m) = s.split_once('-')?;
    let (y, m): (u32, u32) = (y.parse().ok()?, m.parse().ok()?);
    (y >= 1970 && (1..=12).contains(&m) && s.len() == 7).then_some((y, m))
}

/// The last day of a month, `YYYY-MM-DD`.
fn month_end(y: u32, m: u32) -> String {
    format!("{y:04}-{m:02}-{:02}", days_in(y, m))
}

/// The day after `YYYY-MM-DD`.
fn next_day(day: &str) -> Option<String> {
    let y: u32 = day.get(0..4)?.parse().ok()?;
    let m: u32 = day.get(5..7)?.parse().ok()?;
    let d: u32 = day.get(8..10)?.parse().ok()?;
    Some(if d < days_in(y, m) {
        format!("{y:04}-{m:02}-{:02}", d + 1)
    } else if m < 12 {
        format!("{y:04}-{:02}-01", m + 1)
    } else {
        format!("{:04}-01-01", y + 1)
    })
}

/// The latest release before `version` under `dir` that has a MANIFEST.
fn latest_release(dir: &Path, version: &str) -> anyhow::Result<Option<(PathBuf, ReleaseManifest)>> {
    if !dir.is_dir() {
        return Ok(None);
    }
    let mut best: Option<String> = None;
    for entry in fs_err::read_dir(dir)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        let ok = crate::manifest::has_version_shape(&name);
        if ok
            && name.as_str() < version
            && dir.join(&name).join("MANIFEST.json").exists()
            && best.as_ref().is_none_or(|b| &name > b)
        {
            best = Some(name);
        }
    }
    let Some(name) = best else { return Ok(None) };
    let path = dir.join(&name);
    let manifest = ReleaseManifest::read(&path.join("MANIFEST.json"))?;
    Ok(Some((path, manifest)))
}

/// The subdirectories of `dir` that hold a release before `version` (`releases/sample`
/// holding `v202503`), as `--releases-dir` hints; empty when there is none.
fn series_hint(dir: &Path, version: &str) -> String {
    let Ok(entries) = fs_err::read_dir(dir) else {
        return String::new();
    };
    let mut found: Vec<String> = Vec::new();
    for entry in entries.flatten() {
        let sub = entry.path();
        if let Ok(Some((release, _))) = latest_release(&sub, version) {
            let name =
                release.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            found.push(format!("`--releases-dir {}` (it holds `{name}`)", sub.display()));
        }
    }
    found.sort();
    if found.is_empty() { String::new() } else { format!(", or {}", found.join(", or ")) }
}

/// Re-express a local source URL relative to the manifest's new directory.
fn rebase_url(url: &str, from_dir: &Path, to_dir: &Path) -> String {
    if url.contains("://") {
        return url.to_owned();
    }
    let abs = lexical_join(from_dir, Path::new(url));
    crate::release::layout::relative_path(to_dir, &abs)
}

/// What `coreb plan` is asked for.
#[derive(Debug, Clone)]
pub(crate) struct MonthRequest {
    /// The month to release, `YYYY-MM`.
    pub(crate) month: String,
    /// Where published releases are.
    pub(crate) releases_dir: PathBuf,
    /// The base manifest (default: the latest release's own build manifest).
    pub(crate) from: Option<PathBuf>,
    /// Where to write the manifest (default: `manifests/<version>.toml`).
    pub(crate) out: Option<PathBuf>,
    /// Sources to add or replace, `NAME=URL`.
    pub(crate) sources: Vec<String>,
    /// Do not fetch the sources to pin their sha256.
    pub(crate) no_pin: bool,
    /// Overwrite an existing `out`.
    pub(crate) force: bool,
    /// Write a window overlapping a published release's.
    pub(crate) allow_overlap: bool,
}

/// The published releases under `dir` (any with a MANIFEST) whose contest-date window meets
/// `start ..= end`: version, window start and end (`…` for an open bound).
fn overlapping(dir: &Path, start: &str, end: &str) -> anyhow::Result<Vec<String>> {
    let mut found = Vec::new();
    if !dir.is_dir() {
        return Ok(found);
    }
    for entry in fs_err::read_dir(dir)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        let path = dir.join(&name).join("MANIFEST.json");
        if !crate::manifest::has_version_shape(&name) || !path.is_file() {
            continue;
        }
        let manifest = ReleaseManifest::read(&path)?;
        let (ws, we) = (manifest.window.start.as_deref(), manifest.window.end.as_deref());
        if ws.is_none_or(|ws| ws <= end) && we.is_none_or(|we| we >= start) {
            found.push(format!("`{name}` ({} … {})", ws.unwrap_or("…"), we.unwrap_or("…")));
        }
    }
    found.sort();
    Ok(found)
}

/// Write the manifest of a month's release: window after the latest release, everything
/// else from the base manifest, every source fetched once and pinned by its sha256.
pub(crate) fn plan_month(request: MonthRequest, printer: Printer) -> anyhow::Result<()> {
    let MonthRequest { month, releases_dir, from, out, sources, no_pin, force, allow_overlap } =
        request;
    let Some((y, m)) = parse_month(&month) else {
        coreb_base::usage!("month: expected `YYYY-MM` (e.g. `2025-04`), got `{month}`")
    };
    let version = format!("v{y:04}{m:02}");
    let out = std::path::absolute(
        out.unwrap_or_else(|| PathBuf::from(format!("manifests/{version}.toml"))),
    )?;
    if !force && fs_err::symlink_metadata(&out).is_ok() {
        coreb_base::usage!(
            "`{}` exists: `coreb plan` overwrites no manifest without `--force` (or write another with `--out`)",
            out.display()
        );
    }
    let releases_dir = std::path::absolute(&releases_dir)?;
    let latest = latest_release(&releases_dir, &version)?;

    // The base manifest: --from, else the latest release's own build manifest.
    let (mut file, base_dir) = match (&from, &latest) {
        (Some(path), _) => {
            let path = std::path::absolute(path)?;
            let file: ManifestFile = toml::from_str(&fs_err::read_to_string(&path)?)
                .context("parsing the base manifest")?;
            (file, path.parent().map(Path::to_owned).unwrap_or_default())
        }
        (None, Some((dir, _))) => {
            let embedded = EmbeddedManifest::read(dir)?;
            let base_dir = embedded.dir().to_owned();
            (embedded.file, base_dir)
        }
        (None, None) => bail!(
            "no release before `{version}` under `{}`: pass `--from <manifest>`{}",
            releases_dir.display(),
            series_hint(&releases_dir, &version)
        ),
    };

    let out_dir = out.parent().context("--out has no parent directory")?.to_owned();
    let start = match &latest {
        Some((_, manifest)) => {
            let end = manifest
                .window
                .end
                .as_deref()
                .context("the latest release has an open-ended window")?;
            next_day(end).context("the latest release's window end is not a date")?
        }
        None => file.window.start.clone().unwrap_or_else(|| format!("{y:04}-{m:02}-01")),
    };
    let end = month_end(y, m);
    if start > end {
        match &latest {
            Some(_) => coreb_base::usage!(
                "the latest release already covers `{month}` (its window ends the day before `{start}`): plan a later month"
            ),
            None => coreb_base::usage!(
                "`window.start` of the base manifest is `{start}`, after `{month}`: plan a later month"
            ),
        }
    }
    // Dates are days of the calendar (a base manifest's `window.start` of `2025-02-30` is not).
    coreb_data::problem::DateWindow::new(Some(&start), Some(&end)).map_err(|e| {
        coreb_base::errors::Usage(format!(
            "`window` of `{}`: {e}",
            from.as_deref().unwrap_or(base_dir.as_path()).display()
        ))
    })?;
    let overlaps = overlapping(&releases_dir, &start, &end)?;
    if !overlaps.is_empty() && !allow_overlap {
        coreb_base::usage!(
            "the window {start} … {end} overlaps the published {} under `{}`: their problems would be in both. Plan a later month, start from another window, or pass `--allow-overlap` (a control release, a rebuild)",
            overlaps.join(", "),
            releases_dir.display()
        );
    }
    let made_out_dir = !out_dir.exists();
    fs_err::create_dir_all(&out_dir)?;
    file.version = version.clone();
    file.window.start = Some(start);
    file.window.end = Some(end);
    // Every path the base names resolves from the new manifest's place to where it pointed
    // from the base's: the build directory beside the base's, its prompts, store and presets.
    let rebase = |p: &Path| PathBuf::from(rebase_url(&p.to_string_lossy(), &base_dir, &out_dir));
    let builds = lexical_join(&base_dir, &file.output_dir)
        .parent()
        .map(Path::to_owned)
        .unwrap_or_else(|| base_dir.clone());
    file.output_dir =
        PathBuf::from(crate::release::layout::relative_path(&out_dir, &builds.join(&version)));
    file.prompts_dir = Some(rebase(file.prompts_dir.as_deref().unwrap_or(Path::new("../prompts"))));
    file.response_store = file.response_store.as_deref().map(rebase);
    file.eval.prompts_file = file.eval.prompts_file.as_deref().map(rebase);
    file.releases_dir =
        Some(PathBuf::from(crate::release::layout::relative_path(&out_dir, &releases_dir)));
    for s in &mut file.sources {
        s.url = rebase_url(&s.url, &base_dir, &out_dir);
    }
    for spec in sources {
        let Some((name, url)) = spec.split_once('=') else {
            coreb_base::usage!("`--source`: expected `NAME=URL`, got `{spec}`")
        };
        let url = if url.contains("://") {
            url.to_owned()
        } else {
            rebase_url(url, &std::env::current_dir()?, &out_dir)
        };
        match file.sources.iter_mut().find(|s| s.name == name) {
            Some(s) => {
                s.url = url;
                s.sha256 = None;
            }
            None => file.sources.push(SourceFile { name: name.to_owned(), url, sha256: None }),
        }
    }

    fast_by_default(&mut file.stages.execute);
    let text = toml::to_string_pretty(&file)?;
    if no_pin {
        durable::write(&out, text.as_bytes())?;
    } else {
        pin_sources(&mut file, &text, &out_dir, made_out_dir, printer)?;
        durable::write(&out, toml::to_string_pretty(&file)?.as_bytes())?;
    }
    let window = format!(
        "{} … {}",
        file.window.start.as_deref().unwrap_or(""),
        file.window.end.as_deref().unwrap_or("")
    );
    printer.out(format!(
        "{}: release `{version}`, contest dates {window}, {} source(s)",
        out.display(),
        file.sources.len()
    ));
    Ok(())
}

/// Fetch every source once (downloads resume and are reused by the build), check that they
/// hold a problem in the window, and pin every sha256 in `file`. The draft manifest `text` is
/// read from a hidden file beside the manifest's place, which is removed whatever happens: a
/// window with nothing new ([`crate::engine::window::NothingNew`]) leaves no manifest, and no
/// directory this run made (`out_dir` when `made_out_dir`, the build directory).
fn pin_sources(
    file: &mut ManifestFile,
    text: &str,
    out_dir: &Path,
    made_out_dir: bool,
    printer: Printer,
) -> anyhow::Result<()> {
    let draft =
        tempfile::Builder::new().prefix(".coreb-plan-").suffix(".toml").tempfile_in(out_dir)?;
    fs_err::write(draft.path(), text)?;
    let plan = RunPlan::load(draft.path(), None)?;
    let made_build_dir = !plan.output_dir.exists();
    let (window, build_dir) = (plan.window.clone(), plan.output_dir.clone());
    let max_line_bytes = plan.stages.ingest.max_line_bytes;
    let engine = Engine::new(plan, printer, false)?;
    let reports = engine.run_until(StageName::Fetch)?;
    let fetched: Vec<(String, PathBuf)> = reports[0]
        .local_as::<FetchLocal>()
        .context("the fetch record lists no sources")?
        .sources
        .iter()
        .map(|f| (f.name.clone(), f.path.clone()))
        .collect();
    drop(engine);
    if let Err(e) = crate::engine::window::check_files(&window, &fetched, max_line_bytes) {
        drop(draft);
        // Only what this run made, and the manifests directory only while it is empty.
        if made_build_dir {
            fs_err::remove_dir_all(&build_dir).ok();
        }
        if made_out_dir {
            fs_err::remove_dir(out_dir).ok();
        }
        bail!(
            "{e:#}\nnothing was written (the sources were fetched to check the window; `--no-pin` writes a manifest unchecked)"
        );
    }
    let pins = &reports[0].summary_as::<FetchSummary>()?.sources;
    for s in &mut file.sources {
        s.sha256 = pins.iter().find(|p| p.name == s.name).map(|p| p.sha256.clone());
    }
    Ok(())
}

/// The `execute` switches a month gets unless its base manifest chose its own: those that
/// leave every label as it is and give `bench/month` its best time (`mode = "labels"`: a
/// solution's judging stops at its first failing test; `reuse` of the four languages that
/// have a faster start or compile; `idle_slots = 8`). A month that wants every test's verdict
/// sets `mode = "every_test"` in the manifest `coreb plan` wrote.
fn fast_by_default(execute: &mut coreb_judge::ExecuteConfig) {
    use coreb_data::solution::Language;
    if execute.reuse.is_empty() {
        execute.reuse =
            [Language::Python, Language::Ruby, Language::Cpp, Language::Java].into_iter().collect();
    }
    if execute.idle_slots == 0 {
        execute.idle_slots = 8;
    }
    if execute.mode.is_every_test() {
        execute.mode = coreb_judge::ExecuteMode::Labels;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(parse_month("2025-04"), Some((2025, 4)));
        assert_eq!(parse_month("2025-4"), None);
        assert_eq!(parse_month("2025-13"), None);
        assert_eq!(month_end(2024, 2), "2024-02-29");
        assert_eq!(month_end(2025, 2), "2025-02-28");
        assert_eq!(month_end(1900, 2), "1900-02-28");
        assert_eq!(next_day("2025-03-31").unwrap(), "2025-04-01");
        assert_eq!(next_day("2024-12-31").unwrap(), "2025-01-01");
        assert_eq!(next_day("2024-02-28").unwrap(), "2024-02-29");
    }
}
