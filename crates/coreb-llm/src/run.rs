//! Bounded concurrency over a stage's items, with results in input order.
//!
//! Stages map every item to a future that makes its requests; at most `concurrency` run at
//! once (the gateway's own cap bounds HTTP further) and results come back in the order of
//! the items whatever order they finish in, so outputs do not depend on timing.
//!
//! Also the vocabulary every LLM stage shares: [`ModelPlan`], [`Rejection`] with its typed
//! [`RejectReason`], [`LlmStageStats`], [`LlmStageError`] and the ask-and-parse helpers.

use std::future::Future;

use futures_util::stream::{self, StreamExt};
use serde::Serialize;
use thiserror::Error;

use super::config::{LlmConfig, LlmStage};
use super::{
    ChatMessage, ChatRequest, Completion, IncompletePolicy, JsonSchema, LlmError, LlmFailure,
    LlmGateway, SamplingParams, StructuredOutput,
};
use crate::prompt::{Prompt, PromptError};

/// Run `f` over `items` with at most `concurrency` in flight; results in item order.
pub async fn ordered<T, R, F, Fut>(items: Vec<T>, concurrency: usize, f: F) -> Vec<R>
where
    F: Fn(T) -> Fut,
    Fut: Future<Output = R>,
{
    stream::iter(items.into_iter().map(f)).buffered(concurrency.max(1)).collect().await
}

/// The items' results, or the error that stopped the stage. When several items failed (a
/// refused credential stops every request in flight), the cause is reported, not the first
/// item's "not sent, the run stopped".
pub fn settle<T>(results: Vec<Result<T, LlmStageError>>) -> Result<Vec<T>, LlmStageError> {
    let is_stopped = |e: &LlmStageError| {
        matches!(e, LlmStageError::Gateway { source: LlmError::Stopped { .. }, .. })
    };
    let mut first_stopped = None;
    let mut out = Vec::with_capacity(results.len());
    for r in results {
        match r {
            Ok(v) => out.push(v),
            Err(e) if is_stopped(&e) => {
                first_stopped.get_or_insert(e);
            }
            Err(e) => return Err(e),
        }
    }
    match first_stopped {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// The models and sampling parameters a stage uses (resolved from `[llm]`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelPlan {
    /// Models in order; at least one.
    pub models: Vec<String>,
    /// Sampling parameters.
    pub sampling: SamplingParams,
    /// How the endpoint is asked to follow a JSON answer's schema.
    pub structured_output: StructuredOutput,
    /// What may happen to a cut answer (`samples` is set by stages that sample).
    pub on_incomplete: IncompletePolicy,
}

impl ModelPlan {
    /// The plan of `stage` under `config`.
    pub fn for_stage(config: &LlmConfig, stage: LlmStage) -> Self {
        ModelPlan {
            models: config.models(stage),
            sampling: config.sampling(stage),
            structured_output: config.structured_output,
            on_incomplete: IncompletePolicy {
                max_tokens_ceiling: config.max_tokens_ceiling(stage),
                samples: 1,
            },
        }
    }

    /// One model with the given sampling, the default structured output and no longer try
    /// for cut answers (tests, benchmarks, the model audit).
    pub fn single(model: &str, sampling: SamplingParams) -> Self {
        ModelPlan {
            models: vec![model.to_owned()],
            sampling,
            structured_output: StructuredOutput::default(),
            on_incomplete: IncompletePolicy::default(),
        }
    }

    /// The request for `model` with this plan's sampling, schema form and cut-answer policy.
    pub fn request(
        &self,
        stage: LlmStage,
        item: &str,
        model: &str,
        messages: Vec<ChatMessage>,
        sample: u32,
        prompt: &Prompt,
    ) -> ChatRequest {
        request(stage, item, model, messages, &self.sampling, sample, &prompt.sha256)
            .with_schema(prompt.schema.as_ref(), self.structured_output)
            .with_policy(self.on_incomplete)
    }
}

/// An error that stops an LLM stage as a whole (not one item).
#[derive(Debug, Error)]
pub enum LlmStageError {
    /// A fatal gateway error: credentials refused, replay miss, store failure.
    #[error("stage `{stage}`")]
    Gateway {
        /// The stage.
        stage: LlmStage,
        /// The cause.
        #[source]
        source: LlmError,
    },
    /// A prompt does not fit the values the stage gives it.
    #[error("stage `{stage}`")]
    Prompt {
        /// The stage.
        stage: LlmStage,
        /// The cause.
        #[source]
        source: PromptError,
    },
    /// The stage's config is unusable.
    #[error("stage `{stage}`: {message}")]
    Config {
        /// The stage.
        stage: LlmStage,
        /// What is wrong.
        message: String,
    },
}

/// Why an item's answer could not be used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RejectReason {
    /// The request failed (retries exhausted, rejected, truncated, filtered).
    Llm {
        /// The failure.
        failure: LlmFailure,
    },
    /// The answer holds no JSON value.
    NotJson {
        /// The parser's complaint.
        detail: String,
    },
    /// The answer's JSON does not follow the stage's schema.
    Schema {
        /// Where and why (`/tests/0/input`: expected string, found integer).
        detail: String,
    },
    /// A JSON field is missing or not of the expected type.
    MissingField {
        /// The field.
        field: String,
    },
    /// A field is present but empty after cleaning.
    EmptyField {
        /// The field.
        field: String,
    },
    /// A field repeats the original text instead of rewriting it.
    Unchanged {
        /// The field.
        field: String,
    },
    /// A batch of rewritten tests came back with another count.
    TestCount {
        /// Tests sent.
        expected: usize,
        /// Tests received.
        got: usize,
    },
    /// A rewritten test changed its line structure.
    TestShape {
        /// Index of the test within the problem (public then private).
        test: usize,
        /// What changed.
        detail: String,
    },
    /// The rewritten starter code lost the method the tests call.
    NoMethod,
    /// The rewritten starter's signature no longer gives the judge's driver what the
    /// original's did: a type changed, a parameter was added or dropped, or it is unparsable.
    SignatureChanged {
        /// What changed.
        detail: String,
    },
    /// Too few or too many words.
    WordCount {
        /// Words written.
        words: usize,
        /// Least allowed.
        min: usize,
        /// Most allowed, if there is a most.
        #[serde(skip_serializing_if = "Option::is_none")]
        max: Option<usize>,
    },
    /// No code in a generation answer.
    NoCode,
    /// No usable query in the answer.
    NoQueries,
    /// A query uses a bare one-letter variable (`n`, `k` …) instead of saying what it is.
    PlaceholderVariable {
        /// The letter.
        variable: String,
    },
    /// A query repeats another of the same answer (or its type was answered twice).
    Repeat,
    /// A language variant of a query does not name its language.
    LanguageNotNamed {
        /// The language.
        language: String,
    },
    /// A statement lacks a section it must have (a distractor's input, output or constraints).
    MissingSection {
        /// The field.
        field: String,
        /// The section (`input`, `output`, `constraints`).
        section: String,
    },
}

