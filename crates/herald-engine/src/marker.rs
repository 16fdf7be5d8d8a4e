//! Marks timers `firing` in the store just before their send leaves, for
//! channels configured `in_doubt = "skip"` (issue 19).
//!
//! Without the mark a node that dies mid-send leaves its timers pending and
//! they fire again after the restart: at least once, which suits providers
//! that drop a repeated idempotency key. For those that do not (FCM, SMTP) a
//! repeat reaches the user twice, so those channels pay one write before the
//! send instead: a timer left `firing` is one whose send may or may not have
//! left, and whoever takes its shard next ends it `in_doubt` rather than
//! send it again. Channels that resend keep today's path: no mark, no write.
//!
//! The marks are group-committed: every sender waiting for one adds it to a
//! shared list, and whichever sender gets the write turn writes the whole
//! list (up to `complete_batch`) in one transaction and answers the others,
//! so the cost is one store call per batch, not per timer, however many
//! sender loops the channels run. No task of its own: a turn is taken only
//! while some sender waits.

use herald_store::{Applied, FiringMark, Store};
use tokio::sync::oneshot;

/// What one mark came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Marked {
    /// The store took it (or refused it: fenced, no longer pending).
    Applied(Applied),
    /// The store failed: nothing was written for it.
    Failed,
}

type Waiting = (FiringMark, oneshot::Sender<Marked>);

#[derive(Default)]
pub(crate) struct Marker {
    /// Marks waiting for a write, oldest first.
    waiting: parking_lot::Mutex<Vec<Waiting>>,
    /// The write turn: one batch in the store at a time, and the marks that
    /// arrive meanwhile make the next batch.
    turn: tokio::sync::Mutex<()>,
}

impl Marker {
    /// Marks one timer firing, in a batch with whatever other senders mark
    /// meanwhile; returns once the batch that holds it committed (or failed).
    pub async fn mark(&self, store: &dyn Store, max_batch: usize, mark: FiringMark) -> Marked {
        let (tx, mut rx) = oneshot::channel();
        self.waiting.lock().push((mark, tx));
        loop {
            let _turn = self.turn.lock().await;
            match rx.try_recv() {
                Ok(m) => return m,
                // A writer dropped mid-batch (its task was cancelled): the
                // outcome is unknown, so it counts as a failure; the timer
                // is not sent.
                Err(oneshot::error::TryRecvError::Closed) => return Marked::Failed,
                Err(oneshot::error::TryRecvError::Empty) => {}
            }
            let batch: Vec<Waiting> = {
                let mut w = self.waiting.lock();
                let n = w.len().min(max_batch.max(1));
                w.drain(..n).collect()
            };
            if batch.is_empty() {
                continue;
            }
            let marks: Vec<FiringMark> = batch.iter().map(|(m, _)| *m).collect();
            let n = marks.len();
            match store.mark_firing(marks).await {
                Ok(applied) if applied.len() == n => {
                    for ((_, tx), a) in batch.into_iter().zip(applied) {
                        let _ = tx.send(Marked::Applied(a));
                    }
                }
                Ok(applied) => {
                    tracing::error!(
                        n,
                        answers = applied.len(),
                        "marking timers firing: the store answered a different number of marks"
                    );
                    for (_, tx) in batch {
                        let _ = tx.send(Marked::Failed);
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, n, "marking timers firing failed; their sends wait");
                    for (_, tx) in batch {
                        let _ = tx.send(Marked::Failed);
                    }
                }
            }
        }
    }
}
