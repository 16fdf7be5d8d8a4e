//! `herald bench in-time` (issue 39 §4): N reminders due at one instant on a
//! channel limited to `--rate` per second, with an early window. Checks that
//! every one arrives between `due - window` and the due time and none after
//! the subject starts; with `--early-window-ms 0`, counts those that ended
//! `expired` instead. The defaults are the case: 1,000,000 reminders,
//! 5,000/s, a 5-minute window (200 s of sending).

use std::sync::Arc;
use std::time::Duration;

use anyhow::bail;
use clap::Args;
use herald_core::{Clock, SystemClock, time::format_rfc3339_ms};

use super::harness::{Deployment, ServerArgs, http_client};
use super::load::bulk_post;
use super::sink::start_sink;

#[derive(Args, Debug)]
pub struct InTimeArgs {
    /// Users subscribed to the subject.
    #[arg(long, default_value_t = 1_000_000)]
    users: usize,
    /// The channel's `rate_per_sec` (cluster-wide).
    #[arg(long, default_value_t = 5_000)]
    rate: u32,
    /// `[reminders] early_window_ms` of the server (0: never early).
    #[arg(long, default_value_t = 300_000)]
    early_window_ms: i64,
    /// Minutes before the start the reminders are due (0 to 1440; the
    /// server is configured with it as its only lead).
    #[arg(long, default_value_t = 5)]
    lead_minutes: i64,
    /// Seconds from now until the due time; by default the early window
    /// plus enough time to subscribe everyone first.
    #[arg(long)]
    due_in: Option<f64>,
    /// Subscriptions per bulk request.
    #[arg(long, default_value_t = 10_000)]
    chunk: usize,
    /// Bulk requests in flight at once.
    #[arg(long, default_value_t = 2)]
    clients: usize,
    #[command(flatten)]
    pub(super) server: ServerArgs,
}

/// Sums `herald_deliveries_total{outcome="..."}` over every node.
async fn outcome(
    http: &reqwest::Client,
    server: &Deployment,
    outcome: &str,
) -> anyhow::Result<u64> {
    let mut sum = 0u64;
    let label = format!("outcome=\"{outcome}\"");
    for base in server.bases() {
        let text = http
            .get(format!("{base}/metrics"))
            .send()
            .await?
            .text()
            .await?;
        sum += text
            .lines()
            .filter(|l| l.starts_with("herald_deliveries_total{") && l.contains(&label))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .map(|v| v as u64)
            .sum::<u64>();
    }
    Ok(sum)
}

