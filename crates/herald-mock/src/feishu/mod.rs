//! Feishu (飞书) app-message mock, as `shared/reference/china-providers.md`
//! §6.1 and §6.2 describe it:
//! `POST /open-apis/auth/v3/tenant_access_token/internal` and
//! `POST /open-apis/im/v1/messages?receive_id_type=`. (The custom group
//! bots at `/open-apis/bot/v2/hook/...` are the robots mock's.)
//!
//! Why it behaves as it does: Feishu answers errors with a 4xx status and
//! a numeric `code`; a tenant token lives 2 h and the token route hands out
//! the current one until less than 30 minutes are left, then a new one
//! (both stay valid); a message with a `uuid` seen in the last hour is sent
//! once, the repeat answered with the first message's id; and the limits
//! are 50 calls a second per app (`99991400`) and 5 a second to one
//! receiver (`230020`).
//!
//! Codes: `99991661` (no token), `99991663` (invalid or expired token),
//! `99991400`, `230020` and `230013` (receiver outside the bot's
//! availability, which the mock answers for unknown ids) come from the
//! reference, which marks the token numbers and `230013` unverified;
//! `10014` (bad app secret) and `99992402` (field validation) are as third
//! parties list them [unverified].
//!
//! One clock, movable through `POST /_mock/feishu/clock`, drives token
//! expiry, the uuid window and the per-second limits.

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use parking_lot::{Mutex, RwLock};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::MockState;
use crate::providers::{Clock, ClockMove, HOUR_MS, MINUTE_MS, Ring, mix64};
use crate::sms::CodeTally;
use crate::wechat::bad_request;

/// The App ID `herald mock` serves without configuration.
pub const DEFAULT_FEISHU_APP_ID: &str = "cli_mock0000000001";
/// Its App Secret.
pub const DEFAULT_FEISHU_APP_SECRET: &str = "mock-feishu-app-secret";
/// Lifetime of a tenant token, as the real `expire`.
pub const FEISHU_TOKEN_TTL_SECS: u64 = 7200;
/// Messages `GET /_mock/feishu/messages` can show.
pub const FEISHU_RING_CAPACITY: usize = 100_000;
/// Longest `uuid`.
pub const FEISHU_MAX_UUID: usize = 50;
/// Largest text `content`, and any other (bytes of the JSON string).
pub const FEISHU_MAX_TEXT_BYTES: usize = 150 * 1024;
pub const FEISHU_MAX_CARD_BYTES: usize = 30 * 1024;

const RECEIVE_ID_TYPES: [&str; 5] = ["open_id", "user_id", "union_id", "email", "chat_id"];
const MSG_TYPES: [&str; 10] = [
    "text",
    "post",
    "image",
    "file",
    "audio",
    "media",
    "sticker",
    "interactive",
    "share_chat",
    "share_user",
];
const NO_TOKEN: i64 = 99991661;
const BAD_TOKEN: i64 = 99991663;
const APP_RATE: i64 = 99991400;
const RECEIVER_RATE: i64 = 230020;
const NOT_AVAILABLE: i64 = 230013;
const BAD_FIELD: i64 = 99992402;
const BAD_SECRET: i64 = 10014;
/// The window a `uuid` de-duplicates in.
const UUID_WINDOW_MS: u64 = HOUR_MS;

/// The app the mock serves and its limits; `MockConfig::feishu`,
/// `GET|POST /_mock/feishu/config`. Zero turns a limit off.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FeishuConfig {
    pub app_id: String,
    pub app_secret: String,
    /// Sends per second of the mock clock for the app (Feishu: 50).
    pub calls_per_second: u32,
    /// Sends per second to one receiver (Feishu: 5).
    pub per_receiver_per_second: u32,
    /// Receive ids the bot cannot reach. Ids starting with `unknown-` are
    /// unreachable too, without listing.
    pub invalid_ids: Vec<String>,
}

impl Default for FeishuConfig {
    fn default() -> Self {
        FeishuConfig {
            app_id: DEFAULT_FEISHU_APP_ID.to_owned(),
            app_secret: DEFAULT_FEISHU_APP_SECRET.to_owned(),
            calls_per_second: 50,
            per_receiver_per_second: 5,
            invalid_ids: Vec::new(),
        }
    }
}

impl FeishuConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.app_id.trim().is_empty() {
            return Err("app_id is empty".to_owned());
        }
        if self.app_secret.is_empty() {
            return Err("app_secret is empty".to_owned());
        }
        Ok(())
    }
}

