//! `coreb-llm`: coreb's LLM gateway, the only code that talks HTTP to OpenAI-compatible chat
//! endpoints, and the renderer of the prompts sent through it ([`prompt`]).
//!
//! Stages build a [`ChatRequest`] and call [`LlmGateway::complete`]; they never see HTTP,
//! retries, rate limits or the response store. [`Gateway`] is the real implementation:
//!
//! - [`store`]: every response is kept under the sha256 of its canonical request
//!   ([`key::request_key`]), one pretty JSON file per entry, written atomically; a rerun
//!   serves stored responses and sends nothing ([`StoreMode`]). Only answers are stored (a
//!   failed attempt never is); a stage's rejection of an answer is recorded in its entry
//!   ([`LlmGateway::verdict`]), for `coreb store prune`.
//! - a circuit per endpoint (`coreb_http::circuit`, `[llm.circuit]`): attempts in a row
//!   across requests that got no answer, or server errors in a row, pause the endpoint for
//!   probe requests, and stop the run with one message ([`LlmError::EndpointDown`]) when the
//!   probes fail too. 401/403 and an unknown model stop it at once.
//! - [`client`]: one POST to `<base_url>/chat/completions` with reqwest, classified into
//!   success / retryable / fatal; coreb's own retry policy (exponential backoff with jitter
//!   through `backon`, honouring `Retry-After`) wraps each call.
//! - the retry loop and rate limits are `coreb-http`'s (`coreb_http::retry`), shared with the
//!   embeddings/rerank client and the downloads of `fetch`.
//! - [`accounting`]: tokens and cost per stage and model.
//! - [`batch`]: the OpenAI Batch API transport (`transport = "batch"`) in front of the gateway.
//! - [`authored`]: answers written offline, recorded as store entries by running the stages.
//! - [`schema`]: the JSON schemas of JSON answers, the forms endpoints take them in
//!   (`llm.structured_output`), and the check of an answer against its schema.
//!
//! An answer cut at `max_tokens` (`finish_reason: length`) is never asked again as is (at
//! temperature 0 with a seed it comes back cut the same way): it gets one longer try when the
//! manifest sets a `max_tokens_ceiling`, another sample only in a stage that asks for several
//! samples at a temperature above 0, and is otherwise a `truncated` failure. Every answer,
//! cut or not, is stored, so a rerun asks nothing the first run was answered.
//!
//! Why not `async-openai`'s client: its built-in retry fires only for OpenAI-shaped error
//! bodies and follows its own schedule, and vLLM-style or plain-text error bodies come back as
//! deserialisation errors; coreb must see the status code, the
//! `Retry-After` header and the raw body of every attempt to apply one policy to all
//! endpoints, and the store wants the message text verbatim. So the gateway speaks the OpenAI
//! chat-completions wire format itself over reqwest (already in the workspace), which every
//! endpoint coreb is meant for accepts (OpenAI, Gemini's and Anthropic's compatible endpoints,
//! vLLM, Ollama, llama.cpp server).
//!
//! - [`prompt`]: prompt templates (`prompts/*.toml`) and their JSON schemas, loaded, hashed
//!   and rendered into [`ChatMessage`]s.
//!
//! What it must not know: the stages' inputs and outputs (problems, solutions, releases) or
//! what models write — each stage in `coreb-stages` builds its prompt's values and parses the
//! answer, so a changed parser never forces new requests. It names coreb's LLM stages
//! ([`LlmStage`]) only as keys of configuration, accounting and the store. Shared mechanisms
//! (atomic writes, sha256, error chains) come from `coreb-base`, the one coreb crate it
//! depends on. `coreb-stages` re-exports it as `coreb_llm` (and the renderer as
//! `coreb_llm::prompt`).
//!
//! Naming: [`store`] is the **response store** (LLM answers by request key); the **artifact
//! store** of stage outputs is the engine's (`coreb::artifacts`); `coreb store` is the command
//! that inspects, exports and imports a response store.

pub mod accounting;
pub mod authored;
pub mod batch;
pub mod client;
pub mod config;
pub mod gateway;
pub mod key;
pub mod prompt;
pub mod run;
pub mod schema;
pub mod store;
pub mod text;

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use thiserror::Error;

