//! `herald bench precision`: N timers spread over S seconds; how late each
//! one fires.

use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use herald_core::{Clock, SystemClock, time::format_rfc3339_ms};

use super::harness::{Deployment, ServerArgs, http_client};
use super::load::{bulk_ingest, default_lead, pct, wait_drained};
use super::sink::start_sink;

#[derive(Args, Debug)]
pub struct PrecisionArgs {
    /// Timers to create.
    #[arg(long, default_value_t = 100_000)]
    timers: usize,
    /// Seconds the timers' due times are spread over.
    #[arg(long, default_value_t = 60)]
    spread_secs: u64,
    /// Seconds between the start of ingest and the first due time; by
    /// default enough for ingest to finish first.
    #[arg(long)]
    lead_secs: Option<f64>,
    #[command(flatten)]
    pub(super) server: ServerArgs,
}

pub(super) async fn run(a: PrecisionArgs) -> anyhow::Result<()> {
    let sink = start_sink().await?;
    let server = Deployment::start(&sink, &a.server).await?;
    let http = http_client()?;
    let clock = SystemClock;
    let n = a.timers.max(1);
    let lead = a.lead_secs.unwrap_or_else(|| default_lead(n));
    let start = clock.now_ms() + (lead * 1000.0) as i64;
    let spread_ms = (a.spread_secs * 1000) as i64;
    let due = Arc::new(move |i: usize| start + (i as i64 * spread_ms) / n as i64);
    eprintln!(
        "precision: {n} timers over {} s from {}",
        a.spread_secs,
        format_rfc3339_ms(start)
    );
    let secs = bulk_ingest(&http, &server.bases(), sink.channel, n, 10_000, 2, due).await?;
    if clock.now_ms() > start {
        eprintln!(
            "WARNING: ingest ({secs:.2} s) ended after the first due time; raise --lead-secs"
        );
    }
    let timeout = Duration::from_secs_f64(lead + a.spread_secs as f64 + 120.0);
    wait_drained(&sink, &server, &http, n, timeout).await?;
    let s = sink.stats();
    println!("precision {n} timers over {} s", a.spread_secs);
    println!("  lateness at sink    {}", pct(&s.lateness_ms));
    println!("  fire lateness       {}", pct(&s.fire_lateness_ms));
    println!("  duplicates          {}", s.duplicates);
    if a.server.json {
        println!(
            "{}",
            serde_json::json!({"scenario":"precision","timers":n,"spread_secs":a.spread_secs,
                "lateness_ms":s.lateness_ms,"fire_lateness_ms":s.fire_lateness_ms})
        );
    }
    server.stop().await;
    Ok(())
}
