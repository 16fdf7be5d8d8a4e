//! Working-day calendars: which dates are working days in some place, with the
//! holidays and make-up working days a government announces year by year.
//!
//! A [`CalendarSpec`] is the JSON the API takes and the store keeps:
//!
//! ```json
//! {
//!   "time_zone": "Asia/Shanghai",
//!   "working_weekdays": ["mon", "tue", "wed", "thu", "fri"],
//!   "years": {
//!     "2026": {
//!       "source": "the notice these dates come from",
//!       "holidays": ["2026-02-15", "2026-02-16"],
//!       "workdays": ["2026-02-14"]
//!     }
//!   }
//! }
//! ```
//!
//! [`Calendar::compile`] checks it once. A date is a working day when it is a
//! listed make-up day (`workdays`), or a regular working weekday that is not a
//! listed holiday. The answer is known only for listed years: for any other
//! [`Calendar::is_working_day`] says `None`, and a schedule then falls back to
//! the regular working weekdays ([`Calendar::working_or_regular`]) and says so
//! (see `schedule`): a reminder keeps going out on weekdays rather than stopping
//! when nobody has typed in next year's notice yet.
//!
//! [`builtin`] holds calendars shipped with Herald, read from
//! `data/calendars/*.json` at compile time.

use std::collections::{BTreeMap, BTreeSet};

use jiff::civil::{Date, Weekday};
use jiff::tz::{TimeZone, TimeZoneDatabase};
use serde::{Deserialize, Serialize};

/// Most years one calendar lists.
pub const MAX_YEARS: usize = 100;
/// Most holidays, and separately most make-up days, one year lists.
pub const MAX_DATES_PER_YEAR: usize = 366;
/// Longest `description` or `source`.
pub const MAX_TEXT_BYTES: usize = 1000;
/// Longest calendar name.
pub const MAX_NAME_BYTES: usize = 64;
/// The years a calendar may list: enough for any rule, small enough that
/// every date in them is an ordinary four-digit one.
pub const YEARS: std::ops::RangeInclusive<i16> = 1970..=2199;

/// Built-in calendars by name, each with its JSON.
const BUILTIN: &[(&str, &str)] = &[("cn", include_str!("../data/calendars/cn.json"))];

const WEEKDAY_NAMES: [(&str, Weekday); 7] = [
    ("mon", Weekday::Monday),
    ("tue", Weekday::Tuesday),
    ("wed", Weekday::Wednesday),
    ("thu", Weekday::Thursday),
    ("fri", Weekday::Friday),
    ("sat", Weekday::Saturday),
    ("sun", Weekday::Sunday),
];

/// A calendar as the API receives it and the store keeps it.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CalendarSpec {
    /// What the calendar is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// IANA zone whose dates the calendar lists: a rule asks about the date
    /// an occurrence falls on in this zone.
    pub time_zone: String,
    /// `mon` … `sun`: the days that are working days unless listed otherwise.
    pub working_weekdays: Vec<String>,
    /// Per year (`"2026"`), its holidays and make-up working days.
    #[serde(default)]
    pub years: BTreeMap<String, YearSpec>,
}

/// One year of a calendar.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct YearSpec {
    /// Where the dates come from (a notice, a URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// `YYYY-MM-DD` days off, whatever their weekday.
    #[serde(default)]
    pub holidays: Vec<String>,
    /// `YYYY-MM-DD` make-up working days, on days otherwise off.
    #[serde(default)]
    pub workdays: Vec<String>,
}

/// A spec that does not check; `field` is its JSON path (`years.2026.holidays[3]`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct CalendarError {
    pub field: String,
    pub message: String,
}

fn err(field: impl Into<String>, message: impl Into<String>) -> CalendarError {
    CalendarError {
        field: field.into(),
        message: message.into(),
    }
}

/// A checked calendar, ready to answer [`Calendar::is_working_day`].
#[derive(Debug, Clone)]
pub struct Calendar {
    tz: TimeZone,
    /// Indexed by [`Weekday::to_monday_zero_offset`].
    weekdays: [bool; 7],
    holidays: BTreeSet<Date>,
    workdays: BTreeSet<Date>,
    years: BTreeSet<i16>,
}

/// `Ok` for a calendar name: 1 to 64 letters, digits, `.`, `_`, `-`.
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME_BYTES
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "a calendar name is 1..={MAX_NAME_BYTES} letters, digits, '.', '_' or '-'"
        ))
    }
}

/// The names of the built-in calendars.
pub fn builtin_names() -> impl Iterator<Item = &'static str> {
    BUILTIN.iter().map(|(name, _)| *name)
}

/// A built-in calendar's spec, as shipped.
pub fn builtin_spec(name: &str) -> Option<CalendarSpec> {
    let (_, text) = BUILTIN.iter().find(|(n, _)| *n == name)?;
    // The data is checked by this module's tests; a broken file would fail them.
    serde_json::from_str(text).ok()
}

/// A built-in calendar, compiled.
pub fn builtin(name: &str) -> Option<Calendar> {
    Calendar::compile(&builtin_spec(name)?).ok()
}

