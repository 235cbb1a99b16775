//! `dedup`: exact and near-duplicate removal, also against earlier releases.
//!
//! Exact: sha256 of the normalised statement (Unicode NFC, whitespace runs folded to one
//! space, case kept). Near: MinHash over lower-cased word shingles, banded LSH to find
//! candidate pairs, and the exact Jaccard similarity of the shingle sets to confirm them.
//! Items that share a problem id, an exact hash or a confirmed near-duplicate pair form a
//! cluster (union-find). In a cluster that holds a problem of an earlier release, every new
//! problem is dropped; otherwise the problem with the earliest contest date (then the lowest
//! id) is kept and the others are dropped with a typed reason.
//!
//! The normalisation, the parameters' check and the union-find are shared with the training
//! corpus's deduplication ([`coreb_base::minhash`]); the sketch is this stage's own. Why not
//! the corpus's (`coreb_curation::duplicates`: a one-permutation MinHash over 32-bit shingle
//! hashes, each row paired with its neighbour in a band's sorted keys, as datatrove does),
//! measured on the 1,048 statements of `tests/ingest.rs`'s planted set (1,044 LiveCodeBench
//! problems and 4 planted duplicates, 268 words each on average): it finds the same 4
//! clusters, with the same Jaccard values at the 4 decimals a drop reason records, and makes
//! the signatures 25–127× faster (1–5 ms against 120–134 ms for all 1,048, release build),
//! but it proposes 10 candidate pairs where this stage proposes 7, so the stage's recorded
//! summary (`candidate_pairs`) would change, and pairing neighbours instead of every pair of
//! a bucket can leave out a pair above the threshold whose rows are not neighbours in any
//! band. A month is a few thousand statements (0.1 s of signatures here): speed is no reason
//! to change what a published stage decides.
//!
//! Pure: reads and writes nothing. The engine loads the problems and earlier releases.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::{xxh3_64, xxh3_64_with_seed};

use coreb_base::hashing::sha256_hex;
use coreb_base::minhash::{Params, UnionFind, normalise};
use coreb_data::problem::ProblemId;

/// `[stages.dedup]`: the parameters are recorded in the stage output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DedupConfig {
    /// Words per shingle.
    pub shingle_words: usize,
    /// MinHash permutations (signature length).
    pub num_perm: usize,
    /// LSH bands; `num_perm` must be a multiple of it.
    pub bands: usize,
    /// Jaccard similarity of shingle sets at or above which two problems are near-duplicates.
    pub threshold: f64,
    /// Seed of the MinHash permutations.
    pub seed: u64,
}

impl Default for DedupConfig {
    fn default() -> Self {
        let Params { shingle_words, num_perm, bands, threshold, seed } = Params::default();
        DedupConfig { shingle_words, num_perm, bands, threshold, seed }
    }
}

impl DedupConfig {
    /// The parameters as the shared MinHash pieces take them.
    pub fn params(&self) -> Params {
        Params {
            shingle_words: self.shingle_words,
            num_perm: self.num_perm,
            bands: self.bands,
            threshold: self.threshold,
            seed: self.seed,
        }
    }

    /// Check the parameters fit together ([`Params::validate`]).
    pub fn validate(&self) -> Result<(), String> {
        self.params().validate()
    }
}

/// Where a dedup item comes from.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// The problems of this build.
    Current,
    /// A published release (its version).
    Release(String),
}

/// What dedup needs of a problem.
#[derive(Debug, Clone)]
pub struct Item {
    /// The problem id.
    pub id: ProblemId,
    /// Its contest date (ISO); the earliest of a cluster is kept.
    pub contest_date: String,
    /// The statement.
    pub statement: String,
    /// Where it comes from.
    pub origin: Origin,
}

/// Why a problem was dropped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum DropReason {
    /// A problem of an earlier release is in its cluster; releases are problem-disjoint.
    InEarlierRelease {
        /// The release.
        release: String,
        /// The published problem it duplicates.
        of: ProblemId,
    },
    /// The same problem id appeared before.
    DuplicateId {
        /// The kept row's id (the same).
        of: ProblemId,
    },
    /// Same normalised statement as the kept problem.
    ExactDuplicate {
        /// The kept problem.
        of: ProblemId,
    },
    /// Shingle-set Jaccard similarity with a cluster member at or above the threshold.
    NearDuplicate {
        /// The kept problem.
        of: ProblemId,
        /// Jaccard similarity with the kept problem.
        jaccard: f64,
    },
}

/// One dropped problem.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dropped {
    /// The dropped problem.
    pub id: ProblemId,
    /// Its position in the input (0-based), to tell rows with the same id apart.
    pub row: usize,
    /// Why.
    #[serde(flatten)]
    pub reason: DropReason,
}

