//! Herald's HTTP API (axum): validates requests, turns them into engine
//! commands, and answers only after the engine says they are committed.

pub mod access;
pub mod api;
pub mod audit;
mod config;
pub mod default_routes;
pub mod forecast_cache;
pub mod http;
mod openapi;
pub mod reload;
pub mod reminder_routes;
mod routes;
#[cfg(test)]
mod tests;
mod ui;

use std::sync::Arc;

use axum::Router;

use crate::http::rate::RateSampler;

pub use access::{Access, AuthConfig, Caller, ChannelTenants, Mode, Scope, Scopes, StoredKeys};
pub use api::admin::ops::install_metrics;
/// Audience uploads; their parser is fuzzed by the binary's tests.
pub use api::campaigns::audiences;
/// The reminder leads of a store, checked by the binary at start-up.
pub use api::reminders::leads;
pub use audit::{AuditLog, AuditSettings, AuditWriter};
pub use config::{ApiConfig, RemindersConfig};
pub use http::quota::Quotas;
pub use http::state::{AppParts, AppState};
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
    // Every step before a route, as one layer (`http::edge`).
    let edge = http::edge::Edge {
        body_pause: std::time::Duration::from_millis(state.api.body_read_timeout_ms),
        recorder,
        guard,
        bodies,
        job_rates: Arc::new(RateSampler::<i64>::default()),
        channel_rates: Arc::new(RateSampler::<String>::default()),
    }
    .layer();
    let app = routes::api_routes()
        .into_router()
        .fallback(http::fallback::not_found)
        .method_not_allowed_fallback(http::fallback::method_not_allowed)
        .layer(edge)
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
