//! vivo Push mock (server API v2.9.2), as described in
//! `shared/reference/china-providers.md` §4.0 and §4.5 and in mirrors of
//! vivo's server API document: `POST /message/auth`, `/message/send`,
//! `/message/saveListPayload` and `/message/pushToList` of
//! `api-push.vivo.com.cn`.
//!
//! Why it behaves as it does: vivo signs the token request (`sign` =
//! lowercase MD5 of appId + appKey + timestamp + appSecret, the timestamp
//! within ten minutes of vivo's clock) and hands out an `authToken` valid a
//! day, which every call carries as a header; several tokens may live at
//! once. Every call body names the `appId`, which must be the token's
//! (`10094`). A send carries a `requestId` that vivo de-duplicates on: the
//! mock answers a repeat within a day with the first answer and delivers
//! nothing (stats `duplicates`). A batch is two calls: the message is saved
//! once (`saveListPayload`, answering a `taskId`), then pushed to 2 to
//! 1000 registration ids (`pushToList`). Answers are HTTP 200 with
//! `{result, desc, ...}` and `result` 0 on success.
//!
//! | result | when |
//! |---|---|
//! | `10302` | `/message/send` to an unknown regId, with `invalidUser {status, userid}` [doc]; `pushToList` answers 0 and lists unknown ones in `invalidUsers` [assumption: by analogy] |
//! | `10070` | the app's daily total, or fault `quota_next` [doc] |
//! | `10094` | the body's `appId` is not the token's [doc] |
//! | `10000` | `authToken` missing, unknown or expired [unverified: from memory] |
//! | `10200`, `10201` | auth: appId, appKey missing [doc]; `10202` timestamp missing or off by over 10 minutes, `10203` bad sign, `10204` wrong app [made up] |
//! | `10099` | any other parameter error: the mock's own code (vivo has one per parameter, not read) |
//! | HTTP 429 | more calls a second than `calls_per_second`, or fault `throttle_next` [assumption: vivo's frequency answer was not read] |
//! | HTTP 500 | fault `internal_next` ("Internet server error!", as the document shows) |
//!
//! Per-device allowances (§4.0): operation messages (`classification` 0 or
//! absent) are delivered 2 a device a day and the rest dropped with a
//! success answer; system messages (`classification` 1) have none; test
//! messages (`pushMode` 1) are exempt. Titles are at most 40 and contents
//! 100 "bytes", counted as vivo does: a CJK character as 2 [doc: 20
//! Chinese characters or 40 letters].

use std::collections::HashMap;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::post;
use md5::{Digest, Md5};
use parking_lot::{Mutex, RwLock};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use xxhash_rust::xxh3::xxh3_128;

use crate::MockState;
use crate::providers::{DAY_MS, TimedDedup, json_200};
use crate::push_quota::DeviceLimits;
use crate::vendor_push::{
    Book, Injected, TokenMint, TokenProblem, VendorMock, bump, control_routes,
};

/// The app id `herald mock` serves without configuration (numeric, as real
/// ones are).
pub const DEFAULT_VIVO_APP_ID: &str = "10004";
/// Its app key.
pub const DEFAULT_VIVO_APP_KEY: &str = "mock-vivo-app-key";
/// Its app secret.
pub const DEFAULT_VIVO_APP_SECRET: &str = "mock-vivo-app-secret";
/// Lifetime of an `authToken`.
pub const VIVO_TOKEN_TTL_SECS: u64 = 24 * 3600;
/// How far the auth `timestamp` may be from the mock's clock [doc].
pub const VIVO_TIMESTAMP_WINDOW_MS: u64 = 10 * 60 * 1000;
/// Most registration ids in one `pushToList` (and fewest: 2).
pub const VIVO_MAX_REGIDS: usize = 1000;
/// `title` width at most (a CJK character counts 2) [doc].
pub const VIVO_TITLE_WIDTH: usize = 40;
/// `content` width at most [doc].
pub const VIVO_CONTENT_WIDTH: usize = 100;

const TOKEN_BAD: i64 = 10000;
const QUOTA: i64 = 10070;
const APP_MISMATCH: i64 = 10094;
const PARAM: i64 = 10099;
const NO_APP_ID: i64 = 10200;
const NO_APP_KEY: i64 = 10201;
const BAD_TIMESTAMP: i64 = 10202;
const BAD_SIGN: i64 = 10203;
const WRONG_APP: i64 = 10204;
const INVALID_TARGET: i64 = 10302;

