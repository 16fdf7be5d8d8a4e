//! A cron schedule on a working-day calendar: which days of it fire.
//!
//! `days: "non_working"` keeps the occurrences the pattern gives on days the
//! calendar has off. `days: "working"` keeps those on working days, and adds
//! make-up working days (a Saturday worked in place of a holiday) for a
//! pattern that fires on every regular working weekday: its day-of-month is
//! `*` and its day-of-week names every one of the calendar's working weekdays
//! (`1-5` or `*` on a Monday-to-Friday calendar). A make-up day has no
//! weekday of its own, so a pattern that picks some weekdays (`1`, Mondays)
//! fires on those when they are working days, and not on make-up days.

use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};
use jiff::civil::{Date, DateTime};
use jiff::tz::TimeZone;

use super::Days;
use crate::calendar::Calendar;

/// The calendar part of a compiled cron schedule.
#[derive(Debug, Clone)]
pub(super) struct OnCalendar {
    pub(super) calendar: Box<Calendar>,
    pub(super) name: String,
    pub(super) days: Days,
    /// For a pattern that fires on every working weekday (see the module
    /// doc): the pattern with its day-of-week made `*`, walked instead of
    /// it so make-up days come up, and the weekdays the original names
    /// (Monday first).
    any_day: Option<(Cron, [bool; 7])>,
}

fn parse(pattern: &str) -> Option<Cron> {
    CronParser::builder()
        .seconds(Seconds::Optional)
        .year(Year::Disallowed)
        .build()
        .parse(pattern)
        .ok()
}

/// The weekdays a day-of-week field names, Monday first: matched at the
/// midnights of a week starting on a Monday.
fn weekdays_of(dow: &str) -> Option<[bool; 7]> {
    let cron = parse(&format!("0 0 * * {dow}"))?;
    let monday = jiff::civil::date(2024, 1, 1);
    let mut out = [false; 7];
    for (i, slot) in out.iter_mut().enumerate() {
        let day = monday.checked_add(jiff::Span::new().days(i as i64)).ok()?;
        *slot = cron
            .is_time_matching(&day.to_datetime(jiff::civil::Time::midnight()))
            .ok()?;
    }
    Some(out)
}

impl OnCalendar {
    pub(super) fn new(calendar: Box<Calendar>, name: String, days: Days, pattern: &str) -> Self {
        let any_day = (days == Days::Working)
            .then(|| {
                let fields: Vec<&str> = pattern.split_whitespace().collect();
                if fields.len() < 5 {
                    return None;
                }
                let (dom, dow) = (fields[fields.len() - 3], fields[fields.len() - 1]);
                if dom != "*" && dom != "?" {
                    return None;
                }
                let named = weekdays_of(dow)?;
                let every_working_weekday = (0..7)
                    .map(|i| jiff::civil::date(2024, 1, 1 + i))
                    .filter(|d| calendar.regular(*d))
                    .all(|d| named[d.weekday().to_monday_zero_offset() as usize]);
                if !every_working_weekday {
                    return None;
                }
                let mut any = fields.clone();
                let last = any.len() - 1;
                any[last] = "*";
                Some((parse(&any.join(" "))?, named))
            })
            .flatten();
        OnCalendar {
            calendar,
            name,
            days,
            any_day,
        }
    }

    /// The pattern to walk instead of the rule's own, if any.
    pub(super) fn walk_cron(&self) -> Option<&Cron> {
        self.any_day.as_ref().map(|(c, _)| c)
    }

    /// Whether an occurrence at `at`, on `wall` in the rule's zone, fires by
    /// the calendar; else the zone and date of the day it skips.
    pub(super) fn skips(&self, at: jiff::Timestamp, wall: DateTime) -> Option<(&TimeZone, Date)> {
        let tz = self.calendar.time_zone();
        let date = tz.to_datetime(at).date();
        let working = self.calendar.working_or_regular(date);
        let fires = match (self.days, &self.any_day) {
            (Days::NonWorking, _) => !working,
            (Days::Working, None) => working,
            // Walking every day: a working day fires if the pattern names
            // its weekday, or if it is worked in place of a day off.
            (Days::Working, Some((_, named))) => {
                working
                    && (named[wall.date().weekday().to_monday_zero_offset() as usize]
                        || !self.calendar.regular(date))
            }
        };
        (!fires).then_some((tz, date))
    }
}
