//! Send-rule schedules: what the API accepts, how it is checked, and when it fires.
//!
//! A [`ScheduleSpec`] is the JSON object a rule carries; [`Schedule::compile`]
//! checks it once (so a bad rule is refused at the API, not at fire time) and
//! [`Schedule::next_after`] answers "when is the next send?" as a pure function of
//! the spec and two instants, so the engine can recompute it after any restart.
//!
//! # Cron semantics
//!
//! * Patterns are parsed by `croner`: 5 fields (`min hour dom month dow`) or 6 with
//!   a leading seconds field; a year field is refused. Day-of-month and
//!   day-of-week combine with OR when both are restricted, as in Vixie cron.
//! * Patterns match *wall clock* time in the rule's IANA zone. Zones come from the
//!   tz database bundled into jiff, not from the host, so every node computes the
//!   same instants whatever tzdata it has installed (or lacks).
//!
//! # Daylight saving time
//!
//! Each matching wall clock time fires at most once, at the instant jiff's
//! "compatible" disambiguation gives it:
//!
//! * a wall time that does not exist (spring-forward gap) fires once, shifted
//!   forward by the length of the gap: `30 2 * * *` in New York on 2026-03-08
//!   fires at 03:30 EDT. If that shifted instant is also a matching wall time
//!   (e.g. an hourly rule: 02:00 → 03:00), it fires once, not twice;
//! * a wall time that occurs twice (fall-back overlap) fires once, at the earlier
//!   instant: `30 1 * * *` in New York on 2026-11-01 fires at 01:30 EDT only.
//!   This applies to interval patterns too, so an hourly rule skips the repeated
//!   hour rather than sending twice with the same local timestamp.
//!
//! croner itself moves gap times to the first instant after the gap and runs
//! interval patterns in both halves of an overlap, so this module only uses it to
//! walk matching wall clock times (zone-free) and maps them to instants itself.

#[cfg(test)]
mod calendar_tests;
mod cron_fields;
mod on_calendar;
mod policy;
mod spec_json;

use std::collections::BTreeSet;

use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};
use jiff::civil::{Date, DateTime, Time};
use jiff::tz::{Offset, TimeZone, TimeZoneDatabase};
use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};

use crate::calendar::Calendar;
use crate::clock::Millis;

/// Most `exclude_dates` a rule may carry; keeps specs and lookups small.
pub const MAX_EXCLUDE_DATES: usize = 1000;

/// How far past the search start [`Schedule::next_after`] looks before deciding a
/// cron never fires (e.g. `0 0 30 2 *`, or every matching day excluded).
pub const SEARCH_HORIZON: SignedDuration = SignedDuration::from_hours(5 * 366 * 24);

/// The schedule object as the API receives and the store keeps it (JSON).
/// It is read through [`spec_json`], which takes an object only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    try_from = "spec_json::SpecObject"
)]
pub enum ScheduleSpec {
    /// Send once, when the rule version is created.
    Immediate,
    /// Send once at an RFC 3339 instant with offset, e.g. `2026-12-01T09:00:00+08:00`.
    At { at: String },
    /// Send at every wall clock time matching `cron` in `timezone`.
    Cron {
        /// 5 fields, or 6 with a leading seconds field.
        cron: String,
        /// IANA zone name, e.g. `Asia/Shanghai`.
        timezone: String,
        /// `YYYY-MM-DD` local dates (in `timezone`) on which nothing is sent.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        exclude_dates: Vec<String>,
        /// RFC 3339; no occurrence before it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        start_at: Option<String>,
        /// RFC 3339; no occurrence after it (inclusive bound).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        end_at: Option<String>,
        /// A working-day calendar's name (`cn`, or one the tenant stored):
        /// only occurrences on the `days` it names fire.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        calendar: Option<String>,
        /// Which days of `calendar` fire; `working` when a calendar is given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        days: Option<Days>,
    },
}

/// The days of a calendar a rule fires on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Days {
    Working,
    NonWorking,
}

impl ScheduleSpec {
    /// The calendar the schedule names, which [`Schedule::compile_with`] needs.
    pub fn calendar(&self) -> Option<&str> {
        match self {
            ScheduleSpec::Cron { calendar, .. } => calendar.as_deref(),
            _ => None,
        }
    }
}

