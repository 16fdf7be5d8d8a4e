//! Subjects and reminder subscriptions: `/v1/subjects`, `/v1/reminders`,
//! `/v1/users/{user_id}/reminders`.
//!
//! A subscription is one bit of the (user, subject) bitmap (see
//! `herald_core::reminder`) plus one timer of kind `reminder`, due
//! `lead_minutes` before the subject starts. Reminder timers are sharded by
//! user so that a user's reminders meet on one node, where they can be merged.
//!
//! Subject ids and user ids are the caller's tenant's: every read and write
//! here names the tenant, and another tenant's subject is simply not there.
//!
//! The subject listings and counts are in [`subjects`]; the lead list a store
//! was first served with, checked at start-up, in [`leads`].

pub(crate) mod docs;
pub mod leads;
mod subject_templates;
pub(crate) mod subjects;

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Extension, Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use herald_core::reminder::{self, ChannelType, Slot};
use herald_core::time::{format_rfc3339_ms, parse_rfc3339_ms};
use herald_core::{TenantId, TimerKind};
use herald_store::{
    NewReminder, NewTimer, PutSubject, ReminderTimer, SubjectRecord, WriteOp, WriteResult,
};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::access::Caller;
use crate::config::type_names;
use crate::http::budget::BodyBudget;
use crate::http::bulk::{self, BulkRoute, LineResult};
use crate::http::error::ApiError;
use crate::http::fields::{check_id, check_priority, check_stored_object, unknown_channel};
use crate::http::json_body;
use crate::http::request::{NoQuery, query, read_body};
use crate::http::route_steps::{self, RouteStep};
use crate::http::state::AppState;
use crate::http::tenancy::shard_of;
use crate::http::text::{Text, check_opt_text, check_text};
use crate::http::validate::MAX_AHEAD_MS;

/// Largest `title`.
pub const MAX_TITLE_BYTES: usize = 1024;
/// Most reminders `GET /v1/users/{id}/reminders` lists.
pub const MAX_LISTED: usize = 10_000;

fn unexpected() -> ApiError {
    ApiError::unavailable("unexpected write result")
}

// ---- Subjects ----

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[derive(utoipa::ToSchema)]
pub(crate) struct SubjectBody<'a> {
    start_at: String,
    #[serde(default)]
    title: Option<String>,
    #[serde(default, borrow)]
    #[schema(value_type = Option<Object>)]
    data: Option<&'a RawValue>,
    /// How far before their due time this subject's reminders may start
    /// when a burst cannot be sent in time at the channel's rate, 0 to
    /// 3,600,000 ms; absent or `null` takes `[reminders] early_window_ms`.
    #[serde(default)]
    #[schema(minimum = 0, maximum = 3_600_000)]
    early_window_ms: Option<i64>,
    /// Send its reminders even after it started; by default one still
    /// unsent at the start ends `expired`.
    #[serde(default)]
    send_late: Option<bool>,
    /// Its own reminder templates, by channel type (`app`, `email`, `sms`,
    /// `wechat`, `wecom`): a reminder of the type is rendered from this
    /// template, not the type's `[reminders.templates]`. Each must be
    /// stored, have the part the type's reminders are sent as in its
    /// default variant, and read only what a reminder has (else `422`
    /// naming `templates.TYPE`). Absent, `null` or `{}`: none.
    #[serde(default)]
    #[schema(value_type = Option<std::collections::HashMap<String, herald_core::template::TemplateRef>>)]
    templates: Option<Value>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct SubjectJson {
    subject_id: String,
    start_at: String,
    title: Option<String>,
    #[schema(value_type = Option<Object>)]
    data: Option<Box<RawValue>>,
    /// Its own early window (ms), `null` when it takes the configured one.
    early_window_ms: Option<i64>,
    /// Its reminders go out even after it started (never `expired`).
    send_late: bool,
    /// Its own reminder templates by channel type, `null` when it has none
    /// (its reminders take `[reminders.templates]`).
    #[schema(value_type = Option<std::collections::HashMap<String, herald_core::template::TemplateRef>>)]
    templates: Option<Box<RawValue>>,
    created_at: String,
    updated_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    moved_reminders: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cancelled_reminders: Option<usize>,
}

