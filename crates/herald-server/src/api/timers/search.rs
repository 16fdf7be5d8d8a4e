//! `GET /v1/timers` (search one tenant's timers, cursor-paginated) and
//! `GET /v1/dead-letters` (its newest dead and failed timers, grouped).

use axum::extract::rejection::QueryRejection;
use axum::extract::{Extension, Query, State};
use axum::response::{IntoResponse, Response};
use herald_core::time::{format_rfc3339_ms, parse_rfc3339_ms};
use herald_core::{TimerKind, TimerState};
use herald_store::{DueCursor, SortOrder, TimerFilter};
use serde::{Deserialize, Serialize};

use crate::access::Caller;
use crate::api::timers::TimerJson;
use crate::http::error::ApiError;
use crate::http::request::{int_param, query};
use crate::http::state::AppState;

pub const DEFAULT_LIMIT: i64 = 100;
pub const MAX_LIMIT: i64 = 1000;

/// The query of `GET /v1/timers`; every value as sent, checked below.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchQuery {
    state: Option<String>,
    channel: Option<String>,
    recipient: Option<String>,
    idempotency_key: Option<String>,
    kind: Option<String>,
    due_after: Option<String>,
    due_before: Option<String>,
    order: Option<String>,
    limit: Option<String>,
    cursor: Option<String>,
}

/// A time parameter (RFC 3339), or a 400 naming it.
pub fn time_param(name: &str, raw: &Option<String>) -> Result<Option<i64>, ApiError> {
    raw.as_deref()
        .map(|s| {
            parse_rfc3339_ms(s.trim()).map_err(|e| {
                ApiError::field(
                    name,
                    "invalid_field",
                    format!("{name} must be an RFC 3339 time: {e}"),
                )
            })
        })
        .transpose()
}

/// A stored state by name (`firing` is a pending timer being sent, stored
/// only for channels that skip in-doubt sends, so not searched for), or a
/// 400 naming `field`.
pub fn state_param(field: &str, raw: &str, allowed: &[TimerState]) -> Result<TimerState, ApiError> {
    TimerState::parse(raw.trim())
        .filter(|s| allowed.contains(s))
        .ok_or_else(|| {
            let names: Vec<&str> = allowed.iter().map(|s| s.as_str()).collect();
            ApiError::field(
                field,
                "invalid_field",
                format!("{field} must be one of {}, not {raw:?}", names.join(", ")),
            )
        })
}

/// A non-empty text filter; an empty one filters nothing.
fn text(raw: Option<String>) -> Option<String> {
    raw.filter(|s| !s.is_empty())
}

/// The opaque cursor of the page after `c`.
fn encode_cursor(c: DueCursor) -> String {
    format!("{}.{}", c.due_at, c.id)
}

fn decode_cursor(raw: &str) -> Result<DueCursor, ApiError> {
    let bad = || ApiError::field("cursor", "invalid_field", "cursor is not one this API gave");
    let (due, id) = raw.split_once('.').ok_or_else(bad)?;
    Ok(DueCursor {
        due_at: due.parse().map_err(|_| bad())?,
        id: id.parse().map_err(|_| bad())?,
    })
}

const STORED: [TimerState; 6] = [
    TimerState::Pending,
    TimerState::Done,
    TimerState::Failed,
    TimerState::Dead,
    TimerState::Cancelled,
    TimerState::InDoubt,
];

