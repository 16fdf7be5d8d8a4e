//! What the binary hands the engine for each configured channel
//! ([`ChannelSpec`]): the channel itself and the limits the engine applies
//! to it. In the channels folder, not in `config.rs`: the channel runtime
//! reads it, and `config.rs` reaches the campaign settings, which reach the
//! channel runtime (a circle).

use std::sync::Arc;

use herald_channels::Channel;
use herald_core::RetryPolicy;

/// A channel and the limits the engine applies to it.
pub struct ChannelSpec {
    pub channel: Arc<dyn Channel>,
    pub concurrency: usize,
    pub rate_per_sec: Option<f64>,
    pub retry: RetryPolicy,
    /// Do-not-disturb window, its policy, and how it reads in config.
    pub quiet: Option<(
        herald_core::QuietWindow,
        herald_channels::QuietPolicy,
        String,
    )>,
    /// How reminders become this channel's message (see
    /// [`herald_channels::template`]); `None` sends Herald's own shape.
    pub reminder_template: Option<serde_json::Value>,
    /// What a send left in doubt by a dead node does next.
    pub in_doubt: herald_channels::InDoubt,
    /// The provider's limits per recipient address (see
    /// [`herald_channels::ChannelKind::default_pacing`]).
    pub pacing: Vec<herald_core::pacing::Pace>,
}

impl ChannelSpec {
    /// A channel with no quiet hours.
    pub fn new(
        channel: Arc<dyn Channel>,
        concurrency: usize,
        rate_per_sec: Option<f64>,
        retry: RetryPolicy,
    ) -> Self {
        Self {
            channel,
            concurrency,
            rate_per_sec,
            retry,
            quiet: None,
            reminder_template: None,
            in_doubt: herald_channels::InDoubt::Resend,
            pacing: Vec::new(),
        }
    }
}
