//! Xiaomi MiPush mock (domestic server API v3), as described in
//! `shared/reference/china-providers.md` §4.0 and §4.3:
//! `POST /v3/message/regid` of `api.xmpush.xiaomi.com`.
//!
//! Why it behaves as it does: MiPush authenticates every call with the
//! app secret itself (`Authorization: key=<AppSecret>`, the word `key` in
//! lowercase), so there is no token to fetch or expire. The body is a
//! form; the target is a comma-separated `registration_id` list. Errors
//! come as HTTP 200 with `result: "error"`, a numeric `code` and a
//! `reason`; a call that reached some devices answers `result: "ok"` and
//! lists the unknown ones in `data.bad_regids` (several third-party
//! clients read that field). A call none of whose devices is known answers
//! `65003` [assumption: the reference gives 65003 for a device not found,
//! not its batch behaviour]. Per-device daily allowances (1 on the default
//! channel, 5 on a public one, none on a private one) accept the call and
//! drop the message, as Xiaomi reports them only in receipts (type 128);
//! the app's daily total answers `200001`.
//!
//! | code | when |
//! |---|---|
//! | `21301` | no `Authorization: key=...`, or the wrong secret |
//! | `22022` | `restricted_package_name` not one of the app's |
//! | `10016` / `10017` | a parameter missing / of a wrong value (lengths, count) |
//! | `27001` | `extra.channel_id` not a channel of the app [assumption] |
//! | `10027` | more calls a second than `calls_per_second`, or fault `throttle_next` |
//! | `10002` | fault `internal_next` |
//! | `200001` | the app's daily total, or fault `quota_next` |
//! | `65003` | every `registration_id` unknown |

use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;
use axum::response::Response;
use axum::routing::post;
use parking_lot::RwLock;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::MockState;
use crate::providers::json_200;
use crate::push_quota::DeviceLimits;
use crate::vendor_push::{Book, Injected, VendorMock, bump, chars, control_routes};

/// The app secret `herald mock` serves without configuration.
pub const DEFAULT_XIAOMI_APP_SECRET: &str = "mock-xiaomi-app-secret";
/// The app's package name.
pub const DEFAULT_XIAOMI_PACKAGE: &str = "com.herald.mock";
/// Most registration ids one call may carry [unverified: clients batch by
/// 1000; the reference gives no documented number].
pub const XIAOMI_MAX_REGIDS: usize = 1000;
/// `title` must be shorter than this many characters.
pub const XIAOMI_TITLE_CHARS: usize = 50;
/// `description` must be shorter than this many characters.
pub const XIAOMI_DESCRIPTION_CHARS: usize = 128;
/// `payload` must be shorter than this many bytes.
pub const XIAOMI_PAYLOAD_BYTES: usize = 4096;

const NO_AUTH: i64 = 21301;
const BAD_PACKAGE: i64 = 22022;
const MISSING: i64 = 10016;
const BAD_VALUE: i64 = 10017;
const BAD_CHANNEL: i64 = 27001;
const TOO_FREQUENT: i64 = 10027;
const BUSY: i64 = 10002;
const QUOTA: i64 = 200001;
const NO_DEVICE: i64 = 65003;

/// The app the mock serves and its limits; `GET|POST /_mock/xiaomi/config`.
/// Fields left out take their defaults; zero turns a limit off.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct XiaomiConfig {
    pub app_secret: String,
    /// Package names `restricted_package_name` may name.
    pub package_names: Vec<String>,
    /// Approved private channels (IM, orders, account...): no per-device
    /// allowance.
    pub private_channels: Vec<String>,
    /// Public channels: `public_per_device_per_day`.
    pub public_channels: Vec<String>,
    /// Messages without `extra.channel_id` delivered per device a day.
    pub default_per_device_per_day: u32,
    /// Public-channel messages delivered per device a day (Xiaomi: 5 to 8).
    pub public_per_device_per_day: u32,
    /// Device messages the app may send a Beijing day; past it `200001`.
    pub app_daily_quota: u64,
    /// Calls a second; past it `10027`.
    pub calls_per_second: u32,
}

impl Default for XiaomiConfig {
    fn default() -> Self {
        XiaomiConfig {
            app_secret: DEFAULT_XIAOMI_APP_SECRET.to_owned(),
            package_names: vec![DEFAULT_XIAOMI_PACKAGE.to_owned()],
            private_channels: vec!["herald_private".to_owned()],
            public_channels: vec!["herald_public".to_owned()],
            default_per_device_per_day: 1,
            public_per_device_per_day: 5,
            app_daily_quota: 0,
            calls_per_second: 1000,
        }
    }
}