fn filter_of(
    q: SearchQuery,
) -> Result<(TimerFilter, SortOrder, usize, Option<DueCursor>), ApiError> {
    let state = q
        .state
        .as_deref()
        .map(|s| state_param("state", s, &STORED))
        .transpose()?;
    let kind = q
        .kind
        .as_deref()
        .map(|k| {
            TimerKind::parse(k.trim()).ok_or_else(|| {
                ApiError::field(
                    "kind",
                    "invalid_field",
                    format!("kind must be timer, reminder or job, not {k:?}"),
                )
            })
        })
        .transpose()?;
    let order = match q.order.as_deref().map(str::trim) {
        None | Some("asc") => SortOrder::Asc,
        Some("desc") => SortOrder::Desc,
        Some(o) => {
            return Err(ApiError::field(
                "order",
                "invalid_field",
                format!("order must be asc or desc, not {o:?}"),
            ));
        }
    };
    let limit = int_param("limit", &q.limit, 1..=MAX_LIMIT)?.unwrap_or(DEFAULT_LIMIT);
    let cursor = q
        .cursor
        .as_deref()
        .filter(|c| !c.is_empty())
        .map(decode_cursor)
        .transpose()?;
    let filter = TimerFilter {
        state,
        channel: text(q.channel),
        recipient: text(q.recipient),
        idempotency_key: text(q.idempotency_key),
        kind,
        due_after: time_param("due_after", &q.due_after)?,
        due_before: time_param("due_before", &q.due_before)?,
    };
    Ok((filter, order, limit as usize, cursor))
}

/// `GET /v1/timers`'s answer.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = TimerList)]
pub(crate) struct SearchPage {
    /// Without `message`.
    timers: Vec<TimerJson>,
    /// Opaque; pass as `cursor` for the next page; `null` on the last.
    next_cursor: Option<String>,
}

/// `GET /v1/timers?state=&channel=&recipient=&idempotency_key=&kind=&due_after=&due_before=&order=&limit=&cursor=`
/// → `{timers, next_cursor}`: the caller's timers in `(due_at, id)` order,
/// without their messages.
pub async fn list(
    State(st): State<AppState>,
    Extension(caller): Extension<Caller>,
    q: Result<Query<SearchQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let (filter, order, limit, cursor) = filter_of(query(q)?)?;
    let rows = st
        .engine
        .store()
        .search_timers(caller.tenant, &filter, cursor, limit, order)
        .await?;
    let next_cursor = (rows.len() == limit)
        .then(|| rows.last().map(|t| encode_cursor(t.cursor())))
        .flatten();
    let timers = rows
        .into_iter()
        .map(|t| {
            let firing = st.engine.is_firing(t.id);
            TimerJson::from_record(t, firing, false)
        })
        .collect();
    Ok(axum::Json(SearchPage {
        timers,
        next_cursor,
    })
    .into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeadLetterQuery {
    channel: Option<String>,
}

/// One group of dead or failed timers: same channel, state and error.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = DeadLetterGroup)]
pub(crate) struct GroupJson {
    channel: String,
    state: &'static str,
    error: Option<String>,
    count: u64,
    first_due_at: String,
    last_due_at: String,
    /// Up to 5, newest first.
    timer_ids: Vec<i64>,
}

/// `GET /v1/dead-letters`'s answer.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = DeadLetters)]
pub(crate) struct DeadLettersJson {
    groups: Vec<GroupJson>,
    scanned: u64,
    truncated: bool,
}

/// `GET /v1/dead-letters?channel=` → `{groups, scanned, truncated}` over the
/// caller's newest 10,000 dead and failed timers.
pub async fn dead_letters(
    State(st): State<AppState>,
    Extension(caller): Extension<Caller>,
    q: Result<Query<DeadLetterQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let q = query(q)?;
    let channel = text(q.channel);
    let d = st
        .engine
        .store()
        .dead_letters(caller.tenant, channel.as_deref())
        .await?;
    let groups: Vec<GroupJson> = d
        .groups
        .into_iter()
        .map(|g| GroupJson {
            channel: g.channel,
            state: g.state.as_str(),
            error: g.error,
            count: g.count,
            first_due_at: format_rfc3339_ms(g.first_due_at),
            last_due_at: format_rfc3339_ms(g.last_due_at),
            timer_ids: g.timer_ids,
        })
        .collect();
    Ok(axum::Json(DeadLettersJson {
        groups,
        scanned: d.scanned,
        truncated: d.truncated,
    })
    .into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_bad_ones_name_the_field() {
        let c = DueCursor { due_at: -5, id: 42 };
        assert_eq!(decode_cursor(&encode_cursor(c)).unwrap(), c);
        for bad in ["", "x", "1.", ".2", "1.2.3"] {
            let e = decode_cursor(bad).err().unwrap();
            assert_eq!(e.body.field.as_deref(), Some("cursor"), "{bad}");
        }
    }
}
