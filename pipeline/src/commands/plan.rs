//! `coreb plan <YYYY-MM>`: the manifest of the next monthly release ([`crate::ops::month`]).

use std::process::ExitCode;

use crate::cli::PlanArgs;
use crate::ops::month::{MonthRequest, plan_month};
use crate::printer::Printer;

/// Run `coreb plan`.
pub(crate) fn plan(args: PlanArgs) -> anyhow::Result<ExitCode> {
    let PlanArgs { month, releases_dir, from, out, sources, no_pin, force, allow_overlap } = args;
    plan_month(
        MonthRequest { month, releases_dir, from, out, sources, no_pin, force, allow_overlap },
        Printer::new(false),
    )?;
    Ok(ExitCode::SUCCESS)
}
