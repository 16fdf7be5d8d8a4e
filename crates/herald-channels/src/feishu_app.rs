//! The `feishu_app` channel: Feishu (飞书) / Lark messages sent by a custom
//! app's bot to one user or chat each (reference `china-providers.md` §6.1,
//! §6.2).
//!
//! The app authenticates with `POST /open-apis/auth/v3/tenant_access_token/internal`
//! (`app_id`, `app_secret`): a token of at most 2 h, shared by every node
//! through [`TokenCache`] under `feishu_app:{app_id}`.
//! `POST /open-apis/im/v1/messages?receive_id_type=` sends one message to one
//! `receive_id` (an `open_id` by default; the channel's `receive_id_type`
//! says which kind of id a recipient is).
//!
//! **One call per recipient.** Feishu also has a batch API
//! (`/open-apis/message/v4/batch_send/`, §6.3), but it is asynchronous,
//! needs extra scopes, reports bad ids in lists whose names the reference
//! could not confirm, and takes no `uuid`, so a batch retried after a lost
//! answer would reach everyone twice. Sending each recipient its own call
//! keeps every delivery idempotent and its outcome its own; the cost is one
//! call a recipient, within Feishu's 50 a second for the app.
//!
//! **Idempotency.** Feishu sends a message once per `uuid` within an hour
//! (§6.2; the window is marked unverified there). The channel sets `uuid`
//! to the first 32 hex digits of SHA-256 of the delivery's idempotency key:
//! the key itself can be longer than the 50 characters `uuid` takes, and a
//! hash of it is the same on every attempt and every node. A send retried
//! after a lost answer, or resent when in doubt, is therefore dropped by
//! Feishu if the first one got through, which is why `in_doubt` defaults to
//! `resend` for this kind (a resend later than an hour would not be caught;
//! in-doubt sends are resolved within minutes).
//!
//! | answer | outcome |
//! |---|---|
//! | `0` | delivered, `data.message_id` recorded |
//! | `99991661`, `99991663`, `99991668` (token missing, invalid, expired) | expire the token, fetch one, send once more |
//! | `99991400` (app rate limit), `230020` (5 a second to one user or chat), HTTP 429 | throttled |
//! | HTTP 5xx, no answer | retryable |
//! | `230013`, `99992361`, `99992402` (receive id unknown, out of the bot's scope or malformed) | permanent, naming the id |
//! | any other code (`230001`, `230002`, `230099`, ...) | permanent |

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::message_fields::{ShapeError, err};
use crate::provider_http::{Answer, ProviderHttp, Secret, retryable, token_outcome};
use crate::robots::message::RobotMessage;
use crate::token_cache::{FetchedToken, TokenCache, TokenCacheOptions, TokenError, TokenUse};
use crate::{
    BuildContext, Channel, ChannelError, ChannelKind, CommonSettings, Delivery, FeishuAppConfig,
    ProviderStatus, SendOutcome,
};

/// The real API (Lark: `https://open.larksuite.com`, same paths).
pub const DEFAULT_API_BASE: &str = "https://open.feishu.cn";
/// The kinds of id a recipient may be.
pub const RECEIVE_ID_TYPES: [&str; 5] = ["open_id", "user_id", "union_id", "email", "chat_id"];
/// Message types `im/v1/messages` takes.
pub const MSG_TYPES: [&str; 10] = [
    "text",
    "post",
    "image",
    "file",
    "audio",
    "media",
    "sticker",
    "interactive",
    "share_chat",
    "share_user",
];
/// Largest `content` of a text message, in bytes (about 150 KB [unverified]).
pub const MAX_TEXT_BYTES: usize = 150 * 1024;
/// Largest `content` of the other types (cards and posts about 30 KB
/// [unverified]).
pub const MAX_CARD_BYTES: usize = 30 * 1024;

const TOKEN_PATH: &str = "/open-apis/auth/v3/tenant_access_token/internal";
const SEND_PATH: &str = "/open-apis/im/v1/messages";
/// Tenant token missing, invalid, expired.
const TOKEN_CODES: [i64; 3] = [99991661, 99991663, 99991668];
/// The app's rate limit, and 5 a second to one user or chat.
const THROTTLE_CODES: [i64; 2] = [99991400, 230020];
/// The receive id: out of the bot's availability, of another app, malformed.
const BAD_RECEIVER: [i64; 3] = [230013, 99992361, 99992402];

