//! Which shards this node fires, under which lease.
//!
//! Read on every fetch and every send, written by the membership task: a set
//! behind a read-write lock, and per shard the epoch and expiry of the lease,
//! in atomics so the hot path takes no lock for them.

use std::sync::atomic::{AtomicI64, Ordering};

use herald_core::ShardSet;
use herald_store::{Fence, ShardLease};
use parking_lot::RwLock;

pub(crate) struct Ownership {
    owned: RwLock<ShardSet>,
    epoch: Vec<AtomicI64>,
    lease_until: Vec<AtomicI64>,
    /// A lease this close to expiry no longer covers a send: another node may
    /// take the shard the moment it expires, and clocks differ a little.
    guard_ms: i64,
}

impl Ownership {
    pub fn new(shards: u16, guard_ms: i64) -> Self {
        Self {
            owned: RwLock::new(ShardSet::none(shards)),
            epoch: (0..shards).map(|_| AtomicI64::new(0)).collect(),
            lease_until: (0..shards).map(|_| AtomicI64::new(0)).collect(),
            guard_ms,
        }
    }

    pub fn owned(&self) -> ShardSet {
        self.owned.read().clone()
    }

    pub fn owns(&self, shard: u16) -> bool {
        self.owned.read().contains(shard)
    }

    /// Runs `f` with the owned set, without cloning it.
    pub fn with_owned<R>(&self, f: impl FnOnce(&ShardSet) -> R) -> R {
        f(&self.owned.read())
    }

    /// The fencing token for a send from `shard`, if this node owns it.
    pub fn fence(&self, shard: u16) -> Option<Fence> {
        if !self.owns(shard) {
            return None;
        }
        let epoch = self.epoch.get(usize::from(shard))?.load(Ordering::Acquire);
        Some(Fence { shard, epoch })
    }

    /// Whether a send under `fence` may go out at `now`: the shard is still
    /// owned under that epoch and its lease runs for at least the guard time.
    pub fn covers(&self, fence: Fence, now: i64) -> bool {
        let i = usize::from(fence.shard);
        let (Some(epoch), Some(until)) = (self.epoch.get(i), self.lease_until.get(i)) else {
            return false;
        };
        self.owns(fence.shard)
            && epoch.load(Ordering::Acquire) == fence.epoch
            && until.load(Ordering::Acquire) > now.saturating_add(self.guard_ms)
    }

    /// Records leases this node holds (new or renewed) and owns their shards.
    pub fn hold(&self, leases: &[ShardLease]) {
        let mut owned = self.owned.write();
        for l in leases {
            let i = usize::from(l.shard);
            if let (Some(e), Some(u)) = (self.epoch.get(i), self.lease_until.get(i)) {
                e.store(l.epoch, Ordering::Release);
                u.store(l.lease_until, Ordering::Release);
                owned.insert(l.shard);
            }
        }
    }

    /// Stops owning `shards`.
    pub fn drop_shards(&self, shards: impl IntoIterator<Item = u16>) {
        let mut owned = self.owned.write();
        for s in shards {
            owned.remove(s);
            if let Some(u) = self.lease_until.get(usize::from(s)) {
                u.store(0, Ordering::Release);
            }
        }
    }

    /// Fences for every owned shard, for renewal.
    pub fn held(&self) -> Vec<Fence> {
        let owned = self.owned.read();
        owned
            .iter()
            .filter_map(|s| {
                let e = self.epoch.get(usize::from(s))?;
                Some(Fence {
                    shard: s,
                    epoch: e.load(Ordering::Acquire),
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(shard: u16, epoch: i64, until: i64) -> ShardLease {
        ShardLease {
            shard,
            owner: Some("n".into()),
            lease_until: until,
            epoch,
            incarnation: 1,
        }
    }

    #[test]
    fn covers_only_the_current_epoch_within_the_lease() {
        let o = Ownership::new(8, 100);
        assert!(o.fence(3).is_none());
        o.hold(&[lease(3, 7, 1_000)]);
        let f = o.fence(3).unwrap();
        assert_eq!(f, Fence { shard: 3, epoch: 7 });
        assert!(o.covers(f, 500));
        assert!(!o.covers(f, 950), "inside the guard time");
        assert!(!o.covers(Fence { shard: 3, epoch: 6 }, 500), "stale epoch");
        o.hold(&[lease(3, 8, 2_000)]);
        assert!(!o.covers(f, 500), "the shard changed epoch");
        o.drop_shards([3]);
        assert!(!o.owns(3));
        assert!(!o.covers(Fence { shard: 3, epoch: 8 }, 500));
        assert!(o.held().is_empty());
        assert!(!o.covers(
            Fence {
                shard: 99,
                epoch: 1
            },
            0
        ));
    }
}
