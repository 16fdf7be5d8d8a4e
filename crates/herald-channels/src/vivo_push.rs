//! The `vivo_push` channel: vivo Push (server API v2.9.2), the push service
//! of vivo and iQOO phones (reference §4.0 and §4.5, from mirrors of
//! vivo's document).
//!
//! Authentication: `POST /message/auth` with `appId`, `appKey`, a timestamp
//! in ms (within ten minutes of vivo's clock) and `sign`, the lowercase MD5
//! of appId + appKey + timestamp + appSecret, answers an `authToken` valid
//! a day. It is shared through [`TokenCache`] under `vivo:{app_id}` like
//! every provider token, and every call carries it as the `authToken`
//! header; every body also names the `appId`.
//!
//! One device gets `POST /message/send`. Several devices with the same
//! message get two calls: `/message/saveListPayload` stores the message and
//! answers a `taskId`, then `/message/pushToList` sends it to 2 to 1,000
//! registration ids, so [`Channel::send_batch`] sends a campaign segment
//! in calls of `max_batch`. Every call carries a `requestId`, which vivo
//! de-duplicates on: a single send's is taken from the delivery's
//! idempotency key, a batch's from its devices' keys, so a retried call
//! that already went through is not delivered twice.
//!
//! The message is the `app` shape with a notification (vivo's server API
//! sends notifications only): `title` (at most 40 "bytes", a CJK character
//! counting 2) and `content` (at most 100), `data` as `clientCustomMap`,
//! the click action as an intent URI (`skipType` 4), `android.ttl` as
//! `timeToLive` (900 s to 7 days), and the channel's `classification`:
//! vivo delivers two operation messages (`0`, the default) a day to a
//! device and drops the rest; system messages (`1`, which needs vivo's
//! approval) have no such allowance.
//!
//! | answer | outcome |
//! |---|---|
//! | `result` 0 | delivered, `taskId` recorded; ids in `invalidUsers` fail as `UNREGISTERED` (pruned from subscribers) |
//! | `10302` (invalid target) | `UNREGISTERED` |
//! | `10000` (authToken refused) [unverified code] | expire the token, refresh once, send once more |
//! | `10070`, `10252`, `10254` (daily quotas) | permanent: vivo asks not to call again today |
//! | HTTP 429 | throttled |
//! | HTTP 5xx, no answer | retryable |
//! | any other `result` | permanent |

use async_trait::async_trait;
use md5::{Digest, Md5};
use serde_json::{Map, Value, json};

use crate::provider_http::{Answer, ProviderHttp, Secret, retryable, token_outcome};
use crate::token_cache::{FetchedToken, TokenCache, TokenCacheOptions, TokenError, TokenUse};
use crate::vendor_push::{AppPush, Calls, unregistered};
use crate::{
    BuildContext, Channel, ChannelError, ChannelKind, CommonSettings, Delivery, ProviderStatus,
    SendOutcome, VivoPushConfig,
};

/// The real API.
pub const DEFAULT_API_BASE: &str = "https://api-push.vivo.com.cn";
/// Registration ids per `pushToList` call.
pub const MAX_REGIDS_PER_CALL: usize = 1000;
/// `timeToLive` bounds, in seconds.
const TTL_RANGE: (u64, u64) = (900, 7 * 86_400);
/// How long an `authToken` lives (a day).
const TOKEN_TTL_SECS: i64 = 24 * 3600;

const VENDOR: &str = "vivo";
const AUTH_PATH: &str = "/message/auth";
const SEND_PATH: &str = "/message/send";
const SAVE_PATH: &str = "/message/saveListPayload";
const LIST_PATH: &str = "/message/pushToList";
const TOKEN_REFUSED: i64 = 10000;
const INVALID_TARGET: i64 = 10302;

pub struct VivoPushChannel {
    name: String,
    app_id: String,
    app_key: String,
    app_secret: Secret,
    classification: Option<u8>,
    max_batch: usize,
    http: ProviderHttp,
    tokens: TokenCache,
}

