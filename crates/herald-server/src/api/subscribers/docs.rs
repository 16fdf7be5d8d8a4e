//! How `/v1/subscribers` is documented: one doc per handler, named after it
//! (`PUT` for [`super::put`]), which the route table (`crate::routes`) names
//! beside the route.

use crate::openapi::operations::{Answer, CURSOR_DOC, Doc, ID_CURSOR, LIMIT, Tag, q};
use Answer::{Json as J, Ndjson as Lines};

const fn doc(summary: &'static str, ok: &'static [(u16, Answer)]) -> Doc {
    Doc::new(Tag::Subscribers, summary, ok)
}

const SUBSCRIBER: &[(u16, Answer)] = &[(200, J("SubscriberJson"))];

pub(crate) const PUT: Doc = doc(
    "Create or replace a subscriber's profile",
    &[(201, J("SubscriberJson")), (200, J("SubscriberJson"))],
);
pub(crate) const PATCH: Doc = doc(
    "Merge a JSON merge patch (RFC 7396) into a subscriber's profile",
    SUBSCRIBER,
);
pub(crate) const GET: Doc = doc("A subscriber", SUBSCRIBER);
pub(crate) const DELETE: Doc = doc("Remove a subscriber", SUBSCRIBER);
pub(crate) const LIST: Doc = doc(
    "The directory, in user-id order",
    &[(200, J("SubscriberList"))],
)
.query(&[q("cursor", CURSOR_DOC, ID_CURSOR), LIMIT]);
pub(crate) const GRANTS_RECORD: Doc = doc(
    "Record the mini-program subscribe grants of one tap on \"Allow\"",
    &[
        (201, J("GrantsRecordedJson")),
        (200, J("GrantsRecordedJson")),
    ],
);
pub(crate) const GRANTS_LIST: Doc = doc(
    "A subscriber's subscribe grants, by channel and template",
    &[(200, J("GrantList"))],
);
pub(crate) const BULK: Doc = doc(
    "Create or replace many profiles, one `{user_id, ...profile}` per line",
    &[(200, Lines("BulkLineResult"))],
);
