//! `corpus`: curate text–code training pairs (CoRNStack-style) and check them against
//! published releases.
//!
//! Steps, each a pure function over [`Pair`]s that returns the kept pairs and a typed
//! [`Dropped`] per removed pair:
//! 1. [`dedup_pairs`]: exact (sha256 of the normalised pair) and near-duplicates (MinHash-LSH,
//!    confirmed by shingle Jaccard) with [`crate::dedup`]'s primitives, greedily in row order
//!    (linear in the rows); the first row of a group is kept.
//! 2. [`filter_language`]: the text must be long enough, hold no URL or HTML, and not be
//!    reliably detected (whatlang) as another language than the wanted one.
//! 3. [`decontaminate`]: drop a pair whose text or code hashes like a release document or
//!    shares a large fraction of its word n-grams with one ([`ReleaseIndex`]).
//! 4. [`align`]: dual consistency — text and code must rank each other in their top-k by
//!    similarity and the similarity must reach a threshold. The similarity matrix comes from
//!    outside ([`SimMatrix::from_embeddings`]) or from [`SimMatrix::lexical`], a TF-IDF cosine
//!    over the code-aware tokens of [`crate::evaluate::bm25::tokenize`].
//! 5. [`mine_negatives`]: hard negatives sampled from the similarity matrix with a temperature
//!    (Gumbel top-k, seeded per record), skipping likely false negatives; easy negatives drawn
//!    uniformly from the rest.
//!
//! Reads and writes nothing; the engine streams sources, shards them ([`shard_of`]) and
//! writes the records. Does NOT call an embedding endpoint itself.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::{xxh3_64, xxh3_64_with_seed};

