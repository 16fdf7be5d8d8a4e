//! Digests: timers of one recipient, channel and key held back together and
//! sent as one message (see "Digests" in docs/architecture.md; reminder
//! merging is the same idea, fixed to a user's reminders).
//!
//! A digest is placed when a timer is created, not when it fires: the timer
//! is stored due at its digest's close, so the hot firing path only groups
//! timers already due together. This module is the pure part: checking a
//! `digest` spec and deciding the close. Reading the open digest and moving
//! its members is the store's, in the create's transaction.

use jiff::Timestamp;
use jiff::civil::Time;
use jiff::tz::{TimeZone, TimeZoneDatabase};
use serde::{Deserialize, Serialize};

/// Longest digest key, in characters.
pub const MAX_KEY_CHARS: usize = 128;
/// Longest fixed window: a week.
pub const MAX_WINDOW_MS: i64 = 7 * 24 * 3600 * 1000;

/// `digest` of `POST /v1/timers`: `window_ms` or `at_local`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = TimerDigest))]
#[serde(deny_unknown_fields)]
pub struct Digest {
    /// 1..=128 characters.
    // Missing reads as empty, so that `validate` names `digest.key`; the
    // document says what is accepted: required.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub key: String,
    /// Collect for this long after the first timer's due time (1 ms..7 days).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_ms: Option<i64>,
    /// With `window_ms`: each arrival extends the window, never past this
    /// long after the first timer's due time (at least `window_ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_delay_ms: Option<i64>,
    /// `HH:MM`: collect until the next such time in the subscriber's time
    /// zone (UTC without one): a daily digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_local: Option<String>,
    // When the digest this timer joined opened (unix ms); set by the store,
    // refused in a request (`validate`), so not in the document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(ignore))]
    pub since: Option<i64>,
}

/// A refused `digest`, naming the field (`digest.window_ms`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct DigestError {
    pub field: &'static str,
    pub message: String,
}

fn refuse(field: &'static str, message: impl Into<String>) -> DigestError {
    DigestError {
        field,
        message: message.into(),
    }
}

/// An open digest as the store found it: its members' due time and when it opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Open {
    pub close: i64,
    pub since: i64,
}

/// Where a new timer goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    /// The timer's due time: its digest's close.
    pub due_at: i64,
    /// When its digest opened.
    pub since: i64,
    /// The open digest it joined closes later now: its members move here.
    pub slide_to: Option<i64>,
}

impl Digest {
    /// Checks a spec as given by a client (`since` is Herald's to set).
    pub fn validate(&self) -> Result<(), DigestError> {
        let n = self.key.chars().count();
        if n == 0 || n > MAX_KEY_CHARS {
            return Err(refuse(
                "digest.key",
                format!("digest.key must be 1..={MAX_KEY_CHARS} characters"),
            ));
        }
        if self.key.chars().any(char::is_control) {
            return Err(refuse(
                "digest.key",
                "digest.key must not hold control characters",
            ));
        }
        if self.since.is_some() {
            return Err(refuse("digest.since", "digest.since is set by Herald"));
        }
        match (self.window_ms, &self.at_local) {
            (Some(_), Some(_)) => Err(refuse(
                "digest.at_local",
                "give either digest.window_ms or digest.at_local, not both",
            )),
            (None, None) => Err(refuse(
                "digest.window_ms",
                "give digest.window_ms or digest.at_local",
            )),
            (Some(w), None) => {
                if !(1..=MAX_WINDOW_MS).contains(&w) {
                    return Err(refuse(
                        "digest.window_ms",
                        format!("digest.window_ms must be 1..={MAX_WINDOW_MS} (7 days)"),
                    ));
                }
                match self.max_delay_ms {
                    Some(m) if m < w => Err(refuse(
                        "digest.max_delay_ms",
                        "digest.max_delay_ms must be at least digest.window_ms",
                    )),
                    Some(m) if m > MAX_WINDOW_MS => Err(refuse(
                        "digest.max_delay_ms",
                        format!("digest.max_delay_ms must be at most {MAX_WINDOW_MS} (7 days)"),
                    )),
                    _ => Ok(()),
                }
            }
            (None, Some(at)) => {
                if self.max_delay_ms.is_some() {
                    return Err(refuse(
                        "digest.max_delay_ms",
                        "digest.max_delay_ms goes with digest.window_ms, not digest.at_local",
                    ));
                }
                parse_hhmm(at)
                    .map(|_| ())
                    .map_err(|why| refuse("digest.at_local", why))
            }
        }
    }

