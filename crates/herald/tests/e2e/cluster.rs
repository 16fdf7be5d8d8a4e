//! Cluster tests: several real `herald serve` processes on one throwaway
//! PostgreSQL, a mock sink, `kill -9`, graceful restarts and SIGSTOP.
//!
//! Without `initdb`/`postgres` these skip with a loud message, unless
//! `HERALD_REQUIRE_PG=1`, where they fail.

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};

/// Short leases so the tests run in seconds; the defaults are 6 s / 2 s.
const LEASE_MS: u64 = 3_000;
const HEARTBEAT_MS: u64 = 500;
const MAX_INFLIGHT: u64 = 2_000;

async fn start_node(store: &str, id: &str, hook: &str) -> Server {
    let extra = Server::webhook_config(
        hook,
        "concurrency = 64",
        &format!(
            "node_id = \"{id}\"\n[engine]\nlease_ms = {LEASE_MS}\nheartbeat_ms = {HEARTBEAT_MS}\nlease_guard_ms = 500\n\
             max_inflight = {MAX_INFLIGHT}\nload_interval_ms = 200\nrescan_interval_ms = 5000\nstats_interval_ms = 0\n\
             [reminders]\ndefault_channel = \"hooks\""
        ),
    );
    Server::start_on(store, tempfile::tempdir().unwrap(), &extra).await
}

async fn cluster_view(node: &Server) -> Value {
    node.get("/v1/cluster").await.1
}

/// Waits until the live nodes own every shard between them, each near its fair share.
async fn wait_balanced(node: &Server, ids: &[&str]) {
    let fair = 256usize.div_ceil(ids.len());
    wait_for("a balanced cluster", Duration::from_secs(60), || async {
        let v = cluster_view(node).await;
        let owners = v["owners"].as_object().cloned().unwrap_or_default();
        v["unowned"] == 0
            && owners.len() == ids.len()
            && ids.iter().all(|id| {
                owners
                    .get(*id)
                    .and_then(|n| n.as_u64())
                    .is_some_and(|n| n as usize + 3 >= fair)
            })
    })
    .await;
}