use crate::dedup::{self, DedupConfig, normalise, statement_hash};
use crate::evaluate::bm25::{Bm25Config, tokenize};

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
    /// Same sha256 of the normalised text.
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
    /// Shingle Jaccard with a kept pair at or above the threshold.
    NearDuplicate {
        /// The kept pair.
        of: String,
        /// Jaccard similarity with it.
        jaccard: f64,
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

impl std::ops::AddAssign for CorpusStats {
    fn add_assign(&mut self, o: Self) {
        self.rows_in += o.rows_in;
        self.duplicate_id += o.duplicate_id;
        self.exact_duplicate += o.exact_duplicate;
        self.near_duplicate += o.near_duplicate;
        self.too_short += o.too_short;
        self.url += o.url;
        self.html += o.html;
        self.language += o.language;
        self.contaminated += o.contaminated;
        self.misaligned += o.misaligned;
        self.rows_out += o.rows_out;
    }
}

/// The shard of a pair: xxh3 of its lower-cased normalised text, modulo `shards`. Pairs that
/// differ in case or whitespace of the text land in the same shard, so dedup per shard still
/// sees them together.
pub fn shard_of(text: &str, shards: u32) -> u32 {
    (xxh3_64(normalise(text).to_lowercase().as_bytes()) % u64::from(shards.max(1))) as u32
}

/// Step 1: exact and near-duplicate removal over `text + "\n" + code`, with the hashing,
/// shingles, MinHash signatures and Jaccard of [`crate::dedup`].
///
/// Streaming and greedy, so that it stays linear on corpora made of many near-copies (where
/// the all-pairs clustering of [`crate::dedup::dedup`] meets LSH buckets of thousands of
/// members): rows are taken in order; a row whose normalised hash was seen is an exact
/// duplicate of the first row with that hash; otherwise it is compared with the kept rows that
/// share one of its LSH bands (the first kept row of each bucket) and is a near-duplicate of
/// the first one whose shingle Jaccard reaches the threshold. A kept row becomes the
/// representative of its still-empty buckets. So the first row of a group is always kept.
pub fn dedup_pairs(config: &DedupConfig, pairs: Vec<Pair>) -> StepOutput {
    let rows_per_band = (config.num_perm / config.bands.max(1)).max(1);
    let mut first_id: HashMap<&str, ()> = HashMap::new();
    let mut first_hash: HashMap<String, usize> = HashMap::new();
    let mut buckets: HashMap<(usize, u64), usize> = HashMap::new();
    let mut kept_sets: HashMap<usize, HashSet<u64>> = HashMap::new();
    let mut reasons: Vec<Option<DropReason>> = Vec::with_capacity(pairs.len());
    for (row, p) in pairs.iter().enumerate() {
        let joined = format!("{}\n{}", p.text, p.code);
        if first_id.insert(p.id.as_str(), ()).is_some() {
            reasons.push(Some(DropReason::DuplicateId { of: p.id.clone() }));
            continue;
        }
        let hash = statement_hash(&joined);
        if let Some(&of) = first_hash.get(&hash) {
            reasons.push(Some(DropReason::ExactDuplicate { of: pairs[of].id.clone() }));
            continue;
        }
        first_hash.insert(hash, row);
        let set = dedup::shingles(&joined, config.shingle_words);
        let sig = dedup::signature(&set, config);
        let keys: Vec<(usize, u64)> = sig
            .chunks(rows_per_band)
            .enumerate()
            .map(|(b, band)| {
                let bytes: Vec<u8> = band.iter().flat_map(|v| v.to_le_bytes()).collect();
                (b, xxh3_64(&bytes))
            })
            .collect();
        let mut candidates: Vec<usize> = keys.iter().filter_map(|k| buckets.get(k).copied()).collect();
        candidates.sort_unstable();
        candidates.dedup();
        let near = candidates.into_iter().find_map(|c| {
            let j = dedup::jaccard(&set, &kept_sets[&c]);
            (j >= config.threshold).then_some((c, j))
        });
        match near {
            Some((of, jaccard)) => reasons.push(Some(DropReason::NearDuplicate { of: pairs[of].id.clone(), jaccard: (jaccard * 1e4).round() / 1e4 })),
            None => {
                for k in keys {
                    buckets.entry(k).or_insert(row);
                }
                kept_sets.insert(row, set);
                reasons.push(None);
            }
        }
    }
    let mut result = StepOutput::default();
    for (p, reason) in pairs.into_iter().zip(reasons) {
        match reason {
            Some(reason) => result.dropped.push(Dropped { id: p.id, reason }),
            None => result.kept.push(p),
        }
    }
    result
}

/// `[language]`: the natural-language filter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LanguageConfig {
    /// Wanted language, ISO 639-3.
    pub language: String,
    /// Minimum text length in characters (normalised).
    pub min_chars: usize,
}

impl Default for LanguageConfig {
    fn default() -> Self {
        LanguageConfig { language: "eng".into(), min_chars: 10 }
    }
}

impl LanguageConfig {
    /// Check the language code.
    pub fn validate(&self) -> Result<(), String> {
        if whatlang::Lang::from_code(&self.language).is_none() {
            return Err(format!("`language`: unknown ISO 639-3 code `{}`", self.language));
        }
        Ok(())
    }
}

fn has_url(text: &str) -> bool {
    let lower = text.to_lowercase();
    lower.contains("http://") || lower.contains("https://") || lower.contains("www.")
}

fn has_html(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.windows(2).enumerate().any(|(i, w)| {
        w[0] == b'<'
            && (w[1].is_ascii_alphabetic() || w[1] == b'/' || w[1] == b'!')
            && bytes[i + 1..].iter().take(64).position(|&b| b == b'>').is_some_and(|end| {
                let inner = &bytes[i + 1..i + 1 + end];
                let name: Vec<u8> = inner.iter().copied().skip_while(|&b| b == b'/' || b == b'!').take_while(u8::is_ascii_alphanumeric).collect();
                !name.is_empty() && HTML_TAGS.contains(&String::from_utf8_lossy(&name).to_lowercase().as_str())
            })
    }) || text.contains("&nbsp;")
        || text.contains("&lt;")
        || text.contains("&gt;")
}