/// The `msg_type` and `content` (a JSON object, serialized when sent) of a
/// message: Herald's robot shape (`{text}`, or `{markdown, title}` as a card
/// with one Markdown element) or Feishu's own (`{msg_type, content}`).
pub fn check_message(m: &Map<String, Value>) -> Result<(String, Value), ShapeError> {
    let (ty, content) = if m.contains_key("msg_type") {
        native(m)?
    } else if m.contains_key("msgtype") {
        return Err(err(
            "msgtype",
            "a feishu_app message names its type with \"msg_type\", not \"msgtype\"",
        ));
    } else {
        match crate::robots::message::common(m, None)? {
            RobotMessage::Text(text) => ("text".to_string(), json!({ "text": text })),
            RobotMessage::Markdown { title, text } => {
                let mut card = json!({
                    "config": {"wide_screen_mode": true},
                    "elements": [{"tag": "markdown", "content": text}],
                });
                if let Some(t) = title {
                    card["header"] = json!({"title": {"tag": "plain_text", "content": t}});
                }
                ("interactive".to_string(), card)
            }
            RobotMessage::Native(n) => return native(&n),
        }
    };
    let bytes = content.to_string().len();
    let most = if ty == "text" {
        MAX_TEXT_BYTES
    } else {
        MAX_CARD_BYTES
    };
    if bytes > most {
        return Err(err(
            "content",
            format!(
                "the feishu_app {ty} content is {bytes} bytes as JSON; Feishu takes at most {most}"
            ),
        ));
    }
    Ok((ty, content))
}

/// Feishu's own shape: a known `msg_type` and its `content` object (what
/// `im/v1/messages` takes as a JSON string), and nothing else.
fn native(m: &Map<String, Value>) -> Result<(String, Value), ShapeError> {
    let ty = match m.get("msg_type") {
        Some(Value::String(s)) if MSG_TYPES.contains(&s.as_str()) => s.clone(),
        _ => {
            return Err(err(
                "msg_type",
                format!("a feishu_app msg_type is one of {}", MSG_TYPES.join(", ")),
            ));
        }
    };
    let content = match m.get("content") {
        Some(Value::Object(c)) => Value::Object(c.clone()),
        _ => {
            return Err(err(
                "content",
                format!("a feishu_app message of msg_type {ty:?} needs a content object"),
            ));
        }
    };
    if ty == "text"
        && content
            .get("text")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
    {
        return Err(err("content.text", "a feishu_app text needs content.text"));
    }
    if let Some(k) = m.keys().find(|k| *k != "msg_type" && *k != "content") {
        return Err(err(
            k.as_str(),
            format!("a feishu_app message holds msg_type and content only, not {k:?}"),
        ));
    }
    Ok((ty, content))
}

/// The `uuid` of a delivery (see the module docs): 32 hex digits of the
/// SHA-256 of its idempotency key.
pub fn uuid_for(idempotency_key: &str) -> String {
    let digest = Sha256::digest(idempotency_key.as_bytes());
    hex::encode(&digest[..16])
}

pub struct FeishuAppChannel {
    name: String,
    app_id: String,
    app_secret: Secret,
    receive_id_type: String,
    http: ProviderHttp,
    tokens: TokenCache,
}

impl std::fmt::Debug for FeishuAppChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FeishuAppChannel")
            .field("name", &self.name)
            .field("app_id", &self.app_id)
            .field("app_secret", &self.app_secret)
            .field("receive_id_type", &self.receive_id_type)
            .finish()
    }
}

/// An answer's `code` (0 when absent) and `msg`.
fn code_of(v: &Value) -> (i64, String) {
    (
        v.get("code").and_then(Value::as_i64).unwrap_or(0),
        v.get("msg")
            .and_then(Value::as_str)
            .unwrap_or("")
            .chars()
            .take(300)
            .collect(),
    )
}

/// What a send answer means. Feishu answers errors with a 4xx status and a
/// `code` in the body, so the code decides, the status only without one.
fn classify(answer: &Answer, receive_id: &str, id_type: &str) -> SendOutcome {
    let v = answer.json();
    let Some((code, msg)) = v
        .as_ref()
        .map(code_of)
        .filter(|(c, _)| *c != 0 || answer.is_success())
    else {
        if let Some(o) = answer.overload() {
            return o;
        }
        return match answer.json_or_outcome() {
            Ok(_) => answer.rejected(),
            Err(o) => o,
        };
    };
    let status = Some(code);
    let error = format!("feishu HTTP {} code {code}: {msg}", answer.status);
    match code {
        0 => SendOutcome::Delivered {
            provider_msgid: v
                .as_ref()
                .and_then(|v| v.pointer("/data/message_id"))
                .and_then(Value::as_str)
                .map(str::to_string),
            status,
        },
        c if THROTTLE_CODES.contains(&c) => SendOutcome::Throttled {
            error,
            status,
            retry_after_ms: answer.retry_after_ms(),
        },
        c if TOKEN_CODES.contains(&c) => retryable(error, status),
        c if BAD_RECEIVER.contains(&c) => SendOutcome::Permanent {
            error: format!(
                "Feishu cannot reach {id_type} {receive_id:?} (unknown, of another app, or outside the bot's availability): code {code}: {msg}"
            ),
            status,
        },
        _ if answer.status >= 500 => SendOutcome::Retryable {
            error,
            status,
            retry_after_ms: answer.retry_after_ms(),
        },
        _ => SendOutcome::Permanent { error, status },
    }
}

