//! `coreb-curation`: curate text–code training pairs (CoRNStack-style) and check them against
//! published releases. (A "corpus" in a release is its BEIR document collection; the
//! training pairs curated here are a *training corpus*, and this crate never calls them
//! anything else.)
//!
//! Steps, each a pure function over [`Pair`]s that returns the kept pairs and a typed
//! [`Dropped`] per removed pair:
//! 1. [`dedup_pairs`]: duplicate ids, exact copies (128-bit xxh3 of the normalised pair) and
//!    near-duplicates (one-permutation MinHash-LSH over word shingles, candidate pairs
//!    confirmed by shingle Jaccard and joined in one union-find); the first pair of a group is
//!    kept. It is global: engines sketch rows wherever they read them ([`Sketcher`]) and decide
//!    over the sketches of all rows at once ([`find_duplicates`]), see [`duplicates`].
//! 2. [`filter_language`] ([`check_text`] per text): the text must be long enough, hold no URL
//!    or HTML, and not be reliably detected (whatlang, run last: it costs most) as another
//!    language than the wanted one.
//! 3. [`decontaminate`]: drop a pair whose text or code hashes like a release document or
//!    shares a large fraction of its word n-grams with one ([`ReleaseIndex`]).
//! 4. [`align`]: dual consistency — text and code must rank each other in their top-k by
//!    similarity and the similarity must reach a threshold. The similarity matrix comes from
//!    outside ([`SimMatrix::from_embeddings`]) or from [`SimMatrix::lexical`], a TF-IDF cosine
//!    over the code-aware tokens of [`coreb_eval::bm25::tokenize`].
//! 5. [`mine_negatives`]: hard negatives sampled from the similarity matrix with a temperature
//!    (Gumbel top-k, seeded per record), skipping likely false negatives; easy negatives drawn
//!    uniformly from the rest.
//!
//! Steps 2–3 are per row, so an engine may run them row by row on the rows that dedup keeps;
//! text is hashed through reused buffers with ASCII fast paths (checked against the plain
//! definitions in the tests), so a row costs no allocation.
//!
//! The steps the corpus runner of `coreb corpus` (`coreb::corpus`) drives over corpora too
//! large to hold: [`scan`] (blocks of source rows → sketches and spool records per output
//! shard, [`coreb_base::shard::shard_of_id`]), [`find_duplicates`] (all sketches → verdicts) and
//! [`curate`] (one output shard's rows, in input order → dropped pairs and training records,
//! steps 2–5). [`spool`] is the file format between scan and curate, the one file this module
//! reads; otherwise it reads and writes nothing: the runner streams the sources and writes
//! the records. Does NOT call an embedding endpoint itself.
//!
//! [`audit`] holds the contamination audits of `coreb audit` (overlap of a corpus with a
//! release, how far the rewrites moved, a model's pass@1 on originals against rewrites);
//! they read JSONL input with [`coreb_base::jsonl`]. [`review`] is
//! `coreb review`: the human validation of the rewrites (the review page, its report).

#![deny(missing_docs)]

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::{xxh3_64_with_seed, xxh3_128};

use coreb_base::minhash::normalise;
use coreb_base::seeded::fmix64;
use coreb_data::releases::ReleaseDoc;

pub mod audit;
pub mod curate;
pub mod duplicates;
pub mod review;
pub mod scan;
pub mod spool;
pub mod table;
use coreb_eval::bm25::{Bm25Config, tokenize};
pub use curate::CorpusReport;
pub use duplicates::{
    CorpusDedupConfig, Duplicates, NearNormalisation, Selection, SketchError, Sketcher, Sketches,
    Verdict, find_duplicates,
};

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

