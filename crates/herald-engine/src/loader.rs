//! The loader keeps the next window of pending timers in the wheel.
//!
//! It pages through pending timers in `(due_at, id)` order with a keyset
//! cursor, so a restart with millions pending reads only the first page before
//! firing resumes: no full scan. It stops paging while the wheel holds
//! `max_loaded` timers, which bounds memory whatever is due. It reads only the
//! shards this node owns (all of them on a single node).

use std::sync::Arc;
use std::time::Duration;

use herald_core::Clock;
use herald_store::{DueCursor, Store};

use crate::ownership::Ownership;
use crate::queue::DueTimer;
use crate::schedule::Schedule;
use crate::{EngineConfig, Stop};

/// Asks the loader to read the whole window again on its next pass (the
/// notification feed may have missed timers).
#[derive(Default)]
pub(crate) struct Rescan(std::sync::atomic::AtomicBool);

impl Rescan {
    pub fn request(&self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
    fn take(&self) -> bool {
        self.0.swap(false, std::sync::atomic::Ordering::SeqCst)
    }
}

/// `shared`: other processes write the store too, so timers may appear behind
/// the cursor; re-read the window every `rescan_interval_ms`, and whenever a
/// rescan is requested.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn run(
    store: Arc<dyn Store>,
    schedule: Arc<Schedule>,
    clock: Arc<dyn Clock>,
    ownership: Arc<Ownership>,
    cfg: EngineConfig,
    shared: bool,
    rescan: Arc<Rescan>,
    stop: Arc<Stop>,
) {
    let mut cursor: Option<DueCursor> = None;
    let mut last_scan = tokio::time::Instant::now();
    while !stop.is_stopped() {
        let periodic = shared
            && cfg.rescan_interval_ms > 0
            && last_scan.elapsed() >= Duration::from_millis(cfg.rescan_interval_ms);
        if rescan.take() || periodic {
            // Timers already wheeled come back as duplicates; the fetch step
            // drops them.
            cursor = None;
            last_scan = tokio::time::Instant::now();
        }
        let target = clock.now_ms().saturating_add(cfg.window_ms);
        schedule.raise_horizon(target);
        let mut behind = false;
        loop {
            if schedule.len() >= cfg.max_loaded {
                behind = true;
                break;
            }
            let shards = ownership.owned();
            match store
                .load_due(&shards, cursor, target, cfg.load_batch)
                .await
            {
                Ok(page) => {
                    if let Some(last) = page.last() {
                        cursor = Some(last.cursor());
                    }
                    let full = page.len() >= cfg.load_batch;
                    schedule.load(page.into_iter().map(DueTimer::from));
                    if !full {
                        break;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "loading due timers failed; will retry");
                    behind = true;
                    break;
                }
            }
            if stop.is_stopped() {
                return;
            }
        }
        // While behind (wheel full, or a store error) look again soon.
        let pause = if behind {
            cfg.load_interval_ms.min(100)
        } else {
            cfg.load_interval_ms
        };
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(pause)) => {}
            _ = stop.wait() => {}
        }
    }
}
