//! What a new or changed rule schedule must do besides compiling: fire at
//! all, and not more often than a floor. A stored schedule is not held to
//! it again (the planner runs what it has), so a floor raised later leaves
//! existing rules sending as they did.

use croner::Cron;
use jiff::civil::DateTime;

use super::{Kind, Schedule, ScheduleError};
use crate::clock::Millis;
use crate::time::format_rfc3339_ms;

/// How many consecutive occurrences [`Schedule::check_interval`] compares
/// at most. A pattern's shortest gap shows within its first matching minute
/// (several seconds) or its first pair of matching neighbours, well inside.
pub const INTERVAL_PROBE: usize = 1000;

/// How far ahead [`Schedule::check_interval`] looks at most: 28 years hold
/// every combination of date, weekday and leap year, so a rare pattern is
/// walked through all of them (at a few checks per occurrence).
const INTERVAL_SPAN_MS: Millis = 28 * 366 * 24 * 3600 * 1000;

/// The first year of the 28 that end croner's range (it searches up to
/// 5000). Without a skipped leap year among them, 28 years hold every
/// combination of month, day, weekday and leap year, so a pattern that
/// matches no date there matches none ever, and the search stops quickly.
const PROBE_YEAR: i16 = 4972;

/// Whether `cron` matches any wall clock time at all: `0 0 30 2 *` does not.
pub(super) fn matches_some_date(cron: &Cron) -> bool {
    match DateTime::new(PROBE_YEAR, 1, 1, 0, 0, 0, 0) {
        Ok(start) => cron.find_next_occurrence(&start, true).is_ok(),
        Err(_) => true,
    }
}

/// `ms` as people read a period: `1 s`, `90 s`, `5 min`, `2 h`.
fn period(ms: Millis) -> String {
    let s = ms / 1000;
    match s {
        _ if s >= 3600 && s % 3600 == 0 => format!("{} h", s / 3600),
        _ if s >= 60 && s % 60 == 0 => format!("{} min", s / 60),
        _ => format!("{s} s"),
    }
}

impl Schedule {
    /// `Ok` when the pattern matches some date (a cron's; other kinds
    /// always do). What [`Schedule::check_fires`] checks first, without
    /// regard to time.
    pub fn check_matches(&self) -> Result<(), ScheduleError> {
        match &self.kind {
            Kind::Cron(c) if !c.matches => Err(ScheduleError::new(
                "schedule.cron",
                "matches no date (like the 30th of February): a rule with it would never send",
            )),
            _ => Ok(()),
        }
    }

    /// `Ok` when a cron schedule has an occurrence after `now`; otherwise
    /// the field that rules every one out. An `immediate` schedule always
    /// fires, and an `at` is its caller's to compare with the clock.
    pub fn check_fires(&self, now: Millis) -> Result<(), ScheduleError> {
        self.check_matches()?;
        let Kind::Cron(c) = &self.kind else {
            return Ok(());
        };
        if c.next_after(now).is_some() {
            return Ok(());
        }
        let never = "a rule with it would never send";
        Err(match c.end_ms {
            Some(end) if end <= now => {
                ScheduleError::new("schedule.end_at", format!("is in the past: {never}"))
            }
            _ if !c.exclude.is_empty() => ScheduleError::new(
                "schedule.exclude_dates",
                format!("excludes every date the pattern matches: {never}"),
            ),
            Some(_) => ScheduleError::new(
                "schedule.end_at",
                format!("comes before the pattern's next match: {never}"),
            ),
            None => ScheduleError::new(
                "schedule.cron",
                format!("matches nothing within 5 years: {never}"),
            ),
        })
    }

