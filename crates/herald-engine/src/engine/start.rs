//! Starting an engine: every background loop, each under supervision (see
//! `loops/supervise.rs`), sharing one `Pipeline`. `Engine::start` runs the
//! first membership round itself, then starts the loops in named groups,
//! one function each: the timer path, membership, the campaign loops and
//! maintenance.

use std::sync::Arc;

use futures_util::FutureExt;
use herald_core::Clock;
use herald_store::Store;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::{Engine, Inner};
use crate::campaign;
use crate::channels::pauses;
use crate::channels::runtime::ChannelRuntime;
use crate::channels::spec::ChannelSpec;
use crate::channels::worker::ChannelWorker;
use crate::cluster::{listener, membership};
use crate::config::EngineConfig;
use crate::loops::supervise::{Loops, Restart};
use crate::loops::tuned;
use crate::observe::{metrics, stats};
use crate::retention;
use crate::timers::completer::{self, Finished};
use crate::timers::pipeline::Pipeline;
use crate::timers::writer::{self, WriteRequest};
use crate::timers::{driver, early, fetcher, loader};

/// A value the first run of a supervised loop takes; restarts find `None`.
fn take_once<T>(value: T) -> Arc<parking_lot::Mutex<Option<T>>> {
    Arc::new(parking_lot::Mutex::new(Some(value)))
}

/// A fresh incarnation: random, positive, never 0 (the value of rows written
/// before incarnations existed).
fn new_incarnation() -> i64 {
    rand::random_range(1..=i64::MAX)
}

impl Engine {
    /// Starts every background task. `shards` is the cluster's shard count as
    /// the store reports it; `node_id` names this node in the cluster. Each
    /// start draws a new incarnation: a process restarted under the same id
    /// takes its old leases only once they expire (or were released at a
    /// graceful shutdown), so an old process that is merely stalled is fenced
    /// off rather than firing beside the new one.
    ///
    /// The loops start in this order (which is also the order `/readyz`
    /// lists them in): the timer path, membership, the campaign loops, then
    /// maintenance (retention, channel pauses, stats).
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
        let holder = herald_store::Holder::new(node_id, new_incarnation());
        let membership = Arc::new(membership::Membership::new(
            pipe.clone(),
            holder.clone(),
            shards,
        ));
        // Claim a share before anything loads, so a restarted node fires again
        // at once; later rounds run in the background.
        pipe.schedule
            .raise_horizon(pipe.clock.now_ms().saturating_add(cfg.window_ms));
        if let Err(e) = membership.run_once().await {
            tracing::warn!(error = %e, "first membership round failed; retrying in the background");
        }
        let loops = Arc::new(Loops::new(pipe.stop.clone()));
        let TimerPath {
            write_tx,
            done_tx,
            mut tasks,
        } = spawn_timer_path(&loops, &pipe).await;
        tasks.push(spawn_membership(&loops, &membership));
        let (campaign, campaign_tasks) = spawn_campaigns(&loops, &pipe, &holder);
        let (retention, maintenance) = spawn_maintenance(&loops, &pipe, &holder).await;
        tasks.extend(maintenance);
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
                subject_counts: Arc::default(),
            }),
        }
    }
}

/// The timer path once started: the queues into it that the engine keeps,
/// and its tasks.
struct TimerPath {
    /// Where API writes go (the writer).
    write_tx: mpsc::Sender<WriteRequest>,
    /// Where sender loops hand their outcomes (the completer).
    done_tx: mpsc::UnboundedSender<Finished>,
    tasks: Vec<JoinHandle<()>>,
}

/// Starts the timer path under supervision, in this order: the writer and
/// the completer, every channel's senders, the fetcher, the driver, the
/// notification listener (on a store that announces timers) and the loader.
async fn spawn_timer_path(loops: &Arc<Loops>, pipe: &Arc<Pipeline>) -> TimerPath {
    let (write_tx, write_rx) = mpsc::channel(65_536);
    let (done_tx, done_rx) = mpsc::unbounded_channel();
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
            tasks.push(spawn_sender(loops, pipe, rt, &done_tx, n));
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
    tasks.push(loops.spawn("early", Restart::Yes, {
        let pipe = pipe.clone();
        move || early::Planner::new(pipe.clone()).run().boxed()
    }));
    let rescan = Arc::new(loader::Rescan::default());
    let listener = spawn_listener(loops, pipe, &rescan).await;
    // A store other processes write needs the loader's periodic re-scan.
    let shared = listener.is_some();
    tasks.extend(listener);
    tasks.push(loops.spawn("loader", Restart::Yes, {
        let pipe = pipe.clone();
        move || {
            loader::Loader::new(pipe.clone(), shared, rescan.clone())
                .run()
                .boxed()
        }
    }));
    TimerPath {
        write_tx,
        done_tx,
        tasks,
    }
}

