//! Aliyun SMS mock: Dysmsapi `SendSms` (2017-05-25), RPC style, at `POST /`
//! (told from Tencent's by its `x-acs-action` header) and at `POST /aliyun/`
//! for a channel whose `api_base` ends in `/aliyun`.
//!
//! What it checks, as Aliyun does (`shared/reference/china-providers.md` §1):
//!
//! - the V3 signature (`ACS3-HMAC-SHA256`): the `Authorization` header's
//!   credential must be a known AccessKeyId (`InvalidAccessKeyId.NotFound`,
//!   404), its signed headers must include `host` and every `x-acs-*` header
//!   sent, `x-acs-content-sha256` must be the body's hash, and the signature
//!   recomputed over the request as received must match
//!   (`SignatureDoesNotMatch`, 400); `x-acs-date` within 15 minutes of the
//!   mock clock (`InvalidTimeStamp.Expired`) and an unused
//!   `x-acs-signature-nonce` (`SignatureNonceUsed`);
//! - the business rules, answered with HTTP 200 and a `Code`: at most 1000
//!   numbers (`isv.MOBILE_COUNT_OVER_LIMIT`), a known sign name and template,
//!   `TemplateParam` a JSON object of strings holding every variable of the
//!   template, valid numbers (`isv.MOBILE_NUMBER_ILLEGAL`), and the
//!   per-number rolling limits (minute, hour, day; `isv.BUSINESS_LIMIT_CONTROL`
//!   naming the window). Any of them refuses the whole call, which has one
//!   `Code` and one `BizId`.
//!
//! Accepted numbers are recorded (`GET /_mock/aliyun_sms/messages`) with a
//! receipt each (`GET /_mock/aliyun_sms/receipts`), pushed as SmsReport
//! arrays to `callback_url` when one is set.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use axum::routing::post;
use parking_lot::RwLock;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::MockState;
use crate::providers::{self, Clock, MINUTE_MS, Ring, TimedDedup};
use crate::sms::{self, CodeTally, NumberWindows, PushCounters, SmsLimit};
use crate::sms_control::{self, SmsControl};

/// How many accepted numbers `GET /_mock/aliyun_sms/messages` can show.
pub const ALIYUN_SMS_RING_CAPACITY: usize = 20_000;
const MAX_NUMBERS: usize = 1000;
/// How far `x-acs-date` may be from the clock, and how long nonces are kept.
const SKEW_MS: u64 = 15 * MINUTE_MS;

/// How the Aliyun SMS mock starts out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AliyunSmsConfig {
    pub access_key_id: String,
    pub access_key_secret: String,
    /// Approved signatures.
    pub sign_names: Vec<String>,
    /// Approved templates: code -> variable names.
    pub templates: BTreeMap<String, Vec<String>>,
    /// Per-number limits (Aliyun's verification-code defaults: 1 a minute,
    /// 5 an hour, 10 a day, rolling).
    pub limits: Vec<SmsLimit>,
    /// Where SmsReport arrays are POSTed, if anywhere.
    pub callback_url: Option<String>,
    pub faults: AliyunSmsFaults,
}

impl Default for AliyunSmsConfig {
    fn default() -> Self {
        AliyunSmsConfig {
            access_key_id: "LTAImockaccesskeyid".to_owned(),
            access_key_secret: "mock-aliyun-access-key-secret".to_owned(),
            sign_names: vec!["Herald".to_owned()],
            templates: BTreeMap::from([
                ("SMS_100001".to_owned(), vec!["code".to_owned()]),
                (
                    "SMS_100002".to_owned(),
                    vec!["subject".to_owned(), "time".to_owned()],
                ),
            ]),
            limits: vec![
                SmsLimit::rolling(1, 60),
                SmsLimit::rolling(5, 3600),
                SmsLimit::rolling(10, 86_400),
            ],
            callback_url: None,
            faults: AliyunSmsFaults::default(),
        }
    }
}