impl std::fmt::Display for RejectReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RejectReason::Llm { failure } => write!(f, "{}", failure.detail),
            RejectReason::NotJson { detail } => write!(f, "answer is not JSON: {detail}"),
            RejectReason::Schema { detail } => {
                write!(f, "answer does not follow the schema: {detail}")
            }
            RejectReason::MissingField { field } => write!(f, "answer lacks `{field}`"),
            RejectReason::EmptyField { field } => write!(f, "`{field}` is empty"),
            RejectReason::Unchanged { field } => {
                write!(f, "`{field}` is unchanged from the original")
            }
            RejectReason::TestCount { expected, got } => {
                write!(f, "{got} tests came back for {expected} sent")
            }
            RejectReason::TestShape { test, detail } => write!(f, "test {test}: {detail}"),
            RejectReason::NoMethod => write!(f, "the rewritten starter code has no method"),
            RejectReason::SignatureChanged { detail } => {
                write!(f, "the rewritten starter's signature changed: {detail}")
            }
            RejectReason::WordCount { words, min, max: Some(max) } => {
                write!(f, "{words} words, expected {min}–{max}")
            }
            RejectReason::WordCount { words, min, max: None } => {
                write!(f, "{words} words, expected at least {min}")
            }
            RejectReason::NoCode => write!(f, "no code in the answer"),
            RejectReason::NoQueries => write!(f, "no usable query in the answer"),
            RejectReason::PlaceholderVariable { variable } => {
                write!(f, "uses the bare variable `{variable}` instead of saying what it is")
            }
            RejectReason::Repeat => write!(f, "repeats another query of the answer"),
            RejectReason::LanguageNotNamed { language } => {
                write!(f, "the {language} variant does not name its language")
            }
            RejectReason::MissingSection { field, section } => {
                write!(f, "`{field}` has no {section} section")
            }
        }
    }
}

