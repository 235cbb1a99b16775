//! `coreb check`: the validity checks of a release, computed from its files alone, each with
//! a figure and a threshold. `coreb build` runs them as release gates before publishing.
//!
//! | check | figure | passes when |
//! |---|---|---|
//! | `id_unique` | ids repeated among documents and queries (any config), judgements repeated in a task | 0 |
//! | `id_format` | ids without their kind and version prefix (`code_<v>_`, `t2c_<v>_` …) or with whitespace | 0 |
//! | `id_earlier_releases` | ids also published by another release | 0 |
//! | `qrels_resolve` | judgements naming a query or candidate document the task lacks | 0 |
//! | `query_has_positive` | queries without a relevance-2 document | 0 |
//! | `unjudged_relevant` | pairs the task's definition makes relevant that are not judged 2 (a true text left out, a passing solution missed) | 0 |
//! | `unfounded_positives` | relevance-2 judgements the definition does not support | 0 |
//! | `hard_negative_coverage` | share of queries with a hard negative | ≥ `min_hard_negative_share` |
//! | `single_language_positives` | share of text2code `any` queries whose positives are all one language | ≤ `max_single_language_share` |
//! | `self_retrieval` | code queries whose own document is judged or is a candidate, or whose text is a non-positive candidate's | 0 |
//! | `language_named` | language-constrained queries whose text does not name the language | 0 |
//! | `empty_texts` | empty or blank documents and queries | 0 |
//! | `duplicate_texts` | one query text with two answer sets in a subtask; one document text under two problems | 0 |
//! | `lengths` | characters and words (min / median / max) of every text column | none over `max_text_chars` |
//! | `beir_parquet_equivalence` | BEIR folder vs Parquet configs: corpus, queries, relevant pairs, and one run's nDCG@10, MAP@10, Recall@10 per query through both paths (CoREB evaluator on the graded Parquet qrels; trec_eval's rules at the default level on the BEIR qrels) | identical, max difference ≤ 1e-9 |
//!
//! The Parquet analytics are lazy polars queries in [`frames`] (the only module that calls
//! polars); the BEIR folders are read with [`crate::beir`] and the run is scored
//! by the evaluator service. Does NOT write anything or decide what a failure stops.

pub mod frames;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;
use xxhash_rust::xxh3::xxh3_64;

use crate::beir::{self, BeirError, Dataset};
use crate::gates::GatesConfig;
use coreb_data::composition::Composition;
use coreb_data::qrels::Task;
use coreb_trec::coreb::{CorebConfig, evaluate as coreb_evaluate};
use coreb_trec::trec::{TrecOptions, evaluate as trec_evaluate};
use coreb_trec::{EvalError, Qrels, Run};
use frames::{FrameError, Frames};

/// Why the checks could not run (a failed check is a [`CheckResult`], not an error).
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// A Parquet config could not be read or queried.
    #[error("{release}: {source}")]
    Frames {
        /// The release directory.
        release: PathBuf,
        /// The read or polars error.
        #[source]
        source: FrameError,
    },
    /// A BEIR folder could not be read.
    #[error(transparent)]
    Beir(#[from] BeirError),
    /// The evaluator refused the judgements or the run.
    #[error(transparent)]
    Eval(#[from] EvalError),
    /// A recorded review could not be read.
    #[error("`{path}`: {reason}")]
    Review {
        /// The `review.json`.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// `[gates] waive` names no check.
    #[error("`gates.waive`: no check is named `{name}` (the checks: {known})")]
    UnknownCheck {
        /// The name given.
        name: String,
        /// The checks' names.
        known: String,
    },
}

/// The checks, in the order they are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Check {
    /// Ids unique within and across configs and tasks.
    IdUnique,
    /// Ids carry kind and version.
    IdFormat,
    /// No id of another release reused.
    IdEarlierReleases,
    /// Judgements resolve.
    QrelsResolve,
    /// Every query has a positive.
    QueryHasPositive,
    /// No known-relevant pair left unjudged.
    UnjudgedRelevant,
    /// No positive without grounds.
    UnfoundedPositives,
    /// Queries with hard negatives.
    HardNegativeCoverage,
    /// Queries whose positives are one language.
    SingleLanguagePositives,
    /// No query retrieves itself.
    SelfRetrieval,
    /// Constrained queries name their language.
    LanguageNamed,
    /// No empty text.
    EmptyTexts,
    /// No ambiguous duplicate text.
    DuplicateTexts,
    /// Length distributions.
    Lengths,
    /// BEIR and Parquet mean the same.
    BeirParquetEquivalence,
    /// A recorded human review meets `[gates] review` (only when it is set).
    Review,
}

impl Check {
    /// Every check, in print order.
    pub const ALL: [Check; 16] = [
        Check::IdUnique,
        Check::IdFormat,
        Check::IdEarlierReleases,
        Check::QrelsResolve,
        Check::QueryHasPositive,
        Check::UnjudgedRelevant,
        Check::UnfoundedPositives,
        Check::HardNegativeCoverage,
        Check::SingleLanguagePositives,
        Check::SelfRetrieval,
        Check::LanguageNamed,
        Check::EmptyTexts,
        Check::DuplicateTexts,
        Check::Lengths,
        Check::BeirParquetEquivalence,
        Check::Review,
    ];

    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Check::IdUnique => "id_unique",
            Check::IdFormat => "id_format",
            Check::IdEarlierReleases => "id_earlier_releases",
            Check::QrelsResolve => "qrels_resolve",
            Check::QueryHasPositive => "query_has_positive",
            Check::UnjudgedRelevant => "unjudged_relevant",
            Check::UnfoundedPositives => "unfounded_positives",
            Check::HardNegativeCoverage => "hard_negative_coverage",
            Check::SingleLanguagePositives => "single_language_positives",
            Check::SelfRetrieval => "self_retrieval",
            Check::LanguageNamed => "language_named",
            Check::EmptyTexts => "empty_texts",
            Check::DuplicateTexts => "duplicate_texts",
            Check::Lengths => "lengths",
            Check::BeirParquetEquivalence => "beir_parquet_equivalence",
            Check::Review => "review",
        }
    }
}

