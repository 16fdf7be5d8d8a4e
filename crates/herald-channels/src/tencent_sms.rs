//! The `tencent_sms` channel: Tencent Cloud SMS `SendSms` (2021-01-11).
//!
//! **Signature.** `TC3-HMAC-SHA256` (`shared/reference/china-providers.md`
//! §2.1) over `content-type`, `host` and `x-tc-action`, with the key
//! derived from the SecretKey, the UTC date and the service `sms`.
//!
//! **Batching.** One call carries up to `max_batch` numbers (Tencent takes
//! 200) that get the same template and parameters, each number once. The
//! answer has one `SendStatusSet` entry per number, so each delivery gets
//! its own outcome:
//!
//! - `Ok`: delivered, with the entry's `SerialNo` as the provider message
//!   id; receipts name it as `sid`.
//! - `LimitExceeded.PhoneNumberThirtySecondLimit` / `OneHourLimit` /
//!   `DailyLimit` / `SameContentDailyLimit` / `DeliveryFrequencyLimit`: that
//!   number is over one of its limits; the delivery is retried after the
//!   window (30 s, 1 h, or Beijing midnight for the daily ones). Reported
//!   `Retryable` with that wait rather than `Throttled`, which would pause
//!   the whole channel for one number (bounded by `backoff_max_ms`).
//! - `InternalError.*` and `RequestLimitExceeded*`: retryable.
//! - anything else (`InvalidParameterValue.IncorrectPhoneNumber`, blacklist,
//!   template or sign errors, balance): permanent.
//!
//! A request-level `Response.Error` applies to every number of the call,
//! classified the same way (`AuthFailure.*` is permanent).
//!
//! **No idempotency key**: the kind's in-doubt default is `skip`.

use std::borrow::Cow;
use std::collections::HashMap;

use async_trait::async_trait;
use serde_json::{Value, json};

use crate::aliyun_sms::host_and_path;
use crate::provider_http::{Answer, ProviderHttp, Secret, retryable};
use crate::sms::{self, Phone};
use crate::{
    BuildContext, CallbackError, CallbackEvent, CallbackReply, CallbackRequest, Channel,
    ChannelError, ChannelKind, CommonSettings, Delivery, FinalStatus, SendOutcome,
    TencentSmsConfig,
};

/// The real API.
pub const DEFAULT_API_BASE: &str = "https://sms.tencentcloudapi.com";
/// Numbers one `SendSms` call takes.
pub const MAX_NUMBERS_PER_CALL: usize = 200;
/// The API version.
pub const API_VERSION: &str = "2021-01-11";
/// The default `X-TC-Region`.
pub const DEFAULT_REGION: &str = "ap-guangzhou";
/// The service name in the credential scope.
const SERVICE: &str = "sms";
const CONTENT_TYPE: &str = "application/json";

pub struct TencentSmsChannel {
    name: String,
    secret_id: String,
    secret_key: Secret,
    app_id: String,
    sign_name: String,
    template_id: Option<String>,
    region: String,
    max_batch: usize,
    http: ProviderHttp,
    host: String,
    path: String,
    callback_secret: Option<Secret>,
}

impl std::fmt::Debug for TencentSmsChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TencentSmsChannel")
            .field("name", &self.name)
            .field("secret_id", &self.secret_id)
            .field("secret_key", &self.secret_key)
            .field("app_id", &self.app_id)
            .finish()
    }
}

/// Template and parameters: deliveries with equal texts may share a call.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Text {
    template: String,
    params: Vec<String>,
}

/// What a TC3 signature covers.
pub(crate) struct SignInput<'a> {
    pub path: &'a str,
    pub host: &'a str,
    pub action: &'a str,
    pub timestamp: i64,
    pub body: &'a [u8],
}

