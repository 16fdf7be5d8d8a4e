//! `herald timers ...`: a small client for a running server, and what every
//! client command shares: the server's address and the key to send.

use anyhow::{Context, bail};
use clap::Subcommand;

/// Where a client command sends its requests, and with which key. Both may
/// come anywhere on the line (`herald timers get 7 --server URL` too).
#[derive(clap::Args, Clone)]
pub struct Remote {
    #[arg(
        long,
        global = true,
        env = "HERALD_SERVER",
        default_value = "http://127.0.0.1:8780"
    )]
    pub server: String,
    /// API key (or the admin key), sent as `Authorization: Bearer KEY`.
    #[arg(long, global = true, env = "HERALD_KEY", hide_env_values = true)]
    pub key: Option<String>,
}

impl Remote {
    pub fn base(&self) -> &str {
        self.server.trim_end_matches('/')
    }

    /// An HTTP client that sends the key, if there is one, with every request.
    pub fn http(&self) -> anyhow::Result<reqwest::Client> {
        let mut headers = reqwest::header::HeaderMap::new();
        if let Some(key) = &self.key {
            let mut value =
                reqwest::header::HeaderValue::from_str(&format!("Bearer {}", key.trim()))
                    .context("--key holds characters an HTTP header cannot carry")?;
            value.set_sensitive(true);
            headers.insert(reqwest::header::AUTHORIZATION, value);
        }
        reqwest::Client::builder()
            .default_headers(headers)
            .build()
            .context("building the HTTP client")
    }
}

/// Never prints the key.
impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote")
            .field("server", &self.server)
            .field("key", &self.key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

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
}

pub async fn run(remote: &Remote, cmd: TimersCmd) -> anyhow::Result<()> {
    let http = remote.http()?;
    let base = remote.base();
    let resp = match cmd {
        TimersCmd::Add { channel, recipient, message, delay_ms, fire_at, idempotency_key, priority } => {
            let message: serde_json::Value =
                serde_json::from_str(&message).context("--message is not valid JSON")?;
            let mut body = serde_json::json!({ "channel": channel, "recipient": recipient, "message": message });
            if let Some(d) = delay_ms {
                body["delay_ms"] = d.into();
            }
            if let Some(f) = fire_at {
                body["fire_at"] = f.into();
            }
            if delay_ms.is_none() && body.get("fire_at").is_none() {
                body["delay_ms"] = 0.into();
            }
            if let Some(k) = idempotency_key {
                body["idempotency_key"] = k.into();
            }
            if let Some(p) = priority {
                body["priority"] = p.into();
            }
            http.post(format!("{base}/v1/timers")).json(&body).send().await
        }
        TimersCmd::Get { id } => http.get(format!("{base}/v1/timers/{id}")).send().await,
        TimersCmd::Cancel { id } => http.delete(format!("{base}/v1/timers/{id}")).send().await,
        TimersCmd::Deliveries { id } => http.get(format!("{base}/v1/timers/{id}/deliveries")).send().await,
    }
    .with_context(|| format!("cannot reach {base}"))?;
    show(resp).await
}

/// Prints a server's answer (pretty JSON when it is JSON); a non-2xx is an error.
pub async fn show(resp: reqwest::Response) -> anyhow::Result<()> {
    let status = resp.status();
    let text = resp.text().await?;
    let pretty = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| serde_json::to_string_pretty(&v).ok())
        .unwrap_or(text);
    println!("{pretty}");
    if !status.is_success() {
        bail!("server answered {status}");
    }
    Ok(())
}
