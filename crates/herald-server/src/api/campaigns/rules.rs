//! `/v1/rules`: versioned send rules. A rule says what to send to whom
//! through which channel, and when (`immediate`, `at`, or `cron`); every
//! change is a new version, and every execution an append-only task that can
//! be traced to its version and its job (`docs/architecture.md`, "Rules").
//! The engine's campaign service writes them and plans their tasks.

use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Extension, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use herald_core::TenantId;
use herald_core::campaign::RuleStatus;
use herald_core::schedule::{Schedule, ScheduleError, ScheduleSpec};
use herald_core::time::{format_rfc3339_ms, parse_rfc3339_ms};
use herald_engine::campaign::{NewRule, RuleView, TaskView};
use herald_store::{RuleSpec, RuleVersion};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::access::Caller;
use crate::api::campaigns::actors::{self, ActorJson};
use crate::api::campaigns::jobs::{FollowUpBody, TotalsJson, check_follow_up};
use crate::api::campaigns::receivers::{self, AudienceTarget};
use crate::api::campaigns::routing::{
    self as campaign_routing, CampaignTo, RoutingFields, RoutingJson,
};
use crate::http::error::ApiError;
use crate::http::fields::{
    MAX_DEADLINE_SECS, check_priority, check_users, recipient_problem, unknown_channel,
};
use crate::http::json_body;
use crate::http::pagination::{ASCENDING, PageQuery};
use crate::http::request::{
    NoQuery, action as split_action, int_param, parse_id, query, read_body,
};
use crate::http::route_steps::RouteStep;
use crate::http::state::AppState;
use crate::http::text::{Text, check_opt_text, check_text};

