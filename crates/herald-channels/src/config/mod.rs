//! `[[channels]]` blocks of the configuration, as types.
//!
//! A channel is its [`CommonSettings`] (name, limits, retry policy, quiet
//! hours, reminder template) plus a [`ProviderConfig`] holding only the keys
//! its kind takes. The TOML stays one flat table per channel; [`table`]
//! splits it, so a key of another provider is an error that names the
//! channel, the kind and the key.

mod common;
mod providers;
mod secret;
mod table;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::ChannelError;

pub use common::{COMMON_KEYS, CommonSettings, InDoubt, QuietHours, QuietPolicy};
pub use providers::{
    AliyunSmsConfig, DingtalkWorkConfig, FcmConfig, FeishuAppConfig, HonorPushConfig,
    HuaweiPushConfig, LogConfig, OppoPushConfig, ProviderKeys, RobotConfig, SmtpConfig, SmtpTls,
    TencentSmsConfig, TokenMode, VivoPushConfig, WebhookConfig, WechatConfig, WechatMiniConfig,
    WecomConfig, XiaomiPushConfig,
};
pub use secret::SecretSource;

pub(crate) use providers::plain_http_problem;

/// Provider kinds this build can deliver through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChannelKind {
    Log,
    Webhook,
    /// WeChat Official Account template messages.
    Wechat,
    /// WeCom (企业微信) app messages.
    Wecom,
    /// Firebase Cloud Messaging, HTTP v1.
    Fcm,
    /// Email over SMTP.
    Smtp,
    /// WeChat mini-program subscribe messages.
    WechatMini,
    /// Aliyun SMS (Dysmsapi `SendSms`).
    AliyunSms,
    /// Tencent Cloud SMS (`SendSms` 2021-01-11).
    TencentSms,
    /// A WeCom (企业微信) group robot's webhook.
    WecomRobot,
    /// A DingTalk (钉钉) group's custom robot.
    DingtalkRobot,
    /// A Feishu (飞书) group's custom bot.
    FeishuBot,
    /// Huawei Push Kit (HMS Core Push, v1).
    HuaweiPush,
    /// Xiaomi MiPush (server API v3).
    XiaomiPush,
    /// Honor Push.
    HonorPush,
    /// OPPO Push (server API v1).
    OppoPush,
    /// vivo Push (server API v2.9.2).
    VivoPush,
    /// DingTalk (钉钉) work notifications of an enterprise internal app.
    DingtalkWork,
    /// Feishu (飞书) / Lark app messages sent by a custom app's bot.
    FeishuApp,
}

impl ChannelKind {
    /// The address type a subscriber's entry gives for this provider; `None`
    /// for kinds that carry any address (webhooks, the log).
    pub fn channel_type(self) -> Option<herald_core::ChannelType> {
        use herald_core::ChannelType;
        match self {
            ChannelKind::Wechat => Some(ChannelType::Wechat),
            ChannelKind::Wecom => Some(ChannelType::Wecom),
            ChannelKind::Fcm
            | ChannelKind::HuaweiPush
            | ChannelKind::XiaomiPush
            | ChannelKind::HonorPush
            | ChannelKind::OppoPush
            | ChannelKind::VivoPush => Some(ChannelType::App),
            ChannelKind::Smtp => Some(ChannelType::Email),
            ChannelKind::WechatMini => Some(ChannelType::WechatMini),
            ChannelKind::AliyunSms | ChannelKind::TencentSms => Some(ChannelType::Sms),
            ChannelKind::Log
            | ChannelKind::Webhook
            | ChannelKind::WecomRobot
            | ChannelKind::DingtalkRobot
            | ChannelKind::FeishuBot
            | ChannelKind::DingtalkWork
            | ChannelKind::FeishuApp => None,
        }
    }

