//! Faithful mocks of the providers Herald delivers to, served over real HTTP.
//!
//! One server serves every provider on the provider's real paths, so a channel's
//! `api_base` is just `http://127.0.0.1:PORT`:
//!
//! - Webhook sink: `POST /hook`, `POST /hook/{*rest}`.
//! - WeChat Official Account ([`wechat`](crate::WechatConfig)): `GET /cgi-bin/token`,
//!   `POST /cgi-bin/stable_token`, `POST /cgi-bin/message/template/send`; delivery
//!   callbacks (`TEMPLATESENDJOBFINISH` XML) to a configured URL.
//! - WeCom app messages ([`wecom`](crate::WecomConfig)): `GET /cgi-bin/gettoken`,
//!   `POST /cgi-bin/message/send`, `POST /cgi-bin/message/recall`.
//!
//! Control endpoints live under `/_mock/`: `GET stats` (webhook fields plus one member
//! per provider mock, `wechat`, `wecom`, ... `robots`, `huawei`), `GET requests?limit=&key=`,
//! `GET keys/{key}`, `GET|POST faults`, `POST reset` (every provider), `GET health`; per provider
//! `GET|POST wechat/faults`, `GET|POST wechat/config`, `GET wechat/stats`,
//! `GET wechat/messages?limit=&touser=`, `POST wechat/clock`,
//! `GET|POST wecom/faults`, `GET wecom/stats`, `GET wecom/messages?limit=&touser=`,
//! `POST wecom/age {msgid, secs}`, `POST wecom/clock {advance_secs}`.
//! Tencent APIs answer errors as HTTP 200 with `errcode`/`errmsg`; so do these mocks.
//! - FCM HTTP v1 with its OAuth2 token endpoint: `POST /token`,
//!   `POST /v1/projects/{p}/messages:send`; control `/_mock/fcm/{stats,messages,faults}`.
//! - SMTP: a real SMTP server on its own TCP listener (`MockConfig::smtp_listen`);
//!   control `/_mock/smtp/{stats,messages,faults}`.
//! - Aliyun SMS ([`aliyun_sms`](crate::AliyunSmsConfig)) and Tencent Cloud SMS
//!   ([`tencent_sms`](crate::TencentSmsConfig)): both APIs live at `POST /` on the real
//!   hosts, so the mock answers `POST /` by the request's `x-acs-action` or `X-TC-Action`
//!   header, and also serves them at `POST /aliyun/` and `POST /tencent/` (a channel's
//!   `api_base` of `http://ADDR/aliyun`); control
//!   `/_mock/{aliyun_sms,tencent_sms}/{stats,messages,receipts,faults,config,clock}`.
//! - Group-chat robots ([`robots`](crate::RobotsConfig)), errors as HTTP 200 with a code
//!   in the body: WeCom `POST /cgi-bin/webhook/send?key=`, DingTalk
//!   `POST /robot/send?access_token=[&timestamp=&sign=]`, Feishu
//!   `POST /open-apis/bot/v2/hook/{token}`; control `GET /_mock/robots/stats`,
//!   `GET /_mock/robots/messages?limit=&provider=&token=`, `GET|POST /_mock/robots/faults`,
//!   `GET|POST /_mock/robots/config`, `POST /_mock/robots/clock {advance_secs}`.
//! - Huawei Push Kit v1 ([`huawei`](crate::HuaweiConfig)), errors as 4xx/5xx with a string
//!   `code` in `{code, msg, requestId}`: `POST /oauth2/v3/token` (client credentials),
//!   `POST /v1/{appId}/messages:send`; control `GET /_mock/huawei/stats`,
//!   `GET /_mock/huawei/messages?limit=&token=`, `GET|POST /_mock/huawei/faults`,
//!   `GET|POST /_mock/huawei/config`, `GET|POST /_mock/huawei/devices {invalid}`,
//!   `POST /_mock/huawei/clock {advance_secs}`.
//! - Xiaomi MiPush v3 ([`xiaomi`](crate::XiaomiConfig)), errors as HTTP 200 with
//!   `result: "error"` and a numeric `code`: `POST /v3/message/regid` (form body,
//!   `Authorization: key=<AppSecret>`).
//! - Honor Push ([`honor`](crate::HonorConfig)), errors as `{code, message, data}` with
//!   Huawei's codes: `POST /auth/token` (client credentials), `POST /api/v1/{appId}/sendMessage`
//!   (bearer token and a `timestamp` header).
//! - OPPO Push ([`oppo`](crate::OppoConfig)), errors as HTTP 200 with OPPO's `code`:
//!   `POST /server/v1/auth` (SHA-256 sign), `POST /server/v1/message/notification/unicast`
//!   and `.../unicast_batch` (form with `auth_token`).
//! - vivo Push ([`vivo`](crate::VivoConfig)), errors as HTTP 200 with a numeric `result`:
//!   `POST /message/auth` (MD5 sign), `POST /message/send`, `POST /message/saveListPayload`,
//!   `POST /message/pushToList` (`authToken` header; sends de-duplicated by `requestId`).
//! - Each of these vendor push mocks has the control routes
//!   `/_mock/{vendor}/{stats,messages,faults,config,devices,clock}`
//!   ([`PushStats`], [`PushMessage`], [`PushFaults`]; `devices` takes
//!   `{"invalid": [...], "valid": [...]}` to unregister and register device tokens).
//! - DingTalk work notifications of an internal app ([`dingtalk`](crate::DingtalkConfig)),
//!   errors as HTTP 200 with `errcode`: `GET /gettoken?appkey=&appsecret=`,
//!   `POST /topapi/message/corpconversation/asyncsend_v2?access_token=`,
//!   `POST /topapi/message/corpconversation/getsendresult?access_token=`; control
//!   `GET /_mock/dingtalk/stats`, `GET /_mock/dingtalk/messages?limit=&userid=`,
//!   `GET|POST /_mock/dingtalk/faults`, `GET|POST /_mock/dingtalk/config`,
//!   `POST /_mock/dingtalk/clock {advance_secs}`.
//! - Feishu app messages ([`feishu`](crate::FeishuConfig)), errors as 4xx with a numeric
//!   `code`: `POST /open-apis/auth/v3/tenant_access_token/internal`,
//!   `POST /open-apis/im/v1/messages?receive_id_type=`; control `GET /_mock/feishu/stats`,
//!   `GET /_mock/feishu/messages?limit=&receive_id=`, `GET|POST /_mock/feishu/faults`,
//!   `GET|POST /_mock/feishu/config`, `POST /_mock/feishu/clock {advance_secs}`.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use herald_mock::{MockConfig, MockServer};
//! let server = MockServer::start("127.0.0.1:0".parse().unwrap(), MockConfig::default()).await?;
//! println!("deliver to {}", server.hook_url());
//! let stats = server.stats();
//! println!("{} delivered", stats.delivered);
//! server.shutdown();
//! # Ok(()) }
//! ```

