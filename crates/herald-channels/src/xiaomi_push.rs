//! The `xiaomi_push` channel: Xiaomi MiPush (domestic server API v3), the
//! push service of Xiaomi and Redmi phones (reference §4.0 and §4.3).
//!
//! MiPush takes the app secret on every call (`Authorization:
//! key=<AppSecret>`, `key` in lowercase) and the secret does not expire, so
//! there is no access token to fetch, cache or refresh. `POST
//! /v3/message/regid` carries one message, as a form, to a comma-separated
//! list of registration ids (up to 1,000 per call [unverified: the number
//! clients batch by]), so [`Channel::send_batch`] sends a campaign segment
//! in calls of `max_batch`.
//!
//! The message is the `app` shape (`notification.title` and `.body`,
//! `data`, `android.notification.click_action`, `android.ttl`). It becomes
//! a notification (`title` under 50 characters, `description` under 128,
//! refused at the door otherwise) or, without a notification, a
//! pass-through message of `data`. Every message carries a `notify_id`
//! derived from its content: without one, MiPush shows a single
//! notification per app and each new one replaces the last. The channel's
//! `channel_id` goes out as `extra.channel_id`: Xiaomi counts messages
//! without an approved private channel against a small per-device daily
//! allowance (1 on the default channel) and drops the rest silently.
//!
//! | answer | outcome |
//! |---|---|
//! | `result: "ok"` | delivered, `data.id` recorded; the ids in `data.bad_regids` fail as `UNREGISTERED` (pruned from subscribers) |
//! | `65003` (no such device) | every device of the call `UNREGISTERED` |
//! | `10027` (calls too frequent), HTTP 429 | throttled |
//! | `10002`, `10001`, `1`, `-1`, `20301`, HTTP 5xx, no answer | retryable |
//! | `200001`, `10034` (daily quota) | permanent: the app's quota for today is spent; sending again today fails the same |
//! | `21301`, `21302` (authentication) | permanent: the secret is wrong |
//! | any other code | permanent |

use async_trait::async_trait;
use serde_json::Value;

use crate::provider_http::{Answer, ProviderHttp, Secret, retryable};
use crate::vendor_push::{AppPush, Calls, Verdict, unregistered};
use crate::{
    BuildContext, Channel, ChannelError, ChannelKind, CommonSettings, Delivery, SendOutcome,
    XiaomiPushConfig,
};

/// The real API (mainland China).
pub const DEFAULT_API_BASE: &str = "https://api.xmpush.xiaomi.com";
/// Registration ids per send call.
pub const MAX_REGIDS_PER_CALL: usize = 1000;

const SEND_PATH: &str = "/v3/message/regid";
const VENDOR: &str = "xiaomi";

pub struct XiaomiPushChannel {
    name: String,
    app_secret: Secret,
    package_name: String,
    channel_id: Option<String>,
    max_batch: usize,
    http: ProviderHttp,
}

impl std::fmt::Debug for XiaomiPushChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XiaomiPushChannel")
            .field("name", &self.name)
            .field("package_name", &self.package_name)
            .field("app_secret", &self.app_secret)
            .finish()
    }
}