pub use accounting::{Accounting, UsageRow};
pub use authored::AuthoredGateway;
pub use batch::BatchGateway;
pub use config::{BatchConfig, LlmConfig, LlmStage, ModelPrice, StageModels, StoreMode, Transport};
pub use gateway::Gateway;
pub use schema::{JsonSchema, StructuredOutput};
pub use store::{PruneFilter, ResponseStore, StoreEntry, StoreError, StoreStats};

/// Who speaks a chat message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions.
    System,
    /// The task.
    User,
    /// An earlier model turn.
    Assistant,
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChatMessage {
    /// Who speaks.
    pub role: Role,
    /// What is said.
    pub content: String,
}

/// Sampling parameters sent with a request (all part of its key). Fields left out of a
/// config take the defaults (temperature 0, top_p 1, max_tokens 4096, seed 0).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SamplingParams {
    /// Temperature.
    pub temperature: f64,
    /// Nucleus sampling.
    pub top_p: f64,
    /// Most tokens the model may write.
    pub max_tokens: u32,
    /// The seed asked of the endpoint (not every endpoint honours it).
    pub seed: Option<u64>,
}

impl Default for SamplingParams {
    fn default() -> Self {
        SamplingParams { temperature: 0.0, top_p: 1.0, max_tokens: 4096, seed: Some(0) }
    }
}

/// One request a stage makes.
///
/// `stage` and `item` say who asks (for error messages, accounting and the store's
/// statistics) and `on_incomplete` what the gateway may do with a cut answer; they are not
/// part of the request key, everything else is (of `response_format`, the mode and the
/// schema's sha256).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The stage asking (`rewrite`, `generate` …).
    pub stage: LlmStage,
    /// The item the request is for (a problem id, a solution id, `lcb_x/tests/0` …).
    pub item: String,
    /// The model.
    pub model: String,
    /// The conversation.
    pub messages: Vec<ChatMessage>,
    /// Sampling parameters.
    pub params: SamplingParams,
    /// Sample index: several samples of one prompt are distinct requests.
    pub sample: u32,
    /// sha256 of the prompt file the messages were rendered from.
    pub prompt_sha256: String,
    /// The schema a JSON answer must follow and how the endpoint is asked for it; `None` for
    /// answers in prose or code.
    pub response_format: Option<ResponseFormat>,
    /// What the gateway may do when an answer is cut or filtered.
    pub on_incomplete: IncompletePolicy,
}

/// The schema of a JSON answer and the form the endpoint is asked for it in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseFormat {
    /// How the endpoint is asked (`none`: not at all; the answer is validated all the same).
    pub mode: StructuredOutput,
    /// The schema.
    pub schema: JsonSchema,
}

/// What the gateway may do when an answer stops for `length` or `content_filter` (never:
/// send the identical request again).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct IncompletePolicy {
    /// An answer cut at `max_tokens` gets one more try with this larger `max_tokens`.
    pub max_tokens_ceiling: Option<u32>,
    /// How many samples the stage asks of this prompt. Above 1, at a temperature above 0, an
    /// answer cut or filtered for good may be replaced by another sample: sample index
    /// `sample + samples × r` with its seed likewise (`llm.retry.resample_attempts` of them).
    pub samples: u32,
}

impl Default for IncompletePolicy {
    fn default() -> Self {
        IncompletePolicy { max_tokens_ceiling: None, samples: 1 }
    }
}

impl ChatRequest {
    /// Ask for `schema` (when there is one) in `mode`.
    pub fn with_schema(mut self, schema: Option<&JsonSchema>, mode: StructuredOutput) -> Self {
        self.response_format = schema.map(|s| ResponseFormat { mode, schema: s.clone() });
        self
    }

    /// Allow what `policy` allows for a cut or filtered answer.
    pub fn with_policy(mut self, policy: IncompletePolicy) -> Self {
        self.on_incomplete = policy;
        self
    }

    /// The request's key in the response store (see [`key::request_key`]).
    pub fn key(&self) -> String {
        key::request_key(self)
    }

