//! `POST /v1/{appId}/messages:send`: Huawei's v1 downlink message API
//! (`push-api.cloud.huawei.com`).
//!
//! The order of the checks: bearer token (401), app id (401), per-app flow
//! control and injected faults (503, 500), the body (400), then the device
//! tokens and the per-device daily windows, which never fail the call.
//! Every answer is `{"code", "msg", "requestId"}` with string values.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use axum::routing::post;
use serde_json::{Map, Value, json};

use super::{
    Delivered, HUAWEI_MAX_MESSAGE_BYTES, HUAWEI_MAX_TOKENS, HuaweiState, TokenError, bump,
};
use crate::MockState;
use crate::push_quota::{DeviceLimits, Verdict};

const SUCCESS: &str = "80000000";
/// Some tokens were illegal; `msg` is a JSON string naming them.
const PARTIAL: &str = "80100000";
const BAD_PARAM: &str = "80100001";
const BAD_PAYLOAD: &str = "80100003";
const AUTH_ERROR: &str = "80200001";
const TOKEN_EXPIRED: &str = "80200003";
const ALL_INVALID: &str = "80300007";
const TOKEN_COUNT: &str = "80300010";
/// Internal error; also what the mock answers with a flow-control 503,
/// whose real code is not documented [unverified].
const INTERNAL: &str = "81000001";

/// `android.category` values Huawei knows: the service and communication
/// classes, and `MARKETING`.
const CATEGORIES: &[&str] = &[
    "IM",
    "VOIP",
    "SUBSCRIPTION",
    "TRAVEL",
    "HEALTH",
    "WORK",
    "ACCOUNT",
    "EXPRESS",
    "FINANCE",
    "DEVICE_REMINDER",
    "SYSTEM_REMINDER",
    "MAIL",
    "MARKETING",
];

pub(super) fn routes() -> Router<MockState> {
    Router::new().route("/v1/{app_id}/messages:send", post(send))
}

/// One answer of the send API.
#[derive(Debug)]
struct Answer {
    status: StatusCode,
    code: &'static str,
    msg: Cow<'static, str>,
}

impl Answer {
    fn new(status: StatusCode, code: &'static str, msg: impl Into<Cow<'static, str>>) -> Answer {
        Answer {
            status,
            code,
            msg: msg.into(),
        }
    }

    fn ok() -> Answer {
        Answer::new(StatusCode::OK, SUCCESS, "Success")
    }

    /// 400 `80100001`, naming what is wrong.
    fn param(msg: impl Into<Cow<'static, str>>) -> Answer {
        Answer::new(StatusCode::BAD_REQUEST, BAD_PARAM, msg)
    }

    fn unauthorized(code: &'static str) -> Answer {
        let msg = if code == TOKEN_EXPIRED {
            "Oauth token expired"
        } else {
            "Oauth authentication error"
        };
        Answer::new(StatusCode::UNAUTHORIZED, code, msg)
    }

    fn into_response(self, request_id: &str) -> Response {
        let body = json!({ "code": self.code, "msg": self.msg, "requestId": request_id });
        let mut resp = Response::new(Body::from(body.to_string()));
        *resp.status_mut() = self.status;
        resp.headers_mut().insert(
            CONTENT_TYPE,
            HeaderValue::from_static("application/json;charset=UTF-8"),
        );
        resp
    }
}

