//! One configured channel at run time: its queue of fetched deliveries, its
//! rate limiter, the provider's pause, its quiet hours and its counters. The
//! timer pipeline and the campaign workers send through it alike.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::RwLock;
use tokio::sync::Notify;

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use herald_channels::{Channel, Delivery, QuietPolicy, SendOutcome};
use herald_core::{Clock, Priority, RetryPolicy, TenantId, TimerId};
use herald_store::Fence;

use crate::channels::gate::PriorityGate;
use crate::channels::spec::ChannelSpec;
use crate::channels::state::{OperatorPause, OutcomeCounts, Pause, Quiet};
use crate::loops::tuned::Tuned;
use crate::observe::metrics::ChannelMetrics;
use crate::timers::fair::Urgency;
use crate::timers::flight::Flight;
use crate::timers::queue::FairQueue;
use crate::timers::recipients::Route;

/// One node's limiter for `rate` a second shared by `nodes`: its share, with
/// a burst of a tenth of a second of it, so that nodes starting together
/// (or a node idle for a while) add little above the cluster's rate.
fn share_limiter(rate: f64, nodes: usize) -> Option<Arc<DefaultDirectRateLimiter>> {
    let share = (rate / nodes as f64).max(1e-6);
    let period = Duration::from_secs_f64(1.0 / share);
    let burst = NonZeroU32::new(((share / 10.0).ceil() as u32).clamp(1, 1000))?;
    Some(Arc::new(RateLimiter::direct(
        Quota::with_period(period)?.allow_burst(burst),
    )))
}

/// A fetched timer waiting for its channel.
pub(crate) struct Job {
    pub delivery: Delivery,
    pub tenant: TenantId,
    pub priority: Priority,
    pub shard: u16,
    /// The lease the timer was fetched under; checked again just before the send.
    pub fence: Fence,
    /// Timers merged into this delivery besides its own (reminders, a
    /// digest's other timers): their outcomes follow it. Those fetched in the
    /// same pass hold an in-flight permit, those found in the store do not;
    /// the flight set knows which.
    pub members: Vec<Member>,
    /// The timer's `attempt_base` (see [`crate::timers::completer::Attempt`]).
    pub series_base: u32,
    /// Where it goes, when the subscriber directory decided (at fetch time).
    pub route: Route,
    /// The timer's routing when it has a fallback route (its outcome may
    /// move it on to the next step).
    pub routing: Option<Arc<herald_core::timer::Routing>>,
    /// Marked firing in the store by the fetcher, with the rest of its
    /// batch, on a channel that skips in-doubt sends: the send goes without
    /// a write of its own ([`crate::timers::marker`]).
    pub marked: bool,
    /// When it is no longer worth sending: a reminder's subject start
    /// (`herald_core::early::expiry`); `None` for everything else.
    pub expires_at: Option<i64>,
    /// The subscribe grant the send spends (a mini-program channel's, to a
    /// user of the directory): spent when the timer is marked firing.
    pub grant: Option<herald_store::GrantUse>,
}

/// A timer riding along in another timer's delivery (a merged reminder, a
/// digest's other timer).
pub(crate) struct Member {
    pub timer_id: TimerId,
    /// Its own attempt number (the store checks it against its own count).
    pub attempt: u32,
}

impl Job {
    /// Lets go of every timer this job holds in the flight set, with the
    /// permits they hold.
    pub fn release(self, flight: &Flight) {
        flight.release(self.timer_ids());
    }

    /// Its own timer and its members'.
    pub fn timer_ids(&self) -> impl Iterator<Item = TimerId> + '_ {
        std::iter::once(self.delivery.timer_id).chain(self.members.iter().map(|m| m.timer_id))
    }
}

impl Urgency for Job {
    fn key(&self) -> (Priority, i64, TimerId) {
        (self.priority, self.delivery.due_at, self.delivery.timer_id)
    }
    fn tenant(&self) -> TenantId {
        self.tenant
    }
}

/// What a configuration reload may change of a channel: its provider
/// client (endpoints, credentials), limits, quiet hours and template.
pub(crate) struct ChannelSettings {
    pub channel: Arc<dyn Channel>,
    pub retry: RetryPolicy,
    pub concurrency: usize,
    /// The channel's rate across the whole cluster.
    pub rate_per_sec: Option<f64>,
    pub quiet: Option<Quiet>,
    pub reminder_template: Option<serde_json::Value>,
    pub in_doubt: herald_channels::InDoubt,
    pub pacing: Vec<herald_core::pacing::Pace>,
}

impl ChannelSettings {
    fn of(spec: ChannelSpec) -> Self {
        Self {
            channel: spec.channel,
            retry: spec.retry,
            concurrency: spec.concurrency.max(1),
            rate_per_sec: spec.rate_per_sec,
            quiet: spec.quiet.map(|(window, policy, label)| Quiet {
                window,
                policy,
                label,
            }),
            reminder_template: spec.reminder_template,
            in_doubt: spec.in_doubt,
            pacing: spec.pacing,
        }
    }
}

