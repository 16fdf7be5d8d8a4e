//! The group-commit writer: API writes queue here, and whatever has queued
//! while the previous transaction was committing goes into the next one. Many
//! requests, one transaction, one fsync; each request is answered only after
//! its transaction committed.
//!
//! One bad write never fails its neighbours: when a batch fails with an error
//! that belongs to one operation (a refusal, a conflict, a corrupt row), the
//! batch is halved and each half tried again, until the failing operations
//! stand alone ([`isolate`]). A store that cannot answer at all (unavailable,
//! full) fails what is left of the batch: there is nothing to isolate.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::Arc;

use herald_store::{StoreError, WriteOp, WriteResult};
use tokio::sync::{mpsc, oneshot};

use crate::error::EngineError;
use crate::timers::pipeline::Pipeline;
use crate::timers::queue::DueTimer;

/// How a request's ops commit, and how it hears of them.
pub(crate) enum Reply {
    /// All together or none: one op's failure is the whole request's.
    Whole(oneshot::Sender<Result<Vec<WriteResult>, EngineError>>),
    /// Each op on its own (the lines of a bulk request): one op's failure is
    /// that op's alone, and the others still commit.
    Each(oneshot::Sender<Vec<Result<WriteResult, EngineError>>>),
}

pub(crate) struct WriteRequest {
    pub ops: Vec<WriteOp>,
    pub reply: Reply,
}

/// What one unit (a whole request, or one op of an `Each` request) came to.
type Outcome = Result<Vec<WriteResult>, Arc<StoreError>>;

/// Commits queued writes until every sender is gone.
pub(crate) async fn run(pipe: Arc<Pipeline>, mut rx: mpsc::Receiver<WriteRequest>) {
    let (p, hot) = (&*pipe, &pipe.hot);
    while let Some(first) = rx.recv().await {
        let max_ops = p.cfg.get().write_batch.max(1);
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
        hot.write_batch.record(n as f64);
        // Units in order, and for each request how many units it has.
        let mut units: Vec<Vec<WriteOp>> = Vec::with_capacity(reqs.len());
        let mut replies = Vec::with_capacity(reqs.len());
        for r in reqs {
            match r.reply {
                Reply::Whole(tx) => {
                    units.push(r.ops);
                    replies.push((Reply::Whole(tx), 1));
                }
                Reply::Each(tx) => {
                    let k = r.ops.len();
                    units.extend(r.ops.into_iter().map(|op| vec![op]));
                    replies.push((Reply::Each(tx), k));
                }
            }
        }
        let outcomes = isolate(|ops| p.store.apply(ops), units).await;
        let failed = outcomes.iter().filter(|o| o.is_err()).count();
        if failed > 0 {
            hot.store_errors.increment(1);
        }
        account(p, &outcomes);
        let mut outcomes = outcomes.into_iter();
        for (reply, k) in replies {
            match reply {
                Reply::Whole(tx) => {
                    let o = outcomes.next().unwrap_or_else(|| Err(missing()));
                    let _ = tx.send(o.map_err(EngineError::Store));
                }
                Reply::Each(tx) => {
                    let each = outcomes
                        .by_ref()
                        .take(k)
                        .map(|o| match o {
                            Ok(mut v) => v.pop().ok_or_else(|| EngineError::Store(missing())),
                            Err(e) => Err(EngineError::Store(e)),
                        })
                        .collect();
                    let _ = tx.send(each);
                }
            }
        }
    }
}

/// A result the store did not give (a bug in a backend).
fn missing() -> Arc<StoreError> {
    Arc::new(StoreError::Internal(
        "the store returned fewer results than ops".into(),
    ))
}

