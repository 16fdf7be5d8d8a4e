//! Changing a timer after it was created: `PATCH /v1/timers/{id}` (time,
//! message, priority of a pending timer), `POST /v1/timers/{id}:retry` (a
//! dead, failed or in-doubt one goes again) and `POST /v1/timers:retry`
//! (every dead or failed timer a filter matches, or every in-doubt one, in
//! chunks of one transaction each).

use std::borrow::Cow;

use axum::body::Body;
use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use herald_core::TimerState;
use herald_store::{RetryFilter, TimerPatch, WriteOp, WriteResult};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use utoipa::ToSchema;

use crate::access::Caller;
use crate::api::timers::TimerJson;
use crate::api::timers::search::{state_param, time_param};
use crate::http::body_limits::TIMER_CHANGE_MAX_BYTES;
use crate::http::error::ApiError;
use crate::http::fields::{check_priority, check_stored_object};
use crate::http::json_body;
use crate::http::request::{NoQuery, action as split_action, parse_id, read_body};
use crate::http::state::AppState;
use crate::http::tenancy::mine;
use crate::http::validate::due_time;

/// Timers a filtered retry replays per transaction.
pub const RETRY_CHUNK: usize = 500;

/// Most timers one filtered retry replays; more is `"more": true`.
pub const MAX_RETRY: i64 = 10_000;

fn not_pending(why: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::CONFLICT, "not_pending", why)
}

/// At least one field; `fire_at` or `delay_ms`, not both.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = TimerPatch)]
pub(crate) struct PatchBody<'a> {
    #[serde(default, borrow, deserialize_with = "json_body::opt_cow_str")]
    #[schema(value_type = Option<String>, format = DateTime)]
    fire_at: Option<Cow<'a, str>>,
    #[serde(default)]
    #[schema(minimum = 0, maximum = 315_576_000_000_i64)]
    delay_ms: Option<i64>,
    #[serde(default, borrow)]
    #[schema(value_type = Option<Object>)]
    message: Option<&'a RawValue>,
    #[serde(default)]
    #[schema(minimum = 0, maximum = 9)]
    priority: Option<i64>,
}

/// `PATCH /v1/timers/{id}`: any of `fire_at`/`delay_ms`, `message`,
/// `priority` of a pending timer, in one transaction. A timer being sent,
/// or finished, is a `409 not_pending`. A moved timer is wheeled at its new
/// time; its old wheel entry is dropped when it comes up (the fetcher
/// delivers only rows still due when the entry says).
pub async fn patch(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    Path(raw): Path<String>,
    body: Body,
) -> Result<Response, ApiError> {
    let id = parse_id(&raw, "timer")?;
    let bytes = read_body(body, st.api.max_timer_bytes.max(TIMER_CHANGE_MAX_BYTES)).await?;
    let req: PatchBody<'_> = json_body::object(&bytes)?;
    let now = st.clock.now_ms();
    let due_at = due_time(req.fire_at.as_deref(), req.delay_ms, now)?;
    if let Some(m) = req.message {
        check_stored_object("message", m)?;
    }
    let priority = req.priority.map(|p| check_priority(Some(p))).transpose()?;
    if due_at.is_none() && req.message.is_none() && priority.is_none() {
        return Err(ApiError::field(
            "fire_at",
            "missing_field",
            "give at least one of fire_at, delay_ms, message, priority",
        ));
    }
    mine(&caller, st.engine.get_timer(id).await?, "timer")?;
    if st.engine.is_firing(id) {
        return Err(not_pending("the timer is firing right now"));
    }
    let op = WriteOp::PatchTimer(TimerPatch {
        tenant: caller.tenant,
        id,
        due_at,
        message: req.message.map(|m| m.get().to_string()),
        priority,
        at: now,
    });
    match st.engine.submit(vec![op]).await?.pop() {
        Some(WriteResult::Updated { timer, .. }) => {
            Ok(axum::Json(TimerJson::from_record(timer, false, true)).into_response())
        }
        Some(WriteResult::WrongState(t)) => Err(not_pending(format!(
            "the timer is {}, not pending",
            t.state.as_str()
        ))),
        Some(WriteResult::NotFound) => Err(ApiError::not_found("timer")),
        _ => Err(ApiError::unavailable("unexpected write result")),
    }
}

