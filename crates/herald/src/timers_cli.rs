//! `herald timers ...`: schedule, inspect, search, move and replay timers on
//! a running server. Flags mirror the API's query and body fields.

use anyhow::Context;
use clap::{Args, Subcommand};
use serde_json::{Value, json};

use crate::client::{Remote, show};

#[derive(Subcommand, Debug)]
pub enum TimersCmd {
    /// Schedule a timer.
    Add {
        #[arg(long)]
        channel: String,
        #[arg(long)]
        recipient: String,
        /// Message object as JSON.
        #[arg(long, default_value = "{}")]
        message: String,
        /// Fire after this many milliseconds...
        #[arg(long, conflicts_with = "fire_at")]
        delay_ms: Option<i64>,
        /// ...or at this RFC 3339 time.
        #[arg(long)]
        fire_at: Option<String>,
        #[arg(long)]
        idempotency_key: Option<String>,
        #[arg(long)]
        priority: Option<u8>,
    },
    /// Show a timer.
    Get { id: i64 },
    /// Cancel a pending timer.
    Cancel { id: i64 },
    /// Show a timer's send log.
    Deliveries { id: i64 },
    /// Search the tenant's timers, ordered by due time (one page).
    List(ListArgs),
    /// Change a pending timer's time, message or priority.
    Patch {
        id: i64,
        /// New RFC 3339 time...
        #[arg(long, conflicts_with = "delay_ms")]
        fire_at: Option<String>,
        /// ...or fire this many milliseconds from now.
        #[arg(long)]
        delay_ms: Option<i64>,
        /// New message object as JSON.
        #[arg(long)]
        message: Option<String>,
        #[arg(long)]
        priority: Option<u8>,
    },
    /// Replay one dead, failed or in-doubt timer now.
    Retry { id: i64 },
    /// Replay the dead and failed timers that match (needs the campaign scope).
    RetryAll(RetryAllArgs),
    /// Dead and failed timers grouped by channel and error.
    DeadLetters {
        #[arg(long)]
        channel: Option<String>,
    },
}

/// The query of `GET /v1/timers`.
#[derive(Args, Debug, Default)]
pub struct ListArgs {
    /// pending, done, failed, dead, cancelled or in_doubt.
    #[arg(long)]
    state: Option<String>,
    #[arg(long)]
    channel: Option<String>,
    #[arg(long)]
    recipient: Option<String>,
    #[arg(long)]
    idempotency_key: Option<String>,
    /// What made the timer (e.g. `timer`).
    #[arg(long)]
    kind: Option<String>,
    /// Only timers due at or after this RFC 3339 time.
    #[arg(long)]
    due_after: Option<String>,
    /// Only timers due before this RFC 3339 time.
    #[arg(long)]
    due_before: Option<String>,
    /// asc (default) or desc.
    #[arg(long)]
    order: Option<String>,
    /// Timers per page (1..1000).
    #[arg(long)]
    limit: Option<u32>,
    /// Continue from a previous answer's `next_cursor`.
    #[arg(long)]
    cursor: Option<String>,
}

impl ListArgs {
    fn query(self) -> Vec<(&'static str, String)> {
        let fields = [
            ("state", self.state),
            ("channel", self.channel),
            ("recipient", self.recipient),
            ("idempotency_key", self.idempotency_key),
            ("kind", self.kind),
            ("due_after", self.due_after),
            ("due_before", self.due_before),
            ("order", self.order),
            ("limit", self.limit.map(|l| l.to_string())),
            ("cursor", self.cursor),
        ];
        fields
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k, v)))
            .collect()
    }
}

/// The body of `POST /v1/timers:retry`.
#[derive(Args, Debug, Default)]
pub struct RetryAllArgs {
    /// dead, failed or in_doubt (default: dead and failed).
    #[arg(long)]
    state: Option<String>,
    #[arg(long)]
    channel: Option<String>,
    /// Only timers whose last error starts with this.
    #[arg(long)]
    error: Option<String>,
    #[arg(long)]
    due_after: Option<String>,
    #[arg(long)]
    due_before: Option<String>,
    /// At most this many (1..10000); the answer's `more` says to call again.
    #[arg(long)]
    limit: Option<u32>,
}

