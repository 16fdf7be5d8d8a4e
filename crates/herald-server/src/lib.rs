//! Herald's HTTP API (axum): validates requests, turns them into engine
//! commands, and answers only after the engine says they are committed.

pub mod access;
pub mod api;
pub mod audit;
mod config;
pub mod http;
mod openapi;
pub mod reload;
mod routes;
#[cfg(test)]
mod tests;
mod ui;

use std::sync::Arc;

use axum::Router;
use axum::routing::post;

use crate::access::Verb;
use crate::api::campaigns::{jobs, rules, schedules};
use crate::api::{admin, channels, reminders, subscribers, timers};
use crate::http::rate::RateSampler;
use crate::routes::RouteSet;

pub use access::{Access, AuthConfig, Caller, ChannelTenants, Mode, Scope, Scopes, StoredKeys};
pub use api::admin::ops::install_metrics;
/// Audience uploads; their parser is fuzzed by the binary's tests.
pub use api::campaigns::audiences;
/// The reminder leads of a store, checked by the binary at start-up.
pub use api::reminders::leads;
pub use audit::{AuditLog, AuditSettings, AuditWriter};
pub use config::{ApiConfig, RemindersConfig};
pub use http::quota::Quotas;
pub use http::state::AppState;
pub use reload::{Reload, ReloadError, ReloadReport, Reloader};
/// Every route with the scope it needs: what end-to-end tests walk.
pub use routes::ROUTES;

/// Every route of the API, with the error fallbacks and access control,
/// over `state`.
pub fn router(state: AppState) -> Router {
    let signed: Vec<String> = state
        .engine
        .channel_names()
        .into_iter()
        .filter(|name| {
            state
                .engine
                .channel(name)
                .is_some_and(|c| c.callback_signed())
        })
        .collect();
    let guard = access::Guard::new(
        state.access.clone(),
        state.clock.clone(),
        routes::public_paths(),
    )
    .with_signed_callbacks(signed);
    let recorder = audit::Recorder {
        log: state.audit.clone(),
        clock: state.clock.clone(),
    };
    // Request-body bytes in flight, shared by every request of the node;
    // each route's body layer (`body_admission`, inside its access policy)
    // charges them.
    let bodies = http::body_admission::BodyAdmission::new(state.api.clone());
    let app = api_routes()
        .into_router()
        .fallback(http::fallback::not_found)
        .method_not_allowed_fallback(http::fallback::method_not_allowed)
        // `Allow` and `405` of action paths (`/v1/jobs/7:cancel`) as documented.
        .layer(axum::middleware::from_fn(routes::allowed_methods))
        .layer(axum::Extension(bodies.budget.clone()))
        .layer(axum::Extension(bodies))
        // Job progress samples, for the current rate of `GET /v1/jobs/{id}`.
        .layer(axum::Extension(Arc::new(RateSampler::<i64>::default())))
        // Answered sends per channel, for the current rate of `GET /v1/channels`.
        .layer(axum::Extension(Arc::new(RateSampler::<String>::default())))
        .layer(axum::middleware::from_fn_with_state(guard, access::guard))
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(
            http::fallback::panic_response,
        ))
        // Outermost, so refusals of the guard are recorded too.
        .layer(axum::middleware::from_fn_with_state(
            recorder,
            audit::record,
        ))
        // A body that stalls between pieces is cut off (`408`).
        .layer(axum::middleware::from_fn_with_state(
            std::time::Duration::from_millis(state.api.body_read_timeout_ms),
            http::request::body_timeout,
        ))
        // Every error a client sees is JSON, the framework's own rejections too.
        .layer(axum::middleware::map_response(http::fallback::json_errors))
        // The console's shells and assets: outside the guard, which they
        // do not need (they check the session themselves).
        .merge(ui::router())
        .with_state(state);
    // The router sets `Allow` itself on a `405` and on any answer of its
    // method fallback (a `401` too), after every layer above ran: only
    // from outside can an action path's `Allow` be made right everywhere.
    Router::new()
        .fallback_service(app)
        .layer(axum::middleware::from_fn(routes::allow_header))
}

