//! Statistics over per-query scores: bootstrap confidence intervals of a mean, and paired
//! comparisons of two systems on the same queries (difference with its bootstrap CI, the
//! Wilcoxon signed-rank test, a paired randomisation test).
//!
//! Every random draw comes from [`SplitMix64`] seeded with the recorded seed, so results are
//! reproducible and another implementation can draw the same indices:
//!
//! - **Bootstrap** (percentile): for each of `resamples` rounds, `n` indices
//!   `(next_u64() as u128 * n as u128) >> 64` from one stream seeded with `seed` (a fresh
//!   stream per interval); the interval is the `(1−c)/2` and `(1+c)/2` quantiles of the
//!   resampled means, interpolated linearly between order statistics (numpy's default).
//! - **Wilcoxon signed-rank** on `d = b − a`, as `scipy.stats.wilcoxon(a, b)` computes it at
//!   its defaults (zero differences dropped, no continuity correction, two-sided, `auto`):
//!   with more than 50 pairs, or ties or zeros among more than 13, the normal approximation
//!   with the tie correction; with at most 50 pairs and neither ties nor zeros, the exact
//!   distribution; with ties or zeros among at most 13, the exact sign-flip permutation
//!   distribution of the statistic.
//! - **Randomisation** (sign flip): each round flips the sign of each difference when the top
//!   bit of `next_u64()` is set; p = (rounds with |mean| ≥ |observed mean| + 1) / (rounds + 1).
//!
//! Pure: does NOT read, print or evaluate runs.

use serde::{Deserialize, Serialize};

pub use coreb_base::seeded::SplitMix64;

/// Bootstrap settings (recorded with the results).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BootstrapConfig {
    /// Resampling rounds.
    pub resamples: usize,
    /// Seed of every stream.
    pub seed: u64,
    /// Confidence level.
    pub confidence: f64,
}

impl Default for BootstrapConfig {
    /// 1,000 resamples, seed 20250101, 95 %.
    fn default() -> Self {
        BootstrapConfig { resamples: 1000, seed: 20_250_101, confidence: 0.95 }
    }
}

/// A confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// Lower bound.
    pub low: f64,
    /// Upper bound.
    pub high: f64,
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// numpy's default (`linear`) quantile of sorted values.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * q;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// The percentile bootstrap interval of the mean of `values` (`None` when empty).
pub fn bootstrap_ci(values: &[f64], cfg: &BootstrapConfig) -> Option<Interval> {
    let n = values.len();
    if n == 0 || cfg.resamples == 0 {
        return None;
    }
    let mut rng = SplitMix64::new(cfg.seed);
    let mut means: Vec<f64> = (0..cfg.resamples)
        .map(|_| (0..n).map(|_| values[rng.index(n)]).sum::<f64>() / n as f64)
        .collect();
    means.sort_by(f64::total_cmp);
    let alpha = (1.0 - cfg.confidence) / 2.0;
    Some(Interval { low: quantile(&means, alpha), high: quantile(&means, 1.0 - alpha) })
}

/// Average ranks (1-based) of `values`, ties sharing the mean rank, and the tie-group sizes.
fn average_ranks(values: &[f64]) -> (Vec<f64>, Vec<usize>) {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut ranks = vec![0.0; values.len()];
    let mut groups = Vec::new();
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && values[order[j + 1]] == values[order[i]] {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            ranks[k] = rank;
        }
        groups.push(j - i + 1);
        i = j + 1;
    }
    (ranks, groups)
}

/// Sum of the ranks of |d| (zeros dropped) of the positive differences.
fn r_plus(d: &[f64]) -> (f64, f64, usize, Vec<usize>) {
    let nonzero: Vec<f64> = d.iter().copied().filter(|x| *x != 0.0).collect();
    let abs: Vec<f64> = nonzero.iter().map(|x| x.abs()).collect();
    let (ranks, groups) = average_ranks(&abs);
    let plus: f64 = nonzero.iter().zip(&ranks).filter(|(x, _)| **x > 0.0).map(|(_, r)| r).sum();
    let minus: f64 = nonzero.iter().zip(&ranks).filter(|(x, _)| **x < 0.0).map(|(_, r)| r).sum();
    (plus, minus, nonzero.len(), groups)
}

/// The standard normal survival function, `P(Z > z)`.
fn normal_sf(z: f64) -> f64 {
    0.5 * libm::erfc(z / std::f64::consts::SQRT_2)
}

/// Probabilities of the signed-rank statistic of `n` pairs without ties, `r = 0..=n(n+1)/2`.
fn wilcoxon_pmf(n: usize) -> Vec<f64> {
    let mut c = vec![1.0];
    for k in 1..=n {
        let prev = c;
        c = vec![0.0; k * (k + 1) / 2 + 1];
        let m = prev.len();
        for (i, p) in prev.iter().enumerate() {
            c[i] += p * 0.5;
        }
        let off = c.len() - m;
        for (i, p) in prev.iter().enumerate() {
            c[off + i] += p * 0.5;
        }
    }
    c
}

