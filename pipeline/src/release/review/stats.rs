//! The statistics of a review: the share of "yes" with its Wilson interval, and agreement
//! between reviewers on nominal answers (Cohen's κ for two, Fleiss' κ for a complete table of
//! more, Krippendorff's α with missing answers allowed).
//!
//! Pure: categories are small integers (`0..k`), a missing answer is `None`. A statistic whose
//! formula divides by zero (every answer the same category, fewer than two paired values) is
//! `None`, never NaN.

/// The 97.5 % quantile of the standard normal distribution (a two-sided 95 % interval).
const Z95: f64 = 1.959_963_984_540_054;

/// A proportion with its Wilson score interval.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub(crate) struct Share {
    /// Successes.
    pub(crate) yes: usize,
    /// Trials.
    pub(crate) of: usize,
    /// `yes / of`.
    pub(crate) share: f64,
    /// Lower bound of the 95 % interval.
    pub(crate) low: f64,
    /// Upper bound of the 95 % interval.
    pub(crate) high: f64,
}

/// `yes` of `of` with its 95 % Wilson score interval; `None` with no trial.
pub(crate) fn wilson(yes: usize, of: usize) -> Option<Share> {
    if of == 0 || yes > of {
        return None;
    }
    let n = of as f64;
    let p = yes as f64 / n;
    let z2 = Z95 * Z95;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = Z95 / (1.0 + z2 / n) * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    Some(Share { yes, of, share: p, low: (centre - half).max(0.0), high: (centre + half).min(1.0) })
}

/// Cohen's κ of two raters over the items both rated (`pairs`), with `k` categories.
pub(crate) fn cohen_kappa(pairs: &[(usize, usize)], k: usize) -> Option<f64> {
    if pairs.is_empty() {
        return None;
    }
    let n = pairs.len() as f64;
    let (mut a, mut b) = (vec![0.0; k], vec![0.0; k]);
    let mut agree = 0.0;
    for &(x, y) in pairs {
        a[x] += 1.0;
        b[y] += 1.0;
        if x == y {
            agree += 1.0;
        }
    }
    let po = agree / n;
    let pe: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum::<f64>() / (n * n);
    finite((po - pe) / (1.0 - pe))
}

/// Fleiss' κ of a table `counts[item][category]` whose rows all sum to the same number of
/// raters (at least two).
pub(crate) fn fleiss_kappa(counts: &[Vec<usize>]) -> Option<f64> {
    let raters: usize = counts.first()?.iter().sum();
    if raters < 2 || counts.iter().any(|row| row.iter().sum::<usize>() != raters) {
        return None;
    }
    let (items, m) = (counts.len() as f64, raters as f64);
    let k = counts[0].len();
    let mut p_bar = 0.0;
    let mut totals = vec![0.0; k];
    for row in counts {
        let sq: f64 = row.iter().map(|&c| (c * c) as f64).sum();
        p_bar += (sq - m) / (m * (m - 1.0));
        for (t, &c) in totals.iter_mut().zip(row) {
            *t += c as f64;
        }
    }
    p_bar /= items;
    let pe: f64 = totals.iter().map(|t| (t / (items * m)).powi(2)).sum();
    finite((p_bar - pe) / (1.0 - pe))
}

/// Krippendorff's α for nominal data: `units[item][rater]`, a missing answer `None`; units
/// with fewer than two answers are not pairable and left out.
pub(crate) fn krippendorff_alpha(units: &[Vec<Option<usize>>], k: usize) -> Option<f64> {
    // The coincidence matrix.
    let mut o = vec![vec![0.0; k]; k];
    for unit in units {
        let values: Vec<usize> = unit.iter().flatten().copied().collect();
        let m = values.len();
        if m < 2 {
            continue;
        }
        for (i, &c) in values.iter().enumerate() {
            for (j, &d) in values.iter().enumerate() {
                if i != j {
                    o[c][d] += 1.0 / (m - 1) as f64;
                }
            }
        }
    }
    let totals: Vec<f64> = o.iter().map(|row| row.iter().sum()).collect();
    let n: f64 = totals.iter().sum();
    if n < 2.0 {
        return None;
    }
    let mut observed = 0.0;
    let mut expected = 0.0;
    for c in 0..k {
        for d in 0..k {
            if c != d {
                observed += o[c][d];
                expected += totals[c] * totals[d];
            }
        }
    }
    finite(1.0 - (n - 1.0) * observed / expected)
}

fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: Option<f64>, b: f64) {
        let a = a.expect("a value");
        assert!((a - b).abs() < 1e-9, "{a} != {b}");
    }

    #[test]
    fn wilson_against_hand_worked_values() {
        // 8 of 10: centre (0.8 + z²/20) / (1 + z²/10) = 0.716737, half 0.226577.
        let s = wilson(8, 10).unwrap();
        assert!((s.low - 0.490_160).abs() < 1e-5 && (s.high - 0.943_314).abs() < 1e-5, "{s:?}");
        // All yes: the upper bound is 1 and the lower n / (n + z²).
        let s = wilson(5, 5).unwrap();
        assert!(
            (s.high - 1.0).abs() < 1e-12 && (s.low - 5.0 / (5.0 + Z95 * Z95)).abs() < 1e-12,
            "{s:?}"
        );
        let s = wilson(0, 4).unwrap();
        assert_eq!((s.share, s.low), (0.0, 0.0));
        assert_eq!(wilson(0, 0), None);
        assert_eq!(wilson(3, 2), None);
    }

    #[test]
    fn cohen_against_a_hand_worked_table() {
        // 10 items: 4 yes/yes, 2 no/no, 1 yes/no, 2 no/yes, 1 unsure/unsure.
        // po = 7/10; a = (5, 4, 1), b = (6, 3, 1); pe = (30 + 12 + 1)/100 = 0.43.
        let mut pairs = vec![(0, 0); 4];
        pairs.extend([(1, 1), (1, 1), (0, 1), (1, 0), (1, 0), (2, 2)]);
        close(cohen_kappa(&pairs, 3), (0.7 - 0.43) / (1.0 - 0.43));
        // Perfect agreement over two categories is 1; one category only is undefined.
        close(cohen_kappa(&[(0, 0), (1, 1)], 3), 1.0);
        assert_eq!(cohen_kappa(&[(0, 0), (0, 0)], 3), None);
        assert_eq!(cohen_kappa(&[], 3), None);
    }

    #[test]
    fn fleiss_against_a_hand_worked_table() {
        // 3 items, 3 raters, 2 categories: (3,0), (2,1), (0,3).
        // P_i = 1, 1/3, 1 → P̄ = 7/9; p = (5/9, 4/9) → Pe = 41/81.
        let table = vec![vec![3, 0], vec![2, 1], vec![0, 3]];
        close(fleiss_kappa(&table), (7.0 / 9.0 - 41.0 / 81.0) / (1.0 - 41.0 / 81.0));
        // Rows of unequal raters, or one rater: undefined.
        assert_eq!(fleiss_kappa(&[vec![3, 0], vec![1, 1]]), None);
        assert_eq!(fleiss_kappa(&[vec![1, 0]]), None);
    }

    #[test]
    fn krippendorff_against_hand_worked_values() {
        // Two raters, 4 units: (0,0), (0,1), (1,1), (1,1). Coincidences: o00 = 2, o01 = o10 = 1,
        // o11 = 4; n = 8, n0 = 3, n1 = 5: α = 1 - 7 · 2 / (2 · 15) = 1 - 14/30.
        let units = vec![
            vec![Some(0), Some(0)],
            vec![Some(0), Some(1)],
            vec![Some(1), Some(1)],
            vec![Some(1), Some(1)],
        ];
        close(krippendorff_alpha(&units, 3), 1.0 - 14.0 / 30.0);
        // A unit with one answer is not pairable: adding it changes nothing.
        let mut with_missing = units.clone();
        with_missing.push(vec![Some(1), None]);
        close(krippendorff_alpha(&with_missing, 3), 1.0 - 14.0 / 30.0);
        // Three raters, one missing: (0,0,None) (1,1,0): o00 = 2, o01 = o10 = 2 · 0.5 = 1,
        // o11 = 2 · 0.5 = 1; n = 5, n0 = 3, n1 = 2: α = 1 - 4 · 2 / (2 · 6).
        close(
            krippendorff_alpha(&[vec![Some(0), Some(0), None], vec![Some(1), Some(1), Some(0)]], 2),
            1.0 - 8.0 / 12.0,
        );
        // Everything the same: no expected disagreement, undefined.
        assert_eq!(krippendorff_alpha(&[vec![Some(0), Some(0)]], 2), None);
    }
}
