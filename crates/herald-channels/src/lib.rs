//! The `Channel` seam.
//!
//! Everything that leaves the process goes through [`Channel`]. The engine
//! hands a channel one [`Delivery`] and gets back a [`SendOutcome`]; it knows
//! nothing of HTTP or providers. Providers are built from configuration with
//! [`build`].

mod config;
pub mod http;
mod log;
mod webhook;

use std::sync::Arc;

use async_trait::async_trait;
use herald_core::{TimerId, TimerKind};

pub use config::{ChannelConfig, ChannelKind};
pub use log::LogChannel;
pub use webhook::WebhookChannel;

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
}

/// Errors in channel configuration, found at start-up.
#[derive(Debug, thiserror::Error)]
pub enum ChannelError {
    #[error("channel {name:?}: {message}")]
    Config { name: String, message: String },
}

/// Builds the channel a config block describes.
pub fn build(cfg: &ChannelConfig) -> Result<Arc<dyn Channel>, ChannelError> {
    cfg.validate()?;
    Ok(match cfg.kind {
        ChannelKind::Log => Arc::new(LogChannel::new(&cfg.name)),
        ChannelKind::Webhook => Arc::new(WebhookChannel::new(cfg)?),
    })
}