/// The form fields of a send, without `registration_id`.
fn xiaomi_form(
    p: &AppPush,
    package_name: &str,
    channel_id: Option<&str>,
) -> Vec<(&'static str, String)> {
    let mut f: Vec<(&'static str, String)> =
        vec![("restricted_package_name", package_name.to_string())];
    match (&p.title, &p.body) {
        (Some(title), Some(body)) => {
            f.push(("pass_through", "0".into()));
            f.push(("title", title.clone()));
            f.push(("description", body.clone()));
            // Sound, vibration and lights as the device is set.
            f.push(("notify_type", "-1".into()));
            f.push(("notify_id", p.notify_id().to_string()));
            match p.intent_uri() {
                Some(uri) => {
                    f.push(("extra.notify_effect", "2".into()));
                    f.push(("extra.intent_uri", uri));
                }
                None => f.push(("extra.notify_effect", "1".into())),
            }
        }
        _ => f.push(("pass_through", "1".into())),
    }
    if let Some(d) = &p.data {
        f.push(("payload", d.clone()));
    }
    if let Some(ttl) = p.ttl_secs {
        f.push(("time_to_live", ttl.saturating_mul(1000).to_string()));
    }
    if let Some(c) = channel_id {
        f.push(("extra.channel_id", c.to_string()));
    }
    f
}

fn classify(answer: &Answer) -> Verdict {
    if let Some(o) = answer.overload() {
        return Verdict::All(o);
    }
    let v = match answer.json_or_outcome() {
        Ok(v) => v,
        Err(o) => return Verdict::All(o),
    };
    let code = v.get("code").and_then(Value::as_i64);
    let result = v.get("result").and_then(Value::as_str).unwrap_or("");
    let reason: String = v
        .get("reason")
        .or_else(|| v.get("description"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .chars()
        .take(300)
        .collect();
    let error = format!(
        "xiaomi HTTP {} code {}: {reason}",
        answer.status,
        code.map_or_else(|| "none".to_string(), |c| c.to_string())
    );
    let status = code.or(Some(i64::from(answer.status)));
    if result == "ok" && code == Some(0) {
        let data = v.get("data");
        let delivered = SendOutcome::Delivered {
            provider_msgid: data
                .and_then(|d| d.get("id"))
                .and_then(Value::as_str)
                .map(str::to_string),
            status: Some(0),
        };
        let invalid: Vec<String> = data
            .and_then(|d| d.get("bad_regids"))
            .and_then(Value::as_str)
            .map(|s| {
                s.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        if invalid.is_empty() {
            return Verdict::All(delivered);
        }
        return Verdict::Partial {
            delivered,
            invalid,
            code: "bad_regids".into(),
        };
    }
    let Some(code) = code else {
        return Verdict::All(retryable(
            format!(
                "xiaomi HTTP {}: an answer without a code: {}",
                answer.status,
                answer.snippet()
            ),
            status,
        ));
    };
    Verdict::All(match code {
        10027 => SendOutcome::Throttled {
            error,
            status,
            retry_after_ms: answer.retry_after_ms(),
        },
        10002 | 10001 | 1 | -1 | 20301 => retryable(error, status),
        200001 | 10034 => SendOutcome::Permanent {
            error: format!("{error} (the app's daily quota is spent: final for today)"),
            status,
        },
        21301 | 21302 => SendOutcome::Permanent {
            error: format!("{error} (authentication failed: check app_secret)"),
            status,
        },
        65003 => unregistered(VENDOR, "65003"),
        _ => SendOutcome::Permanent { error, status },
    })
}

impl XiaomiPushChannel {
    pub fn new(
        common: &CommonSettings,
        cfg: &XiaomiPushConfig,
        _ctx: &BuildContext,
    ) -> Result<Self, ChannelError> {
        let package_name = cfg.package_name.trim().to_string();
        if package_name.is_empty() {
            return Err(common.err("package_name must not be empty"));
        }
        let app_secret = cfg
            .app_secret
            .resolve("app_secret")
            .map_err(|e| common.err(&e))?;
        let base = cfg.api_base.as_deref().unwrap_or(DEFAULT_API_BASE);
        let http = ProviderHttp::new(common, cfg.ca_file.as_deref(), base)?;
        Ok(Self {
            name: common.name.clone(),
            app_secret: Secret::new(app_secret),
            package_name,
            channel_id: cfg.channel_id.clone(),
            max_batch: cfg.max_batch.unwrap_or(MAX_REGIDS_PER_CALL),
            http,
        })
    }

    /// Reads and checks a delivery's message: its form fields.
    fn form(&self, d: &Delivery) -> Result<Vec<(&'static str, String)>, String> {
        let v = crate::shape::check_text(ChannelKind::XiaomiPush, &d.message)?;
        let m = v.as_object().ok_or("the message must be a JSON object")?;
        Ok(xiaomi_form(
            &AppPush::read(m),
            &self.package_name,
            self.channel_id.as_deref(),
        ))
    }

    /// One send call of `form` to `regids`: an outcome per device.
    async fn call(&self, form: &[(&'static str, String)], regids: &[&str]) -> Vec<SendOutcome> {
        let mut body: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let joined = regids.join(",");
        body.push(("registration_id", &joined));
        let req = self
            .http
            .post(&self.http.url(SEND_PATH))
            .header(
                reqwest::header::AUTHORIZATION,
                format!("key={}", self.app_secret.expose()),
            )
            .form(&body);
        let verdict = match self.http.call(req, "POST", SEND_PATH).await {
            Ok(answer) => classify(&answer),
            Err(e) => Verdict::All(retryable(e.to_string(), None)),
        };
        let outcomes = verdict.spread(VENDOR, regids);
        let unregistered = outcomes
            .iter()
            .filter(|o| matches!(o, SendOutcome::Permanent { error, .. } if error.contains("UNREGISTERED")))
            .count();
        tracing::debug!(
            channel = %self.name,
            devices = regids.len(),
            outcome = outcomes.first().map_or("none", SendOutcome::class),
            unregistered,
            "xiaomi send call"
        );
        outcomes
    }
}

#[async_trait]
impl Channel for XiaomiPushChannel {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> ChannelKind {
        ChannelKind::XiaomiPush
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
    /// registration ids; each device gets its own outcome.
    async fn send_batch(&self, deliveries: &[Delivery]) -> Vec<SendOutcome> {
        let mut plan = Calls::plan(deliveries, self.max_batch, |d| self.form(d));
        let calls = std::mem::take(&mut plan.calls);
        for (form, ix) in &calls {
            let regids: Vec<&str> = ix
                .iter()
                .map(|&i| deliveries[i].recipient.as_str())
                .collect();
            for (&i, o) in ix.iter().zip(self.call(form, &regids).await) {
                plan.outcomes[i] = Some(o);
            }
        }
        plan.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn answer(status: u16, body: Value) -> Answer {
        Answer {
            status,
            headers: Default::default(),
            body: body.to_string().into_bytes(),
        }
    }

    fn class(v: Value) -> String {
        match classify(&answer(200, v)) {
            Verdict::All(o) => o.class().to_string(),
            Verdict::Partial { .. } => "partial".into(),
        }
    }

    #[test]
    fn the_app_shape_becomes_a_mipush_form() {
        let m = json!({"notification": {"title": "Coupon 42", "body": "opens at 10:00"},
                       "data": {"coupon": "42"},
                       "android": {"ttl": "3600s", "notification": {"click_action": "com.shop.OPEN"}}});
        let p = AppPush::read(m.as_object().unwrap());
        let f = xiaomi_form(&p, "com.shop", Some("orders"));
        let get = |k: &str| f.iter().find(|(n, _)| *n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("restricted_package_name"), Some("com.shop"));
        assert_eq!(get("pass_through"), Some("0"));
        assert_eq!(get("title"), Some("Coupon 42"));
        assert_eq!(get("description"), Some("opens at 10:00"));
        assert_eq!(get("payload"), Some("{\"coupon\":\"42\"}"));
        assert_eq!(get("time_to_live"), Some("3600000"));
        assert_eq!(get("extra.channel_id"), Some("orders"));
        assert_eq!(get("extra.notify_effect"), Some("2"));
        assert_eq!(
            get("extra.intent_uri"),
            Some("intent:#Intent;action=com.shop.OPEN;end")
        );
        assert!(get("notify_id").is_some());

        let data_only = AppPush::read(json!({"data": {"k": "v"}}).as_object().unwrap());
        let f = xiaomi_form(&data_only, "com.shop", None);
        assert!(f.contains(&("pass_through", "1".into())));
        assert!(
            !f.iter()
                .any(|(k, _)| *k == "title" || *k == "extra.channel_id")
        );

        let check = |v: Value| crate::shape::check(ChannelKind::XiaomiPush, &v);
        let title = |t: &str| json!({"notification": {"title": t, "body": "b"}});
        assert!(check(title(&"标".repeat(49))).is_ok());
        assert_eq!(
            check(title(&"标".repeat(50))).unwrap_err().field,
            "notification.title"
        );
        assert_eq!(
            check(json!({"notification": {"title": "t", "body": "x".repeat(128)}}))
                .unwrap_err()
                .field,
            "notification.body"
        );
        assert_eq!(
            check(json!({"notification": {"title": "t"}}))
                .unwrap_err()
                .field,
            "notification.body"
        );
        assert_eq!(
            check(json!({"data": {"k": "v".repeat(4096)}}))
                .unwrap_err()
                .field,
            "data"
        );
    }

    #[test]
    fn answers_become_an_outcome_per_device() {
        assert_eq!(
            class(json!({"result": "ok", "code": 0, "data": {"id": "slm1"}})),
            "delivered"
        );
        assert_eq!(
            class(json!({"result": "error", "code": 10027})),
            "throttled"
        );
        for c in [10002, 10001, 1, -1, 20301] {
            assert_eq!(class(json!({"result": "error", "code": c})), "retry", "{c}");
        }
        for c in [200001, 10034, 21301, 21302, 10017, 22022] {
            assert_eq!(
                class(json!({"result": "error", "code": c})),
                "permanent",
                "{c}"
            );
        }
        match classify(&answer(
            200,
            json!({"result": "error", "code": 200001,
                                           "reason": "exceed quota, quota: 10, have acked: 10"}),
        )) {
            Verdict::All(SendOutcome::Permanent { error, .. }) => {
                assert!(
                    error.contains("daily quota") && error.contains("200001"),
                    "{error}"
                )
            }
            _ => panic!("quota is final"),
        }
        match classify(&answer(200, json!({"result": "error", "code": 65003}))) {
            Verdict::All(SendOutcome::Permanent { error, .. }) => {
                assert!(error.contains("UNREGISTERED"))
            }
            _ => panic!("no device"),
        }
        match classify(&answer(
            200,
            json!({"result": "ok", "code": 0, "data": {"id": "slm2", "bad_regids": "b,c"}}),
        )) {
            Verdict::Partial {
                invalid, delivered, ..
            } => {
                assert_eq!(invalid, ["b", "c"]);
                assert!(
                    matches!(delivered, SendOutcome::Delivered { provider_msgid: Some(ref r), .. } if r == "slm2")
                );
            }
            _ => panic!("partial"),
        }
        assert_eq!(
            match classify(&answer(503, json!({}))) {
                Verdict::All(o) => o.class(),
                _ => "partial",
            },
            "retry"
        );
    }
}
