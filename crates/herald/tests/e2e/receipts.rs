//! Receipts and follow-ups end to end, on both stores: the real `herald`
//! binary, the mock's webhook sink over HTTP. Receipts name a campaign send
//! by its key or a timer's send by its key or id; a job's follow-up goes,
//! once, to the recipients it delivered to that sent no `read` receipt.

use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::*;
use serde_json::{Value, json};

/// Quick sweeps, so a follow-up starts soon after it is due.
fn config(hook: &str) -> String {
    Server::webhook_config(
        hook,
        "",
        "[jobs]\nsweep_interval_ms = 200\nplanner_interval_ms = 200\nidle_poll_ms = 100\n",
    )
}

async fn job(s: &Server, id: i64) -> Value {
    let (st, v) = s.get(&format!("/v1/jobs/{id}")).await;
    assert_eq!(st, 200, "{v}");
    v
}

async fn wait_done(s: &Server, id: i64) -> Value {
    wait_for("the job to end", Duration::from_secs(30), || async {
        job(s, id).await["state"] == "done"
    })
    .await;
    job(s, id).await
}

async fn receipt(s: &Server, body: Value) -> (u16, Value) {
    s.post("/v1/receipts", &body).await
}

async fn recipients_of(s: &Server, id: i64, total: u64) -> BTreeSet<String> {
    let (st, v) = s
        .get(&format!("/v1/jobs/{id}/sends?start=0&end={total}"))
        .await;
    assert_eq!(st, 200, "{v}");
    v["sends"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["state"] == "delivered")
        .map(|r| r["recipient"].as_str().unwrap_or_default().to_string())
        .collect()
}

