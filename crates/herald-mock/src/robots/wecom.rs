//! WeCom group robot: `POST /cgi-bin/webhook/send?key=KEY`
//! (`china-providers.md` §7).
//!
//! There is no signing: the key is the only secret, so an unknown or missing
//! key is the first thing refused (93000). The mock then checks the message
//! type (lowercase, as the real API insists), the shape and byte limits of
//! each type, and the 20-a-minute limit per robot.
//!
//! Codes: 93000, 40008, 40058 and 45009 are documented (or seen in public
//! issues, see §7's sources); 44004 ("empty content") is in WeCom's global
//! code list but not documented for the robot; 40035 for a body that is not
//! JSON is a guess.

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{DefaultBodyLimit, Query, State};
use axum::response::Response;
use axum::routing::post;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::{Refusal, RobotProvider, RobotsState, Why, opt_str, opt_str_array, req_obj, req_str};
use crate::MockState;

pub(super) const FREQ_CODE: i64 = 45009;
pub(super) const OK_BODY: &str = r#"{"errcode":0,"errmsg":"ok"}"#;

const INVALID_KEY: Refusal = Refusal::new(93000, "invalid webhook url");
const INVALID_MSGTYPE: Refusal = Refusal::new(40008, "invalid message type");
const FREQ: Refusal = Refusal::new(FREQ_CODE, "api freq out of limit");
const EMPTY: Refusal = Refusal::new(44004, "empty content");
const INVALID_JSON: Refusal = Refusal::new(40035, "invalid json");

const MSGTYPES: &[&str] = &[
    "text",
    "markdown",
    "markdown_v2",
    "news",
    "image",
    "file",
    "template_card",
];
const TEXT_MAX_BYTES: usize = 2048;
const MARKDOWN_MAX_BYTES: usize = 4096;
const MAX_ARTICLES: usize = 8;
/// The image itself, before base64.
const IMAGE_MAX_BYTES: usize = 2 << 20;
/// Room for a 2 MB image in base64 plus the JSON around it; the router's
/// default 2 MB body limit would refuse it with 413 first.
const BODY_LIMIT: usize = 4 << 20;

pub(super) fn known_msg(code: i64) -> &'static str {
    match code {
        -1 => "system busy",
        93000 => "invalid webhook url",
        40008 => "invalid message type",
        45009 => "api freq out of limit",
        44004 => "empty content",
        40035 => "invalid json",
        40058 => "invalid Request Parameter",
        _ => "mock fault",
    }
}

/// `{"errcode":..,"errmsg":"<msg>, hint: [..], more info at ..."}`: the real
/// errmsg carries a request id and a link, so senders should match on the
/// code only; the mock's errmsg is shaped alike to keep them honest.
pub(super) fn error_body(r: &Refusal, hint: &str) -> String {
    let errmsg = format!(
        "{}, hint: [{hint}], more info at https://open.work.weixin.qq.com/devtool/query?e={}",
        r.msg, r.code
    );
    serde_json::json!({ "errcode": r.code, "errmsg": errmsg }).to_string()
}

/// 40058 naming the field. The real errmsg reads like
/// `markdown.content exceed max length 4096. invalid Request Parameter`.
fn param(field: impl std::fmt::Display, why: impl std::fmt::Display) -> Refusal {
    Refusal::owned(40058, format!("{field} {why}. invalid Request Parameter"))
}

pub(super) fn routes() -> Router<MockState> {
    Router::new().route(
        "/cgi-bin/webhook/send",
        post(send).layer(DefaultBodyLimit::max(BODY_LIMIT)),
    )
}

#[derive(Deserialize)]
struct KeyQuery {
    key: Option<String>,
}

async fn send(
    State(state): State<MockState>,
    q: Result<Query<KeyQuery>, QueryRejection>,
    body: Bytes,
) -> Response {
    let key = q.ok().and_then(|Query(q)| q.key);
    state
        .shared
        .robots
        .answer(RobotProvider::Wecom, |rs, now_ms| {
            check(rs, key.as_deref(), &body, now_ms)
        })
        .await
}

/// The send, minus HTTP and faults.
fn check(rs: &RobotsState, key: Option<&str>, body: &[u8], now_ms: u64) -> Result<(), Refusal> {
    let p = RobotProvider::Wecom;
    let key = key.filter(|k| !k.is_empty()).ok_or(INVALID_KEY)?;
    rs.robot(p, key).ok_or(INVALID_KEY)?;
    if !rs.gate(p, key, now_ms, false) {
        return Err(FREQ);
    }
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(EMPTY);
    }
    let v: Value = serde_json::from_slice(body).map_err(|_| INVALID_JSON)?;
    let msgtype = validate(&v)?;
    if !rs.gate(p, key, now_ms, true) {
        return Err(FREQ);
    }
    rs.accept(p, key, &msgtype, v, now_ms);
    Ok(())
}

