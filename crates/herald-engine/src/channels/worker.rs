//! A channel worker: one of a channel's `concurrency` loops. It takes the next
//! job in fair order (passing over tenants at their delivery rate), sends it
//! within the channel's rate limit, and hands the outcome to the completer.
//! Long-lived workers cost nothing per delivery beyond the send itself (no
//! task spawn, no permit).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use herald_channels::InDoubt;
use herald_channels::{ChannelKind, Delivery, QuietPolicy, SendOutcome};
use herald_core::timer::Routing;
use herald_core::{Priority, TenantId, early};
use herald_store::{
    Applied, CompletionOutcome, DeferReason, FiringMark, GrantEnd, GrantSettle, GrantUse,
    Unsendable,
};
use tokio::sync::mpsc;

use crate::channels::copies;
use crate::channels::runtime::{ChannelRuntime, ChannelSettings, Job, Member};
use crate::observe::trace;
use crate::timers::completer::{Attempt, Detail, Finished};
use crate::timers::flight::Hand;
use crate::timers::marker::Marked;
use crate::timers::pipeline::Pipeline;
use crate::timers::queue::DueTimer;
use crate::timers::recipients::Route;

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

/// How often a parked worker looks at the concurrency besides when told.
const PARKED_LOOK: Duration = Duration::from_secs(1);

pub(crate) struct ChannelWorker {
    pipe: Arc<Pipeline>,
    rt: Arc<ChannelRuntime>,
    done: mpsc::UnboundedSender<Finished>,
    /// Which of the channel's loops this is: those at or above the current
    /// concurrency wait (a reload lowered it).
    index: usize,
}

impl ChannelWorker {
    pub fn new(
        pipe: Arc<Pipeline>,
        rt: Arc<ChannelRuntime>,
        done: mpsc::UnboundedSender<Finished>,
        index: usize,
    ) -> Self {
        Self {
            pipe,
            rt,
            done,
            index,
        }
    }

