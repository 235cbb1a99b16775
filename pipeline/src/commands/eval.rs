//! `coreb eval`: the evaluation loop of [`coreb_eval::run`] over its flags
//! ([`EvalOptions`]), the `[eval]` and `[gates]` of `--manifest` read with the build
//! manifest's loader.

use std::path::Path;
use std::process::ExitCode;

use coreb_eval::run::{EvalOptions, ManifestSettings};

use crate::manifest::RunPlan;
use crate::printer::Printer;

/// Run `coreb eval`.
pub fn eval(options: EvalOptions) -> anyhow::Result<ExitCode> {
    let printer = Printer::new(options.json);
    // The results name the release by its MANIFEST: its files must be the MANIFEST's.
    crate::ops::intact::refuse_damaged(&options.dir)?;
    let runtime = super::runtime()?;
    coreb_eval::run::evaluate(&options, &load_manifest, &printer, runtime.handle())?;
    Ok(ExitCode::SUCCESS)
}

/// What `coreb eval` reads of a build manifest.
fn load_manifest(path: &Path) -> anyhow::Result<ManifestSettings> {
    let plan = RunPlan::load(path, None)?;
    Ok(ManifestSettings {
        gates: plan.gates,
        prompts_file: plan.eval.prompts_file,
        prompts: plan.eval.prompts,
    })
}
