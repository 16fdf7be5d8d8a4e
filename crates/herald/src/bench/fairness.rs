//! `herald bench fairness`: tenant `a` has N timers due at one instant;
//! tenant `b` creates M timers due a second later, while `a` drains. How
//! late are b's timers, and how much does b slow a's drain? Each run is
//! measured twice on fresh servers: with b, and a alone (the baseline).
//!
//! The server is protected (an admin key), and each tenant sends through
//! its own API key with the `write` scope, as a real deployment would.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use herald_core::{Clock, SystemClock, time::format_rfc3339_ms};
use serde_json::json;

use super::harness::{Deployment, ServerArgs};
use super::load::{bulk_post, default_lead};
use super::tenant_sink::{Arrival, TenantSink};

#[derive(Args, Debug)]
pub struct FairnessArgs {
    /// Timers of tenant a, all due at one instant.
    #[arg(long, default_value_t = 200_000)]
    a_timers: usize,
    /// Timers of tenant b, created at that instant and due `--b-after-secs` later.
    #[arg(long, default_value_t = 1_000)]
    b_timers: usize,
    /// Seconds after tenant a's due instant that tenant b's timers are due.
    #[arg(long, default_value_t = 1.0)]
    b_after_secs: f64,
    /// Runs; each is reported, then the median.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Measure only a alone (the baseline), no b.
    #[arg(long)]
    without_b: bool,
    /// Seconds between the start of a's ingest and its due instant; by
    /// default enough for ingest to finish first.
    #[arg(long)]
    lead_secs: Option<f64>,
    /// Timers per bulk request.
    #[arg(long, default_value_t = 10_000)]
    chunk: usize,
    /// Bulk requests in flight at once.
    #[arg(long, default_value_t = 2)]
    clients: usize,
    #[command(flatten)]
    pub(super) server: ServerArgs,
}

/// b's lateness at the sink (arrival minus due), in ms.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Lateness {
    p50: f64,
    p99: f64,
    max: f64,
}

/// One measurement on a fresh server.
#[derive(Clone, Copy, Debug)]
struct Drain {
    /// a's timers per second from its first delivery to its last.
    a_per_sec: f64,
    /// b's figures, when b took part.
    b: Option<Lateness>,
    /// a's timers not yet delivered when b's fell due: b competed with them.
    a_left_at_b_due: Option<usize>,
}

/// One run: with b (unless `--without-b`) and a alone.
#[derive(Clone, Copy, Debug)]
struct Run {
    with_b: Option<Drain>,
    alone: Drain,
    /// Over several runs: the median of each run's own ratio. The two
    /// drains of one run are measured back to back, so their ratio cancels
    /// what the machine was doing at the time; a ratio of two medians taken
    /// from different runs would not.
    median_ratio: Option<f64>,
}

impl Run {
    /// a's drain rate with b over a's rate alone.
    fn ratio(&self) -> Option<f64> {
        self.median_ratio.or_else(|| {
            self.with_b
                .map(|w| w.a_per_sec / self.alone.a_per_sec.max(f64::MIN_POSITIVE))
        })
    }
}

pub(super) async fn run(a: FairnessArgs) -> anyhow::Result<()> {
    if a.a_timers == 0 || (!a.without_b && a.b_timers == 0) {
        bail!("--a-timers and --b-timers must be at least 1");
    }
    eprintln!(
        "fairness: tenant a {} timers due at one instant; tenant b {} timers due {:.1} s later",
        a.a_timers, a.b_timers, a.b_after_secs
    );
    let mut runs = Vec::new();
    for i in 1..=a.runs.max(1) {
        let with_b = if a.without_b {
            None
        } else {
            Some(measure(&a, true).await?)
        };
        let alone = measure(&a, false).await?;
        let run = Run {
            with_b,
            alone,
            median_ratio: None,
        };
        println!("{}", describe(&format!("run {i}"), &run));
        runs.push(run);
    }
    let median = median_run(&runs);
    println!(
        "fairness: a {} timers at one instant, b {} due {:.1} s later ({}, {} node(s), concurrency {})",
        a.a_timers,
        a.b_timers,
        a.b_after_secs,
        a.server.store_kind(),
        a.server.nodes,
        a.server.concurrency
    );
    println!(
        "{}",
        describe(&format!("median of {}", runs.len()), &median)
    );
    if a.server.json {
        let summary = json!({
            "scenario": "fairness", "store": a.server.store_kind(), "nodes": a.server.nodes,
            "a_timers": a.a_timers, "b_timers": a.b_timers, "b_after_secs": a.b_after_secs,
            "runs": runs.iter().map(run_json).collect::<Vec<_>>(),
            "median": run_json(&median),
        });
        println!("{summary}");
    }
    Ok(())
}

