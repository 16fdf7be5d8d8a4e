//! The stats sampler: cheap gauges (wheel, ready queue, in flight, and the
//! stall watch over the in-flight slots) every second, and the store-wide
//! count of timers by state every `stats_interval_ms` (0 turns that off).
//! The count reads the store's timer counters, a few rows whatever the
//! number of timers; every second the sampler also folds their pending
//! changes (PostgreSQL appends one change row per writing statement),
//! whether or not it counts, so reading them stays cheap. The last count,
//! and the shard leases read with it, stay readable for the API (see
//! `sampled.rs`).

use std::sync::Arc;
use std::time::Duration;

use herald_core::TimerState;

use crate::observe::health::FlightSample;
use crate::observe::metrics::{SEARCH_FILING_LAG, TIMERS_BY_STATE, TIMERS_PENDING};
use crate::observe::sampled::TimerCounts;
use crate::timers::pipeline::Pipeline;

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
        watch_stall(p);
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
        match p.store.unfiled_since().await {
            Ok(since) => {
                let lag_ms = since.map_or(0, |t| now.saturating_sub(t).max(0));
                metrics::gauge!(SEARCH_FILING_LAG).set(lag_ms as f64 / 1000.0);
            }
            Err(e) => tracing::warn!(error = %e, "sampling the search filing lag failed"),
        }
        match p.store.shard_leases().await {
            Ok(leases) => p.sampled.set_leases(&leases, now),
            Err(e) => tracing::warn!(error = %e, "sampling shard leases failed"),
        }
        true
    }
}

/// Looks at the in-flight slots for the stall watch, sets its gauge, and
/// says so once in the log when a stall begins. Returns how long the slots
/// have been stalled, if they are. Jobs an operator's pause holds queued are
/// held on purpose: they keep the node from counting as stalled.
pub(crate) fn watch_stall(p: &Pipeline) -> Option<u64> {
    let now = p.clock.now_ms();
    let f = &p.flight;
    let held = p
        .channels
        .values()
        .any(|rt| rt.operator.until() > now && rt.queue.len() > 0);
    let sample = FlightSample {
        full: f.available() == 0,
        busy: f.busy() || held,
        returned: f.returned(),
    };
    let window_ms = p.cfg.get().inflight_stall_ms;
    let verdict = p.stall.lock().observe(now, sample, window_ms);
    if verdict.began {
        p.hot.inflight_stalls.increment(1);
        tracing::error!(
            in_flight = f.in_flight(),
            max_inflight = f.max(),
            timers_held = f.len(),
            window_ms,
            "every in-flight slot is taken with nothing sending: this node fires nothing more"
        );
    }
    let stalled = verdict.stalled_for_ms;
    p.hot
        .inflight_stalled
        .set(if stalled.is_some() { 1.0 } else { 0.0 });
    stalled
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
    use crate::config::EngineConfig;
    use crate::testkit::{Rig, T0};

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

    #[tokio::test]
    async fn slots_held_by_nothing_are_reported_stalled_after_the_window() {
        let rig = Rig::new(EngineConfig {
            max_inflight: 2,
            inflight_stall_ms: 5_000,
            ..Default::default()
        })
        .await;
        let p = &rig.pipe;
        // Two slots taken by timers no job, hand or completer holds: the
        // fault digests caused before the flight set knew its permits.
        let mut room = p.flight.room(2).expect("room");
        assert!(room.claim(1) && room.claim(2));
        drop(room);
        assert_eq!(watch_stall(p), None, "not for the window yet");
        rig.clock.advance(4_999);
        assert_eq!(watch_stall(p), None);
        rig.clock.advance(1);
        assert_eq!(watch_stall(p), Some(5_000));
        // A delivery in hand (a slow provider) is no stall.
        let hand = p.flight.hand();
        assert_eq!(watch_stall(p), None);
        rig.clock.advance(60_000);
        assert_eq!(watch_stall(p), None);
        drop(hand);
        // Nor are jobs an operator's pause holds queued on purpose.
        let ids = rig.insert(&[T0]).await;
        p.flight.release([1]);
        p.ready.push(rig.due(ids[0]).await);
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        crate::timers::fetcher::Fetcher::new(p.clone(), tx)
            .run_once()
            .await;
        assert_eq!(p.flight.available(), 0, "full again");
        let rt = &p.channels[crate::testkit::CHANNEL];
        rt.operator.set(Some(herald_store::ChannelPause {
            since: T0,
            until: None,
            reason: None,
        }));
        watch_stall(p);
        rig.clock.advance(60_000);
        assert_eq!(watch_stall(p), None);
        // Resumed, its job still queued and the sender dead: a stall, once
        // the window has passed again.
        rt.operator.set(None);
        assert_eq!(watch_stall(p), None);
        rig.clock.advance(5_000);
        assert_eq!(watch_stall(p), Some(5_000));
        // One slot comes back: the node fires again.
        p.flight.release([2]);
        assert_eq!(watch_stall(p), None);
    }
}
