//! What each route takes and answers, one row per documented operation.
//! An action route of the table (`POST /v1/jobs/{id}` serving `:cancel`)
//! is documented once per action (`/v1/jobs/{id}:cancel`).

/// A request body.
#[derive(Clone, Copy)]
pub enum Body {
    None,
    /// `application/json`, this schema.
    Json(&'static str),
    /// `application/json`, this schema, or no body at all.
    OptionalJson(&'static str),
    /// `application/x-ndjson`, one line of this schema each.
    Ndjson(&'static str),
    /// Recipients: NDJSON (`{"recipient": ...}` per line) or CSV.
    Recipients,
    /// The provider's XML event.
    Xml,
}

/// A success answer.
#[derive(Clone, Copy)]
pub enum Answer {
    /// `application/json`, this schema.
    Json(&'static str),
    /// `application/x-ndjson`, one line of this schema each.
    Ndjson(&'static str),
    /// `text/plain`.
    Text,
    /// `text/html`.
    Html,
}

/// One documented operation.
#[derive(Clone, Copy)]
pub struct Op {
    /// `GET`, `POST`, `PUT`, `PATCH`, `DELETE`.
    pub method: &'static str,
    /// As documented: the route's path, plus `:action` for an action route.
    pub path: &'static str,
    pub tag: &'static str,
    pub summary: &'static str,
    /// Query parameters.
    pub query: &'static [Param],
    pub body: Body,
    /// Success status and answer.
    pub ok: &'static [(u16, Answer)],
}

/// A query parameter: its name, what it means, and what it takes.
#[derive(Clone, Copy)]
pub struct Param {
    pub name: &'static str,
    pub what: &'static str,
    pub takes: Takes,
}

const fn q(name: &'static str, what: &'static str, takes: Takes) -> Param {
    Param { name, what, takes }
}

/// What a path or query parameter takes, as its handler checks it: the
/// document states exactly this, so a generated value the document calls
/// valid is accepted and one it calls invalid is refused.
#[derive(Clone, Copy)]
pub enum Takes {
    /// Any text; an empty one filters nothing.
    Text,
    /// 1 to this many characters, no control characters.
    Printable(u32),
    /// 1 to this many characters, not all blank, no control characters.
    Label(u32),
    /// A whole number in `min..=max`.
    Int(i64, i64),
    /// One of these words.
    Word(&'static [&'static str]),
    /// A comma-separated list of these words, each at most once.
    Words(&'static [&'static str]),
    /// An RFC 3339 time.
    Time,
    /// A UTC day (`YYYY-MM-DD`) or an RFC 3339 time (its day).
    Day,
    /// Text matching this pattern (ECMA 262).
    Pattern(&'static str),
    /// One of the node's reminder leads (`reminders.leads_minutes`).
    Lead,
}

/// A user or subject id (`http::fields::check_id`), or empty (no cursor).
pub const ID_PATTERN: &str = "^[A-Za-z0-9_.:@-]{1,128}$";
/// The largest id and cursor the API takes (`i64::MAX`).
const BIG: i64 = i64::MAX;

const fn op(
    method: &'static str,
    path: &'static str,
    tag: &'static str,
    summary: &'static str,
    body: Body,
    ok: &'static [(u16, Answer)],
) -> Op {
    Op {
        method,
        path,
        tag,
        summary,
        query: &[],
        body,
        ok,
    }
}

impl Op {
    const fn with_query(mut self, query: &'static [Param]) -> Op {
        self.query = query;
        self
    }

    /// The path of the route table serving this operation: the documented
    /// path less an `:action` after a final `{...}` segment.
    pub fn route_path(&self) -> &'static str {
        match self.path.rfind("}:") {
            Some(i) if !self.path[i..].contains('/') => &self.path[..=i],
            _ => self.path,
        }
    }
}

use Answer::{Json as J, Ndjson as Lines, Text};
use Body::{Json as JsonBody, None as NoBody};

const TIMER: &[(u16, Answer)] = &[(200, J("TimerJson"))];
/// Ascending listings paged by id (`pagination::ASCENDING`).
const AFTER: &[Param] = &[AFTER_ID, LIMIT];
const AFTER_ID: Param = q(
    "after",
    "the `next_after` of the previous page",
    Takes::Int(0, BIG),
);
/// Listings keyed by a user or subject id (`CursorQuery::id_page`).
const ID_CURSOR: Takes = Takes::Pattern("^([A-Za-z0-9_.:@-]{1,128})?$");
/// Listings keyed by a numeric id (`GET /v1/audiences`).
const NUMBER_CURSOR: Takes = Takes::Pattern("^(\\+?0*[1-9][0-9]{0,17})?$");
const LIMIT: Param = q("limit", "rows per page (default 100)", Takes::Int(1, 1000));
const CURSOR_DOC: &str = "the `next_cursor` of the previous page";
/// The states a timer is searched by (`api::timers::search::STORED`).
const TIMER_STATES: &[&str] = &["pending", "done", "failed", "dead", "cancelled", "in_doubt"];
/// `herald_core::reminder::ChannelType`.
const CHANNEL_TYPES: &[&str] = &["app", "email", "sms", "wechat", "wecom"];
/// `herald_store::ReportDim`.
const REPORT_DIMS: &[&str] = &["tenant", "channel", "outcome", "day", "rule", "job"];
/// A tenant's name (`herald_core::tenant::tenant_name_problem`).
pub const TENANT_PATTERN: &str = "^[A-Za-z0-9_.-]{1,64}$";
const TENANT: Takes = Takes::Pattern(TENANT_PATTERN);

/// Every operation of the API.
pub const OPS: &[Op] = &[
    // Timers.
    op(
        "POST",
        "/v1/timers",
        "timers",
        "Schedule a timer (or return the one with its idempotency key)",
        JsonBody("CreateTimer"),
        &[(201, J("TimerJson")), (200, J("TimerJson"))],
    ),
    op(
        "POST",
        "/v1/timers:bulk",
        "timers",
        "Schedule many timers, one JSON object per line",
        Body::Ndjson("CreateTimer"),
        &[(200, Lines("BulkLineResult"))],
    ),
    op(
        "GET",
        "/v1/timers",
        "timers",
        "Search the tenant's timers, by due time",
        NoBody,
        &[(200, J("TimerList"))],
    )
    .with_query(&[
        q(
            "state",
            "only timers in this state",
            Takes::Word(TIMER_STATES),
        ),
        q("channel", "only this channel's", Takes::Text),
        q("recipient", "only this recipient's", Takes::Text),
        q(
            "idempotency_key",
            "only the timer with this key",
            Takes::Text,
        ),
        q(
            "kind",
            "only timers of this kind",
            Takes::Word(&["timer", "reminder", "job"]),
        ),
        q(
            "due_after",
            "only timers due at or after this time",
            Takes::Time,
        ),
        q(
            "due_before",
            "only timers due before this time",
            Takes::Time,
        ),
        q(
            "order",
            "by due time (default asc)",
            Takes::Word(&["asc", "desc"]),
        ),
        q(
            "cursor",
            CURSOR_DOC,
            Takes::Pattern("^([+-]?[0-9]{1,18}\\.[+-]?[0-9]{1,18})?$"),
        ),
        LIMIT,
    ]),
    op(
        "GET",
        "/v1/timers/{id}",
        "timers",
        "A timer, with its message",
        NoBody,
        TIMER,
    ),
    op(
        "PATCH",
        "/v1/timers/{id}",
        "timers",
        "Change a pending timer's time, message or priority",
        JsonBody("TimerPatch"),
        TIMER,
    ),
    op(
        "DELETE",
        "/v1/timers/{id}",
        "timers",
        "Cancel a pending timer",
        NoBody,
        TIMER,
    ),
    op(
        "GET",
        "/v1/timers/{id}/deliveries",
        "timers",
        "A timer's send log, oldest attempt first",
        NoBody,
        &[(200, J("DeliveryList"))],
    ),
    op(
        "POST",
        "/v1/timers/{id}:retry",
        "timers",
        "Start a new series of attempts for a dead or failed timer",
        NoBody,
        TIMER,
    ),
    op(
        "POST",
        "/v1/timers:retry",
        "timers",
        "Replay the dead or failed timers matching a filter",
        JsonBody("RetryFilter"),
        &[(200, J("Retried"))],
    ),
    op(
        "GET",
        "/v1/dead-letters",
        "timers",
        "Dead and failed timers grouped by channel, state and error",
        NoBody,
        &[(200, J("DeadLetters"))],
    )
    .with_query(&[q("channel", "only this channel's", Takes::Text)]),
    // Reminders.
    op(
        "PUT",
        "/v1/subjects/{subject_id}",
        "reminders",
        "Create a subject or move its start (and its reminders)",
        JsonBody("SubjectBody"),
        &[(201, J("SubjectJson")), (200, J("SubjectJson"))],
    ),
    op(
        "GET",
        "/v1/subjects/{subject_id}",
        "reminders",
        "A subject with its subscriber counts and its reminders by channel type and lead",
        NoBody,
        &[(200, J("SubjectDetailJson"))],
    ),
    op(
        "DELETE",
        "/v1/subjects/{subject_id}",
        "reminders",
        "Delete a subject and cancel its reminders",
        NoBody,
        &[(200, J("SubjectJson"))],
    ),
    op(
        "GET",
        "/v1/subjects",
        "reminders",
        "Subjects with subscriber and reminder counts",
        NoBody,
        &[(200, J("SubjectList"))],
    )
    .with_query(&[
        q("cursor", CURSOR_DOC, ID_CURSOR),
        q("limit", "rows per page (default 50)", Takes::Int(1, 500)),
    ]),
    op(
        "POST",
        "/v1/reminders",
        "reminders",
        "Subscribe a user to a subject's reminder",
        JsonBody("ReminderBody"),
        &[(201, J("ReminderJson"))],
    ),
    op(
        "POST",
        "/v1/reminders:bulk",
        "reminders",
        "Subscribe many, one JSON object per line",
        Body::Ndjson("ReminderBody"),
        &[(200, Lines("BulkLineResult"))],
    ),
    op(
        "DELETE",
        "/v1/reminders/{user_id}/{subject_id}",
        "reminders",
        "Cancel a user's reminders of a subject",
        NoBody,
        &[(200, J("RemindersCancelled"))],
    )
    .with_query(&[
        q(
            "channel_type",
            "only this channel type",
            Takes::Word(CHANNEL_TYPES),
        ),
        q(
            "lead_minutes",
            "only this lead: one of `reminders.leads_minutes` (default 5, 10, ... 60)",
            Takes::Lead,
        ),
    ]),
    op(
        "GET",
        "/v1/users/{user_id}/reminders",
        "reminders",
        "A user's reminders by subject",
        NoBody,
        &[(200, J("UserReminders"))],
    ),
    // Audiences.
    // Subscribers.
    op(
        "PUT",
        "/v1/subscribers/{user_id}",
        "subscribers",
        "Create or replace a subscriber's profile",
        JsonBody("SubscriberBody"),
        &[(201, J("SubscriberJson")), (200, J("SubscriberJson"))],
    ),
    op(
        "PATCH",
        "/v1/subscribers/{user_id}",
        "subscribers",
        "Merge a JSON merge patch (RFC 7396) into a subscriber's profile",
        JsonBody("SubscriberPatch"),
        &[(200, J("SubscriberJson"))],
    ),
    op(
        "GET",
        "/v1/subscribers/{user_id}",
        "subscribers",
        "A subscriber",
        NoBody,
        &[(200, J("SubscriberJson"))],
    ),
    op(
        "DELETE",
        "/v1/subscribers/{user_id}",
        "subscribers",
        "Remove a subscriber",
        NoBody,
        &[(200, J("SubscriberJson"))],
    ),
    op(
        "GET",
        "/v1/subscribers",
        "subscribers",
        "The directory, in user-id order",
        NoBody,
        &[(200, J("SubscriberList"))],
    )
    .with_query(&[q("cursor", CURSOR_DOC, ID_CURSOR), LIMIT]),
    op(
        "POST",
        "/v1/subscribers:bulk",
        "subscribers",
        "Create or replace many profiles, one `{user_id, ...profile}` per line",
        Body::Ndjson("SubscriberLine"),
        &[(200, Lines("BulkLineResult"))],
    ),
    op(
        "POST",
        "/v1/audiences",
        "campaigns",
        "Upload an audience (NDJSON or CSV)",
        Body::Recipients,
        &[(201, J("AudienceJson"))],
    )
    .with_query(&[q("name", "a name for the audience", Takes::Printable(200))]),
    op(
        "GET",
        "/v1/audiences",
        "campaigns",
        "Audiences, newest first",
        NoBody,
        &[(200, J("AudienceList"))],
    )
    .with_query(&[q("cursor", CURSOR_DOC, NUMBER_CURSOR), LIMIT]),
    op(
        "GET",
        "/v1/audiences/{id}",
        "campaigns",
        "An audience",
        NoBody,
        &[(200, J("AudienceJson"))],
    ),
    op(
        "DELETE",
        "/v1/audiences/{id}",
        "campaigns",
        "Delete an audience no job or rule names (409 audience_in_use otherwise)",
        NoBody,
        &[(200, J("AudienceJson"))],
    ),
    // Rules.
    op(
        "POST",
        "/v1/rules",
        "campaigns",
        "Create a rule (disabled)",
        JsonBody("RuleBody"),
        &[(201, J("RuleJson"))],
    ),
    op(
        "GET",
        "/v1/rules",
        "campaigns",
        "Rules by id",
        NoBody,
        &[(200, J("RuleList"))],
    )
    .with_query(AFTER),
    op(
        "GET",
        "/v1/rules/{id}",
        "campaigns",
        "A rule",
        NoBody,
        &[(200, J("RuleJson"))],
    ),
    op(
        "PUT",
        "/v1/rules/{id}",
        "campaigns",
        "Replace a rule (a new version)",
        JsonBody("RuleBody"),
        &[(200, J("RuleJson"))],
    ),
    op(
        "POST",
        "/v1/rules/{id}:enable",
        "campaigns",
        "Enable a rule",
        NoBody,
        &[(200, J("RuleJson"))],
    ),
    op(
        "POST",
        "/v1/rules/{id}:disable",
        "campaigns",
        "Disable a rule",
        NoBody,
        &[(200, J("RuleJson"))],
    ),
    op(
        "GET",
        "/v1/rules/{id}/versions",
        "campaigns",
        "A rule's versions, oldest first",
        NoBody,
        &[(200, J("VersionList"))],
    )
    .with_query(AFTER),
    op(
        "GET",
        "/v1/rules/{id}/tasks",
        "campaigns",
        "A rule's runs, newest first",
        NoBody,
        &[(200, J("TaskList"))],
    )
    .with_query(&[LIMIT]),
    op(
        "POST",
        "/v1/schedules:preview",
        "campaigns",
        "The next instants of a schedule, as the planner fires them",
        JsonBody("PreviewRequest"),
        &[(200, J("Preview"))],
    ),
    // Jobs.
    op(
        "POST",
        "/v1/jobs",
        "campaigns",
        "Start a job: one message to an audience",
        JsonBody("JobBody"),
        &[(201, J("JobJson"))],
    ),
    op(
        "GET",
        "/v1/jobs",
        "campaigns",
        "Jobs, newest first",
        NoBody,
        &[(200, J("JobList"))],
    )
    .with_query(&[
        q(
            "before",
            "the `next_before` of the previous page",
            Takes::Int(1, BIG),
        ),
        q("limit", "rows per page (default 50)", Takes::Int(1, 500)),
    ]),
    op(
        "GET",
        "/v1/jobs/{id}",
        "campaigns",
        "A job with its totals and rate",
        NoBody,
        &[(200, J("JobJson"))],
    ),
    op(
        "DELETE",
        "/v1/jobs/{id}",
        "campaigns",
        "Delete a finished job with its segments and send log (409 job_not_finished otherwise)",
        NoBody,
        &[(200, J("JobJson"))],
    ),
    op(
        "POST",
        "/v1/jobs/{id}:cancel",
        "campaigns",
        "Cancel a job",
        NoBody,
        &[(200, J("JobJson"))],
    ),
    op(
        "POST",
        "/v1/jobs/{id}:retry-failed",
        "campaigns",
        "Send again to a job's failed recipients",
        NoBody,
        &[(200, J("JobRetried"))],
    ),
    op(
        "POST",
        "/v1/jobs/{id}:retry-in-doubt",
        "campaigns",
        "Send again to a job's recipients a crash left in doubt",
        NoBody,
        &[(200, J("JobRetried"))],
    ),
    op(
        "POST",
        "/v1/jobs/{id}:recall",
        "campaigns",
        "Recall every message of a job the provider still allows (WeCom: 24 h)",
        NoBody,
        &[(200, J("JobRecalled"))],
    ),
    op(
        "GET",
        "/v1/jobs/{id}/segments",
        "campaigns",
        "A job's segments",
        NoBody,
        &[(200, J("SegmentList"))],
    )
    .with_query(AFTER),
    op(
        "GET",
        "/v1/jobs/{id}/sends",
        "campaigns",
        "A job's sends in a range of recipient indexes, or those with one outcome",
        NoBody,
        &[(200, J("SendList"))],
    )
    .with_query(&[
        q(
            "start",
            "without outcome: the first index (default 0)",
            Takes::Int(0, BIG),
        ),
        q(
            "end",
            "without outcome: the index after the last, at most start + 1000 (default)",
            Takes::Int(0, BIG),
        ),
        q(
            "outcome",
            "only this outcome, paged by after and limit (not with start or end)",
            Takes::Word(&["delivered", "retry", "failed", "expired", "in_doubt"]),
        ),
        q(
            "after",
            "with outcome: the `next_after` of the previous page",
            Takes::Int(0, BIG),
        ),
        q(
            "limit",
            "with outcome: rows per page (default 100)",
            Takes::Int(1, 1000),
        ),
    ]),
    op(
        "GET",
        "/v1/jobs/{id}/failures",
        "campaigns",
        "A job's failed sends grouped by error",
        NoBody,
        &[(200, J("JobFailures"))],
    ),
    // Channels.
    op(
        "GET",
        "/v1/channels",
        "channels",
        "Every channel with its state, outcomes and rate",
        NoBody,
        &[(200, J("ChannelList"))],
    ),
    op(
        "POST",
        "/v1/channels/{name}:pause",
        "channels",
        "Hold a channel's deliveries, cluster-wide",
        Body::OptionalJson("PauseRequest"),
        &[(200, J("Channel"))],
    ),
    op(
        "POST",
        "/v1/channels/{name}:resume",
        "channels",
        "Resume a paused channel",
        NoBody,
        &[(200, J("Channel"))],
    ),
    op(
        "GET",
        "/v1/channels/{name}/callback",
        "channels",
        "The provider's URL check (echoes its challenge)",
        NoBody,
        &[(200, Text)],
    ),
    op(
        "POST",
        "/v1/channels/{name}/callback",
        "channels",
        "A provider's delivery report",
        Body::Xml,
        &[(200, Text)],
    ),
    op(
        "POST",
        "/v1/deliveries/{id}:recall",
        "channels",
        "Recall a delivered message at the provider",
        NoBody,
        &[(200, J("Recalled"))],
    ),
    op(
        "POST",
        "/v1/receipts",
        "channels",
        "Record that a sent message was delivered, read or clicked",
        JsonBody("ReceiptBody"),
        &[(200, J("ReceiptJson"))],
    ),
    // Keys and audit.
    op(
        "POST",
        "/v1/keys",
        "access",
        "Create an API key (its secret is shown once)",
        JsonBody("CreateKey"),
        &[(201, J("KeyCreated"))],
    ),
    op(
        "GET",
        "/v1/keys",
        "access",
        "API keys by id",
        NoBody,
        &[(200, J("KeyList"))],
    )
    .with_query(&[q("tenant", "only this tenant's", TENANT), AFTER_ID, LIMIT]),
    op(
        "DELETE",
        "/v1/keys/{id}",
        "access",
        "Revoke an API key",
        NoBody,
        &[(200, J("KeyJson"))],
    ),
    op(
        "GET",
        "/v1/audit",
        "access",
        "Who did what, newest first",
        NoBody,
        &[(200, J("AuditList"))],
    )
    .with_query(&[
        q("tenant", "admin: this tenant's; a key: its own", TENANT),
        q("since", "only entries at or after this time", Takes::Time),
        q("cursor", CURSOR_DOC, Takes::Int(1, BIG)),
        LIMIT,
    ]),
    // Operations.
    op(
        "GET",
        "/v1/reports",
        "operations",
        "Stored delivery counts per day, tenant, channel, outcome, rule and job",
        NoBody,
        &[(200, J("Report"))],
    )
    .with_query(&[
        q(
            "group_by",
            "comma-separated, each once (default day,channel,outcome; empty: one total)",
            Takes::Words(REPORT_DIMS),
        ),
        q("from", "the first UTC day", Takes::Day),
        q(
            "to",
            "the last UTC day, included (not before from)",
            Takes::Day,
        ),
        q("tenant", "admin: this tenant's; a key: its own", TENANT),
        q("channel", "only this channel", Takes::Label(128)),
        q(
            "outcome",
            "only this outcome (delivered, retry, failed, dead, ...)",
            Takes::Label(128),
        ),
        q("rule", "only this rule's jobs", Takes::Int(1, BIG)),
        q("job", "only this job", Takes::Int(1, BIG)),
        q("limit", "rows (default 1000)", Takes::Int(1, 10_000)),
    ]),
    op(
        "GET",
        "/v1/overview",
        "operations",
        "Live figures for the console: rates, lateness, counts, nodes",
        NoBody,
        &[(200, J("Overview"))],
    ),
    op(
        "GET",
        "/v1/stats",
        "operations",
        "Timers by state, and this node's figures",
        NoBody,
        &[(200, J("Stats"))],
    ),
    op(
        "GET",
        "/v1/cluster",
        "operations",
        "Nodes, shards and leases",
        NoBody,
        &[(200, J("Cluster"))],
    ),
    op(
        "POST",
        "/v1/admin:reload",
        "operations",
        "Re-read the configuration file and apply what changes without a restart",
        NoBody,
        &[(200, J("ReloadReport"))],
    ),
    op(
        "GET",
        "/healthz",
        "operations",
        "Liveness",
        NoBody,
        &[(200, J("Status"))],
    ),
    op(
        "GET",
        "/readyz",
        "operations",
        "Readiness: the store answers, the loops run, the leases are current",
        NoBody,
        &[(200, J("Status"))],
    ),
    op(
        "GET",
        "/metrics",
        "operations",
        "Prometheus metrics",
        NoBody,
        &[(200, Text)],
    ),
    op(
        "GET",
        "/openapi.json",
        "operations",
        "This document",
        NoBody,
        &[(200, J("Object"))],
    ),
    op(
        "GET",
        "/docs",
        "operations",
        "The interactive reference (HTML)",
        NoBody,
        &[(200, Answer::Html)],
    ),
];
