//! Honor Push mock, as described in `shared/reference/china-providers.md`
//! §4.0 and §4.2: the client-credentials token endpoint of
//! `iam.developer.honor.com` (`POST /auth/token`) and the downlink message
//! endpoint of `push-api.cloud.honor.com`
//! (`POST /api/v1/{appId}/sendMessage`), both served by the one mock server.
//!
//! Why it behaves as it does: Honor's push service was split from Huawei's
//! and keeps its shape (a bearer token from client credentials, a
//! Huawei-style message with a `token` list), with camelCase field names
//! and a `timestamp` header (ms) on every send. Answers are
//! `{code, message, data: {sendResult, requestId, failTokens, expireTokens}}`
//! with `code` 200 on success, as several clients read it. The official
//! reference was not read, so the error codes below follow Huawei's
//! [assumption]: `80100000` with `failTokens` for a partial success (one
//! client reads that code), `80300007` when every token is invalid,
//! `80200003` (HTTP 401) for an expired access token, `80200001` (HTTP 401)
//! for an unknown one, `80100001` for a bad parameter, `80100003` for a
//! message over 4096 bytes, HTTP 503 for flow control and `81000001` for
//! an internal error. A `timestamp` more than 10 minutes off the mock's
//! clock is refused as `80100001` [assumption: the window is not
//! documented in what was read].
//!
//! Per-device allowances are Huawei's: marketing messages (no
//! `android.notification.importance`, or `LOW`) are delivered 2 a device a
//! day, the rest dropped with a success answer; `NORMAL` (service and
//! communication, which needs Honor's approval) has no allowance. Honor
//! has no app-level daily quota in the reference, so the `quota_next`
//! fault is taken and has no effect.

use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use parking_lot::RwLock;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::MockState;
use crate::push_quota::DeviceLimits;
use crate::vendor_push::{
    Book, Injected, TokenMint, TokenProblem, VendorMock, bump, control_routes,
};

/// The app id (`{appId}` in the send path) `herald mock` serves without
/// configuration. Real ones are numeric, like this.
pub const DEFAULT_HONOR_APP_ID: &str = "104400001";
/// Its OAuth client id.
pub const DEFAULT_HONOR_CLIENT_ID: &str = "mock-honor-client";
/// Its OAuth client secret.
pub const DEFAULT_HONOR_CLIENT_SECRET: &str = "mock-honor-client-secret";
/// Lifetime of an issued access token.
pub const HONOR_TOKEN_TTL_SECS: u64 = 3600;
/// Most device tokens one send may carry (Huawei's number [assumption]).
pub const HONOR_MAX_TOKENS: usize = 1000;
/// Largest message (as JSON, without its `token` list) a send may carry.
pub const HONOR_MAX_MESSAGE_BYTES: usize = 4096;
/// How far the `timestamp` header may be from the mock's clock.
pub const HONOR_TIMESTAMP_WINDOW_MS: u64 = 10 * 60 * 1000;

const SUCCESS: i64 = 200;
const PARTIAL: i64 = 80100000;
const BAD_PARAM: i64 = 80100001;
const BAD_PAYLOAD: i64 = 80100003;
const AUTH_ERROR: i64 = 80200001;
const TOKEN_EXPIRED: i64 = 80200003;
const ALL_INVALID: i64 = 80300007;
const INTERNAL: i64 = 81000001;

/// The app the mock serves and its limits; `GET|POST /_mock/honor/config`.
/// Fields left out take their defaults; zero turns a limit off.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HonorConfig {
    pub app_id: String,
    pub client_id: String,
    pub client_secret: String,
    /// Marketing messages delivered per device in any rolling 24 h; more
    /// are accepted and dropped. Honor's default is 2 (5 for news apps).
    pub marketing_per_device_per_day: u32,
    /// Send calls a second; more answer HTTP 503.
    pub calls_per_second: u32,
}

impl Default for HonorConfig {
    fn default() -> Self {
        HonorConfig {
            app_id: DEFAULT_HONOR_APP_ID.to_owned(),
            client_id: DEFAULT_HONOR_CLIENT_ID.to_owned(),
            client_secret: DEFAULT_HONOR_CLIENT_SECRET.to_owned(),
            marketing_per_device_per_day: 2,
            calls_per_second: 1000,
        }
    }
}

