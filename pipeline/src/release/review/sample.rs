//! The draw of a review: `N` problems of a release, stratified by (platform, difficulty).
//!
//! Each stratum gets its share of `N` by the largest-remainder method (ties to the stratum
//! that sorts first); within a stratum the problems, sorted by id, are shuffled with the
//! seeded SplitMix64 (Fisher–Yates, strata in sorted order, one stream) and the first taken.
//! The ids are returned sorted. Asking for more than the release holds takes every problem.

use std::collections::BTreeMap;

use coreb_base::seeded::SplitMix64;

/// A problem as the draw sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Candidate {
    /// The problem id.
    pub(crate) id: String,
    /// The platform's name.
    pub(crate) platform: String,
    /// The difficulty.
    pub(crate) difficulty: String,
}

/// Draw `n` of `candidates` with `seed`; the ids, sorted.
pub(crate) fn draw(candidates: &[Candidate], n: usize, seed: u64) -> Vec<String> {
    let mut strata: BTreeMap<(&str, &str), Vec<&str>> = BTreeMap::new();
    for c in candidates {
        strata.entry((c.platform.as_str(), c.difficulty.as_str())).or_default().push(c.id.as_str());
    }
    let total = candidates.len();
    let n = n.min(total);
    if n == 0 {
        return Vec::new();
    }
    // Quotas: floor of the exact share, then one more to the largest remainders.
    let mut quotas: Vec<(usize, usize)> =
        strata.values().map(|ids| (ids.len() * n / total, ids.len() * n % total)).collect();
    let left = n - quotas.iter().map(|q| q.0).sum::<usize>();
    let mut order: Vec<usize> = (0..quotas.len()).collect();
    order.sort_by(|&a, &b| quotas[b].1.cmp(&quotas[a].1).then(a.cmp(&b)));
    for &i in order.iter().take(left) {
        quotas[i].0 += 1;
    }
    let mut rng = SplitMix64::new(seed);
    let mut out = Vec::with_capacity(n);
    for (ids, (quota, _)) in strata.into_values().zip(quotas) {
        let mut ids = ids;
        ids.sort_unstable();
        for i in (1..ids.len()).rev() {
            let j = rng.index(i + 1);
            ids.swap(i, j);
        }
        out.extend(ids.into_iter().take(quota).map(str::to_owned));
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool() -> Vec<Candidate> {
        let mut c = Vec::new();
        for (platform, difficulty, n) in
            [("atcoder", "easy", 6), ("atcoder", "hard", 2), ("leetcode", "medium", 2)]
        {
            for i in 0..n {
                c.push(Candidate {
                    id: format!("{platform}-{difficulty}-{i}"),
                    platform: platform.into(),
                    difficulty: difficulty.into(),
                });
            }
        }
        c
    }

    #[test]
    fn strata_get_their_share_and_the_seed_decides_which() {
        let c = pool();
        let a = draw(&c, 5, 7);
        assert_eq!(a.len(), 5);
        // 6/10, 2/10, 2/10 of 5: 3 + 1 + 1.
        let count = |p: &str| a.iter().filter(|id| id.starts_with(p)).count();
        assert_eq!(
            (count("atcoder-easy"), count("atcoder-hard"), count("leetcode")),
            (3, 1, 1),
            "{a:?}"
        );
        assert_eq!(draw(&c, 5, 7), a, "same seed, same draw");
        let others: std::collections::BTreeSet<Vec<String>> =
            (0..20).map(|s| draw(&c, 5, s)).collect();
        assert!(others.len() > 3, "the seed does not change the draw: {others:?}");
        let mut sorted = a.clone();
        sorted.sort();
        assert_eq!(a, sorted);
    }

    #[test]
    fn largest_remainders_and_the_whole_release() {
        let c = pool();
        // 6/10·3 = 1.8, 2/10·3 = 0.6, 0.6: floors 1, 0, 0; remainders 8, 6, 6 → the first two.
        let a = draw(&c, 3, 1);
        let count = |p: &str| a.iter().filter(|id| id.starts_with(p)).count();
        assert_eq!(
            (count("atcoder-easy"), count("atcoder-hard"), count("leetcode")),
            (2, 1, 0),
            "{a:?}"
        );
        assert_eq!(draw(&c, 99, 1).len(), 10);
        assert!(draw(&c, 0, 1).is_empty());
    }
}
