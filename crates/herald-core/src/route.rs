//! Fallback routes (issue 39 §2): an ordered list of steps, each a channel
//! and the subscriber address type it sends to. The first step is sent as
//! any timer is; a later step is taken only when the step before it ended in
//! an outcome the later step lists in its `on` (the subscriber has no
//! address there, opted out, the send failed, or, `after` a delivered send,
//! nobody read it). Otherwise the step's outcome is final.
//!
//! Pure: what a request may say ([`StepSpec::check`]) and which step comes
//! next ([`next`]). Resolving a channel type to a configured channel, and
//! carrying a step out, are the server's and the engine's.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::reminder::ChannelType;

/// Most steps a route may have.
pub const MAX_STEPS: usize = 5;
/// Longest wait a step may take for a read receipt.
pub const MAX_AFTER: Duration = Duration::from_secs(30 * 24 * 3600);

/// An outcome of the step before that a step is taken on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepOn {
    /// The subscriber has no address of the step's type.
    NoAddress,
    /// The subscriber opted out of the type or the message's topic.
    OptedOut,
    /// Any other failure: refused by the provider, retries used up, a
    /// template that would not render.
    Failed,
    /// Delivered, and no `read` receipt came within the step's `after`.
    Unread,
    /// The user has no grant left for a mini-program subscribe message.
    NoGrant,
}

impl StepOn {
    pub const ALL: [StepOn; 5] = [
        StepOn::NoAddress,
        StepOn::OptedOut,
        StepOn::Failed,
        StepOn::Unread,
        StepOn::NoGrant,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            StepOn::NoAddress => "no_address",
            StepOn::OptedOut => "opted_out",
            StepOn::Failed => "failed",
            StepOn::Unread => "unread",
            StepOn::NoGrant => "no_grant",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|o| o.as_str() == s)
    }
}

/// One step as stored: its channel already resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// A configured channel.
    pub channel: String,
    /// Which of the subscriber's addresses it sends to.
    pub channel_type: ChannelType,
    /// The outcomes of the step before that lead here (empty for the first).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub on: Vec<StepOn>,
    /// With `unread`: how long after the delivered step to wait for a read
    /// receipt (ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_ms: Option<i64>,
    /// A campaign step's own message (JSON text; a template's data with
    /// `template`); without, the step sends the campaign's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// A campaign step's own template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<crate::template::TemplateRef>,
}

/// How a step ended, as far as the route is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepEnd {
    Delivered,
    NoAddress,
    OptedOut,
    Failed,
    /// No grant left for a mini-program subscribe message.
    NoGrant,
    /// Final whatever the route says: capped (falling back would get round
    /// the cap), expired, or in doubt.
    Final,
}

/// The step to go on to, and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Next {
    pub step: u32,
    /// After the step's end (0: at once).
    pub delay_ms: i64,
    /// Taken because the delivered step may go unread: it is sent only if
    /// no `read` receipt came for the step before by then.
    pub check_read: bool,
}

/// The step after `step` that `end` leads to, if any.
pub fn next(route: &[Step], step: u32, end: StepEnd) -> Option<Next> {
    let i = usize::try_from(step).ok()?.checked_add(1)?;
    let to = route.get(i)?;
    let on = match end {
        StepEnd::Delivered => StepOn::Unread,
        StepEnd::NoAddress => StepOn::NoAddress,
        StepEnd::OptedOut => StepOn::OptedOut,
        StepEnd::Failed => StepOn::Failed,
        StepEnd::NoGrant => StepOn::NoGrant,
        StepEnd::Final => return None,
    };
    if !to.on.contains(&on) {
        return None;
    }
    let step = u32::try_from(i).ok()?;
    Some(if on == StepOn::Unread {
        Next {
            step,
            delay_ms: to.after_ms.unwrap_or(0).max(0),
            check_read: true,
        }
    } else {
        Next {
            step,
            delay_ms: 0,
            check_read: false,
        }
    })
}

/// A request's fields that are wrong: the field, as `route[1].on[0]`, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct RouteError {
    pub field: String,
    pub message: String,
    /// `missing_field` rather than `invalid_field`.
    pub missing: bool,
}

impl RouteError {
    fn invalid(field: String, message: impl Into<String>) -> Self {
        Self {
            field,
            message: message.into(),
            missing: false,
        }
    }
    fn missing(field: String, message: impl Into<String>) -> Self {
        Self {
            field,
            message: message.into(),
            missing: true,
        }
    }
}

/// `after` as a request gives it: a duration (`"30m"`) or seconds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum After {
    Secs(i64),
    Text(String),
}

