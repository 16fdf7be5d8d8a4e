//! The `Channel` seam.
//!
//! Everything that leaves the process goes through [`Channel`]. The engine
//! hands a channel one [`Delivery`] and gets back a [`SendOutcome`]; it knows
//! nothing of HTTP or providers. Providers are built from configuration with
//! [`build`].

pub mod aliyun_sms;
mod config;
pub mod dingtalk_work;
pub mod fcm;
pub mod feishu_app;
pub mod honor_push;
pub mod http;
pub mod huawei_push;
mod log;
mod message_fields;
pub mod metrics;
pub mod oppo_push;
mod provider_http;
pub mod robots;
pub mod shape;
pub mod sms;
mod smtp;
pub mod subscribe_rules;
pub mod template;
pub mod tencent_sms;
pub mod token_cache;
pub mod tokens;
mod vendor_push;
pub mod vivo_push;
mod webhook;
pub mod wechat;
pub mod wecom;
mod weixin;
pub mod xiaomi_push;

use std::sync::Arc;

use async_trait::async_trait;
use herald_core::{TimerId, TimerKind};

pub use aliyun_sms::AliyunSmsChannel;
pub use config::{
    AliyunSmsConfig, COMMON_KEYS, ChannelConfig, ChannelKind, CommonSettings, DingtalkWorkConfig,
    FcmConfig, FeishuAppConfig, HonorPushConfig, HuaweiPushConfig, InDoubt, LogConfig,
    OppoPushConfig, ProviderConfig, ProviderKeys, QuietHours, QuietPolicy, RobotConfig,
    SecretSource, SmtpConfig, SmtpTls, TencentSmsConfig, TokenMode, VivoPushConfig, WebhookConfig,
    WechatConfig, WechatMiniConfig, WecomConfig, XiaomiPushConfig,
};
pub use dingtalk_work::DingtalkWorkChannel;
pub use fcm::FcmChannel;
pub use feishu_app::FeishuAppChannel;
pub use honor_push::HonorPushChannel;
pub use huawei_push::HuaweiPushChannel;
pub use log::LogChannel;
pub use oppo_push::OppoPushChannel;
pub use robots::RobotChannel;
pub use smtp::SmtpChannel;
pub use tencent_sms::TencentSmsChannel;
pub use token_cache::{TokenCache, TokenCacheOptions, TokenError, TokenUse};
pub use tokens::{MemoryVault, StoredToken, TokenVault, VaultError};
pub use vivo_push::VivoPushChannel;
pub use webhook::WebhookChannel;
pub use wechat::WechatChannel;
pub use wecom::WecomChannel;
pub use xiaomi_push::XiaomiPushChannel;

/// One attempt to deliver one timer.
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    pub timer_id: TimerId,
    pub kind: TimerKind,
    /// Unix ms the timer was due.
    pub due_at: i64,
    /// Unix ms the attempt started.
    pub fired_at: i64,
    /// 1 for the first attempt.
    pub attempt: u32,
    pub recipient: String,
    /// The message object as JSON text (validated when the timer was accepted).
    pub message: String,
    /// Passed to providers that de-duplicate, so a repeated attempt has one effect.
    pub idempotency_key: String,
    /// The W3C `traceparent` of the request that scheduled it, sent on by
    /// channels that speak HTTP to the caller's own services (webhooks).
    pub traceparent: Option<String>,
}

/// How an attempt ended, as the provider told it.
#[derive(Debug, Clone, PartialEq)]
pub enum SendOutcome {
    /// The provider acknowledged the message.
    Delivered {
        provider_msgid: Option<String>,
        status: Option<i64>,
    },
    /// Worth trying again later (throttled, server error, timeout, network).
    Retryable {
        error: String,
        status: Option<i64>,
        /// The provider asked to wait at least this long.
        retry_after_ms: Option<u64>,
    },
    /// Trying again cannot help (rejected request, unknown recipient).
    Permanent { error: String, status: Option<i64> },
    /// The provider said "slow down" (a quota or frequency limit). The channel
    /// pauses and slows; the delivery goes again later without using up one of
    /// its attempts, because nothing was wrong with it.
    Throttled {
        error: String,
        status: Option<i64>,
        /// The provider asked to wait at least this long.
        retry_after_ms: Option<u64>,
    },
}

impl SendOutcome {
    /// The outcome class every channel reports: `delivered`, `retry`,
    /// `throttled` or `permanent`.
    pub fn class(&self) -> &'static str {
        match self {
            SendOutcome::Delivered { .. } => "delivered",
            SendOutcome::Retryable { .. } => "retry",
            SendOutcome::Throttled { .. } => "throttled",
            SendOutcome::Permanent { .. } => "permanent",
        }
    }
}

