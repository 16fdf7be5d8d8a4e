//! The provider part of a channel: one struct per kind, holding only the keys
//! that kind takes.
//!
//! These structs derive serde with `deny_unknown_fields`, but their serde
//! form is internal: a credential is `{"inline": ..}` or `{"env": ..}` there.
//! Users write the flat `[[channels]]` table that [`super::table`] reads.

use serde::{Deserialize, Serialize};

use super::ChannelKind;
use super::secret::SecretSource;

/// The `log` channel takes nothing but the common keys.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogConfig {}

/// A signed `POST` per delivery to one URL.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookConfig {
    /// The receiver, `http://` or `https://`.
    pub url: String,
    /// HMAC-SHA256 key for `X-Herald-Signature`; unsigned without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<SecretSource>,
    /// PEM file of extra CA certificates to trust for `https://` (a private CA),
    /// beside the bundled web PKI roots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<String>,
}

/// WeChat Official Account template messages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WechatConfig {
    /// The Official Account's appid.
    pub appid: String,
    /// Its AppSecret.
    pub secret: SecretSource,
    /// Which token endpoint to use.
    #[serde(default)]
    pub token_mode: TokenMode,
    /// API root; the real provider by default, `herald mock` in tests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_base: Option<String>,
    /// Extra CA roots for `https://`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<String>,
    /// The `Token` of the account's server configuration: callbacks must be
    /// signed with it, and then need no API key. Unsigned without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callback_token: Option<SecretSource>,
    /// The `EncodingAESKey` (43 characters) of safe mode: callbacks must
    /// come encrypted, signed over the ciphertext. Needs `callback_token`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoding_aes_key: Option<SecretSource>,
    /// Lets `api_base` be a plain `http://` URL to a host other than a
    /// loopback one.
    #[serde(default, skip_serializing_if = "is_false")]
    pub allow_insecure_http: bool,
}

/// WeChat mini-program subscribe messages (`subscribeMessage.send`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WechatMiniConfig {
    /// The mini-program's appid.
    pub appid: String,
    /// Its AppSecret.
    pub secret: SecretSource,
    /// Which token endpoint to use.
    #[serde(default)]
    pub token_mode: TokenMode,
    /// Which version of the mini-program a tap opens: `formal` (the
    /// provider's default), `trial` or `developer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub miniprogram_state: Option<String>,
    /// The message's language: `zh_CN` (the provider's default), `en_US`,
    /// `zh_HK` or `zh_TW`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lang: Option<String>,
    /// API root; the real provider by default, `herald mock` in tests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_base: Option<String>,
    /// Extra CA roots for `https://`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<String>,
    /// Lets `api_base` be a plain `http://` URL to a host other than a
    /// loopback one.
    #[serde(default, skip_serializing_if = "is_false")]
    pub allow_insecure_http: bool,
}

/// WeCom (企业微信) app messages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WecomConfig {
    /// The corp id.
    pub corpid: String,
    /// The app's secret.
    pub corpsecret: SecretSource,
    /// The app's agent id.
    pub agentid: i64,
    /// API root; the real provider by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_base: Option<String>,
    /// Extra CA roots for `https://`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<String>,
    /// Lets provider URLs be plain `http://` to a non-loopback host.
    #[serde(default, skip_serializing_if = "is_false")]
    pub allow_insecure_http: bool,
}

/// Huawei Push Kit (HMS Core Push), the push service of Huawei phones.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HuaweiPushConfig {
    /// The app's id in AppGallery Connect (the OAuth client id).
    pub app_id: String,
    /// The app's secret (the OAuth client secret).
    pub app_secret: SecretSource,
    /// `android.category` of every message: the self-classification the app
    /// was granted (`SUBSCRIPTION`, `WORK`, `ACCOUNT`, ...). Without one,
    /// Huawei treats messages as marketing: two a day to a device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// Device tokens per send call (1 to 1000; default 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_batch: Option<usize>,
    /// API root; `https://push-api.cloud.huawei.com` by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_base: Option<String>,
    /// The OAuth token endpoint; Huawei's by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_url: Option<String>,
    /// Extra CA roots for `https://`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<String>,
    /// Lets provider URLs be plain `http://` to a non-loopback host.
    #[serde(default, skip_serializing_if = "is_false")]
    pub allow_insecure_http: bool,
}

/// Xiaomi MiPush (domestic server API v3), the push service of Xiaomi and
/// Redmi phones.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct XiaomiPushConfig {
    /// The app's AppSecret: MiPush takes it on every call
    /// (`Authorization: key=...`); it does not expire.
    pub app_secret: SecretSource,
    /// The app's package name (`restricted_package_name`).
    pub package_name: String,
    /// `extra.channel_id` of every message: the notification channel the
    /// app registered with Xiaomi. A private (approved) channel lifts the
    /// per-device daily allowance; without one, Xiaomi delivers one
    /// message a device a day and drops the rest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel_id: Option<String>,
    /// Registration ids per send call (1 to 1000; default 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_batch: Option<usize>,
    /// API root; `https://api.xmpush.xiaomi.com` by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_base: Option<String>,
    /// Extra CA roots for `https://`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<String>,
    /// Lets `api_base` be plain `http://` to a non-loopback host.
    #[serde(default, skip_serializing_if = "is_false")]
    pub allow_insecure_http: bool,
}

/// Honor Push, the push service of Honor phones.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HonorPushConfig {
    /// The app's id in Honor's developer console (`{appId}` in the send path).
    pub app_id: String,
    /// The app's OAuth client id.
    pub client_id: String,
    /// The app's OAuth client secret.
    pub client_secret: SecretSource,
    /// `android.notification.importance` of every message: `NORMAL` for
    /// service and communication messages (needs Honor's approval of the
    /// app's self-classification), `LOW` for marketing. Without it, Honor
    /// treats messages as marketing: two a day to a device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub importance: Option<String>,
    /// Device tokens per send call (1 to 1000; default 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_batch: Option<usize>,
    /// API root; `https://push-api.cloud.honor.com` by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_base: Option<String>,
    /// The OAuth token endpoint; Honor's by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_url: Option<String>,
    /// Extra CA roots for `https://`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<String>,
    /// Lets provider URLs be plain `http://` to a non-loopback host.
    #[serde(default, skip_serializing_if = "is_false")]
    pub allow_insecure_http: bool,
}

