//! The HTTP client provider channels (WeChat, WeCom, FCM) call their APIs with.
//!
//! These calls are few and small next to the webhook hot path, so they use
//! reqwest (rustls) rather than the hand-rolled pool in [`crate::http`]. Each
//! channel keeps one [`ProviderHttp`] so connections are reused.
//!
//! Provider URLs carry credentials in the query string (`access_token=`,
//! `secret=`, `corpsecret=`), so nothing here ever formats a full URL into an
//! error: errors name the method and path only, and reqwest's own errors are
//! stripped of their URL.
//!
//! It is also the one home of what the providers' answers share at the HTTP
//! level: `429` throttles, `5xx` is worth retrying (both honour
//! `Retry-After`), an answer that is not JSON is retried when its status
//! says success and permanent otherwise.

use std::time::Duration;

use reqwest::header::{HeaderMap, RETRY_AFTER};

use crate::token_cache::TokenError;
use crate::{ChannelError, CommonSettings, SendOutcome};

/// Most of an answer read; providers answer in a few hundred bytes.
const MAX_ANSWER_BYTES: usize = 256 * 1024;
/// Longest error text kept from an answer.
const MAX_ERROR_TEXT: usize = 300;

/// A secret that prints as `<redacted>`.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Secret(String);

impl Secret {
    pub(crate) fn new(s: String) -> Self {
        Self(s)
    }
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

/// An HTTP answer, read whole.
#[derive(Debug)]
pub(crate) struct Answer {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Answer {
    /// The body as JSON, if it is.
    pub fn json(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// `Retry-After` in milliseconds, when given in seconds.
    pub fn retry_after_ms(&self) -> Option<u64> {
        self.headers
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(|secs| secs.saturating_mul(1000))
    }

    /// A short, printable piece of the body for error texts.
    pub fn snippet(&self) -> String {
        let text = String::from_utf8_lossy(&self.body);
        text.trim().chars().take(MAX_ERROR_TEXT).collect()
    }

    fn http_status(&self) -> Option<i64> {
        Some(i64::from(self.status))
    }

    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// `429` (throttled) or `5xx` (retryable), both with the `Retry-After`
    /// asked for; `None` for any other status.
    pub fn overload(&self) -> Option<SendOutcome> {
        if self.status == 429 {
            return Some(SendOutcome::Throttled {
                error: format!("HTTP 429: {}", self.snippet()),
                status: self.http_status(),
                retry_after_ms: self.retry_after_ms(),
            });
        }
        if self.status >= 500 {
            return Some(SendOutcome::Retryable {
                error: format!("HTTP {}: {}", self.status, self.snippet()),
                status: self.http_status(),
                retry_after_ms: self.retry_after_ms(),
            });
        }
        None
    }

    /// The status itself as a permanent failure (a `4xx` the provider's own
    /// codes do not explain).
    pub fn rejected(&self) -> SendOutcome {
        SendOutcome::Permanent {
            error: format!("HTTP {}: {}", self.status, self.snippet()),
            status: self.http_status(),
        }
    }

    /// The body as JSON, or the outcome when it is not: retryable under a
    /// success status (a proxy's page, a cut-off answer), else permanent.
    pub fn json_or_outcome(&self) -> Result<serde_json::Value, SendOutcome> {
        self.json().ok_or_else(|| {
            let error = format!("HTTP {}: non-JSON answer: {}", self.status, self.snippet());
            if self.is_success() {
                retryable(error, self.http_status())
            } else {
                SendOutcome::Permanent {
                    error,
                    status: self.http_status(),
                }
            }
        })
    }
}

/// A retryable outcome with no wait asked for.
pub(crate) fn retryable(error: String, status: Option<i64>) -> SendOutcome {
    SendOutcome::Retryable {
        error,
        status,
        retry_after_ms: None,
    }
}

/// The outcome for a token that could not be had: throttled when the token
/// endpoint said "slow down", else retryable.
pub(crate) fn token_outcome(e: TokenError) -> SendOutcome {
    match e {
        TokenError::Throttled(_) => SendOutcome::Throttled {
            error: e.to_string(),
            status: None,
            retry_after_ms: None,
        },
        TokenError::Failed(_) => retryable(e.to_string(), None),
    }
}

/// A call that got no HTTP answer. Retryable by nature.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{method} {path}: {reason}")]
pub(crate) struct CallError {
    method: &'static str,
    path: String,
    reason: String,
}

/// One provider's HTTP client: base URL, timeout and trusted roots.
#[derive(Debug, Clone)]
pub(crate) struct ProviderHttp {
    client: reqwest::Client,
    base: String,
    timeout: Duration,
}

impl ProviderHttp {
    /// A client for `base` (no trailing slash needed) honouring the channel's
    /// `timeout_ms` and concurrency, trusting `ca_file` beside the web roots.
    pub fn new(
        cfg: &CommonSettings,
        ca_file: Option<&str>,
        base: &str,
    ) -> Result<Self, ChannelError> {
        check_base(base).map_err(|e| cfg.err(&format!("api_base: {e}")))?;
        let timeout = Duration::from_millis(cfg.timeout_ms);
        let mut builder = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(5)))
            .pool_max_idle_per_host(cfg.concurrency.max(1))
            .user_agent(concat!("herald/", env!("CARGO_PKG_VERSION")))
            .redirect(reqwest::redirect::Policy::none());
        if let Some(path) = ca_file {
            let pem = std::fs::read(path)
                .map_err(|e| cfg.err(&format!("ca_file: cannot read {path}: {e}")))?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem)
                .map_err(|e| cfg.err(&format!("ca_file: {path}: {e}")))?;
            if certs.is_empty() {
                return Err(cfg.err(&format!("ca_file: {path} holds no PEM certificate")));
            }
            for c in certs {
                builder = builder.add_root_certificate(c);
            }
        }
        let client = builder
            .build()
            .map_err(|e| cfg.err(&format!("cannot build the HTTP client: {e}")))?;
        Ok(Self {
            client,
            base: base.trim_end_matches('/').to_string(),
            timeout,
        })
    }

