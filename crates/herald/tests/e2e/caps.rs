//! Frequency caps (`[[caps]]`) against the real binary and the mock sink,
//! on both stores: sends to a user over a cap end `capped` (final, counted
//! in the metrics), a critical one is never capped, another user has their
//! own window; and across three nodes sharing PostgreSQL, no more than the
//! cap goes out when one user's sends are spread over every node.

use crate::common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};

const CAPS: &str =
    "[[caps]]\nname = \"marketing\"\ntopic = \"marketing\"\nmax = 3\nwindow = \"24h\"\n";

async fn subscriber(s: &Server, user: &str) {
    let (st, v) = s
        .put(
            &format!("/v1/subscribers/{user}"),
            &json!({"addresses": {"sms": format!("+86138{:08}", user.len())}}),
        )
        .await;
    assert!(st == 200 || st == 201, "{user}: {st} {v}");
}

async fn to_user(s: &Server, user: &str, extra: Value) -> i64 {
    let mut b = json!({"delay_ms": 0, "channel": "hooks",
                       "to": {"user_id": user, "channel_type": "sms"},
                       "message": {"text": "a coupon for you"}});
    for (k, v) in extra.as_object().unwrap() {
        b[k] = v.clone();
    }
    if b.get("fire_at").is_some() {
        b.as_object_mut().unwrap().remove("delay_ms");
    }
    let (st, v) = s.post("/v1/timers", &b).await;
    assert_eq!(st, 201, "{v}");
    v["id"].as_i64().unwrap()
}