/// A cluster of duplicates: which problem was kept and why, and what was dropped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cluster {
    /// The kept problem of this build, if any was kept.
    pub kept: Option<ProblemId>,
    /// Why that one (or why none).
    pub kept_because: String,
    /// Problems of earlier releases in the cluster.
    pub published: Vec<(String, ProblemId)>,
    /// The dropped problems of this build.
    pub dropped: Vec<Dropped>,
}

/// Counts of one dedup run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DedupStats {
    /// Problems of this build in.
    pub rows_in: u64,
    /// Problems kept.
    pub rows_out: u64,
    /// Dropped: same id.
    pub duplicate_ids: u64,
    /// Dropped: same normalised statement.
    pub exact_duplicates: u64,
    /// Dropped: near-duplicate.
    pub near_duplicates: u64,
    /// Dropped: already published.
    pub in_earlier_release: u64,
    /// Clusters with more than one member.
    pub clusters: u64,
    /// Candidate pairs LSH proposed.
    pub candidate_pairs: u64,
}

coreb_base::add_assign_fields!(DedupStats {
    rows_in,
    rows_out,
    duplicate_ids,
    exact_duplicates,
    near_duplicates,
    in_earlier_release,
    clusters,
    candidate_pairs
});

/// The result of [`dedup`].
#[derive(Debug, Clone)]
pub struct DedupOutput {
    /// Input rows (0-based positions among the current items) that are kept, ascending.
    pub kept_rows: Vec<usize>,
    /// Clusters with more than one member, sorted by their first member.
    pub clusters: Vec<Cluster>,
    /// Counts.
    pub stats: DedupStats,
}

/// sha256 (hex) of the normalised statement.
pub fn statement_hash(text: &str) -> String {
    sha256_hex(normalise(text).as_bytes())
}

/// Hashes of the lower-cased word shingles of a text.
pub fn shingles(text: &str, k: usize) -> HashSet<u64> {
    let lower = normalise(text).to_lowercase();
    let words: Vec<&str> =
        lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    if words.len() <= k {
        return std::iter::once(xxh3_64(words.join(" ").as_bytes())).collect();
    }
    words.windows(k).map(|w| xxh3_64(w.join(" ").as_bytes())).collect()
}

/// The MinHash signature of a shingle set.
pub fn signature(shingles: &HashSet<u64>, config: &DedupConfig) -> Vec<u64> {
    (0..config.num_perm)
        .map(|i| {
            let seed = config.seed.wrapping_add(i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            shingles
                .iter()
                .map(|&s| xxh3_64_with_seed(&s.to_le_bytes(), seed))
                .min()
                .unwrap_or(u64::MAX)
        })
        .collect()
}

/// Jaccard similarity of two sets.
pub fn jaccard(a: &HashSet<u64>, b: &HashSet<u64>) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let inter = a.intersection(b).count();
    inter as f64 / (a.len() + b.len() - inter) as f64
}

/// Deduplicate `current` against itself and against `published` (earlier releases).
pub fn dedup(config: &DedupConfig, current: &[Item], published: &[Item]) -> DedupOutput {
    let items: Vec<&Item> = published.iter().chain(current).collect();
    let pool = Pool {
        offset: published.len(),
        hashes: items.iter().map(|i| statement_hash(&i.statement)).collect(),
        sets: items.iter().map(|i| shingles(&i.statement, config.shingle_words)).collect(),
        items,
    };
    // The smallest index is a cluster's root, so roots do not depend on pair order.
    let mut uf = UnionFind::new(pool.items.len());
    let mut stats = DedupStats { rows_in: current.len() as u64, ..DedupStats::default() };

    join_same_id_or_hash(&pool, &mut uf);
    // LSH over MinHash signatures, confirmed by exact Jaccard.
    let pairs = lsh_candidate_pairs(&pool.sets, config);
    stats.candidate_pairs = pairs.len() as u64;
    for &(a, b) in &pairs {
        // Two published problems never need joining: only clusters touching this build matter.
        if b >= pool.offset && jaccard(&pool.sets[a], &pool.sets[b]) >= config.threshold {
            uf.union(a as u32, b as u32);
        }
    }

    let mut groups: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for i in 0..pool.items.len() {
        let root = uf.find(i as u32);
        groups.entry(root).or_default().push(i);
    }
    let mut kept_rows = Vec::new();
    let mut clusters = Vec::new();
    for members in groups.into_values() {
        let new: Vec<usize> = members.iter().copied().filter(|&i| i >= pool.offset).collect();
        if new.is_empty() {
            continue;
        }
        if members.len() == 1 {
            kept_rows.push(new[0] - pool.offset);
            continue;
        }
        stats.clusters += 1;
        clusters.push(resolve_cluster(&pool, &members, &new, &mut kept_rows, &mut stats));
    }
    kept_rows.sort_unstable();
    stats.rows_out = kept_rows.len() as u64;
    DedupOutput { kept_rows, clusters, stats }
}

