//! Wire format of instants: RFC 3339, UTC, millisecond precision.

use crate::clock::Millis;

/// Formats `ms` since the epoch as `2026-11-22T09:00:00.000Z`.
pub fn format_rfc3339_ms(ms: Millis) -> String {
    match jiff::Timestamp::from_millisecond(ms) {
        Ok(ts) => format!("{ts:.3}"),
        Err(_) => String::from("invalid-time"),
    }
}

/// Parses an RFC 3339 instant (any offset, any sub-second digits) into ms since the
/// epoch, truncating below the millisecond.
pub fn parse_rfc3339_ms(s: &str) -> Result<Millis, String> {
    let ts: jiff::Timestamp = s.parse().map_err(|e: jiff::Error| e.to_string())?;
    Ok(ts.as_millisecond())
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}