impl std::fmt::Debug for VivoPushChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VivoPushChannel")
            .field("name", &self.name)
            .field("app_id", &self.app_id)
            .field("app_secret", &self.app_secret)
            .finish()
    }
}

/// vivo's `sign`: lowercase hex MD5 of the trimmed concatenation.
fn sign(app_id: &str, app_key: &str, timestamp: &str, app_secret: &str) -> String {
    let joined = format!("{app_id}{app_key}{timestamp}{app_secret}");
    hex::encode(Md5::digest(joined.trim().as_bytes()))
}

/// A `requestId` (at most 64 characters) for a call: the hex SHA-256 of
/// its parts, so the same delivery or batch always gets the same id.
fn request_id<'a>(parts: impl IntoIterator<Item = &'a str>) -> String {
    let mut h = <sha2::Sha256 as sha2::Digest>::new();
    for p in parts {
        sha2::Digest::update(&mut h, p.as_bytes());
        sha2::Digest::update(&mut h, [0]);
    }
    hex::encode(sha2::Digest::finalize(h))
}

/// The message fields of a send, without `regId`, `appId` and `requestId`.
fn vivo_message(p: &AppPush, classification: Option<u8>) -> Map<String, Value> {
    let mut m = Map::new();
    // 4: sound and vibration.
    m.insert("notifyType".into(), json!(4));
    m.insert("title".into(), json!(p.title.as_deref().unwrap_or("")));
    m.insert("content".into(), json!(p.body.as_deref().unwrap_or("")));
    match p.intent_uri() {
        // 4: open the page the intent URI names.
        Some(uri) => {
            m.insert("skipType".into(), json!(4));
            m.insert("skipContent".into(), json!(uri));
        }
        // 1: open the app.
        None => {
            m.insert("skipType".into(), json!(1));
        }
    }
    if let Some(ttl) = p.ttl_secs {
        m.insert(
            "timeToLive".into(),
            json!(ttl.clamp(TTL_RANGE.0, TTL_RANGE.1)),
        );
    }
    if let Some(d) = p
        .data
        .as_deref()
        .and_then(|d| serde_json::from_str::<Value>(d).ok())
    {
        m.insert("clientCustomMap".into(), d);
    }
    if let Some(c) = classification {
        m.insert("classification".into(), json!(c));
    }
    m
}

/// The `result` of an answer and its `desc`.
fn result_of(v: &Value) -> (Option<i64>, String) {
    (
        v.get("result").and_then(Value::as_i64),
        v.get("desc")
            .and_then(Value::as_str)
            .unwrap_or("")
            .chars()
            .take(300)
            .collect(),
    )
}

/// What one answer means.
enum Answered {
    /// `result` 0, with the answer.
    Ok(Value),
    /// The whole call's outcome.
    Failed(SendOutcome),
    /// The `authToken` was refused.
    TokenRefused(SendOutcome),
}

fn classify(answer: &Answer) -> Answered {
    if answer.status == 429 {
        return Answered::Failed(SendOutcome::Throttled {
            error: format!("vivo HTTP 429: {}", answer.snippet()),
            status: Some(429),
            retry_after_ms: answer.retry_after_ms(),
        });
    }
    if let Some(o) = answer.overload() {
        return Answered::Failed(o);
    }
    let v = match answer.json_or_outcome() {
        Ok(v) => v,
        Err(o) => return Answered::Failed(o),
    };
    let (code, desc) = result_of(&v);
    let Some(code) = code else {
        return Answered::Failed(retryable(
            format!("vivo HTTP {}: an answer without a result", answer.status),
            Some(i64::from(answer.status)),
        ));
    };
    let error = format!("vivo result {code}: {desc}");
    match code {
        0 => Answered::Ok(v),
        TOKEN_REFUSED => Answered::TokenRefused(retryable(error, Some(code))),
        INVALID_TARGET => Answered::Failed(unregistered(VENDOR, "10302")),
        10070 | 10252 | 10254 => Answered::Failed(SendOutcome::Permanent {
            error: format!("{error} (the app's daily quota is spent: final for today)"),
            status: Some(code),
        }),
        _ => Answered::Failed(SendOutcome::Permanent {
            error,
            status: Some(code),
        }),
    }
}