/// Longest rule name, in bytes.
pub const MAX_NAME_BYTES: usize = 200;
/// Most parties, and most tags, a rule may name.
pub const MAX_FANOUT_TARGETS: usize = 1000;
/// An `at` further in the past than this is refused.
pub const AT_PAST_GRACE_MS: i64 = 60_000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[derive(utoipa::ToSchema)]
pub(crate) struct RuleBody {
    name: String,
    #[schema(value_type = Object)]
    schedule: ScheduleSpec,
    audience: AudienceTarget,
    /// A configured channel; left out, the first step of `route` (or, with
    /// `to` and no route, of the tenant's default route, `[routing]`).
    #[serde(default)]
    channel: Option<String>,
    /// The message in the channel provider's shape; give this or `template`.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    message: Option<Box<RawValue>>,
    /// Render each recipient's message from a stored template when a job of
    /// the rule sends (the latest version then, unless one is pinned).
    #[serde(default)]
    template: Option<crate::http::validate::TemplateUse>,
    #[serde(default)]
    deadline_secs: Option<i64>,
    #[serde(default)]
    priority: Option<i64>,
    /// The audience's users are user ids routed through the subscriber
    /// directory when a job of the rule sends (as a job's `to`).
    #[serde(default)]
    to: Option<CampaignTo>,
    /// What the message is about, for subscribers' topic opt-outs.
    #[serde(default)]
    topic: Option<String>,
    /// Sent in quiet hours too; never past an opt-out.
    #[serde(default)]
    critical: Option<bool>,
    /// A fallback route (with `to`): each later step is a follow-up job of
    /// every task's job, as a job's `route`.
    #[serde(default)]
    route: Option<Vec<RouteStep>>,
    /// A message sent later to the recipients who did not read a job of
    /// the rule: every job the rule starts carries it, as a job's
    /// `follow_up`. Not with `route`.
    #[serde(default)]
    follow_up: Option<FollowUpBody>,
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

/// The schedule's strings hold no control character; their syntax is
/// [`Schedule::compile`]'s to check.
pub(crate) fn check_schedule_text(s: &ScheduleSpec) -> Result<(), ApiError> {
    match s {
        ScheduleSpec::Immediate => Ok(()),
        ScheduleSpec::At { at } => check_text("schedule.at", at, Text::Id),
        ScheduleSpec::Cron {
            cron,
            timezone,
            exclude_dates,
            start_at,
            end_at,
            calendar,
            days: _,
        } => {
            check_text("schedule.cron", cron, Text::Id)?;
            check_opt_text("schedule.calendar", calendar.as_deref(), Text::Id)?;
            check_text("schedule.timezone", timezone, Text::Id)?;
            for (i, d) in exclude_dates.iter().enumerate() {
                check_text(&format!("schedule.exclude_dates[{i}]"), d, Text::Id)?;
            }
            check_opt_text("schedule.start_at", start_at.as_deref(), Text::Id)?;
            check_opt_text("schedule.end_at", end_at.as_deref(), Text::Id)
        }
    }
}

/// `spec` compiled with the calendar it names, as `tenant` has it now (its
/// own, else the built-in one): an unknown one is a 400 on `schedule.calendar`.
pub(crate) async fn compile_schedule(
    st: &AppState,
    tenant: TenantId,
    spec: &ScheduleSpec,
) -> Result<Schedule, ApiError> {
    herald_engine::campaign::calendars::compile(st.engine.store().as_ref(), tenant, spec)
        .await?
        .map_err(schedule_error)
}

/// A schedule the API refuses, as the client sees it.
pub(crate) fn schedule_error(e: ScheduleError) -> ApiError {
    ApiError::field(&e.field, "invalid_schedule", e.message)
}

/// `Ok` when `schedule` fires no more often, from `from` on, than the
/// floor of `[api] rule_min_interval_secs`.
pub(crate) fn check_interval(
    st: &AppState,
    schedule: &Schedule,
    from: i64,
) -> Result<(), ApiError> {
    let floor_ms =
        i64::try_from(st.api.rule_min_interval_secs.saturating_mul(1000)).unwrap_or(i64::MAX);
    schedule.check_interval(from, floor_ms).map_err(|e| {
        let mut e = schedule_error(e);
        e.body.message.push_str(" ([api] rule_min_interval_secs)");
        e
    })
}

/// What a new or changed schedule must do besides compiling: fire after
/// `now`, and not more often than the floor.
fn check_new_schedule(st: &AppState, schedule: &Schedule, now: i64) -> Result<(), ApiError> {
    schedule.check_fires(now).map_err(schedule_error)?;
    check_interval(st, schedule, now)
}

/// Reads and checks a rule body. Whether an `audience_id` names a sealed
/// audience is the campaign service's to check. `current` is the schedule
/// of the rule being changed: kept as it is, it is not judged again (a rule
/// stored before a check or a floor existed keeps working).
async fn check_rule(
    st: &AppState,
    tenant: TenantId,
    bytes: &[u8],
    current: Option<&ScheduleSpec>,
) -> Result<NewRule, ApiError> {
    let mut req: RuleBody = json_body::object(bytes)?;
    let now = st.clock.now_ms();
    let (channel, route) =
        campaign_routing::channel_and_route(st, tenant, req.channel, req.route, req.to.as_mut())?;

    if req.name.is_empty() || req.name.len() > MAX_NAME_BYTES {
        return Err(ApiError::field(
            "name",
            "invalid_field",
            format!("name must be 1..={MAX_NAME_BYTES} bytes"),
        ));
    }
    check_text("name", &req.name, Text::Id)?;
    check_schedule_text(&req.schedule)?;
    check_text("channel", &channel, Text::Id)?;
    let schedule = compile_schedule(st, tenant, &req.schedule).await?;
    if current != Some(&req.schedule) {
        check_new_schedule(st, &schedule, now)?;
    }
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
    let fans_out = match st
        .engine
        .channel_fans_out(&channel)
        .filter(|_| st.access.channels().serves(&channel, tenant))
    {
        Some(f) => f,
        None => {
            return Err(unknown_channel(
                "channel",
                &channel,
                &st.channel_names_for(tenant),
            ));
        }
    };
    crate::http::fields::no_campaign_on_grants(st.engine.channel_kind(&channel))?;
    let (message, template) = crate::http::validate::campaign_content(
        req.message.as_deref(),
        req.template,
        st.engine.channel_kind(&channel),
        tenant,
        &st.engine.templates().library(),
    )?;
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
    let follow_up = check_follow_up(req.follow_up, st.engine.channel_kind(&channel))?;
    if follow_up.is_some() && route.is_some() {
        return Err(ApiError::field(
            "follow_up",
            "invalid_field",
            "a rule with a route sends its later steps as its jobs' follow-ups: give \
             follow_up or route, not both",
        ));
    }

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
    if a.audience_id.is_some() && (non_empty(&a.parties) || non_empty(&a.tags)) {
        return Err(ApiError::field(
            "audience.audience_id",
            "invalid_field",
            "give parties and tags with users, or on their own, not with an uploaded \
             audience (add them to the upload as party:ID and tag:ID lines instead)",
        ));
    }
    if let Some(users) = &a.users {
        check_users("audience.users", users, st.api.rule_max_users)?;
    }
    check_targets("audience.parties", &a.parties, &channel, fans_out)?;
    check_targets("audience.tags", &a.tags, &channel, fans_out)?;
    if req.to.is_some() && (non_empty(&a.parties) || non_empty(&a.tags)) {
        return Err(ApiError::field(
            "to",
            "invalid_field",
            "to resolves user ids through the subscriber directory; parties and tags \
             are the provider's groups, not subscribers: send them in a rule without to",
        ));
    }
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
    let routing = crate::http::validate::with_template(routing, template);
    let routing = campaign_routing::with_route(st, tenant, routing, route, &channel, &message)?;

    let schedule = serde_json::to_string(&req.schedule)
        .map_err(|_| ApiError::unavailable("could not encode the schedule"))?;
    let audience = serde_json::to_string(&req.audience)
        .map_err(|_| ApiError::unavailable("could not encode the audience"))?;
    // Departments and tags travel as recipients `party:ID` and `tag:ID` of the
    // rule's inline audience, which a fan-out channel (WeCom) sends as
    // `toparty` and `totag`, a hundred of each per call.
    let targets = |list: &Option<Vec<String>>, kind: &str| -> Vec<String> {
        list.iter()
            .flatten()
            .map(|id| format!("{kind}:{id}"))
            .collect()
    };
    let users: Vec<String> = a
        .users
        .iter()
        .flatten()
        .cloned()
        .chain(targets(&a.parties, "party"))
        .chain(targets(&a.tags, "tag"))
        .collect();
    let users = (!users.is_empty()).then_some(users);
    Ok(NewRule {
        spec: RuleSpec {
            tenant,
            name: req.name,
            schedule,
            audience,
            audience_id: a.audience_id,
            channel,
            message,
            deadline_secs,
            priority,
            routing,
            follow_up,
        },
        users,
    })
}

// ---- JSON ----

fn raw(text: &str) -> Box<RawValue> {
    // The store keeps what the API validated; `null` only if a row was damaged.
    RawValue::from_string(text.to_string()).unwrap_or_default()
}

#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct RuleJson {
    id: i64,
    name: String,
    #[schema(value_type = String)]
    status: RuleStatus,
    version: i32,
    #[schema(value_type = Object)]
    schedule: Box<RawValue>,
    #[schema(value_type = Object)]
    audience: Box<RawValue>,
    /// The audience its jobs send to (uploaded, or built from `users`).
    audience_id: Option<i64>,
    channel: String,
    #[schema(value_type = Object)]
    message: Box<RawValue>,
    deadline_secs: Option<i64>,
    priority: u8,
    created_at: String,
    updated_at: String,
    /// The API key that created it; null in open access.
    created_by: Option<ActorJson>,
    /// The API key that last changed it (a new version, enable, disable).
    changed_by: Option<ActorJson>,
    /// When the rule sends next; `null` unless enabled.
    next_run_at: Option<String>,
    /// `GET /v1/rules/{id}` only: how many recipients its jobs send to (the
    /// size of its audience), or null when that cannot be known before a
    /// job sends (see `expected_receivers_unknown`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<u64>)]
    expected_receivers: Option<Option<u64>>,
    /// Why `expected_receivers` is null (parties or tags, which the provider
    /// expands itself; an audience upload not finished).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    expected_receivers_unknown: Option<&'static str>,
    /// Its follow-up to the unread, carried by every job it starts.
    #[serde(skip_serializing_if = "Option::is_none")]
    follow_up: Option<RuleFollowUpJson>,
    /// `to`, `topic` and `critical`, when given.
    #[serde(flatten)]
    routing: RoutingJson,
}

