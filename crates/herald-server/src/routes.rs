//! Every route in one table, declared once: its method, path, policy (the
//! scope it needs and the body it takes) and handler. The policy table
//! [`ROUTES`] and the router ([`api_routes`]) are both derived from it. The
//! router is assembled through [`RouteSet`], which puts each route's policy
//! in front of its handler and remembers what it registered; a route added
//! outside the table is served closed (admin only), and a test checks that
//! none is.
//!
//! An action route (`POST /v1/jobs/{id}` serving `/v1/jobs/7:cancel`) shares
//! its path with the item's other methods, so the router alone would answer
//! `GET /v1/jobs/7:cancel` with the job handler and list `POST` in the
//! `Allow` of `PUT /v1/jobs/7`. [`allowed_methods`] answers both as the
//! document describes them: an action path serves `POST` only, and the
//! item's path serves its other methods.

use axum::extract::Request;
use axum::handler::Handler;
use axum::http::{HeaderValue, Method, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, delete, get, patch, post, put};

use crate::access::{Need, Payload, Policy, Scope, Verb, enforce};
use crate::api::campaigns::{audiences, jobs, rules, schedules};
use crate::api::{admin, channels, reminders, subscribers, timers};
use crate::http::state::AppState;
use crate::http::{body_admission, body_limits};
use crate::openapi::serve as openapi;
use Need::{Nothing, Scope as Needs, Signed};
use Payload::{Action, Json, Ndjson, None as NoBody, Recipients, Xml};
use Scope::{Admin, Campaign, Metrics, Read, Write};
use Verb::{Delete, Get, Patch, Post, Put};

const fn route(verb: Verb, path: &'static str, need: Need, payload: Payload) -> Policy {
    Policy {
        verb,
        path,
        need,
        payload,
    }
}

/// Declares the route table once: each route's method, path, policy (the
/// scope it needs and the body it takes) and handler, and a body limit for
/// the few routes whose handler reads with a fixed one. [`ROUTES`] (the
/// policies the guard, the audit log and the document read) and
/// [`api_routes`] (the router) are both made from it, so a route cannot be
/// served without its policy nor have a policy it is not served under.
macro_rules! route_table {
    ($(
        $verb:ident $path:literal, $need:expr, $payload:ident => $handler:expr
            $(, body_limit $limit:expr)?;
    )*) => {
        /// The route table. `read` is every GET of a tenant's data; `write`
        /// what reaches one recipient; `campaign` what sends to many; `admin`
        /// channel actions, keys, and views of the whole node or cluster.
        pub const ROUTES: &[Policy] = &[$(route($verb, $path, $need, $payload)),*];

        /// Every route of the table, each behind its policy.
        pub fn api_routes() -> RouteSet {
            RouteSet::new()
                $(.add(
                    $verb,
                    $path,
                    method_router($verb, $handler)
                        $(.layer(axum::extract::DefaultBodyLimit::max($limit)))?,
                ))*
        }
    };
}

