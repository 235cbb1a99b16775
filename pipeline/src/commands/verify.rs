//! `coreb verify <release> [--sources DIR]`: rebuild a published release from its
//! regeneration kit in a temporary directory and compare every checksum
//! ([`crate::ops::verify`]); with `--checksums`, only compare its files with the sha256 its
//! MANIFEST lists. Exit 1 on a difference in the data, and on a damaged or hostile kit; a
//! rebuild whose data are identical and whose provenance (the toolchain versions it records)
//! differs exits 0, naming the versions, unless `--strict` asks for byte identity.

use std::process::ExitCode;

use crate::cli::VerifyArgs;
use crate::printer::Printer;

/// Run `coreb verify`.
pub fn verify(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let printer = Printer::new(false);
    let failed = if args.checksums {
        let (manifest, differences, checked) = crate::ops::verify::checksums_of(&args.release)?;
        for d in &differences {
            printer.out(format!("published: {d}"));
        }
        if differences.is_empty() {
            printer.out(format!(
                "{}: {checked} files match the sha256 in MANIFEST.json",
                manifest.version
            ));
        } else {
            printer.out(format!(
                "{}: {} difference(s) from MANIFEST.json",
                manifest.version,
                differences.len()
            ));
        }
        !differences.is_empty()
    } else {
        crate::ops::verify::verify(
            &args.release,
            args.sources.as_deref(),
            args.trust_release_sandbox,
            args.strict,
            printer,
        )?
        .failed(args.strict)
    };
    Ok(if !failed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
