//! `/v1/timers`: create (single and bulk NDJSON), read, cancel, send log.
//!
//! Changes to a timer after it was made are in [`changes`]; the searches
//! (`GET /v1/timers`, `GET /v1/dead-letters`) in [`search`].

pub mod changes;
pub(crate) mod docs;
pub mod search;

use axum::body::Body;
use axum::extract::{Extension, Path, State};
use std::sync::Arc;

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use herald_core::time::format_rfc3339_ms;
use herald_core::{TimerId, TimerState};
use herald_engine::TimerView;
use herald_store::{DeliveryRecord, NewTimer, TimerRecord, WriteOp, WriteResult};
use serde::Serialize;
use serde_json::value::RawValue;

use crate::access::Caller;
use crate::http::budget::BodyBudget;
use crate::http::bulk::{self, BulkRoute, LineResult};
use crate::http::error::ApiError;
use crate::http::request::{NoQuery, parse_id, read_body};
use crate::http::route_steps::StepJson;
use crate::http::state::AppState;
use crate::http::tenancy::mine;
use crate::http::trace;
use crate::http::validate::{self, Context, OnConflict};

/// A timer as the API shows it.
#[derive(Serialize, utoipa::ToSchema)]
pub struct TimerJson {
    pub id: TimerId,
    pub kind: &'static str,
    pub state: &'static str,
    pub due_at: String,
    pub channel: String,
    pub recipient: String,
    pub priority: u8,
    pub attempts: u32,
    pub last_error: Option<String>,
    pub delivered_at: Option<String>,
    pub idempotency_key: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub message: Option<Box<RawValue>>,
    /// The W3C trace context the timer was created under, when there was one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    /// For a timer addressed to a subscriber: the user and the address type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<ToJson>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub critical: bool,
    /// The key counted against the tenant's `[[rate_limits]]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_key: Option<String>,
    /// The digest it goes out in; its `due_at` is then the digest's close.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub digest: Option<DigestJson>,
    /// The template the message is rendered from when the timer fires; its
    /// `message` is then the template's data.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template: Option<herald_core::template::TemplateRef>,
    /// Its fallback route, each step's channel resolved; `channel` and `to`
    /// are those of the step it is at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub route: Option<Vec<StepJson>>,
    /// The step of its route it is at (0 for the first).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
}

/// `digest` of a timer: the spec it was created with, and when the digest it
/// joined opened.
#[derive(Serialize, utoipa::ToSchema)]
pub struct DigestJson {
    pub key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window_ms: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_delay_ms: Option<i64>,
    /// `HH:MM` in the subscriber's time zone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at_local: Option<String>,
    /// RFC 3339: the requested due time of the digest's first timer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
}

impl From<herald_core::digest::Digest> for DigestJson {
    fn from(d: herald_core::digest::Digest) -> Self {
        Self {
            key: d.key,
            window_ms: d.window_ms,
            max_delay_ms: d.max_delay_ms,
            at_local: d.at_local,
            since: d.since.map(format_rfc3339_ms),
        }
    }
}

/// `to` of a timer addressed to a subscriber.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ToJson {
    pub user_id: String,
    pub channel_type: &'static str,
}

impl TimerJson {
    pub fn from_record(r: TimerRecord, firing: bool, with_message: bool) -> Self {
        let state = if firing && r.state == TimerState::Pending {
            TimerState::Firing
        } else {
            r.state
        };
        let routing = herald_core::timer::Routing::parse(r.routing.as_deref());
        Self {
            to: routing.to.map(|t| ToJson {
                user_id: r.recipient.clone(),
                channel_type: t.as_str(),
            }),
            topic: routing.topic,
            critical: routing.critical,
            rate_key: routing.rate_key,
            digest: routing.digest.map(DigestJson::from),
            template: routing.template,
            step: (!routing.route.is_empty()).then_some(routing.step),
            route: (!routing.route.is_empty()).then(|| StepJson::all(&routing.route)),
            id: r.id,
            kind: r.kind.as_str(),
            state: state.as_str(),
            due_at: format_rfc3339_ms(r.due_at),
            channel: r.channel,
            recipient: r.recipient,
            priority: r.priority,
            attempts: r.attempts,
            last_error: r.last_error,
            delivered_at: r.delivered_at.map(format_rfc3339_ms),
            idempotency_key: r.idempotency_key,
            created_at: format_rfc3339_ms(r.created_at),
            updated_at: format_rfc3339_ms(r.updated_at),
            message: if with_message {
                RawValue::from_string(r.message).ok()
            } else {
                None
            },
            traceparent: r.traceparent,
        }
    }

    fn from_view(v: TimerView) -> Self {
        Self::from_record(v.record, v.firing, true)
    }
}