route_table! {
    Post "/v1/timers", Needs(Write), Json => timers::create;
    Post "/v1/timers:bulk", Needs(Write), Ndjson => timers::create_bulk;
    Get "/v1/timers/{id}", Needs(Read), NoBody => timers::get;
    Delete "/v1/timers/{id}", Needs(Write), NoBody => timers::cancel;
    Get "/v1/timers/{id}/deliveries", Needs(Read), NoBody => timers::deliveries;
    Get "/v1/timers", Needs(Read), NoBody => timers::search::list;
    Patch "/v1/timers/{id}", Needs(Write), Json => timers::changes::patch;
    // `POST /v1/timers/{id}:retry`.
    Post "/v1/timers/{id}", Needs(Write), Action => timers::changes::action;
    // Replays every dead or failed timer a filter matches.
    Post "/v1/timers:retry", Needs(Campaign), Json => timers::changes::retry_matching;
    Get "/v1/dead-letters", Needs(Read), NoBody => timers::search::dead_letters;
    Put "/v1/subjects/{subject_id}", Needs(Write), Json => reminders::put_subject;
    Get "/v1/subjects", Needs(Read), NoBody => reminders::subjects::list;
    Get "/v1/subjects/{subject_id}", Needs(Read), NoBody => reminders::subjects::get;
    Delete "/v1/subjects/{subject_id}", Needs(Write), NoBody => reminders::delete_subject;
    Post "/v1/reminders", Needs(Write), Json => reminders::create;
    Post "/v1/reminders:bulk", Needs(Write), Ndjson => reminders::create_bulk;
    Delete "/v1/reminders/{user_id}/{subject_id}", Needs(Write), NoBody => reminders::cancel;
    Get "/v1/users/{user_id}/reminders", Needs(Read), NoBody => reminders::list_for_user;
    Get "/v1/subscribers", Needs(Read), NoBody => subscribers::list;
    Post "/v1/subscribers:bulk", Needs(Write), Ndjson => subscribers::bulk;
    Put "/v1/subscribers/{user_id}", Needs(Write), Json => subscribers::put;
    Patch "/v1/subscribers/{user_id}", Needs(Write), Json => subscribers::patch;
    Get "/v1/subscribers/{user_id}", Needs(Read), NoBody => subscribers::get;
    Delete "/v1/subscribers/{user_id}", Needs(Write), NoBody => subscribers::delete;
    Post "/v1/audiences", Needs(Campaign), Recipients => audiences::upload;
    Get "/v1/audiences", Needs(Read), NoBody => audiences::list;
    Get "/v1/audiences/{id}", Needs(Read), NoBody => audiences::get;
    Delete "/v1/audiences/{id}", Needs(Campaign), NoBody => audiences::delete;
    Post "/v1/rules", Needs(Campaign), Json => rules::create;
    Get "/v1/rules", Needs(Read), NoBody => rules::list;
    Get "/v1/rules/{id}", Needs(Read), NoBody => rules::get;
    Put "/v1/rules/{id}", Needs(Campaign), Json => rules::update;
    // `:enable`, `:disable`: the action is split off the segment.
    Post "/v1/rules/{id}", Needs(Campaign), Action => rules::action;
    Get "/v1/rules/{id}/versions", Needs(Read), NoBody => rules::versions;
    Get "/v1/rules/{id}/tasks", Needs(Read), NoBody => rules::tasks;
    // Computes, changes nothing.
    Post "/v1/schedules:preview", Needs(Read), Json => schedules::preview;
    Post "/v1/jobs", Needs(Campaign), Json => jobs::create;
    Get "/v1/jobs", Needs(Read), NoBody => jobs::list;
    Get "/v1/jobs/{id}", Needs(Read), NoBody => jobs::get;
    // Finished jobs only.
    Delete "/v1/jobs/{id}", Needs(Campaign), NoBody => jobs::delete;
    // `:cancel`, `:retry-failed`, `:retry-in-doubt`, `:recall`.
    Post "/v1/jobs/{id}", Needs(Campaign), Action => jobs::action;
    Get "/v1/jobs/{id}/segments", Needs(Read), NoBody => jobs::segments;
    Get "/v1/jobs/{id}/sends", Needs(Read), NoBody => jobs::sends;
    Get "/v1/jobs/{id}/failures", Needs(Read), NoBody => jobs::failures;
    Get "/v1/channels", Needs(Admin), NoBody => channels::list;
    // `:pause` (optional JSON body), `:resume`.
    Post "/v1/channels/{name}", Needs(Admin), Action => channels::pause_action;
    // Signed by the provider when the channel has a `callback_token`.
    Get "/v1/channels/{name}/callback", Signed(Admin), NoBody => channels::handshake;
    Post "/v1/channels/{name}/callback", Signed(Admin), Xml => channels::callback, body_limit body_limits::CALLBACK_MAX_BYTES;
    // `POST /v1/deliveries/{id}:recall`.
    Post "/v1/deliveries/{id}", Needs(Admin), Action => channels::action;
    // What an app (or a relayed provider callback) reports after a send.
    Post "/v1/receipts", Needs(Write), Json => channels::receipts::record;
    Post "/v1/keys", Needs(Admin), Json => admin::keys::create, body_limit body_limits::KEYS_MAX_BYTES;
    Get "/v1/keys", Needs(Admin), NoBody => admin::keys::list;
    Delete "/v1/keys/{id}", Needs(Admin), NoBody => admin::keys::revoke;
    // A key reads its own tenant's entries; the admin every tenant's.
    Get "/v1/audit", Needs(Read), NoBody => admin::audit::list;
    // Stored delivery counts: a key its tenant's, the admin every tenant's.
    Get "/v1/reports", Needs(Read), NoBody => admin::reports::report;
    Get "/v1/stats", Needs(Admin), NoBody => admin::ops::stats;
    Get "/v1/cluster", Needs(Admin), NoBody => admin::ops::cluster;
    // Re-reads the configuration file and applies what changes live.
    Post "/v1/admin:reload", Needs(Admin), Action => admin::reload::reload;
    // A key sees its tenant's figures; the admin every tenant's.
    Get "/v1/overview", Needs(Read), NoBody => admin::overview::overview;
    Get "/healthz", Nothing, NoBody => admin::ops::healthz;
    Get "/readyz", Nothing, NoBody => admin::ops::readyz;
    Get "/metrics", Needs(Metrics), NoBody => admin::ops::metrics;
    Get "/openapi.json", Nothing, NoBody => openapi::openapi_json;
    Get "/docs", Nothing, NoBody => openapi::docs;
}

