//! What one route needs (a scope, a body type), and the layer that holds
//! every request to it. The table of policies is `crate::routes`.

use axum::extract::Request;
use axum::response::{IntoResponse, Response};

use super::caller::Caller;
use super::media::Payload;
use super::refusal;
use super::scope::Scope;

/// The methods the API uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Verb {
    Get,
    Post,
    Put,
    Delete,
    Patch,
}

impl Verb {
    pub const ALL: [Verb; 5] = [Verb::Get, Verb::Post, Verb::Put, Verb::Delete, Verb::Patch];

    /// The verb of an HTTP method the API uses.
    pub fn of(method: &axum::http::Method) -> Option<Verb> {
        use axum::http::Method;
        match *method {
            Method::GET => Some(Verb::Get),
            Method::POST => Some(Verb::Post),
            Method::PUT => Some(Verb::Put),
            Method::DELETE => Some(Verb::Delete),
            Method::PATCH => Some(Verb::Patch),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "GET",
            Verb::Post => "POST",
            Verb::Put => "PUT",
            Verb::Delete => "DELETE",
            Verb::Patch => "PATCH",
        }
    }
}

/// Who may call a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Anyone, without a key (`/healthz`, `/readyz`).
    Nothing,
    /// A caller holding this scope.
    Scope(Scope),
    /// A provider callback: the provider's signature when the channel
    /// checks one (the guard lets such a request through without a key and
    /// the handler verifies it), otherwise a caller holding this scope.
    Signed(Scope),
}

/// One route's policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    pub verb: Verb,
    /// The route pattern, e.g. `/v1/timers/{id}`.
    pub path: &'static str,
    pub need: Need,
    pub payload: Payload,
}

impl Policy {
    /// Whether a request to this route may change state: what is audited,
    /// and what must never be a `GET`.
    pub fn changes_state(&self) -> bool {
        self.verb != Verb::Get
    }
}

/// Holds a request to its route's policy: the scope (`403`), then the body
/// type (`415`); the refusal, or `None` to let it on. The caller was set by
/// the guard; a route that needs a scope and finds none refuses (`401`), so
/// a router assembled without the guard is closed, not open.
pub fn refusal_of(policy: &Policy, req: &Request) -> Option<Response> {
    let needed = match policy.need {
        Need::Nothing => None,
        Need::Scope(scope) => Some(scope),
        // Without a caller the handler checks the signature, and refuses
        // when the channel has none to check.
        Need::Signed(scope) => req.extensions().get::<Caller>().map(|_| scope),
    };
    if let Some(scope) = needed {
        let Some(caller) = req.extensions().get::<Caller>() else {
            tracing::error!(
                route = policy.path,
                "a route that needs a scope was reached without a caller"
            );
            return Some(refusal::unauthorized("this route needs an API key", false));
        };
        if !caller.may(scope) {
            tracing::debug!(
                route = policy.path,
                method = policy.verb.as_str(),
                scope = scope.as_str(),
                key_id = caller.key_id,
                "refused: missing scope"
            );
            return Some(
                refusal::forbidden(format!(
                    "this key does not hold the \"{scope}\" scope, which {} {} needs",
                    policy.verb.as_str(),
                    policy.path
                ))
                .into_response(),
            );
        }
    }
    if let Err(sent) = policy.payload.check(req.headers()) {
        return Some(
            refusal::unsupported_media_type(sent.as_deref(), policy.payload.expected())
                .into_response(),
        );
    }
    None
}
