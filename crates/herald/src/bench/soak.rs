//! `herald bench soak`: timers created at a steady rate, each due a moment
//! later, with a short `[retention]` for finished timers. Samples the store's
//! size on disk, the server's RSS and the p99 lateness of each window, to show
//! whether they stay flat once retention deletes as fast as timers finish.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::bail;
use clap::Args;
use herald_core::{Clock, SystemClock};
use herald_engine::retention::parse_keep;
use serde::Serialize;

use super::harness::{Deployment, ServerArgs, http_client};
use super::load::bulk_ingest;
use super::plot::{Panel, draw_panels};
use super::sink::{Sink, start_sink};

/// The retention counter of finished timers on `/metrics`.
pub(super) const TIMERS_DELETED: &str = "herald_retention_deleted_total{kind=\"timers\"}";

/// How often the creator sends the timers that are due to be created.
const CREATE_TICK: Duration = Duration::from_millis(100);

const MIB: f64 = 1_048_576.0;

#[derive(Args, Debug)]
pub struct SoakArgs {
    /// Timers created per second, steadily.
    #[arg(long, default_value_t = 500)]
    rate: u64,
    /// How long timers are created, in minutes.
    #[arg(long, default_value_t = 10.0)]
    minutes: f64,
    /// How long finished timers are kept (the server's `[retention] timers`),
    /// e.g. `60s`; short, so the run spans several periods.
    #[arg(long, default_value = "60s")]
    retention: String,
    /// How long after its creation each timer is due, in milliseconds.
    #[arg(long, default_value_t = 2_000)]
    lead_ms: u64,
    /// Seconds between samples.
    #[arg(long, default_value_t = 5)]
    sample_secs: u64,
    /// Draw size, RSS and p99 lateness over time into this PNG.
    #[arg(long)]
    plot: Option<PathBuf>,
    #[command(flatten)]
    pub(super) server: ServerArgs,
}

/// One sampling window.
#[derive(Debug, Clone, Serialize)]
struct Sample {
    /// Seconds since creation began, at the end of the window.
    t_s: f64,
    /// The store's size on disk (`None` where the bench cannot see it).
    store_bytes: Option<u64>,
    rss_bytes: Option<u64>,
    /// Deliveries the sink took in the window.
    delivered: u64,
    /// Lateness at the sink (receipt − due) of the window's deliveries.
    p50_ms: u64,
    p99_ms: u64,
    max_ms: u64,
    /// Timers created so far.
    created: u64,
    /// Finished timers retention has deleted so far.
    deleted: u64,
}

pub(super) async fn run(mut a: SoakArgs) -> anyhow::Result<()> {
    let keep = parse_keep(&a.retention).map_err(|e| anyhow::anyhow!("--retention: {e}"))?;
    if keep.forever() {
        bail!("--retention must be longer than 0: the soak measures what retention deletes");
    }
    if a.rate == 0 || a.minutes <= 0.0 {
        bail!("--rate and --minutes must be above 0");
    }
    let retention_s = keep.0.as_secs_f64();
    // A few sweeps per period, so a finished timer lives at most a little
    // longer than the period.
    let interval_ms = (keep.0.as_millis() as u64 / 6).clamp(1_000, 60_000);
    a.server.extra_toml.push_str(&format!(
        "[retention]\ninterval_ms = {interval_ms}\ntimers = {}\n",
        keep.0.as_secs()
    ));
    let sink = start_sink().await?;
    let server = Deployment::start(&sink, &a.server).await?;
    let http = http_client()?;
    eprintln!(
        "soak: {} timers/s for {} min, each due {} ms after creation, finished timers kept {} s \
         (swept every {} ms), store {}",
        a.rate,
        a.minutes,
        a.lead_ms,
        keep.0.as_secs(),
        interval_ms,
        a.server.store_kind()
    );
    let created = Arc::new(AtomicU64::new(0));
    let run_for = Duration::from_secs_f64(a.minutes * 60.0);
    let started = Instant::now();
    let creator = tokio::spawn(create_steadily(
        http.clone(),
        server.bases(),
        sink.channel,
        a.rate,
        a.lead_ms,
        run_for,
        created.clone(),
    ));
    // The last timers are due `lead` after creation ends: sample until then.
    let end = started + run_for + Duration::from_millis(a.lead_ms) + Duration::from_secs(2);
    let step = Duration::from_secs(a.sample_secs.max(1));
    let mut samples = Vec::new();
    sink.reset();
    let mut next = started + step;
    while next <= end + step {
        tokio::time::sleep_until(next.into()).await;
        if creator.is_finished() && Instant::now() < started + run_for {
            // It stopped early: that is an error, surfaced below.
            break;
        }
        let s = sample(&sink, &server, &http, started, &created).await;
        print_sample(&s);
        samples.push(s);
        next += step;
    }
    creator.await??;
    // The sink's per-window counts can miss a delivery that lands between a
    // window's read and its reset; the server's count of done timers cannot.
    let total: u64 = samples.iter().map(|s| s.delivered).sum();
    let done = server
        .counter(&http, "herald_timers_done_total")
        .await
        .unwrap_or(0.0) as u64;
    let made = created.load(Ordering::Relaxed);
    let summary = Summary::of(&samples, retention_s);
    println!(
        "soak: {made} timers created at {}/s over {} min, {done} done ({total} counted at the sink), finished timers kept {} s, store {}",
        a.rate,
        a.minutes,
        keep.0.as_secs(),
        a.server.store_kind()
    );
    summary.print();
    if a.server.json {
        println!(
            "{}",
            serde_json::json!({"scenario":"soak","rate":a.rate,"minutes":a.minutes,
                "retention_s":keep.0.as_secs(),"store":a.server.store_kind(),"created":made,
                "done":done,"delivered":total,"samples":samples,"summary":summary})
        );
    }
    if let Some(path) = &a.plot {
        let title = format!(
            "herald bench soak: {}/s for {} min, retention {} s, {}",
            a.rate,
            a.minutes,
            keep.0.as_secs(),
            a.server.store_kind()
        );
        draw(path, &title, &samples, retention_s)?;
        eprintln!("plot written to {}", path.display());
    }
    server.stop().await;
    if done < made {
        bail!("{} of {made} timers were not done in time", made - done);
    }
    Ok(())
}

