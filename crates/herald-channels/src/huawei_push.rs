//! The `huawei_push` channel: Huawei Push Kit (HMS Core Push, v1 API), the
//! push service of Huawei phones, which FCM does not reach in mainland China
//! (reference §4.1).
//!
//! Authentication is OAuth2 client credentials (`POST /oauth2/v3/token` with
//! the app id and app secret), one token an hour shared through
//! [`TokenCache`] like every provider token. `POST /v1/{appId}/messages:send`
//! carries one message to up to 1,000 device tokens, so
//! [`Channel::send_batch`] sends a campaign segment in calls of `max_batch`.
//!
//! The message is the `app` shape FCM takes (`notification` with `title`,
//! `body` and `image`; `data` of strings; `android.notification.click_action`
//! and `android.ttl`), so one template part serves both. It becomes Huawei's
//! `android.notification` with a click action (open the app unless an
//! intent action is given), `data` as a JSON string, and the channel's
//! `category`: Huawei treats a message without an approved category as
//! marketing and delivers at most two a day to a device, dropping the rest
//! without an error.
//!
//! | answer | outcome |
//! |---|---|
//! | `80000000` | delivered, `requestId` recorded |
//! | `80100000` (partial) | the tokens in `illegal_tokens` fail as `UNREGISTERED` (pruned from subscribers); the rest delivered |
//! | `80300007` (all tokens invalid) | every device `UNREGISTERED` |
//! | `80200003` (token expired), HTTP 401 | expire the token, refresh once, send once more |
//! | HTTP 503 (flow control) | throttled |
//! | `81000001`, HTTP 5xx, no answer | retryable |
//! | any other code | permanent |

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use crate::provider_http::{Answer, ProviderHttp, Secret, retryable, token_outcome};
use crate::token_cache::{FetchedToken, TokenCache, TokenCacheOptions, TokenError, TokenUse};
use crate::{
    BuildContext, Channel, ChannelError, ChannelKind, CommonSettings, Delivery, HuaweiPushConfig,
    ProviderStatus, SendOutcome,
};

/// The real API.
pub const DEFAULT_API_BASE: &str = "https://push-api.cloud.huawei.com";
/// Huawei's OAuth token endpoint.
pub const DEFAULT_TOKEN_URL: &str = "https://oauth-login.cloud.huawei.com/oauth2/v3/token";
/// Device tokens per send call.
pub const MAX_TOKENS_PER_CALL: usize = 1000;
/// The categories Huawei's self-classification takes (§4.0); `MARKETING`
/// says so outright.
pub const CATEGORIES: [&str; 13] = [
    "IM",
    "VOIP",
    "SUBSCRIPTION",
    "TRAVEL",
    "HEALTH",
    "WORK",
    "ACCOUNT",
    "EXPRESS",
    "FINANCE",
    "DEVICE_REMINDER",
    "SYSTEM_REMINDER",
    "MAIL",
    "MARKETING",
];

const SUCCESS: &str = "80000000";
const PARTIAL: &str = "80100000";
const ALL_INVALID: &str = "80300007";
const TOKEN_EXPIRED: &str = "80200003";
const INTERNAL: &str = "81000001";

pub struct HuaweiPushChannel {
    name: String,
    app_id: String,
    app_secret: Secret,
    category: Option<String>,
    max_batch: usize,
    token_url: String,
    http: ProviderHttp,
    tokens: TokenCache,
}

impl std::fmt::Debug for HuaweiPushChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HuaweiPushChannel")
            .field("name", &self.name)
            .field("app_id", &self.app_id)
            .field("app_secret", &self.app_secret)
            .finish()
    }
}

/// The `message` of a send call, without its tokens.
fn huawei_message(app: &Map<String, Value>, category: Option<&str>) -> Value {
    let mut android = Map::new();
    if let Some(c) = category {
        android.insert("category".into(), json!(c));
    }
    let fcm_android = app.get("android").and_then(Value::as_object);
    if let Some(ttl) = fcm_android
        .and_then(|a| a.get("ttl"))
        .and_then(Value::as_str)
    {
        android.insert("ttl".into(), json!(ttl));
    }
    if let Some(Value::Object(n)) = app.get("notification") {
        let action = fcm_android
            .and_then(|a| a.get("notification"))
            .and_then(|n| n.get("click_action"))
            .and_then(Value::as_str);
        let click = match action {
            Some(a) => json!({"type": 1, "action": a}),
            None => json!({"type": 3}),
        };
        let mut note = Map::new();
        for k in ["title", "body", "image"] {
            if let Some(v) = n.get(k) {
                note.insert(k.into(), v.clone());
            }
        }
        note.insert("click_action".into(), click);
        android.insert("notification".into(), Value::Object(note));
    }
    let mut msg = Map::new();
    if let Some(d) = app.get("data") {
        msg.insert("data".into(), json!(d.to_string()));
    }
    msg.insert("android".into(), Value::Object(android));
    Value::Object(msg)
}