/// A rule version's `follow_up`, as given.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct RuleFollowUpJson {
    after_secs: i64,
    #[schema(value_type = Object)]
    message: Box<RawValue>,
    /// `unread`.
    only: &'static str,
}

impl RuleFollowUpJson {
    fn of(f: Option<&herald_store::FollowUp>) -> Option<Self> {
        f.map(|f| Self {
            after_secs: f.after_ms / 1000,
            message: raw(&f.message),
            only: "unread",
        })
    }
}

impl From<RuleView> for RuleJson {
    fn from(v: RuleView) -> Self {
        let r = v.rule;
        let s = r.current.spec;
        Self {
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
            follow_up: RuleFollowUpJson::of(s.follow_up.as_ref()),
            routing: RoutingJson::of(s.routing.as_deref()),
            created_at: format_rfc3339_ms(r.created_at),
            updated_at: format_rfc3339_ms(r.updated_at),
            created_by: ActorJson::of(r.created_by),
            changed_by: ActorJson::of(r.changed_by),
            next_run_at: v.next_run_at.map(format_rfc3339_ms),
            expected_receivers: None,
            expected_receivers_unknown: None,
        }
    }
}

#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct VersionJson {
    version: i32,
    name: String,
    #[schema(value_type = Object)]
    schedule: Box<RawValue>,
    #[schema(value_type = Object)]
    audience: Box<RawValue>,
    audience_id: Option<i64>,
    channel: String,
    #[schema(value_type = Object)]
    message: Box<RawValue>,
    deadline_secs: Option<i64>,
    priority: u8,
    created_at: String,
    /// The version's follow-up to the unread, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    follow_up: Option<RuleFollowUpJson>,
    #[serde(flatten)]
    routing: RoutingJson,
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
            follow_up: RuleFollowUpJson::of(s.follow_up.as_ref()),
            routing: RoutingJson::of(s.routing.as_deref()),
        }
    }
}

