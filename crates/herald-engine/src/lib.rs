//! Herald's engine.
//!
//! It turns committed timers into deliveries: a loader keeps the next window
//! of pending timers in a timing wheel, a driver fires them on time, a fetcher
//! reads their rows and routes them to channels, channel loops send within
//! each channel's limits, and a completer records outcomes in batches. API
//! writes go through a group-commit writer. Each of those loops lives in the
//! module named after it and shares one `Pipeline` (see `pipeline.rs`).
//!
//! The engine sees the world through two seams only: [`herald_store::Store`]
//! and [`herald_channels::Channel`]. It knows neither SQL nor HTTP.

mod bundles;
pub mod campaign;
mod channel_runtime;
mod channel_state;
mod channel_worker;
mod completer;
mod copies;
mod driver;
mod fair;
mod fetcher;
mod flight;
mod group_commit;
mod health;
mod listener;
mod live;
mod loader;
mod marker;
mod membership;
pub mod metrics;
mod ownership;
mod pauses;
mod pipeline;
mod queue;
mod recipients;
mod reminders;
pub mod retention;
mod retune;
mod sampled;
mod schedule;
mod stats;
mod stop;
mod supervise;
mod tenants;
mod tokens;
mod tuned;
mod writer;

#[cfg(test)]
mod flight_paths;
#[cfg(test)]
mod testkit;
#[cfg(test)]
mod timer_path;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

pub use channel_state::{ChannelStatus, OutcomeSnapshot};
pub use health::{Health, LoopHealth};
use herald_channels::Channel;
use herald_core::{Clock, RetryPolicy, ShardSet, TenantId, TimerId};
use herald_store::{Store, TimerRecord, WriteOp, WriteResult};
pub use live::{ChannelLive, LiveOutcome, LiveSecond, LiveView};
pub use sampled::{NodeView, TimerCounts};
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use futures_util::FutureExt;
use pipeline::Pipeline;
pub use retune::{ChannelRetune, ENGINE_LIVE_KEYS, JOBS_LIVE_KEYS, RetuneError};
pub use stop::Stop;
use supervise::Restart;
pub use tenants::TenantLimits;
pub use tokens::{StoreVault, token_lease_name};

/// Runtime settings; all have defaults fit for one node.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EngineConfig {
    /// How far ahead the loader keeps pending timers in the wheel.
    pub window_ms: i64,
    /// Timers read per loader query.
    pub load_batch: usize,
    /// How often the loader tops the window up.
    pub load_interval_ms: u64,
    /// Most timers held in the wheel at once (bounds memory).
    pub max_loaded: usize,
    /// Most deliveries fetched and not yet recorded. Bounds memory, and bounds
    /// what a crash can deliver twice.
    pub max_inflight: usize,
    /// Timer rows read per fetch.
    pub fetch_batch: usize,
    /// Most outcomes recorded per transaction.
    pub complete_batch: usize,
    /// Most API writes per group-commit transaction.
    pub write_batch: usize,
    /// How often store-wide gauges (timers by state) are sampled; 0 turns it
    /// off. Each sample reads the store's timer counters, not the timers.
    pub stats_interval_ms: u64,
    /// Longest a graceful shutdown waits for in-flight deliveries.
    pub drain_timeout_ms: u64,
    /// How long every in-flight slot may stay taken with nothing sending and
    /// none given back before `/readyz` and `herald_inflight_stalled` report
    /// the node stalled; 0 turns the watch off.
    pub inflight_stall_ms: u64,
    /// How long a shard lease (and a node's heartbeat) lasts. A dead node's
    /// shards move to others after at most this plus `heartbeat_ms`.
    pub lease_ms: i64,
    /// How often a node beats, renews its leases and rebalances.
    pub heartbeat_ms: u64,
    /// A lease this close to expiry no longer covers a send (clock skew margin).
    pub lease_guard_ms: i64,
    /// On a store shared by several nodes, how often the loader re-reads its
    /// whole window: the safety net under the store's notifications.
    pub rescan_interval_ms: u64,
    /// How often each node counts every tenant's pending timers for the
    /// `max_pending` quotas (`[tenants.NAME]`); what other nodes accept
    /// in between is not counted until the next count.
    pub quota_refresh_ms: u64,
    /// Reminders of one user on one channel due within this many milliseconds
    /// of the earliest go out as one delivery; 0 sends each alone. Set from
    /// the `[reminders]` configuration.
    #[serde(skip)]
    pub merge_window_ms: i64,
    /// Rule planning and job sending; set from the `[jobs]` configuration.
    #[serde(skip)]
    pub campaign: campaign::CampaignConfig,
    /// What is deleted when; set from the `[retention]` configuration.
    #[serde(skip)]
    pub retention: retention::RetentionConfig,
    /// Dispatch weight and delivery rate by tenant; a tenant not listed
    /// weighs 1 and has no rate. Set from the `[tenants.NAME]` configuration
    /// once the names resolve to ids.
    #[serde(skip)]
    pub tenants: HashMap<TenantId, TenantLimits>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            window_ms: 60_000,
            load_batch: 10_000,
            load_interval_ms: 1_000,
            max_loaded: 2_000_000,
            max_inflight: 20_000,
            fetch_batch: 1_000,
            complete_batch: 5_000,
            write_batch: 20_000,
            stats_interval_ms: 1_000,
            drain_timeout_ms: 10_000,
            inflight_stall_ms: 60_000,
            lease_ms: 6_000,
            heartbeat_ms: 2_000,
            lease_guard_ms: 1_000,
            rescan_interval_ms: 30_000,
            quota_refresh_ms: 1_000,
            merge_window_ms: 60_000,
            campaign: campaign::CampaignConfig::default(),
            retention: retention::RetentionConfig::default(),
            tenants: HashMap::new(),
        }
    }
}

