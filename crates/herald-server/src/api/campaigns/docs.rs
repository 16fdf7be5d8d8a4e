//! How `/v1/audiences`, `/v1/rules`, `/v1/schedules:preview` and `/v1/jobs`
//! are documented: one doc per handler, named after its module and itself
//! (`JOB_CREATE` for [`super::jobs::create`]), and for an action route one
//! per action; the route table (`crate::routes`) names each beside its route.

use crate::openapi::operations::{
    AFTER, ActionDoc, Answer, BIG, CURSOR_DOC, Doc, LIMIT, Tag, Takes, q,
};
use Answer::Json as J;

const fn doc(summary: &'static str, ok: &'static [(u16, Answer)]) -> Doc {
    Doc::new(Tag::Campaigns, summary, ok)
}

const AUDIENCE: &[(u16, Answer)] = &[(200, J("AudienceJson"))];
const RULE: &[(u16, Answer)] = &[(200, J("RuleJson"))];
const JOB: &[(u16, Answer)] = &[(200, J("JobJson"))];
/// Listings keyed by a numeric id (`GET /v1/audiences`).
const NUMBER_CURSOR: Takes = Takes::Pattern("^(\\+?0*[1-9][0-9]{0,17})?$");

// Audiences.
pub(crate) const AUDIENCE_UPLOAD: Doc = doc(
    "Upload an audience (NDJSON or CSV)",
    &[(201, J("AudienceJson"))],
)
.query(&[q("name", "a name for the audience", Takes::Printable(200))]);
pub(crate) const AUDIENCE_LIST: Doc = doc("Audiences, newest first", &[(200, J("AudienceList"))])
    .query(&[q("cursor", CURSOR_DOC, NUMBER_CURSOR), LIMIT]);
pub(crate) const AUDIENCE_GET: Doc = doc("An audience", AUDIENCE);
pub(crate) const AUDIENCE_DELETE: Doc = doc(
    "Delete an audience no job or rule names (409 audience_in_use otherwise)",
    AUDIENCE,
);

// Rules.
pub(crate) const RULE_CREATE: Doc = doc("Create a rule (disabled)", &[(201, J("RuleJson"))]);
pub(crate) const RULE_LIST: Doc = doc("Rules by id", &[(200, J("RuleList"))]).query(AFTER);
pub(crate) const RULE_GET: Doc = doc("A rule", RULE);
pub(crate) const RULE_UPDATE: Doc = doc("Replace a rule (a new version)", RULE);
/// `:enable`, `:disable`.
pub(crate) const RULE_ACTIONS: &[ActionDoc] = &[
    doc("Enable a rule", RULE).action("enable"),
    doc("Disable a rule", RULE).action("disable"),
];
pub(crate) const RULE_VERSIONS: Doc = doc(
    "A rule's versions, oldest first",
    &[(200, J("VersionList"))],
)
.query(AFTER);
pub(crate) const RULE_TASKS: Doc =
    doc("A rule's runs, newest first", &[(200, J("TaskList"))]).query(&[LIMIT]);
/// `:cancel`.
pub(crate) const TASK_ACTIONS: &[ActionDoc] = &[doc(
    "Cancel one pending task of a rule (the rule plans on; 409 task_not_pending once started)",
    &[(200, J("TaskJson"))],
)
.action("cancel")];
pub(crate) const SCHEDULE_PREVIEW: Doc = doc(
    "The next instants of a schedule, as the planner fires them",
    &[(200, J("Preview"))],
);

// Jobs.
pub(crate) const JOB_CREATE: Doc = doc(
    "Start a job: one message to an audience",
    &[(201, J("JobJson"))],
);
pub(crate) const JOB_LIST: Doc = doc("Jobs, newest first", &[(200, J("JobList"))]).query(&[
    q(
        "before",
        "the `next_before` of the previous page",
        Takes::Int(1, BIG),
    ),
    q("limit", "rows per page (default 50)", Takes::Int(1, 500)),
    q(
        "category",
        "only jobs of exactly this category",
        Takes::Pattern(super::job_labels::CATEGORY_PATTERN),
    ),
    q(
        "name",
        "only jobs whose name starts with this (case-sensitive)",
        Takes::Printable(200),
    ),
]);
pub(crate) const JOB_GET: Doc = doc("A job with its totals and rate", JOB);
pub(crate) const JOB_DELETE: Doc = doc(
    "Delete a finished job with its segments and send log (409 job_not_finished otherwise)",
    JOB,
);
/// `:cancel`, `:retry-failed`, `:retry-in-doubt`, `:recall`, `:resend-unread`.
pub(crate) const JOB_ACTIONS: &[ActionDoc] = &[
    doc("Cancel a job", JOB).action("cancel"),
    doc(
        "Send again to a job's failed recipients",
        &[(200, J("JobRetried"))],
    )
    .action("retry-failed"),
    doc(
        "Send again to a job's recipients a crash left in doubt",
        &[(200, J("JobRetried"))],
    )
    .action("retry-in-doubt"),
    doc(
        "Recall every message of a job the provider still allows (WeCom: 24 h)",
        &[(200, J("JobRecalled"))],
    )
    .action("recall"),
    doc(
        "Start a new job now to an ended job's unread recipients (409 not_resendable, \
         nobody_unread, resend_running)",
        &[(201, J("JobJson"))],
    )
    .action("resend-unread")
    .optional_body("ResendBody"),
];
pub(crate) const JOB_SEGMENTS: Doc =
    doc("A job's segments", &[(200, J("SegmentList"))]).query(AFTER);
pub(crate) const JOB_SENDS: Doc = doc(
    "A job's sends in a range of recipient indexes, or those with one outcome",
    &[(200, J("SendList"))],
)
.query(&[
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
    q(
        "recipient",
        "only this recipient's row, found in the job's audience (alone)",
        Takes::Printable(256),
    ),
]);
pub(crate) const JOB_FAILURES: Doc = doc(
    "A job's failed sends grouped by error",
    &[(200, J("JobFailures"))],
);
