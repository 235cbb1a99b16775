//! Step 4, dual consistency: text and code must rank each other in their top-k by similarity,
//! and the similarity must reach a threshold. The similarity matrix ([`SimMatrix`]) comes from
//! embeddings ([`SimMatrix::from_embeddings`]) or from [`SimMatrix::lexical`], a TF-IDF cosine
//! over the code-aware tokens of [`coreb_eval::bm25::tokenize`]. Reads and writes nothing.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::pairs::{DropReason, Dropped, Pair, StepOutput};
use coreb_eval::bm25::{Bm25Config, tokenize};

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
        AlignConfig { enabled: true, top_k: 2, threshold: 0.05 }
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
                reason: DropReason::Misaligned { code_rank, text_rank, similarity },
            });
        }
    }
    out
}