fn context<'a>(
    st: &'a AppState,
    caller: &Caller,
    has: &'a (dyn Fn(&str) -> bool + Sync),
    names: &'a (dyn Fn() -> Vec<String> + Sync),
) -> Context<'a> {
    Context {
        tenant: caller.tenant,
        now_ms: st.clock.now_ms(),
        shards: st.engine.shards(),
        has_channel: has,
        channel_names: names,
        channel_type: Box::new(move |c: &str| {
            st.engine
                .channel_kind(c)
                .and_then(herald_channels::ChannelKind::channel_type)
        }),
        channel_kind: Box::new(move |c: &str| st.engine.channel_kind(c)),
        templates: st.engine.templates().library(),
        channel_for_type: {
            let tenant = caller.tenant;
            Box::new(move |t| st.channel_for_type(tenant, t))
        },
        default_route: st.default_routes.of(caller.tenant),
    }
}

pub async fn create(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let span = trace::request_span!("/v1/timers");
    let traceparent = herald_engine::trace::adopt(&span, trace::incoming(&headers));
    let answer = create_timer(&st, &caller, traceparent, body, &span).await;
    trace::record_answer(&span, &answer);
    answer
}

/// `POST /v1/timers` under its request span: the trace context to store
/// with the timer is already decided.
async fn create_timer(
    st: &AppState,
    caller: &Caller,
    traceparent: Option<String>,
    body: Body,
    span: &tracing::Span,
) -> Result<Response, ApiError> {
    let bytes = read_body(body, st.api.max_timer_bytes).await?;
    let has = |c: &str| st.serves_channel(caller.tenant, c);
    let names = || st.channel_names_for(caller.tenant);
    let (mut timer, on_conflict) =
        validate::new_timer_and_conflict(&bytes, &context(st, caller, &has, &names))?;
    timer.traceparent = traceparent;
    if !span.is_disabled() {
        span.record("herald.channel", timer.channel.as_str());
    }
    if let Err(over) = st.quotas.admit(caller.tenant, 1) {
        return Ok(over.into_response());
    }
    let give_back = || st.quotas.give_back(caller.tenant, 1);
    let written = st.engine.submit(vec![insert_op(timer, on_conflict)]).await;
    let mut results = written.inspect_err(|_| give_back())?;
    if let Some(
        WriteResult::Created(t)
        | WriteResult::DigestCreated { timer: t, .. }
        | WriteResult::Updated { timer: t, .. }
        | WriteResult::Existing(t),
    ) = results.last()
    {
        span.record("herald.timer.id", t.id);
    }
    match results.pop() {
        Some(WriteResult::Created(t) | WriteResult::DigestCreated { timer: t, .. }) => Ok((
            StatusCode::CREATED,
            axum::Json(TimerJson::from_record(t, false, false)),
        )
            .into_response()),
        Some(WriteResult::Updated { timer, .. }) => {
            give_back();
            Ok((
                StatusCode::OK,
                axum::Json(TimerJson::from_record(timer, false, false)),
            )
                .into_response())
        }
        Some(WriteResult::Existing(t)) => {
            give_back();
            let firing = st.engine.is_firing(t.id);
            Ok((
                StatusCode::OK,
                axum::Json(TimerJson::from_record(t, firing, false)),
            )
                .into_response())
        }
        _ => {
            give_back();
            Err(ApiError::unavailable("unexpected write result"))
        }
    }
}

/// The write of a new timer: insert (placed in its digest when it has one),
/// or with `"on_conflict": "replace"` insert or update the pending timer
/// holding its key.
fn insert_op(timer: NewTimer, on_conflict: OnConflict) -> WriteOp {
    let digested = || {
        herald_core::timer::Routing::parse(timer.routing.as_deref())
            .digest
            .is_some()
    };
    match on_conflict {
        OnConflict::Return if digested() => WriteOp::InsertDigest(timer),
        OnConflict::Return => WriteOp::InsertTimer(timer),
        OnConflict::Replace => WriteOp::ReplaceTimer(timer),
    }
}

/// One answer line of the bulk endpoint.
#[derive(Serialize)]
struct BulkLine<'a> {
    #[serde(flatten)]
    result: LineResult<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<TimerId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    due_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    state: Option<&'static str>,
}

/// The lines of `POST /v1/timers:bulk`.
struct TimerLines<'a> {
    cx: Context<'a>,
    /// The request's `traceparent`, given to every line's timer.
    traceparent: Option<String>,
}

impl BulkRoute for TimerLines<'_> {
    type Item = (NewTimer, OnConflict);

    fn parse(&self, line: &[u8]) -> Result<(NewTimer, OnConflict), ApiError> {
        let (mut timer, on_conflict) = validate::new_timer_and_conflict(line, &self.cx)?;
        timer.traceparent = self.traceparent.clone();
        Ok((timer, on_conflict))
    }

    fn op(&self, (timer, on_conflict): (NewTimer, OnConflict)) -> WriteOp {
        insert_op(timer, on_conflict)
    }

    fn answer(&self, line: usize, result: WriteResult, out: &mut Vec<u8>) -> bool {
        let (status, t) = match result {
            WriteResult::Created(t) | WriteResult::DigestCreated { timer: t, .. } => (201, t),
            WriteResult::Existing(t) | WriteResult::Updated { timer: t, .. } => (200, t),
            _ => {
                let e = ApiError::unavailable("unexpected write result");
                let answer = BulkLine {
                    result: LineResult::refused(line, &e),
                    id: None,
                    due_at: None,
                    state: None,
                };
                serde_json::to_writer(out, &answer).ok();
                return false;
            }
        };
        let answer = BulkLine {
            result: LineResult::ok(line, status),
            id: Some(t.id),
            due_at: Some(format_rfc3339_ms(t.due_at)),
            state: Some(t.state.as_str()),
        };
        serde_json::to_writer(out, &answer).ok();
        status == 201
    }
}