impl RetryAllArgs {
    fn body(self) -> Value {
        let mut body = json!({});
        for (k, v) in [
            ("state", self.state),
            ("channel", self.channel),
            ("error", self.error),
            ("due_after", self.due_after),
            ("due_before", self.due_before),
        ] {
            if let Some(v) = v {
                body[k] = Value::String(v);
            }
        }
        if let Some(l) = self.limit {
            body["limit"] = l.into();
        }
        body
    }
}

fn json_flag(flag: &str, raw: &str) -> anyhow::Result<Value> {
    serde_json::from_str(raw).with_context(|| format!("--{flag} is not valid JSON"))
}

pub async fn run(remote: &Remote, cmd: TimersCmd) -> anyhow::Result<()> {
    let http = remote.http()?;
    let base = remote.base();
    let resp = match cmd {
        TimersCmd::Add {
            channel,
            recipient,
            message,
            delay_ms,
            fire_at,
            idempotency_key,
            priority,
        } => {
            let message = json_flag("message", &message)?;
            let mut body =
                json!({ "channel": channel, "recipient": recipient, "message": message });
            match (delay_ms, fire_at) {
                (_, Some(f)) => body["fire_at"] = f.into(),
                (d, None) => body["delay_ms"] = d.unwrap_or(0).into(),
            }
            if let Some(k) = idempotency_key {
                body["idempotency_key"] = k.into();
            }
            if let Some(p) = priority {
                body["priority"] = p.into();
            }
            http.post(format!("{base}/v1/timers"))
                .json(&body)
                .send()
                .await
        }
        TimersCmd::Get { id } => http.get(format!("{base}/v1/timers/{id}")).send().await,
        TimersCmd::Cancel { id } => http.delete(format!("{base}/v1/timers/{id}")).send().await,
        TimersCmd::Deliveries { id } => {
            http.get(format!("{base}/v1/timers/{id}/deliveries"))
                .send()
                .await
        }
        TimersCmd::List(args) => {
            http.get(format!("{base}/v1/timers"))
                .query(&args.query())
                .send()
                .await
        }
        TimersCmd::Patch {
            id,
            fire_at,
            delay_ms,
            message,
            priority,
        } => {
            let mut body = json!({});
            if let Some(f) = fire_at {
                body["fire_at"] = f.into();
            }
            if let Some(d) = delay_ms {
                body["delay_ms"] = d.into();
            }
            if let Some(m) = message {
                body["message"] = json_flag("message", &m)?;
            }
            if let Some(p) = priority {
                body["priority"] = p.into();
            }
            http.patch(format!("{base}/v1/timers/{id}"))
                .json(&body)
                .send()
                .await
        }
        TimersCmd::Retry { id } => {
            http.post(format!("{base}/v1/timers/{id}:retry"))
                .json(&json!({}))
                .send()
                .await
        }
        TimersCmd::RetryAll(args) => {
            http.post(format!("{base}/v1/timers:retry"))
                .json(&args.body())
                .send()
                .await
        }
        TimersCmd::DeadLetters { channel } => {
            let query: Vec<_> = channel.map(|c| ("channel", c)).into_iter().collect();
            http.get(format!("{base}/v1/dead-letters"))
                .query(&query)
                .send()
                .await
        }
    }
    .with_context(|| format!("cannot reach {base}"))?;
    show(resp).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_query_holds_only_what_was_given() {
        let args = ListArgs {
            state: Some("dead".into()),
            limit: Some(5),
            ..ListArgs::default()
        };
        assert_eq!(
            args.query(),
            vec![("state", "dead".to_string()), ("limit", "5".to_string())]
        );
    }

    #[test]
    fn the_retry_body_holds_only_what_was_given() {
        let args = RetryAllArgs {
            channel: Some("hooks".into()),
            limit: Some(10),
            ..RetryAllArgs::default()
        };
        assert_eq!(args.body(), json!({"channel": "hooks", "limit": 10}));
    }
}
