//! Tencent Cloud SMS mock: `SendSms` (2021-01-11) at `POST /` (told from
//! Aliyun's by its `X-TC-Action` header) and at `POST /tencent/` for a
//! channel whose `api_base` ends in `/tencent`.
//!
//! What it checks, as Tencent does (`shared/reference/china-providers.md` §2),
//! every refusal an HTTP 200 with `Response.Error`:
//!
//! - `TC3-HMAC-SHA256`: a known SecretId (`AuthFailure.SecretIdNotFound`),
//!   `X-TC-Timestamp` within 5 minutes of the mock clock
//!   (`AuthFailure.SignatureExpire`), a credential scope of that UTC date and
//!   service `sms`, `content-type` and `host` among the signed headers, and
//!   the signature recomputed over the request as received
//!   (`AuthFailure.SignatureFailure`);
//! - the call: `X-TC-Action: SendSms`, version, region, the app id
//!   (`UnauthorizedOperation.SmsSdkAppIdVerifyFail`), at most 200 numbers
//!   (`LimitExceeded.PhoneNumberCountLimit`), not mainland and international
//!   mixed, a known sign name and template, and as many string parameters as
//!   the template has (`InvalidParameterValue.TemplateParameterFormatError`);
//! - each number on its own, in `SendStatusSet`: valid
//!   (`InvalidParameterValue.IncorrectPhoneNumber`), not blacklisted, the
//!   same content at most once in 30 s and at most 10 a Beijing day by
//!   default (`LimitExceeded.PhoneNumberThirtySecondLimit`,
//!   `LimitExceeded.PhoneNumberDailyLimit`).
//!
//! Accepted numbers are recorded with a `SerialNo`; their receipts
//! (`GET /_mock/tencent_sms/receipts`, `sid` = `SerialNo`) are pushed in
//! arrays of up to 100 to `callback_url` when one is set.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Uri};
use axum::response::Response;
use axum::routing::post;
use parking_lot::RwLock;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::MockState;
use crate::providers::{self, Clock, MINUTE_MS, Ring};
use crate::sms::{self, CodeTally, NumberWindows, PushCounters, SmsLimit};
use crate::sms_control::{self, SmsControl};

/// How many accepted numbers `GET /_mock/tencent_sms/messages` can show.
pub const TENCENT_SMS_RING_CAPACITY: usize = 20_000;
const MAX_NUMBERS: usize = 200;
const SKEW_MS: u64 = 5 * MINUTE_MS;

/// How the Tencent SMS mock starts out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TencentSmsConfig {
    pub secret_id: String,
    pub secret_key: String,
    pub sms_sdk_app_id: String,
    /// Approved signature texts.
    pub sign_names: Vec<String>,
    /// Approved templates: id -> number of variables.
    pub templates: BTreeMap<String, usize>,
    /// The same content to one number (default once in 30 s).
    pub same_content: Vec<SmsLimit>,
    /// Any content to one number (default 10 a Beijing calendar day).
    pub per_number: Vec<SmsLimit>,
    /// Where receipt arrays are POSTed, if anywhere.
    pub callback_url: Option<String>,
    pub faults: TencentSmsFaults,
}

impl Default for TencentSmsConfig {
    fn default() -> Self {
        TencentSmsConfig {
            secret_id: "AKIDmocksecretid".to_owned(),
            secret_key: "mock-tencent-secret-key".to_owned(),
            sms_sdk_app_id: "1400000001".to_owned(),
            sign_names: vec!["Herald".to_owned()],
            templates: BTreeMap::from([("100001".to_owned(), 1), ("100002".to_owned(), 2)]),
            same_content: vec![SmsLimit::rolling(1, 30)],
            per_number: vec![SmsLimit::daily(10)],
            callback_url: None,
            faults: TencentSmsFaults::default(),
        }
    }
}

/// Misbehaviour; `POST /_mock/tencent_sms/faults` replaces all of it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TencentSmsFaults {
    /// The next N calls answer `InternalError.Timeout` for the whole call.
    pub internal_error_next: u32,
    /// The next N calls answer `RequestLimitExceeded`.
    pub request_limit_next: u32,
    /// Every call answers `FailedOperation.InsufficientBalanceInSmsPackage`.
    pub insufficient_balance: bool,
    /// Numbers (digits with country code) answered
    /// `FailedOperation.PhoneNumberInBlacklist`.
    pub blacklist: Vec<String>,
    /// Numbers whose receipts say `FAIL`.
    pub receipt_fail: Vec<String>,
    /// Delay added before every answer.
    pub latency_ms: u64,
}

