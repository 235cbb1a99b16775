//! Step 5, negatives: hard negatives sampled from the similarity matrix with a temperature
//! (Gumbel top-k, seeded per record), skipping likely false negatives; easy negatives drawn
//! uniformly from the rest ([`mine_negatives`]); and the reranker's records of them
//! ([`rerank_records`]). Reads and writes nothing.

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_64_with_seed;

use crate::alignment::SimMatrix;
use crate::pairs::Pair;

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
    use crate::alignment::{AlignConfig, align};
    use crate::pairs::{DropReason, pair};

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
            pair("3", "reverse a string", "def reverse_string(s): return s[::-1]"),
            pair("4", "download a web page", "def parse_csv_rows(f): return list(csv.reader(f))"),
        ];
        let sim = SimMatrix::lexical(&pairs);
        let out =
            align(&AlignConfig { enabled: true, top_k: 1, threshold: 0.05 }, pairs.clone(), &sim);
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
}