impl HonorConfig {
    /// The app id must fit in a path segment and the credentials must not be
    /// empty, or no client could ever send.
    pub fn validate(&self) -> Result<(), String> {
        if self.app_id.is_empty() || self.app_id.contains(['/', '?', '#']) {
            return Err(format!(
                "app_id {:?} must be non-empty, without / ? #",
                self.app_id
            ));
        }
        if self.client_id.is_empty() || self.client_secret.is_empty() {
            return Err("client_id and client_secret must not be empty".to_owned());
        }
        Ok(())
    }
}

pub(crate) struct HonorState {
    live: RwLock<HonorConfig>,
    mint: TokenMint,
    book: Book,
}

impl HonorState {
    pub(crate) fn new(cfg: HonorConfig) -> HonorState {
        HonorState {
            live: RwLock::new(cfg),
            mint: TokenMint::new("hnr."),
            book: Book::new(),
        }
    }

    pub(crate) fn reset(&self) {
        self.book.reset();
    }
}

impl VendorMock for HonorState {
    const NAME: &'static str = "honor";
    type Config = HonorConfig;

    fn of(state: &MockState) -> &Self {
        &state.shared.honor
    }

    fn book(&self) -> &Book {
        &self.book
    }

    fn config(&self) -> HonorConfig {
        self.live.read().clone()
    }

    fn set_config(&self, cfg: HonorConfig) -> Result<(), String> {
        cfg.validate()?;
        *self.live.write() = cfg;
        Ok(())
    }
}

pub(crate) fn routes() -> Router<MockState> {
    Router::new()
        .route("/auth/token", post(token))
        .route("/api/v1/{app_id}/sendMessage", post(send))
        .merge(control_routes::<HonorState>())
}

#[derive(Deserialize)]
struct TokenForm {
    grant_type: Option<String>,
    client_id: Option<String>,
    client_secret: Option<String>,
}

/// The client-credentials grant. Errors are HTTP 400/401 with an OAuth
/// `error` and `error_description` [assumption: the shape of Honor's
/// error answer was not read].
async fn token(State(state): State<MockState>, body: Bytes) -> Response {
    let hn = &state.shared.honor;
    let cfg = hn.live.read().clone();
    let refuse = |status: StatusCode, error: &str, description: &str| {
        bump(&hn.book.tally.tokens_refused, 1);
        tracing::info!(error, description, "honor mock: token request refused");
        (
            status,
            axum::Json(json!({"error": error, "error_description": description})),
        )
            .into_response()
    };
    let Ok(form) = serde_urlencoded::from_bytes::<TokenForm>(&body) else {
        return refuse(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "the body is not a form",
        );
    };
    if form.grant_type.as_deref() != Some("client_credentials") {
        return refuse(
            StatusCode::BAD_REQUEST,
            "unsupported_grant_type",
            "grant_type must be client_credentials",
        );
    }
    let id_ok = form.client_id.as_deref() == Some(cfg.client_id.as_str());
    let secret_ok = form
        .client_secret
        .as_deref()
        .is_some_and(|s| crate::sms::same(s, &cfg.client_secret));
    if !id_ok || !secret_ok {
        return refuse(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            "the client id or secret is wrong",
        );
    }
    let now = hn.book.clock.now_ms();
    let (access_token, _) = hn
        .mint
        .issue(&cfg.client_id, now, HONOR_TOKEN_TTL_SECS * 1000);
    bump(&hn.book.tally.tokens_issued, 1);
    axum::Json(json!({
        "access_token": access_token,
        "expires_in": HONOR_TOKEN_TTL_SECS,
        "token_type": "Bearer",
    }))
    .into_response()
}

/// One answer of the send API.
struct Answer {
    status: StatusCode,
    code: i64,
    message: String,
    data: Value,
}

fn fail(status: StatusCode, code: i64, message: impl Into<String>) -> Answer {
    Answer {
        status,
        code,
        message: message.into(),
        data: Value::Null,
    }
}

fn param(message: impl Into<String>) -> Answer {
    fail(StatusCode::BAD_REQUEST, BAD_PARAM, message)
}

