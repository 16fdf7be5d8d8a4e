//! `herald bench burst`: N timers due at the same instant; how long until
//! the sink has them all and the server has marked them done.

use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use herald_core::{Clock, SystemClock, time::format_rfc3339_ms};
use herald_mock::WebhookStats;

use super::cpu::CpuMeter;
use super::harness::{Deployment, ServerArgs, http_client};
use super::load::{bulk_ingest, default_lead, pct, wait_drained};
use super::sink::{BenchChannel, start_channel_sink};

#[derive(Args, Debug)]
pub struct BurstArgs {
    /// Timers in the burst, all due at one instant.
    #[arg(long, default_value_t = 100_000)]
    timers: usize,
    /// Seconds between the start of ingest and the due instant; by default
    /// enough for ingest to finish first.
    #[arg(long)]
    lead_secs: Option<f64>,
    /// Timers per bulk request.
    #[arg(long, default_value_t = 10_000)]
    chunk: usize,
    /// Bulk requests in flight at once.
    #[arg(long, default_value_t = 2)]
    clients: usize,
    /// What the server under test delivers to: the mock's webhook sink, or
    /// the mock's WeChat Official Account API (template messages).
    #[arg(long, value_enum, default_value_t = BenchChannel::Webhook)]
    channel: BenchChannel,
    /// Deliveries a bare HTTP client sends to the sink before the burst, to
    /// measure the loopback limit the drain is read against (webhook only;
    /// default: the burst's size up to 200,000; 0 skips it).
    #[arg(long)]
    loopback: Option<usize>,
    #[command(flatten)]
    pub(super) server: ServerArgs,
}

