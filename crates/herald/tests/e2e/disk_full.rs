//! SQLite out of space: a real `herald serve` whose database may not grow past
//! `store_options.sqlite.max_page_count`. Another process (this test, with its
//! own connection, which the cap does not bind) fills the file with a filler
//! table, as other data would fill a disk; then frees it again, as an
//! operator would.
//!
//! While full: writes get `507 insufficient_storage` and change nothing;
//! reads answer; timers stored before go out to the sink. Once space returns,
//! writes succeed again with no restart, and every acknowledged timer is
//! there and, when due, delivered.

use crate::common;

use std::time::Duration;

use common::*;
use serde_json::json;

/// The cap, in pages (4 KiB each): a few MiB.
const MAX_PAGES: i64 = 2_000;

fn timer(key: &str, delay_ms: i64) -> serde_json::Value {
    json!({"delay_ms": delay_ms, "channel": "hooks", "recipient": key,
           "message": {"pad": "x".repeat(200)}, "idempotency_key": key})
}

fn page_count(db: &rusqlite::Connection) -> i64 {
    db.query_row("PRAGMA page_count", [], |r| r.get(0)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_refuses_writes_with_507_and_recovers_by_itself() {
    let mock = Mock::start(&[]).await;
    let extra = Server::webhook_config(
        &mock.hook(),
        "",
        &format!(
            "[engine]\nload_interval_ms = 200\nstats_interval_ms = 0\n\
             [store_options.sqlite]\nmax_page_count = {MAX_PAGES}"
        ),
    );
    let server = Server::start(&extra).await;
    let path = server.dir.path().join("data").join("herald.db");

    // Acknowledged before the disk fills; due once it is full.
    let mut acknowledged = Vec::new();
    for i in 0..20 {
        let (st, body) = server
            .post("/v1/timers", &timer(&format!("early-{i}"), 4_000))
            .await;
        assert_eq!(st, 201, "{body}");
        acknowledged.push(body["id"].as_i64().unwrap());
    }

    // Fill the file up to the cap from outside.
    let filler = tokio::task::spawn_blocking(move || {
        let db = rusqlite::Connection::open(&path).unwrap();
        db.busy_timeout(Duration::from_secs(10)).unwrap();
        db.execute_batch("CREATE TABLE filler (x BLOB)").unwrap();
        while page_count(&db) < MAX_PAGES {
            db.execute("INSERT INTO filler VALUES (zeroblob(65536))", [])
                .unwrap();
        }
        db
    })
    .await
    .unwrap();

    // Writes are refused as soon as they need a page the cap does not allow.
    let mut refused = 0;
    for i in 0..2_000 {
        let (st, body) = server
            .post("/v1/timers", &timer(&format!("full-{i}"), 60_000))
            .await;
        match st {
            201 => acknowledged.push(body["id"].as_i64().unwrap()),
            507 => {
                assert_eq!(body["error"]["code"], "insufficient_storage", "{body}");
                refused += 1;
                if refused >= 5 {
                    break;
                }
            }
            _ => panic!("a write on a full disk answered {st}: {body}"),
        }
    }
    assert!(refused >= 5, "the disk never filled");
    // Reads go on.
    let (st, body) = server.get(&format!("/v1/timers/{}", acknowledged[0])).await;
    assert_eq!(st, 200, "{body}");
    let (st, _) = server.get("/v1/stats").await;
    assert_eq!(st, 200);
    // The timers stored before go out, full disk or not.
    wait_for(
        "the stored timers at the sink",
        Duration::from_secs(30),
        || async { mock.stats().await["unique_delivered"].as_u64() >= Some(20) },
    )
    .await;

    // Space returns: the filler goes, and its pages are free for reuse.
    tokio::task::spawn_blocking(move || {
        filler.execute_batch("DROP TABLE filler").unwrap();
    })
    .await
    .unwrap();
    let mut recovered = false;
    for i in 0..50 {
        let (st, body) = server
            .post("/v1/timers", &timer(&format!("after-{i}"), 60_000))
            .await;
        if st == 201 {
            acknowledged.push(body["id"].as_i64().unwrap());
            recovered = true;
            break;
        }
        assert_eq!(st, 507, "{body}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(recovered, "writes still refused after space returned");

    // Nothing acknowledged was lost, and the early timers' outcomes were
    // recorded once there was room for them.
    for id in &acknowledged {
        let (st, body) = server.get(&format!("/v1/timers/{id}")).await;
        assert_eq!(st, 200, "timer {id}: {body}");
    }
    wait_for(
        "the early timers recorded as delivered",
        Duration::from_secs(30),
        || async {
            let mut all = true;
            for id in &acknowledged[..20] {
                let v = server.get(&format!("/v1/timers/{id}")).await.1;
                all &= v["state"] == "done";
            }
            all
        },
    )
    .await;
    eprintln!(
        "disk full: {refused} writes refused with 507, {} acknowledged, all kept",
        acknowledged.len()
    );
}
