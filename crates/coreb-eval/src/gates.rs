//! Release gates: checks a release must pass before it is published, as pure functions over an
//! in-memory task (corpus, queries, qrels) and a [`GatesConfig`] from the manifest.
//!
//! Gates: the task is not empty (an empty task fails this gate alone, not the ones that
//! would measure nothing); every qrel points to an existing query and document; every query has a relevance-2
//! document; no document text is shared by documents of different problems; BM25 nDCG@10 per
//! task lies inside a plausible band (too high signals leakage, too low broken data); most
//! queries have hard negatives (relevance 1). Each failure names the gate, says why with counts,
//! and lists the first offending ids. Does NOT read files or decide what to do on failure.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

use super::beir::Dataset;

/// Gate thresholds (the manifest's `[gates]` table).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GatesConfig {
    /// Lowest plausible BM25 nDCG@10 of a task.
    pub bm25_ndcg10_min: f64,
    /// Highest plausible BM25 nDCG@10 of a task (above: likely leakage).
    pub bm25_ndcg10_max: f64,
    /// Minimum share of queries with at least one hard negative.
    pub min_hard_negative_share: f64,
    /// How many offending ids a failure lists.
    pub max_examples: usize,
    /// Highest share of text2code `any` queries whose positives are all in one language
    /// (`coreb check`'s `single_language_positives`).
    pub max_single_language_share: f64,
    /// Longest document or query, in characters (`coreb check`'s `lengths`).
    pub max_text_chars: usize,
    /// Checks of `coreb check` reported but not enforced, by name (a release composed with
    /// `constrained_text = "same"` fails `language_named` and `duplicate_texts` by design).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub waive: Vec<String>,
    /// `review = { min_reviewed = 50, min_intent = 0.95 }`: publish only with a recorded
    /// human review ([`review_path`]) of at least this many problems whose share of "yes" on
    /// the intent question reaches `min_intent` (`coreb check`'s `review`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review: Option<ReviewGate>,
}

/// The review gate's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewGate {
    /// Fewest problems with an answer to the intent question.
    pub min_reviewed: usize,
    /// Lowest share of "yes" among the intent answers.
    pub min_intent: f64,
}

/// What a recorded review says, as the review gate reads it (`figures` of `review.json`,
/// written by `coreb review report`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReviewFigures {
    /// The release version reviewed.
    pub release: String,
    /// Problems with at least one answer to the intent question.
    pub reviewed: usize,
    /// "yes" answers to the intent question.
    pub intent_yes: usize,
    /// Answers to the intent question (yes, no, unsure).
    pub intent_answers: usize,
}

/// Where the review of release `version` published in `release_dir` is recorded:
/// `<release_dir>/../reviews/<version>/review.json`, beside the releases.
pub fn review_path(release_dir: &std::path::Path, version: &str) -> std::path::PathBuf {
    let parent = release_dir.parent().unwrap_or(std::path::Path::new("."));
    parent.join("reviews").join(version).join("review.json")
}

/// The review gate on the recorded figures (`None`: no review recorded, or one of another
/// release): `(figure, share, passed)`.
pub fn review_gate(
    gate: &ReviewGate,
    version: &str,
    figures: Option<&ReviewFigures>,
) -> (String, f64, bool) {
    match figures {
        None => ("no review recorded".to_owned(), 0.0, false),
        Some(f) if f.release != version => {
            (format!("the recorded review is of `{}`", f.release), 0.0, false)
        }
        Some(f) => {
            let share = if f.intent_answers == 0 {
                0.0
            } else {
                f.intent_yes as f64 / f.intent_answers as f64
            };
            let passed = f.reviewed >= gate.min_reviewed && share >= gate.min_intent;
            (
                format!(
                    "{} problems reviewed, intent kept {share:.4} ({} of {})",
                    f.reviewed, f.intent_yes, f.intent_answers
                ),
                share,
                passed,
            )
        }
    }
}

impl Default for GatesConfig {
    fn default() -> Self {
        GatesConfig {
            bm25_ndcg10_min: 0.05,
            bm25_ndcg10_max: 0.95,
            min_hard_negative_share: 0.8,
            max_examples: 5,
            max_single_language_share: 0.5,
            max_text_chars: 100_000,
            waive: Vec::new(),
            review: None,
        }
    }
}

/// Which gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Gate {
    /// The task has queries, documents and qrels.
    NotEmpty,
    /// Qrels refer to existing queries and documents.
    QrelsResolve,
    /// Every query has a relevance-2 document.
    QueryHasPositive,
    /// No document text shared across problems.
    NoCrossProblemDuplicates,
    /// BM25 nDCG@10 inside the band.
    Bm25Band,
    /// Enough queries with hard negatives.
    HardNegatives,
}

