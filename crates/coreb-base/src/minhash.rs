//! What coreb's two MinHash-LSH deduplicators share: the text normalisation before hashing
//! ([`normalise`]), the parameters and their check ([`Params`]), and the union-find that
//! joins confirmed pairs into clusters ([`UnionFind`]).
//!
//! The two are the `dedup` stage (`coreb_stages::dedup`: a month's problems, thousands of
//! statements, against every earlier release) and the training-corpus deduplication
//! (`coreb_curation::duplicates`: millions of text–code pairs, split over processes, its
//! normalisation datatrove's when asked). They share these pieces and nothing above them: the
//! shingle hashes, the MinHash signature, the LSH banding and the Jaccard check differ on
//! purpose, and each module's doc says, with measurements, what one sketch for both would
//! change.
//!
//! ```
//! use coreb_base::minhash::{UnionFind, normalise};
//! assert_eq!(normalise("  a\t b\n\nC  "), "a b C");
//! let mut uf = UnionFind::new(4);
//! uf.union(3, 1);
//! uf.union(2, 3);
//! assert_eq!((uf.find(2), uf.find(3), uf.find(0)), (1, 1, 0));
//! ```

use unicode_normalization::UnicodeNormalization;

/// The normalised text: Unicode NFC, whitespace runs folded to one space, trimmed; case kept.
/// The exact key of both deduplicators is a hash of it; their shingles are cut from it
/// (lower-cased).
pub fn normalise(text: &str) -> String {
    let nfc: String = text.nfc().collect();
    nfc.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// MinHash-LSH parameters, as both deduplicators' configurations hold them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Params {
    /// Words per shingle.
    pub shingle_words: usize,
    /// MinHash permutations or bins (signature length).
    pub num_perm: usize,
    /// LSH bands; `num_perm` must be a multiple of it.
    pub bands: usize,
    /// Shingle-set Jaccard similarity at or above which two texts are near-duplicates.
    pub threshold: f64,
    /// Seed of the MinHash.
    pub seed: u64,
}

impl Default for Params {
    /// 5-word shingles, 128 permutations in 32 bands of 4 (a pair at Jaccard 0.7 shares a band
    /// with probability 1 − (1 − 0.7⁴)³² ≈ 0.99995), threshold 0.7.
    fn default() -> Self {
        Params { shingle_words: 5, num_perm: 128, bands: 32, threshold: 0.7, seed: 0xC0DE_2025 }
    }
}

impl Params {
    /// Check that the parameters fit together.
    pub fn validate(&self) -> Result<(), String> {
        if self.shingle_words == 0 {
            return Err("`shingle_words` must be at least 1".into());
        }
        if self.bands == 0 || self.num_perm == 0 || !self.num_perm.is_multiple_of(self.bands) {
            return Err(format!(
                "`num_perm` ({}) must be a positive multiple of `bands` ({})",
                self.num_perm, self.bands
            ));
        }
        if !(self.threshold > 0.0 && self.threshold <= 1.0) {
            return Err(format!("`threshold` must be in (0, 1], got `{}`", self.threshold));
        }
        Ok(())
    }
}

/// Union-find over `0..n` whose root is always the smallest member, so that the clusters, and
/// which member stands for each, do not depend on the order pairs are joined in. Path halving;
/// 32-bit indices (four bytes a row at the corpus's millions of rows).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnionFind(Vec<u32>);

impl UnionFind {
    /// `n` members, each alone.
    ///
    /// # Panics
    /// When `n` exceeds `u32::MAX`.
    pub fn new(n: usize) -> UnionFind {
        let n = u32::try_from(n).expect("a union-find of at most u32::MAX members");
        UnionFind((0..n).collect())
    }

    /// The root (smallest member) of `x`'s cluster.
    pub fn find(&mut self, mut x: u32) -> u32 {
        while self.0[x as usize] != x {
            let up = self.0[self.0[x as usize] as usize];
            self.0[x as usize] = up;
            x = up;
        }
        x
    }

    /// Join the clusters of `a` and `b`.
    pub fn union(&mut self, a: u32, b: u32) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            let (lo, hi) = if ra < rb { (ra, rb) } else { (rb, ra) };
            self.0[hi as usize] = lo;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalisation_folds_whitespace_composes_and_keeps_case() {
        assert_eq!(normalise("  a\t b\n\nC  "), "a b C");
        assert_eq!(normalise("caf\u{65}\u{301}"), "caf\u{e9}");
        assert_eq!(normalise("\u{a0}x\u{2003}y"), "x y");
    }

    #[test]
    fn the_root_is_the_smallest_member_whatever_the_order() {
        let pairs = [(5, 2), (2, 7), (7, 1), (3, 4)];
        for order in [[0, 1, 2, 3], [3, 2, 1, 0], [2, 0, 3, 1]] {
            let mut uf = UnionFind::new(8);
            for i in order {
                let (a, b) = pairs[i];
                uf.union(a, b);
            }
            let roots: Vec<u32> = (0..8).map(|x| uf.find(x)).collect();
            assert_eq!(roots, [0, 1, 1, 3, 3, 1, 6, 1], "{order:?}");
        }
    }

    #[test]
    fn parameters_are_checked() {
        assert!(Params { bands: 5, ..Params::default() }.validate().is_err());
        assert!(Params { threshold: 0.0, ..Params::default() }.validate().is_err());
        assert!(Params { shingle_words: 0, ..Params::default() }.validate().is_err());
        assert!(Params::default().validate().is_ok());
    }
}
