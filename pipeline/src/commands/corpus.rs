//! `coreb corpus <manifest>` and `coreb merge corpus <manifest>`: the command line of the
//! corpus runner ([`crate::engine::corpus`], which documents the steps and the output).

use std::process::ExitCode;

use stages::corpus::CorpusReport;

use crate::cli::{CorpusArgs, MergeArgs};
use crate::engine::corpus::CorpusRun;
use crate::printer::Printer;

/// Run `coreb corpus`: everything in this process, or (`--shard i/N`) one shard process.
pub fn corpus(args: CorpusArgs) -> anyhow::Result<ExitCode> {
    let CorpusArgs { manifest, json, shard } = args;
    let printer = Printer::new(json);
    let run = CorpusRun::load(&manifest, printer)?;
    let Some(slice) = shard else {
        summary(&run.whole()?, &printer)?;
        return Ok(ExitCode::SUCCESS);
    };
    let part = run.part(slice)?;
    let (i, n) = (slice.index, slice.count);
    if part.already_done {
        printer.status(format!("shard {i}/{n} is complete (`{}`); nothing to do", part.dir.display()));
        printer.json_line(&serde_json::json!({"shard": i, "shards": n, "done": true}));
    } else {
        let (input_rows, rows) = (part.input_rows, part.rows);
        printer.status(format!(
            "shard {i}/{n}: {rows} of the {input_rows} pairs read into `{}`; run `coreb merge corpus {}` once every shard is done",
            part.dir.display(),
            manifest.display()
        ));
        printer.json_line(&serde_json::json!({"shard": i, "shards": n, "rows_in": input_rows, "rows": rows}));
    }
    Ok(ExitCode::SUCCESS)
}

/// Run `coreb merge corpus`: combine the parts of `coreb corpus --shard i/N` into the output.
pub fn merge(args: MergeArgs) -> anyhow::Result<ExitCode> {
    let MergeArgs { stage: _, manifest, json, output_dir, jobs } = args;
    if output_dir.is_some() || jobs.is_some() {
        anyhow::bail!("`--output-dir` and `--jobs` are for the build stages; the corpus manifest sets `[output] dir`");
    }
    let printer = Printer::new(json);
    summary(&CorpusRun::load(&manifest, printer)?.merge()?, &printer)?;
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