    /// When a digest opened by a timer due `due` would close on its own:
    /// `window_ms` later, or the first `at_local` at or after it in `tz`.
    pub fn close_from(&self, due: i64, tz: &TimeZone) -> Result<i64, DigestError> {
        match (&self.at_local, self.window_ms) {
            (Some(at), _) => {
                let at = parse_hhmm(at).map_err(|why| refuse("digest.at_local", why))?;
                next_local(due, at, tz).ok_or_else(|| {
                    refuse("digest.at_local", "no such local time after the due time")
                })
            }
            (None, Some(w)) => Ok(due.saturating_add(w)),
            (None, None) => Err(refuse("digest.window_ms", "no window")),
        }
    }

    /// Places a timer due `due` whose own close is `own_close`, given the
    /// earliest open digest of its group closing in `[due, own_close]`
    /// (`None`: it opens one). Joining never makes it later than its own
    /// close; a sliding window (`max_delay_ms`) moves to the new arrival's
    /// own close, capped at `since + max_delay_ms`.
    pub fn place(&self, due: i64, own_close: i64, open: Option<Open>) -> Placement {
        let Some(open) = open.filter(|o| o.close >= due && o.close <= own_close) else {
            return Placement {
                due_at: own_close,
                since: due,
                slide_to: None,
            };
        };
        let slid = match (self.window_ms, self.max_delay_ms) {
            (Some(_), Some(max)) => own_close.min(open.since.saturating_add(max)),
            _ => open.close,
        };
        if slid > open.close {
            Placement {
                due_at: slid,
                since: open.since,
                slide_to: Some(slid),
            }
        } else {
            Placement {
                due_at: open.close,
                since: open.since,
                slide_to: None,
            }
        }
    }
}

/// The time zone a daily digest follows: the subscriber's, else UTC (also
/// for a name the bundled database does not know).
pub fn zone(name: Option<&str>) -> TimeZone {
    name.and_then(|n| TimeZoneDatabase::bundled().get(n).ok())
        .unwrap_or(TimeZone::UTC)
}

/// The zone of a stored directory profile (JSON), UTC when it names none or
/// cannot be read.
pub fn zone_of_profile(profile: Option<&str>) -> TimeZone {
    let name = profile
        .and_then(|p| serde_json::from_str::<crate::subscriber::Profile>(p).ok())
        .and_then(|p| p.timezone);
    zone(name.as_deref())
}

/// The first instant at or after `from_ms` whose local time in `tz` is `at`.
/// A local time skipped by a DST change resolves forward (02:30 on a
/// spring-forward night is 03:30), as quiet hours do.
fn next_local(from_ms: i64, at: Time, tz: &TimeZone) -> Option<i64> {
    let from = Timestamp::from_millisecond(from_ms).ok()?;
    let mut date = from.to_zoned(tz.clone()).date();
    // Today's, else tomorrow's (two tries cover any DST shift).
    for _ in 0..3 {
        let ms = date
            .to_datetime(at)
            .to_zoned(tz.clone())
            .ok()?
            .timestamp()
            .as_millisecond();
        if ms >= from_ms {
            return Some(ms);
        }
        date = date.tomorrow().ok()?;
    }
    None
}

