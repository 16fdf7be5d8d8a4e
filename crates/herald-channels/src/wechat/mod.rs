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
//!
//! **Delivery reports.** Once a message has reached the user (or not), WeChat
//! posts a `TEMPLATESENDJOBFINISH` event to the account's server URL; pointed
//! at `POST /v1/channels/{name}/callback`, it is read by
//! [`Channel::parse_callback`] (see `callback.rs`). With `callback_token`
//! set, a callback must carry WeChat's signature (and, with
//! `encoding_aes_key`, come encrypted): see `verify.rs` and `crypt.rs`.

mod callback;
#[cfg(test)]
mod callback_props;
pub mod crypt;
mod subscribe;
pub mod verify;

pub use self::subscribe::NO_GRANT;

use self::verify::CallbackAuth;

use async_trait::async_trait;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::provider_http::{Answer, ProviderHttp, Secret, retryable, token_outcome};
use crate::token_cache::{
    FetchHint, FetchedToken, TokenCache, TokenCacheOptions, TokenError, TokenUse,
};
use crate::weixin::{
    QUOTA_CODES, SYSTEM_BUSY, TOKEN_CODES, errcode, msgid_text, parse_token_answer,
};
use crate::{
    BuildContext, CallbackError, CallbackEvent, CallbackRequest, Channel, ChannelError,
    ChannelKind, CommonSettings, Delivery, ProviderStatus, SendOutcome, TokenMode, WechatConfig,
    WechatMiniConfig,
};

/// The real API.
pub const DEFAULT_API_BASE: &str = "https://api.weixin.qq.com";
/// Longest `client_msg_id` sent.
pub const MAX_CLIENT_MSG_ID: usize = 32;

/// Which WeChat API the channel sends through: both take the same access
/// token (`/cgi-bin/token` of the app's appid) and answer in `errcode`.
#[derive(Debug, Clone)]
enum Product {
    /// Official Account template messages.
    OfficialAccount,
    /// Mini-program subscribe messages, with the channel's defaults for
    /// the fields a message may leave out.
    MiniProgram {
        state: Option<String>,
        lang: Option<String>,
    },
}

pub struct WechatChannel {
    name: String,
    product: Product,
    appid: String,
    secret: Secret,
    mode: TokenMode,
    http: ProviderHttp,
    tokens: TokenCache,
    /// How callbacks prove they come from WeChat; `None`: they are unsigned.
    callback: Option<CallbackAuth>,
}

impl std::fmt::Debug for WechatChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WechatChannel")
            .field("name", &self.name)
            .field("product", &self.product)
            .field("appid", &self.appid)
            .field("secret", &self.secret)
            .field("mode", &self.mode)
            .field("callback", &self.callback)
            .finish()
    }
}

impl WechatChannel {
    pub fn new(
        common: &CommonSettings,
        cfg: &WechatConfig,
        ctx: &BuildContext,
    ) -> Result<Self, ChannelError> {
        Self::with_options(common, cfg, ctx, TokenCacheOptions::default())
    }

    /// As [`WechatChannel::new`], with the token cache's clock and margins.
    pub fn with_options(
        common: &CommonSettings,
        cfg: &WechatConfig,
        ctx: &BuildContext,
        opts: TokenCacheOptions,
    ) -> Result<Self, ChannelError> {
        let appid = cfg.appid.trim().to_string();
        if appid.is_empty() {
            return Err(common.err("appid must not be empty"));
        }
        let secret = cfg.secret.resolve("secret").map_err(|e| common.err(&e))?;
        let base = cfg.api_base.as_deref().unwrap_or(DEFAULT_API_BASE);
        let http = ProviderHttp::new(common, cfg.ca_file.as_deref(), base)?;
        let callback = callback_auth(common, cfg, &appid)?;
        if callback.is_none() {
            tracing::warn!(
                channel = %common.name,
                "wechat channel without callback_token: its delivery callbacks are unsigned, so only the admin key may post them"
            );
        }
        let tokens = TokenCache::new(
            format!("wechat:{appid}"),
            ctx.vault.clone(),
            ctx.node_id.clone(),
            opts,
        );
        Ok(Self {
            name: common.name.clone(),
            product: Product::OfficialAccount,
            appid,
            secret: Secret::new(secret),
            mode: cfg.token_mode,
            http,
            tokens,
            callback,
        })
    }

    /// A mini-program channel: subscribe messages, on the token of the
    /// mini-program's own appid. No callbacks.
    pub fn mini(
        common: &CommonSettings,
        cfg: &WechatMiniConfig,
        ctx: &BuildContext,
    ) -> Result<Self, ChannelError> {
        Self::mini_with_options(common, cfg, ctx, TokenCacheOptions::default())
    }

