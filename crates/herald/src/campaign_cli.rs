//! `herald audiences ...`, `herald rules ...` and `herald jobs ...`: a client
//! for a running server's mass sends, with a streamed audience upload and a
//! live progress bar for a job.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Subcommand;
use serde_json::{Value, json};

use crate::client::{Remote, json_flag, print_value, refusal, show};

#[derive(Subcommand, Debug)]
pub enum AudiencesCmd {
    /// Upload recipient ids from a file, streamed, with a progress bar: NDJSON
    /// (one {"recipient": "..."} per line) or, with --csv or a .csv file, CSV
    /// with the recipient in the first column (a "recipient" header is optional).
    #[command(visible_alias = "upload")]
    Create {
        /// The NDJSON or CSV file.
        file: PathBuf,
        /// A name for the audience, shown in lists.
        #[arg(long)]
        name: Option<String>,
        /// The file is CSV (the default for a file ending in .csv).
        #[arg(long)]
        csv: bool,
    },
    /// Show an audience.
    Get {
        /// The audience's id.
        id: i64,
    },
    /// Delete an audience no job or rule names.
    Delete {
        /// The audience's id.
        id: i64,
    },
    /// List audiences, oldest first; pass the answer's next_cursor for the next page.
    List {
        /// Continue from a previous answer's `next_cursor`.
        #[arg(long)]
        cursor: Option<String>,
        /// Audiences per page.
        #[arg(long)]
        limit: Option<u32>,
    },
}

