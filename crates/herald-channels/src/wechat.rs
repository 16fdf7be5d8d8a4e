//! The `wechat` channel: Official Account template messages.
//!
//! One `POST /cgi-bin/message/template/send` per delivery, authenticated by an
//! access token that the whole deployment shares through [`TokenCache`]
//! (`/cgi-bin/stable_token` by default, `/cgi-bin/token` in `classic` mode).
//!
//! WeChat answers HTTP 200 with an `errcode`; the outcome follows it:
//!
//! | errcode | outcome |
//! |---|---|
//! | 0 | delivered, `msgid` recorded |
//! | 40001, 40014, 42001 | token rejected: expire it (compare-and-expire), refresh once, send once more; a second rejection is retryable |
//! | -1 | retryable (system busy; the engine backs off) |
//! | 45009, 45011 | throttled (quota): the channel pauses, no attempt used |
//! | anything else (40003, 43004, 43019, 40037, ...) | permanent |
//!
//! Transport failures and HTTP 5xx are retryable. A token endpoint failure is
//! retryable, or throttled if the token endpoint itself said 45009.
//!
//! **Idempotency.** The delivery's idempotency key goes into `client_msg_id`,
//! which WeChat uses to drop a repeat for the same openid within 10 minutes.
//! Its length limit is not documented (mass-send has an error 45067
//! "clientmsgid size out of limit"), so a key longer than 32 bytes, or with
//! characters outside `[A-Za-z0-9._:-]`, is sent as the first 32 hex digits of
//! its SHA-256: the same key always maps to the same id.

use async_trait::async_trait;

use crate::token_cache::TokenUse;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::provider_http::{Answer, ProviderHttp, Secret};
use crate::token_cache::{FetchHint, FetchedToken, TokenCache, TokenCacheOptions, TokenError};
use crate::{
    BuildContext, Channel, ChannelConfig, ChannelError, ChannelKind, Delivery, ProviderStatus,
    SendOutcome, TokenMode,
};

/// The real API.
pub const DEFAULT_API_BASE: &str = "https://api.weixin.qq.com";
/// Longest `client_msg_id` sent.
pub const MAX_CLIENT_MSG_ID: usize = 32;

/// Codes that mean "this access token is not (or no longer) valid".
pub(crate) const TOKEN_CODES: [i64; 3] = [40001, 40014, 42001];
/// WeChat-family code for "system busy".
pub(crate) const SYSTEM_BUSY: i64 = -1;

pub struct WechatChannel {
    name: String,
    appid: String,
    secret: Secret,
    mode: TokenMode,
    http: ProviderHttp,
    tokens: TokenCache,
}

impl std::fmt::Debug for WechatChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WechatChannel")
            .field("name", &self.name)
            .field("appid", &self.appid)
            .field("secret", &self.secret)
            .field("mode", &self.mode)
            .finish()
    }
}

impl WechatChannel {
    pub fn new(cfg: &ChannelConfig, ctx: &BuildContext) -> Result<Self, ChannelError> {
        Self::with_options(cfg, ctx, TokenCacheOptions::default())
    }

    /// As [`WechatChannel::new`], with the token cache's clock and margins.
    pub fn with_options(
        cfg: &ChannelConfig,
        ctx: &BuildContext,
        opts: TokenCacheOptions,
    ) -> Result<Self, ChannelError> {
        let appid = required(cfg, "appid", &cfg.appid)?;
        let secret = cfg.resolved_secret()?.ok_or_else(|| {
            cfg.err("a wechat channel needs secret or secret_env (the AppSecret)")
        })?;
        let base = cfg.api_base.as_deref().unwrap_or(DEFAULT_API_BASE);
        let http = ProviderHttp::new(cfg, base)?;
        let tokens = TokenCache::new(
            format!("wechat:{appid}"),
            ctx.vault.clone(),
            ctx.node_id.clone(),
            opts,
        );
        Ok(Self {
            name: cfg.name.clone(),
            appid,
            secret: Secret::new(secret),
            mode: cfg.token_mode.unwrap_or_default(),
            http,
            tokens,
        })
    }

    async fn token(&self) -> Result<String, TokenError> {
        self.tokens.get(|hint| self.fetch_token(hint)).await
    }

    async fn fetch_token(&self, hint: FetchHint) -> Result<FetchedToken, TokenError> {
        match self.mode {
            TokenMode::Classic => {
                let path = "/cgi-bin/token";
                let req = self.http.get(&self.http.url(path)).query(&[
                    ("grant_type", "client_credential"),
                    ("appid", self.appid.as_str()),
                    ("secret", self.secret.expose()),
                ]);
                let answer = self
                    .http
                    .call(req, "GET", path)
                    .await
                    .map_err(|e| TokenError::Failed(e.to_string()))?;
                parse_token_answer(&answer, path)
            }
            TokenMode::Stable => {
                let got = self.fetch_stable(false).await?;
                // Normal mode hands out the same token while it is valid; if
                // that is the one just rejected, only a forced refresh helps.
                if hint.rejected.as_deref() == Some(got.token.as_str()) {
                    tracing::info!(channel = %self.name, "stable token was rejected; forcing a refresh");
                    return self.fetch_stable(true).await;
                }
                Ok(got)
            }
        }
    }

