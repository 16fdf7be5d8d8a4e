//! The layer that records every request that may change state, once it is
//! answered: who (from the caller the guard set), what (method and route
//! pattern), which resource (the id in the path, or the id a `201` names),
//! and the status. Refused requests of a recognised caller are recorded as
//! well; those refused before any key was recognised are counted instead
//! (see [`super::tally`]): anyone can make them. Never a body, an address or
//! a secret.

use std::sync::Arc;

use axum::body::{Body, HttpBody};
use axum::extract::Request;
use axum::http::{Method, StatusCode, header};
use axum::response::Response;
use herald_core::{Clock, DEFAULT_TENANT, TenantId};
use herald_store::NewAuditEntry;
use http_body_util::BodyExt;
use serde::Deserialize;

use super::tally::{self, RefusalKey};
use super::writer::AuditLog;
use crate::access::{Caller, Policy, Unrecognised, Verb};
use crate::openapi::operations::{ActionDoc, Docs};
use crate::routes;

/// Largest `201` body read for its `id`: created records are small; a big
/// body is not copied just for the audit.
const MAX_CREATED_BODY: u64 = 64 * 1024;

/// The routes that create data one record at a time (method, pattern):
/// recorded only when the audit log is told to ([`AuditLog::data_plane`]).
pub const DATA_PLANE: &[(Method, &str)] = &[
    (Method::POST, "/v1/timers"),
    (Method::POST, "/v1/reminders"),
    (Method::PUT, "/v1/subscribers/{user_id}"),
];

/// Whether a request to `pattern` that was answered `status` is left out of
/// the audit log (data is not audited, and access control refused nothing).
fn data_left_out(
    log: &AuditLog,
    method: &Method,
    pattern: Option<&str>,
    status: StatusCode,
) -> bool {
    !log.data_plane()
        && status != StatusCode::FORBIDDEN
        && pattern.is_some_and(|p| DATA_PLANE.iter().any(|(m, d)| m == method && *d == p))
}

/// Longest route or resource id kept.
const MAX_FIELD: usize = 256;

/// The tenant an answer's entry is recorded under when it is not the
/// caller's: a handler that changes what belongs to another tenant (the
/// admin making or revoking a tenant's key) puts it on its response, so the
/// entry shows in that tenant's own audit log.
#[derive(Clone, Copy, Debug)]
pub struct AuditedTenant(pub TenantId);

/// What the layer is given.
#[derive(Clone)]
pub struct Recorder {
    pub log: AuditLog,
    pub clock: Arc<dyn Clock>,
}

/// The audit step of the API's edge (`http::edge`): answers the request
/// through `next`, then queues its entry.
pub async fn record<N, F>(r: &Recorder, req: Request, next: N) -> Response
where
    N: FnOnce(Request) -> F,
    F: Future<Output = Response>,
{
    if matches!(*req.method(), Method::GET | Method::HEAD) {
        // Reads are not recorded; their refusals before a key still count.
        let resp = next(req).await;
        if let Some(reason) = unrecognised(&resp) {
            tally::count(reason);
        }
        return resp;
    }
    let method = req.method().clone();
    let (route, resource_id) = route_of(req.method(), req.uri().path());
    let resp = next(req).await;
    let status = resp.status();
    if let Some(reason) = unrecognised(&resp) {
        let key = RefusalKey::new(reason, &method, route.pattern, status.as_u16());
        r.log.refused(key, r.clock.now_ms());
        return resp;
    }
    if data_left_out(&r.log, &method, route.pattern, status) {
        return resp;
    }
    let (resp, resource_id) = match resource_id {
        None if status == StatusCode::CREATED => created_id(resp).await,
        known => (resp, known),
    };
    let caller = resp.extensions().get::<Caller>();
    r.log.record(NewAuditEntry {
        at: r.clock.now_ms(),
        key_id: caller.and_then(|c| c.key_id),
        key_name: caller.and_then(|c| c.key_name.clone()),
        tenant: match resp.extensions().get::<AuditedTenant>() {
            Some(owner) => owner.0,
            None => caller.map_or(DEFAULT_TENANT, |c| c.tenant),
        },
        method: method.as_str().to_string(),
        route: route.shown,
        resource_id,
        status: status.as_u16(),
        count: 1,
        reason: None,
    });
    resp
}

/// Why a response refused a request before any key was recognised: the
/// reason the guard gave, or, for a route served without a key, any
/// client error (a provider callback whose signature does not check out).
/// `None` when a caller was known, or for what no client can cause at will
/// (the keys could not be read), which stays one entry each.
fn unrecognised(resp: &Response) -> Option<Unrecognised> {
    if resp.extensions().get::<Caller>().is_some() {
        return None;
    }
    if let Some(reason) = resp.extensions().get::<Unrecognised>() {
        return Some(*reason);
    }
    resp.status()
        .is_client_error()
        .then_some(Unrecognised::PublicRoute)
}

/// The route a request went to.
struct Route {
    /// Its pattern, when a route serves the path.
    pattern: Option<&'static str>,
    /// What an entry shows: the pattern, or the path as it was sent (cut to
    /// a bound).
    shown: String,
}