mod aliyun_sms;
mod control;
mod dingtalk;
mod faults;
mod fcm;
mod feishu;
mod honor;
mod huawei;
mod oppo;
mod providers;
mod push_quota;
mod repeats;
mod robots;
mod sms;
mod sms_control;
mod smtp;
mod stats;
mod tencent_sms;
#[cfg(test)]
mod test_http;
mod vendor_push;
mod vivo;
mod webhook;
mod wechat;
mod wechat_mini;
mod wechat_sign;
mod wecom;
mod xiaomi;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::serve::ListenerExt;
use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

pub use aliyun_sms::{
    ALIYUN_SMS_RING_CAPACITY, AliyunSmsConfig, AliyunSmsFaults, AliyunSmsMessage, AliyunSmsStats,
};
pub use dingtalk::{
    DEFAULT_DINGTALK_AGENT_ID, DEFAULT_DINGTALK_APPKEY, DEFAULT_DINGTALK_APPSECRET,
    DINGTALK_MAX_MSG_BYTES, DINGTALK_MAX_USERS, DINGTALK_RING_CAPACITY, DINGTALK_TOKEN_TTL_SECS,
    DingtalkConfig, DingtalkFaults, DingtalkMessage, DingtalkStats,
};
pub use faults::Faults;
pub use fcm::{
    DEFAULT_FCM_PROJECT, DEFAULT_FCM_QUOTA_PER_MINUTE, FCM_RING_CAPACITY, FCM_SCOPE,
    FCM_TOKEN_TTL_SECS, FcmFaults, FcmMessage, FcmStats,
};
pub use feishu::{
    DEFAULT_FEISHU_APP_ID, DEFAULT_FEISHU_APP_SECRET, FEISHU_MAX_CARD_BYTES, FEISHU_MAX_TEXT_BYTES,
    FEISHU_MAX_UUID, FEISHU_RING_CAPACITY, FEISHU_TOKEN_TTL_SECS, FeishuConfig, FeishuFaults,
    FeishuMessage, FeishuStats,
};
pub use honor::{
    DEFAULT_HONOR_APP_ID, DEFAULT_HONOR_CLIENT_ID, DEFAULT_HONOR_CLIENT_SECRET,
    HONOR_MAX_MESSAGE_BYTES, HONOR_MAX_TOKENS, HONOR_TIMESTAMP_WINDOW_MS, HONOR_TOKEN_TTL_SECS,
    HonorConfig,
};
pub use huawei::{
    DEFAULT_HUAWEI_APP_ID, DEFAULT_HUAWEI_APP_SECRET, HUAWEI_MAX_MESSAGE_BYTES, HUAWEI_MAX_TOKENS,
    HUAWEI_RING_CAPACITY, HUAWEI_TOKEN_TTL_SECS, HuaweiConfig, HuaweiFaults, HuaweiMessage,
    HuaweiStats,
};
pub use oppo::{
    DEFAULT_OPPO_APP_KEY, DEFAULT_OPPO_MASTER_SECRET, OPPO_CONTENT_CHARS,
    OPPO_MARKETING_CATEGORIES, OPPO_MAX_BATCH, OPPO_SERVICE_CATEGORIES, OPPO_TIMESTAMP_WINDOW_MS,
    OPPO_TITLE_CHARS, OPPO_TOKEN_TTL_SECS, OppoConfig,
};
pub use robots::{
    DEFAULT_DINGTALK_ROBOT_SECRET, DEFAULT_DINGTALK_ROBOT_TOKEN, DEFAULT_FEISHU_BOT_SECRET,
    DEFAULT_FEISHU_BOT_TOKEN, DEFAULT_WECOM_ROBOT_KEY, ROBOTS_RING_CAPACITY, RobotConfig,
    RobotFaultSet, RobotFaults, RobotLimits, RobotMessage, RobotProvider, RobotProviderStats,
    RobotStats, RobotsConfig,
};
pub use sms::SmsLimit;
pub use smtp::{
    DEFAULT_SMTP_IDLE_TIMEOUT, DEFAULT_SMTP_MAX_MESSAGE_BYTES, MAX_RECIPIENTS, SMTP_RING_CAPACITY,
    SmtpFaults, SmtpMessage, SmtpStats, TempfailStage,
};
pub use stats::{KeyStats, Percentiles, RecordedRequest, WebhookStats};
pub use tencent_sms::{
    TENCENT_SMS_RING_CAPACITY, TencentSmsConfig, TencentSmsFaults, TencentSmsMessage,
    TencentSmsStats,
};
pub use vendor_push::{PUSH_RING_CAPACITY, PushFaults, PushMessage, PushStats};
pub use vivo::{
    DEFAULT_VIVO_APP_ID, DEFAULT_VIVO_APP_KEY, DEFAULT_VIVO_APP_SECRET, VIVO_CONTENT_WIDTH,
    VIVO_MAX_REGIDS, VIVO_TIMESTAMP_WINDOW_MS, VIVO_TITLE_WIDTH, VIVO_TOKEN_TTL_SECS, VivoConfig,
};
pub use webhook::RING_CAPACITY;
pub use wechat::{WECHAT_RING_CAPACITY, WechatConfig, WechatFaults, WechatMessage, WechatStats};
pub use wechat_mini::{
    MockGrant, WECHAT_MINI_RING_CAPACITY, WechatMiniFaults, WechatMiniMessage, WechatMiniStats,
};
pub use wecom::{WECOM_RING_CAPACITY, WecomConfig, WecomFaults, WecomMessage, WecomStats};
pub use xiaomi::{
    DEFAULT_XIAOMI_APP_SECRET, DEFAULT_XIAOMI_PACKAGE, XIAOMI_DESCRIPTION_CHARS, XIAOMI_MAX_REGIDS,
    XIAOMI_PAYLOAD_BYTES, XIAOMI_TITLE_CHARS, XiaomiConfig,
};

