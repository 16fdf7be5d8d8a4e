//! `herald bench campaign`: one job to an uploaded audience of N
//! recipients; the upload rate, and recipients per second to the sink.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use herald_core::{Clock, SystemClock};
use herald_mock::WebhookStats;

use super::cpu::CpuMeter;
use super::harness::{Deployment, ServerArgs, http_client};
use super::sink::start_sink;

#[derive(Args, Debug)]
pub struct CampaignArgs {
    #[arg(long, default_value_t = 1_000_000)]
    recipients: usize,
    /// Recipients per segment.
    #[arg(long, default_value_t = 1_000)]
    segment_size: u64,
    /// Segment worker loops per node.
    #[arg(long, default_value_t = 4)]
    workers: usize,
    /// Sends in flight per worker.
    #[arg(long, default_value_t = 64)]
    worker_concurrency: usize,
    #[command(flatten)]
    pub(super) server: ServerArgs,
}

/// Streams `n` NDJSON recipient lines as an upload body, a block at a time.
pub(super) fn audience_body(n: usize) -> reqwest::Body {
    const BLOCK: usize = 50_000;
    let blocks = (0..n).step_by(BLOCK).map(move |from| {
        let mut s = String::with_capacity(BLOCK * 32);
        for i in from..(from + BLOCK).min(n) {
            s.push_str("{\"recipient\":\"follower-");
            s.push_str(&i.to_string());
            s.push_str("\"}\n");
        }
        Ok::<_, std::io::Error>(bytes::Bytes::from(s))
    });
    reqwest::Body::wrap_stream(futures_util::stream::iter(blocks))
}

pub(super) async fn run(mut a: CampaignArgs) -> anyhow::Result<()> {
    let sink = start_sink().await?;
    a.server.extra_toml = format!(
        "[jobs]\nworkers = {}\nworker_concurrency = {}\nsegment_size = {}\n",
        a.workers, a.worker_concurrency, a.segment_size
    );
    let server = Deployment::start(&sink, &a.server).await?;
    let http = http_client()?;
    let clock = SystemClock;
    let n = a.recipients;

    let t0 = Instant::now();
    let resp = http
        .post(format!("{}/v1/audiences?name=bench", server.base()))
        .header("content-type", "application/x-ndjson")
        .body(audience_body(n))
        .send()
        .await?;
    let status = resp.status();
    let v: serde_json::Value = resp.json().await?;
    if !status.is_success() {
        bail!("uploading the audience: {status} {v}");
    }
    let upload_s = t0.elapsed().as_secs_f64();
    let audience = v["id"].as_i64().context("audience id")?;
    eprintln!(
        "campaign: uploaded {n} recipients in {upload_s:.2} s ({:.0}/s)",
        n as f64 / upload_s
    );

    let cpu = CpuMeter::start(&server);
    let created = clock.now_ms();
    let resp = http
        .post(format!("{}/v1/jobs", server.base()))
        .json(
            &serde_json::json!({"audience_id": audience, "channel": "sink",
            "message": {"template_id": "bench", "data": {"coupon": "20% off"}},
            "segment_size": a.segment_size}),
        )
        .send()
        .await?;
    let status = resp.status();
    let job: serde_json::Value = resp.json().await?;
    if !status.is_success() {
        bail!("creating the job: {status} {job}");
    }
    let id = job["id"].as_i64().context("job id")?;
    let timeout = Duration::from_secs_f64(120.0 + n as f64 / 2_000.0);
    let deadline = Instant::now() + timeout;
    let final_job = loop {
        let j: serde_json::Value = http
            .get(format!("{}/v1/jobs/{id}", server.base()))
            .send()
            .await?
            .json()
            .await?;
        if j["state"] != "running" {
            break j;
        }
        if Instant::now() > deadline {
            bail!("the job did not finish within {timeout:?}: {j}");
        }
        eprint!(
            "\r  sent {} of {n}, {:.0}/s   ",
            j["totals"]["sent"],
            j["rate_per_sec"].as_f64().unwrap_or(0.0)
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let finished = clock.now_ms();
    eprintln!();
    let c = cpu.read();
    let s: WebhookStats = sink.stats();
    let last = s.last_delivered_at_ms.map_or(finished, |t| t as i64);
    let first = s.first_delivered_at_ms.map_or(created, |t| t as i64);
    let deliver_s = (last - created) as f64 / 1000.0;
    let done_s = (finished - created) as f64 / 1000.0;
    println!(
        "campaign: {n} recipients, segments of {} (store {}, nodes {}, workers {} x {} in flight, channel concurrency {})",
        a.segment_size,
        a.server.store_kind(),
        a.server.nodes,
        a.workers,
        a.worker_concurrency,
        a.server.concurrency
    );
    println!(
        "  upload (NDJSON)     {:.0} recipients/s ({upload_s:.2} s)",
        n as f64 / upload_s
    );
    println!(
        "  first delivery      {} ms after the job was created",
        first - created
    );
    println!(
        "  all delivered       {deliver_s:.2} s after creation  => {:.0} recipients/s to the sink",
        n as f64 / deliver_s.max(0.001)
    );
    println!(
        "  job done            {done_s:.2} s after creation (state {})",
        final_job["state"]
    );
    println!(
        "  sink: unique {}, repeated keys {}",
        s.unique_delivered, s.duplicates
    );
    println!("  cpu while sending   {}", c.describe(n));
    if a.server.json {
        println!(
            "{}",
            serde_json::json!({"scenario":"campaign","store":a.server.store_kind(),"nodes":a.server.nodes,
                "recipients":n,"upload_per_sec":n as f64/upload_s,"deliver_s":deliver_s,
                "recipients_per_sec":n as f64/deliver_s.max(0.001),"done_s":done_s,
                "unique_delivered":s.unique_delivered,"duplicates":s.duplicates,
                "server_cpu_s":c.nodes,"sink_cpu_s":c.own,"pg_cpu_s":c.pg,"other_cpu_s":c.other,
                "totals":final_job["totals"]})
        );
    }
    if s.unique_delivered != n as u64 {
        bail!("the sink saw {} of {n} recipients", s.unique_delivered);
    }
    server.stop().await;
    Ok(())
}
