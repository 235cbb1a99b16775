//! `coreb store stats|export|import|prune <store-dir>`: look after an LLM response store. (The
//! gateway's benchmark is `bench/llm/`, not a command.)

use std::process::ExitCode;

use anyhow::Context;
use coreb_llm::{PruneFilter, ResponseStore};

use crate::cli::{StoreArgs, StoreCommand};
use crate::printer::Printer;

/// Run `coreb store`.
pub(crate) fn store(args: StoreArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        StoreCommand::Stats { store, json } => {
            let printer = Printer::new(json);
            let stats = ResponseStore::open(&store)
                .stats()
                .with_context(|| format!("reading the store `{}`", store.display()))?;
            if json {
                printer.json_line(&serde_json::to_value(&stats)?);
            } else {
                printer.out(format!(
                    "store `{}`: {} entries, {} bytes",
                    store.display(),
                    stats.entries,
                    stats.bytes
                ));
                printer.out(format!(
                    "tokens: {} prompt, {} completion",
                    stats.prompt_tokens, stats.completion_tokens
                ));
                for (name, map) in [
                    ("stage", &stats.per_stage),
                    ("model", &stats.per_model),
                    ("finish_reason", &stats.per_finish_reason),
                    ("unusable", &stats.unusable),
                ] {
                    for (k, v) in map {
                        printer.out(format!("{name} {k}: {v}"));
                    }
                }
                if stats.temporary_files > 0 {
                    printer.out(format!(
                        "{} leftover temporary files (interrupted writes; safe to delete)",
                        stats.temporary_files
                    ));
                }
                for invalid in &stats.invalid {
                    printer.out(format!("invalid: {invalid}"));
                }
            }
            Ok(if stats.invalid.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
        StoreCommand::Prune { store, stage, reason, dry_run } => {
            let printer = Printer::new(false);
            if let Some(r) = &reason
                && !coreb_llm::run::REASON_KINDS.contains(&r.as_str())
            {
                coreb_base::usage!(
                    "`--reason`: `{r}` is no reason kind (one of {}; `coreb store stats` counts those of a store under `unusable`)",
                    coreb_llm::run::REASON_KINDS.join(", ")
                );
            }
            let filter = PruneFilter { stage, reason };
            let pruned = ResponseStore::open(&store)
                .prune(&filter, dry_run)
                .with_context(|| format!("pruning the store `{}`", store.display()))?;
            let verb = if dry_run { "would remove" } else { "removed" };
            for p in &pruned {
                printer.out(format!(
                    "{verb} {} ({}, `{}`, {}): {}: {}",
                    p.key, p.stage, p.item, p.model, p.kind, p.detail
                ));
            }
            let mut by_kind = std::collections::BTreeMap::<&str, u64>::new();
            for p in &pruned {
                *by_kind.entry(p.kind.as_str()).or_default() += 1;
            }
            let kinds =
                by_kind.iter().map(|(k, n)| format!("{k} {n}")).collect::<Vec<_>>().join(", ");
            let kinds = if kinds.is_empty() { String::new() } else { format!(" ({kinds})") };
            let after = if dry_run || pruned.is_empty() { "" } else { "; a rerun asks them again" };
            printer.status(format!(
                "store `{}`: {verb} {} entries{kinds}{after}",
                store.display(),
                pruned.len()
            ));
            Ok(ExitCode::SUCCESS)
        }
        StoreCommand::Author { manifest, authored } => {
            let n = crate::authoring::author(
                &manifest,
                &authored,
                crate::printer::Printer::new(false),
            )?;
            println!("{n} authored answers offered to the LLM stages");
            Ok(ExitCode::SUCCESS)
        }
        StoreCommand::Export { store, out } => {
            let n = ResponseStore::open(&store)
                .export(&out)
                .with_context(|| format!("exporting the store `{}`", store.display()))?;
            Printer::new(false).status(format!("exported {n} entries to `{}`", out.display()));
            Ok(ExitCode::SUCCESS)
        }
        StoreCommand::Import { store, input, overwrite, json } => {
            let printer = Printer::new(json);
            let report =
                ResponseStore::open(&store).import(&input, overwrite).with_context(|| {
                    format!("importing `{}` into `{}`", input.display(), store.display())
                })?;
            printer.json_line(&serde_json::to_value(&report)?);
            printer.status(format!(
                "added {}, unchanged {}, replaced {}, conflicts {}",
                report.added,
                report.unchanged,
                report.replaced,
                report.conflicts.len()
            ));
            for key in &report.conflicts {
                printer.status(format!(
                    "conflict: `{key}` is stored with other content (use --overwrite to replace)"
                ));
            }
            Ok(if report.conflicts.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
    }
}
