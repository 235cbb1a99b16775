//! `coreb verify`.

use std::process::ExitCode;

use crate::cli::VerifyArgs;

/// Run `coreb verify`.
pub fn verify(_args: VerifyArgs) -> anyhow::Result<ExitCode> {
    Err(super::not_built("verify", 5))
}