    pub async fn run(self) {
        let stop = &self.pipe.stop;
        loop {
            if self.index >= self.rt.concurrency() {
                // Parked until a reload raises the concurrency again.
                tokio::select! {
                    _ = self.rt.retuned.notified() => {}
                    _ = tokio::time::sleep(PARKED_LOOK) => {}
                    _ = stop.wait() => break,
                }
                continue;
            }
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
        // store (those marked firing ahead go back to pending) and fire again
        // after the restart.
        let left = self.rt.queue.pop_many(usize::MAX);
        self.pipe.let_go(left).await;
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
        // In hand from before the pop: a shutdown never finds a job neither
        // queued nor in hand while it still holds its permit.
        let hand = p.flight.hand();
        let Some(job) = queue.pop_where(|tenant| rates.try_take(tenant, now)) else {
            return match queue.min_over_tenants(|tenant| rates.wait_ms(tenant, now)) {
                Some(wait_ms) => Turn::Held { wait_ms },
                None => Turn::Empty,
            };
        };
        self.send(job, hand).await;
        Turn::Sent
    }

    /// Sends one job; `hand` counts it as in hand until its outcome is
    /// recorded (it goes to the completer with the outcome). In phases: wait
    /// for the channel's rate and check the lease ([`Self::admit`]), decide
    /// from the route and quiet hours ([`decide`]), mark the timers firing on
    /// a channel that skips in-doubt sends, settle or send
    /// ([`Self::settle`]), and hand the outcome on ([`Self::hand_off`]).
    async fn send(&self, job: Job, hand: Hand) {
        let (p, rt) = (&*self.pipe, &*self.rt);
        let started = match self.admit(&job).await {
            Admission::Go { started } => started,
            Admission::Stopped => {
                p.let_go(vec![job]).await;
                return;
            }
            Admission::Fenced => {
                p.fenced(1);
                job.release(&p.flight);
                return;
            }
        };
        // One reading for the whole send: a reload meanwhile applies to the next.
        let settings = rt.settings();
        let mut d = job.delivery;
        d.fired_at = started;
        let webhook = settings.channel.kind() == ChannelKind::Webhook;
        let span = attempt_span(&mut d, rt.name(), webhook);
        let skip_channel_quiet = matches!(
            job.route,
            Route::To {
                skip_channel_quiet: true,
                ..
            }
        );
        let channel_quiet = if skip_channel_quiet {
            None
        } else {
            rt.quiet_until(started)
        };
        // A reminder whose subject started meanwhile (waiting for the rate,
        // say) is not sent: it ends `expired` (issue 39 §4).
        let decision = if early::is_expired(started, job.expires_at) {
            Decision::Unsendable(Unsendable::Expired)
        } else if self.was_read(job.routing.as_deref(), d.timer_id).await {
            Decision::Read
        } else {
            decide(&job.route, channel_quiet)
        };
        // A channel that skips in-doubt sends marks the timer firing first:
        // if this node dies before recording the outcome, the timer is left
        // in doubt instead of firing again. Only when something is sent, and
        // only if the fetcher did not mark it with its batch already.
        let marks = settings.in_doubt == InDoubt::Skip || job.grant.is_some();
        if decision == Decision::Send && marks && !job.marked {
            let members: Vec<(i64, u32)> = job
                .members
                .iter()
                .map(|m| (m.timer_id, m.attempt))
                .collect();
            let back = DueTimer {
                id: d.timer_id,
                due_at: d.due_at,
                shard: job.shard,
                priority: job.priority,
                tenant: job.tenant,
            };
            match self
                .mark_firing(&d, job.fence, &members, back, started, job.grant.clone())
                .await
            {
                Mark::Go => {}
                Mark::Stop => return,
                Mark::NoGrant => {
                    let f = no_grant(Attempt {
                        delivery: &d,
                        channel: rt.name(),
                        tenant: job.tenant,
                        priority: job.priority,
                        shard: job.shard,
                        fence: Some(job.fence),
                        started_at: started,
                        finished_at: started,
                        series_base: job.series_base,
                        route: job.routing.as_deref(),
                    });
                    record_outcome(&span, &f, webhook);
                    self.hand_off(f, &job.members, hand);
                    return;
                }
            }
        }
        let attempt = |finished_at| Attempt {
            delivery: &d,
            channel: rt.name(),
            tenant: job.tenant,
            priority: job.priority,
            shard: job.shard,
            fence: Some(job.fence),
            started_at: started,
            finished_at,
            series_base: job.series_base,
            route: job.routing.as_deref(),
        };
        let sent = decision == Decision::Send;
        let mut f = self
            .settle(
                decision,
                &job.route,
                (job.tenant, job.priority),
                &settings,
                &d,
                attempt,
            )
            .await;
        if sent && job.grant.is_some() {
            self.end_grant(&mut f, &settings).await;
        }
        record_outcome(&span, &f, webhook);
        self.hand_off(f, &job.members, hand);
    }

    /// Ends the grant a send held, by its answer (see `herald_store::GrantEnd`):
    /// kept spent when it went, given back when the provider refused it for
    /// its own reason or the retries ran out, and the ledger zeroed when the
    /// provider says the user has none left (the outcome is then
    /// `no_grant`). A retry keeps its hold for the next attempt. If the
    /// store fails, the hold stays and the grant counts as spent.
    async fn end_grant(&self, f: &mut Finished, settings: &ChannelSettings) {
        let c = &mut f.completion;
        let end = match &c.outcome {
            CompletionOutcome::Done => GrantEnd::Spent,
            CompletionOutcome::Failed
                if settings.channel.grant_refused(&SendOutcome::Permanent {
                    error: String::new(),
                    status: c.status,
                }) =>
            {
                c.outcome = CompletionOutcome::Unsendable(Unsendable::NoGrant);
                GrantEnd::NoneLeft
            }
            CompletionOutcome::Failed | CompletionOutcome::Dead => GrantEnd::Returned,
            _ => return,
        };
        let settle = GrantSettle {
            timer_id: c.timer_id,
            end,
        };
        let at = self.pipe.clock.now_ms();
        if let Err(e) = self.pipe.store.settle_grants(vec![settle], at).await {
            tracing::warn!(timer_id = c.timer_id, error = %e, "ending a subscribe grant's hold failed; it stays spent");
            self.pipe.hot.store_errors.increment(1);
        }
    }

    /// Whether the job is a fallback route's `unread` step whose step before
    /// has a `read` receipt. A store that cannot tell is taken as unread: a
    /// second message is better than none.
    async fn was_read(&self, routing: Option<&Routing>, timer_id: i64) -> bool {
        let Some(r) = routing.filter(|r| r.check_read) else {
            return false;
        };
        let before = r.step.saturating_sub(1);
        match self.pipe.store.read_at_step(timer_id, before).await {
            Ok(read) => read,
            Err(e) => {
                tracing::warn!(timer_id, error = %e, "reading read receipts failed; taken as unread");
                false
            }
        }
    }

    /// Waits for the channel's rate (a send only: what the directory decided
    /// without one takes none), then checks the lease: the last check before
    /// anything leaves, so a node that lost the shard (or stalled past its
    /// lease) sends nothing for it. A shutdown does not wait out a
    /// provider's pause or the rate.
    async fn admit(&self, job: &Job) -> Admission {
        let (p, rt) = (&*self.pipe, &*self.rt);
        let expired = early::is_expired(p.clock.now_ms(), job.expires_at);
        let sends = !expired && !matches!(job.route, Route::Unsendable(_) | Route::Quiet { .. });
        if sends {
            tokio::select! {
                _ = rt.wait_for_rate(p.clock.as_ref(), job.priority) => {}
                _ = p.stop.wait() => return Admission::Stopped,
            }
        }
        let started = p.clock.now_ms();
        if !p.ownership.covers(job.fence, started) {
            return Admission::Fenced;
        }
        Admission::Go { started }
    }

    /// The job's outcome: settled without a send (unsendable, or held by
    /// quiet hours), or the channel's answer to the send (with a note from
    /// sending copies, if any).
    async fn settle<'a>(
        &self,
        decision: Decision,
        route: &Route,
        (tenant, priority): (TenantId, Priority),
        settings: &ChannelSettings,
        d: &'a Delivery,
        attempt: impl Fn(i64) -> Attempt<'a>,
    ) -> Finished {
        let (p, rt) = (&*self.pipe, &*self.rt);
        let started = d.fired_at;
        match decision {
            Decision::Unsendable(why) => {
                let error = match why {
                    Unsendable::NoAddress => {
                        "the subscriber has no address for this channel's type"
                    }
                    Unsendable::OptedOut => {
                        "the subscriber opted out of this channel type or topic"
                    }
                    Unsendable::TemplateError => "the message's template could not be rendered",
                    Unsendable::Capped => "over a frequency cap of the recipient",
                    Unsendable::Expired => {
                        "expired: the subject started before the reminder could be sent"
                    }
                    Unsendable::NoGrant => NO_GRANT_ERROR,
                };
                let detail = Detail {
                    error: Some(error.to_string()),
                    ..Detail::default()
                };
                Finished::decided(attempt(started), CompletionOutcome::Unsendable(why), detail)
            }
            Decision::Read => {
                Finished::decided(attempt(started), CompletionOutcome::Read, Detail::default())
            }
            Decision::SubscriberQuiet { until } => {
                rt.counts.quiet.fetch_add(1, Ordering::Relaxed);
                // The channel's policy says whether a held message waits or goes.
                let policy = settings
                    .quiet
                    .as_ref()
                    .map_or(QuietPolicy::Defer, |q| q.policy);
                quiet(attempt(started), until, policy, "the subscriber's")
            }
            Decision::ChannelQuiet { end, policy, label } => {
                rt.counts.quiet.fetch_add(1, Ordering::Relaxed);
                quiet(attempt(started), end, policy, &label)
            }
            Decision::Send => {
                p.hot.fired.increment(1);
                let lateness_ms = (d.attempt == 1).then(|| (started - d.due_at).max(0));
                if let Some(ms) = lateness_ms {
                    p.hot.lateness.record(ms as f64 / 1000.0);
                }
                let (mut outcome, note) = match route {
                    Route::To {
                        user_id,
                        addresses,
                        devices,
                        services,
                        ..
                    } => {
                        let to = copies::Copies {
                            tenant,
                            user_id,
                            addresses,
                            devices: *devices,
                            services,
                            channels: &p.channels,
                            priority,
                        };
                        copies::send_copies(p.store.as_ref(), p.clock.as_ref(), rt, d, to).await
                    }
                    _ => (settings.channel.send(d).await, None),
                };
                let finished = p.clock.now_ms();
                rt.observe(&mut outcome, 1, finished);
                rt.metrics
                    .duration
                    .record((finished - started).max(0) as f64 / 1000.0);
                let mut f = Finished::from_outcome(attempt(finished), outcome, &settings.retry);
                if let Some(note) = note {
                    f.completion.error = Some(match f.completion.error.take() {
                        Some(e) => format!("{e}; {note}"),
                        None => note,
                    });
                }
                f.lateness_ms = lateness_ms;
                f
            }
        }
    }

