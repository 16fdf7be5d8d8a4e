//! `/v1/jobs`: mass sends (campaigns). A job is one message to one audience
//! through one channel, cut into segments that workers claim under a lease
//! (`docs/architecture.md`, "The path of a campaign"). The API creates jobs,
//! shows their progress (totals, segments by state, the current rate and an
//! ETA), and cancels them; the engine's campaign service does the writing.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Extension, Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use herald_core::TenantId;
use herald_core::campaign::{JobState, SegmentState, SendState, job_recipient_key};
use herald_core::time::{format_rfc3339_ms, parse_rfc3339_ms};
use herald_engine::campaign::{AudienceSource, NewJob};
use herald_store::{FollowUp, JobRecord, JobTotals, Resend, SegmentRecord, SendRecord};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::access::Caller;
use crate::api::campaigns::actors::{self, ActorJson};
use crate::api::campaigns::job_labels;
use crate::api::campaigns::routing::{
    self as campaign_routing, CampaignTo, RoutingFields, RoutingJson,
};
use crate::http::error::ApiError;
use crate::http::fields::{
    MAX_DEADLINE_SECS, check_message_at, check_priority, check_users, unknown_channel,
};
use crate::http::json_body;
use crate::http::pagination::{ASCENDING, DESCENDING, PageQuery};
use crate::http::rate::RateSampler;
use crate::http::request::{
    NoQuery, action as split_action, int_param, parse_id, query, read_body,
};
use crate::http::route_steps::RouteStep;
use crate::http::state::AppState;
use crate::http::text::{Text, check_text};
use crate::http::trace;

/// Most recipients per segment.
pub const MAX_SEGMENT_SIZE: i64 = 100_000;
/// Widest `[start, end)` of one send-log read.
pub const MAX_SENDS_WINDOW: u64 = 1_000;

// ---- JSON ----

/// A job's recipients by outcome; they add up to `total`.
#[derive(Serialize, utoipa::ToSchema)]
pub struct TotalsJson {
    pub total: u64,
    /// Delivered.
    pub sent: u64,
    pub failed: u64,
    /// Failed retryably, waiting for another attempt (counted in `remaining`).
    pub retrying: u64,
    pub expired: u64,
    pub cancelled: u64,
    /// Handed to the provider by a node that died before it recorded the
    /// answer, and not sent again (the channel's `in_doubt = "skip"`): they
    /// may or may not have arrived. `GET /v1/jobs/{id}/sends?outcome=in_doubt`
    /// lists them.
    pub in_doubt: u64,
    /// Without a final outcome yet.
    pub remaining: u64,
    /// Recipients with a `delivered` receipt (`POST /v1/receipts`, or a
    /// provider's `success` callback). Receipts are counted apart from the
    /// outcomes above and need not add up with them.
    pub delivered: u64,
    /// Recipients with a `read` receipt.
    pub read: u64,
    /// Recipients with a `clicked` receipt.
    pub clicked: u64,
}

impl TotalsJson {
    /// The job's totals with its receipts.
    pub(crate) async fn of_job(st: &AppState, job_id: i64, t: JobTotals) -> Result<Self, ApiError> {
        let r = st.engine.store().job_receipt_counts(job_id).await?;
        Ok(Self {
            delivered: r.delivered,
            read: r.read,
            clicked: r.clicked,
            ..Self::from(t)
        })
    }
}

impl From<JobTotals> for TotalsJson {
    fn from(t: JobTotals) -> Self {
        Self {
            total: t.total,
            sent: t.delivered,
            failed: t.failed,
            retrying: t.retrying,
            expired: t.expired,
            cancelled: t.cancelled,
            in_doubt: t.in_doubt,
            remaining: t.remaining(),
            delivered: 0,
            read: 0,
            clicked: 0,
        }
    }
}