/// How a mock server starts out.
#[derive(Debug, Clone, Default)]
pub struct MockConfig {
    /// Initial faults; can be replaced at runtime.
    pub faults: Faults,
    /// If set, webhook requests must carry a valid `X-Herald-Signature`.
    pub secret: Option<String>,
    /// Seed for the `error_rate` dice.
    pub seed: u64,
    /// WeChat Official Account mock: credentials, quotas, callback URL, faults.
    pub wechat: WechatConfig,
    /// WeCom app-message mock: credentials, agent id, faults and directory.
    pub wecom: WecomConfig,
    /// FCM project id; `None` means [`DEFAULT_FCM_PROJECT`].
    pub fcm_project: Option<String>,
    /// Google service-account JSON; if set, `POST /token` verifies the JWT's RS256
    /// signature with its public half and requires `iss` to be its `client_email`.
    pub fcm_service_account: Option<PathBuf>,
    /// Sends per minute per project; `None` means [`DEFAULT_FCM_QUOTA_PER_MINUTE`].
    pub fcm_quota_per_minute: Option<u64>,
    /// If set, [`MockServer::start`] also runs the SMTP sink on this address.
    pub smtp_listen: Option<SocketAddr>,
    /// If both are set, the SMTP sink offers AUTH PLAIN/LOGIN and requires it for MAIL.
    pub smtp_username: Option<String>,
    pub smtp_password: Option<String>,
    /// Largest message the SMTP sink accepts; `None` means
    /// [`DEFAULT_SMTP_MAX_MESSAGE_BYTES`].
    pub smtp_max_message_bytes: Option<usize>,
    /// SMTP connections idle this long are closed with 421; `None` means
    /// [`DEFAULT_SMTP_IDLE_TIMEOUT`] (5 minutes).
    pub smtp_idle_timeout: Option<std::time::Duration>,
    /// Aliyun SMS mock: credentials, signs, templates, limits, receipts URL.
    pub aliyun_sms: AliyunSmsConfig,
    /// Tencent SMS mock: credentials, app, signs, templates, limits, receipts URL.
    pub tencent_sms: TencentSmsConfig,
    /// Group-chat robots (WeCom, DingTalk, Feishu) and their rate limits.
    pub robots: RobotsConfig,
    /// Huawei Push Kit mock: app credentials, per-device quotas, flow control.
    pub huawei: HuaweiConfig,
    /// Xiaomi MiPush mock: app secret, packages, channels, quotas.
    pub xiaomi: XiaomiConfig,
    /// Honor Push mock: app id, OAuth client, marketing allowance.
    pub honor: HonorConfig,
    /// OPPO Push mock: app key, master secret, quotas.
    pub oppo: OppoConfig,
    /// vivo Push mock: app id, key, secret, quotas.
    pub vivo: VivoConfig,
    /// DingTalk work-notification mock: the internal app and its limits.
    pub dingtalk: DingtalkConfig,
    /// Feishu app-message mock: the app and its rate limits.
    pub feishu: FeishuConfig,
}