    /// Counts the outcome and hands it to the completer, once for the
    /// delivery's own timer (with `hand`) and once for each merged member,
    /// which shares the delivery's outcome under its own attempt number.
    fn hand_off(&self, mut f: Finished, members: &[Member], hand: Hand) {
        let (p, rt) = (&*self.pipe, &*self.rt);
        match &f.completion.outcome {
            CompletionOutcome::Done => rt.metrics.delivered.increment(1),
            CompletionOutcome::Retry { .. } => rt.metrics.retry.increment(1),
            CompletionOutcome::Failed => rt.metrics.failed.increment(1),
            CompletionOutcome::Dead => rt.metrics.dead.increment(1),
            CompletionOutcome::Deferred { .. } => rt.metrics.deferred.increment(1),
            CompletionOutcome::Unsendable(Unsendable::NoAddress) => {
                rt.metrics.no_address.increment(1)
            }
            CompletionOutcome::Unsendable(Unsendable::OptedOut) => {
                rt.metrics.opted_out.increment(1)
            }
            CompletionOutcome::Unsendable(Unsendable::TemplateError) => {
                rt.metrics.template_error.increment(1)
            }
            CompletionOutcome::Unsendable(Unsendable::Capped) => rt.metrics.capped.increment(1),
            CompletionOutcome::Unsendable(Unsendable::Expired) => rt.metrics.expired.increment(1),
            CompletionOutcome::Unsendable(Unsendable::NoGrant) => rt.metrics.no_grant.increment(1),
            // Only the store's resolution of a stopped node's sends says so.
            CompletionOutcome::InDoubt => {}
            CompletionOutcome::Read => {}
        }
        if !members.is_empty() {
            p.hot.merged.increment(members.len() as u64);
        }
        for m in members {
            let _ = self.done.send(f.for_member(m.timer_id, m.attempt));
        }
        f.hand = Some(hand);
        let _ = self.done.send(f);
    }