/// The app the mock serves and its limits; `GET|POST /_mock/vivo/config`.
/// Fields left out take their defaults; zero turns a limit off.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VivoConfig {
    pub app_id: String,
    pub app_key: String,
    pub app_secret: String,
    /// Operation messages delivered per device a day (vivo: 2, news apps
    /// 5); more are accepted and dropped.
    pub operation_per_device_per_day: u32,
    /// Device messages the app may send a Beijing day; past it `10070`.
    pub app_daily_quota: u64,
    /// Calls a second; past it HTTP 429.
    pub calls_per_second: u32,
}

impl Default for VivoConfig {
    fn default() -> Self {
        VivoConfig {
            app_id: DEFAULT_VIVO_APP_ID.to_owned(),
            app_key: DEFAULT_VIVO_APP_KEY.to_owned(),
            app_secret: DEFAULT_VIVO_APP_SECRET.to_owned(),
            operation_per_device_per_day: 2,
            app_daily_quota: 0,
            calls_per_second: 1000,
        }
    }
}

impl VivoConfig {
    /// All three credentials, or no client could ever sign.
    pub fn validate(&self) -> Result<(), String> {
        if self.app_id.is_empty() || self.app_key.is_empty() || self.app_secret.is_empty() {
            return Err("app_id, app_key and app_secret must not be empty".to_owned());
        }
        Ok(())
    }
}

/// A saved batch message (`saveListPayload`), until it is a day old.
struct Task {
    message: Value,
    operation: bool,
    test: bool,
    at_ms: u64,
}

pub(crate) struct VivoState {
    live: RwLock<VivoConfig>,
    mint: TokenMint,
    book: Book,
    tasks: Mutex<HashMap<String, Task>>,
    /// requestId → the taskId first answered for it.
    requests: TimedDedup<u64>,
}

impl VivoState {
    pub(crate) fn new(cfg: VivoConfig) -> VivoState {
        VivoState {
            live: RwLock::new(cfg),
            mint: TokenMint::new("vivo-"),
            book: Book::new(),
            tasks: Mutex::new(HashMap::new()),
            requests: TimedDedup::new(DAY_MS),
        }
    }

    pub(crate) fn reset(&self) {
        self.book.reset();
        self.tasks.lock().clear();
        self.requests.clear();
    }
}

impl VendorMock for VivoState {
    const NAME: &'static str = "vivo";
    type Config = VivoConfig;

    fn of(state: &MockState) -> &Self {
        &state.shared.vivo
    }

    fn book(&self) -> &Book {
        &self.book
    }

    fn config(&self) -> VivoConfig {
        self.live.read().clone()
    }

    fn set_config(&self, cfg: VivoConfig) -> Result<(), String> {
        cfg.validate()?;
        *self.live.write() = cfg;
        Ok(())
    }
}

pub(crate) fn routes() -> Router<MockState> {
    Router::new()
        .route("/message/auth", post(auth))
        .route("/message/send", post(send))
        .route("/message/saveListPayload", post(save_list_payload))
        .route("/message/pushToList", post(push_to_list))
        .merge(control_routes::<VivoState>())
}

/// vivo's sign: lowercase hex MD5 of the trimmed concatenation.
pub(crate) fn vivo_sign(app_id: &str, app_key: &str, timestamp: &str, secret: &str) -> String {
    let joined = format!("{app_id}{app_key}{timestamp}{secret}");
    hex::encode(Md5::digest(joined.trim().as_bytes()))
}

/// Width as vivo counts title and content: ASCII 1, anything else 2.
pub(crate) fn vivo_width(s: &str) -> usize {
    s.chars().map(|c| if c.is_ascii() { 1 } else { 2 }).sum()
}

/// A JSON or number field as text (`appId` may come as either).
fn text(v: &Value, k: &str) -> Option<String> {
    match v.get(k) {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    }
}

fn result(code: i64, desc: &str, extra: Value) -> Value {
    let mut v = json!({"result": code, "desc": desc});
    if let (Some(o), Value::Object(e)) = (v.as_object_mut(), extra) {
        o.extend(e);
    }
    v
}