#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct JobJson {
    id: i64,
    /// Given when it was created; a job a rule starts takes the rule's name.
    name: Option<String>,
    /// The business kind it serves (e.g. `coupon-reminder`).
    category: Option<String>,
    /// The API key that created it; null in open access and for a job a
    /// rule or a follow-up started.
    created_by: Option<ActorJson>,
    /// The API key that last changed it (cancel, retry).
    changed_by: Option<ActorJson>,
    #[schema(value_type = String)]
    state: JobState,
    channel: String,
    audience_id: i64,
    task_id: Option<i64>,
    priority: u8,
    segment_size: u64,
    deadline: Option<String>,
    #[schema(value_type = Object)]
    message: Box<RawValue>,
    created_at: String,
    started_at: Option<String>,
    finished_at: Option<String>,
    totals: TotalsJson,
    /// Segments in each state (every state present, 0 when none).
    #[schema(value_type = BTreeMap<String, u64>)]
    segments: serde_json::Map<String, serde_json::Value>,
    /// Recipients reaching a final outcome per second, over the last ~10 s;
    /// 0 once the job has ended.
    rate_per_sec: f64,
    /// Average since the job started (to its end, once it has ended).
    avg_rate_per_sec: f64,
    /// Seconds until `remaining` reaches 0 at the current rate; null when the
    /// rate is 0 or the job has ended.
    eta_secs: Option<u64>,
    /// When it last recorded an attempt's outcome (delivered, failed, to be
    /// retried); null if it never sent.
    last_sent_at: Option<String>,
    /// Its follow-up, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    follow_up: Option<FollowUpJson>,
    /// The job this one follows: the job whose follow-up (or route step) it
    /// sends, or whose unread recipients it resends to (`:resend-unread`);
    /// null for any other job.
    follows: Option<i64>,
    /// The jobs that follow this one (its follow-up, route steps, resends to
    /// its unread), by id; at most 20 are listed.
    followed_by: Vec<i64>,
    /// `to`, `topic` and `critical`, when given.
    #[serde(flatten)]
    routing: RoutingJson,
}

/// Where a job's follow-up stands.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct FollowUpJson {
    after_secs: i64,
    /// Who gets it: `unread`, or `route` for the next step of the job's
    /// route (the recipients whose outcome that step's `on` lists).
    only: &'static str,
    /// The step of the job's route it sends.
    #[serde(skip_serializing_if = "Option::is_none")]
    step: Option<u32>,
    /// `waiting` (until the job has ended `after_secs` ago), `sent`, or
    /// `skipped` (nobody left unread, or the job was cancelled).
    state: &'static str,
    /// The job that sent it.
    job_id: Option<i64>,
}

/// Most ids a job's `followed_by` lists.
const MAX_FOLLOWED_BY: usize = 20;

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

async fn job_json(st: &AppState, rates: &RateSampler, j: JobRecord) -> Result<JobJson, ApiError> {
    let mut segments = serde_json::Map::new();
    for (state, n) in st.campaigns.segments_by_state(j.id).await? {
        segments.insert(state.as_str().to_string(), n.into());
    }
    let now = st.clock.now_ms();
    let processed = j.totals.delivered + j.totals.failed;
    let remaining = j.totals.remaining();
    let avg = match j.started_at {
        Some(s) => {
            let end = j.finished_at.unwrap_or(now);
            if end > s {
                processed as f64 * 1000.0 / (end - s) as f64
            } else {
                0.0
            }
        }
        None => 0.0,
    };
    let (rate, eta) = if j.state.is_final() {
        rates.forget(&j.id);
        (0.0, None)
    } else {
        let rate = rates.observe(j.id, now, processed, j.started_at);
        let eta = (rate > 0.0).then(|| (remaining as f64 / rate).ceil() as u64);
        (rate, eta)
    };
    Ok(JobJson {
        id: j.id,
        name: j.meta.name,
        category: j.meta.category,
        created_by: ActorJson::of(j.meta.created_by),
        changed_by: ActorJson::of(j.meta.changed_by),
        state: j.state,
        channel: j.channel,
        audience_id: j.audience_id,
        task_id: j.task_id,
        priority: j.priority,
        segment_size: j.segment_size,
        deadline: j.deadline_at.map(format_rfc3339_ms),
        message: RawValue::from_string(j.message).unwrap_or_default(),
        created_at: format_rfc3339_ms(j.created_at),
        started_at: j.started_at.map(format_rfc3339_ms),
        finished_at: j.finished_at.map(format_rfc3339_ms),
        totals: TotalsJson::of_job(st, j.id, j.totals).await?,
        segments,
        rate_per_sec: round1(rate),
        avg_rate_per_sec: round1(avg),
        eta_secs: eta,
        last_sent_at: j.last_sent_at.map(format_rfc3339_ms),
        follows: j.follows,
        followed_by: st
            .campaigns
            .jobs_following(j.id, MAX_FOLLOWED_BY)
            .await?
            .iter()
            .map(|f| f.id)
            .collect(),
        follow_up: st
            .engine
            .store()
            .get_follow_up(j.id)
            .await?
            .map(|f| FollowUpJson {
                after_secs: f.after_ms / 1000,
                only: if f.step.is_some() { "route" } else { "unread" },
                step: f.step,
                state: f.state.as_str(),
                job_id: f.follow_up_job_id,
            }),
        routing: RoutingJson::of(j.routing.as_deref()),
    })
}

