//! Limits that hold a send back rather than drop it, decided here without
//! I/O and counted by the same store counters as the frequency caps
//! (`crate::caps`):
//!
//! - **provider pacing**: a provider's own limit per recipient address (WeCom
//!   drops, without an error, anything past 30 messages a minute or 1,000 an
//!   hour to one member), set per channel and defaulted per kind by the
//!   channel configuration;
//! - **rate keys**: `[[rate_limits]]`, at most `max` sends per `window` for
//!   each value of a key the caller gives on a timer (`rate_key`, such as a
//!   shop id), per tenant.
//!
//! Both always defer: a send over the limit waits for the window to free a
//! slot, with no attempt used. Critical messages are paced too (the
//! provider's limit does not care) but not rate-keyed unless they carry a key.

use serde::{Deserialize, Serialize};

use crate::TenantId;
use crate::caps::{CapCheck, parse_window};

/// The prefix of pacing counters' keys; no cap name can start with it, so
/// caps, pacing and rate keys never share a counter.
const PACE_PREFIX: &str = "!pace";
/// The prefix of rate-key counters' keys.
const RATE_PREFIX: &str = "!rate";

/// The longest rate key a timer may carry.
pub const MAX_RATE_KEY_LEN: usize = 128;

/// One pacing limit as configured: `{ max = 30, window = "1m" }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaceConfig {
    pub max: u32,
    pub window: String,
}

/// A checked pacing limit: at most `max` sends to one address in any span of
/// `window_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pace {
    pub max: u32,
    pub window_ms: i64,
}

impl PaceConfig {
    /// Checks the limit; the problem names the key within the entry.
    pub fn pace(&self) -> Result<Pace, (&'static str, String)> {
        if self.max == 0 {
            return Err(("max", "must be at least 1".into()));
        }
        let window_ms = parse_window(&self.window).map_err(|p| ("window", p))?;
        Ok(Pace {
            max: self.max,
            window_ms,
        })
    }
}

/// The counters a send on `channel` to `address` must find room in, one per
/// pacing limit of the channel.
pub fn pace_checks(channel: &str, address: &str, paces: &[Pace]) -> Vec<CapCheck> {
    paces
        .iter()
        .map(|p| CapCheck {
            cap: format!(
                "pacing of channel {channel:?}: {} per {}",
                p.max,
                humantime::format_duration(std::time::Duration::from_millis(
                    p.window_ms.unsigned_abs()
                ))
            ),
            // The window is part of the key: two limits of one channel count apart.
            key: format!(
                "{PACE_PREFIX}\u{1f}{channel}\u{1f}{}\u{1f}{address}",
                p.window_ms
            ),
            max: p.max,
            window_ms: p.window_ms,
            defer: true,
        })
        .collect()
}

/// One `[[rate_limits]]` entry as configured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimitConfig {
    /// Unique; part of the counters' key, and named in the send log.
    pub name: String,
    /// Most sends per key in any window.
    pub max: u32,
    /// The window, as `1m`, `1h`.
    pub window: String,
    /// Tenants it applies to (by name); unset: every tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenants: Option<Vec<String>>,
}

/// A checked rate limit, with its tenants resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateRule {
    pub name: String,
    pub max: u32,
    pub window_ms: i64,
    /// `None`: every tenant.
    pub tenants: Option<Vec<TenantId>>,
}

/// A problem with one `[[rate_limits]]` entry, naming the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("rate_limits[{index}].{key}: {problem}")]
pub struct RateLimitError {
    pub index: usize,
    pub key: &'static str,
    pub problem: String,
}

impl RateLimitConfig {
    /// Checks the entry (the `index`-th) and turns it into a rule for the
    /// tenants given (already resolved from `tenants`).
    pub fn rule(
        &self,
        index: usize,
        tenants: Option<Vec<TenantId>>,
    ) -> Result<RateRule, RateLimitError> {
        let err = |key, problem: String| RateLimitError {
            index,
            key,
            problem,
        };
        if !crate::caps::valid_name(&self.name) {
            return Err(err(
                "name",
                "must be 1 to 64 letters, digits, '_', '-' or '.'".into(),
            ));
        }
        if self.max == 0 {
            return Err(err("max", "must be at least 1".into()));
        }
        let window_ms = parse_window(&self.window).map_err(|p| err("window", p))?;
        if let Some(t) = &self.tenants
            && t.is_empty()
        {
            return Err(err("tenants", "must name at least one tenant".into()));
        }
        Ok(RateRule {
            name: self.name.clone(),
            max: self.max,
            window_ms,
            tenants,
        })
    }
}