    /// Marks a delivery's timer (and the reminders merged into it) firing,
    /// in the shared group commit ([`crate::timers::marker`]); returns whether the
    /// send may go. When it may not, nothing is sent and the timers leave
    /// the flight set: a fenced or no longer pending timer is someone else's
    /// (the shard's new owner, a cancel); after a store failure the timer,
    /// still pending, goes back to the ready queue to be fetched again.
    ///
    /// Once the mark committed the send goes without a new lease check: a
    /// node taking the shard over never loads a firing timer, it resolves
    /// it, so even a late send cannot be repeated.
    async fn mark_firing(
        &self,
        d: &Delivery,
        fence: herald_store::Fence,
        members: &[(i64, u32)],
        back: DueTimer,
        started: i64,
        grant: Option<GrantUse>,
    ) -> Mark {
        let p = &*self.pipe;
        let mark = |timer_id, attempt, grant| FiringMark {
            timer_id,
            attempt,
            fence: Some(fence),
            at: started,
            grant,
        };
        let max = p.cfg.get().complete_batch;
        let own = p
            .marker
            .mark(p.store.as_ref(), max, mark(d.timer_id, d.attempt, grant));
        // Merged members are marked in the same batch (or the next).
        let rest = futures_util::future::join_all(members.iter().map(|&(id, attempt)| {
            p.marker
                .mark(p.store.as_ref(), max, mark(id, attempt, None))
        }));
        let (own, _) = futures_util::future::join(own, rest).await;
        match own {
            Marked::Applied(Applied::Yes) => return Mark::Go,
            // Its members, marked, end with it.
            Marked::Applied(Applied::NoGrant) => return Mark::NoGrant,
            _ => {}
        }
        // Out of the flight set first: the fetcher drops a ready timer it
        // finds still in flight.
        p.flight
            .release(std::iter::once(d.timer_id).chain(members.iter().map(|(id, _)| *id)));
        match own {
            Marked::Applied(Applied::Fenced) => p.fenced(1),
            Marked::Failed => {
                p.hot.store_errors.increment(1);
                p.ready.push(back);
            }
            Marked::Applied(Applied::Yes | Applied::NotPending | Applied::NoGrant) => {}
        }
        Mark::Stop
    }
}

