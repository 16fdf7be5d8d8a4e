//! Applying a configuration reload to a running engine. Loops read their
//! settings through [`crate::loops::tuned::Tuned`] handles each pass, so applying
//! is swapping values: nothing restarts and no delivery in flight is lost.
//! Which keys may change this way is listed here, next to the code that
//! takes them; the rest need a restart.

use std::sync::atomic::Ordering;

use crate::campaign::CampaignConfig;
use crate::channels::spec::ChannelSpec;
use crate::config::EngineConfig;
use crate::engine::Engine;
use crate::error::EngineError;

/// `[engine]` keys a reload applies. The others size structures made at
/// start (`max_loaded`, `max_inflight`) or keep the cluster's leases
/// consistent (`lease_ms`, `heartbeat_ms`, `lease_guard_ms`), or run in a
/// loop started with its period (`quota_refresh_ms`).
pub const ENGINE_LIVE_KEYS: &[&str] = &[
    "window_ms",
    "load_batch",
    "load_interval_ms",
    "fetch_batch",
    "complete_batch",
    "write_batch",
    "stats_interval_ms",
    "drain_timeout_ms",
    "inflight_stall_ms",
    "rescan_interval_ms",
];

/// `[jobs]` keys a reload applies. `workers` is the number of loops started,
/// and the leases must agree with the claims already held.
pub const JOBS_LIVE_KEYS: &[&str] = &[
    "worker_concurrency",
    "record_every",
    "doubt_window",
    "segment_size",
    "sweep_interval_ms",
    "max_attempts",
    "retry_backoff_ms",
    "planner_interval_ms",
    "misfire_grace_ms",
    "idle_poll_ms",
];

impl EngineConfig {
    /// `self` with the live keys of `new` (every [`ENGINE_LIVE_KEYS`] entry,
    /// the reminder merge window, the live `[jobs]` keys and all of
    /// `[retention]`); everything else stays as it runs.
    pub fn with_live(&self, new: &EngineConfig) -> EngineConfig {
        EngineConfig {
            window_ms: new.window_ms,
            load_batch: new.load_batch,
            load_interval_ms: new.load_interval_ms,
            fetch_batch: new.fetch_batch,
            complete_batch: new.complete_batch,
            write_batch: new.write_batch,
            stats_interval_ms: new.stats_interval_ms,
            drain_timeout_ms: new.drain_timeout_ms,
            inflight_stall_ms: new.inflight_stall_ms,
            rescan_interval_ms: new.rescan_interval_ms,
            merge_window_ms: new.merge_window_ms,
            campaign: self.campaign.with_live(&new.campaign),
            retention: new.retention.clone(),
            ..self.clone()
        }
    }
}

impl CampaignConfig {
    /// `self` with the [`JOBS_LIVE_KEYS`] of `new`.
    pub fn with_live(&self, new: &CampaignConfig) -> CampaignConfig {
        CampaignConfig {
            worker_concurrency: new.worker_concurrency,
            record_every: new.record_every,
            doubt_window: new.doubt_window,
            segment_size: new.segment_size,
            sweep_interval_ms: new.sweep_interval_ms,
            max_attempts: new.max_attempts,
            retry_backoff_ms: new.retry_backoff_ms,
            planner_interval_ms: new.planner_interval_ms,
            misfire_grace_ms: new.misfire_grace_ms,
            idle_poll_ms: new.idle_poll_ms,
            ..self.clone()
        }
    }
}

/// A channel's new settings, from a reload.
pub struct ChannelRetune {
    pub spec: ChannelSpec,
    /// Its credentials changed: the stored access tokens of the old and the
    /// new client are expired, so the next send fetches one.
    pub credentials_changed: bool,
}