/// The policy of a route, if the table has it.
pub fn policy(verb: Verb, path: &str) -> Option<Policy> {
    ROUTES
        .iter()
        .find(|p| p.verb == verb && p.path == path)
        .copied()
}

/// The route of the table that serves `path` with `verb`, or failing that
/// one that serves `path` with another verb (a `405`), with the values of
/// its `{...}` segments in order. Matches as the router does: a `{...}`
/// segment takes any non-empty segment, other segments must be equal.
pub fn matching(verb: Option<Verb>, path: &str) -> Option<(Policy, Vec<&str>)> {
    let served = |p: &&Policy| path_params(p.path, path).map(|v| (**p, v));
    ROUTES
        .iter()
        .filter(|p| Some(p.verb) == verb)
        .find_map(|p| served(&p))
        .or_else(|| ROUTES.iter().find_map(|p| served(&p)))
}

/// The values of `pattern`'s `{...}` segments in `path`, if it matches.
fn path_params<'a>(pattern: &str, path: &'a str) -> Option<Vec<&'a str>> {
    let mut want = pattern.split('/');
    let mut got = path.split('/');
    let mut values = Vec::new();
    loop {
        match (want.next(), got.next()) {
            (None, None) => return Some(values),
            (Some(w), Some(g)) if w.starts_with('{') && w.ends_with('}') => {
                if g.is_empty() {
                    return None;
                }
                values.push(g);
            }
            (Some(w), Some(g)) if w == g => {}
            _ => return None,
        }
    }
}

/// The methods `path` serves when they are not what the router registered
/// for its pattern: `[POST]` for an action path (`/v1/jobs/7:cancel`), the
/// item's other methods for the item's path (`/v1/jobs/7`) when its pattern
/// has an action route. `None` for every other path (the router's own
/// answer is right) and for an item path with nothing but actions
/// (`/v1/channels/x`: a `404`).
pub fn action_path_methods(path: &str) -> Option<Vec<Verb>> {
    let served: Vec<Policy> = ROUTES
        .iter()
        .filter(|p| path_params(p.path, path).is_some())
        .copied()
        .collect();
    if !served
        .iter()
        .any(|p| p.payload == Action && p.path.ends_with('}'))
    {
        return None;
    }
    let last = path.rsplit('/').next().unwrap_or_default();
    let verbs: Vec<Verb> = if last.contains(':') {
        vec![Post]
    } else {
        served
            .iter()
            .filter(|p| p.payload != Action)
            .map(|p| p.verb)
            .collect()
    };
    (!verbs.is_empty()).then_some(verbs)
}

