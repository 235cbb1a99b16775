//! What every stage's typed summary tells the engine, the printer and the release: its counts
//! ([`Counts`], [`Reasons`]), what the release MANIFEST records of it ([`StageFacts`]) and who
//! wrote the LLM answers it used. Each stage module defines its summary struct (the keys its
//! `record.json` holds) and implements [`Summary`] for it; nothing reads a summary by key.
//!
//! A record's summary on disk is its struct serialized through `serde_json::to_value`, whose
//! maps (without `preserve_order`) sort their keys: the JSON of a record, of a part's marker and
//! of the MANIFEST does not depend on the order of a struct's fields.

use std::any::Any;
use std::collections::BTreeMap;

use coreb_data::composition::{Composition, Roles};
use coreb_judge::ToolchainVersions;
use coreb_judge::recheck::RecheckStats;
use coreb_llm::StructuredOutput;
use coreb_llm::run::WrittenBy;
use serde::{Deserialize, Serialize};

/// Items in, items out and items rejected by a stage (0 where it keeps no such count).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Items in.
    pub rows_in: u64,
    /// Items out.
    pub rows_out: u64,
    /// Items rejected.
    pub rejected: u64,
}

/// Why a stage kept fewer items, for the message that stops a build after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reasons {
    /// Rejections counted by reason (the LLM stages: `rejections_by_reason`).
    ByReason(BTreeMap<String, u64>),
    /// The stage's other counts, by name in the order of its record (out of window, language …).
    Counts(Vec<(&'static str, u64)>),
}

/// A stage's typed summary, as the engine, the printer and the release read it.
pub trait Summary: Any + Send + Sync + std::fmt::Debug {
    /// Items in, out and rejected.
    fn counts(&self) -> Counts;

    /// A judging stage: how many passed.
    fn passed(&self) -> Option<u64> {
        None
    }

    /// Why items were dropped (the stop message after a stage that kept too few).
    fn reasons(&self) -> Reasons;

    /// What the release's MANIFEST records of the stage (`None`: nothing).
    fn facts(&self) -> Option<StageFacts> {
        None
    }

    /// Who wrote the LLM answers the stage used or rejected.
    fn written_by(&self) -> WrittenBy {
        WrittenBy::default()
    }
}

/// What the release MANIFEST records of a stage (`stages.<stage>`): the parameters, prompts,
/// schemas and models of the stages it copies, the toolchains, time limits and re-check counts
/// of `execute`, the composition and roles of `qrels`. Part of the release's key.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StageFacts {
    /// The stage's configuration (`[stages.<stage>]`), as its record holds it: its type is the
    /// stage's own, so it is kept as its JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<serde_json::Value>,
    /// `qrels`: the composition of the series.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub composition: Option<Composition>,
    /// `qrels`: the two model roles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roles: Option<Roles>,
    /// The sha256 of each prompt, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<BTreeMap<String, String>>,
    /// The sha256 of each JSON answer's schema, by LLM stage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schemas: Option<BTreeMap<String, String>>,
    /// How JSON answers were asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_output: Option<StructuredOutput>,
    /// The models asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub models: Option<Vec<String>>,
    /// `execute`: each language's programs and their versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toolchains: Option<ToolchainVersions>,
    /// `execute`: each language's time limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_limits: Option<BTreeMap<String, TimeLimits>>,
    /// `execute`: the re-check of the tests `rewrite` changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_check: Option<RecheckStats>,
    /// `filter`: the lists of errata applied, each with its sha256.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errata: Option<Vec<coreb_stages::errata::ErrataPin>>,
    /// `qrels`: the problems left out because their verdicts show answers that can differ
    /// ([`coreb_stages::ambiguity`]); absent when none was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ambiguous_answers: Option<Vec<coreb_stages::ambiguity::Ambiguity>>,
}

/// One language's time limits for test runs: the multiplier of its toolchain and the limits
/// it gives.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TimeLimits {
    /// The factor on the global test-run limits.
    pub time_multiplier: f64,
    /// CPU time per test, ms.
    pub cpu_time_ms: u64,
    /// Wall time per test, ms.
    pub wall_time_ms: u64,
}
