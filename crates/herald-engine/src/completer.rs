//! Records outcomes in batches: one transaction writes the send-log rows and
//! the timers' new states for everything that finished meanwhile. Only after
//! that commit is a timer forgotten by the in-flight set.

use std::sync::Arc;
use std::time::Duration;

use herald_channels::{Delivery, SendOutcome};
use herald_core::{Priority, RetryPolicy, TimerId};
use herald_store::{Applied, Completion, CompletionOutcome, DeferReason, Fence, StoreError};
use tokio::sync::mpsc;

use crate::pipeline::Pipeline;
use crate::queue::DueTimer;

/// One attempt at a delivery: what went out, through which channel, under
/// which lease, and when.
pub(crate) struct Attempt<'a> {
    pub delivery: &'a Delivery,
    pub channel: &'a str,
    pub priority: Priority,
    pub shard: u16,
    pub fence: Option<Fence>,
    pub started_at: i64,
    pub finished_at: i64,
}

/// What the send log keeps of an answer besides the outcome.
#[derive(Debug, Default)]
pub(crate) struct Detail {
    pub provider_msgid: Option<String>,
    pub status: Option<i64>,
    pub error: Option<String>,
}

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
    pub fn from_outcome(at: Attempt<'_>, outcome: SendOutcome, retry: &RetryPolicy) -> Self {
        let finished_at = at.finished_at;
        let (outcome, provider_msgid, status, error) = match outcome {
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
                let next =
                    retry.next_delay_with_hint(at.delivery.attempt, rand::random(), retry_after_ms);
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
        let detail = Detail {
            provider_msgid,
            status,
            error,
        };
        Self::decided(at, outcome, detail)
    }

    /// An outcome the engine decided itself (quiet hours), or one already
    /// classified.
    pub fn decided(at: Attempt<'_>, outcome: CompletionOutcome, detail: Detail) -> Self {
        let d = at.delivery;
        Self {
            completion: Completion {
                timer_id: d.timer_id,
                attempt: d.attempt,
                outcome,
                channel: at.channel.to_string(),
                idempotency_key: d.idempotency_key.clone(),
                provider_msgid: detail.provider_msgid,
                status: detail.status,
                error: detail.error,
                started_at: at.started_at,
                finished_at: at.finished_at,
                fence: at.fence,
            },
            priority: at.priority,
            shard: at.shard,
            permit: true,
        }
    }

    /// The same outcome for a reminder merged into this delivery.
    pub fn for_member(&self, timer_id: TimerId, attempt: u32) -> Self {
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

pub(crate) struct Completer {
    pipe: Arc<Pipeline>,
    rx: mpsc::UnboundedReceiver<Finished>,
    /// The batch being recorded.
    batch: Vec<Finished>,
    /// `batch` failed to record: the next pass writes it again as it is.
    retrying: bool,
}

impl Completer {
    pub fn new(pipe: Arc<Pipeline>, rx: mpsc::UnboundedReceiver<Finished>) -> Self {
        Self {
            pipe,
            rx,
            batch: Vec::new(),
            retrying: false,
        }
    }

    /// Records batches until every sender is gone.
    pub async fn run(mut self) {
        let mut backoff = 50u64;
        loop {
            if self.batch.is_empty() {
                match self.rx.recv().await {
                    Some(first) => self.batch.push(first),
                    None => return,
                }
            }
            match self.run_once().await {
                Ok(_) => backoff = 50,
                // Never drop an outcome: retry the write until the store takes
                // it. The in-flight bound stops new work meanwhile.
                Err(e) => {
                    self.pipe.hot.store_errors.increment(1);
                    tracing::error!(error = %e, n = self.batch.len(), "recording outcomes failed; retrying");
                    tokio::time::sleep(Duration::from_millis(backoff)).await;
                    backoff = (backoff * 2).min(5_000);
                }
            }
        }
    }

    /// Records one batch: the one a failed pass left, or else what has
    /// finished meanwhile (up to `complete_batch`). Returns how many outcomes
    /// it recorded; on an error the batch stays for the next pass.
    pub async fn run_once(&mut self) -> Result<usize, StoreError> {
        let p = Arc::clone(&self.pipe);
        if !self.retrying {
            let max = p.cfg.complete_batch.max(1);
            while self.batch.len() < max {
                match self.rx.try_recv() {
                    Ok(f) => self.batch.push(f),
                    Err(_) => break,
                }
            }
            if self.batch.is_empty() {
                return Ok(0);
            }
            p.hot.complete_batch.record(self.batch.len() as f64);
        }
        let completions: Vec<Completion> =
            self.batch.iter().map(|f| f.completion.clone()).collect();
        let applied = match p.store.complete(completions).await {
            Ok(a) => a,
            Err(e) => {
                self.retrying = true;
                return Err(e);
            }
        };
        self.retrying = false;
        let n = self.batch.len();
        settle(&p, &mut self.batch, &applied);
        Ok(n)
    }
}

/// After the commit: counts what took effect, wheels retries, and lets the
/// batch's timers out of the flight set (leaving `batch` empty).
fn settle(p: &Pipeline, batch: &mut Vec<Finished>, applied: &[Applied]) {
    let hot = &p.hot;
    let fenced = applied.iter().filter(|a| **a == Applied::Fenced).count();
    if fenced > 0 {
        tracing::warn!(
            fenced,
            "outcomes not applied: the shard changed hands meanwhile"
        );
        hot.fenced.increment(fenced as u64);
    }
    let mut retries = Vec::new();
    let (mut done, mut failed, mut dead) = (0u64, 0u64, 0u64);
    // Only outcomes that took effect count; a fenced one is the new owner's to
    // deliver, and a stale one was already recorded.
    for (f, a) in batch.iter().zip(applied) {
        if *a != Applied::Yes {
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
    let (own, members): (Vec<Finished>, Vec<Finished>) = batch.drain(..).partition(|f| f.permit);
    p.flight.forget(members.iter().map(|f| f.completion.timer_id));
    p.flight.release(own.iter().map(|f| f.completion.timer_id));
    p.schedule
        .offer(retries.into_iter().filter(|t| p.ownership.owns(t.shard)));
    hot.inflight.set(p.flight.in_flight() as f64);
}