/// What marking a delivery firing came to.
enum Mark {
    /// Marked: send.
    Go,
    /// Not marked, and let go: someone else's, or back to the ready queue.
    Stop,
    /// Not marked: the user has no subscribe grant left.
    NoGrant,
}

/// Why a send ended `no_grant`, as the send log says.
pub(crate) const NO_GRANT_ERROR: &str =
    "no grant: the user has no subscribe grant left for this template";

/// A send the grant ledger refused: final, `no_grant`, nothing sent.
pub(crate) fn no_grant(at: Attempt<'_>) -> Finished {
    let detail = Detail {
        error: Some(NO_GRANT_ERROR.to_string()),
        ..Detail::default()
    };
    Finished::decided(
        at,
        CompletionOutcome::Unsendable(Unsendable::NoGrant),
        detail,
    )
}

/// The span of one delivery attempt, a child of the trace context stored
/// with the timer. A webhook then carries the attempt's own context as its
/// `traceparent`, so the receiver's span hangs under it. Disabled, and
/// `d` untouched, unless spans are exported.
fn attempt_span(d: &mut Delivery, channel: &str, webhook: bool) -> tracing::Span {
    let span = tracing::info_span!(
        target: trace::TARGET,
        parent: None,
        "deliver",
        otel.kind = "client",
        herald.timer.id = d.timer_id,
        herald.channel = channel,
        herald.attempt = d.attempt,
        herald.outcome = tracing::field::Empty,
        http.response.status_code = tracing::field::Empty,
        herald.provider.status = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
        otel.status_description = tracing::field::Empty,
    );
    if !span.is_disabled() {
        trace::set_parent(&span, d.traceparent.as_deref());
        if webhook && let Some(own) = trace::traceparent_of(&span) {
            d.traceparent = Some(own);
        }
    }
    span
}

/// Puts an attempt's outcome on its span: the send-log outcome, the
/// provider's status (HTTP status for a webhook), and an error status for
/// a failed send.
fn record_outcome(span: &tracing::Span, f: &Finished, webhook: bool) {
    if span.is_disabled() {
        return;
    }
    let c = &f.completion;
    span.record("herald.outcome", c.outcome.as_str());
    if let Some(status) = c.status {
        let field = if webhook {
            "http.response.status_code"
        } else {
            "herald.provider.status"
        };
        span.record(field, status);
    }
    if matches!(
        c.outcome,
        CompletionOutcome::Retry { .. } | CompletionOutcome::Failed | CompletionOutcome::Dead
    ) {
        span.record("otel.status_code", "ERROR");
        if let Some(e) = &c.error {
            span.record("otel.status_description", e.as_str());
        }
    }
}

/// Whether a job taken off the queue may be sent ([`ChannelWorker::admit`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admission {
    /// It may go; its send started at this time (the engine's clock).
    Go { started: i64 },
    /// The engine is stopping: it is let go unsent, stays pending in the
    /// store and fires again after the restart.
    Stopped,
    /// This node's lease no longer covers the timer's shard: it is let go,
    /// for the shard's new owner.
    Fenced,
}

/// What a job's send comes to, decided before anything leaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    /// The directory found no address, or an opt-out: settled unsent.
    Unsendable(Unsendable),
    /// Inside the subscriber's quiet hours, which end at `until`.
    SubscriberQuiet { until: i64 },
    /// Inside the channel's quiet hours: their end, policy and label.
    ChannelQuiet {
        end: i64,
        policy: QuietPolicy,
        label: String,
    },
    /// Sent now.
    Send,
    /// A fallback route's `unread` step whose step before was read: not sent.
    Read,
}