async fn send(
    State(state): State<MockState>,
    Path(app_id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let hw = &state.shared.huawei;
    bump(&hw.tally.calls, 1);
    let latency_ms = hw.faults.lock().latency_ms;
    let now_ms = hw.clock.now_ms();
    let request_id = hw.next_request_id(now_ms);
    let answer = decide(hw, &app_id, &headers, &body, now_ms, &request_id);
    if answer.status != StatusCode::OK {
        hw.tally.http_errors.add(answer.status.as_str(), 1);
    }
    if answer.code != SUCCESS && answer.code != PARTIAL {
        hw.tally.refused.add(answer.code, 1);
        tracing::debug!(
            status = answer.status.as_u16(),
            code = answer.code,
            msg = %answer.msg,
            "huawei mock: send refused"
        );
    }
    if latency_ms > 0 {
        tokio::time::sleep(Duration::from_millis(latency_ms)).await;
    }
    answer.into_response(&request_id)
}

/// Everything about one send that does not wait.
fn decide(
    hw: &HuaweiState,
    app_id: &str,
    headers: &HeaderMap,
    body: &[u8],
    now_ms: u64,
    request_id: &str,
) -> Answer {
    let live = hw.live();
    let bearer = headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, rest) = v.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
        })
        .filter(|t| !t.is_empty());
    let Some(bearer) = bearer else {
        return Answer::unauthorized(AUTH_ERROR);
    };
    match hw.check_token(bearer, &live.cfg.app_id, now_ms) {
        Ok(()) => {}
        Err(TokenError::Unknown) => return Answer::unauthorized(AUTH_ERROR),
        Err(TokenError::Expired) => return Answer::unauthorized(TOKEN_EXPIRED),
    }
    // Huawei's answer to a token used on another app's path is not
    // documented; 401 80200001 is a guess [unverified].
    if app_id != live.cfg.app_id {
        return Answer::unauthorized(AUTH_ERROR);
    }

    if !hw.flow.lock().take(now_ms, live.cfg.calls_per_second) {
        return Answer::new(StatusCode::SERVICE_UNAVAILABLE, INTERNAL, "flow control");
    }
    {
        let mut f = hw.faults.lock();
        if f.flow_control_next > 0 {
            f.flow_control_next -= 1;
            return Answer::new(StatusCode::SERVICE_UNAVAILABLE, INTERNAL, "flow control");
        }
        if f.internal_next > 0 {
            f.internal_next -= 1;
            return Answer::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                INTERNAL,
                "Internal error",
            );
        }
    }

    let checked = match check(body) {
        Ok(c) => c,
        Err(a) => return a,
    };
    if checked.validate_only {
        bump(&hw.tally.validated, 1);
        return Answer::ok();
    }

    let message = Arc::new(checked.message);
    let request_id: Arc<str> = Arc::from(request_id);
    let Some(tokens) = checked.tokens else {
        // A topic or condition send: the devices behind it are unknown, so
        // it is recorded once and no device window applies.
        hw.ring.push(Delivered {
            token: None,
            request_id,
            message,
            at_ms: now_ms,
        });
        bump(&hw.tally.accepted_calls, 1);
        return Answer::ok();
    };

    let (illegal, valid): (Vec<String>, Vec<String>) =
        tokens.into_iter().partition(|t| live.is_invalid(t));
    bump(&hw.tally.invalid_tokens, illegal.len() as u64);
    if valid.is_empty() {
        return Answer::new(StatusCode::OK, ALL_INVALID, "All the tokens are invalid");
    }
    let limits = DeviceLimits {
        per_day: live.cfg.per_device_per_day,
        marketing_per_day: live.cfg.marketing_per_device_per_day,
    };
    let success = valid.len();
    let (mut delivered, mut dropped_marketing, mut dropped_cap) = (0, 0, 0);
    for token in valid {
        match hw.devices.admit(&token, checked.marketing, limits, now_ms) {
            Verdict::Deliver => {
                delivered += 1;
                hw.repeats.record(&token);
                hw.ring.push(Delivered {
                    token: Some(token),
                    request_id: request_id.clone(),
                    message: message.clone(),
                    at_ms: now_ms,
                });
            }
            Verdict::DropMarketing => dropped_marketing += 1,
            Verdict::DropCap => dropped_cap += 1,
        }
    }
    bump(&hw.tally.delivered, delivered);
    bump(&hw.tally.dropped_marketing, dropped_marketing);
    bump(&hw.tally.dropped_cap, dropped_cap);
    bump(&hw.tally.accepted_calls, 1);
    if dropped_marketing + dropped_cap > 0 {
        tracing::debug!(
            dropped_marketing,
            dropped_cap,
            "huawei mock: accepted, some devices over their daily allowance"
        );
    }
    if illegal.is_empty() {
        return Answer::ok();
    }
    bump(&hw.tally.partial_calls, 1);
    // The v1 key name `illegal_tokens` is [unverified]; v3 groups tokens by
    // reason instead. Written by hand to keep the order of the reference's
    // example, which serde_json would sort.
    let list = serde_json::to_string(&illegal).unwrap_or_else(|_| "[]".to_owned());
    let detail = format!(
        r#"{{"success":{success},"failure":{},"illegal_tokens":{list}}}"#,
        illegal.len()
    );
    Answer::new(StatusCode::OK, PARTIAL, detail)
}