impl SubjectJson {
    pub(crate) fn new(s: SubjectRecord) -> Self {
        Self {
            subject_id: s.subject_id,
            start_at: format_rfc3339_ms(s.start_at),
            title: s.title,
            data: s.data.and_then(|d| RawValue::from_string(d).ok()),
            early_window_ms: s.timing.early_window_ms,
            send_late: s.timing.send_late,
            templates: s.templates.and_then(|t| RawValue::from_string(t).ok()),
            created_at: format_rfc3339_ms(s.created_at),
            updated_at: format_rfc3339_ms(s.updated_at),
            moved_reminders: None,
            cancelled_reminders: None,
        }
    }
}

/// `PUT /v1/subjects/{subject_id}`: creates (`201`) or updates (`200`). A new
/// `start_at` moves every pending reminder of the subject in the same
/// transaction; a reminder whose new time has passed fires at once.
pub async fn put_subject(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    Path(subject_id): Path<String>,
    body: Body,
) -> Result<Response, ApiError> {
    check_id("subject_id", &subject_id)?;
    let bytes = read_body(body, st.api.max_timer_bytes).await?;
    let req: SubjectBody<'_> = json_body::object(&bytes)?;
    let now = st.clock.now_ms();
    let start_at = parse_rfc3339_ms(&req.start_at).map_err(|e| {
        ApiError::field(
            "start_at",
            "invalid_field",
            format!("start_at {:?} is not an RFC 3339 time: {e}", req.start_at),
        )
    })?;
    if start_at > now.saturating_add(MAX_AHEAD_MS) {
        return Err(ApiError::field(
            "start_at",
            "invalid_field",
            "start_at is more than 10 years ahead",
        ));
    }
    check_opt_text("title", req.title.as_deref(), Text::Free)?;
    if let Some(w) = req.early_window_ms
        && !(0..=herald_core::early::MAX_EARLY_WINDOW_MS).contains(&w)
    {
        return Err(ApiError::field(
            "early_window_ms",
            "invalid_field",
            format!(
                "early_window_ms must be 0 to {} (an hour), got {w}",
                herald_core::early::MAX_EARLY_WINDOW_MS
            ),
        ));
    }
    if let Some(t) = &req.title
        && t.len() > MAX_TITLE_BYTES
    {
        return Err(ApiError::field(
            "title",
            "invalid_field",
            format!("title must be at most {MAX_TITLE_BYTES} bytes"),
        ));
    }
    let data = match req.data {
        None => None,
        Some(d) if d.get().trim() == "null" => None,
        Some(d) => {
            check_stored_object("data", d)?;
            Some(d.get().to_string())
        }
    };
    let templates = subject_templates::checked(req.templates.as_ref(), &st, caller.tenant)?;
    let op = WriteOp::PutSubject(PutSubject {
        tenant: caller.tenant,
        subject_id,
        start_at,
        title: req.title,
        data,
        timing: herald_store::SubjectTiming {
            early_window_ms: req.early_window_ms,
            send_late: req.send_late.unwrap_or(false),
        },
        templates,
        at: now,
    });
    match st.engine.submit(vec![op]).await?.pop() {
        Some(WriteResult::SubjectPut {
            subject,
            created,
            moved,
        }) => {
            let mut body = SubjectJson::new(subject);
            body.moved_reminders = Some(moved.len());
            let status = if created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            Ok((status, axum::Json(body)).into_response())
        }
        _ => Err(unexpected()),
    }
}

/// `DELETE /v1/subjects/{subject_id}`: cancels the subject's pending
/// reminders and removes its subscriptions.
pub async fn delete_subject(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    Path(subject_id): Path<String>,
) -> Result<Response, ApiError> {
    check_id("subject_id", &subject_id)?;
    let at = st.clock.now_ms();
    let op = WriteOp::DeleteSubject {
        tenant: caller.tenant,
        subject_id,
        at,
    };
    match st.engine.submit(vec![op]).await?.pop() {
        Some(WriteResult::SubjectDeleted { subject, cancelled }) => {
            let mut body = SubjectJson::new(subject);
            body.cancelled_reminders = Some(cancelled.len());
            Ok(axum::Json(body).into_response())
        }
        Some(WriteResult::NotFound) => Err(ApiError::not_found("subject")),
        _ => Err(unexpected()),
    }
}

