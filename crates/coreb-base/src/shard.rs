//! Which of `N` shards an id falls in: the one hash every process that splits work by id uses
//! (the build's shard processes, the training corpus's slices and output partitions), so an
//! item's shard depends on its id alone — never on its position or on the other ids.

use xxhash_rust::xxh3::xxh3_64;

use crate::seeded::fmix64;

/// The hash of an id: xxh3 of its bytes.
pub fn id_hash(id: &str) -> u64 {
    xxh3_64(id.as_bytes())
}

/// The shard (of `shards`; 0 is taken as 1) of an item whose id hashes to `id_hash`.
pub fn shard_of_id(id_hash: u64, shards: u32) -> u32 {
    // The high bits, mixed: the low bits of xxh3 are fine too, but this keeps the shard of a
    // row independent of the hash-map bucket it falls into.
    ((u128::from(fmix64(id_hash)) * u128::from(shards.max(1))) >> 64) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_id_has_one_shard_and_the_shards_are_even() {
        let mut counts = [0u32; 4];
        for i in 0..4000 {
            let s = shard_of_id(id_hash(&format!("id_{i}")), 4);
            counts[s as usize] += 1;
        }
        assert!(counts.iter().all(|&c| (800..1200).contains(&c)), "{counts:?}");
        assert_eq!(shard_of_id(id_hash("x"), 1), 0);
        assert_eq!(shard_of_id(id_hash("x"), 0), 0);
    }
}