/// The `Authorization` header for a `POST` of `body`.
pub(crate) fn authorization(s: &SignInput<'_>, secret_id: &str, secret_key: &str) -> String {
    let date = herald_core::time::format_utc_day(s.timestamp.div_euclid(86_400));
    let canonical_headers = format!(
        "content-type:{CONTENT_TYPE}\nhost:{}\nx-tc-action:{}\n",
        s.host.to_ascii_lowercase(),
        s.action.to_ascii_lowercase()
    );
    let signed_headers = "content-type;host;x-tc-action";
    let request = format!(
        "POST\n{}\n\n{canonical_headers}\n{signed_headers}\n{}",
        s.path,
        sms::sha256_hex(s.body)
    );
    let scope = format!("{date}/{SERVICE}/tc3_request");
    let to_sign = format!(
        "TC3-HMAC-SHA256\n{}\n{scope}\n{}",
        s.timestamp,
        sms::sha256_hex(request.as_bytes())
    );
    let k_date = sms::hmac_sha256(format!("TC3{secret_key}").as_bytes(), date.as_bytes());
    let k_service = sms::hmac_sha256(&k_date, SERVICE.as_bytes());
    let k_signing = sms::hmac_sha256(&k_service, b"tc3_request");
    let sig = hex::encode(sms::hmac_sha256(&k_signing, to_sign.as_bytes()));
    format!(
        "TC3-HMAC-SHA256 Credential={secret_id}/{scope}, SignedHeaders={signed_headers}, Signature={sig}"
    )
}

impl TencentSmsChannel {
    pub fn new(
        common: &CommonSettings,
        cfg: &TencentSmsConfig,
        _ctx: &BuildContext,
    ) -> Result<Self, ChannelError> {
        let secret_key = cfg
            .secret_key
            .resolve("secret_key")
            .map_err(|e| common.err(&e))?;
        let callback_secret = match &cfg.callback_secret {
            Some(s) => Some(Secret::new(
                s.resolve("callback_secret").map_err(|e| common.err(&e))?,
            )),
            None => None,
        };
        let base = cfg.api_base.as_deref().unwrap_or(DEFAULT_API_BASE);
        let http = ProviderHttp::new(common, cfg.ca_file.as_deref(), base)?;
        let (host, path) =
            host_and_path(base).map_err(|e| common.err(&format!("api_base: {e}")))?;
        Ok(Self {
            name: common.name.clone(),
            secret_id: cfg.secret_id.trim().to_string(),
            secret_key: Secret::new(secret_key),
            app_id: cfg.sms_sdk_app_id.trim().to_string(),
            sign_name: cfg.sign_name.clone(),
            template_id: cfg.template_id.clone(),
            region: cfg
                .region
                .clone()
                .unwrap_or_else(|| DEFAULT_REGION.to_string()),
            max_batch: cfg
                .max_batch
                .unwrap_or(MAX_NUMBERS_PER_CALL)
                .clamp(1, MAX_NUMBERS_PER_CALL),
            http,
            host,
            path,
            callback_secret,
        })
    }

    fn text(&self, message: &str) -> Result<Text, String> {
        let v = crate::shape::check_text(ChannelKind::TencentSms, message)?;
        let template = match v.get("template").and_then(Value::as_str) {
            Some(t) => t.to_string(),
            None => self.template_id.clone().ok_or(
                "the message names no template and the channel has no template_id".to_string(),
            )?,
        };
        let params = v
            .get("params")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        Ok(Text { template, params })
    }

    /// Sends one call: one outcome per number, in order.
    async fn send_call(&self, text: &Text, numbers: &[&Phone]) -> Vec<SendOutcome> {
        let n = numbers.len();
        let e164: Vec<String> = numbers.iter().map(|p| p.e164()).collect();
        let body = json!({
            "PhoneNumberSet": e164,
            "SmsSdkAppId": self.app_id,
            "SignName": self.sign_name,
            "TemplateId": text.template,
            "TemplateParamSet": text.params,
        });
        let body = match serde_json::to_vec(&body) {
            Ok(b) => b,
            Err(e) => return vec![retryable(e.to_string(), None); n],
        };
        let timestamp = sms::unix_now();
        let auth = authorization(
            &SignInput {
                path: &self.path,
                host: &self.host,
                action: "SendSms",
                timestamp,
                body: &body,
            },
            &self.secret_id,
            self.secret_key.expose(),
        );
        let req = self
            .http
            .post(&self.http.url("/"))
            .header("host", &self.host)
            .header("content-type", CONTENT_TYPE)
            .header("x-tc-action", "SendSms")
            .header("x-tc-version", API_VERSION)
            .header("x-tc-timestamp", timestamp.to_string())
            .header("x-tc-region", &self.region)
            .header("authorization", auth)
            .body(body);
        let answer = match self.http.call(req, "POST", "SendSms").await {
            Ok(a) => a,
            Err(e) => return vec![retryable(e.to_string(), None); n],
        };
        let response = match read_response(&answer) {
            Ok(r) => r,
            Err(o) => return vec![o; n],
        };
        if let Some(err) = response.error {
            let o = classify(&err.code, &err.message, timestamp);
            tracing::info!(channel = %self.name, numbers = n, code = %err.code, class = o.class(), "tencent sms refused the call");
            return vec![o; n];
        }
        // Each status by its number, read once (a call carries up to 200).
        let set = response.send_status_set.unwrap_or_default();
        let mut by_number: HashMap<Phone, &Status<'_>> = HashMap::with_capacity(set.len());
        for e in &set {
            if let Ok(p) = Phone::parse(&e.phone_number) {
                by_number.entry(p).or_insert(e);
            }
        }
        let mut delivered = 0usize;
        let out: Vec<SendOutcome> = numbers
            .iter()
            .map(|p| {
                let Some(e) = by_number.get(*p) else {
                    return retryable(format!("no SendStatusSet entry for {}", p.e164()), None);
                };
                if e.code == "Ok" {
                    delivered += 1;
                    return SendOutcome::Delivered {
                        provider_msgid: e.serial_no.as_deref().map(str::to_string),
                        status: None,
                    };
                }
                classify(&e.code, &e.message, timestamp)
            })
            .collect();
        tracing::debug!(channel = %self.name, numbers = n, delivered, "tencent sms sent");
        out
    }
}

