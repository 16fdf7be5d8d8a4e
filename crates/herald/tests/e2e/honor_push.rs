//! Honor Push end to end: the real `herald serve` pushing through
//! `honor_push` to `herald mock`'s Honor Push, which checks the OAuth token,
//! the `timestamp` header, the app, the message, the device tokens and the
//! quotas. On SQLite and on PostgreSQL.

use crate::common;

use std::time::Duration;

use common::{Mock, Server, pg_database, wait_for};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);

fn config(mock: &str) -> String {
    format!(
        "[reminders.channels]\napp = \"hn\"\n\n\
         [[channels]]\nname = \"hn\"\nkind = \"honor_push\"\n\
         app_id = \"104400001\"\nclient_id = \"mock-honor-client\"\n\
         client_secret = \"mock-honor-client-secret\"\nimportance = \"NORMAL\"\n\
         api_base = \"{mock}\"\ntoken_url = \"{mock}/auth/token\"\n\
         reminder_template = {{ notification = {{ title = \"{{subject}}\", body = \"opens at {{start_at}}\" }} }}\n\
         backoff_base_ms = 200\nbackoff_max_ms = 1000\nmax_attempts = 5\n\n\
         [[channels]]\nname = \"hn-wrong-secret\"\nkind = \"honor_push\"\n\
         app_id = \"104400002\"\nclient_id = \"mock-honor-client\"\nclient_secret = \"not-the-secret\"\n\
         api_base = \"{mock}\"\ntoken_url = \"{mock}/auth/token\"\n\
         backoff_base_ms = 200\nbackoff_max_ms = 1000\nmax_attempts = 2\n"
    )
}

async fn stats(m: &Mock) -> Value {
    m.get("/_mock/honor/stats").await
}

fn push(title: &str) -> Value {
    json!({"notification": {"title": title, "body": "opens at 10:00"}, "data": {"coupon": "42"}})
}

async fn timer(s: &Server, body: Value) -> i64 {
    let (st, v) = s.post("/v1/timers", &body).await;
    assert_eq!(st, 201, "{v}");
    v["id"].as_i64().unwrap()
}

async fn to_device(s: &Server, token: &str, message: Value) -> i64 {
    timer(
        s,
        json!({"delay_ms": 0, "channel": "hn", "recipient": token, "message": message}),
    )
    .await
}

async fn delivered_to(m: &Mock, token: &str) -> Vec<Value> {
    m.get(&format!("/_mock/honor/messages?token={token}&limit=100"))
        .await
        .as_array()
        .cloned()
        .unwrap_or_default()
}

async fn a_push_reaches_a_device_and_the_token_is_refreshed(s: &Server, m: &Mock) {
    let id = to_device(s, "hn-1", push("Coupon 42")).await;
    s.settled(id, "done", WAIT).await;
    let got = delivered_to(m, "hn-1").await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(
        got[0]["message"],
        json!({"data": "{\"coupon\":\"42\"}", "android": {"notification": {
            "title": "Coupon 42", "body": "opens at 10:00", "importance": "NORMAL",
            "clickAction": {"type": 3}}}})
    );
    let d = s.deliveries(id).await;
    assert_eq!(d[0]["provider_msgid"], got[0]["message_id"], "{d:?}");
    assert_eq!(stats(m).await["tokens_issued"], 1);

    // Honor expires the token: refreshed once, sent once more, no attempt
    // used.
    m.post("/_mock/honor/faults", json!({"expire_tokens": true}))
        .await;
    let id = to_device(s, "hn-2", push("again")).await;
    let t = s.settled(id, "done", WAIT).await;
    assert_eq!(t["attempts"], 1, "a refused token costs no attempt: {t}");
    assert_eq!(stats(m).await["tokens_issued"], 2);
    assert_eq!(delivered_to(m, "hn-2").await.len(), 1);

    // Flow control is a throttle: the push waits and goes.
    m.post("/_mock/honor/faults", json!({"throttle_next": 1}))
        .await;
    let id = to_device(s, "hn-3", push("busy")).await;
    let t = s.settled(id, "done", WAIT).await;
    assert_eq!(t["attempts"], 1, "{t}");
    assert_eq!(s.deliveries(id).await[0]["outcome"], "throttled");
}

/// A message over Honor's 4096 bytes is refused for good; an app whose
/// secret is wrong never gets a token and ends dead after its attempts.
async fn final_errors_are_final(s: &Server, m: &Mock) {
    let big =
        json!({"notification": {"title": "t", "body": "b"}, "data": {"blob": "x".repeat(5000)}});
    let id = to_device(s, "hn-1", big).await;
    let t = s.settled(id, "failed", WAIT).await;
    assert_eq!(t["attempts"], 1, "{t}");
    assert!(
        t["last_error"].as_str().unwrap().contains("80100003"),
        "{t}"
    );
    assert_eq!(stats(m).await["refused"]["80100003"], 1);

    let id = timer(
        s,
        json!({"delay_ms": 0, "channel": "hn-wrong-secret", "recipient": "hn-1", "message": push("x")}),
    )
    .await;
    let t = s.settled(id, "dead", WAIT).await;
    assert!(t["last_error"].as_str().unwrap().contains("token"), "{t}");
}

/// A token Honor lists in `failTokens` is pruned from the subscriber.
async fn an_uninstalled_device_is_pruned(s: &Server, m: &Mock) {
    m.post("/_mock/honor/devices", json!({"invalid": ["hn-zhao-old"]}))
        .await;
    let (st, v) = s
        .put(
            "/v1/subscribers/zhao",
            &json!({"addresses": {"app": ["hn-zhao", "hn-zhao-old"]}}),
        )
        .await;
    assert!(st == 201 || st == 200, "{v}");
    let id = timer(
        s,
        json!({"delay_ms": 0, "channel": "hn", "to": {"user_id": "zhao"}, "message": push("For Zhao")}),
    )
    .await;
    s.settled(id, "done", WAIT).await;
    assert_eq!(delivered_to(m, "hn-zhao").await.len(), 1);
    wait_for("the failed token pruned", WAIT, || async {
        s.get("/v1/subscribers/zhao").await.1["addresses"]["app"] == json!(["hn-zhao"])
    })
    .await;
}

/// A campaign to 2,500 tokens goes out in calls of up to 1,000; the five
/// tokens of uninstalled apps fail, the rest are delivered.
async fn a_campaign_goes_in_calls_of_a_thousand(s: &Server, m: &Mock) {
    common::push_campaign_of_2500(s, m, "hn", "honor", "h-", push("Sale"), 3..=5).await;
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
    an_uninstalled_device_is_pruned(&s, &m).await;
    a_campaign_goes_in_calls_of_a_thousand(&s, &m).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn honor_push_on_sqlite() {
    run(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn honor_push_on_postgres() {
    let Some((_db, url)) = pg_database("honor") else {
        return;
    };
    run(Some(&url)).await;
}
