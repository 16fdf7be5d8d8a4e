//! The fetcher: takes due timers off the ready queue (fair between tenants,
//! in urgency order inside one), reads their rows, groups reminders and
//! digests, and queues each delivery on its channel.
//!
//! Firing writes nothing to the store: the timer stays `pending` until the
//! completer records its outcome, so a crash at any point means it fires again
//! (at least once), with the same idempotency key. The exception is a channel
//! configured `in_doubt = "skip"`: the fetcher marks the deliveries it queues
//! there `firing`, the whole pass in one write, before they are queued (see
//! [`crate::timers::marker`]): after a crash they end `in_doubt`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use herald_channels::{Delivery, InDoubt, SendOutcome};
use herald_core::template::PartKey;
use herald_core::{RetryPolicy, TenantId, TimerId};
use herald_store::{Applied, CompletionOutcome, DeferReason, FiringMark, TimerRecord, Unsendable};
use tokio::sync::mpsc;

use crate::channels::runtime::{ChannelRuntime, Job, Member};
use crate::timers::bundles::{self, Bundle};
use crate::timers::completer::{Attempt, Detail, Finished};
use crate::timers::fallback;
use crate::timers::flight::Room;
use crate::timers::limits::{self, Refusal};
use crate::timers::pipeline::Pipeline;
use crate::timers::queue::DueTimer;
use crate::timers::recipients::{self, Addressee, Profiles, Route};
use crate::timers::render::{self, Composed, Message};

/// How a fetch pass ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FetchPass {
    /// Nothing was ready, or no in-flight permit was free.
    Idle,
    /// The due timers taken went to their channels (or were dropped as stale).
    Routed,
    /// The store failed; the timers went back to the ready queue.
    StoreFailed,
    /// The engine is stopping; the timers taken were let go.
    Stopped,
    /// Every ready timer belongs to a tenant that already has its rate's
    /// worth of deliveries queued on channels.
    Held,
}

/// How long the fetcher waits when every ready timer is held back for its
/// tenant's rate: long enough not to spin, short against any due time.
const HELD_PAUSE: Duration = Duration::from_millis(10);

pub(crate) struct Fetcher {
    pipe: Arc<Pipeline>,
    /// Fetch passes' marks under way ([`mark_ahead`]), for [`Self::settled`].
    marking: parking_lot::Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// Where outcomes the fetcher decides itself go (a channel no longer configured).
    done: mpsc::UnboundedSender<Finished>,
}

impl Fetcher {
    pub fn new(pipe: Arc<Pipeline>, done: mpsc::UnboundedSender<Finished>) -> Self {
        Self {
            pipe,
            done,
            marking: Default::default(),
        }
    }

    /// Waits for due timers and for in-flight room, then routes them.
    pub async fn run(self) {
        let p = &*self.pipe;
        loop {
            let batch = p.cfg.get().fetch_batch.max(1);
            tokio::select! {
                _ = p.ready.wait_non_empty() => {}
                _ = p.stop.wait() => return,
            }
            // Wait for room for what is ready. The permits go back at once:
            // only this task takes them, so `run_once` finds them free.
            // Never more than the bound itself, or the wait would never end.
            let want = p.ready.len().clamp(1, batch.min(p.flight.max()));
            let room = tokio::select! {
                room = p.flight.wait_for_room(want) => room,
                _ = p.stop.wait() => return,
            };
            if room.is_err() {
                return;
            }
            match self.run_once().await {
                FetchPass::Stopped => return,
                FetchPass::StoreFailed => tokio::time::sleep(Duration::from_millis(100)).await,
                FetchPass::Held => tokio::select! {
                    _ = tokio::time::sleep(HELD_PAUSE) => {}
                    _ = p.ready.pushed() => {}
                    _ = p.stop.wait() => return,
                },
                FetchPass::Idle | FetchPass::Routed => {}
            }
        }
    }

    /// Waits for the fetch passes' marks under way: their deliveries are
    /// queued once it returns.
    #[cfg(test)]
    pub async fn settled(&self) {
        let under_way = std::mem::take(&mut *self.marking.lock());
        for m in under_way {
            let _ = m.await;
        }
    }

    /// One pass without waiting: takes as many ready timers as one batch and
    /// the free in-flight permits allow, and routes them.
    pub async fn run_once(&self) -> FetchPass {
        let p = &*self.pipe;
        let want = p
            .ready
            .len()
            .min(p.cfg.get().fetch_batch.max(1))
            .min(p.flight.available());
        match p.flight.room(want) {
            Some(room) => self.route(room, want).await,
            None => FetchPass::Idle,
        }
    }

