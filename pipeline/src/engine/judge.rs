//! The build's toolchain preflight, and what it leaves for `execute` ([`Judge`]).
//!
//! Before any stage of a build that reaches `execute` runs, [`preflight`] sets up the sandbox
//! and asks every program the manifest's languages (`stages.generate.languages`) need for its
//! version, inside the sandbox. A missing one stops the build at once, naming the Debian
//! package to install and the manifest key that drops the language — instead of failing half
//! way through `execute`. The versions are part of `execute`'s key and summary
//! ([`super::execute`]).

use anyhow::Context;
use coreb_judge::{ExecuteError, ToolchainVersions, toolchain_versions};
use coreb_sandbox::Sandbox;

use crate::manifest::RunPlan;

/// The sandbox of a build and the toolchains it found.
#[derive(Debug)]
pub struct Judge {
    /// The sandbox every solution runs in.
    pub sandbox: Sandbox,
    /// Per language: program → version.
    pub versions: ToolchainVersions,
}

/// Set up the sandbox and check the toolchains of the plan's languages.
pub fn preflight(plan: &RunPlan) -> anyhow::Result<Judge> {
    let config = &plan.stages.execute;
    config.validate()?;
    let sandbox = Sandbox::new(config.sandbox.clone()).context("setting up the sandbox")?;
    let languages = &plan.stages.generate.languages;
    let versions = toolchain_versions(config, &sandbox, languages).map_err(|e| match e {
        ExecuteError::MissingToolchain { language, .. } => anyhow::anyhow!(
            "preflight: {e} (`scripts/setup` installs every toolchain the judge runs, from \
             scripts/debian-packages.txt); or remove `{language}` from `stages.generate.languages` in `{}`",
            plan.manifest_path.display()
        ),
        e => anyhow::Error::new(e).context("preflight: asking the toolchains for their versions"),
    })?;
    Ok(Judge { sandbox, versions })
}
