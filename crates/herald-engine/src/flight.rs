//! The in-flight set: timers fetched for delivery whose outcome is not yet
//! recorded. The fetcher adds to it, the channel workers and the completer
//! take from it.

use std::collections::HashSet;

use herald_core::TimerId;
use parking_lot::Mutex;
use tokio::sync::Semaphore;

pub(crate) struct Flight {
    /// Timers fetched and not yet recorded: a duplicate wheel entry for one of
    /// these is dropped, and `GET` reports them as `firing`.
    pub ids: Mutex<HashSet<TimerId>>,
    /// Bounds fetched-but-unrecorded deliveries (memory, and what a crash can
    /// send twice).
    pub permits: Semaphore,
    pub max: usize,
}

impl Flight {
    pub fn new(max: usize) -> Self {
        Self {
            ids: Mutex::new(HashSet::new()),
            permits: Semaphore::new(max),
            max,
        }
    }

    pub fn in_flight(&self) -> usize {
        self.max.saturating_sub(self.permits.available_permits())
    }

    /// Lets a merged member in without a permit, if it is not in flight yet
    /// and the set holds fewer than `max` timers: members count against the
    /// same bound as other in-flight work. A member refused here is not lost:
    /// it stays pending and fires on its own.
    pub fn admit_member(&self, id: TimerId) -> bool {
        let mut set = self.ids.lock();
        set.len() < self.max && set.insert(id)
    }

    /// Forgets timers that were let in without a permit (merged members).
    pub fn forget(&self, ids: impl IntoIterator<Item = TimerId>) {
        let mut set = self.ids.lock();
        for id in ids {
            set.remove(&id);
        }
    }

    /// Forgets `ids` and gives their permits back.
    pub fn release(&self, ids: impl IntoIterator<Item = TimerId>) {
        let mut set = self.ids.lock();
        let mut n = 0;
        for id in ids {
            set.remove(&id);
            n += 1;
        }
        drop(set);
        self.permits.add_permits(n);
    }
}