/// What a `SendSms` answer holds, read in one pass without building a
/// JSON tree (the statuses of up to 200 numbers a call).
#[derive(serde::Deserialize)]
struct Envelope<'a> {
    #[serde(rename = "Response", borrow)]
    response: Option<Reply<'a>>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Reply<'a> {
    #[serde(borrow, default)]
    send_status_set: Option<Vec<Status<'a>>>,
    #[serde(borrow, default)]
    error: Option<ErrorBody<'a>>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Status<'a> {
    #[serde(borrow, default)]
    phone_number: Cow<'a, str>,
    #[serde(borrow, default)]
    code: Cow<'a, str>,
    #[serde(borrow, default)]
    message: Cow<'a, str>,
    #[serde(default)]
    serial_no: Option<String>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ErrorBody<'a> {
    #[serde(borrow, default)]
    code: Cow<'a, str>,
    #[serde(borrow, default)]
    message: Cow<'a, str>,
}

/// The `Response` object of an answer, or the outcome when there is none.
fn read_response(answer: &Answer) -> Result<Reply<'_>, SendOutcome> {
    let reply = serde_json::from_slice::<Envelope<'_>>(&answer.body)
        .ok()
        .and_then(|e| e.response);
    match reply {
        Some(r) => Ok(r),
        None => {
            if let Some(o) = answer.overload() {
                return Err(o);
            }
            if !answer.is_success() {
                return Err(answer.rejected());
            }
            Err(retryable(
                format!("answer without Response: {}", answer.snippet()),
                None,
            ))
        }
    }
}

/// The outcome of a refusal `code`, for one number or a whole call.
fn classify(code: &str, message: &str, now_s: i64) -> SendOutcome {
    let error = format!("{code}: {message}");
    let wait = |ms: u64| SendOutcome::Retryable {
        error: error.clone(),
        status: None,
        retry_after_ms: Some(ms),
    };
    match code {
        "LimitExceeded.PhoneNumberThirtySecondLimit" | "LimitExceeded.DeliveryFrequencyLimit" => {
            wait(30_000)
        }
        "LimitExceeded.PhoneNumberOneHourLimit" => wait(3_600_000),
        "LimitExceeded.PhoneNumberDailyLimit"
        | "LimitExceeded.PhoneNumberSameContentDailyLimit" => {
            wait(sms::until_beijing_midnight_ms(now_s))
        }
        c if c.starts_with("InternalError") || c.starts_with("RequestLimitExceeded") => {
            retryable(error, None)
        }
        _ => SendOutcome::Permanent {
            error,
            status: None,
        },
    }
}