/// `GET /_mock/tencent_sms/stats`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TencentSmsStats {
    /// `SendSms` calls that reached the mock, whatever their answer.
    pub send_calls: u64,
    /// Numbers answered `Ok`.
    pub delivered: u64,
    /// Request-level errors and per-number refusals, by code.
    pub errors: BTreeMap<String, u64>,
    /// The largest `PhoneNumberSet` of an answered call.
    pub max_numbers_per_call: u64,
    pub receipts_pushed: u64,
    pub receipt_pushes_failed: u64,
}

/// One accepted number; `GET /_mock/tencent_sms/messages`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TencentSmsMessage {
    pub serial_no: String,
    /// E.164, as answered.
    pub phone_number: String,
    pub sign_name: String,
    pub template_id: String,
    pub params: Vec<String>,
    /// Mock clock (unix ms).
    pub at_ms: u64,
    /// The receipt's verdict.
    pub receipt_ok: bool,
}

impl TencentSmsMessage {
    fn receipt(&self) -> Value {
        let (nation, mobile) = match sms::parse_number(&self.phone_number) {
            Some((d, true)) => ("86".to_owned(), d[2..].to_owned()),
            Some((d, false)) => (String::new(), d),
            None => (String::new(), self.phone_number.clone()),
        };
        serde_json::json!({
            "user_receive_time": sms::beijing_text(self.at_ms + 1000),
            "nationcode": nation,
            "mobile": mobile,
            "report_status": if self.receipt_ok { "SUCCESS" } else { "FAIL" },
            "errmsg": if self.receipt_ok { "DELIVRD" } else { "MK:0001" },
            "description": if self.receipt_ok { "用户短信送达成功" } else { "carrier failed" },
            "sid": self.serial_no,
        })
    }
}

/// One number's entry in `SendStatusSet`.
#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct SendStatus {
    serial_no: String,
    phone_number: String,
    fee: u32,
    session_context: &'static str,
    code: &'static str,
    message: &'static str,
    iso_code: &'static str,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
struct SendBody {
    phone_number_set: Option<Vec<String>>,
    sms_sdk_app_id: Option<String>,
    sign_name: Option<String>,
    template_id: Option<String>,
    template_param_set: Option<Vec<Value>>,
    session_context: Option<String>,
    extend_code: Option<String>,
    sender_id: Option<String>,
}

struct TcError {
    code: &'static str,
    message: String,
}

fn tc(code: &'static str, message: impl Into<String>) -> TcError {
    TcError {
        code,
        message: message.into(),
    }
}

struct Live {
    cfg: TencentSmsConfig,
    blacklist: HashSet<String>,
    receipt_fail: HashSet<String>,
}

pub(crate) struct TencentSmsState {
    pub(crate) clock: Clock,
    live: RwLock<Arc<Live>>,
    internal_error_next: AtomicU32,
    request_limit_next: AtomicU32,
    windows: NumberWindows,
    seq: AtomicU64,
    calls: AtomicU64,
    delivered: AtomicU64,
    max_numbers: AtomicU64,
    errors: CodeTally,
    ring: Ring<TencentSmsMessage>,
    pushes: Arc<PushCounters>,
    client: reqwest::Client,
}

impl TencentSmsState {
    pub(crate) fn new(cfg: TencentSmsConfig) -> TencentSmsState {
        let s = TencentSmsState {
            clock: Clock::system(),
            live: RwLock::new(Arc::new(Live {
                cfg: TencentSmsConfig::default(),
                blacklist: HashSet::new(),
                receipt_fail: HashSet::new(),
            })),
            internal_error_next: AtomicU32::new(0),
            request_limit_next: AtomicU32::new(0),
            windows: NumberWindows::new(),
            seq: AtomicU64::new(0),
            calls: AtomicU64::new(0),
            delivered: AtomicU64::new(0),
            max_numbers: AtomicU64::new(0),
            errors: CodeTally::default(),
            ring: Ring::new(TENCENT_SMS_RING_CAPACITY),
            pushes: Arc::new(PushCounters::default()),
            client: sms::push_client(),
        };
        s.set_config(cfg);
        s
    }