/// The message's shape; its `msgtype` if it is fine.
fn validate(v: &Value) -> Result<String, Refusal> {
    let obj = v.as_object().ok_or(INVALID_JSON)?;
    // A missing msgtype is answered as an invalid one.
    let msgtype = match obj.get("msgtype") {
        Some(Value::String(t)) if MSGTYPES.contains(&t.as_str()) => t.clone(),
        _ => return Err(INVALID_MSGTYPE),
    };
    let payload = req_obj(obj, &msgtype).map_err(|why| param(&msgtype, why))?;
    let at = |field: &str, why: Why| param(format_args!("{msgtype}.{field}"), why);
    match msgtype.as_str() {
        "text" => {
            content(payload, &msgtype, TEXT_MAX_BYTES)?;
            opt_str_array(payload, "mentioned_list").map_err(|w| at("mentioned_list", w))?;
            opt_str_array(payload, "mentioned_mobile_list")
                .map_err(|w| at("mentioned_mobile_list", w))?;
        }
        "markdown" | "markdown_v2" => content(payload, &msgtype, MARKDOWN_MAX_BYTES)?,
        "news" => articles(payload)?,
        "image" => image(payload)?,
        "file" => {
            req_str(payload, "media_id").map_err(|w| at("media_id", w))?;
        }
        "template_card" => {
            let kind = req_str(payload, "card_type").map_err(|w| at("card_type", w))?;
            if kind != "text_notice" && kind != "news_notice" {
                return Err(at("card_type", "must be text_notice or news_notice"));
            }
        }
        _ => return Err(INVALID_MSGTYPE),
    }
    Ok(msgtype)
}

/// `content`: present and non-empty (else 44004), a string of at most `max`
/// bytes (else 40058).
fn content(payload: &Map<String, Value>, msgtype: &str, max: usize) -> Result<(), Refusal> {
    match payload.get("content") {
        None | Some(Value::Null) => Err(EMPTY),
        Some(Value::String(s)) if s.is_empty() => Err(EMPTY),
        Some(Value::String(s)) if s.len() > max => Err(param(
            format_args!("{msgtype}.content"),
            format_args!("exceed max length {max}"),
        )),
        Some(Value::String(_)) => Ok(()),
        Some(_) => Err(param(format_args!("{msgtype}.content"), "must be a string")),
    }
}

/// `news.articles`: 1 to 8 objects, each with a `title` and a `url`.
fn articles(payload: &Map<String, Value>) -> Result<(), Refusal> {
    let list = match payload.get("articles") {
        None | Some(Value::Null) => return Err(param("news.articles", "is required")),
        Some(Value::Array(a)) => a,
        Some(_) => return Err(param("news.articles", "must be an array")),
    };
    if list.is_empty() || list.len() > MAX_ARTICLES {
        return Err(param(
            "news.articles",
            format_args!("must hold 1 to {MAX_ARTICLES} articles, not {}", list.len()),
        ));
    }
    for (i, a) in list.iter().enumerate() {
        let at = |field: &str, why: Why| param(format_args!("news.articles[{i}].{field}"), why);
        let a = a
            .as_object()
            .ok_or_else(|| param(format_args!("news.articles[{i}]"), "must be an object"))?;
        req_str(a, "title").map_err(|w| at("title", w))?;
        req_str(a, "url").map_err(|w| at("url", w))?;
        opt_str(a, "description").map_err(|w| at("description", w))?;
        opt_str(a, "picurl").map_err(|w| at("picurl", w))?;
    }
    Ok(())
}

/// `image.base64` (valid base64 of at most 2 MB) and `image.md5` (32 hex
/// digits). The md5 is not compared with the image: the crate has no MD5.
fn image(payload: &Map<String, Value>) -> Result<(), Refusal> {
    let data = req_str(payload, "base64").map_err(|w| param("image.base64", w))?;
    let raw = B64
        .decode(data)
        .map_err(|_| param("image.base64", "is not valid base64"))?;
    if raw.len() > IMAGE_MAX_BYTES {
        return Err(param(
            "image.base64",
            format_args!("holds {} bytes, over 2 MB", raw.len()),
        ));
    }
    let md5 = req_str(payload, "md5").map_err(|w| param("image.md5", w))?;
    if md5.len() != 32 || !md5.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(param("image.md5", "must be 32 hex digits"));
    }
    Ok(())
}
