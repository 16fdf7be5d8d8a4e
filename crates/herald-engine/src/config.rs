//! The engine's `[engine]` settings ([`EngineConfig`]), with the settings it
//! takes from `[reminders]`, `[jobs]`, `[retention]` and `[tenants.NAME]`.
//! Kept apart from the engine itself so that whatever reads settings (the
//! loops, the binary's configuration) needs nothing else of the crate.
//! Which of them a reload may change is listed in `engine/retune.rs`.

use std::collections::HashMap;

use herald_core::TenantId;
use serde::{Deserialize, Serialize};

use crate::campaign;
use crate::retention;
use crate::timers::tenants::TenantLimits;

/// Runtime settings; all have defaults fit for one node.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EngineConfig {
    /// How far ahead the loader keeps pending timers in the wheel.
    pub window_ms: i64,
    /// Timers read per loader query.
    pub load_batch: usize,
    /// How often the loader tops the window up.
    pub load_interval_ms: u64,
    /// Most timers held in the wheel at once (bounds memory).
    pub max_loaded: usize,
    /// Most deliveries fetched and not yet recorded. Bounds memory, and bounds
    /// what a crash can deliver twice.
    pub max_inflight: usize,
    /// Timer rows read per fetch.
    pub fetch_batch: usize,
    /// Most outcomes recorded per transaction.
    pub complete_batch: usize,
    /// Most API writes per group-commit transaction.
    pub write_batch: usize,
    /// How often store-wide gauges (timers by state) are sampled; 0 turns it
    /// off. Each sample reads the store's timer counters, not the timers.
    pub stats_interval_ms: u64,
    /// Longest a graceful shutdown waits for in-flight deliveries.
    pub drain_timeout_ms: u64,
    /// How long every in-flight slot may stay taken with nothing sending and
    /// none given back before `/readyz` and `herald_inflight_stalled` report
    /// the node stalled; 0 turns the watch off.
    pub inflight_stall_ms: u64,
    /// How long a shard lease (and a node's heartbeat) lasts. A dead node's
    /// shards move to others after at most this plus `heartbeat_ms`.
    pub lease_ms: i64,
    /// How often a node beats, renews its leases and rebalances.
    pub heartbeat_ms: u64,
    /// A lease this close to expiry no longer covers a send (clock skew margin).
    pub lease_guard_ms: i64,
    /// On a store shared by several nodes, how often the loader re-reads its
    /// whole window: the safety net under the store's notifications.
    pub rescan_interval_ms: u64,
    /// How often each node counts every tenant's pending timers for the
    /// `max_pending` quotas (`[tenants.NAME]`); what other nodes accept
    /// in between is not counted until the next count.
    pub quota_refresh_ms: u64,
    /// Reminders of one user on one channel due within this many milliseconds
    /// of the earliest go out as one delivery; 0 sends each alone. Set from
    /// the `[reminders]` configuration.
    #[serde(skip)]
    pub merge_window_ms: i64,
    /// The template each channel type's reminders are rendered with (by
    /// `ChannelType::as_str`); a type without one sends Herald's reminder
    /// shape (or its channel's `reminder_template`). Set from
    /// `[reminders.templates]`.
    #[serde(skip)]
    pub reminder_templates: std::collections::BTreeMap<String, herald_core::template::TemplateRef>,
    /// The time zone reminder templates read times in when neither the
    /// subscriber nor the subject's `data.timezone` names one. Set from
    /// `[reminders] timezone`.
    #[serde(skip)]
    pub reminder_timezone: Option<String>,
    /// How far before their due time a burst of reminders may start when it
    /// cannot be sent in time at its channel's rate (a subject may say
    /// otherwise); 0 never starts early. Set from the `[reminders]`
    /// configuration.
    #[serde(skip)]
    pub early_window_ms: i64,
    /// The longest configured reminder lead: how far after a due time the
    /// subjects to count start. Set from the `[reminders]` configuration.
    #[serde(skip)]
    pub max_lead_ms: i64,
    /// How often each node counts the reminders about to fall due and plans
    /// early starts; 0 turns planning off.
    pub early_plan_interval_ms: u64,
    /// Rule planning and job sending; set from the `[jobs]` configuration.
    #[serde(skip)]
    pub campaign: campaign::CampaignConfig,
    /// What is deleted when; set from the `[retention]` configuration.
    #[serde(skip)]
    pub retention: retention::RetentionConfig,
    /// Dispatch weight and delivery rate by tenant; a tenant not listed
    /// weighs 1 and has no rate. Set from the `[tenants.NAME]` configuration
    /// once the names resolve to ids.
    #[serde(skip)]
    pub tenants: HashMap<TenantId, TenantLimits>,
    /// Frequency caps per recipient; set from `[[caps]]` once their tenant
    /// names resolve to ids. Checked when a send to a user fires.
    #[serde(skip)]
    pub caps: Vec<herald_core::caps::CapRule>,
    /// Rate limits per caller-given key (`[[rate_limits]]`), tenants resolved.
    #[serde(skip)]
    pub rate_limits: Vec<herald_core::pacing::RateRule>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            window_ms: 60_000,
            load_batch: 10_000,
            load_interval_ms: 1_000,
            max_loaded: 2_000_000,
            max_inflight: 20_000,
            fetch_batch: 1_000,
            complete_batch: 5_000,
            write_batch: 20_000,
            stats_interval_ms: 1_000,
            drain_timeout_ms: 10_000,
            inflight_stall_ms: 60_000,
            lease_ms: 6_000,
            heartbeat_ms: 2_000,
            lease_guard_ms: 1_000,
            rescan_interval_ms: 30_000,
            quota_refresh_ms: 1_000,
            merge_window_ms: 60_000,
            reminder_templates: std::collections::BTreeMap::new(),
            reminder_timezone: None,
            early_window_ms: 300_000,
            max_lead_ms: 3_600_000,
            early_plan_interval_ms: 5_000,
            campaign: campaign::CampaignConfig::default(),
            retention: retention::RetentionConfig::default(),
            tenants: HashMap::new(),
            caps: Vec::new(),
            rate_limits: Vec::new(),
        }
    }
}