    /// The push service whose device tokens this kind reaches (a device of
    /// another service goes through a channel of that one); `None` for kinds
    /// that are not app push.
    pub fn push_service(self) -> Option<herald_core::device::PushService> {
        use herald_core::device::PushService;
        match self {
            ChannelKind::Fcm => Some(PushService::Fcm),
            ChannelKind::HuaweiPush => Some(PushService::Huawei),
            ChannelKind::XiaomiPush => Some(PushService::Xiaomi),
            ChannelKind::HonorPush => Some(PushService::Honor),
            ChannelKind::OppoPush => Some(PushService::Oppo),
            ChannelKind::VivoPush => Some(PushService::Vivo),
            ChannelKind::Log
            | ChannelKind::Webhook
            | ChannelKind::Wechat
            | ChannelKind::Wecom
            | ChannelKind::Smtp
            | ChannelKind::WechatMini
            | ChannelKind::AliyunSms
            | ChannelKind::TencentSms
            | ChannelKind::WecomRobot
            | ChannelKind::DingtalkRobot
            | ChannelKind::FeishuBot
            | ChannelKind::DingtalkWork
            | ChannelKind::FeishuApp => None,
        }
    }

    /// A group robot: its recipient names whom to mention in the group, and
    /// its messages take the template part `robot`.
    pub fn is_robot(self) -> bool {
        matches!(
            self,
            ChannelKind::WecomRobot | ChannelKind::DingtalkRobot | ChannelKind::FeishuBot
        )
    }

    /// The part of a message template this kind sends: its address type's,
    /// `robot` for group robots, `webhook` for kinds that take any message.
    /// The office apps (DingTalk work notifications) have no address type
    /// yet, and what they show is what a robot shows (text or Markdown with
    /// a title), so they take the `robot` part too. So do Feishu app messages.
    pub fn template_part(self) -> herald_core::template::PartKey {
        use herald_core::template::PartKey;
        if self.is_robot() || self.is_office_app() {
            return PartKey::Robot;
        }
        PartKey::for_type(self.channel_type())
    }

    /// An office suite's app messaging its users one by one (not a group
    /// robot): the recipient is the provider's user id.
    pub fn is_office_app(self) -> bool {
        matches!(self, ChannelKind::DingtalkWork | ChannelKind::FeishuApp)
    }

    /// Every kind, in the order messages list them.
    pub const ALL: [ChannelKind; 19] = [
        ChannelKind::Log,
        ChannelKind::Webhook,
        ChannelKind::Wechat,
        ChannelKind::Wecom,
        ChannelKind::Fcm,
        ChannelKind::Smtp,
        ChannelKind::WechatMini,
        ChannelKind::AliyunSms,
        ChannelKind::TencentSms,
        ChannelKind::WecomRobot,
        ChannelKind::DingtalkRobot,
        ChannelKind::FeishuBot,
        ChannelKind::HuaweiPush,
        ChannelKind::XiaomiPush,
        ChannelKind::HonorPush,
        ChannelKind::OppoPush,
        ChannelKind::VivoPush,
        ChannelKind::DingtalkWork,
        ChannelKind::FeishuApp,
    ];

    /// What an in-doubt send does when the channel does not say: providers
    /// that drop a repeated idempotency key (WeChat, WeCom, and webhook
    /// receivers, which get the key) resend; FCM and mail servers cannot
    /// de-duplicate, so a repeat reaches the person twice: skip. Neither
    /// SMS API takes an idempotency key (Aliyun and Tencent both say to
    /// check the receipt before resending a send that got no answer): skip.
    /// Nor does a mini-program subscribe message, which also spends one of
    /// the user's grants each time: skip. Nor do group robots, where a
    /// repeat shows in the group twice: skip. Nor does DingTalk's
    /// `asyncsend_v2`, which takes no request id (its same-content-once-a-day
    /// rule only catches a repeat of the very same text): skip. Feishu's
    /// `im/v1/messages` drops a repeated `uuid` within an hour, and the
    /// channel derives it from the idempotency key: resend.
    pub fn default_in_doubt(self) -> InDoubt {
        match self {
            ChannelKind::Fcm
            | ChannelKind::HuaweiPush
            | ChannelKind::XiaomiPush
            | ChannelKind::HonorPush
            | ChannelKind::OppoPush
            | ChannelKind::VivoPush
            | ChannelKind::Smtp
            | ChannelKind::WechatMini
            | ChannelKind::AliyunSms
            | ChannelKind::TencentSms
            | ChannelKind::WecomRobot
            | ChannelKind::DingtalkRobot
            | ChannelKind::FeishuBot
            | ChannelKind::DingtalkWork => InDoubt::Skip,
            ChannelKind::Log
            | ChannelKind::Webhook
            | ChannelKind::Wechat
            | ChannelKind::Wecom
            | ChannelKind::FeishuApp => InDoubt::Resend,
        }
    }

