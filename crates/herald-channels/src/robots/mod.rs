//! Group robots: a WeCom group robot (`wecom_robot`), a DingTalk custom robot
//! (`dingtalk_robot`) and a Feishu custom bot (`feishu_bot`).
//!
//! Each is one webhook that posts into one chat group, so a channel is one
//! robot and its recipient says whom the message mentions
//! ([`message::Mentions`]). The three differ in their body, their signature
//! and their codes, which live in one module each; what they share is here:
//! reading the webhook, the message, the call and the answer's HTTP level.
//!
//! None takes an idempotency key, so a send that got no answer may or may not
//! have reached the group: in-doubt sends are skipped by default. Each robot's
//! rate limit (20 a minute for WeCom and DingTalk, 100 a minute and 5 a
//! second for Feishu) is paced by Herald before the send, and the provider's
//! own "too fast" answer is a throttle, not a failure.

mod dingtalk;
mod feishu;
pub(crate) mod message;
mod wecom;

use std::sync::Arc;

use async_trait::async_trait;
use herald_core::{Clock, SystemClock};
use serde_json::Value;

use crate::provider_http::{Answer, ProviderHttp, Secret, retryable};
use crate::{
    Channel, ChannelError, ChannelKind, CommonSettings, Delivery, RobotConfig, SendOutcome,
};
use message::{Mentions, RobotMessage};

/// A robot's webhook URL, checked against the shape its provider gives.
/// Errors never quote the URL: it holds the robot's key.
#[derive(Clone)]
pub(crate) struct Webhook {
    pub https: bool,
    pub host: String,
    /// `scheme://host[:port]`.
    pub base: String,
    /// The whole URL, key included.
    url: Secret,
}

impl std::fmt::Debug for Webhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webhook").field("base", &self.base).finish()
    }
}

impl Webhook {
    pub fn parse(kind: ChannelKind, url: &str) -> Result<Webhook, String> {
        let shape = match kind {
            ChannelKind::WecomRobot => "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=KEY",
            ChannelKind::DingtalkRobot => "https://oapi.dingtalk.com/robot/send?access_token=TOKEN",
            _ => "https://open.feishu.cn/open-apis/bot/v2/hook/TOKEN",
        };
        let bad = |why: &str| format!("{why}; a {kind} webhook looks like {shape}");
        let u = reqwest::Url::parse(url.trim()).map_err(|e| bad(&format!("not a URL ({e})")))?;
        let https = match u.scheme() {
            "https" => true,
            "http" => false,
            _ => return Err(bad("it must start with https://")),
        };
        let host = u
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| bad("it has no host"))?;
        let param = |name: &str| {
            u.query_pairs()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
                .filter(|v| !v.trim().is_empty())
        };
        let path = u.path();
        let fits = match kind {
            ChannelKind::WecomRobot => {
                path.ends_with("/cgi-bin/webhook/send") && param("key").is_some()
            }
            ChannelKind::DingtalkRobot => {
                if param("timestamp").is_some() || param("sign").is_some() {
                    return Err(bad(
                        "it carries timestamp or sign; give the URL without them and the signing secret as secret",
                    ));
                }
                path.ends_with("/robot/send") && param("access_token").is_some()
            }
            _ => path
                .split_once("/open-apis/bot/v2/hook/")
                .is_some_and(|(_, token)| !token.is_empty() && !token.contains('/')),
        };
        if !fits {
            return Err(bad("its path or key is not a robot's"));
        }
        let port = u.port().map(|p| format!(":{p}")).unwrap_or_default();
        Ok(Webhook {
            https,
            host: host.to_string(),
            base: format!("{}://{host}{port}", u.scheme()),
            url: Secret::new(u.to_string()),
        })
    }
}

/// One group robot.
pub struct RobotChannel {
    name: String,
    kind: ChannelKind,
    hook: Webhook,
    secret: Option<Secret>,
    http: ProviderHttp,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for RobotChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RobotChannel")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("hook", &self.hook)
            .finish()
    }
}

impl RobotChannel {
    pub fn new(
        common: &CommonSettings,
        kind: ChannelKind,
        cfg: &RobotConfig,
    ) -> Result<Self, ChannelError> {
        Self::with_clock(common, kind, cfg, Arc::new(SystemClock))
    }