/// One line about a run.
fn describe(label: &str, r: &Run) -> String {
    let mut s = format!("  {label:<12}");
    if let Some(w) = r.with_b {
        if let Some(b) = w.b {
            s.push_str(&format!(
                " b lateness p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms;",
                b.p50, b.p99, b.max
            ));
        }
        s.push_str(&format!(
            " a drain {:.0}/s with b, {:.0}/s alone",
            w.a_per_sec, r.alone.a_per_sec
        ));
        if let Some(ratio) = r.ratio() {
            s.push_str(&format!(" (ratio {ratio:.3})"));
        }
        if let Some(left) = w.a_left_at_b_due {
            s.push_str(&format!("; a's backlog when b fell due {left}"));
        }
    } else {
        s.push_str(&format!(" a drain {:.0}/s alone", r.alone.a_per_sec));
    }
    s
}

fn run_json(r: &Run) -> serde_json::Value {
    let b = r.with_b.and_then(|w| w.b);
    json!({
        "a_per_sec_with_b": r.with_b.map(|w| w.a_per_sec),
        "a_per_sec_alone": r.alone.a_per_sec,
        "ratio": r.ratio(),
        "b_lateness_ms": b.map(|b| json!({"p50": b.p50, "p99": b.p99, "max": b.max})),
        "a_left_at_b_due": r.with_b.and_then(|w| w.a_left_at_b_due),
    })
}

/// The median of every figure, each taken on its own.
fn median_run(runs: &[Run]) -> Run {
    let med = |f: &dyn Fn(&Run) -> Option<f64>| -> Option<f64> {
        median(runs.iter().filter_map(f).collect())
    };
    let alone = Drain {
        a_per_sec: med(&|r| Some(r.alone.a_per_sec)).unwrap_or(0.0),
        b: None,
        a_left_at_b_due: None,
    };
    let with_b = med(&|r| r.with_b.map(|w| w.a_per_sec)).map(|a_per_sec| Drain {
        a_per_sec,
        b: (|| {
            Some(Lateness {
                p50: med(&|r| r.with_b?.b.map(|b| b.p50))?,
                p99: med(&|r| r.with_b?.b.map(|b| b.p99))?,
                max: med(&|r| r.with_b?.b.map(|b| b.max))?,
            })
        })(),
        a_left_at_b_due: med(&|r| r.with_b?.a_left_at_b_due.map(|n| n as f64)).map(|n| n as usize),
    });
    Run {
        with_b,
        alone,
        median_ratio: med(&|r| r.ratio()),
    }
}

/// The middle value (the mean of the two middle ones for an even count).
fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// Nearest-rank percentile of sorted values.
fn percentile(sorted: &[i64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1] as f64
}

fn lateness(arrivals: &[Arrival]) -> Lateness {
    let mut late: Vec<i64> = arrivals
        .iter()
        .map(|a| (a.at_ms - a.due_ms).max(0))
        .collect();
    late.sort_unstable();
    Lateness {
        p50: percentile(&late, 0.50),
        p99: percentile(&late, 0.99),
        max: late.last().copied().unwrap_or(0) as f64,
    }
}

/// Timers per second from the first arrival to the last.
fn drain_rate(arrivals: &[Arrival]) -> f64 {
    let first = arrivals.iter().map(|a| a.at_ms).min().unwrap_or(0);
    let last = arrivals.iter().map(|a| a.at_ms).max().unwrap_or(0);
    // A drain within one millisecond is counted as one millisecond.
    arrivals.len() as f64 / ((last - first).max(1) as f64 / 1000.0)
}