impl std::fmt::Display for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Gate::NotEmpty => "not_empty",
            Gate::QrelsResolve => "qrels_resolve",
            Gate::QueryHasPositive => "query_has_positive",
            Gate::NoCrossProblemDuplicates => "no_cross_problem_duplicates",
            Gate::Bm25Band => "bm25_band",
            Gate::HardNegatives => "hard_negatives",
        })
    }
}

/// A failed gate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateFailure {
    /// The task (BEIR folder).
    pub task: String,
    /// The gate.
    pub gate: Gate,
    /// Why, with counts.
    pub why: String,
    /// The first offending ids.
    pub examples: Vec<String>,
}

impl std::fmt::Display for GateFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "gate `{}` failed for task `{}`: {}", self.gate, self.task, self.why)?;
        if !self.examples.is_empty() {
            write!(f, " (first: {})", crate::ticked(&self.examples))?;
        }
        Ok(())
    }
}

fn fail(
    data: &Dataset,
    gate: Gate,
    why: String,
    mut examples: Vec<String>,
    cfg: &GatesConfig,
) -> Result<(), GateFailure> {
    examples.truncate(cfg.max_examples);
    Err(GateFailure { task: data.name.clone(), gate, why, examples })
}

/// Every qrel names an existing query and document.
pub fn qrels_resolve(data: &Dataset, cfg: &GatesConfig) -> Result<(), GateFailure> {
    let queries: BTreeSet<&str> = data.queries.iter().map(|q| q.id.as_str()).collect();
    let docs: BTreeSet<&str> = data.corpus.iter().map(|d| d.id.as_str()).collect();
    let (mut bad_q, mut bad_d) = (Vec::new(), Vec::new());
    for (qid, qq) in &data.qrels.queries {
        if !queries.contains(qid.as_str()) {
            bad_q.push(qid.clone());
        }
        for (doc, _) in &qq.judged {
            if !docs.contains(doc.as_str()) {
                bad_d.push(format!("{qid}→{doc}"));
            }
        }
    }
    if bad_q.is_empty() && bad_d.is_empty() {
        return Ok(());
    }
    let why = format!(
        "{} qrels queries not in queries.jsonl, {} qrels to documents not in corpus.jsonl",
        bad_q.len(),
        bad_d.len()
    );
    bad_q.extend(bad_d);
    fail(data, Gate::QrelsResolve, why, bad_q, cfg)
}

/// Every query has at least one relevance-2 document.
pub fn query_has_positive(data: &Dataset, cfg: &GatesConfig) -> Result<(), GateFailure> {
    let bad: Vec<String> = data
        .queries
        .iter()
        .filter(|q| {
            !data.qrels.queries.get(&q.id).is_some_and(|qq| qq.judged.iter().any(|(_, r)| *r >= 2))
        })
        .map(|q| q.id.clone())
        .collect();
    if bad.is_empty() {
        return Ok(());
    }
    let why =
        format!("{} of {} queries have no relevance-2 document", bad.len(), data.queries.len());
    fail(data, Gate::QueryHasPositive, why, bad, cfg)
}

/// No document text (trimmed) appears under two different problems.
pub fn no_cross_problem_duplicates(data: &Dataset, cfg: &GatesConfig) -> Result<(), GateFailure> {
    let mut by_text: HashMap<&str, BTreeMap<&str, &str>> = HashMap::new();
    for d in &data.corpus {
        if let Some(p) = d.problem_id.as_deref() {
            by_text.entry(d.text.trim()).or_default().entry(p).or_insert(d.id.as_str());
        }
    }
    let mut bad: Vec<String> = by_text
        .values()
        .filter(|probs| probs.len() > 1)
        .map(|probs| probs.iter().map(|(p, d)| format!("{d}@{p}")).collect::<Vec<_>>().join("="))
        .collect();
    if bad.is_empty() {
        return Ok(());
    }
    bad.sort();
    let why = format!("{} document texts are shared by documents of different problems", bad.len());
    fail(data, Gate::NoCrossProblemDuplicates, why, bad, cfg)
}

/// BM25 nDCG@10 of the task (computed by the caller) lies in the configured band.
pub fn bm25_band(data: &Dataset, ndcg10: f64, cfg: &GatesConfig) -> Result<(), GateFailure> {
    if ndcg10 < cfg.bm25_ndcg10_min {
        return fail(
            data,
            Gate::Bm25Band,
            format!(
                "BM25 nDCG@10 {ndcg10:.4} is below {:.4}: broken queries or qrels?",
                cfg.bm25_ndcg10_min
            ),
            vec![],
            cfg,
        );
    }
    if ndcg10 > cfg.bm25_ndcg10_max {
        return fail(
            data,
            Gate::Bm25Band,
            format!(
                "BM25 nDCG@10 {ndcg10:.4} is above {:.4}: queries likely leak document text",
                cfg.bm25_ndcg10_max
            ),
            vec![],
            cfg,
        );
    }
    Ok(())
}