coreb_base::display_as_str!(Check);

/// One check on one scope (the release, a task, or a text column).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckResult {
    /// Which check.
    pub check: Check,
    /// `release`, a task, or a `config.column`.
    pub scope: String,
    /// The figure, as printed.
    pub figure: String,
    /// The figure as a number (a count or a share).
    pub value: f64,
    /// The threshold, as printed (`= 0`, `≥ 0.80`).
    pub threshold: String,
    /// Did it pass?
    pub passed: bool,
    /// How many offending ids there are.
    pub offending_count: usize,
    /// The first offending ids (at most `max_examples`).
    pub offending: Vec<String>,
    /// Failed but not enforced: `[gates] waive` names it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub waived: bool,
}

impl std::fmt::Display for CheckResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "check `{}` failed for `{}`: {} (threshold {})",
            self.check, self.scope, self.figure, self.threshold
        )?;
        if !self.offending.is_empty() {
            write!(f, "; first: {}", crate::ticked(&self.offending))?;
        }
        Ok(())
    }
}

/// Every check of one release.
#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    /// The release version.
    pub version: String,
    /// The releases its ids were compared with.
    pub compared_with: Vec<String>,
    /// Every result, check by check.
    pub results: Vec<CheckResult>,
}

impl CheckReport {
    /// The failed results that are enforced (not waived).
    pub fn failures(&self) -> Vec<&CheckResult> {
        self.results.iter().filter(|r| !r.passed && !r.waived).collect()
    }

    /// A Markdown table: check, scope, figure, threshold, status, first offending ids.
    pub fn to_table(&self) -> String {
        let mut s = format!(
            "# Checks of release `{}`\n\n| check | scope | figure | threshold | status | first offending |\n|---|---|---|---|---|---|\n",
            self.version
        );
        for r in &self.results {
            let first = crate::ticked(r.offending.iter().take(3));
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} |",
                r.check,
                r.scope,
                r.figure,
                r.threshold,
                match (r.passed, r.waived) {
                    (true, _) => "pass",
                    (false, true) => "waived",
                    (false, false) => "FAIL",
                },
                first
            );
        }
        let failed = self.failures().len();
        let _ = writeln!(s, "\n{} checks, {} failed.", self.results.len(), failed);
        s
    }
}

struct Results<'a> {
    cfg: &'a GatesConfig,
    out: Vec<CheckResult>,
}