/// A channel and the limits the engine applies to it.
pub struct ChannelSpec {
    pub channel: Arc<dyn Channel>,
    pub concurrency: usize,
    pub rate_per_sec: Option<f64>,
    pub retry: RetryPolicy,
    /// Do-not-disturb window, its policy, and how it reads in config.
    pub quiet: Option<(
        herald_core::QuietWindow,
        herald_channels::QuietPolicy,
        String,
    )>,
    /// How reminders become this channel's message (see
    /// [`herald_channels::template`]); `None` sends Herald's own shape.
    pub reminder_template: Option<serde_json::Value>,
    /// What a send left in doubt by a dead node does next.
    pub in_doubt: herald_channels::InDoubt,
}

impl ChannelSpec {
    /// A channel with no quiet hours.
    pub fn new(
        channel: Arc<dyn Channel>,
        concurrency: usize,
        rate_per_sec: Option<f64>,
        retry: RetryPolicy,
    ) -> Self {
        Self {
            channel,
            concurrency,
            rate_per_sec,
            retry,
            quiet: None,
            reminder_template: None,
            in_doubt: herald_channels::InDoubt::Resend,
        }
    }
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum EngineError {
    /// Shared: one store failure can answer several requests of a batch.
    #[error("store: {0}")]
    Store(Arc<herald_store::StoreError>),
    #[error("the engine is shutting down")]
    ShuttingDown,
}

impl From<herald_store::StoreError> for EngineError {
    fn from(e: herald_store::StoreError) -> Self {
        EngineError::Store(Arc::new(e))
    }
}

/// A timer as the API shows it: the stored row, plus whether this node is
/// delivering it right now.
#[derive(Debug, Clone)]
pub struct TimerView {
    pub record: TimerRecord,
    pub firing: bool,
}

impl herald_store::Owned for TimerView {
    fn owner(&self) -> herald_core::TenantId {
        self.record.tenant
    }
}

struct Inner {
    pipe: Arc<Pipeline>,
    write_tx: mpsc::Sender<writer::WriteRequest>,
    shards: u16,
    membership: Arc<membership::Membership>,
    campaign: Arc<campaign::Shared>,
    /// The retention sweeper, whose settings a reload replaces.
    retention: Arc<retention::Sweeper>,
    /// Where sender loops hand their outcomes; kept for senders a reload starts.
    done_tx: mpsc::UnboundedSender<completer::Finished>,
    loops: Arc<supervise::Loops>,
    tasks: parking_lot::Mutex<Vec<JoinHandle<()>>>,
    /// The campaign loops, awaited at shutdown so a worker records what it sent.
    campaign_tasks: parking_lot::Mutex<Vec<JoinHandle<()>>>,
}

/// A value the first run of a supervised loop takes; restarts find `None`.
fn take_once<T>(value: T) -> Arc<parking_lot::Mutex<Option<T>>> {
    Arc::new(parking_lot::Mutex::new(Some(value)))
}

/// A fresh incarnation: random, positive, never 0 (the value of rows written
/// before incarnations existed).
fn new_incarnation() -> i64 {
    rand::random_range(1..=i64::MAX)
}

/// A running engine. Cheap to clone.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

impl Engine {
    /// Starts every background task. `shards` is the cluster's shard count as
    /// the store reports it; `node_id` names this node in the cluster. Each
    /// start draws a new incarnation: a process restarted under the same id
    /// takes its old leases only once they expire (or were released at a
    /// graceful shutdown), so an old process that is merely stalled is fenced
    /// off rather than firing beside the new one.
    pub async fn start(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        channels: Vec<ChannelSpec>,
        cfg: EngineConfig,
        shards: u16,
        node_id: &str,
    ) -> Self {
        metrics::describe();
        let pipe = Arc::new(Pipeline::new(store, clock, channels, cfg, shards));
        let cfg = pipe.cfg.get();
        let (store, clock) = (&pipe.store, &pipe.clock);
        let holder = herald_store::Holder::new(node_id, new_incarnation());
        let membership = Arc::new(membership::Membership::new(
            pipe.clone(),
            holder.clone(),
            shards,
        ));
        // Claim a share before anything loads, so a restarted node fires again
        // at once; later rounds run in the background.
        pipe.schedule
            .raise_horizon(clock.now_ms().saturating_add(cfg.window_ms));
        if let Err(e) = membership.run_once().await {
            tracing::warn!(error = %e, "first membership round failed; retrying in the background");
        }
        let (write_tx, write_rx) = mpsc::channel(65_536);
        let (done_tx, done_rx) = mpsc::unbounded_channel();
        let loops = Arc::new(supervise::Loops::new(pipe.stop.clone()));

        let mut tasks = Vec::new();
        // The writer and the completer own their queues (requests waiting for
        // a commit, outcomes and their in-flight permits): a restart could not
        // rebuild them, so their death fails the engine instead.
        let write_rx = take_once(write_rx);
        tasks.push(loops.spawn("writer", Restart::Never, {
            let pipe = pipe.clone();
            move || match write_rx.lock().take() {
                Some(rx) => writer::run(pipe.clone(), rx).boxed(),
                None => async {}.boxed(),
            }
        }));
        let done_rx = take_once(done_rx);
        tasks.push(loops.spawn("completer", Restart::Never, {
            let pipe = pipe.clone();
            move || match done_rx.lock().take() {
                Some(rx) => completer::Completer::new(pipe.clone(), rx).run().boxed(),
                None => async {}.boxed(),
            }
        }));
        for rt in pipe.channels.values() {
            for n in 0..rt.concurrency() {
                tasks.push(spawn_sender(&loops, &pipe, rt, &done_tx, n));
            }
            rt.started
                .store(rt.concurrency(), std::sync::atomic::Ordering::Release);
        }
        tasks.push(loops.spawn("fetcher", Restart::Yes, {
            let (pipe, done) = (pipe.clone(), done_tx.clone());
            move || {
                fetcher::Fetcher::new(pipe.clone(), done.clone())
                    .run()
                    .boxed()
            }
        }));
        tasks.push(loops.spawn("driver", Restart::Yes, {
            let pipe = pipe.clone();
            move || driver::Driver::new(pipe.clone()).run().boxed()
        }));
        let subscription = match store.subscribe().await {
            Ok(sub) => sub,
            Err(e) => {
                tracing::warn!(error = %e, "no timer notifications; the loader's re-scan finds other nodes' timers");
                None
            }
        };
        // A store other processes write needs the loader's periodic re-scan.
        let shared = subscription.is_some();
        let rescan = Arc::new(loader::Rescan::default());
        if let Some(rx) = subscription {
            // A restarted listener subscribes again, and the loader re-reads
            // its window for what was announced meanwhile.
            let first = take_once(rx);
            let (pipe, rescan) = (pipe.clone(), rescan.clone());
            tasks.push(loops.spawn("listener", Restart::Yes, move || {
                let (pipe, rescan, first) = (pipe.clone(), rescan.clone(), first.lock().take());
                async move {
                    let rx = match first {
                        Some(rx) => rx,
                        None => match pipe.store.subscribe().await {
                            Ok(Some(rx)) => rx,
                            Ok(None) => return,
                            Err(e) => {
                                tracing::warn!(error = %e, "subscribing to timer notifications failed");
                                return;
                            }
                        },
                    };
                    rescan.request();
                    listener::run(pipe, rx, rescan).await
                }
                .boxed()
            }));
        }
        tasks.push(loops.spawn("loader", Restart::Yes, {
            let pipe = pipe.clone();
            move || {
                loader::Loader::new(pipe.clone(), shared, rescan.clone())
                    .run()
                    .boxed()
            }
        }));
        tasks.push(loops.spawn("membership", Restart::Yes, {
            let membership = membership.clone();
            move || membership.clone().run().boxed()
        }));
        let campaign = Arc::new(campaign::Shared {
            store: store.clone(),
            clock: clock.clone(),
            channels: pipe.channels.clone(),
            cfg: tuned::Tuned::new(cfg.campaign.clone()),
            holder: holder.clone(),
            stop: pipe.stop.clone(),
            live: pipe.live.clone(),
            work: Default::default(),
            plan: Default::default(),
            sweep: Default::default(),
            writes: Default::default(),
        });
        let campaign_tasks = campaign::spawn(campaign.clone(), &loops);
        let retention = Arc::new(retention::Sweeper {
            store: store.clone(),
            clock: clock.clone(),
            cfg: tuned::Tuned::new(cfg.retention.clone()),
            holder: holder.clone(),
            stop: pipe.stop.clone(),
        });
        tasks.push(loops.spawn("retention", Restart::Yes, {
            let retention = retention.clone();
            move || retention.clone().run().boxed()
        }));
        if let Err(e) = pauses::refresh(&pipe).await {
            tracing::warn!(error = %e, "reading channel pauses failed; retrying in the background");
        }
        tasks.push(loops.spawn("pauses", Restart::Yes, {
            let pipe = pipe.clone();
            move || pauses::run(pipe.clone()).boxed()
        }));
        tasks.push(loops.spawn("stats", Restart::Yes, {
            let pipe = pipe.clone();
            move || stats::Stats::new(pipe.clone()).run().boxed()
        }));
        tracing::info!(
            node_id,
            incarnation = holder.incarnation,
            shards,
            owned = pipe.ownership.owned().len(),
            channels = pipe.channels.len(),
            window_ms = cfg.window_ms,
            max_inflight = cfg.max_inflight,
            "engine started"
        );
        Self {
            inner: Arc::new(Inner {
                pipe,
                write_tx,
                shards,
                membership,
                campaign,
                retention,
                done_tx,
                loops,
                tasks: parking_lot::Mutex::new(tasks),
                campaign_tasks: parking_lot::Mutex::new(campaign_tasks),
            }),
        }
    }

