//! Records outcomes in batches: one transaction writes the send-log rows and
//! the timers' new states for everything that finished meanwhile. Only after
//! that commit is a timer forgotten by the in-flight set.

use std::sync::Arc;
use std::time::Duration;

use herald_channels::{Delivery, SendOutcome};
use herald_core::{Priority, RetryPolicy, TenantId, TimerId};
use herald_store::{Applied, Completion, CompletionOutcome, DeferReason, Fence, StoreError};
use tokio::sync::mpsc;

use crate::observe::live::{LiveEntry, LiveOutcome};
use herald_core::timer::Routing;

use crate::timers::fallback;
use crate::timers::flight::Hand;
use crate::timers::pipeline::Pipeline;
use crate::timers::queue::DueTimer;

/// One attempt at a delivery: what went out, through which channel, under
/// which lease, and when.
pub(crate) struct Attempt<'a> {
    pub delivery: &'a Delivery,
    pub channel: &'a str,
    pub tenant: TenantId,
    pub priority: Priority,
    pub shard: u16,
    pub fence: Option<Fence>,
    pub started_at: i64,
    pub finished_at: i64,
    /// The timer's `attempt_base`: attempts before its current series (a
    /// retried timer's earlier ones), which the retry policy does not count.
    pub series_base: u32,
    /// The timer's routing when it has a fallback route: the outcome may
    /// move it on to the next step.
    pub route: Option<&'a Routing>,
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
    pub tenant: TenantId,
    pub priority: Priority,
    pub shard: u16,
    /// The attempt was this timer's own, not one it rode along in (a merged
    /// member's): what the live window counts.
    pub own_attempt: bool,
    /// Counts the delivery as in hand until the outcome is recorded.
    pub hand: Option<Hand>,
    /// Start of a first attempt minus the due time, for the live window.
    pub lateness_ms: Option<i64>,
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
                let in_series = at.delivery.attempt.saturating_sub(at.series_base);
                let next = retry.next_delay_with_hint(in_series, rand::random(), retry_after_ms);
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
        let mut completion = Completion {
            timer_id: d.timer_id,
            tenant: at.tenant,
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
            step: None,
            next: None,
        };
        if let Some(r) = at.route {
            fallback::advance(&mut completion, r);
        }
        Self {
            completion,
            tenant: at.tenant,
            priority: at.priority,
            shard: at.shard,
            own_attempt: true,
            hand: None,
            lateness_ms: None,
        }
    }

    /// The same outcome for a reminder merged into this delivery.
    pub fn for_member(&self, timer_id: TimerId, attempt: u32) -> Self {
        let mut completion = self.completion.clone();
        completion.timer_id = timer_id;
        completion.attempt = attempt;
        // A timer with a route is never merged; its steps are its own.
        completion.step = None;
        completion.next = None;
        Self {
            completion,
            tenant: self.tenant,
            priority: self.priority,
            shard: self.shard,
            own_attempt: false,
            hand: None,
            lateness_ms: None,
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
            let max = p.cfg.get().complete_batch.max(1);
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
        p.fenced(fenced as u64);
    }
    let mut retries = Vec::new();
    let mut steps = Vec::new();
    let (mut done, mut failed, mut dead) = (0u64, 0u64, 0u64);
    // Only outcomes that took effect count; a fenced one is the new owner's to
    // deliver, and a stale one was already recorded.
    for (f, a) in batch.iter().zip(applied) {
        if *a != Applied::Yes {
            continue;
        }
        // A step of a fallback route that goes on: due again on its next step.
        if let Some(n) = &f.completion.next {
            steps.push(DueTimer {
                id: f.completion.timer_id,
                due_at: n.due_at,
                shard: f.shard,
                priority: f.priority,
                tenant: f.tenant,
            });
            continue;
        }
        match f.completion.outcome {
            CompletionOutcome::Done | CompletionOutcome::Read => done += 1,
            CompletionOutcome::Failed | CompletionOutcome::Unsendable(_) => failed += 1,
            CompletionOutcome::Dead => dead += 1,
            // Never a sender's outcome: the store's resolution writes it.
            CompletionOutcome::InDoubt => {}
            CompletionOutcome::Retry { next_due_at }
            | CompletionOutcome::Deferred { next_due_at, .. } => retries.push(DueTimer {
                id: f.completion.timer_id,
                due_at: next_due_at,
                shard: f.shard,
                priority: f.priority,
                tenant: f.tenant,
            }),
        }
    }
    hot.done.increment(done);
    hot.failed.increment(failed);
    hot.dead.increment(dead);
    hot.retried.increment(retries.len() as u64);
    // Every attempt that was made counts in the live window, as in the
    // deliveries metric; merged members rode along in another's attempt.
    p.live.record(
        p.clock.now_ms(),
        batch.iter().filter(|f| f.own_attempt).map(|f| LiveEntry {
            tenant: f.tenant,
            channel: &f.completion.channel,
            outcome: live_outcome(&f.completion.outcome),
            lateness_ms: f.lateness_ms,
        }),
    );
    // Out of the flight set with their permits, then out of hand: a
    // shutdown watching both never sees a permit that nothing holds.
    p.flight
        .release(batch.iter().map(|f| f.completion.timer_id));
    batch.clear();
    p.schedule.offer(
        retries
            .into_iter()
            .chain(steps)
            .filter(|t| p.ownership.owns(t.shard)),
    );
    hot.inflight.set(p.flight.in_flight() as f64);
}

