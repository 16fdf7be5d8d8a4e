//! `herald bench`: load generators that measure Herald against DESIGN §6.
//!
//! Each scenario starts a webhook sink in this process and a real
//! `herald serve` child process on a fresh temporary store, drives it over
//! HTTP, and reports figures measured at the sink. Nothing is simulated.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::{Args, Subcommand, ValueEnum};
use herald_core::{Clock, SystemClock, time::format_rfc3339_ms};
use herald_mock::{MockConfig, MockServer, Percentiles, WebhookStats, WechatConfig};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

#[derive(Subcommand, Debug)]
pub enum BenchCmd {
    /// N timers due at the same instant: time to deliver them all and mark them done.
    Burst(BurstArgs),
    /// N timers spread over S seconds: how late each one fires.
    Precision(PrecisionArgs),
    /// Timer creation rate: single `POST /v1/timers`, or the bulk endpoint.
    Ingest(IngestArgs),
    /// N pending timers, `kill -9`, restart: how soon firing resumes, and RSS.
    Restart(RestartArgs),
    /// N users subscribe to one subject with the same lead: the subscribe
    /// rate, and how long the reminders take to drain when they all fall due.
    Reminders(RemindersArgs),
    /// One job to an uploaded audience of N recipients: upload rate, and
    /// recipients per second to the sink.
    Campaign(CampaignArgs),
}

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
    server: ServerArgs,
}

#[derive(Args, Debug)]
pub struct RemindersArgs {
    #[arg(long, default_value_t = 100_000)]
    users: usize,
    /// Seconds from now until the subject starts; by default the lead plus
    /// enough time to subscribe everyone first.
    #[arg(long)]
    subject_start_in: Option<f64>,
    /// Minutes before the start the reminders fire (5..=60, a multiple of 5).
    #[arg(long, default_value_t = 5)]
    lead_minutes: i64,
    /// Subscriptions per bulk request.
    #[arg(long, default_value_t = 10_000)]
    chunk: usize,
    /// Bulk requests in flight at once.
    #[arg(long, default_value_t = 2)]
    clients: usize,
    #[command(flatten)]
    server: ServerArgs,
}

#[derive(Args, Debug, Clone)]
pub struct ServerArgs {
    /// Webhook channel concurrency of the server under test.
    #[arg(long, default_value_t = 256)]
    concurrency: usize,
    /// SQLite `synchronous` of the server under test (`full` or `normal`).
    #[arg(long, default_value = "full")]
    synchronous: String,
    /// `sqlite` (a temporary file) or `postgres` (a throwaway cluster the
    /// bench starts with `initdb`/`postgres`, fsync off).
    #[arg(long, default_value = "sqlite")]
    store: String,
    /// Nodes sharing the store (`postgres` only).
    #[arg(long, default_value_t = 1)]
    nodes: usize,
    /// Reminder merge window of the server under test (0: off).
    #[arg(long, default_value_t = 60_000)]
    merge_window_ms: i64,
    /// Keep the server's data directory and log after the run.
    #[arg(long)]
    keep: bool,
    /// Print a JSON summary line as well.
    #[arg(long)]
    json: bool,
    /// More TOML for the server's config (set by scenarios, not a flag).
    #[arg(skip)]
    extra_toml: String,
}

#[derive(Args, Debug)]
pub struct BurstArgs {
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
    #[command(flatten)]
    server: ServerArgs,
}

/// The kind of channel a scenario delivers through, always to a mock in
/// this process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BenchChannel {
    /// `webhook` to the mock's sink at `/hook`.
    Webhook,
    /// `wechat` template messages to the mock's WeChat API (stable tokens).
    Wechat,
}

#[derive(Args, Debug)]
pub struct PrecisionArgs {
    #[arg(long, default_value_t = 100_000)]
    timers: usize,
    #[arg(long, default_value_t = 60)]
    spread_secs: u64,
    #[arg(long)]
    lead_secs: Option<f64>,
    #[command(flatten)]
    server: ServerArgs,
}