// ---- Reminders ----

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[derive(utoipa::ToSchema)]
pub(crate) struct ReminderBody {
    user_id: String,
    subject_id: String,
    channel_type: String,
    lead_minutes: i64,
    #[serde(default)]
    channel: Option<String>,
    /// Send this reminder even after its subject started; by default one
    /// still unsent at the start ends `expired`.
    #[serde(default)]
    send_late: Option<bool>,
    /// A fallback route: its first step is this reminder's own channel and
    /// type; a later step is sent when the step before ends in an outcome
    /// the later one lists in `on`.
    #[serde(default)]
    route: Option<Vec<RouteStep>>,
    /// 0 to 9, default 5: higher goes first among the sends due on the
    /// channel, timers' and campaigns' alike.
    #[serde(default)]
    priority: Option<i64>,
    /// A mini-program's "remind me" (`channel_type` `wechat_mini`): the
    /// subscribe grant the user's tap gave, recorded in the same
    /// transaction as the reminder (and kept even if the reminder is
    /// refused, since the provider granted it).
    #[serde(default)]
    grant: Option<crate::api::subscribers::grants::ReminderGrant>,
}

/// Reads and checks one reminder request of `tenant`; `Ok` is ready to submit.
fn new_reminder(
    body: &[u8],
    st: &AppState,
    tenant: TenantId,
    now: i64,
) -> Result<NewReminder, ApiError> {
    let req: ReminderBody = json_body::object(body)?;
    check_id("user_id", &req.user_id)?;
    check_id("subject_id", &req.subject_id)?;
    let channel_type = ChannelType::parse(&req.channel_type).ok_or_else(|| {
        ApiError::field(
            "channel_type",
            "invalid_field",
            format!(
                "channel_type {:?} is not one of {}",
                req.channel_type,
                type_names()
            ),
        )
    })?;
    let priority = check_priority(req.priority)?;
    let slot = Slot::with_leads(channel_type, req.lead_minutes, &st.reminders.leads())
        .map_err(|e| ApiError::field("lead_minutes", "invalid_field", e.to_string()))?;
    let channel = route(st, tenant, channel_type, req.channel)?;
    let routing = match req.route.as_deref() {
        Some(steps) => Some(fallback_route(st, tenant, steps, &channel, channel_type)?),
        None => None,
    };
    let mut message = json!({
        "user_id": req.user_id,
        "subject_id": req.subject_id,
        "channel_type": channel_type.as_str(),
        "lead_minutes": slot.lead_minutes(),
    });
    // Stored with the subscription: the engine reads it when it comes to
    // send (only when set, so other messages stay as they were).
    if req.send_late == Some(true) {
        message["send_late"] = json!(true);
    }
    let message = message.to_string();
    let grant = match req.grant {
        None => None,
        Some(g) if channel_type == ChannelType::WechatMini => {
            Some(crate::api::subscribers::grants::recording(
                st,
                tenant,
                &req.user_id,
                (&channel, "channel"),
                &g.key,
                vec![(g.template_id, g.count, g.long_term)],
                "grant",
            )?)
        }
        Some(_) => {
            return Err(ApiError::field(
                "grant",
                "invalid_field",
                "only a wechat_mini reminder takes a grant",
            ));
        }
    };
    Ok(NewReminder {
        timer: NewTimer {
            tenant,
            // One user's reminders share a shard: they can then be merged.
            shard: shard_of(tenant, &req.user_id, st.engine.shards()),
            due_at: 0,
            priority,
            kind: TimerKind::Reminder,
            channel,
            recipient: req.user_id.clone(),
            message,
            idempotency_key: None,
            created_at: now,
            traceparent: None,
            routing,
        },
        user_id: req.user_id,
        subject_id: req.subject_id,
        bit: slot.bit(),
        lead_ms: slot.lead_ms(),
        not_before: now,
        grant,
    })
}

/// The channel a reminder goes through: its own, the type's configured one,
/// or the channel named like the type.
fn route(
    st: &AppState,
    tenant: TenantId,
    t: ChannelType,
    own: Option<String>,
) -> Result<String, ApiError> {
    let (name, field) = match own {
        Some(c) => {
            check_text("channel", &c, Text::Id)?;
            (c, "channel")
        }
        None => match st.channel_for_type(tenant, t) {
            Some(c) => (c, "channel_type"),
            None => {
                return Err(ApiError::field(
                    "channel_type",
                    "unrouted_channel_type",
                    format!(
                        "no channel is configured for channel_type {t}: set \
                         [reminders.channels].{t} or [reminders].default_channel, configure a \
                         channel named {t:?}, or give `channel`"
                    ),
                ));
            }
        },
    };
    if !st.serves_channel(tenant, &name) {
        return Err(unknown_channel(field, &name, &st.channel_names_for(tenant)));
    }
    if let Some(kind) = st.engine.channel_kind(&name) {
        // The common routes (a webhook or the log, no template) need no
        // lookup; the shape is read only for a channel that needs one.
        let templated = st.reminders.templates.contains_key(t.as_str());
        if templated
            || !matches!(
                kind,
                herald_channels::ChannelKind::Webhook | herald_channels::ChannelKind::Log
            )
        {
            let lib = st.engine.templates().library();
            let shape = st.engine.channel_reminder_shape(&name);
            crate::reminder_routes::check(
                t,
                &name,
                kind,
                shape.as_ref(),
                &st.reminders,
                Some((&lib, tenant)),
            )
            .map_err(|p| ApiError::field(field, "unsendable_route", p.message().to_string()))?;
        }
    }
    Ok(name)
}