#[derive(Subcommand, Debug)]
pub enum RulesCmd {
    /// Create a rule from a JSON file:
    /// {name, schedule, audience, channel, message, deadline_secs?, priority?}.
    Create {
        /// The rule, a JSON file.
        #[arg(long)]
        file: PathBuf,
    },
    /// Give a rule a new version from a JSON file (same shape as create).
    Update {
        /// The rule's id.
        id: i64,
        /// The new version, a JSON file.
        #[arg(long)]
        file: PathBuf,
    },
    /// Show a rule.
    Get {
        /// The rule's id.
        id: i64,
    },
    /// List rules.
    #[command(visible_alias = "ls")]
    List {
        /// Rules with a larger id than this.
        #[arg(long)]
        after: Option<i64>,
        /// Rules per page.
        #[arg(long)]
        limit: Option<u32>,
    },
    /// Show every version of a rule.
    Versions {
        /// The rule's id.
        id: i64,
    },
    /// Show a rule's tasks (executions), newest first, with their jobs' totals.
    Tasks {
        /// The rule's id.
        id: i64,
        /// At most this many tasks.
        #[arg(long)]
        limit: Option<u32>,
    },
    /// Enable a rule (its next occurrence is planned again).
    Enable {
        /// The rule's id.
        id: i64,
    },
    /// Disable a rule (its pending tasks are cancelled).
    Disable {
        /// The rule's id.
        id: i64,
    },
    /// The next instants a rule's schedule fires at, as the planner computes
    /// them. The file is a rule (its "schedule" is used) or a schedule object.
    Preview {
        /// A rule or a schedule, a JSON file.
        #[arg(long)]
        file: PathBuf,
        /// How many instants (1..100).
        #[arg(long, default_value_t = 10)]
        count: u32,
        /// Count from this RFC 3339 time instead of now.
        #[arg(long)]
        from: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
pub enum JobsCmd {
    /// Start a mass send to an uploaded audience or a list of users.
    Create(JobArgs),
    /// Show a job: totals, segments by state, rate and ETA.
    Get {
        /// The job's id.
        id: i64,
    },
    /// List jobs, newest first.
    #[command(visible_alias = "ls")]
    List {
        /// Jobs with a smaller id than this.
        #[arg(long)]
        before: Option<i64>,
        /// Jobs per page.
        #[arg(long)]
        limit: Option<u32>,
    },
    /// Cancel a running job.
    Cancel {
        /// The job's id.
        id: i64,
    },
    /// Delete a finished job with its segments and send log.
    Delete {
        /// The job's id.
        id: i64,
    },
    /// Send again to a job's failed recipients (a finished job runs again).
    RetryFailed {
        /// The job's id.
        id: i64,
    },
    /// Send again to a job's recipients a crash left in doubt (outcome
    /// `in_doubt`, on a channel with `in_doubt = "skip"`).
    RetryInDoubt {
        /// The job's id.
        id: i64,
    },
    /// Start a new job now to an ended job's recipients that have not read
    /// it (no `read` receipt).
    ResendUnread {
        /// The ended job's id.
        id: i64,
        /// A new message as JSON (default: the job's own).
        #[arg(long)]
        message: Option<String>,
    },
    /// A job's failed sends grouped by error.
    Failures {
        /// The job's id.
        id: i64,
    },
    /// Follow a job with a live progress bar until it ends.
    Watch {
        /// The job's id.
        id: i64,
        /// How often to poll.
        #[arg(long, default_value_t = 500)]
        interval_ms: u64,
    },
}

/// The body of `POST /v1/jobs`.
#[derive(clap::Args, Debug, Default)]
pub struct JobArgs {
    /// An uploaded audience's id...
    #[arg(long, conflicts_with = "users", required_unless_present = "users")]
    audience: Option<i64>,
    /// ...or recipients, comma-separated.
    #[arg(long, value_delimiter = ',')]
    users: Option<Vec<String>>,
    /// The channel to send through.
    #[arg(long)]
    channel: String,
    /// Message object as JSON.
    #[arg(long)]
    message: String,
    /// The audience's entries are subscribers' user ids: each is sent to
    /// that user's address from the directory (opt-outs and quiet hours apply).
    #[arg(long)]
    to: bool,
    /// With --to: the address type (app, email, sms, wechat, wecom; default:
    /// the channel's own).
    #[arg(long, requires = "to")]
    channel_type: Option<String>,
    /// What the message is about; subscribers who opted out of the topic are
    /// not sent to.
    #[arg(long)]
    topic: Option<String>,
    /// Send even inside quiet hours (never past an opt-out).
    #[arg(long)]
    critical: bool,
    /// A second message, as JSON, for the recipients who have not read this
    /// one (no `read` receipt) --follow-up-after-secs after the job ends.
    #[arg(long, value_name = "MESSAGE", requires = "follow_up_after_secs")]
    follow_up: Option<String>,
    /// With --follow-up: seconds after the job ends (1 s to 30 days).
    #[arg(long, requires = "follow_up")]
    follow_up_after_secs: Option<i64>,
    /// 0..=9; higher is sent first.
    #[arg(long)]
    priority: Option<u8>,
    /// Stop sending this many seconds from now.
    #[arg(long)]
    deadline_secs: Option<i64>,
    /// Recipients per segment.
    #[arg(long)]
    segment_size: Option<u64>,
}

impl JobArgs {
    fn body(self) -> anyhow::Result<Value> {
        let message = json_flag("message", &self.message)?;
        let mut body = json!({ "channel": self.channel, "message": message });
        match (self.audience, self.users) {
            (Some(a), _) => body["audience_id"] = a.into(),
            (None, Some(u)) => body["users"] = u.into(),
            (None, None) => bail!("give --audience ID or --users a,b,c"),
        }
        if self.to {
            let mut to = json!({});
            if let Some(t) = self.channel_type {
                to["channel_type"] = t.into();
            }
            body["to"] = to;
        }
        if let Some(t) = self.topic {
            body["topic"] = t.into();
        }
        if self.critical {
            body["critical"] = true.into();
        }
        if let Some(m) = self.follow_up {
            body["follow_up"] = json!({
                "after_secs": self.follow_up_after_secs,
                "message": json_flag("follow-up", &m)?,
                "only": "unread",
            });
        }
        if let Some(p) = self.priority {
            body["priority"] = p.into();
        }
        if let Some(d) = self.deadline_secs {
            body["deadline_secs"] = d.into();
        }
        if let Some(s) = self.segment_size {
            body["segment_size"] = s.into();
        }
        Ok(body)
    }
}

/// `println!` that does not panic when stdout is a closed pipe (`| head`).
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// The schedule of a rule document, or the document itself when it is one.
fn schedule_of(mut doc: Value) -> Value {
    match doc.get_mut("schedule") {
        Some(schedule) => schedule.take(),
        None => doc,
    }
}

fn read_json_file(file: &Path) -> anyhow::Result<Value> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not valid JSON", file.display()))
}

pub async fn audiences(remote: &Remote, cmd: AudiencesCmd) -> anyhow::Result<()> {
    let http = remote.http()?;
    let base = remote.base();
    match cmd {
        AudiencesCmd::Create { file, name, csv } => upload(&http, base, &file, name, csv).await,
        AudiencesCmd::List { cursor, limit } => {
            let resp = http
                .get(format!("{base}/v1/audiences"))
                .query(&crate::client::page_query(cursor, limit))
                .send()
                .await
                .with_context(|| format!("cannot reach {base}"))?;
            show(resp).await
        }
        AudiencesCmd::Get { id } => {
            let resp = http
                .get(format!("{base}/v1/audiences/{id}"))
                .send()
                .await
                .with_context(|| format!("cannot reach {base}"))?;
            show(resp).await
        }
        AudiencesCmd::Delete { id } => {
            let resp = http
                .delete(format!("{base}/v1/audiences/{id}"))
                .send()
                .await
                .with_context(|| format!("cannot reach {base}"))?;
            show(resp).await
        }
    }
}

/// Streams the file to `POST /v1/audiences`; the bar follows the bytes read
/// as the request body goes out.
async fn upload(
    http: &reqwest::Client,
    base: &str,
    file: &Path,
    name: Option<String>,
    csv: bool,
) -> anyhow::Result<()> {
    use tokio::io::AsyncReadExt;

    let f = tokio::fs::File::open(file)
        .await
        .with_context(|| format!("opening {}", file.display()))?;
    let len = f.metadata().await.map(|m| m.len()).unwrap_or(0);
    let csv = csv
        || file
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("csv"));
    let bar = indicatif::ProgressBar::new(len);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{elapsed_precise} [{bar:40}] {bytes}/{total_bytes} ({bytes_per_sec}, eta {eta}) {msg}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    let stream_bar = bar.clone();
    let body = futures_util::stream::unfold(Some(f), move |f| {
        let bar = stream_bar.clone();
        async move {
            let mut f = f?;
            let mut buf = vec![0u8; 256 * 1024];
            match f.read(&mut buf).await {
                Ok(0) => None,
                Ok(n) => {
                    buf.truncate(n);
                    bar.inc(n as u64);
                    Some((Ok::<Vec<u8>, std::io::Error>(buf), Some(f)))
                }
                // The error ends the body; the request fails with it.
                Err(e) => Some((Err(e), None)),
            }
        }
    });
    let mut req = http
        .post(format!("{base}/v1/audiences"))
        .header(
            "content-type",
            if csv {
                "text/csv"
            } else {
                "application/x-ndjson"
            },
        )
        .body(reqwest::Body::wrap_stream(body));
    if let Some(n) = name {
        req = req.query(&[("name", n)]);
    }
    let resp = req.send().await;
    let resp = match resp {
        Ok(r) => r,
        Err(e) => {
            bar.abandon();
            return Err(e).with_context(|| format!("uploading {} to {base}", file.display()));
        }
    };
    let status = resp.status();
    let text = resp.text().await.unwrap_or_default();
    if !status.is_success() {
        bar.abandon();
        let v = serde_json::from_str::<Value>(&text).ok();
        bail!("{}", refusal(status, v.as_ref(), &text));
    }
    bar.finish();
    let v: Value = serde_json::from_str(&text).context("the server's answer is not JSON")?;
    print_value(&json!({ "id": v["id"], "size": v["size"] }));
    Ok(())
}

