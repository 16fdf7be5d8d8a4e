//! `herald bench reminders`: N users subscribe to one subject with the same
//! lead; the subscribe rate, and how long the reminders take to drain when
//! they all fall due.

use std::sync::Arc;
use std::time::Duration;

use anyhow::bail;
use clap::Args;
use herald_core::{Clock, SystemClock, time::format_rfc3339_ms};
use herald_mock::WebhookStats;

use super::cpu::CpuMeter;
use super::harness::{Deployment, ServerArgs, http_client};
use super::load::{bulk_post, pct, wait_drained};
use super::sink::start_sink;

#[derive(Args, Debug)]
pub struct RemindersArgs {
    /// Users subscribed to the subject.
    #[arg(long, default_value_t = 100_000)]
    users: usize,
    /// Seconds from now until the subject starts; by default the lead plus
    /// enough time to subscribe everyone first.
    #[arg(long)]
    subject_start_in: Option<f64>,
    /// Minutes before the start the reminders fire: one of the default leads
    /// (5..=60, a multiple of 5), or any of 0..=1440, which the server is then
    /// configured with as its only lead.
    #[arg(long, default_value_t = 5)]
    lead_minutes: i64,
    /// First give every user a directory entry with one device token, so
    /// each reminder is resolved through the subscriber directory when it
    /// fires (compare with the same run without).
    #[arg(long)]
    directory: bool,
    /// Render every reminder from a stored template (`[reminders.templates]`)
    /// with a `default` variant and one for this locale, which every
    /// directory entry then reads in (with `--directory`); compare with the
    /// same run without, which sends Herald's reminder shape as composed.
    #[arg(long, value_name = "LOCALE")]
    template: Option<String>,
    /// The first N users also subscribe to a second subject that starts at
    /// the same instant, so N more reminders fall due with the others
    /// (merging is turned off); with `--caps`, each of those is over a
    /// cap. Needs `--directory` (only sends routed to a user are capped).
    #[arg(long, default_value_t = 0)]
    over: usize,
    /// Configure a frequency cap of one app message per user per hour
    /// (`[[caps]]`), so every `--over` reminder ends `capped`; compare with
    /// the same run without.
    #[arg(long)]
    caps: bool,
    /// Subscriptions per bulk request.
    #[arg(long, default_value_t = 10_000)]
    chunk: usize,
    /// Bulk requests in flight at once.
    #[arg(long, default_value_t = 2)]
    clients: usize,
    #[command(flatten)]
    pub(super) server: ServerArgs,
}