#[derive(Args, Debug)]
pub struct IngestArgs {
    #[arg(long, default_value_t = 100_000)]
    timers: usize,
    /// Concurrent HTTP clients.
    #[arg(long, default_value_t = 64)]
    clients: usize,
    /// Use `POST /v1/timers:bulk` with this many timers per request instead of
    /// single requests.
    #[arg(long)]
    bulk: Option<usize>,
    #[command(flatten)]
    server: ServerArgs,
}

#[derive(Args, Debug)]
pub struct RestartArgs {
    /// Timers pending in the store at the restart.
    #[arg(long, default_value_t = 1_000_000)]
    timers: usize,
    /// How many of them are overdue when the server comes back.
    #[arg(long, default_value_t = 1_000)]
    overdue: usize,
    #[command(flatten)]
    server: ServerArgs,
}

pub async fn run(cmd: BenchCmd) -> anyhow::Result<()> {
    match cmd {
        BenchCmd::Burst(a) => burst(a).await,
        BenchCmd::Precision(a) => precision(a).await,
        BenchCmd::Ingest(a) => ingest(a).await,
        BenchCmd::Restart(a) => restart(a).await,
        BenchCmd::Reminders(a) => reminders(a).await,
        BenchCmd::Campaign(a) => campaign(a).await,
    }
}

/// One `herald serve` child process.
struct Node {
    child: Child,
    base: String,
    /// Its config file and log live here.
    dir: PathBuf,
    name: String,
}

impl Node {
    /// Starts `herald serve` on `<dir>/<name>.toml`; returns once it listens.
    async fn spawn(dir: &std::path::Path, name: &str) -> anyhow::Result<Node> {
        let log_path = dir.join(format!("{name}.log"));
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)?;
        let exe = std::env::current_exe().context("locating the herald binary")?;
        let mut child = Command::new(exe)
            .arg("serve")
            .arg("--config")
            .arg(dir.join(format!("{name}.toml")))
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .kill_on_drop(true)
            .spawn()
            .context("starting herald serve")?;
        let stdout = child.stdout.take().context("no stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let base = tokio::time::timeout(Duration::from_secs(60), async {
            while let Some(line) = lines.next_line().await? {
                if let Some(url) = line.strip_prefix("herald listening on ") {
                    return Ok::<_, anyhow::Error>(url.trim().to_string());
                }
            }
            bail!(
                "herald serve exited before listening; see {}",
                log_path.display()
            )
        })
        .await
        .context("herald serve did not start within 60 s")??;
        Ok(Node {
            child,
            base,
            dir: dir.to_path_buf(),
            name: name.to_string(),
        })
    }

    /// Resident memory, from `/proc`.
    fn rss_bytes(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()?)).ok()?;
        let kb: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))?
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()?;
        Some(kb * 1024)
    }

    async fn stop(mut self) {
        #[cfg(unix)]
        if let Some(pid) = self.child.id() {
            // Graceful first, so a kept store is consistent.
            let _ = std::process::Command::new("kill")
                .arg("-TERM")
                .arg(pid.to_string())
                .status();
            let _ = tokio::time::timeout(Duration::from_secs(15), self.child.wait()).await;
        }
        let _ = self.child.kill().await;
    }
}

/// The system under test: one or more nodes on a fresh store (a temporary
/// SQLite file, or a database on a throwaway PostgreSQL cluster), all
/// delivering to the bench's sink. Everything is removed at the end unless
/// `--keep`.
struct Deployment {
    nodes: Vec<Node>,
    dir: PathBuf,
    _tmp: Option<tempfile::TempDir>,
    _pg: Option<herald_pgtemp::PgTemp>,
}