/// The live window's name for an outcome (the deliveries metric's label).
fn live_outcome(o: &CompletionOutcome) -> LiveOutcome {
    match o {
        CompletionOutcome::Done | CompletionOutcome::Read => LiveOutcome::Delivered,
        CompletionOutcome::Retry { .. } => LiveOutcome::Retry,
        CompletionOutcome::Failed
        | CompletionOutcome::Unsendable(_)
        | CompletionOutcome::InDoubt => LiveOutcome::Failed,
        CompletionOutcome::Dead => LiveOutcome::Dead,
        CompletionOutcome::Deferred { .. } => LiveOutcome::Deferred,
    }
}

#[cfg(test)]
mod tests {
    use herald_core::TimerState;

    use super::*;
    use crate::config::EngineConfig;
    use crate::testkit::{CHANNEL, Rig, T0};

    /// What a channel worker hands on after `outcome`, for a timer the
    /// fetcher let into the flight set.
    async fn finished(rig: &Rig, id: TimerId, outcome: SendOutcome) -> Finished {
        let row = rig.timer(id).await;
        let p = &rig.pipe;
        assert!(p.flight.room(1).expect("room").claim(id));
        let delivery = Delivery {
            timer_id: row.id,
            kind: row.kind,
            due_at: row.due_at,
            fired_at: T0,
            attempt: row.attempts + 1,
            idempotency_key: row.delivery_key(),
            recipient: row.recipient,
            message: row.message,
            traceparent: None,
        };
        let attempt = Attempt {
            delivery: &delivery,
            channel: CHANNEL,
            tenant: herald_core::DEFAULT_TENANT,
            priority: row.priority,
            shard: row.shard,
            fence: p.ownership.fence(row.shard),
            started_at: T0,
            finished_at: T0 + 10,
            series_base: row.attempt_base,
            route: None,
        };
        Finished::from_outcome(attempt, outcome, &RetryPolicy::default())
    }

    fn delivered() -> SendOutcome {
        SendOutcome::Delivered {
            provider_msgid: Some("m1".into()),
            status: Some(200),
        }
    }

    /// A retried timer's policy counts from its new series: the ninth
    /// attempt overall is the first of the series after eight.
    #[test]
    fn the_retry_policy_counts_the_current_series_only() {
        let delivery = Delivery {
            timer_id: 1,
            kind: herald_core::TimerKind::Timer,
            due_at: T0,
            fired_at: T0,
            attempt: 9,
            recipient: "r".into(),
            message: "{}".into(),
            idempotency_key: "k".into(),
            traceparent: None,
        };
        let failed = || SendOutcome::Retryable {
            error: "HTTP 503".into(),
            status: Some(503),
            retry_after_ms: None,
        };
        let outcome = |series_base| {
            let at = Attempt {
                delivery: &delivery,
                channel: CHANNEL,
                tenant: herald_core::DEFAULT_TENANT,
                priority: 5,
                shard: 0,
                fence: None,
                started_at: T0,
                finished_at: T0 + 10,
                series_base,
                route: None,
            };
            Finished::from_outcome(at, failed(), &RetryPolicy::default())
                .completion
                .outcome
        };
        assert_eq!(outcome(0), CompletionOutcome::Dead);
        assert!(matches!(outcome(8), CompletionOutcome::Retry { .. }));
    }

