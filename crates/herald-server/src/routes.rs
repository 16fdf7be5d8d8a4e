//! Every route in one table, declared once: its method, path, policy (the
//! scope it needs and the body it reads), handler and documentation. The
//! policy table [`ROUTES`], the router ([`api_routes`]) and the document's
//! operations ([`TABLE`], read by `crate::openapi`) are all derived from it.
//! The router is assembled through [`RouteSet`], which puts each route's
//! policy in front of its handler and remembers what it registered; a route
//! added outside the table is served closed (admin only), and a test checks
//! that none is.
//!
//! An action route (`POST /v1/jobs/{id}` serving `/v1/jobs/7:cancel`) shares
//! its path with the item's other methods, so the router alone would answer
//! `GET /v1/jobs/7:cancel` with the job handler and list `POST` in the
//! `Allow` of `PUT /v1/jobs/7`. [`allowed_methods`] answers both as the
//! document describes them: an action path serves `POST` only, and the
//! item's path serves its other methods.

use axum::extract::{Request, State};
use axum::handler::Handler;
use axum::http::{HeaderValue, Method, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, delete, get, patch, post, put};

use crate::access::{Need, Payload, Policy, Scope, Verb};
use crate::api::campaigns::{self, audiences, jobs, rules, schedules};
use crate::api::{admin, calendars, channels, reminders, subscribers, templates, timers, users};
use crate::http::body_admission;
use crate::http::body_limits::{self, ACTION, BodySpec, Limit as L};
use crate::http::state::AppState;
use crate::openapi::operations::Docs;
use crate::openapi::serve as openapi;
use Body::{Action, Json, Ndjson, None as NoBody, Recipients, Xml};
use Need::{Nothing, Scope as Needs, Signed};
use Scope::{Admin, Campaign, Metrics, Read, Write};
use Verb::{Delete, Get, Patch, Post, Put};