/// Every route, each behind its policy from the route table.
fn api_routes() -> RouteSet {
    RouteSet::new()
        .post("/v1/timers", timers::create)
        .post("/v1/timers:bulk", timers::create_bulk)
        .get("/v1/timers/{id}", timers::get)
        .delete("/v1/timers/{id}", timers::cancel)
        .get("/v1/timers/{id}/deliveries", timers::deliveries)
        .get("/v1/timers", timers::search::list)
        .patch("/v1/timers/{id}", timers::changes::patch)
        // `POST /v1/timers/{id}:retry`.
        .post("/v1/timers/{id}", timers::changes::action)
        .post("/v1/timers:retry", timers::changes::retry_matching)
        .get("/v1/dead-letters", timers::search::dead_letters)
        .put("/v1/subjects/{subject_id}", reminders::put_subject)
        .get("/v1/subjects", reminders::subjects::list)
        .get("/v1/subjects/{subject_id}", reminders::subjects::get)
        .delete("/v1/subjects/{subject_id}", reminders::delete_subject)
        .post("/v1/reminders", reminders::create)
        .post("/v1/reminders:bulk", reminders::create_bulk)
        .delete("/v1/reminders/{user_id}/{subject_id}", reminders::cancel)
        .get("/v1/users/{user_id}/reminders", reminders::list_for_user)
        .get("/v1/subscribers", subscribers::list)
        .post("/v1/subscribers:bulk", subscribers::bulk)
        .put("/v1/subscribers/{user_id}", subscribers::put)
        .patch("/v1/subscribers/{user_id}", subscribers::patch)
        .get("/v1/subscribers/{user_id}", subscribers::get)
        .delete("/v1/subscribers/{user_id}", subscribers::delete)
        .post("/v1/audiences", audiences::upload)
        .get("/v1/audiences", audiences::list)
        .get("/v1/audiences/{id}", audiences::get)
        .delete("/v1/audiences/{id}", audiences::delete)
        .post("/v1/rules", rules::create)
        .get("/v1/rules", rules::list)
        .get("/v1/rules/{id}", rules::get)
        .put("/v1/rules/{id}", rules::update)
        // `POST /v1/rules/{id}:enable|:disable`: the action is split off the segment.
        .post("/v1/rules/{id}", rules::action)
        .get("/v1/rules/{id}/versions", rules::versions)
        .get("/v1/rules/{id}/tasks", rules::tasks)
        .post("/v1/schedules:preview", schedules::preview)
        .post("/v1/jobs", jobs::create)
        .get("/v1/jobs", jobs::list)
        .get("/v1/jobs/{id}", jobs::get)
        .delete("/v1/jobs/{id}", jobs::delete)
        // `POST /v1/jobs/{id}:cancel`.
        .post("/v1/jobs/{id}", jobs::action)
        .get("/v1/jobs/{id}/segments", jobs::segments)
        .get("/v1/jobs/{id}/sends", jobs::sends)
        .get("/v1/jobs/{id}/failures", jobs::failures)
        .get("/v1/channels", channels::list)
        .post("/v1/channels/{name}", channels::pause_action)
        .get("/v1/channels/{name}/callback", channels::handshake)
        .add(
            Verb::Post,
            "/v1/channels/{name}/callback",
            post(channels::callback).layer(axum::extract::DefaultBodyLimit::max(
                http::body_limits::CALLBACK_MAX_BYTES,
            )),
        )
        // `POST /v1/deliveries/{id}:recall`.
        .post("/v1/deliveries/{id}", channels::action)
        .post("/v1/receipts", channels::receipts::record)
        .add(
            Verb::Post,
            "/v1/keys",
            post(admin::keys::create).layer(axum::extract::DefaultBodyLimit::max(
                http::body_limits::KEYS_MAX_BYTES,
            )),
        )
        .get("/v1/keys", admin::keys::list)
        .delete("/v1/keys/{id}", admin::keys::revoke)
        .get("/v1/audit", audit::list::list)
        .get("/v1/reports", admin::reports::report)
        .get("/v1/stats", admin::ops::stats)
        .get("/v1/cluster", admin::ops::cluster)
        .post("/v1/admin:reload", admin::reload::reload)
        .get("/v1/overview", admin::overview::overview)
        .get("/healthz", admin::ops::healthz)
        .get("/readyz", admin::ops::readyz)
        .get("/metrics", admin::ops::metrics)
        .get("/openapi.json", openapi::openapi_json)
        .get("/docs", openapi::docs)
}
