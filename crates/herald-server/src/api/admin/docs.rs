//! How keys, the audit log, reports and the node's own routes are
//! documented: one doc per handler, named after its module and itself
//! (`KEYS_CREATE` for [`super::keys::create`]), which the route table
//! (`crate::routes`) names beside the route.

use crate::openapi::operations::{
    AFTER_ID, Answer, BIG, Doc, LIMIT, TENANT_PATTERN, Tag, Takes, q,
};
use Answer::{Json as J, Text};
use Tag::{Access, Operations};

/// `herald_store::ReportDim`.
const REPORT_DIMS: &[&str] = &["tenant", "channel", "outcome", "day", "rule", "job"];
const TENANT: Takes = Takes::Pattern(TENANT_PATTERN);
const STATUS: &[(u16, Answer)] = &[(200, J("Status"))];

// Keys and audit.
pub(crate) const KEYS_CREATE: Doc = Doc::new(
    Access,
    "Create an API key (its secret is shown once)",
    &[(201, J("KeyCreated"))],
);
pub(crate) const KEYS_LIST: Doc = Doc::new(Access, "API keys by id", &[(200, J("KeyList"))])
    .query(&[q("tenant", "only this tenant's", TENANT), AFTER_ID, LIMIT]);
pub(crate) const KEYS_REVOKE: Doc = Doc::new(Access, "Revoke an API key", &[(200, J("KeyJson"))]);
pub(crate) const AUDIT_LIST: Doc = Doc::new(
    Access,
    "Who did what, newest first",
    &[(200, J("AuditList"))],
)
.query(&[
    q("tenant", "admin: this tenant's; a key: its own", TENANT),
    q("since", "only entries at or after this time", Takes::Time),
    q(
        "key",
        "only this key's entries: its id, or the name entries record (admin for the admin key)",
        Takes::Label(64),
    ),
    q(
        "route",
        "only this recorded route (/v1/jobs/{id}:cancel), or with a final * every route starting so (/v1/jobs*)",
        Takes::Pattern(AUDIT_ROUTE_PATTERN),
    ),
    q(
        "status",
        "only this status (404) or class (4xx)",
        Takes::Pattern("^[1-5]([0-9][0-9]|[xX][xX])$"),
    ),
    q(
        "order",
        "desc (the default): newest first; asc: oldest first",
        Takes::Word(&["desc", "asc"]),
    ),
    q(
        "cursor",
        crate::openapi::operations::CURSOR_DOC,
        Takes::Int(1, BIG),
    ),
    LIMIT,
]);
/// `route=` of `GET /v1/audit`: `*` (folded tallies), a pattern, or a
/// pattern's start and a final `*`.
const AUDIT_ROUTE_PATTERN: &str = "^(\\*|/[^*]{0,255}\\*?)$";

// Operations.
pub(crate) const REPORT: Doc = Doc::new(
    Operations,
    "Stored delivery counts per day, tenant, channel, outcome, rule and job",
    &[(200, J("Report"))],
)
.query(&[
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
]);
pub(crate) const OVERVIEW: Doc = Doc::new(
    Operations,
    "Live figures for the console: rates, lateness, counts, nodes",
    &[(200, J("Overview"))],
);
pub(crate) const FORECAST: Doc = Doc::new(
    Operations,
    "What falls due in the next hour or day, per channel, against each channel's rate",
    &[(200, J("Forecast"))],
)
.query(&[q(
    "horizon",
    "hour (per minute, the default) or day (per quarter hour)",
    Takes::Word(&["hour", "day"]),
)]);
pub(crate) const STATS: Doc = Doc::new(
    Operations,
    "Timers by state, and this node's figures",
    &[(200, J("Stats"))],
);
pub(crate) const CLUSTER: Doc = Doc::new(
    Operations,
    "Nodes, shards and leases",
    &[(200, J("Cluster"))],
);
pub(crate) const RELOAD: Doc = Doc::new(
    Operations,
    "Re-read the configuration file and apply what changes without a restart",
    &[(200, J("ReloadReport"))],
);
pub(crate) const HEALTHZ: Doc = Doc::new(Operations, "Liveness", STATUS);
pub(crate) const READYZ: Doc = Doc::new(
    Operations,
    "Readiness: the store answers, the loops run, the leases are current",
    STATUS,
);
pub(crate) const METRICS: Doc = Doc::new(Operations, "Prometheus metrics", &[(200, Text)]);
