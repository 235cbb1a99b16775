//! A release's files against its MANIFEST before a result is stamped with the MANIFEST's
//! sha256 (`coreb eval`, `coreb compare`): the cheap path of `coreb verify --checksums`
//! ([`crate::release::verify::checksums`]), so that a damaged release is refused, its files named,
//! rather than scored as if it were the published one.

use std::path::Path;

use anyhow::bail;

/// Refuse the release `dir` belongs to (`dir` itself or, for a task's BEIR folder, its
/// parent) when a file differs from, is missing from or is not listed in its MANIFEST. A
/// directory of no release (a bare BEIR folder) passes: its results record no release. So
/// does a folder of an export (`coreb export --layout mteb`: a task folder beside a copy of
/// its release's MANIFEST, below the export's `.coreb-export`): it holds the release's data
/// in another layout, not the files the MANIFEST lists, and the export is checked against the
/// release when it is written.
pub(crate) fn refuse_damaged(dir: &Path) -> anyhow::Result<()> {
    let Some((release, _, _)) = coreb_eval::leaderboard::store::find_release(dir)? else {
        return Ok(());
    };
    if release.parent().is_some_and(|export| export.join(".coreb-export").is_file()) {
        return Ok(());
    }
    let (manifest, damaged) = crate::release::verify::checksums(&release)?;
    if damaged.is_empty() {
        return Ok(());
    }
    let list: Vec<String> = damaged.iter().map(|d| format!("  {d}")).collect();
    bail!(
        "`{}` ({}) is damaged: {} file(s) differ from its MANIFEST.json, so a result would not be the release's:\n{}\nrestore the release (as published, or rebuilt with `coreb verify {}`); `coreb verify --checksums {}` lists what differs",
        release.display(),
        manifest.version,
        damaged.len(),
        list.join("\n"),
        release.display(),
        release.display()
    );
}