const HTML_TAGS: &[&str] = &[
    "a", "b", "i", "p", "br", "hr", "div", "span", "img", "ul", "ol", "li", "table", "tr", "td", "th", "html", "body",
    "head", "script", "style", "pre", "code", "em", "strong", "h1", "h2", "h3", "h4", "doctype", "sup", "sub",
];

/// Check one text against the language filter.
pub fn check_text(config: &LanguageConfig, text: &str) -> Result<(), DropReason> {
    let chars = normalise(text).chars().count();
    if chars < config.min_chars {
        return Err(DropReason::TooShort { chars });
    }
    if has_url(text) {
        return Err(DropReason::Url);
    }
    if has_html(text) {
        return Err(DropReason::Html);
    }
    // Short web queries confuse whatlang; only a reliable verdict for another language drops.
    if let Some(info) = whatlang::detect(text) {
        let code = info.lang().code();
        if code != config.language && info.is_reliable() {
            return Err(DropReason::Language { detected: code.to_owned() });
        }
    }
    Ok(())
}

/// Step 2: the natural-language filter on the text side.
pub fn filter_language(config: &LanguageConfig, pairs: Vec<Pair>) -> StepOutput {
    let mut out = StepOutput::default();
    for p in pairs {
        match check_text(config, &p.text) {
            Ok(()) => out.kept.push(p),
            Err(reason) => out.dropped.push(Dropped { id: p.id, reason }),
        }
    }
    out
}

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

/// A document of a release to check against.
#[derive(Debug, Clone)]
pub struct ReleaseDoc {
    /// The release (directory name).
    pub release: String,
    /// Its id (`problems:<id>`, `text_…`, `code_…`).
    pub doc: String,
    /// Its text.
    pub text: String,
}

/// Lower-cased word tokens (letter/digit runs).
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

/// Hashes of the word n-grams of a text, in order (duplicates kept).
pub fn ngram_hashes(text: &str, n: usize) -> Vec<u64> {
    let w = words(text);
    if w.len() < n {
        return Vec::new();
    }
    w.windows(n).map(|g| xxh3_64_with_seed(g.join(" ").as_bytes(), n as u64)).collect()
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
    hashes: HashMap<String, usize>,
    ngrams: HashMap<u64, Vec<u32>>,
    ngram: usize,
}

impl ReleaseIndex {
    /// Index `docs` with n-grams of `ngram` words.
    pub fn build(ngram: usize, docs: Vec<ReleaseDoc>) -> ReleaseIndex {
        let mut hashes = HashMap::new();
        let mut ngrams: HashMap<u64, Vec<u32>> = HashMap::new();
        for (i, d) in docs.iter().enumerate() {
            hashes.entry(statement_hash(&d.text)).or_insert(i);
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
        let hash_hit = self.hashes.get(&statement_hash(text)).copied();
        let grams: HashSet<u64> = ngram_hashes(text, self.ngram).into_iter().collect();
        let mut per_doc: BTreeMap<u32, usize> = BTreeMap::new();
        for g in &grams {
            if let Some(list) = self.ngrams.get(g) {
                for &d in list {
                    *per_doc.entry(d).or_default() += 1;
                }
            }
        }
        // Most matches, then the lowest document index: deterministic.
        let best = per_doc.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0))).map(|(&d, &m)| (d as usize, m));
        Overlap { hash_hit, best_doc: best.map(|b| b.0), matched: best.map_or(0, |b| b.1), total: grams.len() }
    }

    /// Why `pair` is contaminated, if it is.
    pub fn check(&self, config: &DecontamConfig, pair: &Pair) -> Option<DropReason> {
        let mut ngram_hit = None;
        for (side, text) in [(Side::Text, &pair.text), (Side::Code, &pair.code)] {
            let o = self.overlap(text);
            if let Some(d) = o.hash_hit {
                let doc = &self.docs[d];
                return Some(DropReason::Contaminated { side, kind: MatchKind::Hash, release: doc.release.clone(), doc: doc.doc.clone(), overlap: 1.0 });
            }
            if let Some(d) = o.best_doc.filter(|_| ngram_hit.is_none() && o.fraction() >= config.min_overlap) {
                let doc = &self.docs[d];
                ngram_hit = Some(DropReason::Contaminated { side, kind: MatchKind::Ngram, release: doc.release.clone(), doc: doc.doc.clone(), overlap: o.fraction() });
            }
        }
        ngram_hit
    }
}

