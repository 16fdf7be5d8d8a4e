//! The settings every channel takes, whatever its provider: its name and how
//! hard the engine may push it.

use serde::{Deserialize, Serialize};

use crate::ChannelError;

/// Keys of a `[[channels]]` table that every kind takes (`kind` aside).
pub const COMMON_KEYS: [&str; 13] = [
    "name",
    "rate_per_sec",
    "concurrency",
    "timeout_ms",
    "max_attempts",
    "backoff_base_ms",
    "backoff_max_ms",
    "backoff_jitter",
    "quiet_hours",
    "reminder_template",
    "tenants",
    "in_doubt",
    "pacing",
];

/// A channel's name, limits, retry policy, quiet hours and reminder shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommonSettings {
    /// What timers name in their `channel` field.
    pub name: String,
    /// Sustained deliveries per second; unset means unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_per_sec: Option<f64>,
    /// Deliveries in flight at once.
    #[serde(default = "default_concurrency")]
    pub concurrency: usize,
    /// Per-attempt timeout.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    /// Attempts before a timer is `dead`, the first included.
    #[serde(default = "default_max_attempts")]
    pub max_attempts: u32,
    /// First retry delay; doubles each attempt, with jitter.
    #[serde(default = "default_backoff_base_ms")]
    pub backoff_base_ms: u64,
    /// Cap on any one retry delay.
    #[serde(default = "default_backoff_max_ms")]
    pub backoff_max_ms: u64,
    /// Share of each retry delay that is random, 0.0 to 1.0 (default 0.5:
    /// half fixed, half random), so a failed burst does not come back at once.
    #[serde(default = "default_backoff_jitter")]
    pub backoff_jitter: f64,
    /// Do-not-disturb window, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quiet_hours: Option<QuietHours>,
    /// How a reminder's fields become this channel's message: any JSON value
    /// whose strings may name the reminder message's top-level fields in
    /// braces: `{subject}`, `{subject_id}`, `{start_at}`, `{lead_minutes}`,
    /// `{user_id}`, `{channel_type}`, `{count}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reminder_template: Option<serde_json::Value>,
    /// The tenants that may use this channel; unset, every tenant may. For
    /// any other tenant the channel does not exist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenants: Option<Vec<String>>,
    /// What happens to a send that may have left when a node died before its
    /// outcome was recorded; unset, the kind's default
    /// ([`crate::ChannelKind::default_in_doubt`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_doubt: Option<InDoubt>,
    /// The provider's limits per recipient address, each `{max, window}`:
    /// a send that would pass one waits for the window instead. Unset, the
    /// kind's ([`crate::ChannelKind::default_pacing`]); `[]` turns it off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pacing: Option<Vec<herald_core::pacing::PaceConfig>>,
}

/// What to do with a send that is in doubt: handed to the provider by a node
/// that died before it recorded the answer, so it may or may not have arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InDoubt {
    /// Send it again under the same idempotency key: right for providers
    /// (and receivers) that drop a repeated key.
    Resend,
    /// Do not send it again; it ends with outcome `in_doubt` for an operator
    /// to look at. Right where a repeat reaches a person twice (pushes, mail).
    Skip,
}

impl InDoubt {
    pub fn as_str(self) -> &'static str {
        match self {
            InDoubt::Resend => "resend",
            InDoubt::Skip => "skip",
        }
    }
}

/// A daily do-not-disturb window in a time zone, e.g. 22:00-08:00 Asia/Shanghai.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuietHours {
    /// `HH:MM`, local time; the window may wrap past midnight.
    pub start: String,
    /// `HH:MM`, local time, exclusive.
    pub end: String,
    /// IANA zone name.
    pub timezone: String,
    /// What happens to a delivery due inside the window.
    #[serde(default)]
    pub policy: QuietPolicy,
}

/// What quiet hours do to a delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum QuietPolicy {
    /// Send it when the window ends.
    #[default]
    Defer,
    /// Do not send it; record why.
    Drop,
}

fn default_concurrency() -> usize {
    256
}
fn default_timeout_ms() -> u64 {
    10_000
}
fn default_max_attempts() -> u32 {
    8
}
fn default_backoff_base_ms() -> u64 {
    1_000
}
fn default_backoff_max_ms() -> u64 {
    300_000
}
fn default_backoff_jitter() -> f64 {
    0.5
}

impl CommonSettings {
    /// `name` with every other setting at its default.
    pub fn named(name: &str) -> Self {
        Self {
            name: name.to_string(),
            rate_per_sec: None,
            concurrency: default_concurrency(),
            timeout_ms: default_timeout_ms(),
            max_attempts: default_max_attempts(),
            backoff_base_ms: default_backoff_base_ms(),
            backoff_max_ms: default_backoff_max_ms(),
            backoff_jitter: default_backoff_jitter(),
            quiet_hours: None,
            reminder_template: None,
            tenants: None,
            in_doubt: None,
            pacing: None,
        }
    }

    /// A configuration error of this channel.
    pub(crate) fn err(&self, message: &str) -> ChannelError {
        ChannelError::Config {
            name: self.name.clone(),
            message: message.to_string(),
        }
    }

