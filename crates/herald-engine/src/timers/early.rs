//! Early starts for bursts of reminders (issue 39 §4; the pure plan is
//! `herald_core::early`).
//!
//! Every `early_plan_interval_ms` the planner asks the store how many
//! reminders are pending per (subject, bit, channel, due time) among the
//! batches due within the longest early window (plus two intervals), and
//! plans each channel at its configured `rate_per_sec`. The count comes
//! from the shared store and the rate is cluster-wide (each node sends its
//! share, see `ChannelRuntime::share_rate`), so every node makes the same
//! plan; each starts the timers of the shards it owns. A batch's plan is
//! fixed once it started: later passes only count what is left.
//!
//! Starting a batch means paging its pending timers (`Store::batch_due`, in
//! id order) straight into the ready queue with their real due time, while
//! the queue holds less than [`READY_ROOM`]: the fetcher, the channel's rate
//! and the workers then send them in due order, as they would at the due
//! time. The loader still wheels the same timers when their due time comes
//! near; by then most are done, and the fetcher drops the copies of those
//! in flight or no longer pending. A batch stops being fed at its due time.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use herald_core::early::{self, Batch};
use herald_store::{BatchScope, ReminderBatch};

use crate::timers::pipeline::Pipeline;
use crate::timers::queue::DueTimer;

/// Most timers the feeder lets wait in the ready queue: a few seconds of any
/// channel's rate, so an early batch never crowds out what is due meanwhile.
const READY_ROOM: usize = 20_000;

/// How often the feeder tops the ready queue up while a batch is started.
const FEED_EVERY: Duration = Duration::from_millis(100);

pub use super::early_plans::EarlyPlan;
use super::early_plans::{Entry, Key};

/// Plans counted batches: each channel at its rate (`rates`), each batch
/// with its subject's early window or `default_window_ms`.
pub(crate) fn plan(
    batches: &[ReminderBatch],
    rates: impl Fn(&str) -> Option<f64>,
    default_window_ms: i64,
) -> Vec<EarlyPlan> {
    let mut by_channel: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, b) in batches.iter().enumerate() {
        by_channel.entry(b.channel.as_str()).or_default().push(i);
    }
    let window = |b: &ReminderBatch| b.early_window_ms.unwrap_or(default_window_ms);
    let mut out: Vec<Option<EarlyPlan>> = vec![None; batches.len()];
    for (channel, members) in by_channel {
        let input: Vec<Batch> = members
            .iter()
            .map(|&i| Batch {
                due_at: batches[i].due_at,
                count: batches[i].count,
                early_window_ms: window(&batches[i]),
            })
            .collect();
        let planned = early::plan_channel(rates(channel), &input);
        for (&i, p) in members.iter().zip(planned) {
            let b = &batches[i];
            out[i] = Some(EarlyPlan {
                tenant: b.tenant,
                subject_id: b.subject_id.clone(),
                bit: b.bit,
                channel: b.channel.clone(),
                due_at: b.due_at,
                count: b.count,
                early_window_ms: window(b).clamp(0, early::MAX_EARLY_WINDOW_MS),
                start_at: p.start_at,
                done_by: p.done_by,
                fits: p.fits,
            });
        }
    }
    out.into_iter().flatten().collect()
}

/// The configured rate of a channel of `pipe` (cluster-wide).
pub(crate) fn rate_of(pipe: &Pipeline, channel: &str) -> Option<f64> {
    pipe.channels
        .get(channel)
        .and_then(|rt| rt.settings().rate_per_sec)
}

pub(crate) struct Planner {
    pipe: Arc<Pipeline>,
    /// When the store was last counted.
    counted_at: Option<i64>,
}

impl Planner {
    pub fn new(pipe: Arc<Pipeline>) -> Self {
        Self {
            pipe,
            counted_at: None,
        }
    }

    pub async fn run(mut self) {
        loop {
            self.run_once().await;
            tokio::select! {
                _ = tokio::time::sleep(FEED_EVERY) => {}
                _ = self.pipe.stop.wait() => return,
            }
        }
    }

    /// Counts and plans when an interval passed, then feeds started batches.
    pub async fn run_once(&mut self) {
        let p = &*self.pipe;
        let cfg = p.cfg.get();
        let now = p.clock.now_ms();
        let interval = i64::try_from(cfg.early_plan_interval_ms).unwrap_or(i64::MAX);
        if cfg.early_plan_interval_ms > 0
            && self
                .counted_at
                .is_none_or(|at| now.saturating_sub(at) >= interval || now < at)
        {
            self.counted_at = Some(now);
            self.replan(now, interval).await;
        }
        self.feed(now).await;
    }