/// Step 3: drop pairs that match a release.
pub fn decontaminate(config: &DecontamConfig, index: &ReleaseIndex, pairs: Vec<Pair>) -> StepOutput {
    let mut out = StepOutput::default();
    for p in pairs {
        match index.check(config, &p) {
            Some(reason) => out.dropped.push(Dropped { id: p.id, reason }),
            None => out.kept.push(p),
        }
    }
    out
}

/// Similarities of texts (rows) to codes (columns) of the same pairs: `sim(i, i)` is a pair.
#[derive(Debug, Clone, PartialEq)]
pub struct SimMatrix {
    n: usize,
    values: Vec<f32>,
}

impl SimMatrix {
    /// The number of pairs.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Similarity of text `t` to code `c`.
    pub fn get(&self, t: usize, c: usize) -> f32 {
        self.values[t * self.n + c]
    }

    /// Cosine similarities of embedding vectors (one per text, one per code).
    pub fn from_embeddings(texts: &[Vec<f32>], codes: &[Vec<f32>]) -> SimMatrix {
        let n = texts.len().min(codes.len());
        let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
        let mut values = vec![0.0; n * n];
        for t in 0..n {
            let nt = norm(&texts[t]);
            for c in 0..n {
                let dot: f32 = texts[t].iter().zip(&codes[c]).map(|(a, b)| a * b).sum();
                values[t * n + c] = dot / (nt * norm(&codes[c]));
            }
        }
        SimMatrix { n, values }
    }

    /// TF-IDF cosine over code-aware tokens (the lexical fallback when no embedding endpoint
    /// is configured). IDF is computed over the texts and codes of these pairs.
    pub fn lexical(pairs: &[Pair]) -> SimMatrix {
        let n = pairs.len();
        let cfg = Bm25Config::default();
        let tok = |s: &str| -> BTreeMap<String, f32> {
            let mut tf = BTreeMap::new();
            for t in tokenize(s, &cfg) {
                *tf.entry(t).or_insert(0.0) += 1.0;
            }
            tf
        };
        let texts: Vec<BTreeMap<String, f32>> = pairs.iter().map(|p| tok(&p.text)).collect();
        let codes: Vec<BTreeMap<String, f32>> = pairs.iter().map(|p| tok(&p.code)).collect();
        let mut df: HashMap<&str, f32> = HashMap::new();
        for doc in texts.iter().chain(&codes) {
            for t in doc.keys() {
                *df.entry(t.as_str()).or_default() += 1.0;
            }
        }
        let docs = (2 * n) as f32;
        let weigh = |doc: &BTreeMap<String, f32>| -> HashMap<String, f32> {
            let mut v: HashMap<String, f32> = doc
                .iter()
                .map(|(t, &tf)| (t.clone(), (1.0 + tf.ln()) * ((1.0 + docs) / (1.0 + df.get(t.as_str()).copied().unwrap_or(0.0))).ln()))
                .collect();
            let norm = v.values().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
            v.values_mut().for_each(|x| *x /= norm);
            v
        };
        let tv: Vec<HashMap<String, f32>> = texts.iter().map(weigh).collect();
        let cv: Vec<HashMap<String, f32>> = codes.iter().map(weigh).collect();
        // Inverted index over codes, so each text touches only codes sharing a token.
        let mut postings: HashMap<&str, Vec<(usize, f32)>> = HashMap::new();
        for (c, v) in cv.iter().enumerate() {
            for (t, &w) in v {
                postings.entry(t.as_str()).or_default().push((c, w));
            }
        }
        let mut values = vec![0.0f32; n * n];
        for (t, v) in tv.iter().enumerate() {
            // Sorted terms: the f32 sums come out the same on every run.
            let mut terms: Vec<(&String, &f32)> = v.iter().collect();
            terms.sort_unstable_by(|a, b| a.0.cmp(b.0));
            for (term, &w) in terms {
                if let Some(list) = postings.get(term.as_str()) {
                    for &(c, wc) in list {
                        values[t * n + c] += w * wc;
                    }
                }
            }
        }
        SimMatrix { n, values }
    }
}

