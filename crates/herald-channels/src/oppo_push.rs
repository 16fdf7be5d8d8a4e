//! The `oppo_push` channel: OPPO Push (server API v1), the push service of
//! OPPO, OnePlus and realme phones (reference §4.0 and §4.4, and OPPO's
//! documentation of its common return codes and single and batch unicast).
//!
//! Authentication: `POST /server/v1/auth` with the app key, a timestamp in
//! ms and `sign`, the lowercase hex SHA-256 of app_key + timestamp +
//! master_secret, answers an `auth_token` valid 24 hours. It is shared
//! through [`TokenCache`] under `oppo:{app_key}` like every provider token
//! (OPPO's answer gives no lifetime, so 24 h is assumed and the cache
//! refreshes it 5 minutes early), and each send carries it as the form
//! parameter `auth_token`.
//!
//! A device gets `POST /server/v1/message/notification/unicast` (form
//! `message`, one registration id); several devices with the same message
//! get `.../unicast_batch` (form `messages`, up to 1,000 messages, one per
//! device), which answers per message, so [`Channel::send_batch`] sends a
//! campaign segment in calls of `max_batch`.
//!
//! The message is the `app` shape with a notification (OPPO's server API
//! sends notifications only): `title` (at most 50 characters) and `content`
//! (at most 200) [unverified limits], `data` as `actionParameters`, the
//! click action as an activity's intent action, `android.ttl` as
//! `offLineTtl`, a content-derived `notifyId` (so messages do not replace
//! each other), and the channel's `channel_id` and `category`. Without a
//! communication-and-service `category`, OPPO counts the message as
//! marketing: two a device a day, the rest dropped without an error.
//!
//! | answer | outcome |
//! |---|---|
//! | `0` | delivered, `messageId` recorded; a batch entry with `errorCode` 10000 fails as `UNREGISTERED` (pruned from subscribers), another `errorCode` as permanent |
//! | `10000` (invalid registration id) | `UNREGISTERED` |
//! | `11` (invalid auth_token) | expire the token, refresh once, send once more |
//! | `-2` (flow control), `13`, `55` (call limits), HTTP 429 | throttled |
//! | `-1`, HTTP 5xx, no answer | retryable |
//! | `33` (daily message limit) | permanent: the app's quota for today is spent |
//! | any other code | permanent |

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::provider_http::{Answer, ProviderHttp, Secret, retryable, token_outcome};
use crate::token_cache::{FetchedToken, TokenCache, TokenCacheOptions, TokenError, TokenUse};
use crate::vendor_push::{AppPush, Calls, unregistered};
use crate::{
    BuildContext, Channel, ChannelError, ChannelKind, CommonSettings, Delivery, OppoPushConfig,
    ProviderStatus, SendOutcome,
};

/// The real API (mainland China).
pub const DEFAULT_API_BASE: &str = "https://api.push.oppomobile.com";
/// Messages per `unicast_batch` call [doc].
pub const MAX_BATCH: usize = 1000;
/// `category` values: communication and service (no per-device allowance
/// once approved), then content and marketing [unverified names].
pub const CATEGORIES: [&str; 10] = [
    "IM",
    "ACCOUNT",
    "DEVICE_REMINDER",
    "ORDER",
    "TODO",
    "SUBSCRIPTION",
    "NEWS",
    "CONTENT",
    "MARKETING",
    "SOCIAL",
];
/// How long an `auth_token` lives (24 h); OPPO's answer does not say.
const TOKEN_TTL_SECS: i64 = 24 * 3600;
/// `offLineTtl` may be at most 10 days.
const MAX_OFFLINE_TTL_SECS: u64 = 10 * 24 * 3600;

const VENDOR: &str = "oppo";
const AUTH_PATH: &str = "/server/v1/auth";
const UNICAST_PATH: &str = "/server/v1/message/notification/unicast";
const BATCH_PATH: &str = "/server/v1/message/notification/unicast_batch";
const BAD_TOKEN: i64 = 11;
const BAD_REGID: i64 = 10000;

pub struct OppoPushChannel {
    name: String,
    app_key: String,
    master_secret: Secret,
    category: Option<String>,
    channel_id: Option<String>,
    max_batch: usize,
    http: ProviderHttp,
    tokens: TokenCache,
}

impl std::fmt::Debug for OppoPushChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OppoPushChannel")
            .field("name", &self.name)
            .field("app_key", &self.app_key)
            .field("master_secret", &self.master_secret)
            .finish()
    }
}

/// OPPO's `sign`: lowercase hex SHA-256 of the three strings.
fn sign(app_key: &str, timestamp: &str, master_secret: &str) -> String {
    let mut h = Sha256::new();
    h.update(app_key.as_bytes());
    h.update(timestamp.as_bytes());
    h.update(master_secret.as_bytes());
    hex::encode(h.finalize())
}