    fn set_config(&self, cfg: TencentSmsConfig) {
        self.internal_error_next
            .store(cfg.faults.internal_error_next, Ordering::Relaxed);
        self.request_limit_next
            .store(cfg.faults.request_limit_next, Ordering::Relaxed);
        let blacklist = cfg.faults.blacklist.iter().cloned().collect();
        let receipt_fail = cfg.faults.receipt_fail.iter().cloned().collect();
        *self.live.write() = Arc::new(Live {
            cfg,
            blacklist,
            receipt_fail,
        });
    }

    pub(crate) fn config(&self) -> TencentSmsConfig {
        let mut c = self.live.read().cfg.clone();
        c.faults.internal_error_next = self.internal_error_next.load(Ordering::Relaxed);
        c.faults.request_limit_next = self.request_limit_next.load(Ordering::Relaxed);
        c
    }

    pub(crate) fn faults(&self) -> TencentSmsFaults {
        self.config().faults
    }

    pub(crate) fn set_faults(&self, f: TencentSmsFaults) {
        let mut c = self.live.read().cfg.clone();
        c.faults = f;
        self.set_config(c);
    }

    pub(crate) fn stats(&self) -> TencentSmsStats {
        TencentSmsStats {
            send_calls: self.calls.load(Ordering::Relaxed),
            delivered: self.delivered.load(Ordering::Relaxed),
            errors: self.errors.snapshot(),
            max_numbers_per_call: self.max_numbers.load(Ordering::Relaxed),
            receipts_pushed: self.pushes.sent.load(Ordering::Relaxed),
            receipt_pushes_failed: self.pushes.failed.load(Ordering::Relaxed),
        }
    }

    pub(crate) fn messages(&self, limit: usize, phone: Option<&str>) -> Vec<TencentSmsMessage> {
        let want = phone.and_then(sms::parse_number).map(|(d, _)| d);
        self.ring.snapshot(limit, |m| {
            want.as_deref()
                .is_none_or(|w| sms::parse_number(&m.phone_number).is_some_and(|(d, _)| d == w))
        })
    }

    pub(crate) fn reset(&self) {
        for a in [&self.calls, &self.delivered, &self.max_numbers] {
            a.store(0, Ordering::Relaxed);
        }
        self.errors.clear();
        self.ring.clear();
        self.windows.clear();
    }

    fn take(counter: &AtomicU32) -> bool {
        counter
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_ok()
    }

