//! Date and time filters that read a timestamp in the reader's time zone, so
//! a Chinese template can say "10:00" rather than "2026-11-25T02:00:00Z".
//!
//! `{{ subject.start_at | time }}`, `| date`, `| datetime("%m月%d日 %H:%M")`:
//! the value is RFC 3339 text or Unix milliseconds; the zone is the filter's
//! second argument, else the render's `timezone` variable (the subscriber's,
//! or the subject's), else UTC. Formats are strftime's (jiff).

use jiff::Timestamp;
use jiff::tz::TimeZone;
use minijinja::value::Value;
use minijinja::{Error, ErrorKind, State};

fn bad(msg: String) -> Error {
    Error::new(ErrorKind::InvalidOperation, msg)
}

fn instant(v: &Value) -> Result<Timestamp, Error> {
    if let Some(ms) = v.as_i64() {
        return Timestamp::from_millisecond(ms)
            .map_err(|e| bad(format!("{ms} is not a time: {e}")));
    }
    match v.as_str() {
        Some(s) => s
            .parse::<Timestamp>()
            .map_err(|e| bad(format!("{s:?} is not an RFC 3339 time: {e}"))),
        None => Err(bad(format!(
            "a date filter takes RFC 3339 text or Unix ms, not {}",
            v.kind()
        ))),
    }
}

fn zone(state: &State, tz: Option<&str>) -> Result<TimeZone, Error> {
    let looked = state.lookup("timezone");
    let name = tz.or_else(|| looked.as_ref().and_then(Value::as_str));
    match name {
        None | Some("") => Ok(TimeZone::UTC),
        Some(n) => TimeZone::get(n).map_err(|e| bad(format!("time zone {n:?}: {e}"))),
    }
}

fn format(state: &State, v: &Value, fmt: &str, tz: Option<&str>) -> Result<String, Error> {
    let zoned = instant(v)?.to_zoned(zone(state, tz)?);
    jiff::fmt::strtime::format(fmt, &zoned).map_err(|e| bad(format!("format {fmt:?}: {e}")))
}

/// `datetime(fmt="%Y-%m-%d %H:%M", tz=None)`.
pub(super) fn datetime(
    state: &State,
    v: Value,
    fmt: Option<&str>,
    tz: Option<&str>,
) -> Result<String, Error> {
    format(state, &v, fmt.unwrap_or("%Y-%m-%d %H:%M"), tz)
}

/// `date(fmt="%Y-%m-%d", tz=None)`.
pub(super) fn date(
    state: &State,
    v: Value,
    fmt: Option<&str>,
    tz: Option<&str>,
) -> Result<String, Error> {
    format(state, &v, fmt.unwrap_or("%Y-%m-%d"), tz)
}

/// `time(fmt="%H:%M", tz=None)`.
pub(super) fn time(
    state: &State,
    v: Value,
    fmt: Option<&str>,
    tz: Option<&str>,
) -> Result<String, Error> {
    format(state, &v, fmt.unwrap_or("%H:%M"), tz)
}