/// The items of one dedup run: the published ones first (`offset` of them), then the
/// current ones; with each statement's exact hash and shingle set.
struct Pool<'a> {
    items: Vec<&'a Item>,
    offset: usize,
    hashes: Vec<String>,
    sets: Vec<HashSet<u64>>,
}

/// Join items with the same id or the same exact statement hash.
fn join_same_id_or_hash(pool: &Pool, uf: &mut UnionFind) {
    let mut first_of: HashMap<(&str, u8), usize> = HashMap::new();
    for (i, item) in pool.items.iter().enumerate() {
        for key in [(item.id.as_str(), 0u8), (pool.hashes[i].as_str(), 1u8)] {
            match first_of.get(&key) {
                Some(&j) => uf.union(i as u32, j as u32),
                None => {
                    first_of.insert(key, i);
                }
            }
        }
    }
}

/// Candidate near-duplicate pairs `(a, b)`, `a < b`, sorted and unique: items sharing a band
/// of their MinHash signatures.
fn lsh_candidate_pairs(sets: &[HashSet<u64>], config: &DedupConfig) -> Vec<(usize, usize)> {
    let rows_per_band = config.num_perm / config.bands;
    let sigs: Vec<Vec<u64>> = sets.iter().map(|s| signature(s, config)).collect();
    let mut buckets: HashMap<(usize, u64), Vec<usize>> = HashMap::new();
    for (i, sig) in sigs.iter().enumerate() {
        for (b, band) in sig.chunks(rows_per_band).enumerate() {
            let bytes: Vec<u8> = band.iter().flat_map(|v| v.to_le_bytes()).collect();
            buckets.entry((b, xxh3_64(&bytes))).or_default().push(i);
        }
    }
    let mut pairs: Vec<(usize, usize)> = buckets
        .into_values()
        .filter(|v| v.len() > 1)
        .flat_map(|v| {
            let mut out = Vec::new();
            for (x, &a) in v.iter().enumerate() {
                for &b in &v[x + 1..] {
                    out.push((a.min(b), a.max(b)));
                }
            }
            out
        })
        .collect();
    pairs.sort_unstable();
    pairs.dedup();
    pairs
}