/// A non-200 answer (throttle, server error).
fn status(code: StatusCode, body: &str) -> Response {
    let mut r = Response::new(Body::from(body.to_owned()));
    *r.status_mut() = code;
    r
}

async fn auth(State(state): State<MockState>, body: Bytes) -> Response {
    let vv = &state.shared.vivo;
    let cfg = vv.live.read().clone();
    let now = vv.book.clock.now_ms();
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let refuse = |code: i64, desc: &str| {
        bump(&vv.book.tally.tokens_refused, 1);
        vv.book.tally.refused.add(&code.to_string(), 1);
        tracing::info!(code, desc, "vivo mock: auth refused");
        json_200(result(code, desc, Value::Null).to_string())
    };
    let Some(app_id) = text(&v, "appId") else {
        return refuse(NO_APP_ID, "appId 不能为空");
    };
    let Some(app_key) = text(&v, "appKey") else {
        return refuse(NO_APP_KEY, "appKey 不能为空");
    };
    let stamp = text(&v, "timestamp");
    let Some(ts) = stamp.filter(|t| {
        t.parse::<u64>()
            .is_ok_and(|t| t.abs_diff(now) <= VIVO_TIMESTAMP_WINDOW_MS)
    }) else {
        return refuse(BAD_TIMESTAMP, "timestamp 不合法 (more than 10 minutes off)");
    };
    if app_id != cfg.app_id || app_key != cfg.app_key {
        return refuse(WRONG_APP, "appId 或 appKey 不合法");
    }
    let sign = text(&v, "sign").unwrap_or_default();
    if !crate::sms::same(&sign, &vivo_sign(&app_id, &app_key, &ts, &cfg.app_secret)) {
        return refuse(BAD_SIGN, "sign 不合法");
    }
    let (token, _) = vv.mint.issue(&cfg.app_id, now, VIVO_TOKEN_TTL_SECS * 1000);
    bump(&vv.book.tally.tokens_issued, 1);
    json_200(result(0, "请求成功", json!({"authToken": token})).to_string())
}

/// The checks every send call shares: token, app, flow control, faults.
/// `Err` is the whole answer.
fn admit(vv: &VivoState, headers: &HeaderMap, body: &Value, now: u64) -> Result<(), Box<Response>> {
    let cfg = vv.live.read().clone();
    let refuse = |code: i64, desc: &str| {
        vv.book.tally.refused.add(&code.to_string(), 1);
        json_200(result(code, desc, Value::Null).to_string())
    };
    let token = headers.get("authToken").and_then(|v| v.to_str().ok());
    let Some(token) = token.filter(|t| !t.is_empty()) else {
        return Err(Box::new(refuse(TOKEN_BAD, "authToken 不能为空")));
    };
    match vv.mint.check(token, &cfg.app_id, now, &vv.book.faults) {
        Ok(()) => {}
        Err(TokenProblem::Unknown | TokenProblem::Expired) => {
            return Err(Box::new(refuse(TOKEN_BAD, "authToken 不合法或已过期")));
        }
    }
    if text(body, "appId").as_deref() != Some(cfg.app_id.as_str()) {
        return Err(Box::new(refuse(APP_MISMATCH, "appId 与鉴权信息不一致")));
    }
    if !vv.book.take_call(now, cfg.calls_per_second) {
        vv.book.tally.refused.add("http-429", 1);
        return Err(Box::new(status(
            StatusCode::TOO_MANY_REQUESTS,
            "too many requests",
        )));
    }
    match vv.book.injected() {
        Some(Injected::Throttle) => {
            vv.book.tally.refused.add("http-429", 1);
            Err(Box::new(status(
                StatusCode::TOO_MANY_REQUESTS,
                "too many requests",
            )))
        }
        Some(Injected::Internal) => {
            vv.book.tally.refused.add("http-500", 1);
            Err(Box::new(status(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Internet server error!",
            )))
        }
        Some(Injected::Quota) => Err(Box::new(refuse(QUOTA, "发送总量超出限制"))),
        None => Ok(()),
    }
}

/// A checked message: what the devices get, and its class.
struct Checked {
    message: Value,
    operation: bool,
    test: bool,
}

