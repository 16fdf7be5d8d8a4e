//! `herald bench restart`: N timers pending, `kill -9`, restart; how soon
//! firing resumes, and the server's memory.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::bail;
use clap::Args;
use herald_core::{Clock, SystemClock, time::format_rfc3339_ms};

use super::harness::{Deployment, Node, ServerArgs, http_client};
use super::load::bulk_ingest;
use super::sink::start_sink;

#[derive(Args, Debug)]
pub struct RestartArgs {
    /// Timers pending in the store at the restart.
    #[arg(long, default_value_t = 1_000_000)]
    timers: usize,
    /// How many of them are overdue when the server comes back.
    #[arg(long, default_value_t = 1_000)]
    overdue: usize,
    #[command(flatten)]
    pub(super) server: ServerArgs,
}

pub(super) async fn run(a: RestartArgs) -> anyhow::Result<()> {
    let sink = start_sink().await?;
    let server = Deployment::start(&sink, &a.server).await?;
    let http = http_client()?;
    let clock = SystemClock;
    let n = a.timers.max(a.overdue);
    let overdue = a.overdue;
    // The first `overdue` timers fall due while the server is down; the rest
    // are an hour out and only have to be held, not loaded.
    // Bulk ingest on SQLite runs at 80–150k timers a second on 2 cores;
    // the guess leaves room for the slow end (10M: about 3 minutes).
    let ingest_secs_guess = 5.0 + n as f64 / 60_000.0;
    let soon = clock.now_ms() + (ingest_secs_guess * 1000.0) as i64;
    let later = clock.now_ms() + 3_600_000;
    eprintln!(
        "restart: ingesting {n} timers ({overdue} due at {})",
        format_rfc3339_ms(soon)
    );
    let secs = bulk_ingest(
        &http,
        &server.bases(),
        sink.channel,
        n,
        10_000,
        2,
        Arc::new(move |i| if i < overdue { soon } else { later }),
    )
    .await?;
    eprintln!("ingest: {n} in {secs:.1} s");
    if clock.now_ms() >= soon {
        bail!("ingest took longer than planned; the overdue timers fired before the kill");
    }
    // Crash before they are due; come back after.
    let mut server = server;
    let node = &mut server.nodes[0];
    node.child.start_kill()?;
    node.child.wait().await?;
    let pause = soon + 500 - clock.now_ms();
    if pause > 0 {
        tokio::time::sleep(Duration::from_millis(pause as u64)).await;
    }
    let started = Instant::now();
    *node = Node::spawn(
        &node.dir.clone(),
        &node.name.clone(),
        node.admin_key.as_deref(),
    )
    .await?;
    let listening = started.elapsed();
    let deadline = started + Duration::from_secs(120);
    while sink.unique_delivered() == 0 {
        if Instant::now() > deadline {
            bail!(
                "nothing fired within 120 s of the restart (server log: {})",
                server.log_path().display()
            );
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let first = started.elapsed();
    while (sink.unique_delivered() as usize) < overdue {
        if Instant::now() > deadline {
            bail!(
                "only {} of {overdue} overdue timers fired",
                sink.unique_delivered()
            );
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let all = started.elapsed();
    let rss = server.nodes[0].rss_bytes().unwrap_or(0);
    println!("restart with {n} timers pending ({overdue} overdue), after kill -9");
    println!(
        "  listening           {:.0} ms after spawn",
        listening.as_secs_f64() * 1000.0
    );
    println!(
        "  first delivery      {:.0} ms after spawn",
        first.as_secs_f64() * 1000.0
    );
    println!(
        "  all {overdue} overdue     {:.0} ms after spawn",
        all.as_secs_f64() * 1000.0
    );
    println!("  server RSS          {:.0} MiB", rss as f64 / 1048576.0);
    if a.server.json {
        println!(
            "{}",
            serde_json::json!({"scenario":"restart","timers":n,"overdue":overdue,
                "listening_ms":listening.as_millis() as u64,"first_ms":first.as_millis() as u64,
                "all_overdue_ms":all.as_millis() as u64,"rss_bytes":rss})
        );
    }
    server.stop().await;
    Ok(())
}