    /// The provider's own limits per recipient, as it documents them; a
    /// send past one is lost or refused, so Herald holds it back instead.
    ///
    /// - WeCom: at most 30 messages a minute and 1,000 an hour to one
    ///   member, the excess dropped without an error (developer.work.weixin.qq.com,
    ///   document/path/90236 and 90454; `shared/reference/providers.md` §3).
    /// - Aliyun SMS: 50 notices a day to one number per sign and template,
    ///   counted over a rolling 24 h (help.aliyun.com/document_detail/2881383;
    ///   `shared/reference/china-providers.md` §1). Verification-code
    ///   templates have tighter limits (1/min, 5/h, 10/day): configure
    ///   `pacing` for a channel that sends them.
    /// - Tencent SMS: by default the same content at most once in 30 s and
    ///   10 messages a day to one number (calendar day; a rolling 24 h here,
    ///   which is never looser). Pacing counts every message to the number,
    ///   not only the same content, so the 30 s limit is applied to all of
    ///   them (§2.2).
    /// - DingTalk work notifications: 500 a user a day from one internal
    ///   app, the excess taken and dropped (a rolling 24 h here, never
    ///   looser than DingTalk's day; `china-providers.md` §5.1). Its other
    ///   rule, the same content once a day, is about content, not counts,
    ///   and pacing cannot hold it.
    /// - Feishu app messages: 5 a second to one user or chat (§6.2); past it
    ///   Feishu answers `230020`.
    /// - The others publish no per-recipient limit (FCM's quota is per
    ///   project, WeChat's template quota per account per day): none.
    pub fn default_pacing(self) -> Vec<herald_core::pacing::Pace> {
        use herald_core::pacing::Pace;
        match self {
            ChannelKind::Wecom => vec![
                Pace {
                    max: 30,
                    window_ms: 60_000,
                },
                Pace {
                    max: 1_000,
                    window_ms: 3_600_000,
                },
            ],
            ChannelKind::AliyunSms => vec![Pace {
                max: 50,
                window_ms: 86_400_000,
            }],
            ChannelKind::TencentSms => vec![
                Pace {
                    max: 1,
                    window_ms: 30_000,
                },
                Pace {
                    max: 10,
                    window_ms: 86_400_000,
                },
            ],
            ChannelKind::DingtalkWork => vec![Pace {
                max: 500,
                window_ms: 86_400_000,
            }],
            ChannelKind::WecomRobot | ChannelKind::DingtalkRobot => vec![Pace {
                max: 20,
                window_ms: 60_000,
            }],
            ChannelKind::FeishuBot => vec![
                Pace {
                    max: 100,
                    window_ms: 60_000,
                },
                Pace {
                    max: 5,
                    window_ms: 1_000,
                },
            ],
            ChannelKind::Log
            | ChannelKind::Webhook
            | ChannelKind::Wechat
            | ChannelKind::WechatMini
            | ChannelKind::Fcm
            | ChannelKind::HuaweiPush
            | ChannelKind::XiaomiPush
            | ChannelKind::HonorPush
            | ChannelKind::OppoPush
            | ChannelKind::VivoPush
            | ChannelKind::Smtp => Vec::new(),
            ChannelKind::FeishuApp => vec![Pace {
                max: 5,
                window_ms: 1_000,
            }],
        }
    }