/// The message fields `send` and `saveListPayload` share.
fn check_message(v: &Value) -> Result<Checked, String> {
    let o = v.as_object().ok_or("the body must be a JSON object")?;
    let int = |k: &str| o.get(k).and_then(Value::as_i64);
    if !matches!(int("notifyType"), Some(1..=4)) {
        return Err("notifyType must be 1, 2, 3 or 4".into());
    }
    for (k, most) in [("title", VIVO_TITLE_WIDTH), ("content", VIVO_CONTENT_WIDTH)] {
        match o.get(k).and_then(Value::as_str) {
            Some(s) if !s.trim().is_empty() && vivo_width(s) <= most => {}
            Some(s) if vivo_width(s) > most => {
                return Err(format!(
                    "{k} is over {most} bytes ({} counted)",
                    vivo_width(s)
                ));
            }
            _ => return Err(format!("{k} is required")),
        }
    }
    match int("skipType") {
        Some(1) => {}
        Some(2..=4) => {
            if o.get("skipContent")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                return Err("skipContent is required for skipType 2, 3 and 4".into());
            }
        }
        _ => return Err("skipType must be 1, 2, 3 or 4".into()),
    }
    if let Some(t) = o.get("timeToLive")
        && !t.as_i64().is_some_and(|t| (900..=7 * 86_400).contains(&t))
    {
        return Err("timeToLive must be 900 s to 7 days".into());
    }
    let classification = match o.get("classification") {
        None | Some(Value::Null) => 0,
        Some(c) => match c.as_i64() {
            Some(c @ 0..=1) => c,
            _ => return Err("classification must be 0 or 1".into()),
        },
    };
    if let Some(m) = o.get("clientCustomMap")
        && !m
            .as_object()
            .is_some_and(|m| m.values().all(Value::is_string))
    {
        return Err("clientCustomMap must be an object of strings".into());
    }
    let request = o
        .get("requestId")
        .and_then(Value::as_str)
        .filter(|r| !r.is_empty() && r.len() <= 64);
    if request.is_none() {
        return Err("requestId is required (at most 64 characters)".into());
    }
    let mut message = Map::new();
    for k in [
        "notifyType",
        "title",
        "content",
        "skipType",
        "skipContent",
        "timeToLive",
        "clientCustomMap",
        "classification",
        "pushMode",
    ] {
        if let Some(x) = o.get(k) {
            message.insert(k.into(), x.clone());
        }
    }
    Ok(Checked {
        message: Value::Object(message),
        operation: classification == 0,
        test: int("pushMode") == Some(1),
    })
}

/// The request id's dedup key.
fn request_key(body: &Value) -> u128 {
    xxh3_128(
        body.get("requestId")
            .and_then(Value::as_str)
            .unwrap_or("")
            .as_bytes(),
    )
}

/// A `taskId`: digits, 18 of them, as vivo's look.
fn task_id(seq: u64) -> String {
    format!("6{:017}", seq % 100_000_000_000_000_000)
}

/// Delivers `message` to `regids`; their count.
fn deliver(vv: &VivoState, regids: &[String], c: &Checked, id: &str, now: u64) -> u64 {
    let cfg = vv.live.read().clone();
    let limits = DeviceLimits {
        per_day: 0,
        marketing_per_day: if c.test {
            0
        } else {
            cfg.operation_per_device_per_day
        },
    };
    vv.book
        .deliver(regids, c.message.clone(), id, c.operation, limits, now)
}

async fn answer_after(vv: &VivoState, r: Response) -> Response {
    let latency_ms = vv.book.faults.lock().latency_ms;
    if latency_ms > 0 {
        tokio::time::sleep(Duration::from_millis(latency_ms)).await;
    }
    r
}

fn refused(vv: &VivoState, code: i64, desc: &str, extra: Value) -> Response {
    vv.book.tally.refused.add(&code.to_string(), 1);
    tracing::debug!(code, desc, "vivo mock: call refused");
    json_200(result(code, desc, extra).to_string())
}

async fn send(State(state): State<MockState>, headers: HeaderMap, body: Bytes) -> Response {
    let vv = &state.shared.vivo;
    bump(&vv.book.tally.calls, 1);
    let now = vv.book.clock.now_ms();
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let r = single(vv, &headers, &v, now);
    answer_after(vv, r).await
}

