//! Per-process fencing: two real `herald serve` processes under one node id.
//!
//! The first is frozen with SIGSTOP while it delivers; a second starts as the
//! same node, takes the shards once the first one's leases expire, and the
//! first is resumed. Each process sends to its own mock sink, so every request
//! says which process made it. The resumed process must decide no send after
//! it wakes, and its late outcomes must be fenced off in the store.
//!
//! Without `initdb`/`postgres` this skips with a loud message, unless
//! `HERALD_REQUIRE_PG=1`, where it fails.

use crate::common;

use std::time::Duration;

use common::*;
use serde_json::Value;

/// Short leases so the test runs in seconds; the defaults are 6 s / 2 s.
const LEASE_MS: u64 = 3_000;
const HEARTBEAT_MS: u64 = 500;

async fn start_n1(store: &str, hook: &str) -> Server {
    let extra = Server::webhook_config(
        hook,
        "concurrency = 16",
        &format!(
            "node_id = \"n1\"\n[engine]\nlease_ms = {LEASE_MS}\nheartbeat_ms = {HEARTBEAT_MS}\nlease_guard_ms = 500\n\
             load_interval_ms = 200\nrescan_interval_ms = 5000\nstats_interval_ms = 0"
        ),
    );
    Server::start_on(store, tempfile::tempdir().unwrap(), &extra).await
}

fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or(0.0)
}

/// Shards whose running lease belongs to `incarnation`.
fn held_by(view: &Value, incarnation: &Value) -> usize {
    let now = now_ms();
    view["leases"]
        .as_array()
        .map(|ls| {
            ls.iter()
                .filter(|l| {
                    &l["incarnation"] == incarnation
                        && l["lease_until"].as_str().is_some_and(|t| parse_ms(t) > now)
                })
                .count()
        })
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_process_is_fenced_off_by_a_new_one_under_its_node_id() {
    let Some((_db, store)) = pg_database("incarnation") else {
        return;
    };
    let (sink_old, sink_new) = (Mock::start(&[]).await, Mock::start(&[]).await);
    let old = start_n1(&store, &sink_old.hook()).await;
    let old_inc = old.get("/v1/cluster").await.1["incarnation"].clone();
    // A decimal string: 64 bits do not fit a JavaScript number.
    assert!(
        old_inc
            .as_str()
            .and_then(|s| s.parse::<i64>().ok())
            .is_some_and(|i| i > 0),
        "{old_inc}"
    );
    wait_for("n1 owns every shard", Duration::from_secs(30), || async {
        old.get("/v1/cluster").await.1["unowned"] == 0
    })
    .await;

    // Timers due over the next seconds, so n1 is sending when it freezes.
    let n = 3_000;
    old.schedule_spread(n, now_ms() + 1_000, 8_000, "fence")
        .await;
    wait_for("n1 delivering", Duration::from_secs(30), || async {
        sink_old.stats().await["unique_delivered"].as_u64() >= Some(200)
    })
    .await;
    old.signal("STOP");

    let new = start_n1(&store, &sink_new.hook()).await;
    let new_inc = new.get("/v1/cluster").await.1["incarnation"].clone();
    assert_ne!(new_inc, old_inc, "each process start draws its incarnation");
    wait_for(
        "the new process holds every shard",
        Duration::from_secs(30),
        || async { held_by(&new.get("/v1/cluster").await.1, &new_inc) == 256 },
    )
    .await;
    let view = new.get("/v1/cluster").await.1;
    assert_eq!(view["node_id"], "n1");
    assert_eq!(view["owners"]["n1"], 256);

    let resumed_at = now_ms();
    old.signal("CONT");
    wait_for("every timer done", Duration::from_secs(60), || async {
        new.get("/v1/stats").await.1["timers"]["done"].as_u64() == Some(n as u64)
    })
    .await;
    // Give the resumed process time to act on anything stale it still held.
    tokio::time::sleep(Duration::from_millis(3 * HEARTBEAT_MS + 1_000)).await;

    // Sends: every request the old process made was decided before it froze
    // (one already on the wire may land late; none is fired after the wake-up).
    let late: Vec<String> = sink_old
        .requests(None)
        .await
        .iter()
        .filter_map(|r| r["body"]["fired_at"].as_str().map(str::to_string))
        .filter(|t| parse_ms(t) >= resumed_at)
        .collect();
    let from_old = sink_old.stats().await["unique_delivered"]
        .as_u64()
        .unwrap_or(0);
    let from_new = sink_new.stats().await["unique_delivered"]
        .as_u64()
        .unwrap_or(0);
    let fenced = metric(&old.metrics().await, "herald_fenced_total");
    eprintln!(
        "incarnation fencing: {from_old} sent by the old process, {from_new} by the new; \
         old process fenced {fenced} sends or outcomes after waking"
    );
    assert!(late.is_empty(), "the resumed process sent at {late:?}");
    assert!(from_old + from_new >= n as u64);

    // Writes: the resumed process holds nothing and took nothing back.
    let view = new.get("/v1/cluster").await.1;
    assert_eq!(held_by(&view, &new_inc), 256, "{view}");
    assert_eq!(held_by(&view, &old_inc), 0);
    assert_eq!(old.get("/v1/stats").await.1["node"]["shards"]["owned"], 0);
    assert!(
        old.log().contains("shards lost to other nodes"),
        "the resumed process noticed nothing:\n{}",
        old.log()
    );
}
