//! Quiet hours: a daily do-not-disturb window in a time zone.
//!
//! Providers and people alike dislike a push at 3 a.m. A channel may declare a
//! window such as 22:00-08:00 Asia/Shanghai; a delivery due inside it is either
//! deferred to the window's end or dropped. The window is in local wall-clock
//! time, so it follows DST: the end instant is found by resolving the local end
//! time on the right date (a skipped local time resolves forward).

use jiff::civil::{Date, Time};
use jiff::tz::{TimeZone, TimeZoneDatabase};
use jiff::{Timestamp, ToSpan};

/// A parsed window. `start == end` is rejected: it would mean "always" or
/// "never", and neither is what anyone configures on purpose.
#[derive(Debug, Clone, PartialEq)]
pub struct QuietWindow {
    start: Time,
    end: Time,
    tz: TimeZone,
}

impl QuietWindow {
    /// `start` and `end` are `HH:MM` local times; `timezone` an IANA name.
    pub fn parse(start: &str, end: &str, timezone: &str) -> Result<Self, String> {
        let start = parse_hhmm(start).map_err(|e| format!("start: {e}"))?;
        let end = parse_hhmm(end).map_err(|e| format!("end: {e}"))?;
        if start == end {
            return Err("start and end must differ".into());
        }
        let tz = TimeZoneDatabase::bundled()
            .get(timezone)
            .map_err(|_| format!("timezone: {timezone:?} is not a known IANA time zone"))?;
        Ok(Self { start, end, tz })
    }

    /// When the window that `now_ms` falls in ends (unix ms), or `None` when
    /// `now_ms` is outside every window.
    pub fn ends_after(&self, now_ms: i64) -> Option<i64> {
        let now = Timestamp::from_millisecond(now_ms).ok()?;
        let local = now.to_zoned(self.tz.clone()).datetime();
        let t = local.time();
        let today = local.date();
        let end_date: Date = if self.start < self.end {
            // Same-day window, e.g. 12:00-14:00.
            if t < self.start || t >= self.end {
                return None;
            }
            today
        } else if t >= self.start {
            // Wrapping window, evening part: ends tomorrow morning.
            today.checked_add(1.day()).ok()?
        } else if t < self.end {
            // Wrapping window, morning part: ends today.
            today
        } else {
            return None;
        };
        let end = end_date
            .to_datetime(self.end)
            .to_zoned(self.tz.clone())
            .ok()?;
        let end_ms = end.timestamp().as_millisecond();
        // A DST jump can put the resolved end at or before now; never defer backwards.
        (end_ms > now_ms).then_some(end_ms)
    }
}

pub(crate) fn parse_hhmm(s: &str) -> Result<Time, String> {
    let (h, m) = s
        .split_once(':')
        .ok_or_else(|| format!("{s:?} is not HH:MM"))?;
    let ok = h.len() == 2 && m.len() == 2;
    let h: i8 = h.parse().map_err(|_| format!("{s:?} is not HH:MM"))?;
    let m: i8 = m.parse().map_err(|_| format!("{s:?} is not HH:MM"))?;
    if !ok || !(0..24).contains(&h) || !(0..60).contains(&m) {
        return Err(format!("{s:?} is not HH:MM between 00:00 and 23:59"));
    }
    Time::new(h, m, 0, 0).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(s: &str) -> i64 {
        s.parse::<Timestamp>().unwrap().as_millisecond()
    }

    #[test]
    fn wrapping_window_in_shanghai() {
        let w = QuietWindow::parse("22:00", "08:00", "Asia/Shanghai").unwrap();
        // 23:30 local (15:30Z) -> ends 08:00 local next day (00:00Z).
        assert_eq!(
            w.ends_after(ms("2026-12-01T15:30:00Z")),
            Some(ms("2026-12-02T00:00:00Z"))
        );
        // 07:59 local -> ends at 08:00 the same day.
        assert_eq!(
            w.ends_after(ms("2026-12-01T23:59:00Z")),
            Some(ms("2026-12-02T00:00:00Z"))
        );
        // 08:00 and 21:59 local are outside.
        assert_eq!(w.ends_after(ms("2026-12-02T00:00:00Z")), None);
        assert_eq!(w.ends_after(ms("2026-12-02T13:59:00Z")), None);
        // 22:00 local is inside.
        assert!(w.ends_after(ms("2026-12-02T14:00:00Z")).is_some());
    }

    #[test]
    fn same_day_window() {
        let w = QuietWindow::parse("12:00", "14:00", "UTC").unwrap();
        assert_eq!(
            w.ends_after(ms("2026-12-01T13:00:00Z")),
            Some(ms("2026-12-01T14:00:00Z"))
        );
        assert_eq!(w.ends_after(ms("2026-12-01T14:00:00Z")), None);
        assert_eq!(w.ends_after(ms("2026-12-01T11:59:59Z")), None);
    }

    #[test]
    fn end_follows_dst() {
        // New York springs forward on 2026-03-08: 22:00-08:00 ends at 08:00 EDT (12:00Z),
        // where the night before it ended at 08:00 EST (13:00Z).
        let w = QuietWindow::parse("22:00", "08:00", "America/New_York").unwrap();
        assert_eq!(
            w.ends_after(ms("2026-03-08T04:00:00Z")),
            Some(ms("2026-03-08T12:00:00Z"))
        );
        assert_eq!(
            w.ends_after(ms("2026-03-07T04:00:00Z")),
            Some(ms("2026-03-07T13:00:00Z"))
        );
    }

    #[test]
    fn rejects_bad_input() {
        assert!(QuietWindow::parse("22:00", "22:00", "UTC").is_err());
        assert!(QuietWindow::parse("24:00", "08:00", "UTC").is_err());
        assert!(QuietWindow::parse("7:00", "08:00", "UTC").is_err());
        assert!(QuietWindow::parse("22:00", "08:00", "Mars/Base").is_err());
    }
}