/// What the next sends do wrong; `GET|POST /_mock/feishu/faults`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FeishuFaults {
    /// Expires every token issued so far at once; reads back `false`.
    pub expire_tokens: bool,
    /// The next N sends answer HTTP 429 `99991400`.
    pub throttle_next: u32,
    /// Delay added before every send answer.
    pub latency_ms: u64,
}

/// `GET /_mock/feishu/stats`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FeishuStats {
    pub tokens_issued: u64,
    pub tokens_refused: u64,
    /// Send calls, whatever their answer.
    pub calls: u64,
    /// Messages delivered.
    pub delivered: u64,
    /// Distinct receivers delivered to.
    pub receivers: u64,
    /// Deliveries to a receiver already delivered to.
    pub repeated_receivers: u64,
    /// Sends answered with an earlier message's id (same `uuid` within the hour).
    pub deduplicated: u64,
    /// Error answers by code.
    pub refused: BTreeMap<String, u64>,
}

/// One delivered message; `GET /_mock/feishu/messages`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FeishuMessage {
    pub receive_id: String,
    pub receive_id_type: String,
    pub msg_type: String,
    /// `content`, parsed from the JSON string it was sent as.
    pub content: Value,
    pub uuid: Option<String>,
    pub message_id: String,
    pub at_ms: u64,
}

#[derive(Default)]
struct Tokens {
    /// Valid tokens and their expiry; the last is the current one.
    live: VecDeque<(String, u64)>,
}

#[derive(Default)]
struct Counters {
    tokens_issued: AtomicU64,
    tokens_refused: AtomicU64,
    calls: AtomicU64,
    delivered: AtomicU64,
    deduplicated: AtomicU64,
}

fn bump(a: &AtomicU64) {
    a.fetch_add(1, Ordering::Relaxed);
}

/// `uuid`s seen: uuid -> (message id, when), and (when, uuid) oldest first.
type Uuids = (HashMap<String, (String, u64)>, VecDeque<(u64, String)>);

/// Everything the Feishu mock keeps.
pub(crate) struct FeishuState {
    pub(crate) clock: Clock,
    cfg: RwLock<Arc<FeishuConfig>>,
    faults: Mutex<FeishuFaults>,
    tokens: Mutex<Tokens>,
    seq: AtomicU64,
    /// (second, calls in it) for the app; receiver -> (second, sends).
    app_second: Mutex<(u64, u32)>,
    receiver_second: Mutex<HashMap<String, (u64, u32)>>,
    /// uuid -> (message id, when).
    uuids: Mutex<Uuids>,
    ring: Ring<FeishuMessage>,
    counters: Counters,
    refused: CodeTally,
    repeats: crate::repeats::Repeats,
}

impl FeishuState {
    pub(crate) fn new(cfg: FeishuConfig) -> FeishuState {
        FeishuState {
            clock: Clock::system(),
            cfg: RwLock::new(Arc::new(cfg)),
            faults: Mutex::new(FeishuFaults::default()),
            tokens: Mutex::new(Tokens::default()),
            seq: AtomicU64::new(u64::from(std::process::id()) << 24),
            app_second: Mutex::new((0, 0)),
            receiver_second: Mutex::new(HashMap::new()),
            uuids: Mutex::new((HashMap::new(), VecDeque::new())),
            ring: Ring::new(FEISHU_RING_CAPACITY),
            counters: Counters::default(),
            refused: CodeTally::default(),
            repeats: Default::default(),
        }
    }

    fn cfg(&self) -> Arc<FeishuConfig> {
        self.cfg.read().clone()
    }

    pub(crate) fn config(&self) -> FeishuConfig {
        (*self.cfg()).clone()
    }

    pub(crate) fn set_config(&self, cfg: FeishuConfig) -> Result<(), String> {
        cfg.validate()?;
        *self.cfg.write() = Arc::new(cfg);
        Ok(())
    }

    pub(crate) fn faults(&self) -> FeishuFaults {
        self.faults.lock().clone()
    }

    pub(crate) fn set_faults(&self, mut f: FeishuFaults) {
        if f.expire_tokens {
            self.tokens.lock().live.clear();
            f.expire_tokens = false;
            tracing::info!("feishu mock: every token expired");
        }
        *self.faults.lock() = f;
    }

