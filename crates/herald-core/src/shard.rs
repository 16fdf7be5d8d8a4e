//! Virtual shards: `hash(key) mod N`, stable across nodes and releases.

/// The default number of virtual shards a new cluster is created with.
pub const DEFAULT_SHARDS: u16 = 256;

/// The shard of `key` among `shards` shards.
///
/// xxh3 is a published, fixed algorithm, so every node and every version of
/// Herald agrees on the placement of a key.
pub fn shard_for(key: &[u8], shards: u16) -> u16 {
    let shards = u64::from(shards.max(1));
    (xxhash_rust::xxh3::xxh3_64(key) % shards) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_and_in_range() {
        assert_eq!(shard_for(b"user-42", 256), shard_for(b"user-42", 256));
        for i in 0..10_000u32 {
            assert!(shard_for(&i.to_le_bytes(), 256) < 256);
        }
        assert_eq!(shard_for(b"anything", 1), 0);
        assert_eq!(shard_for(b"anything", 0), 0);
    }

    #[test]
    fn spreads_keys_evenly() {
        let mut counts = [0u32; 16];
        for i in 0..16_000u32 {
            counts[shard_for(format!("k{i}").as_bytes(), 16) as usize] += 1;
        }
        // Each shard should get roughly 1000; a broken hash puts most in one.
        assert!(
            counts.iter().all(|&c| (800..1200).contains(&c)),
            "{counts:?}"
        );
    }
}