    /// Whether a tenant may have one more delivery queued on the channels.
    /// A tenant with a rate gets about one second's worth: its channel
    /// workers pass over the rest anyway, and each would hold in-flight room
    /// that other tenants' timers need. Its surplus waits in the ready queue.
    fn within_queue_cap(&self) -> impl FnMut(TenantId) -> bool + '_ {
        let p = &*self.pipe;
        let mut budgets: HashMap<TenantId, usize> = HashMap::new();
        move |tenant| {
            let Some(cap) = p.tenant_rates.queue_cap(tenant) else {
                return true;
            };
            let budget = budgets.entry(tenant).or_insert_with(|| {
                let queued: usize = p
                    .channels
                    .values()
                    .map(|rt| rt.queue.tenant_len(tenant))
                    .sum();
                cap.saturating_sub(queued)
            });
            match budget.checked_sub(1) {
                Some(left) => {
                    *budget = left;
                    true
                }
                None => false,
            }
        }
    }

    /// Takes up to `want` due timers, one permit of `room` each, reads their
    /// rows and queues their deliveries. The room stays open (and the
    /// fetcher counts as busy) until everything it took is routed. In
    /// phases: take the fresh ones, read their rows, [`sort`] them, group
    /// reminders and digests ([`Self::group`]), read the directory
    /// ([`Self::read_directory`]) and queue the jobs ([`Self::queue_jobs`]).
    async fn route(&self, mut room: Room<'_>, want: usize) -> FetchPass {
        let p = &*self.pipe;
        let due = p.ready.pop_many_where(want, self.within_queue_cap());
        p.hot.ready.set(p.ready.len() as f64);
        if due.is_empty() {
            return FetchPass::Held;
        }
        // Duplicates (same timer twice in the wheel, or already in flight)
        // take no permit, and their permits go back at once. So do timers
        // of shards this node no longer owns: their new owner loads them.
        let mut fresh = Vec::with_capacity(due.len());
        p.ownership.with_owned(|owned| {
            for t in due {
                if owned.contains(t.shard) && room.claim(t.id) {
                    fresh.push(t);
                }
            }
        });
        room.give_back_unclaimed();
        if fresh.is_empty() {
            return FetchPass::Routed;
        }
        let ids: Vec<TimerId> = fresh.iter().map(|t| t.id).collect();
        let rows = match p.store.fetch_pending(&ids).await {
            Ok(rows) => rows,
            Err(e) => {
                tracing::warn!(error = %e, n = ids.len(), "fetching due timers failed; requeued");
                p.hot.store_errors.increment(1);
                p.flight.release(ids);
                p.ready.push_many(fresh);
                return FetchPass::StoreFailed;
            }
        };
        if p.stop.is_stopped() {
            p.flight.release(ids);
            return FetchPass::Stopped;
        }
        let Sorted {
            mut stale,
            plain,
            bundled,
            requeue,
        } = sort(fresh, rows);
        let groups = self.group(bundled, requeue).await;
        let Some((who, profiles)) = self.read_directory(&plain, &groups).await else {
            if !stale.is_empty() {
                p.flight.release(stale);
            }
            return FetchPass::StoreFailed;
        };
        let Some(capped) = self.take_caps(&plain, &groups, &who, &profiles).await else {
            if !stale.is_empty() {
                p.flight.release(stale);
            }
            return FetchPass::StoreFailed;
        };
        // When each reminder delivery expires unsent, by its own timer.
        let expiries: HashMap<TimerId, i64> = groups
            .iter()
            .filter_map(|g| Some((g.primary.id, g.expires_at?)))
            .collect();
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
                    let composed = match g.bundle {
                        Bundle::Reminder { .. } => Composed::Reminder(g.message, g.template),
                        Bundle::Digest { .. } => Composed::Digest(g.message),
                    };
                    (g.primary, members, Some(composed))
                }));
        let ahead = self.queue_jobs(jobs.zip(who).zip(capped), &profiles, &expiries, &mut stale);
        if !ahead.is_empty() {
            // The next pass does not wait for this one's mark: passes that
            // come while it commits are marked together in the next write.
            // In hand meanwhile, so a shutdown waits for it.
            let (pipe, hand) = (self.pipe.clone(), p.flight.hand());
            let marking = tokio::spawn(async move {
                mark_ahead(&pipe, ahead).await;
                drop(hand);
            });
            let mut under_way = self.marking.lock();
            under_way.retain(|m| !m.is_finished());
            under_way.push(marking);
        }
        if !stale.is_empty() {
            p.flight.release(stale);
        }
        FetchPass::Routed
    }

    /// Groups the reminders and digests among the rows (see
    /// [`bundles::plan`]). If the store fails, their timers (`requeue`) go
    /// back to the ready queue and there are no groups.
    async fn group(
        &self,
        bundled: Vec<(Bundle, TimerRecord)>,
        requeue: Vec<DueTimer>,
    ) -> Vec<bundles::Group> {
        let p = &*self.pipe;
        if bundled.is_empty() {
            return Vec::new();
        }
        let claim = |m: &TimerRecord| p.ownership.owns(m.shard) && p.flight.admit_member(m.id);
        let unclaim = |ids: Vec<TimerId>| {
            p.flight.release(ids);
        };
        let window = p.cfg.get().merge_window_ms.max(0);
        match bundles::plan(p.store.as_ref(), bundled, window, claim, unclaim).await {
            Ok(groups) => groups,
            Err(e) => {
                tracing::warn!(error = %e, n = requeue.len(), "grouping reminders and digests failed; requeued");
                p.hot.store_errors.increment(1);
                p.flight.release(requeue.iter().map(|t| t.id));
                p.ready.push_many(requeue);
                Vec::new()
            }
        }
    }

    /// Who the directory decides for among the plain rows and the groups'
    /// primaries (in that order), with their entries, read in one go per
    /// tenant. If the store fails, every one of them goes back to the ready
    /// queue (members leave the flight set: the primaries' next fetch finds
    /// them again) and the answer is `None`.
    async fn read_directory(
        &self,
        plain: &[TimerRecord],
        groups: &[bundles::Group],
    ) -> Option<(Vec<Option<Addressee>>, Profiles)> {
        let p = &*self.pipe;
        let who: Vec<Option<Addressee>> = plain
            .iter()
            .map(Addressee::of)
            .chain(groups.iter().map(|g| Addressee::of(&g.primary)))
            .collect();
        if !who.iter().any(Option::is_some) {
            return Some((who, Profiles::new()));
        }
        match recipients::profiles(p.store.as_ref(), who.iter().flatten()).await {
            Ok(found) => Some((who, found)),
            Err(e) => {
                tracing::warn!(error = %e, n = who.len(), "reading the subscriber directory failed; requeued");
                p.hot.store_errors.increment(1);
                self.requeue(plain, groups);
                None
            }
        }
    }

    /// Puts the plain rows and the groups' primaries back on the ready
    /// queue (members leave the flight set: the primaries' next fetch finds
    /// them again), after a store failure.
    fn requeue(&self, plain: &[TimerRecord], groups: &[bundles::Group]) {
        let p = &*self.pipe;
        let rows = plain.iter().chain(groups.iter().map(|g| &g.primary));
        let back: Vec<DueTimer> = rows.map(|r| r.due_entry().into()).collect();
        p.flight
            .release(groups.iter().flat_map(|g| g.members.iter().map(|m| m.id)));
        p.flight.release(back.iter().map(|t| t.id));
        p.ready.push_many(back);
    }

    /// Checks and takes the limits (caps, pacing, rate keys: see
    /// `limits`) of the plain rows and the groups' primaries (in that
    /// order, as `who`), in one store call for the whole pass. The answer
    /// has one entry per row. If the store fails, every row goes back to
    /// the ready queue and the answer is `None`.
    async fn take_caps(
        &self,
        plain: &[TimerRecord],
        groups: &[bundles::Group],
        who: &[Option<Addressee>],
        profiles: &Profiles,
    ) -> Option<Vec<Option<Refusal>>> {
        let p = &*self.pipe;
        let now = p.clock.now_ms();
        let rows = plain
            .iter()
            .chain(groups.iter().map(|g| &g.primary))
            .zip(who.iter().map(Option::as_ref));
        match limits::take(p, rows, profiles, now).await {
            Ok(refused) => Some(refused),
            Err(e) => {
                tracing::warn!(error = %e, n = who.len(), "taking send limits failed; requeued");
                p.hot.store_errors.increment(1);
                self.requeue(plain, groups);
                None
            }
        }
    }

    /// Queues each delivery on its channel: a row, the members merged into
    /// it, the message its group composed (and whether it is a reminder's),
    /// and who the directory decides for. Adds to `stale` the timers to let
    /// go: those of a shard whose lease this node no longer holds. Returns
    /// the deliveries to be marked firing before they are queued: those
    /// that will send on a channel that skips in-doubt sends.
    fn queue_jobs(
        &self,
        jobs: impl Iterator<Item = ((Routed, Option<Addressee>), Option<Refusal>)>,
        profiles: &Profiles,
        expiries: &HashMap<TimerId, i64>,
        stale: &mut Vec<TimerId>,
    ) -> Vec<(Job, Arc<ChannelRuntime>)> {
        let p = &*self.pipe;
        let now = p.clock.now_ms();
        let library = p.templates.library();
        let cfg = p.cfg.get();
        let mut ahead = Vec::new();
        for (((row, members, message), who), capped) in jobs {
            let route = recipients::route_row(&row, who.as_ref(), profiles, now);
            let key = row.delivery_key();
            let routing = fallback::routing_of(&row);
            let rt = p.channels.get(&row.channel);
            let settings = rt.map(|rt| rt.settings());
            let part = settings
                .as_ref()
                .map_or(PartKey::Webhook, |s| s.channel.kind().template_part());
            let profile = who
                .as_ref()
                .and_then(|a| profiles.get(&a.tenant)?.get(&a.user_id));
            let shape = settings.as_ref().and_then(|s| s.reminder_template.as_ref());
            let (message, unrenderable) =
                match render::message(&library, &cfg, &row, message, part, profile, shape) {
                    Message::Text(m) => (Some(m), None),
                    Message::Stored => (None, None),
                    Message::Failed(e) => (None, Some(e)),
                };
            let delivery = Delivery {
                timer_id: row.id,
                kind: row.kind,
                due_at: row.due_at,
                fired_at: now,
                attempt: row.attempts.saturating_add(1),
                recipient: row.recipient,
                message: message.unwrap_or(row.message),
                idempotency_key: key,
                traceparent: row.traceparent,
            };
            let grant = settings.as_ref().and_then(|s| {
                grant_use(
                    s.channel.kind(),
                    &route,
                    row.tenant,
                    &row.channel,
                    &delivery.message,
                )
            });
            let Some(fence) = p.ownership.fence(row.shard) else {
                stale.push(row.id);
                stale.extend(members.iter().map(|m: &Member| m.timer_id));
                continue;
            };
            let job = Job {
                delivery,
                tenant: row.tenant,
                priority: row.priority,
                shard: row.shard,
                fence,
                members,
                series_base: row.attempt_base,
                route,
                routing,
                marked: false,
                expires_at: expiries.get(&row.id).copied(),
                grant,
            };
            if let Some(refusal) = capped {
                self.capped(&row.channel, job, refusal, now);
                continue;
            }
            if let Some(error) = unrenderable {
                self.unrenderable(&row.channel, job, error, now);
                continue;
            }
            match p.channels.get(&row.channel) {
                Some(rt) if marks_ahead(rt, &job, now) => ahead.push((job, rt.clone())),
                Some(rt) => rt.queue.push(job),
                None => self.no_channel(&row.channel, job, now),
            }
        }
        ahead
    }

    /// A delivery whose template could not be rendered: final, with the
    /// render error, for the timer and every member merged into it (they
    /// would have gone out in the same message).
    fn unrenderable(&self, channel: &str, job: Job, error: String, now: i64) {
        let p = &*self.pipe;
        tracing::warn!(timer_id = job.delivery.timer_id, channel, error = %error,
                       "a message could not be rendered from its template");
        if let Some(rt) = p.channels.get(channel) {
            rt.metrics.template_error.increment(1);
        }
        let attempt = Attempt {
            delivery: &job.delivery,
            channel,
            tenant: job.tenant,
            priority: job.priority,
            shard: job.shard,
            fence: Some(job.fence),
            started_at: now,
            finished_at: now,
            series_base: job.series_base,
            route: job.routing.as_deref(),
        };
        let detail = Detail {
            error: Some(error),
            ..Detail::default()
        };
        let mut f = Finished::decided(
            attempt,
            CompletionOutcome::Unsendable(Unsendable::TemplateError),
            detail,
        );
        for m in &job.members {
            let _ = self.done.send(f.for_member(m.timer_id, m.attempt));
        }
        f.hand = Some(p.flight.hand());
        let _ = self.done.send(f);
    }

    /// A delivery over a frequency cap: final (`capped`), or for a reminder
    /// whose cap says `on_cap = "defer"`, due again when the window frees a
    /// slot (`cap_deferred`, no attempt used). For the timer and every
    /// member merged into it (they would have gone out in the same message).
    fn capped(&self, channel: &str, job: Job, refusal: Refusal, now: i64) {
        let p = &*self.pipe;
        let Refusal {
            limit: cap,
            free_at,
            defer,
        } = refusal;
        tracing::debug!(
            timer_id = job.delivery.timer_id,
            channel,
            cap,
            free_at,
            defer,
            "a send over a frequency cap, pacing or rate limit"
        );
        let (outcome, error) = if defer {
            if let Some(rt) = p.channels.get(channel) {
                rt.metrics.deferred.increment(1);
            }
            (
                CompletionOutcome::Deferred {
                    next_due_at: free_at.max(now + 1),
                    reason: DeferReason::Capped,
                },
                format!(
                    "over {}: deferred until its window frees a slot",
                    limits::describe(&cap)
                ),
            )
        } else {
            if let Some(rt) = p.channels.get(channel) {
                rt.metrics.capped.increment(1);
            }
            (
                CompletionOutcome::Unsendable(Unsendable::Capped),
                format!("over {}", limits::describe(&cap)),
            )
        };
        let attempt = Attempt {
            delivery: &job.delivery,
            channel,
            tenant: job.tenant,
            priority: job.priority,
            shard: job.shard,
            fence: Some(job.fence),
            started_at: now,
            finished_at: now,
            series_base: job.series_base,
            route: job.routing.as_deref(),
        };
        let detail = Detail {
            error: Some(error),
            ..Detail::default()
        };
        let mut f = Finished::decided(attempt, outcome, detail);
        for m in &job.members {
            let _ = self.done.send(f.for_member(m.timer_id, m.attempt));
        }
        f.hand = Some(p.flight.hand());
        let _ = self.done.send(f);
    }

    /// A delivery for a channel the configuration lost: keep the timer,
    /// retry later, and let attempts run out if it never comes back. Merged
    /// members are let go and fire on their own.
    fn no_channel(&self, channel: &str, job: Job, now: i64) {
        let p = &*self.pipe;
        p.flight.release(job.members.iter().map(|m| m.timer_id));
        let attempt = Attempt {
            delivery: &job.delivery,
            channel,
            tenant: job.tenant,
            priority: job.priority,
            shard: job.shard,
            fence: Some(job.fence),
            started_at: now,
            finished_at: now,
            series_base: job.series_base,
            route: job.routing.as_deref(),
        };
        let outcome = SendOutcome::Retryable {
            error: format!("channel {channel:?} is not configured"),
            status: None,
            retry_after_ms: None,
        };
        let mut f = Finished::from_outcome(attempt, outcome, &RetryPolicy::default());
        f.hand = Some(p.flight.hand());
        let _ = self.done.send(f);
    }
}