    async fn fetch_stable(&self, force_refresh: bool) -> Result<FetchedToken, TokenError> {
        let path = "/cgi-bin/stable_token";
        let body = serde_json::json!({
            "grant_type": "client_credential",
            "appid": self.appid,
            "secret": self.secret.expose(),
            "force_refresh": force_refresh,
        });
        let req = self.http.post(&self.http.url(path)).json(&body);
        let answer = self
            .http
            .call(req, "POST", path)
            .await
            .map_err(|e| TokenError::Failed(e.to_string()))?;
        parse_token_answer(&answer, path)
    }

    /// One template send with `token`.
    async fn post(&self, token: &str, body: &Value) -> Result<Answer, SendOutcome> {
        let path = "/cgi-bin/message/template/send";
        let req = self
            .http
            .post(&self.http.url(path))
            .query(&[("access_token", token)])
            .json(body);
        self.http
            .call(req, "POST", path)
            .await
            .map_err(|e| retryable(e.to_string(), None))
    }
}

pub(crate) fn required(
    cfg: &ChannelConfig,
    field: &str,
    v: &Option<String>,
) -> Result<String, ChannelError> {
    match v.as_deref().map(str::trim) {
        Some(s) if !s.is_empty() => Ok(s.to_string()),
        _ => Err(cfg.err(&format!("a {} channel needs {field}", cfg.kind.as_str()))),
    }
}

pub(crate) fn retryable(error: String, status: Option<i64>) -> SendOutcome {
    SendOutcome::Retryable {
        error,
        status,
        retry_after_ms: None,
    }
}

/// A WeChat-family token endpoint answer: `{access_token, expires_in}` or
/// `{errcode, errmsg}`.
pub(crate) fn parse_token_answer(answer: &Answer, path: &str) -> Result<FetchedToken, TokenError> {
    let Some(v) = answer.json() else {
        return Err(TokenError::Failed(format!(
            "{path}: HTTP {} with a non-JSON answer",
            answer.status
        )));
    };
    let code = v.get("errcode").and_then(Value::as_i64).unwrap_or(0);
    let msg = v.get("errmsg").and_then(Value::as_str).unwrap_or("");
    if code == 45009 || code == 45011 {
        return Err(TokenError::Throttled(format!(
            "{path}: errcode {code}: {msg}"
        )));
    }
    if code != 0 {
        return Err(TokenError::Failed(format!("{path}: errcode {code}: {msg}")));
    }
    match (
        v.get("access_token").and_then(Value::as_str),
        v.get("expires_in").and_then(Value::as_i64),
    ) {
        (Some(t), Some(secs)) if !t.is_empty() => Ok(FetchedToken {
            token: t.to_string(),
            expires_in_secs: secs,
        }),
        _ => Err(TokenError::Failed(format!(
            "{path}: HTTP {}: answer has no access_token/expires_in",
            answer.status
        ))),
    }
}

/// The outcome for a token that could not be had.
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

/// `client_msg_id` for an idempotency key (see the module docs).
pub fn client_msg_id(key: &str) -> String {
    let plain = key.len() <= MAX_CLIENT_MSG_ID
        && !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'));
    if plain {
        return key.to_string();
    }
    let digest = hex::encode(Sha256::digest(key.as_bytes()));
    digest[..MAX_CLIENT_MSG_ID].to_string()
}

/// The send body: the message object with `touser` and `client_msg_id` set.
fn template_body(d: &Delivery) -> Result<Value, String> {
    let mut msg: Map<String, Value> = match serde_json::from_str(&d.message) {
        Ok(Value::Object(m)) => m,
        Ok(_) => return Err("the wechat message must be a JSON object".into()),
        Err(e) => return Err(format!("the wechat message is not JSON: {e}")),
    };
    match msg.get("template_id") {
        Some(Value::String(s)) if !s.trim().is_empty() => {}
        _ => return Err("the wechat message needs template_id (a non-empty string)".into()),
    }
    match msg.get("data") {
        Some(Value::Object(_)) => {}
        _ => return Err("the wechat message needs data (an object of template fields)".into()),
    }
    if d.recipient.trim().is_empty() {
        return Err("the recipient (an openid) is empty".into());
    }
    msg.insert("touser".into(), Value::String(d.recipient.clone()));
    msg.insert(
        "client_msg_id".into(),
        Value::String(client_msg_id(&d.idempotency_key)),
    );
    Ok(Value::Object(msg))
}

/// What one template-send answer means.
enum Verdict {
    Done(SendOutcome),
    TokenRejected(SendOutcome),
}