/// Why a recall did not happen.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RecallError {
    /// This kind of channel cannot take a message back.
    #[error("channel {0:?} does not support recall")]
    Unsupported(String),
    /// The provider only recalls messages younger than this.
    #[error("the message is older than the provider's recall window ({window_hours} h)")]
    TooOld { window_hours: u32 },
    /// The provider refused or could not be reached.
    #[error("the provider refused the recall: {0}")]
    Provider(String),
}

/// The fate of a delivered message, as a provider reports it later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinalStatus {
    /// The message reached the user.
    Success,
    /// The user blocked the sender.
    UserBlock,
    /// The provider failed to deliver it.
    SystemFailed,
}

impl FinalStatus {
    /// The word the send log and the API use.
    pub fn as_str(self) -> &'static str {
        match self {
            FinalStatus::Success => "success",
            FinalStatus::UserBlock => "user_block",
            FinalStatus::SystemFailed => "system_failed",
        }
    }
}

/// One report in a provider's callback: which message, and its fate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallbackEvent {
    /// The id the provider gave the message when it took it.
    pub provider_msgid: String,
    pub status: FinalStatus,
}

/// Why a callback body gave no events.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallbackError {
    /// This kind of channel takes no callbacks.
    #[error("this channel takes no callbacks")]
    Unsupported,
    /// The body is not a report this channel understands; says what is wrong.
    #[error("{0}")]
    Invalid(String),
    /// The request does not prove it comes from the provider (signature
    /// missing, wrong or too old); nothing in it may be acted on.
    #[error("{0}")]
    Unauthorized(String),
}

/// What the callback route answers once a report is recorded, in the form
/// the provider reads as "received" (WeChat: `success`; the SMS providers
/// want their own JSON, or they push again).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallbackReply {
    pub content_type: &'static str,
    pub body: &'static str,
}

/// A provider's request to `/v1/channels/{name}/callback`, as the channel
/// needs it to check the signature and read the report.
#[derive(Debug, Clone, Copy)]
pub struct CallbackRequest<'a> {
    /// The query string's pairs, decoded, in order.
    pub query: &'a [(String, String)],
    /// The body (empty for the `GET` handshake).
    pub body: &'a [u8],
    /// Unix seconds now, to refuse stale timestamps.
    pub now_s: i64,
}

impl<'a> CallbackRequest<'a> {
    /// The first value of query parameter `name`.
    pub fn param(&self, name: &str) -> Option<&'a str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What `GET /v1/channels` shows of a channel's provider side.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProviderStatus {
    /// Unix ms the access token in use stops being valid, if the channel uses one.
    pub token_valid_until: Option<i64>,
}

/// A destination for deliveries.
#[async_trait]
pub trait Channel: Send + Sync + 'static {
    /// The configured name timers refer to.
    fn name(&self) -> &str;
    /// The provider kind, for metrics and logs.
    fn kind(&self) -> ChannelKind;
    /// Whether the provider itself resolves departments (`parties`) and tags to
    /// people, so a rule may target them. Most providers need user ids.
    fn fans_out(&self) -> bool {
        false
    }
    /// Attempts one delivery. Never panics; every failure is an outcome.
    async fn send(&self, delivery: &Delivery) -> SendOutcome;

    /// How many recipients one provider call can carry (WeCom: 1000 `touser`
    /// ids). Campaign segments are cut into calls of this size.
    fn max_batch(&self) -> usize {
        1
    }

    /// Delivers one message to several recipients, one outcome per delivery in
    /// the same order. The deliveries share a message; each keeps its own
    /// recipient and idempotency key. The default sends one at a time.
    async fn send_batch(&self, deliveries: &[Delivery]) -> Vec<SendOutcome> {
        let mut out = Vec::with_capacity(deliveries.len());
        for d in deliveries {
            out.push(self.send(d).await);
        }
        out
    }

    /// Takes back a delivered message by the id the provider gave it.
    /// `sent_at` (unix ms) lets the channel refuse outside the provider's window
    /// without a call.
    async fn recall(&self, provider_msgid: &str, sent_at: i64) -> Result<(), RecallError> {
        let _ = (provider_msgid, sent_at);
        Err(RecallError::Unsupported(self.name().to_string()))
    }

    /// Provider-side state for `GET /v1/channels`. Never includes secrets.
    async fn provider_status(&self) -> ProviderStatus {
        ProviderStatus::default()
    }

