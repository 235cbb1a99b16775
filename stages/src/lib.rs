//! The stages of a CoREB build and the services they share.
//!
//! Each stage module is a function from typed inputs to typed outputs (DESIGN §1); the
//! engine in the `coreb` crate loads input artifacts, calls the stage and writes its outputs.
//! Stages that need the network, a sandbox or a model take it as a parameter.
//!
//! Built so far: [`fetch`] (the one stage whose job *is* I/O: downloads), [`ingest`],
//! [`dedup`], [`filter`], and the LLM stages [`rewrite`], [`distract`], [`abbreviate`],
//! [`generate`] and [`queries`] over the gateway in [`services::llm`] with prompts from
//! [`prompt`]. The problems table codec lives in [`tables`]; [`check`] holds a release's
//! validity checks (polars analytics over its Parquet configs).
//!
//! Names, one per concept. A stage's name is the same at each layer: [`release`] is the
//! `release` stage's pure part (BEIR files, dataset card, disjointness check), and the
//! engine's `coreb::engine::release` runs it and publishes; the Parquet configs a release
//! publishes are [`tables::published`]. Stores: the **artifact store** of stage outputs is
//! the engine's (`coreb::artifacts`), the **response store** of LLM answers is
//! [`services::llm::store`] (crate `coreb-llm`), the **results store** of recorded
//! evaluations is [`leaderboard`]'s. Evaluation: [`evaluate`] is the stage module that runs
//! retrievers over a release and reports; the measures themselves are the evaluator crate,
//! `coreb-trec`. The verdict types ([`verdict`]) sit apart from [`execute`], which makes
//! them, and [`tables::verdicts`], which stores them, so neither imports the other.
//!
//! ```
//! use stages::problem::ProblemId;
//! assert_eq!(ProblemId::from_question_id("1873_A").as_str(), "lcb_1873_A");
//! ```
#![deny(missing_docs)]

// One copy of each shared mechanism, re-exported under the paths stages have always used.
pub use coreb_base::{durable, errors, hashing};
pub use coreb_llm::prompt;

pub mod abbreviate;
pub mod check;
pub mod corpus;
pub mod dedup;
pub mod distract;
pub mod evaluate;
pub mod export;
pub mod execute;
pub mod fetch;
pub mod filter;
pub mod generate;
pub mod ingest;
pub mod leaderboard;
pub mod problem;
pub mod qrels;
pub mod queries;
pub mod release;
pub mod rewrite;
pub mod services;
pub mod signature;
pub mod solution;
pub mod strip;
pub mod tables;
pub mod verdict;
