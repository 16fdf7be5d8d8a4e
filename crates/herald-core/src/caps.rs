//! Frequency caps per recipient (`[[caps]]`): which caps apply to a send, and
//! the counting windows, decided here without I/O. The counting itself is
//! the store's (`herald_store::CapStore::take_caps`), cluster-wide.
//!
//! A cap such as "at most 3 messages of topic `marketing` per user per 24 h"
//! counts the sends of one user (and, with `per_channel_type`, of one channel
//! type) in a **sliding window** made of [`SUB_WINDOWS`] buckets, each a tenth
//! of the window: a counter row per (tenant, cap, user, bucket), so a popular
//! window is spread over as many rows as there are users and never one hot
//! row. The window counted at time `t` is the bucket holding `t` and the
//! [`SUB_WINDOWS`] buckets before it, which covers every span of `window`
//! ending at `t`: never more than `max` sends in any span `window` long, and
//! a slot used comes free between `window` and `window + window / 10` later.
//!
//! A `critical` message is never capped. Only sends addressed to a user id
//! (timers sent `to` a user, reminders, directory-resolved campaign sends) are.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::{ChannelType, TenantId};

/// Buckets a cap's window is cut into.
pub const SUB_WINDOWS: i64 = 10;

/// The longest window a cap may have (a bucket row lives about this long).
pub const MAX_WINDOW: Duration = Duration::from_secs(31 * 24 * 3600);

/// What a capped send becomes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnCap {
    /// Final, with outcome `capped`.
    #[default]
    Drop,
    /// Reminders only: deferred to when the window frees (outcome
    /// `cap_deferred`, no attempt used); other sends are dropped.
    Defer,
}

/// One `[[caps]]` entry as configured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapConfig {
    /// Unique; part of the counters' key, and named in the send log.
    pub name: String,
    /// Counts only messages of this topic (a timer's `topic`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
    /// Counts only sends on channels of this type (`app`, `email`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel_type: Option<String>,
    /// Counts each channel type apart ("1 per user per channel type").
    #[serde(default)]
    pub per_channel_type: bool,
    /// Most sends in any window.
    pub max: u32,
    /// The window, as `24h`, `10m`, `90s`.
    pub window: String,
    /// Tenants it applies to (by name); unset: every tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenants: Option<Vec<String>>,
    /// What a reminder over the cap does; other sends are always dropped.
    #[serde(default)]
    pub on_cap: OnCap,
}

/// A problem with one `[[caps]]` entry, naming the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("caps[{index}].{key}: {problem}")]
pub struct CapConfigError {
    pub index: usize,
    pub key: &'static str,
    pub problem: String,
}

impl CapConfig {
    /// Checks the entry (the `index`-th) and turns it into a rule for the
    /// tenants given (already resolved from `tenants`; `None`: every tenant).
    pub fn rule(
        &self,
        index: usize,
        tenants: Option<Vec<TenantId>>,
    ) -> Result<CapRule, CapConfigError> {
        let err = |key, problem: String| CapConfigError {
            index,
            key,
            problem,
        };
        if !valid_name(&self.name) {
            return Err(err(
                "name",
                "must be 1 to 64 letters, digits, '_', '-' or '.'".into(),
            ));
        }
        if self.max == 0 {
            return Err(err("max", "must be at least 1".into()));
        }
        let window_ms = parse_window(&self.window).map_err(|p| err("window", p))?;
        let channel_type = match &self.channel_type {
            None => None,
            Some(t) => Some(ChannelType::parse(t).ok_or_else(|| {
                err(
                    "channel_type",
                    format!("{t:?} is not a channel type (app, email, sms, wechat, wecom)"),
                )
            })?),
        };
        if self.topic.as_deref() == Some("") {
            return Err(err("topic", "must not be empty".into()));
        }
        if let Some(t) = &self.tenants
            && t.is_empty()
        {
            return Err(err("tenants", "must name at least one tenant".into()));
        }
        Ok(CapRule {
            name: self.name.clone(),
            topic: self.topic.clone(),
            channel_type,
            per_channel_type: self.per_channel_type,
            max: self.max,
            window_ms,
            tenants,
            on_cap: self.on_cap,
        })
    }
}

/// Whether `name` may name a cap or a rate limit: 1 to 64 letters, digits,
/// `_`, `-` or `.`.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
}

/// Reads a counting window (`24h`, `10m`, `90s`) as milliseconds, between
/// one second and [`MAX_WINDOW`]; the problem otherwise.
pub fn parse_window(text: &str) -> Result<i64, String> {
    let window =
        humantime::parse_duration(text).map_err(|e| format!("{text:?} is not a duration: {e}"))?;
    if window < Duration::from_secs(1) || window > MAX_WINDOW {
        return Err("must be between 1s and 31days".into());
    }
    Ok(i64::try_from(window.as_millis()).unwrap_or(i64::MAX))
}

/// A checked cap, with its tenants resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapRule {
    pub name: String,
    pub topic: Option<String>,
    pub channel_type: Option<ChannelType>,
    pub per_channel_type: bool,
    pub max: u32,
    pub window_ms: i64,
    /// `None`: every tenant.
    pub tenants: Option<Vec<TenantId>>,
    pub on_cap: OnCap,
}