    /// The number of virtual shards timers are spread over.
    pub fn shards(&self) -> u16 {
        self.inner.shards
    }

    /// This node's id in the cluster.
    pub fn node_id(&self) -> &str {
        &self.inner.membership.node.node_id
    }

    /// This process start's incarnation (see [`herald_store::Holder`]).
    pub fn incarnation(&self) -> i64 {
        self.inner.membership.node.incarnation
    }

    /// Whether every core loop runs, this node's leases are current and its
    /// in-flight slots are not stalled.
    pub fn health(&self) -> Health {
        let inner = &self.inner;
        let mut loops: Vec<LoopHealth> = Vec::new();
        for st in inner.loops.states() {
            match loops.iter_mut().find(|l| l.name == st.name) {
                Some(l) => {
                    l.alive &= st.alive();
                    l.restarts += st.restarts();
                }
                None => loops.push(LoopHealth {
                    name: st.name.clone(),
                    alive: st.alive(),
                    restarts: st.restarts(),
                }),
            }
        }
        Health {
            loops,
            leases_current: inner.membership.leases_current(inner.pipe.clock.now_ms()),
            owned_shards: inner.pipe.ownership.owned().len(),
            failed: inner.loops.failed(),
            inflight_stalled_ms: stats::watch_stall(&inner.pipe),
        }
    }