/// One cluster of two or more items, `new` of them from this build: if any member was
/// published, every new one is dropped as already published; else the earliest (by
/// contest date, then id, then row) is kept (pushed to `kept_rows`) and the others are
/// dropped with their reason.
fn resolve_cluster(
    pool: &Pool,
    members: &[usize],
    new: &[usize],
    kept_rows: &mut Vec<usize>,
    stats: &mut DedupStats,
) -> Cluster {
    let (items, offset, hashes, sets) = (&pool.items, pool.offset, &pool.hashes, &pool.sets);
    let published: Vec<(String, ProblemId)> = members
        .iter()
        .filter(|&&i| i < offset)
        .map(|&i| match &items[i].origin {
            Origin::Release(v) => (v.clone(), items[i].id.clone()),
            Origin::Current => (String::new(), items[i].id.clone()),
        })
        .collect();
    let mut dropped = Vec::new();
    let (kept, kept_because) = if let Some((release, of)) = published.first() {
        for &i in new {
            stats.in_earlier_release += 1;
            dropped.push(Dropped {
                id: items[i].id.clone(),
                row: i - offset,
                reason: DropReason::InEarlierRelease { release: release.clone(), of: of.clone() },
            });
        }
        (None, format!("already published in release `{release}` as `{of}`"))
    } else {
        let &keep = new
            .iter()
            .min_by(|&&a, &&b| {
                (items[a].contest_date.as_str(), items[a].id.as_str(), a).cmp(&(
                    items[b].contest_date.as_str(),
                    items[b].id.as_str(),
                    b,
                ))
            })
            .unwrap_or(&new[0]);
        kept_rows.push(keep - offset);
        let tie =
            new.iter().filter(|&&i| items[i].contest_date == items[keep].contest_date).count() > 1;
        for &i in new.iter().filter(|&&i| i != keep) {
            let of = items[keep].id.clone();
            let reason = if items[i].id == items[keep].id {
                stats.duplicate_ids += 1;
                DropReason::DuplicateId { of }
            } else if hashes[i] == hashes[keep] {
                stats.exact_duplicates += 1;
                DropReason::ExactDuplicate { of }
            } else {
                stats.near_duplicates += 1;
                let j = (jaccard(&sets[i], &sets[keep]) * 1e4).round() / 1e4;
                DropReason::NearDuplicate { of, jaccard: j }
            };
            dropped.push(Dropped { id: items[i].id.clone(), row: i - offset, reason });
        }
        let because = if tie {
            "earliest contest_date, then lowest id (then first row)"
        } else {
            "earliest contest_date"
        };
        (Some(items[keep].id.clone()), because.to_owned())
    };
    Cluster { kept, kept_because, published, dropped }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: &str, date: &str, text: &str) -> Item {
        Item {
            id: ProblemId::from_question_id(id),
            contest_date: date.into(),
            statement: text.into(),
            origin: Origin::Current,
        }
    }

    const A: &str = "You are given an array of integers nums and an integer k. Return the number of subarrays whose sum is divisible by k. Each subarray must be contiguous and non-empty.";
    const B: &str = "Takahashi has N cards with numbers written on them. He picks two cards at random; print the probability that their product is a perfect square, as an irreducible fraction.";

    #[test]
    fn normalisation_folds_whitespace_keeps_case() {
        assert_eq!(normalise("  a\t b\n\nC  "), "a b C");
        assert_eq!(statement_hash("a  b"), statement_hash("a\nb"));
        assert_ne!(statement_hash("a b"), statement_hash("A b"));
        // NFC: e + combining acute == precomposed é.
        assert_eq!(statement_hash("caf\u{65}\u{301}"), statement_hash("caf\u{e9}"));
    }

    #[test]
    fn clusters_exact_case_and_reidentified() {
        let cfg = DedupConfig::default();
        let upper = A.to_uppercase();
        let spaced = A.replace(' ', "  \n");
        let current = vec![
            item("1", "2025-01-05", A),
            item("2", "2025-01-01", B),
            item("1", "2025-01-05", A),       // duplicated row
            item("3", "2025-01-09", &spaced), // whitespace variant → exact
            item("4", "2025-01-02", &upper),  // case variant → near
            item("5", "2025-02-01", &format!("{A} Note: answers fit in 64 bits.")), // re-identified
        ];
        let out = dedup(&cfg, &current, &[]);
        assert_eq!(out.kept_rows, vec![1, 4]);
        assert_eq!(out.clusters.len(), 1);
        let c = &out.clusters[0];
        assert_eq!(c.kept.as_ref().unwrap().as_str(), "lcb_4");
        let reasons: Vec<_> = c.dropped.iter().map(|d| (d.row, &d.reason)).collect();
        assert!(matches!(reasons[0], (0, DropReason::NearDuplicate { .. })));
        assert!(matches!(reasons[1], (2, DropReason::NearDuplicate { .. })));
        assert!(matches!(reasons[2], (3, DropReason::NearDuplicate { .. })));
        assert_eq!(out.stats.near_duplicates, 4);
        // Keeping the upper-case variant is what "earliest contest date" says; with equal dates
        // the exact duplicates are reported as such.
        let same_day = vec![
            item("1", "2025-01-05", A),
            item("1", "2025-01-05", A),
            item("3", "2025-01-05", &spaced),
        ];
        let out = dedup(&cfg, &same_day, &[]);
        assert_eq!(out.kept_rows, vec![0]);
        let r: Vec<_> = out.clusters[0].dropped.iter().map(|d| d.reason.clone()).collect();
        assert_eq!(r[0], DropReason::DuplicateId { of: ProblemId::from_question_id("1") });
        assert_eq!(r[1], DropReason::ExactDuplicate { of: ProblemId::from_question_id("1") });
    }

    #[test]
    fn earlier_release_wins() {
        let cfg = DedupConfig::default();
        let published =
            vec![Item { origin: Origin::Release("v202412".into()), ..item("9", "2024-12-01", A) }];
        let out =
            dedup(&cfg, &[item("1", "2025-01-05", A), item("2", "2025-01-01", B)], &published);
        assert_eq!(out.kept_rows, vec![1]);
        assert_eq!(out.stats.in_earlier_release, 1);
        assert!(out.clusters[0].kept.is_none());
    }

    #[test]
    fn distinct_problems_stay() {
        let out = dedup(&DedupConfig::default(), &[item("1", "d", A), item("2", "d", B)], &[]);
        assert_eq!(out.kept_rows, vec![0, 1]);
        assert!(out.clusters.is_empty());
    }

    #[test]
    fn config_is_checked() {
        assert!(DedupConfig { bands: 5, ..DedupConfig::default() }.validate().is_err());
        assert!(DedupConfig { threshold: 0.0, ..DedupConfig::default() }.validate().is_err());
        assert!(DedupConfig::default().validate().is_ok());
    }
}