    /// Checks `TC3-HMAC-SHA256` over the request as received.
    fn verify(
        &self,
        live: &Live,
        uri: &Uri,
        headers: &HeaderMap,
        body: &[u8],
        now: u64,
    ) -> Result<(), TcError> {
        let fail = |m: &str| tc("AuthFailure.SignatureFailure", m);
        let auth = header(headers, "authorization").ok_or_else(|| {
            tc(
                "AuthFailure.SignatureFailure",
                "The Authorization header is missing.",
            )
        })?;
        let rest = auth.strip_prefix("TC3-HMAC-SHA256 ").ok_or_else(|| {
            tc(
                "AuthFailure.InvalidAuthorization",
                "Authorization must be TC3-HMAC-SHA256.",
            )
        })?;
        let (mut credential, mut signed, mut signature) = (None, None, None);
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
            return Err(tc(
                "AuthFailure.InvalidAuthorization",
                "Authorization lacks Credential, SignedHeaders or Signature.",
            ));
        };
        let mut scope = credential.splitn(4, '/');
        let (id, date, service, term) = (
            scope.next().unwrap_or(""),
            scope.next().unwrap_or(""),
            scope.next().unwrap_or(""),
            scope.next().unwrap_or(""),
        );
        if id != live.cfg.secret_id {
            return Err(tc(
                "AuthFailure.SecretIdNotFound",
                "The SecretId is not found.",
            ));
        }
        let ts: i64 = header(headers, "x-tc-timestamp")
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| {
                tc(
                    "MissingParameter",
                    "X-TC-Timestamp is missing or not a number.",
                )
            })?;
        if ts.saturating_mul(1000).abs_diff(now as i64) > SKEW_MS {
            return Err(tc(
                "AuthFailure.SignatureExpire",
                "The request timestamp is more than 5 minutes from the server time.",
            ));
        }
        let want_date = jiff::Timestamp::from_second(ts)
            .map(|t| t.strftime("%Y-%m-%d").to_string())
            .unwrap_or_default();
        if date != want_date || service != "sms" || term != "tc3_request" {
            return Err(fail(
                "The credential scope does not match the timestamp's date and the service.",
            ));
        }
        let names: Vec<&str> = signed.split(';').collect();
        if !names.contains(&"content-type") || !names.contains(&"host") {
            return Err(fail("content-type and host must be signed."));
        }
        let mut sorted = names.clone();
        sorted.sort_unstable();
        let mut canonical_headers = String::new();
        for n in &sorted {
            let v = header(headers, n).unwrap_or("").trim().to_ascii_lowercase();
            canonical_headers.push_str(&format!("{n}:{v}\n"));
        }
        let request = format!(
            "POST\n{}\n{}\n{canonical_headers}\n{}\n{}",
            uri.path(),
            uri.query().unwrap_or(""),
            sorted.join(";"),
            sms::sha256_hex(body)
        );
        let to_sign = format!(
            "TC3-HMAC-SHA256\n{ts}\n{date}/sms/tc3_request\n{}",
            sms::sha256_hex(request.as_bytes())
        );
        let k_date = sms::hmac_sha256(
            format!("TC3{}", live.cfg.secret_key).as_bytes(),
            date.as_bytes(),
        );
        let k_service = sms::hmac_sha256(&k_date, b"sms");
        let k_signing = sms::hmac_sha256(&k_service, b"tc3_request");
        let want = hex::encode(sms::hmac_sha256(&k_signing, to_sign.as_bytes()));
        if !sms::same(&want, signature) {
            return Err(fail(
                "The provided credentials could not be validated. Please check your signature is correct.",
            ));
        }
        Ok(())
    }

    /// The call, once it is authentic: its `SendStatusSet`.
    fn send(
        &self,
        live: &Live,
        headers: &HeaderMap,
        body: &[u8],
        now: u64,
    ) -> Result<Vec<SendStatus>, TcError> {
        if header(headers, "x-tc-action") != Some("SendSms") {
            return Err(tc("InvalidAction", "The action is not SendSms."));
        }
        if header(headers, "x-tc-version") != Some("2021-01-11") {
            return Err(tc("NoSuchVersion", "The version is not 2021-01-11."));
        }
        if header(headers, "x-tc-region").is_none_or(str::is_empty) {
            return Err(tc("MissingParameter", "The X-TC-Region header is missing."));
        }
        if Self::take(&self.request_limit_next) {
            return Err(tc(
                "RequestLimitExceeded",
                "Your current request times equals to `3000` in a second.",
            ));
        }
        if Self::take(&self.internal_error_next) {
            return Err(tc("InternalError.Timeout", "Request timed out."));
        }
        let req: SendBody = serde_json::from_slice(body).map_err(|e| {
            tc(
                "InvalidParameter",
                format!("The body is not a SendSms request: {e}"),
            )
        })?;
        let _ = (&req.session_context, &req.extend_code, &req.sender_id);
        if req.sms_sdk_app_id.as_deref() != Some(live.cfg.sms_sdk_app_id.as_str()) {
            return Err(tc(
                "UnauthorizedOperation.SmsSdkAppIdVerifyFail",
                "SmsSdkAppId verification failed.",
            ));
        }
        let numbers = req.phone_number_set.unwrap_or_default();
        if numbers.is_empty() {
            return Err(tc("MissingParameter", "PhoneNumberSet is missing."));
        }
        if numbers.len() > MAX_NUMBERS {
            return Err(tc(
                "LimitExceeded.PhoneNumberCountLimit",
                format!("PhoneNumberSet holds more than {MAX_NUMBERS} numbers."),
            ));
        }
        let sign = req.sign_name.unwrap_or_default();
        if !live.cfg.sign_names.contains(&sign) {
            return Err(tc(
                "FailedOperation.SignatureIncorrectOrUnapproved",
                "The signature is not approved.",
            ));
        }
        let template = req.template_id.unwrap_or_default();
        let Some(vars) = live.cfg.templates.get(&template) else {
            return Err(tc(
                "FailedOperation.TemplateIncorrectOrUnapproved",
                "The template is not approved.",
            ));
        };
        let raw_params = req.template_param_set.unwrap_or_default();
        let params: Vec<String> = raw_params
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect();
        if params.len() != raw_params.len() || params.len() != *vars {
            return Err(tc(
                "InvalidParameterValue.TemplateParameterFormatError",
                format!(
                    "The template takes {vars} string parameters; got {}.",
                    raw_params.len()
                ),
            ));
        }
        let parsed: Vec<Option<(String, bool)>> =
            numbers.iter().map(|n| sms::parse_number(n)).collect();
        let domestic = parsed.iter().flatten().filter(|(_, d)| *d).count();
        let valid = parsed.iter().flatten().count();
        if domestic > 0 && domestic < valid {
            return Err(tc(
                "UnsupportedOperation.ContainDomesticAndInternationalPhoneNumber",
                "Mainland and international numbers cannot be sent in one call.",
            ));
        }
        if live.cfg.faults.insufficient_balance {
            return Err(tc(
                "FailedOperation.InsufficientBalanceInSmsPackage",
                "The SMS package is used up.",
            ));
        }
        self.max_numbers
            .fetch_max(numbers.len() as u64, Ordering::Relaxed);
        let content = format!("{sign}\u{1}{template}\u{1}{}", params.join("\u{1}"));
        let mut out = Vec::with_capacity(numbers.len());
        let mut accepted = Vec::new();
        for (raw, p) in numbers.iter().zip(&parsed) {
            let status =
                |code: &'static str, msg: &'static str, serial: String, fee: u32| SendStatus {
                    serial_no: serial,
                    phone_number: raw.clone(),
                    fee,
                    session_context: "",
                    code,
                    message: msg,
                    iso_code: "CN",
                };
            let Some((digits, _)) = p else {
                self.errors
                    .add("InvalidParameterValue.IncorrectPhoneNumber", 1);
                out.push(status(
                    "InvalidParameterValue.IncorrectPhoneNumber",
                    "invalid mobile number",
                    String::new(),
                    0,
                ));
                continue;
            };
            if live.blacklist.contains(digits) {
                self.errors.add("FailedOperation.PhoneNumberInBlacklist", 1);
                out.push(status(
                    "FailedOperation.PhoneNumberInBlacklist",
                    "the number is in the blacklist",
                    String::new(),
                    0,
                ));
                continue;
            }
            let same_key = sms::key(&[digits, &content]);
            let number_key = sms::key(&[digits]);
            let refused = if self
                .windows
                .over(same_key, &live.cfg.same_content, now)
                .is_some()
            {
                Some((
                    "LimitExceeded.PhoneNumberThirtySecondLimit",
                    "the same content was sent to the number within 30 seconds",
                ))
            } else {
                self.windows
                    .over(number_key, &live.cfg.per_number, now)
                    .map(|l| per_number_code(&l))
            };
            if let Some((code, msg)) = refused {
                self.errors.add(code, 1);
                out.push(status(code, msg, String::new(), 0));
                continue;
            }
            self.windows.record(same_key, &live.cfg.same_content, now);
            self.windows.record(number_key, &live.cfg.per_number, now);
            let seq = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
            let serial = format!("2645:{}{seq:010}", now / 1000);
            out.push(status("Ok", "send success", serial.clone(), 1));
            let m = TencentSmsMessage {
                serial_no: serial,
                phone_number: format!("+{digits}"),
                sign_name: sign.clone(),
                template_id: template.clone(),
                params: params.clone(),
                at_ms: now,
                receipt_ok: !live.receipt_fail.contains(digits),
            };
            if live.cfg.callback_url.is_some() {
                accepted.push(m.receipt());
            }
            self.ring.push(m);
        }
        let ok = out.iter().filter(|s| s.code == "Ok").count();
        self.delivered.fetch_add(ok as u64, Ordering::Relaxed);
        if let (Some(url), false) = (&live.cfg.callback_url, accepted.is_empty()) {
            sms::push_receipts(&self.client, url, accepted, 100, &self.pushes);
        }
        Ok(out)
    }
}

