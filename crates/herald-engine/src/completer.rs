//! Records outcomes in batches: one transaction writes the send-log rows and
//! the timers' new states for everything that finished meanwhile. Only after
//! that commit is a timer forgotten by the in-flight set.

use std::sync::Arc;
use std::time::Duration;

use herald_channels::{Delivery, SendOutcome};
use herald_core::{Priority, RetryPolicy};
use herald_store::{Completion, CompletionOutcome, DeferReason, Fence, Store};
use tokio::sync::mpsc;

use crate::dispatch::Flight;
use crate::metrics::Hot;
use crate::ownership::Ownership;
use crate::queue::DueTimer;
use crate::schedule::Schedule;

/// A finished attempt on its way to the store.
pub(crate) struct Finished {
    pub completion: Completion,
    pub priority: Priority,
    pub shard: u16,
    /// Whether the timer holds an in-flight permit (merged members do not).
    pub permit: bool,
}

impl Finished {
    /// Turns a channel's answer into what the timer becomes.
    #[allow(clippy::too_many_arguments)]
    pub fn from_outcome(
        d: &Delivery,
        channel: &str,
        priority: Priority,
        shard: u16,
        fence: Option<Fence>,
        outcome: SendOutcome,
        retry: &RetryPolicy,
        started_at: i64,
        finished_at: i64,
    ) -> Self {
        let (outcome, msgid, status, error) = match outcome {
            SendOutcome::Delivered {
                provider_msgid,
                status,
            } => (CompletionOutcome::Done, provider_msgid, status, None),
            SendOutcome::Permanent { error, status } => {
                (CompletionOutcome::Failed, None, status, Some(error))
            }
            SendOutcome::Retryable {
                error,
                status,
                retry_after_ms,
            } => {
                let next = retry.next_delay_with_hint(d.attempt, rand::random(), retry_after_ms);
                let outcome = match next {
                    Some(ms) => CompletionOutcome::Retry {
                        next_due_at: finished_at
                            .saturating_add(i64::try_from(ms).unwrap_or(i64::MAX)),
                    },
                    None => CompletionOutcome::Dead,
                };
                (outcome, None, status, Some(error))
            }
            // Throttling is the provider's state, not the delivery's fault: it
            // goes again once the pause is over, without using an attempt.
            SendOutcome::Throttled {
                error,
                status,
                retry_after_ms,
            } => {
                let wait =
                    i64::try_from(retry_after_ms.unwrap_or(retry.base_ms)).unwrap_or(i64::MAX);
                (
                    CompletionOutcome::Deferred {
                        next_due_at: finished_at.saturating_add(wait),
                        reason: DeferReason::Throttled,
                    },
                    None,
                    status,
                    Some(error),
                )
            }
        };
        Self::new(
            d,
            channel,
            priority,
            shard,
            fence,
            outcome,
            (msgid, status, error),
            started_at,
            finished_at,
        )
    }

    /// An outcome the engine decided itself (quiet hours), or one already
    /// classified. `detail` is (provider msgid, status, error).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        d: &Delivery,
        channel: &str,
        priority: Priority,
        shard: u16,
        fence: Option<Fence>,
        outcome: CompletionOutcome,
        detail: (Option<String>, Option<i64>, Option<String>),
        started_at: i64,
        finished_at: i64,
    ) -> Self {
        let (msgid, status, error) = detail;
        Self {
            completion: Completion {
                timer_id: d.timer_id,
                attempt: d.attempt,
                outcome,
                channel: channel.to_string(),
                idempotency_key: d.idempotency_key.clone(),
                provider_msgid: msgid,
                status,
                error,
                started_at,
                finished_at,
                fence,
            },
            priority,
            shard,
            permit: true,
        }
    }

    /// The same outcome for a reminder merged into this delivery.
    pub fn for_member(&self, timer_id: herald_core::TimerId, attempt: u32) -> Self {
        let mut completion = self.completion.clone();
        completion.timer_id = timer_id;
        completion.attempt = attempt;
        Self {
            completion,
            priority: self.priority,
            shard: self.shard,
            permit: false,
        }
    }
}

pub(crate) async fn run(
    store: Arc<dyn Store>,
    schedule: Arc<Schedule>,
    flight: Arc<Flight>,
    ownership: Arc<Ownership>,
    mut rx: mpsc::UnboundedReceiver<Finished>,
    max_batch: usize,
    hot: Hot,
) {
    let mut batch: Vec<Finished> = Vec::new();
    while let Some(first) = rx.recv().await {
        batch.push(first);
        while batch.len() < max_batch {
            match rx.try_recv() {
                Ok(f) => batch.push(f),
                Err(_) => break,
            }
        }
        hot.complete_batch.record(batch.len() as f64);
        let completions: Vec<Completion> = batch.iter().map(|f| f.completion.clone()).collect();
        // Never drop an outcome: retry the write until the store takes it. The
        // in-flight bound stops new work meanwhile.
        let mut backoff = 50u64;
        let applied = loop {
            match store.complete(completions.clone()).await {
                Ok(a) => break a,
                Err(e) => {
                    hot.store_errors.increment(1);
                    tracing::error!(error = %e, n = completions.len(), "recording outcomes failed; retrying");
                    tokio::time::sleep(Duration::from_millis(backoff)).await;
                    backoff = (backoff * 2).min(5_000);
                }
            }
        };
        let fenced = applied
            .iter()
            .filter(|a| **a == herald_store::Applied::Fenced)
            .count();
        if fenced > 0 {
            tracing::warn!(
                fenced,
                "outcomes not applied: the shard changed hands meanwhile"
            );
            hot.fenced.increment(fenced as u64);
        }
        let mut retries = Vec::new();
        let (mut done, mut failed, mut dead) = (0u64, 0u64, 0u64);
        // Only outcomes that took effect count; a fenced one is the new
        // owner's to deliver, and a stale one was already recorded.
        for (f, a) in batch.iter().zip(&applied) {
            if *a != herald_store::Applied::Yes {
                continue;
            }
            match f.completion.outcome {
                CompletionOutcome::Done => done += 1,
                CompletionOutcome::Failed => failed += 1,
                CompletionOutcome::Dead => dead += 1,
                CompletionOutcome::Retry { next_due_at }
                | CompletionOutcome::Deferred { next_due_at, .. } => retries.push(DueTimer {
                    id: f.completion.timer_id,
                    due_at: next_due_at,
                    shard: f.shard,
                    priority: f.priority,
                }),
            }
        }
        hot.done.increment(done);
        hot.failed.increment(failed);
        hot.dead.increment(dead);
        hot.retried.increment(retries.len() as u64);
        let (own, members): (Vec<Finished>, Vec<Finished>) =
            batch.drain(..).partition(|f| f.permit);
        flight.forget(members.iter().map(|f| f.completion.timer_id));
        flight.release(own.iter().map(|f| f.completion.timer_id));
        schedule.offer(retries.into_iter().filter(|t| ownership.owns(t.shard)));
        hot.inflight.set(flight.in_flight() as f64);
    }
}