/// At least `min_hard_negative_share` of the queries have a relevance-1 judgement.
pub fn hard_negatives(data: &Dataset, cfg: &GatesConfig) -> Result<(), GateFailure> {
    let without: Vec<String> = data
        .queries
        .iter()
        .filter(|q| {
            !data.qrels.queries.get(&q.id).is_some_and(|qq| qq.judged.iter().any(|(_, r)| *r == 1))
        })
        .map(|q| q.id.clone())
        .collect();
    let total = data.queries.len().max(1);
    let share = 1.0 - without.len() as f64 / total as f64;
    if share >= cfg.min_hard_negative_share {
        return Ok(());
    }
    let why = format!(
        "{} of {} queries have hard negatives ({:.1} %), below {:.1} %",
        total - without.len(),
        data.queries.len(),
        100.0 * share,
        100.0 * cfg.min_hard_negative_share
    );
    fail(data, Gate::HardNegatives, why, without, cfg)
}

/// The task has queries, documents and qrels.
pub fn not_empty(data: &Dataset, cfg: &GatesConfig) -> Result<(), GateFailure> {
    let qrels = data.qrels.queries.values().map(|q| q.judged.len()).sum::<usize>();
    if !data.queries.is_empty() && !data.corpus.is_empty() && qrels > 0 {
        return Ok(());
    }
    let why = format!(
        "the task is empty: {} queries, {} documents, {qrels} qrels; an earlier stage left nothing for it (see the stage summaries of the build)",
        data.queries.len(),
        data.corpus.len()
    );
    fail(data, Gate::NotEmpty, why, vec![], cfg)
}