pub(super) async fn run(a: BurstArgs) -> anyhow::Result<()> {
    let n = a.timers;
    let sink = start_channel_sink(a.channel, n).await?;
    // Before any node runs, so nothing else shares the machine with it.
    let loopback_n = match a.channel {
        BenchChannel::Webhook => a.loopback.unwrap_or(n.min(200_000)),
        BenchChannel::Wechat
        | BenchChannel::Wecom
        | BenchChannel::TencentSms
        | BenchChannel::AliyunSms
        | BenchChannel::HuaweiPush
        | BenchChannel::XiaomiPush
        | BenchChannel::HonorPush
        | BenchChannel::OppoPush
        | BenchChannel::VivoPush => 0,
    };
    let loopback = match loopback_n {
        0 => None,
        m => {
            let rate = super::loopback::measure(&sink, m, a.server.concurrency).await?;
            eprintln!(
                "loopback limit: {rate:.0} deliveries/s ({m} from a bare client, concurrency {})",
                a.server.concurrency
            );
            Some(rate)
        }
    };
    let server = Deployment::start(&sink, &a.server).await?;
    let http = http_client()?;
    let clock = SystemClock;
    let lead = a.lead_secs.unwrap_or_else(|| default_lead(n));
    let due_at = clock.now_ms() + (lead * 1000.0) as i64;
    let channel = a.channel.name();
    eprintln!(
        "burst: {n} {channel} timers due at {} ({lead:.1} s from now)",
        format_rfc3339_ms(due_at)
    );
    let secs = bulk_ingest(
        &http,
        &server.bases(),
        sink.channel,
        n,
        a.chunk,
        a.clients,
        Arc::new(move |_| due_at),
    )
    .await?;
    let slack = due_at - clock.now_ms();
    eprintln!(
        "ingest: {n} in {secs:.2} s = {:.0} timers/s; {slack} ms before due",
        n as f64 / secs
    );
    if slack < 0 {
        eprintln!("WARNING: ingest ended after the due instant; raise --lead-secs");
    }
    let timeout = Duration::from_secs_f64(lead + 120.0 + n as f64 / 5_000.0);
    if let Some(pg) = &server.pg {
        pg.reset_statements();
    }
    let cpu = CpuMeter::start(&server);
    let (delivered, done) = wait_drained(&sink, &server, &http, n, timeout).await?;
    let c = cpu.read();
    let drain_s = (done - due_at) as f64 / 1000.0;
    let deliver_s = (delivered - due_at) as f64 / 1000.0;
    println!(
        "burst {n} {channel} timers due at one instant (concurrency {}, synchronous={})",
        a.server.concurrency, a.server.synchronous
    );
    println!(
        "  ingest (bulk)       {:.0} timers/s ({secs:.2} s)",
        n as f64 / secs
    );
    println!("  all delivered       {deliver_s:.2} s after due");
    println!(
        "  all marked done     {drain_s:.2} s after due  => {:.0} timers/s",
        n as f64 / drain_s.max(0.001)
    );
    let drain_rate = n as f64 / drain_s.max(0.001);
    if let Some(limit) = loopback {
        println!(
            "  loopback limit      {limit:.0} deliveries/s => drain at {:.0}% of it",
            100.0 * drain_rate / limit
        );
    }
    let mut summary = serde_json::json!({"scenario":"burst","channel":channel,"store":a.server.store_kind(),
        "loopback_per_sec":loopback,"drain_share_of_loopback":loopback.map(|l| drain_rate / l),
        "nodes":a.server.nodes,"server_cpu_s":c.nodes,"sink_cpu_s":c.own,"pg_cpu_s":c.pg,
        "other_cpu_s":c.other,"timers":n,"ingest_per_sec":n as f64/secs,"delivered_s":deliver_s,
        "done_s":drain_s,"drain_per_sec":n as f64/drain_s.max(0.001)});
    let extra = match a.channel {
        BenchChannel::Webhook => {
            let s: WebhookStats = sink.stats();
            println!("  lateness at sink    {}", pct(&s.lateness_ms));
            println!("  fire lateness       {}", pct(&s.fire_lateness_ms));
            println!("  duplicates          {}", s.duplicates);
            serde_json::json!({"lateness_ms":s.lateness_ms,"fire_lateness_ms":s.fire_lateness_ms,
                "duplicates":s.duplicates})
        }
        BenchChannel::Wechat => {
            // The WeChat mock keeps no lateness figures; its counters are what it has.
            let w = sink.state().wechat_stats();
            println!(
                "  wechat mock         received {}, delivered {}, errors {:?}",
                w.received, w.delivered, w.errors
            );
            println!("  duplicates          {}", w.duplicates);
            println!(
                "  token fetches       {} stable_token, {} token",
                w.stable_token_fetches, w.token_fetches
            );
            serde_json::json!({"received":w.received,"delivered":w.delivered,"errors":w.errors,
                "duplicates":w.duplicates,"stable_token_fetches":w.stable_token_fetches,
                "token_fetches":w.token_fetches})
        }
        BenchChannel::Wecom => {
            let w = sink.state().wecom_stats();
            println!(
                "  wecom mock          {} calls, {} recipients delivered, errors {:?}",
                w.send_calls, w.delivered_users, w.errors
            );
            serde_json::json!({"send_calls":w.send_calls,"delivered":w.delivered_users,
                "errors":w.errors,"duplicates":w.duplicates})
        }
        BenchChannel::TencentSms => {
            let t = sink.state().tencent_sms_stats();
            println!(
                "  tencent sms mock    {} calls, {} numbers delivered, errors {:?}",
                t.send_calls, t.delivered, t.errors
            );
            serde_json::json!({"send_calls":t.send_calls,"delivered":t.delivered,"errors":t.errors})
        }
        BenchChannel::AliyunSms => {
            let t = sink.state().aliyun_sms_stats();
            println!(
                "  aliyun sms mock     {} calls, {} numbers delivered, errors {:?}",
                t.send_calls, t.delivered, t.errors
            );
            serde_json::json!({"send_calls":t.send_calls,"delivered":t.delivered,"errors":t.errors})
        }
        BenchChannel::HuaweiPush => {
            let h = sink.state().huawei_stats();
            println!(
                "  huawei mock         {} calls, {} devices delivered, {} tokens issued, refused {:?}",
                h.calls, h.delivered, h.tokens_issued, h.refused
            );
            serde_json::json!({"send_calls":h.calls,"delivered":h.delivered,
                "tokens_issued":h.tokens_issued,"refused":h.refused})
        }
        BenchChannel::XiaomiPush
        | BenchChannel::HonorPush
        | BenchChannel::OppoPush
        | BenchChannel::VivoPush => {
            let p = sink.push_stats().unwrap_or_default();
            println!(
                "  {} mock {} calls, {} devices delivered, {} tokens issued, refused {:?}",
                a.channel.name(),
                p.calls,
                p.delivered,
                p.tokens_issued,
                p.refused
            );
            serde_json::json!({"send_calls":p.calls,"delivered":p.delivered,
                "tokens_issued":p.tokens_issued,"refused":p.refused})
        }
    };
    println!("  cpu while draining  {}", c.describe(n));
    if let Some(pg) = server.pg.as_ref().filter(|_| a.server.pg_statements) {
        println!("  PostgreSQL statements while draining, by total time:");
        for line in pg.top_statements(15) {
            println!("    {line}");
        }
    }
    if let (Some(summary), Some(extra)) = (summary.as_object_mut(), extra.as_object()) {
        summary.extend(extra.clone());
    }
    if a.server.json {
        println!("{summary}");
    }
    server.stop().await;
    Ok(())
}
