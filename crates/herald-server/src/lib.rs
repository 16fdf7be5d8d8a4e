//! Herald's HTTP API (axum): validates requests, turns them into engine
//! commands, and answers only after the engine says they are committed.

pub mod audiences;
pub mod channels;
mod config;
pub mod error;
mod fields;
pub mod jobs;
mod ops;
mod pagination;
mod rate;
pub mod reminders;
mod request;
pub mod rules;
mod state;
#[cfg(test)]
mod tests;
pub mod timers;
pub mod validate;

use std::sync::Arc;

use axum::Router;
use axum::routing::{delete, get, post, put};

use crate::rate::RateSampler;

pub use config::{ApiConfig, RemindersConfig};
pub use ops::install_metrics;
pub use state::AppState;

/// Every route of the API, with the error fallbacks, over `state`.
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
        .route("/v1/audiences", post(audiences::upload))
        .route("/v1/audiences/{id}", get(audiences::get))
        .route("/v1/rules", post(rules::create).get(rules::list))
        // `POST /v1/rules/{id}:enable|:disable`: the action is split off the segment.
        .route(
            "/v1/rules/{id}",
            get(rules::get).put(rules::update).post(rules::action),
        )
        .route("/v1/rules/{id}/versions", get(rules::versions))
        .route("/v1/rules/{id}/tasks", get(rules::tasks))
        .route("/v1/jobs", post(jobs::create).get(jobs::list))
        // `POST /v1/jobs/{id}:cancel`.
        .route("/v1/jobs/{id}", get(jobs::get).post(jobs::action))
        .route("/v1/jobs/{id}/segments", get(jobs::segments))
        .route("/v1/jobs/{id}/sends", get(jobs::sends))
        .route("/v1/channels", get(channels::list))
        .route(
            "/v1/channels/{name}/callback",
            post(channels::callback).layer(axum::extract::DefaultBodyLimit::max(
                channels::CALLBACK_MAX_BYTES,
            )),
        )
        // `POST /v1/deliveries/{id}:recall`.
        .route("/v1/deliveries/{id}", post(channels::action))
        .route("/v1/stats", get(ops::stats))
        .route("/v1/cluster", get(ops::cluster))
        .route("/healthz", get(ops::healthz))
        .route("/metrics", get(ops::metrics))
        .fallback(ops::not_found)
        .method_not_allowed_fallback(ops::method_not_allowed)
        // Job progress samples, for the current rate of `GET /v1/jobs/{id}`.
        .layer(axum::Extension(Arc::new(RateSampler::<i64>::default())))
        // Answered sends per channel, for the current rate of `GET /v1/channels`.
        .layer(axum::Extension(Arc::new(RateSampler::<String>::default())))
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(
            ops::panic_response,
        ))
        .with_state(state)
}
