//! The texts the LLM stages write about a rewritten problem besides its statement: its
//! canonical summary ([`Summary`], written by `abbreviate`) and its distractor statements
//! ([`Distractor`] of each [`DistractorKind`], written by `distract`). The stages write them
//! as JSONL artifacts; `qrels` makes `text_corpus` documents of them and the review page shows
//! them.

use serde::{Deserialize, Serialize};

use crate::problem::ProblemId;

/// A problem's canonical summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    /// The problem.
    pub problem_id: ProblemId,
    /// The summary text.
    pub text: String,
    /// Its word count.
    pub words: usize,
    /// The model that wrote it.
    pub model: String,
}

/// The four kinds of distractor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DistractorKind {
    /// The core operation changes (count instead of enumerate, max instead of sum).
    OperationType,
    /// What is optimised changes (minimise instead of maximise).
    OptimisationObjective,
    /// A different algorithmic technique is needed.
    AlgorithmicApproach,
    /// The underlying structure changes (sequence → tree).
    ProblemDomain,
}

impl DistractorKind {
    /// All four, in order.
    pub const ALL: [DistractorKind; 4] = [
        DistractorKind::OperationType,
        DistractorKind::OptimisationObjective,
        DistractorKind::AlgorithmicApproach,
        DistractorKind::ProblemDomain,
    ];

    /// The JSON key of the kind.
    pub fn as_str(self) -> &'static str {
        match self {
            DistractorKind::OperationType => "operation_type",
            DistractorKind::OptimisationObjective => "optimisation_objective",
            DistractorKind::AlgorithmicApproach => "algorithmic_approach",
            DistractorKind::ProblemDomain => "problem_domain",
        }
    }
}

/// One distractor statement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Distractor {
    /// The problem it imitates.
    pub problem_id: ProblemId,
    /// Its kind.
    pub kind: DistractorKind,
    /// The statement.
    pub statement: String,
    /// The model that wrote it.
    pub model: String,
}