/// `YYYY-MM-DD` exactly.
pub(crate) fn parse_date(s: &str) -> Result<Date, String> {
    let b = s.as_bytes();
    let shape_ok = b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit());
    if !shape_ok {
        return Err(format!("{s:?} is not a YYYY-MM-DD date"));
    }
    s.parse::<Date>().map_err(|e| format!("{s:?}: {e}"))
}

fn check_text(field: &str, text: Option<&str>) -> Result<(), CalendarError> {
    match text {
        Some(t) if t.len() > MAX_TEXT_BYTES => {
            Err(err(field, format!("at most {MAX_TEXT_BYTES} bytes")))
        }
        Some(t) if t.chars().any(|c| c.is_control() && c != '\n') => {
            Err(err(field, "holds a control character"))
        }
        _ => Ok(()),
    }
}

/// Reads one list of dates of `year`, each at most once.
fn dates(field: &str, year: i16, list: &[String]) -> Result<BTreeSet<Date>, CalendarError> {
    if list.len() > MAX_DATES_PER_YEAR {
        return Err(err(
            field,
            format!("{} dates; at most {MAX_DATES_PER_YEAR}", list.len()),
        ));
    }
    let mut out = BTreeSet::new();
    for (i, s) in list.iter().enumerate() {
        let at = format!("{field}[{i}]");
        let d = parse_date(s).map_err(|m| err(&at, m))?;
        if d.year() != year {
            return Err(err(&at, format!("{s} is not in {year}")));
        }
        if !out.insert(d) {
            return Err(err(&at, format!("{s} is listed twice")));
        }
    }
    Ok(out)
}

impl Calendar {
    /// Checks `spec` and prepares it for lookups.
    pub fn compile(spec: &CalendarSpec) -> Result<Calendar, CalendarError> {
        check_text("description", spec.description.as_deref())?;
        let tz = TimeZoneDatabase::bundled()
            .get(&spec.time_zone)
            .map_err(|e| {
                err(
                    "time_zone",
                    format!("unknown IANA time zone {:?}: {e}", spec.time_zone),
                )
            })?;
        let mut weekdays = [false; 7];
        for (i, w) in spec.working_weekdays.iter().enumerate() {
            let field = format!("working_weekdays[{i}]");
            let Some((_, day)) = WEEKDAY_NAMES.iter().find(|(n, _)| n == w) else {
                return Err(err(
                    field,
                    format!("{w:?} is not one of mon, tue, wed, thu, fri, sat, sun"),
                ));
            };
            let slot = &mut weekdays[day.to_monday_zero_offset() as usize];
            if *slot {
                return Err(err(field, format!("{w} is listed twice")));
            }
            *slot = true;
        }
        if spec.years.len() > MAX_YEARS {
            return Err(err(
                "years",
                format!("{} years; at most {MAX_YEARS}", spec.years.len()),
            ));
        }
        let mut cal = Calendar {
            tz,
            weekdays,
            holidays: BTreeSet::new(),
            workdays: BTreeSet::new(),
            years: BTreeSet::new(),
        };
        for (key, y) in &spec.years {
            let field = format!("years.{key}");
            let year = key
                .parse::<i16>()
                .ok()
                .filter(|y| key.len() == 4 && YEARS.contains(y))
                .ok_or_else(|| {
                    err(
                        &field,
                        format!(
                            "{key:?} is not a year in {}..={}",
                            YEARS.start(),
                            YEARS.end()
                        ),
                    )
                })?;
            check_text(&format!("{field}.source"), y.source.as_deref())?;
            let holidays = dates(&format!("{field}.holidays"), year, &y.holidays)?;
            let workdays = dates(&format!("{field}.workdays"), year, &y.workdays)?;
            for (i, s) in y.workdays.iter().enumerate() {
                let at = format!("{field}.workdays[{i}]");
                let d = parse_date(s).map_err(|m| err(&at, m))?;
                if holidays.contains(&d) {
                    return Err(err(at, format!("{s} is also listed as a holiday")));
                }
                if cal.regular(d) {
                    return Err(err(
                        at,
                        format!(
                            "{s} is a {:?} and so a working day already: list only days otherwise off",
                            d.weekday()
                        ),
                    ));
                }
            }
            cal.holidays.extend(holidays);
            cal.workdays.extend(workdays);
            cal.years.insert(year);
        }
        Ok(cal)
    }

    /// The zone whose dates the calendar lists.
    pub fn time_zone(&self) -> &TimeZone {
        &self.tz
    }

    /// Whether `date` is a regular working weekday (ignoring listed dates).
    pub fn regular(&self, date: Date) -> bool {
        self.weekdays[date.weekday().to_monday_zero_offset() as usize]
    }

    /// Whether the calendar lists `year`.
    pub fn covers(&self, year: i16) -> bool {
        self.years.contains(&year)
    }

    /// The first and last year listed, if any.
    pub fn coverage(&self) -> Option<(i16, i16)> {
        Some((*self.years.first()?, *self.years.last()?))
    }

    /// Whether `date` is a working day; `None` when its year is not listed.
    pub fn is_working_day(&self, date: Date) -> Option<bool> {
        if !self.covers(date.year()) {
            return None;
        }
        Some(self.working_or_regular(date))
    }

