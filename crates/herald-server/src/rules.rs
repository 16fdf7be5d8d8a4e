//! `/v1/rules`: versioned send rules (seed 002). A rule says what to send to
//! whom through which channel, and when (`immediate`, `at`, or `cron`); every
//! change is a new version, and every execution an append-only task that can
//! be traced to its version and its job.

use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use herald_core::campaign::RuleStatus;
use herald_core::schedule::{Schedule, ScheduleSpec};
use herald_core::time::{format_rfc3339_ms, parse_rfc3339_ms};
use herald_core::timer::{DEFAULT_PRIORITY, MAX_PRIORITY};
use herald_store::{RuleRecord, RuleSpec, RuleVersion, TaskRecord};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::AppState;
use crate::audiences::{inline_audience, int_param, parse_id, query, recipient_problem};
use crate::error::{ApiError, from_serde};
use crate::jobs::TotalsJson;
use crate::timers::{read_body, store_err};

/// Longest rule name, in bytes.
pub const MAX_NAME_BYTES: usize = 200;
/// Largest message object, in bytes.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024;
/// Longest a job a rule starts may send: 30 days.
pub const MAX_DEADLINE_SECS: i64 = 30 * 24 * 3600;
/// Most parties, and most tags, a rule may name.
pub const MAX_FANOUT_TARGETS: usize = 1000;
/// An `at` further in the past than this is refused.
pub const AT_PAST_GRACE_MS: i64 = 60_000;

/// Who a rule sends to. Kept as the request gave it.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AudienceTarget {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parties: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience_id: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleBody {
    name: String,
    schedule: ScheduleSpec,
    audience: AudienceTarget,
    channel: String,
    message: Box<RawValue>,
    #[serde(default)]
    deadline_secs: Option<i64>,
    #[serde(default)]
    priority: Option<i64>,
}

/// A checked rule body: the spec to store, and the users to turn into an
/// audience first (then `spec.audience_id` is set from it).
struct CheckedRule {
    spec: RuleSpec,
    users: Option<Vec<String>>,
}

fn non_empty(v: &Option<Vec<String>>) -> bool {
    v.as_ref().is_some_and(|v| !v.is_empty())
}

/// Checks a fan-out target list (`parties` or `tags`).
fn check_targets(
    field: &str,
    list: &Option<Vec<String>>,
    channel: &str,
    fans_out: bool,
) -> Result<(), ApiError> {
    let Some(list) = list else { return Ok(()) };
    if list.is_empty() {
        return Ok(());
    }
    if !fans_out {
        return Err(ApiError::field(
            field,
            "unsupported_target",
            format!(
                "channel {channel:?} cannot resolve {}; only a channel that fans out \
                 server-side (e.g. wecom) can. Use users or audience_id with this channel",
                field.trim_start_matches("audience.")
            ),
        ));
    }
    if list.len() > MAX_FANOUT_TARGETS {
        return Err(ApiError::field(
            field,
            "invalid_field",
            format!("at most {MAX_FANOUT_TARGETS} entries"),
        ));
    }
    for (i, t) in list.iter().enumerate() {
        if let Some(p) = recipient_problem(t) {
            return Err(ApiError::field(
                &format!("{field}[{i}]"),
                "invalid_field",
                p.replace("recipient", "entry"),
            ));
        }
    }
    Ok(())
}