#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct SegmentJson {
    id: i64,
    job_id: i64,
    start: u64,
    end: u64,
    cursor: u64,
    #[schema(value_type = String)]
    state: SegmentState,
    owner: Option<String>,
    lease_until: Option<String>,
    epoch: i64,
    parent_id: Option<i64>,
    attempt: u32,
    not_before: String,
    created_at: String,
    /// When it ended (`done`, `partial`, `abandoned`, `expired` or
    /// `cancelled`); null while pending or running.
    finished_at: Option<String>,
}

impl From<SegmentRecord> for SegmentJson {
    fn from(s: SegmentRecord) -> Self {
        Self {
            id: s.id,
            job_id: s.job_id,
            start: s.start,
            end: s.end,
            cursor: s.cursor,
            state: s.state,
            owner: s.owner,
            lease_until: s.lease_until.map(format_rfc3339_ms),
            epoch: s.epoch,
            parent_id: s.parent_id,
            attempt: s.attempt,
            not_before: format_rfc3339_ms(s.not_before),
            created_at: format_rfc3339_ms(s.created_at),
            finished_at: s.finished_at.map(format_rfc3339_ms),
        }
    }
}

#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct SendJson {
    index: u64,
    recipient: String,
    #[schema(value_type = String)]
    state: SendState,
    attempts: u32,
    idempotency_key: String,
    provider_msgid: Option<String>,
    error: Option<String>,
    updated_at: String,
    /// What the provider reported later (a delivery callback).
    #[serde(skip_serializing_if = "Option::is_none")]
    final_status: Option<String>,
}

impl From<SendRecord> for SendJson {
    fn from(s: SendRecord) -> Self {
        Self {
            idempotency_key: job_recipient_key(s.job_id, s.index),
            index: s.index,
            recipient: s.recipient,
            state: s.state,
            attempts: s.attempts,
            provider_msgid: s.provider_msgid,
            error: s.error,
            updated_at: format_rfc3339_ms(s.updated_at),
            final_status: s.final_status,
        }
    }
}

// ---- Handlers ----

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[derive(utoipa::ToSchema)]
pub(crate) struct JobBody {
    /// What to call it: 1..=200 characters, no control character.
    #[serde(default)]
    name: Option<String>,
    /// The business kind it serves, e.g. `coupon-reminder` or `marketing`:
    /// 1..=64 of `A-Z a-z 0-9 _ - . :`. `GET /v1/jobs?category=` lists one.
    #[serde(default)]
    category: Option<String>,
    #[serde(default)]
    audience_id: Option<i64>,
    #[serde(default)]
    users: Option<Vec<String>>,
    /// A configured channel; left out, the first step of `route` (or, with
    /// `to` and no route, of the tenant's default route, `[routing]`).
    #[serde(default)]
    channel: Option<String>,
    /// The message in the channel provider's shape; give this or `template`.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    message: Option<Box<RawValue>>,
    /// Render each recipient's message from a stored template, in their
    /// locale and time zone when the audience is user ids (`to`).
    #[serde(default)]
    template: Option<crate::http::validate::TemplateUse>,
    #[serde(default)]
    segment_size: Option<i64>,
    #[serde(default)]
    deadline: Option<String>,
    #[serde(default)]
    deadline_secs: Option<i64>,
    #[serde(default)]
    priority: Option<i64>,
    /// A message sent later to the recipients who did not read this one.
    #[serde(default)]
    follow_up: Option<FollowUpBody>,
    /// The audience holds user ids: each is sent to that subscriber's address
    /// of the channel's type (or `channel_type`), read from the directory as
    /// the job sends; opt-outs and quiet hours apply.
    #[serde(default)]
    to: Option<CampaignTo>,
    /// What the message is about, for subscribers' topic opt-outs.
    #[serde(default)]
    topic: Option<String>,
    /// Sent in quiet hours too (the channel's and subscribers'); never past
    /// an opt-out.
    #[serde(default)]
    critical: Option<bool>,
    /// A fallback route (with `to`): its first step is this job; each later
    /// step is a follow-up job on its channel, of the recipients whose
    /// outcome at the step before it lists in `on`, once that job ends
    /// (`after` it, for `unread`).
    #[serde(default)]
    route: Option<Vec<RouteStep>>,
}