    pub(crate) fn stats(&self) -> FeishuStats {
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let c = &self.counters;
        FeishuStats {
            tokens_issued: n(&c.tokens_issued),
            tokens_refused: n(&c.tokens_refused),
            calls: n(&c.calls),
            delivered: n(&c.delivered),
            receivers: self.repeats.devices(),
            repeated_receivers: self.repeats.repeated(),
            deduplicated: n(&c.deduplicated),
            refused: self.refused.snapshot(),
        }
    }

    pub(crate) fn messages(&self, limit: usize, receive_id: Option<&str>) -> Vec<FeishuMessage> {
        self.ring
            .snapshot(limit, |m| receive_id.is_none_or(|r| m.receive_id == r))
    }

    /// Forgets messages, counters, uuids and windows; keeps configuration,
    /// faults, clock and tokens.
    pub(crate) fn reset(&self) {
        self.ring.clear();
        *self.app_second.lock() = (0, 0);
        self.receiver_second.lock().clear();
        *self.uuids.lock() = (HashMap::new(), VecDeque::new());
        let c = &self.counters;
        for a in [
            &c.tokens_issued,
            &c.tokens_refused,
            &c.calls,
            &c.delivered,
            &c.deduplicated,
        ] {
            a.store(0, Ordering::Relaxed);
        }
        self.refused.clear();
        self.repeats.clear();
    }

    fn next_id(&self) -> u64 {
        mix64(self.seq.fetch_add(1, Ordering::Relaxed))
    }

    /// The current token while more than 30 minutes are left, else a new
    /// one; returns it and its seconds left.
    fn tenant_token(&self, now_ms: u64) -> (String, u64) {
        let mut t = self.tokens.lock();
        t.live.retain(|(_, exp)| *exp > now_ms);
        if let Some((tok, exp)) = t.live.back()
            && exp - now_ms >= 30 * MINUTE_MS
        {
            return (tok.clone(), (exp - now_ms) / 1000);
        }
        let tok = format!("t-{:016x}{:016x}", self.next_id(), self.next_id());
        let exp = now_ms + FEISHU_TOKEN_TTL_SECS * 1000;
        t.live.push_back((tok.clone(), exp));
        bump(&self.counters.tokens_issued);
        (tok, FEISHU_TOKEN_TTL_SECS)
    }

    fn token_ok(&self, token: &str, now_ms: u64) -> bool {
        self.tokens
            .lock()
            .live
            .iter()
            .any(|(t, exp)| t == token && *exp > now_ms)
    }

    fn refuse(&self, status: StatusCode, code: i64, msg: &str) -> Response {
        self.refused.add(&code.to_string(), 1);
        tracing::debug!(code, msg, "feishu mock: refused");
        reply(
            status,
            json!({"code": code, "msg": msg, "error": {"log_id": self.log_id()}}),
        )
    }

    fn log_id(&self) -> String {
        format!("{:016X}", self.next_id())
    }
}

fn reply(status: StatusCode, body: Value) -> Response {
    let mut resp = Response::new(Body::from(body.to_string()));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/json; charset=utf-8"),
    );
    resp
}

pub(crate) fn routes() -> Router<MockState> {
    Router::new()
        .route(
            "/open-apis/auth/v3/tenant_access_token/internal",
            post(tenant_token),
        )
        .route("/open-apis/im/v1/messages", post(send))
        .route("/_mock/feishu/stats", get(stats))
        .route("/_mock/feishu/messages", get(messages))
        .route("/_mock/feishu/faults", get(get_faults).post(set_faults))
        .route("/_mock/feishu/config", get(get_config).post(set_config))
        .route("/_mock/feishu/clock", post(move_clock))
}

async fn tenant_token(State(state): State<MockState>, body: Bytes) -> Response {
    let fs = &state.shared.feishu;
    let cfg = fs.cfg();
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let id_ok = v.get("app_id").and_then(Value::as_str) == Some(cfg.app_id.as_str());
    let secret_ok = v
        .get("app_secret")
        .and_then(Value::as_str)
        .is_some_and(|s| crate::sms::same(s, &cfg.app_secret));
    if !id_ok || !secret_ok {
        bump(&fs.counters.tokens_refused);
        return fs.refuse(
            StatusCode::BAD_REQUEST,
            BAD_SECRET,
            "app_id or app_secret is invalid",
        );
    }
    let (token, expire) = fs.tenant_token(fs.clock.now_ms());
    reply(
        StatusCode::OK,
        json!({"code": 0, "msg": "ok", "tenant_access_token": token, "expire": expire}),
    )
}

