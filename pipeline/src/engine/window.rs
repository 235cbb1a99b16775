//! A month with nothing new: the window against what the sources hold. `coreb plan` checks its
//! pinned sources before it writes the manifest, `coreb build --check` checks the local
//! sources, and a build checks every source as `fetch` ends, before anything is decoded: a
//! window none of them has a problem in is refused with [`NothingNew`], naming each source's
//! latest contest day and what to do. (Dates are read from each row's `contest_date` alone:
//! [`coreb_stages::ingest::scan_window`].)

use std::path::{Path, PathBuf};

use coreb_data::problem::DateWindow;
use coreb_stages::ingest::{WindowScan, scan_window};

/// The words every refusal of an empty window starts with, which `scripts/monthly.sh` looks
/// for to tell "nothing new this month" from a failure.
const NOTHING_NEW: &str = "no new problems";

/// No source has a problem in the window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NothingNew {
    /// The window asked for.
    pub(crate) window: DateWindow,
    /// Each source's name and what it holds.
    pub(crate) sources: Vec<(String, WindowScan)>,
}

impl std::fmt::Display for NothingNew {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let day = |d: &Option<String>| d.clone().unwrap_or_else(|| "…".into());
        let held: Vec<String> = self
            .sources
            .iter()
            .map(|(name, scan)| match &scan.latest {
                Some(latest) => {
                    format!("`{name}`: {} problems, the latest contest on {latest}", scan.rows)
                }
                None => format!("`{name}`: {} problems, none dated", scan.rows),
            })
            .collect();
        let mut all = WindowScan::default();
        for (_, scan) in &self.sources {
            all.add(scan);
        }
        write!(
            f,
            "{NOTHING_NEW}: no source has a problem with a contest date in the window {} … {} ({}); ",
            day(&self.window.start),
            day(&self.window.end),
            held.join("; ")
        )?;
        match &all.latest {
            Some(latest) if self.window.start.as_deref().is_some_and(|s| s > latest.as_str()) => {
                write!(
                    f,
                    "the sources end on {latest}, before the window: wait for a new release of the source (LiveCodeBench publishes its problems in releases) and plan again, or add a source that holds the month with `coreb plan <YYYY-MM> --source NAME=URL`"
                )
            }
            _ => write!(
                f,
                "add a source that holds the month with `coreb plan <YYYY-MM> --source NAME=URL`, or choose a window the sources cover"
            ),
        }
    }
}

impl std::error::Error for NothingNew {}

/// Scan each `(name, file)` for the window.
fn scan_files(
    window: &DateWindow,
    files: &[(String, PathBuf)],
    max_line_bytes: u64,
) -> anyhow::Result<Vec<(String, WindowScan)>> {
    files
        .iter()
        .map(|(name, path)| Ok((name.clone(), scan_file(window, path, max_line_bytes)?)))
        .collect()
}

fn scan_file(window: &DateWindow, path: &Path, max_line_bytes: u64) -> anyhow::Result<WindowScan> {
    Ok(scan_window(fs_err::File::open(path)?, window, max_line_bytes)?)
}

/// Refuse a window none of the scanned sources has a problem in.
pub(crate) fn check(
    window: &DateWindow,
    sources: Vec<(String, WindowScan)>,
) -> Result<(), NothingNew> {
    if sources.iter().any(|(_, s)| s.in_window > 0) {
        return Ok(());
    }
    Err(NothingNew { window: window.clone(), sources })
}

/// Scan the files and refuse an empty window.
pub(crate) fn check_files(
    window: &DateWindow,
    files: &[(String, PathBuf)],
    max_line_bytes: u64,
) -> anyhow::Result<()> {
    Ok(check(window, scan_files(window, files, max_line_bytes)?)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_window_names_the_latest_contest_and_what_to_do() {
        let window = DateWindow::new(Some("2026-12-01"), Some("2026-12-31")).unwrap();
        let scan = WindowScan { rows: 10, in_window: 0, latest: Some("2025-03-29".into()) };
        let err = check(&window, vec![("sample".into(), scan.clone())]).unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with(NOTHING_NEW)
                && text.contains("2026-12-01 … 2026-12-31")
                && text.contains("`sample`: 10 problems, the latest contest on 2025-03-29")
                && text.contains("--source NAME=URL")
                && text.contains("wait for a new release"),
            "{text}"
        );
        let one = WindowScan { in_window: 1, ..scan.clone() };
        assert!(check(&window, vec![("a".into(), scan), ("b".into(), one)]).is_ok());
    }
}
