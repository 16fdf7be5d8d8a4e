//! The group-commit writer: API writes queue here, and whatever has queued
//! while the previous transaction was committing goes into the next one. Many
//! requests, one transaction, one fsync; each request is answered only after
//! its transaction committed.

use std::sync::Arc;

use herald_store::{WriteOp, WriteResult};
use tokio::sync::{mpsc, oneshot};

use crate::EngineError;
use crate::pipeline::Pipeline;
use crate::queue::DueTimer;

pub(crate) struct WriteRequest {
    pub ops: Vec<WriteOp>,
    pub reply: oneshot::Sender<Result<Vec<WriteResult>, EngineError>>,
}

/// Commits queued writes until every sender is gone.
pub(crate) async fn run(pipe: Arc<Pipeline>, mut rx: mpsc::Receiver<WriteRequest>) {
    let (p, hot) = (&*pipe, &pipe.hot);
    let max_ops = p.cfg.write_batch.max(1);
    while let Some(first) = rx.recv().await {
        let mut reqs = vec![first];
        let mut n = reqs[0].ops.len();
        while n < max_ops {
            match rx.try_recv() {
                Ok(r) => {
                    n += r.ops.len();
                    reqs.push(r);
                }
                Err(_) => break,
            }
        }
        let mut sizes = Vec::with_capacity(reqs.len());
        let mut ops = Vec::with_capacity(n);
        let mut replies = Vec::with_capacity(reqs.len());
        for r in reqs {
            sizes.push(r.ops.len());
            ops.extend(r.ops);
            replies.push(r.reply);
        }
        hot.write_batch.record(ops.len() as f64);
        match p.store.apply(ops).await {
            Ok(results) => {
                let mut created = 0u64;
                let mut cancelled = 0u64;
                let mut due = Vec::new();
                for r in &results {
                    match r {
                        WriteResult::Created(_) => created += 1,
                        WriteResult::Cancelled(_) => cancelled += 1,
                        WriteResult::SubjectDeleted { cancelled: ids, .. }
                        | WriteResult::RemindersCancelled { cancelled: ids, .. } => {
                            cancelled += ids.len() as u64
                        }
                        _ => {}
                    }
                    // Created or moved timers go into the wheel before anyone
                    // hears of them: here if this node owns the shard;
                    // otherwise the owner hears from the store's
                    // notifications, or its loader finds them.
                    due.extend(
                        r.scheduled()
                            .into_iter()
                            .filter(|e| p.ownership.owns(e.shard))
                            .map(DueTimer::from),
                    );
                }
                p.schedule.offer(due);
                hot.created.increment(created);
                hot.cancelled.increment(cancelled);
                let mut results = results.into_iter();
                for (size, reply) in sizes.into_iter().zip(replies) {
                    let part: Vec<WriteResult> = results.by_ref().take(size).collect();
                    let _ = reply.send(Ok(part));
                }
            }
            Err(e) => {
                tracing::error!(error = %e, ops = n, "group commit failed; nothing written");
                hot.store_errors.increment(1);
                let err = EngineError::Store(Arc::new(e));
                for reply in replies {
                    let _ = reply.send(Err(err.clone()));
                }
            }
        }
    }
}