/// Run every gate on a task; `bm25_ndcg10` is the task's BM25 nDCG@10. Returns all failures;
/// an empty task fails [`not_empty`] only (the other gates would measure nothing).
pub fn check_task(data: &Dataset, bm25_ndcg10: f64, cfg: &GatesConfig) -> Vec<GateFailure> {
    if let Err(e) = not_empty(data, cfg) {
        return vec![e];
    }
    [
        qrels_resolve(data, cfg),
        query_has_positive(data, cfg),
        no_cross_problem_duplicates(data, cfg),
        bm25_band(data, bm25_ndcg10, cfg),
        hard_negatives(data, cfg),
    ]
    .into_iter()
    .filter_map(Result::err)
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::beir::{Doc, Query};
    use coreb_trec::Qrels;

    fn doc(id: &str, text: &str, p: &str) -> Doc {
        Doc { id: id.into(), title: String::new(), text: text.into(), problem_id: Some(p.into()) }
    }
    fn query(id: &str) -> Query {
        Query {
            id: id.into(),
            text: "q".into(),
            subtask: None,
            language_constraint: None,
            source_doc_id: None,
        }
    }
    fn good() -> Dataset {
        Dataset {
            name: "text2code".into(),
            corpus: vec![
                doc("d1", "a", "p1"),
                doc("d2", "b", "p1"),
                doc("d3", "c", "p2"),
                doc("d4", "d", "p2"),
            ],
            queries: vec![query("q1"), query("q2")],
            qrels: Qrels::from_triples([
                ("q1", "d1", 2),
                ("q1", "d2", 1),
                ("q2", "d3", 2),
                ("q2", "d4", 1),
            ])
            .unwrap(),
        }
    }

    #[test]
    fn all_gates_pass_on_good_task() {
        assert_eq!(check_task(&good(), 0.5, &GatesConfig::default()), vec![]);
    }

    #[test]
    fn qrels_resolve_fails_on_dangling_ids() {
        let mut d = good();
        d.qrels =
            Qrels::from_triples([("q1", "d1", 2), ("q9", "d1", 2), ("q2", "nope", 2)]).unwrap();
        let e = qrels_resolve(&d, &GatesConfig::default()).unwrap_err();
        assert_eq!(e.gate, Gate::QrelsResolve);
        assert!(
            e.why.starts_with("1 qrels queries") && e.why.contains("1 qrels to documents"),
            "{e}"
        );
        assert_eq!(e.examples, ["q9", "q2→nope"]);
    }

    #[test]
    fn query_without_positive_fails() {
        let mut d = good();
        d.queries.push(query("q3"));
        let e = query_has_positive(&d, &GatesConfig::default()).unwrap_err();
        assert_eq!((e.gate, e.examples.clone()), (Gate::QueryHasPositive, vec!["q3".to_owned()]));
        assert!(e.to_string().contains("1 of 3 queries"), "{e}");
    }

    #[test]
    fn duplicate_text_across_problems_fails() {
        let mut d = good();
        assert!(no_cross_problem_duplicates(&d, &GatesConfig::default()).is_ok());
        d.corpus.push(doc("d5", " a ", "p2"));
        d.corpus.push(doc("d6", "b", "p1"));
        let e = no_cross_problem_duplicates(&d, &GatesConfig::default()).unwrap_err();
        assert_eq!(e.examples, ["d1@p1=d5@p2"], "same-problem repeats are allowed");
    }

    #[test]
    fn bm25_band_both_sides() {
        let cfg = GatesConfig::default();
        assert!(bm25_band(&good(), 0.5, &cfg).is_ok());
        assert!(bm25_band(&good(), 0.99, &cfg).unwrap_err().why.contains("leak"));
        assert!(bm25_band(&good(), 0.01, &cfg).unwrap_err().why.contains("below"));
    }

    #[test]
    fn hard_negative_share() {
        let mut d = good();
        d.qrels = Qrels::from_triples([("q1", "d1", 2), ("q1", "d2", 1), ("q2", "d3", 2)]).unwrap();
        let e = hard_negatives(&d, &GatesConfig::default()).unwrap_err();
        assert_eq!(e.examples, ["q2"]);
        assert!(e.why.contains("1 of 2 queries"), "{e}");
        assert!(
            hard_negatives(
                &d,
                &GatesConfig { min_hard_negative_share: 0.5, ..GatesConfig::default() }
            )
            .is_ok()
        );
    }

    #[test]
    fn an_empty_task_is_reported_as_empty_not_as_a_bm25_score() {
        let empty = Dataset {
            name: "code2text".into(),
            corpus: vec![],
            queries: vec![],
            qrels: Qrels::from_triples(Vec::<(&str, &str, _)>::new()).unwrap(),
        };
        let ndcg = crate::bm25_ndcg10(&empty);
        assert!(ndcg == 0.0 && ndcg.is_sign_positive(), "{ndcg:?}");
        let failures = check_task(&empty, ndcg, &GatesConfig::default());
        assert_eq!(failures.len(), 1, "{failures:?}");
        assert_eq!(failures[0].gate, Gate::NotEmpty);
        let text = failures[0].to_string();
        assert!(
            text.contains("the task is empty: 0 queries, 0 documents, 0 qrels")
                && !text.contains("-0"),
            "{text}"
        );
        let mut no_docs = good();
        no_docs.corpus.clear();
        assert_eq!(check_task(&no_docs, 0.5, &GatesConfig::default())[0].gate, Gate::NotEmpty);
    }

    #[test]
    fn config_rejects_unknown_fields() {
        let c: GatesConfig = serde_json::from_str(r#"{"bm25_ndcg10_max": 0.9}"#).unwrap();
        assert_eq!(c.bm25_ndcg10_max, 0.9);
        assert_eq!(c.max_examples, 5);
        assert!(serde_json::from_str::<GatesConfig>(r#"{"bm25_max": 0.9}"#).is_err());
    }

    #[test]
    fn the_review_gate_refuses_below_its_figures() {
        let gate = ReviewGate { min_reviewed: 50, min_intent: 0.95 };
        let figures = |reviewed, intent_yes, intent_answers| ReviewFigures {
            release: "v202503".into(),
            reviewed,
            intent_yes,
            intent_answers,
        };
        assert!(review_gate(&gate, "v202503", Some(&figures(50, 96, 100))).2);
        assert!(review_gate(&gate, "v202503", Some(&figures(60, 95, 100))).2, "0.95 itself passes");
        let (figure, share, passed) = review_gate(&gate, "v202503", Some(&figures(60, 94, 100)));
        assert!(
            !passed
                && (share - 0.94).abs() < 1e-12
                && figure.contains("intent kept 0.9400 (94 of 100)"),
            "{figure}"
        );
        assert!(!review_gate(&gate, "v202503", Some(&figures(49, 49, 49))).2, "too few reviewed");
        assert_eq!(
            review_gate(&gate, "v202503", None),
            ("no review recorded".to_owned(), 0.0, false)
        );
        assert!(
            !review_gate(&gate, "v202504", Some(&figures(60, 60, 60))).2,
            "another release's review"
        );
        // The manifest's spelling.
        let cfg: GatesConfig =
            toml::from_str("review = { min_reviewed = 50, min_intent = 0.95 }").unwrap();
        assert_eq!(cfg.review, Some(gate));
        assert!(toml::from_str::<GatesConfig>("review = { min_reviewed = 50 }").is_err());
        assert_eq!(
            review_path(std::path::Path::new("/r/v202503"), "v202503"),
            std::path::Path::new("/r/reviews/v202503/review.json")
        );
    }
}
