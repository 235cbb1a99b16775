//! The curate step of one output shard: its rows (in input order, [`Rows`]) go through the
//! dedup decisions → language → decontaminate (per row, in parallel batches), then alignment
//! and negatives; each dropped pair and each training record goes to a [`Sink`] as it is
//! decided, and the step returns the shard's [`CorpusReport`]. [`merge`] sums the reports of
//! the shards and [`markdown`] renders one. Reads and writes nothing itself.

use std::collections::{BTreeMap, HashMap};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::{
    AlignConfig, CorpusStats, Decision, DecontamConfig, DropReason, Dropped, LanguageConfig,
    NegativeConfig, Pair, ReleaseIndex, SimMatrix, StepOutput,
};
use crate::table::TrainingRecordRef;

/// Up to this many examples per drop reason in a report.
pub const EXAMPLES: usize = 3;

/// Records checked together (in parallel) within a shard.
const BATCH: usize = 2048;

/// The rows of an output shard, in input order.
pub trait Rows {
    /// Why a row cannot be read.
    type Error;
    /// The next row into `seq` (its position in the input) and `pair` (reused); `false` at the
    /// end.
    fn next_into(&mut self, seq: &mut u64, pair: &mut Pair) -> Result<bool, Self::Error>;
}

/// The dedup decisions of an output shard's rows, asked for in input order (each batch after
/// the one before): held in memory ([`super::Duplicates`]) or read as a stream from the split
/// steps' files ([`super::duplicates::steps::SplitDecisions`]).
pub trait Decisions: Sync {
    /// Why a decision cannot be read.
    type Error;
    /// Append the decisions of `rows` (in input order, after those asked before) to `out`.
    fn decisions(
        &mut self,
        rows: &[(u64, Pair)],
        out: &mut Vec<Decision>,
    ) -> Result<(), Self::Error>;
    /// The id of row `seq`, which a decision names.
    fn name(&self, seq: u64) -> String;
}

/// Where the decisions of the step go, in the order they are made.
pub trait Sink {
    /// Why a decision cannot be written.
    type Error;
    /// A dropped pair.
    fn dropped(&mut self, dropped: &Dropped) -> Result<(), Self::Error>;
    /// A training record.
    fn record(&mut self, record: &TrainingRecordRef<'_>) -> Result<(), Self::Error>;
}

/// An example of a dropped pair, for the report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Example {
    /// The pair.
    #[serde(flatten)]
    pub dropped: Dropped,
    /// The start of its text.
    pub text: String,
}

/// What a shard (or the whole run) did.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CorpusReport {
    /// Counts.
    pub stats: CorpusStats,
    /// Examples per drop reason.
    pub examples: BTreeMap<String, Vec<Example>>,
}

impl CorpusReport {
    /// Count a dropped pair, keeping it as an example while its reason has fewer than
    /// [`EXAMPLES`].
    fn note(&mut self, d: &Dropped, text: &str) {
        self.stats.record(d);
        let ex = self.examples.entry(d.reason.name().to_owned()).or_default();
        if ex.len() < EXAMPLES {
            ex.push(Example { dropped: d.clone(), text: snippet(text) });
        }
    }
}

/// The start of a text, for an example.
fn snippet(text: &str) -> String {
    let s: String = text.chars().take(120).collect();
    if s.len() < text.len() { format!("{s}…") } else { s }
}

/// The curation of one output shard: the configs of its steps and what the global steps
/// decided before it (the duplicates, the index of release documents).
pub struct Curate<'a> {
    /// The language filter.
    pub language: &'a LanguageConfig,
    /// Decontamination.
    pub decontaminate: &'a DecontamConfig,
    /// Alignment.
    pub align: &'a AlignConfig,
    /// Negative mining.
    pub negatives: &'a NegativeConfig,
    /// The release documents to decontaminate against.
    pub index: &'a ReleaseIndex,
}

