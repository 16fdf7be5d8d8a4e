//! `herald timers ...`: schedule, inspect, search, move and replay timers on
//! a running server. Flags mirror the API's query and body fields.

use anyhow::Context;
use clap::{Args, Subcommand};
use serde_json::{Value, json};

use crate::client::{Remote, json_flag, show};

#[derive(Subcommand, Debug)]
pub enum TimersCmd {
    /// Schedule a timer.
    #[command(visible_alias = "add")]
    Create(CreateArgs),
    /// Show a timer.
    Get {
        /// The timer's id.
        id: i64,
    },
    /// Search the tenant's timers, ordered by due time (one page).
    List(ListArgs),
    /// Change a pending timer's time, message or priority.
    #[command(visible_alias = "patch")]
    Update {
        /// The timer's id.
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
        /// New priority, 0..=9; higher goes first among due timers.
        #[arg(long)]
        priority: Option<u8>,
    },
    /// Cancel a pending timer.
    #[command(visible_alias = "cancel")]
    Delete {
        /// The timer's id.
        id: i64,
    },
    /// Show a timer's send log.
    Deliveries {
        /// The timer's id.
        id: i64,
    },
    /// Replay one dead, failed or in-doubt timer now.
    Retry {
        /// The timer's id.
        id: i64,
    },
    /// Replay the dead and failed timers that match (needs the campaign scope).
    RetryAll(RetryAllArgs),
    /// Dead and failed timers grouped by channel and error (also `herald dead-letters list`).
    DeadLetters(DeadLetterArgs),
}

/// The body of `POST /v1/timers`.
#[derive(Args, Debug, Default)]
pub struct CreateArgs {
    /// The channel to send through (optional with --to when the tenant has a
    /// default route).
    #[arg(long)]
    channel: Option<String>,
    /// The raw recipient; what it means depends on the channel (a user id,
    /// a phone number, an e-mail address).
    #[arg(long, conflicts_with = "to", required_unless_present = "to")]
    recipient: Option<String>,
    /// Send to this subscriber instead: their address is read from the
    /// directory when the timer fires, and their opt-outs and quiet hours apply.
    #[arg(long, value_name = "USER_ID")]
    to: Option<String>,
    /// With --to: the address type (app, email, sms, wechat, wecom; default:
    /// the channel's own).
    #[arg(long, requires = "to")]
    channel_type: Option<String>,
    /// What the message is about; a subscriber who opted out of the topic is
    /// not sent to.
    #[arg(long)]
    topic: Option<String>,
    /// Send even inside quiet hours (never past an opt-out).
    #[arg(long)]
    critical: bool,
    /// Hold the timer back and send it in one message with the recipient's
    /// other pending timers of this digest key; needs --digest-window-ms or
    /// --digest-at.
    #[arg(long, value_name = "KEY")]
    digest: Option<String>,
    /// With --digest: the digest closes this many milliseconds after its
    /// first timer's due time.
    #[arg(long, requires = "digest", conflicts_with = "digest_at")]
    digest_window_ms: Option<i64>,
    /// With --digest-window-ms: later arrivals hold the digest back at most
    /// this many milliseconds.
    #[arg(long, requires = "digest_window_ms")]
    digest_max_delay_ms: Option<i64>,
    /// With --digest: close the digest daily at this HH:MM in the
    /// subscriber's time zone.
    #[arg(long, requires = "digest", value_name = "HH:MM")]
    digest_at: Option<String>,
    /// Message object as JSON.
    #[arg(long, default_value = "{}")]
    message: String,
    /// Fire after this many milliseconds (default 0)...
    #[arg(long, conflicts_with = "fire_at")]
    delay_ms: Option<i64>,
    /// ...or at this RFC 3339 time.
    #[arg(long)]
    fire_at: Option<String>,
    /// A key that makes a retried create return the first timer instead of a
    /// second one.
    #[arg(long)]
    idempotency_key: Option<String>,
    /// 0..=9 (default 5); higher goes first among due timers.
    #[arg(long)]
    priority: Option<u8>,
}