/// A reminder's `route`, checked and resolved, as its stored routing: its
/// first step is the reminder's own `channel` and type, and every later
/// step's channel must be able to send a reminder of the step's type (the
/// checks of [`route`], naming `route[i].channel`).
fn fallback_route(
    st: &AppState,
    tenant: TenantId,
    steps: &[RouteStep],
    channel: &str,
    channel_type: ChannelType,
) -> Result<String, ApiError> {
    route_steps::no_step_content(steps)?;
    let resolved = route_steps::for_tenant(st, tenant, |channels| {
        route_steps::resolve(
            "route",
            steps,
            (Some(channel), Some(channel_type)),
            channels,
        )
    })?;
    for (i, s) in resolved.iter().enumerate().skip(1) {
        route(st, tenant, s.channel_type, Some(s.channel.clone())).map_err(|mut e| {
            e.body.field = Some(format!("route[{i}].channel"));
            e
        })?;
    }
    let routing = herald_core::timer::Routing {
        to: Some(channel_type),
        route: resolved,
        ..Default::default()
    };
    routing
        .stored()
        .ok_or_else(|| ApiError::unavailable("the route could not be stored"))
}

/// What a write result means for one reminder request made at `now`.
fn added(result: Option<WriteResult>, now: i64) -> Result<ReminderJson, ApiError> {
    match result {
        Some(WriteResult::Created(t)) => Ok(ReminderJson::from_timer(&t)),
        Some(WriteResult::ReminderExists { .. }) => Err(ApiError::new(
            StatusCode::CONFLICT,
            "reminder_exists",
            "this user already has this reminder (same subject, channel_type and lead_minutes)",
        )),
        Some(WriteResult::SubjectNotFound) => {
            let mut e = ApiError::new(
                StatusCode::NOT_FOUND,
                "subject_not_found",
                "no such subject: create it with PUT /v1/subjects/{subject_id} first",
            );
            e.body.field = Some("subject_id".into());
            Err(e)
        }
        // No lead helps once the subject itself has started.
        Some(WriteResult::TooLate { start_at, .. }) if start_at <= now => {
            let mut e = ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "fire_time_passed",
                format!(
                    "the subject already started at {}: a reminder of it can no longer be sent",
                    format_rfc3339_ms(start_at)
                ),
            );
            e.body.field = Some("subject_id".into());
            Err(e)
        }
        Some(WriteResult::TooLate { fire_at, .. }) => {
            let mut e = ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "fire_time_passed",
                format!(
                    "this reminder would fire at {}, which has already passed: choose a \
                     shorter lead_minutes",
                    format_rfc3339_ms(fire_at)
                ),
            );
            e.body.field = Some("lead_minutes".into());
            Err(e)
        }
        _ => Err(unexpected()),
    }
}

/// One reminder as the API shows it.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ReminderJson {
    #[schema(value_type = String)]
    user_id: Value,
    #[schema(value_type = String)]
    subject_id: Value,
    #[schema(value_type = String)]
    channel_type: Value,
    #[schema(value_type = i64)]
    lead_minutes: Value,
    timer_id: i64,
    fire_at: String,
    channel: String,
    state: &'static str,
    /// Sent even after its subject started (never `expired`).
    send_late: bool,
    /// 0 to 9: higher goes first on the channel.
    priority: u8,
}

impl ReminderJson {
    fn from_timer(t: &herald_store::TimerRecord) -> Self {
        let m: Value = serde_json::from_str(&t.message).unwrap_or(Value::Null);
        Self {
            user_id: m["user_id"].clone(),
            subject_id: m["subject_id"].clone(),
            channel_type: m["channel_type"].clone(),
            lead_minutes: m["lead_minutes"].clone(),
            timer_id: t.id,
            fire_at: format_rfc3339_ms(t.due_at),
            channel: t.channel.clone(),
            state: t.state.as_str(),
            send_late: m["send_late"].as_bool().unwrap_or(false),
            priority: t.priority,
        }
    }
}

