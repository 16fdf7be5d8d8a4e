//! OPPO Push mock (server API v1), as described in
//! `shared/reference/china-providers.md` §4.0 and §4.4 and in OPPO's
//! developer documentation as mirrored in public repositories (common
//! parameters and return codes; single and batch unicast):
//! `POST /server/v1/auth` and `POST /server/v1/message/notification/{unicast,unicast_batch}`
//! of `api.push.oppomobile.com`.
//!
//! Why it behaves as it does: OPPO signs the token request
//! (`sign` = lowercase hex SHA-256 of app_key + timestamp + master_secret)
//! and hands out an `auth_token` valid 24 hours, which every send carries
//! as a form parameter (the mock takes an `auth_token` header too, as some
//! clients send it). Every answer is HTTP 200 with `{code, message, data}`;
//! the common codes are OPPO's documented ones. A batch answers per
//! message in `data`, with `errorCode` 10000 for a registration id OPPO
//! does not know; a single send answers 10000 as its code.
//!
//! | code | when |
//! |---|---|
//! | `14` / `16` / `17` / `18` / `19` | token request: wrong app key, bad or missing sign, missing or stale timestamp (±10 min, an assumption) |
//! | `11` / `29` | send: expired or unknown / missing `auth_token` |
//! | `40` / `41` | a parameter missing / wrong (lengths, more than 1000 messages) |
//! | `67` | `category` not one OPPO knows, or `notify_level` not 1, 2 or 16 |
//! | `-2` | more calls a second than `calls_per_second`, or fault `throttle_next` |
//! | `-1` | fault `internal_next` |
//! | `33` | the app's daily total, or fault `quota_next` |
//! | `10000` | an unknown registration id |
//!
//! Per-device allowances (§4.0): messages of a communication and service
//! `category` (IM, ACCOUNT, DEVICE_REMINDER, ORDER, TODO, SUBSCRIPTION)
//! have none; content and marketing ones (NEWS, CONTENT, MARKETING,
//! SOCIAL, or none given) are delivered 2 a device a day and the rest
//! dropped with a success answer. The category names are [unverified].

use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::post;
use parking_lot::RwLock;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::MockState;
use crate::providers::json_200;
use crate::push_quota::DeviceLimits;
use crate::vendor_push::{
    Book, Injected, TokenMint, TokenProblem, VendorMock, bump, chars, control_routes,
};

/// The app key `herald mock` serves without configuration.
pub const DEFAULT_OPPO_APP_KEY: &str = "mock-oppo-app-key";
/// Its master secret.
pub const DEFAULT_OPPO_MASTER_SECRET: &str = "mock-oppo-master-secret";
/// Lifetime of an `auth_token` (24 h).
pub const OPPO_TOKEN_TTL_SECS: u64 = 24 * 3600;
/// Most messages in one `unicast_batch` call [doc].
pub const OPPO_MAX_BATCH: usize = 1000;
/// How far a token request's `timestamp` may be from the mock's clock.
pub const OPPO_TIMESTAMP_WINDOW_MS: u64 = 10 * 60 * 1000;
/// `title` may hold at most this many characters [unverified].
pub const OPPO_TITLE_CHARS: usize = 50;
/// `content` may hold at most this many characters [unverified].
pub const OPPO_CONTENT_CHARS: usize = 200;
/// Communication and service categories: no per-device allowance.
pub const OPPO_SERVICE_CATEGORIES: [&str; 6] = [
    "IM",
    "ACCOUNT",
    "DEVICE_REMINDER",
    "ORDER",
    "TODO",
    "SUBSCRIPTION",
];
/// Content and marketing categories.
pub const OPPO_MARKETING_CATEGORIES: [&str; 4] = ["NEWS", "CONTENT", "MARKETING", "SOCIAL"];

const FLOW_CONTROL: i64 = -2;
const UNAVAILABLE: i64 = -1;
const BAD_TOKEN: i64 = 11;
const BAD_APP_KEY: i64 = 14;
const BAD_SIGN: i64 = 16;
const NO_SIGN: i64 = 17;
const NO_TIMESTAMP: i64 = 18;
const BAD_TIMESTAMP: i64 = 19;
const NO_TOKEN: i64 = 29;
const DAILY_LIMIT: i64 = 33;
const MISSING: i64 = 40;
const BAD_ARG: i64 = 41;
const BAD_CATEGORY: i64 = 67;
const BAD_REGID: i64 = 10000;

