//! `coreb build` and the single-stage commands (`coreb ingest <manifest>` …): both resolve
//! the manifest and run the engine; a stage command runs the stages it needs up to itself.

use std::process::ExitCode;

use crate::cli::{BuildArgs, StageArgs, StageName};
use crate::engine::Engine;
use crate::manifest::RunPlan;
use crate::printer::Printer;

/// Run `coreb build`.
pub fn build(args: BuildArgs) -> anyhow::Result<ExitCode> {
    let BuildArgs { manifest, until, jobs, show_plan, json } = args;
    let plan = RunPlan::load(&manifest, jobs)?;
    let printer = Printer::new(json);
    if show_plan {
        printer.out(serde_json::to_string_pretty(&plan)?);
        return Ok(ExitCode::SUCCESS);
    }
    let until = until.unwrap_or(StageName::Release);
    let engine = Engine::new(plan, printer, true)?;
    engine.run_until(until)?;
    Ok(ExitCode::SUCCESS)
}

/// Run one stage command.
pub fn stage(stage: StageName, args: StageArgs) -> anyhow::Result<ExitCode> {
    let StageArgs { manifest, jobs, json } = args;
    let plan = RunPlan::load(&manifest, jobs)?;
    let printer = Printer::new(json);
    let engine = Engine::new(plan, printer, false)?;
    let reports = engine.run_until(stage)?;
    if let Some(last) = reports.last() {
        printer.json_line(&last.to_json(engine.store()));
    }
    Ok(ExitCode::SUCCESS)
}
