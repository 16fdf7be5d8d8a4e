//! The `webhook` channel: one signed JSON `POST` per delivery (the contract is in docs/channels.md, "webhook").
//!
//! With a `secret`, each request carries
//! `X-Herald-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`:
//! the timestamp is signed with the body, so a receiver that refuses old
//! timestamps refuses replays too.
//!
//! `2xx` is delivery. `429`, `408`, `5xx`, timeouts and network errors are
//! retryable (`408` is a timeout in all but name). Any other status, redirects
//! included, is permanent: the receiver has told us the request itself is wrong.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use bytes::Bytes;
use hmac::{Hmac, Mac};
use http_body_util::Full;
use hyper::header::{CONTENT_TYPE, HOST, HeaderValue, RETRY_AFTER, USER_AGENT};
use hyper::{Method, Request};
use sha2::Sha256;

use crate::http::{Answer, Origin, Pool};
use crate::{
    Channel, ChannelError, ChannelKind, CommonSettings, Delivery, SendOutcome, WebhookConfig,
};

type HmacSha256 = Hmac<Sha256>;

/// Longest error text kept from a receiver's answer.
const MAX_ERROR_BODY: usize = 256;
/// Most of an answer read; a longer one is cut off and its connection dropped.
const MAX_ANSWER_BYTES: usize = 64 * 1024;

pub struct WebhookChannel {
    name: String,
    pool: Pool,
    secret: Option<Vec<u8>>,
    timeout: Duration,
}

impl WebhookChannel {
    pub fn new(common: &CommonSettings, cfg: &WebhookConfig) -> Result<Self, ChannelError> {
        let origin = Origin::parse(&cfg.url).map_err(|e| common.err(&format!("url: {e}")))?;
        let roots = match &cfg.ca_file {
            Some(path) => crate::http::load_pem_certs(path)
                .map_err(|e| common.err(&format!("ca_file: {e}")))?,
            None => Vec::new(),
        };
        let secret = match &cfg.secret {
            Some(s) => Some(s.resolve("secret").map_err(|e| common.err(&e))?),
            None => None,
        };
        let connect_timeout = Duration::from_millis(common.timeout_ms.min(5_000));
        let pool = Pool::new(origin, common.concurrency, connect_timeout, roots)
            .map_err(|e| common.err(&e))?;
        Ok(Self {
            name: common.name.clone(),
            pool,
            secret: secret.map(String::into_bytes),
            timeout: Duration::from_millis(common.timeout_ms),
        })
    }

    /// The `X-Herald-Signature` value of `body` sent at `unix_s`:
    /// `t=<unix_s>,v1=<hex HMAC-SHA256(secret, "<unix_s>.<body>")>`.
    pub fn signature(secret: &[u8], unix_s: i64, body: &[u8]) -> String {
        // HMAC accepts keys of any length, so this cannot fail.
        let mut mac = match HmacSha256::new_from_slice(secret) {
            Ok(m) => m,
            Err(_) => return String::new(),
        };
        mac.update(unix_s.to_string().as_bytes());
        mac.update(b".");
        mac.update(body);
        format!("t={unix_s},v1={}", hex::encode(mac.finalize().into_bytes()))
    }

    fn classify(answer: Answer) -> SendOutcome {
        let status = answer.status;
        let code = Some(i64::from(status.as_u16()));
        if status.is_success() {
            return SendOutcome::Delivered {
                provider_msgid: None,
                status: code,
            };
        }
        let retry_after_ms = answer
            .headers
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(|secs| secs.saturating_mul(1000));
        let text = String::from_utf8_lossy(&answer.body);
        let snippet: String = text.chars().take(MAX_ERROR_BODY).collect();
        let error = format!("HTTP {}: {}", status.as_u16(), snippet.trim());
        if status.as_u16() == 429 || status.as_u16() == 408 || status.is_server_error() {
            SendOutcome::Retryable {
                error,
                status: code,
                retry_after_ms,
            }
        } else {
            SendOutcome::Permanent {
                error,
                status: code,
            }
        }
    }
}

/// The contract body `{id, kind, due_at, fired_at, attempt, recipient, message}`.
///
/// Written by hand so the stored message text is embedded as it is, without
/// parsing it again for every attempt.
pub fn webhook_body(d: &Delivery) -> Vec<u8> {
    let due = herald_core::time::format_rfc3339_ms(d.due_at);
    let fired = herald_core::time::format_rfc3339_ms(d.fired_at);
    let recipient = serde_json::to_string(&d.recipient).unwrap_or_else(|_| "\"\"".into());
    let message = if d.message.trim().is_empty() {
        "{}"
    } else {
        d.message.as_str()
    };
    let mut out = Vec::with_capacity(160 + recipient.len() + message.len());
    out.extend_from_slice(b"{\"id\":");
    out.extend_from_slice(d.timer_id.to_string().as_bytes());
    out.extend_from_slice(b",\"kind\":\"");
    out.extend_from_slice(d.kind.as_str().as_bytes());
    out.extend_from_slice(b"\",\"due_at\":\"");
    out.extend_from_slice(due.as_bytes());
    out.extend_from_slice(b"\",\"fired_at\":\"");
    out.extend_from_slice(fired.as_bytes());
    out.extend_from_slice(b"\",\"attempt\":");
    out.extend_from_slice(d.attempt.to_string().as_bytes());
    out.extend_from_slice(b",\"recipient\":");
    out.extend_from_slice(recipient.as_bytes());
    out.extend_from_slice(b",\"message\":");
    out.extend_from_slice(message.as_bytes());
    out.push(b'}');
    out
}

