//! Crash tests: `kill -9` the real server mid-work, restart it on the same
//! data directory, and count what the sink received.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use serde_json::json;

const MAX_INFLIGHT: u64 = 2_000;

#[tokio::test]
async fn kill9_mid_firing_loses_nothing_and_duplicates_stay_within_in_flight() {
    let mock = Mock::start(&[]).await;
    let cfg = Server::webhook_config(
        &mock.hook(),
        "concurrency = 64",
        &format!("[engine]\nmax_inflight = {MAX_INFLIGHT}"),
    );
    let mut server = Server::start(&cfg).await;
    let n = 10_000usize;
    // Due over ~4 s, starting 2 s from now.
    let start = now_ms() + 2_000;
    server.schedule_spread(n, start, 4_000, "u").await;

    // Mid-firing: some delivered, many not yet.
    wait_for(
        "firing to be under way",
        Duration::from_secs(30),
        || async { mock.stats().await["unique_delivered"].as_u64().unwrap() >= 3_000 },
    )
    .await;
    server.kill9().await;
    let at_kill = mock.stats().await["unique_delivered"].as_u64().unwrap();
    assert!(
        at_kill < n as u64,
        "the kill came too late to test anything ({at_kill} delivered)"
    );

    server.restart().await;
    wait_for(
        "every timer at the sink",
        Duration::from_secs(60),
        || async { mock.stats().await["unique_delivered"].as_u64().unwrap() == n as u64 },
    )
    .await;
    wait_for("every timer done", Duration::from_secs(30), || async {
        let (_, v) = server.get("/v1/stats").await;
        v["timers"]["done"].as_u64() == Some(n as u64)
    })
    .await;
    let stats = mock.stats().await;
    let dups = stats["duplicates"].as_u64().unwrap();
    eprintln!(
        "crash test: {at_kill} of {n} delivered at the kill; duplicates after restart: {dups} (bound {MAX_INFLIGHT})"
    );
    assert!(
        dups <= MAX_INFLIGHT,
        "{dups} duplicates, more than could be in flight"
    );
    assert_eq!(stats["unique_delivered"].as_u64().unwrap(), n as u64);
}

#[tokio::test]
async fn kill9_mid_ingest_keeps_every_acknowledged_timer() {
    let mock = Mock::start(&[]).await;
    let mut server = Server::start(&Server::webhook_config(&mock.hook(), "", "")).await;
    let acked = Arc::new(parking_lot_free::Acked::default());
    let url = format!("{}/v1/timers", server.url);
    let mut tasks = Vec::new();
    for c in 0..8 {
        let (url, acked) = (url.clone(), acked.clone());
        tasks.push(tokio::spawn(async move {
            let http = client();
            for i in 0.. {
                let body = json!({"delay_ms": 3_000, "channel": "hooks", "recipient": format!("c{c}-{i}"),
                                  "message": {}, "idempotency_key": format!("ingest-{c}-{i}")});
                match http.post(&url).json(&body).send().await {
                    Ok(r) if r.status().as_u16() == 201 => {
                        let v: serde_json::Value = r.json().await.unwrap();
                        acked.push(v["id"].as_i64().unwrap(), format!("ingest-{c}-{i}"));
                    }
                    // The server died under us: the request may or may not have landed.
                    _ => return,
                }
            }
        }));
    }
    wait_for(
        "some timers acknowledged",
        Duration::from_secs(30),
        || async { acked.len() >= 500 },
    )
    .await;
    server.kill9().await;
    for t in tasks {
        let _ = t.await;
    }
    let acked = acked.take();
    server.restart().await;
    for (id, _) in &acked {
        let (s, v) = server.get(&format!("/v1/timers/{id}")).await;
        assert_eq!(s, 200, "acknowledged timer {id} is gone: {v}");
    }
    wait_for(
        "every acknowledged timer delivered",
        Duration::from_secs(60),
        || async {
            let mut all = true;
            for (_, key) in acked.iter().step_by(25) {
                if mock.key(key).await["delivered"].as_u64().unwrap_or(0) == 0 {
                    all = false;
                    break;
                }
            }
            all
        },
    )
    .await;
    wait_for("all acknowledged done", Duration::from_secs(60), || async {
        let (_, v) = server.get("/v1/stats").await;
        v["timers"]["done"].as_u64().unwrap_or(0) >= acked.len() as u64
    })
    .await;
    // The count above includes timers that landed without their answer
    // reaching a client (in flight at the kill), so it can be reached
    // while a few acknowledged ones are still on their way: wait for each.
    let mut late = Vec::new();
    for (_, key) in &acked {
        if mock.key(key).await["delivered"].as_u64().unwrap_or(0) == 0 {
            late.push(key.clone());
        }
    }
    wait_for(
        "the last acknowledged timers delivered",
        Duration::from_secs(60),
        || async {
            for key in &late {
                if mock.key(key).await["delivered"].as_u64().unwrap_or(0) == 0 {
                    return false;
                }
            }
            true
        },
    )
    .await;
    for (_, key) in &acked {
        assert!(
            mock.key(key).await["delivered"].as_u64().unwrap() >= 1,
            "{key} never delivered"
        );
    }
    eprintln!(
        "ingest crash test: {} acknowledged before the kill, all present and delivered",
        acked.len()
    );
}

