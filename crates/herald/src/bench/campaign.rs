//! `herald bench campaign`: one job to an uploaded audience of N
//! recipients; the upload rate, and recipients per second to the sink.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use herald_core::{Clock, SystemClock};

use super::cpu::CpuMeter;
use super::harness::{Deployment, ServerArgs, http_client};
use super::sink::{BenchChannel, start_channel_sink};

#[derive(Args, Debug)]
pub struct CampaignArgs {
    /// Recipients in the campaign's audience.
    #[arg(long, default_value_t = 1_000_000)]
    pub(super) recipients: usize,
    /// Recipients per segment.
    #[arg(long, default_value_t = 1_000)]
    pub(super) segment_size: u64,
    /// Segment worker loops per node.
    #[arg(long, default_value_t = 4)]
    pub(super) workers: usize,
    /// Sends in flight per worker.
    #[arg(long, default_value_t = 64)]
    pub(super) worker_concurrency: usize,
    /// `jobs.doubt_window` of the nodes (default: the server's default).
    #[arg(long)]
    pub(super) doubt_window: Option<u64>,
    /// What the job sends through: the mock's webhook sink, or the mock's
    /// WeCom API, which takes 1,000 recipients a call.
    #[arg(long, value_enum, default_value_t = BenchChannel::Webhook)]
    pub(super) channel: BenchChannel,
    /// Deliveries a bare HTTP client sends to the sink before the job, to
    /// measure the loopback limit the send rate is read against (webhook
    /// only; default: the audience's size up to 200,000; 0 skips it).
    #[arg(long)]
    pub(super) loopback: Option<usize>,
    /// The scenario name in the JSON summary (`sms` runs this one).
    #[arg(skip)]
    pub(super) scenario: Option<&'static str>,
    #[command(flatten)]
    pub(super) server: ServerArgs,
}

/// Streams `n` NDJSON recipient lines as an upload body, a block at a time.
pub(super) fn audience_body(n: usize) -> reqwest::Body {
    audience_body_of(BenchChannel::Webhook, n)
}

/// As [`audience_body`], with recipients of `channel`'s kind (phone
/// numbers for the SMS kinds).
pub(super) fn audience_body_of(channel: BenchChannel, n: usize) -> reqwest::Body {
    const BLOCK: usize = 50_000;
    let blocks = (0..n).step_by(BLOCK).map(move |from| {
        let mut s = String::with_capacity(BLOCK * 32);
        for i in from..(from + BLOCK).min(n) {
            s.push_str("{\"recipient\":\"");
            s.push_str(&channel.recipient(i));
            s.push_str("\"}\n");
        }
        Ok::<_, std::io::Error>(bytes::Bytes::from(s))
    });
    reqwest::Body::wrap_stream(futures_util::stream::iter(blocks))
}