/// Decides a job's send from its route and the channel's quiet hours now
/// (`None` outside them, or for a recipient whose own were checked): the
/// directory's decision first, then the channel's quiet hours.
fn decide(route: &Route, channel_quiet: Option<(i64, QuietPolicy, String)>) -> Decision {
    match (route, channel_quiet) {
        (Route::Unsendable(why), _) => Decision::Unsendable(*why),
        (Route::Quiet { until }, _) => Decision::SubscriberQuiet { until: *until },
        (_, Some((end, policy, label))) => Decision::ChannelQuiet { end, policy, label },
        (_, None) => Decision::Send,
    }
}

/// A quiet-hours decision: wait for the end, or drop, per `policy`.
fn quiet(at: Attempt<'_>, end: i64, policy: QuietPolicy, label: &str) -> Finished {
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
    Finished::decided(at, outcome, detail)
}

#[cfg(test)]
mod tests {
    use herald_channels::SendOutcome;

    use std::collections::HashMap;

    use herald_core::TenantId;

    use super::*;
    use crate::config::EngineConfig;
    use crate::testkit::{CHANNEL, Rig, T0};
    use crate::timers::fetcher::Fetcher;
    use crate::timers::tenants::TenantLimits;

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
        let worker = ChannelWorker::new(rig.pipe.clone(), rt, tx, 0);
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

    #[test]
    fn the_directory_decides_before_the_channels_quiet_hours() {
        let quiet = || Some((T0 + 60_000, QuietPolicy::Defer, "22:00-07:00".to_string()));
        let opted_out = Route::Unsendable(Unsendable::OptedOut);
        assert_eq!(
            decide(&opted_out, quiet()),
            Decision::Unsendable(Unsendable::OptedOut)
        );
        let held = Route::Quiet { until: T0 + 5 };
        assert_eq!(
            decide(&held, quiet()),
            Decision::SubscriberQuiet { until: T0 + 5 }
        );
        assert_eq!(
            decide(&Route::AsStored, quiet()),
            Decision::ChannelQuiet {
                end: T0 + 60_000,
                policy: QuietPolicy::Defer,
                label: "22:00-07:00".into(),
            }
        );
        assert_eq!(decide(&Route::AsStored, None), Decision::Send);
    }

    #[tokio::test]
    async fn a_job_is_admitted_at_the_time_its_send_starts_unless_fenced() {
        let (rig, _, worker, _rx) = fetched(2).await;
        rig.clock.advance(3);
        let job = worker.rt.queue.pop_where(|_| true).unwrap();
        assert_eq!(worker.admit(&job).await, Admission::Go { started: T0 + 3 });
        rig.pipe.ownership.drop_shards(0..crate::testkit::SHARDS);
        let job = worker.rt.queue.pop_where(|_| true).unwrap();
        assert_eq!(worker.admit(&job).await, Admission::Fenced);
        job.release(&rig.pipe.flight);
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
        let cfg = rig.pipe.cfg.get();
        rig.clock.set(T0 + cfg.lease_ms - cfg.lease_guard_ms);
        assert_eq!(worker.run_once().await, Turn::Sent);
        assert!(rig.channel.sent.lock().is_empty());
    }