/// Counts what committed and offers what it scheduled to the wheel.
fn account(p: &Pipeline, outcomes: &[Outcome]) {
    let mut created = 0u64;
    let mut cancelled = 0u64;
    let mut due = Vec::new();
    for r in outcomes.iter().filter_map(|o| o.as_ref().ok()).flatten() {
        match r {
            WriteResult::Created(_) | WriteResult::DigestCreated { .. } => created += 1,
            WriteResult::Cancelled(_) => cancelled += 1,
            WriteResult::SubjectDeleted { cancelled: ids, .. }
            | WriteResult::RemindersCancelled { cancelled: ids, .. } => {
                cancelled += ids.len() as u64
            }
            _ => {}
        }
        // Created or moved timers go into the wheel before anyone hears of
        // them: here if this node owns the shard; otherwise the owner hears
        // from the store's notifications, or its loader finds them.
        due.extend(
            r.scheduled()
                .into_iter()
                .filter(|e| p.ownership.owns(e.shard))
                .map(DueTimer::from),
        );
    }
    p.schedule.offer(due);
    p.hot.created.increment(created);
    p.hot.cancelled.increment(cancelled);
}

/// Whether `e` belongs to one operation of a batch (so the others can still
/// commit without it) rather than to the store as a whole.
fn per_operation(e: &StoreError) -> bool {
    matches!(
        e,
        StoreError::Refused { .. }
            | StoreError::Conflict { .. }
            | StoreError::NotFound { .. }
            | StoreError::Corrupt(_)
    )
}