/// A spec that does not compile; `field` is the JSON path the API reports.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct ScheduleError {
    pub field: String,
    pub message: String,
}

impl ScheduleError {
    fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// A checked schedule, ready to answer [`Schedule::next_after`].
#[derive(Debug, Clone)]
pub struct Schedule {
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    Immediate,
    At(Millis),
    Cron(Box<CronSchedule>),
}

#[derive(Debug, Clone)]
struct CronSchedule {
    cron: Cron,
    /// The calendar and the days of it that fire.
    calendar: Option<on_calendar::OnCalendar>,
    /// Whether the pattern matches any date at all (`0 0 30 2 *` does not):
    /// when it does not, there is no occurrence to search for.
    matches: bool,
    tz: TimeZone,
    exclude: BTreeSet<Date>,
    start_ms: Option<Millis>,
    end_ms: Option<Millis>,
}

impl Schedule {
    /// Checks `spec` and prepares it for evaluation; a calendar it names must
    /// be a built-in one ([`crate::calendar::builtin`]).
    pub fn compile(spec: &ScheduleSpec) -> Result<Schedule, ScheduleError> {
        let calendar = spec.calendar().and_then(crate::calendar::builtin);
        Schedule::compile_with(spec, calendar)
    }

    /// [`Schedule::compile`] with the calendar `spec` names, as the caller
    /// found it (a tenant's stored one, else the built-in); `None` when there
    /// is none by that name, which fails with `schedule.calendar`.
    pub fn compile_with(
        spec: &ScheduleSpec,
        calendar: Option<Calendar>,
    ) -> Result<Schedule, ScheduleError> {
        let kind = match spec {
            ScheduleSpec::Immediate => Kind::Immediate,
            ScheduleSpec::At { at } => Kind::At(parse_instant("schedule.at", at)?),
            ScheduleSpec::Cron {
                cron,
                timezone,
                exclude_dates,
                start_at,
                end_at,
                calendar: name,
                days,
            } => {
                let mut c = CronSchedule::compile(
                    cron,
                    timezone,
                    exclude_dates,
                    start_at.as_deref(),
                    end_at.as_deref(),
                )?;
                c.calendar = check_calendar(name.as_deref(), *days, calendar)?
                    .map(|(cal, name, days)| on_calendar::OnCalendar::new(cal, name, days, cron));
                Kind::Cron(Box::new(c))
            }
        };
        Ok(Schedule { kind })
    }

    /// First occurrence strictly after `after_ms` (unix ms). `created_at` is when
    /// the rule version was created (an `immediate` schedule's only occurrence).
    ///
    /// Chaining `next_after(c, previous)` enumerates every occurrence once, in
    /// order. `None` means there is none: a one-shot already passed, a cron past
    /// `end_at`, or a cron with no occurrence within [`SEARCH_HORIZON`].
    pub fn next_after(&self, created_at: Millis, after_ms: Millis) -> Option<Millis> {
        match &self.kind {
            Kind::Immediate => (created_at > after_ms).then_some(created_at),
            Kind::At(at) => (*at > after_ms).then_some(*at),
            Kind::Cron(c) => c.next_after(after_ms),
        }
    }

    /// The calendar a cron schedule follows, and the year of `at_ms` in its
    /// zone, when the calendar does not list that year: the occurrence then
    /// followed the calendar's regular working weekdays only.
    pub fn uncovered(&self, at_ms: Millis) -> Option<(&str, i16)> {
        let Kind::Cron(c) = &self.kind else {
            return None;
        };
        let on = c.calendar.as_ref()?;
        let at = Timestamp::from_millisecond(at_ms).ok()?;
        let year = on.calendar.time_zone().to_datetime(at).year();
        (!on.calendar.covers(year)).then_some((on.name.as_str(), year))
    }

    /// A cron schedule's zone, the one its wall clock times are in.
    pub fn zone(&self) -> Option<&TimeZone> {
        match &self.kind {
            Kind::Cron(c) => Some(&c.tz),
            _ => None,
        }
    }