    /// The addresses a provider paces separately within one recipient: a
    /// WeCom `touser` of several members (`a|b`) counts once per member;
    /// `@all` and every other kind's recipient is one address. A group
    /// robot's limit is the robot's: every send of it counts as one address.
    pub fn paced_addresses(self, recipient: &str) -> Vec<&str> {
        match self {
            ChannelKind::Wecom if recipient != "@all" => {
                recipient.split('|').filter(|m| !m.is_empty()).collect()
            }
            k if k.is_robot() => vec!["robot"],
            _ => vec![recipient],
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ChannelKind::Log => "log",
            ChannelKind::Webhook => "webhook",
            ChannelKind::Wechat => "wechat",
            ChannelKind::Wecom => "wecom",
            ChannelKind::Fcm => "fcm",
            ChannelKind::Smtp => "smtp",
            ChannelKind::WechatMini => "wechat_mini",
            ChannelKind::AliyunSms => "aliyun_sms",
            ChannelKind::TencentSms => "tencent_sms",
            ChannelKind::WecomRobot => "wecom_robot",
            ChannelKind::DingtalkRobot => "dingtalk_robot",
            ChannelKind::FeishuBot => "feishu_bot",
            ChannelKind::HuaweiPush => "huawei_push",
            ChannelKind::XiaomiPush => "xiaomi_push",
            ChannelKind::HonorPush => "honor_push",
            ChannelKind::OppoPush => "oppo_push",
            ChannelKind::VivoPush => "vivo_push",
            ChannelKind::DingtalkWork => "dingtalk_work",
            ChannelKind::FeishuApp => "feishu_app",
        }
    }
}

impl std::fmt::Display for ChannelKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a channel delivers through, with that provider's settings.
#[derive(Debug, Clone, PartialEq)]
pub enum ProviderConfig {
    Log(LogConfig),
    Webhook(WebhookConfig),
    Wechat(WechatConfig),
    Wecom(WecomConfig),
    Fcm(FcmConfig),
    Smtp(SmtpConfig),
    WechatMini(WechatMiniConfig),
    AliyunSms(AliyunSmsConfig),
    TencentSms(TencentSmsConfig),
    WecomRobot(RobotConfig),
    DingtalkRobot(RobotConfig),
    FeishuBot(RobotConfig),
    HuaweiPush(HuaweiPushConfig),
    XiaomiPush(XiaomiPushConfig),
    HonorPush(HonorPushConfig),
    OppoPush(OppoPushConfig),
    VivoPush(VivoPushConfig),
    DingtalkWork(DingtalkWorkConfig),
    FeishuApp(FeishuAppConfig),
}

impl ProviderConfig {
    pub fn kind(&self) -> ChannelKind {
        match self {
            ProviderConfig::Log(_) => ChannelKind::Log,
            ProviderConfig::Webhook(_) => ChannelKind::Webhook,
            ProviderConfig::Wechat(_) => ChannelKind::Wechat,
            ProviderConfig::Wecom(_) => ChannelKind::Wecom,
            ProviderConfig::Fcm(_) => ChannelKind::Fcm,
            ProviderConfig::Smtp(_) => ChannelKind::Smtp,
            ProviderConfig::WechatMini(_) => ChannelKind::WechatMini,
            ProviderConfig::AliyunSms(_) => ChannelKind::AliyunSms,
            ProviderConfig::TencentSms(_) => ChannelKind::TencentSms,
            ProviderConfig::WecomRobot(_) => ChannelKind::WecomRobot,
            ProviderConfig::DingtalkRobot(_) => ChannelKind::DingtalkRobot,
            ProviderConfig::FeishuBot(_) => ChannelKind::FeishuBot,
            ProviderConfig::HuaweiPush(_) => ChannelKind::HuaweiPush,
            ProviderConfig::XiaomiPush(_) => ChannelKind::XiaomiPush,
            ProviderConfig::HonorPush(_) => ChannelKind::HonorPush,
            ProviderConfig::OppoPush(_) => ChannelKind::OppoPush,
            ProviderConfig::VivoPush(_) => ChannelKind::VivoPush,
            ProviderConfig::DingtalkWork(_) => ChannelKind::DingtalkWork,
            ProviderConfig::FeishuApp(_) => ChannelKind::FeishuApp,
        }
    }

