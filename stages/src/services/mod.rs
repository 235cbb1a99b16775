//! Services shared by stages: the LLM gateway, response store and prompt rendering (`llm`,
//! the `coreb-llm` crate, re-exported) and the embeddings and rerank client (`embed`). The
//! sandbox (`coreb-sandbox`) and the evaluator (`coreb-trec`) are crates of their own.

pub mod embed;
pub use coreb_llm as llm;