/// Misbehaviour; `POST /_mock/aliyun_sms/faults` replaces all of it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AliyunSmsFaults {
    /// The next N sends answer `isp.SYSTEM_ERROR`.
    pub system_error_next: u32,
    /// The next N sends answer `Throttling.User` (HTTP 400).
    pub throttling_next: u32,
    /// Every send answers `isv.AMOUNT_NOT_ENOUGH`.
    pub amount_not_enough: bool,
    /// Numbers (digits with country code) that do not exist: a call holding
    /// one answers `isv.MOBILE_NUMBER_ILLEGAL`.
    pub invalid_numbers: Vec<String>,
    /// Numbers whose receipts say the carrier failed them.
    pub receipt_fail: Vec<String>,
    /// Delay added before every answer.
    pub latency_ms: u64,
}

/// `GET /_mock/aliyun_sms/stats`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AliyunSmsStats {
    /// `SendSms` calls that reached the mock, whatever their answer.
    pub send_calls: u64,
    /// Calls answered `OK`.
    pub accepted_calls: u64,
    /// Numbers of the calls answered `OK`.
    pub delivered: u64,
    /// Answers by `Code` other than `OK` (gateway errors included).
    pub errors: BTreeMap<String, u64>,
    pub receipts_pushed: u64,
    pub receipt_pushes_failed: u64,
}

/// One accepted number; `GET /_mock/aliyun_sms/messages`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AliyunSmsMessage {
    pub biz_id: String,
    /// As sent in `PhoneNumbers`.
    pub phone_number: String,
    pub sign_name: String,
    pub template_code: String,
    /// The `TemplateParam` object.
    pub params: Value,
    pub out_id: Option<String>,
    /// Mock clock (unix ms).
    pub at_ms: u64,
}

/// An error answer: code, message, HTTP status.
struct AliError {
    code: &'static str,
    message: String,
    status: StatusCode,
}

impl AliError {
    fn biz(code: &'static str, message: impl Into<String>) -> AliError {
        AliError {
            code,
            message: message.into(),
            status: StatusCode::OK,
        }
    }
    fn gateway(status: StatusCode, code: &'static str, message: impl Into<String>) -> AliError {
        AliError {
            code,
            message: message.into(),
            status,
        }
    }
}

struct Live {
    cfg: AliyunSmsConfig,
    invalid: std::collections::HashSet<String>,
    receipt_fail: std::collections::HashSet<String>,
}

pub(crate) struct AliyunSmsState {
    pub(crate) clock: Clock,
    live: RwLock<Arc<Live>>,
    system_error_next: AtomicU32,
    throttling_next: AtomicU32,
    nonces: TimedDedup<u8>,
    windows: NumberWindows,
    seq: AtomicU64,
    calls: AtomicU64,
    accepted_calls: AtomicU64,
    delivered: AtomicU64,
    errors: CodeTally,
    ring: Ring<AliyunSmsMessage>,
    receipts: Ring<Value>,
    pushes: Arc<PushCounters>,
    client: reqwest::Client,
}

impl AliyunSmsState {
    pub(crate) fn new(cfg: AliyunSmsConfig) -> AliyunSmsState {
        let s = AliyunSmsState {
            clock: Clock::system(),
            live: RwLock::new(Arc::new(Live {
                cfg: AliyunSmsConfig::default(),
                invalid: Default::default(),
                receipt_fail: Default::default(),
            })),
            system_error_next: AtomicU32::new(0),
            throttling_next: AtomicU32::new(0),
            nonces: TimedDedup::new(SKEW_MS * 2),
            windows: NumberWindows::new(),
            seq: AtomicU64::new(0),
            calls: AtomicU64::new(0),
            accepted_calls: AtomicU64::new(0),
            delivered: AtomicU64::new(0),
            errors: CodeTally::default(),
            ring: Ring::new(ALIYUN_SMS_RING_CAPACITY),
            receipts: Ring::new(ALIYUN_SMS_RING_CAPACITY),
            pushes: Arc::new(PushCounters::default()),
            client: sms::push_client(),
        };
        s.set_config(cfg);
        s
    }

    fn set_config(&self, cfg: AliyunSmsConfig) {
        self.system_error_next
            .store(cfg.faults.system_error_next, Ordering::Relaxed);
        self.throttling_next
            .store(cfg.faults.throttling_next, Ordering::Relaxed);
        let invalid = cfg.faults.invalid_numbers.iter().cloned().collect();
        let receipt_fail = cfg.faults.receipt_fail.iter().cloned().collect();
        *self.live.write() = Arc::new(Live {
            cfg,
            invalid,
            receipt_fail,
        });
    }

