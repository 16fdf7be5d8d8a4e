//! The `aliyun_sms` channel: Aliyun SMS (Dysmsapi 2017-05-25) `SendSms`.
//!
//! **Signature.** V3, `ACS3-HMAC-SHA256`, as the official SDKs sign by
//! default (`shared/reference/china-providers.md` §1.2): every business
//! parameter goes in the query string, the body is empty, and the signed
//! headers are `host` and the `x-acs-*` ones.
//!
//! **Batching.** One call carries up to `max_batch` numbers (Aliyun takes
//! 1000) that get the very same text: only deliveries with the same
//! template, parameters and `out_id` share a call, and a number appears at
//! most once in a call. A call answers one `Code` and one `BizId` for all
//! its numbers, so:
//!
//! - `OK`: every number is delivered, each with the provider message id
//!   `<BizId>:<number>` (the number with its country code), which is what a
//!   receipt names; receipts carry the `biz_id` and `phone_number`.
//! - `isv.MOBILE_NUMBER_ILLEGAL` and `isv.BUSINESS_LIMIT_CONTROL` are about
//!   one number but refuse the whole call: a call of several numbers is
//!   sent again one number at a time (nothing went out), so only the number
//!   at fault fails or waits.
//! - `isv.BUSINESS_LIMIT_CONTROL` for one number is a per-number flow
//!   control: that delivery is retried after the window its message names
//!   (minute, hour or day). It is reported as `Retryable` with that wait,
//!   not `Throttled`: the engine pauses the whole channel on `Throttled`,
//!   which one number over its limit must not do. The retry policy's
//!   `backoff_max_ms` bounds the wait, and the attempt counts.
//! - `isp.SYSTEM_ERROR` and `Throttling.*` are retryable; every other code
//!   (bad template, sign, balance, account caps, auth) fails permanently.
//!
//! **No idempotency key.** Aliyun de-duplicates nothing, so the kind's
//! in-doubt default is `skip`, and a send without an answer (timeout) is
//! retryable like any network failure.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde_json::{Map, Value};

use crate::provider_http::{Answer, ProviderHttp, Secret, retryable};
use crate::sms::{self, Phone};
use crate::{
    AliyunSmsConfig, BuildContext, CallbackError, CallbackEvent, CallbackReply, CallbackRequest,
    Channel, ChannelError, ChannelKind, CommonSettings, Delivery, FinalStatus, SendOutcome,
};

/// The real API.
pub const DEFAULT_API_BASE: &str = "https://dysmsapi.aliyuncs.com";
/// Numbers one `SendSms` call takes.
pub const MAX_NUMBERS_PER_CALL: usize = 1000;
/// The API version `SendSms` belongs to.
pub const API_VERSION: &str = "2017-05-25";
/// The signature algorithm.
pub const ALGORITHM: &str = "ACS3-HMAC-SHA256";

pub struct AliyunSmsChannel {
    name: String,
    access_key_id: String,
    secret: Secret,
    sign_name: String,
    template_code: Option<String>,
    max_batch: usize,
    http: ProviderHttp,
    /// The `host` header the request is signed with (and sent with).
    host: String,
    /// The request path: `/` at the real endpoint.
    path: String,
    callback_secret: Option<Secret>,
}

impl std::fmt::Debug for AliyunSmsChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AliyunSmsChannel")
            .field("name", &self.name)
            .field("access_key_id", &self.access_key_id)
            .field("secret", &self.secret)
            .field("sign_name", &self.sign_name)
            .finish()
    }
}

/// What one delivery asks Aliyun to send, minus the number: deliveries
/// with equal texts may share a call.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Text {
    template: String,
    /// `TemplateParam`: a JSON object of strings, keys sorted.
    params: Option<String>,
    out_id: Option<String>,
}

