//! `coreb verify <release> [--sources DIR]`: rebuild a published release from its
//! regeneration kit in a temporary directory and compare every checksum
//! ([`crate::release::verify`]); with `--checksums`, only compare its files with the sha256 its
//! MANIFEST lists. Exit 1 on a difference in the data, and on a damaged or hostile kit; a
//! rebuild whose data are identical and whose provenance (the toolchain versions it records)
//! differs exits 0, naming the versions, unless `--strict` asks for byte identity.

use std::process::ExitCode;

use crate::cli::VerifyArgs;
use crate::printer::Printer;

/// Run `coreb verify`.
pub(crate) fn verify(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let printer = Printer::new(false);
    let failed = if args.checksums {
        let (manifest, differences, checked) = crate::release::verify::checksums_of(&args.release)?;
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
        // Stopped while no stage listens, the process ends at once: it says the same.
        let said = stopped_line(&args);
        coreb_base::interrupt::say_when_stopped(said);
        let build = |plan, printer| {
            crate::engine::Engine::new(plan, printer, false)?
                .run_until(crate::engine::stage_name::StageName::Release)
                .map(drop)
        };
        crate::release::verify::verify(
            &args.release,
            args.sources.as_deref(),
            args.trust_release_sandbox,
            args.strict,
            printer,
            &build,
        )
        .map_err(|e| stopped(e, &args))?
        .failed(args.strict)
    };
    Ok(if !failed { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// A rebuild stopped by a signal keeps nothing (it ran in a temporary directory, removed on
/// the way out, and the release was only read): say so, and the command that starts it again,
/// instead of the build's own advice about a journal and a manifest that no longer exist.
fn stopped(e: anyhow::Error, args: &VerifyArgs) -> anyhow::Error {
    use coreb_base::interrupt::Interrupted;
    let Some(signal) = e.chain().find_map(|c| c.downcast_ref::<Interrupted>()).copied() else {
        return e;
    };
    anyhow::Error::new(signal).context(stopped_line(args)(signal.name()))
}

/// What `verify` says when a signal stops it, for the signal's name.
fn stopped_line(args: &VerifyArgs) -> impl Fn(&str) -> String + use<> {
    let word = |p: &std::path::Path| crate::manifest::shell_word(&p.to_string_lossy());
    let mut again = format!("coreb verify {}", word(&args.release));
    if let Some(dir) = &args.sources {
        again.push_str(&format!(" --sources {}", word(dir)));
    }
    if args.trust_release_sandbox {
        again.push_str(" --trust-release-sandbox");
    }
    let release = args.release.display().to_string();
    move |signal: &str| {
        format!(
            "verify stopped by {signal}: nothing was kept (the rebuild ran in a temporary directory, now removed) and `{release}` is as it was; run `{again}` to verify it from the start"
        )
    }
}
