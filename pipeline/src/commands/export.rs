//! `coreb export --layout hf-coreb <releases_dir> <out>`: every release as one Hugging Face
//! dataset folder in the published CoREB layout ([`crate::release::export`]); `--layout mteb`:
//! each release as MTEB's six CoREB(v1) tasks ([`crate::release::export::mteb`]).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;

use crate::cli::{ExportArgs, ExportLayout};
use crate::printer::Printer;

/// Run `coreb export`.
pub(crate) fn export(args: ExportArgs) -> anyhow::Result<ExitCode> {
    let ExportArgs { layout, releases_dir, out, candidates, seed, keep_self, all_queries } = args;
    let printer = Printer::new(false);
    // An export replaces `out` whole: inside what it reads it would damage a release.
    let (from, to) = (resolved(&releases_dir)?, resolved(&out)?);
    if to.starts_with(&from) || from.starts_with(&to) {
        coreb_base::usage!(
            "`{}` is inside `{}`, which the export reads (or holds it): write the export outside it, e.g. `coreb export --layout hf-coreb {} /tmp/coreb-hf`",
            out.display(),
            releases_dir.display(),
            releases_dir.display()
        );
    }
    // What an export writes is derived from the releases' files: a damaged release is refused
    // here, as `eval` refuses it (and an evaluation of an MTEB task folder, which holds no
    // file its MANIFEST lists, relies on it).
    for release in releases_in(&releases_dir)? {
        crate::ops::intact::refuse_damaged(&release)?;
    }
    match layout {
        ExportLayout::HfCoreb => {
            let releases = crate::release::export::export_hf_coreb(&releases_dir, &out)
                .with_context(|| {
                    format!("exporting `{}` to `{}`", releases_dir.display(), out.display())
                })?;
            for r in &releases {
                let rows: Vec<String> = r.rows.iter().map(|(c, n)| format!("{c} {n}")).collect();
                printer.status(format!("{}: {}", r.split(), rows.join(", ")));
            }
            printer.out(format!(
                "wrote {} ({} release(s), 8 configs)",
                out.display(),
                releases.len()
            ));
        }
        ExportLayout::Mteb => {
            if candidates < 2 {
                return Err(coreb_base::errors::Usage(format!(
                    "`--candidates`: a reranking list needs at least 2 candidates, got {candidates}"
                ))
                .into());
            }
            let opts = crate::release::export::mteb::MtebOptions {
                candidates,
                seed,
                keep_self,
                all_queries,
            };
            let releases = crate::release::export::mteb::export_mteb(&releases_dir, &out, &opts)
                .with_context(|| {
                    format!(
                        "exporting `{}` to `{}` as MTEB's tasks",
                        releases_dir.display(),
                        out.display()
                    )
                })?;
            for r in &releases {
                for f in &r.folders {
                    printer.status(format!(
                        "{}/{}: {} docs, {} queries, {} positives{}",
                        r.version,
                        f.task,
                        f.docs,
                        f.queries,
                        f.positives,
                        if f.left_out > 0 {
                            format!(", {} queries left out", f.left_out)
                        } else {
                            String::new()
                        }
                    ));
                }
            }
            printer.out(format!(
                "wrote {} ({} release(s), 6 MTEB tasks each)",
                out.display(),
                releases.len()
            ));
        }
        ExportLayout::RerankerTrain => {
            let counts = crate::release::export::reranker_train::export_reranker_train(
                &releases_dir,
                &out,
                seed,
            )
            .with_context(|| {
                format!(
                    "exporting `{}` to `{}` as reranker training records",
                    releases_dir.display(),
                    out.display()
                )
            })?;
            for (task, n) in &counts.records {
                printer.status(format!(
                    "{}: {task}: {} positives, {n} records, {} queries without a hard negative left out",
                    counts.version, counts.positives[task], counts.left_out[task]
                ));
            }
            printer.out(format!(
                "wrote {} ({} records)",
                out.display(),
                counts.records.values().sum::<usize>()
            ));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The releases `dir` names: itself when it holds a MANIFEST, else its folders that do.
fn releases_in(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    if dir.join("MANIFEST.json").is_file() {
        return Ok(vec![dir.to_owned()]);
    }
    let mut found = Vec::new();
    for entry in fs_err::read_dir(dir)? {
        let path = entry?.path();
        if path.join("MANIFEST.json").is_file() {
            found.push(path);
        }
    }
    found.sort();
    Ok(found)
}

/// `path` absolute with its existing part's links resolved (the rest as written), to compare
/// where two paths lead.
fn resolved(path: &Path) -> anyhow::Result<PathBuf> {
    let path = std::path::absolute(path)?;
    let mut head = path.as_path();
    let mut tail = Vec::new();
    loop {
        if let Ok(real) = fs_err::canonicalize(head) {
            return Ok(tail.iter().rev().fold(real, |p, c| p.join(c)));
        }
        match (head.parent(), head.file_name()) {
            (Some(parent), Some(name)) => {
                tail.push(name.to_owned());
                head = parent;
            }
            _ => return Ok(path.clone()),
        }
    }
}