    /// A rough token count of the request (4 characters a token) plus its `max_tokens`,
    /// for the tokens-per-minute budget before the real usage is known.
    pub fn estimated_tokens(&self) -> u64 {
        let chars: usize = self.messages.iter().map(|m| m.content.len()).sum();
        (chars as u64).div_ceil(4) + u64::from(self.params.max_tokens)
    }
}

/// Why a model stopped writing.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// It finished.
    Stop,
    /// It ran into `max_tokens`: the text is truncated.
    Length,
    /// The endpoint's content filter cut it.
    ContentFilter,
    /// Anything else the endpoint said (`tool_calls`, `eos` …), kept verbatim.
    #[serde(untagged)]
    Other(String),
}

impl FinishReason {
    /// Parse an endpoint's `finish_reason` (`null` counts as `stop`, as llama.cpp sends it).
    pub fn parse(s: Option<&str>) -> Self {
        match s {
            None | Some("stop") | Some("eos") | Some("end_turn") => FinishReason::Stop,
            Some("length") | Some("max_tokens") => FinishReason::Length,
            Some("content_filter") => FinishReason::ContentFilter,
            Some(other) => FinishReason::Other(other.to_owned()),
        }
    }

    /// Is the text complete and usable?
    pub fn is_complete(&self) -> bool {
        matches!(self, FinishReason::Stop)
    }

    /// The name an endpoint uses (`stop`, `length`, `content_filter` …).
    pub fn as_str(&self) -> &str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
            FinishReason::ContentFilter => "content_filter",
            FinishReason::Other(s) => s,
        }
    }
}

/// Token usage of one response.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenUsage {
    /// Tokens in the prompt.
    pub prompt_tokens: u64,
    /// Tokens the model wrote.
    pub completion_tokens: u64,
}

/// Where a completion came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// Served from the response store; nothing was sent.
    Store,
    /// Sent to the endpoint in this run.
    Endpoint,
}

/// Who wrote an answer's text: a model behind an endpoint, people offline (the bundled
/// sample's content), or an outside source brought in with `coreb store import`. Stored with
/// every entry; a release's card and MANIFEST count it, so content written by hand is never
/// presented as model output.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Provenance {
    /// A model's answer, received from the endpoint.
    #[default]
    Endpoint,
    /// Written offline (by hand), not by a model.
    Authored,
    /// Imported from elsewhere, origin not known to coreb.
    Imported,
}

impl Provenance {
    /// Is it [`Provenance::Endpoint`] (the default, left out of stored entries so that
    /// endpoint entries keep their byte form)?
    pub fn is_endpoint(&self) -> bool {
        *self == Provenance::Endpoint
    }

    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Provenance::Endpoint => "endpoint",
            Provenance::Authored => "authored",
            Provenance::Imported => "imported",
        }
    }
}

/// A model's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Completion {
    /// The request key it is stored under.
    pub key: String,
    /// The message text, exactly as the model wrote it.
    pub text: String,
    /// Why it stopped (always [`FinishReason::Stop`] for a completion handed to a stage).
    pub finish_reason: FinishReason,
    /// Token usage.
    pub usage: TokenUsage,
    /// Store or endpoint.
    pub origin: Origin,
    /// Who wrote the text.
    pub provenance: Provenance,
}

