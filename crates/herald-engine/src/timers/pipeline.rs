//! What the loops of the timer pipeline share.
//!
//! A timer's path through one node: the loader (or the writer, or the
//! notification listener) puts it in the wheel, the driver moves it to the
//! ready queue when it is due, the fetcher reads its row and queues it on its
//! channel, a channel worker sends it, and the completer records the outcome.
//! Membership decides which shards this node fires, and the stats sampler
//! watches it all. Each of those loops holds one `Arc<Pipeline>`, as the
//! campaign loops hold one `campaign::Shared`, and each has a `run_once` (one
//! pass of its body, never sleeping) that a test drives with a manual clock.

use std::collections::HashMap;
use std::sync::Arc;

use herald_core::Clock;
use herald_store::Store;
use parking_lot::Mutex;

use crate::channels::runtime::{ChannelRuntime, Job};
use crate::channels::spec::ChannelSpec;
use crate::cluster::ownership::Ownership;
use crate::config::EngineConfig;
use crate::loops::stop::Stop;
use crate::loops::tuned::Tuned;
use crate::observe::health::StallWatch;
use crate::observe::live::Live;
use crate::observe::metrics::Hot;
use crate::observe::sampled::Sampled;
use crate::timers::flight::Flight;
use crate::timers::marker::Marker;
use crate::timers::queue::{DueTimer, FairQueue};
use crate::timers::schedule::Schedule;
use crate::timers::tenants::{self, TenantRates};

pub(crate) struct Pipeline {
    pub store: Arc<dyn Store>,
    pub clock: Arc<dyn Clock>,
    /// The engine's settings; a reload replaces the live ones.
    pub cfg: Tuned<EngineConfig>,
    /// The wheel this node fires from.
    pub schedule: Schedule,
    /// Timers the wheel found due, waiting for the fetcher: fair between
    /// tenants, most urgent first inside one.
    pub ready: FairQueue<DueTimer>,
    /// Each tenant's delivery rate, shared by every channel of this node.
    pub tenant_rates: TenantRates,
    pub flight: Flight,
    pub ownership: Ownership,
    /// Every configured channel by name (shared with the campaign loops).
    pub channels: Arc<HashMap<String, Arc<ChannelRuntime>>>,
    pub hot: Hot,
    /// Deliveries and lateness of the last minute (shared with the campaign loops).
    pub live: Arc<Live>,
    /// What the stats sampler last read from the store.
    pub sampled: Sampled,
    pub stop: Arc<Stop>,
    /// The group commit of firing marks (channels that skip in-doubt sends).
    pub marker: Marker,
    /// Whether the in-flight slots stay full with nothing sending.
    pub stall: Mutex<StallWatch>,
    /// The compiled templates messages are rendered from.
    pub templates: Arc<crate::templates::Templates>,
    /// The early starts planned for bursts of reminders ([`crate::timers::early`]).
    pub early: crate::timers::early_plans::Plans,
}

impl Pipeline {
    /// An idle pipeline that owns no shard yet; `shards` is the cluster's count.
    pub fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        channels: Vec<ChannelSpec>,
        cfg: EngineConfig,
        shards: u16,
    ) -> Self {
        let weights = tenants::weights(&cfg.tenants);
        let live = Arc::new(Live::new(
            channels
                .iter()
                .map(|spec| spec.channel.name().to_string())
                .collect(),
        ));
        let channels = channels
            .into_iter()
            .map(|spec| {
                (
                    spec.channel.name().to_string(),
                    Arc::new(ChannelRuntime::new(spec, weights.clone())),
                )
            })
            .collect();
        Self {
            schedule: Schedule::new(clock.now_ms(), cfg.max_loaded),
            ready: FairQueue::new(weights),
            tenant_rates: TenantRates::new(&cfg.tenants, clock.now_ms()),
            flight: Flight::new(cfg.max_inflight.max(1)),
            ownership: Ownership::new(shards, cfg.lease_guard_ms),
            channels: Arc::new(channels),
            hot: Hot::new(),
            live,
            sampled: Sampled::default(),
            stop: Arc::new(Stop::default()),
            marker: Marker::default(),
            stall: Mutex::new(StallWatch::default()),
            templates: Arc::default(),
            early: Default::default(),
            store,
            clock,
            cfg: Tuned::new(cfg),
        }
    }
}

impl Pipeline {
    /// Counts `n` sends or outcomes refused under a fence, and has the loader
    /// read its window again. Such timers stay pending in the store, behind
    /// the loader's cursor: if their shard changed hands the new owner loads
    /// them when it gains it, but if this node kept the shard (its lease only
    /// lapsed for a moment, a membership round slowed down by a burst) only a
    /// re-read finds them again. Without it a whole ready queue, fenced in
    /// the instant of a lapse, waited for the next restart.
    pub fn fenced(&self, n: u64) {
        self.hot.fenced.increment(n);
        self.schedule.mark_overflow();
    }

    /// Lets go of jobs that will not be sent (the engine is stopping): they
    /// leave the flight set, and those the fetcher marked firing go back to
    /// pending, since they were never sent; all fire after the restart.
    pub async fn let_go(&self, jobs: Vec<Job>) {
        let marked: Vec<_> = jobs
            .iter()
            .filter(|j| j.marked)
            .flat_map(Job::timer_ids)
            .collect();
        if !marked.is_empty()
            && let Err(e) = self.store.unmark_firing(marked, self.clock.now_ms()).await
        {
            tracing::warn!(error = %e, "putting timers let go unsent back to pending failed; they end in doubt after the restart");
        }
        for job in jobs {
            job.release(&self.flight);
        }
    }
}
