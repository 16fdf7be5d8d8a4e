//! The system under test: `herald serve` child processes on a fresh store,
//! started, watched and stopped by the bench.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use super::pg::{self, Postgres};
use super::sink::Sink;

#[derive(Args, Debug, Clone)]
pub struct ServerArgs {
    /// Webhook channel concurrency of the server under test.
    #[arg(long, default_value_t = 256)]
    pub(super) concurrency: usize,
    /// SQLite `synchronous` of the server under test (`full` or `normal`).
    #[arg(long, default_value = "full")]
    pub(super) synchronous: String,
    /// `sqlite` (a temporary file), `postgres` (a throwaway cluster the
    /// bench starts with `initdb`/`postgres`, durable unless `--pg-fast`;
    /// only in a build with the `bench-pg` feature), or
    /// `postgres://USER@HOST/DB`, an existing empty database.
    #[arg(long, default_value = "sqlite")]
    pub(super) store: String,
    /// The throwaway cluster runs with `fsync`, `synchronous_commit` and
    /// `full_page_writes` off (the test suite's settings), not durable.
    #[arg(long)]
    pub(super) pg_fast: bool,
    /// The throwaway cluster loads `pg_stat_statements`, and the scenario
    /// prints the statements that cost the most while it drained.
    #[arg(long)]
    pub(super) pg_statements: bool,
    /// A further setting of the throwaway cluster, `KEY=VALUE` (repeatable),
    /// for example `--pg-set max_wal_size=8GB`. Durability stays as
    /// `--pg-fast` says: `fsync`, `synchronous_commit` and
    /// `full_page_writes` are refused here.
    #[arg(long = "pg-set", value_parser = parse_pg_setting)]
    pub(super) pg_set: Vec<(String, String)>,
    /// The sink channel's `in_doubt` choice (`resend` or `skip`; default:
    /// the channel kind's own).
    #[arg(long, value_parser = ["resend", "skip"])]
    pub(super) in_doubt: Option<String>,
    /// Nodes sharing the store (`postgres` only).
    #[arg(long, default_value_t = 1)]
    pub(super) nodes: usize,
    /// Reminder merge window of the server under test (0: off).
    #[arg(long, default_value_t = 60_000)]
    pub(super) merge_window_ms: i64,
    /// Keep the server's data directory and log after the run.
    #[arg(long)]
    pub(super) keep: bool,
    /// Print a JSON summary line as well.
    #[arg(long)]
    pub(super) json: bool,
    /// More TOML for the server's config (set by scenarios, not a flag).
    #[arg(skip)]
    pub(super) extra_toml: String,
    /// More keys of the `[reminders]` table (set by scenarios, not a flag).
    #[arg(skip)]
    pub(super) reminders_toml: String,
    /// `engine.stats_interval_ms` of the nodes (0, the default here: off).
    /// Set by scenarios, not a flag.
    #[arg(skip)]
    pub(super) stats_interval_ms: u64,
    /// The admin key the nodes are started with (protected mode); none:
    /// open mode. Set by scenarios, not a flag.
    #[arg(skip)]
    pub(super) admin_key: Option<String>,
}

/// Where the nodes under test keep their data.
pub(super) enum StoreChoice {
    /// A temporary SQLite file.
    Sqlite,
    /// A throwaway PostgreSQL cluster the bench starts.
    ThrowawayPostgres,
    /// An existing PostgreSQL database.
    PostgresUrl(String),
}

impl ServerArgs {
    /// What `--store` names, checked against `--nodes` and this build.
    pub(super) fn store_choice(&self) -> anyhow::Result<StoreChoice> {
        let choice = match self.store.as_str() {
            "sqlite" => StoreChoice::Sqlite,
            "postgres" => {
                pg::throwaway_available()?;
                StoreChoice::ThrowawayPostgres
            }
            url if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
                StoreChoice::PostgresUrl(url.to_string())
            }
            other => bail!("--store must be sqlite, postgres or a postgres:// URL, not {other:?}"),
        };
        if matches!(choice, StoreChoice::Sqlite) && self.nodes != 1 {
            bail!("--nodes needs --store postgres: an embedded SQLite store serves one node");
        }
        Ok(choice)
    }

    /// The store's kind as the reports name it (never the URL, which may
    /// hold a password).
    pub(super) fn store_kind(&self) -> &'static str {
        if self.store == "sqlite" {
            "sqlite"
        } else {
            "postgres"
        }
    }
}

/// One `herald serve` child process.
pub(super) struct Node {
    pub(super) child: Child,
    pub(super) base: String,
    /// Its config file and log live here.
    pub(super) dir: PathBuf,
    pub(super) name: String,
    /// Its admin key, kept for a restart.
    pub(super) admin_key: Option<String>,
}