impl Results<'_> {
    /// A check whose figure is a count of offending ids, passing at 0.
    fn count(&mut self, check: Check, scope: &str, offending: Vec<String>) {
        let n = offending.len();
        self.push(check, scope, n.to_string(), n as f64, "= 0".into(), n == 0, offending);
    }

    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        check: Check,
        scope: &str,
        figure: String,
        value: f64,
        threshold: String,
        passed: bool,
        mut offending: Vec<String>,
    ) {
        let offending_count = offending.len();
        offending.truncate(self.cfg.max_examples);
        let waived = self.cfg.waive.iter().any(|w| w == check.as_str());
        self.out.push(CheckResult {
            check,
            scope: scope.to_owned(),
            figure,
            value,
            threshold,
            passed,
            offending_count,
            offending,
            waived,
        });
    }
}

/// Other releases beside `release` in its parent directory (`v` + digits, with Parquet
/// configs), for the cross-release id check.
pub fn sibling_releases(release: &Path) -> Vec<PathBuf> {
    let (Some(parent), Some(own)) = (release.parent(), release.file_name()) else {
        return Vec::new();
    };
    let Ok(entries) = fs_err::read_dir(parent) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            name.as_str() != own && name.starts_with('v') && p.join("code_corpus.parquet").is_file()
        })
        .collect();
    out.sort();
    out
}

/// Refuse a `[gates] waive` entry that names no check (the manifest is checked with it when
/// it is resolved, so a typo stops the build before its first stage).
pub fn check_waivers(cfg: &GatesConfig) -> Result<(), CheckError> {
    match cfg.waive.iter().find(|w| !Check::ALL.iter().any(|c| c.as_str() == w.as_str())) {
        Some(unknown) => Err(CheckError::UnknownCheck {
            name: unknown.clone(),
            known: Check::ALL.map(Check::as_str).join(", "),
        }),
        None => Ok(()),
    }
}

/// Run every check on the release at `dir` (version `version`, composed as `composition`
/// says), comparing its ids with the releases at `others`.
pub fn check_release(
    dir: &Path,
    version: &str,
    others: &[PathBuf],
    cfg: &GatesConfig,
    composition: &Composition,
) -> Result<CheckReport, CheckError> {
    check_waivers(cfg)?;
    let frames = Frames::new(dir).with_search_positives(composition.search_positives);
    let fr = |source: FrameError| CheckError::Frames { release: dir.to_owned(), source };
    let mut r = Results { cfg, out: Vec::new() };

    r.count(Check::IdUnique, "release", frames.duplicate_ids().map_err(fr)?);
    r.count(Check::IdFormat, "release", frames.malformed_ids(version).map_err(fr)?);
    let mut reused = Vec::new();
    for other in others {
        let name = other.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let ids = frames
            .ids_also_in(&Frames::new(other))
            .map_err(|source| CheckError::Frames { release: other.clone(), source })?;
        reused.extend(ids.into_iter().map(|id| format!("{id}@{name}")));
    }
    r.count(Check::IdEarlierReleases, "release", reused);

    let mut beir_sets = BTreeMap::new();
    for task in Task::ALL {
        let scope = task.as_str();
        r.count(Check::QrelsResolve, scope, frames.dangling_qrels(task).map_err(fr)?);
        let (without, _) = frames.queries_without(task, 2, false).map_err(fr)?;
        r.count(Check::QueryHasPositive, scope, without);
        r.count(Check::UnjudgedRelevant, scope, frames.unjudged_relevant(task).map_err(fr)?);
        r.count(Check::UnfoundedPositives, scope, frames.unfounded_positives(task).map_err(fr)?);
        let (without, total) = frames.queries_without(task, 1, true).map_err(fr)?;
        let share = if total == 0 { 1.0 } else { 1.0 - without.len() as f64 / total as f64 };
        let figure = format!("{share:.4} ({} of {total})", total - without.len());
        let threshold = format!("≥ {:.2}", cfg.min_hard_negative_share);
        r.push(
            Check::HardNegativeCoverage,
            scope,
            figure,
            share,
            threshold,
            share >= cfg.min_hard_negative_share,
            without,
        );
        beir_sets.insert(task, beir::read_dir(&dir.join(task.as_str()), "test")?);
    }

    let (single, total) = frames.single_language_queries().map_err(fr)?;
    let share = if total == 0 { 0.0 } else { single.len() as f64 / total as f64 };
    let figure = format!("{share:.4} ({} of {total})", single.len());
    r.push(
        Check::SingleLanguagePositives,
        "text2code",
        figure,
        share,
        format!("≤ {:.2}", cfg.max_single_language_share),
        share <= cfg.max_single_language_share,
        single,
    );

    let mut self_matches = frames.self_matches().map_err(fr)?;
    // An anchor no query judges has no business in the corpus a client ranks.
    let unjudged: BTreeSet<String> = frames.unjudged_anchors().map_err(fr)?.into_iter().collect();
    self_matches.extend(
        beir_sets[&Task::Code2Code]
            .corpus
            .iter()
            .filter(|d| unjudged.contains(&d.id))
            .map(|d| format!("code2code/corpus.jsonl:{}", d.id)),
    );
    r.count(Check::SelfRetrieval, "code2code", self_matches);

    let (unnamed, total) = frames.unnamed_language_queries().map_err(fr)?;
    let passed = unnamed.is_empty();
    r.push(
        Check::LanguageNamed,
        "text2code",
        format!("{} of {total}", unnamed.len()),
        unnamed.len() as f64,
        "= 0".into(),
        passed,
        unnamed,
    );
    r.count(Check::EmptyTexts, "release", frames.empty_texts().map_err(fr)?);
    r.count(Check::DuplicateTexts, "release", frames.ambiguous_texts().map_err(fr)?);
    for l in frames.lengths(cfg.max_text_chars).map_err(fr)? {
        let figure = format!(
            "{} rows; chars {:.0}/{:.0}/{:.0}; words {:.0}/{:.0}/{:.0}",
            l.rows, l.chars[0], l.chars[1], l.chars[2], l.words[0], l.words[1], l.words[2]
        );
        let passed = l.too_long.is_empty();
        r.push(
            Check::Lengths,
            &l.name,
            figure,
            l.words[1],
            format!("chars ≤ {}", cfg.max_text_chars),
            passed,
            l.too_long,
        );
    }

    for task in Task::ALL {
        let (diff, offending) =
            equivalence(&frames, task, &beir_sets[&task]).map_err(|e| match e {
                Equivalence::Frames(source) => {
                    CheckError::Frames { release: dir.to_owned(), source }
                }
                Equivalence::Eval(e) => CheckError::Eval(e),
            })?;
        let passed = offending.is_empty();
        let figure = format!("{} mismatches, max metric difference {diff:.1e}", offending.len());
        r.push(
            Check::BeirParquetEquivalence,
            task.as_str(),
            figure,
            diff,
            "identical, ≤ 1e-9".into(),
            passed,
            offending,
        );
    }
    if let Some(gate) = &cfg.review {
        let path = crate::gates::review_path(dir, version);
        let figures = read_review_figures(&path)?;
        let (figure, share, passed) = crate::gates::review_gate(gate, version, figures.as_ref());
        let threshold = format!(
            "≥ {} reviewed, intent ≥ {:.2}, recorded in `{}`",
            gate.min_reviewed,
            gate.min_intent,
            path.display()
        );
        r.push(Check::Review, "release", figure, share, threshold, passed, Vec::new());
    }
    let compared_with = others.iter().map(|o| o.display().to_string()).collect();
    Ok(CheckReport { version: version.to_owned(), compared_with, results: r.out })
}