impl Deployment {
    async fn start(sink: &Sink, a: &ServerArgs) -> anyhow::Result<Self> {
        let tmp = tempfile::Builder::new().prefix("herald-bench-").tempdir()?;
        let dir = tmp.path().to_path_buf();
        let (store, pg) = match a.store.as_str() {
            "sqlite" => {
                if a.nodes != 1 {
                    bail!(
                        "--nodes needs --store postgres: an embedded SQLite store serves one node"
                    );
                }
                (
                    format!("sqlite://{}", dir.join("herald.db").display()),
                    None,
                )
            }
            "postgres" => {
                let pg = herald_pgtemp::PgTemp::start()
                    .map_err(|e| anyhow::anyhow!("starting PostgreSQL: {e}"))?
                    .context("--store postgres needs initdb and postgres on this machine")?;
                let url = pg
                    .create_database("herald_bench")
                    .map_err(|e| anyhow::anyhow!("creating the database: {e}"))?;
                eprintln!(
                    "PostgreSQL {} on port {} (fsync off: a throwaway test cluster)",
                    pg.server_version(),
                    pg.port()
                );
                (url, Some(pg))
            }
            other => bail!("--store must be sqlite or postgres, not {other:?}"),
        };
        let mut nodes = Vec::new();
        for i in 1..=a.nodes.max(1) {
            let name = format!("node-{i}");
            let config = format!(
                r#"listen = "127.0.0.1:0"
store = "{store}"
node_id = "{name}"
[store_options]
sqlite_synchronous = "{sync}"
[engine]
stats_interval_ms = 0
[api]
bulk_max_lines = 1000000
bulk_max_bytes = 536870912
[reminders]
merge_window_ms = {merge}
[reminders.channels]
app = "sink"
{channel}
{extra}
"#,
                channel = sink.channel_toml(a.concurrency),
                extra = a.extra_toml,
                merge = a.merge_window_ms,
                sync = a.synchronous,
            );
            std::fs::write(dir.join(format!("{name}.toml")), config)?;
            nodes.push(Node::spawn(&dir, &name).await?);
        }
        let tmp = if a.keep {
            eprintln!("keeping {}", tmp.path().display());
            let _ = tmp.keep();
            None
        } else {
            Some(tmp)
        };
        let d = Deployment {
            nodes,
            dir,
            _tmp: tmp,
            _pg: pg,
        };
        if d.nodes.len() > 1 {
            d.wait_balanced().await?;
        }
        Ok(d)
    }

    /// The first node's URL.
    fn base(&self) -> &str {
        &self.nodes[0].base
    }

