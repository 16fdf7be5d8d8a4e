//! Xiaomi MiPush end to end: the real `herald serve` pushing through
//! `xiaomi_push` to `herald mock`'s MiPush, which checks the app secret, the
//! package, the channel, the message limits, the registration ids and the
//! quotas as Xiaomi does. On SQLite and on PostgreSQL. MiPush has no access
//! token (the secret rides on every call), so there is no refresh to test.

use crate::common;

use std::time::Duration;

use common::{Mock, Server, pg_database, wait_for};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);

fn config(mock: &str) -> String {
    format!(
        "[reminders.channels]\napp = \"mi\"\n\n\
         [[channels]]\nname = \"mi\"\nkind = \"xiaomi_push\"\n\
         app_secret = \"mock-xiaomi-app-secret\"\npackage_name = \"com.herald.mock\"\n\
         channel_id = \"herald_private\"\napi_base = \"{mock}\"\n\
         reminder_template = {{ notification = {{ title = \"{{subject}}\", body = \"opens at {{start_at}}\" }} }}\n\
         backoff_base_ms = 200\nbackoff_max_ms = 1000\nmax_attempts = 5\n\n\
         [[channels]]\nname = \"mi-wrong-secret\"\nkind = \"xiaomi_push\"\n\
         app_secret = \"not-the-secret\"\npackage_name = \"com.herald.mock\"\n\
         api_base = \"{mock}\"\nbackoff_base_ms = 200\nbackoff_max_ms = 1000\nmax_attempts = 5\n"
    )
}

fn push(title: &str) -> Value {
    json!({"notification": {"title": title, "body": "opens at 10:00"}, "data": {"coupon": "42"}})
}

async fn timer(s: &Server, body: Value) -> i64 {
    let (st, v) = s.post("/v1/timers", &body).await;
    assert_eq!(st, 201, "{v}");
    v["id"].as_i64().unwrap()
}

async fn to_device(s: &Server, token: &str, title: &str) -> i64 {
    timer(
        s,
        json!({"delay_ms": 0, "channel": "mi", "recipient": token, "message": push(title)}),
    )
    .await
}

async fn delivered_to(m: &Mock, token: &str) -> Vec<Value> {
    m.get(&format!("/_mock/xiaomi/messages?token={token}&limit=100"))
        .await
        .as_array()
        .cloned()
        .unwrap_or_default()
}

async fn a_push_reaches_a_device(s: &Server, m: &Mock) {
    let id = to_device(s, "mi-1", "Coupon 42").await;
    s.settled(id, "done", WAIT).await;
    let got = delivered_to(m, "mi-1").await;
    assert_eq!(got.len(), 1, "{got:?}");
    let msg = &got[0]["message"];
    assert_eq!(msg["title"], "Coupon 42");
    assert_eq!(msg["description"], "opens at 10:00");
    assert_eq!(msg["payload"], "{\"coupon\":\"42\"}");
    assert_eq!(msg["extra.channel_id"], "herald_private");
    assert_eq!(msg["restricted_package_name"], "com.herald.mock");
    let d = s.deliveries(id).await;
    assert_eq!(d[0]["provider_msgid"], got[0]["message_id"], "{d:?}");
}

/// `10027` (too frequent) is a throttle: the push waits and goes, no
/// attempt used. `10002` (busy) is retried.
async fn too_frequent_is_a_deferral(s: &Server, m: &Mock) {
    m.post("/_mock/xiaomi/faults", json!({"throttle_next": 1}))
        .await;
    let id = to_device(s, "mi-2", "busy").await;
    let t = s.settled(id, "done", WAIT).await;
    assert_eq!(t["attempts"], 1, "{t}");
    let d = s.deliveries(id).await;
    assert_eq!(d[0]["outcome"], "throttled", "{d:?}");
    assert_eq!(delivered_to(m, "mi-2").await.len(), 1);

    m.post("/_mock/xiaomi/faults", json!({"internal_next": 1}))
        .await;
    let id = to_device(s, "mi-3", "retried").await;
    let t = s.settled(id, "done", WAIT).await;
    assert_eq!(t["attempts"], 2, "{t}");
}

/// The daily quota and a wrong secret are final; a title Xiaomi would
/// refuse never gets in.
async fn final_errors_are_final(s: &Server, m: &Mock) {
    m.post("/_mock/xiaomi/faults", json!({"quota_next": 1}))
        .await;
    let id = to_device(s, "mi-4", "over quota").await;
    let t = s.settled(id, "failed", WAIT).await;
    assert_eq!(t["attempts"], 1, "{t}");
    let e = t["last_error"].as_str().unwrap();
    assert!(e.contains("200001") && e.contains("daily quota"), "{t}");

    let id = timer(
        s,
        json!({"delay_ms": 0, "channel": "mi-wrong-secret", "recipient": "mi-1", "message": push("x")}),
    )
    .await;
    let t = s.settled(id, "failed", WAIT).await;
    assert_eq!(t["attempts"], 1, "{t}");
    assert!(t["last_error"].as_str().unwrap().contains("21301"), "{t}");

    let (st, v) = s
        .post(
            "/v1/timers",
            &json!({"delay_ms": 0, "channel": "mi", "recipient": "mi-1",
                    "message": push(&"长".repeat(50))}),
        )
        .await;
    assert_eq!(st, 400, "{v}");
    assert!(v.to_string().contains("notification.title"), "{v}");
}

/// A subscriber's app reminder goes to each of their devices; a
/// registration id Xiaomi no longer knows is pruned from the subscriber.
async fn an_unregistered_device_is_pruned(s: &Server, m: &Mock) {
    m.post("/_mock/xiaomi/devices", json!({"invalid": ["mi-wang-old"]}))
        .await;
    let (st, v) = s
        .put(
            "/v1/subscribers/wang",
            &json!({"addresses": {"app": ["mi-wang", "mi-wang-old"]}}),
        )
        .await;
    assert!(st == 201 || st == 200, "{v}");
    let id = timer(
        s,
        json!({"delay_ms": 0, "channel": "mi", "to": {"user_id": "wang"}, "message": push("For Wang")}),
    )
    .await;
    s.settled(id, "done", WAIT).await;
    assert_eq!(delivered_to(m, "mi-wang").await.len(), 1);
    wait_for("the unknown regid pruned", WAIT, || async {
        s.get("/v1/subscribers/wang").await.1["addresses"]["app"] == json!(["mi-wang"])
    })
    .await;
}

/// A campaign to 2,500 registration ids goes out in calls of up to 1,000;
/// the five unknown ids (answered in `bad_regids`) fail, the rest are
/// delivered.
async fn a_campaign_goes_in_calls_of_a_thousand(s: &Server, m: &Mock) {
    common::push_campaign_of_2500(s, m, "mi", "xiaomi", "r-", push("Sale"), 3..=5).await;
}

async fn run(store: Option<&str>) {
    let m = Mock::start(&[]).await;
    let cfg = config(&m.url);
    let s = match store {
        None => Server::start(&cfg).await,
        Some(url) => Server::start_on(url, tempfile::tempdir().unwrap(), &cfg).await,
    };
    a_push_reaches_a_device(&s, &m).await;
    too_frequent_is_a_deferral(&s, &m).await;
    final_errors_are_final(&s, &m).await;
    an_unregistered_device_is_pruned(&s, &m).await;
    a_campaign_goes_in_calls_of_a_thousand(&s, &m).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn xiaomi_push_on_sqlite() {
    run(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn xiaomi_push_on_postgres() {
    let Some((_db, url)) = pg_database("xiaomi") else {
        return;
    };
    run(Some(&url)).await;
}
