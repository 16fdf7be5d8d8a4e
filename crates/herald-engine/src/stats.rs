//! The stats sampler: cheap gauges (wheel, ready queue, in flight) every
//! second, and the store-wide count of timers by state every
//! `stats_interval_ms` (0 turns that off). The count reads the store's timer
//! counters, a few rows whatever the number of timers; every second the
//! sampler also folds their pending changes (PostgreSQL appends one change
//! row per writing statement), whether or not it counts, so reading them
//! stays cheap. The last count, and the shard leases read with it, stay
//! readable for the API (see `sampled.rs`).

use std::sync::Arc;
use std::time::Duration;

use herald_core::TimerState;

use crate::metrics::{TIMERS_BY_STATE, TIMERS_PENDING};
use crate::pipeline::Pipeline;
use crate::sampled::TimerCounts;

pub(crate) struct Stats {
    pipe: Arc<Pipeline>,
    /// Clock time the store was last counted.
    last_count: Option<i64>,
}

impl Stats {
    pub fn new(pipe: Arc<Pipeline>) -> Self {
        Self {
            pipe,
            last_count: None,
        }
    }

    pub async fn run(mut self) {
        while !self.pipe.stop.is_stopped() {
            self.run_once().await;
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                _ = self.pipe.stop.wait() => {}
            }
        }
    }

    /// Sets the cheap gauges, and counts the store's timers if that is due.
    /// Returns whether it counted.
    pub async fn run_once(&mut self) -> bool {
        let p = &*self.pipe;
        p.hot.wheel.set(p.schedule.len() as f64);
        p.hot.ready.set(p.ready.len() as f64);
        p.hot.inflight.set(p.flight.in_flight() as f64);
        fold_counts(p).await;
        let interval = i64::try_from(p.cfg.get().stats_interval_ms).unwrap_or(i64::MAX);
        let now = p.clock.now_ms();
        // A clock that stepped back counts as due.
        let due = interval > 0
            && self.last_count.is_none_or(|t| {
                let since = now.saturating_sub(t);
                since < 0 || since >= interval
            });
        if !due {
            return false;
        }
        self.last_count = Some(now);
        match p.store.count_by_tenant_state().await {
            Ok(counts) => {
                p.sampled.set_timers(TimerCounts {
                    at_ms: now,
                    counts: counts.clone(),
                });
                // The gauges are node-wide: every tenant's timers together.
                for s in TimerState::ALL {
                    let n: u64 = counts
                        .iter()
                        .filter(|(_, st, _)| *st == s)
                        .map(|(_, _, n)| *n)
                        .sum();
                    metrics::gauge!(TIMERS_BY_STATE, "state" => s.as_str()).set(n as f64);
                    if s == TimerState::Pending {
                        metrics::gauge!(TIMERS_PENDING).set(n as f64);
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "sampling timer counts failed"),
        }
        match p.store.shard_leases().await {
            Ok(leases) => p.sampled.set_leases(&leases, now),
            Err(e) => tracing::warn!(error = %e, "sampling shard leases failed"),
        }
        true
    }
}

/// Folds the store's counter changes. A failure only delays the fold: the
/// counts stay exact, reading them a little dearer until the next one.
async fn fold_counts(p: &Pipeline) {
    match p.store.fold_timer_counts().await {
        Ok(n) if n > 0 => tracing::debug!(rows = n, "folded timer count changes"),
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "folding timer counts failed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EngineConfig;
    use crate::testkit::Rig;

    #[tokio::test]
    async fn counts_the_store_once_per_interval_of_the_clock() {
        let rig = Rig::new(EngineConfig {
            stats_interval_ms: 10_000,
            ..Default::default()
        })
        .await;
        let mut s = Stats::new(rig.pipe.clone());
        assert!(s.run_once().await, "counts at once");
        let counts = rig.pipe.sampled.timers().expect("kept for the API");
        assert_eq!(counts.at_ms, herald_core::Clock::now_ms(&rig.clock));
        assert!(!s.run_once().await);
        rig.clock.advance(9_999);
        assert!(!s.run_once().await);
        rig.clock.advance(1);
        assert!(s.run_once().await);
        rig.clock.advance(-60_000);
        assert!(
            s.run_once().await,
            "a clock that stepped back counts as due"
        );

        let rig = Rig::new(EngineConfig {
            stats_interval_ms: 0,
            ..Default::default()
        })
        .await;
        assert!(!Stats::new(rig.pipe.clone()).run_once().await, "off");
    }
}