/// Step 1: duplicate ids, exact copies and near-duplicates over `text + "\n" + code` (see
/// [`duplicates`]): every pair is sketched, then [`find_duplicates`] decides over all of them;
/// the first pair of each group, in input order, is kept.
pub fn dedup_pairs(config: &CorpusDedupConfig, pairs: Vec<Pair>) -> StepOutput {
    let mut sketches = Sketches::new(config);
    sketches.set_input_rows(pairs.len() as u64);
    let mut sketcher = Sketcher::new(config);
    for (i, p) in pairs.iter().enumerate() {
        sketcher.sketch(i as u64, &p.id, &p.text, &p.code, &mut sketches);
    }
    let found =
        find_duplicates(config, &[&sketches]).expect("the sketches of every pair, each once");
    let mut result = StepOutput::default();
    for (i, p) in pairs.into_iter().enumerate() {
        match found.reason(i as u64, &p.id) {
            Some(reason) => result.dropped.push(Dropped { id: p.id, reason }),
            None => result.kept.push(p),
        }
    }
    result
}

/// A `BuildHasher` for keys that are already uniform hashes (xxh3 outputs): the key is its own
/// hash, which spares SipHash on every lookup of the dedup and n-gram tables.
#[derive(Debug, Clone, Copy, Default)]
pub struct Prehashed;

/// The [`std::hash::Hasher`] of [`Prehashed`].
#[derive(Debug, Default)]
pub struct PrehashedHasher(u64);

impl std::hash::Hasher for PrehashedHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Not used by the u64/u128 keys; a correct fallback all the same.
        self.0 = xxh3_64_with_seed(bytes, self.0);
    }
    fn write_u64(&mut self, v: u64) {
        self.0 ^= v;
    }
    fn write_u128(&mut self, v: u128) {
        self.0 ^= (v as u64) ^ ((v >> 64) as u64);
    }
    fn write_u32(&mut self, v: u32) {
        self.0 ^= fmix64(u64::from(v));
    }
}

impl std::hash::BuildHasher for Prehashed {
    type Hasher = PrehashedHasher;
    fn build_hasher(&self) -> PrehashedHasher {
        PrehashedHasher(0)
    }
}

/// `char::is_whitespace` for an ASCII byte (note: includes the vertical tab, unlike
/// `u8::is_ascii_whitespace`).
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0B | 0x0C | b'\r')
}

/// Case of a normalised text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Case {
    /// As written.
    Kept,
    /// Lower-cased.
    Lower,
}

/// `normalise(parts.concat())` (lower-cased if asked) into `out`, without allocating when
/// every part is ASCII (NFC and Unicode lower-casing are then the identity and ASCII folding).
fn normalise_into(parts: &[&str], case: Case, out: &mut String) {
    out.clear();
    if !parts.iter().all(|p| p.is_ascii()) {
        let n = normalise(&parts.concat());
        out.push_str(&match case {
            Case::Kept => n,
            Case::Lower => n.to_lowercase(),
        });
        return;
    }
    // ASCII: whole runs of non-space bytes are copied at once.
    let mut pending = false;
    for p in parts {
        let b = p.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if is_space(b[i]) {
                pending |= !out.is_empty();
                i += 1;
                continue;
            }
            let start = i;
            while i < b.len() && !is_space(b[i]) {
                i += 1;
            }
            if pending {
                out.push(' ');
                pending = false;
            }
            let from = out.len();
            out.push_str(&p[start..i]);
            if case == Case::Lower {
                out[from..].make_ascii_lowercase();
            }
        }
    }
}

/// The alphanumeric words of `text` (split as [`words`] splits).
fn word_spans(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
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
        LanguageConfig {
            language: "eng".into(),
            min_chars: 10,
        }
    }
}

impl LanguageConfig {
    /// Check the language code.
    pub fn validate(&self) -> Result<(), String> {
        if whatlang::Lang::from_code(&self.language).is_none() {
            return Err(format!(
                "`language`: unknown ISO 639-3 code `{}`",
                self.language
            ));
        }
        Ok(())
    }
}