    async fn replan(&self, now: i64, interval: i64) {
        let p = &*self.pipe;
        let cfg = p.cfg.get();
        // Subjects' own windows may be longer than the configured one.
        let horizon = early::MAX_EARLY_WINDOW_MS.saturating_add(interval.saturating_mul(2));
        let scope = BatchScope::Due {
            starts_from: now,
            starts_until: now
                .saturating_add(horizon)
                .saturating_add(cfg.max_lead_ms.max(0))
                .saturating_add(1),
            due_from: now,
            due_until: now.saturating_add(horizon),
        };
        let batches = match p.store.reminder_batches(&scope).await {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!(error = %e, "counting reminder batches failed; keeping the last plan");
                return;
            }
        };
        let planned = plan(&batches, |c| rate_of(p, c), cfg.early_window_ms);
        let mut by_key = p.early.by_key.lock();
        let mut fresh = BTreeMap::new();
        for plan in planned {
            let key: Key = (
                plan.tenant,
                plan.subject_id.clone(),
                plan.bit,
                plan.channel.clone(),
                plan.due_at,
            );
            let entry = match by_key.remove(&key) {
                // Started: its start stays, its count follows the store.
                Some(mut e) if e.plan.start_at <= now => {
                    e.plan.count = plan.count;
                    e
                }
                _ => {
                    if plan.start_at < plan.due_at {
                        tracing::info!(
                            subject_id = %plan.subject_id, channel = %plan.channel,
                            count = plan.count, due_at = plan.due_at, start_at = plan.start_at,
                            fits = plan.fits, "reminders planned to start early"
                        );
                    }
                    Entry {
                        plan,
                        cursor: None,
                        exhausted: false,
                    }
                }
            };
            fresh.insert(key, entry);
        }
        // Batches no longer counted (sent, moved, cancelled) are dropped.
        *by_key = fresh;
    }

    /// Pages the timers of started batches into the ready queue, up to
    /// [`READY_ROOM`] waiting.
    async fn feed(&self, now: i64) {
        let p = &*self.pipe;
        let page = p.cfg.get().load_batch.clamp(1, READY_ROOM);
        loop {
            if p.ready.len() >= READY_ROOM || p.stop.is_stopped() {
                return;
            }
            // The earliest-due started batch with timers left.
            let next = {
                let by_key = p.early.by_key.lock();
                by_key
                    .iter()
                    .filter(|(_, e)| {
                        !e.exhausted && e.plan.start_at < e.plan.due_at && e.plan.start_at <= now
                    })
                    .filter(|(_, e)| now < e.plan.due_at)
                    .min_by_key(|(_, e)| e.plan.due_at)
                    .map(|(k, e)| (k.clone(), e.cursor))
            };
            let Some((key, cursor)) = next else {
                return;
            };
            let (tenant, subject_id, bit, _, due_at) = &key;
            let got = p
                .store
                .batch_due(*tenant, subject_id, *bit, *due_at, cursor, page)
                .await;
            let entries = match got {
                Ok(e) => e,
                Err(e) => {
                    tracing::warn!(error = %e, subject_id = %subject_id, "reading an early batch failed; will retry");
                    return;
                }
            };
            let last = entries.last().map(|e| e.id);
            let short = entries.len() < page;
            let mine: Vec<DueTimer> = p.ownership.with_owned(|owned| {
                entries
                    .into_iter()
                    .filter(|e| owned.contains(e.shard))
                    .map(DueTimer::from)
                    .collect()
            });
            let n = mine.len();
            p.ready.push_many(mine);
            let mut by_key = p.early.by_key.lock();
            // Several batches share a bit's timers on different channels:
            // every entry of the same (subject, bit, due) moves on together.
            for (k, e) in by_key.iter_mut() {
                if (k.0, &k.1, k.2, k.4) == (*tenant, subject_id, *bit, *due_at) {
                    if last.is_some() {
                        e.cursor = last;
                    }
                    e.exhausted |= short;
                }
            }
            drop(by_key);
            if n > 0 {
                tracing::debug!(subject_id = %subject_id, n, "early reminders queued");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(subject: &str, channel: &str, due_at: i64, count: u64) -> ReminderBatch {
        ReminderBatch {
            tenant: herald_core::DEFAULT_TENANT,
            subject_id: subject.into(),
            start_at: due_at + 60_000,
            early_window_ms: None,
            bit: 0,
            channel: channel.into(),
            due_at,
            count,
        }
    }

    #[test]
    fn each_channel_is_planned_at_its_rate_with_the_subjects_windows() {
        let due = 1_000_000;
        let mut own = batch("b", "slow", due, 1_000);
        own.early_window_ms = Some(5_000);
        let batches = [
            batch("a", "slow", due, 1_000),
            own,
            batch("c", "fast", due, 1_000),
            batch("d", "none", due, 1_000_000),
        ];
        let rates = |c: &str| match c {
            "slow" => Some(100.0),
            "fast" => Some(1_000_000.0),
            _ => None,
        };
        let plans = plan(&batches, rates, 300_000);
        assert_eq!(plans.len(), 4);
        // 2,000 at 100/s share 20 s: the default window holds it, the
        // subject's own 5 s does not.
        assert_eq!(plans[0].start_at, due - 20_000 - early::slack_ms(20_000));
        assert!(plans[0].fits);
        assert_eq!(
            (plans[1].start_at, plans[1].early_window_ms),
            (due - 5_000, 5_000)
        );
        assert!(!plans[1].fits);
        assert_eq!(
            plans[2].start_at, due,
            "a fast channel needs no early start"
        );
        assert_eq!(plans[3].start_at, due, "nor does one without a rate");
    }
}
