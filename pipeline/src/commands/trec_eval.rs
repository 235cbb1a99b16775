//! `coreb trec-eval`.

use std::process::ExitCode;

use crate::cli::TrecEvalArgs;

/// Run `coreb trec-eval`.
pub fn trec_eval(_args: TrecEvalArgs) -> anyhow::Result<ExitCode> {
    Err(super::not_built("trec-eval", 6))
}
