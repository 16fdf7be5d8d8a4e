//! Which calendar a rule means by a name, and its schedule compiled with it.
//!
//! A name is looked up when it is used: each time the planner plans a rule's
//! next occurrence, and again when a planned task is due (see the planner).
//! So a calendar replaced with `PUT /v1/calendars/{name}` applies to every
//! rule that names it from its next planning on, with no rule rewritten. A
//! tenant's stored calendar stands in for a built-in one of the same name.

use herald_core::TenantId;
use herald_core::calendar::{self, Calendar, CalendarSpec};
use herald_core::schedule::{Schedule, ScheduleError, ScheduleSpec};
use herald_store::{Store, StoreError};

/// The calendar `tenant`'s rules mean by `name`: its stored one, else the
/// built-in one; `None` when there is neither.
pub async fn resolve(
    store: &dyn Store,
    tenant: TenantId,
    name: &str,
) -> Result<Option<Calendar>, StoreError> {
    let Some(row) = store.get_calendar(tenant, name).await? else {
        return Ok(calendar::builtin(name));
    };
    let compiled = serde_json::from_str::<CalendarSpec>(&row.body)
        .map_err(|e| e.to_string())
        .and_then(|spec| Calendar::compile(&spec).map_err(|e| e.to_string()));
    match compiled {
        Ok(c) => Ok(Some(c)),
        Err(e) => {
            // The API checked it; a row that no longer does (a zone the
            // bundled database dropped) is reported, not guessed at.
            tracing::error!(tenant = tenant.0, calendar = name, error = %e, "stored calendar does not compile");
            Ok(None)
        }
    }
}

/// `spec` compiled with the calendar it names, looked up for `tenant`. The
/// outer error is the store's; the inner one the spec's.
pub async fn compile(
    store: &dyn Store,
    tenant: TenantId,
    spec: &ScheduleSpec,
) -> Result<Result<Schedule, ScheduleError>, StoreError> {
    let cal = match spec.calendar() {
        Some(name) if calendar::check_name(name).is_ok() => resolve(store, tenant, name).await?,
        _ => None,
    };
    Ok(Schedule::compile_with(spec, cal))
}