    /// Whether the schedule can fire more than once (a cron).
    pub fn is_recurring(&self) -> bool {
        matches!(self.kind, Kind::Cron(_))
    }
}

/// The calendar part of a cron spec: `days` only with a `calendar`, and the
/// calendar found.
fn check_calendar(
    name: Option<&str>,
    days: Option<Days>,
    found: Option<Calendar>,
) -> Result<Option<(Box<Calendar>, String, Days)>, ScheduleError> {
    let Some(name) = name else {
        if days.is_some() {
            return Err(ScheduleError::new(
                "schedule.days",
                "needs schedule.calendar: the calendar whose days these are",
            ));
        }
        return Ok(None);
    };
    crate::calendar::check_name(name).map_err(|m| ScheduleError::new("schedule.calendar", m))?;
    let Some(cal) = found else {
        return Err(ScheduleError::new(
            "schedule.calendar",
            format!(
                "no calendar named {name:?}: PUT /v1/calendars/{name} first, or use a built-in one"
            ),
        ));
    };
    Ok(Some((
        Box::new(cal),
        name.to_string(),
        days.unwrap_or(Days::Working),
    )))
}

fn parse_instant(field: &str, s: &str) -> Result<Millis, ScheduleError> {
    crate::time::parse_rfc3339_ms(s)
        .map_err(|e| ScheduleError::new(field, format!("not an RFC 3339 instant with offset: {e}")))
}

/// `YYYY-MM-DD` exactly: jiff alone would also take extended years like `+002026-…`.
fn parse_date(s: &str) -> Result<Date, String> {
    crate::calendar::parse_date(s)
}

impl CronSchedule {
    fn compile(
        pattern: &str,
        timezone: &str,
        exclude_dates: &[String],
        start_at: Option<&str>,
        end_at: Option<&str>,
    ) -> Result<CronSchedule, ScheduleError> {
        let cron = CronParser::builder()
            .seconds(Seconds::Optional)
            .year(Year::Disallowed)
            .build()
            .parse(pattern)
            .map_err(|e| {
                let why = cron_fields::problem(pattern).unwrap_or_else(|| e.to_string());
                ScheduleError::new("schedule.cron", why)
            })?;
        // Bundled, not the host's tzdata: the same rule must give the same instants
        // on every node, and a minimal container may have no /usr/share/zoneinfo.
        let tz = TimeZoneDatabase::bundled().get(timezone).map_err(|e| {
            ScheduleError::new(
                "schedule.timezone",
                format!("unknown IANA time zone {timezone:?}: {e}"),
            )
        })?;
        if exclude_dates.len() > MAX_EXCLUDE_DATES {
            return Err(ScheduleError::new(
                "schedule.exclude_dates",
                format!(
                    "{} entries; at most {MAX_EXCLUDE_DATES} are allowed",
                    exclude_dates.len()
                ),
            ));
        }
        let mut exclude = BTreeSet::new();
        for (i, d) in exclude_dates.iter().enumerate() {
            let date = parse_date(d)
                .map_err(|m| ScheduleError::new(format!("schedule.exclude_dates[{i}]"), m))?;
            exclude.insert(date);
        }
        let start_ms = start_at
            .map(|s| parse_instant("schedule.start_at", s))
            .transpose()?;
        let end_ms = end_at
            .map(|s| parse_instant("schedule.end_at", s))
            .transpose()?;
        if let (Some(start), Some(end)) = (start_ms, end_ms)
            && end <= start
        {
            return Err(ScheduleError::new(
                "schedule.end_at",
                "must be later than schedule.start_at",
            ));
        }
        Ok(CronSchedule {
            matches: policy::matches_some_date(&cron),
            calendar: None,
            cron,
            tz,
            exclude,
            start_ms,
            end_ms,
        })
    }