async fn check_rule(st: &AppState, bytes: &[u8]) -> Result<CheckedRule, ApiError> {
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    let req: RuleBody = serde_path_to_error::deserialize(de).map_err(from_serde)?;
    let now = st.clock.now_ms();

    if req.name.is_empty() || req.name.len() > MAX_NAME_BYTES {
        return Err(ApiError::field(
            "name",
            "invalid_field",
            format!("name must be 1..={MAX_NAME_BYTES} bytes"),
        ));
    }
    Schedule::compile(&req.schedule)
        .map_err(|e| ApiError::field(&e.field, "invalid_schedule", e.message))?;
    if let ScheduleSpec::At { at } = &req.schedule
        && let Ok(at_ms) = parse_rfc3339_ms(at)
        && at_ms < now - AT_PAST_GRACE_MS
    {
        return Err(ApiError::field(
            "schedule.at",
            "invalid_schedule",
            format!(
                "{at} is more than {} s in the past",
                AT_PAST_GRACE_MS / 1000
            ),
        ));
    }
    let fans_out = match st.engine.channel_fans_out(&req.channel) {
        Some(f) => f,
        None => {
            return Err(ApiError::field(
                "channel",
                "unknown_channel",
                format!(
                    "no channel named {:?}; configured: {:?}",
                    req.channel,
                    st.engine.channel_names()
                ),
            ));
        }
    };
    check_message(&req.message)?;
    let deadline_secs = match req.deadline_secs {
        None => None,
        Some(d) if (1..=MAX_DEADLINE_SECS).contains(&d) => Some(d),
        Some(_) => {
            return Err(ApiError::field(
                "deadline_secs",
                "invalid_field",
                format!("deadline_secs must be 1..={MAX_DEADLINE_SECS}"),
            ));
        }
    };
    let priority = check_priority(req.priority)?;

    let a = &req.audience;
    if !non_empty(&a.users)
        && !non_empty(&a.parties)
        && !non_empty(&a.tags)
        && a.audience_id.is_none()
    {
        return Err(ApiError::field(
            "audience",
            "missing_field",
            "audience must name at least one target: users, parties, tags or audience_id",
        ));
    }
    if a.users.is_some() && a.audience_id.is_some() {
        return Err(ApiError::field(
            "audience.users",
            "invalid_field",
            "give either audience.users or audience.audience_id, not both",
        ));
    }
    if let Some(users) = &a.users {
        check_users("audience.users", users, st.api.rule_max_users)?;
    }
    check_targets("audience.parties", &a.parties, &req.channel, fans_out)?;
    check_targets("audience.tags", &a.tags, &req.channel, fans_out)?;
    if let Some(id) = a.audience_id {
        check_sealed(st, "audience.audience_id", id).await?;
    }

    let schedule = serde_json::to_string(&req.schedule)
        .map_err(|_| ApiError::unavailable("could not encode the schedule"))?;
    let audience = serde_json::to_string(&req.audience)
        .map_err(|_| ApiError::unavailable("could not encode the audience"))?;
    let users = req.audience.users.clone().filter(|u| !u.is_empty());
    Ok(CheckedRule {
        spec: RuleSpec {
            name: req.name,
            schedule,
            audience,
            audience_id: a.audience_id,
            channel: req.channel,
            message: req.message.get().to_string(),
            deadline_secs,
            priority,
        },
        users,
    })
}

/// A message is a JSON object of at most [`MAX_MESSAGE_BYTES`].
pub(crate) fn check_message(m: &RawValue) -> Result<(), ApiError> {
    if !m.get().trim_start().starts_with('{') {
        return Err(ApiError::field(
            "message",
            "invalid_field",
            "message must be a JSON object",
        ));
    }
    if m.get().len() > MAX_MESSAGE_BYTES {
        return Err(ApiError::field(
            "message",
            "invalid_field",
            format!(
                "message is {} bytes; at most {MAX_MESSAGE_BYTES}",
                m.get().len()
            ),
        ));
    }
    Ok(())
}

pub(crate) fn check_priority(p: Option<i64>) -> Result<u8, ApiError> {
    match p {
        None => Ok(DEFAULT_PRIORITY),
        Some(p) if (0..=i64::from(MAX_PRIORITY)).contains(&p) => Ok(p as u8),
        Some(_) => Err(ApiError::field(
            "priority",
            "invalid_field",
            format!("priority must be 0..={MAX_PRIORITY}"),
        )),
    }
}

/// A list of recipient ids given inline: at most `max`, each valid.
pub(crate) fn check_users(field: &str, users: &[String], max: usize) -> Result<(), ApiError> {
    if users.len() > max {
        return Err(ApiError::field(
            field,
            "too_many_users",
            format!(
                "{} users; at most {max} inline (upload a larger list to /v1/audiences)",
                users.len()
            ),
        ));
    }
    for (i, u) in users.iter().enumerate() {
        if let Some(p) = recipient_problem(u) {
            return Err(ApiError::field(
                &format!("{field}[{i}]"),
                "invalid_field",
                p,
            ));
        }
    }
    Ok(())
}