/// `follow_up` of a job: `after_secs` after the job ends, `message` goes
/// to the recipients it delivered to that sent no `read` receipt.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct FollowUpBody {
    /// 1 second to 30 days after the job ends.
    after_secs: i64,
    #[schema(value_type = Object)]
    message: Box<RawValue>,
    /// Who gets it: `unread` (the only choice).
    only: String,
}

/// Longest a follow-up may wait after its job: 30 days.
const MAX_FOLLOW_UP_SECS: i64 = 30 * 24 * 3600;

pub(crate) fn check_follow_up(
    f: Option<FollowUpBody>,
    kind: Option<herald_channels::ChannelKind>,
) -> Result<Option<FollowUp>, ApiError> {
    let Some(f) = f else { return Ok(None) };
    if !(1..=MAX_FOLLOW_UP_SECS).contains(&f.after_secs) {
        return Err(ApiError::field(
            "follow_up.after_secs",
            "invalid_field",
            format!("follow_up.after_secs must be 1..={MAX_FOLLOW_UP_SECS}"),
        ));
    }
    if f.only != "unread" {
        return Err(ApiError::field(
            "follow_up.only",
            "invalid_field",
            format!(
                "follow_up.only is {:?}; the one choice is \"unread\"",
                f.only
            ),
        ));
    }
    check_message_at("follow_up.message", &f.message)?;
    if let Some(kind) = kind {
        crate::http::validate::check_shape(kind, "follow_up.message", &f.message)?;
    }
    Ok(Some(FollowUp {
        after_ms: f.after_secs * 1000,
        message: f.message.get().to_string(),
        step: None,
    }))
}

/// Reads and checks a job body. Whether an `audience_id` names a sealed
/// audience is the campaign service's to check.
fn check_job(st: &AppState, tenant: TenantId, bytes: &[u8]) -> Result<NewJob, ApiError> {
    let mut req: JobBody = json_body::object(bytes)?;
    let now = st.clock.now_ms();
    let meta = job_labels::meta(req.name, req.category)?;
    let (channel, route) =
        campaign_routing::channel_and_route(st, tenant, req.channel, req.route, req.to.as_mut())?;

    let audience = match (req.audience_id, req.users) {
        (Some(_), Some(_)) => {
            return Err(ApiError::field(
                "audience_id",
                "invalid_field",
                "give either audience_id or users, not both",
            ));
        }
        (None, None) => {
            return Err(ApiError::field(
                "audience_id",
                "missing_field",
                "give audience_id (an uploaded audience) or users (a list of recipients)",
            ));
        }
        (None, Some(users)) => {
            if users.is_empty() {
                return Err(ApiError::field(
                    "users",
                    "invalid_field",
                    "users must not be empty",
                ));
            }
            check_users("users", &users, st.api.job_max_users)?;
            AudienceSource::Inline(users)
        }
        (Some(id), None) => AudienceSource::Uploaded(id),
    };
    check_text("channel", &channel, Text::Id)?;
    if !st.serves_channel(tenant, &channel) {
        return Err(unknown_channel(
            "channel",
            &channel,
            &st.channel_names_for(tenant),
        ));
    }
    crate::http::fields::no_campaign_on_grants(st.engine.channel_kind(&channel))?;
    let segment_size = match req.segment_size {
        None => None,
        Some(s) if (1..=MAX_SEGMENT_SIZE).contains(&s) => Some(s as u64),
        Some(_) => {
            return Err(ApiError::field(
                "segment_size",
                "invalid_field",
                format!("segment_size must be 1..={MAX_SEGMENT_SIZE}"),
            ));
        }
    };
    let deadline_at = match (&req.deadline, req.deadline_secs) {
        (Some(_), Some(_)) => {
            return Err(ApiError::field(
                "deadline",
                "invalid_field",
                "give either deadline or deadline_secs, not both",
            ));
        }
        (None, None) => None,
        (Some(d), None) => {
            let at = parse_rfc3339_ms(d).map_err(|e| {
                ApiError::field(
                    "deadline",
                    "invalid_field",
                    format!("deadline {d:?} is not an RFC 3339 time: {e}"),
                )
            })?;
            if at <= now {
                return Err(ApiError::field(
                    "deadline",
                    "invalid_field",
                    "deadline is not in the future",
                ));
            }
            if at > now + MAX_DEADLINE_SECS * 1000 {
                return Err(ApiError::field(
                    "deadline",
                    "invalid_field",
                    format!("deadline is more than {MAX_DEADLINE_SECS} s ahead"),
                ));
            }
            Some(at)
        }
        (None, Some(s)) => {
            if !(1..=MAX_DEADLINE_SECS).contains(&s) {
                return Err(ApiError::field(
                    "deadline_secs",
                    "invalid_field",
                    format!("deadline_secs must be 1..={MAX_DEADLINE_SECS}"),
                ));
            }
            Some(now + s * 1000)
        }
    };
    let priority = check_priority(req.priority)?;
    let follow_up = check_follow_up(req.follow_up, st.engine.channel_kind(&channel))?;
    let routing = campaign_routing::check(
        RoutingFields {
            to: req.to,
            topic: req.topic,
            critical: req.critical,
        },
        &channel,
        st.engine
            .channel_kind(&channel)
            .and_then(herald_channels::ChannelKind::channel_type),
    )?;
    // The message is checked after the routing, so a bad `to` or `topic`
    // is named first (a message may depend on the channel type it resolves).
    let (message, template) = crate::http::validate::campaign_content(
        req.message.as_deref(),
        req.template,
        st.engine.channel_kind(&channel),
        tenant,
        &st.engine.templates().library(),
    )?;
    let routing = crate::http::validate::with_template(routing, template);
    let route_given = route.is_some();
    let routing = campaign_routing::with_route(st, tenant, routing, route, &channel, &message)?;
    let follow_up = match (follow_up, route_given) {
        (Some(_), true) => {
            return Err(ApiError::field(
                "follow_up",
                "invalid_field",
                "a job with a route sends its later steps as its follow-ups: give \
                 follow_up or route, not both",
            ));
        }
        (f, false) => f,
        (None, true) => herald_store::route_follow_up(routing.as_deref(), &message),
    };
    Ok(NewJob {
        audience,
        channel,
        message,
        segment_size,
        deadline_at,
        priority,
        follow_up,
        routing,
        traceparent: None,
        meta,
    })
}

