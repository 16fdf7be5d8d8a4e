//! The `log` channel: writes each delivery to the log and acknowledges it.
//! The embedded default, so that a fresh `herald serve` works with no provider.

use async_trait::async_trait;

use crate::{Channel, ChannelKind, Delivery, SendOutcome};

pub struct LogChannel {
    name: String,
}

impl LogChannel {
    pub fn new(name: &str) -> Self {
        Self {
            name: name.to_string(),
        }
    }
}

#[async_trait]
impl Channel for LogChannel {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> ChannelKind {
        ChannelKind::Log
    }

    async fn send(&self, d: &Delivery) -> SendOutcome {
        tracing::info!(
            target: "herald::delivery",
            channel = %self.name,
            timer_id = d.timer_id,
            attempt = d.attempt,
            recipient = %d.recipient,
            idempotency_key = %d.idempotency_key,
            lateness_ms = d.fired_at - d.due_at,
            message = %d.message,
            "delivered"
        );
        SendOutcome::Delivered {
            provider_msgid: None,
            status: None,
        }
    }
}
