//! From due timer to channel: fetch the rows, hand each to its channel's
//! queue, and send under the channel's concurrency and rate limits.
//!
//! Firing writes nothing to the store: the timer stays `pending` until the
//! completer records its outcome, so a crash at any point means it fires again
//! (at least once), with the same idempotency key.

use std::collections::{HashMap, HashSet};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use herald_channels::{Channel, Delivery, QuietPolicy, SendOutcome};
use herald_core::{Clock, Priority, RetryPolicy, TimerId, TimerKind};
use herald_store::{CompletionOutcome, DeferReason, Fence, Store};
use parking_lot::Mutex;
use tokio::sync::{Semaphore, mpsc};

use crate::channel_state::{OutcomeCounts, Pause, Quiet};
use crate::completer::Finished;
use crate::metrics::{ChannelMetrics, Hot};
use crate::ownership::Ownership;
use crate::queue::{DueTimer, Urgency, UrgentQueue};
use crate::reminders;
use crate::{ChannelSpec, Stop};

/// A fetched timer waiting for its channel.
pub(crate) struct Job {
    pub delivery: Delivery,
    pub priority: Priority,
    pub shard: u16,
    /// The lease the timer was fetched under; checked again just before the send.
    pub fence: Fence,
    /// Reminders merged into this delivery besides its own timer: their
    /// outcomes follow it. They hold no in-flight permit.
    pub members: Vec<Member>,
}

/// A timer riding along in another timer's delivery (a merged reminder).
pub(crate) struct Member {
    pub timer_id: TimerId,
    /// Its own attempt number (the store checks it against its own count).
    pub attempt: u32,
}

impl Job {
    /// Every timer this job holds in the flight set, its own first.
    fn release(self, flight: &Flight) {
        flight.release([self.delivery.timer_id]);
        flight.forget(self.members.iter().map(|m| m.timer_id));
    }
}

impl Urgency for Job {
    fn key(&self) -> (Priority, i64, TimerId) {
        (self.priority, self.delivery.due_at, self.delivery.timer_id)
    }
}

/// One configured channel at run time.
pub(crate) struct ChannelRuntime {
    pub channel: Arc<dyn Channel>,
    pub retry: RetryPolicy,
    pub queue: UrgentQueue<Job>,
    pub concurrency: usize,
    pub rate_per_sec: Option<f64>,
    limiter: Option<DefaultDirectRateLimiter>,
    pub metrics: ChannelMetrics,
    pub pause: Pause,
    pub quiet: Option<Quiet>,
    pub counts: OutcomeCounts,
    pub reminder_template: Option<serde_json::Value>,
}

impl ChannelRuntime {
    pub fn new(spec: ChannelSpec) -> Self {
        let limiter = spec.rate_per_sec.and_then(|r| {
            let period = Duration::from_secs_f64(1.0 / r.max(1e-6));
            let burst = NonZeroU32::new((r.ceil() as u32).clamp(1, 1000))?;
            Some(RateLimiter::direct(
                Quota::with_period(period)?.allow_burst(burst),
            ))
        });
        let name = spec.channel.name().to_string();
        Self {
            channel: spec.channel,
            retry: spec.retry,
            queue: UrgentQueue::new(),
            concurrency: spec.concurrency.max(1),
            rate_per_sec: spec.rate_per_sec,
            limiter,
            metrics: ChannelMetrics::new(&name),
            pause: Pause::default(),
            quiet: spec.quiet.map(|(window, policy, label)| Quiet {
                window,
                policy,
                label,
            }),
            counts: OutcomeCounts::default(),
            reminder_template: spec.reminder_template,
        }
    }