/// Marks the deliveries `ahead` firing, with their members, in one write
/// (with other passes', [`crate::timers::marker::Marker::mark_pass`]), then
/// queues them: a sender finds them marked and sends without a write of its
/// own. One that is fenced or no longer pending is someone else's and leaves
/// the flight set; if the store fails they are queued unmarked, and their
/// senders mark them one group at a time. If the engine stopped meanwhile,
/// they are let go (and go back to pending).
async fn mark_ahead(p: &Pipeline, ahead: Vec<(Job, Arc<ChannelRuntime>)>) {
    let at = p.clock.now_ms();
    let marks: Vec<FiringMark> = ahead
        .iter()
        .flat_map(|(job, _)| {
            let fence = Some(job.fence);
            job.timer_ids()
                .zip(
                    std::iter::once(job.delivery.attempt)
                        .chain(job.members.iter().map(|m| m.attempt)),
                )
                .map(move |(timer_id, attempt)| FiringMark {
                    timer_id,
                    attempt,
                    fence,
                    at,
                    // Grant sends are marked by their senders (`marks_ahead`).
                    grant: None,
                })
                .collect::<Vec<_>>()
        })
        .collect();
    let Some(applied) = p.marker.mark_pass(p.store.as_ref(), marks).await else {
        p.hot.store_errors.increment(1);
        for (job, rt) in ahead {
            rt.queue.push(job);
        }
        return;
    };
    // Each job's own mark comes first, then its members'.
    let (mut at_mark, mut stopped) = (0, Vec::new());
    for (mut job, rt) in ahead {
        let own = applied.get(at_mark).copied();
        at_mark += 1 + job.members.len();
        match own {
            Some(Applied::Yes) => {
                job.marked = true;
                if p.stop.is_stopped() {
                    stopped.push(job);
                } else {
                    rt.queue.push(job);
                }
            }
            Some(Applied::Fenced) => {
                p.fenced(1);
                job.release(&p.flight);
            }
            _ => job.release(&p.flight),
        }
    }
    p.let_go(stopped).await;
}