/// The audience exists and its upload has finished.
pub(crate) async fn check_sealed(st: &AppState, field: &str, id: i64) -> Result<u64, ApiError> {
    match st
        .engine
        .store()
        .get_audience(id)
        .await
        .map_err(store_err)?
    {
        None => Err(ApiError::field(
            field,
            "unknown_audience",
            format!("no audience {id}"),
        )),
        Some(a) => a.size.ok_or_else(|| {
            ApiError::field(
                field,
                "audience_not_ready",
                format!("audience {id} is still uploading"),
            )
        }),
    }
}

/// Turns the rule's inline users into a sealed audience, if it has any.
async fn materialize(st: &AppState, checked: &mut CheckedRule) -> Result<Option<i64>, ApiError> {
    let Some(users) = &checked.users else {
        return Ok(None);
    };
    let a = inline_audience(
        st.engine.store(),
        users,
        Some(format!("users of rule {:?}", checked.spec.name)),
        st.clock.now_ms(),
    )
    .await?;
    checked.spec.audience_id = Some(a.id);
    Ok(Some(a.id))
}

async fn drop_inline(st: &AppState, id: Option<i64>) {
    if let Some(id) = id {
        let _ = st.engine.store().drop_audience(id).await;
    }
}

// ---- JSON ----

fn raw(text: &str) -> Box<RawValue> {
    // The store keeps what the API validated; `null` only if a row was damaged.
    RawValue::from_string(text.to_string()).unwrap_or_default()
}

#[derive(Serialize)]
struct RuleJson {
    id: i64,
    name: String,
    status: RuleStatus,
    version: i32,
    schedule: Box<RawValue>,
    audience: Box<RawValue>,
    /// The audience its jobs send to (uploaded, or built from `users`).
    audience_id: Option<i64>,
    channel: String,
    message: Box<RawValue>,
    deadline_secs: Option<i64>,
    priority: u8,
    created_at: String,
    updated_at: String,
    next_run_at: Option<String>,
}

/// When the rule sends next: its pending task of the current version, or the
/// occurrence the planner will plan next. `null` unless enabled.
fn next_run_at(st: &AppState, r: &RuleRecord, tasks: &[TaskRecord]) -> Option<i64> {
    if r.status != RuleStatus::Enabled {
        return None;
    }
    let v = &r.current;
    let spec: ScheduleSpec = serde_json::from_str(&v.spec.schedule).ok()?;
    let schedule = Schedule::compile(&spec).ok()?;
    let current: Vec<&TaskRecord> = tasks.iter().filter(|t| t.version == v.version).collect();
    if let Some(p) = current
        .iter()
        .filter(|t| t.state == herald_core::campaign::TaskState::Pending)
        .map(|t| t.planned_at)
        .min()
    {
        return Some(p);
    }
    let last = current.iter().map(|t| t.planned_at).max();
    let mut after = last.unwrap_or(v.created_at.saturating_sub(1));
    if schedule.is_recurring() {
        let grace = st.engine.campaign_config().misfire_grace_ms;
        after = after.max(st.clock.now_ms().saturating_sub(grace));
    }
    schedule.next_after(v.created_at, after)
}

async fn rule_json(st: &AppState, r: RuleRecord) -> Result<RuleJson, ApiError> {
    let tasks = if r.status == RuleStatus::Enabled {
        st.engine
            .store()
            .rule_tasks(r.id, 16)
            .await
            .map_err(store_err)?
    } else {
        Vec::new()
    };
    let next = next_run_at(st, &r, &tasks);
    let s = r.current.spec;
    Ok(RuleJson {
        id: r.id,
        name: s.name,
        status: r.status,
        version: r.current.version,
        schedule: raw(&s.schedule),
        audience: raw(&s.audience),
        audience_id: s.audience_id,
        channel: s.channel,
        message: raw(&s.message),
        deadline_secs: s.deadline_secs,
        priority: s.priority,
        created_at: format_rfc3339_ms(r.created_at),
        updated_at: format_rfc3339_ms(r.updated_at),
        next_run_at: next.map(format_rfc3339_ms),
    })
}

#[derive(Serialize)]
struct VersionJson {
    version: i32,
    name: String,
    schedule: Box<RawValue>,
    audience: Box<RawValue>,
    audience_id: Option<i64>,
    channel: String,
    message: Box<RawValue>,
    deadline_secs: Option<i64>,
    priority: u8,
    created_at: String,
}