/// The host header and path of `base` + `/`.
pub(crate) fn host_and_path(base: &str) -> Result<(String, String), String> {
    let url = reqwest::Url::parse(base).map_err(|e| format!("{base:?}: {e}"))?;
    let host = url
        .host_str()
        .ok_or_else(|| format!("{base:?}: no host"))?
        .to_string();
    let host = match url.port() {
        Some(p) => format!("{host}:{p}"),
        None => host,
    };
    let path = format!("{}/", url.path().trim_end_matches('/'));
    Ok((host, path))
}

impl AliyunSmsChannel {
    pub fn new(
        common: &CommonSettings,
        cfg: &AliyunSmsConfig,
        _ctx: &BuildContext,
    ) -> Result<Self, ChannelError> {
        let secret = cfg
            .access_key_secret
            .resolve("access_key_secret")
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
            access_key_id: cfg.access_key_id.trim().to_string(),
            secret: Secret::new(secret),
            sign_name: cfg.sign_name.clone(),
            template_code: cfg.template_code.clone(),
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

    /// The text a delivery's message asks for.
    fn text(&self, message: &str) -> Result<Text, String> {
        let v = crate::shape::check_text(ChannelKind::AliyunSms, message)?;
        let m = v.as_object().cloned().unwrap_or_default();
        let template = match m.get("template").and_then(Value::as_str) {
            Some(t) => t.to_string(),
            None => self.template_code.clone().ok_or(
                "the message names no template and the channel has no template_code".to_string(),
            )?,
        };
        let params = match m.get("params").and_then(Value::as_object) {
            Some(p) if !p.is_empty() => {
                // Sorted keys, so equal parameters give equal text.
                let sorted: BTreeMap<&String, &Value> = p.iter().collect();
                Some(serde_json::to_string(&sorted).map_err(|e| e.to_string())?)
            }
            _ => None,
        };
        let out_id = m.get("out_id").and_then(Value::as_str).map(str::to_string);
        Ok(Text {
            template,
            params,
            out_id,
        })
    }

    /// The query parameters of a `SendSms` for `numbers` (unsorted).
    fn params(&self, text: &Text, numbers: &[&Phone]) -> Vec<(&'static str, String)> {
        let joined = numbers
            .iter()
            .map(|p| p.aliyun())
            .collect::<Vec<_>>()
            .join(",");
        let mut q = vec![
            ("PhoneNumbers", joined),
            ("SignName", self.sign_name.clone()),
            ("TemplateCode", text.template.clone()),
        ];
        if let Some(p) = &text.params {
            q.push(("TemplateParam", p.clone()));
        }
        if let Some(o) = &text.out_id {
            q.push(("OutId", o.clone()));
        }
        q
    }

    /// Sends one call and reads Aliyun's answer: `Ok(BizId)` or the code
    /// and message it refused with, or the outcome when there was no
    /// readable answer.
    async fn call(&self, text: &Text, numbers: &[&Phone]) -> Result<Reply, SendOutcome> {
        let mut query = self.params(text, numbers);
        query.sort_by(|a, b| a.0.cmp(b.0));
        let date = iso_seconds(sms::unix_now());
        let nonce = sms::nonce();
        let signed = SignInput {
            method: "POST",
            path: &self.path,
            query: &query,
            host: &self.host,
            action: "SendSms",
            date: &date,
            nonce: &nonce,
            body: b"",
        };
        let (auth, content_sha) = authorization(&signed, &self.access_key_id, self.secret.expose());
        let url = format!(
            "{}?{}",
            self.http.url(&self.path_tail()),
            canonical_query(&query)
        );
        let req = self
            .http
            .post(&url)
            .header("host", &self.host)
            .header("x-acs-action", "SendSms")
            .header("x-acs-version", API_VERSION)
            .header("x-acs-date", &date)
            .header("x-acs-signature-nonce", &nonce)
            .header("x-acs-content-sha256", content_sha)
            .header("accept", "application/json")
            .header("authorization", auth);
        let answer = match self.http.call(req, "POST", "SendSms").await {
            Ok(a) => a,
            Err(e) => return Err(retryable(e.to_string(), None)),
        };
        read_reply(&answer)
    }

    /// The path under the base URL (`ProviderHttp::url` adds the base).
    fn path_tail(&self) -> String {
        "/".to_string()
    }

    /// Sends `numbers` with `text`, one outcome per number in order; a
    /// refusal about one number of several is found out by sending each
    /// alone.
    async fn send_call(&self, text: &Text, numbers: &[&Phone]) -> Vec<SendOutcome> {
        let n = numbers.len();
        let reply = match self.call(text, numbers).await {
            Ok(r) => r,
            Err(o) => return vec![o; n],
        };
        if reply.code == "OK" {
            let biz = reply.biz_id.unwrap_or_default();
            tracing::debug!(channel = %self.name, numbers = n, biz_id = %biz, "aliyun sms sent");
            return numbers
                .iter()
                .map(|p| SendOutcome::Delivered {
                    provider_msgid: Some(format!("{biz}:{}", p.digits())),
                    status: None,
                })
                .collect();
        }
        let per_number = matches!(
            reply.code.as_str(),
            "isv.MOBILE_NUMBER_ILLEGAL" | "isv.BUSINESS_LIMIT_CONTROL"
        );
        if per_number && n > 1 {
            tracing::info!(channel = %self.name, numbers = n, code = %reply.code, "aliyun sms refused a call for one number; sending each alone");
            let mut out = Vec::with_capacity(n);
            for p in numbers {
                let one = Box::pin(self.send_call(text, std::slice::from_ref(p))).await;
                out.extend(one);
            }
            return out;
        }
        let outcome = classify(&reply.code, &reply.message);
        tracing::info!(channel = %self.name, numbers = n, code = %reply.code, class = outcome.class(), "aliyun sms refused");
        vec![outcome; n]
    }
}

/// Aliyun's answer to a call.
struct Reply {
    code: String,
    message: String,
    biz_id: Option<String>,
}

/// Reads an answer: business errors come as HTTP 200 with a `Code`,
/// gateway errors (signature, throttling) as 4xx/5xx with one.
fn read_reply(answer: &Answer) -> Result<Reply, SendOutcome> {
    let v = answer.json();
    let code = v
        .as_ref()
        .and_then(|v| v.get("Code"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let Some(code) = code else {
        if let Some(o) = answer.overload() {
            return Err(o);
        }
        if !answer.is_success() {
            return Err(answer.rejected());
        }
        return Err(answer.json_or_outcome().err().unwrap_or_else(|| {
            retryable(format!("answer without Code: {}", answer.snippet()), None)
        }));
    };
    let v = v.unwrap_or_default();
    let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    Ok(Reply {
        code,
        message: text("Message").unwrap_or_default(),
        biz_id: text("BizId"),
    })
}

/// The outcome of a refusal `code` (see the module docs).
fn classify(code: &str, message: &str) -> SendOutcome {
    let error = format!("{code}: {message}");
    match code {
        "isv.BUSINESS_LIMIT_CONTROL" => SendOutcome::Retryable {
            error,
            status: None,
            retry_after_ms: Some(limit_window_ms(message)),
        },
        "isp.SYSTEM_ERROR" | "ServiceUnavailable" | "InternalError" => retryable(error, None),
        c if c.starts_with("Throttling") => retryable(error, None),
        _ => SendOutcome::Permanent {
            error,
            status: None,
        },
    }
}

/// The window a `isv.BUSINESS_LIMIT_CONTROL` message names: `触发分钟级流控`
/// (minute), `小时级` (hour), `天级` (day); a minute when it names none.
fn limit_window_ms(message: &str) -> u64 {
    if message.contains("天级") || message.contains("day") {
        86_400_000
    } else if message.contains("小时级") || message.contains("hour") {
        3_600_000
    } else {
        60_000
    }
}

/// `2026-11-29T05:35:08Z`.
fn iso_seconds(unix_s: i64) -> String {
    herald_core::time::format_rfc3339_ms(unix_s.saturating_mul(1000)).replace(".000Z", "Z")
}

/// `k=v&...` of sorted, RFC 3986-encoded pairs.
fn canonical_query(sorted: &[(&str, String)]) -> String {
    sorted
        .iter()
        .map(|(k, v)| format!("{}={}", sms::encode(k), sms::encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// What a V3 signature covers.
pub(crate) struct SignInput<'a> {
    pub method: &'a str,
    pub path: &'a str,
    /// Sorted by name.
    pub query: &'a [(&'a str, String)],
    pub host: &'a str,
    pub action: &'a str,
    pub date: &'a str,
    pub nonce: &'a str,
    pub body: &'a [u8],
}

/// The `Authorization` header and the `x-acs-content-sha256` value.
pub(crate) fn authorization(s: &SignInput<'_>, key_id: &str, secret: &str) -> (String, String) {
    let payload = sms::sha256_hex(s.body);
    let headers = [
        ("host", s.host),
        ("x-acs-action", s.action),
        ("x-acs-content-sha256", payload.as_str()),
        ("x-acs-date", s.date),
        ("x-acs-signature-nonce", s.nonce),
        ("x-acs-version", API_VERSION),
    ];
    let canonical_headers: String = headers
        .iter()
        .map(|(k, v)| format!("{k}:{}\n", v.trim()))
        .collect();
    let signed_headers = headers.map(|(k, _)| k).join(";");
    let request = format!(
        "{}\n{}\n{}\n{canonical_headers}\n{signed_headers}\n{payload}",
        s.method,
        s.path,
        canonical_query(s.query)
    );
    let to_sign = format!("{ALGORITHM}\n{}", sms::sha256_hex(request.as_bytes()));
    let sig = hex::encode(sms::hmac_sha256(secret.as_bytes(), to_sign.as_bytes()));
    (
        format!("{ALGORITHM} Credential={key_id},SignedHeaders={signed_headers},Signature={sig}"),
        payload,
    )
}

/// One SmsReport item, as Aliyun pushes it.
fn receipt_event(item: &Map<String, Value>, i: usize) -> Result<CallbackEvent, CallbackError> {
    let field = |k: &str| {
        item.get(k)
            .and_then(Value::as_str)
            .ok_or_else(|| CallbackError::Invalid(format!("report [{i}] has no {k} (a string)")))
    };
    let biz = field("biz_id")?;
    let phone = Phone::parse(field("phone_number")?)
        .map_err(|e| CallbackError::Invalid(format!("report [{i}] phone_number: {e}")))?;
    let success = match item.get("success") {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => s == "true",
        _ => {
            return Err(CallbackError::Invalid(format!(
                "report [{i}] has no success (a boolean)"
            )));
        }
    };
    Ok(CallbackEvent {
        provider_msgid: format!("{biz}:{}", phone.digits()),
        status: if success {
            FinalStatus::Success
        } else {
            FinalStatus::SystemFailed
        },
    })
}

/// Reads an SmsReport push: a JSON array of reports.
pub fn parse_receipts(body: &[u8]) -> Result<Vec<CallbackEvent>, CallbackError> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| CallbackError::Invalid(format!("the report is not JSON: {e}")))?;
    let Value::Array(items) = v else {
        return Err(CallbackError::Invalid(
            "the report must be a JSON array of SmsReport items".into(),
        ));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| match item.as_object() {
            Some(m) => receipt_event(m, i),
            None => Err(CallbackError::Invalid(format!(
                "report [{i}] is not an object"
            ))),
        })
        .collect()
}

#[async_trait]
impl Channel for AliyunSmsChannel {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> ChannelKind {
        ChannelKind::AliyunSms
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
        let mut plan = sms::CallPlan::new(
            deliveries,
            self.max_batch,
            |d| Ok((Phone::parse(&d.recipient)?, self.text(&d.message)?)),
            |_, _| true,
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
            body: r#"{"code":0,"msg":"success"}"#,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signs_like_the_v3_documentation_says() {
        // Recomputed by hand from the steps in china-providers.md §1.2: the
        // canonical request, its hash, the HMAC.
        let query = vec![
            ("PhoneNumbers", "13800138000".to_string()),
            ("SignName", "阿里云".to_string()),
        ];
        let s = SignInput {
            method: "POST",
            path: "/",
            query: &query,
            host: "dysmsapi.aliyuncs.com",
            action: "SendSms",
            date: "2026-11-29T05:00:00Z",
            nonce: "n1",
            body: b"",
        };
        let (auth, payload) = authorization(&s, "AK", "secret");
        assert_eq!(
            payload,
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        let request = "POST\n/\nPhoneNumbers=13800138000&SignName=%E9%98%BF%E9%87%8C%E4%BA%91\n\
            host:dysmsapi.aliyuncs.com\nx-acs-action:SendSms\nx-acs-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n\
            x-acs-date:2026-11-29T05:00:00Z\nx-acs-signature-nonce:n1\nx-acs-version:2017-05-25\n\n\
            host;x-acs-action;x-acs-content-sha256;x-acs-date;x-acs-signature-nonce;x-acs-version\n\
            e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        let to_sign = format!("ACS3-HMAC-SHA256\n{}", sms::sha256_hex(request.as_bytes()));
        let sig = hex::encode(sms::hmac_sha256(b"secret", to_sign.as_bytes()));
        assert_eq!(
            auth,
            format!(
                "ACS3-HMAC-SHA256 Credential=AK,SignedHeaders=host;x-acs-action;x-acs-content-sha256;x-acs-date;x-acs-signature-nonce;x-acs-version,Signature={sig}"
            )
        );
    }

    #[test]
    fn classifies_codes() {
        let c = |code: &str, msg: &str| classify(code, msg).class();
        assert_eq!(c("isp.SYSTEM_ERROR", ""), "retry");
        assert_eq!(c("Throttling.User", ""), "retry");
        assert_eq!(c("isv.MOBILE_NUMBER_ILLEGAL", ""), "permanent");
        assert_eq!(c("isv.AMOUNT_NOT_ENOUGH", ""), "permanent");
        let SendOutcome::Retryable { retry_after_ms, .. } =
            classify("isv.BUSINESS_LIMIT_CONTROL", "触发小时级流控Permits:5")
        else {
            panic!()
        };
        assert_eq!(retry_after_ms, Some(3_600_000));
        assert_eq!(limit_window_ms("触发天级流控Permits:10"), 86_400_000);
        assert_eq!(limit_window_ms("触发分钟级流控Permits:1"), 60_000);
    }

    #[test]
    fn reads_receipts_keyed_by_biz_id_and_number() {
        let body = br#"[{"phone_number":"13800138000","send_time":"2026-11-29 13:00:00","report_time":"2026-11-29 13:00:05","success":true,"err_code":"DELIVERED","err_msg":"","sms_size":"1","biz_id":"9001^0","out_id":""},
            {"phone_number":"+8613900139000","success":false,"err_code":"MK:0001","biz_id":"9001^0"}]"#;
        let ev = parse_receipts(body).unwrap();
        assert_eq!(ev[0].provider_msgid, "9001^0:8613800138000");
        assert_eq!(ev[0].status, FinalStatus::Success);
        assert_eq!(ev[1].provider_msgid, "9001^0:8613900139000");
        assert_eq!(ev[1].status, FinalStatus::SystemFailed);
        assert!(parse_receipts(b"{}").is_err());
        assert!(parse_receipts(br#"[{"phone_number":"1"}]"#).is_err());
    }

    #[test]
    fn host_and_path_of_bases() {
        assert_eq!(
            host_and_path("https://dysmsapi.aliyuncs.com").unwrap(),
            ("dysmsapi.aliyuncs.com".into(), "/".into())
        );
        assert_eq!(
            host_and_path("http://127.0.0.1:9000/aliyun").unwrap(),
            ("127.0.0.1:9000".into(), "/aliyun/".into())
        );
    }
}
