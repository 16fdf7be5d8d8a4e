//! What the engine runs from the configuration: its settings and each
//! channel's runtime. Shared by `serve` at start and `reload` after.

use herald_engine::{ChannelSpec, EngineConfig};

use crate::config::Config;

/// What the engine is started with: `[engine]` with the settings it takes
/// from `[reminders]`, `[jobs]` and `[retention]` (tenant limits are added
/// once their names resolve).
pub fn engine_config(cfg: &Config) -> EngineConfig {
    EngineConfig {
        merge_window_ms: cfg.reminders.merge_window_ms,
        reminder_templates: cfg.reminders.template_refs(),
        reminder_timezone: cfg.reminders.timezone.clone(),
        early_window_ms: cfg.reminders.early_window_ms,
        max_lead_ms: cfg
            .reminders
            .leads()
            .minutes()
            .iter()
            .max()
            .map_or(0, |&m| i64::from(m) * 60_000),
        campaign: cfg.jobs.clone(),
        retention: cfg.retention.clone(),
        ..cfg.engine.clone()
    }
}

/// A configured channel as the engine runs it: its provider client (built
/// here, so a missing secret fails now) and its limits.
pub fn channel_spec(
    c: &herald_channels::ChannelConfig,
    ctx: &herald_channels::BuildContext,
) -> anyhow::Result<ChannelSpec> {
    let channel = herald_channels::build(c, ctx)?;
    let common = &c.common;
    let quiet = match (common.quiet_window()?, &common.quiet_hours) {
        (Some(window), Some(q)) => {
            Some((window, q.policy, common.quiet_label().unwrap_or_default()))
        }
        _ => None,
    };
    Ok(ChannelSpec {
        channel,
        concurrency: common.concurrency,
        rate_per_sec: common.rate_per_sec,
        retry: common.retry_policy(),
        quiet,
        reminder_template: common.reminder_template.clone(),
        in_doubt: c.in_doubt(),
        pacing: c.pacing(),
    })
}