/// `POST /v1/timers/{id}:retry`: a dead, failed or in-doubt timer is pending again,
/// due now, with a new series of attempts (the old ones stay in its send
/// log). Anything else is a `409 not_retryable`.
pub async fn action(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    Path(segment): Path<String>,
) -> Result<Response, ApiError> {
    let (raw_id, _retry) = split_action(&segment, "timers", "timer", &["retry"])?;
    let id = parse_id(raw_id, "timer")?;
    let at = st.clock.now_ms();
    let op = WriteOp::RetryTimer {
        tenant: caller.tenant,
        id,
        at,
    };
    match st.engine.submit(vec![op]).await?.pop() {
        Some(WriteResult::Retried(t)) => {
            Ok(axum::Json(TimerJson::from_record(t, false, true)).into_response())
        }
        Some(WriteResult::WrongState(t)) => Err(ApiError::new(
            StatusCode::CONFLICT,
            "not_retryable",
            format!(
                "the timer is {}: only dead, failed or in-doubt timers are retried",
                t.state.as_str()
            ),
        )),
        Some(WriteResult::NotFound) => Err(ApiError::not_found("timer")),
        _ => Err(ApiError::unavailable("unexpected write result")),
    }
}

/// The body of `POST /v1/timers:retry`: which dead or failed timers.
#[derive(Deserialize, Default, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = RetryFilter)]
pub(crate) struct RetryBody {
    /// Both when absent.
    #[serde(default)]
    #[schema(value_type = Option<RetryState>)]
    state: Option<String>,
    #[serde(default)]
    channel: Option<String>,
    /// A prefix of `last_error`.
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    #[schema(format = DateTime)]
    due_after: Option<String>,
    #[serde(default)]
    #[schema(format = DateTime)]
    due_before: Option<String>,
    /// Default 10000.
    #[serde(default)]
    #[schema(value_type = Option<u32>, minimum = 1, maximum = 10_000)]
    limit: Option<i64>,
}

// The handler reads the word with `state_param` against `RetryState::ALL`.
/// The states `state` of `POST /v1/timers:retry` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ToSchema)]
#[schema(rename_all = "snake_case")]
pub(crate) enum RetryState {
    Dead,
    Failed,
    /// Replays the in-doubt timers.
    InDoubt,
}

impl RetryState {
    /// Every state the handler takes, in the document's order.
    pub(crate) const ALL: [RetryState; 3] =
        [RetryState::Dead, RetryState::Failed, RetryState::InDoubt];

    /// The timer state the word names.
    pub(crate) fn timer_state(self) -> TimerState {
        match self {
            RetryState::Dead => TimerState::Dead,
            RetryState::Failed => TimerState::Failed,
            RetryState::InDoubt => TimerState::InDoubt,
        }
    }
}

/// `POST /v1/timers:retry`'s answer.
#[derive(Serialize, ToSchema)]
#[schema(as = Retried)]
pub(crate) struct RetriedJson {
    retried: u64,
    /// The limit stopped it: call again.
    more: bool,
}

/// `POST /v1/timers:retry` `{state?, channel?, error?, due_after?,
/// due_before?, limit?}` → `{retried, more}`: replays the caller's dead or
/// failed timers that match, oldest due first, `RETRY_CHUNK` per
/// transaction, at most `limit` (10,000 by default and at most). `more`: the
/// limit stopped it while others still match; call again.
pub async fn retry_matching(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    body: Body,
) -> Result<Response, ApiError> {
    let bytes = read_body(body, TIMER_CHANGE_MAX_BYTES).await?;
    let req: RetryBody = json_body::object_or_empty(&bytes)?;
    let state = req
        .state
        .as_deref()
        .map(|s| state_param("state", s, &RetryState::ALL.map(RetryState::timer_state)))
        .transpose()?;
    let limit = match req.limit {
        None => MAX_RETRY,
        Some(n) if (1..=MAX_RETRY).contains(&n) => n,
        Some(_) => {
            return Err(ApiError::field(
                "limit",
                "invalid_field",
                format!("limit must be 1..={MAX_RETRY}"),
            ));
        }
    } as usize;
    let filter = RetryFilter {
        state,
        channel: req.channel.filter(|c| !c.is_empty()),
        error: req.error.filter(|e| !e.is_empty()),
        due_after: time_param("due_after", &req.due_after)?,
        due_before: time_param("due_before", &req.due_before)?,
    };
    let mut retried = 0usize;
    let mut more = true;
    while more && retried < limit {
        let op = WriteOp::RetryTimers {
            tenant: caller.tenant,
            filter: filter.clone(),
            at: st.clock.now_ms(),
            limit: RETRY_CHUNK.min(limit - retried),
        };
        match st.engine.submit(vec![op]).await?.pop() {
            Some(WriteResult::RetriedMany { timers, more: left }) => {
                retried += timers.len();
                more = left;
                if timers.is_empty() {
                    break;
                }
            }
            _ => return Err(ApiError::unavailable("unexpected write result")),
        }
    }
    tracing::info!(tenant = %caller.tenant, retried, more, "retried dead and failed timers");
    let retried = retried as u64;
    Ok(axum::Json(RetriedJson { retried, more }).into_response())
}