/// OPPO Push, the push service of OPPO, OnePlus and realme phones.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OppoPushConfig {
    /// The app's AppKey.
    pub app_key: String,
    /// The app's MasterSecret: it signs the `auth_token` request.
    pub master_secret: SecretSource,
    /// `category` of every message: a communication and service category
    /// the app was approved for (`IM`, `ACCOUNT`, `ORDER`, ...) lifts the
    /// per-device daily allowance; without one, OPPO treats messages as
    /// marketing: two a day to a device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// `channelId` of every message: the notification channel the app
    /// created on the phone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel_id: Option<String>,
    /// Messages per `unicast_batch` call (1 to 1000; default 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_batch: Option<usize>,
    /// API root (auth and sends); `https://api.push.oppomobile.com` by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_base: Option<String>,
    /// Extra CA roots for `https://`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<String>,
    /// Lets `api_base` be plain `http://` to a non-loopback host.
    #[serde(default, skip_serializing_if = "is_false")]
    pub allow_insecure_http: bool,
}

/// vivo Push, the push service of vivo and iQOO phones.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VivoPushConfig {
    /// The app's id in vivo's console (numeric).
    pub app_id: String,
    /// The app's AppKey.
    pub app_key: String,
    /// The app's AppSecret: it signs the `authToken` request.
    pub app_secret: SecretSource,
    /// `classification` of every message: `1` (system message: no
    /// per-device allowance, needs vivo's approval) or `0` (operation
    /// message, vivo's default: two a day to a device).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classification: Option<u8>,
    /// Registration ids per `pushToList` call (1 to 1000; default 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_batch: Option<usize>,
    /// API root (auth and sends); `https://api-push.vivo.com.cn` by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_base: Option<String>,
    /// Extra CA roots for `https://`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<String>,
    /// Lets `api_base` be plain `http://` to a non-loopback host.
    #[serde(default, skip_serializing_if = "is_false")]
    pub allow_insecure_http: bool,
}

/// DingTalk (钉钉) work notifications (工作通知) of an enterprise internal
/// app: `asyncsend_v2` to the app's users, by userid.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DingtalkWorkConfig {
    /// The internal app's AppKey (the `appkey` of `gettoken`).
    pub appkey: String,
    /// Its AppSecret.
    pub appsecret: SecretSource,
    /// The app's AgentId, which every send names.
    pub agent_id: i64,
    /// Userids per `asyncsend_v2` call (1 to 100; default 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_batch: Option<usize>,
    /// API root (token and sends); `https://oapi.dingtalk.com` by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_base: Option<String>,
    /// Extra CA roots for `https://`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<String>,
    /// Lets `api_base` be plain `http://` to a non-loopback host.
    #[serde(default, skip_serializing_if = "is_false")]
    pub allow_insecure_http: bool,
}

/// Feishu (飞书) / Lark app messages (`im/v1/messages`) of a custom app,
/// sent by its bot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeishuAppConfig {
    /// The app's App ID (`cli_...`).
    pub app_id: String,
    /// Its App Secret.
    pub app_secret: SecretSource,
    /// What a recipient is: `open_id` (the default), `user_id`,
    /// `union_id`, `email` or `chat_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receive_id_type: Option<String>,
    /// API root (token and sends); `https://open.feishu.cn` by default,
    /// `https://open.larksuite.com` for Lark.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_base: Option<String>,
    /// Extra CA roots for `https://`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<String>,
    /// Lets `api_base` be plain `http://` to a non-loopback host.
    #[serde(default, skip_serializing_if = "is_false")]
    pub allow_insecure_http: bool,
}

/// A chat group's robot: a WeCom group robot (`wecom_robot`), a DingTalk
/// custom robot (`dingtalk_robot`) or a Feishu custom bot (`feishu_bot`).
/// One channel is one robot, so one group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RobotConfig {
    /// The robot's webhook URL as the group's settings show it. It holds the
    /// robot's key (`key=`, `access_token=`, or the last path segment), so it
    /// is a credential: give it with `webhook_env` in production.
    pub webhook: SecretSource,
    /// The signing secret when the robot has signing ("加签") on: DingTalk
    /// and Feishu only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<SecretSource>,
    /// Extra CA roots for `https://`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<String>,
    /// Lets `webhook` be a plain `http://` URL to a host other than a
    /// loopback one.
    #[serde(default, skip_serializing_if = "is_false")]
    pub allow_insecure_http: bool,
}

/// Firebase Cloud Messaging, HTTP v1.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FcmConfig {
    /// Path to the service account's JSON key.
    pub service_account: String,
    /// The Firebase project; defaults to the key file's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    /// The OAuth2 token endpoint; defaults to the key file's `token_uri`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_url: Option<String>,
    /// API root; the real provider by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_base: Option<String>,
    /// Extra CA roots for `https://`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<String>,
    /// Lets provider URLs be plain `http://` to a non-loopback host.
    #[serde(default, skip_serializing_if = "is_false")]
    pub allow_insecure_http: bool,
}