impl XiaomiConfig {
    /// A secret and a package, or no client could ever send.
    pub fn validate(&self) -> Result<(), String> {
        if self.app_secret.is_empty() {
            return Err("app_secret is empty".to_owned());
        }
        if self.package_names.iter().all(|p| p.trim().is_empty()) {
            return Err("package_names holds no package name".to_owned());
        }
        Ok(())
    }
}

pub(crate) struct XiaomiState {
    live: RwLock<XiaomiConfig>,
    book: Book,
}

impl XiaomiState {
    pub(crate) fn new(cfg: XiaomiConfig) -> XiaomiState {
        XiaomiState {
            live: RwLock::new(cfg),
            book: Book::new(),
        }
    }

    pub(crate) fn reset(&self) {
        self.book.reset();
    }
}

impl VendorMock for XiaomiState {
    const NAME: &'static str = "xiaomi";
    type Config = XiaomiConfig;

    fn of(state: &MockState) -> &Self {
        &state.shared.xiaomi
    }

    fn book(&self) -> &Book {
        &self.book
    }

    fn config(&self) -> XiaomiConfig {
        self.live.read().clone()
    }

    fn set_config(&self, cfg: XiaomiConfig) -> Result<(), String> {
        cfg.validate()?;
        *self.live.write() = cfg;
        Ok(())
    }
}

pub(crate) fn routes() -> Router<MockState> {
    Router::new()
        .route("/v3/message/regid", post(send))
        .merge(control_routes::<XiaomiState>())
}

/// An error answer: `{result: "error", code, reason, description}`.
struct Refusal {
    code: i64,
    reason: String,
}

fn refuse(code: i64, reason: impl Into<String>) -> Refusal {
    Refusal {
        code,
        reason: reason.into(),
    }
}

async fn send(State(state): State<MockState>, headers: HeaderMap, body: Bytes) -> Response {
    let xm = &state.shared.xiaomi;
    let book = &xm.book;
    bump(&book.tally.calls, 1);
    let latency_ms = book.faults.lock().latency_ms;
    let now_ms = book.clock.now_ms();
    let seq = book.next_seq();
    let trace_id = format!("Xcm{now_ms:013}{seq:06}");
    let answer = match decide(xm, &headers, &body, now_ms, seq) {
        Ok(data) => {
            let info = format!(
                "Received push messages for {} REGID",
                data.get("accepted").and_then(Value::as_u64).unwrap_or(0)
            );
            let mut data = data;
            data.remove("accepted");
            json!({"result": "ok", "trace_id": trace_id, "code": 0, "data": data,
                   "description": "成功", "info": info})
        }
        Err(r) => {
            book.tally.refused.add(&r.code.to_string(), 1);
            tracing::debug!(code = r.code, reason = %r.reason, "xiaomi mock: send refused");
            json!({"result": "error", "trace_id": trace_id, "code": r.code,
                   "reason": r.reason, "description": r.reason})
        }
    };
    if latency_ms > 0 {
        tokio::time::sleep(Duration::from_millis(latency_ms)).await;
    }
    json_200(answer.to_string())
}

