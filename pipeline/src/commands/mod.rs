//! One module per command; each turns parsed arguments into calls on the engine or a stage.

pub mod audit;
pub mod build;
pub mod check;
pub mod compare;
pub mod corpus;
pub mod eval;
pub mod export;
pub mod init;
pub mod judge;
pub mod leaderboard;
pub mod plan;
pub mod programs;
pub mod review;
pub mod store;
pub mod trec_eval;
pub mod verify;

/// The error of a command that a later issue builds.
#[allow(dead_code)]
pub(crate) fn not_built(what: &str, issue: u32) -> anyhow::Error {
    anyhow::anyhow!("`{what}` is not built yet (issue #{issue})")
}
