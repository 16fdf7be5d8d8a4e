//! `herald bench stats`: how fast `GET /v1/stats` answers with N timers in
//! the store. It ingests N timers through the bulk endpoint (`--done` of
//! them due at once, so they fire and end `done`; the rest a day out), waits
//! until the counts say so, then times `--calls` calls one after another and
//! prints the median, p99 and slowest.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use herald_core::{Clock, SystemClock};
use serde_json::{Value, json};

use super::console::quantile;
use super::harness::{Deployment, ServerArgs, http_client};
use super::load::bulk_ingest;
use super::sink::{Sink, start_sink};

#[derive(Args, Debug)]
pub struct StatsArgs {
    /// Timers in the store.
    #[arg(long, default_value_t = 1_000_000)]
    timers: usize,
    /// How many of them fire at once and end `done` before the timing.
    #[arg(long, default_value_t = 10_000)]
    done: usize,
    /// Timed calls (after ten untimed ones).
    #[arg(long, default_value_t = 200)]
    calls: usize,
    /// The budget the median is checked against, in ms.
    #[arg(long, default_value_t = 50.0)]
    budget_ms: f64,
    #[command(flatten)]
    pub(super) server: ServerArgs,
}

pub(super) async fn run(mut a: StatsArgs) -> anyhow::Result<()> {
    let sink = start_sink().await?;
    // The sampler counts as in production (the gauges, and the fold).
    a.server.stats_interval_ms = 1_000;
    let server = Deployment::start(&sink, &a.server).await?;
    let result = measure(&a, &server, &sink).await;
    server.stop().await;
    result
}

async fn measure(a: &StatsArgs, server: &Deployment, sink: &Sink) -> anyhow::Result<()> {
    let http = http_client()?;
    let n = a.timers.max(a.done);
    let done = a.done;
    let now = SystemClock.now_ms();
    let later = now + 86_400_000;
    eprintln!("stats: ingesting {n} timers ({done} due now)");
    let secs = bulk_ingest(
        &http,
        &server.bases(),
        sink.channel,
        n,
        10_000,
        2,
        Arc::new(move |i| if i < done { now } else { later }),
    )
    .await?;
    eprintln!("ingest: {n} in {secs:.1} s");

    let url = format!("{}/v1/stats", server.base());
    let call = || async {
        let started = Instant::now();
        let resp = server.as_admin(http.get(&url)).send().await?;
        let status = resp.status();
        let body: Value = resp.json().await.context("reading /v1/stats")?;
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        if !status.is_success() {
            bail!("/v1/stats answered {status}: {body}");
        }
        anyhow::Ok((body, ms))
    };
    // Until the due timers are done: the counts then hold every state the
    // bench made, and nothing changes while it times.
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let (body, _) = call().await?;
        let t = &body["timers"];
        let (pending, finished) = (t["pending"].as_u64(), t["done"].as_u64());
        if pending == Some((n - done) as u64) && finished == Some(done as u64) {
            break;
        }
        if Instant::now() > deadline {
            bail!("the counts did not reach {n} timers, {done} done, within 600 s: {t}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for _ in 0..10 {
        call().await?;
    }
    let mut ms = Vec::with_capacity(a.calls);
    for _ in 0..a.calls {
        ms.push(call().await?.1);
    }
    let (p50, p99) = (quantile(&ms, 0.5), quantile(&ms, 0.99));
    let max = ms.iter().copied().fold(0.0, f64::max);
    let verdict = if p50 <= a.budget_ms { "within" } else { "OVER" };
    println!(
        "GET /v1/stats with {n} timers ({} pending, {done} done), {} calls",
        n - done,
        a.calls
    );
    println!(
        "  median {p50:.2} ms   p99 {p99:.2} ms   max {max:.2} ms   ({verdict} the {} ms budget)",
        a.budget_ms
    );
    if a.server.json {
        println!(
            "{}",
            json!({"scenario": "stats", "store": a.server.store_kind(), "timers": n, "done": done,
                "calls": a.calls, "ingest_s": secs, "median_ms": p50, "p99_ms": p99, "max_ms": max,
                "budget_ms": a.budget_ms})
        );
    }
    Ok(())
}