/// NDJSON timers of `tenant` on the `sink` channel, all due at `due_ms`.
fn timer_lines(
    tenant: &'static str,
    due_ms: i64,
) -> Arc<dyn Fn(std::ops::Range<usize>) -> String + Send + Sync> {
    let fire_at = format_rfc3339_ms(due_ms);
    Arc::new(move |range: std::ops::Range<usize>| {
        let mut s = String::with_capacity(range.len() * 110);
        for i in range {
            s.push_str(&format!(
                "{{\"fire_at\":\"{fire_at}\",\"channel\":\"sink\",\"recipient\":\"{tenant}-{i}\",\"message\":{{\"n\":{i}}}}}\n"
            ));
        }
        s
    })
}

/// Creates a `write` key for `tenant` with the admin key; an HTTP client
/// that sends it.
async fn tenant_client(server: &Deployment, tenant: &str) -> anyhow::Result<reqwest::Client> {
    let http = super::harness::http_client()?;
    let resp = server
        .as_admin(http.post(format!("{}/v1/keys", server.base())))
        .json(&json!({"tenant": tenant, "scopes": ["write"], "name": format!("bench-{tenant}")}))
        .send()
        .await?;
    let status = resp.status();
    let v: serde_json::Value = resp.json().await.unwrap_or_default();
    let key = v["key"]
        .as_str()
        .filter(|_| status.is_success())
        .with_context(|| format!("creating a key for tenant {tenant} answered {status}: {v}"))?;
    let mut auth = reqwest::header::HeaderValue::from_str(&format!("Bearer {key}"))?;
    auth.set_sensitive(true);
    let headers = reqwest::header::HeaderMap::from_iter([(reqwest::header::AUTHORIZATION, auth)]);
    Ok(reqwest::Client::builder()
        .default_headers(headers)
        .pool_max_idle_per_host(256)
        .tcp_nodelay(true)
        .build()?)
}

/// A fresh sink and server; a's timers, and b's if `with_b`; waits until
/// every one has arrived.
async fn measure(a: &FairnessArgs, with_b: bool) -> anyhow::Result<Drain> {
    let clock = SystemClock;
    let sink = TenantSink::start().await?;
    let mut server_args = a.server.clone();
    server_args.admin_key = Some(format!(
        "bench-admin-{:032x}{:032x}",
        rand::random::<u128>(),
        rand::random::<u128>()
    ));
    let server =
        Deployment::start_with_channel(&sink.channel_toml(a.server.concurrency), &server_args)
            .await?;
    let http_a = tenant_client(&server, "a").await?;
    let http_b = tenant_client(&server, "b").await?;
    let bases = server.bases();
    let lead = a.lead_secs.unwrap_or_else(|| default_lead(a.a_timers));
    let due_a = clock.now_ms() + (lead * 1000.0) as i64;
    let due_b = due_a + (a.b_after_secs * 1000.0) as i64;
    let secs = bulk_post(
        &http_a,
        &bases,
        "/v1/timers:bulk",
        a.a_timers,
        a.chunk,
        a.clients,
        timer_lines("a", due_a),
    )
    .await?;
    let slack = due_a - clock.now_ms();
    eprintln!(
        "  {}: a's {} timers in {secs:.2} s; {slack} ms before due",
        if with_b { "with b" } else { "a alone" },
        a.a_timers
    );
    if slack < 0 {
        eprintln!("WARNING: a's ingest ended after its due instant; raise --lead-secs");
    }
    let mut a_left_at_b_due = None;
    if with_b {
        // b arrives when a's timers fall due, as a second service would.
        sleep_until(due_a).await;
        let started = clock.now_ms();
        bulk_post(
            &http_b,
            &bases,
            "/v1/timers:bulk",
            a.b_timers,
            a.b_timers,
            1,
            timer_lines("b", due_b),
        )
        .await?;
        let took = clock.now_ms() - started;
        if clock.now_ms() > due_b {
            eprintln!("WARNING: creating b's timers took {took} ms, past their due instant");
        }
        sleep_until(due_b).await;
        let left = a.a_timers.saturating_sub(sink.arrivals.count("a"));
        if left == 0 {
            eprintln!("WARNING: a had drained before b's timers fell due; raise --a-timers");
        }
        a_left_at_b_due = Some(left);
    }
    let b_timers = if with_b { a.b_timers } else { 0 };
    let timeout = Duration::from_secs_f64(lead + 120.0 + a.a_timers as f64 / 5_000.0);
    let waited = wait_arrived(&sink, a.a_timers, b_timers, timeout).await;
    let a_arrivals = sink.arrivals.of("a");
    let b_arrivals = sink.arrivals.of("b");
    let log = server.log_path();
    server.stop().await;
    sink.stop().await;
    waited.with_context(|| format!("server log: {}", log.display()))?;
    Ok(Drain {
        a_per_sec: drain_rate(&a_arrivals),
        b: with_b.then(|| lateness(&b_arrivals)),
        a_left_at_b_due,
    })
}

