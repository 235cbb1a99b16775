//! Services shared by stages: the LLM gateway and response store (`llm`), the embeddings and
//! rerank client (`embed`), the sandbox (`sandbox`) and the evaluator (`evaluator`).

pub mod embed;
pub mod evaluator;
pub mod llm;
pub mod sandbox;