/// `[align]`: the dual-consistency filter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AlignConfig {
    /// Run the filter (off: every pair passes; for throughput runs over huge shards, whose
    /// similarity matrix is quadratic in the shard size).
    pub enabled: bool,
    /// Text and code must rank each other within this many candidates.
    pub top_k: usize,
    /// Minimum similarity of a kept pair.
    pub threshold: f32,
}

impl Default for AlignConfig {
    fn default() -> Self {
        AlignConfig { enabled: true, top_k: 2, threshold: 0.05 }
    }
}

/// 1-based rank of `target` among `scores` (ties broken by index: a lower index ranks first).
fn rank_of(target: usize, scores: impl Iterator<Item = f32>) -> usize {
    let scores: Vec<f32> = scores.collect();
    let s = scores[target];
    1 + scores.iter().enumerate().filter(|&(i, &x)| i != target && (x > s || (x == s && i < target))).count()
}

/// Step 4: keep a pair only if text and code rank each other within `top_k` and their
/// similarity reaches `threshold`. `sim` is over exactly `pairs`.
pub fn align(config: &AlignConfig, pairs: Vec<Pair>, sim: &SimMatrix) -> StepOutput {
    let n = pairs.len();
    let mut out = StepOutput::default();
    if !config.enabled {
        out.kept = pairs;
        return out;
    }
    for (i, p) in pairs.into_iter().enumerate() {
        let code_rank = rank_of(i, (0..n).map(|c| sim.get(i, c)));
        let text_rank = rank_of(i, (0..n).map(|t| sim.get(t, i)));
        let similarity = sim.get(i, i);
        if code_rank <= config.top_k && text_rank <= config.top_k && similarity >= config.threshold {
            out.kept.push(p);
        } else {
            out.dropped.push(Dropped { id: p.id, reason: DropReason::Misaligned { code_rank, text_rank, similarity } });
        }
    }
    out
}

/// `[negatives]`: curriculum hard-negative mining.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NegativeConfig {
    /// Hard negatives per record.
    pub hard: usize,
    /// Easy negatives per record.
    pub easy: usize,
    /// Softmax temperature over similarities: lower picks the hardest more often.
    pub temperature: f32,
    /// A candidate whose similarity is at least this fraction of the positive's is a likely
    /// false negative and never used.
    pub false_negative_ratio: f32,
    /// Seed of the sampling.
    pub seed: u64,
}

impl Default for NegativeConfig {
    fn default() -> Self {
        NegativeConfig { hard: 3, easy: 3, temperature: 0.05, false_negative_ratio: 0.95, seed: 0xC0DE_2025 }
    }
}

/// A curated training record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainingRecord {
    /// The pair id.
    pub id: String,
    /// The text.
    pub query: String,
    /// Its code.
    pub pos: String,
    /// Hard negatives (codes), hardest-sampled first.
    pub hard_neg: Vec<String>,
    /// Easy negatives (codes).
    pub easy_neg: Vec<String>,
}