/// `POST /v1/jobs` → `201` job. Sending starts at once.
pub async fn create(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    Extension(rates): Extension<Arc<RateSampler>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let span = trace::request_span!("/v1/jobs");
    let traceparent = herald_engine::trace::adopt(&span, trace::incoming(&headers));
    let answer = async {
        let bytes = read_body(body, st.api.campaign_body_max_bytes).await?;
        let mut job = check_job(&st, caller.tenant, &bytes)?;
        job.traceparent = traceparent;
        job.meta.created_by = actors::of_caller(&caller);
        let created = st.campaigns.create_job(caller.tenant, job).await?;
        if !span.is_disabled() {
            span.record("herald.job.id", created.id);
            span.record("herald.channel", created.channel.as_str());
        }
        let body = job_json(&st, &rates, created).await?;
        Ok((StatusCode::CREATED, axum::Json(body)).into_response())
    }
    .await;
    trace::record_answer(&span, &answer);
    answer
}

/// `GET /v1/jobs/{id}`.
pub async fn get(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    Extension(rates): Extension<Arc<RateSampler>>,
    Path(raw): Path<String>,
) -> Result<Response, ApiError> {
    let id = parse_id(&raw, "job")?;
    let job = st.campaigns.get_job(caller.tenant, id).await?;
    Ok(axum::Json(job_json(&st, &rates, job).await?).into_response())
}

/// `DELETE /v1/jobs/{id}` → `200` the job as it was, with its segments and
/// send log gone (`segments` is empty); `409 job_not_finished` while it runs
/// or a follow-up of it waits. Its audience is kept.
pub async fn delete(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    Extension(rates): Extension<Arc<RateSampler>>,
    Path(raw): Path<String>,
) -> Result<Response, ApiError> {
    let id = parse_id(&raw, "job")?;
    let job = st.campaigns.delete_job(caller.tenant, id).await?;
    Ok(axum::Json(job_json(&st, &rates, job).await?).into_response())
}

