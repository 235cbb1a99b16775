//! `coreb-data`: the data of a CoREB build and release, at the bottom of the crates.
//!
//! - [`problem`]: a LiveCodeBench problem, its tests and ids; [`rewritten`]: the problem after
//!   the counterfactual rewrite, how each test was carried over, its reference solution.
//! - [`solution`]: a generated solution and its language; [`verdict`]: what the judge found;
//!   [`strip`]: a solution's code without comments and docstrings, as a code document holds it
//!   (`generate` strips every answer; the sample's tests check its documents with it).
//! - [`qrels`]: the ids, documents, queries and judgements of the three tasks;
//!   [`composition`]: how a release composes them (`[stages.qrels]`'s profile and switches).
//! - [`tables`]: the Parquet codecs of these types (the build's tables and a release's
//!   published configs); every arrow/parquet call of the project lives there.
//! - [`texts`]: the summary and distractor statements the LLM stages write about a problem.
//! - [`releases`]: published releases on disk, as several commands find and read them, and
//!   the one edit of a published card ([`releases::with_human_validation`]).
//!
//! Only types, their codecs, their ids and the one pure rule on a solution's text ([`strip`]):
//! no stage, evaluation or curation logic, so every other coreb crate can sit above it and none
//! of it imports them.
//!
//! ```
//! use coreb_data::problem::ProblemId;
//! assert_eq!(ProblemId::from_question_id("1873_A").as_str(), "lcb_1873_A");
//! ```
#![deny(missing_docs)]

pub mod composition;
pub mod problem;
pub mod qrels;
pub mod releases;
pub mod rewritten;
pub mod solution;
pub mod strip;
pub mod tables;
pub mod texts;
pub mod verdict;
