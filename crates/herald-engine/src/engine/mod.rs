//! The running engine: [`Engine`], the handle the API and the binary hold.
//! Starting it (every loop, under supervision) is in `start.rs`, applying a
//! reload in `retune.rs`; what the handle answers (writes, timers, channels,
//! health, the live window) and how it shuts down is here. The loops
//! themselves live in their subsystems' folders.

mod retune;
mod start;

pub use retune::{ChannelRetune, ENGINE_LIVE_KEYS, JOBS_LIVE_KEYS, RetuneError};

use std::sync::Arc;
use std::time::Duration;

use herald_channels::Channel;
use herald_core::{ShardSet, TenantId, TimerId};
use herald_store::{Store, TimerRecord, WriteOp, WriteResult};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::campaign;
use crate::channels::pauses;
use crate::channels::runtime::ChannelRuntime;
use crate::channels::state::ChannelStatus;
use crate::cluster::membership::Membership;
use crate::error::EngineError;
use crate::loops::supervise::Loops;
use crate::observe::health::{Health, LoopHealth};
use crate::observe::live::LiveView;
use crate::observe::sampled::{NodeView, TimerCounts};
use crate::observe::stats::watch_stall;
use crate::retention::Sweeper;
use crate::timers::completer::Finished;
use crate::timers::pipeline::Pipeline;
use crate::timers::writer::{Reply, WriteRequest};

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

/// Ops handed to the writer ([`Engine::queue_each`]), committing.
pub struct QueuedWrite(oneshot::Receiver<Vec<Result<WriteResult, EngineError>>>);

impl QueuedWrite {
    /// Each op's result, once its transaction committed (or failed).
    pub async fn results(self) -> Result<Vec<Result<WriteResult, EngineError>>, EngineError> {
        self.0.await.map_err(|_| EngineError::ShuttingDown)
    }
}

/// A subject's early-start plan ([`Engine::reminder_plan`]).
#[derive(Debug, Clone)]
pub struct SubjectPlan {
    pub batches: Vec<crate::timers::early::EarlyPlan>,
    /// When its pending reminders were counted (ms).
    pub counted_at: i64,
}

/// What every clone of an [`Engine`] shares.
pub(crate) struct Inner {
    pipe: Arc<Pipeline>,
    write_tx: mpsc::Sender<WriteRequest>,
    shards: u16,
    membership: Arc<Membership>,
    /// What the campaign loops share; the campaign use cases
    /// (`campaign/service.rs`) are wired to it.
    pub(crate) campaign: Arc<campaign::Shared>,
    /// The retention sweeper, whose settings a reload replaces.
    retention: Arc<Sweeper>,
    /// Where sender loops hand their outcomes; kept for senders a reload starts.
    done_tx: mpsc::UnboundedSender<Finished>,
    loops: Arc<Loops>,
    tasks: parking_lot::Mutex<Vec<JoinHandle<()>>>,
    /// The campaign loops, awaited at shutdown so a worker records what it sent.
    campaign_tasks: parking_lot::Mutex<Vec<JoinHandle<()>>>,
    /// Big subjects' last counts, for their pages.
    subject_counts: Arc<crate::timers::subject_counts::SubjectCounts>,
}

/// A running engine. Cheap to clone.
#[derive(Clone)]
pub struct Engine {
    pub(crate) inner: Arc<Inner>,
}

impl Engine {
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
            inflight_stalled_ms: watch_stall(&inner.pipe),
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

    /// A configured channel's cluster-wide `rate_per_sec` (`None` when it
    /// has none, or no such channel is configured).
    pub fn channel_rate(&self, name: &str) -> Option<f64> {
        crate::timers::early::rate_of(&self.inner.pipe, name)
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
        self.queue_write(ops, Reply::Whole(reply)).await?;
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
        self.queue_each(ops).await?.results().await
    }

    /// Hands `ops` to the writer as [`Engine::submit_each`] does, without
    /// waiting for the commit: the caller goes on (reading the next lines
    /// of a bulk request) and hears of the results from the returned
    /// [`QueuedWrite`]. Waits only while the writer's queue is full.
    pub async fn queue_each(&self, ops: Vec<WriteOp>) -> Result<QueuedWrite, EngineError> {
        if self.inner.pipe.stop.is_stopped() {
            return Err(EngineError::ShuttingDown);
        }
        let (reply, rx) = oneshot::channel();
        self.queue_write(ops, Reply::Each(reply)).await?;
        Ok(QueuedWrite(rx))
    }

    async fn queue_write(&self, ops: Vec<WriteOp>, reply: Reply) -> Result<(), EngineError> {
        self.inner
            .write_tx
            .send(WriteRequest { ops, reply })
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

    /// The early-start plan of a subject's pending reminders, one entry per
    /// (bit, channel, due time) (issue 39 §4), with when they were counted.
    /// A subject with few reminders (`reminders`, as the caller counted
    /// them) is counted now, so the answer right after a subscription
    /// already counts it; a big one comes from its last count
    /// ([`crate::timers::subject_counts`]). A batch that has started keeps
    /// the start the engine gave it; one not yet started is planned as the
    /// engine will plan it, sharing each channel's rate with the other
    /// subjects' batches this node has planned on it (as last counted), at
    /// its own (or the configured) early window.
    pub async fn reminder_plan(
        &self,
        tenant: herald_core::TenantId,
        subject_id: &str,
        reminders: u64,
    ) -> Result<SubjectPlan, herald_store::StoreError> {
        let pipe = &*self.inner.pipe;
        let counted = self
            .inner
            .subject_counts
            .batches(
                &pipe.store,
                || pipe.clock.now_ms(),
                tenant,
                subject_id,
                reminders,
            )
            .await?;
        let mine = counted.batches;
        let channels: Vec<&str> = mine.iter().map(|b| b.channel.as_str()).collect();
        let now = pipe.clock.now_ms();
        let around = pipe.early.around(tenant, subject_id, &channels, now);
        let mut batches = mine;
        batches.extend(around.others.iter().map(|p| p.as_batch()));
        let window = pipe.cfg.get().early_window_ms;
        let planned = crate::timers::early::plan(
            &batches,
            |c| crate::timers::early::rate_of(pipe, c),
            window,
        );
        let batches = planned
            .into_iter()
            .filter(|p| p.tenant == tenant && p.subject_id == subject_id)
            .map(|mut p| {
                if let Some(s) = around.started.iter().find(|s| s.same_batch(&p)) {
                    p.start_at = s.start_at;
                    p.done_by = s.done_by;
                    p.fits = s.fits;
                    p.early_window_ms = s.early_window_ms;
                }
                p
            })
            .collect();
        Ok(SubjectPlan {
            batches,
            counted_at: counted.at,
        })
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

    async fn status_of(&self, rt: &ChannelRuntime) -> ChannelStatus {
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

    /// A channel's `reminder_template`, if it has one.
    pub fn channel_reminder_shape(&self, name: &str) -> Option<serde_json::Value> {
        self.inner
            .pipe
            .channels
            .get(name)
            .and_then(|rt| rt.settings().reminder_template.clone())
    }

    /// The templates this node renders from (and validates against).
    pub fn templates(&self) -> &crate::templates::Templates {
        &self.inner.pipe.templates
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
        // stop), stay pending (or go back to pending, if marked firing
        // ahead), and fire after the restart.
        loop {
            let busy = p.flight.busy();
            for rt in p.channels.values() {
                p.let_go(rt.queue.pop_many(usize::MAX)).await;
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
