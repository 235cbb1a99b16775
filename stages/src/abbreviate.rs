//! `abbreviate`: a canonical 50–150-word summary per rewritten problem, the
//! query text of the text-to-code `canonical` subtask.
//!
//! The answer is cleaned of markdown artefacts and must fall within the configured word
//! range, or the problem is rejected with its word count. No I/O.

use serde::{Deserialize, Serialize};

use coreb_data::rewritten::RewrittenProblem;
use coreb_data::texts::Summary;
use coreb_llm::prompt::Prompt;
use coreb_llm::run::{self, LlmStageError, ModelPlan, RejectReason};
use coreb_llm::text::{clean_markdown, word_count};
use coreb_llm::{LlmGateway, LlmStage};

/// `[stages.abbreviate]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AbbreviateConfig {
    /// Problems in flight at once.
    pub concurrency: usize,
    /// Fewest words.
    pub min_words: usize,
    /// Most words.
    pub max_words: usize,
}

impl Default for AbbreviateConfig {
    fn default() -> Self {
        AbbreviateConfig { concurrency: 8, min_words: 50, max_words: 150 }
    }
}

/// What `abbreviate` returns: one summary per accepted problem, in problem order.
pub type AbbreviateOutput = run::Answers<Summary>;

/// Summarise every problem.
pub async fn abbreviate(
    config: &AbbreviateConfig,
    plan: &ModelPlan,
    prompt: &Prompt,
    problems: &[RewrittenProblem],
    gateway: &dyn LlmGateway,
) -> Result<AbbreviateOutput, LlmStageError> {
    let stage = LlmStage::Abbreviate;
    if config.min_words > config.max_words {
        return Err(LlmStageError::Config {
            stage,
            message: format!(
                "`min_words` {} exceeds `max_words` {}",
                config.min_words, config.max_words
            ),
        });
    }
    let results = run::ordered(problems.iter().collect(), config.concurrency, |p| async move {
        let vars = [("title", p.title.as_str()), ("statement", p.statement.as_str())];
        crate::ask_problem(gateway, stage, plan, prompt, p, &vars, |text| parse(text, config)).await
    })
    .await;
    let mut out = AbbreviateOutput::new(problems.len() as u64, &prompt.sha256);
    out.add(run::settle(results)?, |p, text, model, rows| {
        rows.push(Summary { problem_id: p.id.clone(), words: word_count(&text), text, model })
    });
    Ok(out)
}

fn parse(text: &str, config: &AbbreviateConfig) -> Result<String, RejectReason> {
    // One paragraph: fold the lines the model may have broken it into.
    let text = clean_markdown(text).split_whitespace().collect::<Vec<_>>().join(" ");
    if text.is_empty() {
        return Err(RejectReason::EmptyField { field: "summary".into() });
    }
    let words = word_count(&text);
    if words < config.min_words || words > config.max_words {
        return Err(RejectReason::WordCount {
            words,
            min: config.min_words,
            max: Some(config.max_words),
        });
    }
    Ok(text)
}