#[async_trait]
impl Channel for WebhookChannel {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> ChannelKind {
        ChannelKind::Webhook
    }

    async fn send(&self, d: &Delivery) -> SendOutcome {
        let key = match HeaderValue::from_str(&d.idempotency_key) {
            Ok(k) => k,
            Err(_) => {
                return SendOutcome::Permanent {
                    error: "idempotency key is not a valid header value".into(),
                    status: None,
                };
            }
        };
        let body = Bytes::from(webhook_body(d));
        // Signed when sent, not when the attempt was planned, so the
        // receiver's freshness window counts from the wire.
        let now_s = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        let signature = self
            .secret
            .as_ref()
            .and_then(|s| HeaderValue::from_str(&Self::signature(s, now_s, &body)).ok());
        // Validated when the timer was created; one that is not a header
        // value after all is left off rather than failing the delivery.
        let trace = d
            .traceparent
            .as_deref()
            .and_then(|t| HeaderValue::from_str(t).ok());
        let origin = self.pool.origin();
        let make = || {
            let mut req = Request::new(Full::new(body.clone()));
            *req.method_mut() = Method::POST;
            *req.uri_mut() = origin.path.clone();
            let h = req.headers_mut();
            h.insert(HOST, origin.authority.clone());
            h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            h.insert(
                USER_AGENT,
                HeaderValue::from_static(concat!("herald/", env!("CARGO_PKG_VERSION"))),
            );
            h.insert("idempotency-key", key.clone());
            if let Some(sig) = &signature {
                h.insert("x-herald-signature", sig.clone());
            }
            if let Some(t) = &trace {
                h.insert("traceparent", t.clone());
            }
            req
        };
        match tokio::time::timeout(self.timeout, self.pool.send(make, MAX_ANSWER_BYTES)).await {
            Ok(Ok(answer)) => Self::classify(answer),
            Ok(Err(e)) => SendOutcome::Retryable {
                error: e.to_string(),
                status: None,
                retry_after_ms: None,
            },
            Err(_) => SendOutcome::Retryable {
                error: format!("timeout after {} ms", self.timeout.as_millis()),
                status: None,
                retry_after_ms: None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use herald_core::TimerKind;

    fn delivery() -> Delivery {
        Delivery {
            timer_id: 42,
            kind: TimerKind::Timer,
            due_at: 1_795_000_000_000,
            fired_at: 1_795_000_000_007,
            attempt: 2,
            recipient: "order-\"7\"".into(),
            message: r#"{"stars":5}"#.into(),
            idempotency_key: "k-1".into(),
            traceparent: None,
        }
    }

    #[test]
    fn body_is_the_contract_json() {
        let body = webhook_body(&delivery());
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["id"], 42);
        assert_eq!(v["kind"], "timer");
        assert_eq!(v["due_at"], "2026-11-18T11:06:40.000Z");
        assert_eq!(v["fired_at"], "2026-11-18T11:06:40.007Z");
        assert_eq!(v["attempt"], 2);
        assert_eq!(v["recipient"], "order-\"7\"");
        assert_eq!(v["message"]["stars"], 5);
    }

    #[test]
    fn signature_is_hex_hmac_sha256_of_timestamp_dot_body() {
        // RFC 4231 test case 2, its message cut as "<t>.<body>".
        let sig = WebhookChannel::signature(b"Jefe", 0, b"what do ya want for nothing?");
        assert!(sig.starts_with("t=0,v1="), "{sig}");
        let mut mac = HmacSha256::new_from_slice(b"Jefe").unwrap();
        mac.update(b"0.what do ya want for nothing?");
        assert_eq!(
            sig,
            format!("t=0,v1={}", hex::encode(mac.finalize().into_bytes()))
        );
        let plain = {
            let mut mac = HmacSha256::new_from_slice(b"Jefe").unwrap();
            mac.update(b"what do ya want for nothing?");
            hex::encode(mac.finalize().into_bytes())
        };
        assert_eq!(
            plain,
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // A fixed vector a receiver in any language can check against.
        assert_eq!(
            WebhookChannel::signature(b"whsec", 1_700_000_000, br#"{"id":1}"#),
            format!("t=1700000000,v1={}", {
                let mut mac = HmacSha256::new_from_slice(b"whsec").unwrap();
                mac.update(br#"1700000000.{"id":1}"#);
                hex::encode(mac.finalize().into_bytes())
            })
        );
    }
}
