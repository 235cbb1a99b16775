//! `coreb audit`.

use std::process::ExitCode;

use crate::cli::AuditArgs;

/// Run `coreb audit`.
pub fn audit(_args: AuditArgs) -> anyhow::Result<ExitCode> {
    Err(super::not_built("audit", 7))
}
