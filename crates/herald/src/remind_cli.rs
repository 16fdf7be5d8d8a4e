//! `herald subjects ...` and `herald reminders ...`: a client for a running
//! server's subjects and reminder subscriptions, with a bulk importer.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Subcommand;
use serde_json::{Value, json};

use crate::client::{Remote, show};

#[derive(Subcommand, Debug)]
pub enum SubjectsCmd {
    /// Create a subject, or change it (a new start time moves its reminders).
    Put {
        subject_id: String,
        /// When the subject starts, RFC 3339 (e.g. 2026-11-23T10:00:00+08:00).
        #[arg(long)]
        start_at: String,
        #[arg(long)]
        title: Option<String>,
        /// Extra data as a JSON object, passed to every reminder message.
        #[arg(long)]
        data: Option<String>,
    },
    /// List subjects in id order with their subscriber and reminder counts
    /// (each counted up to the answer's count_cap); pass the answer's
    /// next_cursor for the next page.
    List {
        #[arg(long)]
        cursor: Option<String>,
        #[arg(long)]
        limit: Option<u32>,
    },
    /// Show a subject, with its reminders by channel type and lead.
    Get { subject_id: String },
    /// Delete a subject and cancel its pending reminders.
    Rm { subject_id: String },
}

#[derive(Subcommand, Debug)]
pub enum RemindersCmd {
    /// Subscribe a user to a reminder.
    Add {
        #[arg(long)]
        user: String,
        #[arg(long)]
        subject: String,
        /// app, email, sms, wechat or wecom.
        #[arg(long)]
        channel_type: String,
        /// Minutes before the start: 5, 10, ... 60.
        #[arg(long)]
        lead: i64,
        /// Send through this configured channel instead of the type's.
        #[arg(long)]
        channel: Option<String>,
    },
    /// Cancel a user's reminders for a subject: all, one type, one lead, or one of both.
    Rm {
        #[arg(long)]
        user: String,
        #[arg(long)]
        subject: String,
        #[arg(long)]
        channel_type: Option<String>,
        #[arg(long)]
        lead: Option<i64>,
    },
    /// List a user's reminders.
    Ls {
        #[arg(long)]
        user: String,
    },
    /// Import subscriptions from an NDJSON file (one `POST /v1/reminders`
    /// body per line) through the bulk endpoint, with a progress bar.
    Import {
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
        SubjectsCmd::Put {
            subject_id,
            start_at,
            title,
            data,
        } => {
            let mut body = json!({ "start_at": start_at });
            if let Some(t) = title {
                body["title"] = t.into();
            }
            if let Some(d) = data {
                body["data"] = serde_json::from_str::<Value>(&d).context("--data is not JSON")?;
            }
            http.put(format!("{base}/v1/subjects/{subject_id}"))
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
        SubjectsCmd::Rm { subject_id } => {
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
        RemindersCmd::Add {
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
        RemindersCmd::Rm {
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
        RemindersCmd::Ls { user } => {
            http.get(format!("{base}/v1/users/{user}/reminders"))
                .send()
                .await
        }
        RemindersCmd::Import { file, batch } => return import(&http, base, &file, batch).await,
    }
    .with_context(|| format!("cannot reach {base}"))?;
    show(resp).await
}

/// Sends the file in batches and tallies the per-line answers. Conflicts
/// (already subscribed) are counted, not fatal, so an import can be re-run.
async fn import(
    http: &reqwest::Client,
    base: &str,
    file: &std::path::Path,
    batch: usize,
) -> anyhow::Result<()> {
    let total = {
        let f = std::fs::File::open(file).with_context(|| format!("opening {}", file.display()))?;
        BufReader::new(f)
            .lines()
            .map_while(Result::ok)
            .filter(|l| !l.trim().is_empty())
            .count()
    };
    let bar = indicatif::ProgressBar::new(total as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{elapsed_precise} [{bar:40}] {pos}/{len} reminders ({per_sec}, eta {eta})",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    let f = std::fs::File::open(file).with_context(|| format!("opening {}", file.display()))?;
    let mut lines = BufReader::new(f).lines();
    let (mut created, mut exists, mut failed) = (0u64, 0u64, 0u64);
    let mut first_errors: Vec<String> = Vec::new();
    let mut sent_lines = 0usize;
    loop {
        let mut body = String::new();
        let mut n = 0;
        for line in lines.by_ref() {
            let line = line.with_context(|| format!("reading {}", file.display()))?;
            sent_lines += 1;
            if line.trim().is_empty() {
                continue;
            }
            body.push_str(&line);
            body.push('\n');
            n += 1;
            if n == batch.max(1) {
                break;
            }
        }
        if n == 0 {
            break;
        }
        let first_line = sent_lines - n;
        let resp = http
            .post(format!("{base}/v1/reminders:bulk"))
            .header("content-type", "application/x-ndjson")
            .body(body)
            .send()
            .await
            .with_context(|| format!("cannot reach {base}"))?;
        let status = resp.status();
        let text = resp.text().await?;
        if !status.is_success() {
            bar.abandon();
            bail!("server answered {status} near line {first_line}: {text}");
        }
        for answer in text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        {
            match answer["status"].as_u64() {
                Some(201) => created += 1,
                Some(409) => exists += 1,
                _ => {
                    failed += 1;
                    if first_errors.len() < 5 {
                        first_errors.push(format!(
                            "request line {}: {}",
                            answer["line"], answer["error"]
                        ));
                    }
                }
            }
        }
        bar.inc(n as u64);
    }
    bar.finish();
    println!("created {created}, already subscribed {exists}, failed {failed}");
    for e in &first_errors {
        println!("  {e}");
    }
    if failed > 0 {
        bail!("{failed} lines failed");
    }
    Ok(())
}