struct Shared {
    faults: faults::FaultState,
    webhook: webhook::WebhookState,
    wechat: wechat::WechatState,
    wechat_mini: wechat_mini::WechatMiniState,
    wecom: wecom::WecomState,
    fcm: fcm::FcmState,
    smtp: smtp::SmtpState,
    aliyun_sms: aliyun_sms::AliyunSmsState,
    tencent_sms: tencent_sms::TencentSmsState,
    robots: robots::RobotsState,
    huawei: huawei::HuaweiState,
    xiaomi: xiaomi::XiaomiState,
    honor: honor::HonorState,
    oppo: oppo::OppoState,
    vivo: vivo::VivoState,
    dingtalk: dingtalk::DingtalkState,
    feishu: feishu::FeishuState,
}

/// Shared state behind the mock routes. Cheap to clone.
#[derive(Clone)]
pub struct MockState {
    shared: Arc<Shared>,
}

impl MockState {
    /// Panics if `cfg.fcm_service_account` cannot be loaded; see [`Self::try_new`].
    pub fn new(cfg: MockConfig) -> MockState {
        match MockState::try_new(cfg) {
            Ok(s) => s,
            Err(e) => panic!("mock state: {e}"),
        }
    }

    /// Fails if `cfg.fcm_service_account` cannot be read or holds no usable RSA key,
    /// or if `cfg.robots` or `cfg.huawei` does not pass its `validate`.
    pub fn try_new(cfg: MockConfig) -> std::io::Result<MockState> {
        cfg.robots.validate().map_err(|e| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("robots: {e}"))
        })?;
        cfg.huawei.validate().map_err(|e| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("huawei: {e}"))
        })?;
        cfg.xiaomi.validate().map_err(|e| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("xiaomi: {e}"))
        })?;
        cfg.honor.validate().map_err(|e| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("honor: {e}"))
        })?;
        cfg.oppo.validate().map_err(|e| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("oppo: {e}"))
        })?;
        cfg.vivo.validate().map_err(|e| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("vivo: {e}"))
        })?;
        cfg.dingtalk.validate().map_err(|e| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("dingtalk: {e}"))
        })?;
        cfg.feishu.validate().map_err(|e| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("feishu: {e}"))
        })?;
        let fcm = fcm::FcmState::new(
            fcm::FcmSettings {
                project: cfg
                    .fcm_project
                    .unwrap_or_else(|| DEFAULT_FCM_PROJECT.to_owned()),
                quota_per_minute: cfg
                    .fcm_quota_per_minute
                    .unwrap_or(DEFAULT_FCM_QUOTA_PER_MINUTE),
            },
            cfg.fcm_service_account.as_deref(),
        )?;
        let smtp = smtp::SmtpState::new(smtp::SmtpSettings {
            credentials: cfg.smtp_username.zip(cfg.smtp_password),
            max_message_bytes: cfg
                .smtp_max_message_bytes
                .unwrap_or(DEFAULT_SMTP_MAX_MESSAGE_BYTES),
            idle_timeout: cfg.smtp_idle_timeout.unwrap_or(DEFAULT_SMTP_IDLE_TIMEOUT),
        });
        Ok(MockState {
            shared: Arc::new(Shared {
                faults: faults::FaultState::new(cfg.faults, cfg.seed),
                webhook: webhook::WebhookState::new(cfg.secret.as_deref()),
                wechat: wechat::WechatState::new(cfg.wechat),
                wechat_mini: wechat_mini::WechatMiniState::new(),
                wecom: wecom::WecomState::new(cfg.wecom),
                fcm,
                smtp,
                aliyun_sms: aliyun_sms::AliyunSmsState::new(cfg.aliyun_sms),
                tencent_sms: tencent_sms::TencentSmsState::new(cfg.tencent_sms),
                robots: robots::RobotsState::new(cfg.robots),
                huawei: huawei::HuaweiState::new(cfg.huawei),
                xiaomi: xiaomi::XiaomiState::new(cfg.xiaomi),
                honor: honor::HonorState::new(cfg.honor),
                oppo: oppo::OppoState::new(cfg.oppo),
                vivo: vivo::VivoState::new(cfg.vivo),
                dingtalk: dingtalk::DingtalkState::new(cfg.dingtalk),
                feishu: feishu::FeishuState::new(cfg.feishu),
            }),
        })
    }

    /// Webhook sink statistics; the same data as `GET /_mock/stats`.
    pub fn stats(&self) -> WebhookStats {
        self.shared.webhook.stats()
    }

    /// Distinct keys delivered so far, without the cost of a full [`Self::stats`].
    pub fn unique_delivered(&self) -> u64 {
        self.shared.webhook.unique_delivered()
    }

    /// What one Idempotency-Key has seen; zeros for an unknown key.
    pub fn key_stats(&self, key: &str) -> KeyStats {
        self.shared.webhook.key_stats(key)
    }

    /// The newest `limit` recorded requests (only those with `key`, if given), oldest first.
    pub fn requests(&self, limit: usize, key: Option<&str>) -> Vec<RecordedRequest> {
        self.shared.webhook.requests(limit, key)
    }

    pub fn faults(&self) -> Faults {
        self.shared.faults.get()
    }

    /// Replaces the faults; out-of-range values are pulled into range.
    pub fn set_faults(&self, f: Faults) {
        self.shared.faults.set(f);
    }

    /// Forgets all records and statistics and restarts the dice from the seed.
    /// Faults are kept.
    pub fn reset(&self) {
        self.shared.webhook.reset();
        self.shared.faults.rewind();
        self.shared.wechat.reset();
        self.shared.wechat_mini.reset();
        self.shared.wecom.reset();
        self.shared.fcm.reset();
        self.shared.smtp.reset();
        self.shared.aliyun_sms.reset();
        self.shared.tencent_sms.reset();
        self.shared.robots.reset();
        self.shared.huawei.reset();
        self.shared.xiaomi.reset();
        self.shared.honor.reset();
        self.shared.oppo.reset();
        self.shared.vivo.reset();
        self.shared.dingtalk.reset();
        self.shared.feishu.reset();
    }

    /// WeChat mock statistics; `GET /_mock/wechat/stats`.
    pub fn wechat_stats(&self) -> WechatStats {
        self.shared.wechat.stats()
    }

    /// Newest accepted template messages (only to `touser`, if given), oldest first.
    pub fn wechat_messages(&self, limit: usize, touser: Option<&str>) -> Vec<WechatMessage> {
        self.shared.wechat.messages(limit, touser)
    }

    pub fn wechat_faults(&self) -> WechatFaults {
        self.shared.wechat.faults()
    }

    pub fn set_wechat_faults(&self, f: WechatFaults) {
        self.shared.wechat.set_faults(f);
    }

    /// WeCom mock statistics; `GET /_mock/wecom/stats`.
    pub fn wecom_stats(&self) -> WecomStats {
        self.shared.wecom.stats()
    }

    /// Newest accepted send calls (only those delivered to `touser`, if given).
    pub fn wecom_messages(&self, limit: usize, touser: Option<&str>) -> Vec<WecomMessage> {
        self.shared.wecom.messages(limit, touser)
    }

    pub fn wecom_faults(&self) -> WecomFaults {
        self.shared.wecom.faults()
    }

    pub fn set_wecom_faults(&self, f: WecomFaults) {
        self.shared.wecom.set_faults(f);
    }

    /// `GET /_mock/fcm/stats`.
    pub fn fcm_stats(&self) -> FcmStats {
        self.shared.fcm.stats()
    }

    /// The newest `limit` accepted FCM messages (only those to `token`, if given).
    pub fn fcm_messages(&self, limit: usize, token: Option<&str>) -> Vec<FcmMessage> {
        self.shared.fcm.messages(limit, token)
    }

    pub fn fcm_faults(&self) -> FcmFaults {
        self.shared.fcm.faults()
    }

    /// Replaces the FCM faults; `expire_tokens` is applied at once and reads back false.
    pub fn set_fcm_faults(&self, f: FcmFaults) {
        self.shared.fcm.set_faults(f);
    }

    /// `GET /_mock/smtp/stats`.
    pub fn smtp_stats(&self) -> SmtpStats {
        self.shared.smtp.stats()
    }

    /// The newest `limit` accepted mails (only those with recipient `to`, if given).
    pub fn smtp_messages(&self, limit: usize, to: Option<&str>) -> Vec<SmtpMessage> {
        self.shared.smtp.messages(limit, to)
    }

    pub fn smtp_faults(&self) -> SmtpFaults {
        self.shared.smtp.faults()
    }

    pub fn set_smtp_faults(&self, f: SmtpFaults) {
        self.shared.smtp.set_faults(f);
    }

    /// `GET /_mock/aliyun_sms/stats`.
    pub fn aliyun_sms_stats(&self) -> AliyunSmsStats {
        self.shared.aliyun_sms.stats()
    }

    /// The newest `limit` accepted Aliyun numbers (only `phone`, if given).
    pub fn aliyun_sms_messages(&self, limit: usize, phone: Option<&str>) -> Vec<AliyunSmsMessage> {
        self.shared.aliyun_sms.messages(limit, phone)
    }

    pub fn set_aliyun_sms_faults(&self, f: AliyunSmsFaults) {
        self.shared.aliyun_sms.set_faults(f);
    }

    /// `GET /_mock/tencent_sms/stats`.
    pub fn tencent_sms_stats(&self) -> TencentSmsStats {
        self.shared.tencent_sms.stats()
    }

    /// The newest `limit` accepted Tencent numbers (only `phone`, if given).
    pub fn tencent_sms_messages(
        &self,
        limit: usize,
        phone: Option<&str>,
    ) -> Vec<TencentSmsMessage> {
        self.shared.tencent_sms.messages(limit, phone)
    }

    pub fn set_tencent_sms_faults(&self, f: TencentSmsFaults) {
        self.shared.tencent_sms.set_faults(f);
    }

    /// `GET /_mock/robots/stats`.
    pub fn robot_stats(&self) -> RobotStats {
        self.shared.robots.stats()
    }

    /// The newest `limit` accepted robot messages (only `provider`'s and only
    /// to `token`, if given), oldest first.
    pub fn robot_messages(
        &self,
        limit: usize,
        provider: Option<RobotProvider>,
        token: Option<&str>,
    ) -> Vec<RobotMessage> {
        self.shared.robots.messages(limit, provider, token)
    }

    pub fn robot_faults(&self) -> RobotFaultSet {
        self.shared.robots.faults()
    }

    /// Replaces the faults of `provider`, or of every provider if `None`.
    pub fn set_robot_faults(
        &self,
        provider: Option<RobotProvider>,
        f: RobotFaults,
    ) -> Result<(), String> {
        self.shared.robots.set_faults(provider, f)
    }

    pub fn robots_config(&self) -> RobotsConfig {
        self.shared.robots.config()
    }

    /// Replaces the robot list and limits; refuses a list that does not validate.
    pub fn set_robots_config(&self, cfg: RobotsConfig) -> Result<(), String> {
        self.shared.robots.set_config(cfg)
    }

    /// `GET /_mock/huawei/stats`.
    pub fn huawei_stats(&self) -> HuaweiStats {
        self.shared.huawei.stats()
    }

    /// The newest `limit` delivered Huawei device messages (only to `token`,
    /// if given), oldest first.
    pub fn huawei_messages(&self, limit: usize, token: Option<&str>) -> Vec<HuaweiMessage> {
        self.shared.huawei.messages(limit, token)
    }

    pub fn huawei_faults(&self) -> HuaweiFaults {
        self.shared.huawei.faults()
    }

    /// Replaces the Huawei faults; an armed `expire_tokens` fires on the next
    /// send with a live token.
    pub fn set_huawei_faults(&self, f: HuaweiFaults) {
        self.shared.huawei.set_faults(f);
    }

    pub fn huawei_config(&self) -> HuaweiConfig {
        self.shared.huawei.config()
    }

    /// Replaces the Huawei app, limits and invalid tokens; refuses a
    /// configuration that does not validate.
    pub fn set_huawei_config(&self, cfg: HuaweiConfig) -> Result<(), String> {
        self.shared.huawei.set_config(cfg)
    }

    /// `GET /_mock/dingtalk/stats`.
    pub fn dingtalk_stats(&self) -> DingtalkStats {
        self.shared.dingtalk.stats()
    }

    /// The newest `limit` delivered DingTalk work notifications (only to
    /// `userid`, if given), oldest first.
    pub fn dingtalk_messages(&self, limit: usize, userid: Option<&str>) -> Vec<DingtalkMessage> {
        self.shared.dingtalk.messages(limit, userid)
    }

    /// Replaces the DingTalk faults; `expire_tokens` acts at once.
    pub fn set_dingtalk_faults(&self, f: DingtalkFaults) {
        self.shared.dingtalk.set_faults(f);
    }

    /// `GET /_mock/feishu/stats`.
    pub fn feishu_stats(&self) -> FeishuStats {
        self.shared.feishu.stats()
    }

    /// The newest `limit` delivered Feishu messages (only to `receive_id`,
    /// if given), oldest first.
    pub fn feishu_messages(&self, limit: usize, receive_id: Option<&str>) -> Vec<FeishuMessage> {
        self.shared.feishu.messages(limit, receive_id)
    }

    /// Replaces the Feishu faults; `expire_tokens` acts at once.
    pub fn set_feishu_faults(&self, f: FeishuFaults) {
        self.shared.feishu.set_faults(f);
    }

    /// Adds device tokens to the Huawei invalid list (apps uninstalled);
    /// returns the whole list.
    pub fn add_huawei_invalid_tokens(&self, tokens: Vec<String>) -> Vec<String> {
        self.shared.huawei.add_invalid_tokens(tokens)
    }

    /// `GET /_mock/xiaomi/stats`.
    pub fn xiaomi_stats(&self) -> PushStats {
        use vendor_push::VendorMock;
        self.shared.xiaomi.book().stats()
    }

    /// The newest `limit` delivered Xiaomi device messages (only to
    /// `token`, if given), oldest first.
    pub fn xiaomi_messages(&self, limit: usize, token: Option<&str>) -> Vec<PushMessage> {
        use vendor_push::VendorMock;
        self.shared.xiaomi.book().messages(limit, token)
    }

    /// `GET /_mock/honor/stats`.
    pub fn honor_stats(&self) -> PushStats {
        use vendor_push::VendorMock;
        self.shared.honor.book().stats()
    }

    /// The newest `limit` delivered Honor device messages (only to `token`,
    /// if given), oldest first.
    pub fn honor_messages(&self, limit: usize, token: Option<&str>) -> Vec<PushMessage> {
        use vendor_push::VendorMock;
        self.shared.honor.book().messages(limit, token)
    }

    /// `GET /_mock/oppo/stats`.
    pub fn oppo_stats(&self) -> PushStats {
        use vendor_push::VendorMock;
        self.shared.oppo.book().stats()
    }

    /// The newest `limit` delivered OPPO device messages (only to `token`,
    /// if given), oldest first.
    pub fn oppo_messages(&self, limit: usize, token: Option<&str>) -> Vec<PushMessage> {
        use vendor_push::VendorMock;
        self.shared.oppo.book().messages(limit, token)
    }

    /// `GET /_mock/vivo/stats`.
    pub fn vivo_stats(&self) -> PushStats {
        use vendor_push::VendorMock;
        self.shared.vivo.book().stats()
    }

    /// The newest `limit` delivered vivo device messages (only to `token`,
    /// if given), oldest first.
    pub fn vivo_messages(&self, limit: usize, token: Option<&str>) -> Vec<PushMessage> {
        use vendor_push::VendorMock;
        self.shared.vivo.book().messages(limit, token)
    }
}

