//! The test-only control routes both SMS mocks answer under
//! `/_mock/{aliyun_sms,tencent_sms}/`: faults, the whole configuration,
//! counters, accepted numbers, receipts and the mock's clock. One set of
//! handlers, generic over [`SmsControl`], serves both.

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::MockState;
use crate::providers::{Clock, ClockMove};
use crate::wechat::bad_request;

/// What the control routes reach in one SMS mock.
pub(crate) trait SmsControl: Send + Sync + 'static {
    type Config: Serialize + DeserializeOwned + Send;
    type Faults: Serialize + DeserializeOwned + Send;
    /// The mock's name in its control paths and error messages.
    const NAME: &'static str;
    /// How many numbers `messages` and `receipts` show without a `limit`.
    const RING: usize;
    fn of(state: &MockState) -> &Self;
    fn config(&self) -> Self::Config;
    fn set_config(&self, cfg: Self::Config);
    fn faults(&self) -> Self::Faults;
    fn set_faults(&self, faults: Self::Faults);
    fn stats(&self) -> Value;
    /// The newest accepted numbers, newest first, only `phone`'s if given.
    fn messages(&self, limit: usize, phone: Option<&str>) -> Value;
    /// The receipts of the newest accepted numbers, as the provider pushes
    /// them.
    fn receipts(&self, limit: usize, phone: Option<&str>) -> Value;
    fn clock(&self) -> &Clock;
}

/// `/_mock/{NAME}/{faults,config,stats,messages,receipts,clock}`.
pub(crate) fn routes<M: SmsControl>() -> Router<MockState> {
    let at = |leaf: &str| format!("/_mock/{}/{leaf}", M::NAME);
    Router::new()
        .route(&at("faults"), get(get_faults::<M>).post(set_faults::<M>))
        .route(&at("config"), get(get_config::<M>).post(set_config::<M>))
        .route(&at("stats"), get(stats::<M>))
        .route(&at("messages"), get(messages::<M>))
        .route(&at("receipts"), get(receipts::<M>))
        .route(&at("clock"), post(move_clock::<M>))
}

async fn get_faults<M: SmsControl>(State(state): State<MockState>) -> Response {
    Json(M::of(&state).faults()).into_response()
}

async fn set_faults<M: SmsControl>(State(state): State<MockState>, body: Bytes) -> Response {
    match serde_json::from_slice::<M::Faults>(&body) {
        Ok(f) => {
            M::of(&state).set_faults(f);
            Json(M::of(&state).faults()).into_response()
        }
        Err(e) => bad_request(format!("{} faults: {e}", M::NAME)),
    }
}

async fn get_config<M: SmsControl>(State(state): State<MockState>) -> Response {
    Json(M::of(&state).config()).into_response()
}

/// Replaces the whole configuration (credentials, signs, templates, limits,
/// callback URL, faults).
async fn set_config<M: SmsControl>(State(state): State<MockState>, body: Bytes) -> Response {
    match serde_json::from_slice::<M::Config>(&body) {
        Ok(c) => {
            M::of(&state).set_config(c);
            Json(M::of(&state).config()).into_response()
        }
        Err(e) => bad_request(format!("{} config: {e}", M::NAME)),
    }
}

async fn stats<M: SmsControl>(State(state): State<MockState>) -> Response {
    Json(M::of(&state).stats()).into_response()
}

#[derive(Deserialize)]
struct Listing {
    limit: Option<usize>,
    phone: Option<String>,
}

async fn messages<M: SmsControl>(
    State(state): State<MockState>,
    Query(q): Query<Listing>,
) -> Response {
    let limit = q.limit.unwrap_or(M::RING);
    Json(M::of(&state).messages(limit, q.phone.as_deref())).into_response()
}

async fn receipts<M: SmsControl>(
    State(state): State<MockState>,
    Query(q): Query<Listing>,
) -> Response {
    let limit = q.limit.unwrap_or(M::RING);
    Json(M::of(&state).receipts(limit, q.phone.as_deref())).into_response()
}

async fn move_clock<M: SmsControl>(State(state): State<MockState>, body: Bytes) -> Response {
    match serde_json::from_slice::<ClockMove>(&body) {
        Ok(m) => {
            let c = M::of(&state).clock();
            c.advance(
                m.advance_secs
                    .saturating_mul(1000)
                    .saturating_add(m.advance_ms),
            );
            Json(serde_json::json!({"now_ms": c.now_ms(), "offset_ms": c.offset_ms()}))
                .into_response()
        }
        Err(e) => bad_request(format!("clock: {e}")),
    }
}
