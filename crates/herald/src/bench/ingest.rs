//! `herald bench ingest`: the timer creation rate, by single
//! `POST /v1/timers` or through the bulk endpoint.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use anyhow::bail;
use clap::Args;
use herald_core::{Clock, SystemClock, time::format_rfc3339_ms};

use super::harness::{Deployment, ServerArgs, http_client};
use super::load::bulk_ingest_to;
use super::sink::{Recipients, start_sink};

#[derive(Args, Debug)]
pub struct IngestArgs {
    /// Timers to create.
    #[arg(long, default_value_t = 100_000)]
    timers: usize,
    /// Concurrent HTTP clients.
    #[arg(long, default_value_t = 64)]
    clients: usize,
    /// Use `POST /v1/timers:bulk` with this many timers per request instead of
    /// single requests.
    #[arg(long)]
    bulk: Option<usize>,
    /// The order of the recipients: `sequential` (`user-1`, `user-2`, ...)
    /// or `scattered`, as a real audience's ids arrive.
    #[arg(long, value_enum, default_value_t = Recipients::Sequential)]
    recipients: Recipients,
    #[command(flatten)]
    pub(super) server: ServerArgs,
}

pub(super) async fn run(a: IngestArgs) -> anyhow::Result<()> {
    let sink = start_sink().await?;
    let server = Deployment::start(&sink, &a.server).await?;
    let http = http_client()?;
    let n = a.timers;
    // Due in an hour: nothing fires while ingest is measured.
    let due = SystemClock.now_ms() + 3_600_000;
    let (mode, secs) = match a.bulk {
        Some(chunk) => {
            let secs = bulk_ingest_to(
                &http,
                &server.bases(),
                sink.channel,
                n,
                chunk,
                a.clients,
                Arc::new(move |_| due),
                a.recipients,
            )
            .await?;
            (
                format!(
                    "bulk, {chunk} per request, {} clients, {} recipients",
                    a.clients,
                    a.recipients.as_str()
                ),
                secs,
            )
        }
        None => (
            format!(
                "single POST, {} clients, {} recipients",
                a.clients,
                a.recipients.as_str()
            ),
            single_ingest(&http, server.base(), n, a.clients, due, a.recipients).await?,
        ),
    };
    println!("ingest {n} timers ({mode})");
    println!("  {:.0} timers/s ({secs:.2} s)", n as f64 / secs);
    if a.server.json {
        println!(
            "{}",
            serde_json::json!({"scenario":"ingest","mode":mode,"recipients":a.recipients.as_str(),"timers":n,"per_sec":n as f64/secs})
        );
    }
    server.stop().await;
    Ok(())
}

async fn single_ingest(
    http: &reqwest::Client,
    base: &str,
    n: usize,
    clients: usize,
    due: i64,
    order: Recipients,
) -> anyhow::Result<f64> {
    let next = Arc::new(AtomicUsize::new(0));
    let fire_at = format_rfc3339_ms(due);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients.max(1) {
        let (http, url, next, fire_at) = (
            http.clone(),
            format!("{base}/v1/timers"),
            next.clone(),
            fire_at.clone(),
        );
        tasks.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= n {
                    return Ok::<_, anyhow::Error>(());
                }
                let body = format!(
                    "{{\"fire_at\":\"{fire_at}\",\"channel\":\"sink\",\"recipient\":\"{}\",\"message\":{{\"n\":{i}}}}}",
                    order.name("user-", i)
                );
                let resp = http.post(&url).header("content-type", "application/json").body(body).send().await?;
                if resp.status() != reqwest::StatusCode::CREATED {
                    bail!("create answered {}: {}", resp.status(), resp.text().await.unwrap_or_default());
                }
                let _ = resp.bytes().await;
            }
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok(started.elapsed().as_secs_f64())
}