/// Aliyun SMS (Dysmsapi 2017-05-25), signed with V3 `ACS3-HMAC-SHA256`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AliyunSmsConfig {
    /// The AccessKey id.
    pub access_key_id: String,
    /// The AccessKey secret.
    pub access_key_secret: SecretSource,
    /// The approved signature (`SignName`), e.g. `阿里云短信测试`.
    pub sign_name: String,
    /// The template (`TemplateCode`, e.g. `SMS_154950909`) used when a
    /// message names none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_code: Option<String>,
    /// Numbers per `SendSms` call (1 to 1000; default 1000). Only deliveries
    /// with the same template and parameters share a call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_batch: Option<usize>,
    /// API root; `https://dysmsapi.aliyuncs.com` by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_base: Option<String>,
    /// Extra CA roots for `https://`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<String>,
    /// Receipts (SmsReport pushes) must carry `?secret=<this>` in the
    /// callback URL; then they need no API key. Without it they need the
    /// admin key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callback_secret: Option<SecretSource>,
    /// Lets `api_base` be plain `http://` to a non-loopback host.
    #[serde(default, skip_serializing_if = "is_false")]
    pub allow_insecure_http: bool,
}

/// Tencent Cloud SMS (2021-01-11), signed with `TC3-HMAC-SHA256`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TencentSmsConfig {
    /// The API key's SecretId.
    pub secret_id: String,
    /// Its SecretKey.
    pub secret_key: SecretSource,
    /// The SMS application (`SmsSdkAppId`, e.g. `1400006666`).
    pub sms_sdk_app_id: String,
    /// The approved signature text (`SignName`).
    pub sign_name: String,
    /// The template (`TemplateId`, digits) used when a message names none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_id: Option<String>,
    /// `X-TC-Region`; `ap-guangzhou` by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// Numbers per `SendSms` call (1 to 200; default 200).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_batch: Option<usize>,
    /// API root; `https://sms.tencentcloudapi.com` by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_base: Option<String>,
    /// Extra CA roots for `https://`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<String>,
    /// Receipts must carry `?secret=<this>` in the callback URL; then they
    /// need no API key. Without it they need the admin key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callback_secret: Option<SecretSource>,
    /// Lets `api_base` be plain `http://` to a non-loopback host.
    #[serde(default, skip_serializing_if = "is_false")]
    pub allow_insecure_http: bool,
}

/// Email through an SMTP relay.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SmtpConfig {
    /// Server host.
    pub host: String,
    /// Server port; 587 with STARTTLS, 25 without.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// Transport security.
    #[serde(default)]
    pub tls: SmtpTls,
    /// Login user, if the server wants one (with `password`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// Login password (with `username`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<SecretSource>,
    /// The sender address.
    pub from: String,
    /// Lets a password be sent over `tls = "none"`, in the clear.
    #[serde(default, skip_serializing_if = "is_false")]
    pub allow_insecure_auth: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Which WeChat token endpoint to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum TokenMode {
    /// `/cgi-bin/stable_token`: the same token for every caller while valid.
    #[default]
    Stable,
    /// `/cgi-bin/token`: every fetch replaces the previous token.
    Classic,
}

/// SMTP transport security.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum SmtpTls {
    #[default]
    Starttls,
    None,
}

/// The keys a kind's provider part takes, besides the common ones.
#[derive(Debug, Clone, Copy)]
pub struct ProviderKeys {
    /// Keys that must be set.
    pub required: &'static [&'static str],
    /// Credentials, each written `X` or `X_env`; `true` when one must be set.
    pub secrets: &'static [(&'static str, bool)],
    /// Keys that may be set.
    pub optional: &'static [&'static str],
}

impl ProviderKeys {
    /// Every key a table of this kind may hold (`X` and `X_env` for credentials).
    pub fn accepts(&self, key: &str) -> bool {
        self.required.contains(&key)
            || self.optional.contains(&key)
            || self
                .secrets
                .iter()
                .any(|(s, _)| key == *s || key.strip_suffix("_env").is_some_and(|k| k == *s))
    }

    /// The keys in words: `url (required), secret or secret_env, ca_file`.
    pub fn describe(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        parts.extend(self.required.iter().map(|k| format!("{k} (required)")));
        parts.extend(self.secrets.iter().map(|(k, required)| {
            if *required {
                format!("{k} or {k}_env (one required)")
            } else {
                format!("{k} or {k}_env")
            }
        }));
        parts.extend(self.optional.iter().map(|k| k.to_string()));
        if parts.is_empty() {
            "no keys besides the common ones".into()
        } else {
            parts.join(", ")
        }
    }
}

