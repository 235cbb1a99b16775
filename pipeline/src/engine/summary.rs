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

use coreb_llm::run::WrittenBy;

pub(crate) use crate::release::facts::{StageFacts, TimeLimits};

/// Items in, items out and items rejected by a stage (0 where it keeps no such count). A
/// summary that keeps them as they are holds them flattened (`#[serde(flatten)]`): its record's
/// keys `rows_in`, `rows_out` and `rejected`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Counts {
    /// Items in.
    pub(crate) rows_in: u64,
    /// Items out.
    pub(crate) rows_out: u64,
    /// Items rejected.
    pub(crate) rejected: u64,
}

/// Why a stage kept fewer items, for the message that stops a build after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reasons {
    /// Rejections counted by reason (the LLM stages: `rejections_by_reason`).
    ByReason(BTreeMap<String, u64>),
    /// The stage's other counts, by name in the order of its record (out of window, language …).
    Counts(Vec<(&'static str, u64)>),
}

/// A stage's typed summary, as the engine, the printer and the release read it.
pub(crate) trait Summary: Any + Send + Sync + std::fmt::Debug {
    /// Items in, out and rejected.
    fn counts(&self) -> Counts;

    /// A judging stage: how many passed.
    fn passed(&self) -> Option<u64> {
        None
    }

    /// Why items were dropped (the stop message after a stage that kept too few); by default
    /// the count rejected alone.
    fn reasons(&self) -> Reasons {
        Reasons::Counts(vec![("rejected", self.counts().rejected)])
    }

    /// What the release's MANIFEST records of the stage (`None`: nothing).
    fn facts(&self) -> Option<StageFacts> {
        None
    }

    /// Who wrote the LLM answers the stage used or rejected.
    fn written_by(&self) -> WrittenBy {
        WrittenBy::default()
    }
}
