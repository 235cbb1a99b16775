//! The `coreb` binary: parse the command line, run, report the error chain.

use std::process::ExitCode;

use clap::FromArgMatches;

fn main() -> ExitCode {
    keep_large_buffers();
    let cli = match coreb::cli::Cli::from_arg_matches(&coreb::cli::command().get_matches()) {
        Ok(cli) => cli,
        Err(err) => err.exit(),
    };
    coreb::init_logging();
    if let Err(e) = coreb_base::interrupt::install() {
        eprintln!("warning: SIGINT and SIGTERM will end coreb at once (no handler: {e})");
    }
    match coreb::run(cli) {
        Ok(code) => code,
        Err(err) => {
            let status = exit_status(&err);
            if interrupted(&err).is_some() {
                // One line: what was kept and how to resume (the signal is in it).
                eprintln!("{err}");
            } else {
                eprintln!("error: {err:#}");
            }
            status
        }
    }
}

/// The signal that stopped the work, if one did.
fn interrupted(err: &anyhow::Error) -> Option<coreb_base::interrupt::Interrupted> {
    use coreb_base::interrupt::Interrupted;
    err.downcast_ref::<Interrupted>()
        .or_else(|| err.chain().find_map(|e| e.downcast_ref::<Interrupted>()))
        .copied()
}

/// 0 done, 1 the work failed (a stage, a gate, a check), 2 the command was wrong (a usage
/// error: [`coreb_base::errors::Usage`] anywhere in the chain), 128 + the signal when a signal
/// stopped the work ([`coreb_base::interrupt::Interrupted`]).
fn exit_status(err: &anyhow::Error) -> ExitCode {
    use coreb_base::errors::Usage;
    if let Some(i) = interrupted(err) {
        return ExitCode::from(i.exit_status());
    }
    if err.downcast_ref::<Usage>().is_some() || err.chain().any(|e| e.is::<Usage>()) {
        return ExitCode::from(2);
    }
    ExitCode::from(1)
}

/// Keep freed multi-megabyte buffers in the heap instead of giving them back to the kernel.
///
/// A stage that decodes tests allocates and frees buffers of several MB per row. glibc serves
/// those with `mmap` and unmaps them on free, so every row paid page faults, zeroing and
/// TLB-shootdown interrupts across threads: a third of `ingest`'s CPU on LiveCodeBench-shaped
/// rows (`perf`, `bench/ingest`, issue #13). Peak memory is unchanged; memory once used stays
/// with the process until it exits.
fn keep_large_buffers() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters; called before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
    }
}
