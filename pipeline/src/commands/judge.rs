//! `coreb judge`.

use std::process::ExitCode;

use crate::cli::JudgeArgs;

/// Run `coreb judge`.
pub fn judge(_args: JudgeArgs) -> anyhow::Result<ExitCode> {
    Err(super::not_built("judge", 3))
}
