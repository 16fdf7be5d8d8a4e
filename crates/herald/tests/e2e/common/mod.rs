//! Harness for end-to-end tests: the real `herald` binary, as `serve` and as
//! `mock`, in child processes, talked to over real HTTP.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

pub const BIN: &str = env!("CARGO_BIN_EXE_herald");

/// Starts `herald <args>` and waits for its "... listening on URL" line.
async fn spawn_listening(args: &[&str], log: &Path, env: &[(&str, &str)]) -> (Child, String) {
    let log_file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .expect("log file");
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        // Open mode unless a test sets a key: the developer's own keys stay out.
        .env_remove("HERALD_ADMIN_KEY")
        .env_remove("HERALD_KEY")
        .env("RUST_LOG", "info,herald::delivery=warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::from(log_file))
        .kill_on_drop(true);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("spawn herald");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let url = tokio::time::timeout(Duration::from_secs(60), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some((_, url)) = line.split_once(" listening on ") {
                return Some(url.trim().to_string());
            }
        }
        None
    })
    .await
    .ok()
    .flatten()
    .unwrap_or_else(|| {
        panic!(
            "herald {args:?} did not start; log: {}",
            std::fs::read_to_string(log).unwrap_or_default()
        )
    });
    // Keep draining stdout so the child never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, url)
}

pub struct Mock {
    pub child: Child,
    pub url: String,
    _dir: tempfile::TempDir,
}

impl Mock {
    pub async fn start(flags: &[&str]) -> Mock {
        let dir = tempfile::tempdir().unwrap();
        let mut args = vec!["mock", "--listen", "127.0.0.1:0"];
        args.extend_from_slice(flags);
        let (child, url) = spawn_listening(&args, &dir.path().join("mock.log"), &[]).await;
        Mock {
            child,
            url,
            _dir: dir,
        }
    }

    pub fn hook(&self) -> String {
        format!("{}/hook", self.url)
    }

    pub async fn stats(&self) -> Value {
        get_json(&format!("{}/_mock/stats", self.url)).await.1
    }

    pub async fn requests(&self, key: Option<&str>) -> Vec<Value> {
        let mut url = format!("{}/_mock/requests?limit=10000", self.url);
        if let Some(k) = key {
            url.push_str(&format!("&key={k}"));
        }
        let v = get_json(&url).await.1;
        v.as_array().cloned().unwrap_or_default()
    }

    pub async fn key(&self, key: &str) -> Value {
        get_json(&format!("{}/_mock/keys/{key}", self.url)).await.1
    }

    /// `GET` of one of the mock's routes (`/_mock/...`), as JSON.
    pub async fn get(&self, path: &str) -> Value {
        get_json(&format!("{}{path}", self.url)).await.1
    }

    /// `POST` of JSON to one of the mock's routes; it must be taken.
    pub async fn post(&self, path: &str, body: Value) {
        let (st, v) = post_raw(
            &format!("{}{path}", self.url),
            "application/json",
            body.to_string(),
        )
        .await;
        assert!(st < 300, "{path}: {st} {v}");
    }
}

pub struct Server {
    pub child: Option<Child>,
    pub url: String,
    pub dir: tempfile::TempDir,
    config: String,
    /// Extra environment for the server process (secrets, RUST_LOG).
    env: Vec<(String, String)>,
}