    /// Waits until the provider's pause (if any) is over and the channel's
    /// rate limit lets one more send through.
    pub async fn wait_for_rate(&self, clock: &dyn Clock) {
        loop {
            let wait = self.pause.until().saturating_sub(clock.now_ms());
            if wait <= 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(wait as u64)).await;
        }
        if let Some(limiter) = &self.limiter {
            limiter.until_ready().await;
        }
    }

    /// Counts an answer and, for a throttle, pauses the channel. A throttle's
    /// `retry_after_ms` becomes the time left until the pause ends, so that
    /// whoever retries the delivery waits for exactly that.
    pub fn observe(&self, outcome: &mut SendOutcome, n: u64, now: i64) {
        self.counts.add(outcome, n);
        match outcome {
            SendOutcome::Throttled { retry_after_ms, .. } => {
                let until = self.pause.throttled(now, *retry_after_ms);
                tracing::warn!(channel = %self.channel.name(), paused_until = until, "provider throttled the channel; pausing");
                *retry_after_ms = Some(until.saturating_sub(now).max(0) as u64);
            }
            SendOutcome::Delivered { .. } => self.pause.cleared(),
            _ => {}
        }
    }

    /// When the quiet-hours window `now` falls in ends, with its policy.
    pub fn quiet_until(&self, now: i64) -> Option<(i64, QuietPolicy, &str)> {
        let q = self.quiet.as_ref()?;
        let end = q.window.ends_after(now)?;
        Some((end, q.policy, &q.label))
    }
}

/// Shared by the fetcher, the channel loops and the completer.
pub(crate) struct Flight {
    /// Timers fetched and not yet recorded: a duplicate wheel entry for one of
    /// these is dropped, and `GET` reports them as `firing`.
    pub ids: Mutex<HashSet<TimerId>>,
    /// Bounds fetched-but-unrecorded deliveries (memory, and what a crash can
    /// send twice).
    pub permits: Semaphore,
    pub max: usize,
}

impl Flight {
    pub fn new(max: usize) -> Self {
        Self {
            ids: Mutex::new(HashSet::new()),
            permits: Semaphore::new(max),
            max,
        }
    }

    pub fn in_flight(&self) -> usize {
        self.max.saturating_sub(self.permits.available_permits())
    }

    /// Forgets timers that were let in without a permit (merged members).
    pub fn forget(&self, ids: impl IntoIterator<Item = TimerId>) {
        let mut set = self.ids.lock();
        for id in ids {
            set.remove(&id);
        }
    }

    /// Forgets `ids` and gives their permits back.
    pub fn release(&self, ids: impl IntoIterator<Item = TimerId>) {
        let mut set = self.ids.lock();
        let mut n = 0;
        for id in ids {
            set.remove(&id);
            n += 1;
        }
        drop(set);
        self.permits.add_permits(n);
    }
}