    /// [`Calendar::is_working_day`], with the regular working weekdays for a
    /// year not listed: what a schedule uses.
    pub fn working_or_regular(&self, date: Date) -> bool {
        if self.workdays.contains(&date) {
            true
        } else if self.holidays.contains(&date) {
            false
        } else {
            self.regular(date)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::civil::date;

    fn spec(json: &str) -> CalendarSpec {
        serde_json::from_str(json).unwrap()
    }

    fn field_of(json: &str) -> String {
        Calendar::compile(&spec(json)).unwrap_err().field
    }

    #[test]
    fn cn_knows_the_2026_make_up_days_and_holidays() {
        let cn = builtin("cn").expect("the cn data compiles");
        for (d, working) in [
            (date(2026, 2, 13), true),  // Friday before Spring Festival
            (date(2026, 2, 14), true),  // Saturday, make-up day
            (date(2026, 2, 15), false), // Sunday, first day off
            (date(2026, 2, 16), false), // Monday, holiday
            (date(2026, 2, 23), false), // Monday, last day off
            (date(2026, 2, 24), true),
            (date(2026, 2, 28), true), // Saturday, make-up day
            (date(2026, 3, 1), false), // ordinary Sunday
            (date(2026, 1, 4), true),  // Sunday, make-up day
            (date(2026, 9, 20), true), // Sunday, make-up day
            (date(2026, 10, 5), false),
            (date(2026, 10, 8), true),
            (date(2026, 10, 10), true), // Saturday, make-up day
            (date(2024, 2, 4), true),
            (date(2025, 10, 8), false),
            (date(2025, 10, 11), true),
        ] {
            assert_eq!(cn.is_working_day(d), Some(working), "{d}");
        }
        assert_eq!(cn.coverage(), Some((2024, 2026)));
        // Outside the listed years the answer is unknown, and the fallback is
        // the regular weekdays.
        assert_eq!(cn.is_working_day(date(2027, 1, 1)), None);
        assert!(cn.working_or_regular(date(2027, 1, 1)));
        assert!(!cn.working_or_regular(date(2027, 1, 2)));
    }

    #[test]
    fn every_builtin_names_its_sources() {
        for name in builtin_names() {
            let s = builtin_spec(name).unwrap();
            assert!(Calendar::compile(&s).is_ok(), "{name}");
            for (year, y) in &s.years {
                assert!(
                    y.source.as_deref().is_some_and(|t| !t.is_empty()),
                    "{name} {year}"
                );
            }
        }
    }

    #[test]
    fn errors_name_the_field() {
        let base = |years: &str| {
            format!(
                r#"{{"time_zone":"Asia/Shanghai","working_weekdays":["mon","tue"],"years":{years}}}"#
            )
        };
        for (years, field) in [
            (
                r#"{"2026":{"holidays":["2026-01-01","2026-01-02","2026-01-03","2026-13-01"]}}"#,
                "years.2026.holidays[3]",
            ),
            (
                r#"{"2026":{"holidays":["2025-12-31"]}}"#,
                "years.2026.holidays[0]",
            ),
            (
                r#"{"2026":{"holidays":["2026-01-01","2026-01-01"]}}"#,
                "years.2026.holidays[1]",
            ),
            (
                r#"{"2026":{"holidays":["2026-01-03"],"workdays":["2026-01-04","2026-01-03"]}}"#,
                "years.2026.workdays[1]",
            ),
            // A Monday is a working day already.
            (
                r#"{"2026":{"workdays":["2026-01-05"]}}"#,
                "years.2026.workdays[0]",
            ),
            (r#"{"26":{}}"#, "years.26"),
            (r#"{"1969":{}}"#, "years.1969"),
        ] {
            assert_eq!(field_of(&base(years)), field, "{years}");
        }
        assert_eq!(
            field_of(r#"{"time_zone":"Mars/Base","working_weekdays":[]}"#),
            "time_zone"
        );
        assert_eq!(
            field_of(r#"{"time_zone":"UTC","working_weekdays":["mon","Tue"]}"#),
            "working_weekdays[1]"
        );
        assert_eq!(
            field_of(r#"{"time_zone":"UTC","working_weekdays":["mon","mon"]}"#),
            "working_weekdays[1]"
        );
        let long = "x".repeat(MAX_TEXT_BYTES + 1);
        assert_eq!(
            field_of(&base(&format!(r#"{{"2026":{{"source":"{long}"}}}}"#))),
            "years.2026.source"
        );
        let many: Vec<String> = (0..=MAX_DATES_PER_YEAR)
            .map(|_| "\"2026-01-01\"".into())
            .collect();
        assert_eq!(
            field_of(&base(&format!(
                r#"{{"2026":{{"holidays":[{}]}}}}"#,
                many.join(",")
            ))),
            "years.2026.holidays"
        );
    }

    #[test]
    fn names() {
        assert!(check_name("cn").is_ok());
        assert!(check_name("acme.cn-2").is_ok());
        for bad in ["", "a b", "a/b", &"x".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }
}
