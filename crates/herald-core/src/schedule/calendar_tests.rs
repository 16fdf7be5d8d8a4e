//! Rules on working-day calendars, across the 2026 Spring Festival and
//! National Day holidays of the built-in `cn` calendar.

use super::*;
use crate::time::{format_rfc3339_ms, parse_rfc3339_ms};

fn spec(days: Option<Days>, exclude: &[&str]) -> ScheduleSpec {
    ScheduleSpec::Cron {
        cron: "0 9 * * 1-5".into(),
        timezone: "Asia/Shanghai".into(),
        exclude_dates: exclude.iter().map(|d| d.to_string()).collect(),
        start_at: None,
        end_at: None,
        calendar: Some("cn".into()),
        days,
    }
}

/// The local dates (Asia/Shanghai) of the occurrences after `after`, up to
/// and including `until`.
fn dates(s: &Schedule, after: &str, until: &str) -> Vec<String> {
    let tz = TimeZone::get("Asia/Shanghai").unwrap();
    let until = parse_rfc3339_ms(until).unwrap();
    let mut at = parse_rfc3339_ms(after).unwrap();
    let mut out = Vec::new();
    while let Some(next) = s.next_after(0, at).filter(|n| *n <= until) {
        let local = tz.to_datetime(Timestamp::from_millisecond(next).unwrap());
        assert_eq!(
            local.time(),
            Time::constant(9, 0, 0, 0),
            "{}",
            format_rfc3339_ms(next)
        );
        out.push(local.date().to_string());
        at = next;
    }
    out
}

fn working() -> Schedule {
    Schedule::compile(&spec(Some(Days::Working), &[])).unwrap()
}

#[test]
fn spring_festival_2026_fires_on_make_up_saturdays_and_not_on_holidays() {
    let got = dates(
        &working(),
        "2026-02-09T00:00:00+08:00",
        "2026-03-03T23:00:00+08:00",
    );
    assert_eq!(
        got,
        [
            "2026-02-09",
            "2026-02-10",
            "2026-02-11",
            "2026-02-12",
            "2026-02-13",
            "2026-02-14", // Saturday, make-up day
            // 15th..23rd off
            "2026-02-24",
            "2026-02-25",
            "2026-02-26",
            "2026-02-27",
            "2026-02-28", // Saturday, make-up day
            "2026-03-02",
            "2026-03-03",
        ]
    );
}

#[test]
fn national_day_2026_fires_on_the_make_up_sunday_and_saturday() {
    let got = dates(
        &working(),
        "2026-09-17T12:00:00+08:00",
        "2026-10-13T23:00:00+08:00",
    );
    assert_eq!(
        got,
        [
            "2026-09-18",
            "2026-09-20", // Sunday, make-up day
            "2026-09-21",
            "2026-09-22",
            "2026-09-23",
            "2026-09-24",
            // 25th..27th Mid-Autumn, 28th..30th ordinary
            "2026-09-28",
            "2026-09-29",
            "2026-09-30",
            // 1st..7th off
            "2026-10-08",
            "2026-10-09",
            "2026-10-10", // Saturday, make-up day
            "2026-10-12",
            "2026-10-13",
        ]
    );
}

#[test]
fn days_defaults_to_working() {
    let a = dates(
        &working(),
        "2026-02-09T00:00:00+08:00",
        "2026-03-03T00:00:00+08:00",
    );
    let s = Schedule::compile(&spec(None, &[])).unwrap();
    let b = dates(&s, "2026-02-09T00:00:00+08:00", "2026-03-03T00:00:00+08:00");
    assert_eq!(a, b);
}

#[test]
fn non_working_days_are_the_complement() {
    // Every day at nine: the pattern matches all dates, so working and
    // non-working occurrences split them between them.
    let every_day = |days| {
        let mut s = spec(Some(days), &[]);
        if let ScheduleSpec::Cron { cron, .. } = &mut s {
            *cron = "0 9 * * *".into();
        }
        Schedule::compile(&s).unwrap()
    };
    let (from, until) = ("2026-02-01T00:00:00+08:00", "2026-03-01T00:00:00+08:00");
    let w = dates(&every_day(Days::Working), from, until);
    let n = dates(&every_day(Days::NonWorking), from, until);
    assert_eq!(w.len() + n.len(), 28);
    assert!(w.iter().all(|d| !n.contains(d)));
    assert_eq!(
        n,
        [
            "2026-02-01",
            "2026-02-07",
            "2026-02-08",
            "2026-02-15",
            "2026-02-16",
            "2026-02-17",
            "2026-02-18",
            "2026-02-19",
            "2026-02-20",
            "2026-02-21",
            "2026-02-22",
            "2026-02-23",
        ]
    );
    // A weekday-only pattern on non-working days: the holiday weekdays only.
    let s = Schedule::compile(&spec(Some(Days::NonWorking), &[])).unwrap();
    assert_eq!(
        dates(&s, from, until),
        [
            "2026-02-16",
            "2026-02-17",
            "2026-02-18",
            "2026-02-19",
            "2026-02-20",
            "2026-02-23"
        ]
    );
}

#[test]
fn exclude_dates_still_apply() {
    let s = Schedule::compile(&spec(Some(Days::Working), &["2026-02-14", "2026-02-25"])).unwrap();
    assert_eq!(
        dates(&s, "2026-02-12T00:00:00+08:00", "2026-02-28T23:00:00+08:00"),
        [
            "2026-02-12",
            "2026-02-13",
            "2026-02-24",
            "2026-02-26",
            "2026-02-27",
            "2026-02-28"
        ]
    );
}

