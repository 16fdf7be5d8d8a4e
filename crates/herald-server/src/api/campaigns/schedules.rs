//! `POST /v1/schedules:preview`: the next instants of a rule's schedule,
//! computed by the planner's own code, so what an operator sees is what fires.

use axum::body::Body;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use herald_core::schedule::{Schedule, ScheduleSpec};
use herald_core::time::{format_rfc3339_ms, parse_rfc3339_ms};
use serde::{Deserialize, Serialize};

use crate::api::campaigns::rules::{check_interval, check_schedule_text, schedule_error};
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
    instants: Vec<String>,
}

/// `POST /v1/schedules:preview` `{"schedule", "count"?: 1..100 (10), "from"?: time}`
/// → `{"instants": [time, ...]}`: the instants a rule version created at
/// `from` (default now) would be planned at, in order. Fewer than `count`
/// when the schedule ends (a one-shot, a cron's `end_at`).
pub async fn preview(
    State(st): State<AppState>,
    _: NoQuery,
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
    let schedule = Schedule::compile(&req.schedule).map_err(schedule_error)?;
    schedule.check_matches().map_err(schedule_error)?;
    check_interval(&st, &schedule, from)?;
    let instants = herald_engine::campaign::occurrences(&schedule, from, count as usize)
        .into_iter()
        .map(format_rfc3339_ms)
        .collect();
    Ok(axum::Json(PreviewJson { instants }).into_response())
}