fn parse_hhmm(s: &str) -> Result<Time, String> {
    crate::quiet::parse_hhmm(s).map_err(|e| format!("digest.at_local {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(s: &str) -> i64 {
        s.parse::<Timestamp>().map(|t| t.as_millisecond()).unwrap()
    }

    fn window(w: i64, max: Option<i64>) -> Digest {
        Digest {
            key: "k".into(),
            window_ms: Some(w),
            max_delay_ms: max,
            at_local: None,
            since: None,
        }
    }

    fn daily(at: &str) -> Digest {
        Digest {
            key: "k".into(),
            window_ms: None,
            max_delay_ms: None,
            at_local: Some(at.into()),
            since: None,
        }
    }

    #[test]
    fn refusals_name_the_field() {
        let cases = [
            (
                Digest {
                    key: String::new(),
                    ..window(1, None)
                },
                "digest.key",
            ),
            (
                Digest {
                    key: "x".repeat(129),
                    ..window(1, None)
                },
                "digest.key",
            ),
            (window(0, None), "digest.window_ms"),
            (window(MAX_WINDOW_MS + 1, None), "digest.window_ms"),
            (window(1000, Some(999)), "digest.max_delay_ms"),
            (
                Digest {
                    window_ms: None,
                    ..window(1, None)
                },
                "digest.window_ms",
            ),
            (
                Digest {
                    window_ms: Some(5),
                    ..daily("09:00")
                },
                "digest.at_local",
            ),
            (daily("9:00"), "digest.at_local"),
            (daily("24:00"), "digest.at_local"),
            (
                Digest {
                    max_delay_ms: Some(5),
                    ..daily("09:00")
                },
                "digest.max_delay_ms",
            ),
            (
                Digest {
                    since: Some(1),
                    ..window(1, None)
                },
                "digest.since",
            ),
        ];
        for (d, field) in cases {
            assert_eq!(d.validate().map_err(|e| e.field), Err(field), "{d:?}");
        }
        assert!(window(1000, Some(1000)).validate().is_ok());
        assert!(
            Digest {
                key: "é".repeat(128),
                ..window(MAX_WINDOW_MS, None)
            }
            .validate()
            .is_ok()
        );
        assert!(daily("23:59").validate().is_ok());
    }

    #[test]
    fn a_fixed_window_closes_once() {
        let d = window(1000, None);
        let first = d.place(0, 1000, None);
        assert_eq!((first.due_at, first.since, first.slide_to), (1000, 0, None));
        let open = Open {
            close: 1000,
            since: 0,
        };
        let joined = d.place(800, 1800, Some(open));
        assert_eq!(
            (joined.due_at, joined.since, joined.slide_to),
            (1000, 0, None)
        );
        // An open digest outside [due, own close] is not joined.
        assert_eq!(d.place(1001, 2001, Some(open)).due_at, 2001);
    }

    #[test]
    fn a_sliding_window_moves_up_to_max_delay() {
        let d = window(1000, Some(2000));
        let open = Open {
            close: 1000,
            since: 0,
        };
        let p = d.place(300, 1300, Some(open));
        assert_eq!((p.due_at, p.since, p.slide_to), (1300, 0, Some(1300)));
        let open = Open {
            close: 1900,
            since: 0,
        };
        let p = d.place(1500, 2500, Some(open));
        assert_eq!((p.due_at, p.slide_to), (2000, Some(2000)), "capped");
        let open = Open {
            close: 2000,
            since: 0,
        };
        let p = d.place(1800, 2800, Some(open));
        assert_eq!((p.due_at, p.slide_to), (2000, None), "held at the cap");
    }

    #[test]
    fn a_daily_digest_closes_at_the_next_local_time() {
        let d = daily("09:00");
        let utc = zone(None);
        assert_eq!(
            d.close_from(ms("2026-05-01T08:00:00Z"), &utc),
            Ok(ms("2026-05-01T09:00:00Z"))
        );
        assert_eq!(
            d.close_from(ms("2026-05-01T09:00:00Z"), &utc),
            Ok(ms("2026-05-01T09:00:00Z")),
            "at or after"
        );
        assert_eq!(
            d.close_from(ms("2026-05-01T09:00:00.001Z"), &utc),
            Ok(ms("2026-05-02T09:00:00Z"))
        );
        assert_eq!(zone(Some("Mars/Base")), TimeZone::UTC);
    }

    #[test]
    fn a_daily_digest_follows_spring_forward() {
        // New York: EST (UTC-5) until 2026-03-08 02:00, then EDT (UTC-4).
        let ny = zone(Some("America/New_York"));
        let d = daily("09:00");
        assert_eq!(
            d.close_from(ms("2026-03-07T15:00:00Z"), &ny),
            Ok(ms("2026-03-08T13:00:00Z")),
            "09:00 EDT, an hour earlier in UTC than the day before"
        );
        assert_eq!(
            d.close_from(ms("2026-03-06T15:00:00Z"), &ny),
            Ok(ms("2026-03-07T14:00:00Z"))
        );
        // Berlin: CET (UTC+1) until 2026-03-29 02:00, then CEST (UTC+2).
        let berlin = zone(Some("Europe/Berlin"));
        assert_eq!(
            d.close_from(ms("2026-03-28T09:00:00Z"), &berlin),
            Ok(ms("2026-03-29T07:00:00Z"))
        );
        assert_eq!(
            d.close_from(ms("2026-03-27T09:00:00Z"), &berlin),
            Ok(ms("2026-03-28T08:00:00Z"))
        );
        // A skipped local time resolves forward: 02:30 on the change is 03:30 EDT.
        assert_eq!(
            daily("02:30").close_from(ms("2026-03-08T05:00:00Z"), &ny),
            Ok(ms("2026-03-08T07:30:00Z"))
        );
    }

    #[test]
    fn the_spec_round_trips_as_json() {
        let d = Digest {
            since: Some(5),
            ..window(1000, Some(2000))
        };
        let text = serde_json::to_string(&d).unwrap();
        assert_eq!(
            text,
            r#"{"key":"k","window_ms":1000,"max_delay_ms":2000,"since":5}"#
        );
        assert_eq!(serde_json::from_str::<Digest>(&text).unwrap(), d);
        assert!(serde_json::from_str::<Digest>(r#"{"key":"k","nope":1}"#).is_err());
    }
}