/// The `figures` of a recorded `review.json`; `None` when there is none.
fn read_review_figures(path: &Path) -> Result<Option<crate::gates::ReviewFigures>, CheckError> {
    let bad = |reason: String| CheckError::Review { path: path.to_owned(), reason };
    let text = match fs_err::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(bad(e.to_string())),
    };
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    let figures = value.get("figures").cloned().ok_or_else(|| bad("no `figures`".into()))?;
    serde_json::from_value(figures).map(Some).map_err(|e| bad(format!("`figures`: {e}")))
}

enum Equivalence {
    Frames(FrameError),
    Eval(EvalError),
}

impl From<FrameError> for Equivalence {
    fn from(e: FrameError) -> Self {
        Equivalence::Frames(e)
    }
}

impl From<EvalError> for Equivalence {
    fn from(e: EvalError) -> Self {
        Equivalence::Eval(e)
    }
}

/// Compare a task's BEIR folder with its Parquet configs: the same candidates (id and text),
/// the same queries, the same relevant pairs (BEIR: score ≥ 1, its clients' default;
/// Parquet: relevance 2), and the same nDCG@10, MAP@10 and Recall@10 per query for one run
/// that ranks every judged document (hard negatives included, interleaved with the positives
/// by a hash) and a few unjudged ones. Returns the largest metric difference and the
/// mismatches (`corpus:id`, `queries:id`, `qrels:q→d`, `run:q`).
fn equivalence(
    frames: &Frames,
    task: Task,
    beir: &Dataset,
) -> Result<(f64, Vec<String>), Equivalence> {
    let mut bad = Vec::new();
    let expected: BTreeMap<String, String> = frames.candidate_rows(task)?.into_iter().collect();
    let got: BTreeMap<&str, &str> =
        beir.corpus.iter().map(|d| (d.id.as_str(), d.text.as_str())).collect();
    for (id, text) in &expected {
        if got.get(id.as_str()) != Some(&text.as_str()) {
            bad.push(format!("corpus:{id}"));
        }
    }
    bad.extend(
        got.keys().filter(|id| !expected.contains_key(**id)).map(|id| format!("corpus:{id}")),
    );
    let queries = frames.query_rows(task)?;
    let want: BTreeMap<&str, &str> =
        queries.iter().map(|q| (q.id.as_str(), q.text.as_str())).collect();
    let have: BTreeMap<&str, &str> =
        beir.queries.iter().map(|q| (q.id.as_str(), q.text.as_str())).collect();
    for id in want.keys().chain(have.keys()).collect::<BTreeSet<_>>() {
        if want.get(id) != have.get(id) {
            bad.push(format!("queries:{id}"));
        }
    }
    let graded_rows = frames.qrel_rows(task)?;
    let parquet_relevant: BTreeSet<(&str, &str)> = graded_rows
        .iter()
        .filter(|(_, _, r)| *r >= 2)
        .map(|(q, d, _)| (q.as_str(), d.as_str()))
        .collect();
    let beir_relevant: BTreeSet<(&str, &str)> = beir
        .qrels
        .queries
        .iter()
        .flat_map(|(q, qq)| {
            qq.judged.iter().filter(|(_, r)| *r >= 1).map(move |(d, _)| (q.as_str(), d.as_str()))
        })
        .collect();
    bad.extend(
        parquet_relevant
            .symmetric_difference(&beir_relevant)
            .map(|(q, d)| format!("qrels:{q}→{d}")),
    );

    if queries.is_empty() {
        return Ok((0.0, bad));
    }
    let graded =
        Qrels::from_triples(graded_rows.iter().map(|(q, d, r)| (q.as_str(), d.as_str(), *r)))?;
    let mut run = Run::new("equivalence");
    let unjudged: Vec<&String> = expected.keys().take(5).collect();
    for q in &queries {
        let mut docs: BTreeSet<&str> = graded
            .queries
            .get(&q.id)
            .map(|qq| qq.judged.iter().map(|(d, _)| d.as_str()).collect())
            .unwrap_or_default();
        if let Some(qq) = beir.qrels.queries.get(&q.id) {
            docs.extend(qq.judged.iter().map(|(d, _)| d.as_str()));
        }
        docs.extend(unjudged.iter().map(|d| d.as_str()));
        for d in docs {
            let score = xxh3_64(format!("{}\u{0}{d}", q.id).as_bytes()) as f64 / u64::MAX as f64;
            run.push(&q.id, d, score);
        }
    }
    let coreb = coreb_evaluate(&graded, &run, &CorebConfig { ks: vec![10], level: 2 });
    let trec = trec_evaluate(
        &beir.qrels,
        &run,
        &TrecOptions::with_measures(&["ndcg_cut.10", "map_cut.10", "recall.10"])?,
    )?;
    let mut max_diff: f64 = 0.0;
    for c in &coreb {
        let theirs = [
            trec.query_value(&c.qid, "ndcg_cut_10"),
            trec.query_value(&c.qid, "map_cut_10"),
            trec.query_value(&c.qid, "recall_10"),
        ];
        let ours = [c.at_k.ndcg[0], c.at_k.map[0], c.at_k.recall[0]];
        let mut worst: f64 = 0.0;
        for (o, t) in ours.iter().zip(theirs) {
            worst = worst.max(t.map_or(f64::INFINITY, |t| (o - t).abs()));
        }
        if worst > 1e-9 {
            bad.push(format!("run:{}", c.qid));
        }
        max_diff = max_diff.max(worst);
    }
    bad.sort();
    bad.dedup();
    Ok((max_diff, bad))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_waiver_must_name_a_check() {
        let named = |names: &[&str]| GatesConfig {
            waive: names.iter().map(|n| (*n).to_owned()).collect(),
            ..GatesConfig::default()
        };
        assert!(check_waivers(&named(&["language_named", "duplicate_texts"])).is_ok());
        let err =
            check_waivers(&named(&["language_named", "language_nmed"])).unwrap_err().to_string();
        assert!(
            err.contains("`language_nmed`") && err.contains("language_named, empty_texts"),
            "{err}"
        );
    }
}
