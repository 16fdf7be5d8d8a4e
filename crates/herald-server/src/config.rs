//! The `[api]` and `[reminders]` settings: request limits, and how reminder
//! channel types map to configured channels.

use std::collections::BTreeMap;

use herald_core::reminder::{ChannelType, Leads};
use herald_core::template::TemplateRef;
use serde::{Deserialize, Serialize};

/// Request limits.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ApiConfig {
    /// Largest single timer (a `POST /v1/timers` body, or one bulk line).
    pub max_timer_bytes: usize,
    /// Largest bulk request body.
    pub bulk_max_bytes: usize,
    /// Most timers in one bulk request.
    pub bulk_max_lines: usize,
    /// Timers per transaction inside a bulk request.
    pub bulk_chunk: usize,
    /// Most recipients in one uploaded audience (`POST /v1/audiences`).
    pub audience_max_recipients: u64,
    /// Most `audience.users` a rule may list inline.
    pub rule_max_users: usize,
    /// Shortest interval between two sends of a new or changed cron rule
    /// (and of a schedule preview); `0` for no floor.
    pub rule_min_interval_secs: u64,
    /// Most `users` a job may list inline.
    pub job_max_users: usize,
    /// Largest rule or job request body.
    pub campaign_body_max_bytes: usize,
    /// Request-body bytes the node holds at once, over every request being
    /// read, parsed or committed. A request that cannot get its share is
    /// answered `503 overloaded` with `Retry-After`.
    pub max_inflight_body_bytes: u64,
    /// Of those, the most one caller's requests hold together (a caller is
    /// an API key, the admin key, or without a key the peer's address);
    /// unset, a quarter of `max_inflight_body_bytes`. A caller's only
    /// request is bounded by the node's budget alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_caller_body_bytes: Option<u64>,
    /// How long a client has to send a request's headers, from when the
    /// connection waits for them: a new connection, or a kept-alive one
    /// after its last answer (so it also closes idle connections).
    pub header_read_timeout_ms: u64,
    /// Longest wait for the next piece of a request body; a client that
    /// stalls longer is answered `408 request_timeout`.
    pub body_read_timeout_ms: u64,
    /// Longest time a whole request body may take to arrive, from when the
    /// request was admitted; a body still arriving then is answered `408
    /// request_timeout`. Bounds how long a body holds its share of the
    /// budget, however slowly it trickles.
    pub body_total_timeout_ms: u64,
    /// Connections served at once; past it, new ones wait to be accepted.
    pub max_connections: usize,
}

impl Default for ApiConfig {
    fn default() -> Self {
        Self {
            max_timer_bytes: 64 * 1024,
            bulk_max_bytes: 64 * 1024 * 1024,
            bulk_max_lines: 100_000,
            bulk_chunk: 10_000,
            audience_max_recipients: 50_000_000,
            rule_max_users: 10_000,
            rule_min_interval_secs: 60,
            job_max_users: 10_000,
            campaign_body_max_bytes: 8 * 1024 * 1024,
            max_inflight_body_bytes: 256 * 1024 * 1024,
            max_caller_body_bytes: None,
            header_read_timeout_ms: 10_000,
            body_read_timeout_ms: 60_000,
            body_total_timeout_ms: 600_000,
            max_connections: 10_000,
        }
    }
}

impl ApiConfig {
    /// The most one caller's bodies hold together.
    pub fn caller_body_share(&self) -> u64 {
        self.max_caller_body_bytes
            .unwrap_or(self.max_inflight_body_bytes / 4)
    }

    /// Refuses settings that would stop every request.
    pub fn validate(&self) -> Result<(), String> {
        if self.body_total_timeout_ms == 0 || self.body_read_timeout_ms == 0 {
            return Err(
                "api.body_total_timeout_ms and api.body_read_timeout_ms must be at least 1".into(),
            );
        }
        Ok(())
    }
}

/// How reminders reach users.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RemindersConfig {
    /// A user's reminders on one channel that fall due within this many
    /// milliseconds of the earliest go out as one message; 0 turns merging off.
    pub merge_window_ms: i64,
    /// The configured channel each channel type is sent through, e.g.
    /// `app = "push"`. A type without an entry uses the channel of the same
    /// name, if there is one. A reminder may name its own `channel`.
    pub channels: BTreeMap<String, String>,
    /// The channel for types that `channels` does not map and no channel is
    /// named after. Unset, such a reminder is refused. The embedded default
    /// (no channels configured) sets it to its `log` channel.
    pub default_channel: Option<String>,
    /// The lead times a reminder may take, in minutes before the start, in
    /// bit order: 1 to 12 of them, 0 ("at the start") to 1440. Unset: 5, 10,
    /// ... 60. The store remembers the list its subscriptions were made
    /// under; a later list may only append to it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leads_minutes: Option<Vec<u16>>,
    /// The template each channel type's reminders are rendered with, by
    /// type: `wechat = "coupon_opens"` (its latest version when each reminder
    /// is sent) or `"coupon_opens@3"` (pinned). A type without one sends
    /// Herald's reminder shape, which only webhook and log channels take.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub templates: BTreeMap<String, String>,
    /// The IANA time zone reminder templates show times in when neither the
    /// subscriber nor the subject's `data.timezone` names one; unset, UTC.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    /// How far before their due time the reminders due at one instant on one
    /// channel may start when they cannot all be sent by then at the
    /// channel's `rate_per_sec` (issue 39 §4): 0 to 3,600,000 ms. A subject
    /// may set its own (`early_window_ms`). Default five minutes: a burst
    /// that would otherwise land late (or expire at the subject's start)
    /// goes a little early instead; a batch that takes under a second at the
    /// rate is never moved.
    pub early_window_ms: i64,
}