/// The `Allow` value for `verbs`: `HEAD` goes with `GET`, as the router
/// serves it.
fn allow_value(verbs: &[Verb]) -> String {
    let mut names = Vec::new();
    for v in verbs {
        names.push(v.as_str());
        if *v == Get {
            names.push("HEAD");
        }
    }
    names.join(",")
}

/// Answers `405` with the right `Allow` for a method an action path or its
/// item's path does not serve (see [`action_path_methods`]); passes every
/// other request on. Runs behind the access guard, like the router's own
/// `405`s; layered after `method_not_allowed_fallback`, which would
/// otherwise replace the layered fallback of every route.
pub async fn allowed_methods(req: Request, next: Next) -> Response {
    // `POST` always goes on (see below): the common write path skips the
    // scan of the route table.
    if req.method() == Method::POST {
        return next.run(req).await;
    }
    let Some(verbs) = action_path_methods(req.uri().path()) else {
        return next.run(req).await;
    };
    let method = req.method();
    let served = verbs
        .iter()
        .any(|v| v.as_str() == method.as_str() || (*v == Get && *method == Method::HEAD));
    // `POST` to an item's path without an action keeps its `404
    // unknown_action`, which names the actions to use.
    let action_missing = *method == Method::POST;
    if served || action_missing {
        return next.run(req).await;
    }
    let mut resp = crate::http::error::ApiError::new(
        axum::http::StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!(
            "{method} is not served here; allowed: {}",
            allow_value(&verbs)
        ),
    )
    .into_response();
    if let Ok(v) = HeaderValue::from_str(&allow_value(&verbs)) {
        resp.headers_mut().insert(header::ALLOW, v);
    }
    resp
}

/// Sets the `Allow` of any answer that has one, for an action path or its
/// item's path, to what the path serves (see [`action_path_methods`]).
/// Wraps the whole router: the router adds its own `Allow` after its layers.
pub async fn allow_header(req: Request, next: Next) -> Response {
    // Only the rare answer with an `Allow` pays for the scan of the table.
    let uri = req.uri().clone();
    let mut resp = next.run(req).await;
    if resp.headers().contains_key(header::ALLOW)
        && let Some(verbs) = action_path_methods(uri.path())
        && let Ok(v) = HeaderValue::from_str(&allow_value(&verbs))
    {
        resp.headers_mut().insert(header::ALLOW, v);
    }
    resp
}

/// The paths served without a key.
pub fn public_paths() -> Vec<&'static str> {
    ROUTES
        .iter()
        .filter(|p| p.need == Nothing)
        .map(|p| p.path)
        .collect()
}

/// The policy of a route, or for a route missing from the table a closed
/// one: admin only, JSON only.
fn policy_or_closed(verb: Verb, path: &'static str) -> Policy {
    policy(verb, path).unwrap_or_else(|| {
        tracing::error!(
            method = verb.as_str(),
            path,
            "route missing from the route table; only the admin may call it"
        );
        route(verb, path, Needs(Admin), Json)
    })
}

/// The method router serving `verb` with `handler`.
fn method_router<H: Handler<T, AppState>, T: 'static>(
    verb: Verb,
    handler: H,
) -> MethodRouter<AppState> {
    match verb {
        Get => get(handler),
        Post => post(handler),
        Put => put(handler),
        Delete => delete(handler),
        Patch => patch(handler),
    }
}

/// The router under construction, each route behind its policy.
pub struct RouteSet {
    router: axum::Router<AppState>,
    registered: Vec<(Verb, &'static str)>,
}

impl RouteSet {
    pub fn new() -> Self {
        Self {
            router: axum::Router::new(),
            registered: Vec::new(),
        }
    }