/// A failure of one request.
#[derive(Debug, Error)]
pub enum LlmError {
    /// The endpoint refused the credentials (401/403): the whole run stops.
    #[error(
        "stage `{stage}`, item `{item}`, model `{model}`: `{url}` refused the credentials (HTTP {status}); check the API key variable; the run stops"
    )]
    Unauthorized {
        /// Stage.
        stage: LlmStage,
        /// Item.
        item: String,
        /// Model.
        model: String,
        /// Where the request went.
        url: String,
        /// 401 or 403.
        status: u16,
    },
    /// The endpoint does not know the model (a 404, or a rejection naming the model as
    /// unknown): no request for it can succeed, the whole run stops.
    #[error(
        "stage `{stage}`, item `{item}`: `{url}` does not know model `{model}` (HTTP {status}: {body}); check `llm.model` and `llm.stages.<stage>.models`; the run stops"
    )]
    UnknownModel {
        /// Stage.
        stage: LlmStage,
        /// Item.
        item: String,
        /// Model.
        model: String,
        /// Where the request went.
        url: String,
        /// The status.
        status: u16,
        /// The start of the body.
        body: String,
    },
    /// A 404 that does not name the model: there is no chat-completions endpoint at that URL;
    /// the whole run stops.
    #[error(
        "stage `{stage}`, item `{item}`, model `{model}`: `{url}` answered HTTP 404 ({body}): no chat-completions endpoint there; check `llm.base_url` (most servers want it to end in `/v1`); the run stops"
    )]
    NoEndpoint {
        /// Stage.
        stage: LlmStage,
        /// Item.
        item: String,
        /// Model.
        model: String,
        /// Where the request went.
        url: String,
        /// The start of the body.
        body: String,
    },
    /// The endpoint's circuit tripped: attempts in a row across requests failed, and so did
    /// the probe requests after a pause; nothing more is sent, the whole run stops. The counts
    /// are read when the error is shown, so they include attempts that were in flight.
    #[error("{}", endpoint_down(.url, .circuit))]
    EndpointDown {
        /// Stage.
        stage: LlmStage,
        /// Item.
        item: String,
        /// Where the requests went.
        url: String,
        /// The endpoint's circuit.
        circuit: std::sync::Arc<coreb_http::circuit::Circuit>,
    },
    /// An earlier request stopped the run (credentials refused, unknown model, endpoint
    /// down); nothing more is sent.
    #[error(
        "stage `{stage}`, item `{item}`: not sent, the run stopped after an earlier request's failure"
    )]
    Stopped {
        /// Stage.
        stage: LlmStage,
        /// Item.
        item: String,
    },
    /// Replay mode and the store holds no response for this request.
    #[error(
        "replay: no stored response for stage `{stage}`, item `{item}`, model `{model}`, key `{key}`"
    )]
    ReplayMiss {
        /// Stage.
        stage: LlmStage,
        /// Item.
        item: String,
        /// Model.
        model: String,
        /// Request key.
        key: String,
    },
    /// Every attempt failed with a retryable error.
    #[error(
        "stage `{stage}`, item `{item}`, model `{model}`: gave up after {attempts} attempts; last error: {last}"
    )]
    RetriesExhausted {
        /// Stage.
        stage: LlmStage,
        /// Item.
        item: String,
        /// Model.
        model: String,
        /// Attempts made.
        attempts: u32,
        /// The last attempt's error.
        last: String,
    },
    /// The endpoint rejected the request itself (a 4xx other than 401/403/408/409/429).
    #[error(
        "stage `{stage}`, item `{item}`, model `{model}`: the endpoint rejected the request (HTTP {status}): {body}"
    )]
    Rejected {
        /// Stage.
        stage: LlmStage,
        /// Item.
        item: String,
        /// Model.
        model: String,
        /// Status.
        status: u16,
        /// The start of the body.
        body: String,
    },
    /// Every try stopped for `length`, `content_filter` or another unusable reason.
    #[error("stage `{stage}`, item `{item}`, model `{model}`: {}", incomplete_reason(.stage, .finish_reason, .max_tokens))]
    Incomplete {
        /// Stage.
        stage: LlmStage,
        /// Item.
        item: String,
        /// Model.
        model: String,
        /// The last try's finish reason.
        finish_reason: FinishReason,
        /// The `max_tokens` of every try, in order.
        max_tokens: Vec<u32>,
    },
    /// [`AuthoredGateway`]: no authored answer for this request.
    #[error("stage `{stage}`, item `{item}`, model `{model}`: no authored answer")]
    NotAuthored {
        /// Stage.
        stage: LlmStage,
        /// Item.
        item: String,
        /// Model.
        model: String,
    },
    /// The store could not be read or written.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The API key variable is not set (live and record-only modes need it).
    #[error("the API key variable `{0}` is not set")]
    MissingApiKey(String),
    /// The HTTP client could not be built.
    #[error("building the HTTP client")]
    Client(#[source] reqwest::Error),
}

