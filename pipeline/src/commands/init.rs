//! `coreb init <dir>`: a benchmark workspace outside this repository ([`crate::ops::init`]).

use std::process::ExitCode;

use crate::cli::InitArgs;
use crate::printer::Printer;

/// Run `coreb init`.
pub(crate) fn init(args: InitArgs) -> anyhow::Result<ExitCode> {
    let printer = Printer::new(false);
    let workspace = crate::ops::init::init(&args.dir)?;
    printer.out(format!(
        "{}: a CoREB workspace ({} files); next, in it:",
        workspace.dir.display(),
        workspace.files.len()
    ));
    printer.out(
        "  coreb build manifests/sample.toml      the sample, offline: releases/sample/v202503",
    );
    printer.out("  coreb eval releases/sample/v202503     BM25 on every task");
    printer.out("  README.md                              months, the schedule, committing the response store");
    Ok(ExitCode::SUCCESS)
}
