//! Wire format of instants: RFC 3339, UTC, millisecond precision.

use crate::clock::Millis;

/// Formats `ms` since the epoch as `2026-11-22T09:00:00.000Z`.
pub fn format_rfc3339_ms(ms: Millis) -> String {
    match jiff::Timestamp::from_millisecond(ms) {
        Ok(ts) => format!("{ts:.3}"),
        Err(_) => String::from("invalid-time"),
    }
}

/// Parses an RFC 3339 instant (any sub-second digits) into ms since the
/// epoch, truncating below the millisecond. The offset is RFC 3339's: `Z`,
/// or hours and minutes within a day (`+25:00`, which jiff would take, is
/// refused, as is an offset with seconds).
pub fn parse_rfc3339_ms(s: &str) -> Result<Millis, String> {
    let ts: jiff::Timestamp = s.parse().map_err(|e: jiff::Error| e.to_string())?;
    check_offset(s)?;
    Ok(ts.as_millisecond())
}

/// Longest offset RFC 3339 can write: `±23:59`.
const MAX_OFFSET_SECS: i32 = 23 * 3600 + 59 * 60;

/// `Ok` when the offset of `s` (which parsed as a timestamp) is one RFC
/// 3339 allows.
fn check_offset(s: &str) -> Result<(), String> {
    use jiff::fmt::temporal::{Pieces, PiecesOffset};
    let Some(PiecesOffset::Numeric(n)) = Pieces::parse(s).ok().and_then(|p| p.offset()) else {
        return Ok(());
    };
    let secs = n.offset().seconds();
    if secs.abs() > MAX_OFFSET_SECS {
        return Err(format!(
            "offset {} is out of range: RFC 3339 offsets are -23:59 to +23:59",
            n.offset()
        ));
    }
    if secs % 60 != 0 {
        return Err(format!(
            "offset {} has seconds: RFC 3339 offsets are hours and minutes",
            n.offset()
        ));
    }
    Ok(())
}

/// Milliseconds in a UTC day (no leap seconds in Unix time).
pub const DAY_MS: Millis = 86_400_000;

/// The UTC day `ms` falls in, as days since 1970-01-01: what stored reports
/// are counted by.
pub fn utc_day(ms: Millis) -> i64 {
    ms.div_euclid(DAY_MS)
}

/// Formats a [`utc_day`] as `2026-11-22`.
pub fn format_utc_day(day: i64) -> String {
    match jiff::Timestamp::from_millisecond(day.saturating_mul(DAY_MS)) {
        Ok(ts) => ts.to_zoned(jiff::tz::TimeZone::UTC).date().to_string(),
        Err(_) => String::from("invalid-day"),
    }
}

/// Parses a UTC day (`2026-11-22`) or an RFC 3339 instant, which names the
/// UTC day it falls in, into a [`utc_day`].
pub fn parse_utc_day(s: &str) -> Result<i64, String> {
    if let Ok(ms) = parse_rfc3339_ms(s) {
        return Ok(utc_day(ms));
    }
    let date: jiff::civil::Date = s.parse().map_err(|e: jiff::Error| {
        format!("neither a date (YYYY-MM-DD) nor an RFC 3339 time: {e}")
    })?;
    let ts = date
        .to_zoned(jiff::tz::TimeZone::UTC)
        .map_err(|e| e.to_string())?
        .timestamp();
    Ok(utc_day(ts.as_millisecond()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_are_utc_and_round_trip() {
        let ms = parse_rfc3339_ms("2026-11-22T23:59:59.999Z").unwrap();
        let day = utc_day(ms);
        assert_eq!(utc_day(ms + 1), day + 1, "midnight UTC starts the next day");
        assert_eq!(format_utc_day(day), "2026-11-22");
        assert_eq!(parse_utc_day("2026-11-22").unwrap(), day);
        // An instant names its UTC day, whatever its offset.
        assert_eq!(parse_utc_day("2026-11-23T01:00:00+08:00").unwrap(), day);
        assert_eq!(utc_day(-1), -1, "before 1970 rounds down");
        assert!(parse_utc_day("yesterday").is_err());
        assert!(parse_utc_day("2026-13-01").is_err());
    }

    #[test]
    fn round_trips_with_millis() {
        let ms = 1_795_000_000_123;
        let s = format_rfc3339_ms(ms);
        assert!(s.ends_with(".123Z"), "{s}");
        assert_eq!(parse_rfc3339_ms(&s).unwrap(), ms);
    }

    #[test]
    fn accepts_offsets_and_rejects_garbage() {
        assert_eq!(
            parse_rfc3339_ms("2026-12-01T09:00:00+08:00").unwrap(),
            parse_rfc3339_ms("2026-12-01T01:00:00Z").unwrap()
        );
        assert!(parse_rfc3339_ms("tomorrow").is_err());
        assert!(parse_rfc3339_ms("2026-12-01 09:00").is_err());
        // Offsets within a day, in hours and minutes.
        assert!(parse_rfc3339_ms("2026-12-01T09:00:00+23:59").is_ok());
        assert!(parse_rfc3339_ms("2026-12-01T09:00:00-23:59").is_ok());
        for bad in [
            "2026-12-01T09:00:00+25:00",
            "2026-12-01T09:00:00-24:00",
            "2026-12-01T09:00:00+08:00:30",
        ] {
            let e = parse_rfc3339_ms(bad).unwrap_err();
            assert!(e.contains("offset"), "{bad}: {e}");
        }
    }
}
