//! Queues between the engine's stages: fair between tenants (see `fair.rs`),
//! and inside a tenant urgent work first, then earliest due, then oldest id.

use std::collections::HashMap;

use herald_core::{Priority, TenantId, TimerId};
use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::timers::fair::{FairHeap, Urgency};

/// A due timer, as small as the wheel keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DueTimer {
    pub id: TimerId,
    pub due_at: i64,
    pub shard: u16,
    pub priority: Priority,
    pub tenant: TenantId,
}

impl From<herald_store::DueEntry> for DueTimer {
    fn from(e: herald_store::DueEntry) -> Self {
        Self {
            id: e.id,
            due_at: e.due_at,
            shard: e.shard,
            priority: e.priority,
            tenant: e.tenant,
        }
    }
}

impl Urgency for DueTimer {
    fn key(&self) -> (Priority, i64, TimerId) {
        (self.priority, self.due_at, self.id)
    }
    fn tenant(&self) -> TenantId {
        self.tenant
    }
}

/// A shared fair queue with a wake-up for its consumers.
pub(crate) struct FairQueue<T> {
    heap: Mutex<FairHeap<T>>,
    notify: Notify,
}

impl<T: Urgency> FairQueue<T> {
    /// A queue sharing turns between tenants by `weights` (a tenant not
    /// listed weighs 1).
    pub fn new(weights: HashMap<TenantId, u32>) -> Self {
        Self {
            heap: Mutex::new(FairHeap::new(weights)),
            notify: Notify::new(),
        }
    }

    pub fn push_many(&self, items: impl IntoIterator<Item = T>) {
        let mut heap = self.heap.lock();
        let before = heap.len();
        for item in items {
            heap.push(item);
        }
        let added = heap.len() > before;
        drop(heap);
        if added {
            self.notify.notify_one();
        }
    }

    pub fn push(&self, item: T) {
        self.heap.lock().push(item);
        self.notify.notify_one();
    }

    pub fn len(&self) -> usize {
        self.heap.lock().len()
    }

    /// How many items one tenant has queued.
    pub fn tenant_len(&self, tenant: TenantId) -> usize {
        self.heap.lock().tenant_len(tenant)
    }

    /// Up to `n` items in fair order.
    pub fn pop_many(&self, n: usize) -> Vec<T> {
        self.pop_many_where(n, |_| true)
    }

    /// Up to `n` items in fair order, passing over tenants `eligible`
    /// refuses (they keep their place). `eligible` is asked once per item
    /// taken, for that item's tenant, so it can count a budget down.
    pub fn pop_many_where(&self, n: usize, mut eligible: impl FnMut(TenantId) -> bool) -> Vec<T> {
        let mut heap = self.heap.lock();
        let mut out = Vec::with_capacity(n.min(heap.len()));
        while out.len() < n {
            match heap.pop_where(&mut eligible) {
                Some(t) => out.push(t),
                None => break,
            }
        }
        out
    }

    /// The next item in fair order whose tenant `eligible` accepts.
    pub fn pop_where(&self, eligible: impl FnMut(TenantId) -> bool) -> Option<T> {
        self.heap.lock().pop_where(eligible)
    }

    /// The least of `f` over the tenants with queued items.
    pub fn min_over_tenants<R: Ord>(&self, f: impl FnMut(TenantId) -> R) -> Option<R> {
        self.heap.lock().tenants().map(f).min()
    }

    /// Waits until the queue is not empty (or a wake-up is sent).
    pub async fn wait_non_empty(&self) {
        loop {
            let notified = self.notify.notified();
            if !self.heap.lock().is_empty() {
                return;
            }
            notified.await;
            if !self.heap.lock().is_empty() {
                return;
            }
        }
    }

    /// Completes at the next push (or wake-up); one sent while nobody
    /// waited completes it at once.
    pub async fn pushed(&self) {
        self.notify.notified().await;
    }

    /// Wakes the consumer without adding anything (used at shutdown).
    pub fn wake(&self) {
        self.notify.notify_waiters();
        self.notify.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use herald_core::DEFAULT_TENANT;

    use super::*;

    fn t(id: i64, due: i64, p: u8) -> DueTimer {
        DueTimer {
            id,
            due_at: due,
            shard: 0,
            priority: p,
            tenant: DEFAULT_TENANT,
        }
    }

    #[test]
    fn urgent_first_then_earliest_then_lowest_id() {
        let q = FairQueue::new(HashMap::new());
        q.push_many([
            t(1, 100, 5),
            t(2, 50, 5),
            t(3, 200, 9),
            t(4, 50, 5),
            t(5, 10, 0),
        ]);
        let order: Vec<i64> = q.pop_many(10).into_iter().map(|x| x.id).collect();
        assert_eq!(order, vec![3, 2, 4, 1, 5]);
        assert_eq!(q.len(), 0);
    }

    #[test]
    fn a_budget_caps_what_one_tenant_takes() {
        let q = FairQueue::new(HashMap::new());
        let other = TenantId(2);
        q.push_many((1..=5).map(|id| t(id, 0, 5)));
        q.push_many((6..=10).map(|id| DueTimer {
            tenant: other,
            ..t(id, 0, 5)
        }));
        let mut budget = 2;
        let got = q.pop_many_where(10, |tenant| {
            if tenant != other {
                return true;
            }
            budget -= 1;
            budget >= 0
        });
        let ids: Vec<i64> = got.iter().map(|x| x.id).collect();
        assert_eq!(ids, [1, 6, 2, 7, 3, 4, 5]);
        assert_eq!(q.tenant_len(other), 3);
        assert_eq!(q.min_over_tenants(|t| t.0), Some(2));
    }
}