impl VivoPushChannel {
    pub fn new(
        common: &CommonSettings,
        cfg: &VivoPushConfig,
        ctx: &BuildContext,
    ) -> Result<Self, ChannelError> {
        Self::with_options(common, cfg, ctx, TokenCacheOptions::default())
    }

    /// As [`VivoPushChannel::new`], with the token cache's clock and margins.
    pub fn with_options(
        common: &CommonSettings,
        cfg: &VivoPushConfig,
        ctx: &BuildContext,
        opts: TokenCacheOptions,
    ) -> Result<Self, ChannelError> {
        let app_id = cfg.app_id.trim().to_string();
        if app_id.is_empty() {
            return Err(common.err("app_id must not be empty"));
        }
        let app_key = cfg.app_key.trim().to_string();
        if app_key.is_empty() {
            return Err(common.err("app_key must not be empty"));
        }
        let app_secret = cfg
            .app_secret
            .resolve("app_secret")
            .map_err(|e| common.err(&e))?;
        let base = cfg.api_base.as_deref().unwrap_or(DEFAULT_API_BASE);
        let http = ProviderHttp::new(common, cfg.ca_file.as_deref(), base)?;
        let tokens = TokenCache::new(
            format!("vivo:{app_id}"),
            ctx.vault.clone(),
            ctx.node_id.clone(),
            opts,
        );
        Ok(Self {
            name: common.name.clone(),
            app_id,
            app_key,
            app_secret: Secret::new(app_secret),
            classification: cfg.classification,
            max_batch: cfg.max_batch.unwrap_or(MAX_REGIDS_PER_CALL),
            http,
            tokens,
        })
    }

    /// `appId` as vivo's bodies take it: a number when it is one.
    fn app_id_value(&self) -> Value {
        self.app_id
            .parse::<u64>()
            .map_or_else(|_| json!(self.app_id), |n| json!(n))
    }

    async fn token(&self) -> Result<String, TokenError> {
        self.tokens.get(|_hint| self.fetch_token()).await
    }

