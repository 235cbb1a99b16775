//! `coreb check <release>`: the validity checks of a published release ([`coreb_eval::check`]),
//! printed as a table (or `--json`), with the thresholds the release was built with.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use coreb_data::composition::{Composition, Profile};
use coreb_eval::check::{check_release, sibling_releases};
use coreb_eval::gates::GatesConfig;

use crate::cli::CheckArgs;
use crate::printer::Printer;
use crate::release::verify::Damage;
use coreb_base::errors::Usage;
use coreb_stages::release::CONFIGS;

/// Run `coreb check`.
pub(crate) fn check(args: CheckArgs) -> anyhow::Result<ExitCode> {
    let CheckArgs { release, releases_dir, json } = args;
    let printer = Printer::new(json);
    if !release.join("code_corpus.parquet").is_file() && !release.join("MANIFEST.json").is_file() {
        return Err(Usage(format!(
            "`{}`: not a release directory (no `code_corpus.parquet`, no `MANIFEST.json`)",
            release.display()
        ))
        .into());
    }
    let (version, gates, composition) = manifest_facts(&release)?;
    let others: Vec<PathBuf> = match releases_dir {
        Some(dir) => {
            let probe = dir.join(release.file_name().unwrap_or_default());
            sibling_releases(&probe)
        }
        None => sibling_releases(&release),
    };
    // A table the checks cannot read is named, and no check runs; a file that differs from
    // its MANIFEST (a table edited on purpose, say) is named, and the checks run on it.
    let (unreadable, altered) = damaged_files(&release)?;
    if !unreadable.is_empty() {
        let mut damaged = unreadable;
        damaged.extend(altered);
        let error = format!(
            "`{}`: {} damaged or missing file(s): {}",
            release.display(),
            damaged.len(),
            damaged.iter().map(|d| d.file.as_str()).collect::<Vec<_>>().join(", ")
        );
        return not_checked(&printer, json, &version, &error, &damaged);
    }
    let report = match check_release(&release, &version, &others, &gates, &composition) {
        Ok(report) => report,
        Err(e) => {
            return not_checked(
                &printer,
                json,
                &version,
                &format!("checking `{}`: {}", release.display(), coreb_base::errors::chain(&e)),
                &altered,
            );
        }
    };
    if json {
        let mut value = serde_json::to_value(&report)?;
        if let (Some(obj), false) = (value.as_object_mut(), altered.is_empty()) {
            obj.insert("damaged".into(), serde_json::to_value(&altered)?);
        }
        printer.out(serde_json::to_string_pretty(&value)?);
    } else {
        printer.out(report.to_table().trim_end());
    }
    for d in &altered {
        printer.status(format!("damaged: {d} (as MANIFEST.json lists it)"));
    }
    let failed = report.failures();
    if failed.is_empty() && altered.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    for f in &failed {
        printer.status(f);
    }
    Ok(ExitCode::FAILURE)
}

/// The checks could not run: the error on stderr, and with `--json` one object on stdout
/// (`version`, `error`, the `damaged` files, no `results`); exit 1.
fn not_checked(
    printer: &Printer,
    json: bool,
    version: &str,
    error: &str,
    damaged: &[Damage],
) -> anyhow::Result<ExitCode> {
    if json {
        printer.out(serde_json::to_string_pretty(&serde_json::json!({ "version": version, "passed": false, "error": error, "damaged": damaged, "results": [] }))?);
    }
    for d in damaged {
        printer.status(format!("damaged: {d}"));
    }
    printer.status(format!("error: {error}"));
    Ok(ExitCode::FAILURE)
}

/// The files of the release that are not as published: first every Parquet table the checks
/// read (the eight configs and `problems.parquet`) that is missing or unreadable; then, when it
/// has a `MANIFEST.json`, every other file whose sha256 differs from it, missing or extra.
fn damaged_files(release: &std::path::Path) -> anyhow::Result<(Vec<Damage>, Vec<Damage>)> {
    let mut unreadable = Vec::new();
    for name in
        CONFIGS.iter().map(|c| format!("{c}.parquet")).chain(["problems.parquet".to_owned()])
    {
        let path = release.join(&name);
        if !path.is_file() {
            unreadable.push(Damage { file: name, kind: "missing", detail: String::new() });
            continue;
        }
        let read = coreb_data::tables::read_batches(&path, 8192)
            .and_then(|mut batches| batches.try_for_each(|b| b.map(drop)));
        if let Err(e) = read {
            // The error names the path; the file is named already.
            let detail = std::error::Error::source(&e)
                .map_or_else(|| e.to_string(), coreb_base::errors::chain);
            unreadable.push(Damage {
                file: name,
                kind: "unreadable",
                detail: format!("not a readable Parquet table ({detail})"),
            });
        }
    }
    let mut altered = if release.join("MANIFEST.json").is_file() {
        crate::release::verify::checksums(release)?.1
    } else {
        Vec::new()
    };
    altered.retain(|d| !unreadable.iter().any(|u| u.file == d.file));
    Ok((unreadable, altered))
}

/// The version and gate thresholds recorded in the release's `MANIFEST.json`; without one,
/// the directory name and the default thresholds.
fn manifest_facts(release: &std::path::Path) -> anyhow::Result<(String, GatesConfig, Composition)> {
    let path = release.join("MANIFEST.json");
    let dir_name =
        || release.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if !path.is_file() {
        return Ok((dir_name(), GatesConfig::default(), Composition::of(Profile::Series)));
    }
    let manifest: serde_json::Value = serde_json::from_str(&fs_err::read_to_string(&path)?)
        .with_context(|| format!("reading `{}`", path.display()))?;
    let version =
        manifest.get("version").and_then(|v| v.as_str()).map_or_else(dir_name, str::to_owned);
    let gates = match manifest.pointer("/counts/gates") {
        Some(g) => serde_json::from_value(g.clone())
            .with_context(|| format!("`{}`: `counts.gates`", path.display()))?,
        None => GatesConfig::default(),
    };
    // A release from before the series' composition records none: it was coreb's.
    let composition = match manifest.pointer("/stages/qrels/composition") {
        Some(c) => serde_json::from_value(c.clone())
            .with_context(|| format!("`{}`: `stages.qrels.composition`", path.display()))?,
        None => Composition::of(Profile::Coreb),
    };
    Ok((version, gates, composition))
}
