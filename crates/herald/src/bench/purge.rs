//! `herald bench purge`: firing precision while retention deletes millions of
//! expired rows. The SQLite store is filled with finished timers older than
//! the retention cutoff (straight through SQL, with the server stopped), the
//! server comes back with retention on, so its sweeper starts deleting at
//! once, and timers spread over the next minute fire meanwhile. `--baseline`
//! runs the same with retention off.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use herald_core::{Clock, SystemClock, time::format_rfc3339_ms};

use super::harness::{Deployment, Node, ServerArgs, http_client};
use super::load::{bulk_ingest, default_lead, pct, wait_drained};
use super::sink::start_sink;
use super::soak::TIMERS_DELETED;

const DAY_MS: i64 = 86_400_000;

#[derive(Args, Debug)]
pub struct PurgeArgs {
    /// Finished timers, each with its send log, older than the retention
    /// cutoff when the server starts.
    #[arg(long, default_value_t = 5_000_000)]
    expired: u64,
    /// Timers fired while the sweeper deletes.
    #[arg(long, default_value_t = 100_000)]
    timers: usize,
    /// Seconds the timers are spread over.
    #[arg(long, default_value_t = 60)]
    spread_secs: u64,
    /// Seconds between the start of ingest and the first due time; by
    /// default enough for ingest to finish first.
    #[arg(long)]
    lead_secs: Option<f64>,
    /// Retention off (every kind kept for ever): the same run, nothing deleted.
    #[arg(long)]
    baseline: bool,
    /// The sweeper's `[retention] batch`: rows deleted per transaction.
    #[arg(long)]
    batch: Option<usize>,
    #[command(flatten)]
    pub(super) server: ServerArgs,
}

pub(super) async fn run(mut a: PurgeArgs) -> anyhow::Result<()> {
    if a.server.store != "sqlite" {
        bail!("bench purge fills a SQLite store directly: it needs --store sqlite");
    }
    // The expired rows finished two days ago; finished timers are kept a day.
    a.server.extra_toml.push_str(if a.baseline {
        "[retention]\ntimers = 0\njobs = 0\nsend_log = 0\naudiences = 0\nsubjects = 0\n\
         tasks = 0\naudit_log = 0\n"
    } else {
        "[retention]\ninterval_ms = 1000\ntimers = \"1d\"\n"
    });
    if let Some(batch) = a.batch {
        a.server.extra_toml.push_str(&format!("batch = {batch}\n"));
    }
    let sink = start_sink().await?;
    let mut server = Deployment::start(&sink, &a.server).await?;
    let db = server.sqlite_path().context("a SQLite store")?;
    let clock = SystemClock;

    // Fill the store while no server has it open.
    let node = server.nodes.remove(0);
    let (dir, name, key) = (node.dir.clone(), node.name.clone(), node.admin_key.clone());
    node.stop().await;
    let expired = a.expired;
    let finished_from = clock.now_ms() - 2 * DAY_MS;
    let filled = std::time::Instant::now();
    let seeded = tokio::task::spawn_blocking(move || {
        herald_store::sqlite::seed::seed_finished_timers(&db, expired, finished_from)
    })
    .await??;
    eprintln!(
        "purge: {seeded} finished timers (with their send log) written in {:.0} s; store {:.0} MiB",
        filled.elapsed().as_secs_f64(),
        server.store_bytes().unwrap_or(0) as f64 / 1_048_576.0
    );
    server
        .nodes
        .insert(0, Node::spawn(&dir, &name, key.as_deref()).await?);

    let http = http_client()?;
    let n = a.timers.max(1);
    let lead = a.lead_secs.unwrap_or_else(|| default_lead(n));
    let start = clock.now_ms() + (lead * 1000.0) as i64;
    let spread_ms = (a.spread_secs * 1000) as i64;
    let due = Arc::new(move |i: usize| start + (i as i64 * spread_ms) / n as i64);
    eprintln!(
        "purge: {n} timers over {} s from {}, retention {}",
        a.spread_secs,
        format_rfc3339_ms(start),
        if a.baseline { "off" } else { "on" }
    );
    let secs = bulk_ingest(&http, &server.bases(), sink.channel, n, 10_000, 2, due).await?;
    if clock.now_ms() > start {
        eprintln!(
            "WARNING: ingest ({secs:.2} s) ended after the first due time; raise --lead-secs"
        );
    }
    let wait = start - clock.now_ms();
    if wait > 0 {
        tokio::time::sleep(Duration::from_millis(wait as u64)).await;
    }
    let deleted_before = server.counter(&http, TIMERS_DELETED).await.unwrap_or(0.0) as u64;
    let timeout = Duration::from_secs_f64(a.spread_secs as f64 + 120.0);
    wait_drained(&sink, &server, &http, n, timeout).await?;
    let deleted_after = server.counter(&http, TIMERS_DELETED).await.unwrap_or(0.0) as u64;
    let s = sink.stats();
    let during = deleted_after.saturating_sub(deleted_before);
    println!(
        "purge: {n} timers over {} s with {seeded} expired timers stored, retention {}",
        a.spread_secs,
        if a.baseline { "off" } else { "on" }
    );
    println!("  lateness at sink    {}", pct(&s.lateness_ms));
    println!("  fire lateness       {}", pct(&s.fire_lateness_ms));
    println!("  duplicates          {}", s.duplicates);
    println!(
        "  deleted while they fired  {during} (before the first was due: {deleted_before}, in all: {deleted_after})"
    );
    if a.server.json {
        println!(
            "{}",
            serde_json::json!({"scenario":"purge","expired":seeded,"timers":n,
                "spread_secs":a.spread_secs,"retention":!a.baseline,"batch":a.batch,
                "lateness_ms":s.lateness_ms,"fire_lateness_ms":s.fire_lateness_ms,
                "deleted_before":deleted_before,"deleted_during":during,"deleted_total":deleted_after})
        );
    }
    server.stop().await;
    Ok(())
}