    async fn fetch_token(&self) -> Result<FetchedToken, TokenError> {
        let timestamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let signed = sign(
            &self.app_id,
            &self.app_key,
            &timestamp.to_string(),
            self.app_secret.expose(),
        );
        let body = json!({"appId": self.app_id_value(), "appKey": self.app_key,
                          "timestamp": timestamp, "sign": signed});
        let req = self.http.post(&self.http.url(AUTH_PATH)).json(&body);
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
        let (code, desc) = result_of(&v);
        match (
            code,
            v.get("authToken")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty()),
        ) {
            (Some(0), Some(t)) if answer.is_success() => {
                tracing::debug!(channel = %self.name, "vivo authToken fetched");
                Ok(FetchedToken {
                    token: t.to_string(),
                    expires_in_secs: TOKEN_TTL_SECS,
                })
            }
            _ => Err(TokenError::Failed(format!(
                "{AUTH_PATH}: HTTP {} result {}: {desc}",
                answer.status,
                code.map_or_else(|| "none".into(), |c| c.to_string())
            ))),
        }
    }

    /// One call with the token, refreshed once if vivo refuses it.
    async fn call(&self, path: &'static str, body: &Value) -> Answered {
        let url = self.http.url(path);
        let url = &url;
        self.tokens
            .with_refresh(
                || self.token(),
                |token| async move {
                    let req = self.http.post(url).header("authToken", token).json(body);
                    match self.http.call(req, "POST", path).await {
                        Ok(answer) => match classify(&answer) {
                            Answered::TokenRefused(o) => {
                                TokenUse::Rejected(Answered::TokenRefused(o))
                            }
                            a => TokenUse::Answered(a),
                        },
                        Err(e) => {
                            TokenUse::Answered(Answered::Failed(retryable(e.to_string(), None)))
                        }
                    }
                },
            )
            .await
            .unwrap_or_else(|e| Answered::Failed(token_outcome(e)))
    }

    /// Reads and checks a delivery's message.
    fn message(&self, d: &Delivery) -> Result<Map<String, Value>, String> {
        let v = crate::shape::check_text(ChannelKind::VivoPush, &d.message)?;
        let m = v.as_object().ok_or("the message must be a JSON object")?;
        Ok(vivo_message(&AppPush::read(m), self.classification))
    }

    /// `/message/send` to one device.
    async fn send_one(&self, message: &Map<String, Value>, d: &Delivery) -> SendOutcome {
        let mut body = message.clone();
        body.insert("appId".into(), self.app_id_value());
        body.insert("regId".into(), json!(d.recipient));
        body.insert(
            "requestId".into(),
            json!(request_id([d.idempotency_key.as_str(), &d.recipient])),
        );
        let outcome = match self.call(SEND_PATH, &Value::Object(body)).await {
            Answered::Ok(v) => SendOutcome::Delivered {
                provider_msgid: v.get("taskId").map(|t| match t {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                }),
                status: Some(0),
            },
            Answered::Failed(o) | Answered::TokenRefused(o) => o,
        };
        tracing::debug!(channel = %self.name, outcome = outcome.class(), "vivo send");
        outcome
    }

    /// `saveListPayload` then `pushToList` to several devices.
    async fn send_list(&self, message: &Map<String, Value>, ds: &[&Delivery]) -> Vec<SendOutcome> {
        let keys: Vec<&str> = ds.iter().map(|d| d.idempotency_key.as_str()).collect();
        let mut save = message.clone();
        save.insert("appId".into(), self.app_id_value());
        save.insert(
            "requestId".into(),
            json!(request_id(keys.iter().copied().chain(["save"]))),
        );
        let task = match self.call(SAVE_PATH, &Value::Object(save)).await {
            Answered::Ok(v) => match v.get("taskId") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Number(n)) => n.to_string(),
                _ => {
                    let o = retryable("vivo saveListPayload answered no taskId".into(), Some(0));
                    return vec![o; ds.len()];
                }
            },
            Answered::Failed(o) | Answered::TokenRefused(o) => return vec![o; ds.len()],
        };
        let regids: Vec<&str> = ds.iter().map(|d| d.recipient.as_str()).collect();
        let push = json!({"appId": self.app_id_value(), "regIds": regids, "taskId": task,
                          "requestId": request_id(keys.iter().copied().chain(["push"]))});
        let outcomes = match self.call(LIST_PATH, &push).await {
            Answered::Ok(v) => {
                let invalid: Vec<&str> = v
                    .get("invalidUsers")
                    .and_then(Value::as_array)
                    .map(|l| {
                        l.iter()
                            .filter_map(|u| u.get("userid").and_then(Value::as_str))
                            .collect()
                    })
                    .unwrap_or_default();
                regids
                    .iter()
                    .map(|r| {
                        if invalid.contains(r) {
                            unregistered(VENDOR, "invalidUsers")
                        } else {
                            SendOutcome::Delivered {
                                provider_msgid: Some(task.clone()),
                                status: Some(0),
                            }
                        }
                    })
                    .collect()
            }
            Answered::Failed(o) | Answered::TokenRefused(o) => vec![o; ds.len()],
        };
        tracing::debug!(
            channel = %self.name,
            devices = ds.len(),
            task = %task,
            outcome = outcomes.first().map_or("none", SendOutcome::class),
            "vivo pushToList"
        );
        outcomes
    }
}

#[async_trait]
impl Channel for VivoPushChannel {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> ChannelKind {
        ChannelKind::VivoPush
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