#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct TaskJobJson {
    id: i64,
    #[schema(value_type = String)]
    state: herald_core::campaign::JobState,
    totals: TotalsJson,
}

#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct TaskJson {
    id: i64,
    rule_id: i64,
    version: i32,
    planned_at: String,
    #[schema(value_type = String)]
    state: herald_core::campaign::TaskState,
    job_id: Option<i64>,
    recipients: Option<u64>,
    detail: Option<String>,
    created_at: String,
    started_at: Option<String>,
    finished_at: Option<String>,
    /// The planner plans every task: this is the key that last changed its
    /// rule when it was planned (null in open access).
    created_by: Option<ActorJson>,
    /// The key that ended it early (disabling the rule, cancelling its job).
    changed_by: Option<ActorJson>,
    /// The job it started, with its totals: how the execution went.
    job: Option<TaskJobJson>,
}

impl From<TaskView> for TaskJson {
    fn from(v: TaskView) -> Self {
        let t = v.task;
        Self {
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
            created_by: ActorJson::of(t.created_by),
            changed_by: ActorJson::of(t.changed_by),
            job: v.job.map(|j| TaskJobJson {
                id: j.id,
                state: j.state,
                totals: TotalsJson::from(j.totals),
            }),
        }
    }
}

// ---- Handlers ----

fn ok(status: StatusCode, body: impl Serialize) -> Response {
    (status, axum::Json(body)).into_response()
}

/// `POST /v1/rules` → `201` rule.
pub async fn create(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    body: Body,
) -> Result<Response, ApiError> {
    let bytes = read_body(body, st.api.campaign_body_max_bytes).await?;
    let rule = check_rule(&st, caller.tenant, &bytes, None).await?;
    let by = actors::of_caller(&caller);
    let created = st.campaigns.create_rule(caller.tenant, rule, by).await?;
    Ok(ok(StatusCode::CREATED, RuleJson::from(created)))
}

/// `PUT /v1/rules/{id}` → `200` rule at its new version.
pub async fn update(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    Path(raw_id): Path<String>,
    body: Body,
) -> Result<Response, ApiError> {
    let id = parse_id(&raw_id, "rule")?;
    let bytes = read_body(body, st.api.campaign_body_max_bytes).await?;
    // A rule that cannot be read here is refused by the update itself.
    let current = st
        .campaigns
        .get_rule(caller.tenant, id)
        .await
        .ok()
        .and_then(|v| serde_json::from_str::<ScheduleSpec>(&v.rule.current.spec.schedule).ok());
    let rule = check_rule(&st, caller.tenant, &bytes, current.as_ref()).await?;
    let by = actors::of_caller(&caller);
    let updated = st
        .campaigns
        .update_rule(caller.tenant, id, rule, by)
        .await?;
    Ok(ok(StatusCode::OK, RuleJson::from(updated)))
}

/// `POST /v1/rules/{id}:enable` and `POST /v1/rules/{id}:disable` → `200` rule.
pub async fn action(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    Path(segment): Path<String>,
) -> Result<Response, ApiError> {
    let (raw_id, verb) = split_action(&segment, "rules", "rule", &["enable", "disable"])?;
    let id = parse_id(raw_id, "rule")?;
    let rule = st
        .campaigns
        .set_rule_enabled(
            caller.tenant,
            id,
            verb == "enable",
            actors::of_caller(&caller),
        )
        .await?;
    Ok(ok(StatusCode::OK, RuleJson::from(rule)))
}

