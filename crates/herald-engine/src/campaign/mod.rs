//! Mass sends: the use cases the API calls ([`Campaigns`]), the rule planner,
//! the segment workers and the sweeper.
//!
//! Jobs live in the store, cut into segments `[start, end)`. Every node runs
//! `workers` loops that claim a segment under a lease, send to its recipients
//! and record each outcome in the job's send log, moving the segment's cursor
//! and extending its lease as they go. Two duties run on one node at a time,
//! under named store leases: the planner, which keeps the next occurrence of
//! every enabled rule planned as an append-only task and starts due tasks as
//! jobs, and the sweeper, which re-issues segments whose lease expired or that
//! ended partial, and ends jobs at their deadline. `docs/architecture.md`
//! tells the whole path ("The path of a campaign", "Rules", "Guarantees").

pub mod calendars;
mod directory;
mod error;
mod follow_ups;
mod planner;
mod service;
mod sweeper;
mod upload;
mod worker;

pub use error::CampaignError;
pub use planner::occurrences;
pub use service::{AudienceSource, Campaigns, NewJob, NewRule, RuleView, TaskView};
pub use upload::AudienceUpload;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use herald_core::Clock;
use herald_store::Store;
use serde::{Deserialize, Serialize};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::channels::runtime::ChannelRuntime;
use crate::loops::stop::Stop;
use crate::loops::supervise::{Loops, Restart};
use futures_util::FutureExt;

/// Name of the store lease under which one node plans and starts rule tasks.
pub const PLANNER_LEASE: &str = "rule-planner";
/// Name of the store lease under which one node sweeps segments and jobs.
pub const SWEEPER_LEASE: &str = "job-sweeper";

/// `jobs.doubt_window` by default: campaigns as fast as before sends were
/// marked (BENCHMARKS.md, "In-doubt window").
pub const DEFAULT_DOUBT_WINDOW: u64 = 1_024;

/// `[jobs]` settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CampaignConfig {
    /// Segment worker loops on this node; 0 makes the node send no jobs.
    pub workers: usize,
    /// Sends one worker keeps in flight (also capped by the channel's concurrency).
    pub worker_concurrency: usize,
    /// How long a segment claim lasts without being extended.
    pub lease_ms: i64,
    /// A claim this close to expiry no longer covers a send.
    pub lease_guard_ms: i64,
    /// Most outcomes one write carries (and the cursor is persisted at
    /// least every third of the lease).
    pub record_every: usize,
    /// Recipients one worker may have out without a recorded outcome: in
    /// flight, answered but not yet written, or marked (`sent_to`) and not
    /// yet sent. A crash leaves at most this many per worker in doubt; a
    /// larger window lets sends run further ahead of the commits.
    pub doubt_window: u64,
    /// Recipients per segment when a job does not say.
    pub segment_size: u64,
    /// How often the sweeper runs.
    pub sweep_interval_ms: u64,
    /// Attempts a recipient that keeps failing retryably gets.
    pub max_attempts: u32,
    /// A partial segment's re-issue waits this long times its attempt number.
    pub retry_backoff_ms: i64,
    /// How often the planner looks for rules to plan and tasks to start.
    pub planner_interval_ms: u64,
    /// A recurring rule does not make up occurrences older than this that were
    /// never planned (the planner was down): they are skipped.
    pub misfire_grace_ms: i64,
    /// An idle worker looks for a claimable segment at least this often.
    pub idle_poll_ms: u64,
    /// Frequency caps per recipient (`[[caps]]`), for jobs sent to user ids;
    /// set at start with the engine's.
    #[serde(skip)]
    pub caps: Vec<herald_core::caps::CapRule>,
}

impl Default for CampaignConfig {
    fn default() -> Self {
        Self {
            workers: 4,
            worker_concurrency: 64,
            lease_ms: 15_000,
            lease_guard_ms: 1_000,
            record_every: 500,
            doubt_window: DEFAULT_DOUBT_WINDOW,
            segment_size: 1_000,
            sweep_interval_ms: 1_000,
            max_attempts: 5,
            retry_backoff_ms: 5_000,
            planner_interval_ms: 500,
            misfire_grace_ms: 60_000,
            idle_poll_ms: 500,
            caps: Vec::new(),
        }
    }
}

/// What the campaign loops share.
pub(crate) struct Shared {
    pub store: Arc<dyn Store>,
    pub clock: Arc<dyn Clock>,
    pub channels: Arc<HashMap<String, Arc<ChannelRuntime>>>,
    /// `[jobs]`; a reload replaces the live ones.
    pub cfg: crate::loops::tuned::Tuned<CampaignConfig>,
    /// This process: the planner's and sweeper's leases are held by it.
    pub holder: herald_store::Holder,
    pub stop: Arc<Stop>,
    /// This node's live window; sends are counted in it.
    pub live: Arc<crate::observe::live::Live>,
    /// Poked when a job may have claimable segments (created here, or re-issued).
    pub work: Notify,
    /// Poked when a rule changed, so the planner looks at once.
    pub plan: Notify,
    /// Poked when a sweep should run now rather than at the next interval.
    pub sweep: Notify,
    /// The workers' writes, group-committed: one transaction for all the
    /// outcomes and marks the node's workers have ready.
    pub writes: crate::loops::group_commit::GroupCommit<
        herald_store::SegmentWrite,
        herald_store::LeaseCheck,
    >,
    /// The templates a job's messages are rendered from (the node's own).
    pub templates: Arc<crate::templates::Templates>,
}

impl Shared {
    /// Sleeps up to `ms`, returning early on a poke of `notify` or at shutdown.
    async fn nap(&self, notify: &Notify, ms: u64) {
        tokio::select! {
            _ = notify.notified() => {}
            _ = tokio::time::sleep(Duration::from_millis(ms.max(1))) => {}
            _ = self.stop.wait() => {}
        }
    }
}

/// Spawns the worker loops, the sweeper and the planner, under supervision.
pub(crate) fn spawn(shared: Arc<Shared>, loops: &Arc<Loops>) -> Vec<JoinHandle<()>> {
    let mut tasks = Vec::new();
    for n in 0..shared.cfg.get().workers {
        let sh = shared.clone();
        tasks.push(loops.spawn("segment-worker", Restart::Yes, move || {
            worker::run(sh.clone(), n).boxed()
        }));
    }
    let sh = shared.clone();
    tasks.push(loops.spawn("sweeper", Restart::Yes, move || {
        sweeper::run(sh.clone()).boxed()
    }));
    tasks.push(loops.spawn("planner", Restart::Yes, move || {
        planner::run(shared.clone()).boxed()
    }));
    tasks
}
