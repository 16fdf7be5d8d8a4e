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

use crate::pipeline::Pipeline;
use crate::queue::DueTimer;

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
        let interval = self.pipe.cfg.load_interval_ms;
        while !self.pipe.stop.is_stopped() {
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
        let (p, cfg) = (&*self.pipe, &self.pipe.cfg);
        let now = p.clock.now_ms();
        // A clock that stepped back counts as due, so a rescan is never lost.
        let since = now.saturating_sub(self.last_scan);
        let periodic = self.shared
            && cfg.rescan_interval_ms > 0
            && (since < 0 || since >= i64::try_from(cfg.rescan_interval_ms).unwrap_or(i64::MAX));
        if self.rescan.take() || periodic {
            // Timers already wheeled come back as duplicates; the fetcher
            // drops them.
            self.cursor = None;
            self.last_scan = now;
        }
        let target = now.saturating_add(cfg.window_ms);
        p.schedule.raise_horizon(target);
        loop {
            if p.schedule.len() >= cfg.max_loaded {
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