/// A row to route, the members merged into it and, for a group, its composed
/// message and whether it is a reminder's.
type Routed = (TimerRecord, Vec<Member>, Option<Composed>);

/// The subscribe grant a delivery spends: on a mini-program channel, to a
/// user of the directory, the grant of the template its message names.
/// A message without a template spends none (the channel refuses it).
fn grant_use(
    kind: herald_channels::ChannelKind,
    route: &Route,
    tenant: TenantId,
    channel: &str,
    message: &str,
) -> Option<herald_store::GrantUse> {
    if kind != herald_channels::ChannelKind::WechatMini {
        return None;
    }
    let Route::To { user_id, .. } = route else {
        return None;
    };
    if user_id.is_empty() {
        return None;
    }
    #[derive(serde::Deserialize)]
    struct Named {
        template_id: String,
    }
    let named: Named = serde_json::from_str(message).ok()?;
    Some(herald_store::GrantUse {
        tenant,
        user_id: user_id.clone(),
        channel: channel.to_string(),
        template_id: named.template_id,
    })
}

/// Whether a delivery is marked firing before it is queued: on a channel
/// that skips in-doubt sends, when it will be sent (not settled by the
/// directory, not held by the channel's quiet hours now).
///
/// A send that spends a subscribe grant is not: its sender marks it (and
/// spends the grant) just before the call. Marked a whole fetch pass ahead,
/// a crash mid-burst left every queued grant send in doubt, its grant spent
/// and its user never reminded; marked at the send, only the sends in
/// flight are.
fn marks_ahead(rt: &ChannelRuntime, job: &Job, now: i64) -> bool {
    if rt.settings().in_doubt != InDoubt::Skip || job.grant.is_some() {
        return false;
    }
    match &job.route {
        Route::Unsendable(_) | Route::Quiet { .. } => false,
        Route::To {
            skip_channel_quiet: true,
            ..
        } => true,
        Route::AsStored | Route::To { .. } => rt.quiet_until(now).is_none(),
    }
}