/// The app the mock serves and its limits; `GET|POST /_mock/oppo/config`.
/// Fields left out take their defaults; zero turns a limit off.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OppoConfig {
    pub app_key: String,
    pub master_secret: String,
    /// Content and marketing messages delivered per device a day (OPPO: 2,
    /// 5 for news apps); more are accepted and dropped.
    pub marketing_per_device_per_day: u32,
    /// Device messages the app may send a Beijing day; past it `33`.
    pub app_daily_quota: u64,
    /// Send calls a second; past it `-2`.
    pub calls_per_second: u32,
}

impl Default for OppoConfig {
    fn default() -> Self {
        OppoConfig {
            app_key: DEFAULT_OPPO_APP_KEY.to_owned(),
            master_secret: DEFAULT_OPPO_MASTER_SECRET.to_owned(),
            marketing_per_device_per_day: 2,
            app_daily_quota: 0,
            calls_per_second: 1000,
        }
    }
}

impl OppoConfig {
    /// An app key and a secret, or no client could ever sign.
    pub fn validate(&self) -> Result<(), String> {
        if self.app_key.is_empty() || self.master_secret.is_empty() {
            return Err("app_key and master_secret must not be empty".to_owned());
        }
        Ok(())
    }
}

pub(crate) struct OppoState {
    live: RwLock<OppoConfig>,
    mint: TokenMint,
    book: Book,
}

impl OppoState {
    pub(crate) fn new(cfg: OppoConfig) -> OppoState {
        OppoState {
            live: RwLock::new(cfg),
            mint: TokenMint::new("oppo-"),
            book: Book::new(),
        }
    }

    pub(crate) fn reset(&self) {
        self.book.reset();
    }
}

impl VendorMock for OppoState {
    const NAME: &'static str = "oppo";
    type Config = OppoConfig;

    fn of(state: &MockState) -> &Self {
        &state.shared.oppo
    }

    fn book(&self) -> &Book {
        &self.book
    }

    fn config(&self) -> OppoConfig {
        self.live.read().clone()
    }

    fn set_config(&self, cfg: OppoConfig) -> Result<(), String> {
        cfg.validate()?;
        *self.live.write() = cfg;
        Ok(())
    }
}

pub(crate) fn routes() -> Router<MockState> {
    Router::new()
        .route("/server/v1/auth", post(auth))
        .route("/server/v1/message/notification/unicast", post(unicast))
        .route(
            "/server/v1/message/notification/unicast_batch",
            post(unicast_batch),
        )
        .merge(control_routes::<OppoState>())
}

/// The sign OPPO checks: lowercase hex SHA-256 of the three strings.
pub(crate) fn oppo_sign(app_key: &str, timestamp: &str, master_secret: &str) -> String {
    let mut h = Sha256::new();
    h.update(app_key.as_bytes());
    h.update(timestamp.as_bytes());
    h.update(master_secret.as_bytes());
    hex::encode(h.finalize())
}

fn answer(code: i64, message: &str, data: Value) -> Response {
    json_200(json!({"code": code, "message": message, "data": data}).to_string())
}

fn form_of(body: &[u8]) -> Vec<(String, String)> {
    serde_urlencoded::from_bytes(body).unwrap_or_default()
}

fn field<'a>(form: &'a [(String, String)], k: &str) -> Option<&'a str> {
    form.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str())
}

async fn auth(State(state): State<MockState>, body: Bytes) -> Response {
    let op = &state.shared.oppo;
    let cfg = op.live.read().clone();
    let now = op.book.clock.now_ms();
    let form = form_of(&body);
    let refuse = |code: i64, message: &str| {
        bump(&op.book.tally.tokens_refused, 1);
        op.book.tally.refused.add(&code.to_string(), 1);
        tracing::info!(code, message, "oppo mock: auth refused");
        answer(code, message, Value::Null)
    };
    let key = field(&form, "app_key").unwrap_or("");
    if key != cfg.app_key {
        return refuse(BAD_APP_KEY, "Invalid App Key");
    }
    let Some(ts) = field(&form, "timestamp") else {
        return refuse(NO_TIMESTAMP, "Missing Timestamp");
    };
    match ts.parse::<u64>() {
        Ok(t) if t.abs_diff(now) <= OPPO_TIMESTAMP_WINDOW_MS => {}
        _ => return refuse(BAD_TIMESTAMP, "Invalid Timestamp"),
    }
    let Some(sign) = field(&form, "sign") else {
        return refuse(NO_SIGN, "Missing Signature");
    };
    if !crate::sms::same(sign, &oppo_sign(key, ts, &cfg.master_secret)) {
        return refuse(BAD_SIGN, "Invalid Signature");
    }
    let (token, _) = op.mint.issue(&cfg.app_key, now, OPPO_TOKEN_TTL_SECS * 1000);
    bump(&op.book.tally.tokens_issued, 1);
    answer(
        0,
        "Success",
        json!({"auth_token": token, "create_time": now}),
    )
}