/// Creates `rate` timers a second for `run_for`, each due `lead_ms` after
/// it is sent, in one bulk request per tick; `created` counts them.
async fn create_steadily(
    http: reqwest::Client,
    bases: Vec<String>,
    channel: super::sink::BenchChannel,
    rate: u64,
    lead_ms: u64,
    run_for: Duration,
    created: Arc<AtomicU64>,
) -> anyhow::Result<()> {
    let clock = SystemClock;
    let started = Instant::now();
    let mut tick = tokio::time::interval(CREATE_TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let elapsed = started.elapsed().min(run_for);
        // As many as the rate asks for by now, so a slow request is caught up.
        let owed = (elapsed.as_secs_f64() * rate as f64) as u64;
        let n = owed.saturating_sub(created.load(Ordering::Relaxed));
        if n > 0 {
            let due = clock.now_ms() + lead_ms as i64;
            bulk_ingest(
                &http,
                &bases,
                channel,
                n as usize,
                n as usize,
                1,
                Arc::new(move |_| due),
            )
            .await?;
            created.fetch_add(n, Ordering::Relaxed);
        }
        if elapsed >= run_for {
            return Ok(());
        }
    }
}

/// Reads the window's figures and starts the next window at the sink.
async fn sample(
    sink: &Sink,
    server: &Deployment,
    http: &reqwest::Client,
    started: Instant,
    created: &AtomicU64,
) -> Sample {
    let stats = sink.stats();
    sink.reset();
    let deleted = server.counter(http, TIMERS_DELETED).await.unwrap_or(0.0) as u64;
    Sample {
        t_s: started.elapsed().as_secs_f64(),
        store_bytes: server.store_bytes(),
        rss_bytes: server.nodes.first().and_then(|n| n.rss_bytes()),
        delivered: stats.unique_delivered,
        p50_ms: stats.lateness_ms.p50,
        p99_ms: stats.lateness_ms.p99,
        max_ms: stats.lateness_ms.max,
        created: created.load(Ordering::Relaxed),
        deleted,
    }
}

fn mib(b: Option<u64>) -> String {
    b.map_or("-".into(), |b| format!("{:.1}", b as f64 / MIB))
}

/// One table row.
fn print_sample(s: &Sample) {
    println!(
        "  t {:>6.0} s  store {:>8} MiB  rss {:>7} MiB  delivered {:>6}  p50 {:>4} ms  p99 {:>4} ms  max {:>5} ms  created {:>8}  deleted {:>8}",
        s.t_s,
        mib(s.store_bytes),
        mib(s.rss_bytes),
        s.delivered,
        s.p50_ms,
        s.p99_ms,
        s.max_ms,
        s.created,
        s.deleted
    );
}

/// The first retention period after the first one (when deleting has begun)
/// against the last period of the run.
#[derive(Debug, Serialize)]
struct Summary {
    first: Period,
    last: Period,
}

/// Medians over the samples of one period (sizes in MiB).
#[derive(Debug, Serialize)]
struct Period {
    from_s: f64,
    to_s: f64,
    store_mib: Option<f64>,
    rss_mib: Option<f64>,
    p99_ms: Option<f64>,
    max_p99_ms: Option<u64>,
}