/// One step as a request or a configuration gives it: a channel by name, a
/// channel type, or both.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepSpec {
    #[serde(default)]
    pub channel: Option<String>,
    #[serde(default)]
    pub channel_type: Option<String>,
    #[serde(default)]
    pub on: Vec<String>,
    #[serde(default)]
    pub after: Option<After>,
}

/// A step's fields once checked, before its channel is resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedStep {
    pub channel: Option<String>,
    pub channel_type: Option<ChannelType>,
    pub on: Vec<StepOn>,
    pub after_ms: Option<i64>,
}

impl CheckedStep {
    /// The stored step, with the channel the caller resolved.
    pub fn resolved(&self, channel: String, channel_type: ChannelType) -> Step {
        Step {
            channel,
            channel_type,
            on: self.on.clone(),
            after_ms: self.after_ms,
            message: None,
            template: None,
        }
    }
}

/// Checks a whole route: 1 to [`MAX_STEPS`] steps, each checked as
/// [`StepSpec::check`] under `field` (`route`, `routing.default.route`).
pub fn check(field: &str, steps: &[StepSpec]) -> Result<Vec<CheckedStep>, RouteError> {
    if steps.is_empty() || steps.len() > MAX_STEPS {
        return Err(RouteError::invalid(
            field.to_string(),
            format!("a route has 1 to {MAX_STEPS} steps"),
        ));
    }
    steps
        .iter()
        .enumerate()
        .map(|(i, s)| s.check(&format!("{field}[{i}]"), i))
        .collect()
}

impl StepSpec {
    /// Checks step `index` of a route; errors name fields under `at`.
    pub fn check(&self, at: &str, index: usize) -> Result<CheckedStep, RouteError> {
        let channel_type = match &self.channel_type {
            Some(s) => Some(ChannelType::parse(s).ok_or_else(|| {
                RouteError::invalid(
                    format!("{at}.channel_type"),
                    format!(
                        "{s:?} is not one of {}",
                        ChannelType::ALL.map(ChannelType::as_str).join(", ")
                    ),
                )
            })?),
            None => None,
        };
        if let Some(c) = &self.channel
            && (c.is_empty() || c.len() > 255)
        {
            return Err(RouteError::invalid(
                format!("{at}.channel"),
                "a channel name is 1 to 255 bytes",
            ));
        }
        if self.channel.is_none() && channel_type.is_none() {
            return Err(RouteError::missing(
                format!("{at}.channel_type"),
                "a step names a channel, a channel_type, or both",
            ));
        }
        let mut on = Vec::with_capacity(self.on.len());
        for (j, s) in self.on.iter().enumerate() {
            let o = StepOn::parse(s).ok_or_else(|| {
                RouteError::invalid(
                    format!("{at}.on[{j}]"),
                    format!(
                        "{s:?} is not one of {}",
                        StepOn::ALL.map(StepOn::as_str).join(", ")
                    ),
                )
            })?;
            if on.contains(&o) {
                return Err(RouteError::invalid(
                    format!("{at}.on[{j}]"),
                    format!("{s:?} is listed twice"),
                ));
            }
            on.push(o);
        }
        if index == 0 && !on.is_empty() {
            return Err(RouteError::invalid(
                format!("{at}.on"),
                "the first step is always sent: it takes no `on`",
            ));
        }
        if index > 0 && on.is_empty() {
            return Err(RouteError::missing(
                format!("{at}.on"),
                "a later step lists the outcomes of the step before that lead to it \
                 (no_address, opted_out, failed, unread, no_grant)",
            ));
        }
        let after_ms = match &self.after {
            None if on.contains(&StepOn::Unread) => {
                return Err(RouteError::missing(
                    format!("{at}.after"),
                    "an `unread` step says how long to wait for a read receipt (\"30m\")",
                ));
            }
            None => None,
            Some(_) if !on.contains(&StepOn::Unread) => {
                return Err(RouteError::invalid(
                    format!("{at}.after"),
                    "`after` is the wait for a read receipt: it goes with `unread` in `on`",
                ));
            }
            Some(a) => {
                Some(after_ms(a).map_err(|m| RouteError::invalid(format!("{at}.after"), m))?)
            }
        };
        Ok(CheckedStep {
            channel: self.channel.clone(),
            channel_type,
            on,
            after_ms,
        })
    }
}