#[derive(Deserialize)]
struct SendQuery {
    receive_id_type: Option<String>,
}

/// A send's checked fields.
struct SendBody {
    receive_id: String,
    msg_type: String,
    content: Value,
    uuid: Option<String>,
}

fn read_send(body: &[u8]) -> Result<SendBody, String> {
    let v: Value = serde_json::from_slice(body).map_err(|e| format!("body is not JSON: {e}"))?;
    let s = |k: &str| v.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
    let receive_id = s("receive_id").ok_or("receive_id is required")?.to_owned();
    let msg_type = s("msg_type")
        .filter(|t| MSG_TYPES.contains(t))
        .ok_or("msg_type is missing or unknown")?
        .to_owned();
    let raw = s("content").ok_or("content is required (a JSON string)")?;
    let most = if msg_type == "text" {
        FEISHU_MAX_TEXT_BYTES
    } else {
        FEISHU_MAX_CARD_BYTES
    };
    if raw.len() > most {
        return Err(format!("content is {} bytes; at most {most}", raw.len()));
    }
    let content: Value = serde_json::from_str(raw)
        .ok()
        .filter(Value::is_object)
        .ok_or("content must be a JSON object serialized as a string")?;
    if msg_type == "text"
        && content
            .get("text")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
    {
        return Err("content.text is required for a text message".to_owned());
    }
    let uuid = match v.get("uuid") {
        None | Some(Value::Null) => None,
        Some(Value::String(u)) if !u.is_empty() && u.len() <= FEISHU_MAX_UUID => Some(u.clone()),
        Some(_) => {
            return Err(format!(
                "uuid must be a string of 1 to {FEISHU_MAX_UUID} characters"
            ));
        }
    };
    Ok(SendBody {
        receive_id,
        msg_type,
        content,
        uuid,
    })
}

/// Takes one slot of a per-second window; false when it is full.
fn take(w: &mut (u64, u32), second: u64, limit: u32) -> bool {
    if w.0 != second {
        *w = (second, 0);
    }
    if limit > 0 && w.1 >= limit {
        return false;
    }
    w.1 += 1;
    true
}

async fn send(
    State(state): State<MockState>,
    q: Result<Query<SendQuery>, QueryRejection>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let fs = &state.shared.feishu;
    bump(&fs.counters.calls);
    let latency_ms = fs.faults.lock().latency_ms;
    if latency_ms > 0 {
        tokio::time::sleep(Duration::from_millis(latency_ms)).await;
    }
    let now_ms = fs.clock.now_ms();
    let bearer = headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty());
    let Some(bearer) = bearer else {
        return fs.refuse(
            StatusCode::BAD_REQUEST,
            NO_TOKEN,
            "Missing access token for authorization",
        );
    };
    if !fs.token_ok(bearer, now_ms) {
        return fs.refuse(
            StatusCode::BAD_REQUEST,
            BAD_TOKEN,
            "Invalid access token for authorization",
        );
    }
    let cfg = fs.cfg();
    {
        let mut f = fs.faults.lock();
        if f.throttle_next > 0 {
            f.throttle_next -= 1;
            drop(f);
            return fs.refuse(
                StatusCode::TOO_MANY_REQUESTS,
                APP_RATE,
                "request trigger frequency limit",
            );
        }
    }
    let second = now_ms / 1000;
    if !take(&mut fs.app_second.lock(), second, cfg.calls_per_second) {
        return fs.refuse(
            StatusCode::TOO_MANY_REQUESTS,
            APP_RATE,
            "request trigger frequency limit",
        );
    }
    let id_type = q.ok().and_then(|Query(q)| q.receive_id_type);
    let Some(id_type) = id_type.filter(|t| RECEIVE_ID_TYPES.contains(&t.as_str())) else {
        return fs.refuse(
            StatusCode::BAD_REQUEST,
            BAD_FIELD,
            "field validation failed: receive_id_type is one of open_id, user_id, union_id, email, chat_id",
        );
    };
    let send = match read_send(&body) {
        Ok(s) => s,
        Err(e) => {
            return fs.refuse(
                StatusCode::BAD_REQUEST,
                BAD_FIELD,
                &format!("field validation failed: {e}"),
            );
        }
    };
    let invalid: HashSet<&str> = cfg.invalid_ids.iter().map(String::as_str).collect();
    if send.receive_id.starts_with("unknown-") || invalid.contains(send.receive_id.as_str()) {
        return fs.refuse(
            StatusCode::BAD_REQUEST,
            NOT_AVAILABLE,
            "Bot has NO availability to this user.",
        );
    }
    if let Some(u) = &send.uuid {
        let mut uu = fs.uuids.lock();
        while let Some((at, old)) = uu.1.front().cloned() {
            if now_ms.saturating_sub(at) < UUID_WINDOW_MS {
                break;
            }
            uu.1.pop_front();
            if uu.0.get(&old).is_some_and(|(_, t)| *t == at) {
                uu.0.remove(&old);
            }
        }
        if let Some((mid, _)) = uu.0.get(u) {
            bump(&fs.counters.deduplicated);
            return reply(
                StatusCode::OK,
                json!({"code": 0, "msg": "success", "data": {"message_id": mid}}),
            );
        }
    }
    {
        let mut per = fs.receiver_second.lock();
        per.retain(|_, w| w.0 == second);
        let w = per.entry(send.receive_id.clone()).or_insert((second, 0));
        if !take(w, second, cfg.per_receiver_per_second) {
            drop(per);
            return fs.refuse(
                StatusCode::BAD_REQUEST,
                RECEIVER_RATE,
                "The request you send to the user or chat is too frequent",
            );
        }
    }
    let message_id = format!("om_{:016x}{:016x}", fs.next_id(), fs.next_id());
    if let Some(u) = &send.uuid {
        let mut uu = fs.uuids.lock();
        uu.0.insert(u.clone(), (message_id.clone(), now_ms));
        uu.1.push_back((now_ms, u.clone()));
    }
    bump(&fs.counters.delivered);
    fs.repeats.record(&send.receive_id);
    fs.ring.push(FeishuMessage {
        receive_id: send.receive_id,
        receive_id_type: id_type,
        msg_type: send.msg_type.clone(),
        content: send.content,
        uuid: send.uuid,
        message_id: message_id.clone(),
        at_ms: now_ms,
    });
    reply(
        StatusCode::OK,
        json!({"code": 0, "msg": "success", "data": {
            "message_id": message_id, "msg_type": send.msg_type,
            "create_time": (now_ms).to_string(), "sender": {"id": cfg.app_id, "id_type": "app_id", "sender_type": "app"}}}),
    )
}