/// `POST /v1/rules/{id}/tasks/{task_id}:cancel` → `200` the task, now
/// `cancelled` (or already so: the same answer again); `409
/// task_not_pending` once it started or ended otherwise. The rule keeps
/// its status and plans its next occurrence.
pub async fn task_action(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    Path((raw_id, segment)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let id = parse_id(&raw_id, "rule")?;
    let (raw_task, _) = split_action(&segment, "rules/{id}/tasks", "task", &["cancel"])?;
    let task_id = parse_id(raw_task, "task")?;
    let by = actors::of_caller(&caller);
    let task = st
        .campaigns
        .cancel_task(caller.tenant, id, task_id, by)
        .await?;
    Ok(ok(StatusCode::OK, TaskJson::from(task)))
}

/// `GET /v1/rules/{id}`.
pub async fn get(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    Path(raw_id): Path<String>,
) -> Result<Response, ApiError> {
    let id = parse_id(&raw_id, "rule")?;
    let rule = st.campaigns.get_rule(caller.tenant, id).await?;
    let expected = receivers::of_rule(&st, caller.tenant, &rule.rule).await?;
    let mut json = RuleJson::from(rule);
    json.expected_receivers = Some(expected.count);
    json.expected_receivers_unknown = expected.reason;
    Ok(ok(StatusCode::OK, json))
}

/// `GET /v1/rules`'s answer: a page of rules by id.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct RuleList {
    /// Pass as `after` for the next page; `null` on the last.
    next_after: Option<i64>,
    rules: Vec<RuleJson>,
}

/// `GET /v1/rules/{id}/versions`'s answer: a page of versions, oldest first.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct VersionList {
    next_after: Option<i64>,
    versions: Vec<VersionJson>,
}

/// `GET /v1/rules?after=&limit=` → `{rules, next_after}` by id.
pub async fn list(
    State(st): State<AppState>,
    Extension(caller): Extension<Caller>,
    q: Result<Query<PageQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let page = ASCENDING.read(q)?;
    let rules = st
        .campaigns
        .list_rules(caller.tenant, page.cursor, page.limit)
        .await?;
    let last = rules.last().map(|r| r.rule.id);
    let next_after = page.next_cursor(rules.len(), last);
    let rules = rules.into_iter().map(Into::into).collect();
    Ok(axum::Json(RuleList { next_after, rules }).into_response())
}

/// `GET /v1/rules/{id}/versions?after=&limit=` → `{versions, next_after}`,
/// oldest first; the cursor is a version number.
pub async fn versions(
    State(st): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(raw_id): Path<String>,
    q: Result<Query<PageQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let id = parse_id(&raw_id, "rule")?;
    let page = ASCENDING.read(q)?;
    // Versions are `i32`: a cursor past the largest one has nothing after it.
    let after = page.cursor.map(|c| i32::try_from(c).unwrap_or(i32::MAX));
    let versions = st
        .campaigns
        .rule_versions(caller.tenant, id, after, page.limit)
        .await?;
    let last = versions.last().map(|v| i64::from(v.version));
    let next_after = page.next_cursor(versions.len(), last);
    let versions = versions.into_iter().map(Into::into).collect();
    Ok(axum::Json(VersionList {
        next_after,
        versions,
    })
    .into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TasksQuery {
    #[serde(default)]
    limit: Option<String>,
}

/// `GET /v1/rules/{id}/tasks`'s answer.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct TaskList {
    tasks: Vec<TaskJson>,
}

/// `GET /v1/rules/{id}/tasks?limit=` → `{tasks}`, newest `planned_at` first,
/// each with its job's totals once it has one.
pub async fn tasks(
    State(st): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(raw_id): Path<String>,
    q: Result<Query<TasksQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let id = parse_id(&raw_id, "rule")?;
    let q = query(q)?;
    let limit = int_param("limit", &q.limit, 1..=1000)?.unwrap_or(100) as usize;
    let tasks = st.campaigns.rule_tasks(caller.tenant, id, limit).await?;
    let mut out = Vec::with_capacity(tasks.len());
    for t in tasks {
        let job = t.job.as_ref().map(|j| (j.id, j.totals));
        let mut json = TaskJson::from(t);
        if let (Some((job_id, totals)), Some(j)) = (job, json.job.as_mut()) {
            j.totals = TotalsJson::of_job(&st, job_id, totals).await?;
        }
        out.push(json);
    }
    Ok(ok(StatusCode::OK, TaskList { tasks: out }))
}
