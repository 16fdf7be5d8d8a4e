//! Who created and who last changed a rule, a job or a task, as the API
//! shows it (`created_by`, `changed_by`): the API key's id and name, kept on
//! the row so it outlives the audit log.

use herald_store::Actor;
use serde::Serialize;

use crate::access::Caller;

/// An API key that made a change. The admin key has a name (`admin`) and
/// no id; a change made in open access (no key) or by the node itself (the
/// planner, a follow-up) has no actor at all (`null`).
#[derive(Serialize, utoipa::ToSchema, Debug, Clone, PartialEq, Eq)]
pub(crate) struct ActorJson {
    /// The stored key's id (`GET /v1/keys`); null for the admin key.
    pub key_id: Option<i64>,
    /// The key's name.
    pub key_name: Option<String>,
}

impl ActorJson {
    pub(crate) fn of(a: Option<Actor>) -> Option<ActorJson> {
        a.map(|a| ActorJson {
            key_id: a.key_id,
            key_name: a.key_name,
        })
    }
}

/// The actor a request acts as: its key, or `None` in open access.
pub(crate) fn of_caller(c: &Caller) -> Option<Actor> {
    Actor::of(c.key_id, c.key_name.clone())
}