/// The `notification` of a message.
fn oppo_notification(p: &AppPush, category: Option<&str>, channel_id: Option<&str>) -> Value {
    let mut n = Map::new();
    n.insert("title".into(), json!(p.title.as_deref().unwrap_or("")));
    n.insert("content".into(), json!(p.body.as_deref().unwrap_or("")));
    match &p.click_action {
        // 1: open the activity that answers this intent action.
        Some(a) => {
            n.insert("clickActionType".into(), json!(1));
            n.insert("clickActionActivity".into(), json!(a));
        }
        // 0: open the app.
        None => {
            n.insert("clickActionType".into(), json!(0));
        }
    }
    if let Some(d) = &p.data {
        n.insert("actionParameters".into(), json!(d));
    }
    if let Some(ttl) = p.ttl_secs {
        n.insert("offLine".into(), json!(true));
        n.insert("offLineTtl".into(), json!(ttl.min(MAX_OFFLINE_TTL_SECS)));
    }
    if let Some(c) = channel_id {
        n.insert("channelId".into(), json!(c));
    }
    if let Some(c) = category {
        n.insert("category".into(), json!(c));
    }
    n.insert("notifyId".into(), json!(p.notify_id()));
    Value::Object(n)
}

/// The code of an answer, and its message text.
fn code_of(v: &Value) -> (Option<i64>, String) {
    (
        v.get("code").and_then(Value::as_i64),
        v.get("message")
            .and_then(Value::as_str)
            .unwrap_or("")
            .chars()
            .take(300)
            .collect(),
    )
}

/// The outcome of a whole call's error `code`.
fn call_error(code: i64, message: &str, answer: &Answer) -> SendOutcome {
    let error = format!("oppo code {code}: {message}");
    let status = Some(code);
    match code {
        BAD_REGID => unregistered(VENDOR, "10000"),
        -2 | 13 | 55 => SendOutcome::Throttled {
            error,
            status,
            retry_after_ms: answer.retry_after_ms(),
        },
        -1 => retryable(error, status),
        33 => SendOutcome::Permanent {
            error: format!("{error} (the app's daily quota is spent: final for today)"),
            status,
        },
        _ => SendOutcome::Permanent { error, status },
    }
}

/// What a send's answer means.
enum Answered {
    /// One outcome per device, in order.
    PerDevice(Vec<SendOutcome>),
    /// The `auth_token` was refused.
    TokenRefused(SendOutcome),
}

fn classify(answer: &Answer, regids: &[&str], batch: bool) -> Answered {
    let all = |o: SendOutcome| Answered::PerDevice(vec![o; regids.len()]);
    if let Some(o) = answer.overload() {
        return all(o);
    }
    let v = match answer.json_or_outcome() {
        Ok(v) => v,
        Err(o) => return all(o),
    };
    let (code, message) = code_of(&v);
    match code {
        Some(0) => {}
        Some(BAD_TOKEN) => {
            return Answered::TokenRefused(retryable(
                format!("oppo code 11: {message}"),
                Some(BAD_TOKEN),
            ));
        }
        Some(c) => return all(call_error(c, &message, answer)),
        None => {
            return all(retryable(
                format!("oppo HTTP {}: an answer without a code", answer.status),
                Some(i64::from(answer.status)),
            ));
        }
    }
    let delivered = |id: Option<&str>| SendOutcome::Delivered {
        provider_msgid: id.map(str::to_string),
        status: Some(0),
    };
    if !batch {
        let id = v
            .get("data")
            .and_then(|d| d.get("messageId"))
            .and_then(Value::as_str);
        return all(delivered(id));
    }
    let entries = v
        .get("data")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    Answered::PerDevice(
        regids
            .iter()
            .map(|r| {
                let e = entries
                    .iter()
                    .find(|e| e.get("registrationId").and_then(Value::as_str) == Some(r));
                match e {
                    None => retryable(
                        "oppo batch answer names no result for this device".into(),
                        Some(0),
                    ),
                    Some(e) => match e.get("errorCode").and_then(Value::as_i64) {
                        None | Some(0) => delivered(e.get("messageId").and_then(Value::as_str)),
                        Some(c) => {
                            let msg = e.get("errorMessage").and_then(Value::as_str).unwrap_or("");
                            call_error(c, msg, answer)
                        }
                    },
                }
            })
            .collect(),
    )
}

impl OppoPushChannel {
    pub fn new(
        common: &CommonSettings,
        cfg: &OppoPushConfig,
        ctx: &BuildContext,
    ) -> Result<Self, ChannelError> {
        Self::with_options(common, cfg, ctx, TokenCacheOptions::default())
    }

