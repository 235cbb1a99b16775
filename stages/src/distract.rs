//! `distract`: four distractor statements per rewritten problem (DESIGN §1.3), one of each
//! [`DistractorKind`]. They look like the problem but need another solution, and serve as
//! code-to-text hard negatives.
//!
//! The model answers one JSON object keyed by kind; every kind must be present, non-empty
//! after markdown cleaning, long enough, and different from the problem's statement, or the
//! problem is rejected with the reason. No I/O; no check that a distractor really needs a
//! different algorithm (that would need a judge).

use serde::{Deserialize, Serialize};

use crate::problem::ProblemId;
use crate::prompt::Prompt;
use crate::rewrite::RewrittenProblem;
use crate::services::llm::run::{self, LlmStageError, LlmStageStats, ModelPlan, RejectReason, Rejection};
use crate::services::llm::text::word_count;
use crate::services::llm::{LlmGateway, LlmStage};

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
    pub const ALL: [DistractorKind; 4] =
        [DistractorKind::OperationType, DistractorKind::OptimisationObjective, DistractorKind::AlgorithmicApproach, DistractorKind::ProblemDomain];

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

/// `[stages.distract]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DistractConfig {
    /// Problems in flight at once.
    pub concurrency: usize,
    /// Fewest words a distractor statement may have.
    pub min_words: usize,
}

impl Default for DistractConfig {
    fn default() -> Self {
        DistractConfig { concurrency: 8, min_words: 20 }
    }
}

/// What `distract` returns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DistractOutput {
    /// Four per accepted problem, in problem order then kind order.
    pub distractors: Vec<Distractor>,
    /// Problems without distractors, with the reasons.
    pub rejected: Vec<Rejection>,
    /// Counts.
    pub stats: LlmStageStats,
    /// sha256 of the prompt.
    pub prompt_sha256: String,
}

/// Write four distractors for every problem.
pub async fn distract(config: &DistractConfig, plan: &ModelPlan, prompt: &Prompt, problems: &[RewrittenProblem], gateway: &dyn LlmGateway) -> Result<DistractOutput, LlmStageError> {
    let stage = LlmStage::Distract;
    let results = run::ordered(problems.iter().collect(), config.concurrency, |p| async move {
        let mut stats = LlmStageStats::default();
        let messages = prompt.render(&[("title", &p.title), ("statement", &p.statement)]).map_err(|source| LlmStageError::Prompt { stage, source })?;
        let r = run::ask_models(gateway, stage, p.id.as_str(), plan, &messages, prompt, &mut stats, |text| parse(text, p, config.min_words)).await?;
        Ok::<_, LlmStageError>((p, r, stats))
    })
    .await;
    let mut out = DistractOutput { distractors: Vec::new(), rejected: Vec::new(), stats: LlmStageStats::default(), prompt_sha256: prompt.sha256.clone() };
    out.stats.items_in = problems.len() as u64;
    for (p, r, stats) in run::settle(results)? {
        out.stats += stats;
        match r {
            Ok((statements, model)) => {
                out.stats.items_out += 1;
                for (kind, statement) in DistractorKind::ALL.into_iter().zip(statements) {
                    out.distractors.push(Distractor { problem_id: p.id.clone(), kind, statement, model: model.clone() });
                }
            }
            Err(rejections) => {
                out.stats.items_rejected += 1;
                out.rejected.extend(rejections);
            }
        }
    }
    Ok(out)
}

fn parse(text: &str, problem: &RewrittenProblem, min_words: usize) -> Result<Vec<String>, RejectReason> {
    let v = run::json_answer(text)?;
    let original = problem.statement.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = Vec::with_capacity(4);
    for kind in DistractorKind::ALL {
        let statement = run::json_text(&v, kind.as_str(), false, true)?;
        if statement.split_whitespace().collect::<Vec<_>>().join(" ") == original {
            return Err(RejectReason::Unchanged { field: kind.as_str().into() });
        }
        let words = word_count(&statement);
        if words < min_words {
            return Err(RejectReason::WordCount { words, min: min_words, max: None });
        }
        out.push(statement);
    }
    Ok(out)
}
