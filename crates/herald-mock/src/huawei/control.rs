//! `/_mock/huawei/*`: what the Huawei mock delivered, its counters, faults,
//! configuration, invalid device tokens and clock.

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::json;

use super::{HUAWEI_RING_CAPACITY, HuaweiConfig, HuaweiFaults};
use crate::MockState;
use crate::providers::ClockMove;
use crate::wechat::bad_request;

pub(super) fn routes() -> Router<MockState> {
    Router::new()
        .route("/_mock/huawei/stats", get(stats))
        .route("/_mock/huawei/messages", get(messages))
        .route("/_mock/huawei/faults", get(get_faults).post(set_faults))
        .route("/_mock/huawei/config", get(get_config).post(set_config))
        .route("/_mock/huawei/devices", get(get_devices).post(add_devices))
        .route("/_mock/huawei/clock", post(move_clock))
}

async fn stats(State(state): State<MockState>) -> Response {
    Json(state.huawei_stats()).into_response()
}

#[derive(Deserialize)]
struct Listing {
    limit: Option<usize>,
    token: Option<String>,
}

async fn messages(
    State(state): State<MockState>,
    q: Result<Query<Listing>, QueryRejection>,
) -> Response {
    match q {
        Ok(Query(q)) => {
            Json(state.huawei_messages(q.limit.unwrap_or(HUAWEI_RING_CAPACITY), q.token.as_deref()))
                .into_response()
        }
        Err(e) => bad_request(format!("huawei messages: {e}")),
    }
}

async fn get_faults(State(state): State<MockState>) -> Response {
    Json(state.huawei_faults()).into_response()
}

/// Replaces every fault; fields left out are off.
async fn set_faults(State(state): State<MockState>, body: Bytes) -> Response {
    match serde_json::from_slice::<HuaweiFaults>(&body) {
        Ok(f) => {
            state.set_huawei_faults(f);
            Json(state.huawei_faults()).into_response()
        }
        Err(e) => bad_request(format!("huawei faults: {e}")),
    }
}

async fn get_config(State(state): State<MockState>) -> Response {
    Json(state.huawei_config()).into_response()
}

/// Replaces the whole configuration; fields left out take their defaults.
async fn set_config(State(state): State<MockState>, body: Bytes) -> Response {
    let cfg = match serde_json::from_slice::<HuaweiConfig>(&body) {
        Ok(c) => c,
        Err(e) => return bad_request(format!("huawei config: {e}")),
    };
    match state.set_huawei_config(cfg) {
        Ok(()) => Json(state.huawei_config()).into_response(),
        Err(e) => bad_request(format!("huawei config: {e}")),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Devices {
    #[serde(default)]
    invalid: Vec<String>,
}

async fn get_devices(State(state): State<MockState>) -> Response {
    Json(json!({ "invalid": state.huawei_config().invalid_tokens })).into_response()
}

/// `{"invalid": ["tok", ...]}` adds device tokens to the invalid list, as
/// when users uninstall the app; answers the whole list.
async fn add_devices(State(state): State<MockState>, body: Bytes) -> Response {
    match serde_json::from_slice::<Devices>(&body) {
        Ok(d) => {
            let all = state.add_huawei_invalid_tokens(d.invalid);
            Json(json!({ "invalid": all })).into_response()
        }
        Err(e) => bad_request(format!("huawei devices: {e}")),
    }
}

async fn move_clock(State(state): State<MockState>, body: Bytes) -> Response {
    match serde_json::from_slice::<ClockMove>(&body) {
        Ok(m) => {
            let c = &state.shared.huawei.clock;
            c.advance(
                m.advance_secs
                    .saturating_mul(1000)
                    .saturating_add(m.advance_ms),
            );
            Json(json!({ "now_ms": c.now_ms(), "offset_ms": c.offset_ms() })).into_response()
        }
        Err(e) => bad_request(format!("huawei clock: {e}")),
    }
}