/// `POST /v1/reminders`: `201`, `409` when the bit is set, `404` without the
/// subject, `422` when the fire time has passed.
pub async fn create(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    body: Body,
) -> Result<Response, ApiError> {
    let bytes = read_body(body, st.api.max_timer_bytes).await?;
    let now = st.clock.now_ms();
    let r = new_reminder(&bytes, &st, caller.tenant, now)?;
    // A reminder is a timer: it counts against the tenant's quota.
    if let Err(over) = st.quotas.admit(caller.tenant, 1) {
        return Ok(over.into_response());
    }
    let give_back = |_: &ApiError| st.quotas.give_back(caller.tenant, 1);
    let written = st.engine.submit(vec![WriteOp::AddReminder(r)]).await;
    let mut written = written.map_err(ApiError::from).inspect_err(give_back)?;
    let json = added(written.pop(), now).inspect_err(give_back)?;
    Ok((StatusCode::CREATED, axum::Json(json)).into_response())
}

#[derive(Serialize)]
struct BulkLine<'a> {
    #[serde(flatten)]
    result: LineResult<'a>,
    #[serde(flatten)]
    reminder: Option<&'a ReminderJson>,
}

/// The lines of `POST /v1/reminders:bulk`.
struct ReminderLines<'a> {
    st: &'a AppState,
    tenant: TenantId,
    now: i64,
}

impl BulkRoute for ReminderLines<'_> {
    type Item = NewReminder;

    fn parse(&self, line: &[u8]) -> Result<NewReminder, ApiError> {
        new_reminder(line, self.st, self.tenant, self.now)
    }

    fn op(&self, reminder: NewReminder) -> WriteOp {
        WriteOp::AddReminder(reminder)
    }

    fn answer(&self, line: usize, result: WriteResult, out: &mut Vec<u8>) -> bool {
        let r = added(Some(result), self.now);
        let answer = match &r {
            Ok(j) => BulkLine {
                result: LineResult::ok(line, 201),
                reminder: Some(j),
            },
            Err(e) => BulkLine {
                result: LineResult::refused(line, e),
                reminder: None,
            },
        };
        serde_json::to_writer(out, &answer).ok();
        r.is_ok()
    }
}

