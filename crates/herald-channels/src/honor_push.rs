//! The `honor_push` channel: Honor Push, the push service of Honor phones,
//! split from Huawei's and still shaped like it (reference §4.0 and §4.2).
//!
//! Authentication is OAuth2 client credentials (`POST /auth/token` of
//! `iam.developer.honor.com` with the app's client id and secret), one
//! token an hour shared through [`TokenCache`] like every provider token,
//! under `honor:{app_id}`. `POST /api/v1/{appId}/sendMessage` carries one
//! message to a list of device tokens with a `timestamp` header (unix ms),
//! so [`Channel::send_batch`] sends a campaign segment in calls of
//! `max_batch` (1,000, Huawei's number: Honor's own limit was not read).
//!
//! The message is the `app` shape. It becomes Honor's camelCase
//! `android.notification` (`title`, `body`, `image`, `clickAction`: open
//! the app unless an intent action is given), `data` as a JSON string,
//! `android.ttl`, and the channel's `importance`: Honor, like Huawei,
//! treats a message without `NORMAL` importance (which needs Honor's
//! approval of the app's self-classification) as marketing and delivers at
//! most two a day to a device, dropping the rest without an error.
//!
//! Honor's official reference was not read; the answer shape
//! (`{code, message, data: {sendResult, requestId, failTokens,
//! expireTokens}}`, `code` 200) is what several clients read, and the error
//! codes are taken to be Huawei's:
//!
//! | answer | outcome |
//! |---|---|
//! | `200` | delivered, `requestId` recorded; tokens in `failTokens` or `expireTokens` fail as `UNREGISTERED` (pruned from subscribers) |
//! | `80100000` (partial) | as `200` |
//! | `80300007` (all tokens invalid) | every device `UNREGISTERED` |
//! | `80200003` (token expired), HTTP 401 | expire the token, refresh once, send once more |
//! | HTTP 503, HTTP 429 (flow control) | throttled |
//! | `81000001`, HTTP 5xx, no answer | retryable |
//! | any other code | permanent |

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use crate::provider_http::{Answer, ProviderHttp, Secret, retryable, token_outcome};
use crate::token_cache::{FetchedToken, TokenCache, TokenCacheOptions, TokenError, TokenUse};
use crate::vendor_push::{AppPush, Calls, Verdict, unregistered};
use crate::{
    BuildContext, Channel, ChannelError, ChannelKind, CommonSettings, Delivery, HonorPushConfig,
    ProviderStatus, SendOutcome,
};

/// The real API.
pub const DEFAULT_API_BASE: &str = "https://push-api.cloud.honor.com";
/// Honor's OAuth token endpoint.
pub const DEFAULT_TOKEN_URL: &str = "https://iam.developer.honor.com/auth/token";
/// Device tokens per send call (Huawei's limit; Honor's was not read).
pub const MAX_TOKENS_PER_CALL: usize = 1000;
/// `android.notification.importance` values: `NORMAL` for service and
/// communication messages (needs Honor's approval), `LOW` for marketing.
pub const IMPORTANCES: [&str; 2] = ["NORMAL", "LOW"];

const VENDOR: &str = "honor";
const SUCCESS: i64 = 200;
const PARTIAL: i64 = 80100000;
const ALL_INVALID: i64 = 80300007;
const TOKEN_EXPIRED: i64 = 80200003;
const INTERNAL: i64 = 81000001;

pub struct HonorPushChannel {
    name: String,
    app_id: String,
    client_id: String,
    client_secret: Secret,
    importance: Option<String>,
    max_batch: usize,
    token_url: String,
    http: ProviderHttp,
    tokens: TokenCache,
}

impl std::fmt::Debug for HonorPushChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HonorPushChannel")
            .field("name", &self.name)
            .field("app_id", &self.app_id)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret)
            .finish()
    }
}

/// The body of a send call, without its tokens.
fn honor_message(p: &AppPush, image: Option<&Value>, importance: Option<&str>) -> Value {
    let mut android = Map::new();
    if let Some(ttl) = p.ttl_secs {
        android.insert("ttl".into(), json!(format!("{ttl}s")));
    }
    if let (Some(title), Some(body)) = (&p.title, &p.body) {
        let mut note = Map::new();
        note.insert("title".into(), json!(title));
        note.insert("body".into(), json!(body));
        if let Some(i) = image {
            note.insert("image".into(), i.clone());
        }
        let click = match &p.click_action {
            Some(a) => json!({"type": 1, "action": a}),
            None => json!({"type": 3}),
        };
        note.insert("clickAction".into(), click);
        if let Some(i) = importance {
            note.insert("importance".into(), json!(i));
        }
        android.insert("notification".into(), Value::Object(note));
    }
    let mut msg = Map::new();
    if let Some(d) = &p.data {
        msg.insert("data".into(), json!(d));
    }
    msg.insert("android".into(), Value::Object(android));
    Value::Object(msg)
}