impl CreateArgs {
    fn body(self) -> anyhow::Result<Value> {
        let mut body = json!({ "message": json_flag("message", &self.message)? });
        let text = [
            ("channel", self.channel),
            ("recipient", self.recipient),
            ("topic", self.topic),
            ("idempotency_key", self.idempotency_key),
        ];
        for (k, v) in text {
            if let Some(v) = v {
                body[k] = Value::String(v);
            }
        }
        if let Some(user) = self.to {
            let mut to = json!({ "user_id": user });
            if let Some(t) = self.channel_type {
                to["channel_type"] = t.into();
            }
            body["to"] = to;
        }
        if self.critical {
            body["critical"] = true.into();
        }
        if let Some(key) = self.digest {
            let mut digest = json!({ "key": key });
            if let Some(w) = self.digest_window_ms {
                digest["window_ms"] = w.into();
            }
            if let Some(m) = self.digest_max_delay_ms {
                digest["max_delay_ms"] = m.into();
            }
            if let Some(at) = self.digest_at {
                digest["at_local"] = at.into();
            }
            body["digest"] = digest;
        }
        match (self.delay_ms, self.fire_at) {
            (_, Some(f)) => body["fire_at"] = f.into(),
            (d, None) => body["delay_ms"] = d.unwrap_or(0).into(),
        }
        if let Some(p) = self.priority {
            body["priority"] = p.into();
        }
        Ok(body)
    }
}

/// The query of `GET /v1/dead-letters`.
#[derive(Args, Debug, Default)]
pub struct DeadLetterArgs {
    /// Only this channel's.
    #[arg(long)]
    channel: Option<String>,
}

/// `herald dead-letters ...`: the same groups as `herald timers dead-letters`.
#[derive(Subcommand, Debug)]
pub enum DeadLettersCmd {
    /// Dead and failed timers grouped by channel and error.
    List(DeadLetterArgs),
}

/// The query of `GET /v1/timers`.
#[derive(Args, Debug, Default)]
pub struct ListArgs {
    /// pending, done, failed, dead, cancelled or in_doubt.
    #[arg(long)]
    state: Option<String>,
    /// Only timers of this channel.
    #[arg(long)]
    channel: Option<String>,
    /// Only timers to this recipient.
    #[arg(long)]
    recipient: Option<String>,
    /// Only the timer created with this idempotency key.
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
    /// Only timers of this channel.
    #[arg(long)]
    channel: Option<String>,
    /// Only timers whose last error starts with this.
    #[arg(long)]
    error: Option<String>,
    /// Only timers due at or after this RFC 3339 time.
    #[arg(long)]
    due_after: Option<String>,
    /// Only timers due before this RFC 3339 time.
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

pub async fn dead_letters(remote: &Remote, cmd: DeadLettersCmd) -> anyhow::Result<()> {
    match cmd {
        DeadLettersCmd::List(args) => run(remote, TimersCmd::DeadLetters(args)).await,
    }
}

pub async fn run(remote: &Remote, cmd: TimersCmd) -> anyhow::Result<()> {
    let http = remote.http()?;
    let base = remote.base();
    let resp = match cmd {
        TimersCmd::Create(args) => {
            http.post(format!("{base}/v1/timers"))
                .json(&args.body()?)
                .send()
                .await
        }
        TimersCmd::Get { id } => http.get(format!("{base}/v1/timers/{id}")).send().await,
        TimersCmd::Delete { id } => http.delete(format!("{base}/v1/timers/{id}")).send().await,
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
        TimersCmd::Update {
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
        TimersCmd::DeadLetters(DeadLetterArgs { channel }) => {
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
    fn create_maps_the_routing_flags_to_the_api_fields() {
        let args = CreateArgs {
            channel: Some("mail".into()),
            to: Some("alice".into()),
            channel_type: Some("email".into()),
            topic: Some("orders".into()),
            critical: true,
            digest: Some("daily".into()),
            digest_at: Some("08:30".into()),
            message: r#"{"subject":"hi"}"#.into(),
            ..CreateArgs::default()
        };
        assert_eq!(
            args.body().unwrap(),
            json!({"channel": "mail", "to": {"user_id": "alice", "channel_type": "email"},
                   "topic": "orders", "critical": true,
                   "digest": {"key": "daily", "at_local": "08:30"},
                   "message": {"subject": "hi"}, "delay_ms": 0})
        );
        let plain = CreateArgs {
            channel: Some("log".into()),
            recipient: Some("u1".into()),
            message: "{}".into(),
            fire_at: Some("2030-01-01T00:00:00Z".into()),
            ..CreateArgs::default()
        };
        assert_eq!(
            plain.body().unwrap(),
            json!({"channel": "log", "recipient": "u1", "message": {},
                   "fire_at": "2030-01-01T00:00:00Z"})
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
