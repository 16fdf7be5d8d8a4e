//! `herald subscribers ...`: a client for a running server's subscriber
//! directory, with a re-runnable bulk importer.

use std::path::PathBuf;

use anyhow::Context;
use clap::Subcommand;
use serde_json::Value;

use crate::client::{Remote, page_query, show};
use crate::import::Import;

#[derive(Subcommand, Debug)]
pub enum SubscribersCmd {
    /// Import profiles from an NDJSON file, one `{"user_id": ..., profile}`
    /// per line (see `PUT /v1/subscribers/{user_id}`), with a progress bar.
    /// Each line replaces that user's profile, so an import can be re-run.
    Import {
        /// The NDJSON file.
        file: PathBuf,
        /// Lines per request.
        #[arg(long, default_value_t = 10_000)]
        batch: usize,
    },
    /// Create or replace one profile from a JSON object.
    #[command(visible_alias = "put")]
    Create {
        /// The user's id.
        user_id: String,
        /// The profile, JSON (e.g. '{"addresses":{"email":"a@example.com"}}').
        #[arg(long)]
        profile: String,
    },
    /// Change part of a profile: a JSON merge patch (`null` removes a field).
    Update {
        /// The user's id.
        user_id: String,
        /// The patch, JSON (e.g. '{"addresses":{"sms":null}}').
        #[arg(long)]
        profile: String,
    },
    /// Show a subscriber.
    Get {
        /// The user's id.
        user_id: String,
    },
    /// Remove a subscriber.
    #[command(visible_alias = "rm")]
    Delete {
        /// The user's id.
        user_id: String,
    },
    /// List subscribers in user-id order; pass the answer's next_cursor for
    /// the next page.
    List {
        /// Continue from a previous answer's `next_cursor`.
        #[arg(long)]
        cursor: Option<String>,
        /// Subscribers per page.
        #[arg(long)]
        limit: Option<u32>,
    },
}

pub async fn subscribers(remote: &Remote, cmd: SubscribersCmd) -> anyhow::Result<()> {
    let http = remote.http()?;
    let base = remote.base();
    let url = |user: &str| format!("{base}/v1/subscribers/{user}");
    let resp = match cmd {
        SubscribersCmd::Import { file, batch } => {
            let import = Import {
                route: "/v1/subscribers:bulk",
                noun: "subscribers",
                outcomes: &[(201, "created"), (200, "replaced")],
            };
            return import.run(&http, base, &file, batch).await;
        }
        SubscribersCmd::Create { user_id, profile } => {
            let body: Value = serde_json::from_str(&profile).context("--profile is not JSON")?;
            http.put(url(&user_id)).json(&body).send().await
        }
        SubscribersCmd::Update { user_id, profile } => {
            let body: Value = serde_json::from_str(&profile).context("--profile is not JSON")?;
            http.patch(url(&user_id)).json(&body).send().await
        }
        SubscribersCmd::Get { user_id } => http.get(url(&user_id)).send().await,
        SubscribersCmd::Delete { user_id } => http.delete(url(&user_id)).send().await,
        SubscribersCmd::List { cursor, limit } => {
            http.get(format!("{base}/v1/subscribers"))
                .query(&page_query(cursor, limit))
                .send()
                .await
        }
    }
    .with_context(|| format!("cannot reach {base}"))?;
    show(resp).await
}
