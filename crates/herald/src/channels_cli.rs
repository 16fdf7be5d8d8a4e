//! `herald channels ...`: see every channel's state, and pause or resume one
//! cluster-wide (needs the admin key).

use anyhow::Context;
use clap::Subcommand;
use serde_json::{Value, json};

use crate::client::{Remote, show};

#[derive(Subcommand, Debug)]
pub enum ChannelsCmd {
    /// Every channel: token, pause, quiet hours, outcomes, rate.
    List,
    /// Hold a channel's deliveries on every node, without using attempts.
    Pause {
        /// The channel's name.
        name: String,
        /// RFC 3339 time the pause ends by itself (default: until resumed).
        #[arg(long)]
        until: Option<String>,
        /// Why, for the other operators.
        #[arg(long)]
        reason: Option<String>,
    },
    /// End a channel's pause: held deliveries go out.
    Resume {
        /// The channel's name.
        name: String,
    },
}

pub async fn run(remote: &Remote, cmd: ChannelsCmd) -> anyhow::Result<()> {
    let http = remote.http()?;
    let base = remote.base();
    let resp = match cmd {
        ChannelsCmd::List => http.get(format!("{base}/v1/channels")).send().await,
        ChannelsCmd::Pause {
            name,
            until,
            reason,
        } => {
            let mut body = json!({});
            if let Some(u) = until {
                body["until"] = Value::String(u);
            }
            if let Some(r) = reason {
                body["reason"] = Value::String(r);
            }
            http.post(format!("{base}/v1/channels/{name}:pause"))
                .json(&body)
                .send()
                .await
        }
        ChannelsCmd::Resume { name } => {
            http.post(format!("{base}/v1/channels/{name}:resume"))
                .send()
                .await
        }
    }
    .with_context(|| format!("cannot reach {base}"))?;
    show(resp).await
}