    /// Resolves if a core loop that cannot be restarted dies; the process
    /// should then exit non-zero rather than keep answering.
    pub async fn failed(&self) {
        self.inner.loops.wait_failed().await
    }

    /// Test hook: kills the core loops named `name` (as [`Health`] lists them)
    /// and holds them dead while `on`; clearing it lets them restart. Returns
    /// how many loops matched.
    #[doc(hidden)]
    pub fn inject_loop_fault(&self, name: &str, on: bool) -> usize {
        self.inner.loops.inject_fault(name, on)
    }

    /// The shards this node fires.
    pub fn owned_shards(&self) -> ShardSet {
        self.inner.pipe.ownership.owned()
    }

    pub fn has_channel(&self, name: &str) -> bool {
        self.inner.pipe.channels.contains_key(name)
    }

    pub fn channel_names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.inner.pipe.channels.keys().cloned().collect();
        v.sort();
        v
    }

    /// Applies writes through the group-commit writer. Returns after the
    /// transaction holding them committed; created timers are then already
    /// scheduled.
    pub async fn submit(&self, ops: Vec<WriteOp>) -> Result<Vec<WriteResult>, EngineError> {
        if self.inner.pipe.stop.is_stopped() {
            return Err(EngineError::ShuttingDown);
        }
        let (reply, rx) = oneshot::channel();
        self.queue_write(ops, writer::Reply::Whole(reply)).await?;
        rx.await.map_err(|_| EngineError::ShuttingDown)?
    }