/// `POST /v1/jobs/{id}:cancel` → `200` job: pending and running segments end
/// `cancelled`, their recipients count as cancelled. A job already ended is
/// returned as it is.
///
/// `POST /v1/jobs/{id}:retry-failed` → `200 {job, retried}`: the job's failed
/// sends are sent again (a finished job runs again); `409 not_retryable` for a
/// cancelled or expired job. `POST /v1/jobs/{id}:retry-in-doubt`: the same for
/// the sends a crash left `in_doubt` (an operator's decision to send them).
///
/// `POST /v1/jobs/{id}:recall` → `200 {job_id, messages, recalled,
/// already_recalled, too_old, failed, error?}` (see `job_recall`).
///
/// `POST /v1/jobs/{id}:resend-unread` (optional body `{message}`) → `201`
/// the new job (see [`resend_unread`]).
pub async fn action(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    Extension(rates): Extension<Arc<RateSampler>>,
    Path(segment): Path<String>,
    body: Body,
) -> Result<Response, ApiError> {
    let (raw_id, verb) = split_action(
        &segment,
        "jobs",
        "job",
        &[
            "cancel",
            "retry-failed",
            "retry-in-doubt",
            "recall",
            "resend-unread",
        ],
    )?;
    let id = parse_id(raw_id, "job")?;
    if verb == "resend-unread" {
        return resend_unread(&st, &caller, &rates, id, body).await;
    }
    if verb == "recall" {
        let job = st.campaigns.get_job(caller.tenant, id).await?;
        return crate::api::campaigns::job_recall::recall_job(&st, id, &job.channel).await;
    }
    let resend = match verb {
        "retry-failed" => Some(Resend::Failed),
        "retry-in-doubt" => Some(Resend::InDoubt),
        _ => None,
    };
    if let Some(which) = resend {
        let by = actors::of_caller(&caller);
        let (job, retried) = st
            .campaigns
            .retry_sends(caller.tenant, id, which, by)
            .await?;
        let job = job_json(&st, &rates, job).await?;
        return Ok(axum::Json(JobRetried { job, retried }).into_response());
    }
    let by = actors::of_caller(&caller);
    let job = st.campaigns.cancel_job(caller.tenant, id, by).await?;
    Ok(axum::Json(job_json(&st, &rates, job).await?).into_response())
}

/// The body of `POST /v1/jobs/{id}:resend-unread`, optional.
#[derive(Deserialize, Default, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ResendBody {
    /// The message in the channel provider's shape; left out, the job's own
    /// (its template, if it used one).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    message: Option<Box<RawValue>>,
}

/// `POST /v1/jobs/{id}:resend-unread` → `201` a new job, started now on the
/// job's channel (and routing), to the recipients the job delivered to that
/// sent no `read` receipt, made by the caller; its `follows` is the job.
/// `409 not_resendable` unless the job ended `done` or `expired`, `409
/// nobody_unread` when everyone read it, `409 resend_running` while a job
/// that follows it still sends. Each call that succeeds starts a new job.
async fn resend_unread(
    st: &AppState,
    caller: &Caller,
    rates: &RateSampler,
    id: i64,
    body: Body,
) -> Result<Response, ApiError> {
    let bytes = read_body(body, crate::http::body_limits::ACTION_MAX_BYTES).await?;
    let req: ResendBody = json_body::object_or_empty(&bytes)?;
    let job = st.campaigns.get_job(caller.tenant, id).await?;
    let message = match req.message {
        None => None,
        Some(m) => {
            let (message, _) = crate::http::validate::campaign_content(
                Some(&m),
                None,
                st.engine.channel_kind(&job.channel),
                caller.tenant,
                &st.engine.templates().library(),
            )?;
            Some(message)
        }
    };
    let by = actors::of_caller(caller);
    let created = st
        .campaigns
        .resend_unread(caller.tenant, id, message, by)
        .await?;
    let body = job_json(st, rates, created).await?;
    Ok((StatusCode::CREATED, axum::Json(body)).into_response())
}

/// The answer to `POST /v1/jobs/{id}:retry-failed` and `:retry-in-doubt`.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct JobRetried {
    job: JobJson,
    /// Failed (or in-doubt) sends that were set to be sent again.
    retried: u64,
}

/// Failed sends read at most by `GET /v1/jobs/{id}/failures`.
pub const MAX_FAILURES_SCANNED: usize = 10_000;

/// One error of `GET /v1/jobs/{id}/failures`.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct FailureGroup {
    /// The provider's or channel's error text ("" when none was recorded).
    pub error: String,
    pub count: u64,
}

/// The answer to `GET /v1/jobs/{id}/failures`.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct JobFailures {
    /// Largest groups first.
    pub groups: Vec<FailureGroup>,
    /// Failed sends read (at most 10,000, lowest recipient index first).
    pub scanned: u64,
    /// More failed sends exist than were read.
    pub truncated: bool,
}

/// `GET /v1/jobs/{id}/failures` → a job's failed sends grouped by error.
pub async fn failures(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    Path(raw): Path<String>,
) -> Result<Response, ApiError> {
    let id = parse_id(&raw, "job")?;
    let f = st
        .campaigns
        .job_failures(caller.tenant, id, MAX_FAILURES_SCANNED)
        .await?;
    Ok(axum::Json(JobFailures {
        groups: f
            .groups
            .into_iter()
            .map(|(error, count)| FailureGroup { error, count })
            .collect(),
        scanned: f.scanned,
        truncated: f.truncated,
    })
    .into_response())
}