    #[tokio::test]
    async fn records_a_batch_and_lets_its_timers_go() {
        let rig = Rig::new(EngineConfig::default()).await;
        let ids = rig.insert(&[T0, T0, T0]).await;
        let (tx, rx) = mpsc::unbounded_channel();
        let mut c = Completer::new(rig.pipe.clone(), rx);
        assert_eq!(c.run_once().await.unwrap(), 0, "nothing finished yet");
        for &id in &ids {
            let _ = tx.send(finished(&rig, id, delivered()).await);
        }
        assert_eq!(rig.pipe.flight.in_flight(), 3);
        assert_eq!(c.run_once().await.unwrap(), 3);
        let live = rig.pipe.live.view(T0 + 1_000, None);
        assert_eq!(live.series.last().map(|s| s.deliveries), Some(3));
        assert_eq!(live.channels[0].outcomes[0], ("delivered", 3));
        assert_eq!(rig.pipe.flight.in_flight(), 0);
        assert_eq!(rig.pipe.flight.len(), 0);
        for &id in &ids {
            assert_eq!(rig.state(id).await, TimerState::Done);
        }
        let log = rig.pipe.store.deliveries_for(ids[0]).await.unwrap();
        assert_eq!(log.len(), 1);
        assert_eq!(log[0].outcome, "delivered");
        assert_eq!((log[0].started_at, log[0].finished_at), (T0, T0 + 10));
    }

    #[tokio::test]
    async fn takes_at_most_a_batch_per_pass() {
        let rig = Rig::new(EngineConfig {
            complete_batch: 2,
            ..Default::default()
        })
        .await;
        let ids = rig.insert(&[T0; 3]).await;
        let (tx, rx) = mpsc::unbounded_channel();
        for &id in &ids {
            let _ = tx.send(finished(&rig, id, delivered()).await);
        }
        let mut c = Completer::new(rig.pipe.clone(), rx);
        assert_eq!(c.run_once().await.unwrap(), 2);
        assert_eq!(c.run_once().await.unwrap(), 1);
        assert_eq!(c.run_once().await.unwrap(), 0);
    }

    #[tokio::test]
    async fn a_retry_goes_back_into_the_wheel() {
        let rig = Rig::new(EngineConfig::default()).await;
        rig.pipe.schedule.raise_horizon(T0 + 60_000);
        let id = rig.insert(&[T0]).await[0];
        let (tx, rx) = mpsc::unbounded_channel();
        let retry = SendOutcome::Retryable {
            error: "busy".into(),
            status: Some(503),
            retry_after_ms: Some(2_000),
        };
        let _ = tx.send(finished(&rig, id, retry).await);
        let mut c = Completer::new(rig.pipe.clone(), rx);
        assert_eq!(c.run_once().await.unwrap(), 1);
        let row = rig.timer(id).await;
        assert_eq!((row.state, row.attempts), (TimerState::Pending, 1));
        assert!(row.due_at >= T0 + 10 + 2_000, "due again after the hint");
        assert_eq!(rig.pipe.schedule.len(), 1, "wheeled again");
        assert_eq!(rig.pipe.flight.in_flight(), 0);
    }

    #[tokio::test]
    async fn an_outcome_from_a_lost_shard_is_fenced_off() {
        let rig = Rig::new(EngineConfig::default()).await;
        let id = rig.insert(&[T0]).await[0];
        let (tx, rx) = mpsc::unbounded_channel();
        let f = finished(&rig, id, delivered()).await;
        // Another node took the shard meanwhile: a new epoch.
        let shard = f.shard;
        rig.pipe
            .store
            .release_shards(&crate::testkit::holder(), &[shard])
            .await
            .unwrap();
        rig.pipe
            .store
            .acquire_shards(
                &herald_store::Holder::new("node-2", 1),
                &[shard],
                T0,
                60_000,
            )
            .await
            .unwrap();
        let _ = tx.send(f);
        let mut c = Completer::new(rig.pipe.clone(), rx);
        assert_eq!(c.run_once().await.unwrap(), 1);
        assert_eq!(
            rig.state(id).await,
            TimerState::Pending,
            "the new owner's to deliver"
        );
        assert_eq!(rig.pipe.flight.in_flight(), 0);
    }
}