impl ChannelKind {
    /// The provider keys of this kind.
    pub fn provider_keys(self) -> ProviderKeys {
        match self {
            ChannelKind::Log => ProviderKeys {
                required: &[],
                secrets: &[],
                optional: &[],
            },
            ChannelKind::Webhook => ProviderKeys {
                required: &["url"],
                secrets: &[("secret", false)],
                optional: &["ca_file"],
            },
            ChannelKind::Wechat => ProviderKeys {
                required: &["appid"],
                secrets: &[
                    ("secret", true),
                    ("callback_token", false),
                    ("encoding_aes_key", false),
                ],
                optional: &["token_mode", "api_base", "ca_file", "allow_insecure_http"],
            },
            ChannelKind::WechatMini => ProviderKeys {
                required: &["appid"],
                secrets: &[("secret", true)],
                optional: &[
                    "token_mode",
                    "miniprogram_state",
                    "lang",
                    "api_base",
                    "ca_file",
                    "allow_insecure_http",
                ],
            },
            ChannelKind::Wecom => ProviderKeys {
                required: &["corpid", "agentid"],
                secrets: &[("corpsecret", true)],
                optional: &["api_base", "ca_file", "allow_insecure_http"],
            },
            ChannelKind::Fcm => ProviderKeys {
                required: &["service_account"],
                secrets: &[],
                optional: &[
                    "project_id",
                    "token_url",
                    "api_base",
                    "ca_file",
                    "allow_insecure_http",
                ],
            },
            ChannelKind::AliyunSms => ProviderKeys {
                required: &["access_key_id", "sign_name"],
                secrets: &[("access_key_secret", true), ("callback_secret", false)],
                optional: &[
                    "template_code",
                    "max_batch",
                    "api_base",
                    "ca_file",
                    "allow_insecure_http",
                ],
            },
            ChannelKind::TencentSms => ProviderKeys {
                required: &["secret_id", "sms_sdk_app_id", "sign_name"],
                secrets: &[("secret_key", true), ("callback_secret", false)],
                optional: &[
                    "template_id",
                    "region",
                    "max_batch",
                    "api_base",
                    "ca_file",
                    "allow_insecure_http",
                ],
            },
            ChannelKind::HuaweiPush => ProviderKeys {
                required: &["app_id"],
                secrets: &[("app_secret", true)],
                optional: &[
                    "category",
                    "max_batch",
                    "api_base",
                    "token_url",
                    "ca_file",
                    "allow_insecure_http",
                ],
            },
            ChannelKind::XiaomiPush => ProviderKeys {
                required: &["package_name"],
                secrets: &[("app_secret", true)],
                optional: &[
                    "channel_id",
                    "max_batch",
                    "api_base",
                    "ca_file",
                    "allow_insecure_http",
                ],
            },
            ChannelKind::HonorPush => ProviderKeys {
                required: &["app_id", "client_id"],
                secrets: &[("client_secret", true)],
                optional: &[
                    "importance",
                    "max_batch",
                    "api_base",
                    "token_url",
                    "ca_file",
                    "allow_insecure_http",
                ],
            },
            ChannelKind::OppoPush => ProviderKeys {
                required: &["app_key"],
                secrets: &[("master_secret", true)],
                optional: &[
                    "category",
                    "channel_id",
                    "max_batch",
                    "api_base",
                    "ca_file",
                    "allow_insecure_http",
                ],
            },
            ChannelKind::VivoPush => ProviderKeys {
                required: &["app_id", "app_key"],
                secrets: &[("app_secret", true)],
                optional: &[
                    "classification",
                    "max_batch",
                    "api_base",
                    "ca_file",
                    "allow_insecure_http",
                ],
            },
            ChannelKind::DingtalkWork => ProviderKeys {
                required: &["appkey", "agent_id"],
                secrets: &[("appsecret", true)],
                optional: &["max_batch", "api_base", "ca_file", "allow_insecure_http"],
            },
            ChannelKind::FeishuApp => ProviderKeys {
                required: &["app_id"],
                secrets: &[("app_secret", true)],
                optional: &[
                    "receive_id_type",
                    "api_base",
                    "ca_file",
                    "allow_insecure_http",
                ],
            },
            ChannelKind::WecomRobot => ProviderKeys {
                required: &[],
                secrets: &[("webhook", true)],
                optional: &["ca_file", "allow_insecure_http"],
            },
            ChannelKind::DingtalkRobot | ChannelKind::FeishuBot => ProviderKeys {
                required: &[],
                secrets: &[("webhook", true), ("secret", false)],
                optional: &["ca_file", "allow_insecure_http"],
            },
            ChannelKind::Smtp => ProviderKeys {
                required: &["host", "from"],
                secrets: &[("password", false)],
                optional: &["port", "tls", "username", "allow_insecure_auth"],
            },
        }
    }
}

/// `field` holds something other than blanks.
fn non_empty(field: &str, v: &str) -> Result<(), String> {
    if v.trim().is_empty() {
        return Err(format!("{field} must not be empty"));
    }
    Ok(())
}

/// `api_base` and `token_url` are absolute `http(s)://` URLs, plain
/// `http://` only to a loopback host unless `allow_insecure_http`;
/// `ca_file` loads.
fn check_urls(
    urls: &[(&str, &Option<String>)],
    ca_file: &Option<String>,
    allow_insecure_http: bool,
) -> Result<(), String> {
    for (field, v) in urls {
        if let Some(url) = v {
            let origin = crate::http::Origin::parse(url).map_err(|e| format!("{field}: {e}"))?;
            if !allow_insecure_http {
                plain_http_problem(&origin).map_err(|e| format!("{field}: {e}"))?;
            }
        }
    }
    if let Some(path) = ca_file {
        crate::http::load_pem_certs(path).map_err(|e| format!("ca_file: {e}"))?;
    }
    Ok(())
}

/// Credentials must not cross the network in the clear: a plain `http://`
/// provider URL is taken only for a loopback host (a local mock or proxy).
pub(crate) fn plain_http_problem(origin: &crate::http::Origin) -> Result<(), String> {
    if origin.https || is_loopback_host(&origin.host) {
        return Ok(());
    }
    Err(format!(
        "plain http:// to {:?} would send credentials unencrypted; use https://, or set allow_insecure_http = true",
        origin.host
    ))
}

