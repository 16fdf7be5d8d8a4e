//! What the scenarios send and wait for: timers and other items through the
//! bulk endpoints, and the wait until the sink has them all.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::bail;
use herald_core::{Clock, SystemClock, time::format_rfc3339_ms};
use herald_mock::Percentiles;

use super::harness::Deployment;
use super::sink::{BenchChannel, Recipients, Sink};

/// One NDJSON line per timer, due at `due(i)`.
fn ndjson(
    range: std::ops::Range<usize>,
    channel: BenchChannel,
    due: &dyn Fn(usize) -> i64,
    order: Recipients,
) -> String {
    let mut s = String::with_capacity(range.len() * 120);
    for i in range {
        s.push_str(&format!(
            "{{\"fire_at\":\"{}\",\"channel\":\"sink\",{}}}\n",
            format_rfc3339_ms(due(i)),
            channel.timer_fields_to(i, order)
        ));
    }
    s
}

/// Sends `n` timers through the bulk endpoint; returns the seconds it took.
pub(super) async fn bulk_ingest(
    http: &reqwest::Client,
    bases: &[String],
    channel: BenchChannel,
    n: usize,
    chunk: usize,
    clients: usize,
    due: Arc<dyn Fn(usize) -> i64 + Send + Sync>,
) -> anyhow::Result<f64> {
    bulk_ingest_to(
        http,
        bases,
        channel,
        n,
        chunk,
        clients,
        due,
        Recipients::Sequential,
    )
    .await
}

/// As [`bulk_ingest`], with the recipients in the given order.
#[allow(clippy::too_many_arguments)]
pub(super) async fn bulk_ingest_to(
    http: &reqwest::Client,
    bases: &[String],
    channel: BenchChannel,
    n: usize,
    chunk: usize,
    clients: usize,
    due: Arc<dyn Fn(usize) -> i64 + Send + Sync>,
    order: Recipients,
) -> anyhow::Result<f64> {
    let lines = Arc::new(move |r: std::ops::Range<usize>| ndjson(r, channel, &*due, order));
    bulk_post(http, bases, "/v1/timers:bulk", n, chunk, clients, lines).await
}

/// Sends items `0..n` to a bulk NDJSON endpoint in chunks from `clients`
/// concurrent requests, `lines` writing each chunk; every line must come
/// back `201`. Returns the seconds it took.
pub(super) async fn bulk_post(
    http: &reqwest::Client,
    bases: &[String],
    path: &'static str,
    n: usize,
    chunk: usize,
    clients: usize,
    lines: Arc<dyn Fn(std::ops::Range<usize>) -> String + Send + Sync>,
) -> anyhow::Result<f64> {
    let chunk = chunk.max(1);
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients.max(1) {
        let (http, bases, next, lines) =
            (http.clone(), bases.to_vec(), next.clone(), lines.clone());
        tasks.push(tokio::spawn(async move {
            loop {
                let start = next.fetch_add(chunk, Ordering::SeqCst);
                if start >= n {
                    return Ok::<_, anyhow::Error>(());
                }
                let body = lines(start..(start + chunk).min(n));
                // Chunks go to the nodes in turn, as a load balancer would send them.
                let base = &bases[(start / chunk) % bases.len().max(1)];
                let resp = http
                    .post(format!("{base}{path}"))
                    .header("content-type", "application/x-ndjson")
                    .body(body)
                    .send()
                    .await?;
                let status = resp.status();
                let text = resp.text().await?;
                if !status.is_success() {
                    bail!("bulk ingest answered {status}: {text}");
                }
                if let Some(bad) = text.lines().find(|l| !l.contains("\"status\":201")) {
                    bail!("bulk ingest refused a line: {bad}");
                }
            }
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok(started.elapsed().as_secs_f64())
}

/// Waits until the sink has every timer and the server has marked them done.
/// Returns (all delivered, all done) as unix ms.
pub(super) async fn wait_drained(
    sink: &Sink,
    server: &Deployment,
    http: &reqwest::Client,
    n: usize,
    timeout: Duration,
) -> anyhow::Result<(i64, i64)> {
    let clock = SystemClock;
    let deadline = Instant::now() + timeout;
    let mut last_report = Instant::now();
    loop {
        let delivered = sink.delivered();
        if delivered as usize >= n {
            break;
        }
        if Instant::now() > deadline {
            bail!(
                "timed out: {delivered} of {n} delivered (server log: {})",
                server.log_path().display()
            );
        }
        if last_report.elapsed() > Duration::from_secs(5) {
            eprintln!("  ... {delivered} of {n} delivered");
            last_report = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let delivered = sink.last_delivered_ms().unwrap_or_else(|| clock.now_ms());
    loop {
        let done = server
            .counter(http, "herald_timers_done_total")
            .await
            .unwrap_or(0.0);
        if done as usize >= n {
            return Ok((delivered, clock.now_ms()));
        }
        if Instant::now() > deadline {
            bail!("timed out: {done} of {n} marked done");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub(super) fn pct(p: &Percentiles) -> String {
    format!(
        "p50 {} ms, p99 {} ms, p99.9 {} ms, max {} ms",
        p.p50, p.p99, p.p999, p.max
    )
}

pub(super) fn default_lead(n: usize) -> f64 {
    // Room for ingest at a pessimistic 100k timers/s, plus start-up.
    3.0 + n as f64 / 100_000.0
}