    /// As [`OppoPushChannel::new`], with the token cache's clock and margins.
    pub fn with_options(
        common: &CommonSettings,
        cfg: &OppoPushConfig,
        ctx: &BuildContext,
        opts: TokenCacheOptions,
    ) -> Result<Self, ChannelError> {
        let app_key = cfg.app_key.trim().to_string();
        if app_key.is_empty() {
            return Err(common.err("app_key must not be empty"));
        }
        let master_secret = cfg
            .master_secret
            .resolve("master_secret")
            .map_err(|e| common.err(&e))?;
        let base = cfg.api_base.as_deref().unwrap_or(DEFAULT_API_BASE);
        let http = ProviderHttp::new(common, cfg.ca_file.as_deref(), base)?;
        let tokens = TokenCache::new(
            format!("oppo:{app_key}"),
            ctx.vault.clone(),
            ctx.node_id.clone(),
            opts,
        );
        Ok(Self {
            name: common.name.clone(),
            app_key,
            master_secret: Secret::new(master_secret),
            category: cfg.category.clone(),
            channel_id: cfg.channel_id.clone(),
            max_batch: cfg.max_batch.unwrap_or(MAX_BATCH),
            http,
            tokens,
        })
    }

    async fn token(&self) -> Result<String, TokenError> {
        self.tokens.get(|_hint| self.fetch_token()).await
    }

    async fn fetch_token(&self) -> Result<FetchedToken, TokenError> {
        let timestamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis())
            .to_string();
        let signed = sign(&self.app_key, &timestamp, self.master_secret.expose());
        let req = self.http.post(&self.http.url(AUTH_PATH)).form(&[
            ("app_key", self.app_key.as_str()),
            ("timestamp", timestamp.as_str()),
            ("sign", signed.as_str()),
        ]);
        let answer = self
            .http
            .call(req, "POST", AUTH_PATH)
            .await
            .map_err(|e| TokenError::Failed(e.to_string()))?;
        if answer.status == 429 || answer.status == 503 {
            return Err(TokenError::Throttled(format!(
                "{AUTH_PATH}: HTTP {}",
                answer.status
            )));
        }
        let v = answer.json().unwrap_or(Value::Null);
        let (code, message) = code_of(&v);
        let token = v
            .get("data")
            .and_then(|d| d.get("auth_token"))
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty());
        match (code, token) {
            (Some(0), Some(t)) if answer.is_success() => {
                tracing::debug!(channel = %self.name, "oppo auth_token fetched");
                Ok(FetchedToken {
                    token: t.to_string(),
                    expires_in_secs: TOKEN_TTL_SECS,
                })
            }
            (Some(-2 | 13 | 55), _) => Err(TokenError::Throttled(format!(
                "{AUTH_PATH}: code {}: {message}",
                code.unwrap_or_default()
            ))),
            _ => Err(TokenError::Failed(format!(
                "{AUTH_PATH}: HTTP {} code {}: {message}",
                answer.status,
                code.map_or_else(|| "none".into(), |c| c.to_string())
            ))),
        }
    }

    /// Reads and checks a delivery's message: its notification.
    fn notification(&self, d: &Delivery) -> Result<Value, String> {
        let v = crate::shape::check_text(ChannelKind::OppoPush, &d.message)?;
        let m = v.as_object().ok_or("the message must be a JSON object")?;
        Ok(oppo_notification(
            &AppPush::read(m),
            self.category.as_deref(),
            self.channel_id.as_deref(),
        ))
    }

    /// One call of `notification` to `regids`: `unicast` for one device,
    /// `unicast_batch` for more. An outcome per device.
    async fn call(&self, notification: &Value, regids: &[&str]) -> Vec<SendOutcome> {
        let batch = regids.len() > 1;
        let (path, field, payload) = if batch {
            let list: Vec<Value> = regids
                .iter()
                .map(|r| json!({"target_type": 2, "target_value": r, "notification": notification}))
                .collect();
            (BATCH_PATH, "messages", Value::Array(list).to_string())
        } else {
            let one = json!({"target_type": 2, "target_value": regids.first().copied().unwrap_or(""),
                             "notification": notification});
            (UNICAST_PATH, "message", one.to_string())
        };
        let url = self.http.url(path);
        let (url, payload) = (&url, &payload);
        let outcomes = self
            .tokens
            .with_refresh(
                || self.token(),
                |token| async move {
                    let req = self
                        .http
                        .post(url)
                        .form(&[("auth_token", token.as_str()), (field, payload.as_str())]);
                    match self.http.call(req, "POST", path).await {
                        Ok(answer) => match classify(&answer, regids, batch) {
                            Answered::TokenRefused(o) => TokenUse::Rejected(vec![o; regids.len()]),
                            Answered::PerDevice(v) => TokenUse::Answered(v),
                        },
                        Err(e) => {
                            TokenUse::Answered(vec![retryable(e.to_string(), None); regids.len()])
                        }
                    }
                },
            )
            .await
            .unwrap_or_else(|e| vec![token_outcome(e); regids.len()]);
        tracing::debug!(
            channel = %self.name,
            devices = regids.len(),
            batch,
            outcome = outcomes.first().map_or("none", SendOutcome::class),
            "oppo send call"
        );
        outcomes
    }
}