/// `POST /`: the Aliyun and Tencent SMS APIs both live at the root of their
/// hosts; the request's action header says which one is meant.
async fn sms_root(
    axum::extract::State(state): axum::extract::State<MockState>,
    uri: axum::http::Uri,
    headers: axum::http::HeaderMap,
    body: axum::body::Bytes,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    if headers.contains_key("x-tc-action") {
        tencent_sms::handle(&state, &uri, &headers, &body).await
    } else if headers.contains_key("x-acs-action") {
        aliyun_sms::handle(&state, &uri, &headers, &body).await
    } else {
        (
            axum::http::StatusCode::NOT_FOUND,
            "POST / takes Aliyun (x-acs-action) or Tencent (X-TC-Action) SMS calls",
        )
            .into_response()
    }
}

/// Builds the router with every mock route, for serving on a listener of your own.
pub fn router(state: MockState) -> Router {
    Router::new()
        .merge(webhook::routes())
        .merge(wechat::routes())
        .merge(wechat_mini::routes())
        .merge(wecom::routes())
        .merge(control::routes())
        .merge(fcm::routes())
        .merge(smtp::routes())
        .merge(aliyun_sms::routes())
        .merge(tencent_sms::routes())
        .merge(robots::routes())
        .merge(huawei::routes())
        .merge(xiaomi::routes())
        .merge(honor::routes())
        .merge(oppo::routes())
        .merge(vivo::routes())
        .merge(dingtalk::routes())
        .merge(feishu::routes())
        .route("/", axum::routing::post(sms_root))
        .with_state(state)
}