/// What one call's answer means for its devices.
enum Verdict {
    /// The same for every device.
    All(SendOutcome),
    /// Delivered, except the tokens Huawei called illegal.
    Partial {
        delivered: SendOutcome,
        illegal: Vec<String>,
    },
    /// The access token was refused: refresh and call again.
    TokenRefused(SendOutcome),
}

/// The outcome for a device whose token Huawei does not know (any more).
/// `UNREGISTERED` is the word the engine prunes device tokens on.
fn unregistered(code: &str) -> SendOutcome {
    SendOutcome::Permanent {
        error: format!("the device token is invalid (UNREGISTERED): huawei code {code}"),
        status: code.parse().ok(),
    }
}

fn classify(answer: &Answer) -> Verdict {
    let http = Some(i64::from(answer.status));
    if answer.status == 503 {
        return Verdict::All(SendOutcome::Throttled {
            error: format!("huawei flow control (HTTP 503): {}", answer.snippet()),
            status: http,
            retry_after_ms: answer.retry_after_ms(),
        });
    }
    let v = answer.json().unwrap_or(Value::Null);
    let code = v.get("code").and_then(Value::as_str).unwrap_or("");
    let msg = v
        .get("msg")
        .and_then(Value::as_str)
        .unwrap_or("")
        .chars()
        .take(300)
        .collect::<String>();
    let status = code.parse::<i64>().ok().or(http);
    let error = format!("huawei HTTP {} code {code}: {msg}", answer.status);
    if code == TOKEN_EXPIRED || answer.status == 401 && code.is_empty() {
        return Verdict::TokenRefused(retryable(error, status));
    }
    if answer.status >= 500 || code == INTERNAL {
        return Verdict::All(SendOutcome::Retryable {
            error,
            status,
            retry_after_ms: answer.retry_after_ms(),
        });
    }
    let request_id = v
        .get("requestId")
        .and_then(Value::as_str)
        .map(str::to_string);
    let delivered = SendOutcome::Delivered {
        provider_msgid: request_id,
        status,
    };
    match code {
        SUCCESS if answer.is_success() => Verdict::All(delivered),
        PARTIAL => {
            // `msg` is itself JSON: counts and the illegal tokens.
            let illegal = serde_json::from_str::<Value>(&msg)
                .ok()
                .and_then(|m| m.get("illegal_tokens").cloned())
                .and_then(|t| serde_json::from_value::<Vec<String>>(t).ok())
                .unwrap_or_default();
            Verdict::Partial { delivered, illegal }
        }
        ALL_INVALID => Verdict::All(unregistered(code)),
        "" if answer.is_success() => Verdict::All(retryable(
            format!(
                "huawei HTTP {}: an answer without a code: {}",
                answer.status,
                answer.snippet()
            ),
            http,
        )),
        _ => Verdict::All(SendOutcome::Permanent { error, status }),
    }
}

impl HuaweiPushChannel {
    pub fn new(
        common: &CommonSettings,
        cfg: &HuaweiPushConfig,
        ctx: &BuildContext,
    ) -> Result<Self, ChannelError> {
        Self::with_options(common, cfg, ctx, TokenCacheOptions::default())
    }