    /// The parsed do-not-disturb window, if one is configured.
    pub fn quiet_window(&self) -> Result<Option<herald_core::QuietWindow>, ChannelError> {
        self.quiet_hours
            .as_ref()
            .map(|q| {
                herald_core::QuietWindow::parse(&q.start, &q.end, &q.timezone)
                    .map_err(|e| self.err(&format!("quiet_hours: {e}")))
            })
            .transpose()
    }

    /// How quiet hours read in `GET /v1/channels`: `22:00-08:00 Asia/Shanghai (defer)`.
    pub fn quiet_label(&self) -> Option<String> {
        self.quiet_hours.as_ref().map(|q| {
            let policy = match q.policy {
                QuietPolicy::Defer => "defer",
                QuietPolicy::Drop => "drop",
            };
            format!("{}-{} {} ({policy})", q.start, q.end, q.timezone)
        })
    }

    pub fn retry_policy(&self) -> herald_core::RetryPolicy {
        herald_core::RetryPolicy {
            max_attempts: self.max_attempts,
            base_ms: self.backoff_base_ms,
            max_ms: self.backoff_max_ms,
            // Validated to 0.0..=1.0.
            jitter_pct: (self.backoff_jitter.clamp(0.0, 1.0) * 100.0).round() as u8,
        }
    }

    /// Whether the tenant called `tenant` may use this channel.
    pub fn serves_tenant(&self, tenant: &str) -> bool {
        self.tenants
            .as_ref()
            .is_none_or(|names| names.iter().any(|n| n == tenant))
    }

    /// Checks the name, the limits, the tenant names and the quiet-hours
    /// window.
    pub fn validate(&self) -> Result<(), ChannelError> {
        let name_ok = !self.name.is_empty()
            && self.name.len() <= 64
            && self
                .name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.');
        if !name_ok {
            return Err(self.err("name must be 1-64 characters of [A-Za-z0-9._-]"));
        }
        if self.concurrency == 0 {
            return Err(self.err("concurrency must be at least 1"));
        }
        if self.max_attempts == 0 {
            return Err(self.err("max_attempts must be at least 1"));
        }
        if !(0.0..=1.0).contains(&self.backoff_jitter) {
            return Err(self.err("backoff_jitter must be between 0.0 and 1.0"));
        }
        if self.timeout_ms == 0 {
            return Err(self.err("timeout_ms must be at least 1"));
        }
        if let Some(r) = self.rate_per_sec
            && !(r.is_finite() && r > 0.0)
        {
            return Err(self.err("rate_per_sec must be a positive number"));
        }
        if let Some(names) = &self.tenants {
            if names.is_empty() {
                return Err(self.err(
                    "tenants must name at least one tenant (leave it out to serve every tenant)",
                ));
            }
            for n in names {
                if let Some(problem) = herald_core::tenant::tenant_name_problem(n) {
                    return Err(self.err(&format!("tenants: {n:?}: {problem}")));
                }
            }
        }
        self.quiet_window()?;
        for (i, p) in self.pacing.iter().flatten().enumerate() {
            p.pace()
                .map_err(|(key, problem)| self.err(&format!("pacing[{i}].{key}: {problem}")))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_keys_are_the_struct_fields() {
        let mut full = CommonSettings::named("x");
        full.rate_per_sec = Some(1.0);
        full.reminder_template = Some(serde_json::json!({}));
        full.tenants = Some(vec!["shop".into()]);
        full.in_doubt = Some(InDoubt::Skip);
        full.pacing = Some(vec![]);
        full.quiet_hours = Some(QuietHours {
            start: "22:00".into(),
            end: "08:00".into(),
            timezone: "UTC".into(),
            policy: QuietPolicy::Drop,
        });
        let v = serde_json::to_value(&full).unwrap();
        let mut fields: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        let mut keys = COMMON_KEYS.to_vec();
        fields.sort_unstable();
        keys.sort_unstable();
        assert_eq!(fields, keys);
        assert_eq!(
            full.quiet_label().as_deref(),
            Some("22:00-08:00 UTC (drop)")
        );
    }

    #[test]
    fn limits_are_checked() {
        assert!(CommonSettings::named("log").validate().is_ok());
        assert!(CommonSettings::named("bad name").validate().is_err());
        let mut c = CommonSettings::named("x");
        c.concurrency = 0;
        assert!(c.validate().is_err());
        let mut c = CommonSettings::named("x");
        c.rate_per_sec = Some(-1.0);
        assert!(c.validate().is_err());
        let mut c = CommonSettings::named("x");
        c.backoff_jitter = 1.5;
        assert!(c.validate().is_err());
    }

    #[test]
    fn tenants_limit_who_sees_the_channel() {
        let mut c = CommonSettings::named("x");
        assert!(c.serves_tenant("shop") && c.serves_tenant("default"));
        c.tenants = Some(vec!["shop".into(), "crm".into()]);
        assert!(c.validate().is_ok());
        assert!(c.serves_tenant("crm") && !c.serves_tenant("default"));
        c.tenants = Some(vec![]);
        assert!(c.validate().is_err());
        c.tenants = Some(vec!["bad name".into()]);
        assert!(c.validate().is_err());
    }
}
