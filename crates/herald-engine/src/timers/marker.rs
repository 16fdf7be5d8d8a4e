//! Marks timers `firing` in the store before their send leaves, for
//! channels configured `in_doubt = "skip"` (docs/architecture.md, "The path
//! of a timer").
//!
//! Without the mark a node that dies mid-send leaves its timers pending and
//! they fire again after the restart: at least once, which suits providers
//! that drop a repeated idempotency key. For those that do not (FCM, SMTP) a
//! repeat reaches the user twice, so those channels pay one write before the
//! send instead: a timer left `firing` is one whose send may or may not have
//! left, and whoever takes its shard next ends it `in_doubt` rather than
//! send it again. Channels that resend keep today's path: no mark, no write.
//!
//! The fetcher marks ahead: every delivery of a pass bound for such a
//! channel is marked in one write before it is queued, so senders do not
//! wait on a commit (a clean shutdown puts the ones never sent back to
//! pending). This marker is the fallback for a delivery queued unmarked
//! (the fetcher's write failed): it is group-committed, every sender
//! waiting for one adds it to a shared list, and whichever sender gets the
//! write turn writes the whole list (up to `complete_batch`) in one
//! transaction and answers the others. No task of its own: a turn is taken
//! only while some sender waits.

use herald_store::{Applied, FiringMark, Store};

use crate::loops::group_commit::GroupCommit;

/// What one mark came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Marked {
    /// The store took it (or refused it: fenced, no longer pending).
    Applied(Applied),
    /// The store failed: nothing was written for it.
    Failed,
}

/// Most fetch passes whose marks one write carries.
const PASSES_PER_WRITE: usize = 64;

/// Marks waiting for a write, written as one batch (`group_commit`).
#[derive(Default)]
pub(crate) struct Marker {
    commit: GroupCommit<FiringMark, Applied>,
    /// Fetch passes' marks, one request a pass: passes that come while one
    /// write commits go together in the next.
    ahead: GroupCommit<Vec<FiringMark>, Vec<Applied>>,
}

impl Marker {
    /// Marks one timer firing, in a batch with whatever other senders mark
    /// meanwhile; returns once the batch that holds it committed (or failed).
    pub async fn mark(&self, store: &dyn Store, max_batch: usize, mark: FiringMark) -> Marked {
        let answer = self
            .commit
            .submit(mark, max_batch, |marks: Vec<FiringMark>| async move {
                let n = marks.len();
                match store.mark_firing(marks).await {
                    Ok(applied) => Some(applied),
                    Err(e) => {
                        tracing::warn!(error = %e, n, "marking timers firing failed; their sends wait");
                        None
                    }
                }
            })
            .await;
        answer.map_or(Marked::Failed, Marked::Applied)
    }

    /// Marks a fetch pass's timers firing, in one write with whatever other
    /// passes mark meanwhile; what happened to each, in order, or `None` if
    /// the store failed.
    pub async fn mark_pass(
        &self,
        store: &dyn Store,
        marks: Vec<FiringMark>,
    ) -> Option<Vec<Applied>> {
        self.ahead
            .submit(marks, PASSES_PER_WRITE, |passes: Vec<Vec<FiringMark>>| async move {
                let sizes: Vec<usize> = passes.iter().map(Vec::len).collect();
                let all: Vec<FiringMark> = passes.into_iter().flatten().collect();
                let n = all.len();
                match store.mark_firing(all).await {
                    Ok(applied) if applied.len() == n => {
                        let mut each = applied.into_iter();
                        Some(sizes.iter().map(|&k| each.by_ref().take(k).collect()).collect())
                    }
                    Ok(applied) => {
                        tracing::error!(n, answers = applied.len(), "marking timers firing answered a different number of marks");
                        None
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, n, "marking fetched timers firing failed; their senders mark them");
                        None
                    }
                }
            })
            .await
    }
}