/// `after` in ms: 1 s to [`MAX_AFTER`].
fn after_ms(a: &After) -> Result<i64, String> {
    let d = match a {
        After::Secs(s) => Duration::from_secs(u64::try_from(*s).map_err(|_| {
            format!(
                "{s} is not a number of seconds from 1 to {}",
                MAX_AFTER.as_secs()
            )
        })?),
        After::Text(t) => humantime::parse_duration(t)
            .map_err(|e| format!("{t:?} is not a duration such as \"30m\": {e}"))?,
    };
    if d < Duration::from_secs(1) || d > MAX_AFTER {
        return Err("must be between 1s and 30days".into());
    }
    i64::try_from(d.as_millis()).map_err(|_| "too long".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(json: &str) -> Vec<StepSpec> {
        serde_json::from_str(json).unwrap()
    }

    fn route(json: &str) -> Vec<Step> {
        check("route", &spec(json))
            .unwrap()
            .into_iter()
            .map(|s| {
                let t = s.channel_type.unwrap_or(ChannelType::Email);
                s.resolved(t.as_str().into(), t)
            })
            .collect()
    }

    #[test]
    fn a_step_is_taken_only_on_what_it_lists() {
        let r = route(
            r#"[{"channel_type":"wechat"},
                {"channel_type":"sms","on":["no_address","opted_out","failed"]},
                {"channel_type":"email","on":["unread"],"after":"30m"}]"#,
        );
        let at_once = |step| Next {
            step,
            delay_ms: 0,
            check_read: false,
        };
        assert_eq!(next(&r, 0, StepEnd::NoAddress), Some(at_once(1)));
        assert_eq!(next(&r, 0, StepEnd::OptedOut), Some(at_once(1)));
        assert_eq!(next(&r, 0, StepEnd::Failed), Some(at_once(1)));
        assert_eq!(
            next(&r, 0, StepEnd::Delivered),
            None,
            "sms is not for unread"
        );
        assert_eq!(next(&r, 0, StepEnd::Final), None);
        assert_eq!(
            next(&r, 1, StepEnd::Delivered),
            Some(Next {
                step: 2,
                delay_ms: 30 * 60_000,
                check_read: true
            })
        );
        assert_eq!(next(&r, 1, StepEnd::Failed), None);
        assert_eq!(next(&r, 2, StepEnd::Failed), None, "the last step is final");
        assert_eq!(next(&r, 9, StepEnd::Failed), None);
    }

    #[test]
    fn bad_routes_name_the_field() {
        let err = |json: &str| check("route", &spec(json)).unwrap_err();
        assert_eq!(err("[]").field, "route");
        assert_eq!(err(r#"[{}]"#).field, "route[0].channel_type");
        assert!(err(r#"[{}]"#).missing);
        assert_eq!(
            err(r#"[{"channel_type":"fax"}]"#).field,
            "route[0].channel_type"
        );
        assert_eq!(
            err(r#"[{"channel_type":"sms","on":["failed"]}]"#).field,
            "route[0].on"
        );
        assert_eq!(
            err(r#"[{"channel_type":"sms"},{"channel_type":"email"}]"#).field,
            "route[1].on"
        );
        assert_eq!(
            err(r#"[{"channel_type":"sms"},{"channel_type":"email","on":["failed","nope"]}]"#)
                .field,
            "route[1].on[1]"
        );
        assert_eq!(
            err(r#"[{"channel_type":"sms"},{"channel_type":"email","on":["failed","failed"]}]"#)
                .field,
            "route[1].on[1]"
        );
        assert_eq!(
            err(r#"[{"channel_type":"sms"},{"channel_type":"email","on":["unread"]}]"#).field,
            "route[1].after"
        );
        assert_eq!(
            err(r#"[{"channel_type":"sms"},{"channel_type":"email","on":["failed"],"after":5}]"#)
                .field,
            "route[1].after"
        );
        for bad in [r#""0s""#, "0", "-3", r#""40days""#, r#""soon""#] {
            let json = format!(
                r#"[{{"channel_type":"sms"}},{{"channel_type":"email","on":["unread"],"after":{bad}}}]"#
            );
            assert_eq!(err(&json).field, "route[1].after", "{bad}");
        }
        let six = format!("[{}]", [r#"{"channel_type":"sms"}"#; 6].join(","));
        assert_eq!(err(&six).field, "route");
        let ok = check(
            "route",
            &spec(r#"[{"channel":"hooks","channel_type":"sms"},{"channel":"mail","on":["unread"],"after":90}]"#),
        )
        .unwrap();
        assert_eq!(ok[1].after_ms, Some(90_000));
    }

    #[test]
    fn steps_round_trip_as_stored() {
        let r = route(
            r#"[{"channel_type":"sms"},{"channel_type":"email","on":["unread"],"after":"1m"}]"#,
        );
        let text = serde_json::to_string(&r).unwrap();
        assert_eq!(serde_json::from_str::<Vec<Step>>(&text).unwrap(), r);
    }
}