/// A reranker record: a query, a document and a binary label.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RerankRecord {
    /// The query.
    pub query: String,
    /// The document.
    pub doc: String,
    /// 1 for the positive, 0 for a negative.
    pub label: u8,
}

/// A uniform float in (0, 1) from a hash of (seed, record, candidate).
fn uniform(seed: u64, record: &str, candidate: usize) -> f64 {
    let h = xxh3_64_with_seed(format!("{record}\u{0}{candidate}").as_bytes(), seed);
    ((h >> 11) as f64 + 0.5) / (1u64 << 53) as f64
}

/// Step 5: hard and easy negatives for every pair. Hard: Gumbel top-k over `sim / temperature`
/// among candidates below the false-negative cut (sampling without replacement from the
/// softmax). Easy: the remaining candidates with the smallest uniform keys. Deterministic for a
/// seed, whatever the order of evaluation. Without negatives asked for, or with a matrix not
/// over `pairs`, the records carry positives only.
pub fn mine_negatives(config: &NegativeConfig, pairs: &[Pair], sim: &SimMatrix) -> Vec<TrainingRecord> {
    let n = pairs.len();
    let t = config.temperature.max(1e-6) as f64;
    if config.hard + config.easy == 0 || sim.len() != n {
        // No negatives asked for (or no matrix over these pairs): positives only.
        return pairs.iter().map(|p| TrainingRecord { id: p.id.clone(), query: p.text.clone(), pos: p.code.clone(), hard_neg: Vec::new(), easy_neg: Vec::new() }).collect();
    }
    pairs
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let pos = sim.get(i, i);
            let cut = config.false_negative_ratio * pos;
            let mut hard: Vec<(f64, usize)> = (0..n)
                .filter(|&c| c != i && pairs[c].code != p.code && !(pos > 0.0 && sim.get(i, c) >= cut))
                .map(|c| {
                    let g = -(-uniform(config.seed, &p.id, c).ln()).ln();
                    (f64::from(sim.get(i, c)) / t + g, c)
                })
                .collect();
            hard.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            let chosen: Vec<usize> = hard.iter().take(config.hard).map(|x| x.1).collect();
            let mut easy: Vec<(f64, usize)> = (0..n)
                .filter(|&c| c != i && !chosen.contains(&c) && pairs[c].code != p.code && !(pos > 0.0 && sim.get(i, c) >= cut))
                .map(|c| (uniform(config.seed ^ 0xEA5E, &p.id, c), c))
                .collect();
            easy.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            TrainingRecord {
                id: p.id.clone(),
                query: p.text.clone(),
                pos: p.code.clone(),
                hard_neg: chosen.iter().map(|&c| pairs[c].code.clone()).collect(),
                easy_neg: easy.iter().take(config.easy).map(|x| pairs[x.1].code.clone()).collect(),
            }
        })
        .collect()
}