/// The two-sided p-value of the Wilcoxon signed-rank test of `b − a` (`None` with no pairs or
/// no non-zero difference); see the module documentation for which distribution is used.
pub fn wilcoxon(a: &[f64], b: &[f64]) -> Option<f64> {
    let d: Vec<f64> = b.iter().zip(a).map(|(b, a)| b - a).collect();
    let n = d.len();
    let zeros = d.iter().filter(|x| **x == 0.0).count();
    let (plus, _, count, groups) = r_plus(&d);
    if n == 0 || count == 0 {
        return None;
    }
    let ties = groups.iter().any(|g| *g > 1);
    if n <= 50 && !ties && zeros == 0 {
        let pmf = wilcoxon_pmf(count);
        let mean_stat = (count * (count + 1)) as f64 / 4.0;
        let k = plus.round() as usize;
        let cdf_raw = |k: usize| pmf[..=k.min(pmf.len() - 1)].iter().sum::<f64>();
        let sf_raw = |k: usize| {
            if k >= pmf.len() { 0.0 } else { pmf[k..].iter().sum::<f64>() }
        };
        let cdf = if k as f64 <= mean_stat { cdf_raw(k) } else { 1.0 - sf_raw(k + 1) };
        let sf = if k as f64 <= mean_stat {
            sf_raw(k)
        } else {
            1.0 - if k == 0 { 0.0 } else { cdf_raw(k - 1) }
        };
        return Some((2.0 * sf.min(cdf)).clamp(0.0, 1.0));
    }
    if n <= 13 {
        // Every sign assignment of the n differences (zeros stay zero).
        let observed = plus;
        let gamma = (observed * f64::EPSILON * 100.0).abs();
        let total = 1u64 << n;
        let (mut less, mut greater) = (0u64, 0u64);
        for mask in 0..total {
            let flipped: Vec<f64> = d
                .iter()
                .enumerate()
                .map(|(i, x)| if mask >> i & 1 == 1 { -x } else { *x })
                .collect();
            let stat = r_plus(&flipped).0;
            less += u64::from(stat <= observed + gamma);
            greater += u64::from(stat >= observed - gamma);
        }
        let p = 2.0 * (less.min(greater) as f64 / total as f64);
        return Some(p.min(1.0));
    }
    let c = count as f64;
    let mn = c * (c + 1.0) * 0.25;
    let tie_correct: f64 = groups.iter().map(|&t| (t * t * t - t) as f64).sum();
    let se = ((c * (c + 1.0) * (2.0 * c + 1.0) - tie_correct / 2.0) / 24.0).sqrt();
    let z = (plus - mn) / se;
    Some((2.0 * normal_sf(z.abs())).min(1.0))
}

/// The paired sign-flip randomisation test of the mean of `b − a`.
pub fn randomization(a: &[f64], b: &[f64], rounds: usize, seed: u64) -> Option<f64> {
    let d: Vec<f64> = b.iter().zip(a).map(|(b, a)| b - a).collect();
    if d.is_empty() || rounds == 0 {
        return None;
    }
    let observed = mean(&d).abs();
    let mut rng = SplitMix64::new(seed);
    let mut hits = 0usize;
    for _ in 0..rounds {
        let s: f64 = d.iter().map(|x| if rng.next_u64() >> 63 == 1 { -x } else { *x }).sum();
        // A relative tolerance so that the observed assignment itself always counts.
        hits += usize::from((s / d.len() as f64).abs() >= observed - 1e-12 * observed.max(1e-300));
    }
    Some((hits + 1) as f64 / (rounds + 1) as f64)
}

/// Rounds of the randomisation test.
pub const RANDOMIZATION_ROUNDS: usize = 10_000;

/// Two systems on the same queries, one measure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairedComparison {
    /// Queries compared.
    pub queries: usize,
    /// Mean of A.
    pub mean_a: f64,
    /// Mean of B.
    pub mean_b: f64,
    /// Mean of B − A.
    pub difference: f64,
    /// Bootstrap interval of the mean difference.
    pub ci: Option<Interval>,
    /// Wilcoxon signed-rank p-value (two-sided).
    pub wilcoxon_p: Option<f64>,
    /// Paired randomisation p-value (two-sided).
    pub randomization_p: Option<f64>,
}

/// Compare per-query values `a` and `b` (same queries, same order).
pub fn compare(a: &[f64], b: &[f64], cfg: &BootstrapConfig) -> PairedComparison {
    let d: Vec<f64> = b.iter().zip(a).map(|(b, a)| b - a).collect();
    let n = d.len();
    PairedComparison {
        queries: n,
        mean_a: if n == 0 { 0.0 } else { mean(a) },
        mean_b: if n == 0 { 0.0 } else { mean(b) },
        difference: if n == 0 { 0.0 } else { mean(&d) },
        ci: bootstrap_ci(&d, cfg),
        wilcoxon_p: wilcoxon(a, b),
        randomization_p: randomization(a, b, RANDOMIZATION_ROUNDS, cfg.seed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bootstrap_is_seeded_and_brackets_the_mean() {
        let v: Vec<f64> = (0..200).map(|i| f64::from(i % 7) / 7.0).collect();
        let cfg = BootstrapConfig::default();
        let ci = bootstrap_ci(&v, &cfg).unwrap();
        assert_eq!(Some(ci), bootstrap_ci(&v, &cfg));
        let m = mean(&v);
        assert!(ci.low < m && m < ci.high, "{ci:?} {m}");
        assert_ne!(Some(ci), bootstrap_ci(&v, &BootstrapConfig { seed: 1, ..cfg }));
        assert_eq!(bootstrap_ci(&[0.5], &cfg), Some(Interval { low: 0.5, high: 0.5 }));
        assert_eq!(bootstrap_ci(&[], &cfg), None);
    }

    #[test]
    fn wilcoxon_small_exact_cases() {
        // d = 1..=5, all positive: r+ = 15, P(R+ >= 15) = 1/32, two-sided 1/16.
        let a = [0.0; 5];
        let b = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert!((wilcoxon(&a, &b).unwrap() - 0.0625).abs() < 1e-15);
        assert!((wilcoxon(&b, &a).unwrap() - 0.0625).abs() < 1e-15);
        assert_eq!(wilcoxon(&a, &a), None);
        assert!(randomization(&a, &b, 1000, 7).unwrap() < 0.1);
        assert!(randomization(&a, &a, 1000, 7).unwrap() > 0.99);
    }
}