/// One configured channel at run time.
pub(crate) struct ChannelRuntime {
    /// The configured name; a reload never changes it.
    name: String,
    settings: Tuned<ChannelSettings>,
    /// Fetched deliveries: fair between tenants, most urgent first inside one.
    pub queue: FairQueue<Job>,
    /// This node's share of the rate: `rate_per_sec` over the live nodes.
    limiter: RwLock<Option<Arc<DefaultDirectRateLimiter>>>,
    /// Who takes the limiter's next slot: the most urgent waiting send.
    gate: PriorityGate,
    /// The live nodes the share was cut for.
    sharing: AtomicUsize,
    /// Sender loops started so far; those numbered at or above the current
    /// concurrency wait until a reload raises it again.
    pub started: AtomicUsize,
    /// Poked when a reload changed the settings, so parked senders look again.
    pub retuned: Notify,
    pub metrics: ChannelMetrics,
    pub pause: Pause,
    /// An operator's cluster-wide pause.
    pub operator: OperatorPause,
    pub counts: OutcomeCounts,
}

impl ChannelRuntime {
    /// A channel whose queue shares turns between tenants by `weights`.
    pub fn new(spec: ChannelSpec, weights: HashMap<TenantId, u32>) -> Self {
        let limiter = spec.rate_per_sec.and_then(|r| share_limiter(r, 1));
        let name = spec.channel.name().to_string();
        Self {
            metrics: ChannelMetrics::new(&name),
            name,
            settings: Tuned::new(ChannelSettings::of(spec)),
            queue: FairQueue::new(weights),
            limiter: RwLock::new(limiter),
            gate: PriorityGate::default(),
            sharing: AtomicUsize::new(1),
            started: AtomicUsize::new(0),
            retuned: Notify::new(),
            pause: Pause::default(),
            operator: OperatorPause::default(),
            counts: OutcomeCounts::default(),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The settings now; a reload after this call leaves them as they were.
    pub fn settings(&self) -> Arc<ChannelSettings> {
        self.settings.get()
    }

    /// The provider client now in use.
    pub fn channel(&self) -> Arc<dyn Channel> {
        self.settings.get().channel.clone()
    }

    /// What a send this channel left in doubt does next.
    pub fn in_doubt(&self) -> herald_channels::InDoubt {
        self.settings.get().in_doubt
    }

    pub fn concurrency(&self) -> usize {
        self.settings.get().concurrency
    }

    /// Applies a reload: later sends use the new client, limits and quiet
    /// hours; sends already under way finish as they started. The rate
    /// limiter is cut again for the nodes it is shared by.
    pub fn retune(&self, spec: ChannelSpec) {
        let new = ChannelSettings::of(spec);
        let rate = new.rate_per_sec;
        self.settings.set(new);
        let nodes = self.sharing.load(Ordering::Acquire).max(1);
        *self.limiter.write() = rate.and_then(|r| share_limiter(r, nodes));
        self.retuned.notify_waiters();
        tracing::info!(channel = %self.name, rate_per_sec = rate, "channel settings reloaded");
    }

    /// Waits until the provider's pause (if any) is over and the channel's
    /// rate limit lets one more send through. Sends waiting for the rate
    /// take its slots by `priority` (then arrival), whether a timer's or a
    /// campaign's; a channel without a rate has no line to wait in.
    pub async fn wait_for_rate(&self, clock: &dyn Clock, priority: Priority) {
        loop {
            let wait = self.pause.until().saturating_sub(clock.now_ms());
            if wait <= 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(wait as u64)).await;
        }
        let limiter = self.limiter.read().clone();
        if let Some(limiter) = limiter {
            self.gate.pass(priority, limiter.until_ready()).await;
        }
    }

    /// Cuts this node's share of the channel's rate for `nodes` live nodes
    /// (a no-op while their number stays the same). Between the moment a
    /// node joins and the moment every node has seen it (one heartbeat), the
    /// cluster may send up to one node's share too much; the small burst
    /// below keeps that short.
    pub fn share_rate(&self, nodes: usize) {
        let nodes = nodes.max(1);
        let Some(rate) = self.settings.get().rate_per_sec else {
            self.sharing.store(nodes, Ordering::Release);
            return;
        };
        if self.sharing.swap(nodes, Ordering::AcqRel) == nodes {
            return;
        }
        *self.limiter.write() = share_limiter(rate, nodes);
        tracing::info!(channel = %self.name, nodes, share_per_sec = rate / nodes as f64, "channel rate shared among the live nodes");
    }

    /// Counts an answer and, for a throttle, pauses the channel. A throttle's
    /// `retry_after_ms` becomes the time left until the pause ends, so that
    /// whoever retries the delivery waits for exactly that.
    pub fn observe(&self, outcome: &mut SendOutcome, n: u64, now: i64) {
        self.counts.add(outcome, n);
        match outcome {
            SendOutcome::Throttled { retry_after_ms, .. } => {
                let until = self.pause.throttled(now, *retry_after_ms);
                tracing::warn!(channel = %self.name, paused_until = until, "provider throttled the channel; pausing");
                *retry_after_ms = Some(until.saturating_sub(now).max(0) as u64);
            }
            SendOutcome::Delivered { .. } => self.pause.cleared(),
            _ => {}
        }
    }

    /// When the quiet-hours window `now` falls in ends, with its policy and
    /// how it reads in the configuration.
    pub fn quiet_until(&self, now: i64) -> Option<(i64, QuietPolicy, String)> {
        let s = self.settings.get();
        let q = s.quiet.as_ref()?;
        let end = q.window.ends_after(now)?;
        Some((end, q.policy, q.label.clone()))
    }
}