pub async fn rules(remote: &Remote, cmd: RulesCmd) -> anyhow::Result<()> {
    let http = remote.http()?;
    let base = remote.base();
    let resp = match cmd {
        RulesCmd::Create { file } => {
            let body = read_json_file(&file)?;
            http.post(format!("{base}/v1/rules"))
                .json(&body)
                .send()
                .await
        }
        RulesCmd::Update { id, file } => {
            let body = read_json_file(&file)?;
            http.put(format!("{base}/v1/rules/{id}"))
                .json(&body)
                .send()
                .await
        }
        RulesCmd::Get { id } => http.get(format!("{base}/v1/rules/{id}")).send().await,
        RulesCmd::List { after, limit } => {
            let mut q: Vec<(&str, String)> = Vec::new();
            if let Some(a) = after {
                q.push(("after", a.to_string()));
            }
            if let Some(l) = limit {
                q.push(("limit", l.to_string()));
            }
            http.get(format!("{base}/v1/rules")).query(&q).send().await
        }
        RulesCmd::Versions { id } => {
            http.get(format!("{base}/v1/rules/{id}/versions"))
                .send()
                .await
        }
        RulesCmd::Tasks { id, limit } => {
            let q: Vec<(&str, String)> = limit
                .map(|l| ("limit", l.to_string()))
                .into_iter()
                .collect();
            http.get(format!("{base}/v1/rules/{id}/tasks"))
                .query(&q)
                .send()
                .await
        }
        RulesCmd::Preview { file, count, from } => {
            let doc = read_json_file(&file)?;
            let mut body = json!({ "schedule": schedule_of(doc), "count": count });
            if let Some(from) = from {
                body["from"] = Value::String(from);
            }
            http.post(format!("{base}/v1/schedules:preview"))
                .json(&body)
                .send()
                .await
        }
        RulesCmd::Enable { id } => {
            http.post(format!("{base}/v1/rules/{id}:enable"))
                .send()
                .await
        }
        RulesCmd::Disable { id } => {
            http.post(format!("{base}/v1/rules/{id}:disable"))
                .send()
                .await
        }
    }
    .with_context(|| format!("cannot reach {base}"))?;
    show(resp).await
}