async fn sleep_until(unix_ms: i64) {
    let wait = unix_ms - SystemClock.now_ms();
    if wait > 0 {
        tokio::time::sleep(Duration::from_millis(wait as u64)).await;
    }
}

/// Waits until the sink has `a` of tenant a's timers and `b` of b's.
async fn wait_arrived(
    sink: &TenantSink,
    a: usize,
    b: usize,
    timeout: Duration,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + timeout;
    let mut last_report = Instant::now();
    loop {
        let (got_a, got_b) = (sink.arrivals.count("a"), sink.arrivals.count("b"));
        if got_a >= a && got_b >= b {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("timed out: a {got_a} of {a}, b {got_b} of {b} delivered");
        }
        if last_report.elapsed() > Duration::from_secs(5) {
            eprintln!("  ... a {got_a} of {a}, b {got_b} of {b} delivered");
            last_report = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arrivals(late: &[i64]) -> Vec<Arrival> {
        late.iter()
            .enumerate()
            .map(|(i, l)| Arrival {
                due_ms: 1_000 + i as i64,
                at_ms: 1_000 + i as i64 + l,
            })
            .collect()
    }

    #[test]
    fn lateness_takes_nearest_rank_percentiles() {
        let late: Vec<i64> = (1..=100).collect();
        assert_eq!(
            lateness(&arrivals(&late)),
            Lateness {
                p50: 50.0,
                p99: 99.0,
                max: 100.0
            }
        );
        // An early arrival (clock skew) counts as on time.
        assert_eq!(lateness(&arrivals(&[-5])).max, 0.0);
    }

    #[test]
    fn drain_rate_spans_first_to_last_arrival() {
        let a: Vec<Arrival> = (0..1001)
            .map(|i| Arrival {
                due_ms: 0,
                at_ms: i,
            })
            .collect();
        assert_eq!(drain_rate(&a), 1001.0);
    }

    #[test]
    fn the_median_run_takes_each_figure_on_its_own() {
        let run = |with: f64, alone: f64, p99: f64| Run {
            with_b: Some(Drain {
                a_per_sec: with,
                b: Some(Lateness {
                    p50: 1.0,
                    p99,
                    max: p99,
                }),
                a_left_at_b_due: Some(10),
            }),
            alone: Drain {
                a_per_sec: alone,
                b: None,
                a_left_at_b_due: None,
            },
            median_ratio: None,
        };
        let m = median_run(&[
            run(90.0, 100.0, 5.0),
            run(95.0, 99.0, 50.0),
            run(80.0, 101.0, 7.0),
        ]);
        assert_eq!(m.alone.a_per_sec, 100.0);
        let w = m.with_b.unwrap();
        assert_eq!((w.a_per_sec, w.b.unwrap().p99), (90.0, 7.0));
        // The ratio is the median of the runs' own ratios (0.9, 0.96, 0.79),
        // not 90 / 100.
        assert_eq!(m.ratio(), Some(0.9));
        assert_eq!(median(vec![1.0, 3.0]), Some(2.0));
        assert_eq!(median(vec![]), None);
    }
}