pub(super) async fn run(mut a: CampaignArgs) -> anyhow::Result<()> {
    let n = a.recipients;
    let sink = start_channel_sink(a.channel, n).await?;
    // As many in flight as the job's sends can be.
    let in_flight = a
        .server
        .concurrency
        .min(a.workers * a.worker_concurrency * a.server.nodes)
        .max(1);
    let loopback = match (a.channel, a.loopback.unwrap_or(n.min(200_000))) {
        (BenchChannel::Webhook, m) if m > 0 => {
            let rate = super::loopback::measure(&sink, m, in_flight).await?;
            eprintln!(
                "loopback limit: {rate:.0} deliveries/s ({m} from a bare client, concurrency {in_flight})"
            );
            Some(rate)
        }
        _ => None,
    };
    a.server.extra_toml = format!(
        "[jobs]\nworkers = {}\nworker_concurrency = {}\nsegment_size = {}\n",
        a.workers, a.worker_concurrency, a.segment_size
    );
    if let Some(w) = a.doubt_window {
        a.server
            .extra_toml
            .push_str(&format!("doubt_window = {w}\n"));
    }
    let server = Deployment::start(&sink, &a.server).await?;
    let http = http_client()?;
    let clock = SystemClock;

    let t0 = Instant::now();
    let resp = http
        .post(format!("{}/v1/audiences?name=bench", server.base()))
        .header("content-type", "application/x-ndjson")
        .body(audience_body_of(a.channel, n))
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

    if let Some(pg) = &server.pg {
        pg.reset_statements();
    }
    let cpu = CpuMeter::start(&server);
    let created = clock.now_ms();
    let resp = http
        .post(format!("{}/v1/jobs", server.base()))
        .json(
            &serde_json::json!({"audience_id": audience, "channel": "sink",
            "message": a.channel.job_message(), "segment_size": a.segment_size}),
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
    let delivered = sink.delivered();
    let last = sink.last_delivered_ms().unwrap_or(finished);
    let first = sink.first_delivered_ms();
    let deliver_s = (last - created) as f64 / 1000.0;
    let done_s = (finished - created) as f64 / 1000.0;
    println!(
        "campaign: {n} {} recipients, segments of {} (store {}, nodes {}, workers {} x {} in flight, channel concurrency {})",
        a.channel.name(),
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
    if let Some(first) = first {
        println!(
            "  first delivery      {} ms after the job was created",
            first - created
        );
    }
    println!(
        "  all delivered       {deliver_s:.2} s after creation  => {:.0} recipients/s to the sink",
        n as f64 / deliver_s.max(0.001)
    );
    let rate = n as f64 / deliver_s.max(0.001);
    if let Some(limit) = loopback {
        println!(
            "  loopback limit      {limit:.0} deliveries/s => sending at {:.0}% of it",
            100.0 * rate / limit
        );
    }
    println!(
        "  job done            {done_s:.2} s after creation (state {})",
        final_job["state"]
    );
    let duplicates = match a.channel {
        BenchChannel::Webhook => {
            let s = sink.stats();
            println!(
                "  sink: unique {}, repeated keys {}",
                s.unique_delivered, s.duplicates
            );
            s.duplicates
        }
        BenchChannel::Wechat => sink.state().wechat_stats().duplicates,
        BenchChannel::Wecom => {
            let w = sink.state().wecom_stats();
            println!(
                "  wecom mock: {} calls, {} recipients delivered, {} repeated calls, errors {:?}",
                w.send_calls, w.delivered_users, w.duplicates, w.errors
            );
            w.duplicates
        }
        BenchChannel::TencentSms => {
            let t = sink.state().tencent_sms_stats();
            println!(
                "  tencent sms mock: {} calls, {} numbers delivered, at most {} a call, errors {:?}",
                t.send_calls, t.delivered, t.max_numbers_per_call, t.errors
            );
            0
        }
        BenchChannel::AliyunSms => {
            let t = sink.state().aliyun_sms_stats();
            println!(
                "  aliyun sms mock: {} calls ({} accepted), {} numbers delivered, errors {:?}",
                t.send_calls, t.accepted_calls, t.delivered, t.errors
            );
            0
        }
        BenchChannel::HuaweiPush => {
            let h = sink.state().huawei_stats();
            println!(
                "  huawei mock: {} calls ({} accepted), {} devices delivered, {} tokens issued, refused {:?}",
                h.calls, h.accepted_calls, h.delivered, h.tokens_issued, h.refused
            );
            0
        }
        BenchChannel::XiaomiPush
        | BenchChannel::HonorPush
        | BenchChannel::OppoPush
        | BenchChannel::VivoPush => {
            let p = sink.push_stats().unwrap_or_default();
            println!(
                "  {} mock: {} calls ({} accepted), {} devices delivered, {} tokens issued, refused {:?}",
                a.channel.name(),
                p.calls,
                p.accepted_calls,
                p.delivered,
                p.tokens_issued,
                p.refused
            );
            0
        }
    };
    let provider_calls = match a.channel {
        BenchChannel::TencentSms => Some(sink.state().tencent_sms_stats().send_calls),
        BenchChannel::AliyunSms => Some(sink.state().aliyun_sms_stats().send_calls),
        BenchChannel::Wecom => Some(sink.state().wecom_stats().send_calls),
        BenchChannel::HuaweiPush => Some(sink.state().huawei_stats().calls),
        BenchChannel::XiaomiPush
        | BenchChannel::HonorPush
        | BenchChannel::OppoPush
        | BenchChannel::VivoPush => sink.push_stats().map(|p| p.calls),
        BenchChannel::Webhook | BenchChannel::Wechat => None,
    };
    println!("  cpu while sending   {}", c.describe(n));
    if let Some(pg) = server.pg.as_ref().filter(|_| a.server.pg_statements) {
        println!("  PostgreSQL statements while sending, by total time:");
        for line in pg.top_statements(15) {
            println!("    {line}");
        }
    }
    if a.server.json {
        println!(
            "{}",
            serde_json::json!({"scenario":a.scenario.unwrap_or("campaign"),"channel":a.channel.name(),
                "store":a.server.store_kind(),"nodes":a.server.nodes,
                "recipients":n,"upload_per_sec":n as f64/upload_s,"deliver_s":deliver_s,
                "recipients_per_sec":rate,"done_s":done_s,"loopback_per_sec":loopback,
                "share_of_loopback":loopback.map(|l| rate / l),
                "unique_delivered":delivered,"duplicates":duplicates,"provider_calls":provider_calls,
                "server_cpu_s":c.nodes,"sink_cpu_s":c.own,"pg_cpu_s":c.pg,"other_cpu_s":c.other,
                "totals":final_job["totals"]})
        );
    }
    if delivered != n as u64 {
        bail!("the sink saw {delivered} of {n} recipients");
    }
    server.stop().await;
    Ok(())
}