impl RejectReason {
    /// The reason's kind, as rejection counts group them: the snake_case tag, or for a failed
    /// request its failure kind (`truncated`, `retries_exhausted` …).
    pub fn kind(&self) -> &'static str {
        match self {
            RejectReason::Llm { failure } => failure.kind.as_str(),
            RejectReason::NotJson { .. } => "not_json",
            RejectReason::Schema { .. } => "schema",
            RejectReason::MissingField { .. } => "missing_field",
            RejectReason::EmptyField { .. } => "empty_field",
            RejectReason::Unchanged { .. } => "unchanged",
            RejectReason::TestCount { .. } => "test_count",
            RejectReason::TestShape { .. } => "test_shape",
            RejectReason::NoMethod => "no_method",
            RejectReason::SignatureChanged { .. } => "signature_changed",
            RejectReason::WordCount { .. } => "word_count",
            RejectReason::NoCode => "no_code",
            RejectReason::NoQueries => "no_queries",
            RejectReason::PlaceholderVariable { .. } => "placeholder_variable",
            RejectReason::Repeat => "repeat",
            RejectReason::LanguageNotNamed { .. } => "language_not_named",
            RejectReason::MissingSection { .. } => "missing_section",
        }
    }
}

/// Every kind [`RejectReason::kind`] returns (a failed request's kinds among them) and the
/// kinds of a stored answer that did not stop (`truncated`, `content_filter`, `unfinished`):
/// what `coreb store prune --reason` takes.
pub const REASON_KINDS: &[&str] = &[
    "content_filter",
    "empty_field",
    "fatal",
    "language_not_named",
    "missing_field",
    "missing_section",
    "no_code",
    "no_method",
    "no_queries",
    "not_authored",
    "not_json",
    "placeholder_variable",
    "rejected",
    "repeat",
    "retries_exhausted",
    "schema",
    "signature_changed",
    "test_count",
    "test_shape",
    "truncated",
    "unchanged",
    "unfinished",
    "word_count",
];

/// Rejections counted by [`RejectReason::kind`], sorted by kind.
pub fn count_by_reason(rejections: &[Rejection]) -> std::collections::BTreeMap<&'static str, u64> {
    let mut counts = std::collections::BTreeMap::new();
    for r in rejections {
        *counts.entry(r.reason.kind()).or_insert(0) += 1;
    }
    counts
}

/// An item a stage could not use, with the model that failed and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rejection {
    /// The item (problem id, solution id …).
    pub item: String,
    /// The model whose answer failed.
    pub model: String,
    /// The request key, when a response exists (to find it in the store).
    pub key: Option<String>,
    /// Why.
    pub reason: RejectReason,
}

/// What a stage that asks one thing of each item returns (`distract`, `abbreviate`,
/// `generate`): its rows, the items without one (with the reasons), its counts and the hash
/// of its prompt.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Answers<T> {
    /// The rows made of the answers, in item order.
    pub rows: Vec<T>,
    /// Items that produced nothing, with the reasons.
    pub rejected: Vec<Rejection>,
    /// Counts.
    pub stats: LlmStageStats,
    /// sha256 of the prompt.
    pub prompt_sha256: String,
}

impl<T> Answers<T> {
    /// No answer yet, of `items_in` items, asked with the prompt of sha256 `prompt_sha256`.
    pub fn new(items_in: u64, prompt_sha256: &str) -> Self {
        Answers {
            rows: Vec::new(),
            rejected: Vec::new(),
            stats: LlmStageStats { items_in, ..LlmStageStats::default() },
            prompt_sha256: prompt_sha256.to_owned(),
        }
    }

    /// Add each item's outcome ([`settle`]d, in item order): its counts, and the rows that
    /// `rows` makes of its answer and the model that gave it, or its rejections.
    pub fn add<I, A>(
        &mut self,
        outcomes: Vec<ItemOutcome<I, A>>,
        mut rows: impl FnMut(I, A, String, &mut Vec<T>),
    ) {
        for (item, outcome, stats) in outcomes {
            self.stats += stats;
            match outcome {
                Ok((answer, model)) => {
                    self.stats.items_out += 1;
                    rows(item, answer, model, &mut self.rows);
                }
                Err(rejections) => {
                    self.stats.items_rejected += 1;
                    self.rejected.extend(rejections);
                }
            }
        }
    }
}

