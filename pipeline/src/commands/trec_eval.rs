//! `coreb trec-eval`: trec_eval-compatible evaluation of a run file against a qrels file.

use std::process::ExitCode;

use anyhow::Context as _;
use stages::services::evaluator::trec::{TrecOptions, evaluate};
use stages::services::evaluator::{Qrels, Run};

use crate::cli::TrecEvalArgs;
use crate::printer::Printer;

/// Run `coreb trec-eval`.
pub fn trec_eval(args: TrecEvalArgs) -> anyhow::Result<ExitCode> {
    let TrecEvalArgs { help: _, per_query, complete, max_retrieved, level, measures, qrels, run } = args;
    let mut opts = TrecOptions::from_args(&measures)?;
    opts.level = level;
    opts.max_retrieved = max_retrieved;
    opts.complete = complete;
    let qrels = Qrels::read(&qrels).with_context(|| format!("reading qrels `{}`", qrels.display()))?;
    let run = Run::read(&run).with_context(|| format!("reading run `{}`", run.display()))?;
    let report = evaluate(&qrels, &run, &opts)?;
    let text = report.to_text(per_query);
    Printer::new(false).out(text.trim_end_matches('\n'));
    Ok(ExitCode::SUCCESS)
}
