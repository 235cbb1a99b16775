//! `[llm]` of a manifest: endpoint, models per stage, limits, retries, prices, store mode.
//!
//! Raw serde layer with `deny_unknown_fields`; [`LlmConfig::validate`] checks what serde
//! cannot. The API key itself is never here: only the name of the variable holding it.

use std::collections::BTreeMap;

use coreb_http::{CircuitConfig, RetryConfig};
use serde::{Deserialize, Serialize};

use super::SamplingParams;
use super::schema::StructuredOutput;

/// Makes [`LlmStage`] from its rows: `Variant = "name" (also the prompt's file stem and the
/// manifest's key), json <answers in JSON, with a schema beside its prompt>, build <its prompt
/// is one of the build's [`crate::Prompts`]>`. An LLM stage's prompt is its row here and its
/// files in `prompts/`.
macro_rules! llm_stages {
    ($(
        $(#[$doc:meta])*
        $variant:ident = $name:literal, json $json:literal, build $build:literal;
    )*) => {
        /// The LLM stages (and the sub-steps of `rewrite`, which have prompts of their own).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum LlmStage {
            $( $(#[$doc])* $variant, )*
        }

        impl LlmStage {
            /// Every LLM stage.
            pub const ALL: [LlmStage; [$($name),*].len()] = [$(LlmStage::$variant),*];

            /// Is the stage's answer a JSON object (with a schema beside its prompt)?
            pub fn answers_json(self) -> bool {
                match self {
                    $(LlmStage::$variant => $json,)*
                }
            }

            /// Is its prompt one of the build's ([`crate::Prompts`]; `rerank`'s is
            /// `coreb eval`'s)?
            pub fn in_build(self) -> bool {
                match self {
                    $(LlmStage::$variant => $build,)*
                }
            }

            /// The snake_case name (also the prompt's file stem).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(LlmStage::$variant => $name,)*
                }
            }
        }
    };
}

llm_stages! {
    /// Counterfactual rewrite of title, statement and starter code.
    Rewrite = "rewrite", json true, build true;
    /// Rewriting test cases in batches (part of `rewrite`).
    RewriteTests = "rewrite_tests", json true, build true;
    /// A Python solution of the original problem (part of `rewrite`, asked of the model that
    /// rewrote it, when a test was rewritten: `execute` re-checks the rewritten tests with it).
    Reference = "reference", json false, build true;
    /// That solution adapted to the rewritten statement (part of `rewrite`).
    AdaptReference = "adapt_reference", json false, build true;
    /// Four distractor statements.
    Distract = "distract", json true, build true;
    /// The canonical summary.
    Abbreviate = "abbreviate", json false, build true;
    /// Solutions.
    Generate = "generate", json false, build true;
    /// Search queries.
    Queries = "queries", json true, build true;
    /// Listwise reranking in `coreb eval` (not a build stage).
    Rerank = "rerank", json false, build false;
}

coreb_base::display_as_str!(LlmStage);

/// What the gateway does with the response store.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StoreMode {
    /// Serve stored responses; send and store on a miss.
    #[default]
    Live,
    /// Store only: a miss is an error naming the request; nothing is ever sent.
    Replay,
    /// Send every request even when stored, and overwrite the entry (refresh).
    RecordOnly,
}

/// Price of a model in the currency of the user's choice per 1M tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPrice {
    /// Per 1M prompt tokens.
    pub input_per_million: f64,
    /// Per 1M completion tokens.
    pub output_per_million: f64,
}

/// `[llm.stages.<stage>]`: the models of one stage and overrides of the default sampling.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StageModels {
    /// Models, in order (empty: the default model). `generate` uses every one; the other
    /// stages use the first and fall back to the next when an item fails.
    pub models: Vec<String>,
    /// Temperature override.
    pub temperature: Option<f64>,
    /// top_p override.
    pub top_p: Option<f64>,
    /// max_tokens override.
    pub max_tokens: Option<u32>,
    /// The largest `max_tokens` of the one longer try an answer cut at `max_tokens` gets
    /// (overrides `llm.max_tokens_ceiling`).
    pub max_tokens_ceiling: Option<u32>,
    /// Seed override.
    pub seed: Option<u64>,
}

