//! The loopback limit: how fast a bare HTTP client delivers to the bench's
//! own sink, with the server's webhook concurrency and the request Herald
//! sends (the same JSON body and `Idempotency-Key`). It is the ceiling any
//! scheduler on this machine could reach through this sink, so a drain rate
//! is read as a share of it, measured in the same run (see "Benchmarks" in
//! docs/architecture.md).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use anyhow::{Context, bail};
use herald_core::{Clock, SystemClock, time::format_rfc3339_ms};

use super::sink::Sink;

/// Sends `n` webhook deliveries to `sink` from `concurrency` tasks, answers
/// deliveries per second, and forgets them at the sink so the run's own
/// figures start from zero.
pub(super) async fn measure(sink: &Sink, n: usize, concurrency: usize) -> anyhow::Result<f64> {
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(concurrency)
        .tcp_nodelay(true)
        .build()?;
    let url = Arc::new(sink.hook_url());
    let next = Arc::new(AtomicUsize::new(0));
    let now = format_rfc3339_ms(SystemClock.now_ms());
    let began = Instant::now();
    let mut tasks = Vec::with_capacity(concurrency);
    for _ in 0..concurrency.max(1) {
        let (http, url, next, now) = (http.clone(), url.clone(), next.clone(), now.clone());
        tasks.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    return Ok::<(), anyhow::Error>(());
                }
                let body = format!(
                    "{{\"id\":{i},\"kind\":\"timer\",\"due_at\":\"{now}\",\"fired_at\":\"{now}\",\
                     \"attempt\":1,\"recipient\":\"user-{i}\",\"message\":{{\"n\":{i}}}}}"
                );
                let resp = http
                    .post(url.as_str())
                    .header("content-type", "application/json")
                    .header("idempotency-key", format!("loopback-{i}"))
                    .body(body)
                    .send()
                    .await
                    .context("loopback delivery")?;
                if !resp.status().is_success() {
                    bail!("the sink answered {} to a loopback delivery", resp.status());
                }
                resp.bytes().await.context("reading the sink's answer")?;
            }
        }));
    }
    for t in tasks {
        t.await.context("loopback task")??;
    }
    let rate = n as f64 / began.elapsed().as_secs_f64().max(1e-9);
    sink.reset();
    Ok(rate)
}
