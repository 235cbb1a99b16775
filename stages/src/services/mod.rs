//! Services shared by stages: the LLM gateway, the sandbox and the evaluator.
//! (Each is added by the issue that builds it.)
pub mod evaluator;
pub mod embed;