    /// `base` + `path` (`path` starts with `/`).
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// Sends `req` (built against a URL made by [`ProviderHttp::url`] or any
    /// other) and reads the answer. `path` is what errors call the request.
    pub async fn call(
        &self,
        req: reqwest::RequestBuilder,
        method: &'static str,
        path: &str,
    ) -> Result<Answer, CallError> {
        let fail = |reason: String| CallError {
            method,
            path: path.to_string(),
            reason,
        };
        let resp = req.send().await.map_err(|e| fail(self.describe(e)))?;
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let mut resp = resp;
        let mut body = Vec::new();
        loop {
            match resp.chunk().await {
                Ok(Some(chunk)) => {
                    if body.len() + chunk.len() > MAX_ANSWER_BYTES {
                        return Err(fail(format!(
                            "HTTP {status}: answer longer than {MAX_ANSWER_BYTES} bytes"
                        )));
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                Err(e) => return Err(fail(self.describe(e))),
            }
        }
        Ok(Answer {
            status,
            headers,
            body,
        })
    }

    pub fn get(&self, url: &str) -> reqwest::RequestBuilder {
        self.client.get(url)
    }

    pub fn post(&self, url: &str) -> reqwest::RequestBuilder {
        self.client.post(url)
    }

    /// A reqwest error in words, without its URL (which may hold a token).
    fn describe(&self, e: reqwest::Error) -> String {
        if e.is_timeout() {
            return format!("timeout after {} ms", self.timeout.as_millis());
        }
        let kind = if e.is_connect() {
            "cannot connect"
        } else if e.is_body() || e.is_decode() {
            "broken answer"
        } else {
            "request failed"
        };
        let e = e.without_url();
        let mut text = format!("{kind}: {e}");
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            text.push_str(": ");
            text.push_str(&s.to_string());
            source = s.source();
        }
        redact_query(&text)
    }
}

/// Checks that `base` is an absolute `http(s)://` URL without query.
fn check_base(base: &str) -> Result<(), String> {
    let url = reqwest::Url::parse(base).map_err(|e| format!("{base:?}: {e}"))?;
    if url.scheme() != "http" && url.scheme() != "https" {
        return Err(format!("{base:?}: must be http:// or https://"));
    }
    if url.query().is_some() {
        return Err(format!("{base:?}: must not have a query string"));
    }
    Ok(())
}

/// Replaces the values of credential-looking query parameters in `text`.
pub(crate) fn redact_query(text: &str) -> String {
    const NAMES: [&str; 4] = ["access_token=", "secret=", "corpsecret=", "assertion="];
    let mut out = text.to_string();
    for name in NAMES {
        let mut from = 0;
        while let Some(pos) = out[from..].find(name) {
            let start = from + pos + name.len();
            let end = out[start..]
                .find(['&', ' ', '"', ')', '\''])
                .map_or(out.len(), |e| start + e);
            out.replace_range(start..end, "<redacted>");
            from = start + "<redacted>".len();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_credentials_in_query_strings() {
        let s = redact_query(
            "GET http://x/cgi-bin/token?grant_type=a&appid=b&secret=S3CR3T&x=1 failed (access_token=TOK)",
        );
        assert!(!s.contains("S3CR3T"));
        assert!(!s.contains("TOK)"));
        assert!(s.contains("appid=b"));
        assert!(s.contains("&x=1"));
        assert_eq!(format!("{:?}", Secret::new("x".into())), "<redacted>");
    }

    #[test]
    fn bases_must_be_absolute_http() {
        assert!(check_base("https://api.weixin.qq.com").is_ok());
        assert!(check_base("http://127.0.0.1:9/").is_ok());
        assert!(check_base("ftp://x").is_err());
        assert!(check_base("nope").is_err());
        assert!(check_base("http://x/?a=1").is_err());
    }
}