/// The code and message of a number over one of its own limits.
fn per_number_code(l: &SmsLimit) -> (&'static str, &'static str) {
    if l.calendar_day || l.window_secs >= 86_400 {
        (
            "LimitExceeded.PhoneNumberDailyLimit",
            "the number reached its daily limit",
        )
    } else if l.window_secs >= 3600 {
        (
            "LimitExceeded.PhoneNumberOneHourLimit",
            "the number reached its hourly limit",
        )
    } else {
        (
            "LimitExceeded.DeliveryFrequencyLimit",
            "the number reached a frequency limit",
        )
    }
}

fn header<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

fn request_id(seq: u64) -> String {
    let n = providers::mix64(seq ^ 0x7465_6e63);
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        n as u32,
        (n >> 32) as u16,
        (n >> 48) as u16,
        (n >> 8) as u16,
        n >> 16 & 0xFFFF_FFFF_FFFF
    )
}

/// `SendSms`, whichever path it came to.
pub(crate) async fn handle(
    state: &MockState,
    uri: &Uri,
    headers: &HeaderMap,
    body: &Bytes,
) -> Response {
    let st = &state.shared.tencent_sms;
    let now = st.clock.now_ms();
    let live = st.live.read().clone();
    let n = st.calls.fetch_add(1, Ordering::Relaxed) + 1;
    let rid = request_id(n);
    let result = st
        .verify(&live, uri, headers, body, now)
        .and_then(|()| st.send(&live, headers, body, now));
    // Written straight from the statuses: up to 200 of them a call.
    #[derive(Serialize)]
    struct Sent<'a> {
        #[serde(rename = "SendStatusSet")]
        set: &'a [SendStatus],
        #[serde(rename = "RequestId")]
        rid: &'a str,
    }
    #[derive(Serialize)]
    struct Envelope<'a> {
        #[serde(rename = "Response")]
        response: Sent<'a>,
    }
    let v = match result {
        Ok(set) => serde_json::to_string(&Envelope {
            response: Sent {
                set: &set,
                rid: &rid,
            },
        })
        .unwrap_or_default(),
        Err(e) => {
            st.errors.add(e.code, 1);
            tracing::debug!(code = e.code, message = %e.message, "tencent sms mock refused the call");
            serde_json::json!({"Response": {"Error": {"Code": e.code, "Message": e.message}, "RequestId": rid}})
                .to_string()
        }
    };
    let ms = live.cfg.faults.latency_ms;
    if ms > 0 {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    let mut resp = Response::new(Body::from(v));
    resp.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("application/json"),
    );
    resp
}