/// `[llm]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmConfig {
    /// Endpoint base, including `/v1` (`https://api.openai.com/v1`, `http://127.0.0.1:8000/v1`).
    pub base_url: String,
    /// Name of the environment variable holding the API key (never the key itself).
    pub api_key_env: String,
    /// What to do with the response store.
    pub mode: StoreMode,
    /// Default model.
    pub model: String,
    /// Default sampling parameters.
    pub sampling: SamplingParams,
    /// How the endpoint is asked for JSON that follows a stage's schema (`json_schema`,
    /// `json_object_schema`, `guided_json`, `none`).
    pub structured_output: StructuredOutput,
    /// An answer cut at `max_tokens` is asked once more with this larger `max_tokens`
    /// (none: it is rejected as `truncated`). Per stage: `stages.<stage>.max_tokens_ceiling`.
    pub max_tokens_ceiling: Option<u32>,
    /// An LLM stage that keeps less than this share of its items stops the build (and one
    /// that keeps none always does), naming its rejections.
    pub min_kept_share: f64,
    /// Per-stage models and overrides.
    pub stages: BTreeMap<LlmStage, StageModels>,
    /// Requests in flight at once, over all stages.
    pub concurrency: usize,
    /// Requests per minute (0: unlimited).
    pub requests_per_minute: u32,
    /// Tokens per minute, estimated before sending (0: unlimited).
    pub tokens_per_minute: u64,
    /// Whole-request timeout (s): a hung endpoint counts as a failed attempt.
    pub timeout_secs: f64,
    /// Retry policy.
    pub retry: RetryConfig,
    /// `[llm.circuit]`: when the endpoint counts as down (consecutive failures across
    /// requests), the pause before a probe, and how many probes before the run stops.
    pub circuit: CircuitConfig,
    /// Prices per model, for the cost report.
    pub prices: BTreeMap<String, ModelPrice>,
    /// How requests missing from the store reach the endpoint: `sync` (one chat-completions
    /// call each) or `batch` (the OpenAI Batch API, [`super::batch`]).
    pub transport: Transport,
    /// `[llm.batch]`: settings of the `batch` transport.
    pub batch: BatchConfig,
}

/// How requests missing from the store are sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    /// One `POST /chat/completions` per request.
    #[default]
    Sync,
    /// A stage's missing requests as one OpenAI Batch API job (JSONL upload, create, poll).
    Batch,
}

/// `[llm.batch]`: the Batch API transport.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BatchConfig {
    /// The batch's `completion_window` (OpenAI accepts `24h`).
    pub completion_window: String,
    /// Seconds between two polls of a batch's status.
    pub poll_interval_secs: f64,
    /// A batch is submitted once no new request has come for this long (ms).
    pub collect_ms: u64,
    /// The batch price as a share of the synchronous price (OpenAI: half).
    pub price_factor: f64,
    /// Times an expired batch's unanswered requests are submitted again.
    pub max_resubmits: u32,
}

impl Default for BatchConfig {
    fn default() -> Self {
        BatchConfig {
            completion_window: "24h".into(),
            poll_interval_secs: 60.0,
            collect_ms: 500,
            price_factor: 0.5,
            max_resubmits: 3,
        }
    }
}

impl Default for LlmConfig {
    fn default() -> Self {
        LlmConfig {
            base_url: "https://api.openai.com/v1".into(),
            api_key_env: "OPENAI_API_KEY".into(),
            mode: StoreMode::Live,
            model: "gpt-4o-mini".into(),
            sampling: SamplingParams::default(),
            structured_output: StructuredOutput::default(),
            max_tokens_ceiling: None,
            min_kept_share: 0.5,
            stages: BTreeMap::new(),
            concurrency: 8,
            requests_per_minute: 0,
            tokens_per_minute: 0,
            timeout_secs: 300.0,
            retry: RetryConfig::default(),
            circuit: CircuitConfig::default(),
            prices: BTreeMap::new(),
            transport: Transport::Sync,
            batch: BatchConfig::default(),
        }
    }
}

impl LlmConfig {
    /// The models of a stage, in order (the default model when none are named).
    pub fn models(&self, stage: LlmStage) -> Vec<String> {
        match self.stages.get(&stage) {
            Some(s) if !s.models.is_empty() => s.models.clone(),
            _ => vec![self.model.clone()],
        }
    }