/// Starts the notification listener if the store announces the timers other
/// processes write; `None` if it does not (a store only this process writes,
/// or one whose subscription failed: the loader's re-scan finds them then).
async fn spawn_listener(
    loops: &Arc<Loops>,
    pipe: &Arc<Pipeline>,
    rescan: &Arc<loader::Rescan>,
) -> Option<JoinHandle<()>> {
    let subscription = match pipe.store.subscribe().await {
        Ok(sub) => sub,
        Err(e) => {
            tracing::warn!(error = %e, "no timer notifications; the loader's re-scan finds other nodes' timers");
            None
        }
    };
    let rx = subscription?;
    // A restarted listener subscribes again, and the loader re-reads
    // its window for what was announced meanwhile.
    let first = take_once(rx);
    let (pipe, rescan) = (pipe.clone(), rescan.clone());
    Some(loops.spawn("listener", Restart::Yes, move || {
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
    }))
}

/// Starts the membership loop: heartbeats, lease renewals and rebalancing
/// after the first round `Engine::start` ran itself.
fn spawn_membership(
    loops: &Arc<Loops>,
    membership: &Arc<membership::Membership>,
) -> JoinHandle<()> {
    let membership = membership.clone();
    loops.spawn("membership", Restart::Yes, move || {
        membership.clone().run().boxed()
    })
}

/// Starts the campaign loops (segment workers, sweeper, planner) over what
/// they share, which the engine keeps for the campaign use cases.
fn spawn_campaigns(
    loops: &Arc<Loops>,
    pipe: &Arc<Pipeline>,
    holder: &herald_store::Holder,
) -> (Arc<campaign::Shared>, Vec<JoinHandle<()>>) {
    let campaign = Arc::new(campaign::Shared {
        store: pipe.store.clone(),
        clock: pipe.clock.clone(),
        channels: pipe.channels.clone(),
        cfg: tuned::Tuned::new(pipe.cfg.get().campaign.clone()),
        holder: holder.clone(),
        stop: pipe.stop.clone(),
        live: pipe.live.clone(),
        work: Default::default(),
        plan: Default::default(),
        sweep: Default::default(),
        writes: Default::default(),
        templates: pipe.templates.clone(),
    });
    let tasks = campaign::spawn(campaign.clone(), loops);
    (campaign, tasks)
}

/// Starts the maintenance loops: the retention sweeper (kept by the engine,
/// whose settings a reload replaces), the channel pauses poll (after a first
/// read, so a paused channel is held from the start) and the stats sampler.
async fn spawn_maintenance(
    loops: &Arc<Loops>,
    pipe: &Arc<Pipeline>,
    holder: &herald_store::Holder,
) -> (Arc<retention::Sweeper>, Vec<JoinHandle<()>>) {
    let mut tasks = Vec::new();
    let retention = Arc::new(retention::Sweeper {
        store: pipe.store.clone(),
        clock: pipe.clock.clone(),
        cfg: tuned::Tuned::new(pipe.cfg.get().retention.clone()),
        holder: holder.clone(),
        stop: pipe.stop.clone(),
    });
    tasks.push(loops.spawn("retention", Restart::Yes, {
        let retention = retention.clone();
        move || retention.clone().run().boxed()
    }));
    if let Err(e) = pauses::refresh(pipe).await {
        tracing::warn!(error = %e, "reading channel pauses failed; retrying in the background");
    }
    tasks.push(loops.spawn("pauses", Restart::Yes, {
        let pipe = pipe.clone();
        move || pauses::run(pipe.clone()).boxed()
    }));
    if let Err(e) = pipe.templates.refresh(pipe.store.as_ref()).await {
        tracing::warn!(error = %e, "reading templates failed; retrying in the background");
    }
    tasks.push(loops.spawn("templates", Restart::Yes, {
        let pipe = pipe.clone();
        move || {
            crate::templates::run(
                pipe.templates.clone(),
                pipe.store.clone(),
                pipe.stop.clone(),
            )
            .boxed()
        }
    }));
    tasks.push(loops.spawn("stats", Restart::Yes, {
        let pipe = pipe.clone();
        move || stats::Stats::new(pipe.clone()).run().boxed()
    }));
    (retention, tasks)
}

/// Starts sender loop number `n` of a channel under supervision.
pub(super) fn spawn_sender(
    loops: &Arc<Loops>,
    pipe: &Arc<Pipeline>,
    rt: &Arc<ChannelRuntime>,
    done: &mpsc::UnboundedSender<Finished>,
    n: usize,
) -> JoinHandle<()> {
    let (pipe, rt, done) = (pipe.clone(), rt.clone(), done.clone());
    let name = format!("sender:{}", rt.name());
    loops.spawn(name, Restart::Yes, move || {
        ChannelWorker::new(pipe.clone(), rt.clone(), done.clone(), n)
            .run()
            .boxed()
    })
}