pub(crate) fn routes() -> Router<MockState> {
    Router::new()
        .route("/tencent", post(send_route))
        .route("/tencent/", post(send_route))
        .merge(sms_control::routes::<TencentSmsState>())
}

async fn send_route(
    State(state): State<MockState>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    handle(&state, &uri, &headers, &body).await
}

impl SmsControl for TencentSmsState {
    type Config = TencentSmsConfig;
    type Faults = TencentSmsFaults;
    const NAME: &'static str = "tencent_sms";
    const RING: usize = TENCENT_SMS_RING_CAPACITY;
    fn of(state: &MockState) -> &Self {
        &state.shared.tencent_sms
    }
    fn config(&self) -> TencentSmsConfig {
        TencentSmsState::config(self)
    }
    fn set_config(&self, cfg: TencentSmsConfig) {
        TencentSmsState::set_config(self, cfg)
    }
    fn faults(&self) -> TencentSmsFaults {
        TencentSmsState::faults(self)
    }
    fn set_faults(&self, faults: TencentSmsFaults) {
        TencentSmsState::set_faults(self, faults)
    }
    fn stats(&self) -> Value {
        serde_json::to_value(TencentSmsState::stats(self)).unwrap_or(Value::Null)
    }
    fn messages(&self, limit: usize, phone: Option<&str>) -> Value {
        serde_json::to_value(TencentSmsState::messages(self, limit, phone)).unwrap_or(Value::Null)
    }
    /// The receipts of the newest accepted numbers, as Tencent would push them.
    fn receipts(&self, limit: usize, phone: Option<&str>) -> Value {
        Value::Array(
            TencentSmsState::messages(self, limit, phone)
                .iter()
                .map(TencentSmsMessage::receipt)
                .collect(),
        )
    }
    fn clock(&self) -> &Clock {
        &self.clock
    }
}
