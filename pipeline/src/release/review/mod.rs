//! Human validation of the rewrites (`coreb review`): a person reads a sample of a release's
//! problems, the original beside the rewrite, and answers fixed questions about each.
//!
//! - [`sample`]: the draw — `N` problems of the release, stratified by platform and
//!   difficulty, seeded (the repository's one SplitMix64, `coreb_base::seeded`).
//! - [`diff`]: the word-level diff (LCS over tokens) that marks what the rewrite changed.
//! - [`page`]: the review page: one self-contained HTML file (script, style and data inline;
//!   the data as JSON in a `<script type="application/json">`, rendered with `textContent`
//!   only), gathered from the release and the build it was made from ([`ReleaseBuild`]).
//! - [`stats`]: the share of "yes" with its Wilson interval, Cohen's κ, Fleiss' κ,
//!   Krippendorff's α.
//! - [`recorded`]: a review recorded beside the releases, as the `release` stage shows it.
//! - [`report`]: reviewers' answer files merged and checked (one release digest, one draw),
//!   the figures, `review.json`/`review.md`, and the release card's "Human validation" section.
//!
//! The answer file the page exports is JSONL, one [`AnswerLine`] per answered question, each
//! carrying the reviewer, the release's MANIFEST digest and the draw. Does NOT judge anything
//! itself, nor rebuild a missing artifact.

pub(crate) mod diff;
pub(crate) mod page;
pub(crate) mod recorded;
pub(crate) mod report;
pub(crate) mod sample;
pub(crate) mod stats;

use serde::{Deserialize, Serialize};

pub(crate) use coreb_curation::audit::ReleaseBuild;

/// The format tag of an answer line.
pub(crate) const ANSWER_FORMAT: &str = "coreb-review/1";

/// The fixed questions, in page order: `(key, question)`.
pub(crate) const QUESTIONS: [(&str, &str); 5] = [
    ("intent", "The rewrite keeps the original's intent and algorithm."),
    ("tests", "The tests agree with the rewritten statement."),
    ("disguise", "The rewritten statement no longer gives the original away."),
    ("distractors", "Each distractor is a different problem."),
    ("summary", "The summary is faithful to the rewritten problem."),
];

/// The answers a question takes, as categories `0..3`.
pub(crate) const ANSWERS: [&str; 3] = ["yes", "no", "unsure"];

/// Which sample was drawn: the seed, the size asked for and the digest of the ids drawn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Draw {
    /// The seed.
    pub(crate) seed: u64,
    /// `--sample N`.
    pub(crate) sample: usize,
    /// sha256 of the drawn ids, in page order, each followed by `\n`.
    pub(crate) ids_sha256: String,
}

/// One answered question, a line of the file the page exports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AnswerLine {
    /// [`ANSWER_FORMAT`].
    pub(crate) format: String,
    /// The release version.
    pub(crate) release: String,
    /// sha256 of the release's `MANIFEST.json` as reviewed.
    pub(crate) release_sha256: String,
    /// The draw.
    pub(crate) draw: Draw,
    /// Who answered.
    pub(crate) reviewer: String,
    /// The problem.
    pub(crate) problem_id: String,
    /// The question's key (see [`QUESTIONS`]).
    pub(crate) question: String,
    /// `yes`, `no`, `unsure`, or `null` for a note without an answer.
    pub(crate) answer: Option<String>,
    /// The reviewer's note (may be empty).
    #[serde(default)]
    pub(crate) note: String,
}