impl FeishuAppChannel {
    pub fn new(
        common: &CommonSettings,
        cfg: &FeishuAppConfig,
        ctx: &BuildContext,
    ) -> Result<Self, ChannelError> {
        Self::with_options(common, cfg, ctx, TokenCacheOptions::default())
    }

    /// As [`FeishuAppChannel::new`], with the token cache's clock and margins.
    pub fn with_options(
        common: &CommonSettings,
        cfg: &FeishuAppConfig,
        ctx: &BuildContext,
        opts: TokenCacheOptions,
    ) -> Result<Self, ChannelError> {
        cfg.check().map_err(|e| common.err(&e))?;
        let app_id = cfg.app_id.trim().to_string();
        let app_secret = cfg
            .app_secret
            .resolve("app_secret")
            .map_err(|e| common.err(&e))?;
        let base = cfg.api_base.as_deref().unwrap_or(DEFAULT_API_BASE);
        let http = ProviderHttp::new(common, cfg.ca_file.as_deref(), base)?;
        let tokens = TokenCache::new(
            format!("feishu_app:{app_id}"),
            ctx.vault.clone(),
            ctx.node_id.clone(),
            opts,
        );
        Ok(Self {
            name: common.name.clone(),
            app_id,
            app_secret: Secret::new(app_secret),
            receive_id_type: cfg
                .receive_id_type
                .clone()
                .unwrap_or_else(|| "open_id".to_string()),
            http,
            tokens,
        })
    }

    async fn token(&self) -> Result<String, TokenError> {
        self.tokens.get(|_hint| self.fetch_token()).await
    }

    async fn fetch_token(&self) -> Result<FetchedToken, TokenError> {
        let req = self
            .http
            .post(&self.http.url(TOKEN_PATH))
            .json(&json!({"app_id": self.app_id, "app_secret": self.app_secret.expose()}));
        let answer = self
            .http
            .call(req, "POST", TOKEN_PATH)
            .await
            .map_err(|e| TokenError::Failed(e.to_string()))?;
        let Some(v) = answer.json() else {
            return Err(TokenError::Failed(format!(
                "{TOKEN_PATH}: HTTP {} with a non-JSON answer",
                answer.status
            )));
        };
        let (code, msg) = code_of(&v);
        if answer.status == 429 || THROTTLE_CODES.contains(&code) {
            return Err(TokenError::Throttled(format!(
                "{TOKEN_PATH}: code {code}: {msg}"
            )));
        }
        match (
            v.get("tenant_access_token").and_then(Value::as_str),
            v.get("expire").and_then(Value::as_i64),
        ) {
            (Some(t), Some(secs)) if code == 0 && !t.is_empty() => Ok(FetchedToken {
                token: t.to_string(),
                expires_in_secs: secs,
            }),
            _ => Err(TokenError::Failed(format!(
                "{TOKEN_PATH}: HTTP {}: code {code}: {msg}",
                answer.status
            ))),
        }
    }
}

#[async_trait]
impl Channel for FeishuAppChannel {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> ChannelKind {
        ChannelKind::FeishuApp
    }

