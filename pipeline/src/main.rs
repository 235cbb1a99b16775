//! The `coreb` binary: parse the command line, run, report the error chain.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = coreb::cli::Cli::parse();
    coreb::init_logging();
    match coreb::run(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(2)
        }
    }
}