/// Applies `units` in order, each all-or-nothing, and returns what each came
/// to. Everything goes in one transaction when it can; a per-operation
/// failure splits the failing range in halves, tried left then right (so the
/// order of writes is kept), until the failing units are alone. One bad unit
/// among `n` costs about `2·log2(n)` extra transactions. A failure of the
/// store itself answers every unit not yet committed.
///
/// `apply` is the store's: one transaction, all of its ops or none.
pub(crate) async fn isolate<F, Fut>(mut apply: F, units: Vec<Vec<WriteOp>>) -> Vec<Outcome>
where
    F: FnMut(Vec<WriteOp>) -> Fut,
    Fut: Future<Output = Result<Vec<WriteResult>, StoreError>>,
{
    let n = units.len();
    let sizes: Vec<usize> = units.iter().map(Vec::len).collect();
    let mut units: Vec<Option<Vec<WriteOp>>> = units.into_iter().map(Some).collect();
    let mut out: Vec<Option<Outcome>> = (0..n).map(|_| None).collect();
    let mut todo: VecDeque<Range<usize>> = VecDeque::new();
    todo.push_back(0..n);
    while let Some(range) = todo.pop_front() {
        if range.is_empty() {
            continue;
        }
        // A unit alone is never retried: its ops can move. A range that may
        // be split again keeps its ops for the next try.
        let ops: Vec<WriteOp> = if range.len() == 1 {
            units[range.start].take().unwrap_or_default()
        } else {
            range
                .clone()
                .filter_map(|i| units[i].as_ref())
                .flatten()
                .cloned()
                .collect()
        };
        match apply(ops).await {
            Ok(results) => {
                let mut results = results.into_iter();
                for i in range {
                    out[i] = Some(Ok(results.by_ref().take(sizes[i]).collect()));
                    units[i] = None;
                }
            }
            Err(e) if range.len() > 1 && per_operation(&e) => {
                tracing::debug!(error = %e, units = range.len(), "write batch failed; splitting it");
                let mid = range.start + range.len() / 2;
                todo.push_front(mid..range.end);
                todo.push_front(range.start..mid);
            }
            Err(e) if per_operation(&e) => {
                tracing::warn!(error = %e, ops = sizes[range.start], "write refused; the rest of its batch commits");
                out[range.start] = Some(Err(Arc::new(e)));
            }
            Err(e) => {
                let left: usize = todo.iter().map(|r| r.len()).sum::<usize>() + range.len();
                tracing::error!(error = %e, units = left, "group commit failed; nothing of it written");
                let e = Arc::new(e);
                for i in range.chain(todo.drain(..).flatten()) {
                    out[i] = Some(Err(e.clone()));
                }
            }
        }
    }
    out.into_iter()
        .map(|o| o.unwrap_or_else(|| Err(missing())))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use herald_core::{TenantId, TimerKind};
    use herald_store::{NewTimer, Store, StoreOptions};

    use super::*;

    /// An in-memory SQLite store whose `apply` fails a whole batch when it
    /// holds a timer for the `bad` recipient, as PostgreSQL fails a
    /// transaction on one bad row.
    struct OneBadRow {
        inner: Arc<dyn Store>,
        bad: &'static str,
        error: fn() -> StoreError,
        applies: AtomicUsize,
    }

    impl OneBadRow {
        async fn apply(&self, ops: Vec<WriteOp>) -> Result<Vec<WriteResult>, StoreError> {
            self.applies.fetch_add(1, Ordering::Relaxed);
            let poisoned = ops
                .iter()
                .any(|op| matches!(op, WriteOp::InsertTimer(t) if t.recipient == self.bad));
            if poisoned {
                return Err((self.error)());
            }
            self.inner.apply(ops).await
        }

        async fn isolate(&self, units: Vec<Vec<WriteOp>>) -> Vec<Outcome> {
            isolate(|ops| self.apply(ops), units).await
        }
    }

    fn timer(recipient: String) -> WriteOp {
        WriteOp::InsertTimer(NewTimer {
            tenant: TenantId(1),
            shard: 0,
            due_at: 1_000,
            priority: 5,
            kind: TimerKind::Timer,
            channel: "log".into(),
            recipient,
            message: "{}".into(),
            idempotency_key: None,
            created_at: 0,
            traceparent: None,
            routing: None,
        })
    }

    async fn store(bad: &'static str, error: fn() -> StoreError) -> OneBadRow {
        let inner = herald_store::open("sqlite::memory:", &StoreOptions::default())
            .await
            .expect("an in-memory store");
        inner.init_shards(1).await.expect("shards");
        OneBadRow {
            inner,
            bad,
            error,
            applies: AtomicUsize::new(0),
        }
    }

    fn refused() -> StoreError {
        StoreError::refused(
            "recipient",
            "invalid byte sequence for encoding \"UTF8\": 0x00",
        )
    }

    #[tokio::test]
    async fn one_bad_row_among_a_thousand_fails_alone() {
        let s = store("r-617", refused).await;
        let units = (0..1000).map(|i| vec![timer(format!("r-{i}"))]).collect();
        let outcomes = s.isolate(units).await;
        assert_eq!(outcomes.len(), 1000);
        for (i, o) in outcomes.iter().enumerate() {
            match o {
                Ok(r) if i != 617 => assert!(matches!(r[..], [WriteResult::Created(_)])),
                Err(e) if i == 617 => assert!(matches!(**e, StoreError::Refused { .. })),
                other => panic!("unit {i}: {other:?}"),
            }
        }
        let stored: u64 = s
            .inner
            .count_by_tenant_state()
            .await
            .expect("count")
            .iter()
            .map(|(_, _, n)| n)
            .sum();
        assert_eq!(stored, 999);
        // The whole batch, then two halves per level down to the bad row.
        let applies = s.applies.load(Ordering::Relaxed);
        assert!(applies <= 1 + 2 * 10, "{applies} transactions");
    }

    #[tokio::test]
    async fn a_failing_store_fails_every_unit_without_splitting() {
        let s = store("r-3", || StoreError::unavailable("connection lost")).await;
        let units = (0..8).map(|i| vec![timer(format!("r-{i}"))]).collect();
        let outcomes = s.isolate(units).await;
        assert!(outcomes.iter().all(|o| {
            o.as_ref()
                .is_err_and(|e| matches!(**e, StoreError::Unavailable { .. }))
        }));
        assert_eq!(s.applies.load(Ordering::Relaxed), 1);
    }

    #[tokio::test]
    async fn a_unit_of_several_ops_commits_or_fails_whole() {
        let s = store("bad", refused).await;
        let units = vec![
            vec![timer("a".into()), timer("bad".into()), timer("b".into())],
            vec![timer("c".into()), timer("d".into())],
        ];
        let outcomes = s.isolate(units).await;
        assert!(outcomes[0].is_err());
        assert_eq!(outcomes[1].as_ref().map(Vec::len).ok(), Some(2));
    }
}