fn has_url(text: &str) -> bool {
    if text.is_ascii() {
        // Lower-casing ASCII only changes ASCII letters: compare without building a copy.
        let has = |needle: &[u8]| {
            text.as_bytes()
                .windows(needle.len())
                .any(|w| w.eq_ignore_ascii_case(needle))
        };
        return (text.contains(':') && (has(b"http://") || has(b"https://"))) || has(b"www.");
    }
    let lower = text.to_lowercase();
    lower.contains("http://") || lower.contains("https://") || lower.contains("www.")
}

fn has_html(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.windows(2).enumerate().any(|(i, w)| {
        w[0] == b'<'
            && (w[1].is_ascii_alphabetic() || w[1] == b'/' || w[1] == b'!')
            && bytes[i + 1..]
                .iter()
                .take(64)
                .position(|&b| b == b'>')
                .is_some_and(|end| {
                    let inner = &bytes[i + 1..i + 1 + end];
                    let name: Vec<u8> = inner
                        .iter()
                        .copied()
                        .skip_while(|&b| b == b'/' || b == b'!')
                        .take_while(u8::is_ascii_alphanumeric)
                        .collect();
                    !name.is_empty()
                        && HTML_TAGS
                            .contains(&String::from_utf8_lossy(&name).to_lowercase().as_str())
                })
    }) || text.contains("&nbsp;")
        || text.contains("&lt;")
        || text.contains("&gt;")
}

const HTML_TAGS: &[&str] = &[
    "a", "b", "i", "p", "br", "hr", "div", "span", "img", "ul", "ol", "li", "table", "tr", "td",
    "th", "html", "body", "head", "script", "style", "pre", "code", "em", "strong", "h1", "h2",
    "h3", "h4", "doctype", "sup", "sub",
];

/// Characters of `normalise(text)`, without building it for ASCII text.
fn normalised_chars(text: &str) -> usize {
    if !text.is_ascii() {
        return normalise(text).chars().count();
    }
    let (mut n, mut pending) = (0, false);
    for &b in text.as_bytes() {
        if is_space(b) {
            pending = n > 0;
        } else {
            n += 1 + usize::from(pending);
            pending = false;
        }
    }
    n
}