/// A mock server running in a spawned tokio task. Dropping it stops serving.
pub struct MockServer {
    pub addr: SocketAddr,
    state: MockState,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
    smtp_addr: Option<SocketAddr>,
    smtp_stop: watch::Sender<bool>,
    smtp_task: Option<JoinHandle<()>>,
}

impl MockServer {
    /// Binds `listen` (port 0 picks a free port) and serves in a spawned tokio task; also
    /// binds and serves the SMTP sink if `cfg.smtp_listen` is set.
    pub async fn start(listen: SocketAddr, cfg: MockConfig) -> std::io::Result<MockServer> {
        let smtp_listen = cfg.smtp_listen;
        let state = MockState::try_new(cfg)?;
        let listener = TcpListener::bind(listen).await?;
        let addr = listener.local_addr()?;
        let (smtp_stop, smtp_stopped) = watch::channel(false);
        let (smtp_addr, smtp_task) = match smtp_listen {
            Some(smtp_listen) => {
                let smtp_listener = TcpListener::bind(smtp_listen).await?;
                let smtp_addr = smtp_listener.local_addr()?;
                tracing::debug!(%smtp_addr, "mock smtp sink listening");
                let task = tokio::spawn(smtp::serve(smtp_listener, state.clone(), smtp_stopped));
                (Some(smtp_addr), Some(task))
            }
            None => (None, None),
        };
        let app = router(state.clone());
        let (stop, stopped) = oneshot::channel::<()>();
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let task = tokio::spawn(async move {
            let serving = axum::serve(listener, app).with_graceful_shutdown(async move {
                let _ = stopped.await;
            });
            if let Err(e) = serving.await {
                tracing::warn!(error = %e, "mock server stopped with an error");
            }
        });
        tracing::debug!(%addr, "mock server listening");
        Ok(MockServer {
            addr,
            state,
            stop: Some(stop),
            task: Some(task),
            smtp_addr,
            smtp_stop,
            smtp_task,
        })
    }