    /// The sampling parameters of a stage: the defaults with its overrides applied.
    pub fn sampling(&self, stage: LlmStage) -> SamplingParams {
        let mut p = self.sampling.clone();
        if let Some(s) = self.stages.get(&stage) {
            p.temperature = s.temperature.unwrap_or(p.temperature);
            p.top_p = s.top_p.unwrap_or(p.top_p);
            p.max_tokens = s.max_tokens.unwrap_or(p.max_tokens);
            p.seed = s.seed.or(p.seed);
        }
        p
    }

    /// The `max_tokens` of the one longer try a cut answer of `stage` gets, if any.
    pub fn max_tokens_ceiling(&self, stage: LlmStage) -> Option<u32> {
        self.stages.get(&stage).and_then(|s| s.max_tokens_ceiling).or(self.max_tokens_ceiling)
    }

    /// Check what serde cannot; each message names the field (`llm.<field>`).
    pub fn validate(&self) -> Result<(), String> {
        if !(self.base_url.starts_with("http://") || self.base_url.starts_with("https://")) {
            return Err(format!("`llm.base_url`: not an http(s) URL: `{}`", self.base_url));
        }
        if self.base_url.ends_with('/') {
            return Err(format!("`llm.base_url`: drop the trailing slash: `{}`", self.base_url));
        }
        if self.concurrency == 0 {
            return Err("`llm.concurrency`: must be at least 1".into());
        }
        if self.retry.max_attempts == 0 {
            return Err("`llm.retry.max_attempts`: must be at least 1".into());
        }
        self.circuit.validate("llm.circuit")?;
        if !(0.0..=1.0).contains(&self.min_kept_share) {
            return Err(format!("`llm.min_kept_share`: `{}` is outside 0–1", self.min_kept_share));
        }
        if self.timeout_secs.is_nan() || self.timeout_secs <= 0.0 {
            return Err(format!(
                "`llm.timeout_secs`: must be positive, not `{}`",
                self.timeout_secs
            ));
        }
        if self.batch.poll_interval_secs.is_nan() || self.batch.poll_interval_secs <= 0.0 {
            return Err(format!(
                "`llm.batch.poll_interval_secs`: must be positive, not `{}`",
                self.batch.poll_interval_secs
            ));
        }
        if !(0.0..=1.0).contains(&self.batch.price_factor) {
            return Err(format!(
                "`llm.batch.price_factor`: `{}` is outside 0–1",
                self.batch.price_factor
            ));
        }
        if self.transport == Transport::Batch && self.mode == StoreMode::RecordOnly {
            return Err("`llm.transport = \"batch\"`: not with `mode = \"record-only\"` (a batch fills only what the store lacks)".into());
        }
        for (stage, s) in &self.stages {
            if let Some(t) = s.temperature.filter(|t| !(0.0..=2.0).contains(t)) {
                return Err(format!("`llm.stages.{stage}.temperature`: `{t}` is outside 0–2"));
            }
            if s.models.iter().any(|m| m.trim().is_empty()) {
                return Err(format!("`llm.stages.{stage}.models`: empty model name"));
            }
        }
        for stage in LlmStage::ALL {
            let (max, ceiling) = (self.sampling(stage).max_tokens, self.max_tokens_ceiling(stage));
            if let Some(c) = ceiling.filter(|c| *c <= max) {
                let field = if self.stages.get(&stage).and_then(|s| s.max_tokens_ceiling).is_some()
                {
                    format!("stages.{stage}.max_tokens_ceiling")
                } else {
                    "max_tokens_ceiling".into()
                };
                return Err(format!(
                    "`llm.{field}`: `{c}` must be above the `max_tokens` of stage `{stage}` (`{max}`)"
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stage_overrides_and_unknown_fields() {
        let cfg: LlmConfig = toml::from_str(
            r#"
            model = "m0"
            [stages.generate]
            models = ["a", "b"]
            temperature = 0.8
            [prices.a]
            input_per_million = 1.0
            output_per_million = 2.0
            "#,
        )
        .unwrap();
        assert_eq!(cfg.models(LlmStage::Generate), ["a", "b"]);
        assert_eq!(cfg.models(LlmStage::Rewrite), ["m0"]);
        assert_eq!(cfg.sampling(LlmStage::Generate).temperature, 0.8);
        assert_eq!(cfg.sampling(LlmStage::Rewrite).temperature, 0.0);
        cfg.validate().unwrap();
        assert!(toml::from_str::<LlmConfig>("modle = \"x\"").is_err());
        assert!(toml::from_str::<LlmConfig>("[stages.rewrit]\nmodels=[]").is_err());
        assert!(
            toml::from_str::<LlmConfig>("mode = \"replay\"").unwrap().mode == StoreMode::Replay
        );
        assert_eq!(cfg.structured_output, StructuredOutput::JsonSchema, "the default");
    }

    #[test]
    fn ceilings_per_stage_and_their_checks() {
        let cfg: LlmConfig = toml::from_str(
            r#"
            structured_output = "json_object_schema"
            max_tokens_ceiling = 8192
            [sampling]
            max_tokens = 1024
            [stages.generate]
            max_tokens = 2048
            max_tokens_ceiling = 4096
            "#,
        )
        .unwrap();
        cfg.validate().unwrap();
        assert_eq!(cfg.structured_output, StructuredOutput::JsonObjectSchema);
        assert_eq!(
            (cfg.max_tokens_ceiling(LlmStage::Generate), cfg.max_tokens_ceiling(LlmStage::Rewrite)),
            (Some(4096), Some(8192))
        );
        let low: LlmConfig = toml::from_str("[stages.queries]\nmax_tokens_ceiling = 100").unwrap();
        assert_eq!(
            low.validate().unwrap_err(),
            "`llm.stages.queries.max_tokens_ceiling`: `100` must be above the `max_tokens` of stage `queries` (`4096`)"
        );
        assert!(toml::from_str::<LlmConfig>("structured_output = \"json\"").is_err());
        assert!(
            toml::from_str::<LlmConfig>("[retry]\nincomplete_attempts = 2").is_err(),
            "identical retries are gone"
        );
    }

    #[test]
    fn the_batch_transport_and_its_checks() {
        let cfg: LlmConfig = toml::from_str(
            "transport = \"batch\"\n[batch]\npoll_interval_secs = 5\ncollect_ms = 10",
        )
        .unwrap();
        cfg.validate().unwrap();
        assert_eq!(
            (
                cfg.transport,
                cfg.batch.poll_interval_secs,
                cfg.batch.price_factor,
                cfg.batch.completion_window.as_str()
            ),
            (Transport::Batch, 5.0, 0.5, "24h")
        );
        assert_eq!(LlmConfig::default().transport, Transport::Sync);
        assert!(toml::from_str::<LlmConfig>("transport = \"batches\"").is_err());
        assert!(toml::from_str::<LlmConfig>("[batch]\npoll_every = 3").is_err());
        let zero: LlmConfig = toml::from_str("[batch]\npoll_interval_secs = 0").unwrap();
        assert_eq!(
            zero.validate().unwrap_err(),
            "`llm.batch.poll_interval_secs`: must be positive, not `0`"
        );
        let refresh: LlmConfig =
            toml::from_str("transport = \"batch\"\nmode = \"record-only\"").unwrap();
        assert!(refresh.validate().unwrap_err().contains("record-only"));
    }

    #[test]
    fn the_circuit_has_defaults_and_takes_overrides() {
        assert_eq!(LlmConfig::default().circuit, CircuitConfig::default());
        let cfg: LlmConfig =
            toml::from_str("[circuit]\ntransport_failures = 3\nopen_secs = 0.5").unwrap();
        cfg.validate().unwrap();
        assert_eq!(
            (
                cfg.circuit.transport_failures,
                cfg.circuit.server_errors,
                cfg.circuit.open_secs,
                cfg.circuit.probes
            ),
            (3, 10, 0.5, 2)
        );
        assert!(toml::from_str::<LlmConfig>("[circuit]\nfailures = 3").is_err());
        let bad: LlmConfig = toml::from_str("[circuit]\nopen_secs = -1").unwrap();
        assert_eq!(
            bad.validate().unwrap_err(),
            "`llm.circuit.open_secs`: must be 0 or more, not `-1`"
        );
    }
}
