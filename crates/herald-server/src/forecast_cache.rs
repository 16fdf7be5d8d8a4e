//! The counts behind `GET /v1/forecast`, kept between requests.
//!
//! Counting what falls due is a walk of the pending due index (a second or
//! so for a million timers), too slow for a page that must answer within
//! 300 ms and too costly to repeat on every poll. So a count runs in the
//! background when a request finds the last one stale, one at a time per
//! horizon, and requests answer from the latest finished count (saying
//! when it was made), waiting a moment for a running one. A count goes
//! stale after [`FRESH_MS`], or after twenty times what it took, so the
//! walk costs at most a twentieth of one core however many pages poll; and
//! nothing is counted while nobody asks.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use herald_core::Clock;
use herald_store::{DueCounts, Store};
use tokio::sync::watch;

/// Each count's bucket: a minute, whatever the horizon (the day's view
/// sums them; its model still runs on minutes).
pub const BUCKET_MS: i64 = 60_000;
/// The most timers one count reads; past it the answer says where it stopped.
pub const MAX_ROWS: u64 = 2_000_000;
/// The shortest time a count is used for before a request starts another.
pub const FRESH_MS: i64 = 15_000;
/// How long a request waits for a running count before answering without it.
const WAIT: Duration = Duration::from_millis(200);

/// How far ahead a forecast looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Horizon {
    Hour,
    Day,
}

impl Horizon {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "hour" => Some(Self::Hour),
            "day" => Some(Self::Day),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Hour => "hour",
            Self::Day => "day",
        }
    }

    pub fn length_ms(self) -> i64 {
        match self {
            Self::Hour => 3_600_000,
            Self::Day => 86_400_000,
        }
    }

    fn index(self) -> usize {
        match self {
            Self::Hour => 0,
            Self::Day => 1,
        }
    }
}

/// One finished count.
#[derive(Debug)]
pub struct Counted {
    pub horizon: Horizon,
    /// The window counted, `[from, from + horizon)`, in minutes from `from`;
    /// also when the count was made.
    pub from: i64,
    pub took_ms: i64,
    pub counts: DueCounts,
}

impl Counted {
    fn stale_at(&self) -> i64 {
        self.from
            .saturating_add(FRESH_MS.max(self.took_ms.saturating_mul(20)))
    }
}

/// What a request gets: the latest count (if any), and whether one is running.
pub struct Latest {
    pub counted: Option<Arc<Counted>>,
    pub counting: bool,
    /// Why the last count failed, when it did and none has finished since.
    pub error: Option<String>,
}

struct Slot {
    latest: watch::Sender<Option<Arc<Counted>>>,
    running: AtomicBool,
    error: Mutex<Option<String>>,
}

impl Default for Slot {
    fn default() -> Self {
        Self {
            latest: watch::Sender::new(None),
            running: AtomicBool::new(false),
            error: Mutex::new(None),
        }
    }
}

/// The latest count per horizon, shared by every request of the node.
#[derive(Default)]
pub struct Forecasts {
    slots: [Slot; 2],
}

impl Forecasts {
    /// The latest count of `horizon`; starts a new one when it is stale
    /// (or there is none) and waits up to [`WAIT`] for it.
    pub async fn latest(
        self: &Arc<Self>,
        horizon: Horizon,
        store: &Arc<dyn Store>,
        clock: &Arc<dyn Clock>,
    ) -> Latest {
        let slot = &self.slots[horizon.index()];
        let mut seen = slot.latest.subscribe();
        let now = clock.now_ms();
        let stale = seen.borrow().as_ref().is_none_or(|c| c.stale_at() <= now);
        if stale && !slot.running.swap(true, Ordering::AcqRel) {
            let me = Arc::clone(self);
            let store = Arc::clone(store);
            tokio::spawn(async move { me.count(horizon, store, now).await });
        }
        if slot.running.load(Ordering::Acquire) {
            let _ = tokio::time::timeout(WAIT, seen.changed()).await;
        }
        let counted = slot.latest.borrow().clone();
        Latest {
            counted,
            counting: slot.running.load(Ordering::Acquire),
            error: slot
                .error
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
        }
    }

    async fn count(&self, horizon: Horizon, store: Arc<dyn Store>, from: i64) {
        let slot = &self.slots[horizon.index()];
        let started = Instant::now();
        let until = from.saturating_add(horizon.length_ms());
        let got = store.due_counts(from, until, BUCKET_MS, MAX_ROWS).await;
        let took_ms = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
        match got {
            Ok(counts) => {
                tracing::debug!(horizon = horizon.as_str(), took_ms, "forecast counted");
                *slot.error.lock().unwrap_or_else(PoisonError::into_inner) = None;
                slot.running.store(false, Ordering::Release);
                slot.latest.send_replace(Some(Arc::new(Counted {
                    horizon,
                    from,
                    took_ms,
                    counts,
                })));
            }
            Err(e) => {
                tracing::warn!(horizon = horizon.as_str(), error = %e, "counting the forecast failed");
                *slot.error.lock().unwrap_or_else(PoisonError::into_inner) = Some(e.to_string());
                slot.running.store(false, Ordering::Release);
                // Wakes the waiting requests; the value stays the last count.
                slot.latest.send_modify(|_| {});
            }
        }
    }
}