/// A send body that passed the checks.
#[derive(Debug)]
struct Checked {
    validate_only: bool,
    /// The device tokens, when the target is `token`.
    tokens: Option<Vec<String>>,
    /// The `message` object without its `token` list.
    message: Value,
    /// No `android.category`, or `MARKETING`: subject to the marketing quota.
    marketing: bool,
}

/// Checks the body as Huawei does; errors name the field.
fn check(body: &[u8]) -> Result<Checked, Answer> {
    let root: Value = serde_json::from_slice(body)
        .map_err(|e| Answer::param(format!("request body is not valid JSON: {e}")))?;
    let Value::Object(mut root) = root else {
        return Err(Answer::param("request body must be a JSON object"));
    };
    let validate_only = match root.get("validate_only") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(Answer::param("validate_only must be a boolean")),
    };
    let mut msg = match root.remove("message") {
        None | Some(Value::Null) => return Err(Answer::param("message is required")),
        Some(Value::Object(m)) => m,
        Some(_) => return Err(Answer::param("message must be an object")),
    };

    let token = msg.remove("token").filter(|v| !v.is_null());
    let set = |k: &str| msg.get(k).is_some_and(|v| !v.is_null());
    let targets =
        usize::from(token.is_some()) + usize::from(set("topic")) + usize::from(set("condition"));
    if targets != 1 {
        return Err(Answer::param(
            "exactly one of message.token, message.topic and message.condition must be set",
        ));
    }
    let tokens = match token {
        None => None,
        Some(Value::Array(list)) => {
            if list.is_empty() || list.len() > HUAWEI_MAX_TOKENS {
                return Err(Answer::new(
                    StatusCode::BAD_REQUEST,
                    TOKEN_COUNT,
                    format!(
                        "message.token must hold 1 to {HUAWEI_MAX_TOKENS} tokens, not {}",
                        list.len()
                    ),
                ));
            }
            let mut out = Vec::with_capacity(list.len());
            for (i, t) in list.into_iter().enumerate() {
                match t {
                    Value::String(s) => out.push(s),
                    _ => {
                        return Err(Answer::param(format!(
                            "message.token[{i}] must be a string"
                        )));
                    }
                }
            }
            Some(out)
        }
        Some(_) => return Err(Answer::param("message.token must be an array of strings")),
    };
    for k in ["topic", "condition"] {
        if set(k) && msg.get(k).and_then(Value::as_str).is_none_or(str::is_empty) {
            return Err(Answer::param(format!(
                "message.{k} must be a non-empty string"
            )));
        }
    }

    let size = serde_json::to_vec(&msg).map_or(usize::MAX, |v| v.len());
    if size > HUAWEI_MAX_MESSAGE_BYTES {
        return Err(Answer::new(
            StatusCode::BAD_REQUEST,
            BAD_PAYLOAD,
            "message body size exceeds the default value",
        ));
    }

    let marketing = check_payload(&msg)?;
    Ok(Checked {
        validate_only,
        tokens,
        message: Value::Object(msg),
        marketing,
    })
}

