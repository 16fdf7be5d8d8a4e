//! In-flight slots against the real binary and `herald mock`, on both
//! stores: with room for 20 deliveries, a dozen digests of three timers each
//! go out and give every slot back, so a plain timer still fires after
//! them; the node reports itself ready and not stalled, with nothing in
//! flight; and a graceful shutdown does not wait out its (long) drain
//! timeout for deliveries that do not exist. Before the fix each digest kept
//! two slots, firing stopped for good, and the shutdown waited its whole
//! drain timeout.

use crate::common;

use std::time::Duration;

use common::{Mock, Server, pg_database, wait_for};
use serde_json::json;

/// A gauge or counter without labels, 0 when absent.
fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or(0.0)
}

/// Room for fewer timers than the digests hold together; a drain timeout
/// longer than the harness waits for a graceful exit; a short stall window,
/// so a stall would show within the test.
fn config(hook: &str) -> String {
    Server::webhook_config(
        hook,
        "",
        "[engine]\nmax_inflight = 20\ndrain_timeout_ms = 120000\ninflight_stall_ms = 2000\n",
    )
}

const DIGESTS: usize = 12;

async fn scenario(server: &mut Server, mock: &Mock) {
    let s: &Server = server;
    let mut ids = Vec::new();
    for d in 0..DIGESTS {
        let digest = json!({"key": format!("k{d}"), "window_ms": 300});
        for n in 0..3 {
            let body = json!({"delay_ms": 0, "channel": "hooks", "recipient": format!("flight-{d}"),
                              "message": {"n": n}, "digest": digest});
            let (st, v) = s.post("/v1/timers", &body).await;
            assert_eq!(st, 201, "{v}");
            ids.push(v["id"].as_i64().unwrap());
        }
    }
    for &id in &ids {
        wait_for(
            &format!("digest timer {id} done"),
            Duration::from_secs(30),
            || async move { s.timer(id).await["state"] == "done" },
        )
        .await;
    }
    let digests = mock
        .requests(None)
        .await
        .into_iter()
        .filter(|r| {
            r["body"]["recipient"]
                .as_str()
                .is_some_and(|r| r.starts_with("flight-"))
        })
        .count();
    assert!(
        digests <= DIGESTS * 2,
        "timers went out in digests, not one by one: {digests} deliveries"
    );

    // Every slot is back: a plain timer fires at once.
    let (st, v) = s
        .post(
            "/v1/timers",
            &json!({"delay_ms": 0, "channel": "hooks", "recipient": "after", "message": {}}),
        )
        .await;
    assert_eq!(st, 201, "{v}");
    let plain = v["id"].as_i64().unwrap();
    wait_for(
        "the plain timer after the digests is done",
        Duration::from_secs(10),
        || async move { s.timer(plain).await["state"] == "done" },
    )
    .await;
    wait_for(
        "nothing in flight (sampled every second)",
        Duration::from_secs(10),
        || async move { metric(&s.metrics().await, "herald_inflight_deliveries") == 0.0 },
    )
    .await;
    // Past the stall window: still ready, not stalled.
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let (st, v) = s.get("/readyz").await;
    assert_eq!(st, 200, "{v}");
    let text = s.metrics().await;
    assert!(
        text.contains("# TYPE herald_inflight_stalled gauge"),
        "{text}"
    );
    assert_eq!(metric(&text, "herald_inflight_stalled"), 0.0);
    assert_eq!(metric(&text, "herald_inflight_stalls_total"), 0.0);

    // SIGTERM: the harness waits 30 s for the exit, the drain timeout is 120 s.
    server.terminate().await;
    let log = server.log();
    assert!(
        !log.contains("still in flight") && !log.contains("held by no delivery"),
        "the shutdown waited for deliveries: {log}"
    );
    assert_eq!(mock.stats().await["duplicates"], 0);
}

#[tokio::test]
async fn digests_give_back_their_in_flight_slots_on_sqlite() {
    let mock = Mock::start(&[]).await;
    let mut s = Server::start(&config(&mock.hook())).await;
    scenario(&mut s, &mock).await;
}

#[tokio::test]
async fn digests_give_back_their_in_flight_slots_on_postgres() {
    let Some((_db, url)) = pg_database("flight") else {
        eprintln!("PostgreSQL not installed: in-flight test on PostgreSQL skipped");
        return;
    };
    let mock = Mock::start(&[]).await;
    let mut s = Server::start_on(&url, tempfile::tempdir().unwrap(), &config(&mock.hook())).await;
    scenario(&mut s, &mock).await;
}