/// The tokens an answer's `data` names as failed or expired.
fn failed_tokens(v: &Value) -> Vec<String> {
    let data = v.get("data");
    ["failTokens", "expireTokens"]
        .iter()
        .filter_map(|k| data.and_then(|d| d.get(k)).and_then(Value::as_array))
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

/// What an answer means, and whether the access token was refused.
enum Answered {
    Verdict(Verdict),
    TokenRefused(SendOutcome),
}

fn classify(answer: &Answer) -> Answered {
    let http = Some(i64::from(answer.status));
    if answer.status == 503 || answer.status == 429 {
        return Answered::Verdict(Verdict::All(SendOutcome::Throttled {
            error: format!(
                "honor flow control (HTTP {}): {}",
                answer.status,
                answer.snippet()
            ),
            status: http,
            retry_after_ms: answer.retry_after_ms(),
        }));
    }
    let v = answer.json().unwrap_or(Value::Null);
    let code = v.get("code").and_then(|c| {
        c.as_i64()
            .or_else(|| c.as_str().and_then(|s| s.parse().ok()))
    });
    let message: String = v
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("")
        .chars()
        .take(300)
        .collect();
    let status = code.or(http);
    let error = format!(
        "honor HTTP {} code {}: {message}",
        answer.status,
        code.map_or_else(|| "none".into(), |c| c.to_string())
    );
    if code == Some(TOKEN_EXPIRED) || (answer.status == 401 && code.is_none()) {
        return Answered::TokenRefused(retryable(error, status));
    }
    if answer.status >= 500 || code == Some(INTERNAL) {
        return Answered::Verdict(Verdict::All(SendOutcome::Retryable {
            error,
            status,
            retry_after_ms: answer.retry_after_ms(),
        }));
    }
    let delivered = SendOutcome::Delivered {
        provider_msgid: v
            .get("data")
            .and_then(|d| d.get("requestId"))
            .and_then(Value::as_str)
            .map(str::to_string),
        status,
    };
    Answered::Verdict(match code {
        Some(SUCCESS | PARTIAL) if answer.is_success() => {
            let invalid = failed_tokens(&v);
            if invalid.is_empty() {
                Verdict::All(delivered)
            } else {
                Verdict::Partial {
                    delivered,
                    invalid,
                    code: PARTIAL.to_string(),
                }
            }
        }
        Some(ALL_INVALID) => Verdict::All(unregistered(VENDOR, &ALL_INVALID.to_string())),
        None if answer.is_success() => Verdict::All(retryable(
            format!(
                "honor HTTP {}: an answer without a code: {}",
                answer.status,
                answer.snippet()
            ),
            http,
        )),
        _ => Verdict::All(SendOutcome::Permanent { error, status }),
    })
}

impl HonorPushChannel {
    pub fn new(
        common: &CommonSettings,
        cfg: &HonorPushConfig,
        ctx: &BuildContext,
    ) -> Result<Self, ChannelError> {
        Self::with_options(common, cfg, ctx, TokenCacheOptions::default())
    }

    /// As [`HonorPushChannel::new`], with the token cache's clock and margins.
    pub fn with_options(
        common: &CommonSettings,
        cfg: &HonorPushConfig,
        ctx: &BuildContext,
        opts: TokenCacheOptions,
    ) -> Result<Self, ChannelError> {
        let app_id = cfg.app_id.trim().to_string();
        if app_id.is_empty() {
            return Err(common.err("app_id must not be empty"));
        }
        let client_id = cfg.client_id.trim().to_string();
        if client_id.is_empty() {
            return Err(common.err("client_id must not be empty"));
        }
        let client_secret = cfg
            .client_secret
            .resolve("client_secret")
            .map_err(|e| common.err(&e))?;
        let token_url = cfg
            .token_url
            .clone()
            .unwrap_or_else(|| DEFAULT_TOKEN_URL.to_string());
        let base = cfg.api_base.as_deref().unwrap_or(DEFAULT_API_BASE);
        let http = ProviderHttp::new(common, cfg.ca_file.as_deref(), base)?;
        let tokens = TokenCache::new(
            format!("honor:{app_id}"),
            ctx.vault.clone(),
            ctx.node_id.clone(),
            opts,
        );
        Ok(Self {
            name: common.name.clone(),
            app_id,
            client_id,
            client_secret: Secret::new(client_secret),
            importance: cfg.importance.clone(),
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
            self.client_id.as_str(),
            self.client_secret.expose(),
        )
        .await
    }

    /// Reads and checks a delivery's message.
    fn message(&self, d: &Delivery) -> Result<Value, String> {
        let v = crate::shape::check_text(ChannelKind::HonorPush, &d.message)?;
        let m = v.as_object().ok_or("the message must be a JSON object")?;
        let image = m.get("notification").and_then(|n| n.get("image"));
        Ok(honor_message(
            &AppPush::read(m),
            image,
            self.importance.as_deref(),
        ))
    }

    /// One send call of `message` to `tokens`: an outcome per token.
    async fn call(&self, message: &Value, tokens: &[&str]) -> Vec<SendOutcome> {
        let path = format!("/api/v1/{}/sendMessage", self.app_id);
        let url = self.http.url(&path);
        let mut body = message.clone();
        body["token"] = json!(tokens);
        let (url, path, body) = (&url, &path, &body);
        let verdict = self
            .tokens
            .with_refresh(
                || self.token(),
                |token| async move {
                    let stamp = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| d.as_millis());
                    let req = self
                        .http
                        .post(url)
                        .bearer_auth(&token)
                        .header("timestamp", stamp.to_string())
                        .json(body);
                    match self.http.call(req, "POST", path).await {
                        Ok(answer) => match classify(&answer) {
                            Answered::TokenRefused(o) => TokenUse::Rejected(Verdict::All(o)),
                            Answered::Verdict(v) => TokenUse::Answered(v),
                        },
                        Err(e) => TokenUse::Answered(Verdict::All(retryable(e.to_string(), None))),
                    }
                },
            )
            .await
            .unwrap_or_else(|e| Verdict::All(token_outcome(e)));
        let outcomes = verdict.spread(VENDOR, tokens);
        tracing::debug!(
            channel = %self.name,
            devices = tokens.len(),
            outcome = outcomes.first().map_or("none", SendOutcome::class),
            "honor send call"
        );
        outcomes
    }
}

#[async_trait]
impl Channel for HonorPushChannel {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> ChannelKind {
        ChannelKind::HonorPush
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
        let mut plan = Calls::plan(deliveries, self.max_batch, |d| self.message(d));
        let calls = std::mem::take(&mut plan.calls);
        for (msg, ix) in &calls {
            let tokens: Vec<&str> = ix
                .iter()
                .map(|&i| deliveries[i].recipient.as_str())
                .collect();
            for (&i, o) in ix.iter().zip(self.call(msg, &tokens).await) {
                plan.outcomes[i] = Some(o);
            }
        }
        plan.finish()
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

    fn answer(status: u16, body: Value) -> Answer {
        Answer {
            status,
            headers: Default::default(),
            body: body.to_string().into_bytes(),
        }
    }

    fn class(status: u16, body: Value) -> String {
        match classify(&answer(status, body)) {
            Answered::Verdict(Verdict::All(o)) => o.class().to_string(),
            Answered::Verdict(Verdict::Partial { .. }) => "partial".into(),
            Answered::TokenRefused(_) => "refresh".into(),
        }
    }

    #[test]
    fn the_app_shape_becomes_a_honor_message() {
        let m = json!({"notification": {"title": "Coupon 42", "body": "opens at 10:00", "image": "https://x/i.png"},
                       "data": {"coupon": "42"},
                       "android": {"ttl": "3600s", "notification": {"click_action": "com.shop.OPEN"}}});
        let m = m.as_object().unwrap();
        let image = m.get("notification").and_then(|n| n.get("image"));
        assert_eq!(
            honor_message(&AppPush::read(m), image, Some("NORMAL")),
            json!({"data": "{\"coupon\":\"42\"}",
                   "android": {"ttl": "3600s",
                               "notification": {"title": "Coupon 42", "body": "opens at 10:00",
                                                "image": "https://x/i.png", "importance": "NORMAL",
                                                "clickAction": {"type": 1, "action": "com.shop.OPEN"}}}})
        );
        let plain = json!({"notification": {"title": "t", "body": "b"}});
        assert_eq!(
            honor_message(&AppPush::read(plain.as_object().unwrap()), None, None)["android"]["notification"]
                ["clickAction"],
            json!({"type": 3})
        );
        let check = |v: Value| crate::shape::check(ChannelKind::HonorPush, &v);
        assert!(check(plain).is_ok());
        assert_eq!(
            check(json!({"notification": {"title": "t"}}))
                .unwrap_err()
                .field,
            "notification.body"
        );
    }

    #[test]
    fn answers_become_an_outcome_per_device() {
        assert_eq!(
            class(
                200,
                json!({"code": 200, "message": "Success",
                              "data": {"sendResult": true, "requestId": "r1", "failTokens": [], "expireTokens": []}})
            ),
            "delivered"
        );
        assert_eq!(class(503, json!({"code": 81000001})), "throttled");
        assert_eq!(class(500, json!({"code": 81000001})), "retry");
        assert_eq!(class(400, json!({"code": 80100003})), "permanent");
        assert_eq!(class(401, json!({"code": 80200003})), "refresh");
        assert_eq!(class(401, json!({})), "refresh");
        assert_eq!(class(401, json!({"code": 80200001})), "permanent");
        match classify(&answer(200, json!({"code": 80300007}))) {
            Answered::Verdict(Verdict::All(SendOutcome::Permanent { error, .. })) => {
                assert!(error.contains("UNREGISTERED"))
            }
            _ => panic!("all invalid"),
        }
        match classify(&answer(
            200,
            json!({"code": 80100000, "data": {"requestId": "r2", "failTokens": ["a"], "expireTokens": ["b"]}}),
        )) {
            Answered::Verdict(Verdict::Partial { invalid, .. }) => assert_eq!(invalid, ["a", "b"]),
            _ => panic!("partial"),
        }
    }
}