pub async fn jobs(remote: &Remote, cmd: JobsCmd) -> anyhow::Result<()> {
    let http = remote.http()?;
    let base = remote.base();
    let resp = match cmd {
        JobsCmd::Create(args) => {
            http.post(format!("{base}/v1/jobs"))
                .json(&args.body()?)
                .send()
                .await
        }
        JobsCmd::Get { id } => http.get(format!("{base}/v1/jobs/{id}")).send().await,
        JobsCmd::List { before, limit } => {
            let mut q: Vec<(&str, String)> = Vec::new();
            if let Some(b) = before {
                q.push(("before", b.to_string()));
            }
            if let Some(l) = limit {
                q.push(("limit", l.to_string()));
            }
            http.get(format!("{base}/v1/jobs")).query(&q).send().await
        }
        JobsCmd::Cancel { id } => {
            http.post(format!("{base}/v1/jobs/{id}:cancel"))
                .send()
                .await
        }
        JobsCmd::Delete { id } => http.delete(format!("{base}/v1/jobs/{id}")).send().await,
        JobsCmd::RetryFailed { id } => {
            http.post(format!("{base}/v1/jobs/{id}:retry-failed"))
                .send()
                .await
        }
        JobsCmd::RetryInDoubt { id } => {
            http.post(format!("{base}/v1/jobs/{id}:retry-in-doubt"))
                .send()
                .await
        }
        JobsCmd::ResendUnread { id, message } => {
            let body = match message {
                Some(m) => {
                    serde_json::json!({ "message": json_flag("message", &m)? })
                }
                None => serde_json::json!({}),
            };
            http.post(format!("{base}/v1/jobs/{id}:resend-unread"))
                .json(&body)
                .send()
                .await
        }
        JobsCmd::Failures { id } => {
            http.get(format!("{base}/v1/jobs/{id}/failures"))
                .send()
                .await
        }
        JobsCmd::Watch { id, interval_ms } => return watch(&http, base, id, interval_ms).await,
    }
    .with_context(|| format!("cannot reach {base}"))?;
    show(resp).await
}

/// Recipients with a final outcome: what the bar counts.
fn handled(totals: &Value) -> u64 {
    ["sent", "failed", "expired", "cancelled"]
        .iter()
        .map(|k| totals[*k].as_u64().unwrap_or(0))
        .sum()
}

