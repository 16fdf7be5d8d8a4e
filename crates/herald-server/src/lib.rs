//! Herald's HTTP API (axum): validates requests, turns them into engine
//! commands, and answers only after the engine says they are committed.

pub mod error;
mod ops;
pub mod reminders;
pub mod timers;
pub mod validate;

use std::sync::Arc;

use axum::Router;
use axum::routing::{delete, get, post, put};
use herald_core::Clock;
use herald_engine::Engine;
use metrics_exporter_prometheus::PrometheusHandle;
use serde::{Deserialize, Serialize};

pub use ops::install_metrics;
pub use reminders::RemindersConfig;

/// Request limits.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ApiConfig {
    /// Largest single timer (a `POST /v1/timers` body, or one bulk line).
    pub max_timer_bytes: usize,
    /// Largest bulk request body.
    pub bulk_max_bytes: usize,
    /// Most timers in one bulk request.
    pub bulk_max_lines: usize,
    /// Timers per transaction inside a bulk request.
    pub bulk_chunk: usize,
}

impl Default for ApiConfig {
    fn default() -> Self {
        Self {
            max_timer_bytes: 64 * 1024,
            bulk_max_bytes: 64 * 1024 * 1024,
            bulk_max_lines: 100_000,
            bulk_chunk: 10_000,
        }
    }
}

#[derive(Clone)]
pub struct AppState {
    pub engine: Engine,
    pub clock: Arc<dyn Clock>,
    pub api: Arc<ApiConfig>,
    pub reminders: Arc<RemindersConfig>,
    pub metrics: PrometheusHandle,
}

pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/v1/timers", post(timers::create))
        .route("/v1/timers:bulk", post(timers::create_bulk))
        .route("/v1/timers/{id}", get(timers::get).delete(timers::cancel))
        .route("/v1/timers/{id}/deliveries", get(timers::deliveries))
        .route(
            "/v1/subjects/{subject_id}",
            put(reminders::put_subject)
                .get(reminders::get_subject)
                .delete(reminders::delete_subject),
        )
        .route("/v1/reminders", post(reminders::create))
        .route("/v1/reminders:bulk", post(reminders::create_bulk))
        .route(
            "/v1/reminders/{user_id}/{subject_id}",
            delete(reminders::cancel),
        )
        .route(
            "/v1/users/{user_id}/reminders",
            get(reminders::list_for_user),
        )
        .route("/v1/stats", get(ops::stats))
        .route("/v1/cluster", get(ops::cluster))
        .route("/healthz", get(ops::healthz))
        .route("/metrics", get(ops::metrics))
        .fallback(ops::not_found)
        .method_not_allowed_fallback(ops::method_not_allowed)
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(
            ops::panic_response,
        ))
        .with_state(state)
}
