//! `/_mock/*` control endpoints: read what the mocks saw, change faults, reset.

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;

use crate::MockState;
use crate::faults::Faults;
use crate::webhook::RING_CAPACITY;

pub(crate) fn routes() -> Router<MockState> {
    Router::new()
        .route("/_mock/health", get(health))
        .route("/_mock/stats", get(stats))
        .route("/_mock/requests", get(requests))
        .route("/_mock/keys/{*key}", get(key_stats))
        .route("/_mock/faults", get(get_faults).post(set_faults))
        .route("/_mock/reset", post(reset))
}

async fn health() -> Json<serde_json::Value> {
    Json(serde_json::json!({ "ok": true }))
}

/// The webhook sink's stats at the top level (as before), plus one member per provider.
async fn stats(State(state): State<MockState>) -> Response {
    let mut body = serde_json::to_value(state.stats()).unwrap_or_default();
    if let Some(obj) = body.as_object_mut() {
        obj.insert("wechat".into(), serde_json::json!(state.wechat_stats()));
        obj.insert("wecom".into(), serde_json::json!(state.wecom_stats()));
        obj.insert("fcm".into(), serde_json::json!(state.fcm_stats()));
        obj.insert("smtp".into(), serde_json::json!(state.smtp_stats()));
        obj.insert(
            "aliyun_sms".into(),
            serde_json::json!(state.aliyun_sms_stats()),
        );
        obj.insert(
            "tencent_sms".into(),
            serde_json::json!(state.tencent_sms_stats()),
        );
        obj.insert("robots".into(), serde_json::json!(state.robot_stats()));
        obj.insert("huawei".into(), serde_json::json!(state.huawei_stats()));
        obj.insert("xiaomi".into(), serde_json::json!(state.xiaomi_stats()));
        obj.insert("honor".into(), serde_json::json!(state.honor_stats()));
        obj.insert("oppo".into(), serde_json::json!(state.oppo_stats()));
        obj.insert("vivo".into(), serde_json::json!(state.vivo_stats()));
        obj.insert("dingtalk".into(), serde_json::json!(state.dingtalk_stats()));
        obj.insert("feishu".into(), serde_json::json!(state.feishu_stats()));
    }
    Json(body).into_response()
}

#[derive(Deserialize)]
struct RequestsQuery {
    limit: Option<usize>,
    key: Option<String>,
}

async fn requests(State(state): State<MockState>, Query(q): Query<RequestsQuery>) -> Response {
    let limit = q.limit.unwrap_or(RING_CAPACITY);
    Json(state.requests(limit, q.key.as_deref())).into_response()
}

async fn key_stats(State(state): State<MockState>, Path(key): Path<String>) -> Response {
    Json(state.key_stats(&key)).into_response()
}

async fn get_faults(State(state): State<MockState>) -> Response {
    Json(state.faults()).into_response()
}

/// Takes the body as plain bytes so callers need not set a JSON content type.
async fn set_faults(State(state): State<MockState>, body: Bytes) -> Response {
    let faults: Faults = match serde_json::from_slice(&body) {
        Ok(f) => f,
        Err(e) => return bad_request(format!("faults: {e}")),
    };
    if let Err(msg) = faults.validate() {
        return bad_request(msg);
    }
    state.set_faults(faults);
    Json(state.faults()).into_response()
}

async fn reset(State(state): State<MockState>) -> Response {
    state.reset();
    Json(serde_json::json!({ "ok": true })).into_response()
}

fn bad_request(message: String) -> Response {
    (
        StatusCode::BAD_REQUEST,
        Json(serde_json::json!({ "error": { "code": "bad_request", "message": message } })),
    )
        .into_response()
}