/// What a cap decision knows of one send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CapSend<'a> {
    pub tenant: TenantId,
    pub user_id: &'a str,
    pub channel_type: ChannelType,
    pub topic: Option<&'a str>,
    pub critical: bool,
}

/// One counter a send must find room in (and takes a slot of).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CapCheck {
    /// The cap's name, for the send log.
    pub cap: String,
    /// The counter's key within the tenant: cap, user and (per channel type) type.
    pub key: String,
    pub max: u32,
    pub window_ms: i64,
    /// Full, the send waits for a free slot rather than being dropped:
    /// provider pacing and rate keys always, a cap with `on_cap = "defer"`
    /// for reminders.
    pub defer: bool,
}

impl CapRule {
    /// Whether this cap counts `send`.
    pub fn applies(&self, send: &CapSend<'_>) -> bool {
        !send.critical
            && self
                .tenants
                .as_ref()
                .is_none_or(|t| t.contains(&send.tenant))
            && self.channel_type.is_none_or(|t| t == send.channel_type)
            && self.topic.as_deref().is_none_or(|t| send.topic == Some(t))
    }

    /// The counter `send` counts in under this cap.
    pub fn check_for(&self, send: &CapSend<'_>) -> CapCheck {
        // A unit separator keeps the parts apart whatever a user id holds.
        let key = if self.per_channel_type {
            format!(
                "{}\u{1f}{}\u{1f}{}",
                self.name,
                send.user_id,
                send.channel_type.as_str()
            )
        } else {
            format!("{}\u{1f}{}", self.name, send.user_id)
        };
        CapCheck {
            cap: self.name.clone(),
            key,
            max: self.max,
            window_ms: self.window_ms,
            defer: self.on_cap == OnCap::Defer,
        }
    }
}

/// The counters `send` must find room in: one per cap that applies (none for
/// a critical message).
pub fn checks_for(rules: &[CapRule], send: &CapSend<'_>) -> Vec<CapCheck> {
    rules
        .iter()
        .filter(|r| r.applies(send))
        .map(|r| r.check_for(send))
        .collect()
}

impl CapCheck {
    /// One bucket's width: a tenth of the window (at least 1 ms).
    pub fn bucket_ms(&self) -> i64 {
        (self.window_ms / SUB_WINDOWS).max(1)
    }

    /// The start of the bucket holding `at`.
    pub fn bucket_of(&self, at: i64) -> i64 {
        at.div_euclid(self.bucket_ms()) * self.bucket_ms()
    }

    /// When the bucket starting at `bucket` leaves every window this
    /// counter counts (and its row may be deleted).
    pub fn counts_until(&self, bucket: i64) -> i64 {
        bucket + (SUB_WINDOWS + 1) * self.bucket_ms()
    }

    /// The oldest bucket counted at `at`: buckets starting before it are
    /// out of the window (and may be deleted).
    pub fn oldest_counted(&self, at: i64) -> i64 {
        self.bucket_of(at) - SUB_WINDOWS * self.bucket_ms()
    }

    /// Decides a send at `at` against the counts of this counter's buckets
    /// (`(bucket start, count)`, any order; buckets out of the window are
    /// ignored): room for one more, or the time its window frees a slot.
    pub fn decide(&self, buckets: &[(i64, i64)], at: i64) -> CapDecision {
        let oldest = self.oldest_counted(at);
        let mut counted: Vec<(i64, i64)> = buckets
            .iter()
            .copied()
            .filter(|&(b, n)| b >= oldest && n > 0)
            .collect();
        let used: i64 = counted.iter().map(|&(_, n)| n).sum();
        let max = i64::from(self.max);
        if used < max {
            return CapDecision::Room;
        }
        // A bucket stops counting once the window moved past it: when the
        // current bucket starts more than SUB_WINDOWS buckets after it.
        counted.sort_unstable();
        let mut left = used;
        for (b, n) in counted {
            left -= n;
            if left < max {
                return CapDecision::Full {
                    free_at: self.counts_until(b),
                };
            }
        }
        CapDecision::Full {
            free_at: self.bucket_of(at) + self.bucket_ms(),
        }
    }
}