impl Server {
    /// Starts a server on a fresh data directory. `extra` is TOML appended
    /// after `listen` and `store` (channels, engine settings...).
    pub async fn start(extra: &str) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("data").join("herald.db");
        Self::start_on(&format!("sqlite://{}", db.display()), dir, extra).await
    }

    /// Starts a server on `store` (e.g. a PostgreSQL URL shared by a cluster).
    pub async fn start_on(store: &str, dir: tempfile::TempDir, extra: &str) -> Server {
        Self::start_with_env(store, dir, extra, &[]).await
    }

    /// Like [`Self::start_on`], with extra environment for the process.
    pub async fn start_with_env(
        store: &str,
        dir: tempfile::TempDir,
        extra: &str,
        env: &[(&str, &str)],
    ) -> Server {
        Self::start_listening("127.0.0.1:0", store, dir, extra, env).await
    }

    /// Starts a server listening on `listen` (e.g. `0.0.0.0:0`, which needs
    /// an admin key in `env`) on a fresh SQLite store.
    pub async fn start_on_address(listen: &str, extra: &str, env: &[(&str, &str)]) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("data").join("herald.db");
        let store = format!("sqlite://{}", db.display());
        let mut s = Self::start_listening(listen, &store, dir, extra, env).await;
        // A wildcard address is reached through loopback.
        s.url = s.url.replace("://0.0.0.0:", "://127.0.0.1:");
        s
    }

    async fn start_listening(
        listen: &str,
        store: &str,
        dir: tempfile::TempDir,
        extra: &str,
        env: &[(&str, &str)],
    ) -> Server {
        let config = format!("listen = \"{listen}\"\nstore = \"{store}\"\n{extra}\n");
        let mut s = Server {
            child: None,
            url: String::new(),
            dir,
            config,
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        s.spawn().await;
        s
    }

    /// Sends a signal (`STOP`, `CONT`, ...) to the server process.
    pub fn signal(&self, sig: &str) {
        let pid = self
            .child
            .as_ref()
            .and_then(|c| c.id())
            .expect("running server");
        let st = std::process::Command::new("kill")
            .args([&format!("-{sig}"), &pid.to_string()])
            .status()
            .unwrap();
        assert!(st.success());
    }

    /// A config with one webhook channel `hooks` to `hook_url`.
    pub fn webhook_config(hook_url: &str, channel_extra: &str, top_extra: &str) -> String {
        format!(
            "{top_extra}\n[[channels]]\nname = \"hooks\"\nkind = \"webhook\"\nurl = \"{hook_url}\"\n{channel_extra}\n"
        )
    }

    pub fn config_path(&self) -> PathBuf {
        self.dir.path().join("herald.toml")
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    async fn spawn(&mut self) {
        std::fs::write(self.config_path(), &self.config).unwrap();
        let cfg = self.config_path();
        let cfg = cfg.to_str().unwrap();
        let env: Vec<(&str, &str)> = self
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let (child, url) = spawn_listening(
            &["serve", "--config", cfg],
            &self.dir.path().join("server.log"),
            &env,
        )
        .await;
        self.child = Some(child);
        self.url = url;
    }

    /// `kill -9`: no chance to flush or drain anything.
    pub async fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let pid = c.id().expect("pid");
            let st = std::process::Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status()
                .unwrap();
            assert!(st.success());
            let _ = c.wait().await;
        }
    }

    /// SIGTERM and wait for a graceful exit.
    pub async fn terminate(&mut self) {
        if let Some(mut c) = self.child.take() {
            let pid = c.id().expect("pid");
            std::process::Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status()
                .unwrap();
            let st = tokio::time::timeout(Duration::from_secs(30), c.wait())
                .await
                .expect("exits")
                .unwrap();
            assert!(st.success(), "graceful exit: {st:?}\n{}", self.log());
        }
    }

    /// Starts the server again on the same data directory.
    pub async fn restart(&mut self) {
        self.spawn().await;
    }

    pub async fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        post_raw(
            &format!("{}{path}", self.url),
            "application/json",
            body.to_string(),
        )
        .await
    }

    pub async fn post_raw(&self, path: &str, ctype: &str, body: String) -> (u16, Value) {
        post_raw(&format!("{}{path}", self.url), ctype, body).await
    }

    /// Schedules `n` webhook timers on channel `hooks`, due evenly over
    /// `spread_ms` from `start`, recipients `{tag}-{i}`; asserts every one was
    /// acknowledged.
    pub async fn schedule_spread(&self, n: usize, start: i64, spread_ms: i64, tag: &str) {
        for chunk in (0..n).collect::<Vec<_>>().chunks(10_000) {
            let mut lines = String::new();
            for &i in chunk {
                let due = start + (i as i64 * spread_ms) / n as i64;
                let line = serde_json::json!({"fire_at": rfc3339(due), "channel": "hooks",
                    "recipient": format!("{tag}-{i}"), "message": {"i": i}});
                lines.push_str(&line.to_string());
                lines.push('\n');
            }
            let (s, out) = self.bulk(&lines).await;
            assert_eq!(s, 200);
            assert_eq!(out.len(), chunk.len());
            assert!(
                out.iter().all(|l| l["status"] == 201),
                "every timer acknowledged"
            );
        }
    }

    /// Bulk NDJSON timers; returns the status and the answer lines.
    pub async fn bulk(&self, lines: &str) -> (u16, Vec<Value>) {
        self.bulk_at("/v1/timers:bulk", lines).await
    }

    /// NDJSON to the bulk endpoint at `path`; the status and the answer lines.
    pub async fn bulk_at(&self, path: &str, lines: &str) -> (u16, Vec<Value>) {
        let resp = client()
            .post(format!("{}{path}", self.url))
            .header("content-type", "application/x-ndjson")
            .body(lines.to_string())
            .send()
            .await
            .unwrap();
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        if status != 200 {
            return (
                status,
                vec![serde_json::from_str(&text).unwrap_or(Value::Null)],
            );
        }
        (
            status,
            text.lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect(),
        )
    }

    pub async fn put(&self, path: &str, body: &Value) -> (u16, Value) {
        let resp = client()
            .put(format!("{}{path}", self.url))
            .json(body)
            .send()
            .await
            .unwrap();
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        get_json(&format!("{}{path}", self.url)).await
    }

    pub async fn delete(&self, path: &str) -> (u16, Value) {
        let resp = client()
            .delete(format!("{}{path}", self.url))
            .send()
            .await
            .unwrap();
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }

    /// A timer's send log.
    pub async fn deliveries(&self, id: i64) -> Vec<Value> {
        self.get(&format!("/v1/timers/{id}/deliveries")).await.1["deliveries"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// Waits up to `within` for timer `id` to reach `state`; panics with the
    /// timer and its send log if it does not.
    pub async fn settled(&self, id: i64, state: &str, within: Duration) -> Value {
        let mut last = Value::Null;
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            last = self.timer(id).await;
            if last["state"] == state {
                return last;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!(
            "timer {id} never became {state}: {last}\n{:?}",
            self.deliveries(id).await
        );
    }

    pub async fn timer(&self, id: i64) -> Value {
        let (s, v) = self.get(&format!("/v1/timers/{id}")).await;
        assert_eq!(s, 200, "{v}");
        v
    }

    /// Total timers stored, whatever their state.
    pub async fn total_timers(&self) -> u64 {
        let (_, v) = self.get("/v1/stats").await;
        v["timers"]
            .as_object()
            .unwrap()
            .values()
            .map(|n| n.as_u64().unwrap())
            .sum()
    }

    pub async fn metrics(&self) -> String {
        client()
            .get(format!("{}/metrics", self.url))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }
}

pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap()
}

pub async fn post_raw(url: &str, ctype: &str, body: String) -> (u16, Value) {
    send_raw(reqwest::Method::POST, url, ctype, body).await
}

/// `method url` with `body` as `ctype`: the status and the answer (JSON, or
/// the text when it is not JSON).
pub async fn send_raw(
    method: reqwest::Method,
    url: &str,
    ctype: &str,
    body: String,
) -> (u16, Value) {
    let resp = client()
        .request(method, url)
        .header("content-type", ctype)
        .body(body)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// One request with `client` to `url`, with these headers and an optional
/// `(content type, body)`: status, headers and body (JSON, or the text).
pub async fn exchange(
    client: &reqwest::Client,
    method: reqwest::Method,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<(&str, String)>,
) -> (u16, reqwest::header::HeaderMap, Value) {
    let mut req = client.request(method, url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    if let Some((ct, b)) = body {
        req = req.header("content-type", ct).body(b);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let text = resp.text().await.unwrap();
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, headers, body)
}

pub async fn get_json(url: &str) -> (u16, Value) {
    let resp = client().get(url).send().await.unwrap();
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// Polls `cond` until it holds or `timeout` passes; panics with `what` then.
pub async fn wait_for<F, Fut>(what: &str, timeout: Duration, mut cond: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if cond().await {
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub fn parse_ms(rfc3339: &str) -> i64 {
    rfc3339.parse::<jiff::Timestamp>().unwrap().as_millisecond()
}

/// Unix milliseconds now.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Runs `herald SUBCOMMAND ARGS --server URL` without a key: exit success,
/// stdout, stderr.
pub async fn herald_cli(subcommand: &str, server: &str, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(BIN)
        .arg(subcommand)
        .args(args)
        .args(["--server", server])
        .env_remove("HERALD_KEY")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// RFC 3339 with milliseconds, as the API takes `fire_at`.
pub fn rfc3339(ms: i64) -> String {
    format!("{:.3}", jiff::Timestamp::from_millisecond(ms).unwrap())
}

/// A fresh database on the shared throwaway PostgreSQL cluster, with its URL;
/// `None` when PostgreSQL is not installed (and not required).
pub fn pg_database(prefix: &str) -> Option<(herald_pgtemp::TempDatabase, String)> {
    let pg = match herald_pgtemp::PgTemp::shared() {
        Ok(Some(pg)) => pg,
        Ok(None) => return None,
        Err(e) => panic!("PostgreSQL is required here but did not start: {e}"),
    };
    let db = pg.fresh_database(prefix).expect("create database");
    let url = db.url().to_string();
    Some((db, url))
}

/// A campaign on push channel `channel` to 2,500 device tokens (`{prefix}N`,
/// five of them `invalid-N`, which every vendor mock answers as gone):
/// 2,495 sent and 5 failed, in `calls` provider calls at the `vendor`'s
/// mock, which counts them under `/_mock/{vendor}/stats` (a batching kind
/// sends its tokens 1,000 to a call; the range allows calls cut smaller at
/// a segment worker's in-doubt mark).
pub async fn push_campaign_of_2500(
    s: &Server,
    m: &Mock,
    channel: &str,
    vendor: &str,
    prefix: &str,
    message: Value,
    calls: std::ops::RangeInclusive<u64>,
) {
    m.post("/_mock/reset", json!({})).await;
    let mut body = String::new();
    for i in 0..2_500 {
        let token = if i % 500 == 7 {
            format!("invalid-{i}")
        } else {
            format!("{prefix}{i}")
        };
        body.push_str(&format!("{{\"recipient\":\"{token}\"}}\n"));
    }
    let (st, a) = s
        .post_raw("/v1/audiences", "application/x-ndjson", body)
        .await;
    assert_eq!(st, 201, "{a}");
    let (st, job) = s
        .post(
            "/v1/jobs",
            &json!({"audience_id": a["id"], "channel": channel, "message": message,
                    "segment_size": 2500}),
        )
        .await;
    assert_eq!(st, 201, "{job}");
    let id = job["id"].as_i64().unwrap();
    wait_for(
        "the push campaign done",
        Duration::from_secs(60),
        || async { s.get(&format!("/v1/jobs/{id}")).await.1["state"] == "done" },
    )
    .await;
    let j = s.get(&format!("/v1/jobs/{id}")).await.1;
    let t = &j["totals"];
    assert_eq!(
        (t["sent"].as_u64(), t["failed"].as_u64()),
        (Some(2_495), Some(5)),
        "{j}"
    );
    let st = m.get(&format!("/_mock/{vendor}/stats")).await;
    let made = st["calls"].as_u64().unwrap();
    assert!(calls.contains(&made), "{made} calls, not {calls:?}: {st}");
    assert_eq!(st["delivered"], 2_495, "{st}");
    assert_eq!(st["invalid_tokens"], 5, "{st}");
}
