//! `coreb check <release>`: the validity checks of a published release ([`coreb_eval::check`]),
//! printed as a table (or `--json`), with the thresholds the release was built with.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use coreb_data::composition::{Composition, Profile};
use coreb_eval::check::{check_release, sibling_releases};
use coreb_eval::gates::GatesConfig;

use crate::cli::CheckArgs;
use coreb_base::printer::Printer;

/// Run `coreb check`.
pub fn check(args: CheckArgs) -> anyhow::Result<ExitCode> {
    let CheckArgs { release, releases_dir, json } = args;
    let printer = Printer::new(json);
    if !release.join("code_corpus.parquet").is_file() {
        anyhow::bail!("`{}`: not a release directory (no `code_corpus.parquet`)", release.display());
    }
    let (version, gates, composition) = manifest_facts(&release)?;
    let others: Vec<PathBuf> = match releases_dir {
        Some(dir) => {
            let probe = dir.join(release.file_name().unwrap_or_default());
            sibling_releases(&probe)
        }
        None => sibling_releases(&release),
    };
    let report = check_release(&release, &version, &others, &gates, &composition).with_context(|| format!("checking `{}`", release.display()))?;
    if json {
        printer.out(serde_json::to_string_pretty(&report)?);
    } else {
        printer.out(report.to_table().trim_end());
    }
    let failed = report.failures();
    if failed.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    for f in &failed {
        printer.status(f);
    }
    Ok(ExitCode::FAILURE)
}

/// The version and gate thresholds recorded in the release's `MANIFEST.json`; without one,
/// the directory name and the default thresholds.
fn manifest_facts(release: &std::path::Path) -> anyhow::Result<(String, GatesConfig, Composition)> {
    let path = release.join("MANIFEST.json");
    let dir_name = || release.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if !path.is_file() {
        return Ok((dir_name(), GatesConfig::default(), Composition::of(Profile::Series)));
    }
    let manifest: serde_json::Value = serde_json::from_str(&fs_err::read_to_string(&path)?).with_context(|| format!("reading `{}`", path.display()))?;
    let version = manifest.get("version").and_then(|v| v.as_str()).map_or_else(dir_name, str::to_owned);
    let gates = match manifest.pointer("/counts/gates") {
        Some(g) => serde_json::from_value(g.clone()).with_context(|| format!("`{}`: `counts.gates`", path.display()))?,
        None => GatesConfig::default(),
    };
    // A release from before the series' composition records none: it was coreb's.
    let composition = match manifest.pointer("/stages/qrels/composition") {
        Some(c) => serde_json::from_value(c.clone()).with_context(|| format!("`{}`: `stages.qrels.composition`", path.display()))?,
        None => Composition::of(Profile::Coreb),
    };
    Ok((version, gates, composition))
}