/// What a route reads, as its table entry declares it: the policy's
/// [`Payload`] (the content types the guard lets through) and the
/// document's request body are both made from it, so they cannot disagree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Body {
    /// `GET`, `DELETE`: nothing is read.
    None,
    /// A `POST` that reads no body, or JSON it ignores (`/v1/admin:reload`,
    /// `:cancel`); an action that reads an optional JSON body (`:pause`)
    /// names its schema in its `ActionDoc`.
    Action,
    /// One JSON document of this schema.
    Json(&'static str),
    /// Newline-delimited JSON, one line of this schema each.
    Ndjson(&'static str),
    /// Recipients: NDJSON (`{"recipient": ...}` per line) or CSV.
    Recipients,
    /// A provider's XML event.
    Xml,
}

impl Body {
    /// What the access guard checks the content type against.
    pub const fn payload(self) -> Payload {
        match self {
            Body::None => Payload::None,
            Body::Action => Payload::Action,
            Body::Json(_) => Payload::Json,
            Body::Ndjson(_) => Payload::Ndjson,
            Body::Recipients => Payload::Recipients,
            Body::Xml => Payload::Xml,
        }
    }
}

/// A route of the table: its policy, what it reads and how much of it, and
/// what documents it.
#[derive(Clone, Copy)]
pub struct Route {
    pub policy: Policy,
    pub body: Body,
    /// What bounds the body, `None` when the route reads none.
    pub read: Option<BodySpec>,
    pub docs: Docs,
}

const fn route(verb: Verb, path: &'static str, need: Need, payload: Payload) -> Policy {
    Policy {
        verb,
        path,
        need,
        payload,
    }
}

/// What bounds `body`: a JSON or XML body names its limit in its entry
/// (`limit ...`); an action's, NDJSON's and recipients' follow from the
/// kind. Checked as the table is compiled.
const fn body_spec_of(body: Body, limit: Option<L>) -> Option<BodySpec> {
    let (limit, streamed) = match (body, limit) {
        (Body::None, None) => return None,
        (Body::Action, None) => (ACTION, false),
        (Body::Ndjson(_), None) => (L::Bulk, true),
        (Body::Recipients, None) => (L::Recipients, true),
        (Body::Json(_) | Body::Xml, Some(l)) => (l, false),
        (Body::Json(_) | Body::Xml, None) => {
            panic!("a JSON or XML body names its limit: `limit ...`")
        }
        (_, Some(_)) => panic!("only a JSON or XML body names its limit"),
    };
    Some(BodySpec { limit, streamed })
}

/// A table entry, checked as the table is compiled: an action route (a
/// `POST` reading [`Body::Action`] at an item path, as
/// [`action_path_methods`] tells them) documents each of its actions, and
/// no other route documents actions.
const fn entry(
    verb: Verb,
    path: &'static str,
    need: Need,
    body: Body,
    limit: Option<L>,
    docs: Docs,
) -> Route {
    let bytes = path.as_bytes();
    let item = !bytes.is_empty() && bytes[bytes.len() - 1] == b'}';
    let action_route = matches!(verb, Post) && matches!(body, Body::Action) && item;
    match docs {
        Docs::Actions(actions) => {
            assert!(
                action_route,
                "only an action route (POST, Action, an item path) documents actions"
            );
            assert!(!actions.is_empty(), "an action route documents its actions");
        }
        Docs::One(_) => assert!(
            !action_route,
            "an action route documents each action: `actions [...]`, not `doc`"
        ),
    }
    Route {
        policy: route(verb, path, need, body.payload()),
        body,
        read: body_spec_of(body, limit),
        docs,
    }
}

/// The policies of `table`, in order.
const fn policies<const N: usize>(table: &[Route]) -> [Policy; N] {
    let mut out = [route(Get, "", Nothing, Payload::None); N];
    let mut i = 0;
    while i < N {
        out[i] = table[i].policy;
        i += 1;
    }
    out
}

/// What documents a table entry: `doc X` names one [`Doc`], `actions X` a
/// list of action docs (one per action of an action route).
///
/// [`Doc`]: crate::openapi::operations::Doc
macro_rules! docs {
    (doc $doc:expr) => {
        Docs::One($doc)
    };
    (actions $docs:expr) => {
        Docs::Actions($docs)
    };
}

/// The `limit` of a table entry, when it names one.
macro_rules! limit {
    () => {
        None
    };
    ($read:expr) => {
        Some($read)
    };
}

/// Declares the route table once: each route's method, path, policy (the
/// scope it needs and the body it reads), handler and documentation, and a
/// body limit for the few routes whose handler reads with a fixed one.
/// [`TABLE`] (what the document reads), [`ROUTES`] (the policies the guard
/// and the audit log read) and [`api_routes`] (the router) are all made
/// from it, so a route cannot be served without its policy and its
/// documentation, nor have either without being served.
macro_rules! route_table {
    ($(
        $verb:ident $path:literal, $need:expr, $body:expr => $handler:expr,
            $docs:ident $doc:expr $(, limit $read:expr)? $(, body_limit $limit:expr)?;
    )*) => {
        /// The route table, each route with what documents it.
        pub const TABLE: &[Route] = &[$(
            entry($verb, $path, $need, $body, limit!($($read)?), docs!($docs $doc))
        ),*];

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

/// The policy table. `read` is every GET of a tenant's data; `write` what
/// reaches one recipient; `campaign` what sends to many; `admin` channel
/// actions, keys, and views of the whole node or cluster.
pub const ROUTES: &[Policy] = &policies::<{ TABLE.len() }>(TABLE);

route_table! {
    Post "/v1/timers", Needs(Write), Json("CreateTimer") => timers::create,
        doc timers::docs::CREATE, limit L::Timer;
    Post "/v1/timers:bulk", Needs(Write), Ndjson("CreateTimer") => timers::create_bulk,
        doc timers::docs::CREATE_BULK;
    Get "/v1/timers/{id}", Needs(Read), NoBody => timers::get, doc timers::docs::GET;
    Delete "/v1/timers/{id}", Needs(Write), NoBody => timers::cancel, doc timers::docs::CANCEL;
    Get "/v1/timers/{id}/deliveries", Needs(Read), NoBody => timers::deliveries,
        doc timers::docs::DELIVERIES;
    Get "/v1/timers", Needs(Read), NoBody => timers::search::list, doc timers::docs::LIST;
    Patch "/v1/timers/{id}", Needs(Write), Json("TimerPatch") => timers::changes::patch,
        doc timers::docs::PATCH, limit L::TimerPatch;
    // `POST /v1/timers/{id}:retry`.
    Post "/v1/timers/{id}", Needs(Write), Action => timers::changes::action,
        actions timers::docs::ACTIONS;
    // Replays every dead or failed timer a filter matches.
    Post "/v1/timers:retry", Needs(Campaign), Json("RetryFilter")
        => timers::changes::retry_matching, doc timers::docs::RETRY_MATCHING, limit L::Bytes(body_limits::TIMER_CHANGE_MAX_BYTES);
    Get "/v1/dead-letters", Needs(Read), NoBody => timers::search::dead_letters,
        doc timers::docs::DEAD_LETTERS;
    Put "/v1/subjects/{subject_id}", Needs(Write), Json("SubjectBody") => reminders::put_subject,
        doc reminders::docs::PUT_SUBJECT, limit L::Timer;
    Get "/v1/subjects", Needs(Read), NoBody => reminders::subjects::list,
        doc reminders::docs::LIST_SUBJECTS;
    Get "/v1/subjects/{subject_id}", Needs(Read), NoBody => reminders::subjects::get,
        doc reminders::docs::GET_SUBJECT;
    Delete "/v1/subjects/{subject_id}", Needs(Write), NoBody => reminders::delete_subject,
        doc reminders::docs::DELETE_SUBJECT;
    Post "/v1/reminders", Needs(Write), Json("ReminderBody") => reminders::create,
        doc reminders::docs::CREATE, limit L::Timer;
    Post "/v1/reminders:bulk", Needs(Write), Ndjson("ReminderBody") => reminders::create_bulk,
        doc reminders::docs::CREATE_BULK;
    Delete "/v1/reminders/{user_id}/{subject_id}", Needs(Write), NoBody => reminders::cancel,
        doc reminders::docs::CANCEL;
    Get "/v1/users/{user_id}/reminders", Needs(Read), NoBody => reminders::list_for_user,
        doc reminders::docs::LIST_FOR_USER;
    Get "/v1/users/{user_id}", Needs(Read), NoBody => users::get, doc users::docs::GET;
    Get "/v1/subscribers", Needs(Read), NoBody => subscribers::list, doc subscribers::docs::LIST;
    Post "/v1/subscribers:bulk", Needs(Write), Ndjson("SubscriberLine") => subscribers::bulk,
        doc subscribers::docs::BULK;
    Put "/v1/subscribers/{user_id}", Needs(Write), Json("SubscriberBody") => subscribers::put,
        doc subscribers::docs::PUT, limit L::Timer;
    Patch "/v1/subscribers/{user_id}", Needs(Write), Json("SubscriberPatch") => subscribers::patch,
        doc subscribers::docs::PATCH, limit L::Timer;
    Get "/v1/subscribers/{user_id}", Needs(Read), NoBody => subscribers::get,
        doc subscribers::docs::GET;
    Post "/v1/subscribers/{user_id}/grants", Needs(Write), Json("GrantsBody") => subscribers::grants::record,
        doc subscribers::docs::GRANTS_RECORD, limit L::Bytes(subscribers::grants::GRANTS_MAX_BYTES);
    Get "/v1/subscribers/{user_id}/grants", Needs(Read), NoBody => subscribers::grants::list,
        doc subscribers::docs::GRANTS_LIST;
    Delete "/v1/subscribers/{user_id}", Needs(Write), NoBody => subscribers::delete,
        doc subscribers::docs::DELETE;
    Post "/v1/templates", Needs(Write), Json("CreateTemplate") => templates::create,
        doc templates::docs::CREATE, limit L::Bytes(templates::MAX_TEMPLATE_BYTES);
    Get "/v1/templates", Needs(Read), NoBody => templates::list, doc templates::docs::LIST;
    Get "/v1/templates/{name}", Needs(Read), NoBody => templates::get, doc templates::docs::GET;
    Put "/v1/templates/{name}", Needs(Write), Json("TemplateBody") => templates::put,
        doc templates::docs::PUT, limit L::Bytes(templates::MAX_TEMPLATE_BYTES);
    // `:preview`.
    Post "/v1/templates/{name}", Needs(Read), Action => templates::action,
        actions templates::docs::ACTIONS;
    Post "/v1/audiences", Needs(Campaign), Recipients => audiences::upload,
        doc campaigns::docs::AUDIENCE_UPLOAD;
    Get "/v1/audiences", Needs(Read), NoBody => audiences::list,
        doc campaigns::docs::AUDIENCE_LIST;
    Get "/v1/audiences/{id}", Needs(Read), NoBody => audiences::get,
        doc campaigns::docs::AUDIENCE_GET;
    Delete "/v1/audiences/{id}", Needs(Campaign), NoBody => audiences::delete,
        doc campaigns::docs::AUDIENCE_DELETE;
    Post "/v1/rules", Needs(Campaign), Json("RuleBody") => rules::create,
        doc campaigns::docs::RULE_CREATE, limit L::Campaign;
    Get "/v1/rules", Needs(Read), NoBody => rules::list, doc campaigns::docs::RULE_LIST;
    Get "/v1/rules/{id}", Needs(Read), NoBody => rules::get, doc campaigns::docs::RULE_GET;
    Put "/v1/rules/{id}", Needs(Campaign), Json("RuleBody") => rules::update,
        doc campaigns::docs::RULE_UPDATE, limit L::Campaign;
    // `:enable`, `:disable`: the action is split off the segment.
    Post "/v1/rules/{id}", Needs(Campaign), Action => rules::action,
        actions campaigns::docs::RULE_ACTIONS;
    Get "/v1/rules/{id}/versions", Needs(Read), NoBody => rules::versions,
        doc campaigns::docs::RULE_VERSIONS;
    Get "/v1/rules/{id}/tasks", Needs(Read), NoBody => rules::tasks,
        doc campaigns::docs::RULE_TASKS;
    // `:cancel`: one pending task, the rule left as it is.
    Post "/v1/rules/{id}/tasks/{task_id}", Needs(Campaign), Action => rules::task_action,
        actions campaigns::docs::TASK_ACTIONS;
    Put "/v1/calendars/{name}", Needs(Campaign), Json("CalendarSpec") => calendars::put,
        doc calendars::docs::PUT, limit L::Bytes(calendars::MAX_CALENDAR_BYTES);
    Get "/v1/calendars", Needs(Read), NoBody => calendars::list, doc calendars::docs::LIST;
    Get "/v1/calendars/{name}", Needs(Read), NoBody => calendars::get, doc calendars::docs::GET;
    // Computes, changes nothing.
    Post "/v1/schedules:preview", Needs(Read), Json("PreviewRequest") => schedules::preview,
        doc campaigns::docs::SCHEDULE_PREVIEW, limit L::Bytes(body_limits::PREVIEW_MAX_BYTES);
    Post "/v1/jobs", Needs(Campaign), Json("JobBody") => jobs::create,
        doc campaigns::docs::JOB_CREATE, limit L::Campaign;
    Get "/v1/jobs", Needs(Read), NoBody => jobs::list, doc campaigns::docs::JOB_LIST;
    Get "/v1/jobs/{id}", Needs(Read), NoBody => jobs::get, doc campaigns::docs::JOB_GET;
    // Finished jobs only.
    Delete "/v1/jobs/{id}", Needs(Campaign), NoBody => jobs::delete,
        doc campaigns::docs::JOB_DELETE;
    // `:cancel`, `:retry-failed`, `:retry-in-doubt`, `:recall`,
    // `:resend-unread` (optional JSON body).
    Post "/v1/jobs/{id}", Needs(Campaign), Action => jobs::action,
        actions campaigns::docs::JOB_ACTIONS;
    Get "/v1/jobs/{id}/segments", Needs(Read), NoBody => jobs::segments,
        doc campaigns::docs::JOB_SEGMENTS;
    Get "/v1/jobs/{id}/sends", Needs(Read), NoBody => jobs::sends,
        doc campaigns::docs::JOB_SENDS;
    Get "/v1/jobs/{id}/failures", Needs(Read), NoBody => jobs::failures,
        doc campaigns::docs::JOB_FAILURES;
    Get "/v1/channels", Needs(Admin), NoBody => channels::list, doc channels::docs::LIST;
    // `:pause` (optional JSON body), `:resume`.
    Post "/v1/channels/{name}", Needs(Admin), Action => channels::pause_action,
        actions channels::docs::PAUSE_ACTIONS;
    // Signed by the provider when the channel has a `callback_token`.
    Get "/v1/channels/{name}/callback", Signed(Admin), NoBody => channels::handshake,
        doc channels::docs::HANDSHAKE;
    Post "/v1/channels/{name}/callback", Signed(Admin), Xml => channels::callback,
        doc channels::docs::CALLBACK,
        limit L::Bytes(body_limits::CALLBACK_MAX_BYTES), body_limit body_limits::CALLBACK_MAX_BYTES;
    // `POST /v1/deliveries/{id}:recall`.
    Post "/v1/deliveries/{id}", Needs(Admin), Action => channels::action,
        actions channels::docs::ACTIONS;
    // What an app (or a relayed provider callback) reports after a send.
    Post "/v1/receipts", Needs(Write), Json("ReceiptBody") => channels::receipts::record,
        doc channels::docs::RECEIPT, limit L::Bytes(body_limits::RECEIPT_MAX_BYTES);
    Post "/v1/keys", Needs(Admin), Json("CreateKey") => admin::keys::create,
        doc admin::docs::KEYS_CREATE,
        limit L::Bytes(body_limits::KEYS_MAX_BYTES), body_limit body_limits::KEYS_MAX_BYTES;
    Get "/v1/keys", Needs(Admin), NoBody => admin::keys::list, doc admin::docs::KEYS_LIST;
    Delete "/v1/keys/{id}", Needs(Admin), NoBody => admin::keys::revoke,
        doc admin::docs::KEYS_REVOKE;
    // A key reads its own tenant's entries; the admin every tenant's.
    Get "/v1/audit", Needs(Read), NoBody => admin::audit::list, doc admin::docs::AUDIT_LIST;
    // Stored delivery counts: a key its tenant's, the admin every tenant's.
    Get "/v1/reports", Needs(Read), NoBody => admin::reports::report, doc admin::docs::REPORT;
    Get "/v1/stats", Needs(Admin), NoBody => admin::ops::stats, doc admin::docs::STATS;
    Get "/v1/cluster", Needs(Admin), NoBody => admin::ops::cluster, doc admin::docs::CLUSTER;
    // Re-reads the configuration file and applies what changes live.
    Post "/v1/admin:reload", Needs(Admin), Action => admin::reload::reload,
        doc admin::docs::RELOAD;
    // A key sees its tenant's figures; the admin every tenant's.
    Get "/v1/overview", Needs(Read), NoBody => admin::overview::overview,
        doc admin::docs::OVERVIEW;
    // What falls due, counted in the background; same scope as the overview.
    Get "/v1/forecast", Needs(Read), NoBody => admin::forecast::forecast,
        doc admin::docs::FORECAST;
    Get "/healthz", Nothing, NoBody => admin::ops::healthz, doc admin::docs::HEALTHZ;
    Get "/readyz", Nothing, NoBody => admin::ops::readyz, doc admin::docs::READYZ;
    Get "/metrics", Needs(Metrics), NoBody => admin::ops::metrics, doc admin::docs::METRICS;
    Get "/openapi.json", Nothing, NoBody => openapi::openapi_json, doc openapi::OPENAPI_JSON;
    Get "/docs", Nothing, NoBody => openapi::docs, doc openapi::DOCS;
}

/// What bounds the body of a route of the table, if it reads one.
pub fn body_spec(verb: Verb, path: &str) -> Option<BodySpec> {
    TABLE
        .iter()
        .find(|r| r.policy.verb == verb && r.policy.path == path)
        .and_then(|r| r.read)
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
        .any(|p| p.payload == Payload::Action && p.path.ends_with('}'))
    {
        return None;
    }
    let last = path.rsplit('/').next().unwrap_or_default();
    let verbs: Vec<Verb> = if last.contains(':') {
        vec![Post]
    } else {
        served
            .iter()
            .filter(|p| p.payload != Payload::Action)
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
/// `next` is the rest of the stack (`http::edge`).
pub async fn allowed_methods<N, F>(req: Request, next: N) -> Response
where
    N: FnOnce(Request) -> F,
    F: Future<Output = Response>,
{
    // `POST` always goes on (see below): the common write path skips the
    // scan of the route table.
    if req.method() == Method::POST {
        return next(req).await;
    }
    let Some(verbs) = action_path_methods(req.uri().path()) else {
        return next(req).await;
    };
    let method = req.method();
    let served = verbs
        .iter()
        .any(|v| v.as_str() == method.as_str() || (*v == Get && *method == Method::HEAD));
    // `POST` to an item's path without an action keeps its `404
    // unknown_action`, which names the actions to use.
    let action_missing = *method == Method::POST;
    if served || action_missing {
        return next(req).await;
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

/// A route's own layer: its access policy first, then its body, so a
/// caller refused never holds any of the body budget. One layer, not two:
/// each layer costs every request a boxed service and future.
async fn gate(
    State((policy, spec)): State<(Policy, Option<BodySpec>)>,
    req: Request,
    next: Next,
) -> Response {
    if let Some(refused) = crate::access::refusal_of(&policy, &req) {
        return refused;
    }
    body_admission::admit(State((policy, spec)), req, next).await
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
        route(verb, path, Needs(Admin), Payload::Json)
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
            method_router.route_layer(middleware::from_fn_with_state(
                (policy, body_spec(verb, path)),
                gate,
            )),
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
        assert_eq!((p.need, p.payload), (Needs(Admin), Payload::Json));
        let p = policy_or_closed(Get, "/healthz");
        assert_eq!((p.need, p.payload), (Nothing, Payload::None));
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
