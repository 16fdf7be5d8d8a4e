//! `/v1/calendars`: working-day calendars rules name (`schedule.calendar`).
//!
//! A calendar is one JSON object per tenant and name (see
//! `herald_core::calendar`), replaced whole by `PUT`. The built-in ones
//! (`cn`) answer without being stored; a tenant may `PUT` one of the same
//! name, and its own then stands in for it, for that tenant only. Rules look
//! their calendar up when they are planned (`herald_engine::campaign::calendars`),
//! so a replacement applies to them from their next occurrence on.

pub(crate) mod docs;

use std::collections::BTreeMap;

use axum::body::Body;
use axum::extract::{Extension, Path, State};
use axum::response::{IntoResponse, Response};
use herald_core::calendar::{self, Calendar, CalendarSpec};
use herald_core::time::format_rfc3339_ms;
use herald_store::CalendarRecord;
use serde::Serialize;
use utoipa::ToSchema;

use crate::access::Caller;
use crate::http::error::ApiError;
use crate::http::json_body;
use crate::http::request::{NoQuery, read_body};
use crate::http::state::AppState;

/// Largest calendar body.
pub const MAX_CALENDAR_BYTES: usize = 256 * 1024;

/// A calendar as answered.
#[derive(Serialize, ToSchema)]
pub(crate) struct CalendarJson {
    name: String,
    /// Shipped with Herald (not stored): `false` for the tenant's own,
    /// including one that replaces a built-in of the same name.
    builtin: bool,
    calendar: CalendarSpec,
    /// The first and last year the calendar lists holidays for; outside
    /// them a rule follows `working_weekdays` only.
    #[serde(skip_serializing_if = "Option::is_none")]
    first_year: Option<i16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_year: Option<i16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    created_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    updated_at: Option<String>,
    /// The API key that last wrote it.
    #[serde(skip_serializing_if = "Option::is_none")]
    updated_by: Option<String>,
}

/// `GET /v1/calendars`.
#[derive(Serialize, ToSchema)]
pub(crate) struct CalendarList {
    /// By name: the tenant's own and the built-in ones it has not replaced.
    calendars: Vec<CalendarJson>,
}

fn who(caller: &Caller) -> Option<String> {
    match (caller.key_id, &caller.key_name) {
        (Some(id), Some(name)) => Some(format!("key {id} ({name})")),
        (None, Some(name)) => Some(name.clone()),
        _ => None,
    }
}

fn answer(name: &str, spec: CalendarSpec, row: Option<&CalendarRecord>) -> CalendarJson {
    let years = Calendar::compile(&spec).ok().and_then(|c| c.coverage());
    CalendarJson {
        name: name.to_string(),
        builtin: row.is_none(),
        calendar: spec,
        first_year: years.map(|y| y.0),
        last_year: years.map(|y| y.1),
        created_at: row.map(|r| format_rfc3339_ms(r.created_at)),
        updated_at: row.map(|r| format_rfc3339_ms(r.updated_at)),
        updated_by: row.and_then(|r| r.updated_by.clone()),
    }
}

fn stored(row: &CalendarRecord) -> Result<CalendarJson, ApiError> {
    let spec: CalendarSpec = serde_json::from_str(&row.body)
        .map_err(|e| ApiError::internal(format!("stored calendar {:?}: {e}", row.name)))?;
    Ok(answer(&row.name, spec, Some(row)))
}

/// `PUT /v1/calendars/{name}`: stores the calendar, replacing any of that
/// name (a built-in one included, for this tenant).
pub async fn put(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
    body: Body,
) -> Result<Response, ApiError> {
    calendar::check_name(&name).map_err(|m| ApiError::field("name", "invalid_field", m))?;
    let bytes = read_body(body, MAX_CALENDAR_BYTES).await?;
    let spec: CalendarSpec = json_body::object(&bytes)?;
    Calendar::compile(&spec).map_err(|e| ApiError::field(&e.field, "invalid_field", e.message))?;
    let body = serde_json::to_string(&spec)
        .map_err(|e| ApiError::internal(format!("calendar body: {e}")))?;
    let now = st.clock.now_ms();
    let row = CalendarRecord {
        tenant: caller.tenant,
        name,
        body,
        created_at: now,
        updated_at: now,
        updated_by: who(&caller),
    };
    let written = st.engine.store().put_calendar(&row).await?;
    tracing::info!(tenant = caller.tenant.0, calendar = %written.name, "calendar stored");
    // Rules naming it are planned with it from their next occurrence on.
    st.engine.wake_planner();
    Ok(axum::Json(stored(&written)?).into_response())
}

/// `GET /v1/calendars/{name}`: the tenant's own, else the built-in one.
pub async fn get(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    if calendar::check_name(&name).is_err() {
        return Err(ApiError::not_found("calendar"));
    }
    if let Some(row) = st.engine.store().get_calendar(caller.tenant, &name).await? {
        return Ok(axum::Json(stored(&row)?).into_response());
    }
    let spec = calendar::builtin_spec(&name).ok_or_else(|| ApiError::not_found("calendar"))?;
    Ok(axum::Json(answer(&name, spec, None)).into_response())
}

/// `GET /v1/calendars`: the tenant's own and the built-in ones, by name.
pub async fn list(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
) -> Result<Response, ApiError> {
    let mut by_name = BTreeMap::new();
    for name in calendar::builtin_names() {
        if let Some(spec) = calendar::builtin_spec(name) {
            by_name.insert(name.to_string(), answer(name, spec, None));
        }
    }
    for row in st.engine.store().list_calendars(caller.tenant).await? {
        by_name.insert(row.name.clone(), stored(&row)?);
    }
    Ok(axum::Json(CalendarList {
        calendars: by_name.into_values().collect(),
    })
    .into_response())
}
