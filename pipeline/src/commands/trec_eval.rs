//! `coreb trec-eval`: trec_eval-compatible evaluation of a run file against a qrels file. The
//! behaviour is `coreb-trec`'s ([`coreb_trec::command`]); this maps the CLI's arguments to it.

use std::process::ExitCode;

use coreb_trec::command::{TrecEvalArgs as Args, trec_eval as run};

use crate::cli::TrecEvalArgs;
use crate::printer::Printer;

/// Run `coreb trec-eval`.
pub(crate) fn trec_eval(args: TrecEvalArgs) -> anyhow::Result<ExitCode> {
    let TrecEvalArgs {
        help: _,
        per_query,
        complete,
        max_retrieved,
        level,
        measures,
        qrels,
        run: run_file,
    } = args;
    let text =
        run(&Args { per_query, complete, max_retrieved, level, measures, qrels, run: run_file })?;
    Printer::new(false).out(text.trim_end_matches('\n'));
    Ok(ExitCode::SUCCESS)
}