fn classify(answer: &Answer) -> Verdict {
    let http = i64::from(answer.status);
    if answer.status == 429 {
        return Verdict::Done(SendOutcome::Throttled {
            error: format!("HTTP 429: {}", answer.snippet()),
            status: Some(http),
            retry_after_ms: answer.retry_after_ms(),
        });
    }
    if answer.status >= 500 {
        return Verdict::Done(SendOutcome::Retryable {
            error: format!("HTTP {}: {}", answer.status, answer.snippet()),
            status: Some(http),
            retry_after_ms: answer.retry_after_ms(),
        });
    }
    let Some(v) = answer.json() else {
        let error = format!(
            "HTTP {}: non-JSON answer: {}",
            answer.status,
            answer.snippet()
        );
        return Verdict::Done(if (200..300).contains(&answer.status) {
            retryable(error, Some(http))
        } else {
            SendOutcome::Permanent {
                error,
                status: Some(http),
            }
        });
    };
    let code = v.get("errcode").and_then(Value::as_i64).unwrap_or(0);
    let msg = v.get("errmsg").and_then(Value::as_str).unwrap_or("");
    let error = format!("errcode {code}: {msg}");
    let status = Some(code);
    match code {
        0 if (200..300).contains(&answer.status) => Verdict::Done(SendOutcome::Delivered {
            provider_msgid: v.get("msgid").and_then(msgid_text),
            status,
        }),
        0 => Verdict::Done(SendOutcome::Permanent {
            error: format!("HTTP {}: {}", answer.status, answer.snippet()),
            status: Some(http),
        }),
        c if TOKEN_CODES.contains(&c) => Verdict::TokenRejected(retryable(error, status)),
        SYSTEM_BUSY => Verdict::Done(retryable(error, status)),
        45009 | 45011 => Verdict::Done(SendOutcome::Throttled {
            error,
            status,
            retry_after_ms: None,
        }),
        _ => Verdict::Done(SendOutcome::Permanent { error, status }),
    }
}

/// A msgid as text, whether the provider sent a number or a string.
pub(crate) fn msgid_text(v: &Value) -> Option<String> {
    match v {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        _ => None,
    }
}

#[async_trait]
impl Channel for WechatChannel {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> ChannelKind {
        ChannelKind::Wechat
    }

    async fn send(&self, d: &Delivery) -> SendOutcome {
        let body = match template_body(d) {
            Ok(b) => b,
            Err(error) => {
                return SendOutcome::Permanent {
                    error,
                    status: None,
                };
            }
        };
        let body = &body;
        let outcome = self
            .tokens
            .with_refresh(
                || self.token(),
                |token| async move {
                    match self.post(&token, body).await {
                        Ok(answer) => match classify(&answer) {
                            Verdict::Done(o) => TokenUse::Answered(o),
                            Verdict::TokenRejected(o) => TokenUse::Rejected(o),
                        },
                        Err(o) => TokenUse::Answered(o),
                    }
                },
            )
            .await
            .unwrap_or_else(token_outcome);
        tracing::debug!(channel = %self.name, timer_id = d.timer_id, class = outcome.class(), "wechat template send");
        outcome
    }

    async fn provider_status(&self) -> ProviderStatus {
        ProviderStatus {
            token_valid_until: self.tokens.valid_until().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_msg_ids_are_short_and_stable() {
        assert_eq!(client_msg_id("t42-a1"), "t42-a1");
        let long = "x".repeat(80);
        let a = client_msg_id(&long);
        assert_eq!(a.len(), MAX_CLIENT_MSG_ID);
        assert_eq!(a, client_msg_id(&long));
        assert_ne!(a, client_msg_id(&"y".repeat(80)));
        assert_eq!(client_msg_id("has space").len(), MAX_CLIENT_MSG_ID);
        assert_eq!(client_msg_id(&"k".repeat(32)), "k".repeat(32));
    }

    fn delivery(message: &str) -> Delivery {
        Delivery {
            timer_id: 1,
            kind: herald_core::TimerKind::Reminder,
            due_at: 0,
            fired_at: 0,
            attempt: 1,
            recipient: "oOPENID".into(),
            message: message.into(),
            idempotency_key: "k1".into(),
        }
    }

    #[test]
    fn bodies_need_template_id_and_data() {
        let b = template_body(&delivery(
            r#"{"template_id":"T","data":{"a":{"value":"1"}},"url":"http://u"}"#,
        ))
        .unwrap();
        assert_eq!(b["touser"], "oOPENID");
        assert_eq!(b["client_msg_id"], "k1");
        assert_eq!(b["url"], "http://u");
        assert!(
            template_body(&delivery(r#"{"data":{}}"#))
                .unwrap_err()
                .contains("template_id")
        );
        assert!(
            template_body(&delivery(r#"{"template_id":"T"}"#))
                .unwrap_err()
                .contains("data")
        );
        assert!(template_body(&delivery("[1]")).is_err());
    }
}