    /// Like [`Engine::submit`], but each op commits or fails on its own: one
    /// op's failure (a refusal, a conflict) is that op's alone and the others
    /// still commit, as the lines of a bulk request should. The outer error
    /// is only for an engine shutting down.
    pub async fn submit_each(
        &self,
        ops: Vec<WriteOp>,
    ) -> Result<Vec<Result<WriteResult, EngineError>>, EngineError> {
        if self.inner.pipe.stop.is_stopped() {
            return Err(EngineError::ShuttingDown);
        }
        let (reply, rx) = oneshot::channel();
        self.queue_write(ops, writer::Reply::Each(reply)).await?;
        rx.await.map_err(|_| EngineError::ShuttingDown)
    }

    async fn queue_write(
        &self,
        ops: Vec<WriteOp>,
        reply: writer::Reply,
    ) -> Result<(), EngineError> {
        self.inner
            .write_tx
            .send(writer::WriteRequest { ops, reply })
            .await
            .map_err(|_| EngineError::ShuttingDown)
    }

    pub async fn get_timer(&self, id: TimerId) -> Result<Option<TimerView>, EngineError> {
        let record = self
            .inner
            .pipe
            .store
            .get_timer(id)
            .await
            .map_err(EngineError::from)?;
        Ok(record.map(|record| TimerView {
            firing: self.is_firing(id),
            record,
        }))
    }

    /// Whether this node is delivering the timer right now.
    pub fn is_firing(&self, id: TimerId) -> bool {
        self.inner.pipe.flight.contains(id)
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.inner.pipe.store
    }