impl From<RuleVersion> for VersionJson {
    fn from(v: RuleVersion) -> Self {
        let s = v.spec;
        Self {
            version: v.version,
            name: s.name,
            schedule: raw(&s.schedule),
            audience: raw(&s.audience),
            audience_id: s.audience_id,
            channel: s.channel,
            message: raw(&s.message),
            deadline_secs: s.deadline_secs,
            priority: s.priority,
            created_at: format_rfc3339_ms(v.created_at),
        }
    }
}

#[derive(Serialize)]
struct TaskJobJson {
    id: i64,
    state: herald_core::campaign::JobState,
    totals: TotalsJson,
}

#[derive(Serialize)]
struct TaskJson {
    id: i64,
    rule_id: i64,
    version: i32,
    planned_at: String,
    state: herald_core::campaign::TaskState,
    job_id: Option<i64>,
    recipients: Option<u64>,
    detail: Option<String>,
    created_at: String,
    started_at: Option<String>,
    finished_at: Option<String>,
    /// The job it started, with its totals: how the execution went.
    job: Option<TaskJobJson>,
}

// ---- Handlers ----

fn ok(status: StatusCode, body: impl Serialize) -> Response {
    (status, axum::Json(body)).into_response()
}

/// `POST /v1/rules` → `201` rule.
pub async fn create(State(st): State<AppState>, body: Body) -> Result<Response, ApiError> {
    let bytes = read_body(body, st.api.campaign_body_max_bytes).await?;
    let mut checked = check_rule(&st, &bytes).await?;
    let inline = materialize(&st, &mut checked).await?;
    let now = st.clock.now_ms();
    let rule = match st.engine.store().create_rule(checked.spec, now).await {
        Ok(r) => r,
        Err(e) => {
            drop_inline(&st, inline).await;
            return Err(store_err(e));
        }
    };
    st.engine.wake_planner();
    Ok(ok(StatusCode::CREATED, rule_json(&st, rule).await?))
}

/// `PUT /v1/rules/{id}` → `200` rule at its new version.
pub async fn update(
    State(st): State<AppState>,
    Path(raw_id): Path<String>,
    body: Body,
) -> Result<Response, ApiError> {
    let id = parse_id(&raw_id, "rule")?;
    let bytes = read_body(body, st.api.campaign_body_max_bytes).await?;
    let mut checked = check_rule(&st, &bytes).await?;
    let store = st.engine.store();
    if store.get_rule(id).await.map_err(store_err)?.is_none() {
        return Err(ApiError::not_found("rule"));
    }
    let inline = materialize(&st, &mut checked).await?;
    let now = st.clock.now_ms();
    let rule = match store.update_rule(id, checked.spec, now).await {
        Ok(Some(r)) => r,
        Ok(None) => {
            drop_inline(&st, inline).await;
            return Err(ApiError::not_found("rule"));
        }
        Err(e) => {
            drop_inline(&st, inline).await;
            return Err(store_err(e));
        }
    };
    st.engine.wake_planner();
    Ok(ok(StatusCode::OK, rule_json(&st, rule).await?))
}

/// `POST /v1/rules/{id}:enable` and `POST /v1/rules/{id}:disable` → `200` rule.
pub async fn action(
    State(st): State<AppState>,
    Path(segment): Path<String>,
) -> Result<Response, ApiError> {
    let Some((raw_id, verb)) = segment.split_once(':') else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "unknown_action",
            format!(
                "POST /v1/rules/{segment} needs an action: {segment}:enable or {segment}:disable"
            ),
        ));
    };
    let enabled = match verb {
        "enable" => true,
        "disable" => false,
        _ => {
            return Err(ApiError::new(
                StatusCode::NOT_FOUND,
                "unknown_action",
                format!("no rule action {verb:?}; use :enable or :disable"),
            ));
        }
    };
    let id = parse_id(raw_id, "rule")?;
    let now = st.clock.now_ms();
    let store = st.engine.store();
    let was = store.get_rule(id).await.map_err(store_err)?;
    let mut changed = store
        .set_rule_enabled(id, enabled, now)
        .await
        .map_err(store_err)?;
    // Tasks are append-only and unique per (rule, version, planned_at): the
    // occurrence cancelled by the disable cannot be planned again under the
    // same version. Re-enabling therefore starts a new version with the same
    // content, whose occurrences the planner plans afresh.
    if enabled
        && let (Some(was), Some(r)) = (&was, &changed)
        && was.status == herald_core::campaign::RuleStatus::Disabled
    {
        changed = store
            .update_rule(id, r.current.spec.clone(), now)
            .await
            .map_err(store_err)?;
    }
    match changed {
        Some(r) => {
            st.engine.wake_planner();
            Ok(ok(StatusCode::OK, rule_json(&st, r).await?))
        }
        None => Err(ApiError::not_found("rule")),
    }
}