    fn bases(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.base.clone()).collect()
    }

    /// Waits until the nodes own every shard between them.
    async fn wait_balanced(&self) -> anyhow::Result<()> {
        let http = http_client()?;
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let v: serde_json::Value = http
                .get(format!("{}/v1/cluster", self.base()))
                .send()
                .await?
                .json()
                .await?;
            let owners = v["owners"].as_object().map_or(0, |o| o.len());
            if v["unowned"] == 0 && owners == self.nodes.len() {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("the nodes did not share the shards within 60 s: {v}");
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// A counter summed over every node.
    async fn counter(&self, http: &reqwest::Client, name: &str) -> anyhow::Result<f64> {
        let mut sum = 0.0;
        for n in &self.nodes {
            let text = http
                .get(format!("{}/metrics", n.base))
                .send()
                .await?
                .text()
                .await?;
            sum += metric_value(&text, name).unwrap_or(0.0);
        }
        Ok(sum)
    }

    fn log_path(&self) -> PathBuf {
        self.dir.join("node-1.log")
    }

    fn pids(&self) -> Vec<u32> {
        self.nodes.iter().filter_map(|n| n.child.id()).collect()
    }

    async fn stop(self) {
        for n in self.nodes {
            n.stop().await;
        }
    }
}

/// CPU seconds (user + system) a process has used so far, from `/proc`.
fn cpu_seconds(pid: Option<u32>) -> Option<f64> {
    let path = match pid {
        Some(p) => format!("/proc/{p}/stat"),
        None => "/proc/self/stat".to_string(),
    };
    let stat = std::fs::read_to_string(path).ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

/// CPU seconds of the whole machine (all processes), from `/proc/stat`.
fn machine_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?;
    // user nice system idle iowait irq softirq steal (guest time is already in user).
    let busy: f64 = line
        .split_whitespace()
        .skip(1)
        .enumerate()
        .filter(|(i, _)| matches!(i, 0 | 1 | 2 | 5 | 6 | 7))
        .filter_map(|(_, v)| v.parse::<f64>().ok())
        .sum();
    Some(busy / 100.0)
}

/// CPU seconds of a PostgreSQL server: the postmaster, its live backends, and
/// the backends that already exited (counted in the postmaster's reaped
/// children time).
fn pg_cpu_seconds(data_dir: &std::path::Path) -> Option<f64> {
    let pid: u32 = std::fs::read_to_string(data_dir.join("postmaster.pid"))
        .ok()?
        .lines()
        .next()?
        .trim()
        .parse()
        .ok()?;
    let fields = |p: &str| -> Option<Vec<f64>> {
        let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
        let rest = &stat[stat.rfind(')')? + 2..];
        Some(
            rest.split_whitespace()
                .map(|v| v.parse::<f64>().unwrap_or(0.0))
                .collect(),
        )
    };
    let own = fields(&pid.to_string())?;
    // utime stime cutime cstime are fields 11..=14 after the name.
    let mut ticks: f64 = own.get(11..15)?.iter().sum();
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let name = entry.file_name();
        let Some(p) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        if let Some(f) = fields(p)
            && f.get(1).copied() == Some(f64::from(pid))
        {
            ticks += f.get(11..13).map_or(0.0, |t| t.iter().sum());
        }
    }
    Some(ticks / 100.0)
}

impl CpuUse {
    fn describe(&self, n: usize) -> String {
        let per = |s: f64| s * 1e6 / n.max(1) as f64;
        format!(
            "nodes {:.1} s, sink+bench {:.1} s, postgres {:.1} s, other load {:.1} s \
             ({:.0} / {:.0} / {:.0} us per item)",
            self.nodes,
            self.own,
            self.pg,
            self.other,
            per(self.nodes),
            per(self.own),
            per(self.pg)
        )
    }
}

/// CPU used over a phase by the nodes, by this process (sink and clients), by
/// the PostgreSQL server the bench started (0 on SQLite), and by the whole
/// machine (the rest is other load, not ours).
struct CpuMeter {
    pids: Vec<u32>,
    pg_dir: Option<PathBuf>,
    nodes0: f64,
    own0: f64,
    pg0: f64,
    all0: f64,
}

/// CPU seconds over a phase, by whom.
struct CpuUse {
    nodes: f64,
    own: f64,
    pg: f64,
    /// Busy time of the machine outside all of the above.
    other: f64,
}

impl CpuMeter {
    fn start(d: &Deployment) -> Self {
        let pids = d.pids();
        let pg_dir = d._pg.as_ref().map(|p| p.data_dir().to_path_buf());
        Self {
            nodes0: pids.iter().filter_map(|p| cpu_seconds(Some(*p))).sum(),
            own0: cpu_seconds(None).unwrap_or(0.0),
            pg0: pg_dir.as_deref().and_then(pg_cpu_seconds).unwrap_or(0.0),
            all0: machine_cpu_seconds().unwrap_or(0.0),
            pids,
            pg_dir,
        }
    }