/// `POST /v1/timers:bulk`: NDJSON in, one NDJSON answer per non-blank line out,
/// in order. Lines are read as the body streams in; valid lines are committed
/// in chunks of `bulk_chunk` (or fewer, if they are large), one transaction
/// each; invalid lines are answered with their error and write nothing. See
/// [`crate::http::bulk`] for the limits and the budget.
pub async fn create_bulk(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    Extension(budget): Extension<Arc<BodyBudget>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let span = trace::request_span!("/v1/timers:bulk");
    let has = |c: &str| st.serves_channel(caller.tenant, c);
    let names = || st.channel_names_for(caller.tenant);
    let route = TimerLines {
        cx: context(&st, &caller, &has, &names),
        traceparent: herald_engine::trace::adopt(&span, trace::incoming(&headers)),
    };
    let answer = bulk::serve(&route, &st, caller.tenant, &budget, &headers, body).await;
    trace::record_status(&span, answer.status());
    answer
}

pub async fn get(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    Path(raw): Path<String>,
) -> Result<Response, ApiError> {
    let id = parse_id(&raw, "timer")?;
    let v = mine(&caller, st.engine.get_timer(id).await?, "timer")?;
    Ok(axum::Json(TimerJson::from_view(v)).into_response())
}

/// Cancels a pending timer. One that is being delivered, or already finished,
/// is a 409: it can no longer be stopped.
pub async fn cancel(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    Path(raw): Path<String>,
) -> Result<Response, ApiError> {
    let id = parse_id(&raw, "timer")?;
    // Whether another tenant's timer is firing is none of the caller's
    // business: check the owner first (a timer never changes tenant).
    mine(&caller, st.engine.get_timer(id).await?, "timer")?;
    if st.engine.is_firing(id) {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "not_cancellable",
            "the timer is firing right now",
        ));
    }
    let at = st.clock.now_ms();
    let mut results = st
        .engine
        .submit(vec![WriteOp::CancelTimer {
            tenant: caller.tenant,
            id,
            at,
        }])
        .await?;
    match results.pop() {
        Some(WriteResult::Cancelled(t)) => {
            Ok(axum::Json(TimerJson::from_record(t, false, false)).into_response())
        }
        Some(WriteResult::NotCancellable(t)) => Err(ApiError::new(
            StatusCode::CONFLICT,
            "not_cancellable",
            format!("the timer is {}, not pending", t.state.as_str()),
        )),
        Some(WriteResult::NotFound) => Err(ApiError::not_found("timer")),
        _ => Err(ApiError::unavailable("unexpected write result")),
    }
}

#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct DeliveryJson {
    id: i64,
    timer_id: TimerId,
    attempt: u32,
    channel: String,
    outcome: String,
    idempotency_key: String,
    provider_msgid: Option<String>,
    status: Option<i64>,
    error: Option<String>,
    started_at: String,
    finished_at: String,
    /// What the provider reported later (a callback, or `recalled`).
    #[serde(skip_serializing_if = "Option::is_none")]
    final_status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    final_at: Option<String>,
    /// The step of the timer's fallback route this attempt was.
    #[serde(skip_serializing_if = "Option::is_none")]
    step: Option<u32>,
}

impl From<DeliveryRecord> for DeliveryJson {
    fn from(d: DeliveryRecord) -> Self {
        Self {
            id: d.id,
            timer_id: d.timer_id,
            attempt: d.attempt,
            channel: d.channel,
            outcome: d.outcome,
            idempotency_key: d.idempotency_key,
            provider_msgid: d.provider_msgid,
            status: d.status,
            error: d.error,
            started_at: format_rfc3339_ms(d.started_at),
            finished_at: format_rfc3339_ms(d.finished_at),
            final_status: d.final_status,
            final_at: d.final_at.map(format_rfc3339_ms),
            step: d.step,
        }
    }
}

/// `GET /v1/timers/{id}/deliveries`'s answer.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = DeliveryList)]
pub(crate) struct DeliveryList {
    deliveries: Vec<DeliveryJson>,
}

/// The send log of one timer, oldest attempt first.
pub async fn deliveries(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    Path(raw): Path<String>,
) -> Result<Response, ApiError> {
    let id = parse_id(&raw, "timer")?;
    let store = st.engine.store();
    mine(&caller, store.get_timer(id).await?, "timer")?;
    let rows = store.deliveries_for(id).await?;
    let deliveries = rows.into_iter().map(Into::into).collect();
    Ok(axum::Json(DeliveryList { deliveries }).into_response())
}
