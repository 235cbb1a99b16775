//! Services shared by stages: the LLM gateway and response store (`llm`), the embeddings and
//! rerank client (`embed`) and the evaluator (`evaluator`). The sandbox is its own crate,
//! `coreb-sandbox`.

pub mod embed;
pub mod evaluator;
pub mod llm;