    /// `Ok` when no two consecutive occurrences among the first
    /// [`INTERVAL_PROBE`] after `from`, and within 28 years of it, are less
    /// than `min_ms` apart (`0`: no floor). Only a cron repeats.
    pub fn check_interval(&self, from: Millis, min_ms: Millis) -> Result<(), ScheduleError> {
        let Kind::Cron(c) = &self.kind else {
            return Ok(());
        };
        if min_ms <= 0 {
            return Ok(());
        }
        let Some(mut prev) = c.next_after(from) else {
            return Ok(());
        };
        let until = from.saturating_add(INTERVAL_SPAN_MS);
        for _ in 1..INTERVAL_PROBE {
            let Some(next) = c.next_after(prev).filter(|n| *n <= until) else {
                break;
            };
            if next - prev < min_ms {
                return Err(ScheduleError::new(
                    "schedule.cron",
                    format!(
                        "fires {} apart (at {} and {}); a rule may fire at most every {}",
                        period(next - prev),
                        format_rfc3339_ms(prev),
                        format_rfc3339_ms(next),
                        period(min_ms),
                    ),
                ));
            }
            prev = next;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::ScheduleSpec;
    use super::*;

    fn cron(pattern: &str) -> Schedule {
        cron_with(pattern, vec![], None)
    }

    fn cron_with(pattern: &str, exclude: Vec<&str>, end_at: Option<&str>) -> Schedule {
        Schedule::compile(&ScheduleSpec::Cron {
            cron: pattern.into(),
            timezone: "Europe/Berlin".into(),
            exclude_dates: exclude.into_iter().map(String::from).collect(),
            start_at: None,
            end_at: end_at.map(String::from),
            calendar: None,
            days: None,
        })
        .unwrap()
    }

    fn ms(s: &str) -> Millis {
        crate::time::parse_rfc3339_ms(s).unwrap()
    }

    #[test]
    fn a_pattern_no_date_matches_never_fires() {
        let now = ms("2026-01-01T00:00:00Z");
        for never in ["0 0 30 2 *", "0 0 31 4,6,9,11 *", "0 0 0 31 2 *"] {
            let s = cron(never);
            assert_eq!(s.check_matches().unwrap_err().field, "schedule.cron");
            assert_eq!(s.check_fires(now).unwrap_err().field, "schedule.cron");
            assert_eq!(s.next_after(0, now), None);
        }
        // Rare is not never: leap days, the 31st or a Monday (day and
        // weekday combine with OR).
        for rare in ["0 0 29 2 *", "0 0 31 2 1"] {
            assert!(cron(rare).check_fires(now).is_ok(), "{rare}");
        }
        assert!(
            Schedule::compile(&ScheduleSpec::Immediate)
                .unwrap()
                .check_fires(now)
                .is_ok()
        );
    }

    #[test]
    fn an_end_or_exclusions_that_leave_nothing_are_named() {
        let now = ms("2026-06-01T00:00:00Z");
        let past = cron_with("0 9 * * *", vec![], Some("2026-05-01T00:00:00Z"));
        assert_eq!(past.check_fires(now).unwrap_err().field, "schedule.end_at");
        let all_excluded = cron_with(
            "0 9 24 12 *",
            vec![
                "2026-12-24",
                "2027-12-24",
                "2028-12-24",
                "2029-12-24",
                "2030-12-24",
            ],
            Some("2031-01-01T00:00:00Z"),
        );
        assert_eq!(
            all_excluded.check_fires(now).unwrap_err().field,
            "schedule.exclude_dates"
        );
        let too_soon = cron_with("0 9 24 12 *", vec![], Some("2026-07-01T00:00:00Z"));
        assert_eq!(
            too_soon.check_fires(now).unwrap_err().field,
            "schedule.end_at"
        );
    }

    #[test]
    fn intervals_below_the_floor_are_refused() {
        let now = ms("2026-01-01T00:00:00Z");
        let e = cron("* * * * * *").check_interval(now, 60_000).unwrap_err();
        assert_eq!(e.field, "schedule.cron");
        assert!(e.message.starts_with("fires 1 s apart"), "{}", e.message);
        assert!(e.message.ends_with("at most every 1 min"), "{}", e.message);
        // Two seconds of each minute: 59 s apart once a minute.
        assert!(cron("0,59 * * * * *").check_interval(now, 60_000).is_err());
        for ok in ["* * * * *", "0 * * * * *", "*/5 * * * *", "0 9 * * 1-5"] {
            assert!(cron(ok).check_interval(now, 60_000).is_ok(), "{ok}");
        }
        // A floor of an hour refuses a quarter-hourly rule, not an hourly one.
        assert!(cron("*/15 * * * *").check_interval(now, 3_600_000).is_err());
        assert!(cron("0 * * * *").check_interval(now, 3_600_000).is_ok());
        // No floor at all.
        assert!(cron("* * * * * *").check_interval(now, 0).is_ok());
        // The shortest gap may come late: the last minute of a year and the
        // first of the next.
        let e = cron("0 0,59 0,23 1,31 1,12 *")
            .check_interval(now, 120_000)
            .unwrap_err();
        assert!(e.message.starts_with("fires 1 min apart"), "{}", e.message);
    }
}