    /// As [`HuaweiPushChannel::new`], with the token cache's clock and margins.
    pub fn with_options(
        common: &CommonSettings,
        cfg: &HuaweiPushConfig,
        ctx: &BuildContext,
        opts: TokenCacheOptions,
    ) -> Result<Self, ChannelError> {
        let app_id = cfg.app_id.trim().to_string();
        if app_id.is_empty() {
            return Err(common.err("app_id must not be empty"));
        }
        let app_secret = cfg
            .app_secret
            .resolve("app_secret")
            .map_err(|e| common.err(&e))?;
        let token_url = cfg
            .token_url
            .clone()
            .unwrap_or_else(|| DEFAULT_TOKEN_URL.to_string());
        let base = cfg.api_base.as_deref().unwrap_or(DEFAULT_API_BASE);
        let http = ProviderHttp::new(common, cfg.ca_file.as_deref(), base)?;
        let tokens = TokenCache::new(
            format!("huawei:{app_id}"),
            ctx.vault.clone(),
            ctx.node_id.clone(),
            opts,
        );
        Ok(Self {
            name: common.name.clone(),
            app_id,
            app_secret: Secret::new(app_secret),
            category: cfg.category.clone(),
            max_batch: cfg.max_batch.unwrap_or(MAX_TOKENS_PER_CALL),
            token_url,
            http,
            tokens,
        })
    }

    async fn token(&self) -> Result<String, TokenError> {
        self.tokens.get(|_hint| self.fetch_token()).await
    }

    async fn fetch_token(&self) -> Result<FetchedToken, TokenError> {
        crate::vendor_push::client_credentials_token(
            &self.http,
            &self.token_url,
            self.app_id.as_str(),
            self.app_secret.expose(),
        )
        .await
    }

    /// Reads and checks a delivery's message.
    fn message(&self, d: &Delivery) -> Result<Value, String> {
        let v = crate::shape::check_text(ChannelKind::HuaweiPush, &d.message)?;
        let m = v.as_object().ok_or("the message must be a JSON object")?;
        Ok(huawei_message(m, self.category.as_deref()))
    }

    /// One send call of `message` to `tokens`: an outcome per token.
    async fn call(&self, message: &Value, tokens: &[&str]) -> Vec<SendOutcome> {
        let path = format!("/v1/{}/messages:send", self.app_id);
        let url = self.http.url(&path);
        let mut body = json!({ "message": message });
        body["message"]["token"] = json!(tokens);
        let (url, path, body) = (&url, &path, &body);
        let verdict = self
            .tokens
            .with_refresh(
                || self.token(),
                |token| async move {
                    let req = self.http.post(url).bearer_auth(&token).json(body);
                    match self.http.call(req, "POST", path).await {
                        Ok(answer) => match classify(&answer) {
                            Verdict::TokenRefused(o) => TokenUse::Rejected(Verdict::All(o)),
                            v => TokenUse::Answered(v),
                        },
                        Err(e) => TokenUse::Answered(Verdict::All(retryable(e.to_string(), None))),
                    }
                },
            )
            .await
            .unwrap_or_else(|e| Verdict::All(token_outcome(e)));
        match verdict {
            Verdict::All(o) | Verdict::TokenRefused(o) => vec![o; tokens.len()],
            Verdict::Partial { delivered, illegal } => {
                if illegal.is_empty() {
                    tracing::warn!(channel = %self.name, "huawei partial success without a list of illegal tokens; all counted delivered");
                }
                tokens
                    .iter()
                    .map(|t| {
                        if illegal.iter().any(|i| i == t) {
                            unregistered(PARTIAL)
                        } else {
                            delivered.clone()
                        }
                    })
                    .collect()
            }
        }
    }
}

#[async_trait]
impl Channel for HuaweiPushChannel {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> ChannelKind {
        ChannelKind::HuaweiPush
    }

    async fn send(&self, d: &Delivery) -> SendOutcome {
        self.send_batch(std::slice::from_ref(d))
            .await
            .pop()
            .unwrap_or_else(|| retryable("no outcome".into(), None))
    }

    fn max_batch(&self) -> usize {
        self.max_batch
    }

