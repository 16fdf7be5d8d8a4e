//! How `/v1/timers` and `/v1/dead-letters` are documented: one doc per
//! handler, named after it (`CREATE` for [`super::create`]), which the route
//! table (`crate::routes`) names beside the route.

use crate::openapi::operations::{ActionDoc, Answer, CURSOR_DOC, Doc, LIMIT, Param, Tag, Takes, q};
use Answer::{Json as J, Ndjson as Lines};

const fn doc(summary: &'static str, ok: &'static [(u16, Answer)]) -> Doc {
    Doc::new(Tag::Timers, summary, ok)
}

const TIMER: &[(u16, Answer)] = &[(200, J("TimerJson"))];
/// The states a timer is searched by (`search::STORED`).
const TIMER_STATES: &[&str] = &["pending", "done", "failed", "dead", "cancelled", "in_doubt"];

pub(crate) const CREATE: Doc = doc(
    "Schedule a timer (or return the one with its idempotency key)",
    &[(201, J("TimerJson")), (200, J("TimerJson"))],
);
pub(crate) const CREATE_BULK: Doc = doc(
    "Schedule many timers, one JSON object per line",
    &[(200, Lines("BulkLineResult"))],
);
pub(crate) const GET: Doc = doc("A timer, with its message", TIMER);
pub(crate) const CANCEL: Doc = doc("Cancel a pending timer", TIMER);
pub(crate) const DELIVERIES: Doc = doc(
    "A timer's send log, oldest attempt first",
    &[(200, J("DeliveryList"))],
);
pub(crate) const LIST: Doc = doc(
    "Search the tenant's timers, by due time",
    &[(200, J("TimerList"))],
)
.query(SEARCH);
const SEARCH: &[Param] = &[
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
];
pub(crate) const PATCH: Doc = doc("Change a pending timer's time, message or priority", TIMER);
/// `POST /v1/timers/{id}:retry`.
pub(crate) const ACTIONS: &[ActionDoc] = &[doc(
    "Start a new series of attempts for a dead or failed timer",
    TIMER,
)
.action("retry")];
pub(crate) const RETRY_MATCHING: Doc = doc(
    "Replay the dead or failed timers matching a filter",
    &[(200, J("Retried"))],
);
pub(crate) const DEAD_LETTERS: Doc = doc(
    "Dead and failed timers grouped by channel, state and error",
    &[(200, J("DeadLetters"))],
)
.query(&[q("channel", "only this channel's", Takes::Text)]);