    /// As [`WechatChannel::mini`], with the token cache's clock and margins.
    pub fn mini_with_options(
        common: &CommonSettings,
        cfg: &WechatMiniConfig,
        ctx: &BuildContext,
        opts: TokenCacheOptions,
    ) -> Result<Self, ChannelError> {
        let appid = cfg.appid.trim().to_string();
        if appid.is_empty() {
            return Err(common.err("appid must not be empty"));
        }
        let secret = cfg.secret.resolve("secret").map_err(|e| common.err(&e))?;
        let base = cfg.api_base.as_deref().unwrap_or(DEFAULT_API_BASE);
        let http = ProviderHttp::new(common, cfg.ca_file.as_deref(), base)?;
        // Same key as an official account's: one appid, one token, whichever
        // kind of channel asks for it.
        let tokens = TokenCache::new(
            format!("wechat:{appid}"),
            ctx.vault.clone(),
            ctx.node_id.clone(),
            opts,
        );
        Ok(Self {
            name: common.name.clone(),
            product: Product::MiniProgram {
                state: cfg.miniprogram_state.clone(),
                lang: cfg.lang.clone(),
            },
            appid,
            secret: Secret::new(secret),
            mode: cfg.token_mode,
            http,
            tokens,
            callback: None,
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

    /// One send with `token`.
    async fn post(&self, token: &str, body: &Value) -> Result<Answer, SendOutcome> {
        let path = match self.product {
            Product::OfficialAccount => "/cgi-bin/message/template/send",
            Product::MiniProgram { .. } => subscribe::SEND_PATH,
        };
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

/// The callback secrets of a channel's config, checked.
fn callback_auth(
    common: &CommonSettings,
    cfg: &WechatConfig,
    appid: &str,
) -> Result<Option<CallbackAuth>, ChannelError> {
    let Some(token) = &cfg.callback_token else {
        if cfg.encoding_aes_key.is_some() {
            return Err(common.err("encoding_aes_key needs callback_token"));
        }
        return Ok(None);
    };
    let token = token
        .resolve("callback_token")
        .map_err(|e| common.err(&e))?;
    if token.trim().is_empty() {
        return Err(common.err("callback_token must not be empty"));
    }
    let crypt = match &cfg.encoding_aes_key {
        Some(key) => {
            let key = key
                .resolve("encoding_aes_key")
                .map_err(|e| common.err(&e))?;
            Some(
                crypt::MsgCrypt::new(&key)
                    .map_err(|e| common.err(&format!("encoding_aes_key: {e}")))?,
            )
        }
        None => None,
    };
    Ok(Some(CallbackAuth::new(token, crypt, appid.to_string())))
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
    crate::shape::check(crate::ChannelKind::Wechat, &Value::Object(msg.clone()))
        .map_err(|e| e.message)?;
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
    if let Some(o) = answer.overload() {
        return Verdict::Done(o);
    }
    let v = match answer.json_or_outcome() {
        Ok(v) => v,
        Err(o) => return Verdict::Done(o),
    };
    let (code, msg) = errcode(&v);
    let error = format!("errcode {code}: {msg}");
    let status = Some(code);
    match code {
        0 if answer.is_success() => Verdict::Done(SendOutcome::Delivered {
            provider_msgid: v.get("msgid").and_then(msgid_text),
            status,
        }),
        0 => Verdict::Done(answer.rejected()),
        c if TOKEN_CODES.contains(&c) => Verdict::TokenRejected(retryable(error, status)),
        SYSTEM_BUSY => Verdict::Done(retryable(error, status)),
        c if QUOTA_CODES.contains(&c) => Verdict::Done(SendOutcome::Throttled {
            error,
            status,
            retry_after_ms: None,
        }),
        _ => Verdict::Done(SendOutcome::Permanent { error, status }),
    }
}

#[async_trait]
impl Channel for WechatChannel {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> ChannelKind {
        match self.product {
            Product::OfficialAccount => ChannelKind::Wechat,
            Product::MiniProgram { .. } => ChannelKind::WechatMini,
        }
    }

    fn grant_refused(&self, outcome: &SendOutcome) -> bool {
        matches!(self.product, Product::MiniProgram { .. }) && subscribe::is_no_grant(outcome)
    }

    async fn send(&self, d: &Delivery) -> SendOutcome {
        let built = match &self.product {
            Product::OfficialAccount => template_body(d),
            Product::MiniProgram { state, lang } => {
                subscribe::body(d, state.as_deref(), lang.as_deref())
            }
        };
        let body = match built {
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
        tracing::debug!(channel = %self.name, kind = %self.kind(), timer_id = d.timer_id, class = outcome.class(), "wechat send");
        outcome
    }

    async fn provider_status(&self) -> ProviderStatus {
        ProviderStatus {
            token_valid_until: self.tokens.valid_until().await,
        }
    }

    fn token_key(&self) -> Option<&str> {
        Some(self.tokens.key())
    }

    /// The `TEMPLATESENDJOBFINISH` event WeChat posts once a message has
    /// reached the user, or not; checked and decrypted first when the
    /// channel has callback secrets.
    fn parse_callback(
        &self,
        req: &CallbackRequest<'_>,
    ) -> Result<Vec<CallbackEvent>, CallbackError> {
        let body = match &self.callback {
            Some(auth) => auth.open(req)?,
            None => std::borrow::Cow::Borrowed(req.body),
        };
        callback::parse_template_event(&body).map(|ev| vec![ev])
    }

    fn callback_signed(&self) -> bool {
        self.callback.is_some()
    }

    fn callback_handshake(&self, req: &CallbackRequest<'_>) -> Result<String, CallbackError> {
        match &self.callback {
            Some(auth) => auth.handshake(req),
            None => Err(CallbackError::Unsupported),
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
            traceparent: None,
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
