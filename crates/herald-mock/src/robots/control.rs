//! `/_mock/robots/*`: what the robot mocks accepted, their counters, faults,
//! configuration and clock.

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::Value;

use super::{ROBOTS_RING_CAPACITY, RobotFaults, RobotProvider, RobotsConfig};
use crate::MockState;
use crate::providers::ClockMove;
use crate::wechat::bad_request;

pub(super) fn routes() -> Router<MockState> {
    Router::new()
        .route("/_mock/robots/stats", get(stats))
        .route("/_mock/robots/messages", get(messages))
        .route("/_mock/robots/faults", get(get_faults).post(set_faults))
        .route("/_mock/robots/config", get(get_config).post(set_config))
        .route("/_mock/robots/clock", post(move_clock))
}

async fn stats(State(state): State<MockState>) -> Response {
    Json(state.robot_stats()).into_response()
}

#[derive(Deserialize)]
struct Listing {
    limit: Option<usize>,
    provider: Option<RobotProvider>,
    token: Option<String>,
}

async fn messages(
    State(state): State<MockState>,
    q: Result<Query<Listing>, QueryRejection>,
) -> Response {
    match q {
        Ok(Query(q)) => Json(state.robot_messages(
            q.limit.unwrap_or(ROBOTS_RING_CAPACITY),
            q.provider,
            q.token.as_deref(),
        ))
        .into_response(),
        Err(e) => bad_request(format!("robots messages: {e}")),
    }
}

async fn get_faults(State(state): State<MockState>) -> Response {
    Json(state.robot_faults()).into_response()
}

/// `{"provider": "wecom", "fail_next": 2, "code": 45009, ...}` replaces the
/// faults of that provider; without `provider`, of all three. Answers the
/// faults of every provider.
async fn set_faults(State(state): State<MockState>, body: Bytes) -> Response {
    let mut fields = match serde_json::from_slice::<serde_json::Map<String, Value>>(&body) {
        Ok(m) => m,
        Err(e) => return bad_request(format!("robots faults: {e}")),
    };
    let provider = match fields.remove("provider") {
        None | Some(Value::Null) => None,
        Some(p) => match serde_json::from_value::<RobotProvider>(p) {
            Ok(p) => Some(p),
            Err(e) => return bad_request(format!("robots faults: provider: {e}")),
        },
    };
    let faults = match serde_json::from_value::<RobotFaults>(Value::Object(fields)) {
        Ok(f) => f,
        Err(e) => return bad_request(format!("robots faults: {e}")),
    };
    match state.set_robot_faults(provider, faults) {
        Ok(()) => Json(state.robot_faults()).into_response(),
        Err(e) => bad_request(format!("robots faults: {e}")),
    }
}

async fn get_config(State(state): State<MockState>) -> Response {
    Json(state.robots_config()).into_response()
}

/// Replaces the robot list and limits; fields left out take their defaults.
async fn set_config(State(state): State<MockState>, body: Bytes) -> Response {
    let cfg = match serde_json::from_slice::<RobotsConfig>(&body) {
        Ok(c) => c,
        Err(e) => return bad_request(format!("robots config: {e}")),
    };
    match state.set_robots_config(cfg) {
        Ok(()) => Json(state.robots_config()).into_response(),
        Err(e) => bad_request(format!("robots config: {e}")),
    }
}

async fn move_clock(State(state): State<MockState>, body: Bytes) -> Response {
    match serde_json::from_slice::<ClockMove>(&body) {
        Ok(m) => {
            let c = &state.shared.robots.clock;
            c.advance(
                m.advance_secs
                    .saturating_mul(1000)
                    .saturating_add(m.advance_ms),
            );
            Json(serde_json::json!({ "now_ms": c.now_ms(), "offset_ms": c.offset_ms() }))
                .into_response()
        }
        Err(e) => bad_request(format!("robots clock: {e}")),
    }
}
