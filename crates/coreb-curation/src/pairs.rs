//! What every step takes and gives: a text–code [`Pair`], the [`Dropped`] record of a removed
//! pair and its typed [`DropReason`], a step's [`StepOutput`], and the run's [`CorpusStats`]
//! (summed across shards). Reads and writes nothing.

use serde::{Deserialize, Serialize};

/// A text–code pair of a training corpus.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pair {
    /// Unique id, `<source>:<row id>`.
    pub id: String,
    /// The natural-language side (query, docstring, statement).
    pub text: String,
    /// The code side.
    pub code: String,
}

/// Which side of a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// The text.
    Text,
    /// The code.
    Code,
}

/// How a pair matched a release document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchKind {
    /// The same normalised text (equal 128-bit xxh3 of NFC text with whitespace folded).
    Hash,
    /// Word n-gram overlap at or above the threshold.
    Ngram,
}

/// Why a pair was dropped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum DropReason {
    /// The same pair id appeared before.
    DuplicateId {
        /// The kept pair.
        of: String,
    },
    /// Same normalised text and code as a kept pair.
    ExactDuplicate {
        /// The kept pair.
        of: String,
    },
    /// In a group of near-duplicates (pairs linked by a shingle Jaccard at or above the
    /// threshold) whose first pair is kept.
    NearDuplicate {
        /// The kept pair of the group.
        of: String,
        /// Jaccard similarity with the pair it was linked to (`via`, else `of`).
        jaccard: f64,
        /// The pair it was linked to, when not `of` (the group is joined transitively).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        via: Option<String>,
    },
    /// The text is shorter than the minimum.
    TooShort {
        /// Its length in characters (normalised).
        chars: usize,
    },
    /// The text holds a URL.
    Url,
    /// The text holds HTML markup.
    Html,
    /// The text is reliably in another language.
    Language {
        /// What whatlang detected (ISO 639-3).
        detected: String,
    },
    /// Text or code matches a release document.
    Contaminated {
        /// The side that matched.
        side: Side,
        /// How.
        kind: MatchKind,
        /// The release (its directory name).
        release: String,
        /// The release document (`problems:<id>`, a text or code id).
        doc: String,
        /// Fraction of the side's n-grams found in the release (1.0 for a hash hit).
        overlap: f64,
    },
    /// Text and code do not rank each other in the top-k, or their similarity is too low.
    Misaligned {
        /// Rank (1-based) of the code among the text's candidates.
        code_rank: usize,
        /// Rank (1-based) of the text among the code's candidates.
        text_rank: usize,
        /// Their similarity.
        similarity: f32,
    },
}

impl DropReason {
    /// A short name of the reason (the `reason` tag).
    pub fn name(&self) -> &'static str {
        match self {
            DropReason::DuplicateId { .. } => "duplicate_id",
            DropReason::ExactDuplicate { .. } => "exact_duplicate",
            DropReason::NearDuplicate { .. } => "near_duplicate",
            DropReason::TooShort { .. } => "too_short",
            DropReason::Url => "url",
            DropReason::Html => "html",
            DropReason::Language { .. } => "language",
            DropReason::Contaminated { .. } => "contaminated",
            DropReason::Misaligned { .. } => "misaligned",
        }
    }
}

/// One dropped pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dropped {
    /// The pair id.
    pub id: String,
    /// Why.
    #[serde(flatten)]
    pub reason: DropReason,
}

/// What a step kept and dropped.
#[derive(Debug, Clone, Default)]
pub struct StepOutput {
    /// Kept pairs, in input order.
    pub kept: Vec<Pair>,
    /// Dropped pairs, in input order.
    pub dropped: Vec<Dropped>,
}

/// Counts of a curation run; summed across shards.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CorpusStats {
    /// Pairs in.
    pub rows_in: u64,
    /// Dropped by reason.
    pub duplicate_id: u64,
    /// Dropped: exact duplicate.
    pub exact_duplicate: u64,
    /// Dropped: near-duplicate.
    pub near_duplicate: u64,
    /// Dropped: text too short.
    pub too_short: u64,
    /// Dropped: URL.
    pub url: u64,
    /// Dropped: HTML.
    pub html: u64,
    /// Dropped: language.
    pub language: u64,
    /// Dropped: contaminated.
    pub contaminated: u64,
    /// Dropped: misaligned.
    pub misaligned: u64,
    /// Training records out.
    pub rows_out: u64,
}

impl CorpusStats {
    /// Count one dropped pair.
    pub fn record(&mut self, d: &Dropped) {
        let c = match d.reason {
            DropReason::DuplicateId { .. } => &mut self.duplicate_id,
            DropReason::ExactDuplicate { .. } => &mut self.exact_duplicate,
            DropReason::NearDuplicate { .. } => &mut self.near_duplicate,
            DropReason::TooShort { .. } => &mut self.too_short,
            DropReason::Url => &mut self.url,
            DropReason::Html => &mut self.html,
            DropReason::Language { .. } => &mut self.language,
            DropReason::Contaminated { .. } => &mut self.contaminated,
            DropReason::Misaligned { .. } => &mut self.misaligned,
        };
        *c += 1;
    }
}

coreb_base::add_assign_fields!(CorpusStats {
    rows_in,
    duplicate_id,
    exact_duplicate,
    near_duplicate,
    too_short,
    url,
    html,
    language,
    contaminated,
    misaligned,
    rows_out
});

/// A pair of the tests.
#[cfg(test)]
pub(crate) fn pair(id: &str, text: &str, code: &str) -> Pair {
    Pair { id: id.into(), text: text.into(), code: code.into() }
}