pub(super) async fn run(mut a: RemindersArgs) -> anyhow::Result<()> {
    if !(0..=1440).contains(&a.lead_minutes) {
        bail!("--lead-minutes is 0 to 1440");
    }
    if a.lead_minutes % 5 != 0 || a.lead_minutes == 0 || a.lead_minutes > 60 {
        a.server.reminders_toml = format!("leads_minutes = [{}]", a.lead_minutes);
    }
    if let Some(locale) = &a.template {
        if !herald_core::template::locale::valid(locale) {
            bail!("--template takes a locale tag such as zh-Hans-CN");
        }
        a.server
            .reminders_toml
            .push_str("\ntemplates = { app = \"bench-reminder\" }\n");
    }
    if a.over > a.users {
        bail!("--over is at most --users");
    }
    if (a.over > 0 || a.caps) && !a.directory {
        bail!("--over and --caps need --directory: only sends routed to a user are capped");
    }
    if a.over > 0 {
        a.server.merge_window_ms = 0;
    }
    if a.caps {
        a.server.extra_toml.push_str(
            "\n[[caps]]\nname = \"bench\"\nchannel_type = \"app\"\nmax = 1\nwindow = \"1h\"\n",
        );
    }
    let sink = start_sink().await?;
    let server = Deployment::start(&sink, &a.server).await?;
    let http = http_client()?;
    let clock = SystemClock;
    let n = a.users;
    let lead_ms = a.lead_minutes * 60_000;
    // Subscribing is slower than plain timers: budget 50k/s, plus start-up
    // (and as long again to fill the directory first).
    let setup_s = (n + a.over) as f64 / 50_000.0 * if a.directory { 2.0 } else { 1.0 };
    let start_in = a
        .subject_start_in
        .unwrap_or(lead_ms as f64 / 1000.0 + 5.0 + setup_s);
    let start_at = clock.now_ms() + (start_in * 1000.0) as i64;
    let due_at = start_at - lead_ms;
    if due_at <= clock.now_ms() {
        bail!("the reminders would be due before they are created: raise --subject-start-in");
    }
    for subject in ["bench-subject", "bench-subject-2"] {
        let resp = http
            .put(format!("{}/v1/subjects/{subject}", server.base()))
            .json(&serde_json::json!({"start_at": format_rfc3339_ms(start_at), "title": "Bench coupon"}))
            .send()
            .await?;
        if !resp.status().is_success() {
            bail!(
                "creating the subject: {} {}",
                resp.status(),
                resp.text().await?
            );
        }
    }
    if let Some(locale) = &a.template {
        let body = bench_template(locale);
        let resp = http
            .post(format!("{}/v1/templates", server.base()))
            .json(&body)
            .send()
            .await?;
        if !resp.status().is_success() {
            bail!(
                "creating the template: {} {}",
                resp.status(),
                resp.text().await?
            );
        }
    }
    eprintln!(
        "reminders: {n} users, subject starts {} ({start_in:.1} s from now), reminders due {}",
        format_rfc3339_ms(start_at),
        format_rfc3339_ms(due_at)
    );
    if a.directory {
        let locale = match &a.template {
            Some(l) => format!(",\"locale\":\"{l}\",\"timezone\":\"Asia/Shanghai\""),
            None => String::new(),
        };
        let entries = Arc::new(move |r: std::ops::Range<usize>| {
            let mut s = String::with_capacity(r.len() * 120);
            for i in r {
                s.push_str(&format!(
                    "{{\"user_id\":\"user-{i}\",\"addresses\":{{\"app\":[\"device-{i}\"]}}{locale}}}\n"
                ));
            }
            s
        });
        let secs = bulk_post(
            &http,
            &server.bases(),
            "/v1/subscribers:bulk",
            n,
            a.chunk,
            a.clients,
            entries,
        )
        .await?;
        eprintln!(
            "directory: {n} entries in {secs:.2} s = {:.0} per second",
            n as f64 / secs
        );
    }
    let lead = a.lead_minutes;
    let lines = Arc::new(move |r: std::ops::Range<usize>| {
        let mut s = String::with_capacity(r.len() * 100);
        for i in r {
            s.push_str(&format!(
                "{{\"user_id\":\"user-{i}\",\"subject_id\":\"bench-subject\",\"channel_type\":\"app\",\"lead_minutes\":{lead}}}\n"
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
    if a.over > 0 {
        let second = Arc::new(move |r: std::ops::Range<usize>| {
            let mut s = String::with_capacity(r.len() * 100);
            for i in r {
                s.push_str(&format!(
                    "{{\"user_id\":\"user-{i}\",\"subject_id\":\"bench-subject-2\",\"channel_type\":\"app\",\"lead_minutes\":{lead}}}\n"
                ));
            }
            s
        });
        bulk_post(
            &http,
            &server.bases(),
            "/v1/reminders:bulk",
            a.over,
            a.chunk,
            a.clients,
            second,
        )
        .await?;
    }
    // Every send of the burst: the second reminders are capped (failed)
    // with --caps, delivered without.
    let sends = n + a.over;
    let to_deliver = if a.caps { n } else { sends };
    let slack = due_at - clock.now_ms();
    eprintln!(
        "subscribe: {n} in {secs:.2} s = {:.0} per second; {slack} ms before due",
        n as f64 / secs
    );
    if slack < 0 {
        eprintln!("WARNING: subscribing ended after the due instant; raise --subject-start-in");
    }
    let timeout =
        Duration::from_secs_f64(slack.max(0) as f64 / 1000.0 + 120.0 + n as f64 / 5_000.0);
    let cpu = CpuMeter::start(&server);
    let (delivered, done) = wait_drained(&sink, &server, &http, to_deliver, timeout).await?;
    let done = if a.caps && a.over > 0 {
        wait_settled(&server, &http, sends, timeout).await?
    } else {
        done
    };
    let c = cpu.read();
    let s: WebhookStats = sink.stats();
    let drain_s = (done - due_at) as f64 / 1000.0;
    let capped = server
        .counter(&http, "herald_timers_failed_total")
        .await
        .unwrap_or(0.0);
    let deliver_s = (delivered - due_at) as f64 / 1000.0;
    println!(
        "reminders: {n} users of one subject, lead {} min, {} (store {}, nodes {}, concurrency {})",
        a.lead_minutes,
        match (a.directory, &a.template) {
            (true, Some(_)) => "resolved through the directory, rendered from a template",
            (true, None) => "resolved through the directory",
            (false, Some(_)) => "raw recipients, rendered from a template",
            (false, None) => "raw recipients",
        },
        a.server.store_kind(),
        a.server.nodes,
        a.server.concurrency
    );
    println!(
        "  subscribe (bulk)    {:.0} reminders/s ({secs:.2} s)",
        n as f64 / secs
    );
    println!("  all delivered       {deliver_s:.2} s after due");
    if a.over > 0 {
        println!(
            "  sends               {sends} ({} users twice; caps {}; {capped} failed or capped)",
            a.over,
            if a.caps { "on" } else { "off" }
        );
    }
    println!(
        "  all marked done     {drain_s:.2} s after due  => {:.0} reminders/s",
        sends as f64 / drain_s.max(0.001)
    );
    println!("  lateness at sink    {}", pct(&s.lateness_ms));
    println!("  duplicates          {}", s.duplicates);
    println!("  cpu while draining  {}", c.describe(sends));
    if a.server.json {
        println!(
            "{}",
            serde_json::json!({"scenario":"reminders","directory":a.directory,"template":a.template,"store":a.server.store_kind(),"nodes":a.server.nodes,
                "users":n,"over":a.over,"caps":a.caps,"sends":sends,"failed_or_capped":capped,"subscribe_per_sec":n as f64/secs,"server_cpu_s":c.nodes,"sink_cpu_s":c.own,
                "pg_cpu_s":c.pg,"other_cpu_s":c.other,"delivered_s":deliver_s,"done_s":drain_s,
                "drain_per_sec":sends as f64/drain_s.max(0.001),"lateness_ms":s.lateness_ms,
                "duplicates":s.duplicates})
        );
    }
    server.stop().await;
    Ok(())
}

/// The bench's reminder template: the fields a reminder webhook carries, in
/// a `default` variant and a `locale` one, with a local time filter.
fn bench_template(locale: &str) -> serde_json::Value {
    let part = |text: &str| {
        serde_json::json!({"webhook": {
            "user_id": "{{ user_id }}",
            "subject_id": "{{ subject.id }}",
            "text": text,
            "lead_minutes": "{{ lead_minutes }}",
        }})
    };
    let mut locales = serde_json::Map::new();
    locales.insert(
        "default".into(),
        part("{{ subject.title }} opens at {{ subject.start_at | time }}"),
    );
    locales.insert(
        locale.into(),
        part("{{ subject.title }} 将于 {{ subject.start_at | datetime('%m月%d日 %H:%M') }} 开抢"),
    );
    serde_json::json!({"name": "bench-reminder", "locales": locales})
}

/// Waits until `n` timers are settled (done, or failed as capped), then
/// returns when (unix ms).
async fn wait_settled(
    server: &Deployment,
    http: &reqwest::Client,
    n: usize,
    timeout: Duration,
) -> anyhow::Result<i64> {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let done = server
            .counter(http, "herald_timers_done_total")
            .await
            .unwrap_or(0.0);
        let failed = server
            .counter(http, "herald_timers_failed_total")
            .await
            .unwrap_or(0.0);
        if (done + failed) as usize >= n {
            return Ok(SystemClock.now_ms());
        }
        if std::time::Instant::now() > deadline {
            bail!("timed out: {done} done and {failed} failed of {n}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