    /// A lease that lapses for a moment (a slow membership round) fences
    /// the sends of that instant; once renewed under the same epoch, the
    /// loader reads them again, although its cursor had passed them.
    #[tokio::test]
    async fn timers_fenced_by_a_lapsed_lease_fire_once_it_is_renewed() {
        let rig = Rig::new(EngineConfig::default()).await;
        let ids = rig.insert(&[T0]).await;
        let mut loader = crate::timers::loader::Loader::new(
            rig.pipe.clone(),
            false,
            Arc::new(crate::timers::loader::Rescan::default()),
        );
        loader.run_once().await;
        let mut due = Vec::new();
        rig.pipe.schedule.tick(T0, &rig.pipe.ready, &mut due);
        let (tx, mut rx) = mpsc::unbounded_channel();
        Fetcher::new(rig.pipe.clone(), tx.clone()).run_once().await;
        let rt = rig.pipe.channels[CHANNEL].clone();
        let worker = ChannelWorker::new(rig.pipe.clone(), rt, tx.clone(), 0);
        let cfg = rig.pipe.cfg.get();
        rig.clock.set(T0 + cfg.lease_ms - cfg.lease_guard_ms);
        assert_eq!(worker.run_once().await, Turn::Sent);
        assert!(rig.channel.sent.lock().is_empty(), "fenced");
        assert_eq!(rig.pipe.schedule.len(), 0);
        // Renewed: the same epoch, a later end.
        let now = T0 + cfg.lease_ms - cfg.lease_guard_ms;
        let renewed = rig
            .pipe
            .store
            .renew_shards(
                &crate::testkit::holder(),
                &rig.pipe.ownership.held(),
                now,
                cfg.lease_ms,
            )
            .await
            .unwrap();
        rig.pipe.ownership.hold(&renewed);
        loader.run_once().await;
        assert_eq!(rig.pipe.schedule.len(), 1, "the window read again");
        rig.pipe.schedule.tick(now, &rig.pipe.ready, &mut due);
        Fetcher::new(rig.pipe.clone(), tx).run_once().await;
        assert_eq!(worker.run_once().await, Turn::Sent);
        let sent: Vec<i64> = rig.channel.sent.lock().iter().map(|d| d.timer_id).collect();
        assert_eq!(sent, ids);
        assert!(rx.try_recv().is_ok(), "its outcome goes to the completer");
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
        let worker = ChannelWorker::new(rig.pipe.clone(), rt.clone(), tx, 0);
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

    /// Fetches and sends every due timer of the rig; the outcomes in order.
    async fn fire_all(rig: &Rig, ids: &[i64]) -> Vec<Finished> {
        for &id in ids {
            rig.pipe.ready.push(rig.due(id).await);
        }
        let (tx, mut rx) = mpsc::unbounded_channel();
        Fetcher::new(rig.pipe.clone(), tx.clone()).run_once().await;
        let rt = rig.pipe.channels[CHANNEL].clone();
        let worker = ChannelWorker::new(rig.pipe.clone(), rt, tx, 0);
        while worker.run_once().await == Turn::Sent {}
        let mut out = Vec::new();
        while let Ok(f) = rx.try_recv() {
            out.push(f);
        }
        out
    }

    #[tokio::test]
    async fn a_reminder_goes_to_every_device_and_a_gone_token_is_pruned() {
        let rig = Rig::new(EngineConfig::default()).await;
        rig.put_subscriber("u1", r#"{"addresses":{"app":["tok-a","tok-b","tok-c"]}}"#)
            .await;
        let id = rig.insert_reminder("u1", "app").await;
        rig.channel.script.lock().extend([
            SendOutcome::Delivered {
                provider_msgid: None,
                status: Some(200),
            },
            SendOutcome::Permanent {
                error: "the device token is invalid (UNREGISTERED): gone".into(),
                status: Some(404),
            },
        ]);
        let out = fire_all(&rig, &[id]).await;
        let sent: Vec<(String, String)> = rig
            .channel
            .sent
            .lock()
            .iter()
            .map(|d| (d.recipient.clone(), d.idempotency_key.clone()))
            .collect();
        let tokens: Vec<&str> = sent.iter().map(|(r, _)| r.as_str()).collect();
        assert_eq!(tokens, ["tok-a", "tok-b", "tok-c"]);
        let mut keys: Vec<&str> = sent.iter().map(|(_, k)| k.as_str()).collect();
        keys.dedup();
        assert_eq!(keys.len(), 3, "each device has its own key: {keys:?}");
        assert_eq!(out.len(), 1);
        let c = &out[0].completion;
        assert_eq!(c.outcome, CompletionOutcome::Done);
        let note = c.error.as_deref().unwrap_or_default();
        assert!(note.contains("removed from the subscriber"), "{note}");
        assert!(note.contains("2 of 3 devices delivered"), "{note}");
        let left = rig
            .pipe
            .store
            .get_subscribers(herald_core::DEFAULT_TENANT, &["u1".into()])
            .await
            .unwrap();
        let p: herald_core::subscriber::Profile = serde_json::from_str(&left[0].profile).unwrap();
        assert_eq!(p.addresses.app, ["tok-a", "tok-c"]);
    }

    #[tokio::test]
    async fn the_directory_decides_address_opt_out_and_absence() {
        let rig = Rig::new(EngineConfig::default()).await;
        rig.put_subscriber("mail", r#"{"addresses":{"email":"m+1@example.com"}}"#)
            .await;
        rig.put_subscriber(
            "out",
            r#"{"addresses":{"email":"o@example.com"},"preferences":{"channel_types":{"email":false}}}"#,
        )
        .await;
        let ids = [
            rig.insert_reminder("mail", "email").await,
            rig.insert_reminder("out", "email").await,
            rig.insert_reminder("mail", "sms").await,
            rig.insert_reminder("unknown", "email").await,
        ];
        let out = fire_all(&rig, &ids).await;
        let by_id: HashMap<i64, &CompletionOutcome> = out
            .iter()
            .map(|f| (f.completion.timer_id, &f.completion.outcome))
            .collect();
        assert_eq!(by_id[&ids[0]], &CompletionOutcome::Done);
        assert_eq!(
            by_id[&ids[1]],
            &CompletionOutcome::Unsendable(Unsendable::OptedOut)
        );
        assert_eq!(
            by_id[&ids[2]],
            &CompletionOutcome::Unsendable(Unsendable::NoAddress)
        );
        assert_eq!(by_id[&ids[3]], &CompletionOutcome::Done);
        let mut sent: Vec<String> = rig
            .channel
            .sent
            .lock()
            .iter()
            .map(|d| d.recipient.clone())
            .collect();
        sent.sort();
        assert_eq!(
            sent,
            ["m+1@example.com", "unknown"],
            "no entry: the user id itself"
        );
    }

    #[tokio::test]
    async fn a_daily_digest_closes_at_nine_local_after_spring_forward_and_goes_out_once() {
        let rig = Rig::new(EngineConfig {
            merge_window_ms: 0,
            ..Default::default()
        })
        .await;
        rig.put_subscriber(
            "ny",
            r#"{"timezone":"America/New_York","addresses":{"email":"ny@example.com"}}"#,
        )
        .await;
        let ms = |s: &str| herald_core::time::parse_rfc3339_ms(s).unwrap();
        let daily = r#"{"key":"daily","at_local":"09:00"}"#;
        // Saturday afternoon before New York springs forward (2026-03-08).
        let mut placed = Vec::new();
        for (n, at) in [
            "2026-03-07T15:00:00Z",
            "2026-03-07T22:00:00Z",
            "2026-03-08T12:59:00Z",
        ]
        .into_iter()
        .enumerate()
        {
            placed.push(rig.insert_digest("ny", ms(at), daily, n as u32).await);
        }
        let other = rig
            .insert_digest(
                "ny",
                ms("2026-03-07T15:00:00Z"),
                r#"{"key":"weekly","window_ms":1000}"#,
                9,
            )
            .await;
        // 09:00 EDT is 13:00Z; the day before, 09:00 EST was 14:00Z.
        assert!(
            placed
                .iter()
                .all(|&(_, due)| due == ms("2026-03-08T13:00:00Z"))
        );
        // The rig's leases run on its own clock: fire as if the wheel said so.
        let ids: Vec<i64> = placed.iter().map(|&(id, _)| id).collect();
        let out = fire_all(&rig, &[ids[0], other.0]).await;
        let sent = rig.channel.sent.lock().clone();
        assert_eq!(sent.len(), 2, "the daily digest and the other key's");
        let digest = sent
            .iter()
            .find(|d| d.timer_id == ids[0])
            .expect("the digest");
        assert_eq!(digest.recipient, "ny@example.com");
        let v: serde_json::Value = serde_json::from_str(&digest.message).unwrap();
        assert_eq!(v["digest"], "daily");
        assert_eq!(v["count"], 3);
        assert_eq!(
            v["messages"],
            serde_json::json!([{"n": 0}, {"n": 1}, {"n": 2}])
        );
        let done: Vec<i64> = out
            .iter()
            .filter(|f| f.completion.outcome == CompletionOutcome::Done)
            .map(|f| f.completion.timer_id)
            .collect();
        for id in ids.iter().chain([&other.0]) {
            assert!(done.contains(id), "{id} ends done on its own: {done:?}");
        }
    }
}
