//! vivo Push end to end: the real `herald serve` pushing through
//! `vivo_push` to `herald mock`'s vivo Push, which checks the signed token
//! request, the `authToken`, the app, the message, the request ids, the
//! registration ids and the quotas as vivo does. On SQLite and on
//! PostgreSQL.

use crate::common;

use std::time::Duration;

use common::{Mock, Server, pg_database, wait_for};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);

fn config(mock: &str) -> String {
    format!(
        "[reminders.channels]\napp = \"vv\"\n\n\
         [[channels]]\nname = \"vv\"\nkind = \"vivo_push\"\n\
         app_id = \"10004\"\napp_key = \"mock-vivo-app-key\"\napp_secret = \"mock-vivo-app-secret\"\n\
         classification = 1\napi_base = \"{mock}\"\n\
         reminder_template = {{ notification = {{ title = \"{{subject}}\", body = \"opens at {{start_at}}\" }} }}\n\
         backoff_base_ms = 200\nbackoff_max_ms = 1000\nmax_attempts = 5\n"
    )
}

async fn stats(m: &Mock) -> Value {
    m.get("/_mock/vivo/stats").await
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
        json!({"delay_ms": 0, "channel": "vv", "recipient": token, "message": push(title)}),
    )
    .await
}

async fn delivered_to(m: &Mock, token: &str) -> Vec<Value> {
    m.get(&format!("/_mock/vivo/messages?token={token}&limit=100"))
        .await
        .as_array()
        .cloned()
        .unwrap_or_default()
}

async fn a_push_reaches_a_device_and_the_token_is_refreshed(s: &Server, m: &Mock) {
    let id = to_device(s, "vv-1", "Coupon 42").await;
    s.settled(id, "done", WAIT).await;
    let got = delivered_to(m, "vv-1").await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(
        got[0]["message"],
        json!({"notifyType": 4, "title": "Coupon 42", "content": "opens at 10:00", "skipType": 1,
               "clientCustomMap": {"coupon": "42"}, "classification": 1})
    );
    let d = s.deliveries(id).await;
    assert_eq!(d[0]["provider_msgid"], got[0]["message_id"], "{d:?}");
    assert_eq!(stats(m).await["tokens_issued"], 1);

    // vivo refuses the authToken: refreshed once, sent once more, no
    // attempt used.
    m.post("/_mock/vivo/faults", json!({"expire_tokens": true}))
        .await;
    let id = to_device(s, "vv-2", "again").await;
    let t = s.settled(id, "done", WAIT).await;
    assert_eq!(t["attempts"], 1, "a refused token costs no attempt: {t}");
    assert_eq!(stats(m).await["tokens_issued"], 2);
    assert_eq!(delivered_to(m, "vv-2").await.len(), 1);

    // HTTP 429 is a throttle: the push waits and goes.
    m.post("/_mock/vivo/faults", json!({"throttle_next": 1}))
        .await;
    let id = to_device(s, "vv-3", "busy").await;
    let t = s.settled(id, "done", WAIT).await;
    assert_eq!(t["attempts"], 1, "{t}");
    assert_eq!(s.deliveries(id).await[0]["outcome"], "throttled");
}

/// The daily total (10070) is final; a title over vivo's 40 bytes never
/// gets in.
async fn final_errors_are_final(s: &Server, m: &Mock) {
    m.post("/_mock/vivo/faults", json!({"quota_next": 1})).await;
    let id = to_device(s, "vv-4", "over quota").await;
    let t = s.settled(id, "failed", WAIT).await;
    assert_eq!(t["attempts"], 1, "{t}");
    let e = t["last_error"].as_str().unwrap();
    assert!(e.contains("10070") && e.contains("daily quota"), "{t}");

    let (st, v) = s
        .post(
            "/v1/timers",
            &json!({"delay_ms": 0, "channel": "vv", "recipient": "vv-1",
                    "message": push(&"长".repeat(21))}),
        )
        .await;
    assert_eq!(st, 400, "{v}");
    assert!(v.to_string().contains("notification.title"), "{v}");
}

/// A regId vivo answers 10302 for is pruned from the subscriber.
async fn an_invalid_target_is_pruned(s: &Server, m: &Mock) {
    m.post("/_mock/vivo/devices", json!({"invalid": ["vv-sun-old"]}))
        .await;
    let (st, v) = s
        .put(
            "/v1/subscribers/sun",
            &json!({"addresses": {"app": ["vv-sun", "vv-sun-old"]}}),
        )
        .await;
    assert!(st == 201 || st == 200, "{v}");
    let id = timer(
        s,
        json!({"delay_ms": 0, "channel": "vv", "to": {"user_id": "sun"}, "message": push("For Sun")}),
    )
    .await;
    s.settled(id, "done", WAIT).await;
    assert_eq!(delivered_to(m, "vv-sun").await.len(), 1);
    wait_for("the invalid regId pruned", WAIT, || async {
        s.get("/v1/subscribers/sun").await.1["addresses"]["app"] == json!(["vv-sun"])
    })
    .await;
}

/// A campaign to 2,500 regIds is saved once per call and pushed to lists
/// of up to 1,000; the five invalid ones (in `invalidUsers`) fail.
async fn a_campaign_goes_in_lists_of_a_thousand(s: &Server, m: &Mock) {
    common::push_campaign_of_2500(s, m, "vv", "vivo", "v-", push("Sale"), 6..=10).await;
}

async fn run(store: Option<&str>) {
    let m = Mock::start(&[]).await;
    let cfg = config(&m.url);
    let s = match store {
        None => Server::start(&cfg).await,
        Some(url) => Server::start_on(url, tempfile::tempdir().unwrap(), &cfg).await,
    };
    a_push_reaches_a_device_and_the_token_is_refreshed(&s, &m).await;
    final_errors_are_final(&s, &m).await;
    an_invalid_target_is_pruned(&s, &m).await;
    a_campaign_goes_in_lists_of_a_thousand(&s, &m).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vivo_push_on_sqlite() {
    run(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vivo_push_on_postgres() {
    let Some((_db, url)) = pg_database("vivo") else {
        return;
    };
    run(Some(&url)).await;
}