async fn scenario(s: &Server, mock: &Mock) {
    let (st, j) = s
        .post(
            "/v1/jobs",
            &json!({"users": ["u0", "u1", "u2", "u3"], "channel": "hooks", "message": {"m": "sale"},
                    "follow_up": {"after_secs": 1, "message": {"m": "last day"}, "only": "unread"}}),
        )
        .await;
    assert_eq!(st, 201, "{j}");
    assert_eq!(j["follow_up"]["state"], "waiting", "{j}");
    let id = j["id"].as_i64().unwrap();
    let key = |i: u64| format!("herald-job-{id}-{i}");

    // Bad receipts name their field and change nothing.
    for (body, field) in [
        (
            json!({"idempotency_key": key(0), "event": "opened"}),
            "event",
        ),
        (json!({"event": "read"}), "delivery_id"),
        (
            json!({"delivery_id": 1, "idempotency_key": key(0), "event": "read"}),
            "delivery_id",
        ),
        (
            json!({"idempotency_key": key(0), "event": "read", "at": "yesterday"}),
            "at",
        ),
        (
            json!({"idempotency_key": key(0), "event": "read", "extra": 1}),
            "extra",
        ),
    ] {
        let (st, v) = receipt(s, body.clone()).await;
        assert_eq!(st, 400, "{body}: {v}");
        assert_eq!(v["error"]["field"], field, "{body}: {v}");
    }
    let (st, v) = receipt(
        s,
        json!({"idempotency_key": format!("herald-job-{}-0", id + 99), "event": "read"}),
    )
    .await;
    assert_eq!(st, 404, "another job: {v}");

    let j = wait_done(s, id).await;
    assert_eq!(j["totals"]["sent"], 4, "{j}");
    let (st, v) = receipt(s, json!({"idempotency_key": key(9), "event": "read"})).await;
    assert_eq!(
        (st, v["error"]["code"].clone()),
        (409, json!("not_delivered")),
        "{v}"
    );

    // u1 and u2 read it (u1 twice), u0's app says delivered, u3 clicked.
    for (i, event) in [(1, "read"), (2, "read"), (0, "delivered"), (3, "clicked")] {
        let (st, v) = receipt(s, json!({"idempotency_key": key(i), "event": event})).await;
        assert_eq!(st, 200, "{v}");
        assert_eq!(
            (
                v["recorded"].clone(),
                v["job_id"].clone(),
                v["index"].clone()
            ),
            (json!(true), json!(id), json!(i)),
            "{v}"
        );
    }
    let (st, v) = receipt(
        s,
        json!({"idempotency_key": key(1), "event": "read", "at": "2026-01-01T00:00:00Z"}),
    )
    .await;
    assert_eq!(
        (st, v["recorded"].clone()),
        (200, json!(false)),
        "a repeat counts once: {v}"
    );
    let t = job(s, id).await["totals"].clone();
    assert_eq!(
        (
            t["delivered"].clone(),
            t["read"].clone(),
            t["clicked"].clone()
        ),
        (json!(1), json!(2), json!(1)),
        "{t}"
    );

    // The follow-up goes to u0 and u3 only, once.
    wait_for(
        "the follow-up to be sent",
        Duration::from_secs(30),
        || async { job(s, id).await["follow_up"]["state"] == "sent" },
    )
    .await;
    let f = job(s, id).await["follow_up"].clone();
    let fid = f["job_id"].as_i64().unwrap_or_else(|| panic!("{f}"));
    let fj = wait_done(s, fid).await;
    assert_eq!(fj["totals"]["total"], 2, "{fj}");
    assert_eq!(fj["message"], json!({"m": "last day"}), "{fj}");
    assert_eq!(
        recipients_of(s, fid, 2).await,
        BTreeSet::from(["u0".to_string(), "u3".to_string()])
    );
    // Nothing else is started for it, however long one waits.
    tokio::time::sleep(Duration::from_millis(800)).await;
    let (_, list) = s.get("/v1/jobs").await;
    assert_eq!(list["jobs"].as_array().map(Vec::len), Some(2), "{list}");
    let stats = mock.stats().await;
    assert_eq!(stats["unique_delivered"], 6, "{stats}");

    // A timer's send takes receipts by its key and by its send-log id.
    let (st, t) = s
        .post(
            "/v1/timers",
            &json!({"delay_ms": 0, "channel": "hooks", "recipient": "u9", "message": {"a": 1},
                    "idempotency_key": "order-9-shipped"}),
        )
        .await;
    assert_eq!(st, 201, "{t}");
    let tid = t["id"].as_i64().unwrap();
    wait_for(
        "the timer to be delivered",
        Duration::from_secs(10),
        || async { s.get(&format!("/v1/timers/{tid}")).await.1["state"] == "done" },
    )
    .await;
    let (st, v) = receipt(
        s,
        json!({"idempotency_key": "order-9-shipped", "event": "read"}),
    )
    .await;
    assert_eq!((st, v["recorded"].clone()), (200, json!(true)), "{v}");
    let did = v["delivery_id"].as_i64().unwrap_or_else(|| panic!("{v}"));
    let (st, v) = receipt(s, json!({"delivery_id": did, "event": "read"})).await;
    assert_eq!((st, v["recorded"].clone()), (200, json!(false)), "{v}");
    let (st, v) = receipt(
        s,
        json!({"idempotency_key": "no-such-key", "event": "read"}),
    )
    .await;
    assert_eq!(st, 404, "{v}");
}

#[tokio::test]
async fn receipts_count_and_a_follow_up_reaches_the_unread_on_sqlite() {
    let mock = Mock::start(&[]).await;
    let s = Server::start(&config(&mock.hook())).await;
    scenario(&s, &mock).await;
}

#[tokio::test]
async fn receipts_count_and_a_follow_up_reaches_the_unread_on_postgres() {
    let Some((_db, url)) = pg_database("receipts") else {
        eprintln!("PostgreSQL not installed: receipts test on PostgreSQL skipped");
        return;
    };
    let mock = Mock::start(&[]).await;
    let s = Server::start_on(&url, tempfile::tempdir().unwrap(), &config(&mock.hook())).await;
    scenario(&s, &mock).await;
}
