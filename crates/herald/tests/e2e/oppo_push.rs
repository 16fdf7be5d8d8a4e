//! OPPO Push end to end: the real `herald serve` pushing through
//! `oppo_push` to `herald mock`'s OPPO Push, which checks the signed token
//! request, the `auth_token`, the messages, the registration ids and the
//! quotas as OPPO does. On SQLite and on PostgreSQL.

use crate::common;

use std::time::Duration;

use common::{Mock, Server, pg_database, wait_for};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);

fn config(mock: &str) -> String {
    format!(
        "[reminders.channels]\napp = \"op\"\n\n\
         [[channels]]\nname = \"op\"\nkind = \"oppo_push\"\n\
         app_key = \"mock-oppo-app-key\"\nmaster_secret = \"mock-oppo-master-secret\"\n\
         category = \"ORDER\"\nchannel_id = \"orders\"\napi_base = \"{mock}\"\n\
         reminder_template = {{ notification = {{ title = \"{{subject}}\", body = \"opens at {{start_at}}\" }} }}\n\
         backoff_base_ms = 200\nbackoff_max_ms = 1000\nmax_attempts = 5\n"
    )
}

async fn stats(m: &Mock) -> Value {
    m.get("/_mock/oppo/stats").await
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
        json!({"delay_ms": 0, "channel": "op", "recipient": token, "message": push(title)}),
    )
    .await
}

async fn delivered_to(m: &Mock, token: &str) -> Vec<Value> {
    m.get(&format!("/_mock/oppo/messages?token={token}&limit=100"))
        .await
        .as_array()
        .cloned()
        .unwrap_or_default()
}

async fn a_push_reaches_a_device_and_the_token_is_refreshed(s: &Server, m: &Mock) {
    let id = to_device(s, "CN_op1", "Coupon 42").await;
    s.settled(id, "done", WAIT).await;
    let got = delivered_to(m, "CN_op1").await;
    assert_eq!(got.len(), 1, "{got:?}");
    let n = &got[0]["message"];
    assert_eq!(n["title"], "Coupon 42");
    assert_eq!(n["content"], "opens at 10:00");
    assert_eq!(n["actionParameters"], "{\"coupon\":\"42\"}");
    assert_eq!(
        (n["category"].as_str(), n["channelId"].as_str()),
        (Some("ORDER"), Some("orders"))
    );
    let d = s.deliveries(id).await;
    assert_eq!(d[0]["provider_msgid"], got[0]["message_id"], "{d:?}");
    assert_eq!(stats(m).await["tokens_issued"], 1);

    // OPPO refuses the auth_token (code 11): refreshed once, sent once
    // more, no attempt used.
    m.post("/_mock/oppo/faults", json!({"expire_tokens": true}))
        .await;
    let id = to_device(s, "CN_op2", "again").await;
    let t = s.settled(id, "done", WAIT).await;
    assert_eq!(t["attempts"], 1, "a refused token costs no attempt: {t}");
    assert_eq!(stats(m).await["tokens_issued"], 2);
    assert_eq!(delivered_to(m, "CN_op2").await.len(), 1);

    // Flow control (-2) is a throttle: the push waits and goes.
    m.post("/_mock/oppo/faults", json!({"throttle_next": 1}))
        .await;
    let id = to_device(s, "CN_op3", "busy").await;
    let t = s.settled(id, "done", WAIT).await;
    assert_eq!(t["attempts"], 1, "{t}");
    assert_eq!(s.deliveries(id).await[0]["outcome"], "throttled");
}

/// The daily message limit (33) is final; a title OPPO would refuse, or a
/// data-only message, never gets in.
async fn final_errors_are_final(s: &Server, m: &Mock) {
    m.post("/_mock/oppo/faults", json!({"quota_next": 1})).await;
    let id = to_device(s, "CN_op4", "over quota").await;
    let t = s.settled(id, "failed", WAIT).await;
    assert_eq!(t["attempts"], 1, "{t}");
    let e = t["last_error"].as_str().unwrap();
    assert!(e.contains("code 33") && e.contains("daily quota"), "{t}");

    for (message, field) in [
        (push(&"长".repeat(51)), "notification.title"),
        (json!({"data": {"k": "v"}}), "notification"),
    ] {
        let (st, v) = s
            .post(
                "/v1/timers",
                &json!({"delay_ms": 0, "channel": "op", "recipient": "CN_op1", "message": message}),
            )
            .await;
        assert_eq!(st, 400, "{v}");
        assert!(v.to_string().contains(field), "{v}");
    }
}

/// A registration id OPPO answers 10000 for is pruned from the subscriber.
async fn an_unknown_device_is_pruned(s: &Server, m: &Mock) {
    m.post("/_mock/oppo/devices", json!({"invalid": ["CN_qian_old"]}))
        .await;
    let (st, v) = s
        .put(
            "/v1/subscribers/qian",
            &json!({"addresses": {"app": ["CN_qian", "CN_qian_old"]}}),
        )
        .await;
    assert!(st == 201 || st == 200, "{v}");
    let id = timer(
        s,
        json!({"delay_ms": 0, "channel": "op", "to": {"user_id": "qian"}, "message": push("For Qian")}),
    )
    .await;
    s.settled(id, "done", WAIT).await;
    assert_eq!(delivered_to(m, "CN_qian").await.len(), 1);
    wait_for("the unknown regid pruned", WAIT, || async {
        s.get("/v1/subscribers/qian").await.1["addresses"]["app"] == json!(["CN_qian"])
    })
    .await;
}

/// A campaign to 2,500 registration ids goes out in `unicast_batch` calls
/// of up to 1,000; the five unknown ids (errorCode 10000) fail.
async fn a_campaign_goes_in_batches_of_a_thousand(s: &Server, m: &Mock) {
    common::push_campaign_of_2500(s, m, "op", "oppo", "CN_", push("Sale"), 3..=5).await;
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
    an_unknown_device_is_pruned(&s, &m).await;
    a_campaign_goes_in_batches_of_a_thousand(&s, &m).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oppo_push_on_sqlite() {
    run(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oppo_push_on_postgres() {
    let Some((_db, url)) = pg_database("oppo") else {
        return;
    };
    run(Some(&url)).await;
}
