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

/// The counts of a library stage that hold its items in and out.
pub(crate) trait InOut {
    /// (Items in, items out.)
    fn in_out(&self) -> (u64, u64);
}

impl InOut for coreb_stages::dedup::DedupStats {
    fn in_out(&self) -> (u64, u64) {
        (self.rows_in, self.rows_out)
    }
}

impl InOut for coreb_stages::filter::FilterStats {
    fn in_out(&self) -> (u64, u64) {
        (self.rows_in, self.rows_out)
    }
}

/// The summary of a stage that passes on some of its upstream's problems and drops the others
/// (`dedup`, `filter`): its counts (`S`, flattened: `rows_in`, `rows_out` and its own), the
/// problems dropped, its configuration, and what else it records (`M`, flattened).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Kept<S, C, M> {
    /// Its counts.
    #[serde(flatten)]
    pub(crate) stats: S,
    /// Problems dropped.
    pub(crate) rejected: u64,
    /// `[stages.<stage>]`.
    pub(crate) parameters: C,
    /// What else it records.
    #[serde(flatten)]
    pub(crate) more: M,
}

impl<S: InOut, C, M> Kept<S, C, M> {
    /// The summary of a stage whose counts are `stats`: it dropped the problems it did not
    /// pass on.
    pub(crate) fn new(stats: S, parameters: C, more: M) -> Self {
        let (rows_in, rows_out) = stats.in_out();
        Kept { stats, rejected: rows_in - rows_out, parameters, more }
    }

    /// Its problems in, passed on and dropped.
    pub(crate) fn kept(&self) -> Counts {
        let (rows_in, rows_out) = self.stats.in_out();
        Counts { rows_in, rows_out, rejected: self.rejected }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use coreb_stages::dedup::DedupStats;

    /// A kept summary's record holds its stats' keys, `rejected` and `parameters` side by side
    /// (nothing for `()`), and reads back as it was.
    #[test]
    fn a_kept_summary_flattens_its_stats_and_reads_back() {
        let stats = DedupStats { rows_in: 5, rows_out: 3, clusters: 1, ..DedupStats::default() };
        let kept = Kept::new(stats, 7u32, ());
        assert_eq!(kept.kept(), Counts { rows_in: 5, rows_out: 3, rejected: 2 });
        let json = serde_json::to_value(&kept).unwrap();
        assert_eq!((json["rows_in"].as_u64(), json["rejected"].as_u64()), (Some(5), Some(2)));
        assert_eq!(json["parameters"], 7);
        assert!(json.get("stats").is_none() && json.get("more").is_none(), "{json}");
        let back: Kept<DedupStats, u32, ()> = serde_json::from_value(json).unwrap();
        assert_eq!(back, kept);
    }
}
