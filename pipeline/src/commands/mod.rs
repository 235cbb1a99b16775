//! One module per command; each turns parsed arguments into calls on the engine or a stage.

pub mod audit;
pub mod build;
pub mod check;
pub mod compare;
pub mod corpus;
pub mod eval;
pub mod export;
pub mod init;
pub mod inputs;
pub mod judge;
pub mod leaderboard;
pub mod plan;
pub mod programs;
pub mod review;
pub mod store;
pub mod trec_eval;
pub mod verify;

/// The async runtime of a command that calls an endpoint (downloads, embeddings, an LLM or
/// rerank endpoint): the one every command gets, passed to library code as its
/// [`tokio::runtime::Handle`]. (A build's engine holds its own, made the same way.)
pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(coreb_http::runtime(None)?)
}

/// The error of a command that a later issue builds.
#[allow(dead_code)]
pub(crate) fn not_built(what: &str, issue: u32) -> anyhow::Error {
    anyhow::anyhow!("`{what}` is not built yet (issue #{issue})")
}