    pub(crate) fn config(&self) -> AliyunSmsConfig {
        let mut c = self.live.read().cfg.clone();
        c.faults.system_error_next = self.system_error_next.load(Ordering::Relaxed);
        c.faults.throttling_next = self.throttling_next.load(Ordering::Relaxed);
        c
    }

    pub(crate) fn faults(&self) -> AliyunSmsFaults {
        self.config().faults
    }

    pub(crate) fn set_faults(&self, f: AliyunSmsFaults) {
        let mut c = self.live.read().cfg.clone();
        c.faults = f;
        self.set_config(c);
    }

    pub(crate) fn stats(&self) -> AliyunSmsStats {
        AliyunSmsStats {
            send_calls: self.calls.load(Ordering::Relaxed),
            accepted_calls: self.accepted_calls.load(Ordering::Relaxed),
            delivered: self.delivered.load(Ordering::Relaxed),
            errors: self.errors.snapshot(),
            receipts_pushed: self.pushes.sent.load(Ordering::Relaxed),
            receipt_pushes_failed: self.pushes.failed.load(Ordering::Relaxed),
        }
    }

    pub(crate) fn messages(&self, limit: usize, phone: Option<&str>) -> Vec<AliyunSmsMessage> {
        let want = phone.and_then(sms::parse_number).map(|(d, _)| d);
        self.ring.snapshot(limit, |m| {
            want.as_deref()
                .is_none_or(|w| sms::parse_number(&m.phone_number).is_some_and(|(d, _)| d == w))
        })
    }

    pub(crate) fn receipts(&self, limit: usize) -> Vec<Value> {
        self.receipts.snapshot(limit, |_| true)
    }

    pub(crate) fn reset(&self) {
        for a in [&self.calls, &self.accepted_calls, &self.delivered] {
            a.store(0, Ordering::Relaxed);
        }
        self.errors.clear();
        self.ring.clear();
        self.receipts.clear();
        self.windows.clear();
        self.nonces.clear();
    }

    fn take(counter: &AtomicU32) -> bool {
        counter
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_ok()
    }

