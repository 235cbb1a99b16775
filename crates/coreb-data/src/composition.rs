//! How a release composes its queries and judgements: `[stages.qrels]`'s profile and switches.
//!
//! The default profile, `series`, composes a month the way the published CoREB series does
//! (the authors' dataset maker, `query_corpus_dataset_maker.py` of the PyPI package `coreb`
//! 0.1.0): its subtasks, its per-type cap on search queries, its code2code anchors and model
//! roles, its code2text anchors and its hard-negative draw. Where the series holds a definition
//! someone could hold otherwise, the choice is a named switch with the series' value as
//! default; profile `coreb` sets every switch to coreb's earlier composition.
//! `docs/reference-vs-coreb.md` lists each switch with its effect on the sample's BM25 nDCG@10.
//!
//! This module only names and resolves the choices; the `qrels` stage (`coreb_stages::qrels`)
//! applies them.

use serde::{Deserialize, Serialize};

use crate::solution::Language;

/// `[stages.qrels]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct QrelsConfig {
    /// Seed of the hard-negative draws and of the search cap (recorded in the release
    /// MANIFEST).
    pub seed: u64,
    /// Hard negatives per query at most.
    pub max_hard_negatives: usize,
    /// The language of the code2code anchors (the series anchors on Python).
    pub anchor_language: Language,
    /// Model role A: its solutions in `anchor_language` anchor `mono_lang` and `cross_model`
    /// queries. By default the first model of `[llm.stages.generate]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub anchor_model: Option<String>,
    /// Model role B: its solutions are the `mono_lang` and `cross_model` positives, the
    /// `cross_lang` pairs and the preferred code2text anchors. By default the second model of
    /// `[llm.stages.generate]` (the first when there is one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_model: Option<String>,
    /// The base every switch below defaults to.
    pub profile: Profile,
    /// Search queries per text2code search subtask (`any` and each language) at most, drawn
    /// with `seed` (the series: 100); `0`: no cap.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_queries_per_type: Option<usize>,
    /// Which solutions of the problem are positive for a search query.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub search_positives: Option<SearchPositives>,
    /// How hard negatives are drawn from their tiers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hard_negatives: Option<HardNegatives>,
    /// Which solutions `cross_lang` pairs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cross_lang: Option<CrossLang>,
    /// The code2text subtasks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code2text: Option<Code2TextShape>,
    /// The positive texts of a code2text query (with `code2text = "retro"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code2text_positive: Option<Code2TextPositive>,
    /// The text of a language-constrained `canonical` or `full` text2code query.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub constrained_text: Option<ConstrainedText>,
    /// The code document of a functional (LeetCode) problem's solution.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code_document: Option<CodeDocument>,
}

impl Default for QrelsConfig {
    fn default() -> Self {
        QrelsConfig {
            seed: 20_250_101,
            max_hard_negatives: 3,
            anchor_language: Language::Python,
            anchor_model: None,
            target_model: None,
            profile: Profile::Series,
            max_queries_per_type: None,
            search_positives: None,
            hard_negatives: None,
            cross_lang: None,
            code2text: None,
            code2text_positive: None,
            constrained_text: None,
            code_document: None,
        }
    }
}

/// The base of the switches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Profile {
    /// The published CoREB series' composition.
    #[default]
    Series,
    /// coreb's composition before it followed the series (v202503 as first published).
    Coreb,
}

/// Which solutions are positive for a text2code search query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SearchPositives {
    /// Every solution of the problem (in the constrained language), failed ones too: the
    /// series. An `any` query then has no hard negative.
    All,
    /// The passing solutions only, as for `canonical` and `full`.
    Passing,
}

/// How up to `max_hard_negatives` are drawn from the priority tiers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HardNegatives {
    /// The series: tiers are pooled in order until the pool holds enough, then the draw is
    /// uniform over the pool (a later tier can displace an earlier one).
    Pooled,
    /// Tier by tier: a later tier only fills what the earlier ones leave.
    Tiered,
}

/// Which passing solutions `cross_lang` pairs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CrossLang {
    /// The series: a query on each of role B's solutions that has a later one (by code id)
    /// in another language, so every pair is asked once; an anchor of one query can be a
    /// positive of another.
    Pairs,
    /// Role A's anchors (`anchor_language`) → role A's own solutions in the other languages;
    /// anchors are never candidates.
    Anchor,
}

/// The code2text subtasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Code2TextShape {
    /// The series: `full_retro` and `canonical_retro`, each one `any` query per problem (role
    /// B's Python code preferred) and, for a problem solved in two languages or more, one per
    /// language (its first passing solution).
    Retro,
    /// One `describe` query per passing solution, judged against the full statement and the
    /// summary (both relevance 2).
    Describe,
}

/// The positive texts of a `full_retro` or `canonical_retro` query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Code2TextPositive {
    /// The series: the full statement, for both subtasks; the summaries are not documents
    /// of the text corpus.
    Full,
    /// The full statement and the summary (a document of the text corpus), both relevance 2
    /// for both subtasks, so no true description is left unjudged.
    FullAndSummary,
}