fn single(vv: &VivoState, headers: &HeaderMap, v: &Value, now: u64) -> Response {
    if let Err(r) = admit(vv, headers, v, now) {
        return *r;
    }
    let c = match check_message(v) {
        Ok(c) => c,
        Err(e) => return refused(vv, PARAM, &e, Value::Null),
    };
    let Some(reg) = v
        .get("regId")
        .and_then(Value::as_str)
        .filter(|r| !r.is_empty())
    else {
        return refused(vv, PARAM, "regId is required", Value::Null);
    };
    let seq = vv.book.next_seq();
    let mut outcome: Option<Response> = None;
    let first = vv
        .requests
        .check_or_insert(request_key(v), now, DAY_MS, || {
            if vv.book.is_invalid(reg) {
                bump(&vv.book.tally.invalid_tokens, 1);
                outcome = Some(refused(
                    vv,
                    INVALID_TARGET,
                    "regId 不合法或已失效",
                    json!({"invalidUser": {"status": 1, "userid": reg}}),
                ));
                return None;
            }
            let cfg = vv.live.read().clone();
            if !vv.book.take_app_day(now, 1, cfg.app_daily_quota) {
                outcome = Some(refused(vv, QUOTA, "发送总量超出限制", Value::Null));
                return None;
            }
            deliver(vv, &[reg.to_owned()], &c, &task_id(seq), now);
            bump(&vv.book.tally.accepted_calls, 1);
            Some(seq)
        });
    if let Some(first) = first {
        bump(&vv.book.tally.duplicates, 1);
        return json_200(result(0, "请求成功", json!({"taskId": task_id(first)})).to_string());
    }
    outcome.unwrap_or_else(|| {
        json_200(result(0, "请求成功", json!({"taskId": task_id(seq)})).to_string())
    })
}

async fn save_list_payload(
    State(state): State<MockState>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let vv = &state.shared.vivo;
    bump(&vv.book.tally.calls, 1);
    let now = vv.book.clock.now_ms();
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let r = save(vv, &headers, &v, now);
    answer_after(vv, r).await
}

fn save(vv: &VivoState, headers: &HeaderMap, v: &Value, now: u64) -> Response {
    if let Err(r) = admit(vv, headers, v, now) {
        return *r;
    }
    let c = match check_message(v) {
        Ok(c) => c,
        Err(e) => return refused(vv, PARAM, &e, Value::Null),
    };
    let seq = vv.book.next_seq();
    let id = task_id(seq);
    let mut tasks = vv.tasks.lock();
    if tasks.len() >= 10_000 {
        tasks.retain(|_, t| now.saturating_sub(t.at_ms) < DAY_MS);
    }
    tasks.insert(
        id.clone(),
        Task {
            message: c.message,
            operation: c.operation,
            test: c.test,
            at_ms: now,
        },
    );
    json_200(result(0, "请求成功", json!({"taskId": id})).to_string())
}

async fn push_to_list(State(state): State<MockState>, headers: HeaderMap, body: Bytes) -> Response {
    let vv = &state.shared.vivo;
    bump(&vv.book.tally.calls, 1);
    let now = vv.book.clock.now_ms();
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let r = to_list(vv, &headers, &v, now);
    answer_after(vv, r).await
}