/// `localhost` (and its subdomains) or a loopback IP address.
fn is_loopback_host(host: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    host == "localhost"
        || host.ends_with(".localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

impl WebhookConfig {
    /// A webhook to `url`, unsigned.
    pub fn new(url: &str) -> Self {
        Self {
            url: url.to_string(),
            secret: None,
            ca_file: None,
        }
    }

    /// What can be checked without a request.
    pub fn check(&self) -> Result<(), String> {
        crate::http::Origin::parse(&self.url).map_err(|e| format!("url: {e}"))?;
        check_urls(&[], &self.ca_file, true)?;
        if let Some(s) = &self.secret {
            s.resolve("secret")?;
        }
        Ok(())
    }
}

impl WechatConfig {
    /// What can be checked without a request.
    pub fn check(&self) -> Result<(), String> {
        non_empty("appid", &self.appid)?;
        self.secret.resolve("secret")?;
        let token = match &self.callback_token {
            Some(t) => Some(t.resolve("callback_token")?),
            None => None,
        };
        if token.as_deref().is_some_and(|t| t.trim().is_empty()) {
            return Err("callback_token must not be empty".into());
        }
        if let Some(key) = &self.encoding_aes_key {
            let key = key.resolve("encoding_aes_key")?;
            crate::wechat::crypt::MsgCrypt::new(&key)
                .map_err(|e| format!("encoding_aes_key: {e}"))?;
            if token.is_none() {
                return Err(
                    "encoding_aes_key needs callback_token (safe mode signs with the token)".into(),
                );
            }
        }
        check_urls(
            &[("api_base", &self.api_base)],
            &self.ca_file,
            self.allow_insecure_http,
        )
    }
}

impl WechatMiniConfig {
    /// What can be checked without a request.
    pub fn check(&self) -> Result<(), String> {
        non_empty("appid", &self.appid)?;
        self.secret.resolve("secret")?;
        if let Some(s) = &self.miniprogram_state
            && !["formal", "trial", "developer"].contains(&s.as_str())
        {
            return Err(format!(
                "miniprogram_state must be formal, trial or developer, not {s:?}"
            ));
        }
        if let Some(l) = &self.lang
            && !["zh_CN", "en_US", "zh_HK", "zh_TW"].contains(&l.as_str())
        {
            return Err(format!(
                "lang must be zh_CN, en_US, zh_HK or zh_TW, not {l:?}"
            ));
        }
        check_urls(
            &[("api_base", &self.api_base)],
            &self.ca_file,
            self.allow_insecure_http,
        )
    }
}

impl WecomConfig {
    /// What can be checked without a request.
    pub fn check(&self) -> Result<(), String> {
        non_empty("corpid", &self.corpid)?;
        self.corpsecret.resolve("corpsecret")?;
        check_urls(
            &[("api_base", &self.api_base)],
            &self.ca_file,
            self.allow_insecure_http,
        )
    }
}

impl FcmConfig {
    /// What can be checked without a request (the key file is read when the
    /// channel is built).
    pub fn check(&self) -> Result<(), String> {
        non_empty("service_account", &self.service_account)?;
        check_urls(
            &[("api_base", &self.api_base), ("token_url", &self.token_url)],
            &self.ca_file,
            self.allow_insecure_http,
        )
    }
}

/// `max_batch` within `1..=most`.
fn check_batch(v: Option<usize>, most: usize) -> Result<(), String> {
    match v {
        Some(n) if n == 0 || n > most => {
            Err(format!("max_batch must be within 1..={most}, got {n}"))
        }
        _ => Ok(()),
    }
}

/// A callback secret, when set, resolves to something.
fn check_callback_secret(s: &Option<SecretSource>) -> Result<(), String> {
    if let Some(s) = s
        && s.resolve("callback_secret")?.trim().is_empty()
    {
        return Err("callback_secret must not be empty".into());
    }
    Ok(())
}

impl AliyunSmsConfig {
    /// What can be checked without a request.
    pub fn check(&self) -> Result<(), String> {
        non_empty("access_key_id", &self.access_key_id)?;
        non_empty("sign_name", &self.sign_name)?;
        self.access_key_secret.resolve("access_key_secret")?;
        if let Some(t) = &self.template_code {
            non_empty("template_code", t)?;
        }
        check_batch(self.max_batch, crate::aliyun_sms::MAX_NUMBERS_PER_CALL)?;
        check_callback_secret(&self.callback_secret)?;
        check_urls(
            &[("api_base", &self.api_base)],
            &self.ca_file,
            self.allow_insecure_http,
        )
    }
}

impl TencentSmsConfig {
    /// What can be checked without a request.
    pub fn check(&self) -> Result<(), String> {
        non_empty("secret_id", &self.secret_id)?;
        non_empty("sms_sdk_app_id", &self.sms_sdk_app_id)?;
        non_empty("sign_name", &self.sign_name)?;
        self.secret_key.resolve("secret_key")?;
        if let Some(t) = &self.template_id
            && (t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()))
        {
            return Err(format!("template_id must be digits, got {t:?}"));
        }
        if let Some(r) = &self.region {
            non_empty("region", r)?;
        }
        check_batch(self.max_batch, crate::tencent_sms::MAX_NUMBERS_PER_CALL)?;
        check_callback_secret(&self.callback_secret)?;
        check_urls(
            &[("api_base", &self.api_base)],
            &self.ca_file,
            self.allow_insecure_http,
        )
    }
}

impl HuaweiPushConfig {
    /// What can be checked without a request.
    pub fn check(&self) -> Result<(), String> {
        non_empty("app_id", &self.app_id)?;
        non_empty("app_secret", &self.app_secret.resolve("app_secret")?)?;
        if let Some(c) = &self.category
            && !crate::huawei_push::CATEGORIES.contains(&c.as_str())
        {
            return Err(format!(
                "category must be one of {}, not {c:?}",
                crate::huawei_push::CATEGORIES.join(", ")
            ));
        }
        check_batch(self.max_batch, crate::huawei_push::MAX_TOKENS_PER_CALL)?;
        check_urls(
            &[("api_base", &self.api_base), ("token_url", &self.token_url)],
            &self.ca_file,
            self.allow_insecure_http,
        )
    }
}

impl XiaomiPushConfig {
    /// What can be checked without a request.
    pub fn check(&self) -> Result<(), String> {
        non_empty("app_secret", &self.app_secret.resolve("app_secret")?)?;
        non_empty("package_name", &self.package_name)?;
        if let Some(c) = &self.channel_id {
            non_empty("channel_id", c)?;
        }
        check_batch(self.max_batch, crate::xiaomi_push::MAX_REGIDS_PER_CALL)?;
        check_urls(
            &[("api_base", &self.api_base)],
            &self.ca_file,
            self.allow_insecure_http,
        )
    }
}

impl HonorPushConfig {
    /// What can be checked without a request.
    pub fn check(&self) -> Result<(), String> {
        non_empty("app_id", &self.app_id)?;
        non_empty("client_id", &self.client_id)?;
        non_empty(
            "client_secret",
            &self.client_secret.resolve("client_secret")?,
        )?;
        if let Some(i) = &self.importance
            && !crate::honor_push::IMPORTANCES.contains(&i.as_str())
        {
            return Err(format!("importance must be NORMAL or LOW, not {i:?}"));
        }
        check_batch(self.max_batch, crate::honor_push::MAX_TOKENS_PER_CALL)?;
        check_urls(
            &[("api_base", &self.api_base), ("token_url", &self.token_url)],
            &self.ca_file,
            self.allow_insecure_http,
        )
    }
}

impl OppoPushConfig {
    /// What can be checked without a request.
    pub fn check(&self) -> Result<(), String> {
        non_empty("app_key", &self.app_key)?;
        non_empty(
            "master_secret",
            &self.master_secret.resolve("master_secret")?,
        )?;
        if let Some(c) = &self.category
            && !crate::oppo_push::CATEGORIES.contains(&c.as_str())
        {
            return Err(format!(
                "category must be one of {}, not {c:?}",
                crate::oppo_push::CATEGORIES.join(", ")
            ));
        }
        if let Some(c) = &self.channel_id {
            non_empty("channel_id", c)?;
        }
        check_batch(self.max_batch, crate::oppo_push::MAX_BATCH)?;
        check_urls(
            &[("api_base", &self.api_base)],
            &self.ca_file,
            self.allow_insecure_http,
        )
    }
}

impl VivoPushConfig {
    /// What can be checked without a request.
    pub fn check(&self) -> Result<(), String> {
        non_empty("app_id", &self.app_id)?;
        non_empty("app_key", &self.app_key)?;
        non_empty("app_secret", &self.app_secret.resolve("app_secret")?)?;
        if let Some(c) = self.classification
            && c > 1
        {
            return Err(format!(
                "classification must be 0 (operation) or 1 (system), not {c}"
            ));
        }
        check_batch(self.max_batch, crate::vivo_push::MAX_REGIDS_PER_CALL)?;
        check_urls(
            &[("api_base", &self.api_base)],
            &self.ca_file,
            self.allow_insecure_http,
        )
    }
}

impl DingtalkWorkConfig {
    /// What can be checked without a request.
    pub fn check(&self) -> Result<(), String> {
        non_empty("appkey", &self.appkey)?;
        non_empty("appsecret", &self.appsecret.resolve("appsecret")?)?;
        if self.agent_id <= 0 {
            return Err(format!(
                "agent_id must be the app's AgentId (a positive number), got {}",
                self.agent_id
            ));
        }
        check_batch(self.max_batch, crate::dingtalk_work::MAX_USERS_PER_CALL)?;
        check_urls(
            &[("api_base", &self.api_base)],
            &self.ca_file,
            self.allow_insecure_http,
        )
    }
}

impl FeishuAppConfig {
    /// What can be checked without a request.
    pub fn check(&self) -> Result<(), String> {
        non_empty("app_id", &self.app_id)?;
        non_empty("app_secret", &self.app_secret.resolve("app_secret")?)?;
        if let Some(t) = &self.receive_id_type
            && !crate::feishu_app::RECEIVE_ID_TYPES.contains(&t.as_str())
        {
            return Err(format!(
                "receive_id_type must be one of {}, not {t:?}",
                crate::feishu_app::RECEIVE_ID_TYPES.join(", ")
            ));
        }
        check_urls(
            &[("api_base", &self.api_base)],
            &self.ca_file,
            self.allow_insecure_http,
        )
    }
}

impl RobotConfig {
    /// What can be checked without a request: the webhook has the shape the
    /// provider's settings give it, and plain `http://` only to a loopback
    /// host unless allowed.
    pub fn check(&self, kind: ChannelKind) -> Result<(), String> {
        let url = self.webhook.resolve("webhook")?;
        let hook =
            crate::robots::Webhook::parse(kind, &url).map_err(|e| format!("webhook: {e}"))?;
        if !self.allow_insecure_http && !hook.https && !is_loopback_host(&hook.host) {
            return Err(format!(
                "webhook: plain http:// to {:?} would send the robot's key unencrypted; use https://, or set allow_insecure_http = true",
                hook.host
            ));
        }
        if let Some(s) = &self.secret {
            non_empty("secret", &s.resolve("secret")?)?;
        }
        check_urls(&[], &self.ca_file, true)
    }
}

impl SmtpConfig {
    /// What can be checked without a connection (the addresses are parsed
    /// when the channel is built).
    pub fn check(&self) -> Result<(), String> {
        non_empty("host", &self.host)?;
        if let Some(p) = &self.password {
            p.resolve("password")?;
            if self.tls == SmtpTls::None && !self.allow_insecure_auth {
                return Err(
                    "allow_insecure_auth: tls = \"none\" would send the password in the clear; use tls = \"starttls\", or set allow_insecure_auth = true".into(),
                );
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(v: serde_json::Value) -> Vec<String> {
        let mut keys: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        keys.sort_unstable();
        keys
    }

    fn listed(kind: ChannelKind) -> Vec<String> {
        let k = kind.provider_keys();
        let mut keys: Vec<String> = k
            .required
            .iter()
            .chain(k.optional)
            .chain(k.secrets.iter().map(|(s, _)| s))
            .map(|s| s.to_string())
            .collect();
        keys.sort_unstable();
        keys
    }

    /// The key lists that messages quote are exactly the structs' fields.
    #[test]
    fn key_lists_match_the_structs() {
        let secret = || Some(SecretSource::Inline("s".into()));
        let all = |v: &str| Some(v.to_string());
        let cases = [
            (ChannelKind::Log, serde_json::to_value(LogConfig {})),
            (
                ChannelKind::Webhook,
                serde_json::to_value(WebhookConfig {
                    url: "u".into(),
                    secret: secret(),
                    ca_file: all("c"),
                }),
            ),
            (
                ChannelKind::Wechat,
                serde_json::to_value(WechatConfig {
                    appid: "a".into(),
                    secret: SecretSource::Env("V".into()),
                    token_mode: TokenMode::Classic,
                    api_base: all("b"),
                    ca_file: all("c"),
                    callback_token: secret(),
                    encoding_aes_key: secret(),
                    allow_insecure_http: true,
                }),
            ),
            (
                ChannelKind::Wecom,
                serde_json::to_value(WecomConfig {
                    corpid: "c".into(),
                    corpsecret: SecretSource::Env("V".into()),
                    agentid: 1,
                    api_base: all("b"),
                    ca_file: all("c"),
                    allow_insecure_http: true,
                }),
            ),
            (
                ChannelKind::Fcm,
                serde_json::to_value(FcmConfig {
                    service_account: "k".into(),
                    project_id: all("p"),
                    token_url: all("t"),
                    api_base: all("b"),
                    ca_file: all("c"),
                    allow_insecure_http: true,
                }),
            ),
            (
                ChannelKind::Smtp,
                serde_json::to_value(SmtpConfig {
                    host: "h".into(),
                    port: Some(25),
                    tls: SmtpTls::None,
                    username: all("u"),
                    password: secret(),
                    from: "f".into(),
                    allow_insecure_auth: true,
                }),
            ),
            (
                ChannelKind::WechatMini,
                serde_json::to_value(WechatMiniConfig {
                    appid: "a".into(),
                    secret: SecretSource::Inline("s".into()),
                    token_mode: TokenMode::Stable,
                    miniprogram_state: all("trial"),
                    lang: all("zh_CN"),
                    api_base: all("b"),
                    ca_file: all("c"),
                    allow_insecure_http: true,
                }),
            ),
            (
                ChannelKind::AliyunSms,
                serde_json::to_value(AliyunSmsConfig {
                    access_key_id: "a".into(),
                    access_key_secret: SecretSource::Env("V".into()),
                    sign_name: "s".into(),
                    template_code: all("SMS_1"),
                    max_batch: Some(10),
                    api_base: all("b"),
                    ca_file: all("c"),
                    callback_secret: secret(),
                    allow_insecure_http: true,
                }),
            ),
            (
                ChannelKind::TencentSms,
                serde_json::to_value(TencentSmsConfig {
                    secret_id: "a".into(),
                    secret_key: SecretSource::Env("V".into()),
                    sms_sdk_app_id: "1400000000".into(),
                    sign_name: "s".into(),
                    template_id: all("1"),
                    region: all("ap-guangzhou"),
                    max_batch: Some(10),
                    api_base: all("b"),
                    ca_file: all("c"),
                    callback_secret: secret(),
                    allow_insecure_http: true,
                }),
            ),
        ];
        for (kind, v) in cases {
            assert_eq!(sorted(v.unwrap()), listed(kind), "{kind:?}");
        }
        let robot = |secret: Option<SecretSource>| {
            serde_json::to_value(RobotConfig {
                webhook: SecretSource::Env("V".into()),
                secret,
                ca_file: all("c"),
                allow_insecure_http: true,
            })
            .unwrap()
        };
        assert_eq!(sorted(robot(None)), listed(ChannelKind::WecomRobot));
        let huawei = serde_json::to_value(HuaweiPushConfig {
            app_id: "1".into(),
            app_secret: SecretSource::Env("V".into()),
            category: all("WORK"),
            max_batch: Some(10),
            api_base: all("b"),
            token_url: all("t"),
            ca_file: all("c"),
            allow_insecure_http: true,
        })
        .unwrap();
        assert_eq!(sorted(huawei), listed(ChannelKind::HuaweiPush));
        let xiaomi = serde_json::to_value(XiaomiPushConfig {
            app_secret: SecretSource::Env("V".into()),
            package_name: "com.shop".into(),
            channel_id: all("orders"),
            max_batch: Some(10),
            api_base: all("b"),
            ca_file: all("c"),
            allow_insecure_http: true,
        })
        .unwrap();
        assert_eq!(sorted(xiaomi), listed(ChannelKind::XiaomiPush));
        let honor = serde_json::to_value(HonorPushConfig {
            app_id: "1".into(),
            client_id: "c".into(),
            client_secret: SecretSource::Env("V".into()),
            importance: all("NORMAL"),
            max_batch: Some(10),
            api_base: all("b"),
            token_url: all("t"),
            ca_file: all("c"),
            allow_insecure_http: true,
        })
        .unwrap();
        assert_eq!(sorted(honor), listed(ChannelKind::HonorPush));
        let oppo = serde_json::to_value(OppoPushConfig {
            app_key: "k".into(),
            master_secret: SecretSource::Env("V".into()),
            category: all("ORDER"),
            channel_id: all("orders"),
            max_batch: Some(10),
            api_base: all("b"),
            ca_file: all("c"),
            allow_insecure_http: true,
        })
        .unwrap();
        assert_eq!(sorted(oppo), listed(ChannelKind::OppoPush));
        let vivo = serde_json::to_value(VivoPushConfig {
            app_id: "1".into(),
            app_key: "k".into(),
            app_secret: SecretSource::Env("V".into()),
            classification: Some(1),
            max_batch: Some(10),
            api_base: all("b"),
            ca_file: all("c"),
            allow_insecure_http: true,
        })
        .unwrap();
        assert_eq!(sorted(vivo), listed(ChannelKind::VivoPush));
        let dingtalk = serde_json::to_value(DingtalkWorkConfig {
            appkey: "k".into(),
            appsecret: SecretSource::Env("V".into()),
            agent_id: 1,
            max_batch: Some(10),
            api_base: all("b"),
            ca_file: all("c"),
            allow_insecure_http: true,
        })
        .unwrap();
        assert_eq!(sorted(dingtalk), listed(ChannelKind::DingtalkWork));
        let feishu = serde_json::to_value(FeishuAppConfig {
            app_id: "cli_1".into(),
            app_secret: SecretSource::Env("V".into()),
            receive_id_type: all("open_id"),
            api_base: all("b"),
            ca_file: all("c"),
            allow_insecure_http: true,
        })
        .unwrap();
        assert_eq!(sorted(feishu), listed(ChannelKind::FeishuApp));
        for kind in [ChannelKind::DingtalkRobot, ChannelKind::FeishuBot] {
            assert_eq!(sorted(robot(secret())), listed(kind), "{kind:?}");
        }
    }

    /// The vendor push kinds' checks name the field at fault.
    #[test]
    fn vendor_push_checks_name_the_field() {
        let secret = || SecretSource::Inline("s".into());
        let mut xiaomi = XiaomiPushConfig {
            app_secret: secret(),
            package_name: "com.shop".into(),
            channel_id: None,
            max_batch: None,
            api_base: None,
            ca_file: None,
            allow_insecure_http: false,
        };
        assert!(xiaomi.check().is_ok());
        xiaomi.package_name = " ".into();
        assert!(xiaomi.check().unwrap_err().starts_with("package_name"));
        xiaomi.package_name = "com.shop".into();
        xiaomi.max_batch = Some(1001);
        assert!(xiaomi.check().unwrap_err().starts_with("max_batch"));
        xiaomi.max_batch = None;
        xiaomi.api_base = Some("http://push.example.com".into());
        assert!(xiaomi.check().unwrap_err().starts_with("api_base"));

        let mut honor = HonorPushConfig {
            app_id: "1".into(),
            client_id: "c".into(),
            client_secret: secret(),
            importance: Some("HIGH".into()),
            max_batch: None,
            api_base: None,
            token_url: Some("http://127.0.0.1:1/auth/token".into()),
            ca_file: None,
            allow_insecure_http: false,
        };
        assert!(honor.check().unwrap_err().starts_with("importance"));
        honor.importance = Some("NORMAL".into());
        assert!(honor.check().is_ok());
        honor.client_id = String::new();
        assert!(honor.check().unwrap_err().starts_with("client_id"));

        let mut oppo = OppoPushConfig {
            app_key: "k".into(),
            master_secret: SecretSource::Inline(String::new()),
            category: Some("PROMO".into()),
            channel_id: None,
            max_batch: None,
            api_base: None,
            ca_file: None,
            allow_insecure_http: false,
        };
        assert!(oppo.check().unwrap_err().starts_with("master_secret"));
        oppo.master_secret = secret();
        assert!(oppo.check().unwrap_err().starts_with("category"));
        oppo.category = Some("ORDER".into());
        assert!(oppo.check().is_ok());

        let mut vivo = VivoPushConfig {
            app_id: "10004".into(),
            app_key: "k".into(),
            app_secret: SecretSource::Env("HERALD_TEST_SURELY_UNSET_VIVO".into()),
            classification: Some(2),
            max_batch: None,
            api_base: None,
            ca_file: None,
            allow_insecure_http: false,
        };
        assert!(vivo.check().unwrap_err().contains("app_secret"));
        vivo.app_secret = secret();
        assert!(vivo.check().unwrap_err().starts_with("classification"));
        vivo.classification = Some(1);
        assert!(vivo.check().is_ok());
    }

    #[test]
    fn describes_keys() {
        assert_eq!(
            ChannelKind::Wechat.provider_keys().describe(),
            "appid (required), secret or secret_env (one required), callback_token or callback_token_env, encoding_aes_key or encoding_aes_key_env, token_mode, api_base, ca_file, allow_insecure_http"
        );
        assert_eq!(
            ChannelKind::Log.provider_keys().describe(),
            "no keys besides the common ones"
        );
        let k = ChannelKind::Webhook.provider_keys();
        assert!(k.accepts("secret_env") && k.accepts("url") && !k.accepts("url_env"));
        assert!(!k.accepts("corpid"));
    }

    #[test]
    fn plain_http_only_to_loopback_unless_allowed() {
        let check =
            |url: &str, allow| check_urls(&[("api_base", &Some(url.to_string()))], &None, allow);
        for ok in [
            "https://api.weixin.qq.com",
            "http://127.0.0.1:9000",
            "http://[::1]:9000",
            "http://localhost:1",
            "http://mock.localhost",
        ] {
            assert!(check(ok, false).is_ok(), "{ok}");
        }
        let err = check("http://api.example.com", false).unwrap_err();
        assert!(
            err.starts_with("api_base: ") && err.contains("allow_insecure_http"),
            "{err}"
        );
        assert!(check("http://10.0.0.8", false).is_err());
        assert!(check("http://api.example.com", true).is_ok());
    }

    #[test]
    fn smtp_password_needs_tls_unless_allowed() {
        let mut cfg = SmtpConfig {
            host: "h".into(),
            port: None,
            tls: SmtpTls::None,
            username: Some("u".into()),
            password: Some(SecretSource::Inline("p".into())),
            from: "f@example.com".into(),
            allow_insecure_auth: false,
        };
        let err = cfg.check().unwrap_err();
        assert!(err.starts_with("allow_insecure_auth"), "{err}");
        cfg.allow_insecure_auth = true;
        assert!(cfg.check().is_ok());
        cfg.allow_insecure_auth = false;
        cfg.tls = SmtpTls::Starttls;
        assert!(cfg.check().is_ok());
        cfg.tls = SmtpTls::None;
        cfg.password = None;
        assert!(cfg.check().is_ok());
    }

    #[test]
    fn wechat_callback_secrets_are_checked() {
        let mut cfg = WechatConfig {
            appid: "wx1".into(),
            secret: SecretSource::Inline("s".into()),
            token_mode: TokenMode::Stable,
            api_base: None,
            ca_file: None,
            callback_token: None,
            encoding_aes_key: Some(SecretSource::Inline(
                "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG".into(),
            )),
            allow_insecure_http: false,
        };
        assert!(cfg.check().unwrap_err().contains("callback_token"));
        cfg.callback_token = Some(SecretSource::Inline("tok".into()));
        assert!(cfg.check().is_ok());
        cfg.encoding_aes_key = Some(SecretSource::Inline("short".into()));
        assert!(cfg.check().unwrap_err().starts_with("encoding_aes_key: "));
    }
}
