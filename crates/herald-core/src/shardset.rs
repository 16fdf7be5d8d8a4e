//! The set of shards a node owns: a bitmap over `0..count`.

/// Which of a cluster's `count` shards are in the set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardSet {
    count: u16,
    bits: Vec<u64>,
}

impl ShardSet {
    /// No shard.
    pub fn none(count: u16) -> Self {
        Self {
            count,
            bits: vec![0; usize::from(count).div_ceil(64)],
        }
    }

    /// Every shard: a single node owns them all.
    pub fn all(count: u16) -> Self {
        let mut s = Self::none(count);
        for shard in 0..count {
            s.insert(shard);
        }
        s
    }

    pub fn count(&self) -> u16 {
        self.count
    }

    /// Adds `shard`; shards outside `0..count` are ignored.
    pub fn insert(&mut self, shard: u16) {
        if shard < self.count {
            self.bits[usize::from(shard / 64)] |= 1 << (shard % 64);
        }
    }

    pub fn remove(&mut self, shard: u16) {
        if shard < self.count {
            self.bits[usize::from(shard / 64)] &= !(1 << (shard % 64));
        }
    }

    pub fn contains(&self, shard: u16) -> bool {
        shard < self.count && self.bits[usize::from(shard / 64)] & (1 << (shard % 64)) != 0
    }

    pub fn len(&self) -> usize {
        self.bits.iter().map(|w| w.count_ones() as usize).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn is_all(&self) -> bool {
        self.len() == usize::from(self.count)
    }

    pub fn iter(&self) -> impl Iterator<Item = u16> + '_ {
        (0..self.count).filter(|&s| self.contains(s))
    }

    /// At most `max` inclusive ranges `(first, last)` that cover every shard in
    /// the set, in order: its runs of consecutive shards, with the runs
    /// separated by the smallest gaps joined until `max` remain. A store scans
    /// by them so that it reads little beyond what the node owns (the ranges
    /// may hold shards outside the set when the runs are many); empty for an
    /// empty set or `max == 0`.
    pub fn ranges(&self, max: usize) -> Vec<(u16, u16)> {
        let mut runs: Vec<(u16, u16)> = Vec::new();
        for s in self.iter() {
            match runs.last_mut() {
                Some((_, last)) if *last + 1 == s => *last = s,
                _ => runs.push((s, s)),
            }
        }
        if max == 0 {
            return Vec::new();
        }
        while runs.len() > max {
            // Join the two neighbouring runs with the smallest gap between them.
            let at = (1..runs.len())
                .min_by_key(|&i| runs[i].0 - runs[i - 1].1)
                .unwrap_or(1);
            let (_, last) = runs.remove(at);
            runs[at - 1].1 = last;
        }
        runs
    }

    /// The bitmap as bytes, shard `s` at bit `s % 8` of byte `s / 8`: the form
    /// a store can test inside a query.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out: Vec<u8> = self.bits.iter().flat_map(|w| w.to_le_bytes()).collect();
        out.truncate(usize::from(self.count).div_ceil(8));
        out
    }

    /// Whether `shard` is set in a bitmap made by [`Self::to_bytes`].
    pub fn bytes_contain(bytes: &[u8], shard: i64) -> bool {
        usize::try_from(shard)
            .ok()
            .and_then(|s| bytes.get(s / 8).map(|b| b & (1 << (s % 8)) != 0))
            .unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ranges_are_runs_joined_at_the_smallest_gaps() {
        let mut s = ShardSet::none(256);
        for shard in (0..10)
            .chain(20..30)
            .chain(32..40)
            .chain(100..101)
            .chain(250..256)
        {
            s.insert(shard);
        }
        assert_eq!(
            s.ranges(8),
            vec![(0, 9), (20, 29), (32, 39), (100, 100), (250, 255)]
        );
        // Gaps: 10, 2, 60, 149. The smallest go first.
        assert_eq!(s.ranges(4), vec![(0, 9), (20, 39), (100, 100), (250, 255)]);
        assert_eq!(s.ranges(3), vec![(0, 39), (100, 100), (250, 255)]);
        assert_eq!(s.ranges(1), vec![(0, 255)]);
        assert!(s.ranges(0).is_empty());
        assert!(ShardSet::none(16).ranges(4).is_empty());
        assert_eq!(ShardSet::all(16).ranges(4), vec![(0, 15)]);
    }

    proptest! {
        /// The ranges cover the set, are ordered and disjoint, and are no more
        /// than asked for.
        #[test]
        fn ranges_cover_the_set(shards in proptest::collection::btree_set(0u16..200, 0..120), max in 1usize..6) {
            let mut s = ShardSet::none(200);
            shards.iter().for_each(|&x| s.insert(x));
            let r = s.ranges(max);
            prop_assert!(r.len() <= max);
            prop_assert!(r.windows(2).all(|w| w[0].1 < w[1].0));
            prop_assert!(r.iter().all(|(a, b)| a <= b));
            for x in &shards {
                prop_assert!(r.iter().any(|(a, b)| a <= x && x <= b));
            }
            if shards.len() <= 1 || r.len() == shards.len() {
                let exact: usize = r.iter().map(|(a, b)| usize::from(b - a) + 1).sum();
                prop_assert_eq!(exact, shards.len());
            }
        }
    }

    #[test]
    fn all_none_and_edges() {
        let all = ShardSet::all(256);
        assert!(all.is_all());
        assert_eq!(all.len(), 256);
        assert!(all.contains(255) && !all.contains(256));
        let mut s = ShardSet::none(10);
        assert!(s.is_empty());
        s.insert(3);
        s.insert(99);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![3]);
        s.remove(3);
        assert!(s.is_empty());
    }

    proptest! {
        #[test]
        fn bytes_agree_with_contains(count in 1u16..600, picks in proptest::collection::vec(0u16..600, 0..50)) {
            let mut s = ShardSet::none(count);
            for p in &picks { s.insert(*p); }
            let bytes = s.to_bytes();
            for shard in 0..count + 5 {
                prop_assert_eq!(ShardSet::bytes_contain(&bytes, i64::from(shard)), s.contains(shard));
            }
            prop_assert!(!ShardSet::bytes_contain(&bytes, -1));
        }
    }
}