    /// Checks the V3 signature of a `POST` as received.
    fn verify(
        &self,
        live: &Live,
        path: &str,
        query: &[(String, String)],
        headers: &HeaderMap,
        body: &[u8],
        now: u64,
    ) -> Result<(), AliError> {
        let bad = |code, msg: &str| AliError::gateway(StatusCode::BAD_REQUEST, code, msg);
        let auth = header(headers, "authorization").ok_or_else(|| {
            bad(
                "MissingAuthorization",
                "Authorization is mandatory for this action.",
            )
        })?;
        let rest = auth.strip_prefix("ACS3-HMAC-SHA256 ").ok_or_else(|| {
            bad(
                "InvalidAuthorization",
                "The Authorization header must use ACS3-HMAC-SHA256.",
            )
        })?;
        let mut credential = None;
        let mut signed = None;
        let mut signature = None;
        for part in rest.split(',') {
            match part.trim().split_once('=') {
                Some(("Credential", v)) => credential = Some(v),
                Some(("SignedHeaders", v)) => signed = Some(v),
                Some(("Signature", v)) => signature = Some(v),
                _ => {}
            }
        }
        let (Some(credential), Some(signed), Some(signature)) = (credential, signed, signature)
        else {
            return Err(bad(
                "InvalidAuthorization",
                "The Authorization header lacks Credential, SignedHeaders or Signature.",
            ));
        };
        if credential != live.cfg.access_key_id {
            return Err(AliError::gateway(
                StatusCode::NOT_FOUND,
                "InvalidAccessKeyId.NotFound",
                "Specified access key is not found.",
            ));
        }
        let signed: Vec<&str> = signed.split(';').collect();
        let sent_acs = headers
            .keys()
            .map(|k| k.as_str())
            .filter(|k| k.starts_with("x-acs-"));
        if !signed.contains(&"host") {
            return Err(bad(
                "SignatureDoesNotMatch",
                "host must be a signed header.",
            ));
        }
        for k in sent_acs {
            if !signed.contains(&k) {
                return Err(bad(
                    "SignatureDoesNotMatch",
                    &format!("{k} must be a signed header."),
                ));
            }
        }
        let payload = sms::sha256_hex(body);
        if header(headers, "x-acs-content-sha256") != Some(payload.as_str()) {
            return Err(bad(
                "SignatureDoesNotMatch",
                "x-acs-content-sha256 is not the hash of the body.",
            ));
        }
        let date = header(headers, "x-acs-date").unwrap_or("");
        let at = jiff::civil::DateTime::strptime("%Y-%m-%dT%H:%M:%SZ", date)
            .and_then(|t| t.to_zoned(jiff::tz::TimeZone::UTC))
            .map(|t| t.timestamp().as_millisecond() as u64)
            .map_err(|_| {
                bad(
                    "InvalidTimeStamp.Format",
                    "x-acs-date is not yyyy-MM-ddTHH:mm:ssZ.",
                )
            })?;
        if at.abs_diff(now) > SKEW_MS {
            return Err(bad(
                "InvalidTimeStamp.Expired",
                "Specified time stamp or date value is expired.",
            ));
        }
        let nonce = header(headers, "x-acs-signature-nonce").unwrap_or("");
        if nonce.is_empty() {
            return Err(bad(
                "MissingSignatureNonce",
                "x-acs-signature-nonce is mandatory.",
            ));
        }
        // Recompute over the request as received.
        let mut sorted: Vec<(String, String)> = query
            .iter()
            .map(|(k, v)| (sms::encode(k), sms::encode(v)))
            .collect();
        sorted.sort();
        let canonical_query = sorted
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("&");
        let mut canonical_headers = String::new();
        let mut names: Vec<&str> = signed.clone();
        names.sort_unstable();
        for name in &names {
            let mut values: Vec<&str> = headers
                .get_all(*name)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .map(str::trim)
                .collect();
            values.sort_unstable();
            canonical_headers.push_str(&format!("{name}:{}\n", values.join(",")));
        }
        let request = format!(
            "POST\n{path}\n{canonical_query}\n{canonical_headers}\n{}\n{payload}",
            names.join(";")
        );
        let to_sign = format!("ACS3-HMAC-SHA256\n{}", sms::sha256_hex(request.as_bytes()));
        let want = hex::encode(sms::hmac_sha256(
            live.cfg.access_key_secret.as_bytes(),
            to_sign.as_bytes(),
        ));
        if !sms::same(&want, signature) {
            return Err(bad(
                "SignatureDoesNotMatch",
                "Specified signature does not match our calculation.",
            ));
        }
        // Only a request that proved itself uses up its nonce.
        let key = u128::from(sms::key(&[credential, nonce]));
        if self
            .nonces
            .check_or_insert(key, now, SKEW_MS * 2, || Some(0))
            .is_some()
        {
            return Err(bad(
                "SignatureNonceUsed",
                "Specified signature nonce was used already.",
            ));
        }
        Ok(())
    }