    /// Deliveries with the same message share calls of up to `max_batch`
    /// tokens; each device gets its own outcome.
    async fn send_batch(&self, deliveries: &[Delivery]) -> Vec<SendOutcome> {
        let mut out: Vec<Option<SendOutcome>> = vec![None; deliveries.len()];
        // Calls by message text, in first-seen order: (message, indexes).
        let mut calls: Vec<(&str, Value, Vec<usize>)> = Vec::new();
        for (i, d) in deliveries.iter().enumerate() {
            if d.recipient.trim().is_empty() {
                out[i] = Some(SendOutcome::Permanent {
                    error: "the recipient (a device token) is empty".into(),
                    status: None,
                });
                continue;
            }
            let open = calls
                .iter_mut()
                .rfind(|(m, _, ix)| *m == d.message && ix.len() < self.max_batch);
            match open {
                Some((_, _, ix)) => ix.push(i),
                None => match self.message(d) {
                    Ok(msg) => calls.push((&d.message, msg, vec![i])),
                    Err(error) => {
                        out[i] = Some(SendOutcome::Permanent {
                            error,
                            status: None,
                        })
                    }
                },
            }
        }
        for (_, msg, ix) in &calls {
            let tokens: Vec<&str> = ix
                .iter()
                .map(|&i| deliveries[i].recipient.as_str())
                .collect();
            let outcomes = self.call(msg, &tokens).await;
            for (&i, o) in ix.iter().zip(outcomes) {
                out[i] = Some(o);
            }
            tracing::debug!(channel = %self.name, devices = ix.len(), "huawei send call");
        }
        out.into_iter()
            .map(|o| o.unwrap_or_else(|| retryable("no outcome".into(), None)))
            .collect()
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
    fn the_app_shape_becomes_an_android_notification() {
        let app = obj(json!({
            "notification": {"title": "Coupon 42", "body": "opens at 10:00"},
            "data": {"coupon": "42"},
            "android": {"ttl": "3600s", "notification": {"click_action": "com.shop.OPEN_COUPON"}}
        }));
        assert_eq!(
            huawei_message(&app, Some("SUBSCRIPTION")),
            json!({"data": "{\"coupon\":\"42\"}",
                   "android": {"category": "SUBSCRIPTION", "ttl": "3600s",
                               "notification": {"title": "Coupon 42", "body": "opens at 10:00",
                                                "click_action": {"type": 1, "action": "com.shop.OPEN_COUPON"}}}})
        );
        let plain = obj(json!({"notification": {"title": "t", "body": "b"}}));
        assert_eq!(
            huawei_message(&plain, None)["android"]["notification"]["click_action"],
            json!({"type": 3})
        );
        let check = |v: Value| crate::shape::check(ChannelKind::HuaweiPush, &v);
        assert!(check(Value::Object(plain)).is_ok());
        assert_eq!(
            check(json!({"notification": {"title": "t"}}))
                .unwrap_err()
                .field,
            "notification.body"
        );
        assert_eq!(check(json!({})).unwrap_err().field, "notification");
        assert!(check(json!({"data": {"k": "v"}})).is_ok());
        assert_eq!(
            check(json!({"notification": {"title": "t", "body": "b"},
                         "android": {"notification": {"click_action": {"type": 1}}}}))
            .unwrap_err()
            .field,
            "android.notification.click_action"
        );
    }

    #[test]
    fn answers_become_an_outcome_per_device() {
        let class = |a: &Answer| match classify(a) {
            Verdict::All(o) | Verdict::TokenRefused(o) => o.class().to_string(),
            Verdict::Partial { .. } => "partial".into(),
        };
        assert_eq!(
            class(&answer(
                200,
                json!({"code": "80000000", "msg": "Success", "requestId": "r1"})
            )),
            "delivered"
        );
        assert_eq!(
            class(&answer(
                503,
                json!({"code": "81000001", "msg": "flow control"})
            )),
            "throttled"
        );
        assert_eq!(class(&answer(500, json!({"code": "81000001"}))), "retry");
        assert_eq!(
            class(&answer(400, json!({"code": "80100003", "msg": "too big"}))),
            "permanent"
        );
        assert!(matches!(
            classify(&answer(
                401,
                json!({"code": "80200003", "msg": "Oauth token expired"})
            )),
            Verdict::TokenRefused(_)
        ));
        match classify(&answer(
            200,
            json!({"code": "80300007", "msg": "All the tokens are invalid"}),
        )) {
            Verdict::All(SendOutcome::Permanent { error, .. }) => {
                assert!(error.contains("UNREGISTERED"))
            }
            _ => panic!("all invalid"),
        }
        let partial = json!({"code": "80100000", "requestId": "r2",
                             "msg": "{\"success\":1,\"failure\":1,\"illegal_tokens\":[\"bad\"]}"});
        match classify(&answer(200, partial)) {
            Verdict::Partial { illegal, delivered } => {
                assert_eq!(illegal, ["bad"]);
                assert!(
                    matches!(delivered, SendOutcome::Delivered { provider_msgid: Some(ref r), .. } if r == "r2")
                );
            }
            _ => panic!("partial"),
        }
    }
}