impl Summary {
    fn of(samples: &[Sample], retention_s: f64) -> Summary {
        let end = samples.last().map_or(0.0, |s| s.t_s);
        Summary {
            first: Period::of(samples, retention_s, 2.0 * retention_s),
            last: Period::of(samples, (end - retention_s).max(0.0), end),
        }
    }

    fn print(&self) {
        let f = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.1}"));
        let change = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if a > 0.0 => format!("{:+.0}%", (b - a) / a * 100.0),
            _ => "-".into(),
        };
        println!(
            "  {:<22} {:>16} {:>16} {:>8}",
            "median over a period",
            format!("{:.0}-{:.0} s", self.first.from_s, self.first.to_s),
            format!("{:.0}-{:.0} s", self.last.from_s, self.last.to_s),
            "change"
        );
        for (name, a, b) in [
            (
                "store size (MiB)",
                self.first.store_mib,
                self.last.store_mib,
            ),
            ("server RSS (MiB)", self.first.rss_mib, self.last.rss_mib),
            ("p99 lateness (ms)", self.first.p99_ms, self.last.p99_ms),
            (
                "worst window p99 (ms)",
                self.first.max_p99_ms.map(|v| v as f64),
                self.last.max_p99_ms.map(|v| v as f64),
            ),
        ] {
            println!("  {name:<22} {:>16} {:>16} {:>8}", f(a), f(b), change(a, b));
        }
    }
}

impl Period {
    fn of(samples: &[Sample], from_s: f64, to_s: f64) -> Period {
        let within: Vec<&Sample> = samples
            .iter()
            .filter(|s| s.t_s > from_s && s.t_s <= to_s && s.delivered > 0)
            .collect();
        let median_of = |get: &dyn Fn(&Sample) -> Option<f64>| {
            let mut v: Vec<f64> = within.iter().filter_map(|s| get(s)).collect();
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied()
        };
        Period {
            from_s,
            to_s,
            store_mib: median_of(&|s| s.store_bytes.map(|b| b as f64 / MIB)),
            rss_mib: median_of(&|s| s.rss_bytes.map(|b| b as f64 / MIB)),
            p99_ms: median_of(&|s| Some(s.p99_ms as f64)),
            max_p99_ms: within.iter().map(|s| s.p99_ms).max(),
        }
    }
}

fn draw(
    path: &std::path::Path,
    title: &str,
    samples: &[Sample],
    retention_s: f64,
) -> anyhow::Result<()> {
    let series = |get: &dyn Fn(&Sample) -> Option<f64>| -> Vec<(f64, f64)> {
        samples
            .iter()
            .filter(|s| s.delivered > 0)
            .filter_map(|s| Some((s.t_s, get(s)?)))
            .collect()
    };
    let panels = [
        Panel {
            title: "store size on disk",
            unit: "MiB",
            points: series(&|s| s.store_bytes.map(|b| b as f64 / MIB)),
        },
        Panel {
            title: "server RSS",
            unit: "MiB",
            points: series(&|s| s.rss_bytes.map(|b| b as f64 / MIB)),
        },
        Panel {
            title: "p99 lateness at the sink, per window",
            unit: "ms",
            points: series(&|s| Some(s.p99_ms as f64)),
        },
    ];
    draw_panels(
        path,
        title,
        &panels,
        (retention_s, "end of the first retention period"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(t_s: f64, store_mib: u64, p99_ms: u64) -> Sample {
        Sample {
            t_s,
            store_bytes: Some(store_mib * 1_048_576),
            rss_bytes: None,
            delivered: 10,
            p50_ms: 1,
            p99_ms,
            max_ms: p99_ms,
            created: 0,
            deleted: 0,
        }
    }

    /// The first period is the second retention period of the run (deleting
    /// has begun); the last is the run's final period; each takes medians.
    #[test]
    fn periods_take_medians_of_their_own_samples() {
        let samples: Vec<Sample> = (1..=30)
            .map(|i| at(i as f64 * 10.0, i, if i == 8 { 50 } else { 3 }))
            .collect();
        let s = Summary::of(&samples, 60.0);
        assert_eq!((s.first.from_s, s.first.to_s), (60.0, 120.0));
        // 70..=120 s: 7..=12 MiB, median of six is the upper middle.
        assert_eq!(s.first.store_mib, Some(10.0));
        assert_eq!(s.first.p99_ms, Some(3.0));
        assert_eq!(s.first.max_p99_ms, Some(50));
        assert_eq!((s.last.from_s, s.last.to_s), (240.0, 300.0));
        assert_eq!(s.last.store_mib, Some(28.0));
        assert_eq!(s.last.rss_mib, None);
        assert_eq!(s.last.max_p99_ms, Some(3));
    }
}
