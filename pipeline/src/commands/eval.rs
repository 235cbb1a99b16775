//! `coreb eval`.

use std::process::ExitCode;

use crate::cli::EvalArgs;

/// Run `coreb eval`.
pub fn eval(_args: EvalArgs) -> anyhow::Result<ExitCode> {
    Err(super::not_built("eval", 6))
}