/// The counters a send of `tenant` carrying rate key `key` must find room
/// in: one per rate limit of the tenant.
pub fn rate_checks(rules: &[RateRule], tenant: TenantId, key: &str) -> Vec<CapCheck> {
    rules
        .iter()
        .filter(|r| r.tenants.as_ref().is_none_or(|t| t.contains(&tenant)))
        .map(|r| CapCheck {
            cap: format!("rate limit {:?} for key {key:?}", r.name),
            key: format!("{RATE_PREFIX}\u{1f}{}\u{1f}{key}", r.name),
            max: r.max,
            window_ms: r.window_ms,
            defer: true,
        })
        .collect()
}

/// Checks a rate key a caller gave: the problem, if any.
pub fn check_rate_key(key: &str) -> Result<(), String> {
    if key.is_empty() || key.len() > MAX_RATE_KEY_LEN {
        return Err(format!("must be 1 to {MAX_RATE_KEY_LEN} bytes"));
    }
    if key.chars().any(char::is_control) {
        return Err("must not contain control characters".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pacing_counts_each_window_and_address_apart() {
        let paces = [
            PaceConfig {
                max: 30,
                window: "1m".into(),
            }
            .pace()
            .unwrap(),
            PaceConfig {
                max: 1000,
                window: "1h".into(),
            }
            .pace()
            .unwrap(),
        ];
        let a = pace_checks("wecom", "zhangsan", &paces);
        let b = pace_checks("wecom", "lisi", &paces);
        assert_eq!(a.len(), 2);
        assert_ne!(a[0].key, a[1].key);
        assert_ne!(a[0].key, b[0].key);
        assert!(a.iter().all(|c| c.defer));
        assert_eq!((a[0].max, a[0].window_ms), (30, 60_000));
        assert_eq!(a[0].cap, r#"pacing of channel "wecom": 30 per 1m"#);
        let bad = PaceConfig {
            max: 0,
            window: "1m".into(),
        };
        assert_eq!(bad.pace().unwrap_err().0, "max");
        let bad = PaceConfig {
            max: 1,
            window: "soon".into(),
        };
        assert_eq!(bad.pace().unwrap_err().0, "window");
    }

    #[test]
    fn rate_limits_apply_per_tenant_and_name_their_key() {
        let cfg = RateLimitConfig {
            name: "shop".into(),
            max: 100,
            window: "1m".into(),
            tenants: None,
        };
        let all = cfg.rule(0, None).unwrap();
        let t2 = RateLimitConfig {
            name: "t2".into(),
            ..cfg.clone()
        }
        .rule(1, Some(vec![TenantId(2)]))
        .unwrap();
        let rules = [all, t2];
        let names = |t| -> Vec<String> {
            rate_checks(&rules, t, "shop-42")
                .into_iter()
                .map(|c| c.cap)
                .collect()
        };
        let shop = r#"rate limit "shop" for key "shop-42""#;
        assert_eq!(names(TenantId(1)), [shop]);
        assert_eq!(
            names(TenantId(2)),
            [shop, r#"rate limit "t2" for key "shop-42""#]
        );
        let e = RateLimitConfig {
            window: "0s".into(),
            ..cfg.clone()
        }
        .rule(3, None)
        .unwrap_err();
        assert_eq!(
            e.to_string().split(':').next(),
            Some("rate_limits[3].window")
        );
        assert!(check_rate_key("shop-42").is_ok());
        assert!(check_rate_key("").is_err());
        assert!(check_rate_key("a\nb").is_err());
        assert!(check_rate_key(&"x".repeat(129)).is_err());
    }

    #[test]
    fn no_cap_name_can_meet_a_pacing_or_rate_counter() {
        assert!(!crate::caps::valid_name(PACE_PREFIX));
        assert!(!crate::caps::valid_name(RATE_PREFIX));
    }
}
