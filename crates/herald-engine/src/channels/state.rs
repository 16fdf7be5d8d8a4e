//! What the engine knows about a channel besides its queue: whether the
//! provider has asked it to pause, its quiet hours, and how its deliveries
//! ended. `GET /v1/channels` shows all of it.

use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering};

use herald_channels::{QuietPolicy, SendOutcome};
use herald_core::QuietWindow;
use herald_store::ChannelPause;

/// Longest pause one throttle answer can cause.
const MAX_PAUSE_MS: u64 = 300_000;
/// First pause when the provider gives no `Retry-After`; doubles per throttle in a row.
const FIRST_PAUSE_MS: u64 = 1_000;

/// Provider throttling. A throttle answer stops every sender of the channel
/// until `until`; throttles in a row double the pause, so a provider that keeps
/// refusing gets asked less and less often. The first success resets it.
#[derive(Default)]
pub(crate) struct Pause {
    until: AtomicI64,
    streak: AtomicU32,
}

impl Pause {
    /// Records a throttle at `now`; returns when the channel may send again.
    pub fn throttled(&self, now: i64, retry_after_ms: Option<u64>) -> i64 {
        let streak = self.streak.fetch_add(1, Ordering::SeqCst);
        let backoff = FIRST_PAUSE_MS.saturating_mul(1u64 << streak.min(8));
        let wait = retry_after_ms.unwrap_or(0).max(backoff).min(MAX_PAUSE_MS);
        let until = now.saturating_add(wait as i64);
        self.until.fetch_max(until, Ordering::SeqCst);
        self.until.load(Ordering::SeqCst)
    }

    /// A send went through: the provider is taking messages again.
    pub fn cleared(&self) {
        if self.streak.load(Ordering::Relaxed) != 0 {
            self.streak.store(0, Ordering::SeqCst);
        }
    }

    /// Unix ms before which nothing may be sent (0 or past: not paused).
    pub fn until(&self) -> i64 {
        self.until.load(Ordering::SeqCst)
    }
}

/// An operator's pause of the channel, as this node last read it from the
/// store (see `pauses.rs`). Senders wait it out holding their deliveries, so
/// it uses no attempts, like a provider's throttle.
#[derive(Default)]
pub(crate) struct OperatorPause {
    /// Unix ms the pause ends: `i64::MAX` until resumed, 0 when not paused.
    until: AtomicI64,
    stored: parking_lot::Mutex<Option<ChannelPause>>,
}

impl OperatorPause {
    /// Takes the store's word for this channel (`None`: not paused).
    pub fn set(&self, pause: Option<ChannelPause>) {
        let until = pause.as_ref().map_or(0, |p| p.until.unwrap_or(i64::MAX));
        *self.stored.lock() = pause;
        self.until.store(until, Ordering::SeqCst);
    }

    /// Unix ms before which nothing may be sent (0 or past: not paused).
    pub fn until(&self) -> i64 {
        self.until.load(Ordering::SeqCst)
    }

    /// The pause holding at `now`, if any.
    pub fn current(&self, now: i64) -> Option<ChannelPause> {
        self.stored.lock().clone().filter(|p| p.holds_at(now))
    }
}

/// A channel's do-not-disturb window and what it does.
pub(crate) struct Quiet {
    pub window: QuietWindow,
    pub policy: QuietPolicy,
    /// As configured, for errors and the status page.
    pub label: String,
}

/// Deliveries by how they ended, since the process started.
#[derive(Default)]
pub(crate) struct OutcomeCounts {
    pub delivered: AtomicU64,
    pub retry: AtomicU64,
    pub throttled: AtomicU64,
    pub permanent: AtomicU64,
    /// Held back by quiet hours (deferred or dropped).
    pub quiet: AtomicU64,
}

impl OutcomeCounts {
    pub fn add(&self, outcome: &SendOutcome, n: u64) {
        let c = match outcome {
            SendOutcome::Delivered { .. } => &self.delivered,
            SendOutcome::Retryable { .. } => &self.retry,
            SendOutcome::Throttled { .. } => &self.throttled,
            SendOutcome::Permanent { .. } => &self.permanent,
        };
        c.fetch_add(n, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> OutcomeSnapshot {
        OutcomeSnapshot {
            delivered: self.delivered.load(Ordering::Relaxed),
            retry: self.retry.load(Ordering::Relaxed),
            throttled: self.throttled.load(Ordering::Relaxed),
            permanent: self.permanent.load(Ordering::Relaxed),
            quiet: self.quiet.load(Ordering::Relaxed),
        }
    }
}

/// Counts of outcomes at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct OutcomeSnapshot {
    pub delivered: u64,
    pub retry: u64,
    pub throttled: u64,
    pub permanent: u64,
    pub quiet: u64,
}

impl OutcomeSnapshot {
    /// Every answered send (quiet-hour holds are not sends).
    pub fn sends(&self) -> u64 {
        self.delivered + self.retry + self.throttled + self.permanent
    }
}

/// One channel as `GET /v1/channels` shows it. Holds no secret.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ChannelStatus {
    pub name: String,
    pub kind: &'static str,
    #[cfg_attr(feature = "openapi", schema(value_type = u64))]
    pub concurrency: usize,
    pub rate_per_sec: Option<f64>,
    /// Unix ms; `None` when the channel uses no token or has none yet.
    pub token_valid_until: Option<i64>,
    /// Unix ms, while the provider has the channel paused.
    pub paused_until: Option<i64>,
    /// An operator's pause holding now (cluster-wide; the API shows it as `paused`).
    #[serde(skip)]
    pub operator_pause: Option<ChannelPause>,
    /// `HH:MM-HH:MM Zone (policy)`, if configured.
    pub quiet_hours: Option<String>,
    /// Counts by outcome.
    #[cfg_attr(
        feature = "openapi",
        schema(value_type = std::collections::BTreeMap<String, u64>)
    )]
    pub outcomes: OutcomeSnapshot,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throttles_in_a_row_double_the_pause_and_success_resets() {
        let p = Pause::default();
        assert_eq!(p.throttled(0, None), 1_000);
        assert_eq!(p.throttled(1_000, None), 3_000);
        assert_eq!(p.throttled(3_000, None), 7_000);
        // A provider's Retry-After longer than the backoff wins.
        assert_eq!(p.throttled(7_000, Some(60_000)), 67_000);
        p.cleared();
        assert_eq!(p.throttled(67_000, None), 68_000);
        // Never more than the cap, never earlier than an existing pause.
        assert_eq!(p.throttled(0, Some(u64::MAX)), 300_000);
        assert_eq!(p.until(), 300_000);
    }
}