    /// A route; `method_router` must serve `verb` only, which the router
    /// tests check. A route missing from [`ROUTES`] (one added here by hand,
    /// outside [`route_table!`]) is served closed.
    pub fn add(
        mut self,
        verb: Verb,
        path: &'static str,
        method_router: MethodRouter<AppState>,
    ) -> Self {
        let policy = policy_or_closed(verb, path);
        // The access policy first, then the body layer: a caller refused
        // never holds any of the body budget.
        self.router = self.router.route(
            path,
            method_router
                .route_layer(middleware::from_fn_with_state(
                    policy,
                    body_admission::admit,
                ))
                .route_layer(middleware::from_fn_with_state(policy, enforce)),
        );
        self.registered.push((verb, path));
        self
    }

    /// What was registered, in order.
    #[cfg(test)]
    pub fn registered(&self) -> &[(Verb, &'static str)] {
        &self.registered
    }

    pub fn into_router(self) -> axum::Router<AppState> {
        self.router
    }
}

impl Default for RouteSet {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_match_their_routes() {
        let m = |verb, path| matching(Some(verb), path).map(|(p, v)| (p.verb, p.path, v));
        assert_eq!(m(Post, "/v1/timers"), Some((Post, "/v1/timers", vec![])));
        assert_eq!(
            m(Post, "/v1/timers:bulk"),
            Some((Post, "/v1/timers:bulk", vec![]))
        );
        assert_eq!(
            m(Delete, "/v1/timers/42"),
            Some((Delete, "/v1/timers/{id}", vec!["42"]))
        );
        assert_eq!(
            m(Delete, "/v1/reminders/alice/s-1"),
            Some((
                Delete,
                "/v1/reminders/{user_id}/{subject_id}",
                vec!["alice", "s-1"]
            ))
        );
        assert_eq!(
            m(Post, "/v1/jobs/7:cancel"),
            Some((Post, "/v1/jobs/{id}", vec!["7:cancel"]))
        );
        // Another verb on a known path: the path's route.
        assert_eq!(
            m(Put, "/v1/timers/42").map(|(_, path, _)| path),
            Some("/v1/timers/{id}")
        );
        assert_eq!(m(Post, "/v1/timers/"), None);
        assert_eq!(m(Post, "/v1/nothing"), None);
        assert_eq!(m(Delete, "/v1/timers/42/x"), None);
    }

    #[test]
    fn a_route_missing_from_the_table_is_served_closed() {
        let p = policy_or_closed(Get, "/v1/not-in-the-table");
        assert_eq!((p.need, p.payload), (Needs(Admin), Json));
        let p = policy_or_closed(Get, "/healthz");
        assert_eq!((p.need, p.payload), (Nothing, NoBody));
    }

    #[test]
    fn action_paths_serve_post_and_item_paths_the_rest() {
        let m = action_path_methods;
        assert_eq!(m("/v1/jobs/7:cancel"), Some(vec![Post]));
        assert_eq!(m("/v1/timers/7:retry"), Some(vec![Post]));
        assert_eq!(m("/v1/jobs/7"), Some(vec![Get, Delete]));
        assert_eq!(m("/v1/timers/7"), Some(vec![Get, Delete, Patch]));
        assert_eq!(m("/v1/rules/7"), Some(vec![Get, Put]));
        // Nothing but actions: the handler's `404 unknown_action`.
        assert_eq!(m("/v1/channels/hooks"), None);
        assert_eq!(m("/v1/channels/hooks:pause"), Some(vec![Post]));
        // Paths without actions: the router's own answer.
        for path in [
            "/v1/timers",
            "/v1/timers:bulk",
            "/v1/admin:reload",
            "/v1/jobs/7/sends",
        ] {
            assert_eq!(m(path), None, "{path}");
        }
        assert_eq!(allow_value(&[Get, Delete]), "GET,HEAD,DELETE");
    }
}
