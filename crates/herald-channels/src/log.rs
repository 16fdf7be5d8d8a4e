//! The `log` channel: writes each delivery to the log and acknowledges it.
//! The embedded default, so that a fresh `herald serve` works with no provider.

use async_trait::async_trait;

use herald_core::TimerKind;

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
        // A job's send carries the job's id where a timer's carries its own,
        // so it is logged under the name a reader would look it up by.
        if d.kind == TimerKind::Job {
            tracing::info!(
                target: "herald::delivery",
                channel = %self.name,
                job_id = d.timer_id,
                recipient = %d.recipient,
                attempt = d.attempt,
                idempotency_key = %d.idempotency_key,
                lateness_ms = d.fired_at - d.due_at,
                message = %d.message,
                "delivered"
            );
        } else {
            tracing::info!(
                target: "herald::delivery",
                channel = %self.name,
                timer_id = d.timer_id,
                recipient = %d.recipient,
                attempt = d.attempt,
                idempotency_key = %d.idempotency_key,
                lateness_ms = d.fired_at - d.due_at,
                message = %d.message,
                "delivered"
            );
        }
        SendOutcome::Delivered {
            provider_msgid: None,
            status: None,
        }
    }
}
