//! Step 3, decontamination: a pair whose text or code hashes like a release document (the
//! normalised text's 128-bit xxh3) or shares a large fraction of its word n-grams with one is
//! dropped. [`ReleaseIndex`] holds the releases' documents; [`decontaminate`] runs the step.
//! Reads and writes nothing (the releases' documents come in as [`ReleaseDoc`]s).

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::{xxh3_64_with_seed, xxh3_128};

use crate::pairs::{DropReason, Dropped, MatchKind, Pair, Side, StepOutput};
use crate::text::{Case, Prehashed, normalise_into};
use coreb_data::releases::ReleaseDoc;

/// `[decontaminate]`: how release documents are matched.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DecontamConfig {
    /// Words per n-gram.
    pub ngram: usize,
    /// Fraction of a side's n-grams found in one release document at or above which it is
    /// contaminated.
    pub min_overlap: f64,
}

impl Default for DecontamConfig {
    fn default() -> Self {
        DecontamConfig { ngram: 13, min_overlap: 0.3 }
    }
}

impl DecontamConfig {
    /// Check the bounds.
    pub fn validate(&self) -> Result<(), String> {
        if self.ngram == 0 {
            return Err("`ngram` must be at least 1".into());
        }
        if !(self.min_overlap > 0.0 && self.min_overlap <= 1.0) {
            return Err(format!("`min_overlap` must be in (0, 1], got `{}`", self.min_overlap));
        }
        Ok(())
    }
}

/// Lower-cased word tokens (letter/digit runs).
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Hashes of the word n-grams of a text, in order (duplicates kept).
pub fn ngram_hashes(text: &str, n: usize) -> Vec<u64> {
    let mut out = Vec::new();
    NgramScratch::default().hashes(text, n, &mut out);
    out
}

/// Reusable buffers of [`ngram_hashes`]: the hashes are those of the n-gram strings (words
/// joined by one space), but a window whose words are already separated by single spaces in
/// the lower-cased text is hashed in place instead of being joined.
#[derive(Debug, Default)]
struct NgramScratch {
    lower: String,
    spans: Vec<(usize, usize)>,
    /// `bad[i]`: how many of the first `i` word gaps are not a single space.
    bad: Vec<u32>,
    join: Vec<u8>,
}

impl NgramScratch {
    fn hashes(&mut self, text: &str, n: usize, out: &mut Vec<u64>) {
        out.clear();
        self.lower.clear();
        self.spans.clear();
        if text.is_ascii() {
            self.lower.push_str(text);
            self.lower.make_ascii_lowercase();
            let bytes = self.lower.as_bytes();
            let mut start = None;
            for (i, &b) in bytes.iter().enumerate() {
                match (b.is_ascii_alphanumeric(), start) {
                    (true, None) => start = Some(i),
                    (false, Some(s)) => {
                        self.spans.push((s, i));
                        start = None;
                    }
                    _ => {}
                }
            }
            if let Some(s) = start {
                self.spans.push((s, bytes.len()));
            }
        } else {
            for w in words(text) {
                if !self.lower.is_empty() {
                    self.lower.push(' ');
                }
                self.spans.push((self.lower.len(), self.lower.len() + w.len()));
                self.lower.push_str(&w);
            }
        }
        let n = n.max(1);
        if self.spans.len() < n {
            return;
        }
        let bytes = self.lower.as_bytes();
        self.bad.clear();
        self.bad.push(0);
        for g in self.spans.windows(2) {
            let single = g[1].0 == g[0].1 + 1 && bytes[g[0].1] == b' ';
            self.bad.push(self.bad.last().copied().unwrap_or(0) + u32::from(!single));
        }
        for w in 0..=self.spans.len() - n {
            let (start, end) = (self.spans[w].0, self.spans[w + n - 1].1);
            let h = if self.bad[w + n - 1] == self.bad[w] {
                xxh3_64_with_seed(&bytes[start..end], n as u64)
            } else {
                self.join.clear();
                for (i, &(a, b)) in self.spans[w..w + n].iter().enumerate() {
                    if i > 0 {
                        self.join.push(b' ');
                    }
                    self.join.extend_from_slice(&bytes[a..b]);
                }
                xxh3_64_with_seed(&self.join, n as u64)
            };
            out.push(h);
        }
    }
}

/// 128-bit xxh3 of the normalised text (case kept): the key of a hash hit.
fn normalised_hash(text: &str, buf: &mut String) -> u128 {
    normalise_into(&[text], Case::Kept, buf);
    xxh3_128(buf.as_bytes())
}

/// How one text matches a release index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Overlap {
    /// The release document with the same normalised hash, if any.
    pub hash_hit: Option<usize>,
    /// The release document sharing the most n-grams, if any.
    pub best_doc: Option<usize>,
    /// N-grams of the text found in `best_doc`.
    pub matched: usize,
    /// N-grams of the text.
    pub total: usize,
}

impl Overlap {
    /// Fraction of the text's n-grams found in the best document (0 when it has none).
    pub fn fraction(&self) -> f64 {
        if self.total == 0 { 0.0 } else { self.matched as f64 / self.total as f64 }
    }
}

/// Hashes and n-grams of the documents of one or more releases.
#[derive(Debug, Default)]
pub struct ReleaseIndex {
    docs: Vec<ReleaseDoc>,
    hashes: HashMap<u128, usize, Prehashed>,
    ngrams: HashMap<u64, Vec<u32>, Prehashed>,
    ngram: usize,
}