/// The notification, data and android parts; answers whether the message is
/// marketing.
fn check_payload(msg: &Map<String, Value>) -> Result<bool, Answer> {
    let notification = opt_obj(msg, "notification", "message.notification")?;
    if let Some(n) = notification {
        for k in ["title", "body", "image"] {
            opt_str(n, k, "message.notification")?;
        }
    }
    let android = opt_obj(msg, "android", "message.android")?;
    let mut category = None;
    let mut android_notification = None;
    if let Some(a) = android {
        category = opt_str(a, "category", "message.android")?;
        if let Some(c) = category
            && !CATEGORIES.contains(&c)
        {
            return Err(Answer::param(format!(
                "message.android.category {c:?} is not one of {}",
                CATEGORIES.join(", ")
            )));
        }
        android_notification = opt_obj(a, "notification", "message.android.notification")?;
        if let Some(an) = android_notification {
            for k in ["title", "body", "image"] {
                opt_str(an, k, "message.android.notification")?;
            }
            check_click_action(an)?;
        }
    }
    let data = match msg.get("data") {
        None | Some(Value::Null) => false,
        Some(Value::String(_)) => true,
        Some(_) => return Err(Answer::param("message.data must be a string")),
    };
    if notification.is_none() && android_notification.is_none() && !data {
        return Err(Answer::param(
            "message must hold message.notification, message.android.notification or message.data",
        ));
    }
    if notification.is_some() || android_notification.is_some() {
        // The Android fields override the common ones, so either may hold
        // the title and body.
        let named = if notification.is_some() {
            "message.notification"
        } else {
            "message.android.notification"
        };
        for k in ["title", "body"] {
            let has = |o: Option<&Map<String, Value>>| {
                o.and_then(|o| o.get(k))
                    .and_then(Value::as_str)
                    .is_some_and(|s| !s.is_empty())
            };
            if !has(android_notification) && !has(notification) {
                return Err(Answer::param(format!(
                    "{named}.{k} is required and must not be empty"
                )));
            }
        }
    }
    Ok(category.is_none_or(|c| c == "MARKETING"))
}

/// `android.notification.click_action`: optional here, though Huawei's
/// reference lists it as mandatory for a notification [unverified].
fn check_click_action(an: &Map<String, Value>) -> Result<(), Answer> {
    const AT: &str = "message.android.notification.click_action";
    let Some(ca) = opt_obj(an, "click_action", AT)? else {
        return Ok(());
    };
    let non_empty = |k: &str| {
        ca.get(k)
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty())
    };
    match ca.get("type").and_then(Value::as_i64) {
        Some(1) if !non_empty("intent") && !non_empty("action") => Err(Answer::param(format!(
            "{AT}.intent or {AT}.action is required when {AT}.type is 1"
        ))),
        Some(2) if !non_empty("url") => Err(Answer::param(format!(
            "{AT}.url is required when {AT}.type is 2"
        ))),
        // Type 4 opens rich media from `rich_resource` [unverified].
        Some(4) if !non_empty("rich_resource") => Err(Answer::param(format!(
            "{AT}.rich_resource is required when {AT}.type is 4"
        ))),
        Some(1..=4) => Ok(()),
        _ => Err(Answer::param(format!("{AT}.type must be 1, 2, 3 or 4"))),
    }
}

/// `obj[key]`, if present, as an object; `at` is the object's path.
fn opt_obj<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
    at: &str,
) -> Result<Option<&'a Map<String, Value>>, Answer> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(o)) => Ok(Some(o)),
        Some(_) => Err(Answer::param(format!("{at} must be an object"))),
    }
}

/// `obj[key]`, if present, as a string; `at` is `obj`'s path.
fn opt_str<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
    at: &str,
) -> Result<Option<&'a str>, Answer> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(Answer::param(format!("{at}.{key} must be a string"))),
    }
}