/// Check one text against the language filter. The cheap checks run first, so whatlang only
/// sees texts that pass them.
pub fn check_text(config: &LanguageConfig, text: &str) -> Result<(), DropReason> {
    let chars = normalised_chars(text);
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
    // whatlang-fast is whatlang with a faster trigram scorer and the same results (tested).
    if let Some(info) = whatlang_fast::detect(text) {
        let code = info.lang().code();
        if code != config.language && info.is_reliable() {
            return Err(DropReason::Language {
                detected: code.to_owned(),
            });
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
        DecontamConfig {
            ngram: 13,
            min_overlap: 0.3,
        }
    }
}

impl DecontamConfig {
    /// Check the bounds.
    pub fn validate(&self) -> Result<(), String> {
        if self.ngram == 0 {
            return Err("`ngram` must be at least 1".into());
        }
        if !(self.min_overlap > 0.0 && self.min_overlap <= 1.0) {
            return Err(format!(
                "`min_overlap` must be in (0, 1], got `{}`",
                self.min_overlap
            ));
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
                self.spans
                    .push((self.lower.len(), self.lower.len() + w.len()));
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
            self.bad
                .push(self.bad.last().copied().unwrap_or(0) + u32::from(!single));
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
        if self.total == 0 {
            0.0
        } else {
            self.matched as f64 / self.total as f64
        }
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
            hashes
                .entry(normalised_hash(&d.text, &mut buf))
                .or_insert(i);
            for h in ngram_hashes(&d.text, ngram) {
                let list = ngrams.entry(h).or_default();
                if list.last() != Some(&(i as u32)) {
                    list.push(i as u32);
                }
            }
        }
        ReleaseIndex {
            docs,
            hashes,
            ngrams,
            ngram,
        }
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
            if let Some(d) = o
                .best_doc
                .filter(|_| ngram_hit.is_none() && o.fraction() >= config.min_overlap)
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
            let w: Vec<(&String, f32)> = doc
                .iter()
                .map(|(t, &tf)| {
                    (
                        t,
                        (1.0 + tf.ln())
                            * ((1.0 + docs) / (1.0 + df.get(t.as_str()).copied().unwrap_or(0.0)))
                                .ln(),
                    )
                })
                .collect();
            // Summed in term order (not a HashMap's): the same f32 norm on every run.
            let norm = w.iter().map(|(_, x)| x * x).sum::<f32>().sqrt().max(1e-12);
            w.into_iter().map(|(t, x)| (t.clone(), x / norm)).collect()
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
        AlignConfig {
            enabled: true,
            top_k: 2,
            threshold: 0.05,
        }
    }
}

/// 1-based rank of `target` among `scores` (ties broken by index: a lower index ranks first).
fn rank_of(target: usize, scores: impl Iterator<Item = f32>) -> usize {
    let scores: Vec<f32> = scores.collect();
    let s = scores[target];
    1 + scores
        .iter()
        .enumerate()
        .filter(|&(i, &x)| i != target && (x > s || (x == s && i < target)))
        .count()
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
        if code_rank <= config.top_k && text_rank <= config.top_k && similarity >= config.threshold
        {
            out.kept.push(p);
        } else {
            out.dropped.push(Dropped {
                id: p.id,
                reason: DropReason::Misaligned {
                    code_rank,
                    text_rank,
                    similarity,
                },
            });
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
        NegativeConfig {
            hard: 3,
            easy: 3,
            temperature: 0.05,
            false_negative_ratio: 0.95,
            seed: 0xC0DE_2025,
        }
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
pub fn mine_negatives(
    config: &NegativeConfig,
    pairs: &[Pair],
    sim: &SimMatrix,
) -> Vec<TrainingRecord> {
    let n = pairs.len();
    let t = config.temperature.max(1e-6) as f64;
    if config.hard + config.easy == 0 || sim.len() != n {
        // No negatives asked for (or no matrix over these pairs): positives only.
        return pairs
            .iter()
            .map(|p| TrainingRecord {
                id: p.id.clone(),
                query: p.text.clone(),
                pos: p.code.clone(),
                hard_neg: Vec::new(),
                easy_neg: Vec::new(),
            })
            .collect();
    }
    pairs
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let pos = sim.get(i, i);
            let cut = config.false_negative_ratio * pos;
            let mut hard: Vec<(f64, usize)> = (0..n)
                .filter(|&c| {
                    c != i && pairs[c].code != p.code && !(pos > 0.0 && sim.get(i, c) >= cut)
                })
                .map(|c| {
                    let g = -(-uniform(config.seed, &p.id, c).ln()).ln();
                    (f64::from(sim.get(i, c)) / t + g, c)
                })
                .collect();
            hard.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            let chosen: Vec<usize> = hard.iter().take(config.hard).map(|x| x.1).collect();
            let mut easy: Vec<(f64, usize)> = (0..n)
                .filter(|&c| {
                    c != i
                        && !chosen.contains(&c)
                        && pairs[c].code != p.code
                        && !(pos > 0.0 && sim.get(i, c) >= cut)
                })
                .map(|c| (uniform(config.seed ^ 0xEA5E, &p.id, c), c))
                .collect();
            easy.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            TrainingRecord {
                id: p.id.clone(),
                query: p.text.clone(),
                pos: p.code.clone(),
                hard_neg: chosen.iter().map(|&c| pairs[c].code.clone()).collect(),
                easy_neg: easy
                    .iter()
                    .take(config.easy)
                    .map(|x| pairs[x.1].code.clone())
                    .collect(),
            }
        })
        .collect()
}

/// Reranker records of training records: the positive with label 1, each negative with 0.
pub fn rerank_records(records: &[TrainingRecord]) -> Vec<RerankRecord> {
    let mut out = Vec::new();
    for r in records {
        out.push(RerankRecord {
            query: r.query.clone(),
            doc: r.pos.clone(),
            label: 1,
        });
        for d in r.hard_neg.iter().chain(&r.easy_neg) {
            out.push(RerankRecord {
                query: r.query.clone(),
                doc: d.clone(),
                label: 0,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(id: &str, text: &str, code: &str) -> Pair {
        Pair {
            id: id.into(),
            text: text.into(),
            code: code.into(),
        }
    }

    const CODE: &str = "def read_config(path):\n    with open(path) as handle:\n        data = json.load(handle)\n    return data['settings']['values'] if 'settings' in data else {}";

    #[test]
    fn dedup_catches_exact_case_and_whitespace_copies() {
        let pairs = vec![
            pair("a", "read a json config file in python", CODE),
            pair("b", "read a json config file in python", CODE),
            pair(
                "c",
                "Read A JSON   config file in Python",
                &CODE.replace("    ", "  "),
            ),
            pair(
                "d",
                "sort a list of tuples by second element",
                "def f(xs):\n    return sorted(xs, key=lambda t: t[1])",
            ),
        ];
        let out = dedup_pairs(&CorpusDedupConfig::default(), pairs);
        let ids: Vec<&str> = out.kept.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids, ["a", "d"]);
        assert_eq!(
            out.dropped[0].reason,
            DropReason::ExactDuplicate { of: "a".into() }
        );
        assert!(
            matches!(out.dropped[1].reason, DropReason::NearDuplicate { ref of, .. } if of == "a")
        );
    }

    /// Texts that exercise the ASCII fast paths and the Unicode fallbacks.
    const TEXTS: &[&str] = &[
        "",
        "   ",
        "Read A JSON   config\tfile in Python\x0b\x0c\r\n",
        "  leading and trailing  ",
        "def f(x):\n    return x['a'] + x.b  # see WWW.Example.org",
        "Größe ändern: ÄPFEL und Ǆ   café\u{0301} ΣΟΦΟΣ",
        "HTTPS://EXAMPLE.ORG/path?x=1",
        "one two three four five six seven eight nine ten eleven twelve thirteen fourteen",
        "one  two,three__four five\u{00a0}six",
    ];

    #[test]
    fn fast_paths_agree_with_the_definitions() {
        let mut scratch = NgramScratch::default();
        let mut out = Vec::new();
        for t in TEXTS {
            assert_eq!(normalised_chars(t), normalise(t).chars().count(), "{t:?}");
            let lower = t.to_lowercase();
            assert_eq!(
                has_url(t),
                lower.contains("http://") || lower.contains("https://") || lower.contains("www."),
                "{t:?}"
            );
            let mut buf = String::new();
            normalise_into(&[t, "\n", "X  y"], Case::Kept, &mut buf);
            assert_eq!(buf, normalise(&format!("{t}\nX  y")), "{t:?}");
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
    fn whatlang_fast_detects_exactly_like_whatlang() {
        // Texts in every script whatlang scores by trigrams, and mixtures of them.
        const WORDS: &[&str] = &[
            "how",
            "to",
            "read",
            "a",
            "file",
            "in",
            "python",
            "sort",
            "the",
            "list",
            "by",
            "value",
            "Wie",
            "kann",
            "ich",
            "eine",
            "Datei",
            "lesen",
            "und",
            "Größe",
            "ändern",
            "comment",
            "lire",
            "un",
            "fichier",
            "avec",
            "les",
            "données",
            "cómo",
            "leer",
            "archivo",
            "con",
            "año",
            "niño",
            "как",
            "прочитать",
            "файл",
            "в",
            "питоне",
            "список",
            "كيف",
            "أقرأ",
            "ملف",
            "في",
            "बाइथन",
            "फ़ाइल",
            "कैसे",
            "पढ़ें",
            "איך",
            "לקרוא",
            "קובץ",
            "בפייתון",
            "obj12",
            "x[0]",
            "=",
            "->",
            "ŁÓDŹ",
            "Ærø",
            "日本語",
            "1234",
        ];
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut texts: Vec<String> = TEXTS.iter().map(|t| t.to_string()).collect();
        for _ in 0..1500 {
            let n = 1 + (state % 24) as usize;
            let mut t = String::new();
            for _ in 0..n {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                t.push_str(WORDS[(state % WORDS.len() as u64) as usize]);
                t.push(' ');
            }
            texts.push(t);
        }
        for t in &texts {
            let (a, b) = (whatlang::detect(t), whatlang_fast::detect(t));
            assert_eq!(
                a.map(|i| (
                    i.lang().code(),
                    format!("{:?}", i.script()),
                    i.confidence().to_bits()
                )),
                b.map(|i| (
                    i.lang().code(),
                    format!("{:?}", i.script()),
                    i.confidence().to_bits()
                )),
                "{t:?}"
            );
        }
    }

    #[test]
    fn language_filter_reasons() {
        let cfg = LanguageConfig::default();
        assert_eq!(
            check_text(&cfg, "sort"),
            Err(DropReason::TooShort { chars: 4 })
        );
        assert_eq!(
            check_text(&cfg, "see https://example.org for the answer"),
            Err(DropReason::Url)
        );
        assert_eq!(
            check_text(&cfg, "how to parse <div class=x> tags"),
            Err(DropReason::Html)
        );
        assert!(matches!(
            check_text(
                &cfg,
                "Wie kann ich eine Datei in Python lesen und den Inhalt ausgeben, ohne dass die Zeilen verloren gehen?"
            ),
            Err(DropReason::Language { .. })
        ));
        assert_eq!(
            check_text(&cfg, "python check if a file is readonly"),
            Ok(())
        );
        assert_eq!(
            check_text(&cfg, "compare a < b and c > d in python"),
            Ok(())
        );
    }

    #[test]
    fn alignment_and_negatives() {
        let pairs = vec![
            pair(
                "1",
                "read json config file",
                "def read_json_config(path): return json.load(open(path))",
            ),
            pair(
                "2",
                "sort list by second element",
                "def sort_by_second(xs): return sorted(xs, key=lambda x: x[1])",
            ),
            pair(
                "3",
                "reverse a string",
                "def reverse_string(s): return s[::-1]",
            ),
            pair(
                "4",
                "download a web page",
                "def parse_csv_rows(f): return list(csv.reader(f))",
            ),
        ];
        let sim = SimMatrix::lexical(&pairs);
        let out = align(
            &AlignConfig {
                enabled: true,
                top_k: 1,
                threshold: 0.05,
            },
            pairs.clone(),
            &sim,
        );
        let kept: Vec<&str> = out.kept.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(kept, ["1", "2", "3"]);
        assert!(matches!(
            out.dropped[0].reason,
            DropReason::Misaligned { .. }
        ));
        let cfg = NegativeConfig {
            hard: 1,
            easy: 1,
            ..NegativeConfig::default()
        };
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
        let index = ReleaseIndex::build(
            8,
            vec![ReleaseDoc {
                release: "v1".into(),
                doc: "problems:lcb_1".into(),
                text: statement.into(),
            }],
        );
        let cfg = DecontamConfig {
            ngram: 8,
            min_overlap: 0.3,
        };
        let hit = index
            .check(
                &cfg,
                &pair(
                    "x",
                    &format!("  {}  ", statement.replace(' ', "\n")),
                    "pass",
                ),
            )
            .unwrap();
        assert!(matches!(
            hit,
            DropReason::Contaminated {
                kind: MatchKind::Hash,
                side: Side::Text,
                ..
            }
        ));
        let half = format!("{} and then print it twice", &statement[..90]);
        assert!(matches!(
            index.check(&cfg, &pair("y", &half, "pass")),
            Some(DropReason::Contaminated {
                kind: MatchKind::Ngram,
                ..
            })
        ));
        assert_eq!(
            index.check(
                &cfg,
                &pair("z", "sort a list of tuples by the second element", "pass")
            ),
            None
        );
    }
}