impl Curate<'_> {
    /// Whether alignment or negative mining runs: they compare every kept pair with every
    /// other, so only then are the shard's kept pairs held.
    fn holds(&self) -> bool {
        self.align.enabled || self.negatives.hard + self.negatives.easy > 0
    }

    /// Curate the rows of one shard, with the dedup decisions `dups` of its rows: every dropped
    /// pair and every record goes to `sink` as it is decided; `similarity` gives the
    /// similarity matrix of the held pairs when a step needs one.
    pub fn run<R: Rows, V: Decisions, S: Sink>(
        &self,
        rows: &mut R,
        dups: &mut V,
        similarity: impl Fn(&[Pair]) -> Result<SimMatrix, S::Error>,
        sink: &mut S,
    ) -> Result<CorpusReport, S::Error>
    where
        R::Error: Into<S::Error>,
        V::Error: Into<S::Error>,
    {
        let mut report = CorpusReport::default();
        let mut held = Vec::new();
        let mut batch: Vec<(u64, Pair)> = Vec::with_capacity(BATCH);
        let mut decisions = Vec::with_capacity(BATCH);
        loop {
            let n = fill(rows, &mut batch).map_err(Into::into)?;
            if n == 0 {
                break;
            }
            decisions.clear();
            dups.decisions(&batch[..n], &mut decisions).map_err(Into::into)?;
            for ((_, pair), reason) in
                batch[..n].iter().zip(self.check(&batch[..n], &*dups, &decisions))
            {
                report.stats.rows_in += 1;
                match reason {
                    Some(reason) => {
                        let d = Dropped { id: pair.id.clone(), reason };
                        report.note(&d, &pair.text);
                        sink.dropped(&d)?;
                    }
                    None if self.holds() => held.push(pair.clone()),
                    None => {
                        sink.record(&TrainingRecordRef {
                            id: &pair.id,
                            query: &pair.text,
                            pos: &pair.code,
                            hard_neg: &[],
                            easy_neg: &[],
                        })?;
                        report.stats.rows_out += 1;
                    }
                }
            }
            if n < BATCH {
                break;
            }
        }
        if self.holds() {
            self.align_and_mine(held, similarity, sink, &mut report)?;
        }
        Ok(report)
    }

    /// Dedup decisions, then the language filter and decontamination (per row: in parallel).
    fn check<V: Decisions>(
        &self,
        batch: &[(u64, Pair)],
        dups: &V,
        decisions: &[Decision],
    ) -> Vec<Option<DropReason>> {
        batch
            .par_iter()
            .zip(decisions)
            .map(|((_, pair), decision)| {
                decision
                    .reason(&pair.id, |s| dups.name(s))
                    .or_else(|| super::check_text(self.language, &pair.text).err())
                    .or_else(|| self.index.check(self.decontaminate, pair))
            })
            .collect()
    }

    /// Align the held pairs, then mine negatives for the aligned ones.
    fn align_and_mine<S: Sink>(
        &self,
        held: Vec<Pair>,
        similarity: impl Fn(&[Pair]) -> Result<SimMatrix, S::Error>,
        sink: &mut S,
        report: &mut CorpusReport,
    ) -> Result<(), S::Error> {
        let texts: HashMap<String, String> =
            held.iter().map(|p| (p.id.clone(), p.text.clone())).collect();
        // The similarity matrix is quadratic in the shard: build it only when a step needs it.
        let empty = SimMatrix::from_embeddings(&[], &[]);
        let sim = if self.align.enabled { similarity(&held)? } else { empty.clone() };
        let StepOutput { kept, dropped } = super::align(self.align, held, &sim);
        for d in dropped {
            report.note(&d, texts.get(&d.id).map_or("", String::as_str));
            sink.dropped(&d)?;
        }
        let sim =
            if self.negatives.hard + self.negatives.easy > 0 { similarity(&kept)? } else { empty };
        for r in super::mine_negatives(self.negatives, &kept, &sim) {
            sink.record(&TrainingRecordRef::from(&r))?;
            report.stats.rows_out += 1;
        }
        Ok(())
    }
}

/// Fill `batch` with up to [`BATCH`] rows, reusing its strings; the number read.
fn fill<R: Rows>(rows: &mut R, batch: &mut Vec<(u64, Pair)>) -> Result<usize, R::Error> {
    let mut n = 0;
    while n < BATCH {
        if n == batch.len() {
            batch.push((0, Pair { id: String::new(), text: String::new(), code: String::new() }));
        }
        let (seq, pair) = &mut batch[n];
        if !rows.next_into(seq, pair)? {
            break;
        }
        n += 1;
    }
    Ok(n)
}

/// Add a shard's report to the sum of those before it (in shard order).
pub fn merge(into: &mut CorpusReport, shard: CorpusReport) {
    into.stats += shard.stats;
    for (reason, ex) in shard.examples {
        let all = into.examples.entry(reason).or_default();
        all.extend(ex);
        all.truncate(EXAMPLES);
    }
}

/// A report as Markdown: the drops per step and reason, then the examples.
pub fn markdown(r: &CorpusReport) -> String {
    let s = &r.stats;
    let mut md =
        String::from("# Corpus curation report\n\n| step | reason | dropped |\n|---|---|---:|\n");
    for (step, reason, n) in [
        ("dedup", "duplicate_id", s.duplicate_id),
        ("dedup", "exact_duplicate", s.exact_duplicate),
        ("dedup", "near_duplicate", s.near_duplicate),
        ("language", "too_short", s.too_short),
        ("language", "url", s.url),
        ("language", "html", s.html),
        ("language", "language", s.language),
        ("decontaminate", "contaminated", s.contaminated),
        ("align", "misaligned", s.misaligned),
    ] {
        md.push_str(&format!("| {step} | {reason} | {n} |\n"));
    }
    md.push_str(&format!(
        "\nPairs in: {}. Training records out: {}.\n\n## Examples\n",
        s.rows_in, s.rows_out
    ));
    for (reason, ex) in &r.examples {
        md.push_str(&format!("\n### {reason}\n\n"));
        for e in ex {
            let detail = serde_json::to_string(&e.dropped.reason).unwrap_or_default();
            md.push_str(&format!(
                "- `{}` {}: {}\n",
                e.dropped.id,
                detail,
                e.text.replace('\n', " ")
            ));
        }
    }
    md
}