/// Takes due timers off the ready queue in urgency order, reads their rows and
/// routes them to channels.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn fetch_loop(
    store: Arc<dyn Store>,
    ready: Arc<UrgentQueue<DueTimer>>,
    channels: Arc<HashMap<String, Arc<ChannelRuntime>>>,
    flight: Arc<Flight>,
    ownership: Arc<Ownership>,
    done_tx: mpsc::UnboundedSender<Finished>,
    clock: Arc<dyn Clock>,
    batch: usize,
    merge_window_ms: i64,
    hot: Hot,
    stop: Arc<Stop>,
) {
    loop {
        tokio::select! {
            _ = ready.wait_non_empty() => {}
            _ = stop.wait() => return,
        }
        let want = ready.len().clamp(1, batch.max(1));
        let permit = tokio::select! {
            p = flight.permits.acquire_many(want as u32) => p,
            _ = stop.wait() => return,
        };
        match permit {
            Ok(p) => p.forget(),
            Err(_) => return,
        }
        let due = ready.pop_many(want);
        hot.ready.set(ready.len() as f64);
        // Duplicates (same timer twice in the wheel, or already in flight) give
        // their permit back at once.
        // So are timers of shards this node no longer owns: their new owner
        // loads them.
        let mut fresh = Vec::with_capacity(due.len());
        ownership.with_owned(|owned| {
            let mut set = flight.ids.lock();
            for t in due {
                if owned.contains(t.shard) && set.insert(t.id) {
                    fresh.push(t);
                }
            }
        });
        let unused = want - fresh.len();
        flight.permits.add_permits(unused);
        if fresh.is_empty() {
            continue;
        }
        let ids: Vec<TimerId> = fresh.iter().map(|t| t.id).collect();
        let rows = match store.fetch_pending(&ids).await {
            Ok(rows) => rows,
            Err(e) => {
                tracing::warn!(error = %e, n = ids.len(), "fetching due timers failed; requeued");
                hot.store_errors.increment(1);
                flight.release(ids);
                ready.push_many(fresh);
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        if stop.is_stopped() {
            flight.release(ids);
            return;
        }
        let mut by_id: HashMap<TimerId, herald_store::TimerRecord> =
            rows.into_iter().map(|r| (r.id, r)).collect();
        let mut stale = Vec::new();
        let mut plain = Vec::with_capacity(fresh.len());
        let mut reminders = Vec::new();
        let mut requeue = Vec::new();
        for t in fresh {
            match by_id.remove(&t.id) {
                // The wheel entry must match the row's current due time: a
                // retried or moved timer has a newer entry that fires it.
                Some(row) if row.due_at == t.due_at => {
                    if row.kind == TimerKind::Reminder {
                        requeue.push(t);
                        reminders.push(row);
                    } else {
                        plain.push(row);
                    }
                }
                _ => stale.push(t.id),
            }
        }
        let mut groups = Vec::new();
        if !reminders.is_empty() {
            let claim = |m: &herald_store::TimerRecord| {
                ownership.owns(m.shard) && flight.ids.lock().insert(m.id)
            };
            let unclaim = |ids: Vec<TimerId>| flight.forget(ids);
            match reminders::plan(store.as_ref(), reminders, merge_window_ms, claim, unclaim).await
            {
                Ok(g) => groups = g,
                Err(e) => {
                    tracing::warn!(error = %e, n = requeue.len(), "planning reminders failed; requeued");
                    hot.store_errors.increment(1);
                    flight.release(requeue.iter().map(|t| t.id));
                    ready.push_many(requeue);
                }
            }
        }
        let now = clock.now_ms();
        let jobs =
            plain
                .into_iter()
                .map(|row| (row, Vec::new(), None))
                .chain(groups.into_iter().map(|g| {
                    let members = g
                        .members
                        .iter()
                        .map(|m| Member {
                            timer_id: m.id,
                            attempt: m.attempts.saturating_add(1),
                        })
                        .collect();
                    (g.primary, members, Some(g.message))
                }));
        for (row, members, message) in jobs {
            let key = row.delivery_key();
            // A reminder goes out in its channel's shape if the channel has a template.
            let message = match (message, channels.get(&row.channel)) {
                (Some(m), Some(rt)) => Some(match &rt.reminder_template {
                    Some(t) => herald_channels::template::render(t, &m),
                    None => m,
                }),
                (m, _) => m,
            };
            let attempt = row.attempts.saturating_add(1);
            let delivery = Delivery {
                timer_id: row.id,
                kind: row.kind,
                due_at: row.due_at,
                fired_at: now,
                attempt,
                recipient: row.recipient,
                message: message.unwrap_or(row.message),
                idempotency_key: key,
            };
            let Some(fence) = ownership.fence(row.shard) else {
                stale.push(row.id);
                flight.forget(members.iter().map(|m: &Member| m.timer_id));
                continue;
            };
            match channels.get(&row.channel) {
                Some(rt) => rt.queue.push(Job {
                    delivery,
                    priority: row.priority,
                    shard: row.shard,
                    fence,
                    members,
                }),
                None => {
                    // Configuration lost the channel: keep the timer, retry
                    // later, and let attempts run out if it never comes back.
                    // Merged members are let go and fire on their own.
                    flight.forget(members.iter().map(|m| m.timer_id));
                    let retry = RetryPolicy::default();
                    let _ = done_tx.send(Finished::from_outcome(
                        &delivery,
                        &row.channel,
                        row.priority,
                        row.shard,
                        Some(fence),
                        SendOutcome::Retryable {
                            error: format!("channel {:?} is not configured", row.channel),
                            status: None,
                            retry_after_ms: None,
                        },
                        &retry,
                        now,
                        now,
                    ));
                }
            }
        }
        if !stale.is_empty() {
            flight.release(stale);
        }
    }
}

/// One of a channel's `concurrency` workers: takes the most urgent job,
/// sends it within the channel's rate limit, and hands the outcome to the
/// completer. Long-lived workers cost nothing per delivery beyond the send
/// itself (no task spawn, no permit).
pub(crate) async fn channel_worker(
    rt: Arc<ChannelRuntime>,
    flight: Arc<Flight>,
    ownership: Arc<Ownership>,
    done_tx: mpsc::UnboundedSender<Finished>,
    clock: Arc<dyn Clock>,
    hot: Hot,
    stop: Arc<Stop>,
) {
    loop {
        tokio::select! {
            _ = rt.queue.wait_non_empty() => {}
            _ = stop.wait() => break,
        }
        if stop.is_stopped() {
            break;
        }
        let Some(job) = rt.queue.pop_many(1).pop() else {
            continue;
        };
        rt.wait_for_rate(clock.as_ref()).await;
        let started = clock.now_ms();
        // The last check before anything leaves: a node that lost the shard
        // (or stalled past its lease) sends nothing for it.
        if !ownership.covers(job.fence, started) {
            hot.fenced.increment(1);
            job.release(&flight);
            continue;
        }
        let mut d = job.delivery;
        d.fired_at = started;
        let f = if let Some((end, policy, label)) = rt.quiet_until(started) {
            rt.counts
                .quiet
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let (outcome, error) = match policy {
                QuietPolicy::Defer => (
                    CompletionOutcome::Deferred {
                        next_due_at: end,
                        reason: DeferReason::QuietHours,
                    },
                    format!("quiet hours ({label}): deferred to their end"),
                ),
                QuietPolicy::Drop => (
                    CompletionOutcome::Failed,
                    format!("dropped: due in quiet hours ({label})"),
                ),
            };
            Finished::new(
                &d,
                rt.channel.name(),
                job.priority,
                job.shard,
                Some(job.fence),
                outcome,
                (None, None, Some(error)),
                started,
                started,
            )
        } else {
            hot.fired.increment(1);
            if d.attempt == 1 {
                hot.lateness
                    .record((started - d.due_at).max(0) as f64 / 1000.0);
            }
            let mut outcome = rt.channel.send(&d).await;
            let finished = clock.now_ms();
            rt.observe(&mut outcome, 1, finished);
            rt.metrics
                .duration
                .record((finished - started).max(0) as f64 / 1000.0);
            Finished::from_outcome(
                &d,
                rt.channel.name(),
                job.priority,
                job.shard,
                Some(job.fence),
                outcome,
                &rt.retry,
                started,
                finished,
            )
        };
        match &f.completion.outcome {
            CompletionOutcome::Done => rt.metrics.delivered.increment(1),
            CompletionOutcome::Retry { .. } => rt.metrics.retry.increment(1),
            CompletionOutcome::Failed => rt.metrics.failed.increment(1),
            CompletionOutcome::Dead => rt.metrics.dead.increment(1),
            CompletionOutcome::Deferred { .. } => rt.metrics.deferred.increment(1),
        }
        if !job.members.is_empty() {
            hot.merged.increment(job.members.len() as u64);
        }
        // Merged members share the delivery's outcome, each under its own
        // attempt number.
        for m in &job.members {
            let _ = done_tx.send(f.for_member(m.timer_id, m.attempt));
        }
        let _ = done_tx.send(f);
    }
    // At shutdown, jobs not yet sent are let go: they stay pending in the
    // store and fire again after the restart.
    for job in rt.queue.pop_many(usize::MAX) {
        job.release(&flight);
    }
}
