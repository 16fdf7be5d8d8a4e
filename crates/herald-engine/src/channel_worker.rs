//! A channel worker: one of a channel's `concurrency` loops. It takes the next
//! job in fair order (passing over tenants at their delivery rate), sends it
//! within the channel's rate limit, and hands the outcome to the completer.
//! Long-lived workers cost nothing per delivery beyond the send itself (no
//! task spawn, no permit).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use herald_channels::QuietPolicy;
use herald_store::{CompletionOutcome, DeferReason};
use tokio::sync::mpsc;

use crate::channel_runtime::{ChannelRuntime, Job};
use crate::completer::{Attempt, Detail, Finished};
use crate::pipeline::Pipeline;

/// What one turn of a worker did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Turn {
    /// It sent (or settled) one job.
    Sent,
    /// The queue was empty.
    Empty,
    /// Every queued job belongs to a tenant at its rate; one may go in this
    /// many milliseconds.
    Held { wait_ms: u64 },
}

/// Longest a worker holds off before looking again when every queued job is
/// over its tenant's rate (a new job wakes it sooner).
const MAX_HELD_MS: u64 = 100;

pub(crate) struct ChannelWorker {
    pipe: Arc<Pipeline>,
    rt: Arc<ChannelRuntime>,
    done: mpsc::UnboundedSender<Finished>,
}

impl ChannelWorker {
    pub fn new(
        pipe: Arc<Pipeline>,
        rt: Arc<ChannelRuntime>,
        done: mpsc::UnboundedSender<Finished>,
    ) -> Self {
        Self { pipe, rt, done }
    }

    pub async fn run(self) {
        let stop = &self.pipe.stop;
        loop {
            tokio::select! {
                _ = self.rt.queue.wait_non_empty() => {}
                _ = stop.wait() => break,
            }
            if stop.is_stopped() {
                break;
            }
            if let Turn::Held { wait_ms } = self.run_once().await {
                let wait = Duration::from_millis(wait_ms.clamp(1, MAX_HELD_MS));
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = self.rt.queue.pushed() => {}
                    _ = stop.wait() => {}
                }
            }
        }
        // At shutdown, jobs not yet sent are let go: they stay pending in the
        // store and fire again after the restart.
        for job in self.rt.queue.pop_many(usize::MAX) {
            job.release(&self.pipe.flight);
        }
    }

    /// Sends the next queued job whose tenant is within its rate, if any,
    /// once the channel's pause and rate limit let it.
    pub async fn run_once(&self) -> Turn {
        let (p, queue) = (&*self.pipe, &self.rt.queue);
        let now = p.clock.now_ms();
        // An operator's pause leaves the jobs queued, unsent and unattempted.
        let paused_for = self.rt.operator.until().saturating_sub(now);
        if paused_for > 0 {
            return Turn::Held {
                wait_ms: u64::try_from(paused_for).unwrap_or(u64::MAX),
            };
        }
        let rates = &p.tenant_rates;
        let Some(job) = queue.pop_where(|tenant| rates.try_take(tenant, now)) else {
            return match queue.min_over_tenants(|tenant| rates.wait_ms(tenant, now)) {
                Some(wait_ms) => Turn::Held { wait_ms },
                None => Turn::Empty,
            };
        };
        self.send(job).await;
        Turn::Sent
    }

    async fn send(&self, job: Job) {
        let (p, rt) = (&*self.pipe, &*self.rt);
        rt.wait_for_rate(p.clock.as_ref()).await;
        let started = p.clock.now_ms();
        // The last check before anything leaves: a node that lost the shard
        // (or stalled past its lease) sends nothing for it.
        if !p.ownership.covers(job.fence, started) {
            p.hot.fenced.increment(1);
            job.release(&p.flight);
            return;
        }
        let mut d = job.delivery;
        d.fired_at = started;
        let attempt = |finished_at| Attempt {
            delivery: &d,
            channel: rt.channel.name(),
            tenant: job.tenant,
            priority: job.priority,
            shard: job.shard,
            fence: Some(job.fence),
            started_at: started,
            finished_at,
            series_base: job.series_base,
        };
        let f = if let Some((end, policy, label)) = rt.quiet_until(started) {
            rt.counts.quiet.fetch_add(1, Ordering::Relaxed);
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
            let detail = Detail {
                error: Some(error),
                ..Detail::default()
            };
            Finished::decided(attempt(started), outcome, detail)
        } else {
            p.hot.fired.increment(1);
            let lateness_ms = (d.attempt == 1).then(|| (started - d.due_at).max(0));
            if let Some(ms) = lateness_ms {
                p.hot.lateness.record(ms as f64 / 1000.0);
            }
            let mut outcome = rt.channel.send(&d).await;
            let finished = p.clock.now_ms();
            rt.observe(&mut outcome, 1, finished);
            rt.metrics
                .duration
                .record((finished - started).max(0) as f64 / 1000.0);
            let mut f = Finished::from_outcome(attempt(finished), outcome, &rt.retry);
            f.lateness_ms = lateness_ms;
            f
        };
        match &f.completion.outcome {
            CompletionOutcome::Done => rt.metrics.delivered.increment(1),
            CompletionOutcome::Retry { .. } => rt.metrics.retry.increment(1),
            CompletionOutcome::Failed => rt.metrics.failed.increment(1),
            CompletionOutcome::Dead => rt.metrics.dead.increment(1),
            CompletionOutcome::Deferred { .. } => rt.metrics.deferred.increment(1),
        }
        if !job.members.is_empty() {
            p.hot.merged.increment(job.members.len() as u64);
        }
        // Merged members share the delivery's outcome, each under its own
        // attempt number.
        for m in &job.members {
            let _ = self.done.send(f.for_member(m.timer_id, m.attempt));
        }
        let _ = self.done.send(f);
    }
}