/// What a send must pass before its messages are looked at: the token,
/// flow control and injected faults.
fn admit(
    op: &OppoState,
    headers: &HeaderMap,
    form: &[(String, String)],
    now: u64,
) -> Result<(), (i64, &'static str)> {
    let cfg = op.live.read().clone();
    let token = field(form, "auth_token")
        .or_else(|| headers.get("auth_token").and_then(|v| v.to_str().ok()));
    let Some(token) = token.filter(|t| !t.is_empty()) else {
        return Err((NO_TOKEN, "Missing Auth Token"));
    };
    match op.mint.check(token, &cfg.app_key, now, &op.book.faults) {
        Ok(()) => {}
        Err(TokenProblem::Unknown | TokenProblem::Expired) => {
            return Err((BAD_TOKEN, "Invalid AuthToken"));
        }
    }
    if !op.book.take_call(now, cfg.calls_per_second) {
        return Err((FLOW_CONTROL, "Service in Flow Control"));
    }
    match op.book.injected() {
        Some(Injected::Throttle) => Err((FLOW_CONTROL, "Service in Flow Control")),
        Some(Injected::Internal) => Err((UNAVAILABLE, "Service Currently Unavailable")),
        Some(Injected::Quota) => Err((
            DAILY_LIMIT,
            "The number of messages exceeds the daily limit",
        )),
        None => Ok(()),
    }
}

/// One message of a send, checked: its registration id, its notification,
/// and whether it is marketing.
struct Checked {
    regid: String,
    notification: Value,
    marketing: bool,
}

fn check_message(m: &Value) -> Result<Checked, (i64, String)> {
    let Some(m) = m.as_object() else {
        return Err((BAD_ARG, "message must be a JSON object".into()));
    };
    match m.get("target_type").and_then(Value::as_i64) {
        Some(2) => {}
        Some(t) => {
            return Err((
                BAD_ARG,
                format!("target_type {t} is not 2 (registration_id)"),
            ));
        }
        None => return Err((MISSING, "target_type is missing".into())),
    }
    let regid = m
        .get("target_value")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or((MISSING, "target_value is missing".to_string()))?;
    if regid.contains(',') {
        return Err((BAD_ARG, "target_value takes one registration id".into()));
    }
    let n: &Map<String, Value> = m
        .get("notification")
        .and_then(Value::as_object)
        .ok_or((MISSING, "notification is missing".to_string()))?;
    for (k, most) in [("title", OPPO_TITLE_CHARS), ("content", OPPO_CONTENT_CHARS)] {
        match n.get(k).and_then(Value::as_str) {
            None => return Err((MISSING, format!("notification.{k} is missing"))),
            Some(s) if s.trim().is_empty() => {
                return Err((BAD_ARG, format!("notification.{k} must not be blank")));
            }
            Some(s) if chars(s) > most => {
                return Err((
                    BAD_ARG,
                    format!("notification.{k} is over {most} characters"),
                ));
            }
            Some(_) => {}
        }
    }
    let category = n.get("category").and_then(Value::as_str);
    let marketing = match category {
        None => true,
        Some(c) if OPPO_SERVICE_CATEGORIES.contains(&c) => false,
        Some(c) if OPPO_MARKETING_CATEGORIES.contains(&c) => true,
        Some(c) => return Err((BAD_CATEGORY, format!("Category error: {c:?}"))),
    };
    if let Some(l) = n.get("notify_level")
        && !matches!(l.as_i64(), Some(1 | 2 | 16))
    {
        return Err((BAD_CATEGORY, "notify_level must be 1, 2 or 16".into()));
    }
    Ok(Checked {
        regid: regid.to_owned(),
        notification: Value::Object(n.clone()),
        marketing,
    })
}

/// Delivers one checked message; its `data` entry.
fn deliver(op: &OppoState, c: Checked, now: u64) -> Value {
    let cfg = op.live.read().clone();
    let id = format!("{}-1-1-{now:013x}{:011x}", cfg.app_key, op.book.next_seq());
    let limits = DeviceLimits {
        per_day: 0,
        marketing_per_day: cfg.marketing_per_device_per_day,
    };
    op.book.deliver(
        std::slice::from_ref(&c.regid),
        c.notification,
        &id,
        c.marketing,
        limits,
        now,
    );
    json!({"messageId": id, "registrationId": c.regid})
}

