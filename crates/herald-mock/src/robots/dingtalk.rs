//! DingTalk custom robot: `POST /robot/send?access_token=TOKEN[&timestamp=MS&sign=SIG]`
//! (`china-providers.md` §5.2).
//!
//! Order of the checks: the token (300001), then the signature when the
//! robot has a secret (310000), then the throttle, so that a throttled robot
//! answers 130101 to anything that reaches it, then the message's shape
//! (400102) and the keyword (310000).
//!
//! The limit is DingTalk's harshest rule and the one a scheduler must plan
//! for: 20 messages a minute per robot, and the 21st does not just fail, it
//! throttles the robot for 10 minutes, during which every send answers
//! 130101.
//!
//! Codes: 300001, 310000 and 130101 and their texts are documented (or seen
//! in public issues, see §5.2's sources); 400102 for a bad or missing field
//! and for a body that is not JSON is unverified.

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::response::Response;
use axum::routing::post;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::{
    Refusal, RobotProvider, RobotsState, Why, hmac_b64, opt_bool, opt_str, opt_str_array, req_obj,
    req_str,
};
use crate::MockState;
use crate::providers::HOUR_MS;

pub(super) const TOO_FAST_CODE: i64 = 130101;
pub(super) const OK_BODY: &str = r#"{"errcode":0,"errmsg":"ok"}"#;

const NO_TOKEN: Refusal = Refusal::new(300001, "token is not exist");
const SIGN_MISMATCH: Refusal = Refusal::new(310000, "sign not match");
const BAD_TIMESTAMP: Refusal = Refusal::new(310000, "timestamp is invalid");
const NO_KEYWORD: Refusal = Refusal::new(310000, "keywords not in content");
/// Unverified code.
const PARAM_CODE: i64 = 400102;

const MSGTYPES: &[&str] = &["text", "markdown", "link", "actionCard", "feedCard"];

pub(super) fn known_msg(code: i64) -> &'static str {
    match code {
        -1 => "system busy",
        130101 => "send too fast, exceed 20 times per minute",
        300001 => "token is not exist",
        310000 => "sign not match",
        400102 => "param error",
        _ => "mock fault",
    }
}

pub(super) fn error_body(r: &Refusal) -> String {
    serde_json::json!({ "errcode": r.code, "errmsg": r.msg }).to_string()
}

fn param(field: impl std::fmt::Display, why: impl std::fmt::Display) -> Refusal {
    Refusal::owned(PARAM_CODE, format!("param error: {field} {why}"))
}

fn too_fast(rs: &RobotsState) -> Refusal {
    let n = rs.limits().dingtalk_per_minute;
    Refusal::owned(
        TOO_FAST_CODE,
        format!("send too fast, exceed {n} times per minute"),
    )
}

pub(super) fn routes() -> Router<MockState> {
    Router::new().route("/robot/send", post(send))
}

/// The query as received. `sign` arrives URL-encoded; the query decoder
/// turns `%2B` back into `+` (and, as a Java server does, a bare `+` into a
/// space, which is why senders must encode the signature).
#[derive(Deserialize, Default)]
struct SendQuery {
    access_token: Option<String>,
    timestamp: Option<String>,
    sign: Option<String>,
}

async fn send(
    State(state): State<MockState>,
    q: Result<Query<SendQuery>, QueryRejection>,
    body: Bytes,
) -> Response {
    let q = q.map(|Query(q)| q).unwrap_or_default();
    state
        .shared
        .robots
        .answer(RobotProvider::Dingtalk, |rs, now_ms| {
            check(rs, &q, &body, now_ms)
        })
        .await
}

/// The send, minus HTTP and faults.
fn check(rs: &RobotsState, q: &SendQuery, body: &[u8], now_ms: u64) -> Result<(), Refusal> {
    let p = RobotProvider::Dingtalk;
    // A missing token is answered as an unknown one.
    let token = q
        .access_token
        .as_deref()
        .filter(|t| !t.is_empty())
        .ok_or(NO_TOKEN)?;
    let robot = rs.robot(p, token).ok_or(NO_TOKEN)?;
    if let Some(secret) = &robot.secret {
        verify_sign(secret, q.timestamp.as_deref(), q.sign.as_deref(), now_ms)?;
    }
    if !rs.gate(p, token, now_ms, false) {
        return Err(too_fast(rs));
    }
    let v: Value = serde_json::from_slice(body).map_err(|_| param("body", "is not JSON"))?;
    let (msgtype, texts) = validate(&v)?;
    if let Some(kw) = &robot.keyword
        && !texts.iter().any(|t| t.contains(kw.as_str()))
    {
        return Err(NO_KEYWORD);
    }
    let msgtype = msgtype.to_owned();
    if !rs.gate(p, token, now_ms, true) {
        return Err(too_fast(rs));
    }
    rs.accept(p, token, &msgtype, v, now_ms);
    Ok(())
}