/// A timer's first send-log outcome, once it has one.
async fn outcome(s: &Server, id: i64) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let d = s.get(&format!("/v1/timers/{id}/deliveries")).await.1;
        if let Some(o) = d["deliveries"][0]["outcome"].as_str() {
            return o.to_string();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timer {id} never fired: {d}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn scenario(store: Option<String>) {
    let mock = Mock::start(&[]).await;
    let cfg = Server::webhook_config(&mock.hook(), "", CAPS);
    let s = match store {
        Some(url) => Server::start_on(&url, tempfile::tempdir().unwrap(), &cfg).await,
        None => Server::start(&cfg).await,
    };
    subscriber(&s, "ann").await;
    subscriber(&s, "bo").await;
    let mut ann = Vec::new();
    for _ in 0..5 {
        ann.push(to_user(&s, "ann", json!({"topic": "marketing"})).await);
        // One at a time, so which ones go is the order they were made in.
        outcome(&s, *ann.last().unwrap()).await;
    }
    let critical = to_user(&s, "ann", json!({"topic": "marketing", "critical": true})).await;
    let other_topic = to_user(&s, "ann", json!({"topic": "orders"})).await;
    let bo = to_user(&s, "bo", json!({"topic": "marketing"})).await;
    let mut got = Vec::new();
    for &id in &ann {
        got.push(outcome(&s, id).await);
    }
    assert_eq!(
        got,
        ["delivered", "delivered", "delivered", "capped", "capped"]
    );
    for id in [critical, other_topic, bo] {
        assert_eq!(outcome(&s, id).await, "delivered", "timer {id}");
    }
    let t = s.timer(ann[4]).await;
    assert_eq!(t["state"], "failed", "{t}");
    assert!(
        t["last_error"].as_str().unwrap_or("").contains("marketing"),
        "the error names the cap: {t}"
    );
    assert_eq!(mock.stats().await["unique_delivered"], 6);
    let metrics = s.metrics().await;
    assert!(
        metrics
            .lines()
            .any(|l| l.contains("outcome=\"capped\"") && l.ends_with(" 2")),
        "{metrics}"
    );

    // A job to user ids: ann is over the cap, bo is not.
    let (st, job) = s
        .post(
            "/v1/jobs",
            &json!({"users": ["ann", "bo"], "channel": "hooks", "to": {"channel_type": "sms"},
                    "topic": "marketing", "message": {"text": "20 off today"}}),
        )
        .await;
    assert_eq!(st, 201, "{job}");
    let id = job["id"].as_i64().unwrap();
    wait_for("the job done", Duration::from_secs(60), || async {
        s.get(&format!("/v1/jobs/{id}")).await.1["state"] == "done"
    })
    .await;
    let (_, failures) = s.get(&format!("/v1/jobs/{id}/failures")).await;
    assert_eq!(
        failures["groups"],
        json!([{"error": "capped", "count": 1}]),
        "{failures}"
    );
    assert_eq!(mock.stats().await["unique_delivered"], 7);
}

#[tokio::test]
async fn caps_drop_sends_over_the_cap_on_sqlite() {
    scenario(None).await;
}

#[tokio::test]
async fn caps_drop_sends_over_the_cap_on_postgres() {
    let Some((_db, url)) = pg_database("caps") else {
        eprintln!("PostgreSQL not installed: caps test on PostgreSQL skipped");
        return;
    };
    scenario(Some(url)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn caps_hold_across_three_nodes() {
    let Some((_db, store)) = pg_database("caps3") else {
        eprintln!("PostgreSQL not installed: caps cluster test skipped");
        return;
    };
    let mock = Mock::start(&[]).await;
    let node = |id: &str| {
        Server::webhook_config(
            &mock.hook(),
            "concurrency = 16",
            &format!(
                "node_id = \"{id}\"\n[engine]\nlease_ms = 3000\nheartbeat_ms = 500\nlease_guard_ms = 500\n\
                 load_interval_ms = 200\nstats_interval_ms = 0\n{CAPS}"
            ),
        )
    };
    let a = Server::start_on(&store, tempfile::tempdir().unwrap(), &node("node-a")).await;
    let b = Server::start_on(&store, tempfile::tempdir().unwrap(), &node("node-b")).await;
    let c = Server::start_on(&store, tempfile::tempdir().unwrap(), &node("node-c")).await;
    wait_for(
        "three nodes own the shards",
        Duration::from_secs(60),
        || async {
            let v = a.get("/v1/cluster").await.1;
            v["unowned"] == 0 && v["owners"].as_object().is_some_and(|o| o.len() == 3)
        },
    )
    .await;
    subscriber(&a, "ann").await;
    // 60 sends to one user, due at one instant, spread over the shards (so
    // over the nodes), each made through a different node.
    let due = rfc3339(now_ms() + 3_000);
    let mut ids = Vec::new();
    for i in 0..60 {
        let s = [&a, &b, &c][i % 3];
        ids.push(to_user(s, "ann", json!({"topic": "marketing", "fire_at": due})).await);
    }
    let mut tally = std::collections::BTreeMap::<String, usize>::new();
    for &id in &ids {
        *tally.entry(outcome(&a, id).await).or_default() += 1;
    }
    assert_eq!(
        tally,
        [("capped".to_string(), 57), ("delivered".to_string(), 3)].into(),
    );
    assert_eq!(mock.stats().await["unique_delivered"], 3);
    // More than one node sent (or capped) them.
    let mut fired = 0;
    for s in [&a, &b, &c] {
        if s.metrics().await.lines().any(|l| {
            l.starts_with("herald_deliveries_total")
                && l.contains("outcome=\"capped\"")
                && !l.ends_with(" 0")
        }) {
            fired += 1;
        }
    }
    assert!(fired >= 2, "the sends were spread over {fired} node(s)");
}

/// A reminder over a cap configured `on_cap = "defer"` waits for the window
/// to free a slot (`cap_deferred`, no attempt used), then goes.
#[tokio::test]
async fn caps_defer_a_reminder_to_the_end_of_its_window() {
    let mock = Mock::start(&[]).await;
    let cfg = Server::webhook_config(
        &mock.hook(),
        "",
        "[reminders]\nleads_minutes = [0]\nmerge_window_ms = 0\ndefault_channel = \"hooks\"\n\
         [[caps]]\nname = \"reminders\"\nchannel_type = \"sms\"\nmax = 1\nwindow = \"10s\"\non_cap = \"defer\"\n",
    );
    let s = Server::start(&cfg).await;
    subscriber(&s, "ann").await;
    let start = rfc3339(now_ms() + 3_000);
    let mut ids = Vec::new();
    for subject in ["s1", "s2"] {
        let (st, v) = s
            .put(
                &format!("/v1/subjects/{subject}"),
                &json!({"start_at": start}),
            )
            .await;
        assert!(st == 200 || st == 201, "{v}");
        let (st, v) = s
            .post(
                "/v1/reminders",
                &json!({"user_id": "ann", "subject_id": subject, "channel_type": "sms",
                        "lead_minutes": 0}),
            )
            .await;
        assert_eq!(st, 201, "{v}");
        ids.push(v["timer_id"].as_i64().unwrap());
    }
    let mut firsts = Vec::new();
    for &id in &ids {
        firsts.push(outcome(&s, id).await);
    }
    firsts.sort();
    assert_eq!(firsts, ["cap_deferred", "delivered"]);
    // The deferred one goes once the window frees its slot (within 11 s).
    wait_for(
        "the deferred reminder sent",
        Duration::from_secs(60),
        || async { mock.stats().await["unique_delivered"] == 2 },
    )
    .await;
    for &id in &ids {
        let t = s.timer(id).await;
        assert_eq!(t["state"], "done", "{t}");
        assert_eq!(t["attempts"], 1, "a deferral uses no attempt: {t}");
    }
}