/// The text of a language-constrained `canonical` or `full` text2code query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConstrainedText {
    /// The language named before the text (`C++ solution: …`), so a model sees the
    /// constraint it is judged on.
    Named,
    /// The series: the unconstrained text itself; the constraint lives only in the judgements.
    Same,
}

/// The code document of a functional (LeetCode) problem's solution: what retrieval sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CodeDocument {
    /// The solution only (the class or function the problem asks for): the judge adds the
    /// I/O driver, so retrieval sees the algorithm, not the driver every solution of a
    /// language shares.
    Solution,
    /// A whole program, as the series' documents are: the solution inside the judge's I/O
    /// driver for its signature (a `main` that reads the test from stdin).
    Program,
}

/// Every switch resolved against the profile: what a release records in its MANIFEST.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Composition {
    /// The profile the defaults came from.
    pub profile: Profile,
    /// The search cap (`0`: none).
    pub max_queries_per_type: usize,
    /// See [`SearchPositives`].
    pub search_positives: SearchPositives,
    /// See [`HardNegatives`].
    pub hard_negatives: HardNegatives,
    /// See [`CrossLang`].
    pub cross_lang: CrossLang,
    /// See [`Code2TextShape`].
    pub code2text: Code2TextShape,
    /// See [`Code2TextPositive`].
    pub code2text_positive: Code2TextPositive,
    /// See [`ConstrainedText`].
    pub constrained_text: ConstrainedText,
    /// See [`CodeDocument`].
    pub code_document: CodeDocument,
}

impl Composition {
    /// The profile's own values.
    pub fn of(profile: Profile) -> Composition {
        match profile {
            Profile::Series => Composition {
                profile,
                max_queries_per_type: 100,
                search_positives: SearchPositives::All,
                hard_negatives: HardNegatives::Pooled,
                cross_lang: CrossLang::Pairs,
                code2text: Code2TextShape::Retro,
                code2text_positive: Code2TextPositive::Full,
                // A constraint the model cannot read is one it cannot meet: coreb names the
                // language by default (`same` gives the series' texts).
                constrained_text: ConstrainedText::Named,
                // A driver shared by every solution of a language makes them alike: coreb
                // keeps the solution alone by default (`program` gives the series' form).
                code_document: CodeDocument::Solution,
            },
            Profile::Coreb => Composition {
                profile,
                max_queries_per_type: 0,
                search_positives: SearchPositives::Passing,
                hard_negatives: HardNegatives::Tiered,
                cross_lang: CrossLang::Anchor,
                code2text: Code2TextShape::Describe,
                code2text_positive: Code2TextPositive::FullAndSummary,
                constrained_text: ConstrainedText::Named,
                code_document: CodeDocument::Solution,
            },
        }
    }

    /// Are the canonical summaries documents of the text corpus?
    pub fn summaries_are_documents(&self) -> bool {
        self.code2text == Code2TextShape::Describe
            || self.code2text_positive == Code2TextPositive::FullAndSummary
    }
}

impl QrelsConfig {
    /// The switches with the profile's defaults applied.
    pub fn composition(&self) -> Composition {
        let base = Composition::of(self.profile);
        Composition {
            profile: self.profile,
            max_queries_per_type: self.max_queries_per_type.unwrap_or(base.max_queries_per_type),
            search_positives: self.search_positives.unwrap_or(base.search_positives),
            hard_negatives: self.hard_negatives.unwrap_or(base.hard_negatives),
            cross_lang: self.cross_lang.unwrap_or(base.cross_lang),
            code2text: self.code2text.unwrap_or(base.code2text),
            code2text_positive: self.code2text_positive.unwrap_or(base.code2text_positive),
            constrained_text: self.constrained_text.unwrap_or(base.constrained_text),
            code_document: self.code_document.unwrap_or(base.code_document),
        }
    }
}

/// The two model roles of code2code and code2text (the series hard-codes two model names).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Roles {
    /// Role A (`anchor_model`).
    pub anchor: String,
    /// Role B (`target_model`).
    pub target: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_switch_overrides_its_profile_and_the_rest_follow_it() {
        let series = QrelsConfig::default().composition();
        assert_eq!(series, Composition::of(Profile::Series));
        assert!(!series.summaries_are_documents());
        let toml = "profile = \"coreb\"\nhard_negatives = \"pooled\"\nmax_queries_per_type = 7\n";
        let c: QrelsConfig = toml::from_str(toml).unwrap();
        let r = c.composition();
        assert_eq!(
            (r.hard_negatives, r.max_queries_per_type, r.cross_lang),
            (HardNegatives::Pooled, 7, CrossLang::Anchor)
        );
        assert!(r.summaries_are_documents());
        let err = toml::from_str::<QrelsConfig>("cross_lang = \"all\"\n").unwrap_err().to_string();
        assert!(err.contains("pairs") && err.contains("anchor"), "{err}");
    }
}