    /// Every channel's state for `GET /v1/channels`, by name. Rates are left
    /// to the caller, who samples [`ChannelStatus::outcomes`] over time.
    pub async fn channel_statuses(&self) -> Vec<ChannelStatus> {
        let mut out = Vec::with_capacity(self.inner.pipe.channels.len());
        for rt in self.inner.pipe.channels.values() {
            out.push(self.status_of(rt).await);
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    async fn status_of(&self, rt: &channel_runtime::ChannelRuntime) -> ChannelStatus {
        let now = self.inner.pipe.clock.now_ms();
        let settings = rt.settings();
        let provider = settings.channel.provider_status().await;
        let paused = rt.pause.until();
        ChannelStatus {
            name: rt.name().to_string(),
            kind: settings.channel.kind().as_str(),
            concurrency: settings.concurrency,
            rate_per_sec: settings.rate_per_sec,
            token_valid_until: provider.token_valid_until,
            paused_until: (paused > now).then_some(paused),
            operator_pause: rt.operator.current(now),
            quiet_hours: settings.quiet.as_ref().map(|q| q.label.clone()),
            outcomes: rt.counts.snapshot(),
        }
    }

    /// Pauses a configured channel cluster-wide from `now` (until `until`, or
    /// until resumed); this node holds it at once, the others within about a
    /// second. Returns the channel's status after the change; `None` if no
    /// channel has that name.
    pub async fn pause_channel(
        &self,
        name: &str,
        until: Option<i64>,
        reason: Option<String>,
    ) -> Result<Option<ChannelStatus>, EngineError> {
        let pipe = &self.inner.pipe;
        if !pipe.channels.contains_key(name) {
            return Ok(None);
        }
        let now = pipe.clock.now_ms();
        let pause = herald_store::ChannelPause {
            since: now,
            until,
            reason,
        };
        pipe.store.pause_channel(name, &pause, now).await?;
        tracing::info!(channel = name, until, "channel paused");
        self.refresh_pauses().await?;
        Ok(self.channel_status(name).await)
    }

    /// Ends an operator's pause of a configured channel; `None` if no channel
    /// has that name. Resuming a channel that is not paused changes nothing.
    pub async fn resume_channel(&self, name: &str) -> Result<Option<ChannelStatus>, EngineError> {
        let pipe = &self.inner.pipe;
        if !pipe.channels.contains_key(name) {
            return Ok(None);
        }
        let was = pipe.store.resume_channel(name).await?;
        tracing::info!(channel = name, was_paused = was, "channel resumed");
        self.refresh_pauses().await?;
        Ok(self.channel_status(name).await)
    }

    async fn refresh_pauses(&self) -> Result<(), EngineError> {
        pauses::refresh(&self.inner.pipe).await?;
        Ok(())
    }

    /// One channel's state, as [`Engine::channel_statuses`] gives it.
    pub async fn channel_status(&self, name: &str) -> Option<ChannelStatus> {
        let rt = self.inner.pipe.channels.get(name)?;
        Some(self.status_of(rt).await)
    }

    /// Takes back a delivered message through the channel that sent it.
    pub async fn recall(
        &self,
        channel: &str,
        provider_msgid: &str,
        sent_at: i64,
    ) -> Option<Result<(), herald_channels::RecallError>> {
        let rt = self.inner.pipe.channels.get(channel)?;
        Some(rt.channel().recall(provider_msgid, sent_at).await)
    }

    /// Reads a provider's callback through the channel it is addressed to;
    /// `None` if no channel has that name.
    pub fn parse_callback(
        &self,
        channel: &str,
        req: &herald_channels::CallbackRequest<'_>,
    ) -> Option<Result<Vec<herald_channels::CallbackEvent>, herald_channels::CallbackError>> {
        let rt = self.inner.pipe.channels.get(channel)?;
        Some(rt.channel().parse_callback(req))
    }

    /// A configured channel, for what the API asks of it directly (its
    /// callback handshake, whether its callbacks are signed).
    pub fn channel(&self, name: &str) -> Option<Arc<dyn Channel>> {
        self.inner.pipe.channels.get(name).map(|rt| rt.channel())
    }

    /// The provider kind of a configured channel.
    pub fn channel_kind(&self, name: &str) -> Option<herald_channels::ChannelKind> {
        self.inner
            .pipe
            .channels
            .get(name)
            .map(|rt| rt.channel().kind())
    }

    /// Whether a channel resolves parties and tags itself; `None` if unknown.
    pub fn channel_fans_out(&self, name: &str) -> Option<bool> {
        self.inner
            .pipe
            .channels
            .get(name)
            .map(|rt| rt.channel().fans_out())
    }

    /// The `[jobs]` settings this node runs with now.
    pub fn campaign_config(&self) -> Arc<campaign::CampaignConfig> {
        self.inner.campaign.cfg.get()
    }

    /// Tells idle segment workers that a job has claimable segments.
    pub fn wake_workers(&self) {
        self.inner.campaign.work.notify_waiters();
    }

    /// Tells the planner (if it runs here) that rules changed, and the sweeper
    /// that jobs did.
    pub fn wake_planner(&self) {
        self.inner.campaign.plan.notify_waiters();
        self.inner.campaign.sweep.notify_waiters();
    }

    /// Timers in this node's wheel, due ones waiting, and deliveries in flight.
    pub fn load_figures(&self) -> (usize, usize, usize) {
        (
            self.inner.pipe.schedule.len(),
            self.inner.pipe.ready.len(),
            self.inner.pipe.flight.in_flight(),
        )
    }

    /// This node's deliveries and fire lateness over the last minute, for
    /// `tenant` or, with `None`, for every tenant.
    pub fn live(&self, tenant: Option<TenantId>) -> LiveView {
        let p = &self.inner.pipe;
        p.live.view(p.clock.now_ms(), tenant)
    }

    /// The stats sampler's last count of timers by tenant and state; `None`
    /// before the first (or with `stats_interval_ms = 0`).
    pub fn timer_counts(&self) -> Option<Arc<TimerCounts>> {
        self.inner.pipe.sampled.timers()
    }

    /// The cluster's live nodes with their shards, as this node last saw
    /// them (its heartbeat, and the leases read with the timer counts); its
    /// own shard count is current.
    pub fn nodes(&self) -> Vec<NodeView> {
        let p = &self.inner.pipe;
        p.sampled.nodes(
            self.node_id(),
            p.ownership.owned().len() as u64,
            p.clock.now_ms(),
        )
    }

    /// Stops firing, lets the deliveries under way finish and be recorded (up
    /// to `drain_timeout_ms`), then stops every task. Timers not yet fired
    /// stay pending in the store.
    pub async fn shutdown(&self) {
        let inner = &self.inner;
        let p = &inner.pipe;
        p.stop.stop();
        p.ready.wake();
        let deadline =
            tokio::time::Instant::now() + Duration::from_millis(p.cfg.get().drain_timeout_ms);
        // Only deliveries really under way are waited for: those in a
        // sender's hands (sending, or their outcome being recorded) and a
        // fetch pass routing what it took. Jobs still queued will not be
        // sent: they are let go here (their senders do the same as they
        // stop), stay pending, and fire after the restart.
        loop {
            let busy = p.flight.busy();
            for rt in p.channels.values() {
                for job in rt.queue.pop_many(usize::MAX) {
                    job.release(&p.flight);
                }
            }
            if p.flight.in_flight() == 0 || !busy || tokio::time::Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let left = p.flight.in_flight();
        if left > 0 && p.flight.busy() {
            tracing::warn!(
                left,
                "shutdown: deliveries still in flight; they fire again, or end in_doubt on channels that skip in-doubt sends"
            );
        } else if left > 0 {
            tracing::warn!(
                left,
                "shutdown: in-flight slots held by no delivery under way; not waiting for them"
            );
        }
        // Segment workers stop starting sends at once and record what they sent.
        let campaign_tasks: Vec<JoinHandle<()>> = inner.campaign_tasks.lock().drain(..).collect();
        let left = tokio::time::timeout_at(deadline, async {
            for t in campaign_tasks {
                let _ = t.await;
            }
        })
        .await;
        if left.is_err() {
            tracing::warn!(
                "shutdown: segment workers still sending; their claims lapse and the sweeper re-issues the rest"
            );
        }
        // Recorded outcomes are in; hand the shards over now rather than at expiry.
        inner.membership.leave().await;
        for t in inner.tasks.lock().drain(..) {
            t.abort();
        }
    }
}

/// Starts sender loop number `n` of a channel under supervision.
fn spawn_sender(
    loops: &Arc<supervise::Loops>,
    pipe: &Arc<Pipeline>,
    rt: &Arc<channel_runtime::ChannelRuntime>,
    done: &mpsc::UnboundedSender<completer::Finished>,
    n: usize,
) -> JoinHandle<()> {
    let (pipe, rt, done) = (pipe.clone(), rt.clone(), done.clone());
    let name = format!("sender:{}", rt.name());
    loops.spawn(name, Restart::Yes, move || {
        channel_worker::ChannelWorker::new(pipe.clone(), rt.clone(), done.clone(), n)
            .run()
            .boxed()
    })
}