/// A counter's answer to one send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CapDecision {
    Room,
    /// Full until `free_at` (unix ms).
    Full {
        free_at: i64,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(toml_like: impl FnOnce(&mut CapConfig)) -> CapConfig {
        let mut c = CapConfig {
            name: "marketing".into(),
            topic: Some("marketing".into()),
            channel_type: None,
            per_channel_type: false,
            max: 3,
            window: "24h".into(),
            tenants: None,
            on_cap: OnCap::Drop,
        };
        toml_like(&mut c);
        c
    }

    fn send(topic: Option<&str>) -> CapSend<'_> {
        CapSend {
            tenant: TenantId(1),
            user_id: "u1",
            channel_type: ChannelType::App,
            topic,
            critical: false,
        }
    }

    #[test]
    fn a_bad_entry_names_its_key() {
        for (f, key) in [
            (
                Box::new(|c: &mut CapConfig| c.name = "a b".into()) as Box<dyn Fn(&mut _)>,
                "name",
            ),
            (Box::new(|c: &mut CapConfig| c.max = 0), "max"),
            (
                Box::new(|c: &mut CapConfig| c.window = "soon".into()),
                "window",
            ),
            (
                Box::new(|c: &mut CapConfig| c.window = "0s".into()),
                "window",
            ),
            (
                Box::new(|c: &mut CapConfig| c.window = "400days".into()),
                "window",
            ),
            (
                Box::new(|c: &mut CapConfig| c.channel_type = Some("fax".into())),
                "channel_type",
            ),
            (
                Box::new(|c: &mut CapConfig| c.topic = Some(String::new())),
                "topic",
            ),
            (
                Box::new(|c: &mut CapConfig| c.tenants = Some(vec![])),
                "tenants",
            ),
        ] {
            let e = cfg(|c| f(c)).rule(2, None).unwrap_err();
            assert_eq!(e.key, key);
            assert!(
                e.to_string().starts_with(&format!("caps[2].{key}: ")),
                "{e}"
            );
        }
        let r = cfg(|_| {}).rule(0, None).unwrap();
        assert_eq!(r.window_ms, 86_400_000);
    }

    #[test]
    fn which_caps_apply() {
        let topic = cfg(|_| {}).rule(0, None).unwrap();
        let per_type = cfg(|c| {
            c.name = "any".into();
            c.topic = None;
            c.per_channel_type = true;
            c.max = 1;
            c.window = "10m".into();
        })
        .rule(1, None)
        .unwrap();
        let email_of_t2 = cfg(|c| {
            c.name = "mail".into();
            c.topic = None;
            c.channel_type = Some("email".into());
        })
        .rule(2, Some(vec![TenantId(2)]))
        .unwrap();
        let rules = [topic, per_type, email_of_t2];
        let names = |s: &CapSend<'_>| -> Vec<String> {
            checks_for(&rules, s).into_iter().map(|c| c.cap).collect()
        };
        assert_eq!(names(&send(Some("marketing"))), ["marketing", "any"]);
        assert_eq!(names(&send(Some("news"))), ["any"]);
        assert_eq!(names(&send(None)), ["any"]);
        let critical = CapSend {
            critical: true,
            ..send(Some("marketing"))
        };
        assert!(names(&critical).is_empty(), "critical is never capped");
        let mail = CapSend {
            tenant: TenantId(2),
            channel_type: ChannelType::Email,
            ..send(None)
        };
        assert_eq!(names(&mail), ["any", "mail"]);
        // Per channel type: one counter per type; otherwise one per user.
        let app = checks_for(&rules, &send(None));
        let email = checks_for(&rules, &mail);
        assert_ne!(app[0].key, email[0].key);
        let t = checks_for(&rules, &send(Some("marketing")));
        assert_eq!(t[0].key, "marketing\u{1f}u1");
    }

    #[test]
    fn the_window_slides_over_ten_buckets() {
        let c = CapCheck {
            cap: "c".into(),
            key: "k".into(),
            max: 2,
            window_ms: 1_000,
            defer: false,
        };
        assert_eq!(c.bucket_ms(), 100);
        assert_eq!(c.bucket_of(1_234), 1_200);
        assert_eq!(c.oldest_counted(1_234), 200);
        assert_eq!(c.decide(&[], 0), CapDecision::Room);
        assert_eq!(c.decide(&[(1_000, 1)], 1_050), CapDecision::Room);
        // Two used, at 1000 and 1500: the first frees when bucket 1000
        // leaves the window, at 1000 + 11 * 100.
        let used = [(1_000, 1), (1_500, 1)];
        assert_eq!(c.decide(&used, 1_550), CapDecision::Full { free_at: 2_100 });
        assert_eq!(c.decide(&used, 2_099), CapDecision::Full { free_at: 2_100 });
        assert_eq!(c.decide(&used, 2_100), CapDecision::Room);
        // Never more than max in any span of the window.
        assert_eq!(
            c.decide(&[(1_000, 1), (1_900, 1)], 1_999),
            CapDecision::Full { free_at: 2_100 }
        );
        // Several in one bucket: freed together.
        assert_eq!(
            c.decide(&[(1_000, 3), (1_100, 1)], 1_500),
            CapDecision::Full { free_at: 2_100 }
        );
    }

    #[test]
    fn on_cap_reads_from_config() {
        let c: CapConfig = serde_json::from_str(
            r#"{"name":"n","max":1,"window":"10m","on_cap":"defer","per_channel_type":true}"#,
        )
        .unwrap();
        assert_eq!(c.on_cap, OnCap::Defer);
        let rule = c.rule(0, None).unwrap();
        assert!(rule.check_for(&send(None)).defer);
        let drop = CapConfig {
            on_cap: OnCap::Drop,
            ..c
        };
        assert!(!drop.rule(0, None).unwrap().check_for(&send(None)).defer);
    }
}
