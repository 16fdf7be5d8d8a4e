//! `POST /v1/schedules:preview`: the next instants of a rule's schedule,
//! computed by the planner's own code, so what an operator sees is what fires.

use axum::body::Body;
use axum::extract::{Extension, State};
use axum::response::{IntoResponse, Response};
use herald_core::schedule::ScheduleSpec;
use herald_core::time::{format_rfc3339_ms, parse_rfc3339_ms};
use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde::{Deserialize, Serialize};

use crate::access::Caller;
use crate::api::campaigns::rules::{
    check_interval, check_schedule_text, compile_schedule, schedule_error,
};
use crate::http::body_limits::PREVIEW_MAX_BYTES;
use crate::http::error::ApiError;
use crate::http::json_body;
use crate::http::request::{NoQuery, read_body};
use crate::http::state::AppState;

/// Instants given when the body names no count.
const DEFAULT_COUNT: u64 = 10;
/// Most instants one preview gives.
const MAX_COUNT: u64 = 100;

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = PreviewRequest)]
pub(crate) struct PreviewBody {
    /// A rule's `schedule` object (`at` or `cron`).
    #[schema(value_type = Object)]
    schedule: ScheduleSpec,
    /// Default 10.
    #[schema(value_type = Option<u32>, minimum = 1, maximum = 100)]
    count: Option<u64>,
    #[schema(format = DateTime)]
    from: Option<String>,
}

/// `POST /v1/schedules:preview`'s answer.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = Preview)]
pub(crate) struct PreviewJson {
    /// In UTC.
    instants: Vec<String>,
    /// The same instants as wall clock times with their offset in the
    /// schedule's `timezone` (UTC for an `at` or `immediate` one).
    local: Vec<String>,
    /// What the caller should know about them: instants in a year the
    /// schedule's calendar lists no holidays for follow its regular
    /// working weekdays only.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<String>,
}

/// `ms` as an RFC 3339 time with `tz`'s offset then.
fn local_time(ms: i64, tz: &TimeZone) -> String {
    match Timestamp::from_millisecond(ms) {
        Ok(t) => t
            .to_zoned(tz.clone())
            .strftime("%Y-%m-%dT%H:%M:%S%.f%:z")
            .to_string(),
        Err(_) => format_rfc3339_ms(ms),
    }
}

/// `POST /v1/schedules:preview` `{"schedule", "count"?: 1..100 (10), "from"?: time}`
/// → `{"instants": [time, ...]}`: the instants a rule version created at
/// `from` (default now) would be planned at, in order. Fewer than `count`
/// when the schedule ends (a one-shot, a cron's `end_at`).
pub async fn preview(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    body: Body,
) -> Result<Response, ApiError> {
    let bytes = read_body(body, PREVIEW_MAX_BYTES).await?;
    let req: PreviewBody = json_body::object(&bytes)?;
    let count = req.count.unwrap_or(DEFAULT_COUNT);
    if !(1..=MAX_COUNT).contains(&count) {
        return Err(ApiError::field(
            "count",
            "invalid_field",
            format!("count must be 1..={MAX_COUNT}"),
        ));
    }
    let from = match req.from.as_deref() {
        None => st.clock.now_ms(),
        Some(s) => parse_rfc3339_ms(s).map_err(|e| {
            ApiError::field(
                "from",
                "invalid_field",
                format!("from {s:?} is not an RFC 3339 time: {e}"),
            )
        })?,
    };
    check_schedule_text(&req.schedule)?;
    // What a rule could not have is refused here too: a pattern that
    // matches no date, an interval below the floor.
    let schedule = compile_schedule(&st, caller.tenant, &req.schedule).await?;
    schedule.check_matches().map_err(schedule_error)?;
    check_interval(&st, &schedule, from)?;
    let at = herald_engine::campaign::occurrences(&schedule, from, count as usize);
    let tz = schedule.zone().cloned().unwrap_or(TimeZone::UTC);
    let mut warnings = Vec::new();
    for (name, year) in at.iter().filter_map(|ms| schedule.uncovered(*ms)) {
        let w = format!(
            "calendar {name:?} lists no holidays for {year}: instants in it follow its \
             working_weekdays only"
        );
        if !warnings.contains(&w) {
            warnings.push(w);
        }
    }
    Ok(axum::Json(PreviewJson {
        instants: at.iter().map(|ms| format_rfc3339_ms(*ms)).collect(),
        local: at.iter().map(|ms| local_time(*ms, &tz)).collect(),
        warnings,
    })
    .into_response())
}
