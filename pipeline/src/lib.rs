//! `coreb`: the engine and command line of the CoREB release pipeline.
//!
//! The binary is thin (`main.rs`); [`run`] dispatches a parsed [`cli::Cli`]. The build engine
//! ([`engine`]) runs the stages of a plan resolved from a manifest ([`manifest`]) in the order
//! of its table and keeps their outputs in the artifact store (`artifacts`), skipping a stage
//! whose inputs are unchanged. Beside it, the corpus runner (`corpus`) curates training
//! pairs; both split work into shard processes the same way (`shard`). All terminal output
//! goes through `printer::Printer`, which also renders what the library crates say
//! ([`coreb_base::report::Report`]).
//!
//! The library is the binary's: its public items are what `main.rs` and the integration tests
//! use, everything else is `pub(crate)` (kept so by `unreachable_pub`).

#![warn(unreachable_pub)]

mod artifacts;
mod authoring;
pub mod cli;
mod commands;
mod corpus;
mod corpus_manifest;
pub mod engine;
// Its module docs name the crate-private raw TOML layer.
#[allow(rustdoc::private_intra_doc_links)]
pub mod manifest;
mod ops;
mod printer;
pub mod release;
mod shard;
mod stage_rows;

use std::process::ExitCode;

use cli::{Cli, Command};

/// Log through `tracing` to stderr, filtered by `RUST_LOG` (default: warnings), in colour only
/// on a terminal.
pub fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    // Colour codes only on a terminal (where `NO_COLOR` still turns them off), never in a
    // redirected log.
    let builder = if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        builder
    } else {
        builder.with_ansi(false)
    };
    let _ = builder.try_init();
}

/// Run one command line, after checking that the inputs it names are there
/// (`commands::inputs`).
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    commands::inputs::check(&cli.command)?;
    match cli.command {
        Command::Init(args) => commands::init::init(args),
        Command::Build(args) => commands::build::build(args),
        Command::Stage(args) => commands::build::stage(args),
        Command::Verify(args) => commands::verify::verify(args),
        Command::Check(args) => commands::check::check(args),
        Command::Eval(args) => commands::eval::eval(*args),
        Command::Export(args) => commands::export::export(args),
        Command::Compare(args) => commands::compare::compare(args),
        Command::Leaderboard(args) => commands::leaderboard::leaderboard(args),
        Command::TrecEval(args) => commands::trec_eval::trec_eval(args),
        Command::Judge(args) => commands::judge::judge(args),
        Command::Audit(args) => commands::audit::audit(args),
        Command::Review(args) => commands::review::review(args),
        Command::Corpus(args) => commands::corpus::corpus(args),
        Command::Merge(args) => match args.stage {
            cli::MergeStage::Corpus => commands::corpus::merge(args),
            _ => commands::build::merge(args),
        },
        Command::Plan(args) => commands::plan::plan(args),
        Command::Store(args) => commands::store::store(args),
        Command::Programs(args) => commands::programs::programs(args),
    }
}