impl Node {
    /// Starts `herald serve` on `<dir>/<name>.toml`, protected by
    /// `admin_key` if one is given; returns once it listens.
    pub(super) async fn spawn(
        dir: &Path,
        name: &str,
        admin_key: Option<&str>,
    ) -> anyhow::Result<Node> {
        let log_path = dir.join(format!("{name}.log"));
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)?;
        // `HERALD_BENCH_SERVER` runs another build's server under this
        // build's client and sink, so two builds compare on the same sink.
        let exe = match std::env::var_os("HERALD_BENCH_SERVER") {
            Some(path) => std::path::PathBuf::from(path),
            None => std::env::current_exe().context("locating the herald binary")?,
        };
        let mut cmd = Command::new(exe);
        cmd.arg("serve")
            .arg("--config")
            .arg(dir.join(format!("{name}.toml")))
            // The nodes under test are open (loopback, no admin key) unless a
            // scenario gives them a key.
            .env_remove("HERALD_ADMIN_KEY");
        if let Some(key) = admin_key {
            cmd.env("HERALD_ADMIN_KEY", key);
        }
        let mut child = cmd
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
            admin_key: admin_key.map(str::to_string),
        })
    }

    /// Resident memory, from `/proc`.
    pub(super) fn rss_bytes(&self) -> Option<u64> {
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

    /// Stops it, gracefully first so its store is consistent.
    pub(super) async fn stop(mut self) {
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
/// SQLite file, a database on a throwaway PostgreSQL cluster, or an empty
/// database the caller named), all delivering to the bench's sink. What the
/// bench made is removed at the end unless `--keep`.
pub(super) struct Deployment {
    pub(super) nodes: Vec<Node>,
    dir: PathBuf,
    _tmp: Option<tempfile::TempDir>,
    /// The PostgreSQL store, if that is what the nodes use.
    pub(super) pg: Option<Postgres>,
    /// The nodes' admin key, sent with the harness's own requests.
    admin_key: Option<String>,
}

impl Deployment {
    pub(super) async fn start(sink: &Sink, a: &ServerArgs) -> anyhow::Result<Self> {
        let mut channel = sink.channel_toml(a.concurrency);
        if let Some(choice) = &a.in_doubt {
            channel.push_str(&format!("in_doubt = \"{choice}\"\n"));
        }
        Self::start_with_channel(&channel, a).await
    }

    /// Like [`Self::start`], with the `[[channels]]` TOML (a channel named
    /// `sink`) given as it is.
    pub(super) async fn start_with_channel(
        channel_toml: &str,
        a: &ServerArgs,
    ) -> anyhow::Result<Self> {
        let tmp = tempfile::Builder::new().prefix("herald-bench-").tempdir()?;
        let dir = tmp.path().to_path_buf();
        let (store, pg) = match a.store_choice()? {
            StoreChoice::Sqlite => (
                format!("sqlite://{}", dir.join("herald.db").display()),
                None,
            ),
            StoreChoice::ThrowawayPostgres => {
                let pg = Postgres::throwaway(a.pg_fast, a.pg_statements, &a.pg_set)?;
                (pg.url().to_string(), Some(pg))
            }
            StoreChoice::PostgresUrl(url) => {
                let pg = Postgres::existing(&url).await?;
                (url, Some(pg))
            }
        };
        // A TOML basic string: JSON's escapes are valid in it.
        let store = serde_json::to_string(&store)?;
        // App reminders go to the sink, unless it is a channel that cannot
        // send Herald's reminder shape without a template (SMS, vendor push).
        let no_reminders = [
            "kind = \"tencent_sms\"",
            "kind = \"aliyun_sms\"",
            "kind = \"huawei_push\"",
            "kind = \"xiaomi_push\"",
            "kind = \"honor_push\"",
            "kind = \"oppo_push\"",
            "kind = \"vivo_push\"",
        ]
        .iter()
        .any(|k| channel_toml.contains(k));
        let reminder_route = if no_reminders {
            ""
        } else {
            "[reminders.channels]\napp = \"sink\""
        };
        let mut nodes = Vec::new();
        for i in 1..=a.nodes.max(1) {
            let name = format!("node-{i}");
            let config = format!(
                r#"listen = "127.0.0.1:0"
store = {store}
node_id = "{name}"
[store_options]
sqlite_synchronous = "{sync}"
[engine]
stats_interval_ms = {stats}
[api]
bulk_max_lines = 1000000
bulk_max_bytes = 536870912
[reminders]
merge_window_ms = {merge}
{reminders}
{reminder_route}
{channel}
{extra}
"#,
                channel = channel_toml,
                reminder_route = reminder_route,
                extra = a.extra_toml,
                merge = a.merge_window_ms,
                reminders = a.reminders_toml,
                sync = a.synchronous,
                stats = a.stats_interval_ms,
            );
            std::fs::write(dir.join(format!("{name}.toml")), config)?;
            nodes.push(Node::spawn(&dir, &name, a.admin_key.as_deref()).await?);
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
            pg,
            admin_key: a.admin_key.clone(),
        };
        if d.nodes.len() > 1 {
            d.wait_balanced().await?;
        }
        Ok(d)
    }

    /// The first node's URL.
    pub(super) fn base(&self) -> &str {
        &self.nodes[0].base
    }

    pub(super) fn bases(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.base.clone()).collect()
    }

    /// Waits until the nodes own every shard between them.
    async fn wait_balanced(&self) -> anyhow::Result<()> {
        let http = http_client()?;
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let v: serde_json::Value = self
                .as_admin(http.get(format!("{}/v1/cluster", self.base())))
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
    pub(super) async fn counter(&self, http: &reqwest::Client, name: &str) -> anyhow::Result<f64> {
        let mut sum = 0.0;
        for n in &self.nodes {
            let text = self
                .as_admin(http.get(format!("{}/metrics", n.base)))
                .send()
                .await?
                .text()
                .await?;
            sum += metric_value(&text, name).unwrap_or(0.0);
        }
        Ok(sum)
    }

    /// `req` with the admin key, if the nodes are protected.
    pub(super) fn as_admin(&self, req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.admin_key {
            Some(key) => req.bearer_auth(key),
            None => req,
        }
    }

    /// The SQLite file the nodes use, if that is the store.
    pub(super) fn sqlite_path(&self) -> Option<PathBuf> {
        self.pg.is_none().then(|| self.dir.join("herald.db"))
    }

    /// The store's size on disk: the SQLite file with its WAL, or the
    /// database's `pg_database_size` on a cluster the bench started (`None`
    /// for a database named by URL, whose cluster the bench cannot ask).
    pub(super) fn store_bytes(&self) -> Option<u64> {
        match (&self.pg, self.sqlite_path()) {
            (Some(pg), _) => pg.database_bytes(),
            (None, Some(db)) => {
                let len = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len());
                Some(len(&db) + len(&db.with_extension("db-wal")))
            }
            (None, None) => None,
        }
    }

    pub(super) fn log_path(&self) -> PathBuf {
        self.dir.join("node-1.log")
    }

    pub(super) fn pids(&self) -> Vec<u32> {
        self.nodes.iter().filter_map(|n| n.child.id()).collect()
    }

    pub(super) async fn stop(self) {
        for n in self.nodes {
            n.stop().await;
        }
    }
}

/// The value of an unlabelled Prometheus sample.
pub(super) fn metric_value(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

/// The HTTP client the bench drives the nodes with.
pub(super) fn http_client() -> anyhow::Result<reqwest::Client> {
    Ok(reqwest::Client::builder()
        .pool_max_idle_per_host(256)
        .tcp_nodelay(true)
        .build()?)
}

/// `--pg-set KEY=VALUE`: a server setting of the throwaway cluster.
fn parse_pg_setting(arg: &str) -> Result<(String, String), String> {
    let (key, value) = arg
        .split_once('=')
        .ok_or_else(|| format!("--pg-set wants KEY=VALUE, got {arg:?}"))?;
    let key = key.trim();
    if key.is_empty()
        || !key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
    {
        return Err(format!("--pg-set: {key:?} is not a setting name"));
    }
    if ["fsync", "synchronous_commit", "full_page_writes"].contains(&key) {
        return Err(format!(
            "--pg-set: {key} is not changed here; --pg-fast turns durability off"
        ));
    }
    Ok((key.to_string(), value.trim().to_string()))
}

#[cfg(test)]
mod pg_set_tests {
    use super::parse_pg_setting;

    #[test]
    fn settings_parse_and_durability_is_refused() {
        assert_eq!(
            parse_pg_setting("max_wal_size=8GB"),
            Ok(("max_wal_size".into(), "8GB".into()))
        );
        assert!(parse_pg_setting("max_wal_size").is_err());
        assert!(parse_pg_setting("=1").is_err());
        assert!(parse_pg_setting("a b=1").is_err());
        let refused = parse_pg_setting("fsync=off").unwrap_err();
        assert!(refused.contains("--pg-fast"), "{refused}");
        assert!(parse_pg_setting("synchronous_commit=off").is_err());
    }
}