async fn send(
    State(state): State<MockState>,
    Path(app_id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let hn = &state.shared.honor;
    let book = &hn.book;
    bump(&book.tally.calls, 1);
    let latency_ms = book.faults.lock().latency_ms;
    let now_ms = book.clock.now_ms();
    let seq = book.next_seq();
    let request_id = format!("{}-{now_ms:013}{seq:08}", hn.live.read().app_id);
    let a = decide(hn, &app_id, &headers, &body, now_ms, &request_id);
    if a.code != SUCCESS && a.code != PARTIAL {
        book.tally.refused.add(&a.code.to_string(), 1);
        tracing::debug!(status = a.status.as_u16(), code = a.code, message = %a.message, "honor mock: send refused");
    }
    if latency_ms > 0 {
        tokio::time::sleep(Duration::from_millis(latency_ms)).await;
    }
    let body = json!({"code": a.code, "message": a.message, "data": a.data});
    let mut resp = Response::new(Body::from(body.to_string()));
    *resp.status_mut() = a.status;
    resp.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/json;charset=UTF-8"),
    );
    resp
}

fn decide(
    hn: &HonorState,
    app_id: &str,
    headers: &HeaderMap,
    body: &[u8],
    now_ms: u64,
    request_id: &str,
) -> Answer {
    let cfg = hn.live.read().clone();
    let book = &hn.book;
    let bearer = headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, rest) = v.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
        });
    let Some(bearer) = bearer else {
        return fail(
            StatusCode::UNAUTHORIZED,
            AUTH_ERROR,
            "Authorization: Bearer is missing",
        );
    };
    match hn.mint.check(bearer, &cfg.client_id, now_ms, &book.faults) {
        Ok(()) => {}
        Err(TokenProblem::Unknown) => {
            return fail(
                StatusCode::UNAUTHORIZED,
                AUTH_ERROR,
                "access token is invalid",
            );
        }
        Err(TokenProblem::Expired) => {
            return fail(
                StatusCode::UNAUTHORIZED,
                TOKEN_EXPIRED,
                "access token expired",
            );
        }
    }
    if app_id != cfg.app_id {
        return fail(
            StatusCode::UNAUTHORIZED,
            AUTH_ERROR,
            format!("app {app_id} is not this client's"),
        );
    }
    let stamp = headers
        .get("timestamp")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    match stamp {
        None => return param("the timestamp header (unix ms) is missing"),
        Some(t) if t.abs_diff(now_ms) > HONOR_TIMESTAMP_WINDOW_MS => {
            return param("the timestamp header is more than 10 minutes off");
        }
        Some(_) => {}
    }
    if !book.take_call(now_ms, cfg.calls_per_second) {
        return fail(StatusCode::SERVICE_UNAVAILABLE, INTERNAL, "flow control");
    }
    match book.injected() {
        Some(Injected::Throttle) => {
            return fail(StatusCode::SERVICE_UNAVAILABLE, INTERNAL, "flow control");
        }
        Some(Injected::Internal) => {
            return fail(
                StatusCode::INTERNAL_SERVER_ERROR,
                INTERNAL,
                "internal error",
            );
        }
        Some(Injected::Quota) | None => {}
    }

    let (tokens, message, marketing) = match check(body) {
        Ok(c) => c,
        Err(a) => return a,
    };
    let (invalid, valid): (Vec<String>, Vec<String>) =
        tokens.into_iter().partition(|t| book.is_invalid(t));
    bump(&book.tally.invalid_tokens, invalid.len() as u64);
    if valid.is_empty() {
        return fail(StatusCode::OK, ALL_INVALID, "all the tokens are invalid");
    }
    let limits = DeviceLimits {
        per_day: 0,
        marketing_per_day: cfg.marketing_per_device_per_day,
    };
    book.deliver(&valid, message, request_id, marketing, limits, now_ms);
    bump(&book.tally.accepted_calls, 1);
    let (code, text) = if invalid.is_empty() {
        (SUCCESS, "Success")
    } else {
        (PARTIAL, "partial success")
    };
    Answer {
        status: StatusCode::OK,
        code,
        message: text.to_owned(),
        data: json!({"sendResult": true, "requestId": request_id,
                     "failTokens": invalid, "expireTokens": []}),
    }
}