/// `timestamp` in ms within an hour of the clock, and `sign` =
/// base64(HMAC-SHA256(key = secret, message = timestamp + "\n" + secret)),
/// the timestamp taken as sent.
fn verify_sign(
    secret: &str,
    timestamp: Option<&str>,
    sign: Option<&str>,
    now_ms: u64,
) -> Result<(), Refusal> {
    let ts_text = timestamp.ok_or(BAD_TIMESTAMP)?;
    let ts: u64 = ts_text.parse().map_err(|_| BAD_TIMESTAMP)?;
    if ts.abs_diff(now_ms) > HOUR_MS {
        return Err(BAD_TIMESTAMP);
    }
    let sign = sign.filter(|s| !s.is_empty()).ok_or(SIGN_MISMATCH)?;
    let want = hmac_b64(secret.as_bytes(), format!("{ts_text}\n{secret}").as_bytes());
    if sign != want {
        return Err(SIGN_MISMATCH);
    }
    Ok(())
}

/// The message's shape: its `msgtype` and the texts a keyword may be in.
fn validate(v: &Value) -> Result<(&str, Vec<&str>), Refusal> {
    let obj = v
        .as_object()
        .ok_or_else(|| param("body", "must be a JSON object"))?;
    let msgtype = req_str(obj, "msgtype").map_err(|w| param("msgtype", w))?;
    if !MSGTYPES.contains(&msgtype) {
        return Err(param(
            "msgtype",
            format_args!("{msgtype:?} is not one of {}", MSGTYPES.join(", ")),
        ));
    }
    let m = req_obj(obj, msgtype).map_err(|w| param(msgtype, w))?;
    let at = |field: &str, why: Why| param(format_args!("{msgtype}.{field}"), why);
    let need = |field: &str| req_str(m, field).map_err(|w| at(field, w));
    let mut texts = Vec::new();
    match msgtype {
        "text" => texts.push(need("content")?),
        "markdown" => {
            texts.push(need("title")?);
            texts.push(need("text")?);
        }
        "link" => {
            texts.push(need("title")?);
            texts.push(need("text")?);
            need("messageUrl")?;
            opt_str(m, "picUrl").map_err(|w| at("picUrl", w))?;
        }
        "actionCard" => {
            texts.push(need("title")?);
            texts.push(need("text")?);
            action_card_buttons(m)?;
        }
        _ => texts.extend(feed_card_links(m)?),
    }
    if let Some(at_v) = obj.get("at").filter(|a| !a.is_null()) {
        let a = at_v
            .as_object()
            .ok_or_else(|| param("at", "must be an object"))?;
        opt_str_array(a, "atMobiles").map_err(|w| param("at.atMobiles", w))?;
        opt_str_array(a, "atUserIds").map_err(|w| param("at.atUserIds", w))?;
        opt_bool(a, "isAtAll").map_err(|w| param("at.isAtAll", w))?;
    }
    Ok((msgtype, texts))
}

/// Either `btns` (a non-empty list of `{title, actionURL}`) or one button
/// as `singleTitle` and `singleURL`.
fn action_card_buttons(m: &Map<String, Value>) -> Result<(), Refusal> {
    match m.get("btns") {
        None | Some(Value::Null) => {
            req_str(m, "singleTitle").map_err(|w| param("actionCard.singleTitle", w))?;
            req_str(m, "singleURL").map_err(|w| param("actionCard.singleURL", w))?;
        }
        Some(Value::Array(btns)) if !btns.is_empty() => {
            for (i, b) in btns.iter().enumerate() {
                let at = |f: &str, w: Why| param(format_args!("actionCard.btns[{i}].{f}"), w);
                let b = b.as_object().ok_or_else(|| {
                    param(format_args!("actionCard.btns[{i}]"), "must be an object")
                })?;
                req_str(b, "title").map_err(|w| at("title", w))?;
                req_str(b, "actionURL").map_err(|w| at("actionURL", w))?;
            }
        }
        Some(_) => return Err(param("actionCard.btns", "must be a non-empty array")),
    }
    opt_str(m, "btnOrientation").map_err(|w| param("actionCard.btnOrientation", w))?;
    Ok(())
}

/// `links`: a non-empty list of `{title, messageURL, picURL}`; the titles.
fn feed_card_links(m: &Map<String, Value>) -> Result<Vec<&str>, Refusal> {
    let links = match m.get("links") {
        Some(Value::Array(l)) if !l.is_empty() => l,
        None | Some(Value::Null) => return Err(param("feedCard.links", "is required")),
        Some(_) => return Err(param("feedCard.links", "must be a non-empty array")),
    };
    let mut titles = Vec::with_capacity(links.len());
    for (i, l) in links.iter().enumerate() {
        let at = |f: &str, w: Why| param(format_args!("feedCard.links[{i}].{f}"), w);
        let l = l
            .as_object()
            .ok_or_else(|| param(format_args!("feedCard.links[{i}]"), "must be an object"))?;
        titles.push(req_str(l, "title").map_err(|w| at("title", w))?);
        req_str(l, "messageURL").map_err(|w| at("messageURL", w))?;
        opt_str(l, "picURL").map_err(|w| at("picURL", w))?;
    }
    Ok(titles)
}