impl LlmError {
    /// Does this error stop the whole run (rather than losing one item)?
    pub fn is_fatal(&self) -> bool {
        !matches!(
            self,
            LlmError::RetriesExhausted { .. }
                | LlmError::Rejected { .. }
                | LlmError::Incomplete { .. }
                | LlmError::NotAuthored { .. }
        )
    }

    /// Why the item failed, without the stage, item and model that a rejection lists apart.
    pub fn reason(&self) -> String {
        match self {
            LlmError::RetriesExhausted { attempts, last, .. } => {
                format!("gave up after {attempts} attempts; last error: {last}")
            }
            LlmError::Rejected { status, body, .. } => {
                format!("the endpoint rejected the request (HTTP {status}): {body}")
            }
            LlmError::Incomplete { stage, finish_reason, max_tokens, .. } => {
                incomplete_reason(stage, finish_reason, max_tokens)
            }
            LlmError::NotAuthored { .. } => "no authored answer".into(),
            other => other.to_string(),
        }
    }

    /// The per-item failure this error amounts to (for a stage's report).
    pub fn to_failure(&self) -> LlmFailure {
        let kind = match self {
            LlmError::RetriesExhausted { .. } => LlmFailureKind::RetriesExhausted,
            LlmError::Rejected { .. } => LlmFailureKind::Rejected,
            LlmError::Incomplete { finish_reason: FinishReason::ContentFilter, .. } => {
                LlmFailureKind::ContentFilter
            }
            LlmError::Incomplete { finish_reason: FinishReason::Length, .. } => {
                LlmFailureKind::Truncated
            }
            LlmError::Incomplete { .. } => LlmFailureKind::Unfinished,
            LlmError::NotAuthored { .. } => LlmFailureKind::NotAuthored,
            _ => LlmFailureKind::Fatal,
        };
        LlmFailure { kind, detail: self.reason() }
    }
}

/// What [`LlmError::EndpointDown`] says: the URL, why the circuit opened, the last error and
/// the counts of the run.
fn endpoint_down(url: &str, circuit: &coreb_http::circuit::Circuit) -> String {
    use coreb_http::circuit::Opened;
    let r = circuit.report();
    let why = match r.opened {
        Some(Opened::Transport(n)) => format!("{n} attempts in a row got no answer"),
        Some(Opened::ServerErrors(n)) => {
            format!("{n} answers in a row were server errors or not chat completions")
        }
        None => "its attempts failed".to_owned(),
    };
    let (wait, each) = (circuit.config().open_secs, circuit.config().probe_attempts);
    let probes = match r.failed_probes {
        0 => String::new(),
        1 => format!(", and so did the probe request after a {wait} s pause ({each} attempts)"),
        n => {
            format!(", and so did {n} probe requests after a {wait} s pause ({each} attempts each)")
        }
    };
    let t = r.tally;
    let unreached = t.attempts - t.reached;
    let unreached = if unreached > 0 {
        format!(" ({unreached} of {} attempts could not connect)", t.attempts)
    } else {
        String::new()
    };
    format!(
        "the endpoint `{url}` looks down: {why}{probes}; last error: {}; in this run: {} requests sent, {} failures{unreached}; nothing more is sent, the run stops (when an endpoint counts as down: `llm.circuit`)",
        r.last_failure.as_deref().unwrap_or("none"),
        t.reached,
        t.failed,
    )
}

/// What an incomplete answer's rejection says: each `max_tokens` tried and what would help.
fn incomplete_reason(stage: &LlmStage, finish: &FinishReason, max_tokens: &[u32]) -> String {
    let tries = match max_tokens {
        [one] => format!("`max_tokens` = {one}"),
        [first, rest @ ..] if rest.iter().all(|m| m == first) => {
            format!("`max_tokens` = {first}, in each of {} tries", max_tokens.len())
        }
        _ => format!(
            "`max_tokens` = {}",
            max_tokens.iter().map(u32::to_string).collect::<Vec<_>>().join(", then ")
        ),
    };
    match finish {
        FinishReason::Length if max_tokens.len() == 1 => {
            format!(
                "the answer was cut at {tries}; set `llm.stages.{stage}.max_tokens_ceiling` (or `llm.max_tokens_ceiling`) to allow one longer try, or raise `max_tokens`"
            )
        }
        FinishReason::Length => format!("the answer was cut at {tries}"),
        FinishReason::ContentFilter => {
            format!("the endpoint's content filter stopped the answer ({tries})")
        }
        other => format!("the answer stopped with finish_reason `{}` ({tries})", other.as_str()),
    }
}