/// `POST /v1/reminders:bulk`: NDJSON in, one answer per non-blank line, in
/// order. Lines are read as the body streams in; the valid ones commit in one
/// transaction per chunk of `bulk_chunk` (or fewer, if they are large); a
/// line that conflicts (`409`) or fails its check writes nothing and does not
/// hold the others back. See [`crate::http::bulk`] for the limits and the budget.
pub async fn create_bulk(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    Extension(budget): Extension<Arc<BodyBudget>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let route = ReminderLines {
        st: &st,
        tenant: caller.tenant,
        now: st.clock.now_ms(),
    };
    bulk::serve(&route, &st, caller.tenant, &budget, &headers, body).await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CancelQuery {
    #[serde(default)]
    channel_type: Option<String>,
    #[serde(default)]
    lead_minutes: Option<String>,
}

/// `DELETE /v1/reminders/{user_id}/{subject_id}[?channel_type=&lead_minutes=]`:
/// clears one bit, every lead of a type, one lead on every type, or all.
pub async fn cancel(
    State(st): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path((user_id, subject_id)): Path<(String, String)>,
    q: Result<Query<CancelQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let q = query(q)?;
    check_id("user_id", &user_id)?;
    check_id("subject_id", &subject_id)?;
    let t = match &q.channel_type {
        None => None,
        Some(s) => Some(ChannelType::parse(s).ok_or_else(|| {
            ApiError::field(
                "channel_type",
                "invalid_field",
                format!("channel_type {s:?} is not one of {}", type_names()),
            )
        })?),
    };
    let lead = match &q.lead_minutes {
        None => None,
        Some(s) => Some(s.parse::<i64>().map_err(|_| {
            ApiError::field(
                "lead_minutes",
                "invalid_field",
                format!("lead_minutes {s:?} is not a number"),
            )
        })?),
    };
    let leads = st.reminders.leads();
    let mask = reminder::cancel_mask_with(t, lead, &leads)
        .map_err(|e| ApiError::field("lead_minutes", "invalid_field", e.to_string()))?;
    let at = st.clock.now_ms();
    let op = WriteOp::CancelReminders {
        tenant: caller.tenant,
        user_id,
        subject_id,
        mask,
        at,
    };
    match st.engine.submit(vec![op]).await?.pop() {
        Some(WriteResult::RemindersCancelled {
            cleared,
            remaining,
            cancelled,
        }) if cleared != 0 => Ok(axum::Json(RemindersCancelledJson {
            cleared: decoded(cleared, &leads),
            remaining: decoded(remaining, &leads),
            cancelled_timers: cancelled,
        })
        .into_response()),
        Some(WriteResult::RemindersCancelled { .. }) | Some(WriteResult::NotFound) => {
            Err(ApiError::not_found("reminder"))
        }
        _ => Err(unexpected()),
    }
}

/// One reminder of a (user, subject): its channel type and lead.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ReminderSlot)]
pub(crate) struct SlotJson {
    channel_type: &'static str,
    lead_minutes: i64,
}

impl From<Slot> for SlotJson {
    fn from(s: Slot) -> Self {
        Self {
            channel_type: s.channel_type().as_str(),
            lead_minutes: i64::from(s.lead_minutes()),
        }
    }
}

/// `DELETE /v1/reminders`'s answer: the reminders cleared and those left.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = RemindersCancelled)]
pub(crate) struct RemindersCancelledJson {
    cleared: Vec<SlotJson>,
    remaining: Vec<SlotJson>,
    cancelled_timers: Vec<i64>,
}

fn decoded(bits: u64, leads: &reminder::Leads) -> Vec<SlotJson> {
    reminder::decode_with(bits, leads)
        .map(SlotJson::from)
        .collect()
}

/// One reminder of a user, with its timer's fire time and state.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = UserReminder)]
pub(crate) struct UserReminderJson {
    channel_type: &'static str,
    lead_minutes: i64,
    bit: u32,
    timer_id: i64,
    fire_at: String,
    channel: String,
    state: &'static str,
}

/// A user's reminders of one subject, and their bitmap.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = UserSubject)]
pub(crate) struct UserSubjectJson {
    subject_id: String,
    bits: u64,
    reminders: Vec<UserReminderJson>,
}

/// `GET /v1/users/{user_id}/reminders`'s answer.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = UserReminders)]
pub(crate) struct UserRemindersJson {
    user_id: String,
    subjects: Vec<UserSubjectJson>,
}

/// Every reminder of `user_id` (at most [`MAX_LISTED`]), by subject, decoded
/// from the bitmap, with its timer's fire time and state.
pub(crate) async fn user_subjects(
    st: &AppState,
    tenant: herald_core::TenantId,
    user_id: &str,
) -> Result<Vec<UserSubjectJson>, ApiError> {
    let rows: Vec<ReminderTimer> = st
        .engine
        .store()
        .user_reminders(tenant, user_id, MAX_LISTED)
        .await?;
    let mut by_subject: BTreeMap<String, Vec<UserReminderJson>> = BTreeMap::new();
    let leads = st.reminders.leads();
    for r in rows {
        let Ok(slot) = Slot::from_bit_with(r.bit, &leads) else {
            continue;
        };
        let firing = st.engine.is_firing(r.timer.id);
        let state = if firing && r.timer.state == herald_core::TimerState::Pending {
            "firing"
        } else {
            r.timer.state.as_str()
        };
        by_subject
            .entry(r.subject_id)
            .or_default()
            .push(UserReminderJson {
                channel_type: slot.channel_type().as_str(),
                lead_minutes: i64::from(slot.lead_minutes()),
                bit: u32::from(r.bit),
                timer_id: r.timer.id,
                fire_at: format_rfc3339_ms(r.timer.due_at),
                channel: r.timer.channel,
                state,
            });
    }
    Ok(by_subject
        .into_iter()
        .map(|(subject_id, reminders)| {
            let bits = reminders.iter().fold(0u64, |acc, r| acc | (1u64 << r.bit));
            UserSubjectJson {
                subject_id,
                bits,
                reminders,
            }
        })
        .collect())
}

/// `GET /v1/users/{user_id}/reminders`: every reminder of the user, decoded
/// from the bitmap, with its timer's fire time and state.
pub async fn list_for_user(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    Path(user_id): Path<String>,
) -> Result<Response, ApiError> {
    check_id("user_id", &user_id)?;
    let subjects = user_subjects(&st, caller.tenant, &user_id).await?;
    Ok(axum::Json(UserRemindersJson { user_id, subjects }).into_response())
}
