//! Services shared by stages: the LLM gateway and response store (`llm`) and the embeddings and
//! rerank client (`embed`). The sandbox (`coreb-sandbox`) and the evaluator (`coreb-trec`) are
//! crates of their own.

pub mod embed;
pub mod llm;