    /// Deliveries with the same message share `pushToList` calls of up to
    /// `max_batch` devices; a lone device goes through `/message/send`.
    async fn send_batch(&self, deliveries: &[Delivery]) -> Vec<SendOutcome> {
        let mut plan = Calls::plan(deliveries, self.max_batch, |d| self.message(d));
        let calls = std::mem::take(&mut plan.calls);
        for (m, ix) in &calls {
            let ds: Vec<&Delivery> = ix.iter().map(|&i| &deliveries[i]).collect();
            let outcomes = match ds.as_slice() {
                [one] => vec![self.send_one(m, one).await],
                many => self.send_list(m, many).await,
            };
            for (&i, o) in ix.iter().zip(outcomes) {
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
            Answered::Ok(_) => "ok".into(),
            Answered::Failed(o) => o.class().into(),
            Answered::TokenRefused(_) => "refresh".into(),
        }
    }

    #[test]
    fn signs_and_names_requests_as_vivo_does() {
        assert_eq!(
            sign("10004", "k", "1501484120000", "s"),
            hex::encode(Md5::digest(b"10004k1501484120000s"))
        );
        let a = request_id(["herald-timer-1", "dev"]);
        assert_eq!(a.len(), 64);
        assert_eq!(a, request_id(["herald-timer-1", "dev"]));
        assert_ne!(a, request_id(["herald-timer-2", "dev"]));
    }

    #[test]
    fn the_app_shape_becomes_a_vivo_message() {
        let m = json!({"notification": {"title": "Coupon 42", "body": "opens at 10:00"},
                       "data": {"coupon": "42"},
                       "android": {"ttl": "60s", "notification": {"click_action": "com.shop.OPEN"}}});
        let v = vivo_message(&AppPush::read(m.as_object().unwrap()), Some(1));
        assert_eq!(
            Value::Object(v),
            json!({"notifyType": 4, "title": "Coupon 42", "content": "opens at 10:00",
                   "skipType": 4, "skipContent": "intent:#Intent;action=com.shop.OPEN;end",
                   "timeToLive": 900, "clientCustomMap": {"coupon": "42"}, "classification": 1})
        );
        let check = |v: Value| crate::shape::check(ChannelKind::VivoPush, &v);
        assert!(check(json!({"notification": {"title": "标".repeat(20), "body": "b"}})).is_ok());
        assert_eq!(
            check(json!({"notification": {"title": "标".repeat(21), "body": "b"}}))
                .unwrap_err()
                .field,
            "notification.title"
        );
        assert_eq!(
            check(json!({"notification": {"title": "t", "body": "x".repeat(101)}}))
                .unwrap_err()
                .field,
            "notification.body"
        );
        assert_eq!(
            check(json!({"data": {"k": "v"}})).unwrap_err().field,
            "notification"
        );
    }

    #[test]
    fn answers_become_outcomes() {
        assert_eq!(class(200, json!({"result": 0, "taskId": "1"})), "ok");
        assert_eq!(class(200, json!({"result": 10000})), "refresh");
        assert_eq!(class(429, json!({})), "throttled");
        assert_eq!(class(500, json!({})), "retry");
        for c in [10070, 10252, 10254, 10094, 10099] {
            assert_eq!(class(200, json!({"result": c})), "permanent", "{c}");
        }
        match classify(&answer(
            200,
            json!({"result": 10302, "invalidUser": {"status": 1}}),
        )) {
            Answered::Failed(SendOutcome::Permanent { error, .. }) => {
                assert!(error.contains("UNREGISTERED"))
            }
            _ => panic!("invalid target"),
        }
        match classify(&answer(
            200,
            json!({"result": 10070, "desc": "发送总量超出限制"}),
        )) {
            Answered::Failed(SendOutcome::Permanent { error, .. }) => {
                assert!(error.contains("daily quota"), "{error}")
            }
            _ => panic!("quota"),
        }
    }
}