thread_local! {
    static OVERLAP_SCRATCH: std::cell::RefCell<(String, NgramScratch, Vec<u64>)> = std::cell::RefCell::default();
}

impl ReleaseIndex {
    /// Index `docs` with n-grams of `ngram` words.
    pub fn build(ngram: usize, docs: Vec<ReleaseDoc>) -> ReleaseIndex {
        let mut hashes = HashMap::default();
        let mut ngrams: HashMap<u64, Vec<u32>, Prehashed> = HashMap::default();
        let mut buf = String::new();
        for (i, d) in docs.iter().enumerate() {
            hashes.entry(normalised_hash(&d.text, &mut buf)).or_insert(i);
            for h in ngram_hashes(&d.text, ngram) {
                let list = ngrams.entry(h).or_default();
                if list.last() != Some(&(i as u32)) {
                    list.push(i as u32);
                }
            }
        }
        ReleaseIndex { docs, hashes, ngrams, ngram }
    }

    /// The indexed documents.
    pub fn docs(&self) -> &[ReleaseDoc] {
        &self.docs
    }

    /// How `text` matches the index.
    pub fn overlap(&self, text: &str) -> Overlap {
        OVERLAP_SCRATCH.with_borrow_mut(|(buf, scratch, grams)| {
            let hash_hit = self.hashes.get(&normalised_hash(text, buf)).copied();
            scratch.hashes(text, self.ngram, grams);
            grams.sort_unstable();
            grams.dedup();
            let mut per_doc: BTreeMap<u32, usize> = BTreeMap::new();
            for g in grams.iter() {
                if let Some(list) = self.ngrams.get(g) {
                    for &d in list {
                        *per_doc.entry(d).or_default() += 1;
                    }
                }
            }
            // Most matches, then the lowest document index: deterministic.
            let best = per_doc
                .iter()
                .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
                .map(|(&d, &m)| (d as usize, m));
            Overlap {
                hash_hit,
                best_doc: best.map(|b| b.0),
                matched: best.map_or(0, |b| b.1),
                total: grams.len(),
            }
        })
    }

    /// Why `pair` is contaminated, if it is.
    pub fn check(&self, config: &DecontamConfig, pair: &Pair) -> Option<DropReason> {
        let mut ngram_hit = None;
        for (side, text) in [(Side::Text, &pair.text), (Side::Code, &pair.code)] {
            let o = self.overlap(text);
            if let Some(d) = o.hash_hit {
                let doc = &self.docs[d];
                return Some(DropReason::Contaminated {
                    side,
                    kind: MatchKind::Hash,
                    release: doc.release.clone(),
                    doc: doc.doc.clone(),
                    overlap: 1.0,
                });
            }
            if let Some(d) =
                o.best_doc.filter(|_| ngram_hit.is_none() && o.fraction() >= config.min_overlap)
            {
                let doc = &self.docs[d];
                ngram_hit = Some(DropReason::Contaminated {
                    side,
                    kind: MatchKind::Ngram,
                    release: doc.release.clone(),
                    doc: doc.doc.clone(),
                    overlap: o.fraction(),
                });
            }
        }
        ngram_hit
    }
}

/// Step 3: drop pairs that match a release.
pub fn decontaminate(
    config: &DecontamConfig,
    index: &ReleaseIndex,
    pairs: Vec<Pair>,
) -> StepOutput {
    let mut out = StepOutput::default();
    for p in pairs {
        match index.check(config, &p) {
            Some(reason) => out.dropped.push(Dropped { id: p.id, reason }),
            None => out.kept.push(p),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pairs::pair;
    use crate::text::tests::TEXTS;

    #[test]
    fn ngram_hashes_in_place_agree_with_the_joined_words() {
        let mut scratch = NgramScratch::default();
        let mut out = Vec::new();
        for t in TEXTS {
            for n in [1, 2, 3, 13] {
                let w = words(t);
                let expected: Vec<u64> = if w.len() < n {
                    Vec::new()
                } else {
                    w.windows(n)
                        .map(|g| xxh3_64_with_seed(g.join(" ").as_bytes(), n as u64))
                        .collect()
                };
                scratch.hashes(t, n, &mut out);
                assert_eq!(out, expected, "{t:?} n={n}");
            }
        }
    }

    #[test]
    fn release_index_hash_and_ngram_hits() {
        let statement = "You are given an integer array nums of length n and an integer k. Return the number of subarrays whose sum is divisible by k, modulo ten to the ninth plus seven.";
        let index = ReleaseIndex::build(
            8,
            vec![ReleaseDoc {
                release: "v1".into(),
                doc: "problems:lcb_1".into(),
                text: statement.into(),
            }],
        );
        let cfg = DecontamConfig { ngram: 8, min_overlap: 0.3 };
        let hit = index
            .check(&cfg, &pair("x", &format!("  {}  ", statement.replace(' ', "\n")), "pass"))
            .unwrap();
        assert!(matches!(
            hit,
            DropReason::Contaminated { kind: MatchKind::Hash, side: Side::Text, .. }
        ));
        let half = format!("{} and then print it twice", &statement[..90]);
        assert!(matches!(
            index.check(&cfg, &pair("y", &half, "pass")),
            Some(DropReason::Contaminated { kind: MatchKind::Ngram, .. })
        ));
        assert_eq!(
            index.check(&cfg, &pair("z", "sort a list of tuples by the second element", "pass")),
            None
        );
    }
}