mod parking_lot_free {
    use std::sync::Mutex;

    /// Acknowledged (id, key) pairs collected by concurrent clients.
    #[derive(Default)]
    pub struct Acked(Mutex<Vec<(i64, String)>>);

    impl Acked {
        pub fn push(&self, id: i64, key: String) {
            self.0.lock().unwrap().push((id, key));
        }
        pub fn len(&self) -> usize {
            self.0.lock().unwrap().len()
        }
        pub fn take(&self) -> Vec<(i64, String)> {
            std::mem::take(&mut *self.0.lock().unwrap())
        }
    }
}

/// The in-doubt guarantee for single timers (docs/architecture.md,
/// "Guarantees"): a webhook channel configured
/// `in_doubt = "skip"`, 10,000 timers due over 4 s, `kill -9` mid-way, a
/// restart on the same store. The timers the dead process was sending are
/// ended `in_doubt` by the restarted one instead of firing again: no
/// duplicate reaches the sink, and every timer ends `done` or `in_doubt`.
async fn kill9_mid_firing_with_skip(store: Option<String>, label: &str) {
    let mock = Mock::start(&[]).await;
    let cfg = Server::webhook_config(
        &mock.hook(),
        "concurrency = 64\nin_doubt = \"skip\"",
        &format!("[engine]\nmax_inflight = {MAX_INFLIGHT}"),
    );
    let mut server = match &store {
        Some(url) => Server::start_on(url, tempfile::tempdir().unwrap(), &cfg).await,
        None => Server::start(&cfg).await,
    };
    let n = 10_000u64;
    // Due over ~4 s, starting 2 s from now.
    let start = now_ms() + 2_000;
    server.schedule_spread(n as usize, start, 4_000, "s").await;

    wait_for(
        "firing to be under way",
        Duration::from_secs(30),
        || async { mock.stats().await["unique_delivered"].as_u64().unwrap() >= 3_000 },
    )
    .await;
    server.kill9().await;
    let at_kill = mock.stats().await["unique_delivered"].as_u64().unwrap();
    assert!(
        at_kill < n,
        "the kill came too late to test anything ({at_kill} delivered)"
    );

    server.restart().await;
    wait_for(
        "every timer done or in doubt",
        Duration::from_secs(90),
        || async {
            let (_, v) = server.get("/v1/stats").await;
            let n_of = |s: &str| v["timers"][s].as_u64().unwrap_or(0);
            n_of("pending") == 0 && n_of("firing") == 0 && n_of("done") + n_of("in_doubt") == n
        },
    )
    .await;
    // Final states: the figures no longer move.
    let timers = server.get("/v1/stats").await.1["timers"].clone();
    let n_of = |s: &str| timers[s].as_u64().unwrap_or(0);
    let (done, in_doubt) = (n_of("done"), n_of("in_doubt"));
    // One in-doubt timer is visible through the search and its own GET.
    if in_doubt > 0 {
        let (s, found) = server.get("/v1/timers?state=in_doubt&limit=1").await;
        assert_eq!(s, 200, "{found}");
        let t = &found["timers"][0];
        assert_eq!(t["state"], "in_doubt", "{found}");
        let (_, one) = server.get(&format!("/v1/timers/{}", t["id"])).await;
        assert_eq!(one["state"], "in_doubt", "{one}");
    }
    let stats = mock.stats().await;
    let dups = stats["duplicates"].as_u64().unwrap();
    let unique = stats["unique_delivered"].as_u64().unwrap();
    eprintln!(
        "crash test (in_doubt = skip, {label}): {at_kill} of {n} delivered at the kill; \
         after restart: done {done}, in_doubt {in_doubt}, done + in_doubt {}, \
         unique at the sink {unique} (in-doubt sends that had arrived: {}), duplicates {dups}",
        done + in_doubt,
        unique.saturating_sub(done)
    );
    assert_eq!(dups, 0, "a skipped in-doubt send was sent again");
    assert_eq!(done + in_doubt, n);
    assert!(
        in_doubt <= MAX_INFLIGHT,
        "{in_doubt} in doubt, more than could be in flight"
    );
    assert!(unique >= done, "every done timer reached the sink");

    // The operator sends the in-doubt ones again: each is sent, and all end
    // done (the repeats at the sink are that choice, counted above before it).
    let (s, v) = server
        .post("/v1/timers:retry", &json!({"state": "in_doubt"}))
        .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["retried"].as_u64(), Some(in_doubt), "{v}");
    wait_for(
        "the retried timers to fire",
        Duration::from_secs(60),
        || async {
            let (_, v) = server.get("/v1/stats").await;
            v["timers"]["done"].as_u64() == Some(n)
        },
    )
    .await;
    let unique = mock.stats().await["unique_delivered"].as_u64();
    assert_eq!(unique, Some(n), "every timer reached the sink");
}

#[tokio::test]
async fn kill9_mid_firing_with_in_doubt_skip_sends_nothing_twice_on_sqlite() {
    kill9_mid_firing_with_skip(None, "SQLite").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_mid_firing_with_in_doubt_skip_sends_nothing_twice_on_postgres() {
    let Some((_db, url)) = pg_database("in_doubt_crash") else {
        return;
    };
    kill9_mid_firing_with_skip(Some(url), "PostgreSQL").await;
}
