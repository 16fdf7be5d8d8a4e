//! Reading a [`ScheduleSpec`] from JSON: an object with a `type` and the
//! fields of that type, and nothing else.
//!
//! serde's own reading of an internally tagged enum also takes an array whose
//! first element is the tag (`["cron", "0 9 * * *", "UTC"]`), and no setting
//! turns that off; a flat struct read first, then checked, takes objects only
//! (where the deserializer holds structs to objects, as the API's does).

use serde::Deserialize;

use super::{Days, ScheduleSpec};

/// Every field any schedule type has, as the JSON holds them.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpecObject {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    at: Option<String>,
    #[serde(default)]
    cron: Option<String>,
    #[serde(default)]
    timezone: Option<String>,
    #[serde(default)]
    exclude_dates: Option<Vec<String>>,
    #[serde(default)]
    start_at: Option<String>,
    #[serde(default)]
    end_at: Option<String>,
    #[serde(default)]
    calendar: Option<String>,
    #[serde(default)]
    days: Option<Days>,
}

/// The type names, as serde words an unknown variant.
const TYPES: &str = "expected one of `immediate`, `at`, `cron`";

impl TryFrom<SpecObject> for ScheduleSpec {
    type Error = String;

    fn try_from(o: SpecObject) -> Result<Self, String> {
        let given = [
            ("at", o.at.is_some()),
            ("cron", o.cron.is_some()),
            ("timezone", o.timezone.is_some()),
            ("exclude_dates", o.exclude_dates.is_some()),
            ("start_at", o.start_at.is_some()),
            ("end_at", o.end_at.is_some()),
            ("calendar", o.calendar.is_some()),
            ("days", o.days.is_some()),
        ];
        let only = |allowed: &[&str]| -> Result<(), String> {
            match given
                .iter()
                .find(|(name, present)| *present && !allowed.contains(name))
            {
                Some((name, _)) => Err(format!(
                    "unknown field `{name}` for a schedule of type `{}`",
                    o.kind
                )),
                None => Ok(()),
            }
        };
        let missing = |name: &str| format!("missing field `{name}`");
        match o.kind.as_str() {
            "immediate" => {
                only(&[])?;
                Ok(ScheduleSpec::Immediate)
            }
            "at" => {
                only(&["at"])?;
                Ok(ScheduleSpec::At {
                    at: o.at.ok_or_else(|| missing("at"))?,
                })
            }
            "cron" => {
                only(&[
                    "cron",
                    "timezone",
                    "exclude_dates",
                    "start_at",
                    "end_at",
                    "calendar",
                    "days",
                ])?;
                Ok(ScheduleSpec::Cron {
                    cron: o.cron.ok_or_else(|| missing("cron"))?,
                    timezone: o.timezone.ok_or_else(|| missing("timezone"))?,
                    exclude_dates: o.exclude_dates.unwrap_or_default(),
                    start_at: o.start_at,
                    end_at: o.end_at,
                    calendar: o.calendar,
                    days: o.days,
                })
            }
            other => Err(format!("unknown variant `{other}`, {TYPES}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<ScheduleSpec, String> {
        serde_json::from_str(text).map_err(|e| e.to_string())
    }

    #[test]
    fn each_type_takes_its_own_fields() {
        assert_eq!(read(r#"{"type":"immediate"}"#), Ok(ScheduleSpec::Immediate));
        assert_eq!(
            read(r#"{"at":"2026-12-01T09:00:00Z","type":"at"}"#),
            Ok(ScheduleSpec::At {
                at: "2026-12-01T09:00:00Z".into()
            })
        );
        let cron = read(r#"{"type":"cron","cron":"0 9 * * *","timezone":"UTC"}"#).unwrap();
        assert!(
            matches!(cron, ScheduleSpec::Cron { ref exclude_dates, .. } if exclude_dates.is_empty())
        );
        for (text, says) in [
            (r#"{"type":"immediate","at":"x"}"#, "unknown field `at`"),
            (r#"{"type":"at"}"#, "missing field `at`"),
            (
                r#"{"type":"at","at":"x","cron":"y"}"#,
                "unknown field `cron`",
            ),
            (
                r#"{"type":"cron","cron":"0 9 * * *"}"#,
                "missing field `timezone`",
            ),
            (r#"{"type":"weekly"}"#, "unknown variant `weekly`"),
            (r#"{"type":"at","at":"x","when":1}"#, "unknown field `when`"),
            (r#"{"at":"x"}"#, "missing field `type`"),
            (
                r#"{"type":"at","at":"x","calendar":"cn"}"#,
                "unknown field `calendar`",
            ),
            (
                r#"{"type":"cron","cron":"0 9 * * *","timezone":"UTC","days":"weekends"}"#,
                "unknown variant `weekends`",
            ),
        ] {
            let e = read(text).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
    }
}