async fn stats(State(state): State<MockState>) -> Response {
    Json(state.shared.feishu.stats()).into_response()
}

#[derive(Deserialize)]
struct Listing {
    limit: Option<usize>,
    receive_id: Option<String>,
}

async fn messages(
    State(state): State<MockState>,
    q: Result<Query<Listing>, QueryRejection>,
) -> Response {
    match q {
        Ok(Query(q)) => Json(state.shared.feishu.messages(
            q.limit.unwrap_or(FEISHU_RING_CAPACITY),
            q.receive_id.as_deref(),
        ))
        .into_response(),
        Err(e) => bad_request(format!("feishu messages: {e}")),
    }
}

async fn get_faults(State(state): State<MockState>) -> Response {
    Json(state.shared.feishu.faults()).into_response()
}

async fn set_faults(State(state): State<MockState>, body: Bytes) -> Response {
    match serde_json::from_slice::<FeishuFaults>(&body) {
        Ok(f) => {
            state.shared.feishu.set_faults(f);
            Json(state.shared.feishu.faults()).into_response()
        }
        Err(e) => bad_request(format!("feishu faults: {e}")),
    }
}

async fn get_config(State(state): State<MockState>) -> Response {
    Json(state.shared.feishu.config()).into_response()
}

async fn set_config(State(state): State<MockState>, body: Bytes) -> Response {
    let cfg = match serde_json::from_slice::<FeishuConfig>(&body) {
        Ok(c) => c,
        Err(e) => return bad_request(format!("feishu config: {e}")),
    };
    match state.shared.feishu.set_config(cfg) {
        Ok(()) => Json(state.shared.feishu.config()).into_response(),
        Err(e) => bad_request(format!("feishu config: {e}")),
    }
}

async fn move_clock(State(state): State<MockState>, body: Bytes) -> Response {
    match serde_json::from_slice::<ClockMove>(&body) {
        Ok(m) => {
            let c = &state.shared.feishu.clock;
            c.advance(
                m.advance_secs
                    .saturating_mul(1000)
                    .saturating_add(m.advance_ms),
            );
            Json(json!({ "now_ms": c.now_ms(), "offset_ms": c.offset_ms() })).into_response()
        }
        Err(e) => bad_request(format!("feishu clock: {e}")),
    }
}