/// `GET /v1/jobs`'s answer: a page of jobs, newest first.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct JobList {
    jobs: Vec<JobJson>,
    /// Pass as `before` for the next page; `null` on the last.
    next_before: Option<i64>,
}

/// `GET /v1/jobs/{id}/segments`'s answer: a page of segments by id.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct SegmentList {
    next_after: Option<i64>,
    segments: Vec<SegmentJson>,
}

/// The query of `GET /v1/jobs`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobListQuery {
    #[serde(default)]
    before: Option<String>,
    #[serde(default)]
    limit: Option<String>,
    /// Only jobs of exactly this category.
    #[serde(default)]
    category: Option<String>,
    /// Only jobs whose name starts with this.
    #[serde(default)]
    name: Option<String>,
}

/// `GET /v1/jobs?before=&limit=&category=&name=` → `{jobs, next_before}`,
/// newest first; `category` matches exactly, `name` as a prefix.
pub async fn list(
    State(st): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(rates): Extension<Arc<RateSampler>>,
    q: Result<Query<JobListQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let q = query(q)?;
    let page = DESCENDING.page(&q.before, &q.limit)?;
    let filter = job_labels::filter(q.name, q.category)?;
    let jobs = st
        .campaigns
        .list_jobs(caller.tenant, filter, page.cursor, page.limit)
        .await?;
    let last = jobs.last().map(|j| j.id);
    let next_before = page.next_cursor(jobs.len(), last);
    let mut out = Vec::with_capacity(jobs.len());
    for j in jobs {
        out.push(job_json(&st, &rates, j).await?);
    }
    Ok(axum::Json(JobList {
        jobs: out,
        next_before,
    })
    .into_response())
}