    /// The [`TokenVault`] key of the access token this channel uses, if it
    /// uses one: a reload that changes credentials expires it, so the next
    /// send fetches a token with the new ones.
    fn token_key(&self) -> Option<&str> {
        None
    }

    /// Reads a provider's report about messages sent earlier
    /// (`POST /v1/channels/{name}/callback`), after checking its signature
    /// when the channel has a callback secret. Most kinds take none.
    fn parse_callback(
        &self,
        req: &CallbackRequest<'_>,
    ) -> Result<Vec<CallbackEvent>, CallbackError> {
        let _ = req;
        Err(CallbackError::Unsupported)
    }

    /// Whether `outcome` is the provider saying the user has no grant left
    /// for this message (a mini-program's one-time subscriptions: WeChat's
    /// `43101`): the grant ledger then counts none for its template.
    fn grant_refused(&self, outcome: &SendOutcome) -> bool {
        let _ = outcome;
        false
    }

    /// The answer to a callback whose reports were recorded.
    fn callback_reply(&self) -> CallbackReply {
        CallbackReply {
            content_type: "text/plain",
            body: "success",
        }
    }

    /// Whether this channel proves its callbacks come from the provider (a
    /// signature it checks), so the callback route needs no API key.
    fn callback_signed(&self) -> bool {
        false
    }

    /// The provider's server-URL check (`GET /v1/channels/{name}/callback`):
    /// the text to echo when the request is signed. Only signed channels
    /// answer it.
    fn callback_handshake(&self, req: &CallbackRequest<'_>) -> Result<String, CallbackError> {
        let _ = req;
        Err(CallbackError::Unsupported)
    }
}

/// Errors in channel configuration, found at start-up.
#[derive(Debug, thiserror::Error)]
pub enum ChannelError {
    #[error("channel {name:?}: {message}")]
    Config { name: String, message: String },
}

/// What a provider channel needs from its surroundings.
#[derive(Clone)]
pub struct BuildContext {
    /// Where access tokens are shared between nodes.
    pub vault: Arc<dyn TokenVault>,
    /// This node's id: the holder name of token refresh locks.
    pub node_id: String,
}

impl BuildContext {
    /// One process, tokens in memory.
    pub fn local() -> Self {
        Self {
            vault: Arc::new(MemoryVault::new()),
            node_id: "local".into(),
        }
    }
}

/// Builds the channel a config block describes.
pub fn build(cfg: &ChannelConfig, ctx: &BuildContext) -> Result<Arc<dyn Channel>, ChannelError> {
    cfg.validate()?;
    let common = &cfg.common;
    Ok(match &cfg.provider {
        ProviderConfig::Log(_) => Arc::new(LogChannel::new(&common.name)),
        ProviderConfig::Webhook(p) => Arc::new(WebhookChannel::new(common, p)?),
        ProviderConfig::Wechat(p) => Arc::new(WechatChannel::new(common, p, ctx)?),
        ProviderConfig::Wecom(p) => Arc::new(WecomChannel::new(common, p, ctx)?),
        ProviderConfig::Fcm(p) => Arc::new(FcmChannel::new(common, p, ctx)?),
        ProviderConfig::Smtp(p) => Arc::new(SmtpChannel::new(common, p)?),
        ProviderConfig::WechatMini(p) => Arc::new(WechatChannel::mini(common, p, ctx)?),
        ProviderConfig::AliyunSms(p) => Arc::new(AliyunSmsChannel::new(common, p, ctx)?),
        ProviderConfig::TencentSms(p) => Arc::new(TencentSmsChannel::new(common, p, ctx)?),
        ProviderConfig::WecomRobot(p)
        | ProviderConfig::DingtalkRobot(p)
        | ProviderConfig::FeishuBot(p) => Arc::new(RobotChannel::new(common, cfg.kind(), p)?),
        ProviderConfig::HuaweiPush(p) => Arc::new(HuaweiPushChannel::new(common, p, ctx)?),
        ProviderConfig::XiaomiPush(p) => Arc::new(XiaomiPushChannel::new(common, p, ctx)?),
        ProviderConfig::HonorPush(p) => Arc::new(HonorPushChannel::new(common, p, ctx)?),
        ProviderConfig::OppoPush(p) => Arc::new(OppoPushChannel::new(common, p, ctx)?),
        ProviderConfig::VivoPush(p) => Arc::new(VivoPushChannel::new(common, p, ctx)?),
        ProviderConfig::DingtalkWork(p) => Arc::new(DingtalkWorkChannel::new(common, p, ctx)?),
        ProviderConfig::FeishuApp(p) => Arc::new(FeishuAppChannel::new(common, p, ctx)?),
    })
}