impl Engine {
    /// Applies a reload: the live keys of `cfg` (see [`EngineConfig::with_live`])
    /// and the new settings of `channels` (each names a configured channel;
    /// an unknown name is an error and nothing is applied). Raising a
    /// channel's concurrency starts senders; lowering it parks the extra
    /// ones after their current send.
    pub async fn retune(
        &self,
        cfg: &EngineConfig,
        channels: Vec<ChannelRetune>,
    ) -> Result<(), RetuneError> {
        let inner = &self.inner;
        let pipe = &inner.pipe;
        if let Some(c) = channels
            .iter()
            .find(|c| !pipe.channels.contains_key(c.spec.channel.name()))
        {
            return Err(RetuneError::UnknownChannel(
                c.spec.channel.name().to_string(),
            ));
        }
        let next = pipe.cfg.get().with_live(cfg);
        inner.campaign.cfg.set(next.campaign.clone());
        inner.retention.cfg.set(next.retention.clone());
        pipe.cfg.set(next);
        // Loops asleep on the old periods look at the new ones now.
        inner.campaign.work.notify_waiters();
        inner.campaign.sweep.notify_waiters();
        inner.campaign.plan.notify_waiters();
        for c in channels {
            let Some(rt) = pipe.channels.get(c.spec.channel.name()).cloned() else {
                continue;
            };
            let old = rt.channel();
            let new = c.spec.channel.clone();
            rt.retune(c.spec);
            if c.credentials_changed {
                for key in [old.token_key(), new.token_key()].into_iter().flatten() {
                    self.expire_token(key).await?;
                }
            }
            self.start_senders(&rt);
        }
        tracing::info!("engine settings reloaded");
        Ok(())
    }

    /// Expires the stored token under `key`, if there is one.
    async fn expire_token(&self, key: &str) -> Result<(), EngineError> {
        let p = &self.inner.pipe;
        if let Some(t) = p.store.get_channel_token(key).await? {
            p.store
                .expire_channel_token(key, &t.token, p.clock.now_ms())
                .await?;
            tracing::info!(
                token = key,
                "credentials changed; the stored access token is expired"
            );
        }
        Ok(())
    }

    /// Starts the channel's sender loops up to its concurrency (the loops
    /// are never stopped, only parked, so this only ever adds).
    pub(crate) fn start_senders(
        &self,
        rt: &std::sync::Arc<crate::channels::runtime::ChannelRuntime>,
    ) {
        let inner = &self.inner;
        let want = rt.concurrency();
        let mut tasks = inner.tasks.lock();
        loop {
            let n = rt.started.load(Ordering::Acquire);
            if n >= want {
                break;
            }
            if rt
                .started
                .compare_exchange(n, n + 1, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                continue;
            }
            tasks.push(super::start::spawn_sender(
                &inner.loops,
                &inner.pipe,
                rt,
                &inner.done_tx,
                n,
            ));
        }
    }
}

/// Why a reload could not be applied.
#[derive(Debug, thiserror::Error)]
pub enum RetuneError {
    #[error("no channel is named {0:?} on this node; adding a channel needs a restart")]
    UnknownChannel(String),
    #[error(transparent)]
    Engine(#[from] EngineError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_live_keys_are_taken() {
        let old = EngineConfig::default();
        let mut new = EngineConfig {
            window_ms: 5_000,
            max_inflight: 7,
            lease_ms: 9_000,
            merge_window_ms: 0,
            ..EngineConfig::default()
        };
        new.campaign.workers = 9;
        new.campaign.segment_size = 10;
        new.retention.interval_ms = 5_000;
        let got = old.with_live(&new);
        assert_eq!(got.window_ms, 5_000);
        assert_eq!(got.merge_window_ms, 0);
        assert_eq!(got.campaign.segment_size, 10);
        assert_eq!(got.retention.interval_ms, 5_000);
        // What needs a restart keeps the running value.
        assert_eq!(got.max_inflight, old.max_inflight);
        assert_eq!(got.lease_ms, old.lease_ms);
        assert_eq!(got.campaign.workers, old.campaign.workers);
    }

    /// Every key of `old` changed in `new`; `apply` must take exactly `live`.
    fn takes_exactly<T: serde::Serialize + serde::de::DeserializeOwned>(
        old: &T,
        apply: impl Fn(&T, &T) -> T,
        live: &[&str],
    ) {
        let before = serde_json::to_value(old).unwrap();
        let mut bumped = before.clone();
        for v in bumped.as_object_mut().unwrap().values_mut() {
            if let Some(n) = v.as_u64() {
                *v = (n + 1).into();
            }
        }
        let new: T = serde_json::from_value(bumped).unwrap();
        let got = serde_json::to_value(apply(old, &new)).unwrap();
        for (key, was) in before.as_object().unwrap() {
            let changed = got[key] != *was;
            assert_eq!(changed, live.contains(&key.as_str()), "{key}");
        }
    }

    #[test]
    fn the_live_key_lists_say_what_with_live_takes() {
        takes_exactly(
            &EngineConfig::default(),
            EngineConfig::with_live,
            ENGINE_LIVE_KEYS,
        );
        takes_exactly(
            &CampaignConfig::default(),
            CampaignConfig::with_live,
            JOBS_LIVE_KEYS,
        );
    }
}
