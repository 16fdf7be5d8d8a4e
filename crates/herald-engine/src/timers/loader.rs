//! The loader keeps the next window of pending timers in the wheel.
//!
//! It pages through pending timers in `(due_at, id)` order with a keyset
//! cursor, so a restart with millions pending reads only the first page before
//! firing resumes: no full scan. It stops paging while the wheel holds
//! `max_loaded` timers, which bounds memory whatever is due. It reads only the
//! shards this node owns (all of them on a single node).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use herald_store::DueCursor;

use crate::timers::pipeline::Pipeline;
use crate::timers::queue::DueTimer;

/// Asks the loader to read the whole window again on its next pass (the
/// notification feed may have missed timers).
#[derive(Default)]
pub(crate) struct Rescan(AtomicBool);

impl Rescan {
    pub fn request(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
    fn take(&self) -> bool {
        self.0.swap(false, Ordering::SeqCst)
    }
}

/// How a loader pass ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LoadPass {
    /// The window is in the wheel up to its end.
    CaughtUp,
    /// The wheel is full, or the store failed: look again soon.
    Behind,
    /// The engine is stopping.
    Stopped,
}

pub(crate) struct Loader {
    pipe: Arc<Pipeline>,
    /// Other processes write the store too, so timers may appear behind the
    /// cursor: re-read the window every `rescan_interval_ms`, and whenever a
    /// rescan is requested.
    shared: bool,
    rescan: Arc<Rescan>,
    cursor: Option<DueCursor>,
    /// Clock time of the last read from the start of the window.
    last_scan: i64,
}

impl Loader {
    pub fn new(pipe: Arc<Pipeline>, shared: bool, rescan: Arc<Rescan>) -> Self {
        let last_scan = pipe.clock.now_ms();
        Self {
            pipe,
            shared,
            rescan,
            cursor: None,
            last_scan,
        }
    }

