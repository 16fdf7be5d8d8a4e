//! Feishu (Lark) custom bot: `POST /open-apis/bot/v2/hook/{token}`
//! (`china-providers.md` §6.4).
//!
//! Unlike DingTalk, the signature travels in the body (`timestamp` in
//! seconds, as a string, and `sign`), and it is computed the other way
//! round: the key is `timestamp + "\n" + secret` and the message is empty.
//! A sender that reuses DingTalk's code gets 19021 here, which is the point
//! of checking it.
//!
//! Order of the checks: the token (19001), the 20 KB body limit (9499), the
//! signature when the bot has a secret (19021), the rate limits (11232: 100
//! a minute and 5 a second per bot), the message's shape (9499) and the
//! keyword (19024).
//!
//! Codes: 9499, 11232, 19021 and 19024 are documented (§6.4); 19001 with its
//! text for an unknown token is unverified. Whether the real bot accepts a
//! numeric `timestamp` is not known; the mock takes only the documented
//! string.

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::PathRejection;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::response::Response;
use axum::routing::post;
use serde_json::{Map, Value};

use super::{
    Refusal, RobotProvider, RobotsState, Why, collect_strings, hmac_b64, req_obj, req_str,
};
use crate::MockState;
use crate::providers::HOUR_MS;

pub(super) const FREQ_CODE: i64 = 11232;
pub(super) const OK_BODY: &str =
    r#"{"code":0,"msg":"success","data":{},"StatusCode":0,"StatusMessage":"success"}"#;

/// Unverified code and text.
const BAD_TOKEN: Refusal = Refusal::new(
    19001,
    "param invalid: incoming webhook access token invalid",
);
const TOO_LARGE: Refusal = Refusal::new(9499, "Bad Request");
const SIGN_FAIL: Refusal = Refusal::new(
    19021,
    "sign match fail or timestamp is not within one hour from current time",
);
const NO_KEYWORD: Refusal = Refusal::new(19024, "Key Words Not Found");
const FREQ: Refusal = Refusal::new(FREQ_CODE, "frequency limited");

const MSG_TYPES: &[&str] = &["text", "post", "image", "share_chat", "interactive"];
const MAX_BODY_BYTES: usize = 20 * 1024;
/// Past the 20 KB rule, so that bodies up to this size get Feishu's 9499
/// rather than the router's 413.
const BODY_LIMIT: usize = 4 << 20;

pub(super) fn known_msg(code: i64) -> &'static str {
    match code {
        9499 => "Bad Request",
        11232 => "frequency limited",
        19001 => "param invalid: incoming webhook access token invalid",
        19021 => "sign match fail or timestamp is not within one hour from current time",
        19024 => "Key Words Not Found",
        _ => "mock fault",
    }
}

pub(super) fn error_body(r: &Refusal) -> String {
    serde_json::json!({ "code": r.code, "msg": r.msg, "data": {} }).to_string()
}

fn bad(field: impl std::fmt::Display, why: impl std::fmt::Display) -> Refusal {
    Refusal::owned(9499, format!("Bad Request: {field} {why}"))
}

pub(super) fn routes() -> Router<MockState> {
    Router::new().route(
        "/open-apis/bot/v2/hook/{token}",
        post(send).layer(DefaultBodyLimit::max(BODY_LIMIT)),
    )
}

async fn send(
    State(state): State<MockState>,
    token: Result<Path<String>, PathRejection>,
    body: Bytes,
) -> Response {
    let token = token.ok().map(|Path(t)| t);
    state
        .shared
        .robots
        .answer(RobotProvider::Feishu, |rs, now_ms| {
            check(rs, token.as_deref(), &body, now_ms)
        })
        .await
}

/// The send, minus HTTP and faults.
fn check(rs: &RobotsState, token: Option<&str>, body: &[u8], now_ms: u64) -> Result<(), Refusal> {
    let p = RobotProvider::Feishu;
    let token = token.ok_or(BAD_TOKEN)?;
    let robot = rs.robot(p, token).ok_or(BAD_TOKEN)?;
    if body.len() > MAX_BODY_BYTES {
        return Err(TOO_LARGE);
    }
    let v: Value = serde_json::from_slice(body).map_err(|_| bad("body", "is not JSON"))?;
    let obj = v
        .as_object()
        .ok_or_else(|| bad("body", "must be a JSON object"))?;
    if let Some(secret) = &robot.secret {
        verify_sign(secret, obj, now_ms)?;
    }
    if !rs.gate(p, token, now_ms, false) {
        return Err(FREQ);
    }
    let (msg_type, texts) = validate(obj)?;
    if let Some(kw) = &robot.keyword
        && !texts.iter().any(|t| t.contains(kw.as_str()))
    {
        return Err(NO_KEYWORD);
    }
    let msg_type = msg_type.to_owned();
    if !rs.gate(p, token, now_ms, true) {
        return Err(FREQ);
    }
    rs.accept(p, token, &msg_type, v, now_ms);
    Ok(())
}

/// `timestamp` (unix seconds, a string) within an hour of the clock, and
/// `sign` = base64(HMAC-SHA256(key = timestamp + "\n" + secret, message = "")).
fn verify_sign(secret: &str, obj: &Map<String, Value>, now_ms: u64) -> Result<(), Refusal> {
    let ts_text = match obj.get("timestamp") {
        Some(Value::String(s)) => s.as_str(),
        _ => return Err(SIGN_FAIL),
    };
    let ts: u64 = ts_text.parse().map_err(|_| SIGN_FAIL)?;
    if ts.saturating_mul(1000).abs_diff(now_ms) > HOUR_MS {
        return Err(SIGN_FAIL);
    }
    let sign = match obj.get("sign") {
        Some(Value::String(s)) if !s.is_empty() => s.as_str(),
        _ => return Err(SIGN_FAIL),
    };
    if sign != hmac_b64(format!("{ts_text}\n{secret}").as_bytes(), b"") {
        return Err(SIGN_FAIL);
    }
    Ok(())
}

/// The message's shape: its `msg_type` and the texts a keyword may be in.
fn validate(obj: &Map<String, Value>) -> Result<(&str, Vec<&str>), Refusal> {
    let msg_type = req_str(obj, "msg_type").map_err(|w| bad("msg_type", w))?;
    if !MSG_TYPES.contains(&msg_type) {
        return Err(bad(
            "msg_type",
            format_args!("{msg_type:?} is not one of {}", MSG_TYPES.join(", ")),
        ));
    }
    let mut texts = Vec::new();
    if msg_type == "interactive" {
        // The card sits beside msg_type, not under content.
        let card = req_obj(obj, "card").map_err(|w| bad("card", w))?;
        if card.is_empty() {
            return Err(bad("card", "is empty"));
        }
        card.values().for_each(|v| collect_strings(v, &mut texts));
        return Ok((msg_type, texts));
    }
    let content = req_obj(obj, "content").map_err(|w| bad("content", w))?;
    let need = |field: &str| {
        req_str(content, field).map_err(|w: Why| bad(format_args!("content.{field}"), w))
    };
    match msg_type {
        "text" => texts.push(need("text")?),
        "post" => {
            let post = req_obj(content, "post").map_err(|w| bad("content.post", w))?;
            if post.is_empty() {
                return Err(bad("content.post", "is empty"));
            }
            post.values().for_each(|v| collect_strings(v, &mut texts));
        }
        "image" => {
            need("image_key")?;
        }
        _ => {
            need("share_chat_id")?;
        }
    }
    Ok((msg_type, texts))
}
