//! Bad input on the real binary, on both stores: a NUL or another control
//! character in a text field is a `400` naming the field and writes nothing,
//! and it never fails another client's write committed beside it (on
//! PostgreSQL one such row used to fail its whole group-commit batch).

use crate::common;

use common::{Server, pg_database};
use serde_json::{Value, json};

/// Timers the server holds, in every state.
async fn total(s: &Server) -> u64 {
    s.total_timers().await
}

fn timer(recipient: &str) -> Value {
    json!({"delay_ms": 3_600_000, "channel": "log", "recipient": recipient,
           "message": {"text": "hi"}})
}

#[track_caller]
/// One `POST /v1/timers` per recipient, all at once; the tasks answer
/// (status, body).
fn post_timers(
    url: &str,
    recipients: impl Iterator<Item = String>,
) -> Vec<tokio::task::JoinHandle<(u16, Value)>> {
    recipients
        .map(|r| {
            let url = url.to_string();
            tokio::spawn(async move {
                common::post_raw(
                    &format!("{url}/v1/timers"),
                    "application/json",
                    timer(&r).to_string(),
                )
                .await
            })
        })
        .collect()
}

fn refused(status: u16, body: &Value, field: &str) {
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], "invalid_field", "{body}");
    assert_eq!(body["error"]["field"], field, "{body}");
}

async fn bad_input_is_refused_and_harms_no_one(s: &Server) {
    // Alone: refused, nothing written.
    let (st, b) = s.post("/v1/timers", &timer("a\0b")).await;
    refused(st, &b, "recipient");
    let (st, b) = s
        .post(
            "/v1/timers",
            &json!({"delay_ms": 1000, "channel": "log", "recipient": "r",
                    "message": {"text": "x\u{0}y"}}),
        )
        .await;
    refused(st, &b, "message.text");
    let (st, b) = s
        .post(
            "/v1/timers",
            &json!({"delay_ms": 1000, "channel": "log", "recipient": "r",
                    "message": {}, "idempotency_key": "herald-timer-1"}),
        )
        .await;
    refused(st, &b, "idempotency_key");
    let start = common::rfc3339(common::now_ms() + 3_600_000);
    let (st, b) = s
        .put(
            "/v1/subjects/s1",
            &json!({"start_at": start, "title": "t\0"}),
        )
        .await;
    refused(st, &b, "title");
    let (st, b) = s
        .put(
            "/v1/subjects/s1",
            &json!({"start_at": start, "data": {"k": "\0"}}),
        )
        .await;
    refused(st, &b, "data.k");
    assert_eq!(s.get("/v1/subjects/s1").await.0, 404);
    assert_eq!(total(s).await, 0);

    // Beside 200 concurrent good writes, bad ones change nothing for them.
    let good = post_timers(&s.url, (0..200).map(|i| format!("good-{i}")));
    let bad = post_timers(&s.url, (0..20).map(|i| format!("bad-{i}\0")));
    for t in good {
        let (st, b) = t.await.expect("task");
        assert_eq!(st, 201, "{b}");
    }
    for t in bad {
        let (st, b) = t.await.expect("task");
        refused(st, &b, "recipient");
    }
    assert_eq!(total(s).await, 200);

    // A bulk request: the bad line alone fails.
    let lines = [timer("bulk-1"), timer("bulk\u{1}2"), timer("bulk-3")]
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n");
    let (st, out) = s.bulk(&lines).await;
    assert_eq!(st, 200);
    let statuses: Vec<_> = out.iter().map(|l| l["status"].clone()).collect();
    assert_eq!(statuses, [json!(201), json!(400), json!(201)], "{out:?}");
    assert_eq!(out[1]["error"]["field"], "recipient");
    assert_eq!(total(s).await, 202);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_characters_are_refused_on_sqlite() {
    let s = Server::start("").await;
    bad_input_is_refused_and_harms_no_one(&s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_characters_are_refused_on_postgres() {
    let Some((_db, store)) = pg_database("bad_input") else {
        eprintln!("PostgreSQL not installed: skipped");
        return;
    };
    let s = Server::start_on(&store, tempfile::tempdir().unwrap(), "").await;
    bad_input_is_refused_and_harms_no_one(&s).await;
}
