//! The one seeded generator of the workspace: SplitMix64 (Steele, Lea and Flood 2014).
//!
//! Its output is part of published releases (the qrels' hard-negative draw, the rewrite's
//! letter bijection), of results (the bootstrap's resamples) and of review pages (the draw),
//! so it is written here once, by hand, and never changes with a dependency upgrade. Callers
//! choose how to seed it (a hash of a key, a recorded seed) and how to reduce its output to a
//! range: [`SplitMix64::index`] (multiply-shift) or `next_u64() % n`, each fixed by what it
//! has published.

/// The SplitMix64 generator.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A stream seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// An index in `0..n` (multiply-shift: `(next × n) >> 64`).
    pub fn index(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

/// MurmurHash3's 64-bit finaliser: a cheap bijective mixer of a 64-bit value. What it mixes is
/// published too (which shard an id falls in, [`crate::shard`]; the curation's MinHash
/// sketches), so it is written here once, beside the generator.
pub fn fmix64(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first outputs of SplitMix64 seeded with 1234567 (the reference sequence).
    #[test]
    fn matches_the_reference_stream() {
        let mut g = SplitMix64::new(1_234_567);
        assert_eq!(g.next_u64(), 6_457_827_717_110_365_317);
        assert_eq!(g.next_u64(), 3_203_168_211_198_807_973);
    }

    #[test]
    fn index_stays_in_range() {
        let mut g = SplitMix64::new(7);
        assert!((0..1000).all(|_| g.index(3) < 3));
        assert_eq!(SplitMix64::new(7).index(1), 0);
    }
}