#[test]
fn past_the_calendar_the_regular_weekdays_apply_and_say_so() {
    let s = working();
    let got = dates(&s, "2026-12-30T00:00:00+08:00", "2027-01-05T23:00:00+08:00");
    // 2027's notice is not in the data: Jan 1 (a Friday) fires, the weekend
    // does not.
    assert_eq!(
        got,
        [
            "2026-12-30",
            "2026-12-31",
            "2027-01-01",
            "2027-01-04",
            "2027-01-05"
        ]
    );
    let in_2026 = parse_rfc3339_ms("2026-12-31T09:00:00+08:00").unwrap();
    let in_2027 = parse_rfc3339_ms("2027-01-01T09:00:00+08:00").unwrap();
    assert_eq!(s.uncovered(in_2026), None);
    assert_eq!(s.uncovered(in_2027), Some(("cn", 2027)));
}

#[test]
fn the_calendar_reads_dates_in_its_own_zone() {
    // 20:00 in New York on Friday Feb 13 is 09:00 Saturday Feb 14 in
    // Shanghai, a make-up working day; 20:00 on Sunday Feb 15 is Monday the
    // 16th there, a holiday.
    let mut s = spec(Some(Days::Working), &[]);
    if let ScheduleSpec::Cron { cron, timezone, .. } = &mut s {
        *cron = "0 20 * * *".into();
        *timezone = "America/New_York".into();
    }
    let s = Schedule::compile(&s).unwrap();
    let first = s
        .next_after(0, parse_rfc3339_ms("2026-02-13T00:00:00-05:00").unwrap())
        .unwrap();
    assert_eq!(format_rfc3339_ms(first), "2026-02-14T01:00:00.000Z");
    let next = s.next_after(0, first).unwrap();
    // Sat 13th→14th fired; Sat 14th (Sun 15th in Shanghai) .. Sun 22nd (Mon
    // 23rd) are off; Mon 23rd is Tue 24th in Shanghai.
    assert_eq!(format_rfc3339_ms(next), "2026-02-24T01:00:00.000Z");
}

/// A `cn` working-day schedule at nine with `pattern`'s days.
fn with_pattern(pattern: &str) -> Schedule {
    let mut s = spec(Some(Days::Working), &[]);
    if let ScheduleSpec::Cron { cron, .. } = &mut s {
        *cron = pattern.into();
    }
    Schedule::compile(&s).unwrap()
}

#[test]
fn only_a_pattern_on_every_working_weekday_takes_make_up_days() {
    let (from, until) = ("2026-02-09T00:00:00+08:00", "2026-03-03T00:00:00+08:00");
    // Every day, or every weekday: the make-up Saturdays too.
    assert_eq!(
        dates(&with_pattern("0 9 * * *"), from, until),
        dates(&working(), from, until)
    );
    assert_eq!(
        dates(&with_pattern("0 0 9 * * MON-FRI"), from, until),
        dates(&working(), from, until)
    );
    // Mondays only: working Mondays, and no make-up Saturday.
    assert_eq!(
        dates(&with_pattern("0 9 * * 1"), from, until),
        ["2026-02-09", "2026-03-02"]
    );
    // Saturdays only: the make-up ones, which are working days, and no
    // ordinary Saturday (a day off).
    assert_eq!(
        dates(&with_pattern("0 9 * * 6"), from, until),
        ["2026-02-14", "2026-02-28"]
    );
    // A day of the month is a date, not a weekday: the 14th fires (a
    // working Saturday), the 15th does not (a holiday).
    assert_eq!(
        dates(&with_pattern("0 9 14,15 * *"), from, until),
        ["2026-02-14"]
    );
}

#[test]
fn calendar_errors_name_the_field() {
    let field =
        |s: ScheduleSpec, cal: Option<Calendar>| Schedule::compile_with(&s, cal).unwrap_err().field;
    assert_eq!(field(spec(None, &[]), None), "schedule.calendar");
    let mut bad_name = spec(None, &[]);
    if let ScheduleSpec::Cron { calendar, .. } = &mut bad_name {
        *calendar = Some("a/b".into());
    }
    assert_eq!(field(bad_name, None), "schedule.calendar");
    let mut days_alone = spec(Some(Days::Working), &[]);
    if let ScheduleSpec::Cron { calendar, .. } = &mut days_alone {
        *calendar = None;
    }
    assert_eq!(field(days_alone, None), "schedule.days");
    // A tenant's calendar is whatever the caller passes, under any name.
    let mut own = spec(None, &[]);
    if let ScheduleSpec::Cron { calendar, .. } = &mut own {
        *calendar = Some("acme".into());
    }
    assert!(Schedule::compile(&own).is_err());
    assert!(Schedule::compile_with(&own, crate::calendar::builtin("cn")).is_ok());
}

#[test]
fn the_spec_reads_and_writes_calendar_and_days() {
    let text = r#"{"type":"cron","cron":"0 9 * * 1-5","timezone":"Asia/Shanghai","calendar":"cn","days":"non_working"}"#;
    let s: ScheduleSpec = serde_json::from_str(text).unwrap();
    assert_eq!(s, spec(Some(Days::NonWorking), &[]));
    let back = serde_json::to_value(&s).unwrap();
    assert_eq!(back["calendar"], "cn");
    assert_eq!(back["days"], "non_working");
}