/// `GET /v1/jobs/{id}/segments?after=&limit=` → `{segments, next_after}` by id.
pub async fn segments(
    State(st): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(raw): Path<String>,
    q: Result<Query<PageQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let id = parse_id(&raw, "job")?;
    let page = ASCENDING.read(q)?;
    let segs = st
        .campaigns
        .job_segments(caller.tenant, id, page.cursor, page.limit)
        .await?;
    let last = segs.last().map(|s| s.id);
    let next_after = page.next_cursor(segs.len(), last);
    let segments = segs.into_iter().map(Into::into).collect();
    Ok(axum::Json(SegmentList {
        next_after,
        segments,
    })
    .into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SendsQuery {
    #[serde(default)]
    start: Option<String>,
    #[serde(default)]
    end: Option<String>,
    /// Only rows with this outcome, paged by `after` and `limit`.
    #[serde(default)]
    outcome: Option<String>,
    #[serde(default)]
    after: Option<String>,
    #[serde(default)]
    limit: Option<String>,
    /// One recipient's row, found by searching the job's audience.
    #[serde(default)]
    recipient: Option<String>,
}

/// `GET /v1/jobs/{id}/sends`'s answer: with `outcome`, a page and its
/// cursor; a range (`start`, `end`) has no cursor.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct SendList {
    /// With `outcome`: where the next page starts; null on the last one.
    next_after: Option<u64>,
    sends: Vec<SendJson>,
    /// With `recipient`: its index in the job's audience, absent when it is
    /// not in it. `sends` is then empty while the job has not reached it.
    #[serde(skip_serializing_if = "Option::is_none")]
    recipient_index: Option<u64>,
}

/// A range of the send log: `{sends}` (the document's `SendList`, whose
/// `next_after` it leaves out).
#[derive(Serialize)]
struct SendRange {
    sends: Vec<SendJson>,
}

/// `?outcome=X&after=&limit=`: the send log's rows in state `X` (for
/// example the recipients left `in_doubt`), by index, wherever they are in
/// the audience. `{sends, next_after}`; `next_after` is null on the last page.
async fn sends_by_outcome(
    st: &AppState,
    tenant: TenantId,
    id: i64,
    outcome: &str,
    q: &SendsQuery,
) -> Result<Response, ApiError> {
    let Some(state) = SendState::parse(outcome) else {
        let names: Vec<&str> = SendState::ALL.iter().map(|s| s.as_str()).collect();
        return Err(ApiError::field(
            "outcome",
            "invalid_field",
            format!("must be one of {}", names.join(", ")),
        ));
    };
    for (name, given) in [("start", &q.start), ("end", &q.end)] {
        if given.is_some() {
            return Err(ApiError::field(
                name,
                "invalid_field",
                "not with outcome: page with after and limit",
            ));
        }
    }
    let after = int_param("after", &q.after, 0..=i64::MAX)?.map(|a| a as u64);
    let limit = int_param("limit", &q.limit, 1..=MAX_SENDS_WINDOW as i64)?.unwrap_or(100) as usize;
    let rows = st
        .campaigns
        .job_sends_in_state(tenant, id, state, after, limit)
        .await?;
    let next_after = (rows.len() == limit)
        .then(|| rows.last().map(|r| r.index))
        .flatten();
    let sends = rows.into_iter().map(Into::into).collect();
    Ok(axum::Json(SendList {
        next_after,
        sends,
        recipient_index: None,
    })
    .into_response())
}

/// `?recipient=X`: where one recipient stands in the job, found by searching
/// its audience (the send log has no recipient index). `{sends,
/// recipient_index, next_after: null}`: the row once the job has tried it.
async fn send_of_recipient(
    st: &AppState,
    tenant: TenantId,
    id: i64,
    recipient: &str,
    q: &SendsQuery,
) -> Result<Response, ApiError> {
    for (name, given) in [
        ("start", &q.start),
        ("end", &q.end),
        ("outcome", &q.outcome),
        ("after", &q.after),
        ("limit", &q.limit),
    ] {
        if given.is_some() {
            return Err(ApiError::field(
                name,
                "invalid_field",
                "not with recipient, which names one row",
            ));
        }
    }
    // As documented (`Takes::Printable(256)`): an audience's recipients are
    // at most 256 bytes, so a longer one is simply not found.
    crate::http::text::check_printable("recipient", recipient, 256)?;
    let found = st.campaigns.find_send(tenant, id, recipient).await?;
    let (recipient_index, sends) = match found {
        Some(f) => (Some(f.index), f.send.into_iter().map(Into::into).collect()),
        None => (None, Vec::new()),
    };
    Ok(axum::Json(SendList {
        next_after: None,
        sends,
        recipient_index,
    })
    .into_response())
}

/// `GET /v1/jobs/{id}/sends?start=&end=` → `{sends}`: the send log of
/// recipients `start <= index < end` (at most 1,000 wide; default `0` and
/// `start + 1000`), by index, each with its idempotency key. With
/// `?outcome=`, the rows with that outcome instead ([`sends_by_outcome`]).
pub async fn sends(
    State(st): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(raw): Path<String>,
    q: Result<Query<SendsQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let id = parse_id(&raw, "job")?;
    let q = query(q)?;
    if let Some(recipient) = &q.recipient {
        return send_of_recipient(&st, caller.tenant, id, recipient, &q).await;
    }
    if let Some(outcome) = &q.outcome {
        return sends_by_outcome(&st, caller.tenant, id, outcome, &q).await;
    }
    for (name, given) in [("after", &q.after), ("limit", &q.limit)] {
        if given.is_some() {
            return Err(ApiError::field(
                name,
                "invalid_field",
                "only with outcome; without it, read a range with start and end",
            ));
        }
    }
    let start = int_param("start", &q.start, 0..=i64::MAX)?.unwrap_or(0) as u64;
    let end = match int_param("end", &q.end, 0..=i64::MAX)? {
        Some(e) => e as u64,
        None => start.saturating_add(MAX_SENDS_WINDOW),
    };
    if end < start {
        return Err(ApiError::field(
            "end",
            "invalid_field",
            "end must not be below start",
        ));
    }
    if end - start > MAX_SENDS_WINDOW {
        return Err(ApiError::field(
            "end",
            "invalid_field",
            format!("at most {MAX_SENDS_WINDOW} recipients per read (end - start)"),
        ));
    }
    let rows = st
        .campaigns
        .job_sends(caller.tenant, id, start, end)
        .await?;
    let sends = rows.into_iter().map(Into::into).collect();
    Ok(axum::Json(SendRange { sends }).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_add_up() {
        let t = JobTotals {
            total: 100,
            delivered: 50,
            failed: 5,
            retrying: 3,
            expired: 10,
            cancelled: 0,
            in_doubt: 2,
        };
        let j = TotalsJson::from(t);
        assert_eq!(
            j.sent + j.failed + j.expired + j.cancelled + j.in_doubt + j.remaining,
            j.total
        );
        assert_eq!(j.remaining, 33);
    }
}