    /// The business checks and the send, once the request is authentic.
    fn send(
        &self,
        live: &Live,
        params: &HashMap<String, String>,
        now: u64,
    ) -> Result<String, AliError> {
        if Self::take(&self.throttling_next) {
            return Err(AliError::gateway(
                StatusCode::BAD_REQUEST,
                "Throttling.User",
                "Request was denied due to user flow control.",
            ));
        }
        if Self::take(&self.system_error_next) {
            return Err(AliError::biz(
                "isp.SYSTEM_ERROR",
                "系统出现错误，请重新调用",
            ));
        }
        let get = |k: &str| params.get(k).map(String::as_str).filter(|v| !v.is_empty());
        let numbers_text = get("PhoneNumbers").ok_or_else(|| {
            AliError::biz(
                "MissingPhoneNumbers",
                "PhoneNumbers is mandatory for this action.",
            )
        })?;
        let numbers: Vec<&str> = numbers_text.split(',').map(str::trim).collect();
        if numbers.len() > MAX_NUMBERS {
            return Err(AliError::biz(
                "isv.MOBILE_COUNT_OVER_LIMIT",
                format!("手机号码数量超过限制，最多{MAX_NUMBERS}个"),
            ));
        }
        let sign = get("SignName").ok_or_else(|| {
            AliError::biz("MissingSignName", "SignName is mandatory for this action.")
        })?;
        if !live.cfg.sign_names.iter().any(|s| s == sign) {
            return Err(AliError::biz(
                "isv.SMS_SIGNATURE_ILLEGAL",
                "该账号下找不到对应签名",
            ));
        }
        let template = get("TemplateCode").ok_or_else(|| {
            AliError::biz(
                "MissingTemplateCode",
                "TemplateCode is mandatory for this action.",
            )
        })?;
        let Some(vars) = live.cfg.templates.get(template) else {
            return Err(AliError::biz(
                "isv.SMS_TEMPLATE_ILLEGAL",
                "该账号下找不到对应模板",
            ));
        };
        let param_obj = match get("TemplateParam") {
            None => serde_json::Map::new(),
            Some(t) => match serde_json::from_str::<Value>(t) {
                Ok(Value::Object(m)) if m.values().all(Value::is_string) => m,
                _ => {
                    return Err(AliError::biz(
                        "isv.INVALID_JSON_PARAM",
                        "JSON参数不合法，只接受字符串值",
                    ));
                }
            },
        };
        if let Some(missing) = vars.iter().find(|v| !param_obj.contains_key(*v)) {
            return Err(AliError::biz(
                "isv.TEMPLATE_MISSING_PARAMETERS",
                format!("模板缺少变量: {missing}"),
            ));
        }
        let mut parsed = Vec::with_capacity(numbers.len());
        for n in &numbers {
            match sms::parse_number(n) {
                Some((digits, _)) if !live.invalid.contains(&digits) => parsed.push(digits),
                _ => {
                    return Err(AliError::biz(
                        "isv.MOBILE_NUMBER_ILLEGAL",
                        format!("非法手机号: {n}"),
                    ));
                }
            }
        }
        if live.cfg.faults.amount_not_enough {
            return Err(AliError::biz("isv.AMOUNT_NOT_ENOUGH", "账户余额不足"));
        }
        let limits = &live.cfg.limits;
        for d in &parsed {
            if let Some(l) = self.windows.over(sms::key(&[sign, d]), limits, now) {
                return Err(AliError::biz(
                    "isv.BUSINESS_LIMIT_CONTROL",
                    format!("触发{}流控Permits:{}", window_name(&l), l.max),
                ));
            }
        }
        for d in &parsed {
            self.windows.record(sms::key(&[sign, d]), limits, now);
        }
        let seq = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
        let biz_id = format!("{}{seq:08}^0", now / 1000);
        let params_value = Value::Object(param_obj);
        let out_id = get("OutId").map(str::to_owned);
        let mut receipts = Vec::with_capacity(numbers.len());
        for (n, d) in numbers.iter().zip(&parsed) {
            self.ring.push(AliyunSmsMessage {
                biz_id: biz_id.clone(),
                phone_number: (*n).to_owned(),
                sign_name: sign.to_owned(),
                template_code: template.to_owned(),
                params: params_value.clone(),
                out_id: out_id.clone(),
                at_ms: now,
            });
            let ok = !live.receipt_fail.contains(d);
            let receipt = serde_json::json!({
                "phone_number": n,
                "send_time": sms::beijing_text(now),
                "report_time": sms::beijing_text(now + 1000),
                "success": ok,
                "err_code": if ok { "DELIVERED" } else { "MK:0001" },
                "err_msg": if ok { "用户接收成功" } else { "carrier failed" },
                "sms_size": "1",
                "biz_id": biz_id,
                "out_id": out_id.clone().unwrap_or_default(),
            });
            self.receipts.push(receipt.clone());
            receipts.push(receipt);
        }
        self.accepted_calls.fetch_add(1, Ordering::Relaxed);
        self.delivered
            .fetch_add(numbers.len() as u64, Ordering::Relaxed);
        if let Some(url) = &live.cfg.callback_url {
            sms::push_receipts(&self.client, url, receipts, 100, &self.pushes);
        }
        Ok(biz_id)
    }
}

fn window_name(l: &SmsLimit) -> &'static str {
    if l.calendar_day || l.window_secs >= 86_400 {
        "天级"
    } else if l.window_secs >= 3600 {
        "小时级"
    } else {
        "分钟级"
    }
}

fn header<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