fn to_list(vv: &VivoState, headers: &HeaderMap, v: &Value, now: u64) -> Response {
    if let Err(r) = admit(vv, headers, v, now) {
        return *r;
    }
    let regids: Vec<String> = match v.get("regIds").and_then(Value::as_array) {
        Some(l) if (2..=VIVO_MAX_REGIDS).contains(&l.len()) => {
            match l.iter().map(|r| r.as_str().map(str::to_owned)).collect() {
                Some(l) => l,
                None => return refused(vv, PARAM, "regIds must be strings", Value::Null),
            }
        }
        _ => {
            return refused(
                vv,
                PARAM,
                &format!("regIds must hold 2 to {VIVO_MAX_REGIDS} ids"),
                Value::Null,
            );
        }
    };
    if v.get("requestId")
        .and_then(Value::as_str)
        .is_none_or(|r| r.is_empty() || r.len() > 64)
    {
        return refused(
            vv,
            PARAM,
            "requestId is required (at most 64 characters)",
            Value::Null,
        );
    }
    let Some(task) = text(v, "taskId") else {
        return refused(vv, PARAM, "taskId is required", Value::Null);
    };
    let Some((message, operation, test)) = vv
        .tasks
        .lock()
        .get(&task)
        .filter(|t| now.saturating_sub(t.at_ms) < DAY_MS)
        .map(|t| (t.message.clone(), t.operation, t.test))
    else {
        return refused(vv, PARAM, "taskId 不合法或已过期", Value::Null);
    };
    let c = Checked {
        message,
        operation,
        test,
    };
    let mut outcome: Option<Response> = None;
    let first = vv
        .requests
        .check_or_insert(request_key(v), now, DAY_MS, || {
            let (bad, good): (Vec<String>, Vec<String>) =
                regids.iter().cloned().partition(|r| vv.book.is_invalid(r));
            bump(&vv.book.tally.invalid_tokens, bad.len() as u64);
            let cfg = vv.live.read().clone();
            if !vv
                .book
                .take_app_day(now, good.len() as u64, cfg.app_daily_quota)
            {
                outcome = Some(refused(vv, QUOTA, "发送总量超出限制", Value::Null));
                return None;
            }
            if !good.is_empty() {
                deliver(vv, &good, &c, &task, now);
            }
            bump(&vv.book.tally.accepted_calls, 1);
            let invalid: Vec<Value> = bad
                .iter()
                .map(|r| json!({"status": 1, "userid": r}))
                .collect();
            outcome = Some(json_200(
                result(
                    0,
                    "请求成功",
                    json!({"taskId": task, "invalidUsers": invalid}),
                )
                .to_string(),
            ));
            Some(0)
        });
    if first.is_some() {
        bump(&vv.book.tally.duplicates, 1);
        return json_200(
            result(0, "请求成功", json!({"taskId": task, "invalidUsers": []})).to_string(),
        );
    }
    outcome.unwrap_or_else(|| refused(vv, PARAM, "no answer", Value::Null))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::{vivo_sign, vivo_width};
    use crate::test_http::TestMock;

    fn now() -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64
    }

    async fn call(m: &TestMock, path: &str, token: Option<&str>, body: Value) -> (u16, Value) {
        let mut req = m.http.post(m.url(path)).json(&body);
        if let Some(t) = token {
            req = req.header("authToken", t);
        }
        let resp = req.send().await.unwrap();
        let st = resp.status().as_u16();
        (st, resp.json().await.unwrap_or(Value::Null))
    }

    async fn token(m: &TestMock) -> String {
        let ts = now().to_string();
        let sign = vivo_sign("10004", "mock-vivo-app-key", &ts, "mock-vivo-app-secret");
        let (_, v) = call(
            m,
            "/message/auth",
            None,
            json!({"appId": 10004, "appKey": "mock-vivo-app-key", "timestamp": ts.parse::<u64>().unwrap(), "sign": sign}),
        )
        .await;
        assert_eq!(v["result"], 0, "{v}");
        v["authToken"].as_str().unwrap().to_owned()
    }

    fn single(reg: &str, request: &str, classification: i64) -> Value {
        json!({"appId": 10004, "regId": reg, "notifyType": 4, "title": "标题", "content": "c",
               "skipType": 1, "requestId": request, "classification": classification})
    }

    #[test]
    fn width_counts_cjk_twice() {
        assert_eq!(vivo_width("ab"), 2);
        assert_eq!(vivo_width("标题"), 4);
        use md5::Digest;
        assert_eq!(
            vivo_sign("1", "k", "2", "s"),
            hex::encode(md5::Md5::digest(b"1k2s"))
        );
    }

    #[tokio::test]
    async fn auth_send_and_dedup() {
        let m = TestMock::start().await;
        let (_, v) = call(
            &m,
            "/message/auth",
            None,
            json!({"appId": "10004", "appKey": "mock-vivo-app-key", "timestamp": now(), "sign": "00"}),
        )
        .await;
        assert_eq!(v["result"], 10203, "{v}");
        let ts = now() - 11 * 60 * 1000;
        let sign = vivo_sign(
            "10004",
            "mock-vivo-app-key",
            &ts.to_string(),
            "mock-vivo-app-secret",
        );
        let (_, v) = call(
            &m,
            "/message/auth",
            None,
            json!({"appId": "10004", "appKey": "mock-vivo-app-key", "timestamp": ts, "sign": sign}),
        )
        .await;
        assert_eq!(v["result"], 10202, "{v}");
        let t = token(&m).await;

        let (_, v) = call(&m, "/message/send", Some(&t), single("r1", "q1", 1)).await;
        assert_eq!(v["result"], 0, "{v}");
        let task = v["taskId"].clone();
        let (_, v) = call(&m, "/message/send", Some(&t), single("r1", "q1", 1)).await;
        assert_eq!(
            v["taskId"], task,
            "a repeated requestId answers the first taskId"
        );
        let s = m.get("/_mock/vivo/stats").await;
        assert_eq!(
            (s["delivered"].as_u64(), s["duplicates"].as_u64()),
            (Some(1), Some(1)),
            "{s}"
        );

        let (_, v) = call(&m, "/message/send", Some(&t), single("invalid-x", "q2", 1)).await;
        assert_eq!(v["result"], 10302);
        assert_eq!(v["invalidUser"]["userid"], "invalid-x");
        let mut wrong = single("r1", "q3", 1);
        wrong["appId"] = json!(1);
        assert_eq!(
            call(&m, "/message/send", Some(&t), wrong).await.1["result"],
            10094
        );
        let mut long = single("r1", "q4", 1);
        long["title"] = json!("标".repeat(21));
        assert_eq!(
            call(&m, "/message/send", Some(&t), long).await.1["result"],
            10099
        );
        assert_eq!(
            call(&m, "/message/send", Some("nope"), single("r1", "q5", 1))
                .await
                .1["result"],
            10000
        );

        m.post("/_mock/vivo/faults", &json!({"expire_tokens": true}))
            .await;
        assert_eq!(
            call(&m, "/message/send", Some(&t), single("r1", "q6", 1))
                .await
                .1["result"],
            10000
        );
        let fresh = token(&m).await;
        m.post(
            "/_mock/vivo/faults",
            &json!({"throttle_next": 1, "internal_next": 1, "quota_next": 1}),
        )
        .await;
        assert_eq!(
            call(&m, "/message/send", Some(&fresh), single("r1", "q7", 1))
                .await
                .0,
            429
        );
        assert_eq!(
            call(&m, "/message/send", Some(&fresh), single("r1", "q8", 1))
                .await
                .0,
            500
        );
        assert_eq!(
            call(&m, "/message/send", Some(&fresh), single("r1", "q9", 1))
                .await
                .1["result"],
            10070
        );
        m.post("/_mock/vivo/clock", &json!({"advance_secs": 86_400}))
            .await;
        assert_eq!(
            call(&m, "/message/send", Some(&fresh), single("r1", "q10", 1))
                .await
                .1["result"],
            10000
        );
    }

    #[tokio::test]
    async fn batches_save_then_push_and_operation_messages_are_capped() {
        let m = TestMock::start().await;
        let t = token(&m).await;
        let mut payload = single("", "s1", 0);
        payload.as_object_mut().unwrap().remove("regId");
        let (_, v) = call(&m, "/message/saveListPayload", Some(&t), payload).await;
        assert_eq!(v["result"], 0, "{v}");
        let task = v["taskId"].as_str().unwrap().to_owned();
        let push = |req: &str, regs: Value| json!({"appId": 10004, "regIds": regs, "taskId": task, "requestId": req});
        let (_, v) = call(
            &m,
            "/message/pushToList",
            Some(&t),
            push("p1", json!(["a", "invalid-b"])),
        )
        .await;
        assert_eq!(v["result"], 0, "{v}");
        assert_eq!(
            v["invalidUsers"],
            json!([{"status": 1, "userid": "invalid-b"}])
        );
        assert_eq!(
            call(
                &m,
                "/message/pushToList",
                Some(&t),
                push("p2", json!(["a"]))
            )
            .await
            .1["result"],
            10099
        );
        for r in ["p3", "p4"] {
            assert_eq!(
                call(
                    &m,
                    "/message/pushToList",
                    Some(&t),
                    push(r, json!(["a", "c"]))
                )
                .await
                .1["result"],
                0
            );
        }
        // `a` had its two operation messages; the third is dropped.
        let s = m.get("/_mock/vivo/stats").await;
        assert_eq!(
            (s["delivered"].as_u64(), s["dropped_quota"].as_u64()),
            (Some(4), Some(1)),
            "{s}"
        );
        let (_, v) = call(
            &m,
            "/message/pushToList",
            Some(&t),
            push("p3", json!(["a", "c"])),
        )
        .await;
        assert_eq!(v["result"], 0);
        assert_eq!(m.get("/_mock/vivo/stats").await["duplicates"], 1);
    }
}
