//! One module per command; each turns parsed arguments into calls on the engine or a stage.

pub(crate) mod audit;
pub(crate) mod build;
pub(crate) mod check;
pub(crate) mod compare;
pub(crate) mod corpus;
pub(crate) mod eval;
pub(crate) mod export;
pub(crate) mod init;
pub(crate) mod inputs;
pub(crate) mod judge;
pub(crate) mod leaderboard;
pub(crate) mod plan;
pub(crate) mod programs;
pub(crate) mod review;
pub(crate) mod store;
pub(crate) mod trec_eval;
pub(crate) mod verify;

/// The async runtime of a command that calls an endpoint (downloads, embeddings, an LLM or
/// rerank endpoint): the one every command gets, passed to library code as its
/// [`tokio::runtime::Handle`]. (A build's engine holds its own, made the same way.)
pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(coreb_http::runtime(None)?)
}

/// The error of a command that a later issue builds.
#[allow(dead_code)]
fn not_built(what: &str, issue: u32) -> anyhow::Error {
    anyhow::anyhow!("`{what}` is not built yet (issue #{issue})")
}