fn request_id(seq: u64) -> String {
    let n = providers::mix64(seq);
    format!(
        "{:08X}-{:04X}-{:04X}-{:04X}-{:012X}",
        n as u32,
        (n >> 32) as u16,
        (n >> 48) as u16,
        (n >> 8) as u16,
        n >> 16 & 0xFFFF_FFFF_FFFF
    )
}

fn answer(status: StatusCode, v: Value) -> Response {
    let mut resp = Response::new(Body::from(v.to_string()));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("application/json;charset=utf-8"),
    );
    resp
}

/// `SendSms`, whichever path it came to.
pub(crate) async fn handle(
    state: &MockState,
    uri: &Uri,
    headers: &HeaderMap,
    body: &Bytes,
) -> Response {
    let st = &state.shared.aliyun_sms;
    let now = st.clock.now_ms();
    let live = st.live.read().clone();
    st.calls.fetch_add(1, Ordering::Relaxed);
    let rid = request_id(st.calls.load(Ordering::Relaxed));
    let query: Vec<(String, String)> =
        serde_urlencoded::from_str(uri.query().unwrap_or("")).unwrap_or_default();
    let result = st
        .verify(&live, uri.path(), &query, headers, body, now)
        .and_then(|()| {
            if header(headers, "x-acs-action") != Some("SendSms")
                || header(headers, "x-acs-version") != Some("2017-05-25")
            {
                return Err(AliError::gateway(
                    StatusCode::NOT_FOUND,
                    "InvalidAction.NotFound",
                    "Specified api is not found, please check your url and method.",
                ));
            }
            let mut params: HashMap<String, String> = query.iter().cloned().collect();
            let form = header(headers, "content-type")
                .is_some_and(|c| c.starts_with("application/x-www-form-urlencoded"));
            if form {
                let pairs: Vec<(String, String)> =
                    serde_urlencoded::from_bytes(body).unwrap_or_default();
                params.extend(pairs);
            }
            st.send(&live, &params, now)
        });
    let resp = match result {
        Ok(biz_id) => answer(
            StatusCode::OK,
            serde_json::json!({"Code": "OK", "Message": "OK", "BizId": biz_id, "RequestId": rid}),
        ),
        Err(e) => {
            st.errors.add(e.code, 1);
            tracing::debug!(code = e.code, message = %e.message, "aliyun sms mock refused");
            answer(
                e.status,
                serde_json::json!({"Code": e.code, "Message": e.message, "RequestId": rid}),
            )
        }
    };
    let ms = live.cfg.faults.latency_ms;
    if ms > 0 {
        pause(ms).await;
    }
    resp
}

pub(crate) fn routes() -> Router<MockState> {
    Router::new()
        .route("/aliyun", post(send_route))
        .route("/aliyun/", post(send_route))
        .merge(sms_control::routes::<AliyunSmsState>())
}

async fn send_route(
    State(state): State<MockState>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    handle(&state, &uri, &headers, &body).await
}

impl SmsControl for AliyunSmsState {
    type Config = AliyunSmsConfig;
    type Faults = AliyunSmsFaults;
    const NAME: &'static str = "aliyun_sms";
    const RING: usize = ALIYUN_SMS_RING_CAPACITY;
    fn of(state: &MockState) -> &Self {
        &state.shared.aliyun_sms
    }
    fn config(&self) -> AliyunSmsConfig {
        AliyunSmsState::config(self)
    }
    fn set_config(&self, cfg: AliyunSmsConfig) {
        AliyunSmsState::set_config(self, cfg)
    }
    fn faults(&self) -> AliyunSmsFaults {
        AliyunSmsState::faults(self)
    }
    fn set_faults(&self, faults: AliyunSmsFaults) {
        AliyunSmsState::set_faults(self, faults)
    }
    fn stats(&self) -> Value {
        serde_json::to_value(AliyunSmsState::stats(self)).unwrap_or(Value::Null)
    }
    fn messages(&self, limit: usize, phone: Option<&str>) -> Value {
        serde_json::to_value(AliyunSmsState::messages(self, limit, phone)).unwrap_or(Value::Null)
    }
    fn receipts(&self, limit: usize, _phone: Option<&str>) -> Value {
        Value::Array(AliyunSmsState::receipts(self, limit))
    }
    fn clock(&self) -> &Clock {
        &self.clock
    }
}

/// Waits `ms` (fault latency).
async fn pause(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}