    pub async fn run(mut self) {
        while !self.pipe.stop.is_stopped() {
            let interval = self.pipe.cfg.get().load_interval_ms;
            // While behind (wheel full, or a store error) look again soon.
            let pause = match self.run_once().await {
                LoadPass::Stopped => return,
                LoadPass::Behind => interval.min(100),
                LoadPass::CaughtUp => interval,
            };
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(pause)) => {}
                _ = self.pipe.stop.wait() => {}
            }
        }
    }

    /// Raises the horizon to the end of the window and pages timers up to it
    /// into the wheel.
    pub async fn run_once(&mut self) -> LoadPass {
        let (p, cfg) = (&*self.pipe, self.pipe.cfg.get());
        let now = p.clock.now_ms();
        // A clock that stepped back counts as due, so a rescan is never lost.
        let since = now.saturating_sub(self.last_scan);
        let periodic = self.shared
            && cfg.rescan_interval_ms > 0
            && (since < 0 || since >= i64::try_from(cfg.rescan_interval_ms).unwrap_or(i64::MAX));
        // Timers turned away from a full wheel are behind the cursor: read
        // the window again (see `schedule.rs`).
        let overflowed = p.schedule.take_overflow();
        if self.rescan.take() || periodic || overflowed {
            // Timers already wheeled come back as duplicates; the fetcher
            // drops them.
            self.cursor = None;
            self.last_scan = now;
        }
        let target = now.saturating_add(cfg.window_ms);
        p.schedule.raise_horizon(target);
        loop {
            if p.schedule.full() {
                return LoadPass::Behind;
            }
            let shards = p.ownership.owned();
            match p
                .store
                .load_due(&shards, self.cursor, target, cfg.load_batch)
                .await
            {
                Ok(page) => {
                    if let Some(last) = page.last() {
                        self.cursor = Some(last.cursor());
                    }
                    let full = page.len() >= cfg.load_batch;
                    p.schedule.load(page.into_iter().map(DueTimer::from));
                    if !full {
                        return LoadPass::CaughtUp;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "loading due timers failed; will retry");
                    return LoadPass::Behind;
                }
            }
            if p.stop.is_stopped() {
                return LoadPass::Stopped;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::EngineConfig;
    use crate::testkit::{Rig, T0};

    fn loader(rig: &Rig, shared: bool) -> (Loader, Arc<Rescan>) {
        let rescan = Arc::new(Rescan::default());
        (
            Loader::new(rig.pipe.clone(), shared, rescan.clone()),
            rescan,
        )
    }

    #[tokio::test]
    async fn loads_the_window_page_by_page_and_moves_on_with_the_clock() {
        let rig = Rig::new(EngineConfig {
            window_ms: 60_000,
            load_batch: 2,
            ..Default::default()
        })
        .await;
        rig.insert(&[T0 + 1_000; 5]).await;
        rig.insert(&[T0 + 90_000, T0 + 95_000]).await;
        let (mut l, _) = loader(&rig, false);
        assert_eq!(l.run_once().await, LoadPass::CaughtUp);
        assert_eq!(rig.pipe.schedule.len(), 5, "only the window");
        assert_eq!(rig.pipe.schedule.horizon(), T0 + 60_000);
        // Nothing new: the cursor keeps what was loaded from loading twice.
        assert_eq!(l.run_once().await, LoadPass::CaughtUp);
        assert_eq!(rig.pipe.schedule.len(), 5);
        rig.clock.advance(40_000);
        assert_eq!(l.run_once().await, LoadPass::CaughtUp);
        assert_eq!(rig.pipe.schedule.len(), 7);
    }

    #[tokio::test]
    async fn stops_paging_while_the_wheel_is_full() {
        let rig = Rig::new(EngineConfig {
            load_batch: 2,
            max_loaded: 3,
            ..Default::default()
        })
        .await;
        rig.insert(&[T0 + 1_000; 6]).await;
        let (mut l, _) = loader(&rig, false);
        assert_eq!(l.run_once().await, LoadPass::Behind);
        assert_eq!(
            rig.pipe.schedule.len(),
            3,
            "the cap holds within a page too"
        );
    }

    #[tokio::test]
    async fn every_insert_path_stops_at_the_cap_and_the_loader_finds_the_rest() {
        let rig = Rig::new(EngineConfig {
            max_loaded: 3,
            ..Default::default()
        })
        .await;
        let (mut l, _) = loader(&rig, false);
        assert_eq!(l.run_once().await, LoadPass::CaughtUp);
        // API writes, notifications and retries all come in through `offer`.
        let ids = rig.insert(&[T0 + 1_000; 5]).await;
        let mut offered = Vec::new();
        for id in &ids {
            offered.push(rig.due(*id).await);
        }
        assert_eq!(rig.pipe.schedule.offer(offered), 3);
        assert_eq!(rig.pipe.schedule.len(), 3, "two turned away");
        assert!(rig.pipe.schedule.full());
        // The two stay pending in the store; once the wheel drains, the loader
        // re-reads its window (the cursor had passed them) and wheels them.
        let mut fired = Vec::new();
        let ready = crate::timers::queue::FairQueue::new(Default::default());
        rig.clock.advance(1_000);
        rig.pipe.schedule.tick(T0 + 1_000, &ready, &mut fired);
        assert_eq!(rig.pipe.schedule.len(), 0);
        assert_eq!(l.run_once().await, LoadPass::CaughtUp);
        assert_eq!(
            rig.pipe.schedule.len(),
            3,
            "the window again, up to the cap"
        );
        assert!(
            rig.pipe.schedule.take_overflow(),
            "the rest was left out again: the next pass reads the window anew"
        );
    }

    #[tokio::test]
    async fn rereads_the_window_when_asked_and_on_a_shared_store_periodically() {
        let rig = Rig::new(EngineConfig {
            rescan_interval_ms: 30_000,
            ..Default::default()
        })
        .await;
        rig.insert(&[T0 + 1_000; 3]).await;
        let (mut l, rescan) = loader(&rig, false);
        l.run_once().await;
        assert_eq!(rig.pipe.schedule.len(), 3);
        rescan.request();
        l.run_once().await;
        assert_eq!(
            rig.pipe.schedule.len(),
            6,
            "wheeled again; the fetcher drops copies"
        );
        // A store of its own is never re-read on a timer.
        rig.clock.advance(30_000);
        l.run_once().await;
        assert_eq!(rig.pipe.schedule.len(), 6);

        let rig = Rig::new(EngineConfig {
            rescan_interval_ms: 30_000,
            ..Default::default()
        })
        .await;
        rig.insert(&[T0 + 40_000; 2]).await;
        let (mut l, _) = loader(&rig, true);
        l.run_once().await;
        rig.clock.advance(29_999);
        l.run_once().await;
        assert_eq!(rig.pipe.schedule.len(), 2);
        rig.clock.advance(1);
        l.run_once().await;
        assert_eq!(rig.pipe.schedule.len(), 4);
    }
}
