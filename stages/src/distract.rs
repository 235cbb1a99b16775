//! `distract`: four distractor statements per rewritten problem, one of each
//! [`DistractorKind`]. They look like the problem but need another solution, and serve as
//! code-to-text hard negatives.
//!
//! The model answers one JSON object keyed by kind; every kind must be present, non-empty
//! after markdown cleaning and label stripping ([`strip_label`]: "Modified Problem
//! Description:" and the like), at least `min_length_ratio` (0.6) of the statement's words,
//! with input, output and constraints sections ([`missing_section`]), and different from the
//! problem's statement, or the problem is rejected with the reason. Kind 4 (`problem_domain`)
//! is the paper's: another domain with no obvious surface mapping to the problem. No I/O; no check that a distractor really needs a
//! different algorithm (that would need a judge).

use serde::{Deserialize, Serialize};

use coreb_data::rewritten::RewrittenProblem;
use coreb_data::texts::{Distractor, DistractorKind};
use coreb_llm::prompt::Prompt;
use coreb_llm::run::{self, LlmStageError, ModelPlan, RejectReason};
use coreb_llm::text::word_count;
use coreb_llm::{LlmGateway, LlmStage};

/// `[stages.distract]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DistractConfig {
    /// Problems in flight at once.
    pub concurrency: usize,
    /// Fewest words a distractor statement may have.
    pub min_words: usize,
    /// Fewest words as a share of the imitated statement's words (CoREB: complete,
    /// same-length statements; 0.6 tolerates a shorter story but not a sketch).
    pub min_length_ratio: f64,
    /// Require the input, output and constraints sections of a complete statement.
    pub require_sections: bool,
}

impl Default for DistractConfig {
    fn default() -> Self {
        DistractConfig {
            concurrency: 8,
            min_words: 20,
            min_length_ratio: 0.6,
            require_sections: true,
        }
    }
}

/// What `distract` returns: four distractors per accepted problem, in problem order then kind
/// order.
pub type DistractOutput = run::Answers<Distractor>;

/// Write four distractors for every problem.
pub async fn distract(
    config: &DistractConfig,
    plan: &ModelPlan,
    prompt: &Prompt,
    problems: &[RewrittenProblem],
    gateway: &dyn LlmGateway,
) -> Result<DistractOutput, LlmStageError> {
    let stage = LlmStage::Distract;
    let results = run::ordered(problems.iter().collect(), config.concurrency, |p| async move {
        let vars = [("title", p.title.as_str()), ("statement", p.statement.as_str())];
        crate::ask_problem(gateway, stage, plan, prompt, p, &vars, |text| parse(text, p, config))
            .await
    })
    .await;
    let mut out = DistractOutput::new(problems.len() as u64, &prompt.sha256);
    out.add(run::settle(results)?, |p, statements, model, rows| {
        for (kind, statement) in DistractorKind::ALL.into_iter().zip(statements) {
            rows.push(Distractor {
                problem_id: p.id.clone(),
                kind,
                statement,
                model: model.clone(),
            });
        }
    });
    Ok(out)
}

fn parse(
    text: &str,
    problem: &RewrittenProblem,
    config: &DistractConfig,
) -> Result<Vec<String>, RejectReason> {
    let v = run::json_answer(text)?;
    let original = problem.statement.split_whitespace().collect::<Vec<_>>().join(" ");
    let min_words = config
        .min_words
        .max((word_count(&problem.statement) as f64 * config.min_length_ratio).ceil() as usize);
    let mut out = Vec::with_capacity(4);
    for kind in DistractorKind::ALL {
        let statement = strip_label(&run::json_text(&v, kind.as_str(), false, true)?);
        if statement.is_empty() {
            return Err(RejectReason::EmptyField { field: kind.as_str().into() });
        }
        if statement.split_whitespace().collect::<Vec<_>>().join(" ") == original {
            return Err(RejectReason::Unchanged { field: kind.as_str().into() });
        }
        let words = word_count(&statement);
        if words < min_words {
            return Err(RejectReason::WordCount { words, min: min_words, max: None });
        }
        if let Some(section) = missing_section(&statement).filter(|_| config.require_sections) {
            return Err(RejectReason::MissingSection {
                field: kind.as_str().into(),
                section: section.into(),
            });
        }
        out.push(statement);
    }
    Ok(out)
}

/// The first of the sections a complete statement has (input, output, constraints) that
/// `statement` does not mention, if any.
pub fn missing_section(statement: &str) -> Option<&'static str> {
    let lower = statement.to_lowercase();
    let has = |w: &str| {
        lower.match_indices(w).any(|(i, _)| !lower[..i].ends_with(|c: char| c.is_alphanumeric()))
    };
    [
        ("input", has("input")),
        ("output", has("output") || has("print") || has("return")),
        ("constraints", has("constraint") || lower.contains('≤') || lower.contains("<=")),
    ]
    .into_iter()
    .find(|(_, ok)| !ok)
    .map(|(name, _)| name)
}

/// `statement` without a leading label line a model may put first ("Modified Problem
/// Description:", "**Distractor 2 (operation type):**", "Problem Statement:").
pub fn strip_label(statement: &str) -> String {
    let mut rest = statement.trim();
    loop {
        let (first, tail) = rest.split_once('\n').unwrap_or((rest, ""));
        let bare = first.trim().trim_matches(|c| c == '*' || c == '#' || c == '_').trim();
        let Some(head) = bare.strip_suffix(':').or_else(|| {
            bare.split_once(':').filter(|(_, after)| after.trim().is_empty()).map(|(h, _)| h)
        }) else {
            break;
        };
        if !LABEL_WORDS.iter().any(|w| head.to_lowercase().contains(w))
            || head.split_whitespace().count() > 8
        {
            break;
        }
        rest = tail.trim_start();
        if rest.is_empty() {
            break;
        }
    }
    // An inline label: "Modified Problem Description: In a kingdom …".
    for w in [
        "modified problem description:",
        "modified problem:",
        "problem description:",
        "problem statement:",
        "new problem:",
    ] {
        if rest.len() > w.len() && rest.get(..w.len()).is_some_and(|h| h.eq_ignore_ascii_case(w)) {
            rest = rest[w.len()..].trim_start();
        }
    }
    rest.to_owned()
}

/// Words of a label line.
const LABEL_WORDS: [&str; 6] =
    ["problem", "distractor", "statement", "description", "variant", "version"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_stripped_and_text_kept() {
        let cases = [
            ("Modified Problem Description:\nA kingdom has N towns.", "A kingdom has N towns."),
            ("**Distractor 4 (problem domain):**\n\nA tree has N nodes.", "A tree has N nodes."),
            ("Modified Problem Description: A kingdom has N towns.", "A kingdom has N towns."),
            // A first line that is content, not a label, stays.
            ("Input: N and M.\nOutput: one line.", "Input: N and M.\nOutput: one line."),
            ("A story about towns.\nInput\nN", "A story about towns.\nInput\nN"),
        ];
        for (text, stripped) in cases {
            assert_eq!(strip_label(text), stripped, "{text:?}");
        }
    }

    #[test]
    fn complete_statements_need_input_output_and_constraints() {
        assert_eq!(
            missing_section(
                "Count the towns. Input: N. Output: the count. Constraints: 1 ≤ N ≤ 10."
            ),
            None
        );
        assert_eq!(missing_section("Count the towns. Print the count."), Some("input"));
        assert_eq!(
            missing_section("Count the towns. The input is N; print the count."),
            Some("constraints")
        );
        assert_eq!(missing_section("Given the input N, 1 <= N <= 5, think."), Some("output"));
    }
}