/// Everything about one call that does not wait; the `data` of a success
/// (with `accepted`, the count of known devices, for `info`).
fn decide(
    xm: &XiaomiState,
    headers: &HeaderMap,
    body: &[u8],
    now_ms: u64,
    seq: u64,
) -> Result<Map<String, Value>, Refusal> {
    let cfg = xm.live.read().clone();
    let book = &xm.book;
    // The scheme word is `key`, lowercase; `Key=` or `Bearer` are refused.
    let secret = headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().strip_prefix("key="));
    if !secret.is_some_and(|s| crate::sms::same(s, &cfg.app_secret)) {
        return Err(refuse(NO_AUTH, "认证失败 (authentication failed)"));
    }
    let form: Vec<(String, String)> = serde_urlencoded::from_bytes(body)
        .map_err(|e| refuse(BAD_VALUE, format!("the body is not a form: {e}")))?;
    let field = |k: &str| form.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());

    let packages = field("restricted_package_name")
        .ok_or_else(|| refuse(MISSING, "restricted_package_name is missing"))?;
    if !packages
        .split(',')
        .all(|p| cfg.package_names.iter().any(|c| c == p.trim()))
    {
        return Err(refuse(
            BAD_PACKAGE,
            format!("restricted_package_name {packages:?} is not a package of this app"),
        ));
    }
    let regids: Vec<String> = field("registration_id")
        .ok_or_else(|| refuse(MISSING, "registration_id is missing"))?
        .split(',')
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect();
    if regids.is_empty() || regids.len() > XIAOMI_MAX_REGIDS {
        return Err(refuse(
            BAD_VALUE,
            format!(
                "registration_id must hold 1 to {XIAOMI_MAX_REGIDS} ids, not {}",
                regids.len()
            ),
        ));
    }
    let pass_through = match field("pass_through").unwrap_or("0") {
        "0" => false,
        "1" => true,
        other => {
            return Err(refuse(
                BAD_VALUE,
                format!("pass_through {other:?} is not 0 or 1"),
            ));
        }
    };
    for (k, most) in [
        ("title", XIAOMI_TITLE_CHARS),
        ("description", XIAOMI_DESCRIPTION_CHARS),
    ] {
        match field(k) {
            None if !pass_through => {
                return Err(refuse(
                    MISSING,
                    format!("{k} is required for a notification"),
                ));
            }
            Some(v) if !pass_through && v.trim().is_empty() => {
                return Err(refuse(BAD_VALUE, format!("{k} must not be all blanks")));
            }
            Some(v) if chars(v) >= most => {
                return Err(refuse(
                    BAD_VALUE,
                    format!(
                        "{k} must be shorter than {most} characters, not {}",
                        chars(v)
                    ),
                ));
            }
            _ => {}
        }
    }
    match field("payload") {
        None if pass_through => {
            return Err(refuse(MISSING, "payload is required for pass_through=1"));
        }
        Some(p) if p.len() >= XIAOMI_PAYLOAD_BYTES => {
            return Err(refuse(
                BAD_VALUE,
                format!("payload must be shorter than {XIAOMI_PAYLOAD_BYTES} bytes"),
            ));
        }
        _ => {}
    }
    if let Some(ttl) = field("time_to_live")
        && ttl.parse::<u64>().is_err()
    {
        return Err(refuse(BAD_VALUE, "time_to_live must be milliseconds"));
    }
    let channel = field("extra.channel_id");
    let (marketing, per_day) = match channel {
        None => (true, cfg.default_per_device_per_day),
        Some(c) if cfg.private_channels.iter().any(|p| p == c) => (false, 0),
        Some(c) if cfg.public_channels.iter().any(|p| p == c) => {
            (true, cfg.public_per_device_per_day)
        }
        Some(c) => {
            return Err(refuse(
                BAD_CHANNEL,
                format!("extra.channel_id {c:?} is not a channel of this app"),
            ));
        }
    };

    if !book.take_call(now_ms, cfg.calls_per_second) {
        return Err(refuse(TOO_FREQUENT, "API调用太频繁 (calls too frequent)"));
    }
    match book.injected() {
        Some(Injected::Throttle) => {
            return Err(refuse(TOO_FREQUENT, "API调用太频繁 (calls too frequent)"));
        }
        Some(Injected::Internal) => return Err(refuse(BUSY, "系统繁忙 (busy)")),
        Some(Injected::Quota) => {
            return Err(refuse(QUOTA, "exceed quota, quota: 0, have acked: 0"));
        }
        None => {}
    }

    let (bad, good): (Vec<String>, Vec<String>) =
        regids.into_iter().partition(|r| book.is_invalid(r));
    bump(&book.tally.invalid_tokens, bad.len() as u64);
    if good.is_empty() {
        return Err(refuse(NO_DEVICE, "no registered device for these regids"));
    }
    if !book.take_app_day(now_ms, good.len() as u64, cfg.app_daily_quota) {
        return Err(refuse(
            QUOTA,
            format!(
                "exceed quota, quota: {}, have acked: {}",
                cfg.app_daily_quota, cfg.app_daily_quota
            ),
        ));
    }
    let message: Map<String, Value> = form
        .iter()
        .filter(|(k, _)| k != "registration_id")
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    let id = format!("slm{now_ms:013}{seq:07}");
    let limits = DeviceLimits {
        per_day: 0,
        marketing_per_day: per_day,
    };
    book.deliver(
        &good,
        Value::Object(message),
        &id,
        marketing,
        limits,
        now_ms,
    );
    bump(&book.tally.accepted_calls, 1);
    let mut data = Map::new();
    data.insert("id".into(), json!(id));
    if !bad.is_empty() {
        data.insert("bad_regids".into(), json!(bad.join(",")));
    }
    data.insert("accepted".into(), json!(good.len()));
    Ok(data)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::test_http::TestMock;

    async fn call(m: &TestMock, auth: Option<&str>, form: &[(&str, &str)]) -> Value {
        let mut req = m
            .http
            .post(m.url("/v3/message/regid"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(serde_urlencoded::to_string(form).unwrap());
        if let Some(a) = auth {
            req = req.header("authorization", a);
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), 200);
        resp.json().await.unwrap()
    }

    const KEY: &str = "key=mock-xiaomi-app-secret";

    fn form<'a>(regids: &'a str, title: &'a str) -> Vec<(&'a str, &'a str)> {
        vec![
            ("restricted_package_name", "com.herald.mock"),
            ("registration_id", regids),
            ("title", title),
            ("description", "opens at 10:00"),
            ("payload", "{\"k\":\"v\"}"),
            ("extra.channel_id", "herald_private"),
        ]
    }

    #[tokio::test]
    async fn a_send_is_checked_as_xiaomi_checks_it() {
        let m = TestMock::start().await;
        let ok = call(&m, Some(KEY), &form("r1,r2", "Coupon")).await;
        assert_eq!(ok["result"], "ok", "{ok}");
        assert_eq!(ok["code"], 0);
        assert!(ok["data"]["id"].as_str().unwrap().starts_with("slm"));
        assert!(ok["data"].get("bad_regids").is_none(), "{ok}");
        let got = m.get("/_mock/xiaomi/messages?token=r2").await;
        assert_eq!(got[0]["message"]["title"], "Coupon");
        assert_eq!(got[0]["message"]["extra.channel_id"], "herald_private");

        for auth in [None, Some("Key=mock-xiaomi-app-secret"), Some("key=wrong")] {
            let v = call(&m, auth, &form("r1", "t")).await;
            assert_eq!(
                (v["result"].as_str(), v["code"].as_i64()),
                (Some("error"), Some(21301)),
                "{auth:?}"
            );
        }
        let long = "x".repeat(50);
        let v = call(&m, Some(KEY), &form("r1", &long)).await;
        assert_eq!(v["code"], 10017, "{v}");
        let mut f = form("r1", "t");
        f[0].1 = "com.other";
        assert_eq!(call(&m, Some(KEY), &f).await["code"], 22022);
        let mut f = form("r1", "t");
        f[5].1 = "nope";
        assert_eq!(call(&m, Some(KEY), &f).await["code"], 27001);
        let many = vec!["r"; 1001].join(",");
        assert_eq!(call(&m, Some(KEY), &form(&many, "t")).await["code"], 10017);
    }

    #[tokio::test]
    async fn unknown_devices_faults_and_quotas_answer_xiaomis_codes() {
        let m = TestMock::start().await;
        m.post("/_mock/xiaomi/devices", &json!({"invalid": ["gone"]}))
            .await;
        let v = call(&m, Some(KEY), &form("ok-1,gone,invalid-2", "t")).await;
        assert_eq!(v["result"], "ok", "{v}");
        assert_eq!(v["data"]["bad_regids"], "gone,invalid-2");
        assert_eq!(call(&m, Some(KEY), &form("gone", "t")).await["code"], 65003);
        m.post("/_mock/xiaomi/devices", &json!({"valid": ["gone"]}))
            .await;
        assert_eq!(call(&m, Some(KEY), &form("gone", "t")).await["code"], 0);

        m.post(
            "/_mock/xiaomi/faults",
            &json!({"throttle_next": 1, "internal_next": 1, "quota_next": 1}),
        )
        .await;
        for code in [10027, 10002, 200001, 0] {
            assert_eq!(call(&m, Some(KEY), &form("a", "t")).await["code"], code);
        }

        // The default channel takes one message a device a day; the rest
        // are accepted and dropped.
        let mut f = form("d1", "t");
        f.pop();
        for _ in 0..3 {
            assert_eq!(call(&m, Some(KEY), &f).await["code"], 0);
        }
        let s = m.get("/_mock/xiaomi/stats").await;
        assert_eq!(s["dropped_quota"], 2, "{s}");
        m.post("/_mock/xiaomi/clock", &json!({"advance_secs": 86_400}))
            .await;
        call(&m, Some(KEY), &f).await;
        assert_eq!(m.get("/_mock/xiaomi/stats").await["dropped_quota"], 2);

        let mut cfg = m.get("/_mock/xiaomi/config").await;
        cfg["app_daily_quota"] = json!(1);
        m.post("/_mock/xiaomi/config", &cfg).await;
        assert_eq!(call(&m, Some(KEY), &form("q1", "t")).await["code"], 0);
        let v = call(&m, Some(KEY), &form("q2", "t")).await;
        assert_eq!(v["code"], 200001, "{v}");
        assert!(v["reason"].as_str().unwrap().contains("exceed quota"));
    }
}