/// Reads a receipt push: a JSON array of `{sid, report_status, ...}`.
pub fn parse_receipts(body: &[u8]) -> Result<Vec<CallbackEvent>, CallbackError> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| CallbackError::Invalid(format!("the receipt is not JSON: {e}")))?;
    let Value::Array(items) = v else {
        return Err(CallbackError::Invalid(
            "the receipt must be a JSON array of status reports".into(),
        ));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let field = |k: &str| {
                item.get(k).and_then(Value::as_str).ok_or_else(|| {
                    CallbackError::Invalid(format!("receipt [{i}] has no {k} (a string)"))
                })
            };
            let sid = field("sid")?;
            let status = match field("report_status")? {
                "SUCCESS" => FinalStatus::Success,
                "FAIL" => FinalStatus::SystemFailed,
                other => {
                    return Err(CallbackError::Invalid(format!(
                        "receipt [{i}] report_status is {other:?}; SUCCESS or FAIL"
                    )));
                }
            };
            Ok(CallbackEvent {
                provider_msgid: sid.to_string(),
                status,
            })
        })
        .collect()
}

#[async_trait]
impl Channel for TencentSmsChannel {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> ChannelKind {
        ChannelKind::TencentSms
    }

    fn max_batch(&self) -> usize {
        self.max_batch
    }

    async fn send(&self, d: &Delivery) -> SendOutcome {
        let mut out = self.send_batch(std::slice::from_ref(d)).await;
        out.pop()
            .unwrap_or_else(|| retryable("no outcome".into(), None))
    }

    async fn send_batch(&self, deliveries: &[Delivery]) -> Vec<SendOutcome> {
        // Tencent refuses a call that mixes mainland and other numbers.
        let mut plan = sms::CallPlan::new(
            deliveries,
            self.max_batch,
            |d| Ok((Phone::parse(&d.recipient)?, self.text(&d.message)?)),
            |a, b| a.domestic() == b.domestic(),
        );
        for call in plan.calls() {
            let answers = self.send_call(&call.text, &call.numbers()).await;
            plan.answer(&call, answers);
        }
        plan.finish()
    }

    fn parse_callback(
        &self,
        req: &CallbackRequest<'_>,
    ) -> Result<Vec<CallbackEvent>, CallbackError> {
        sms::check_callback_secret(self.callback_secret.as_ref(), req)?;
        parse_receipts(req.body)
    }

    fn callback_signed(&self) -> bool {
        self.callback_secret.is_some()
    }

    fn callback_reply(&self) -> CallbackReply {
        CallbackReply {
            content_type: "application/json",
            body: r#"{"result":0,"errmsg":"OK"}"#,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signs_with_the_documented_key_derivation() {
        let s = SignInput {
            path: "/",
            host: "sms.tencentcloudapi.com",
            action: "SendSms",
            timestamp: 1_700_000_000,
            body: br#"{"a":1}"#,
        };
        let auth = authorization(&s, "AKID", "key");
        assert!(
            auth.starts_with("TC3-HMAC-SHA256 Credential=AKID/2023-11-14/sms/tc3_request, SignedHeaders=content-type;host;x-tc-action, Signature="),
            "{auth}"
        );
        // Any change of the body changes the signature.
        let other = authorization(
            &SignInput {
                body: br#"{"a":2}"#,
                ..s
            },
            "AKID",
            "key",
        );
        assert_ne!(auth, other);
    }

    #[test]
    fn classifies_codes() {
        let c = |code: &str| classify(code, "", 0).class();
        assert_eq!(c("InternalError.Timeout"), "retry");
        assert_eq!(c("RequestLimitExceeded"), "retry");
        assert_eq!(c("InvalidParameterValue.IncorrectPhoneNumber"), "permanent");
        assert_eq!(c("AuthFailure.SignatureFailure"), "permanent");
        let SendOutcome::Retryable { retry_after_ms, .. } =
            classify("LimitExceeded.PhoneNumberThirtySecondLimit", "", 0)
        else {
            panic!()
        };
        assert_eq!(retry_after_ms, Some(30_000));
        let SendOutcome::Retryable { retry_after_ms, .. } =
            classify("LimitExceeded.PhoneNumberDailyLimit", "", 16 * 3600)
        else {
            panic!()
        };
        assert_eq!(retry_after_ms, Some(86_400_000));
    }

    #[test]
    fn reads_receipts_by_sid() {
        let body = br#"[{"user_receive_time":"2026-11-29 13:00:05","nationcode":"86","mobile":"13800138000","report_status":"SUCCESS","errmsg":"DELIVRD","description":"ok","sid":"2019:538884*"}]"#;
        let ev = parse_receipts(body).unwrap();
        assert_eq!(ev[0].provider_msgid, "2019:538884*");
        assert_eq!(ev[0].status, FinalStatus::Success);
        assert!(parse_receipts(br#"[{"sid":"x","report_status":"MAYBE"}]"#).is_err());
    }
}
