//! `coreb build` and the single-stage commands.

use std::process::ExitCode;

use crate::cli::{BuildArgs, StageArgs, StageName};

/// Run `coreb build`.
pub fn build(_args: BuildArgs) -> anyhow::Result<ExitCode> {
    Err(super::not_built("build", 2))
}

/// Run one stage command.
pub fn stage(stage: StageName, _args: StageArgs) -> anyhow::Result<ExitCode> {
    Err(super::not_built(stage.as_str(), 2))
}
