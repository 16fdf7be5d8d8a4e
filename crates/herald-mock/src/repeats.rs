//! Which device tokens a push mock has delivered to, so a test or a bench
//! can tell "every device reached once" from "as many messages as devices"
//! (one device twice and another never add up the same).

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use xxhash_rust::xxh3::xxh3_64;

/// Shards, so concurrent sends rarely wait on one lock.
const SHARDS: usize = 16;

/// Device tokens seen (as hashes) and deliveries to a token already seen.
pub(crate) struct Repeats {
    shards: Box<[Mutex<HashSet<u64>>]>,
    repeated: AtomicU64,
}

impl Default for Repeats {
    fn default() -> Self {
        Repeats {
            shards: (0..SHARDS).map(|_| Mutex::new(HashSet::new())).collect(),
            repeated: AtomicU64::new(0),
        }
    }
}

impl Repeats {
    /// Records a delivery to `token`.
    pub(crate) fn record(&self, token: &str) {
        let h = xxh3_64(token.as_bytes());
        if !self.shards[(h % SHARDS as u64) as usize].lock().insert(h) {
            self.repeated.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Deliveries to a device that had already had one.
    pub(crate) fn repeated(&self) -> u64 {
        self.repeated.load(Ordering::Relaxed)
    }

    /// Distinct devices delivered to.
    pub(crate) fn devices(&self) -> u64 {
        self.shards.iter().map(|s| s.lock().len() as u64).sum()
    }

    pub(crate) fn clear(&self) {
        for s in self.shards.iter() {
            s.lock().clear();
        }
        self.repeated.store(0, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_delivery_to_a_device_is_a_repeat() {
        let r = Repeats::default();
        for t in ["a", "b", "a", "c", "a"] {
            r.record(t);
        }
        assert_eq!((r.devices(), r.repeated()), (3, 2));
        r.clear();
        assert_eq!((r.devices(), r.repeated()), (0, 0));
    }
}