#[cfg(test)]
mod tests {
    use herald_channels::SendOutcome;

    use std::collections::HashMap;

    use herald_core::TenantId;

    use super::*;
    use crate::fetcher::Fetcher;
    use crate::testkit::{CHANNEL, Rig, T0};
    use crate::{EngineConfig, TenantLimits};

    /// A rig with `n` timers due now, fetched onto the channel's queue.
    async fn fetched(
        n: usize,
    ) -> (
        Rig,
        Vec<i64>,
        ChannelWorker,
        mpsc::UnboundedReceiver<Finished>,
    ) {
        let rig = Rig::new(EngineConfig::default()).await;
        let ids = rig.insert(&vec![T0; n]).await;
        for &id in &ids {
            rig.pipe.ready.push(rig.due(id).await);
        }
        let (tx, rx) = mpsc::unbounded_channel();
        Fetcher::new(rig.pipe.clone(), tx.clone()).run_once().await;
        let rt = rig.pipe.channels[CHANNEL].clone();
        let worker = ChannelWorker::new(rig.pipe.clone(), rt, tx);
        (rig, ids, worker, rx)
    }

    #[tokio::test]
    async fn sends_the_most_urgent_job_and_hands_on_the_outcome() {
        let (rig, ids, worker, mut rx) = fetched(2).await;
        rig.clock.advance(7);
        rig.channel.script.lock().push_back(SendOutcome::Permanent {
            error: "no such user".into(),
            status: Some(400),
        });
        assert_eq!(worker.run_once().await, Turn::Sent);
        assert_eq!(worker.run_once().await, Turn::Sent);
        assert_eq!(worker.run_once().await, Turn::Empty);
        let sent: Vec<(i64, i64)> = rig
            .channel
            .sent
            .lock()
            .iter()
            .map(|d| (d.timer_id, d.fired_at))
            .collect();
        assert_eq!(sent, [(ids[0], T0 + 7), (ids[1], T0 + 7)]);
        let first = rx.try_recv().unwrap();
        assert_eq!(first.lateness_ms, Some(7), "for the live window");
        let first = first.completion;
        assert_eq!(first.outcome, CompletionOutcome::Failed);
        assert_eq!(first.status, Some(400));
        let second = rx.try_recv().unwrap().completion;
        assert_eq!(second.outcome, CompletionOutcome::Done);
        assert_eq!(second.provider_msgid, Some(format!("m{}", ids[1])));
    }

    #[tokio::test]
    async fn sends_nothing_for_a_shard_it_no_longer_owns() {
        let (rig, _, worker, mut rx) = fetched(1).await;
        rig.pipe.ownership.drop_shards(0..crate::testkit::SHARDS);
        assert_eq!(worker.run_once().await, Turn::Sent);
        assert!(rig.channel.sent.lock().is_empty());
        assert!(rx.try_recv().is_err(), "no outcome: the new owner fires it");
        assert_eq!(rig.pipe.flight.in_flight(), 0);
    }

    #[tokio::test]
    async fn sends_nothing_once_the_lease_is_about_to_run_out() {
        let (rig, _, worker, _rx) = fetched(1).await;
        // The rig's leases run `lease_ms` from T0; the guard time keeps the
        // last `lease_guard_ms` of it.
        let cfg = &rig.pipe.cfg;
        rig.clock.set(T0 + cfg.lease_ms - cfg.lease_guard_ms);
        assert_eq!(worker.run_once().await, Turn::Sent);
        assert!(rig.channel.sent.lock().is_empty());
    }

    #[tokio::test]
    async fn passes_over_a_tenant_at_its_rate_and_serves_the_others() {
        let limited = TenantId(2);
        let rig = Rig::new(EngineConfig {
            tenants: HashMap::from([(
                limited,
                TenantLimits {
                    weight: 1,
                    rate_per_sec: Some(1.0),
                },
            )]),
            ..Default::default()
        })
        .await;
        let ids = rig.insert(&[T0; 5]).await;
        for &id in &ids {
            rig.pipe.ready.push(rig.due(id).await);
        }
        let (tx, _rx) = mpsc::unbounded_channel();
        Fetcher::new(rig.pipe.clone(), tx.clone()).run_once().await;
        let rt = rig.pipe.channels[CHANNEL].clone();
        // The rows carry no tenant yet: hand the last two to the limited one.
        for mut job in rt.queue.pop_many(10) {
            if job.delivery.timer_id >= ids[3] {
                job.tenant = limited;
            }
            rt.queue.push(job);
        }
        let worker = ChannelWorker::new(rig.pipe.clone(), rt.clone(), tx);
        let mut turns = Vec::new();
        for _ in 0..5 {
            turns.push(worker.run_once().await);
        }
        assert_eq!(turns[..4], [Turn::Sent; 4]);
        assert_eq!(turns[4], Turn::Held { wait_ms: 1_000 });
        let sent: Vec<i64> = rig.channel.sent.lock().iter().map(|d| d.timer_id).collect();
        assert_eq!(
            sent,
            [ids[0], ids[3], ids[1], ids[2]],
            "one of the limited tenant's, then the rest"
        );
        rig.clock.advance(1_000);
        assert_eq!(worker.run_once().await, Turn::Sent);
        assert_eq!(worker.run_once().await, Turn::Empty);
        assert_eq!(
            rig.channel.sent.lock().last().map(|d| d.timer_id),
            Some(ids[4])
        );
    }
}