    /// What can be checked without contacting the provider.
    fn check(&self) -> Result<(), String> {
        match self {
            ProviderConfig::Log(_) => Ok(()),
            ProviderConfig::Webhook(p) => p.check(),
            ProviderConfig::Wechat(p) => p.check(),
            ProviderConfig::Wecom(p) => p.check(),
            ProviderConfig::Fcm(p) => p.check(),
            ProviderConfig::Smtp(p) => p.check(),
            ProviderConfig::WechatMini(p) => p.check(),
            ProviderConfig::AliyunSms(p) => p.check(),
            ProviderConfig::TencentSms(p) => p.check(),
            ProviderConfig::WecomRobot(p)
            | ProviderConfig::DingtalkRobot(p)
            | ProviderConfig::FeishuBot(p) => p.check(self.kind()),
            ProviderConfig::HuaweiPush(p) => p.check(),
            ProviderConfig::XiaomiPush(p) => p.check(),
            ProviderConfig::HonorPush(p) => p.check(),
            ProviderConfig::OppoPush(p) => p.check(),
            ProviderConfig::VivoPush(p) => p.check(),
            ProviderConfig::DingtalkWork(p) => p.check(),
            ProviderConfig::FeishuApp(p) => p.check(),
        }
    }
}

/// One configured channel: where it delivers and how hard it may be pushed.
///
/// It reads from and writes to the flat `[[channels]]` table. Its `Debug`
/// output shows inline credentials as `<redacted>`, so a logged
/// configuration never leaks one.
#[derive(Debug, Clone, PartialEq)]
pub struct ChannelConfig {
    pub common: CommonSettings,
    pub provider: ProviderConfig,
}

impl ChannelConfig {
    /// A channel named `name` with default limits.
    pub fn new(name: &str, provider: ProviderConfig) -> Self {
        Self {
            common: CommonSettings::named(name),
            provider,
        }
    }

    /// A `log` channel with default limits.
    pub fn log(name: &str) -> Self {
        Self::new(name, ProviderConfig::Log(LogConfig {}))
    }

    /// A `webhook` channel to `url` with default limits.
    pub fn webhook(name: &str, url: &str) -> Self {
        Self::new(name, ProviderConfig::Webhook(WebhookConfig::new(url)))
    }

    pub fn name(&self) -> &str {
        &self.common.name
    }

    pub fn kind(&self) -> ChannelKind {
        self.provider.kind()
    }

    /// The in-doubt choice in force: the configured one, else the kind's.
    pub fn in_doubt(&self) -> InDoubt {
        self.common
            .in_doubt
            .unwrap_or_else(|| self.kind().default_in_doubt())
    }

    /// The pacing in force: the configured limits (each already checked by
    /// [`Self::validate`]), else the kind's.
    pub fn pacing(&self) -> Vec<herald_core::pacing::Pace> {
        match &self.common.pacing {
            Some(list) => list.iter().filter_map(|p| p.pace().ok()).collect(),
            None => self.kind().default_pacing(),
        }
    }

    /// Checks what can be checked without contacting the provider.
    pub fn validate(&self) -> Result<(), ChannelError> {
        self.common.validate()?;
        self.provider.check().map_err(|m| self.common.err(&m))
    }
}

impl Serialize for ChannelConfig {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        table::to_table(self)
            .map_err(serde::ser::Error::custom)?
            .serialize(s)
    }
}