/// Checks a send body; its tokens, the message without them, and whether
/// it is marketing.
fn check(body: &[u8]) -> Result<(Vec<String>, Value, bool), Answer> {
    let root: Value =
        serde_json::from_slice(body).map_err(|e| param(format!("the body is not JSON: {e}")))?;
    let Value::Object(mut msg) = root else {
        return Err(param("the body must be a JSON object"));
    };
    let tokens = match msg.remove("token") {
        Some(Value::Array(list)) => list
            .into_iter()
            .map(|t| match t {
                Value::String(s) => Ok(s),
                _ => Err(param("token must be an array of strings")),
            })
            .collect::<Result<Vec<String>, Answer>>()?,
        _ => return Err(param("token (an array of device tokens) is required")),
    };
    if tokens.is_empty() || tokens.len() > HONOR_MAX_TOKENS {
        return Err(param(format!(
            "token must hold 1 to {HONOR_MAX_TOKENS} tokens, not {}",
            tokens.len()
        )));
    }
    if serde_json::to_vec(&msg).map_or(usize::MAX, |v| v.len()) > HONOR_MAX_MESSAGE_BYTES {
        return Err(fail(
            StatusCode::BAD_REQUEST,
            BAD_PAYLOAD,
            format!("the message is over {HONOR_MAX_MESSAGE_BYTES} bytes"),
        ));
    }
    let obj = |m: &Map<String, Value>, k: &str, at: &str| match m.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(o)) => Ok(Some(o.clone())),
        Some(_) => Err(param(format!("{at} must be an object"))),
    };
    let note = obj(&msg, "notification", "notification")?;
    let android = obj(&msg, "android", "android")?.unwrap_or_default();
    let an = obj(&android, "notification", "android.notification")?;
    let data = match msg.get("data") {
        None | Some(Value::Null) => false,
        Some(Value::String(_)) => true,
        Some(_) => return Err(param("data must be a string")),
    };
    if note.is_none() && an.is_none() && !data {
        return Err(param(
            "the message needs notification, android.notification or data",
        ));
    }
    if note.is_some() || an.is_some() {
        for k in ["title", "body"] {
            let has = |o: &Option<Map<String, Value>>| {
                o.as_ref()
                    .and_then(|o| o.get(k))
                    .and_then(Value::as_str)
                    .is_some_and(|s| !s.is_empty())
            };
            if !has(&note) && !has(&an) {
                return Err(param(format!("notification.{k} is required")));
            }
        }
    }
    let importance = match an.as_ref().and_then(|n| n.get("importance")) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s == "NORMAL" || s == "LOW" => Some(s.clone()),
        Some(_) => {
            return Err(param(
                "android.notification.importance must be NORMAL or LOW",
            ));
        }
    };
    if let Some(ca) = an.as_ref().and_then(|n| n.get("clickAction")) {
        let t = ca.get("type").and_then(Value::as_i64);
        let has = |k: &str| {
            ca.get(k)
                .and_then(Value::as_str)
                .is_some_and(|s| !s.is_empty())
        };
        let ok = match t {
            Some(1) => has("intent") || has("action"),
            Some(2) => has("url"),
            Some(3) => true,
            _ => false,
        };
        if !ok {
            return Err(param(
                "android.notification.clickAction: type 1 needs intent or action, 2 a url, 3 nothing",
            ));
        }
    }
    let marketing = importance.as_deref() != Some("NORMAL");
    Ok((tokens, Value::Object(msg), marketing))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::test_http::TestMock;

    async fn token(m: &TestMock, secret: &str) -> (u16, Value) {
        let resp = m
            .http
            .post(m.url("/auth/token"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!(
                "grant_type=client_credentials&client_id=mock-honor-client&client_secret={secret}"
            ))
            .send()
            .await
            .unwrap();
        (resp.status().as_u16(), resp.json().await.unwrap())
    }

    async fn send(m: &TestMock, bearer: &str, stamp: Option<u64>, body: Value) -> (u16, Value) {
        let mut req = m
            .http
            .post(m.url("/api/v1/104400001/sendMessage"))
            .bearer_auth(bearer)
            .json(&body);
        if let Some(t) = stamp {
            req = req.header("timestamp", t.to_string());
        }
        let resp = req.send().await.unwrap();
        (resp.status().as_u16(), resp.json().await.unwrap())
    }

    fn now() -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64
    }

    fn msg(tokens: &[&str]) -> Value {
        json!({"token": tokens, "android": {"notification": {"title": "t", "body": "b",
               "importance": "NORMAL", "clickAction": {"type": 3}}}})
    }

    #[tokio::test]
    async fn tokens_timestamps_and_messages_are_checked() {
        let m = TestMock::start().await;
        assert_eq!(token(&m, "wrong").await.0, 401);
        let (st, t) = token(&m, "mock-honor-client-secret").await;
        assert_eq!(st, 200, "{t}");
        let t = t["access_token"].as_str().unwrap().to_owned();

        let (st, v) = send(&m, &t, Some(now()), msg(&["d1", "invalid-2"])).await;
        assert_eq!((st, v["code"].as_i64()), (200, Some(80100000)), "{v}");
        assert_eq!(v["data"]["failTokens"], json!(["invalid-2"]));
        let (_, v) = send(&m, &t, Some(now()), msg(&["d1"])).await;
        assert_eq!(v["code"], 200, "{v}");
        assert!(v["data"]["requestId"].is_string());
        let got = m.get("/_mock/honor/messages?token=d1").await;
        assert_eq!(got.as_array().unwrap().len(), 2);

        assert_eq!(send(&m, &t, None, msg(&["d1"])).await.1["code"], 80100001);
        let old = now() - 11 * 60 * 1000;
        assert_eq!(
            send(&m, &t, Some(old), msg(&["d1"])).await.1["code"],
            80100001
        );
        assert_eq!(send(&m, "hnr.nope", Some(now()), msg(&["d1"])).await.0, 401);
        assert_eq!(
            send(&m, &t, Some(now()), msg(&["invalid-1"])).await.1["code"],
            80300007
        );
        let big = json!({"token": ["d1"], "data": "x".repeat(5000)});
        assert_eq!(send(&m, &t, Some(now()), big).await.1["code"], 80100003);

        m.post("/_mock/honor/faults", &json!({"expire_tokens": true}))
            .await;
        let (st, v) = send(&m, &t, Some(now()), msg(&["d1"])).await;
        assert_eq!((st, v["code"].as_i64()), (401, Some(80200003)), "{v}");
        let fresh = token(&m, "mock-honor-client-secret").await.1["access_token"]
            .as_str()
            .unwrap()
            .to_owned();
        assert_eq!(
            send(&m, &fresh, Some(now()), msg(&["d1"])).await.1["code"],
            200
        );
        // Tokens live an hour on the mock clock.
        m.post("/_mock/honor/clock", &json!({"advance_secs": 3600}))
            .await;
        let (st, v) = send(&m, &fresh, Some(now() + 3_600_000), msg(&["d1"])).await;
        assert_eq!((st, v["code"].as_i64()), (401, Some(80200003)), "{v}");
    }

    #[tokio::test]
    async fn marketing_is_dropped_past_two_a_day_and_faults_answer() {
        let m = TestMock::start().await;
        let t = token(&m, "mock-honor-client-secret").await.1["access_token"]
            .as_str()
            .unwrap()
            .to_owned();
        let marketing = json!({"token": ["d"], "notification": {"title": "t", "body": "b"}});
        for _ in 0..3 {
            assert_eq!(
                send(&m, &t, Some(now()), marketing.clone()).await.1["code"],
                200
            );
        }
        let s = m.get("/_mock/honor/stats").await;
        assert_eq!(
            (s["delivered"].as_u64(), s["dropped_quota"].as_u64()),
            (Some(2), Some(1)),
            "{s}"
        );
        m.post(
            "/_mock/honor/faults",
            &json!({"throttle_next": 1, "internal_next": 1}),
        )
        .await;
        assert_eq!(send(&m, &t, Some(now()), msg(&["d"])).await.0, 503);
        assert_eq!(send(&m, &t, Some(now()), msg(&["d"])).await.0, 500);
        assert_eq!(send(&m, &t, Some(now()), msg(&["d"])).await.0, 200);
    }
}