impl RemindersConfig {
    /// The channel an address type routes to when nothing names one:
    /// `channels`, else a channel named like the type (`has` says whether
    /// one is there), else `default_channel`.
    pub fn channel_for_type(&self, t: ChannelType, has: impl Fn(&str) -> bool) -> Option<String> {
        match self.channels.get(t.as_str()) {
            Some(c) => Some(c.clone()),
            None if has(t.as_str()) => Some(t.as_str().to_string()),
            None => self.default_channel.clone(),
        }
    }
}

impl Default for RemindersConfig {
    fn default() -> Self {
        Self {
            merge_window_ms: 60_000,
            channels: BTreeMap::new(),
            default_channel: None,
            leads_minutes: None,
            templates: BTreeMap::new(),
            timezone: None,
            early_window_ms: 300_000,
        }
    }
}

impl RemindersConfig {
    /// The configured leads (the default when unset; [`Self::validate`]
    /// refuses a list that is not usable).
    pub fn leads(&self) -> Leads {
        self.leads_minutes
            .clone()
            .and_then(|m| Leads::new(m).ok())
            .unwrap_or_default()
    }

    /// `[reminders.templates]` as references, by channel type (checked by
    /// [`Self::validate`]; an entry that does not parse is left out).
    pub fn template_refs(&self) -> BTreeMap<String, TemplateRef> {
        self.templates
            .iter()
            .filter_map(|(t, spec)| Some((t.clone(), parse_template_spec(spec).ok()?)))
            .collect()
    }

    /// Checks the routing table against the configured channels.
    pub fn validate(&self, has_channel: impl Fn(&str) -> bool) -> Result<(), String> {
        for (t, spec) in &self.templates {
            if ChannelType::parse(t).is_none() {
                return Err(format!(
                    "reminders.templates: {t:?} is not a channel type; expected one of {}",
                    type_names()
                ));
            }
            parse_template_spec(spec).map_err(|e| format!("reminders.templates.{t}: {e}"))?;
        }
        if let Some(tz) = &self.timezone
            && jiff::tz::TimeZone::get(tz).is_err()
        {
            return Err(format!(
                "reminders.timezone: {tz:?} is not an IANA time zone (e.g. \"Asia/Shanghai\")"
            ));
        }
        if self.merge_window_ms < 0 {
            return Err("reminders.merge_window_ms must not be negative".into());
        }
        if !(0..=herald_core::early::MAX_EARLY_WINDOW_MS).contains(&self.early_window_ms) {
            return Err(format!(
                "reminders.early_window_ms must be 0 to {}",
                herald_core::early::MAX_EARLY_WINDOW_MS
            ));
        }
        if let Some(m) = &self.leads_minutes {
            Leads::new(m.clone()).map_err(|e| format!("reminders.leads_minutes: {e}"))?;
        }
        if let Some(c) = &self.default_channel
            && !has_channel(c)
        {
            return Err(format!(
                "reminders.default_channel: no channel named {c:?} is configured"
            ));
        }
        for (t, c) in &self.channels {
            if ChannelType::parse(t).is_none() {
                return Err(format!(
                    "reminders.channels: {t:?} is not a channel type; expected one of {}",
                    type_names()
                ));
            }
            if !has_channel(c) {
                return Err(format!(
                    "reminders.channels.{t}: no channel named {c:?} is configured"
                ));
            }
        }
        Ok(())
    }
}

/// `NAME` or `NAME@VERSION` as a template reference.
pub fn parse_template_spec(spec: &str) -> Result<TemplateRef, String> {
    let (name, version) = match spec.rsplit_once('@') {
        Some((n, v)) => {
            let v: u32 = v
                .parse()
                .ok()
                .filter(|v| *v >= 1)
                .ok_or_else(|| format!("{spec:?}: the version after '@' is a number from 1"))?;
            (n, Some(v))
        }
        None => (spec, None),
    };
    herald_core::template::check_name(name).map_err(|e| format!("{spec:?}: {e}"))?;
    Ok(TemplateRef {
        name: name.to_string(),
        version,
    })
}

/// The channel types, as a list for messages.
pub fn type_names() -> String {
    ChannelType::ALL
        .iter()
        .map(|t| t.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}
