//! `coreb verify <release>`: rebuild a published release and compare every checksum
//! ([`crate::ops::verify`]); exit 1 on any difference.

use std::process::ExitCode;

use coreb_base::printer::Printer;

use crate::cli::VerifyArgs;

/// Run `coreb verify`.
pub fn verify(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let differences = crate::ops::verify::verify(&args.release, args.trust_release_sandbox, Printer::new(false))?;
    Ok(if differences.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
