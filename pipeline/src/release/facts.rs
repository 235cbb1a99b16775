//! What a release's MANIFEST records of each stage that made it (`stages.<stage>`): every
//! stage's summary gives its part (`engine::summary::Summary::facts`), and the release's key
//! and MANIFEST hold them.

use std::collections::BTreeMap;

use coreb_data::composition::{Composition, Roles};
use coreb_judge::ToolchainVersions;
use coreb_judge::recheck::RecheckStats;
use coreb_llm::StructuredOutput;
use serde::{Deserialize, Serialize};

/// What the release MANIFEST records of a stage (`stages.<stage>`): the parameters, prompts,
/// schemas and models of the stages it copies, the toolchains, time limits and re-check counts
/// of `execute`, the composition and roles of `qrels`. Part of the release's key.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct StageFacts {
    /// The stage's configuration (`[stages.<stage>]`), as its record holds it: its type is the
    /// stage's own, so it is kept as its JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) parameters: Option<serde_json::Value>,
    /// `qrels`: the composition of the series.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) composition: Option<Composition>,
    /// `qrels`: the two model roles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) roles: Option<Roles>,
    /// The sha256 of each prompt, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) prompts: Option<BTreeMap<String, String>>,
    /// The sha256 of each JSON answer's schema, by LLM stage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) schemas: Option<BTreeMap<String, String>>,
    /// How JSON answers were asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) structured_output: Option<StructuredOutput>,
    /// The models asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) models: Option<Vec<String>>,
    /// `execute`: each language's programs and their versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) toolchains: Option<ToolchainVersions>,
    /// `execute`: each language's time limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) time_limits: Option<BTreeMap<String, TimeLimits>>,
    /// `execute`: the re-check of the tests `rewrite` changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) test_check: Option<RecheckStats>,
    /// `filter`: the lists of errata applied, each with its sha256.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) errata: Option<Vec<coreb_stages::errata::ErrataPin>>,
    /// `qrels`: the problems left out because their verdicts show answers that can differ
    /// ([`coreb_stages::ambiguity`]); absent when none was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) ambiguous_answers: Option<Vec<coreb_stages::ambiguity::Ambiguity>>,
}

impl StageFacts {
    /// The facts of a stage run with `parameters` (its `[stages.<stage>]`), kept as their
    /// JSON; the stage adds its others (`StageFacts { models, ..StageFacts::of(&parameters) }`).
    pub(crate) fn of(parameters: &impl Serialize) -> StageFacts {
        StageFacts { parameters: serde_json::to_value(parameters).ok(), ..StageFacts::default() }
    }
}

/// One language's time limits for test runs: the multiplier of its toolchain and the limits
/// it gives.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct TimeLimits {
    /// The factor on the global test-run limits.
    pub(crate) time_multiplier: f64,
    /// CPU time per test, ms.
    pub(crate) cpu_time_ms: u64,
    /// Wall time per test, ms.
    pub(crate) wall_time_ms: u64,
}
