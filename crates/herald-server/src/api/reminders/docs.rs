//! How `/v1/subjects`, `/v1/reminders` and a user's reminders are
//! documented: one doc per handler, named after it (`PUT_SUBJECT` for
//! [`super::put_subject`]), which the route table (`crate::routes`) names
//! beside the route.

use crate::openapi::operations::{Answer, CURSOR_DOC, Doc, ID_CURSOR, Tag, Takes, q};
use Answer::{Json as J, Ndjson as Lines};

const fn doc(summary: &'static str, ok: &'static [(u16, Answer)]) -> Doc {
    Doc::new(Tag::Reminders, summary, ok)
}

/// `herald_core::reminder::ChannelType`.
const CHANNEL_TYPES: &[&str] = &["app", "email", "sms", "wechat", "wecom"];

pub(crate) const PUT_SUBJECT: Doc = doc(
    "Create a subject or move its start (and its reminders)",
    &[(201, J("SubjectJson")), (200, J("SubjectJson"))],
);
pub(crate) const GET_SUBJECT: Doc = doc(
    "A subject with its subscriber counts and its reminders by channel type and lead",
    &[(200, J("SubjectDetailJson"))],
);
pub(crate) const DELETE_SUBJECT: Doc = doc(
    "Delete a subject and cancel its reminders",
    &[(200, J("SubjectJson"))],
);
pub(crate) const LIST_SUBJECTS: Doc = doc(
    "Subjects with subscriber and reminder counts",
    &[(200, J("SubjectList"))],
)
.query(&[
    q("cursor", CURSOR_DOC, ID_CURSOR),
    q("limit", "rows per page (default 50)", Takes::Int(1, 500)),
]);
pub(crate) const CREATE: Doc = doc(
    "Subscribe a user to a subject's reminder",
    &[(201, J("ReminderJson"))],
);
pub(crate) const CREATE_BULK: Doc = doc(
    "Subscribe many, one JSON object per line",
    &[(200, Lines("BulkLineResult"))],
);
pub(crate) const CANCEL: Doc = doc(
    "Cancel a user's reminders of a subject",
    &[(200, J("RemindersCancelled"))],
)
.query(&[
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
]);
pub(crate) const LIST_FOR_USER: Doc = doc(
    "A user's reminders by subject",
    &[(200, J("UserReminders"))],
);