/// Reranker records of training records: the positive with label 1, each negative with 0.
pub fn rerank_records(records: &[TrainingRecord]) -> Vec<RerankRecord> {
    let mut out = Vec::new();
    for r in records {
        out.push(RerankRecord { query: r.query.clone(), doc: r.pos.clone(), label: 1 });
        for d in r.hard_neg.iter().chain(&r.easy_neg) {
            out.push(RerankRecord { query: r.query.clone(), doc: d.clone(), label: 0 });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(id: &str, text: &str, code: &str) -> Pair {
        Pair { id: id.into(), text: text.into(), code: code.into() }
    }

    const CODE: &str = "def read_config(path):\n    with open(path) as handle:\n        data = json.load(handle)\n    return data['settings']['values'] if 'settings' in data else {}";

    #[test]
    fn dedup_catches_exact_case_and_whitespace_copies() {
        let pairs = vec![
            pair("a", "read a json config file in python", CODE),
            pair("b", "read a json config file in python", CODE),
            pair("c", "Read A JSON   config file in Python", &CODE.replace("    ", "  ")),
            pair("d", "sort a list of tuples by second element", "def f(xs):\n    return sorted(xs, key=lambda t: t[1])"),
        ];
        let out = dedup_pairs(&DedupConfig::default(), pairs);
        let ids: Vec<&str> = out.kept.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids, ["a", "d"]);
        assert_eq!(out.dropped[0].reason, DropReason::ExactDuplicate { of: "a".into() });
        assert!(matches!(out.dropped[1].reason, DropReason::NearDuplicate { ref of, .. } if of == "a"));
    }

    #[test]
    fn language_filter_reasons() {
        let cfg = LanguageConfig::default();
        assert_eq!(check_text(&cfg, "sort"), Err(DropReason::TooShort { chars: 4 }));
        assert_eq!(check_text(&cfg, "see https://example.org for the answer"), Err(DropReason::Url));
        assert_eq!(check_text(&cfg, "how to parse <div class=x> tags"), Err(DropReason::Html));
        assert!(matches!(check_text(&cfg, "Wie kann ich eine Datei in Python lesen und den Inhalt ausgeben, ohne dass die Zeilen verloren gehen?"), Err(DropReason::Language { .. })));
        assert_eq!(check_text(&cfg, "python check if a file is readonly"), Ok(()));
        assert_eq!(check_text(&cfg, "compare a < b and c > d in python"), Ok(()));
    }

    #[test]
    fn alignment_and_negatives() {
        let pairs = vec![
            pair("1", "read json config file", "def read_json_config(path): return json.load(open(path))"),
            pair("2", "sort list by second element", "def sort_by_second(xs): return sorted(xs, key=lambda x: x[1])"),
            pair("3", "reverse a string", "def reverse_string(s): return s[::-1]"),
            pair("4", "download a web page", "def parse_csv_rows(f): return list(csv.reader(f))"),
        ];
        let sim = SimMatrix::lexical(&pairs);
        let out = align(&AlignConfig { enabled: true, top_k: 1, threshold: 0.05 }, pairs.clone(), &sim);
        let kept: Vec<&str> = out.kept.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(kept, ["1", "2", "3"]);
        assert!(matches!(out.dropped[0].reason, DropReason::Misaligned { .. }));
        let cfg = NegativeConfig { hard: 1, easy: 1, ..NegativeConfig::default() };
        let a = mine_negatives(&cfg, &pairs, &sim);
        assert_eq!(a, mine_negatives(&cfg, &pairs, &sim));
        for r in &a {
            assert_eq!(r.hard_neg.len(), 1);
            assert_eq!(r.easy_neg.len(), 1);
            assert_ne!(r.hard_neg[0], r.pos);
            assert_ne!(r.hard_neg[0], r.easy_neg[0]);
        }
        assert_eq!(rerank_records(&a).len(), 12);
    }

    #[test]
    fn release_index_hash_and_ngram_hits() {
        let statement = "You are given an integer array nums of length n and an integer k. Return the number of subarrays whose sum is divisible by k, modulo ten to the ninth plus seven.";
        let index = ReleaseIndex::build(8, vec![ReleaseDoc { release: "v1".into(), doc: "problems:lcb_1".into(), text: statement.into() }]);
        let cfg = DecontamConfig { ngram: 8, min_overlap: 0.3 };
        let hit = index.check(&cfg, &pair("x", &format!("  {}  ", statement.replace(' ', "\n")), "pass")).unwrap();
        assert!(matches!(hit, DropReason::Contaminated { kind: MatchKind::Hash, side: Side::Text, .. }));
        let half = format!("{} and then print it twice", &statement[..90]);
        assert!(matches!(index.check(&cfg, &pair("y", &half, "pass")), Some(DropReason::Contaminated { kind: MatchKind::Ngram, .. })));
        assert_eq!(index.check(&cfg, &pair("z", "sort a list of tuples by the second element", "pass")), None);
    }
}
