//! Who takes the channel's next rate slot: the waiting send of the highest
//! priority, then the one that came first. Timers, reminders and campaign
//! groups all wait here, so a priority-9 reminder does not queue behind a
//! priority-1 campaign that happened to ask first (issue 39 §5).
//!
//! One waiter at a time holds the gate while it waits for the rate limiter;
//! leaving hands the gate straight to the most urgent waiter. A waiter that
//! is dropped (a shutdown's `select!`) gives the gate on if it had just been
//! handed it, so the gate is never lost.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::future::Future;

use herald_core::Priority;
use parking_lot::Mutex;
use tokio::sync::oneshot;

/// The priority gate in front of one channel's rate limiter.
#[derive(Default)]
pub(crate) struct PriorityGate {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    held: bool,
    arrivals: u64,
    waiting: BinaryHeap<Waiter>,
}

struct Waiter {
    priority: Priority,
    arrival: u64,
    wake: oneshot::Sender<()>,
}

impl Waiter {
    /// Higher priority first, then earlier arrival.
    fn rank(&self) -> (Priority, std::cmp::Reverse<u64>) {
        (self.priority, std::cmp::Reverse(self.arrival))
    }
}

impl PartialEq for Waiter {
    fn eq(&self, other: &Self) -> bool {
        self.rank() == other.rank()
    }
}
impl Eq for Waiter {}
impl PartialOrd for Waiter {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Waiter {
    fn cmp(&self, other: &Self) -> Ordering {
        self.rank().cmp(&other.rank())
    }
}

/// Holding the gate; dropping it hands the gate on.
struct Held<'a>(&'a PriorityGate);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.leave();
    }
}

/// Waiting in line; dropped before it was handed the gate it leaves the line,
/// dropped just after, it hands the gate on.
struct InLine<'a> {
    gate: &'a PriorityGate,
    wake: Option<oneshot::Receiver<()>>,
}

impl Drop for InLine<'_> {
    fn drop(&mut self) {
        if let Some(mut rx) = self.wake.take() {
            rx.close();
            if rx.try_recv().is_ok() {
                self.gate.leave();
            }
        }
    }
}

impl PriorityGate {
    /// Runs `f` (the wait for a rate slot) holding the gate, after every
    /// more urgent waiter has had its turn.
    pub async fn pass<F: Future>(&self, priority: Priority, f: F) -> F::Output {
        let _held = self.enter(priority).await;
        f.await
    }

    async fn enter(&self, priority: Priority) -> Held<'_> {
        loop {
            let rx = {
                let mut s = self.state.lock();
                if !s.held {
                    s.held = true;
                    return Held(self);
                }
                let (wake, rx) = oneshot::channel();
                s.arrivals += 1;
                let arrival = s.arrivals;
                s.waiting.push(Waiter {
                    priority,
                    arrival,
                    wake,
                });
                rx
            };
            let mut line = InLine {
                gate: self,
                wake: Some(rx),
            };
            let handed = match line.wake.as_mut() {
                Some(rx) => rx.await.is_ok(),
                None => false,
            };
            // Handed the gate (or its sender gone, which only a dropped gate
            // does): either way nothing is left for the guard to give back.
            line.wake = None;
            if handed {
                return Held(self);
            }
        }
    }

    /// Hands the gate to the most urgent waiter still waiting, or opens it.
    fn leave(&self) {
        let mut s = self.state.lock();
        while let Some(w) = s.waiting.pop() {
            if w.wake.send(()).is_ok() {
                return;
            }
        }
        s.held = false;
    }

    /// Sends waiting for the gate now (the tests wait on it).
    #[cfg(test)]
    fn waiting(&self) -> usize {
        self.state.lock().waiting.len()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use tokio::sync::Notify;

    use super::*;

    /// Holds the gate until `release` is notified, so others queue up.
    async fn hold(gate: Arc<PriorityGate>, release: Arc<Notify>) {
        gate.pass(0, release.notified()).await;
    }

    async fn until_waiting(gate: &PriorityGate, n: usize) {
        while gate.waiting() < n {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    #[tokio::test]
    async fn the_most_urgent_waiter_goes_next_then_the_earliest() {
        let gate = Arc::new(PriorityGate::default());
        let release = Arc::new(Notify::new());
        let first = tokio::spawn(hold(gate.clone(), release.clone()));
        tokio::task::yield_now().await;
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for (i, p) in [(0u8, 1u8), (1, 9), (2, 5), (3, 9), (4, 1)] {
            let (g, order) = (gate.clone(), order.clone());
            tasks.push(tokio::spawn(async move {
                g.pass(p, async { order.lock().push(i) }).await;
            }));
            until_waiting(&gate, usize::from(i) + 1).await;
        }
        release.notify_one();
        first.await.ok();
        for t in tasks {
            t.await.ok();
        }
        assert_eq!(*order.lock(), vec![1, 3, 2, 0, 4]);
    }

    #[tokio::test]
    async fn a_dropped_waiter_neither_blocks_nor_loses_the_gate() {
        let gate = Arc::new(PriorityGate::default());
        let release = Arc::new(Notify::new());
        let first = tokio::spawn(hold(gate.clone(), release.clone()));
        tokio::task::yield_now().await;
        // A waiter abandoned in line (a shutdown's select! dropping it).
        let g = gate.clone();
        let abandoned = tokio::spawn(async move { g.pass(9, async {}).await });
        until_waiting(&gate, 1).await;
        abandoned.abort();
        abandoned.await.ok();
        let g = gate.clone();
        let later = tokio::spawn(async move { g.pass(1, async { 7 }).await });
        until_waiting(&gate, 2).await;
        release.notify_one();
        first.await.ok();
        assert_eq!(later.await.ok(), Some(7));
        // And the gate is open again.
        assert_eq!(gate.pass(5, async { 1 }).await, 1);
        assert!(!gate.state.lock().held);
    }
}