    /// As [`RobotChannel::new`], with the clock that timestamps signatures.
    pub fn with_clock(
        common: &CommonSettings,
        kind: ChannelKind,
        cfg: &RobotConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, ChannelError> {
        let url = cfg.webhook.resolve("webhook").map_err(|e| common.err(&e))?;
        let hook = Webhook::parse(kind, &url).map_err(|e| common.err(&format!("webhook: {e}")))?;
        let secret = match (&cfg.secret, kind) {
            (None, _) => None,
            (Some(_), ChannelKind::WecomRobot) => {
                return Err(common.err("a WeCom group robot has no signing secret"));
            }
            (Some(s), _) => Some(Secret::new(
                s.resolve("secret").map_err(|e| common.err(&e))?,
            )),
        };
        let http = ProviderHttp::new(common, cfg.ca_file.as_deref(), &hook.base)?;
        Ok(Self {
            name: common.name.clone(),
            kind,
            hook,
            secret,
            http,
            clock,
        })
    }

    /// The message and mentions of a delivery, or why it cannot be sent.
    fn read(&self, d: &Delivery) -> Result<(RobotMessage, Mentions), String> {
        let v: Value = serde_json::from_str(&d.message)
            .map_err(|e| format!("the message is not JSON: {e}"))?;
        let m = v.as_object().ok_or("the message must be a JSON object")?;
        let msg = message::read(self.kind, m).map_err(|e| e.message)?;
        let mentions = Mentions::parse(&d.recipient)?;
        if matches!(msg, RobotMessage::Native(_)) && !mentions.is_empty() {
            return Err(
                "a message in the provider's own shape carries its own mentions; give the recipient \"-\""
                    .into(),
            );
        }
        Ok((msg, mentions))
    }

    /// The request's URL and body.
    fn request(&self, msg: RobotMessage, mentions: &Mentions) -> Result<(String, Value), String> {
        let url = self.hook.url.expose().to_string();
        let secret = self.secret.as_ref().map(Secret::expose);
        let now_ms = self.clock.now_ms();
        Ok(match self.kind {
            ChannelKind::WecomRobot => (url, wecom::body(msg, mentions)?),
            ChannelKind::DingtalkRobot => (
                dingtalk::signed_url(url, secret, now_ms),
                dingtalk::body(msg, mentions),
            ),
            _ => (url, feishu::body(msg, mentions, secret, now_ms)?),
        })
    }

    /// What the answer means. Errors come in the body under HTTP 200, as
    /// `errcode` (WeCom, DingTalk) or `code` (Feishu).
    fn outcome(&self, answer: &Answer) -> SendOutcome {
        if let Some(o) = answer.overload() {
            return o;
        }
        let v = match answer.json_or_outcome() {
            Ok(v) => v,
            Err(o) => return o,
        };
        let (code_key, msg_key) = match self.kind {
            ChannelKind::FeishuBot => ("code", "msg"),
            _ => ("errcode", "errmsg"),
        };
        let code = v
            .get(code_key)
            .and_then(Value::as_i64)
            .or_else(|| v.get("StatusCode").and_then(Value::as_i64));
        let Some(code) = code else {
            if answer.is_success() {
                return retryable(
                    format!(
                        "HTTP {}: an answer without {code_key}: {}",
                        answer.status,
                        answer.snippet()
                    ),
                    Some(i64::from(answer.status)),
                );
            }
            return answer.rejected();
        };
        let text = v
            .get(msg_key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .chars()
            .take(300)
            .collect::<String>();
        if code == 0 {
            return SendOutcome::Delivered {
                provider_msgid: None,
                status: Some(0),
            };
        }
        let error = format!("{} {code_key} {code}: {text}", self.kind);
        let throttle = match self.kind {
            ChannelKind::WecomRobot => wecom::throttle_ms(code),
            ChannelKind::DingtalkRobot => dingtalk::throttle_ms(code),
            _ => feishu::throttle_ms(code),
        };
        if let Some(wait) = throttle {
            return SendOutcome::Throttled {
                error,
                status: Some(code),
                retry_after_ms: Some(wait),
            };
        }
        // "System busy" on the Tencent and DingTalk side.
        if code == -1 {
            return retryable(error, Some(code));
        }
        SendOutcome::Permanent {
            error,
            status: Some(code),
        }
    }
}

#[async_trait]
impl Channel for RobotChannel {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> ChannelKind {
        self.kind
    }

    async fn send(&self, d: &Delivery) -> SendOutcome {
        let (url, body) = match self.read(d).and_then(|(m, who)| self.request(m, &who)) {
            Ok(r) => r,
            Err(error) => {
                return SendOutcome::Permanent {
                    error,
                    status: None,
                };
            }
        };
        let path = match self.kind {
            ChannelKind::WecomRobot => "/cgi-bin/webhook/send",
            ChannelKind::DingtalkRobot => "/robot/send",
            _ => "/open-apis/bot/v2/hook",
        };
        let req = self.http.post(&url).json(&body);
        let outcome = match self.http.call(req, "POST", path).await {
            Ok(answer) => self.outcome(&answer),
            Err(e) => retryable(e.to_string(), None),
        };
        tracing::debug!(channel = %self.name, kind = %self.kind, timer = d.timer_id,
                        class = outcome.class(), "robot send");
        outcome
    }
}

/// `base64(HMAC-SHA256(key, message))`, the signature both DingTalk and Feishu
/// use, with the key and the message the other way round.
fn hmac_b64(key: &[u8], message: &[u8]) -> String {
    use base64::Engine;
    use hmac::{Hmac, Mac};
    let mut mac = match Hmac::<sha2::Sha256>::new_from_slice(key) {
        Ok(m) => m,
        // HMAC takes keys of any length; this cannot happen.
        Err(_) => return String::new(),
    };
    mac.update(message);
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn webhooks_have_their_providers_shape_and_errors_hide_the_key() {
        let ok = [
            (
                ChannelKind::WecomRobot,
                "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=K1",
            ),
            (
                ChannelKind::DingtalkRobot,
                "https://oapi.dingtalk.com/robot/send?access_token=T1",
            ),
            (
                ChannelKind::FeishuBot,
                "https://open.feishu.cn/open-apis/bot/v2/hook/abc-123",
            ),
            (
                ChannelKind::WecomRobot,
                "http://127.0.0.1:9/cgi-bin/webhook/send?key=K1",
            ),
        ];
        for (kind, url) in ok {
            let h = Webhook::parse(kind, url).unwrap();
            assert!(!format!("{h:?}").contains("K1"));
        }
        assert_eq!(
            Webhook::parse(
                ChannelKind::WecomRobot,
                "http://127.0.0.1:9/cgi-bin/webhook/send?key=K1"
            )
            .unwrap()
            .base,
            "http://127.0.0.1:9"
        );
        let bad = [
            (
                ChannelKind::WecomRobot,
                "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?keyz=SECRET",
            ),
            (
                ChannelKind::WecomRobot,
                "https://oapi.dingtalk.com/robot/send?access_token=SECRET",
            ),
            (
                ChannelKind::DingtalkRobot,
                "https://oapi.dingtalk.com/robot/send?access_token=SECRET&timestamp=1&sign=x",
            ),
            (
                ChannelKind::FeishuBot,
                "https://open.feishu.cn/open-apis/bot/v2/hook/",
            ),
            (
                ChannelKind::FeishuBot,
                "ftp://open.feishu.cn/open-apis/bot/v2/hook/SECRET",
            ),
            (ChannelKind::FeishuBot, "not a url SECRET"),
        ];
        for (kind, url) in bad {
            let e = Webhook::parse(kind, url).unwrap_err();
            assert!(!e.contains("SECRET"), "{e}");
            assert!(e.contains("looks like"), "{e}");
        }
    }

    fn channel(kind: ChannelKind, url: &str) -> RobotChannel {
        let cfg = RobotConfig {
            webhook: crate::SecretSource::Inline(url.into()),
            secret: None,
            ca_file: None,
            allow_insecure_http: false,
        };
        RobotChannel::new(&CommonSettings::named("r"), kind, &cfg).unwrap()
    }

    fn answer(status: u16, body: &str) -> Answer {
        Answer {
            status,
            headers: Default::default(),
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn answers_are_classified_by_their_codes() {
        let wecom = channel(
            ChannelKind::WecomRobot,
            "http://127.0.0.1:9/cgi-bin/webhook/send?key=k",
        );
        let ding = channel(
            ChannelKind::DingtalkRobot,
            "http://127.0.0.1:9/robot/send?access_token=t",
        );
        let feishu = channel(
            ChannelKind::FeishuBot,
            "http://127.0.0.1:9/open-apis/bot/v2/hook/t",
        );
        let class = |c: &RobotChannel, status, body| c.outcome(&answer(status, body)).class();
        assert_eq!(
            class(&wecom, 200, r#"{"errcode":0,"errmsg":"ok"}"#),
            "delivered"
        );
        assert_eq!(
            class(&feishu, 200, r#"{"code":0,"msg":"success","data":{}}"#),
            "delivered"
        );
        assert_eq!(
            class(
                &feishu,
                200,
                r#"{"StatusCode":0,"StatusMessage":"success"}"#
            ),
            "delivered"
        );
        let waits = |c: &RobotChannel, body| match c.outcome(&answer(200, body)) {
            SendOutcome::Throttled { retry_after_ms, .. } => retry_after_ms,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            waits(
                &wecom,
                r#"{"errcode":45009,"errmsg":"api freq out of limit"}"#
            ),
            Some(60_000)
        );
        assert_eq!(
            waits(&ding, r#"{"errcode":130101,"errmsg":"send too fast"}"#),
            Some(600_000)
        );
        assert_eq!(
            waits(&feishu, r#"{"code":11232,"msg":"frequency limited"}"#),
            Some(10_000)
        );
        assert_eq!(
            class(&wecom, 200, r#"{"errcode":-1,"errmsg":"system busy"}"#),
            "retry"
        );
        assert_eq!(class(&ding, 502, "bad gateway"), "retry");
        assert_eq!(class(&ding, 429, ""), "throttled");
        assert_eq!(class(&wecom, 200, "<html>proxy</html>"), "retry");
        assert_eq!(class(&wecom, 400, "<html>nope</html>"), "permanent");
        for (c, body) in [
            (
                &wecom,
                r#"{"errcode":93000,"errmsg":"invalid webhook url"}"#,
            ),
            (&ding, r#"{"errcode":310000,"errmsg":"sign not match"}"#),
            (&ding, r#"{"errcode":300001,"errmsg":"token is not exist"}"#),
            (&feishu, r#"{"code":19021,"msg":"sign match fail"}"#),
            (&feishu, r#"{"code":9499,"msg":"Bad Request"}"#),
        ] {
            match c.outcome(&answer(200, body)) {
                SendOutcome::Permanent { error, status } => {
                    assert!(error.starts_with(c.kind.as_str()), "{error}");
                    assert!(
                        status.is_some_and(|s| error.contains(&s.to_string())),
                        "{error}"
                    );
                }
                other => panic!("{body}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_wecom_robot_has_no_secret_and_a_bad_webhook_stops_the_build() {
        let mut cfg = RobotConfig {
            webhook: crate::SecretSource::Inline(
                "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=K".into(),
            ),
            secret: Some(crate::SecretSource::Inline("s".into())),
            ca_file: None,
            allow_insecure_http: false,
        };
        let common = CommonSettings::named("r");
        assert!(RobotChannel::new(&common, ChannelKind::WecomRobot, &cfg).is_err());
        cfg.secret = None;
        assert!(RobotChannel::new(&common, ChannelKind::WecomRobot, &cfg).is_ok());
        let e = RobotChannel::new(&common, ChannelKind::FeishuBot, &cfg)
            .unwrap_err()
            .to_string();
        assert!(e.contains("webhook") && !e.contains("key=K"), "{e}");
    }

    #[test]
    fn signatures_match_the_documented_formula() {
        // HMAC-SHA256("key", "The quick brown fox jumps over the lazy dog").
        assert_eq!(
            hmac_b64(b"key", b"The quick brown fox jumps over the lazy dog"),
            "97yD9DBThCSxMpjmqm+xQ+9NWaFJRhdZl0edvC0aPNg="
        );
    }
}