    async fn send(&self, d: &Delivery) -> SendOutcome {
        let receive_id = d.recipient.trim();
        if receive_id.is_empty() {
            return SendOutcome::Permanent {
                error: format!("the recipient (a Feishu {}) is empty", self.receive_id_type),
                status: None,
            };
        }
        let parsed = serde_json::from_str::<Value>(&d.message)
            .map_err(|e| format!("the message is not JSON: {e}"))
            .and_then(|v| match v.as_object() {
                Some(m) => check_message(m).map_err(|e| e.message),
                None => Err("the message must be a JSON object".into()),
            });
        let (msg_type, content) = match parsed {
            Ok(p) => p,
            Err(error) => {
                return SendOutcome::Permanent {
                    error,
                    status: None,
                };
            }
        };
        let body = json!({
            "receive_id": receive_id,
            "msg_type": msg_type,
            "content": content.to_string(),
            "uuid": uuid_for(&d.idempotency_key),
        });
        let url = self.http.url(SEND_PATH);
        let (url, body, id_type) = (&url, &body, self.receive_id_type.as_str());
        let outcome = self
            .tokens
            .with_refresh(
                || self.token(),
                |token| async move {
                    let req = self
                        .http
                        .post(url)
                        .query(&[("receive_id_type", id_type)])
                        .bearer_auth(&token)
                        .json(body);
                    match self.http.call(req, "POST", SEND_PATH).await {
                        Ok(answer) => {
                            let refused = answer
                                .json()
                                .is_some_and(|v| TOKEN_CODES.contains(&code_of(&v).0));
                            let o = classify(&answer, receive_id, id_type);
                            if refused {
                                TokenUse::Rejected(o)
                            } else {
                                TokenUse::Answered(o)
                            }
                        }
                        Err(e) => TokenUse::Answered(retryable(e.to_string(), None)),
                    }
                },
            )
            .await
            .unwrap_or_else(token_outcome);
        tracing::debug!(channel = %self.name, receive_id_type = id_type, class = outcome.class(), "feishu message sent");
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    fn answer(status: u16, body: Value) -> Answer {
        Answer {
            status,
            headers: Default::default(),
            body: body.to_string().into_bytes(),
        }
    }

    #[test]
    fn herald_and_feishu_shapes_become_type_and_content() {
        assert_eq!(
            check_message(&obj(json!({"text": "hi"}))).unwrap(),
            ("text".to_string(), json!({"text": "hi"}))
        );
        let (ty, card) =
            check_message(&obj(json!({"markdown": "**on call**", "title": "Rota"}))).unwrap();
        assert_eq!(ty, "interactive");
        assert_eq!(card["elements"][0]["content"], "**on call**");
        assert_eq!(card["header"]["title"]["content"], "Rota");
        let post = json!({"msg_type": "post", "content": {"zh_cn": {"title": "t", "content": [[{"tag": "text", "text": "x"}]]}}});
        assert_eq!(
            check_message(&obj(post.clone())).unwrap().1,
            post["content"]
        );
        let field = |v: Value| check_message(&obj(v)).unwrap_err().field;
        assert_eq!(
            field(json!({"msg_type": "card", "content": {}})),
            "msg_type"
        );
        assert_eq!(
            field(json!({"msg_type": "text", "content": "{\"text\":\"x\"}"})),
            "content"
        );
        assert_eq!(
            field(json!({"msg_type": "text", "content": {}})),
            "content.text"
        );
        assert_eq!(field(json!({"msgtype": "text"})), "msgtype");
        assert_eq!(
            field(json!({"msg_type": "text", "content": {"text": "x"}, "uuid": "u"})),
            "uuid"
        );
        let long = "x".repeat(MAX_CARD_BYTES);
        assert_eq!(field(json!({"markdown": long})), "content");
    }

    #[test]
    fn the_uuid_is_stable_short_and_distinct() {
        let a = uuid_for("herald-timer-1");
        assert_eq!(a, uuid_for("herald-timer-1"));
        assert_ne!(a, uuid_for("herald-timer-2"));
        assert_eq!(a.len(), 32);
        assert_eq!(uuid_for(&"k".repeat(500)).len(), 32);
    }

    #[test]
    fn answers_map_to_outcomes() {
        let class = |status: u16, v: Value| {
            classify(&answer(status, v), "ou_1", "open_id")
                .class()
                .to_string()
        };
        assert_eq!(
            class(
                200,
                json!({"code": 0, "msg": "success", "data": {"message_id": "om_1"}})
            ),
            "delivered"
        );
        assert_eq!(
            class(429, json!({"code": 99991400, "msg": "frequency limit"})),
            "throttled"
        );
        assert_eq!(
            class(400, json!({"code": 230020, "msg": "too fast"})),
            "throttled"
        );
        assert_eq!(
            class(400, json!({"code": 99991663, "msg": "invalid token"})),
            "retry"
        );
        assert_eq!(class(502, json!({"oops": 1})), "retry");
        assert_eq!(
            class(400, json!({"code": 230001, "msg": "bad"})),
            "permanent"
        );
        match classify(
            &answer(400, json!({"code": 230013, "msg": "no availability"})),
            "ou_x",
            "open_id",
        ) {
            SendOutcome::Permanent { error, .. } => {
                assert!(error.contains("open_id \"ou_x\""), "{error}")
            }
            o => panic!("{o:?}"),
        }
        match classify(
            &answer(200, json!({"code": 0, "data": {"message_id": "om_9"}})),
            "a",
            "open_id",
        ) {
            SendOutcome::Delivered { provider_msgid, .. } => {
                assert_eq!(provider_msgid.as_deref(), Some("om_9"))
            }
            o => panic!("{o:?}"),
        }
    }
}