    /// Where the SMTP sink listens, if it was started (`MockConfig::smtp_listen`).
    pub fn smtp_addr(&self) -> Option<SocketAddr> {
        self.smtp_addr
    }

    /// `http://<addr>/token`, the OAuth2 token URL (and JWT `aud`) for FCM.
    pub fn fcm_token_url(&self) -> String {
        format!("http://{}/token", self.addr)
    }

    /// `http://<addr>/oauth2/v3/token`, the Huawei OAuth token URL.
    pub fn huawei_token_url(&self) -> String {
        format!("http://{}/oauth2/v3/token", self.addr)
    }

    /// `http://<addr>`
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://<addr>/hook`, the webhook sink.
    pub fn hook_url(&self) -> String {
        format!("http://{}/hook", self.addr)
    }

    /// The shared state, e.g. to read stats without HTTP.
    pub fn state(&self) -> &MockState {
        &self.state
    }

    /// Same data as `GET /_mock/stats`.
    pub fn stats(&self) -> WebhookStats {
        self.state.stats()
    }

    /// Distinct keys delivered so far; cheap enough to poll.
    pub fn unique_delivered(&self) -> u64 {
        self.state.unique_delivered()
    }

    pub fn key_stats(&self, key: &str) -> KeyStats {
        self.state.key_stats(key)
    }

    pub fn requests(&self, limit: usize, key: Option<&str>) -> Vec<RecordedRequest> {
        self.state.requests(limit, key)
    }

    pub fn faults(&self) -> Faults {
        self.state.faults()
    }

    pub fn set_faults(&self, f: Faults) {
        self.state.set_faults(f);
    }

    pub fn reset(&self) {
        self.state.reset();
    }

    /// Stops accepting connections; in-flight requests finish in the background.
    pub fn shutdown(mut self) {
        self.signal_stop();
    }

    /// Stops accepting connections and waits until the server task has ended
    /// (open connections finish their current request and close).
    pub async fn shutdown_and_wait(mut self) {
        self.signal_stop();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
        if let Some(task) = self.smtp_task.take() {
            let _ = task.await;
        }
    }

    fn signal_stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.smtp_stop.send_replace(true);
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.signal_stop();
    }
}
