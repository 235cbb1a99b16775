//! `coreb corpus <manifest>` and `coreb merge corpus <manifest>`: the command line of the
//! corpus runner ([`crate::corpus`], which documents the steps and the output).

use std::process::ExitCode;

use coreb_curation::CorpusReport;

use crate::cli::{CorpusArgs, MergeArgs};
use crate::corpus::dedup::DedupStep;
use crate::corpus::{CorpusRun, peak_rss_mib};
use crate::printer::Printer;
use crate::shard::ShardSpec;

/// Run `coreb corpus`: everything in this process, or (`--shard i/N`) one shard process.
pub(crate) fn corpus(args: CorpusArgs) -> anyhow::Result<ExitCode> {
    let CorpusArgs { manifest, json, shard, dedup_tasks, dedup_step, task } = args;
    let printer = Printer::new(json);
    let runtime = super::runtime()?;
    let run = CorpusRun::load(&manifest, printer, runtime.handle().clone())?;
    let (out, again) =
        (run.out().display().to_string(), crate::manifest::shell_word(&manifest.to_string_lossy()));
    coreb_base::interrupt::say_when_stopped(move |signal| {
        format!(
            "coreb corpus stopped by {signal}: the output shards finished before it (each with its `train/shard=NNN/_SUCCESS` in `{out}`) and the sources downloaded into `{out}/.sources/` are kept; run `coreb corpus {again}` again to make the others"
        )
    });
    if let Some(step) = dedup_step {
        return dedup_step_command(&run, step, task, &printer);
    }
    let Some(slice) = shard else {
        summary(&run.whole(dedup_tasks)?, &printer)?;
        return Ok(ExitCode::SUCCESS);
    };
    let part = run.part(slice)?;
    let (i, n) = (slice.index, slice.count);
    if part.already_done {
        printer
            .status(format!("shard {i}/{n} is complete (`{}`); nothing to do", part.dir.display()));
        printer.json_line(&serde_json::json!({"shard": i, "shards": n, "done": true}));
    } else {
        let (input_rows, rows) = (part.input_rows, part.rows);
        printer.status(format!(
            "shard {i}/{n}: {rows} of the {input_rows} pairs read into `{}`; run `coreb merge corpus {}` once every shard is done",
            part.dir.display(),
            manifest.display()
        ));
        printer.json_line(
            &serde_json::json!({"shard": i, "shards": n, "rows_in": input_rows, "rows": rows}),
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Run `coreb corpus --dedup-step <step> [--task I/T]`: one step of the split near-duplicate
/// decision; prints what it found and its peak memory.
fn dedup_step_command(
    run: &CorpusRun,
    step: DedupStep,
    task: Option<ShardSpec>,
    printer: &Printer,
) -> anyhow::Result<ExitCode> {
    let task = match (step, task) {
        (DedupStep::Bands, None) => anyhow::bail!("`--dedup-step bands` needs `--task I/T`"),
        (_, task) => task.unwrap_or(ShardSpec { index: 0, count: 1 }),
    };
    let outcome = run.dedup_step(step, task)?;
    let (i, n) = (task.index, task.count);
    let mut line = serde_json::json!({"step": step.name(), "task": i, "tasks": n, "done": outcome.already_done, "peak_rss_mib": (peak_rss_mib() * 10.0).round() / 10.0});
    if let Some(obj) = line.as_object_mut() {
        obj.extend(outcome.facts);
    }
    if outcome.already_done {
        printer.status(format!(
            "dedup {} {i}/{n} is complete (`{}`); nothing to do",
            step.name(),
            outcome.dir.display()
        ));
    } else {
        printer.status(format!(
            "dedup {} {i}/{n} written to `{}`",
            step.name(),
            outcome.dir.display()
        ));
    }
    printer.json_line(&line);
    Ok(ExitCode::SUCCESS)
}

/// Run `coreb merge corpus`: combine the parts of `coreb corpus --shard i/N` into the output.
pub(crate) fn merge(args: MergeArgs) -> anyhow::Result<ExitCode> {
    let MergeArgs { stage: _, manifest, json, output_dir, jobs, dedup_tasks } = args;
    if output_dir.is_some() || jobs.is_some() {
        anyhow::bail!(
            "`--output-dir` and `--jobs` are for the build stages; the corpus manifest sets `[output] dir`"
        );
    }
    let printer = Printer::new(json);
    let runtime = super::runtime()?;
    summary(
        &CorpusRun::load(&manifest, printer, runtime.handle().clone())?.merge(dedup_tasks)?,
        &printer,
    )?;
    Ok(ExitCode::SUCCESS)
}

/// Print the merged report's counts (`--json`: the stats as one line).
fn summary(report: &CorpusReport, printer: &Printer) -> anyhow::Result<()> {
    let s = &report.stats;
    printer.json_line(&serde_json::to_value(s)?);
    printer.status(format!(
        "{} pairs in, {} records out (exact {}, near {}, language {}, contaminated {}, misaligned {})",
        s.rows_in,
        s.rows_out,
        s.exact_duplicate + s.duplicate_id,
        s.near_duplicate,
        s.too_short + s.url + s.html + s.language,
        s.contaminated,
        s.misaligned
    ));
    Ok(())
}
