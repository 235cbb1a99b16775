//! `queries`: short developer-style search queries per rewritten problem (DESIGN §1.3),
//! the query texts of the text-to-code `search` subtask.
//!
//! The model answers `{"queries": [...]}` (a bare list is accepted too). Each query is
//! cleaned, folded to one line and kept if it has an allowed number of words and is not a
//! repeat (case-insensitive); at most `count` are kept, and a problem with none is rejected.
//! No I/O.

use serde::{Deserialize, Serialize};

use crate::problem::ProblemId;
use crate::prompt::Prompt;
use crate::rewrite::RewrittenProblem;
use crate::solution::Language;
use crate::services::llm::run::{self, LlmStageError, LlmStageStats, ModelPlan, RejectReason, Rejection};
use crate::services::llm::text::word_count;
use crate::services::llm::{LlmGateway, LlmStage};

/// One search query.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Query {
    /// The problem it searches for.
    pub problem_id: ProblemId,
    /// Its index among the problem's queries (0-based).
    pub index: u32,
    /// The query text.
    pub text: String,
    /// The model that wrote it.
    pub model: String,
    /// The language a language-specific variant is written for (it then names it in its
    /// text); absent for an unconstrained query. A variant shares `index` with the query it
    /// restates, and the qrels stage uses it as that query's constrained form.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<Language>,
}

/// `[stages.queries]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct QueriesConfig {
    /// Problems in flight at once.
    pub concurrency: usize,
    /// Queries asked for (and most kept) per problem.
    pub count: usize,
    /// Fewest words a query may have.
    pub min_words: usize,
    /// Most words a query may have.
    pub max_words: usize,
}

impl Default for QueriesConfig {
    fn default() -> Self {
        QueriesConfig { concurrency: 8, count: 3, min_words: 2, max_words: 30 }
    }
}

/// What `queries` returns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueriesOutput {
    /// Queries in problem order, then index order.
    pub queries: Vec<Query>,
    /// Problems without queries, with the reasons.
    pub rejected: Vec<Rejection>,
    /// Counts.
    pub stats: LlmStageStats,
    /// Queries dropped for their length or as repeats.
    pub dropped_queries: u64,
    /// sha256 of the prompt.
    pub prompt_sha256: String,
}

/// Write search queries for every problem.
pub async fn queries(config: &QueriesConfig, plan: &ModelPlan, prompt: &Prompt, problems: &[RewrittenProblem], gateway: &dyn LlmGateway) -> Result<QueriesOutput, LlmStageError> {
    let stage = LlmStage::Queries;
    if config.count == 0 {
        return Err(LlmStageError::Config { stage, message: "`count` must be at least 1".into() });
    }
    let count = config.count.to_string();
    let count = count.as_str();
    let results = run::ordered(problems.iter().collect(), config.concurrency, |p| async move {
        let mut stats = LlmStageStats::default();
        let messages = prompt.render(&[("title", &p.title), ("statement", &p.statement), ("count", count)]).map_err(|source| LlmStageError::Prompt { stage, source })?;
        let r = run::ask_models(gateway, stage, p.id.as_str(), plan, &messages, prompt, &mut stats, |text| parse(text, config)).await?;
        Ok::<_, LlmStageError>((p, r, stats))
    })
    .await;
    let mut out = QueriesOutput { queries: Vec::new(), rejected: Vec::new(), stats: LlmStageStats::default(), dropped_queries: 0, prompt_sha256: prompt.sha256.clone() };
    out.stats.items_in = problems.len() as u64;
    for (p, r, stats) in run::settle(results)? {
        out.stats += stats;
        match r {
            Ok(((texts, dropped), model)) => {
                out.stats.items_out += 1;
                out.dropped_queries += dropped;
                for (index, text) in texts.into_iter().enumerate() {
                    out.queries.push(Query { problem_id: p.id.clone(), index: index as u32, text, model: model.clone(), language: None });
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

fn parse(text: &str, config: &QueriesConfig) -> Result<(Vec<String>, u64), RejectReason> {
    let v = run::json_answer(text)?;
    let list = v.get("queries").and_then(|q| q.as_array()).or_else(|| v.as_array()).ok_or(RejectReason::MissingField { field: "queries".into() })?;
    let mut kept: Vec<String> = Vec::new();
    let mut dropped = 0u64;
    for item in list {
        let Some(q) = item.as_str() else {
            dropped += 1;
            continue;
        };
        let q = q.split_whitespace().collect::<Vec<_>>().join(" ").trim_matches(|c| c == '"' || c == '`').to_owned();
        let words = word_count(&q);
        let repeat = kept.iter().any(|k| k.eq_ignore_ascii_case(&q));
        if words < config.min_words || words > config.max_words || repeat || kept.len() >= config.count {
            dropped += 1;
            continue;
        }
        kept.push(q);
    }
    if kept.is_empty() {
        return Err(RejectReason::NoQueries);
    }
    Ok((kept, dropped))
}