/// `GET /v1/rules/{id}`.
pub async fn get(
    State(st): State<AppState>,
    Path(raw_id): Path<String>,
) -> Result<Response, ApiError> {
    let id = parse_id(&raw_id, "rule")?;
    match st.engine.store().get_rule(id).await.map_err(store_err)? {
        Some(r) => Ok(ok(StatusCode::OK, rule_json(&st, r).await?)),
        None => Err(ApiError::not_found("rule")),
    }
}

#[derive(Deserialize)]
pub struct ListQuery {
    #[serde(default)]
    after: Option<String>,
    #[serde(default)]
    limit: Option<String>,
}

/// `GET /v1/rules?after=&limit=` → `{rules, next_after}` by id.
pub async fn list(
    State(st): State<AppState>,
    q: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let q = query(q)?;
    let after = int_param("after", &q.after, 0..=i64::MAX)?;
    let limit = int_param("limit", &q.limit, 1..=1000)?.unwrap_or(100) as usize;
    let rules = st
        .engine
        .store()
        .list_rules(after, limit)
        .await
        .map_err(store_err)?;
    let next_after = (rules.len() == limit)
        .then(|| rules.last().map(|r| r.id))
        .flatten();
    let mut out = Vec::with_capacity(rules.len());
    for r in rules {
        out.push(rule_json(&st, r).await?);
    }
    Ok(ok(
        StatusCode::OK,
        serde_json::json!({ "rules": out, "next_after": next_after }),
    ))
}

/// `GET /v1/rules/{id}/versions` → `{versions}`, oldest first.
pub async fn versions(
    State(st): State<AppState>,
    Path(raw_id): Path<String>,
) -> Result<Response, ApiError> {
    let id = parse_id(&raw_id, "rule")?;
    let store = st.engine.store();
    let versions = store.rule_versions(id).await.map_err(store_err)?;
    if versions.is_empty() && store.get_rule(id).await.map_err(store_err)?.is_none() {
        return Err(ApiError::not_found("rule"));
    }
    let out: Vec<VersionJson> = versions.into_iter().map(Into::into).collect();
    Ok(ok(StatusCode::OK, serde_json::json!({ "versions": out })))
}

#[derive(Deserialize)]
pub struct TasksQuery {
    #[serde(default)]
    limit: Option<String>,
}

/// `GET /v1/rules/{id}/tasks?limit=` → `{tasks}`, newest `planned_at` first,
/// each with its job's totals once it has one.
pub async fn tasks(
    State(st): State<AppState>,
    Path(raw_id): Path<String>,
    q: Result<Query<TasksQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let id = parse_id(&raw_id, "rule")?;
    let q = query(q)?;
    let limit = int_param("limit", &q.limit, 1..=1000)?.unwrap_or(100) as usize;
    let store = st.engine.store();
    if store.get_rule(id).await.map_err(store_err)?.is_none() {
        return Err(ApiError::not_found("rule"));
    }
    let tasks = store.rule_tasks(id, limit).await.map_err(store_err)?;
    let mut out = Vec::with_capacity(tasks.len());
    for t in tasks {
        let job = match t.job_id {
            Some(j) => store
                .get_job(j)
                .await
                .map_err(store_err)?
                .map(|j| TaskJobJson {
                    id: j.id,
                    state: j.state,
                    totals: TotalsJson::from(j.totals),
                }),
            None => None,
        };
        out.push(TaskJson {
            id: t.id,
            rule_id: t.rule_id,
            version: t.version,
            planned_at: format_rfc3339_ms(t.planned_at),
            state: t.state,
            job_id: t.job_id,
            recipients: t.recipients,
            detail: t.detail,
            created_at: format_rfc3339_ms(t.created_at),
            started_at: t.started_at.map(format_rfc3339_ms),
            finished_at: t.finished_at.map(format_rfc3339_ms),
            job,
        });
    }
    Ok(ok(StatusCode::OK, serde_json::json!({ "tasks": out })))
}