impl<'de> Deserialize<'de> for ChannelConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let t = serde_json::Map::<String, serde_json::Value>::deserialize(d)?;
        table::from_table(t).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<ChannelConfig, String> {
        serde_json::from_str(json).map_err(|e| e.to_string())
    }

    #[test]
    fn validates_names_urls_and_limits() {
        assert!(ChannelConfig::log("log").validate().is_ok());
        assert!(
            ChannelConfig::webhook("h", "http://127.0.0.1:9/x")
                .validate()
                .is_ok()
        );
        assert!(ChannelConfig::webhook("h", "ftp://x").validate().is_err());
        assert!(ChannelConfig::webhook("h", "not a url").validate().is_err());
        assert!(ChannelConfig::log("bad name").validate().is_err());
        let mut c = ChannelConfig::log("x");
        c.common.concurrency = 0;
        assert!(c.validate().is_err());
        let mut hook = WebhookConfig::new("http://x");
        hook.secret = Some(SecretSource::Env("HERALD_TEST_SURELY_UNSET_VAR".into()));
        let c = ChannelConfig::new("h", ProviderConfig::Webhook(hook));
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("secret_env") && e.contains("\"h\""), "{e}");
    }

    #[test]
    fn parses_the_flat_table() {
        let c = parse(
            r#"{"name":"hooks","kind":"webhook","url":"http://127.0.0.1:9000/hook","concurrency":8,"secret_env":"HOOK_KEY"}"#,
        )
        .unwrap();
        assert_eq!(c.kind(), ChannelKind::Webhook);
        assert_eq!(c.common.concurrency, 8);
        assert_eq!(c.common.max_attempts, 8);
        let ProviderConfig::Webhook(hook) = &c.provider else {
            panic!("{c:?}")
        };
        assert_eq!(hook.url, "http://127.0.0.1:9000/hook");
        assert_eq!(hook.secret, Some(SecretSource::Env("HOOK_KEY".into())));
        // Integers are taken where a float is wanted.
        let c = parse(r#"{"name":"l","kind":"log","rate_per_sec":500}"#).unwrap();
        assert_eq!(c.common.rate_per_sec, Some(500.0));
    }

    /// A robot is paced as one address, at its provider's limit, whoever is
    /// mentioned, and its template part is `robot`.
    #[test]
    fn robots_are_paced_per_robot_and_take_the_robot_part() {
        for kind in [ChannelKind::WecomRobot, ChannelKind::DingtalkRobot] {
            let p = kind.default_pacing();
            assert_eq!(
                (p.len(), p[0].max, p[0].window_ms),
                (1, 20, 60_000),
                "{kind}"
            );
        }
        let p = ChannelKind::FeishuBot.default_pacing();
        assert_eq!(
            p.iter().map(|p| (p.max, p.window_ms)).collect::<Vec<_>>(),
            [(100, 60_000), (5, 1_000)]
        );
        for kind in [
            ChannelKind::WecomRobot,
            ChannelKind::DingtalkRobot,
            ChannelKind::FeishuBot,
        ] {
            assert_eq!(kind.paced_addresses("a|b"), ["robot"]);
            assert_eq!(kind.paced_addresses("-"), ["robot"]);
            assert_eq!(kind.template_part(), herald_core::template::PartKey::Robot);
            assert_eq!(kind.default_in_doubt(), InDoubt::Skip);
            assert_eq!(kind.channel_type(), None);
        }
        assert_eq!(
            ChannelKind::Wecom.template_part(),
            herald_core::template::PartKey::Type(herald_core::ChannelType::Wecom)
        );
        let c = parse(
            r#"{"name":"ops","kind":"dingtalk_robot","webhook_env":"HERALD_TEST_SURELY_UNSET_VAR"}"#,
        )
        .unwrap();
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("webhook_env"), "{e}");
        let c = parse(
            r#"{"name":"ops","kind":"feishu_bot","webhook":"http://10.0.0.1/open-apis/bot/v2/hook/abc","secret":"s"}"#,
        )
        .unwrap();
        let e = c.validate().unwrap_err().to_string();
        assert!(
            e.contains("allow_insecure_http") && !e.contains("abc"),
            "{e}"
        );
        let e = parse(r#"{"name":"ops","kind":"wecom_robot","webhook":"https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=k","secret":"s"}"#)
            .unwrap_err();
        assert!(e.contains("unknown key \"secret\""), "{e}");
    }

    #[test]
    fn office_apps_take_the_robot_part_and_a_raw_user_id() {
        use herald_core::template::PartKey;
        for (kind, doubt, pace) in [
            (ChannelKind::DingtalkWork, InDoubt::Skip, (500, 86_400_000)),
            (ChannelKind::FeishuApp, InDoubt::Resend, (5, 1_000)),
        ] {
            assert_eq!(kind.template_part(), PartKey::Robot, "{kind}");
            assert_eq!(kind.channel_type(), None, "{kind}");
            assert_eq!(kind.push_service(), None, "{kind}");
            assert!(!kind.is_robot(), "{kind}");
            assert_eq!(kind.default_in_doubt(), doubt, "{kind}");
            let p = kind.default_pacing();
            assert_eq!((p[0].max, p[0].window_ms), pace, "{kind}");
            assert_eq!(kind.paced_addresses("u1"), ["u1"]);
        }
        let c = parse(
            r#"{"name":"d","kind":"dingtalk_work","appkey":"k","appsecret":"s","agent_id":0}"#,
        )
        .unwrap();
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("agent_id"), "{e}");
        let c = parse(r#"{"name":"f","kind":"feishu_app","app_id":"cli_1","app_secret":"s","receive_id_type":"phone"}"#)
            .unwrap();
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("receive_id_type"), "{e}");
        let e = parse(r#"{"name":"f","kind":"feishu_app","app_id":"cli_1"}"#).unwrap_err();
        assert!(
            e.contains("missing key \"app_secret\" (or app_secret_env)"),
            "{e}"
        );
        let c = parse(r#"{"name":"d","kind":"dingtalk_work","appkey":"k","appsecret":"s","agent_id":7,"api_base":"http://10.0.0.1"}"#)
            .unwrap();
        let e = c.validate().unwrap_err().to_string();
        assert!(
            e.contains("api_base") && e.contains("allow_insecure_http"),
            "{e}"
        );
    }

    #[test]
    fn a_key_of_another_kind_names_channel_kind_and_key() {
        let e = parse(r#"{"name":"hooks","kind":"webhook","url":"http://x","corpid":"ww1"}"#)
            .unwrap_err();
        assert!(
            e.starts_with(
                "channel \"hooks\" (kind webhook): unknown key \"corpid\" (a wecom key); \
                 webhook takes url (required), secret or secret_env, ca_file, and the common keys (rate_per_sec,"
            ),
            "{e}"
        );
        let e = parse(r#"{"name":"l","kind":"log","colour":1,"url":"http://x"}"#).unwrap_err();
        assert!(
            e.contains("unknown keys \"colour\", \"url\" (a webhook key); log takes no keys"),
            "{e}"
        );
        let e = parse(r#"{"name":"wc","kind":"wecom","corpid":"c","corpsecret":"s","agentid":1,"secret":"x"}"#)
            .unwrap_err();
        assert!(
            e.contains(
                "unknown key \"secret\" (a key of webhook, wechat, wechat_mini, dingtalk_robot, feishu_bot)"
            ),
            "{e}"
        );
    }

    #[test]
    fn missing_and_mistyped_keys_are_named() {
        let e = parse(r#"{"name":"wx","kind":"wechat","secret":"s"}"#).unwrap_err();
        assert!(
            e.starts_with("channel \"wx\" (kind wechat): missing key \"appid\"; wechat takes appid (required), secret or secret_env (one required)"),
            "{e}"
        );
        let e = parse(r#"{"name":"wx","kind":"wechat","appid":"a"}"#).unwrap_err();
        assert!(e.contains("missing key \"secret\" (or secret_env)"), "{e}");
        let e = parse(r#"{"name":"wx","kind":"wechat","appid":"a","secret":"s","secret_env":"V"}"#)
            .unwrap_err();
        assert!(
            e.contains("set either secret or secret_env, not both"),
            "{e}"
        );
        let e =
            parse(r#"{"name":"wc","kind":"wecom","corpid":"c","corpsecret":"s","agentid":"one"}"#)
                .unwrap_err();
        assert!(e.contains("(kind wecom): agentid: invalid type"), "{e}");
        let e = parse(r#"{"name":"l","kind":"log","concurrency":"many"}"#).unwrap_err();
        assert!(e.contains("(kind log): concurrency: invalid type"), "{e}");
        let e = parse(r#"{"name":"x","kind":"sms"}"#).unwrap_err();
        assert!(
            e.contains("unknown kind \"sms\"; one of log, webhook"),
            "{e}"
        );
        let e = parse(r#"{"name":"x"}"#).unwrap_err();
        assert!(e.contains("channel \"x\": missing key \"kind\""), "{e}");
        let e = parse(r#"{"kind":"log"}"#).unwrap_err();
        assert!(e.contains("missing key \"name\""), "{e}");
        let e =
            parse(r#"{"name":"m","kind":"smtp","host":"h","from":"f","tls":"ssl"}"#).unwrap_err();
        assert!(e.contains("tls: unknown variant"), "{e}");
    }

    #[test]
    fn writes_back_the_table_it_reads() {
        let tables = [
            r#"{"name":"l","kind":"log"}"#,
            r#"{"name":"h","kind":"webhook","url":"http://x","secret":"k","ca_file":"/ca.pem","quiet_hours":{"start":"22:00","end":"08:00","timezone":"UTC","policy":"drop"}}"#,
            r#"{"name":"wx","kind":"wechat","appid":"a","secret_env":"WX","token_mode":"classic","api_base":"http://m"}"#,
            r#"{"name":"wc","kind":"wecom","corpid":"c","corpsecret":"s","agentid":7,"rate_per_sec":5.5}"#,
            r#"{"name":"f","kind":"fcm","service_account":"/k.json","project_id":"p","token_url":"http://t"}"#,
            r#"{"name":"m","kind":"smtp","host":"h","port":25,"tls":"none","username":"u","password_env":"PW","from":"a@b","reminder_template":{"subject":"{subject}"}}"#,
            r#"{"name":"ali","kind":"aliyun_sms","access_key_id":"LTAI","access_key_secret_env":"AK","sign_name":"Herald","template_code":"SMS_1","max_batch":500,"callback_secret":"cb"}"#,
            r#"{"name":"tx","kind":"tencent_sms","secret_id":"AKID","secret_key":"k","sms_sdk_app_id":"1400000000","sign_name":"Herald","template_id":"12","region":"ap-beijing","api_base":"http://127.0.0.1:1/tencent"}"#,
        ];
        for t in tables {
            let c = parse(t).unwrap();
            let written = serde_json::to_value(&c).unwrap();
            let again: ChannelConfig = serde_json::from_value(written.clone()).unwrap();
            assert_eq!(again, c, "{written}");
            for (k, v) in serde_json::from_str::<serde_json::Map<_, _>>(t).unwrap() {
                assert_eq!(written[&k], v, "{k} in {written}");
            }
        }
    }

    #[test]
    fn debug_hides_inline_credentials() {
        let c = parse(r#"{"name":"m","kind":"smtp","host":"h","from":"f","username":"u","password":"pw-SECRET"}"#)
            .unwrap();
        let shown = format!("{c:?}");
        assert!(
            !shown.contains("pw-SECRET") && shown.contains("<redacted>"),
            "{shown}"
        );
    }
}