    /// What each used since `start`.
    fn read(&self) -> CpuUse {
        let nodes = self
            .pids
            .iter()
            .filter_map(|p| cpu_seconds(Some(*p)))
            .sum::<f64>()
            - self.nodes0;
        let own = cpu_seconds(None).unwrap_or(0.0) - self.own0;
        let pg = self
            .pg_dir
            .as_deref()
            .and_then(pg_cpu_seconds)
            .map_or(0.0, |c| c - self.pg0);
        let all = machine_cpu_seconds().unwrap_or(0.0) - self.all0;
        CpuUse {
            nodes,
            own,
            pg,
            other: (all - nodes - own - pg).max(0.0),
        }
    }
}

/// The value of an unlabelled Prometheus sample.
fn metric_value(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

/// The mock the server under test delivers to, in this process, and the
/// kind of channel pointed at it. Derefs to the mock, whose webhook figures
/// the webhook-only scenarios read directly.
struct Sink {
    mock: MockServer,
    channel: BenchChannel,
}

impl std::ops::Deref for Sink {
    type Target = MockServer;
    fn deref(&self) -> &MockServer {
        &self.mock
    }
}

/// A webhook sink.
async fn start_sink() -> anyhow::Result<Sink> {
    start_channel_sink(BenchChannel::Webhook, 0).await
}

/// A mock ready to take `n` deliveries through `channel`.
async fn start_channel_sink(channel: BenchChannel, n: usize) -> anyhow::Result<Sink> {
    let addr = "127.0.0.1:0".parse()?;
    let mut cfg = MockConfig::default();
    if channel == BenchChannel::Wechat {
        let defaults = WechatConfig::default();
        // Room for every timer, so the daily quota never throttles a run.
        cfg.wechat = WechatConfig {
            send_daily_quota: defaults.send_daily_quota.max(2 * n as u64),
            ..defaults
        };
    }
    Ok(Sink {
        mock: MockServer::start(addr, cfg).await?,
        channel,
    })
}

impl BenchChannel {
    /// Timer `i`'s recipient and message, as the JSON members of a create line.
    fn timer_fields(self, i: usize) -> String {
        match self {
            Self::Webhook => format!("\"recipient\":\"user-{i}\",\"message\":{{\"n\":{i}}}"),
            Self::Wechat => format!(
                "\"recipient\":\"openid-bench-{i}\",\"message\":{{\"template_id\":\"bench-template\",\
                 \"data\":{{\"n\":{{\"value\":\"{i}\"}}}}}}"
            ),
        }
    }
}

impl Sink {
    /// The `[[channels]]` block, named `sink`, of the server under test.
    fn channel_toml(&self, concurrency: usize) -> String {
        let settings = match self.channel {
            BenchChannel::Webhook => format!("kind = \"webhook\"\nurl = \"{}\"", self.hook_url()),
            BenchChannel::Wechat => {
                let w = WechatConfig::default();
                format!(
                    "kind = \"wechat\"\napi_base = \"{}\"\nappid = \"{}\"\nsecret = \"{}\"\ntoken_mode = \"stable\"",
                    self.base_url(),
                    w.appid,
                    w.secret
                )
            }
        };
        format!("[[channels]]\nname = \"sink\"\n{settings}\nconcurrency = {concurrency}\n")
    }

    /// Deliveries the provider accepted, repeats not counted.
    fn delivered(&self) -> u64 {
        match self.channel {
            BenchChannel::Webhook => self.unique_delivered(),
            BenchChannel::Wechat => self.state().wechat_stats().delivered,
        }
    }

    /// When the newest delivery arrived (unix ms).
    fn last_delivered_ms(&self) -> Option<i64> {
        match self.channel {
            BenchChannel::Webhook => self.stats().last_delivered_at_ms.map(|t| t as i64),
            BenchChannel::Wechat => self
                .state()
                .wechat_messages(1, None)
                .last()
                .map(|m| m.at_ms as i64),
        }
    }
}

fn http_client() -> anyhow::Result<reqwest::Client> {
    Ok(reqwest::Client::builder()
        .pool_max_idle_per_host(256)
        .tcp_nodelay(true)
        .build()?)
}

/// One NDJSON line per timer, due at `due(i)`.
fn ndjson(
    range: std::ops::Range<usize>,
    channel: BenchChannel,
    due: &dyn Fn(usize) -> i64,
) -> String {
    let mut s = String::with_capacity(range.len() * 120);
    for i in range {
        s.push_str(&format!(
            "{{\"fire_at\":\"{}\",\"channel\":\"sink\",{}}}\n",
            format_rfc3339_ms(due(i)),
            channel.timer_fields(i)
        ));
    }
    s
}

/// Sends `n` timers through the bulk endpoint; returns the seconds it took.
async fn bulk_ingest(
    http: &reqwest::Client,
    bases: &[String],
    channel: BenchChannel,
    n: usize,
    chunk: usize,
    clients: usize,
    due: Arc<dyn Fn(usize) -> i64 + Send + Sync>,
) -> anyhow::Result<f64> {
    let lines = Arc::new(move |r: std::ops::Range<usize>| ndjson(r, channel, &*due));
    bulk_post(http, bases, "/v1/timers:bulk", n, chunk, clients, lines).await
}

/// Sends items `0..n` to a bulk NDJSON endpoint in chunks from `clients`
/// concurrent requests, `lines` writing each chunk; every line must come
/// back `201`. Returns the seconds it took.
async fn bulk_post(
    http: &reqwest::Client,
    bases: &[String],
    path: &'static str,
    n: usize,
    chunk: usize,
    clients: usize,
    lines: Arc<dyn Fn(std::ops::Range<usize>) -> String + Send + Sync>,
) -> anyhow::Result<f64> {
    let chunk = chunk.max(1);
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients.max(1) {
        let (http, bases, next, lines) =
            (http.clone(), bases.to_vec(), next.clone(), lines.clone());
        tasks.push(tokio::spawn(async move {
            loop {
                let start = next.fetch_add(chunk, Ordering::SeqCst);
                if start >= n {
                    return Ok::<_, anyhow::Error>(());
                }
                let body = lines(start..(start + chunk).min(n));
                // Chunks go to the nodes in turn, as a load balancer would send them.
                let base = &bases[(start / chunk) % bases.len().max(1)];
                let resp = http
                    .post(format!("{base}{path}"))
                    .header("content-type", "application/x-ndjson")
                    .body(body)
                    .send()
                    .await?;
                let status = resp.status();
                let text = resp.text().await?;
                if !status.is_success() {
                    bail!("bulk ingest answered {status}: {text}");
                }
                if let Some(bad) = text.lines().find(|l| !l.contains("\"status\":201")) {
                    bail!("bulk ingest refused a line: {bad}");
                }
            }
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok(started.elapsed().as_secs_f64())
}

/// Waits until the sink has every timer and the server has marked them done.
/// Returns (all delivered, all done) as unix ms.
async fn wait_drained(
    sink: &Sink,
    server: &Deployment,
    http: &reqwest::Client,
    n: usize,
    timeout: Duration,
) -> anyhow::Result<(i64, i64)> {
    let clock = SystemClock;
    let deadline = Instant::now() + timeout;
    let mut last_report = Instant::now();
    loop {
        let delivered = sink.delivered();
        if delivered as usize >= n {
            break;
        }
        if Instant::now() > deadline {
            bail!(
                "timed out: {delivered} of {n} delivered (server log: {})",
                server.log_path().display()
            );
        }
        if last_report.elapsed() > Duration::from_secs(5) {
            eprintln!("  ... {delivered} of {n} delivered");
            last_report = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let delivered = sink.last_delivered_ms().unwrap_or_else(|| clock.now_ms());
    loop {
        let done = server
            .counter(http, "herald_timers_done_total")
            .await
            .unwrap_or(0.0);
        if done as usize >= n {
            return Ok((delivered, clock.now_ms()));
        }
        if Instant::now() > deadline {
            bail!("timed out: {done} of {n} marked done");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn pct(p: &Percentiles) -> String {
    format!(
        "p50 {} ms, p99 {} ms, p99.9 {} ms, max {} ms",
        p.p50, p.p99, p.p999, p.max
    )
}

fn default_lead(n: usize) -> f64 {
    // Room for ingest at a pessimistic 100k timers/s, plus start-up.
    3.0 + n as f64 / 100_000.0
}

async fn burst(a: BurstArgs) -> anyhow::Result<()> {
    let n = a.timers;
    let sink = start_channel_sink(a.channel, n).await?;
    let server = Deployment::start(&sink, &a.server).await?;
    let http = http_client()?;
    let clock = SystemClock;
    let lead = a.lead_secs.unwrap_or_else(|| default_lead(n));
    let due_at = clock.now_ms() + (lead * 1000.0) as i64;
    let channel = channel_name(a.channel);
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
    let mut summary = serde_json::json!({"scenario":"burst","channel":channel,"store":a.server.store,
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
    };
    println!("  cpu while draining  {}", c.describe(n));
    if let (Some(summary), Some(extra)) = (summary.as_object_mut(), extra.as_object()) {
        summary.extend(extra.clone());
    }
    if a.server.json {
        println!("{summary}");
    }
    server.stop().await;
    Ok(())
}

fn channel_name(c: BenchChannel) -> &'static str {
    match c {
        BenchChannel::Webhook => "webhook",
        BenchChannel::Wechat => "wechat",
    }
}

async fn precision(a: PrecisionArgs) -> anyhow::Result<()> {
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

async fn ingest(a: IngestArgs) -> anyhow::Result<()> {
    let sink = start_sink().await?;
    let server = Deployment::start(&sink, &a.server).await?;
    let http = http_client()?;
    let n = a.timers;
    // Due in an hour: nothing fires while ingest is measured.
    let due = SystemClock.now_ms() + 3_600_000;
    let (mode, secs) = match a.bulk {
        Some(chunk) => {
            let secs = bulk_ingest(
                &http,
                &server.bases(),
                sink.channel,
                n,
                chunk,
                a.clients,
                Arc::new(move |_| due),
            )
            .await?;
            (
                format!("bulk, {chunk} per request, {} clients", a.clients),
                secs,
            )
        }
        None => (
            format!("single POST, {} clients", a.clients),
            single_ingest(&http, server.base(), n, a.clients, due).await?,
        ),
    };
    println!("ingest {n} timers ({mode})");
    println!("  {:.0} timers/s ({secs:.2} s)", n as f64 / secs);
    if a.server.json {
        println!(
            "{}",
            serde_json::json!({"scenario":"ingest","mode":mode,"timers":n,"per_sec":n as f64/secs})
        );
    }
    server.stop().await;
    Ok(())
}

async fn single_ingest(
    http: &reqwest::Client,
    base: &str,
    n: usize,
    clients: usize,
    due: i64,
) -> anyhow::Result<f64> {
    let next = Arc::new(AtomicUsize::new(0));
    let fire_at = format_rfc3339_ms(due);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients.max(1) {
        let (http, url, next, fire_at) = (
            http.clone(),
            format!("{base}/v1/timers"),
            next.clone(),
            fire_at.clone(),
        );
        tasks.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= n {
                    return Ok::<_, anyhow::Error>(());
                }
                let body = format!(
                    "{{\"fire_at\":\"{fire_at}\",\"channel\":\"sink\",\"recipient\":\"user-{i}\",\"message\":{{\"n\":{i}}}}}"
                );
                let resp = http.post(&url).header("content-type", "application/json").body(body).send().await?;
                if resp.status() != reqwest::StatusCode::CREATED {
                    bail!("create answered {}: {}", resp.status(), resp.text().await.unwrap_or_default());
                }
                let _ = resp.bytes().await;
            }
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok(started.elapsed().as_secs_f64())
}

async fn restart(a: RestartArgs) -> anyhow::Result<()> {
    let sink = start_sink().await?;
    let server = Deployment::start(&sink, &a.server).await?;
    let http = http_client()?;
    let clock = SystemClock;
    let n = a.timers.max(a.overdue);
    let overdue = a.overdue;
    // The first `overdue` timers fall due while the server is down; the rest
    // are an hour out and only have to be held, not loaded.
    let ingest_secs_guess = 5.0 + n as f64 / 150_000.0;
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
    *node = Node::spawn(&node.dir.clone(), &node.name.clone()).await?;
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

async fn reminders(a: RemindersArgs) -> anyhow::Result<()> {
    let sink = start_sink().await?;
    let server = Deployment::start(&sink, &a.server).await?;
    let http = http_client()?;
    let clock = SystemClock;
    let n = a.users;
    let lead_ms = a.lead_minutes * 60_000;
    // Subscribing is slower than plain timers: budget 50k/s, plus start-up.
    let start_in = a
        .subject_start_in
        .unwrap_or(lead_ms as f64 / 1000.0 + 5.0 + n as f64 / 50_000.0);
    let start_at = clock.now_ms() + (start_in * 1000.0) as i64;
    let due_at = start_at - lead_ms;
    if due_at <= clock.now_ms() {
        bail!("the reminders would be due before they are created: raise --subject-start-in");
    }
    let resp = http
        .put(format!("{}/v1/subjects/bench-subject", server.base()))
        .json(
            &serde_json::json!({"start_at": format_rfc3339_ms(start_at), "title": "Bench coupon"}),
        )
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
        "reminders: {n} users, subject starts {} ({start_in:.1} s from now), reminders due {}",
        format_rfc3339_ms(start_at),
        format_rfc3339_ms(due_at)
    );
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
    let (delivered, done) = wait_drained(&sink, &server, &http, n, timeout).await?;
    let c = cpu.read();
    let s: WebhookStats = sink.stats();
    let drain_s = (done - due_at) as f64 / 1000.0;
    let deliver_s = (delivered - due_at) as f64 / 1000.0;
    println!(
        "reminders: {n} users of one subject, lead {} min (store {}, nodes {}, concurrency {})",
        a.lead_minutes, a.server.store, a.server.nodes, a.server.concurrency
    );
    println!(
        "  subscribe (bulk)    {:.0} reminders/s ({secs:.2} s)",
        n as f64 / secs
    );
    println!("  all delivered       {deliver_s:.2} s after due");
    println!(
        "  all marked done     {drain_s:.2} s after due  => {:.0} reminders/s",
        n as f64 / drain_s.max(0.001)
    );
    println!("  lateness at sink    {}", pct(&s.lateness_ms));
    println!("  duplicates          {}", s.duplicates);
    println!("  cpu while draining  {}", c.describe(n));
    if a.server.json {
        println!(
            "{}",
            serde_json::json!({"scenario":"reminders","store":a.server.store,"nodes":a.server.nodes,
                "users":n,"subscribe_per_sec":n as f64/secs,"server_cpu_s":c.nodes,"sink_cpu_s":c.own,
                "pg_cpu_s":c.pg,"other_cpu_s":c.other,"delivered_s":deliver_s,"done_s":drain_s,
                "drain_per_sec":n as f64/drain_s.max(0.001),"lateness_ms":s.lateness_ms,
                "duplicates":s.duplicates})
        );
    }
    server.stop().await;
    Ok(())
}

/// Streams `n` NDJSON recipient lines as an upload body, a block at a time.
fn audience_body(n: usize) -> reqwest::Body {
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

async fn campaign(mut a: CampaignArgs) -> anyhow::Result<()> {
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
        a.server.store,
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
            serde_json::json!({"scenario":"campaign","store":a.server.store,"nodes":a.server.nodes,
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