    fn next_after(&self, after_ms: Millis) -> Option<Millis> {
        if !self.matches {
            return None;
        }
        // Occurrences are whole seconds, so work in seconds from here on.
        let mut lower_ms = after_ms.checked_add(1)?;
        if let Some(start) = self.start_ms {
            lower_ms = lower_ms.max(start);
        }
        let lower = Timestamp::from_second(ceil_div(lower_ms, 1000)).ok()?;
        let end = match self.end_ms {
            Some(end_ms) => Some(Timestamp::from_second(end_ms.div_euclid(1000)).ok()?),
            None => None,
        };
        if end.is_some_and(|end| end < lower) {
            return None;
        }
        // Stop the walk well past anything that could still be in range: the
        // slack covers wall clock times that a fold maps before their display.
        let mut limit = lower.saturating_add(SEARCH_HORIZON).ok()?;
        if let Some(end) = end {
            limit = limit.min(end.saturating_add(SignedDuration::from_hours(48)).ok()?);
        }
        let limit = self.tz.to_datetime(limit);

        let mut cursor = self.walk_start(lower);
        let mut best: Option<Timestamp> = None;
        // Walking wall times in order yields instants in order, except that a
        // skipped (gap) wall time maps forward past later wall times: 02:30 →
        // 03:30 comes before 03:10 in the walk. So after a candidate, keep walking
        // only up to the candidate's own displayed wall time; beyond it nothing
        // can map earlier.
        let mut horizon: Option<DateTime> = None;
        loop {
            let cron = self
                .calendar
                .as_ref()
                .and_then(|c| c.walk_cron())
                .unwrap_or(&self.cron);
            let wall = cron.find_next_occurrence(&cursor, true).ok()?;
            if wall > limit || horizon.is_some_and(|h| wall >= h) {
                break;
            }
            let next_cursor = wall.checked_add(SignedDuration::from_secs(1)).ok()?;
            let at = self.tz.to_ambiguous_timestamp(wall).compatible().ok()?;
            if at < lower {
                cursor = next_cursor;
                continue;
            }
            if let Some(skipped) = self.skipped_day(at, wall) {
                cursor = if best.is_none() {
                    // Skip the rest of the day in one step: a per-second pattern
                    // would otherwise walk 86 400 matches per skipped day. Every
                    // wall time skipped maps into the skipped day.
                    let first = start_of_next_day(skipped.0, skipped.1)?;
                    self.walk_start(first).max(next_cursor)
                } else {
                    next_cursor
                };
                continue;
            }
            if best.is_none_or(|b| at < b) {
                best = Some(at);
                horizon = Some(self.tz.to_datetime(at));
            }
            cursor = next_cursor;
        }
        let best = best?;
        if end.is_some_and(|end| best > end) {
            return None;
        }
        Some(best.as_millisecond())
    }

    /// When the occurrence at `at` does not fire because of its date: the
    /// zone and date of the day skipped (an excluded date in the rule's zone,
    /// or a day of the wrong kind in the calendar's).
    fn skipped_day(&self, at: Timestamp, wall: DateTime) -> Option<(&TimeZone, Date)> {
        let date = self.tz.to_datetime(at).date();
        if self.exclude.contains(&date) {
            return Some((&self.tz, date));
        }
        self.calendar.as_ref()?.skips(at, wall)
    }

