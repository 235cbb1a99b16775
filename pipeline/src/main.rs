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
    match coreb::run(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(2)
        }
    }
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