pub(super) async fn run(mut a: InTimeArgs) -> anyhow::Result<()> {
    if !(0..=1440).contains(&a.lead_minutes) {
        bail!("--lead-minutes is 0 to 1440");
    }
    if !(0..=herald_core::early::MAX_EARLY_WINDOW_MS).contains(&a.early_window_ms) {
        bail!("--early-window-ms is 0 to 3600000");
    }
    a.server.reminders_toml = format!(
        "leads_minutes = [{}]\nearly_window_ms = {}",
        a.lead_minutes, a.early_window_ms
    );
    let sink = start_sink().await?;
    let channel = format!(
        "{}rate_per_sec = {}\n",
        sink.channel_toml(a.server.concurrency),
        a.rate
    );
    let server = Deployment::start_with_channel(&channel, &a.server).await?;
    let http = http_client()?;
    let clock = SystemClock;
    let n = a.users;
    let lead_ms = a.lead_minutes * 60_000;
    // Subscribing: budget 20k/s plus start-up, then the whole window ahead.
    let due_in = a
        .due_in
        .unwrap_or(n as f64 / 20_000.0 + 10.0 + a.early_window_ms as f64 / 1000.0);
    let due_at = clock.now_ms() + (due_in * 1000.0) as i64;
    let start_at = due_at + lead_ms;
    let resp = http
        .put(format!("{}/v1/subjects/in-time", server.base()))
        .json(&serde_json::json!({"start_at": format_rfc3339_ms(start_at), "title": "Flash sale"}))
        .send()
        .await?;
    if !resp.status().is_success() {
        bail!(
            "creating the subject: {} {}",
            resp.status(),
            resp.text().await?
        );
    }
    eprintln!(
        "in-time: {n} reminders due {} (subject starts {}), channel at {}/s, early window {} ms",
        format_rfc3339_ms(due_at),
        format_rfc3339_ms(start_at),
        a.rate,
        a.early_window_ms
    );
    let lead = a.lead_minutes;
    let lines = Arc::new(move |r: std::ops::Range<usize>| {
        let mut s = String::with_capacity(r.len() * 100);
        for i in r {
            s.push_str(&format!(
                "{{\"user_id\":\"user-{i}\",\"subject_id\":\"in-time\",\"channel_type\":\"app\",\"lead_minutes\":{lead}}}\n"
            ));
        }
        s
    });
    let secs = bulk_post(
        &http,
        &server.bases(),
        "/v1/reminders:bulk",
        n,
        a.chunk,
        a.clients,
        lines,
    )
    .await?;
    eprintln!(
        "subscribe: {n} in {secs:.1} s; {} ms before due",
        due_at - clock.now_ms()
    );
    let plan: serde_json::Value = http
        .get(format!("{}/v1/subjects/in-time", server.base()))
        .send()
        .await?
        .json()
        .await?;
    let plan = plan["early_start"].clone();
    eprintln!("plan: {plan}");
    if let Some(s) = plan[0]["start_at"].as_str()
        && herald_core::time::parse_rfc3339_ms(s).is_ok_and(|s| s < clock.now_ms())
    {
        eprintln!("WARNING: subscribing ended after the planned start; raise --due-in");
    }
    // Wait until every reminder is delivered or expired.
    let deadline = std::time::Instant::now()
        + Duration::from_secs_f64(
            due_in + lead_ms as f64 / 1000.0 + n as f64 / f64::from(a.rate.max(1)) + 120.0,
        );
    let (delivered, expired) = loop {
        let delivered = sink.delivered();
        let expired = outcome(&http, &server, "expired").await?;
        if delivered + expired >= n as u64 {
            break (delivered, expired);
        }
        if std::time::Instant::now() > deadline {
            bail!(
                "timed out: {delivered} delivered, {expired} expired of {n} (server log: {})",
                server.log_path().display()
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let stats = sink.stats();
    let first = sink.first_delivered_ms().unwrap_or(0);
    let last = sink.last_delivered_ms().unwrap_or(0);
    let window_from = due_at - a.early_window_ms;
    let in_window = first >= window_from && last <= due_at;
    let none_after_start = last <= start_at;
    println!(
        "in-time: {n} reminders due at one instant, channel {}/s, early window {} s, lead {} min (store {}, nodes {})",
        a.rate,
        a.early_window_ms / 1000,
        a.lead_minutes,
        a.server.store_kind(),
        a.server.nodes
    );
    println!("  planned start       {}", plan[0]["start_at"]);
    println!(
        "  delivered           {delivered} (duplicates {}), expired {expired}",
        stats.duplicates
    );
    println!(
        "  first delivery      {:+.3} s from due",
        (first - due_at) as f64 / 1000.0
    );
    println!(
        "  last delivery       {:+.3} s from due",
        (last - due_at) as f64 / 1000.0
    );
    println!(
        "  every delivery in [due - window, due]: {in_window}; none after the start: {none_after_start}"
    );
    if a.server.json {
        println!(
            "{}",
            serde_json::json!({"scenario":"in-time","store":a.server.store_kind(),"nodes":a.server.nodes,
                "users":n,"rate":a.rate,"early_window_ms":a.early_window_ms,"lead_minutes":a.lead_minutes,
                "delivered":delivered,"expired":expired,"duplicates":stats.duplicates,
                "first_from_due_ms":first - due_at,"last_from_due_ms":last - due_at,
                "in_window":in_window,"none_after_start":none_after_start,"plan":plan})
        );
    }
    server.stop().await;
    if !none_after_start {
        bail!("a reminder was delivered after its subject started");
    }
    Ok(())
}