/// One item's outcome: the item, its answer and the model that gave it (or its rejections),
/// and its counts.
pub type ItemOutcome<I, A> = (I, Result<(A, String), Vec<Rejection>>, LlmStageStats);

/// Counts every LLM stage reports; mergeable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LlmStageStats {
    /// Items given to the stage.
    pub items_in: u64,
    /// Outputs produced.
    pub items_out: u64,
    /// Items that produced nothing.
    pub items_rejected: u64,
    /// Completions served from the store.
    pub from_store: u64,
    /// Completions received from the endpoint.
    pub from_endpoint: u64,
    /// Items that succeeded only with a fallback model.
    pub fallbacks: u64,
    /// Who wrote the answers the stage used or rejected (endpoint, authored, imported).
    pub written_by: WrittenBy,
}

/// Answers counted by [`super::Provenance`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct WrittenBy {
    /// Written by a model behind an endpoint.
    pub endpoint: u64,
    /// Written offline by people.
    pub authored: u64,
    /// Imported, origin unknown.
    pub imported: u64,
}

coreb_base::add_assign_fields!(WrittenBy { endpoint, authored, imported });
coreb_base::add_assign_fields!(LlmStageStats {
    items_in,
    items_out,
    items_rejected,
    from_store,
    from_endpoint,
    fallbacks,
    written_by
});

impl LlmStageStats {
    /// Count where a completion came from.
    pub fn count(&mut self, completion: &Completion) {
        match completion.origin {
            super::Origin::Store => self.from_store += 1,
            super::Origin::Endpoint => self.from_endpoint += 1,
        }
        match completion.provenance {
            super::Provenance::Endpoint => self.written_by.endpoint += 1,
            super::Provenance::Authored => self.written_by.authored += 1,
            super::Provenance::Imported => self.written_by.imported += 1,
        }
    }
}

/// Build a request for an answer in prose or code (see [`ChatRequest::with_schema`] and
/// [`ModelPlan::request`] for JSON answers).
pub fn request(
    stage: LlmStage,
    item: &str,
    model: &str,
    messages: Vec<ChatMessage>,
    sampling: &SamplingParams,
    sample: u32,
    prompt_sha256: &str,
) -> ChatRequest {
    ChatRequest {
        stage,
        item: item.to_owned(),
        model: model.to_owned(),
        messages,
        params: sampling.clone(),
        sample,
        prompt_sha256: prompt_sha256.to_owned(),
        response_format: None,
        on_incomplete: IncompletePolicy::default(),
    }
}

/// Ask the gateway; a fatal error stops the stage, a per-item one becomes a rejection.
pub async fn ask(
    gateway: &dyn LlmGateway,
    request: &ChatRequest,
) -> Result<Result<Completion, Rejection>, LlmStageError> {
    match gateway.complete(request).await {
        Ok(c) => Ok(Ok(c)),
        Err(e) if e.is_fatal() => Err(LlmStageError::Gateway { stage: request.stage, source: e }),
        Err(e) => Ok(Err(Rejection {
            item: request.item.clone(),
            model: request.model.clone(),
            key: Some(request.key()),
            reason: RejectReason::Llm { failure: e.to_failure() },
        })),
    }
}

/// Render `prompt` with `vars`, then ask each model of the plan in turn until `parse` accepts
/// an answer.
///
/// When the prompt has a schema, the endpoint is asked to follow it and the answer is
/// checked against it before `parse` sees it. Returns the parsed value with the model that
/// wrote it, or every model's rejection. The gateway is told each verdict
/// ([`LlmGateway::verdict`]): a rejected answer is recorded as such in the store.
#[allow(clippy::too_many_arguments)]
pub async fn ask_models<T>(
    gateway: &dyn LlmGateway,
    stage: LlmStage,
    item: &str,
    plan: &ModelPlan,
    prompt: &Prompt,
    vars: &[(&str, &str)],
    stats: &mut LlmStageStats,
    parse: impl Fn(&str) -> Result<T, RejectReason>,
) -> Result<Result<(T, String), Vec<Rejection>>, LlmStageError> {
    let messages = prompt.render(vars).map_err(|source| LlmStageError::Prompt { stage, source })?;
    let mut rejections = Vec::new();
    for (i, model) in plan.models.iter().enumerate() {
        let req = plan.request(stage, item, model, messages.to_vec(), 0, prompt);
        match ask(gateway, &req).await? {
            Ok(completion) => {
                stats.count(&completion);
                let checked = match &req.response_format {
                    Some(format) => follows_schema(&completion.text, &format.schema),
                    None => Ok(()),
                };
                match checked.and_then(|()| parse(&completion.text)) {
                    Ok(value) => {
                        gateway.verdict(&completion, None).await;
                        stats.fallbacks += u64::from(i > 0);
                        return Ok(Ok((value, model.clone())));
                    }
                    Err(reason) => {
                        // Recorded beside the stored answer (`coreb store prune --reason`).
                        gateway.verdict(&completion, Some(&reason)).await;
                        rejections.push(Rejection {
                            item: item.to_owned(),
                            model: model.clone(),
                            key: Some(completion.key),
                            reason,
                        })
                    }
                }
            }
            Err(rejection) => rejections.push(rejection),
        }
    }
    Ok(Err(rejections))
}