/// The route a request went to and the ids in its path (joined by `/`).
/// On an action route (`POST /v1/jobs/{id}` serving `/v1/jobs/7:cancel`)
/// the entry shows the action after the pattern (`/v1/jobs/{id}:cancel`)
/// and the id without it; an action the route does not know shows as `:*`
/// (what was sent is not written: any caller could put text there).
fn route_of(method: &Method, path: &str) -> (Route, Option<String>) {
    match routes::matching(Verb::of(method), path) {
        Some((policy, mut values)) => {
            let mut shown = policy.path.to_string();
            if let Some(known) = actions_of(&policy)
                && let Some(last) = values.last_mut()
            {
                let (id, action) = match last.split_once(':') {
                    Some((id, action)) => (id, Some(action)),
                    None => (*last, None),
                };
                *last = id;
                if let Some(action) = action {
                    shown.push(':');
                    match known.iter().find(|a| a.name == action) {
                        Some(a) => shown.push_str(a.name),
                        None => shown.push('*'),
                    }
                }
            }
            let resource = (!values.is_empty()).then(|| bounded(&values.join("/")));
            let route = Route {
                pattern: Some(policy.path),
                shown,
            };
            (route, resource)
        }
        None => {
            let route = Route {
                pattern: None,
                shown: bounded(path),
            };
            (route, None)
        }
    }
}

/// The actions of an action route (as the route table documents them);
/// `None` for every other route.
fn actions_of(policy: &Policy) -> Option<&'static [ActionDoc]> {
    routes::TABLE
        .iter()
        .find(|r| r.policy.verb == policy.verb && r.policy.path == policy.path)
        .and_then(|r| match r.docs {
            Docs::Actions(actions) => Some(actions),
            Docs::One(_) => None,
        })
}

/// At most [`MAX_FIELD`] bytes of `s`, cut on a character boundary.
fn bounded(s: &str) -> String {
    if s.len() <= MAX_FIELD {
        return s.to_string();
    }
    let mut end = MAX_FIELD;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// Only `id` is read from a created record; the rest is skipped unparsed.
#[derive(Deserialize)]
struct Created {
    id: Option<serde_json::Value>,
}

/// The `"id"` of a `201` JSON body of known, small size. The body is put
/// back as it was.
async fn created_id(resp: Response) -> (Response, Option<String>) {
    let json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/json"));
    let small = HttpBody::size_hint(resp.body())
        .exact()
        .is_some_and(|n| n <= MAX_CREATED_BODY);
    if !json || !small {
        return (resp, None);
    }
    let (parts, body) = resp.into_parts();
    let bytes = match body.collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            // An in-memory body does not fail; if one did, the client gets
            // what a broken stream would have given it.
            tracing::error!(error = %e, "a created record's body could not be read");
            return (Response::from_parts(parts, Body::empty()), None);
        }
    };
    let id = serde_json::from_slice::<Created>(&bytes)
        .ok()
        .and_then(|c| c.id)
        .and_then(|id| match id {
            serde_json::Value::Number(n) => Some(n.to_string()),
            serde_json::Value::String(s) => Some(bounded(&s)),
            _ => None,
        });
    (Response::from_parts(parts, Body::from(bytes)), id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_and_resources_of_paths() {
        let r = |m: Method, p: &str| {
            let (route, resource) = route_of(&m, p);
            if let Some(pattern) = route.pattern {
                assert!(route.shown.starts_with(pattern), "{}", route.shown);
            }
            (route.shown, resource)
        };
        assert_eq!(route_of(&Method::POST, "/v1/nope").0.pattern, None);
        assert_eq!(
            route_of(&Method::DELETE, "/v1/timers/12").0.pattern,
            Some("/v1/timers/{id}")
        );
        assert_eq!(r(Method::POST, "/v1/timers"), ("/v1/timers".into(), None));
        assert_eq!(
            r(Method::DELETE, "/v1/timers/12"),
            ("/v1/timers/{id}".into(), Some("12".into()))
        );
        // An action route keeps the action it served, and only one it knows.
        assert_eq!(
            r(Method::POST, "/v1/rules/3:disable"),
            ("/v1/rules/{id}:disable".into(), Some("3".into()))
        );
        assert_eq!(
            r(Method::POST, "/v1/jobs/7:cancel"),
            ("/v1/jobs/{id}:cancel".into(), Some("7".into()))
        );
        assert_eq!(
            r(Method::POST, "/v1/jobs/7:drop%20table"),
            ("/v1/jobs/{id}:*".into(), Some("7".into()))
        );
        assert_eq!(
            r(Method::POST, "/v1/jobs/7"),
            ("/v1/jobs/{id}".into(), Some("7".into()))
        );
        assert_eq!(
            r(Method::POST, "/v1/rules/3/tasks/9:cancel"),
            (
                "/v1/rules/{id}/tasks/{task_id}:cancel".into(),
                Some("3/9".into())
            )
        );
        assert_eq!(
            r(Method::POST, "/v1/timers:retry"),
            ("/v1/timers:retry".into(), None)
        );
        // Elsewhere a `:` is part of the id.
        assert_eq!(
            r(Method::DELETE, "/v1/reminders/alice/s:1"),
            (
                "/v1/reminders/{user_id}/{subject_id}".into(),
                Some("alice/s:1".into())
            )
        );
        assert_eq!(
            r(Method::DELETE, "/v1/reminders/alice/s-1"),
            (
                "/v1/reminders/{user_id}/{subject_id}".into(),
                Some("alice/s-1".into())
            )
        );
        assert_eq!(r(Method::POST, "/v1/nope"), ("/v1/nope".into(), None));
        let long = format!("/{}", "é".repeat(300));
        let (route, _) = r(Method::POST, &long);
        assert!(route.len() <= MAX_FIELD && long.starts_with(&route));
    }
}
