//! `coreb-curation`: curate text–code training pairs (CoRNStack-style) and check them against
//! published releases. (A "corpus" in a release is its BEIR document collection; the
//! training pairs curated here are a *training corpus*, and this crate never calls them
//! anything else.)
//!
//! Steps, each a pure function over [`Pair`]s ([`pairs`]) that returns the kept pairs and a
//! typed [`Dropped`] per removed pair, each in its own module (this file only maps them):
//! 1. [`duplicates`], [`dedup_pairs`]: duplicate ids, exact copies (128-bit xxh3 of the normalised
//!    pair) and near-duplicates (one-permutation MinHash-LSH over word shingles, candidate pairs
//!    confirmed by shingle Jaccard and joined in one union-find); the first pair of a group is
//!    kept. It is global: engines sketch rows wherever they read them ([`Sketcher`]) and decide
//!    over the sketches of all rows at once ([`find_duplicates`]), see [`duplicates`].
//! 2. [`language`], [`filter_language`] ([`check_text`] per text): the text must be long enough,
//!    hold no URL or HTML, and not be reliably detected (whatlang, run last: it costs most) as
//!    another language than the wanted one.
//! 3. [`decontamination`], [`decontaminate`]: drop a pair whose text or code hashes like a release
//!    document or shares a large fraction of its word n-grams with one ([`ReleaseIndex`]).
//! 4. [`alignment`], [`align`]: dual consistency — text and code must rank each other in their
//!    top-k by similarity and the similarity must reach a threshold. The similarity matrix comes
//!    from outside ([`SimMatrix::from_embeddings`]) or from [`SimMatrix::lexical`], a TF-IDF cosine
//!    over the code-aware tokens of [`coreb_eval::bm25::tokenize`].
//! 5. [`negatives`], [`mine_negatives`]: hard negatives sampled from the similarity matrix with a
//!    temperature (Gumbel top-k, seeded per record), skipping likely false negatives; easy
//!    negatives drawn uniformly from the rest.
//!
//! Steps 2–3 are per row, so an engine may run them row by row on the rows that dedup keeps;
//! text is hashed through reused buffers with ASCII fast paths (checked against the plain
//! definitions in the tests), so a row costs no allocation.
//!
//! The steps the corpus runner of `coreb corpus` (`coreb::corpus`) drives over corpora too
//! large to hold: [`scan`] (blocks of source rows → sketches and spool records per output
//! shard, [`coreb_base::shard::shard_of_id`]), [`find_duplicates`] (all sketches → decisions) and
//! [`curate`] (one output shard's rows, in input order → dropped pairs and training records,
//! steps 2–5). [`spool`] is the file format between scan and curate, the one file this module
//! reads; otherwise it reads and writes nothing: the runner streams the sources and writes
//! the records. Does NOT call an embedding endpoint itself.
//!
//! [`audit`] holds the contamination audits of `coreb audit` (overlap of a corpus with a
//! release, how far the rewrites moved, a model's pass@1 on originals against rewrites);
//! they read JSONL input with [`coreb_base::jsonl`]. The human validation of the rewrites
//! (`coreb review`) is the release's (`coreb::release::review`), not curation's.

#![deny(missing_docs)]

pub mod alignment;
pub mod audit;
pub mod curate;
pub mod decontamination;
pub mod duplicates;
pub mod language;
pub mod negatives;
pub mod pairs;
pub mod scan;
pub mod spool;
pub mod table;
pub mod text;

pub use alignment::{AlignConfig, SimMatrix, align};
pub use curate::CorpusReport;
pub use decontamination::{
    DecontamConfig, Overlap, ReleaseIndex, decontaminate, ngram_hashes, words,
};
pub use duplicates::{
    CorpusDedupConfig, Decision, Duplicates, NearNormalisation, Selection, SketchError, Sketcher,
    Sketches, dedup_pairs, find_duplicates,
};
pub use language::{LanguageConfig, check_text, filter_language};
pub use negatives::{NegativeConfig, RerankRecord, TrainingRecord, mine_negatives, rerank_records};
pub use pairs::{CorpusStats, DropReason, Dropped, MatchKind, Pair, Side, StepOutput};
pub use text::{Prehashed, PrehashedHasher};