/// The kind of a per-item LLM failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LlmFailureKind {
    /// Retries exhausted (429, 5xx, timeouts, broken bodies).
    RetriesExhausted,
    /// The endpoint rejected the request.
    Rejected,
    /// Cut at `max_tokens` (`finish_reason: length`), the longer try included.
    Truncated,
    /// `finish_reason: content_filter`.
    ContentFilter,
    /// Another finish reason than `stop` (`tool_calls` …).
    Unfinished,
    /// No authored answer ([`AuthoredGateway`]).
    NotAuthored,
    /// A fatal error (only seen when a stage reports instead of stopping).
    Fatal,
}

impl LlmFailureKind {
    /// The snake_case name (as in `rejections.jsonl`).
    pub fn as_str(self) -> &'static str {
        match self {
            LlmFailureKind::RetriesExhausted => "retries_exhausted",
            LlmFailureKind::Rejected => "rejected",
            LlmFailureKind::Truncated => "truncated",
            LlmFailureKind::ContentFilter => "content_filter",
            LlmFailureKind::Unfinished => "unfinished",
            LlmFailureKind::NotAuthored => "not_authored",
            LlmFailureKind::Fatal => "fatal",
        }
    }
}

/// A per-item LLM failure, as stages report it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LlmFailure {
    /// What kind.
    pub kind: LlmFailureKind,
    /// Why, in words (the stage, item and model are listed beside it).
    pub detail: String,
}

/// What stages call: one completion per request.
///
/// Object-safe so that stages take `&dyn LlmGateway`; tests substitute their own.
pub trait LlmGateway: Send + Sync {
    /// Complete one request: from the store, or from the endpoint under the retry policy.
    /// A returned completion always finished with [`FinishReason::Stop`].
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<Completion, LlmError>>;

    /// Requests, tokens and cost so far, per stage and model (empty for gateways that keep
    /// no accounts).
    fn usage(&self) -> Vec<UsageRow> {
        Vec::new()
    }

    /// The store keys of every answer `stage` was given so far (from the store or the
    /// endpoint, complete or not: a replay asks for each), sorted; empty for gateways that
    /// keep no store.
    fn answers_used(&self, stage: LlmStage) -> Vec<String> {
        let _ = stage;
        Vec::new()
    }

    /// What the stage made of `completion`: `Some(reason)` when it rejected the answer (a JSON
    /// answer that does not follow its schema, one without code …), `None` when it used it. A
    /// gateway with a response store records the rejection in the answer's entry
    /// (`coreb store prune` removes such entries so that a rerun asks again) and clears one
    /// recorded earlier once the answer is used; others ignore it.
    fn verdict<'a>(
        &'a self,
        completion: &'a Completion,
        rejection: Option<&'a run::RejectReason>,
    ) -> BoxFuture<'a, ()> {
        let _ = (completion, rejection);
        Box::pin(async {})
    }
}

/// A gateway that calls `progress` after every request it completes or fails (progress bars
/// of the LLM stages and the model audit); answers pass through unchanged.
pub struct Counted<'g> {
    /// The gateway asked.
    pub inner: &'g dyn LlmGateway,
    /// Called once per finished request.
    pub progress: &'g (dyn Fn() + Sync),
}

impl LlmGateway for Counted<'_> {
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<Completion, LlmError>> {
        Box::pin(async move {
            let result = self.inner.complete(request).await;
            (self.progress)();
            result
        })
    }

    fn usage(&self) -> Vec<UsageRow> {
        self.inner.usage()
    }

    fn answers_used(&self, stage: LlmStage) -> Vec<String> {
        self.inner.answers_used(stage)
    }

    fn verdict<'a>(
        &'a self,
        completion: &'a Completion,
        rejection: Option<&'a run::RejectReason>,
    ) -> BoxFuture<'a, ()> {
        self.inner.verdict(completion, rejection)
    }
}