async fn delivered(mock: &Mock) -> u64 {
    mock.stats().await["unique_delivered"].as_u64().unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_node_loses_nothing_and_its_shards_move_within_the_lease() {
    let Some((_db, store)) = pg_database("death") else {
        return;
    };
    let mock = Mock::start(&[]).await;
    let a = start_node(&store, "node-a", &mock.hook()).await;
    let mut b = start_node(&store, "node-b", &mock.hook()).await;
    let c = start_node(&store, "node-c", &mock.hook()).await;
    wait_balanced(&a, &["node-a", "node-b", "node-c"]).await;

    let n = 100_000;
    a.schedule_spread(n, now_ms() + 3_000, 20_000, "t").await;
    wait_for("firing under way", Duration::from_secs(60), || async {
        delivered(&mock).await >= 30_000
    })
    .await;
    b.kill9().await;
    let killed = Instant::now();
    // The survivors take b's shards once its leases run out.
    wait_for("b's shards taken over", Duration::from_secs(30), || async {
        let v = cluster_view(&a).await;
        v["unowned"] == 0 && v["owners"].get("node-b").is_none()
    })
    .await;
    let takeover = killed.elapsed();
    wait_for(
        "every timer at the sink",
        Duration::from_secs(120),
        || async { delivered(&mock).await == n as u64 },
    )
    .await;
    let stats = mock.stats().await;
    let dups = stats["duplicates"].as_u64().unwrap();
    eprintln!(
        "node death: shards moved {takeover:?} after the kill; duplicates {dups} (bound {MAX_INFLIGHT})"
    );
    assert!(
        takeover <= Duration::from_millis(LEASE_MS + 2 * HEARTBEAT_MS + 2_000),
        "takeover took {takeover:?}"
    );
    assert!(
        dups <= MAX_INFLIGHT,
        "{dups} duplicates, more than node b could have had in flight"
    );
    wait_for("every timer done", Duration::from_secs(30), || async {
        a.get("/v1/stats").await.1["timers"]["done"].as_u64() == Some(n as u64)
    })
    .await;
    drop(c);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_restart_loses_no_timer() {
    let Some((_db, store)) = pg_database("rolling") else {
        return;
    };
    let mock = Mock::start(&[]).await;
    let ids = ["node-a", "node-b", "node-c"];
    let mut nodes = Vec::new();
    for id in ids {
        nodes.push(start_node(&store, id, &mock.hook()).await);
    }
    wait_balanced(&nodes[0], &ids).await;
    let n = 30_000;
    nodes[0]
        .schedule_spread(n, now_ms() + 2_000, 15_000, "r")
        .await;
    // Restart every node in turn while the timers fire.
    for node in nodes.iter_mut() {
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        node.terminate().await;
        node.restart().await;
    }
    wait_for(
        "every timer at the sink",
        Duration::from_secs(120),
        || async { delivered(&mock).await == n as u64 },
    )
    .await;
    wait_for("every timer done", Duration::from_secs(30), || async {
        nodes[0].get("/v1/stats").await.1["timers"]["done"].as_u64() == Some(n as u64)
    })
    .await;
    let dups = mock.stats().await["duplicates"].as_u64().unwrap();
    eprintln!("rolling restart: {n} delivered, {dups} duplicates");
    // Graceful stops drain what is in flight before handing shards over.
    assert!(dups <= 64, "{dups} duplicates after graceful restarts");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_paused_past_its_lease_fires_nothing_for_lost_shards() {
    let Some((_db, store)) = pg_database("fence") else {
        return;
    };
    let mock = Mock::start(&[]).await;
    let a = start_node(&store, "node-a", &mock.hook()).await;
    let b = start_node(&store, "node-b", &mock.hook()).await;
    wait_balanced(&a, &["node-a", "node-b"]).await;
    // Timers in every shard, due from 3 s out: b wheels its share, but none is
    // due yet when it stops, so it has nothing in flight.
    let n = 6_000;
    let start = now_ms() + 3_000;
    a.schedule_spread(n, start, 9_000, "f").await;
    let wait_until =
        |t: i64| tokio::time::sleep(Duration::from_millis((t - now_ms()).max(0) as u64));
    wait_until(start - 800).await;
    assert_eq!(delivered(&mock).await, 0);
    // b stops, and stays stopped past its lease while its timers fall due.
    b.signal("STOP");
    let paused = Instant::now();
    wait_for("a takes b's shards", Duration::from_secs(30), || async {
        let v = cluster_view(&a).await;
        v["owners"].get("node-b").is_none() && v["unowned"] == 0
    })
    .await;
    let keys_before = delivered(&mock).await;
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    eprintln!(
        "fencing: b paused for {:?}; {keys_before} delivered before it resumes",
        paused.elapsed()
    );
    b.signal("CONT");
    wait_for(
        "every timer at the sink",
        Duration::from_secs(60),
        || async { delivered(&mock).await == n as u64 },
    )
    .await;
    // Give b time to act on anything stale it still held.
    tokio::time::sleep(Duration::from_millis(3_000)).await;
    let stats = mock.stats().await;
    let dups = stats["duplicates"].as_u64().unwrap();
    let fenced = metric(&b.metrics().await, "herald_fenced_total");
    eprintln!("fencing: duplicates {dups}; node b fenced {fenced} sends or outcomes");
    // b had nothing in flight when it stopped, so any duplicate would be b
    // firing, after it resumed, a timer of a shard it had lost.
    assert_eq!(dups, 0, "the resumed node fired timers of shards it lost");
    let v = cluster_view(&a).await;
    assert_eq!(v["unowned"], 0);
}

fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reminders_work_across_nodes_and_merge_on_the_users_node() {
    let Some((_db, store)) = pg_database("reminders") else {
        return;
    };
    let mock = Mock::start(&[]).await;
    let a = start_node(&store, "node-a", &mock.hook()).await;
    let b = start_node(&store, "node-b", &mock.hook()).await;
    wait_balanced(&a, &["node-a", "node-b"]).await;
    // Subjects through node a, 10 s apart; the first one's 5-minute
    // reminders fall due in a few seconds.
    let start = now_ms() + 300_000 + 4_000;
    for (i, id) in ["m1", "m2", "m3"].iter().enumerate() {
        let (s, v) = a
            .put(
                &format!("/v1/subjects/{id}"),
                &json!({"start_at": rfc3339(start + i as i64 * 10_000)}),
            )
            .await;
        assert_eq!(s, 201, "{v}");
    }
    // One user on all three, through both nodes: one merged message.
    for (i, id) in ["m1", "m2", "m3"].iter().enumerate() {
        let node = if i % 2 == 0 { &b } else { &a };
        let (s, v) = node
            .post(
                "/v1/reminders",
                &json!({"user_id": "zoe", "subject_id": id, "channel_type": "app", "lead_minutes": 5}),
            )
            .await;
        assert_eq!(s, 201, "{v}");
    }
    // 2,000 more users of m1 through node b: their shards are spread over both nodes.
    let n = 2_000;
    let lines: String = (0..n)
        .map(|i| {
            json!({"user_id": format!("u{i}"), "subject_id": "m1", "channel_type": "app",
                   "lead_minutes": 5})
            .to_string()
                + "\n"
        })
        .collect();
    let (s, out) = b.bulk_at("/v1/reminders:bulk", &lines).await;
    assert_eq!(s, 200);
    assert!(out.iter().all(|l| l["status"] == 201));
    wait_for(
        "every reminder at the sink",
        Duration::from_secs(60),
        || async { delivered(&mock).await == n + 1 },
    )
    .await;
    wait_for("every reminder done", Duration::from_secs(30), || async {
        a.get("/v1/stats").await.1["timers"]["done"].as_u64() == Some(n + 3)
    })
    .await;
    let zoe: Vec<Value> = mock
        .requests(None)
        .await
        .into_iter()
        .filter(|r| r["body"]["recipient"] == "zoe")
        .collect();
    assert_eq!(zoe.len(), 1, "{zoe:?}");
    assert_eq!(zoe[0]["body"]["message"]["count"], 3);
    assert_eq!(mock.stats().await["duplicates"], 0);
    // Both nodes delivered some of them.
    for node in [&a, &b] {
        let m = node.metrics().await;
        assert!(
            metric(&m, "herald_timers_done_total") > 0.0,
            "a node delivered none"
        );
    }
}

// ---- Campaigns across nodes ----

/// A node with short segment leases and quick sweeps.
/// What one campaign worker of the jobs nodes may have out without a
/// recorded outcome: a killed or stalled node repeats at most
/// `4 workers × DOUBT_WINDOW` recipients (docs/configuration.md, `[jobs]`).
const DOUBT_WINDOW: u64 = 256;

async fn start_jobs_node(store: &str, id: &str, hook: &str, channel_extra: &str) -> Server {
    let extra = Server::webhook_config(
        hook,
        channel_extra,
        &format!(
            "node_id = \"{id}\"\n[engine]\nlease_ms = {LEASE_MS}\nheartbeat_ms = {HEARTBEAT_MS}\nlease_guard_ms = 500\n\
             stats_interval_ms = 0\n[jobs]\nlease_ms = 3000\nlease_guard_ms = 500\nsweep_interval_ms = 200\n\
             idle_poll_ms = 100\nrecord_every = 200\nworkers = 4\nworker_concurrency = 32\n\
             doubt_window = {DOUBT_WINDOW}"
        ),
    );
    Server::start_on(store, tempfile::tempdir().unwrap(), &extra).await
}

/// Uploads `n` recipients through `node`; returns the audience id.
async fn upload_audience(node: &Server, n: usize, tag: &str) -> i64 {
    let mut body = String::with_capacity(n * 32);
    for i in 0..n {
        body.push_str(&format!("{{\"recipient\":\"{tag}-{i}\"}}\n"));
    }
    let (st, v) = node
        .post_raw("/v1/audiences", "application/x-ndjson", body)
        .await;
    assert_eq!(st, 201, "{v}");
    v["id"].as_i64().unwrap()
}

async fn job_view(node: &Server, id: i64) -> Value {
    node.get(&format!("/v1/jobs/{id}")).await.1
}

/// The ids of the job's segments that a worker of node `owner` holds a
/// running claim on (a claim's owner is `{node}/w{worker}`).
async fn running_segments_of(node: &Server, id: i64, owner: &str) -> Vec<i64> {
    let prefix = format!("{owner}/");
    let mut held = Vec::new();
    let mut after = 0i64;
    loop {
        let (st, v) = node
            .get(&format!("/v1/jobs/{id}/segments?after={after}&limit=1000"))
            .await;
        assert_eq!(st, 200, "{v}");
        for s in v["segments"].as_array().into_iter().flatten() {
            if s["state"] == "running"
                && s["owner"].as_str().is_some_and(|o| o.starts_with(&prefix))
            {
                held.extend(s["id"].as_i64());
            }
        }
        match v["next_after"].as_i64() {
            Some(next) => after = next,
            None => return held,
        }
    }
}

/// Every index `0..total` exactly once in the job's send log, delivered.
async fn assert_sent_once(node: &Server, id: i64, total: usize) {
    let mut seen = vec![false; total];
    let mut start = 0;
    while start < total {
        let end = (start + 1000).min(total);
        let (st, v) = node
            .get(&format!("/v1/jobs/{id}/sends?start={start}&end={end}"))
            .await;
        assert_eq!(st, 200, "{v}");
        for row in v["sends"].as_array().unwrap() {
            let i = row["index"].as_u64().unwrap() as usize;
            assert!(!seen[i], "index {i} twice");
            seen[i] = true;
            assert_eq!(row["state"], "delivered", "{row}");
        }
        start = end;
    }
    assert!(
        seen.iter().all(|s| *s),
        "recipients missing from the send log"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_campaign_on_three_nodes_survives_a_killed_node() {
    let Some((_db, store)) = pg_database("campaign") else {
        return;
    };
    let n = 1_000_000usize;
    let mock = Mock::start(&[]).await;
    let a = start_jobs_node(&store, "node-a", &mock.hook(), "concurrency = 64").await;
    let mut b = start_jobs_node(&store, "node-b", &mock.hook(), "concurrency = 64").await;
    let c = start_jobs_node(&store, "node-c", &mock.hook(), "concurrency = 64").await;
    let audience = upload_audience(&a, n, "follower").await;
    let (st, j) = c
        .post(
            "/v1/jobs",
            &json!({"audience_id": audience, "channel": "hooks", "message": {"template": "sale"}}),
        )
        .await;
    assert_eq!(st, 201, "{j}");
    let id = j["id"].as_i64().unwrap();
    wait_for(
        "a third of the campaign",
        Duration::from_secs(600),
        || async { delivered(&mock).await >= n as u64 / 3 },
    )
    .await;
    // Kill node-b while it holds a claim, so the kill tests re-issuing one.
    // On a loaded machine node-b may be between claims when a third is
    // reached; then wait for its next one.
    wait_for(
        "node-b holding a claim",
        Duration::from_secs(120),
        || async { !running_segments_of(&a, id, "node-b").await.is_empty() },
    )
    .await;
    b.kill9().await;
    let at_kill = delivered(&mock).await;
    let held = running_segments_of(&a, id, "node-b").await;
    println!("node-b killed at {at_kill} of {n}, holding segments {held:?}");
    assert!(at_kill < n as u64, "the kill must land mid-campaign");
    wait_for("the job to end", Duration::from_secs(900), || async {
        job_view(&a, id).await["state"] != "running"
    })
    .await;
    let j = job_view(&c, id).await;
    assert_eq!(j["state"], "done", "{j}");
    assert_eq!(j["totals"]["sent"], n as u64, "{j}");
    if !held.is_empty() {
        // It may have finished a claim between the check and the kill, but
        // whatever it still held at the kill must have been re-issued.
        assert!(
            j["segments"]["abandoned"].as_u64().unwrap_or(0) > 0,
            "node-b's claims {held:?} were re-issued: {j}"
        );
    }
    assert_sent_once(&a, id, n).await;
    let stats = mock.stats().await;
    assert_eq!(stats["unique_delivered"], n as u64, "{stats}");
    let repeats = stats["duplicates"].as_u64().unwrap_or(0);
    println!("kill -9 of node-b at {at_kill} of {n}: {repeats} repeated keys");
    assert!(repeats <= 4 * DOUBT_WINDOW, "{stats}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_stalled_past_its_lease_loses_its_segment_and_stops_sending() {
    let Some((_db, store)) = pg_database("stall") else {
        return;
    };
    let n = 60_000usize;
    let mock = Mock::start(&[]).await;
    // Throttled, so the job is still running when node-a wakes up.
    let a = start_jobs_node(&store, "node-a", &mock.hook(), "rate_per_sec = 4000").await;
    let b = start_jobs_node(&store, "node-b", &mock.hook(), "rate_per_sec = 4000").await;
    let audience = upload_audience(&a, n, "stall").await;
    let (st, j) = a
        .post(
            "/v1/jobs",
            &json!({"audience_id": audience, "channel": "hooks", "message": {"m": 1}, "segment_size": 500}),
        )
        .await;
    assert_eq!(st, 201, "{j}");
    let id = j["id"].as_i64().unwrap();
    wait_for("both nodes sending", Duration::from_secs(60), || async {
        delivered(&mock).await >= 5_000
    })
    .await;
    a.signal("STOP");
    // Past the 3 s segment lease: node-b's sweeper re-issues node-a's claims.
    wait_for(
        "node-a's segments re-issued",
        // Generous: the sweeper runs on a loaded CI machine beside the
        // other cluster tests of this binary.
        Duration::from_secs(90),
        || async {
            job_view(&b, id).await["segments"]["abandoned"]
                .as_u64()
                .unwrap_or(0)
                > 0
        },
    )
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    a.signal("CONT");
    wait_for("the job to end", Duration::from_secs(120), || async {
        job_view(&b, id).await["state"] != "running"
    })
    .await;
    let j = job_view(&b, id).await;
    assert_eq!(j["state"], "done", "{j}");
    assert_eq!(j["totals"]["sent"], n as u64, "{j}");
    assert_sent_once(&b, id, n).await;
    let log = a.log();
    assert!(
        log.contains("claim no longer covers a send") || log.contains("segment claim lost"),
        "node-a noticed it lost its claims:\n{log}"
    );
    let stats = mock.stats().await;
    assert_eq!(stats["unique_delivered"], n as u64, "{stats}");
    // Only what node-a had in flight (or sent and not yet recorded) when it
    // stopped can repeat; it sends nothing new once it wakes.
    assert!(
        stats["duplicates"].as_u64().unwrap() <= 4 * DOUBT_WINDOW,
        "{stats}"
    );
}

// ---- One WeChat access token for the whole cluster ----

/// A node whose only channel is `wx`: WeChat template messages to the mock,
/// with classic tokens (each `/cgi-bin/token` call supersedes the last one,
/// so a second fetch anywhere in the cluster would show up as churn).
async fn start_wechat_node(store: &str, id: &str, mock: &Mock) -> Server {
    let extra = format!(
        "node_id = \"{id}\"\n[engine]\nlease_ms = {LEASE_MS}\nheartbeat_ms = {HEARTBEAT_MS}\nlease_guard_ms = 500\n\
         load_interval_ms = 200\nrescan_interval_ms = 5000\nstats_interval_ms = 0\n\
         [[channels]]\nname = \"wx\"\nkind = \"wechat\"\napi_base = \"{}\"\nappid = \"wxmockappid\"\n\
         secret = \"mock-wechat-secret\"\ntoken_mode = \"classic\"\nconcurrency = 32\n",
        mock.url
    );
    Server::start_on(store, tempfile::tempdir().unwrap(), &extra).await
}

async fn wechat_stats(mock: &Mock) -> Value {
    get_json(&format!("{}/_mock/wechat/stats", mock.url))
        .await
        .1
}

fn count(v: &Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or(0)
}

/// Schedules `n` WeChat template messages on `wx`, to openids `{tag}-{i}`,
/// due evenly over `spread_ms` from `start`; every one acknowledged.
async fn schedule_wechat(node: &Server, n: usize, start: i64, spread_ms: i64, tag: &str) {
    let mut lines = String::new();
    for i in 0..n {
        let due = start + (i as i64 * spread_ms) / n as i64;
        let line = json!({"fire_at": rfc3339(due), "channel": "wx",
            "recipient": format!("openid-{tag}-{i}"),
            "message": {"template_id": "tpl-cluster", "data": {"i": {"value": i.to_string()}}}});
        lines.push_str(&line.to_string());
        lines.push('\n');
    }
    let (s, out) = node.bulk(&lines).await;
    assert_eq!(s, 200, "{out:?}");
    assert_eq!(out.len(), n);
    assert!(
        out.iter().all(|l| l["status"] == 201),
        "every timer acknowledged: {:?}",
        out.iter().find(|l| l["status"] != 201)
    );
}

/// Timers this node delivered and marked done (`wx` is its only channel).
/// From `/metrics` rather than `GET /v1/channels`, which at this branch's
/// base answers 500 (its rate sampler extension was not wired; fixed on main
/// by 31ee99b).
async fn wx_delivered(node: &Server) -> u64 {
    metric(&node.metrics().await, "herald_timers_done_total") as u64
}

/// Waits until the mock accepted `total` messages and the cluster marked
/// `total` timers done.
async fn wait_wechat_drained(mock: &Mock, node: &Server, total: u64) {
    wait_for(
        "every message at the WeChat mock",
        Duration::from_secs(120),
        || async { count(&wechat_stats(mock).await, "delivered") >= total },
    )
    .await;
    wait_for("every timer done", Duration::from_secs(60), || async {
        node.get("/v1/stats").await.1["timers"]["done"].as_u64() == Some(total)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_share_one_wechat_token_and_refresh_it_once_when_it_expires() {
    let Some((_db, store)) = pg_database("wxtoken") else {
        return;
    };
    let mock = Mock::start(&[]).await;
    let a = start_wechat_node(&store, "node-a", &mock).await;
    let b = start_wechat_node(&store, "node-b", &mock).await;
    wait_balanced(&a, &["node-a", "node-b"]).await;

    // Phase 1: timers in every shard, so both nodes send at the same time
    // and both need the token from the first second.
    let n = 2_000u64;
    schedule_wechat(&a, n as usize, now_ms() + 2_000, 2_000, "p1").await;
    wait_wechat_drained(&mock, &a, n).await;
    let st = wechat_stats(&mock).await;
    eprintln!("wechat cluster, phase 1: {st}");
    assert_eq!(
        count(&st, "token_fetches"),
        1,
        "one token for the cluster: {st}"
    );
    assert_eq!(count(&st, "stable_token_fetches"), 0, "{st}");
    assert_eq!(count(&st, "delivered"), n, "{st}");
    assert_eq!(count(&st, "duplicates"), 0, "{st}");
    let (da, db) = (wx_delivered(&a).await, wx_delivered(&b).await);
    eprintln!("wechat cluster, phase 1: node-a delivered {da}, node-b {db}");
    assert!(da > 0 && db > 0, "both nodes delivered: a {da}, b {db}");
    assert_eq!(da + db, n, "each timer delivered once, by one node");

    // Phase 2: the provider expires the token under both nodes. Exactly one
    // of them fetches a new one; the other picks it up from the store.
    let (s, v) = post_raw(
        &format!("{}/_mock/wechat/faults", mock.url),
        "application/json",
        json!({"expire_tokens": true}).to_string(),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    let m = 2_000u64;
    schedule_wechat(&b, m as usize, now_ms() + 2_000, 2_000, "p2").await;
    wait_wechat_drained(&mock, &a, n + m).await;
    let st = wechat_stats(&mock).await;
    eprintln!("wechat cluster, phase 2: {st}");
    assert!(
        st["errors"]["42001"].as_u64().unwrap_or(0) >= 1,
        "the expired token was used and rejected: {st}"
    );
    assert_eq!(
        count(&st, "token_fetches"),
        2,
        "exactly one refresh for the cluster: {st}"
    );
    assert_eq!(count(&st, "delivered"), n + m, "no message lost: {st}");
    assert_eq!(count(&st, "duplicates"), 0, "{st}");
    let (da2, db2) = (wx_delivered(&a).await, wx_delivered(&b).await);
    eprintln!("wechat cluster, phase 2: node-a delivered {da2}, node-b {db2} in all");
    assert!(
        da2 > da && db2 > db,
        "both nodes delivered after the expiry"
    );
    assert_eq!(da2 + db2, n + m);
    let (_, stats) = a.get("/v1/stats").await;
    assert_eq!(stats["timers"]["done"], n + m, "{stats}");
}

/// A channel's `rate_per_sec` holds for the cluster, not per node: three
/// nodes sharing one channel at 300 a second send 6,000 timers, all due at
/// once, at 270 to 315 a second in total.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_channel_rate_is_shared_by_the_cluster() {
    let Some((_db, store)) = pg_database("shared_rate") else {
        return;
    };
    let mock = Mock::start(&[]).await;
    let ids = ["node-a", "node-b", "node-c"];
    let mut nodes = Vec::new();
    for id in ids {
        nodes.push(
            start_jobs_node(
                &store,
                id,
                &mock.hook(),
                "concurrency = 64\nrate_per_sec = 300",
            )
            .await,
        );
    }
    wait_balanced(&nodes[0], &ids).await;
    let n = 6_000;
    nodes[0]
        .schedule_spread(n, now_ms() + 1_000, 0, "rate")
        .await;
    wait_for(
        "every timer at the sink",
        Duration::from_secs(90),
        || async { delivered(&mock).await == n as u64 },
    )
    .await;
    let s = mock.stats().await;
    let first = s["first_delivered_at_ms"].as_f64().unwrap();
    let last = s["last_delivered_at_ms"].as_f64().unwrap();
    let rate = (n - 1) as f64 / ((last - first) / 1000.0);
    eprintln!(
        "shared rate: {n} sends in {:.2} s = {rate:.1}/s",
        (last - first) / 1000.0
    );
    assert!(
        (270.0..=315.0).contains(&rate),
        "aggregate {rate:.1}/s for a cluster-wide 300/s"
    );
    for node in &nodes {
        let share = metric(&node.metrics().await, "herald_cluster_nodes");
        assert_eq!(share, 3.0);
    }
}
