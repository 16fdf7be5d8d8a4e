//! `herald subjects ...` and `herald reminders ...`: a client for a running
//! server's subjects and reminder subscriptions, with a bulk importer.

use std::path::PathBuf;

use anyhow::Context;
use clap::Subcommand;
use serde_json::{Value, json};

use crate::client::{Remote, show};

#[derive(Subcommand, Debug)]
pub enum SubjectsCmd {
    /// Create a subject (or replace it: `PUT` either way).
    #[command(visible_alias = "put")]
    Create(SubjectArgs),
    /// Change a subject: a new start time moves its reminders.
    Update(SubjectArgs),
    /// List subjects in id order with their subscriber and reminder counts
    /// (each counted up to the answer's count_cap); pass the answer's
    /// next_cursor for the next page.
    List {
        /// Continue from a previous answer's `next_cursor`.
        #[arg(long)]
        cursor: Option<String>,
        /// Subjects per page.
        #[arg(long)]
        limit: Option<u32>,
    },
    /// Show a subject, with its reminders by channel type and lead.
    Get {
        /// The subject's id.
        subject_id: String,
    },
    /// Delete a subject and cancel its pending reminders.
    #[command(visible_alias = "rm")]
    Delete {
        /// The subject's id.
        subject_id: String,
    },
}

/// The body of `PUT /v1/subjects/{id}`.
#[derive(clap::Args, Debug)]
pub struct SubjectArgs {
    /// The subject's id (yours: an order, a live stream, an exam).
    subject_id: String,
    /// When the subject starts, RFC 3339 (e.g. 2026-11-23T10:00:00+08:00).
    #[arg(long)]
    start_at: String,
    /// A title, passed to every reminder message.
    #[arg(long)]
    title: Option<String>,
    /// Extra data as a JSON object, passed to every reminder message.
    #[arg(long)]
    data: Option<String>,
}

#[derive(Subcommand, Debug)]
pub enum RemindersCmd {
    /// Subscribe a user to a reminder.
    #[command(visible_alias = "add")]
    Create {
        /// The user to remind.
        #[arg(long)]
        user: String,
        /// The subject the reminder counts down to.
        #[arg(long)]
        subject: String,
        /// app, email, sms, wechat or wecom.
        #[arg(long)]
        channel_type: String,
        /// Minutes before the start: one of the server's leads (by default
        /// 5, 10, ... 60).
        #[arg(long)]
        lead: i64,
        /// Send through this configured channel instead of the type's.
        #[arg(long)]
        channel: Option<String>,
    },
    /// Cancel a user's reminders for a subject: all, one type, one lead, or one of both.
    #[command(visible_alias = "rm")]
    Delete {
        /// The user whose reminders go.
        #[arg(long)]
        user: String,
        /// The subject they were for.
        #[arg(long)]
        subject: String,
        /// Only reminders of this type.
        #[arg(long)]
        channel_type: Option<String>,
        /// Only reminders with this lead (minutes).
        #[arg(long)]
        lead: Option<i64>,
    },
    /// List a user's reminders.
    #[command(visible_alias = "ls")]
    List {
        /// The user whose reminders to list.
        #[arg(long)]
        user: String,
    },
    /// Import subscriptions from an NDJSON file (one `POST /v1/reminders`
    /// body per line) through the bulk endpoint, with a progress bar.
    Import {
        /// The NDJSON file.
        file: PathBuf,
        /// Lines per request.
        #[arg(long, default_value_t = 10_000)]
        batch: usize,
    },
}

pub async fn subjects(remote: &Remote, cmd: SubjectsCmd) -> anyhow::Result<()> {
    let http = remote.http()?;
    let base = remote.base();
    let resp = match cmd {
        SubjectsCmd::Create(args) | SubjectsCmd::Update(args) => {
            let mut body = json!({ "start_at": args.start_at });
            if let Some(t) = args.title {
                body["title"] = t.into();
            }
            if let Some(d) = args.data {
                body["data"] = serde_json::from_str::<Value>(&d).context("--data is not JSON")?;
            }
            http.put(format!("{base}/v1/subjects/{}", args.subject_id))
                .json(&body)
                .send()
                .await
        }
        SubjectsCmd::List { cursor, limit } => {
            http.get(format!("{base}/v1/subjects"))
                .query(&crate::client::page_query(cursor, limit))
                .send()
                .await
        }
        SubjectsCmd::Get { subject_id } => {
            http.get(format!("{base}/v1/subjects/{subject_id}"))
                .send()
                .await
        }
        SubjectsCmd::Delete { subject_id } => {
            http.delete(format!("{base}/v1/subjects/{subject_id}"))
                .send()
                .await
        }
    }
    .with_context(|| format!("cannot reach {base}"))?;
    show(resp).await
}

pub async fn reminders(remote: &Remote, cmd: RemindersCmd) -> anyhow::Result<()> {
    let http = remote.http()?;
    let base = remote.base();
    let resp = match cmd {
        RemindersCmd::Create {
            user,
            subject,
            channel_type,
            lead,
            channel,
        } => {
            let mut body = json!({ "user_id": user, "subject_id": subject,
                                   "channel_type": channel_type, "lead_minutes": lead });
            if let Some(c) = channel {
                body["channel"] = c.into();
            }
            http.post(format!("{base}/v1/reminders"))
                .json(&body)
                .send()
                .await
        }
        RemindersCmd::Delete {
            user,
            subject,
            channel_type,
            lead,
        } => {
            let mut q: Vec<(&str, String)> = Vec::new();
            if let Some(t) = channel_type {
                q.push(("channel_type", t));
            }
            if let Some(l) = lead {
                q.push(("lead_minutes", l.to_string()));
            }
            http.delete(format!("{base}/v1/reminders/{user}/{subject}"))
                .query(&q)
                .send()
                .await
        }
        RemindersCmd::List { user } => {
            http.get(format!("{base}/v1/users/{user}/reminders"))
                .send()
                .await
        }
        RemindersCmd::Import { file, batch } => {
            // Conflicts (already subscribed) are counted, not fatal, so an
            // import can be re-run.
            let import = crate::import::Import {
                route: "/v1/reminders:bulk",
                noun: "reminders",
                outcomes: &[(201, "created"), (409, "already subscribed")],
            };
            return import.run(&http, base, &file, batch).await;
        }
    }
    .with_context(|| format!("cannot reach {base}"))?;
    show(resp).await
}