async fn unicast(State(state): State<MockState>, headers: HeaderMap, body: Bytes) -> Response {
    let op = &state.shared.oppo;
    send(op, &headers, &body, false).await
}

async fn unicast_batch(
    State(state): State<MockState>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let op = &state.shared.oppo;
    send(op, &headers, &body, true).await
}

async fn send(op: &OppoState, headers: &HeaderMap, body: &[u8], batch: bool) -> Response {
    bump(&op.book.tally.calls, 1);
    let latency_ms = op.book.faults.lock().latency_ms;
    let now = op.book.clock.now_ms();
    let form = form_of(body);
    let (code, message, data) = decide(op, headers, &form, batch, now);
    if code != 0 {
        op.book.tally.refused.add(&code.to_string(), 1);
        tracing::debug!(code, %message, "oppo mock: send refused");
    }
    if latency_ms > 0 {
        tokio::time::sleep(Duration::from_millis(latency_ms)).await;
    }
    answer(code, &message, data)
}

fn decide(
    op: &OppoState,
    headers: &HeaderMap,
    form: &[(String, String)],
    batch: bool,
    now: u64,
) -> (i64, String, Value) {
    if let Err((code, msg)) = admit(op, headers, form, now) {
        return (code, msg.to_owned(), Value::Null);
    }
    let key = if batch { "messages" } else { "message" };
    let Some(raw) = field(form, key) else {
        return (MISSING, format!("{key} is missing"), Value::Null);
    };
    let Ok(parsed) = serde_json::from_str::<Value>(raw) else {
        return (BAD_ARG, format!("{key} is not JSON"), Value::Null);
    };
    let list = if batch {
        match parsed {
            Value::Array(l) if !l.is_empty() && l.len() <= OPPO_MAX_BATCH => l,
            _ => {
                return (
                    BAD_ARG,
                    format!("messages must be an array of 1 to {OPPO_MAX_BATCH} messages"),
                    Value::Null,
                );
            }
        }
    } else {
        vec![parsed]
    };
    let mut checked = Vec::with_capacity(list.len());
    for m in &list {
        match check_message(m) {
            Ok(c) => checked.push(c),
            Err((code, msg)) => return (code, msg, Value::Null),
        }
    }
    let cfg = op.live.read().clone();
    let valid = checked
        .iter()
        .filter(|c| !op.book.is_invalid(&c.regid))
        .count() as u64;
    if !op.book.take_app_day(now, valid, cfg.app_daily_quota) {
        return (
            DAILY_LIMIT,
            "The number of messages exceeds the daily limit".into(),
            Value::Null,
        );
    }
    let mut data = Vec::with_capacity(checked.len());
    for c in checked {
        if op.book.is_invalid(&c.regid) {
            bump(&op.book.tally.invalid_tokens, 1);
            if !batch {
                return (BAD_REGID, "Invalid Registration_id".into(), Value::Null);
            }
            data.push(json!({"registrationId": c.regid, "errorCode": BAD_REGID,
                             "errorMessage": "Invalid Registration_id"}));
            continue;
        }
        data.push(deliver(op, c, now));
    }
    bump(&op.book.tally.accepted_calls, 1);
    if batch {
        (0, "Success".into(), Value::Array(data))
    } else {
        let mut one = data.pop().unwrap_or(Value::Null);
        if let Some(o) = one.as_object_mut() {
            o.remove("registrationId");
        }
        (0, "Success".into(), one)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::oppo_sign;
    use crate::test_http::TestMock;

    async fn form(m: &TestMock, path: &str, fields: &[(&str, &str)]) -> Value {
        let resp = m
            .http
            .post(m.url(path))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(serde_urlencoded::to_string(fields).unwrap())
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        resp.json().await.unwrap()
    }

    fn now() -> String {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis()
            .to_string()
    }

    async fn token(m: &TestMock) -> String {
        let ts = now();
        let sign = oppo_sign("mock-oppo-app-key", &ts, "mock-oppo-master-secret");
        let v = form(
            m,
            "/server/v1/auth",
            &[
                ("app_key", "mock-oppo-app-key"),
                ("timestamp", &ts),
                ("sign", &sign),
            ],
        )
        .await;
        assert_eq!(v["code"], 0, "{v}");
        v["data"]["auth_token"].as_str().unwrap().to_owned()
    }

    fn message(regid: &str, category: Option<&str>) -> Value {
        let mut n = json!({"title": "t", "content": "c", "clickActionType": 0});
        if let Some(c) = category {
            n["category"] = json!(c);
        }
        json!({"target_type": 2, "target_value": regid, "notification": n})
    }

    #[tokio::test]
    async fn auth_is_signed_and_sends_carry_the_token() {
        let m = TestMock::start().await;
        let ts = now();
        let bad = form(
            &m,
            "/server/v1/auth",
            &[
                ("app_key", "mock-oppo-app-key"),
                ("timestamp", &ts),
                ("sign", "00"),
            ],
        )
        .await;
        assert_eq!(bad["code"], 16, "{bad}");
        let stale = "1000";
        let sign = oppo_sign("mock-oppo-app-key", stale, "mock-oppo-master-secret");
        let v = form(
            &m,
            "/server/v1/auth",
            &[
                ("app_key", "mock-oppo-app-key"),
                ("timestamp", stale),
                ("sign", &sign),
            ],
        )
        .await;
        assert_eq!(v["code"], 19);
        let t = token(&m).await;

        let one = message("CN_a", Some("ORDER")).to_string();
        let v = form(
            &m,
            "/server/v1/message/notification/unicast",
            &[("auth_token", &t), ("message", &one)],
        )
        .await;
        assert_eq!(v["code"], 0, "{v}");
        assert!(
            v["data"]["messageId"]
                .as_str()
                .unwrap()
                .starts_with("mock-oppo-app-key-1-1-")
        );
        let v = form(
            &m,
            "/server/v1/message/notification/unicast",
            &[("message", &one)],
        )
        .await;
        assert_eq!(v["code"], 29);
        let gone = message("invalid-a", None).to_string();
        let v = form(
            &m,
            "/server/v1/message/notification/unicast",
            &[("auth_token", &t), ("message", &gone)],
        )
        .await;
        assert_eq!(v["code"], 10000);
        let odd = message("CN_a", Some("PROMO")).to_string();
        let v = form(
            &m,
            "/server/v1/message/notification/unicast",
            &[("auth_token", &t), ("message", &odd)],
        )
        .await;
        assert_eq!(v["code"], 67);

        let batch = json!([message("CN_b", None), message("invalid-c", None)]).to_string();
        let v = form(
            &m,
            "/server/v1/message/notification/unicast_batch",
            &[("auth_token", &t), ("messages", &batch)],
        )
        .await;
        assert_eq!(v["code"], 0, "{v}");
        assert_eq!(v["data"][0]["registrationId"], "CN_b");
        assert_eq!(v["data"][1]["errorCode"], 10000);
        let s = m.get("/_mock/oppo/stats").await;
        assert_eq!(s["accepted_calls"], 2, "one per call, not per message: {s}");

        m.post("/_mock/oppo/faults", &json!({"expire_tokens": true}))
            .await;
        let v = form(
            &m,
            "/server/v1/message/notification/unicast",
            &[("auth_token", &t), ("message", &one)],
        )
        .await;
        assert_eq!(v["code"], 11);
        let fresh = token(&m).await;
        m.post("/_mock/oppo/clock", &json!({"advance_secs": 86_400}))
            .await;
        let v = form(
            &m,
            "/server/v1/message/notification/unicast",
            &[("auth_token", &fresh), ("message", &one)],
        )
        .await;
        assert_eq!(v["code"], 11, "a day later the token is gone");
    }

    #[tokio::test]
    async fn marketing_quota_faults_and_the_daily_limit() {
        let m = TestMock::start().await;
        let t = token(&m).await;
        let send = |msg: Value| {
            let t = t.clone();
            let m = &m;
            async move {
                form(
                    m,
                    "/server/v1/message/notification/unicast",
                    &[("auth_token", &t), ("message", &msg.to_string())],
                )
                .await
            }
        };
        for _ in 0..3 {
            assert_eq!(send(message("CN_m", None)).await["code"], 0);
        }
        assert_eq!(m.get("/_mock/oppo/stats").await["dropped_quota"], 1);
        m.post(
            "/_mock/oppo/faults",
            &json!({"throttle_next": 1, "internal_next": 1, "quota_next": 1}),
        )
        .await;
        for code in [-2, -1, 33, 0] {
            assert_eq!(send(message("CN_m", Some("IM"))).await["code"], code);
        }
        let mut cfg = m.get("/_mock/oppo/config").await;
        cfg["app_daily_quota"] = json!(1);
        m.post("/_mock/oppo/config", &cfg).await;
        assert_eq!(send(message("CN_q", Some("IM"))).await["code"], 0);
        assert_eq!(send(message("CN_q", Some("IM"))).await["code"], 33);
    }
}