#[async_trait]
impl Channel for OppoPushChannel {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> ChannelKind {
        ChannelKind::OppoPush
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

    /// Deliveries with the same message share `unicast_batch` calls of up
    /// to `max_batch` devices; each device gets its own outcome.
    async fn send_batch(&self, deliveries: &[Delivery]) -> Vec<SendOutcome> {
        let mut plan = Calls::plan(deliveries, self.max_batch, |d| self.notification(d));
        let calls = std::mem::take(&mut plan.calls);
        for (n, ix) in &calls {
            let regids: Vec<&str> = ix
                .iter()
                .map(|&i| deliveries[i].recipient.as_str())
                .collect();
            for (&i, o) in ix.iter().zip(self.call(n, &regids).await) {
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

    fn answer(body: Value) -> Answer {
        Answer {
            status: 200,
            headers: Default::default(),
            body: body.to_string().into_bytes(),
        }
    }

    fn classes(a: Answered) -> Vec<String> {
        match a {
            Answered::PerDevice(v) => v.iter().map(|o| o.class().to_string()).collect(),
            Answered::TokenRefused(_) => vec!["refresh".into()],
        }
    }

    #[test]
    fn signs_as_oppo_does() {
        // sha256("k" + "1" + "s") = sha256("k1s")
        assert_eq!(sign("k", "1", "s"), hex::encode(Sha256::digest(b"k1s")));
        assert_eq!(sign("k", "1", "s").len(), 64);
    }

    #[test]
    fn the_app_shape_becomes_an_oppo_notification() {
        let m = json!({"notification": {"title": "Coupon 42", "body": "opens at 10:00"},
                       "data": {"coupon": "42"},
                       "android": {"ttl": "3600s", "notification": {"click_action": "com.shop.OPEN"}}});
        let p = AppPush::read(m.as_object().unwrap());
        let n = oppo_notification(&p, Some("ORDER"), Some("orders"));
        assert_eq!(n["title"], "Coupon 42");
        assert_eq!(n["content"], "opens at 10:00");
        assert_eq!(n["clickActionType"], 1);
        assert_eq!(n["clickActionActivity"], "com.shop.OPEN");
        assert_eq!(n["actionParameters"], "{\"coupon\":\"42\"}");
        assert_eq!(n["offLineTtl"], 3600);
        assert_eq!(n["channelId"], "orders");
        assert_eq!(n["category"], "ORDER");
        assert_eq!(n["notifyId"], json!(p.notify_id()));

        let check = |v: Value| crate::shape::check(ChannelKind::OppoPush, &v);
        assert!(check(json!({"notification": {"title": "t", "body": "b"}})).is_ok());
        assert_eq!(
            check(json!({"data": {"k": "v"}})).unwrap_err().field,
            "notification"
        );
        assert_eq!(
            check(json!({"notification": {"title": "t".repeat(51), "body": "b"}}))
                .unwrap_err()
                .field,
            "notification.title"
        );
        assert_eq!(
            check(json!({"notification": {"title": "t", "body": "字".repeat(201)}}))
                .unwrap_err()
                .field,
            "notification.body"
        );
    }

    #[test]
    fn answers_become_an_outcome_per_device() {
        let one = |v: Value| classes(classify(&answer(v), &["a"], false));
        assert_eq!(
            one(json!({"code": 0, "data": {"messageId": "m1"}})),
            ["delivered"]
        );
        assert_eq!(one(json!({"code": 11})), ["refresh"]);
        assert_eq!(one(json!({"code": -2})), ["throttled"]);
        assert_eq!(one(json!({"code": 55})), ["throttled"]);
        assert_eq!(one(json!({"code": -1})), ["retry"]);
        assert_eq!(one(json!({"code": 33})), ["permanent"]);
        assert_eq!(one(json!({"code": 41})), ["permanent"]);
        match classify(&answer(json!({"code": 10000})), &["a"], false) {
            Answered::PerDevice(v) => assert!(
                matches!(&v[0], SendOutcome::Permanent { error, .. } if error.contains("UNREGISTERED"))
            ),
            _ => panic!("unregistered"),
        }
        let batch = json!({"code": 0, "data": [
            {"messageId": "m1", "registrationId": "a"},
            {"registrationId": "b", "errorCode": 10000, "errorMessage": "Invalid Registration_id"}]});
        assert_eq!(
            classes(classify(&answer(batch), &["a", "b", "c"], true)),
            ["delivered", "permanent", "retry"]
        );
    }
}
