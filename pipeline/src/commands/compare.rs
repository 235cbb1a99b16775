//! `coreb compare A B`: two systems on the same release, per task and subtask, on one
//! measure; the comparison is [`coreb_eval::compare`]'s.

use std::process::ExitCode;

use coreb_eval::compare::{CompareOptions, to_markdown};

use crate::cli::CompareArgs;
use crate::printer::Printer;

/// Run `coreb compare`.
pub(crate) fn compare(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let CompareArgs { a, b, release, metric, resamples, seed, json } = args;
    let printer = Printer::new(json);
    if let Some(release) = &release {
        crate::ops::intact::refuse_damaged(release)?;
    }
    let comparison =
        coreb_eval::compare::compare(&CompareOptions { a, b, release, metric, resamples, seed })?;
    if comparison.release.is_none() && comparison.control.is_none() {
        printer.status("warning: A or B records no release (a bare BEIR folder, or results of an older coreb): whether both are on the same release is not checked");
    }
    if json {
        printer.out(serde_json::to_string_pretty(&comparison)?);
    } else {
        printer.out(to_markdown(&comparison).trim_end());
    }
    Ok(ExitCode::SUCCESS)
}