    /// The earliest wall clock time whose compatible instant can be `>= from`.
    ///
    /// Usually that is `from`'s own wall time. But right after a spring-forward
    /// transition, instants in `[T, T + gap)` are also the images of skipped wall
    /// times *earlier* than their display (02:30 → 03:30), so the walk starts
    /// from `from` read with the pre-transition offset instead.
    fn walk_start(&self, from: Timestamp) -> DateTime {
        let mut offset = self.tz.to_offset(from);
        let just_after = from.saturating_add(SignedDuration::from_nanos(1)).ok();
        if let Some(t) = just_after.and_then(|ts| self.tz.preceding(ts).next()) {
            let at = t.timestamp();
            let before = at
                .saturating_sub(SignedDuration::from_nanos(1))
                .ok()
                .map(|ts| self.tz.to_offset(ts));
            if let Some(before) = before {
                let gap = offset_gap(before, t.offset());
                if gap > SignedDuration::ZERO && from.duration_since(at) < gap {
                    offset = before;
                }
            }
        }
        offset.to_datetime(from)
    }
}

/// The first instant of the day after `date` in `tz`.
fn start_of_next_day(tz: &TimeZone, date: Date) -> Option<Timestamp> {
    let next_day = date.tomorrow().ok()?.to_datetime(Time::midnight());
    tz.to_ambiguous_timestamp(next_day).compatible().ok()
}

fn offset_gap(before: Offset, after: Offset) -> SignedDuration {
    SignedDuration::from_secs(i64::from(after.seconds()) - i64::from(before.seconds()))
}

fn ceil_div(a: i64, b: i64) -> i64 {
    let q = a.div_euclid(b);
    if a.rem_euclid(b) == 0 { q } else { q + 1 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ms(s: &str) -> Millis {
        crate::time::parse_rfc3339_ms(s).unwrap()
    }

    fn cron_spec(pattern: &str, tz: &str) -> ScheduleSpec {
        ScheduleSpec::Cron {
            cron: pattern.into(),
            timezone: tz.into(),
            exclude_dates: vec![],
            start_at: None,
            end_at: None,
            calendar: None,
            days: None,
        }
    }

    fn compile(spec: ScheduleSpec) -> Schedule {
        Schedule::compile(&spec).unwrap()
    }

    /// The next `n` occurrences after `after`, as RFC 3339 UTC strings.
    fn chain(s: &Schedule, after: &str, n: usize) -> Vec<String> {
        let mut at = ms(after);
        let mut out = Vec::new();
        for _ in 0..n {
            match s.next_after(0, at) {
                Some(next) => {
                    assert!(next > at);
                    out.push(crate::time::format_rfc3339_ms(next));
                    at = next;
                }
                None => break,
            }
        }
        out
    }

    fn err_field(spec: ScheduleSpec) -> String {
        Schedule::compile(&spec).unwrap_err().field
    }

    #[test]
    fn daily_nine_in_shanghai() {
        let s = compile(cron_spec("0 9 * * *", "Asia/Shanghai"));
        assert!(s.is_recurring());
        assert_eq!(
            chain(&s, "2026-12-01T00:00:00Z", 3),
            [
                "2026-12-01T01:00:00.000Z",
                "2026-12-02T01:00:00.000Z",
                "2026-12-03T01:00:00.000Z"
            ]
        );
        // Strictly after: asking at the occurrence itself moves on a day.
        assert_eq!(
            s.next_after(0, ms("2026-12-01T01:00:00Z")),
            Some(ms("2026-12-02T01:00:00Z"))
        );
        assert_eq!(
            s.next_after(0, ms("2026-12-01T00:59:59.999Z")),
            Some(ms("2026-12-01T01:00:00Z"))
        );
    }

    #[test]
    fn weekdays_skip_excluded_holiday() {
        let s = compile(ScheduleSpec::Cron {
            cron: "0 9 * * 1-5".into(),
            timezone: "Asia/Shanghai".into(),
            // Thursday and Friday; the weekend is skipped by the pattern.
            exclude_dates: vec!["2026-10-01".into(), "2026-10-02".into()],
            start_at: None,
            end_at: None,
            calendar: None,
            days: None,
        });
        assert_eq!(
            chain(&s, "2026-09-30T00:00:00Z", 3),
            [
                "2026-09-30T01:00:00.000Z",
                "2026-10-05T01:00:00.000Z",
                "2026-10-06T01:00:00.000Z"
            ]
        );
    }

    #[test]
    fn new_york_spring_forward_gap_fires_once_shifted() {
        // 2026-03-08 02:00 EST jumps to 03:00 EDT: 02:30 does not exist and
        // fires at 03:30 EDT, which is 07:30Z like the day before.
        let s = compile(cron_spec("30 2 * * *", "America/New_York"));
        assert_eq!(
            chain(&s, "2026-03-06T12:00:00Z", 4),
            [
                "2026-03-07T07:30:00.000Z",
                "2026-03-08T07:30:00.000Z",
                "2026-03-09T06:30:00.000Z",
                "2026-03-10T06:30:00.000Z"
            ]
        );
        // Asked from inside the gap's image, the shifted occurrence is still found.
        assert_eq!(
            s.next_after(0, ms("2026-03-08T07:10:00Z")),
            Some(ms("2026-03-08T07:30:00Z"))
        );
    }

    #[test]
    fn new_york_fall_back_overlap_fires_once_earlier() {
        // 2026-11-01 02:00 EDT falls back to 01:00 EST: 01:30 happens twice and
        // fires only at the first (EDT, 05:30Z), never at 06:30Z that day.
        let s = compile(cron_spec("30 1 * * *", "America/New_York"));
        assert_eq!(
            chain(&s, "2026-10-30T12:00:00Z", 4),
            [
                "2026-10-31T05:30:00.000Z",
                "2026-11-01T05:30:00.000Z",
                "2026-11-02T06:30:00.000Z",
                "2026-11-03T06:30:00.000Z"
            ]
        );
        // Even when asked between the two 01:30s.
        assert_eq!(
            s.next_after(0, ms("2026-11-01T06:00:00Z")),
            Some(ms("2026-11-02T06:30:00Z"))
        );
    }

    #[test]
    fn berlin_hourly_across_both_transitions() {
        let s = compile(cron_spec("0 * * * *", "Europe/Berlin"));
        // Spring 2026-03-29 at 01:00Z: 02:00 CET does not exist and maps to
        // 03:00 CEST, the same instant as 03:00 itself, so it fires once.
        let spring = chain(&s, "2026-03-28T22:30:00Z", 5);
        assert_eq!(
            spring,
            [
                "2026-03-28T23:00:00.000Z",
                "2026-03-29T00:00:00.000Z",
                "2026-03-29T01:00:00.000Z",
                "2026-03-29T02:00:00.000Z",
                "2026-03-29T03:00:00.000Z"
            ]
        );
        // Autumn 2026-10-25 at 01:00Z: 02:00 repeats; only the CEST one fires.
        let autumn = chain(&s, "2026-10-24T22:30:00Z", 4);
        assert_eq!(
            autumn,
            [
                "2026-10-24T23:00:00.000Z",
                "2026-10-25T00:00:00.000Z",
                "2026-10-25T02:00:00.000Z",
                "2026-10-25T03:00:00.000Z"
            ]
        );
        // A month-long run over each transition: strictly increasing, no repeats.
        for start in ["2026-03-15T00:00:00Z", "2026-10-10T00:00:00Z"] {
            let mut prev = ms(start);
            for _ in 0..24 * 30 {
                let next = s.next_after(0, prev).unwrap();
                assert!(next > prev);
                prev = next;
            }
        }
    }

    #[test]
    fn end_at_finishes_and_start_at_is_respected() {
        let s = compile(ScheduleSpec::Cron {
            cron: "0 9 * * *".into(),
            timezone: "Asia/Shanghai".into(),
            exclude_dates: vec![],
            start_at: Some("2026-12-02T09:00:00+08:00".into()),
            end_at: Some("2026-12-04T09:00:00+08:00".into()),
            calendar: None,
            days: None,
        });
        // start_at is inclusive, end_at too.
        assert_eq!(
            chain(&s, "2026-11-01T00:00:00Z", 10),
            [
                "2026-12-02T01:00:00.000Z",
                "2026-12-03T01:00:00.000Z",
                "2026-12-04T01:00:00.000Z"
            ]
        );
        assert_eq!(s.next_after(0, ms("2026-12-04T01:00:00Z")), None);
        assert_eq!(s.next_after(0, ms("2030-01-01T00:00:00Z")), None);
    }

    #[test]
    fn seconds_field() {
        let s = compile(cron_spec("*/15 * * * * *", "UTC"));
        assert_eq!(
            chain(&s, "2026-01-01T00:00:00Z", 5),
            [
                "2026-01-01T00:00:15.000Z",
                "2026-01-01T00:00:30.000Z",
                "2026-01-01T00:00:45.000Z",
                "2026-01-01T00:01:00.000Z",
                "2026-01-01T00:01:15.000Z"
            ]
        );
        // Five fields means second 0.
        let s = compile(cron_spec("* * * * *", "UTC"));
        assert_eq!(
            s.next_after(0, ms("2026-01-01T00:00:00.500Z")),
            Some(ms("2026-01-01T00:01:00Z"))
        );
    }

    #[test]
    fn excluded_days_are_skipped_cheaply() {
        // Every second of ten whole days excluded: found without walking them.
        let exclude_dates = (1..=10).map(|d| format!("2026-01-{d:02}")).collect();
        let s = compile(ScheduleSpec::Cron {
            cron: "* * * * * *".into(),
            timezone: "Europe/Berlin".into(),
            exclude_dates,
            start_at: None,
            end_at: None,
            calendar: None,
            days: None,
        });
        assert_eq!(
            s.next_after(0, ms("2025-12-31T23:30:00Z")),
            Some(ms("2026-01-10T23:00:00Z"))
        );
    }

    #[test]
    fn never_firing_pattern_gives_none() {
        let s = compile(cron_spec("0 0 30 2 *", "UTC"));
        assert_eq!(s.next_after(0, ms("2026-01-01T00:00:00Z")), None);
        // Rare but real: the next leap day.
        let s = compile(cron_spec("0 0 29 2 *", "UTC"));
        assert_eq!(
            s.next_after(0, ms("2026-01-01T00:00:00Z")),
            Some(ms("2028-02-29T00:00:00Z"))
        );
    }

    #[test]
    fn immediate_and_at() {
        let s = compile(ScheduleSpec::Immediate);
        assert!(!s.is_recurring());
        assert_eq!(s.next_after(1_000, 999), Some(1_000));
        assert_eq!(s.next_after(1_000, 1_000), None);

        let s = compile(ScheduleSpec::At {
            at: "2026-12-01T09:00:00+08:00".into(),
        });
        assert!(!s.is_recurring());
        let at = ms("2026-12-01T01:00:00Z");
        assert_eq!(s.next_after(0, at - 1), Some(at));
        assert_eq!(s.next_after(0, at), None);
    }

    #[test]
    fn validation_names_the_field() {
        assert_eq!(err_field(cron_spec("61 * * * *", "UTC")), "schedule.cron");
        assert_eq!(err_field(cron_spec("* * *", "UTC")), "schedule.cron");
        // Five or six fields; no year field.
        assert_eq!(
            err_field(cron_spec("0 0 0 1 1 * 2030", "UTC")),
            "schedule.cron"
        );
        assert_eq!(
            err_field(cron_spec("0 9 * * *", "Mars/Olympus_Mons")),
            "schedule.timezone"
        );
        assert_eq!(
            err_field(ScheduleSpec::At {
                at: "tomorrow".into()
            }),
            "schedule.at"
        );
        let with =
            |exclude: Vec<&str>, start: Option<&str>, end: Option<&str>| ScheduleSpec::Cron {
                cron: "0 9 * * *".into(),
                timezone: "UTC".into(),
                exclude_dates: exclude.into_iter().map(String::from).collect(),
                start_at: start.map(String::from),
                end_at: end.map(String::from),
                calendar: None,
                days: None,
            };
        assert_eq!(
            err_field(with(
                vec!["2026-01-01", "2026-01-02", "2026-02-30"],
                None,
                None
            )),
            "schedule.exclude_dates[2]"
        );
        assert_eq!(
            err_field(with(vec!["2026-1-1"], None, None)),
            "schedule.exclude_dates[0]"
        );
        assert_eq!(
            err_field(with(vec!["2026-01-01"; MAX_EXCLUDE_DATES + 1], None, None)),
            "schedule.exclude_dates"
        );
        assert!(
            Schedule::compile(&with(vec!["2026-01-01"; MAX_EXCLUDE_DATES], None, None)).is_ok()
        );
        assert_eq!(
            err_field(with(vec![], Some("2026-13-01T00:00:00Z"), None)),
            "schedule.start_at"
        );
        assert_eq!(
            err_field(with(vec![], None, Some("2026-01-01T00:00:00"))),
            "schedule.end_at"
        );
        assert_eq!(
            err_field(with(
                vec![],
                Some("2026-01-02T00:00:00Z"),
                Some("2026-01-02T08:00:00+08:00")
            )),
            "schedule.end_at"
        );
        let e = Schedule::compile(&cron_spec("61 * * * *", "UTC")).unwrap_err();
        assert!(e.to_string().starts_with("schedule.cron: "), "{e}");
    }

    #[test]
    fn json_shape() {
        let spec: ScheduleSpec = serde_json::from_str(
            r#"{"type":"cron","cron":"0 9 * * *","timezone":"Asia/Shanghai","exclude_dates":["2026-10-01"]}"#,
        )
        .unwrap();
        assert_eq!(
            serde_json::to_string(&spec).unwrap(),
            r#"{"type":"cron","cron":"0 9 * * *","timezone":"Asia/Shanghai","exclude_dates":["2026-10-01"]}"#
        );
        let spec: ScheduleSpec = serde_json::from_str(r#"{"type":"immediate"}"#).unwrap();
        assert_eq!(spec, ScheduleSpec::Immediate);
        let spec: ScheduleSpec =
            serde_json::from_str(r#"{"type":"at","at":"2026-12-01T09:00:00+08:00"}"#).unwrap();
        assert_eq!(
            serde_json::to_string(&spec).unwrap(),
            r#"{"type":"at","at":"2026-12-01T09:00:00+08:00"}"#
        );
        assert!(
            serde_json::from_str::<ScheduleSpec>(r#"{"type":"at","at":"x","when":1}"#).is_err()
        );
        assert!(serde_json::from_str::<ScheduleSpec>(r#"{"type":"weekly"}"#).is_err());
    }

    /// Reference answer by brute force: every matching wall clock minute in the
    /// window, mapped with compatible disambiguation, deduplicated, filtered.
    fn oracle(
        pattern: &str,
        tz: &TimeZone,
        exclude: &BTreeSet<Date>,
        from: Timestamp,
        to: Timestamp,
    ) -> Vec<Millis> {
        let cron = CronParser::builder()
            .seconds(Seconds::Optional)
            .build()
            .parse(pattern)
            .unwrap();
        let mut wall = tz.to_datetime(from - SignedDuration::from_hours(26));
        wall = wall.with().second(0).subsec_nanosecond(0).build().unwrap();
        let wall_end = tz.to_datetime(to + SignedDuration::from_hours(26));
        let mut out = BTreeSet::new();
        while wall <= wall_end {
            if cron.is_time_matching(&wall).unwrap() {
                let at = tz.to_ambiguous_timestamp(wall).compatible().unwrap();
                if at > from && at <= to && !exclude.contains(&tz.to_datetime(at).date()) {
                    out.insert(at.as_millisecond());
                }
            }
            wall += SignedDuration::from_mins(1);
        }
        out.into_iter().collect()
    }

    const PATTERNS: &[&str] = &[
        "0 * * * *",
        "*/20 * * * *",
        "30 2 * * *",
        "30 1 * * *",
        "15,45 0-3 * * *",
        "0 9 * * 1-5",
        "0,30 2 * * *",
        "59 23 * * *",
        "0 0 * * *",
    ];
    const ZONES: &[&str] = &[
        "America/New_York",
        "Europe/Berlin",
        "Asia/Shanghai",
        // 30-minute DST shift.
        "Australia/Lord_Howe",
        // Transitions at midnight.
        "America/Havana",
        "UTC",
    ];
    /// Instants close to 2026 DST transitions of the zones above.
    const ANCHORS: &[&str] = &[
        "2026-03-08T07:00:00Z",
        "2026-11-01T06:00:00Z",
        "2026-03-29T01:00:00Z",
        "2026-10-25T01:00:00Z",
        "2026-04-04T15:00:00Z",
        "2026-10-03T15:30:00Z",
        "2026-03-08T05:00:00Z",
        "2026-11-01T05:00:00Z",
        "2026-06-15T00:00:00Z",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        /// Chained next_after is strictly increasing, never lands on an excluded
        /// local date, and enumerates exactly the brute-force occurrence set.
        #[test]
        fn chained_matches_brute_force(
            p in 0..PATTERNS.len(),
            z in 0..ZONES.len(),
            a in 0..ANCHORS.len(),
            shift_min in -2000i64..2000,
            excluded_days in proptest::collection::vec(-3i64..4, 0..3),
        ) {
            let tz = TimeZoneDatabase::bundled().get(ZONES[z]).unwrap();
            let from = ANCHORS[a].parse::<Timestamp>().unwrap()
                + SignedDuration::from_mins(shift_min);
            let from_date = tz.to_datetime(from).date();
            let exclude: BTreeSet<Date> = excluded_days
                .iter()
                .map(|d| from_date.checked_add(jiff::Span::new().days(*d)).unwrap())
                .collect();
            let s = compile(ScheduleSpec::Cron {
                cron: PATTERNS[p].into(),
                timezone: ZONES[z].into(),
                exclude_dates: exclude.iter().map(|d| d.to_string()).collect(),
                start_at: None,
                end_at: None,
                calendar: None,
                days: None,
            });
            let to = from + SignedDuration::from_hours(72);
            let mut got = Vec::new();
            let mut prev = from.as_millisecond();
            while let Some(next) = s.next_after(0, prev) {
                prop_assert!(next > prev);
                let date = tz.to_datetime(Timestamp::from_millisecond(next).unwrap()).date();
                prop_assert!(!exclude.contains(&date), "excluded date {date}");
                if next > to.as_millisecond() {
                    break;
                }
                got.push(next);
                prev = next;
            }
            prop_assert_eq!(got, oracle(PATTERNS[p], &tz, &exclude, from, to));
        }
    }
}