/// "1h02m", "3m05s", "42s".
fn human_secs(s: u64) -> String {
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

/// The bar's message: state, rate, ETA.
fn progress_message(job: &Value) -> String {
    let rate = job["rate_per_sec"].as_f64().unwrap_or(0.0);
    let eta = match job["eta_secs"].as_u64() {
        Some(s) => human_secs(s),
        None => "-".into(),
    };
    let t = &job["totals"];
    let mut msg = format!(
        "{} · {rate:.0}/s · eta {eta}",
        job["state"].as_str().unwrap_or("?")
    );
    for k in ["failed", "retrying", "expired", "cancelled"] {
        let n = t[k].as_u64().unwrap_or(0);
        if n > 0 {
            msg.push_str(&format!(" · {k} {n}"));
        }
    }
    msg
}

/// Polls `GET /v1/jobs/{id}` until the job ends, drawing its progress. A
/// server that stops answering (e.g. restarting) is waited for.
async fn watch(
    http: &reqwest::Client,
    base: &str,
    id: i64,
    interval_ms: u64,
) -> anyhow::Result<()> {
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{elapsed_precise} [{bar:40}] {pos}/{len} ({percent}%) {msg}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    let interval = Duration::from_millis(interval_ms.max(50));
    let job = loop {
        match http.get(format!("{base}/v1/jobs/{id}")).send().await {
            Ok(resp) => {
                let status = resp.status();
                let text = resp.text().await.unwrap_or_default();
                let v: Value = serde_json::from_str(&text).unwrap_or(Value::String(text));
                if status.is_success() {
                    bar.set_length(v["totals"]["total"].as_u64().unwrap_or(0));
                    bar.set_position(handled(&v["totals"]));
                    bar.set_message(progress_message(&v));
                    if v["state"] != "running" {
                        break v;
                    }
                } else if status.is_client_error() {
                    bar.abandon();
                    bail!("{}", refusal(status, Some(&v), &v.to_string()));
                } else {
                    bar.set_message(format!("server answered {status}; retrying"));
                }
            }
            Err(e) => bar.set_message(format!("cannot reach {base} ({e}); retrying")),
        }
        tokio::time::sleep(interval).await;
    };
    bar.finish();
    let t = &job["totals"];
    say!(
        "job {id} {}: sent {}, failed {}, expired {}, cancelled {} of {}",
        job["state"].as_str().unwrap_or("?"),
        t["sent"],
        t["failed"],
        t["expired"],
        t["cancelled"],
        t["total"]
    );
    say!(
        "{}",
        serde_json::to_string_pretty(
            &json!({ "id": id, "state": job["state"], "totals": t, "avg_rate_per_sec": job["avg_rate_per_sec"] })
        )?
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_maps_the_routing_and_follow_up_flags_to_the_api_fields() {
        let args = JobArgs {
            users: Some(vec!["alice".into(), "bob".into()]),
            channel: "mail".into(),
            message: r#"{"subject":"sale"}"#.into(),
            to: true,
            channel_type: Some("email".into()),
            topic: Some("promotions".into()),
            follow_up: Some(r#"{"subject":"last day"}"#.into()),
            follow_up_after_secs: Some(3600),
            ..JobArgs::default()
        };
        assert_eq!(
            args.body().unwrap(),
            json!({"channel": "mail", "message": {"subject": "sale"},
                   "users": ["alice", "bob"], "to": {"channel_type": "email"},
                   "topic": "promotions",
                   "follow_up": {"after_secs": 3600, "message": {"subject": "last day"},
                                 "only": "unread"}})
        );
    }

    #[test]
    fn the_bar_counts_final_outcomes() {
        let t = json!({"total": 10, "sent": 4, "failed": 1, "retrying": 2, "expired": 2, "cancelled": 1, "remaining": 2});
        assert_eq!(handled(&t), 8);
        let job = json!({"state": "running", "rate_per_sec": 1234.4, "eta_secs": 125, "totals": t});
        assert_eq!(
            progress_message(&job),
            "running · 1234/s · eta 2m05s · failed 1 · retrying 2 · expired 2 · cancelled 1"
        );
        assert_eq!(human_secs(3_700), "1h01m");
    }
}