/// A string field of a JSON object, cleaned of markdown artefacts; missing → `MissingField`,
/// empty after cleaning → `EmptyField` unless `allow_empty`.
pub fn json_text(
    value: &serde_json::Value,
    field: &str,
    allow_empty: bool,
    clean: bool,
) -> Result<String, RejectReason> {
    let raw = value
        .get(field)
        .and_then(|v| v.as_str())
        .ok_or_else(|| RejectReason::MissingField { field: field.to_owned() })?;
    let text =
        if clean { super::text::clean_markdown(raw) } else { raw.trim_matches('\n').to_owned() };
    if text.trim().is_empty() && !allow_empty {
        return Err(RejectReason::EmptyField { field: field.to_owned() });
    }
    Ok(text)
}

/// Parse a model's JSON answer, mapping failure to `NotJson`.
pub fn json_answer(text: &str) -> Result<serde_json::Value, RejectReason> {
    super::text::extract_json(text).map_err(|detail| RejectReason::NotJson { detail })
}

/// Is the answer JSON that follows `schema`?
pub fn follows_schema(text: &str, schema: &JsonSchema) -> Result<(), RejectReason> {
    schema.validate(&json_answer(text)?).map_err(|detail| RejectReason::Schema { detail })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn order_is_kept() {
        let out = ordered((0..20u64).collect(), 8, |i| async move {
            tokio::time::sleep(Duration::from_millis(20 - i)).await;
            i * 2
        })
        .await;
        assert_eq!(out, (0..20u64).map(|i| i * 2).collect::<Vec<_>>());
    }

    #[test]
    fn every_reason_kind_is_listed() {
        use crate::LlmFailureKind as K;
        let failures = [
            K::RetriesExhausted,
            K::Rejected,
            K::Truncated,
            K::ContentFilter,
            K::Unfinished,
            K::NotAuthored,
            K::Fatal,
        ];
        let reasons = [
            RejectReason::NoMethod,
            RejectReason::NoCode,
            RejectReason::NoQueries,
            RejectReason::Repeat,
            RejectReason::Schema { detail: "d".into() },
            RejectReason::TestCount { expected: 1, got: 2 },
        ];
        for kind in
            failures.iter().map(|k| k.as_str()).chain(reasons.iter().map(RejectReason::kind))
        {
            assert!(REASON_KINDS.contains(&kind), "`{kind}` is not listed");
        }
        assert!(REASON_KINDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn settle_reports_the_cause_not_the_stop() {
        let stage = LlmStage::Generate;
        let stopped = |item: &str| {
            Err(LlmStageError::Gateway {
                stage,
                source: LlmError::Stopped { stage, item: item.into() },
            })
        };
        let refused = Err(LlmStageError::Gateway {
            stage,
            source: LlmError::Unauthorized {
                stage,
                item: "b".into(),
                model: "m".into(),
                url: "u".into(),
                status: 401,
            },
        });
        let e = settle::<u8>(vec![Ok(1), stopped("a"), refused, stopped("c")]).unwrap_err();
        assert!(
            matches!(e, LlmStageError::Gateway { source: LlmError::Unauthorized { ref item, .. }, .. } if item == "b"),
            "{e:?}"
        );
        let e = settle::<u8>(vec![Ok(1), stopped("a"), stopped("c")]).unwrap_err();
        assert!(
            matches!(e, LlmStageError::Gateway { source: LlmError::Stopped { ref item, .. }, .. } if item == "a"),
            "{e:?}"
        );
        assert_eq!(settle::<u8>(vec![Ok(1), Ok(2)]).unwrap(), vec![1, 2]);
    }
}
