//! Priority queues between the engine's stages: urgent work goes first, then
//! earliest due, then oldest id.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use herald_core::{Priority, TimerId};
use parking_lot::Mutex;
use tokio::sync::Notify;

/// A due timer, as small as the wheel keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DueTimer {
    pub id: TimerId,
    pub due_at: i64,
    pub shard: u16,
    pub priority: Priority,
}

impl From<herald_store::DueEntry> for DueTimer {
    fn from(e: herald_store::DueEntry) -> Self {
        Self {
            id: e.id,
            due_at: e.due_at,
            shard: e.shard,
            priority: e.priority,
        }
    }
}

/// Anything ordered for dispatch.
pub(crate) trait Urgency {
    fn key(&self) -> (Priority, i64, TimerId);
}

impl Urgency for DueTimer {
    fn key(&self) -> (Priority, i64, TimerId) {
        (self.priority, self.due_at, self.id)
    }
}

struct ByUrgency<T>(T);

impl<T: Urgency> PartialEq for ByUrgency<T> {
    fn eq(&self, other: &Self) -> bool {
        self.0.key() == other.0.key()
    }
}
impl<T: Urgency> Eq for ByUrgency<T> {}
impl<T: Urgency> PartialOrd for ByUrgency<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<T: Urgency> Ord for ByUrgency<T> {
    /// Max-heap order: higher priority, then earlier due, then lower id.
    fn cmp(&self, other: &Self) -> Ordering {
        let (pa, da, ia) = self.0.key();
        let (pb, db, ib) = other.0.key();
        pa.cmp(&pb).then(db.cmp(&da)).then(ib.cmp(&ia))
    }
}

/// A shared priority queue with a wake-up for its consumer.
pub(crate) struct UrgentQueue<T> {
    heap: Mutex<BinaryHeap<ByUrgency<T>>>,
    notify: Notify,
}

impl<T: Urgency> UrgentQueue<T> {
    pub fn new() -> Self {
        Self {
            heap: Mutex::new(BinaryHeap::new()),
            notify: Notify::new(),
        }
    }

    pub fn push_many(&self, items: impl IntoIterator<Item = T>) {
        let mut heap = self.heap.lock();
        let before = heap.len();
        heap.extend(items.into_iter().map(ByUrgency));
        let added = heap.len() > before;
        drop(heap);
        if added {
            self.notify.notify_one();
        }
    }

    pub fn push(&self, item: T) {
        self.heap.lock().push(ByUrgency(item));
        self.notify.notify_one();
    }

    pub fn len(&self) -> usize {
        self.heap.lock().len()
    }

    /// Up to `n` most urgent items.
    pub fn pop_many(&self, n: usize) -> Vec<T> {
        let mut heap = self.heap.lock();
        let take = n.min(heap.len());
        let mut out = Vec::with_capacity(take);
        for _ in 0..take {
            match heap.pop() {
                Some(ByUrgency(t)) => out.push(t),
                None => break,
            }
        }
        out
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

    /// Wakes the consumer without adding anything (used at shutdown).
    pub fn wake(&self) {
        self.notify.notify_waiters();
        self.notify.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(id: i64, due: i64, p: u8) -> DueTimer {
        DueTimer {
            id,
            due_at: due,
            shard: 0,
            priority: p,
        }
    }

    #[test]
    fn urgent_first_then_earliest_then_lowest_id() {
        let q = UrgentQueue::new();
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
}