/// A fetch's due timers sorted by what their rows say ([`sort`]).
#[derive(Debug, Default)]
pub(crate) struct Sorted {
    /// Entries whose row is gone or not pending, or due at another time (a
    /// retried or moved timer has a newer entry that fires it).
    pub stale: Vec<TimerId>,
    /// Rows sent alone.
    pub plain: Vec<TimerRecord>,
    /// Reminders and digests, to group ([`bundles::plan`]).
    pub bundled: Vec<(Bundle, TimerRecord)>,
    /// The wheel entries of `bundled`, to requeue if grouping fails.
    pub requeue: Vec<DueTimer>,
}

/// Matches the due timers taken with the rows read for them.
pub(crate) fn sort(fresh: Vec<DueTimer>, rows: Vec<TimerRecord>) -> Sorted {
    let mut by_id: HashMap<TimerId, TimerRecord> = rows.into_iter().map(|r| (r.id, r)).collect();
    let mut out = Sorted {
        plain: Vec::with_capacity(fresh.len()),
        ..Sorted::default()
    };
    for t in fresh {
        match by_id.remove(&t.id) {
            // The wheel entry must match the row's current due time: a
            // retried or moved timer has a newer entry that fires it.
            Some(row) if row.due_at == t.due_at => match Bundle::of(&row) {
                Some(b) => {
                    out.requeue.push(t);
                    out.bundled.push((b, row));
                }
                None => out.plain.push(row),
            },
            _ => out.stale.push(t.id),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use herald_store::CompletionOutcome;

    use super::*;
    use crate::config::EngineConfig;
    use crate::testkit::{CHANNEL, Rig, T0};

    #[tokio::test]
    async fn sorting_keeps_current_entries_and_sets_reminders_apart() {
        let rig = Rig::new(EngineConfig::default()).await;
        let ids = rig.insert(&[T0, T0, T0]).await;
        let reminder = rig.insert_reminder("u1", "email").await;
        let mut fresh = Vec::new();
        for &id in ids.iter().chain([&reminder]) {
            fresh.push(rig.due(id).await);
        }
        // An older wheel entry of a moved timer, and one whose row is gone.
        fresh[1].due_at -= 1;
        let rows = vec![
            rig.timer(ids[0]).await,
            rig.timer(ids[1]).await,
            rig.timer(reminder).await,
        ];
        let sorted = sort(fresh, rows);
        assert_eq!(sorted.stale, [ids[1], ids[2]]);
        let plain: Vec<TimerId> = sorted.plain.iter().map(|r| r.id).collect();
        assert_eq!(plain, [ids[0]]);
        let bundled: Vec<TimerId> = sorted.bundled.iter().map(|(_, r)| r.id).collect();
        assert_eq!(bundled, [reminder]);
        let requeue: Vec<TimerId> = sorted.requeue.iter().map(|t| t.id).collect();
        assert_eq!(requeue, [reminder]);
    }

    #[tokio::test]
    async fn queues_due_timers_on_their_channel_and_holds_them_in_flight() {
        let rig = Rig::new(EngineConfig::default()).await;
        let ids = rig.insert(&[T0, T0, T0 - 5]).await;
        for &id in &ids {
            rig.pipe.ready.push(rig.due(id).await);
        }
        let (tx, _rx) = mpsc::unbounded_channel();
        let f = Fetcher::new(rig.pipe.clone(), tx);
        assert_eq!(f.run_once().await, FetchPass::Routed);
        assert_eq!(f.run_once().await, FetchPass::Idle);
        let jobs = rig.pipe.channels[CHANNEL].queue.pop_many(10);
        let queued: Vec<i64> = jobs.iter().map(|j| j.delivery.timer_id).collect();
        assert_eq!(queued, [ids[2], ids[0], ids[1]], "earliest due first");
        assert!(jobs.iter().all(|j| j.delivery.attempt == 1));
        assert!(jobs.iter().all(|j| j.delivery.fired_at == T0));
        assert_eq!(rig.pipe.flight.in_flight(), 3);
        assert!(rig.pipe.flight.contains(ids[0]));
    }

    #[tokio::test]
    async fn drops_copies_stale_entries_and_shards_it_lost() {
        let rig = Rig::new(EngineConfig::default()).await;
        let ids = rig.insert(&[T0, T0, T0]).await;
        let (a, b, c) = (
            rig.due(ids[0]).await,
            rig.due(ids[1]).await,
            rig.due(ids[2]).await,
        );
        let moved = crate::timers::queue::DueTimer {
            due_at: b.due_at - 1,
            ..b
        };
        rig.pipe.ownership.drop_shards([c.shard]);
        rig.pipe.ready.push_many([a, a, moved, c]);
        let (tx, _rx) = mpsc::unbounded_channel();
        let f = Fetcher::new(rig.pipe.clone(), tx);
        assert_eq!(f.run_once().await, FetchPass::Routed);
        let queued: Vec<i64> = rig.pipe.channels[CHANNEL]
            .queue
            .pop_many(10)
            .iter()
            .map(|j| j.delivery.timer_id)
            .collect();
        assert_eq!(queued, [ids[0]]);
        assert_eq!(
            rig.pipe.flight.in_flight(),
            1,
            "the rest gave their permits back"
        );
        assert_eq!(rig.pipe.ready.len(), 0);
    }

    #[tokio::test]
    async fn takes_no_more_than_the_in_flight_bound() {
        let rig = Rig::new(EngineConfig {
            max_inflight: 2,
            ..Default::default()
        })
        .await;
        for id in rig.insert(&[T0; 5]).await {
            rig.pipe.ready.push(rig.due(id).await);
        }
        let (tx, _rx) = mpsc::unbounded_channel();
        let f = Fetcher::new(rig.pipe.clone(), tx);
        assert_eq!(f.run_once().await, FetchPass::Routed);
        assert_eq!(f.run_once().await, FetchPass::Idle, "no room left");
        assert_eq!(rig.pipe.channels[CHANNEL].queue.len(), 2);
        assert_eq!(rig.pipe.ready.len(), 3);
    }

    #[tokio::test]
    async fn a_channel_no_longer_configured_gets_a_retry() {
        let rig = Rig::new(EngineConfig::default()).await;
        let id = rig.insert_on("gone", &[T0]).await[0];
        rig.pipe.ready.push(rig.due(id).await);
        let (tx, mut rx) = mpsc::unbounded_channel();
        let f = Fetcher::new(rig.pipe.clone(), tx);
        assert_eq!(f.run_once().await, FetchPass::Routed);
        let finished = rx.try_recv().expect("an outcome");
        assert_eq!(finished.completion.timer_id, id);
        assert!(matches!(
            finished.completion.outcome,
            CompletionOutcome::Retry { next_due_at } if next_due_at > T0
        ));
        assert!(
            finished
                .completion
                .error
                .unwrap()
                .contains("not configured")
        );
        assert_eq!(
            rig.pipe.flight.in_flight(),
            1,
            "until the completer records it"
        );
    }

    /// Reminders over a cap: one store call for the pass; the first of a
    /// user goes, the next is deferred (`on_cap = "defer"`) or capped.
    #[tokio::test]
    async fn sends_over_a_cap_are_capped_or_deferred() {
        for on_cap in [
            herald_core::caps::OnCap::Defer,
            herald_core::caps::OnCap::Drop,
        ] {
            let rule = herald_core::caps::CapConfig {
                name: "app".into(),
                topic: None,
                channel_type: Some("app".into()),
                per_channel_type: false,
                max: 1,
                window: "1h".into(),
                tenants: None,
                on_cap,
            }
            .rule(0, None)
            .unwrap();
            let rig = Rig::new(EngineConfig {
                merge_window_ms: 0,
                caps: vec![rule],
                ..Default::default()
            })
            .await;
            let first = rig.insert_reminder("u1", "app").await;
            let second = rig.insert_reminder("u1", "app").await;
            let other = rig.insert_reminder("u2", "app").await;
            for id in [first, second, other] {
                rig.pipe.ready.push(rig.due(id).await);
            }
            let (tx, mut rx) = mpsc::unbounded_channel();
            let f = Fetcher::new(rig.pipe.clone(), tx);
            assert_eq!(f.run_once().await, FetchPass::Routed);
            let mut queued: Vec<i64> = rig.pipe.channels[CHANNEL]
                .queue
                .pop_many(10)
                .iter()
                .map(|j| j.delivery.timer_id)
                .collect();
            queued.sort();
            assert_eq!(queued, [first, other]);
            let settled = rx.try_recv().expect("an outcome");
            assert_eq!(settled.completion.timer_id, second);
            match on_cap {
                herald_core::caps::OnCap::Defer => assert!(matches!(
                    settled.completion.outcome,
                    CompletionOutcome::Deferred {
                        reason: herald_store::DeferReason::Capped,
                        next_due_at,
                    } if next_due_at > T0
                )),
                herald_core::caps::OnCap::Drop => assert_eq!(
                    settled.completion.outcome,
                    CompletionOutcome::Unsendable(Unsendable::Capped)
                ),
            }
            assert!(settled.completion.error.unwrap().contains("\"app\""));
        }
    }

    /// A rate of `rate` deliveries a second for the default tenant.
    fn default_tenant_at(rate: f64) -> EngineConfig {
        EngineConfig {
            tenants: HashMap::from([(
                herald_core::DEFAULT_TENANT,
                crate::timers::tenants::TenantLimits {
                    weight: 1,
                    rate_per_sec: Some(rate),
                },
            )]),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn takes_due_timers_fairly_between_tenants() {
        // A's backlog is due first, B's later; with room for four, B gets half.
        let rig = Rig::new(EngineConfig {
            max_inflight: 4,
            ..Default::default()
        })
        .await;
        let a = rig.insert(&[T0 - 100; 6]).await;
        let b = rig.insert_for(TenantId(2), CHANNEL, &[T0; 2]).await;
        for &id in a.iter().chain(&b) {
            // The wheel entry carries the row's tenant.
            rig.pipe.ready.push(rig.due(id).await);
        }
        let (tx, _rx) = mpsc::unbounded_channel();
        let f = Fetcher::new(rig.pipe.clone(), tx);
        assert_eq!(f.run_once().await, FetchPass::Routed);
        let mut queued: Vec<(i64, TenantId)> = rig.pipe.channels[CHANNEL]
            .queue
            .pop_many(10)
            .iter()
            .map(|j| (j.delivery.timer_id, j.tenant))
            .collect();
        queued.sort();
        let (ta, tb) = (herald_core::DEFAULT_TENANT, TenantId(2));
        assert_eq!(queued, [(a[0], ta), (a[1], ta), (b[0], tb), (b[1], tb)]);
        assert_eq!(rig.pipe.ready.len(), 4);
    }

    #[tokio::test]
    async fn leaves_a_rate_limited_tenants_surplus_in_the_ready_queue() {
        // At 2 a second, two queued deliveries are enough; the rest wait in
        // the ready queue, holding no in-flight room.
        let rig = Rig::new(default_tenant_at(2.0)).await;
        for id in rig.insert(&[T0; 5]).await {
            rig.pipe.ready.push(rig.due(id).await);
        }
        let (tx, _rx) = mpsc::unbounded_channel();
        let f = Fetcher::new(rig.pipe.clone(), tx);
        assert_eq!(f.run_once().await, FetchPass::Routed);
        assert_eq!(f.run_once().await, FetchPass::Held);
        assert_eq!(rig.pipe.channels[CHANNEL].queue.len(), 2);
        assert_eq!(rig.pipe.ready.len(), 3);
        assert_eq!(rig.pipe.flight.in_flight(), 2);
        // One goes out: one more may follow.
        rig.pipe.channels[CHANNEL].queue.pop_many(1);
        assert_eq!(f.run_once().await, FetchPass::Routed);
        assert_eq!(rig.pipe.channels[CHANNEL].queue.len(), 2);
        assert_eq!(rig.pipe.ready.len(), 2);
    }
}
