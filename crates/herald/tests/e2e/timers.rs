//! End-to-end: the real `herald serve` and `herald mock` over real HTTP.

use crate::common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};

const FAST_RETRY: &str = "backoff_base_ms = 100\nbackoff_max_ms = 400";

async fn pair(mock_flags: &[&str], channel_extra: &str) -> (Mock, Server) {
    let mock = Mock::start(mock_flags).await;
    let server = Server::start(&Server::webhook_config(&mock.hook(), channel_extra, "")).await;
    (mock, server)
}

async fn create(server: &Server, body: Value) -> Value {
    let (s, v) = server.post("/v1/timers", &body).await;
    assert_eq!(s, 201, "{v}");
    v
}

pub(crate) async fn wait_state(server: &Server, id: i64, state: &str, timeout: Duration) -> Value {
    let mut last = Value::Null;
    let deadline = std::time::Instant::now() + timeout;
    while std::time::Instant::now() < deadline {
        last = server.timer(id).await;
        if last["state"] == state {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timer {id} never became {state}: {last}\n{}", server.log());
}

#[tokio::test]
async fn timers_fire_on_time_and_are_marked_done() {
    let (mock, server) = pair(&[], "").await;
    let mut ids = Vec::new();
    for i in 0..20 {
        let v = create(
            &server,
            json!({"delay_ms": 300 + i * 50, "channel": "hooks", "recipient": format!("order-{i}"),
                   "message": {"stars": 5, "i": i}}),
        )
        .await;
        assert_eq!(v["state"], "pending");
        ids.push(v["id"].as_i64().unwrap());
    }
    for &id in &ids {
        let t = wait_state(&server, id, "done", Duration::from_secs(20)).await;
        assert_eq!(t["attempts"], 1);
        let delivered = parse_ms(t["delivered_at"].as_str().unwrap());
        assert!(delivered >= parse_ms(t["due_at"].as_str().unwrap()));
    }
    let reqs = mock.requests(None).await;
    assert_eq!(reqs.len(), 20);
    for r in &reqs {
        let body = &r["body"];
        let due = parse_ms(body["due_at"].as_str().unwrap());
        let fired = parse_ms(body["fired_at"].as_str().unwrap());
        // Never early; "on time" checked loosely (budgets are measured by the bench).
        assert!(fired >= due, "fired early: {body}");
        assert!(fired - due < 2_000, "fired {} ms late: {body}", fired - due);
        assert_eq!(body["kind"], "timer");
        assert_eq!(body["attempt"], 1);
        assert_eq!(body["message"]["stars"], 5);
        assert!(body["recipient"].as_str().unwrap().starts_with("order-"));
        let id = body["id"].as_i64().unwrap();
        assert!(ids.contains(&id));
        assert_eq!(r["key"].as_str().unwrap(), format!("herald-timer-{id}"));
    }
    let s = mock.stats().await;
    assert_eq!(s["unique_delivered"], 20);
    assert_eq!(s["duplicates"], 0);
    let (st, log) = server
        .get(&format!("/v1/timers/{}/deliveries", ids[0]))
        .await;
    assert_eq!(st, 200);
    assert_eq!(log["deliveries"][0]["outcome"], "delivered");
    assert_eq!(log["deliveries"][0]["status"], 200);
}

#[tokio::test]
async fn same_idempotency_key_gives_the_same_timer_once() {
    let (mock, server) = pair(&[], "").await;
    let body = json!({"delay_ms": 300, "channel": "hooks", "recipient": "u1",
                      "message": {"a": 1}, "idempotency_key": "order-77-rate"});
    let (s1, v1) = server.post("/v1/timers", &body).await;
    assert_eq!(s1, 201, "{v1}");
    let (s2, v2) = server.post("/v1/timers", &body).await;
    assert_eq!(s2, 200, "{v2}");
    assert_eq!(v1["id"], v2["id"]);
    let id = v1["id"].as_i64().unwrap();
    wait_state(&server, id, "done", Duration::from_secs(10)).await;
    // Replaying after delivery still answers the existing timer, and sends nothing.
    let (s3, v3) = server.post("/v1/timers", &body).await;
    assert_eq!(s3, 200);
    assert_eq!(v3["id"], v1["id"]);
    assert_eq!(v3["state"], "done");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let k = mock.key("order-77-rate").await;
    assert_eq!(k["requests"], 1, "{k}");
    assert_eq!(server.total_timers().await, 1);
}

#[tokio::test]
async fn cancel_stops_a_pending_timer() {
    let (mock, server) = pair(&[], "").await;
    let v = create(
        &server,
        json!({"delay_ms": 1500, "channel": "hooks", "recipient": "u", "message": {}}),
    )
    .await;
    let id = v["id"].as_i64().unwrap();
    let (s, c) = server.delete(&format!("/v1/timers/{id}")).await;
    assert_eq!(s, 200, "{c}");
    assert_eq!(c["state"], "cancelled");
    let (s, again) = server.delete(&format!("/v1/timers/{id}")).await;
    assert_eq!(s, 409, "{again}");
    assert_eq!(again["error"]["code"], "not_cancellable");
    let (s, _) = server.delete("/v1/timers/999999").await;
    assert_eq!(s, 404);
    let (s, bad) = server.delete("/v1/timers/abc").await;
    assert_eq!(s, 400);
    assert_eq!(bad["error"]["field"], "id");
    // A second timer, not cancelled, proves the sink was reachable all along.
    let other = create(
        &server,
        json!({"delay_ms": 1600, "channel": "hooks", "recipient": "u2", "message": {}}),
    )
    .await;
    wait_state(
        &server,
        other["id"].as_i64().unwrap(),
        "done",
        Duration::from_secs(10),
    )
    .await;
    assert_eq!(mock.key(&format!("herald-timer-{id}")).await["requests"], 0);
    assert_eq!(server.timer(id).await["state"], "cancelled");
    // Cancelling a delivered timer is a conflict too.
    let (s, _) = server.delete(&format!("/v1/timers/{}", other["id"])).await;
    assert_eq!(s, 409);
}

#[tokio::test]
async fn retryable_failures_are_retried_until_success() {
    let (mock, server) = pair(&["--fail-first", "2", "--error-status", "503"], FAST_RETRY).await;
    let v = create(
        &server,
        json!({"delay_ms": 0, "channel": "hooks", "recipient": "u", "message": {}}),
    )
    .await;
    let id = v["id"].as_i64().unwrap();
    let t = wait_state(&server, id, "done", Duration::from_secs(15)).await;
    assert_eq!(t["attempts"], 3);
    let (_, log) = server.get(&format!("/v1/timers/{id}/deliveries")).await;
    let outcomes: Vec<&str> = log["deliveries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["retry", "retry", "delivered"]);
    assert_eq!(log["deliveries"][0]["status"], 503);
    let k = mock.key(&format!("herald-timer-{id}")).await;
    assert_eq!(k["requests"], 3);
    assert_eq!(k["delivered"], 1);
    // The retried attempts carry their attempt number.
    let reqs = mock.requests(Some(&format!("herald-timer-{id}"))).await;
    let attempts: Vec<i64> = reqs
        .iter()
        .map(|r| r["body"]["attempt"].as_i64().unwrap())
        .collect();
    assert_eq!(attempts, [1, 2, 3]);
}

#[tokio::test]
async fn dead_after_max_attempts_with_the_last_error_kept() {
    let extra = format!("{FAST_RETRY}\nmax_attempts = 3");
    let (mock, server) = pair(&["--error-rate", "1.0", "--error-status", "500"], &extra).await;
    let v = create(
        &server,
        json!({"delay_ms": 0, "channel": "hooks", "recipient": "u", "message": {}}),
    )
    .await;
    let id = v["id"].as_i64().unwrap();
    let t = wait_state(&server, id, "dead", Duration::from_secs(15)).await;
    assert_eq!(t["attempts"], 3);
    assert!(
        t["last_error"].as_str().unwrap().contains("HTTP 500"),
        "{t}"
    );
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(mock.key(&format!("herald-timer-{id}")).await["requests"], 3);
}

#[tokio::test]
async fn a_4xx_answer_fails_at_once() {
    let (mock, server) = pair(&["--permanent-status", "422"], FAST_RETRY).await;
    let v = create(
        &server,
        json!({"delay_ms": 0, "channel": "hooks", "recipient": "u", "message": {}}),
    )
    .await;
    let id = v["id"].as_i64().unwrap();
    let t = wait_state(&server, id, "failed", Duration::from_secs(10)).await;
    assert_eq!(t["attempts"], 1);
    assert!(t["last_error"].as_str().unwrap().contains("HTTP 422"));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(mock.key(&format!("herald-timer-{id}")).await["requests"], 1);
}

#[tokio::test]
async fn throttling_429_is_retried() {
    let (mock, server) = pair(&["--fail-first", "1", "--error-status", "429"], FAST_RETRY).await;
    let v = create(
        &server,
        json!({"delay_ms": 0, "channel": "hooks", "recipient": "u", "message": {}}),
    )
    .await;
    let id = v["id"].as_i64().unwrap();
    let t = wait_state(&server, id, "done", Duration::from_secs(10)).await;
    assert_eq!(t["attempts"], 2);
    assert_eq!(mock.stats().await["duplicates"], 0);
}

#[tokio::test]
async fn bad_input_is_a_400_naming_the_field_and_writes_nothing() {
    let (_mock, server) = pair(&[], "").await;
    let cases: Vec<(&str, &str)> = vec![
        (
            r#"{"delay_ms": 10, "channel": "hooks", "recipient": "u", "message": {}"#,
            "",
        ),
        (r#"not json"#, ""),
        (
            r#"{"delay_ms": 10, "recipient": "u", "message": {}}"#,
            "channel",
        ),
        (
            r#"{"delay_ms": 10, "channel": "nope", "recipient": "u", "message": {}}"#,
            "channel",
        ),
        (
            r#"{"delay_ms": 10, "channel": "hooks", "recipient": "u", "message": {}, "colour": 1}"#,
            "colour",
        ),
        (
            r#"{"fire_at": "tomorrow at nine", "channel": "hooks", "recipient": "u", "message": {}}"#,
            "fire_at",
        ),
        (
            r#"{"fire_at": "2026-12-01 09:00", "channel": "hooks", "recipient": "u", "message": {}}"#,
            "fire_at",
        ),
        (
            r#"{"delay_ms": -5, "channel": "hooks", "recipient": "u", "message": {}}"#,
            "delay_ms",
        ),
        (
            r#"{"delay_ms": "soon", "channel": "hooks", "recipient": "u", "message": {}}"#,
            "delay_ms",
        ),
        (
            r#"{"channel": "hooks", "recipient": "u", "message": {}}"#,
            "fire_at",
        ),
        (
            r#"{"delay_ms": 1, "fire_at": "2030-01-01T00:00:00Z", "channel": "hooks", "recipient": "u", "message": {}}"#,
            "fire_at",
        ),
        (
            r#"{"delay_ms": 10, "channel": "hooks", "recipient": "u", "message": [1,2]}"#,
            "message",
        ),
        (
            r#"{"delay_ms": 10, "channel": "hooks", "recipient": "", "message": {}}"#,
            "recipient",
        ),
        (
            r#"{"delay_ms": 10, "channel": "hooks", "recipient": "u", "message": {}, "priority": 12}"#,
            "priority",
        ),
        (
            r#"{"delay_ms": 10, "channel": "hooks", "recipient": "u", "message": {}, "idempotency_key": "has space"}"#,
            "idempotency_key",
        ),
        (
            r#"{"fire_at": "9999-01-01T00:00:00Z", "channel": "hooks", "recipient": "u", "message": {}}"#,
            "fire_at",
        ),
    ];
    for (body, field) in cases {
        let (s, v) = server
            .post_raw("/v1/timers", "application/json", body.to_string())
            .await;
        assert_eq!(s, 400, "{body} -> {v}");
        let err = &v["error"];
        assert!(
            err["code"].is_string() && err["message"].is_string(),
            "{body} -> {v}"
        );
        if !field.is_empty() {
            assert_eq!(err["field"], field, "{body} -> {v}");
        }
    }
    // Over the body limit (64 KiB by default).
    let big = "x".repeat(70 * 1024);
    let body =
        json!({"delay_ms": 10, "channel": "hooks", "recipient": "u", "message": {"big": big}});
    let (s, v) = server.post("/v1/timers", &body).await;
    assert_eq!(s, 413, "{v}");
    assert_eq!(v["error"]["code"], "payload_too_large");
    assert_eq!(
        server.total_timers().await,
        0,
        "a rejected request wrote something"
    );
    // Unknown routes and methods answer in the same error shape.
    let (s, v) = server.get("/v1/nothing").await;
    assert_eq!(s, 404);
    assert_eq!(v["error"]["code"], "not_found");
}

#[tokio::test]
async fn bulk_answers_per_line_and_commits_the_valid_lines() {
    let (mock, server) = pair(&[], "").await;
    let lines = [
        r#"{"delay_ms": 100, "channel": "hooks", "recipient": "a", "message": {"n": 1}}"#,
        "",
        r#"{"delay_ms": 100, "channel": "nope", "recipient": "b", "message": {}}"#,
        r#"{"delay_ms": 100, "channel": "hooks", "recipient": "c", "message": {"n": 3}, "idempotency_key": "bulk-c"}"#,
        r#"{"delay_ms": 100, "channel": "hooks", "recipient": "c", "message": {"n": 3}, "idempotency_key": "bulk-c"}"#,
        r#"{"broken"#,
    ]
    .join("\n");
    let (s, out) = server.bulk(&lines).await;
    assert_eq!(s, 200);
    let statuses: Vec<(i64, i64)> = out
        .iter()
        .map(|l| (l["line"].as_i64().unwrap(), l["status"].as_i64().unwrap()))
        .collect();
    assert_eq!(statuses, [(1, 201), (3, 400), (4, 201), (5, 200), (6, 400)]);
    assert_eq!(out[1]["error"]["field"], "channel");
    assert_eq!(out[2]["id"], out[3]["id"]);
    assert_eq!(server.total_timers().await, 2);
    wait_for("two deliveries", Duration::from_secs(10), || async {
        mock.stats().await["unique_delivered"] == 2
    })
    .await;
    // A request over the line limit is stopped where it crosses it: the
    // lines before are committed and answered in the 413.
    let small = Server::start("[api]\nbulk_max_lines = 10\nbulk_chunk = 4").await;
    let many = [r#"{"delay_ms": 86400000, "channel": "log", "recipient": "z", "message": {}}"#; 11]
        .join("\n");
    let (s, v) = small.bulk(&many).await;
    assert_eq!(s, 413, "{v:?}");
    assert_eq!(v[0]["error"]["code"], "too_many_lines", "{v:?}");
    assert_eq!(v[0]["answered"], 10, "{v:?}");
    assert_eq!(v[0]["lines"][9]["status"], 201, "{v:?}");
    assert_eq!(small.total_timers().await, 10);
}

#[tokio::test]
async fn webhooks_are_signed_when_a_secret_is_set() {
    let mock = Mock::start(&["--secret", "s3cret"]).await;
    let cfg = Server::webhook_config(&mock.hook(), "secret_env = \"HOOK_SECRET_FOR_TEST\"", "");
    // secret_env reads from the server's environment; set inline instead when
    // the variable is not passed through.
    let cfg = cfg.replace(
        "secret_env = \"HOOK_SECRET_FOR_TEST\"",
        "secret = \"s3cret\"",
    );
    let server = Server::start(&cfg).await;
    let v = create(
        &server,
        json!({"delay_ms": 0, "channel": "hooks", "recipient": "u", "message": {"x": 1}}),
    )
    .await;
    wait_state(
        &server,
        v["id"].as_i64().unwrap(),
        "done",
        Duration::from_secs(10),
    )
    .await;
    let s = mock.stats().await;
    assert_eq!(s["bad_signatures"], 0);
    let reqs = mock.requests(None).await;
    let sig = reqs[0]["headers"]["x-herald-signature"].as_str();
    assert!(sig.unwrap_or("").starts_with("t="), "{:?}", reqs[0]);
}

#[tokio::test]
async fn a_wrong_secret_is_refused_by_the_receiver_and_fails() {
    let mock = Mock::start(&["--secret", "right"]).await;
    let cfg = Server::webhook_config(&mock.hook(), "secret = \"wrong\"", "");
    let server = Server::start(&cfg).await;
    let v = create(
        &server,
        json!({"delay_ms": 0, "channel": "hooks", "recipient": "u", "message": {}}),
    )
    .await;
    let t = wait_state(
        &server,
        v["id"].as_i64().unwrap(),
        "failed",
        Duration::from_secs(10),
    )
    .await;
    assert!(t["last_error"].as_str().unwrap().contains("401"));
    assert_eq!(mock.stats().await["bad_signatures"], 1);
}

#[tokio::test]
async fn a_fire_at_in_the_past_fires_at_once() {
    let (mock, server) = pair(&[], "").await;
    let v = create(
        &server,
        json!({"fire_at": "2020-01-01T00:00:00Z", "channel": "hooks", "recipient": "u", "message": {}}),
    )
    .await;
    // due_at is the time of acceptance, not 2020.
    assert!(parse_ms(v["due_at"].as_str().unwrap()) > parse_ms("2026-01-01T00:00:00Z"));
    wait_state(
        &server,
        v["id"].as_i64().unwrap(),
        "done",
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(mock.stats().await["unique_delivered"], 1);
}

#[tokio::test]
async fn urgent_timers_go_first() {
    // One delivery at a time, slow receiver: order at the sink shows priority.
    let (mock, server) = pair(&["--latency-ms", "30"], "concurrency = 1").await;
    let due = "2020-01-01T00:00:00Z";
    let mut lines = Vec::new();
    for i in 0..20 {
        let p = if i == 15 { 9 } else { 1 };
        lines.push(json!({"fire_at": due, "channel": "hooks", "recipient": format!("r{i}"), "priority": p, "message": {}}).to_string());
    }
    let (_, out) = server.bulk(&lines.join("\n")).await;
    assert!(out.iter().all(|l| l["status"] == 201));
    wait_for("all delivered", Duration::from_secs(20), || async {
        mock.stats().await["unique_delivered"] == 20
    })
    .await;
    let reqs = mock.requests(None).await;
    let pos = reqs
        .iter()
        .position(|r| r["body"]["recipient"] == "r15")
        .unwrap();
    // The one urgent timer overtakes nearly everything queued before it.
    assert!(pos <= 2, "urgent timer was delivered {pos}th");
}

#[tokio::test]
async fn timers_survive_a_graceful_restart_and_the_window_edge() {
    let mock = Mock::start(&[]).await;
    // A 1 s window: timers due later are picked up by the loader, not at creation.
    let cfg = Server::webhook_config(
        &mock.hook(),
        "",
        "[engine]\nwindow_ms = 1000\nload_interval_ms = 200",
    );
    let mut server = Server::start(&cfg).await;
    let mut ids = Vec::new();
    for i in 0..10 {
        let v = create(&server, json!({"delay_ms": 2500 + i * 100, "channel": "hooks", "recipient": "u", "message": {}})).await;
        ids.push(v["id"].as_i64().unwrap());
    }
    server.terminate().await;
    server.restart().await;
    for &id in &ids {
        wait_state(&server, id, "done", Duration::from_secs(15)).await;
    }
    let s = mock.stats().await;
    assert_eq!(s["unique_delivered"], 10);
    assert_eq!(s["duplicates"], 0);
}

#[tokio::test]
async fn metrics_and_health() {
    let (_mock, server) = pair(&[], "").await;
    let v = create(
        &server,
        json!({"delay_ms": 0, "channel": "hooks", "recipient": "u", "message": {}}),
    )
    .await;
    wait_state(
        &server,
        v["id"].as_i64().unwrap(),
        "done",
        Duration::from_secs(5),
    )
    .await;
    let (s, h) = server.get("/healthz").await;
    assert_eq!(s, 200);
    assert_eq!(h["status"], "ok");
    let m = server.metrics().await;
    for name in [
        "herald_timers_created_total",
        "herald_timers_fired_total",
        "herald_timers_done_total",
        "herald_timers_dead_total",
        "herald_fire_lateness_seconds_bucket",
        "herald_deliveries_total{channel=\"hooks\",outcome=\"delivered\"}",
        "herald_timers_pending",
        "herald_search_filing_lag_seconds",
    ] {
        assert!(m.contains(name), "metrics lack {name}:\n{m}");
    }
}

async fn patch(server: &Server, path: &str, body: &Value) -> (u16, Value) {
    let resp = client()
        .patch(format!("{}{path}", server.url))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .expect("patch");
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

/// Runs `herald ARGS --server URL`; its exit success and JSON answer, or,
/// when it failed, the error line it printed on stderr (as a JSON string).
fn cli(server: &Server, args: &[&str]) -> (bool, Value) {
    let out = std::process::Command::new(BIN)
        .args(args)
        .args(["--server", &server.url])
        .env_remove("HERALD_KEY")
        .output()
        .expect("run herald");
    if !out.status.success() {
        assert!(
            out.stdout.is_empty(),
            "an error prints nothing on stdout: {out:?}"
        );
        return (
            false,
            Value::String(String::from_utf8_lossy(&out.stderr).into_owned()),
        );
    }
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    (true, v)
}

/// Search, dead letters, patch, retry (one and by filter) and
/// `on_conflict: replace`, on one server: a timer dies while the sink fails,
/// is found, replayed once the sink is back, and delivered as attempt 3.
#[tokio::test]
async fn dead_timers_are_found_replayed_and_pending_ones_patched() {
    let extra = format!("{FAST_RETRY}\nmax_attempts = 2");
    let (mock, server) = pair(&["--error-rate", "1.0", "--error-status", "500"], &extra).await;
    let dead = create(
        &server,
        json!({"delay_ms": 0, "channel": "hooks", "recipient": "u-dead", "message": {}}),
    )
    .await["id"]
        .as_i64()
        .unwrap();
    let later = create(
        &server,
        json!({"delay_ms": 3_600_000, "channel": "hooks", "recipient": "u-later",
               "idempotency_key": "k-later", "message": {"v": 1}}),
    )
    .await["id"]
        .as_i64()
        .unwrap();
    wait_state(&server, dead, "dead", Duration::from_secs(15)).await;

    let ids = |v: &Value| -> Vec<i64> {
        v["timers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_i64().unwrap())
            .collect()
    };
    let (s, v) = server.get("/v1/timers?state=dead").await;
    assert_eq!((s, ids(&v)), (200, vec![dead]), "{v}");
    assert!(v["timers"][0].get("message").is_none(), "{v}");
    let (_, v) = server.get("/v1/timers?idempotency_key=k-later").await;
    assert_eq!(ids(&v), vec![later]);
    let (_, v) = server.get("/v1/timers?recipient=u-later&kind=timer").await;
    assert_eq!(ids(&v), vec![later]);
    let (_, first) = server.get("/v1/timers?limit=1&order=desc").await;
    assert_eq!(ids(&first), vec![later]);
    let cursor = first["next_cursor"].as_str().unwrap().to_string();
    let (_, second) = server
        .get(&format!("/v1/timers?limit=1&order=desc&cursor={cursor}"))
        .await;
    assert_eq!(ids(&second), vec![dead]);
    let (s, v) = server.get("/v1/timers?cursor=nope").await;
    assert_eq!(
        (s, v["error"]["field"].as_str()),
        (400, Some("cursor")),
        "{v}"
    );
    let (s, _) = server.get("/v1/timers?state=firing").await;
    assert_eq!(s, 400);

    // The CLI finds it the same ways.
    let (ok, v) = cli(
        &server,
        &["timers", "list", "--state", "dead", "--channel", "hooks"],
    );
    assert_eq!((ok, ids(&v)), (true, vec![dead]), "{v}");
    let (ok, v) = cli(
        &server,
        &["timers", "list", "--order", "desc", "--limit", "1"],
    );
    assert_eq!((ok, ids(&v)), (true, vec![later]), "{v}");
    let (ok, v) = cli(&server, &["timers", "dead-letters", "--channel", "hooks"]);
    assert_eq!(
        (ok, &v["groups"][0]["timer_ids"]),
        (true, &json!([dead])),
        "{v}"
    );
    let (ok, v) = cli(&server, &["timers", "list", "--state", "firing"]);
    let err = v.as_str().unwrap_or_default();
    assert!(
        !ok && err.starts_with("error: 400 ") && err.contains("state"),
        "{v}"
    );

    let (s, v) = server.get("/v1/dead-letters").await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        (v["scanned"].as_i64(), v["truncated"].as_bool()),
        (Some(1), Some(false))
    );
    let g = &v["groups"][0];
    assert_eq!(
        (g["channel"].as_str(), g["state"].as_str()),
        (Some("hooks"), Some("dead"))
    );
    assert_eq!(g["timer_ids"], json!([dead]));
    assert!(g["error"].as_str().unwrap().contains("HTTP 500"), "{g}");

    // The sink recovers.
    let (s, _) = post_raw(
        &format!("{}/_mock/faults", mock.url),
        "application/json",
        json!({"error_rate": 0.0}).to_string(),
    )
    .await;
    assert_eq!(s, 200);

    // Latest wins on the pending keyed timer; without `replace`, the stored one answers.
    let (s, v) = server
        .post(
            "/v1/timers",
            &json!({"delay_ms": 7_200_000, "channel": "hooks", "recipient": "u-later",
                    "idempotency_key": "k-later", "message": {"v": 2}, "on_conflict": "replace"}),
        )
        .await;
    assert_eq!((s, v["id"].as_i64()), (200, Some(later)), "{v}");
    let replaced_due = parse_ms(v["due_at"].as_str().unwrap());
    assert!(replaced_due > now_ms() + 3_700_000, "{v}");
    let (s, v) = server
        .post(
            "/v1/timers",
            &json!({"delay_ms": 0, "channel": "hooks", "recipient": "u-later",
                    "idempotency_key": "k-later", "message": {"v": 3}}),
        )
        .await;
    assert_eq!(
        (s, parse_ms(v["due_at"].as_str().unwrap())),
        (200, replaced_due)
    );

    // Patch it to fire now with a new message.
    let id = later.to_string();
    let (ok, v) = cli(
        &server,
        &[
            "timers",
            "patch",
            &id,
            "--delay-ms",
            "0",
            "--message",
            r#"{"v":4}"#,
            "--priority",
            "7",
        ],
    );
    assert!(ok, "{v}");
    assert_eq!(
        (v["message"]["v"].as_i64(), v["priority"].as_i64()),
        (Some(4), Some(7))
    );
    wait_state(&server, later, "done", Duration::from_secs(10)).await;
    let sent = mock.requests(Some("k-later")).await;
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["body"]["message"]["v"], 4);
    let (s, v) = patch(
        &server,
        &format!("/v1/timers/{later}"),
        &json!({"priority": 1}),
    )
    .await;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (409, Some("not_pending")),
        "{v}"
    );
    let (s, _) = patch(&server, &format!("/v1/timers/{later}"), &json!({})).await;
    assert_eq!(s, 400);
    let (ok, v) = cli(
        &server,
        &["timers", "patch", &later.to_string(), "--priority", "1"],
    );
    let err = v.as_str().unwrap_or_default();
    assert!(!ok && err.starts_with("error: 409 not_pending"), "{v}");

    // A valid `traceparent` on create is stored and sent on the delivery; a bad one is dropped.
    let trace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let mut traced = Vec::new();
    for (key, header) in [("k-traced", trace), ("k-untraced", "00-nonsense")] {
        let resp = client()
            .post(format!("{}/v1/timers", server.url))
            .header("content-type", "application/json")
            .header("traceparent", header)
            .body(
                json!({"delay_ms": 0, "channel": "hooks", "recipient": "u-t",
                       "idempotency_key": key, "message": {}})
                .to_string(),
            )
            .send()
            .await
            .expect("create traced");
        assert_eq!(resp.status().as_u16(), 201);
        let v: Value = resp.json().await.expect("json");
        traced.push(v["id"].as_i64().unwrap());
    }
    let t = wait_state(&server, traced[0], "done", Duration::from_secs(10)).await;
    assert_eq!(t["traceparent"], trace, "{t}");
    let sent = mock.requests(Some("k-traced")).await;
    assert_eq!(sent[0]["headers"]["traceparent"], trace, "{sent:?}");
    let t = wait_state(&server, traced[1], "done", Duration::from_secs(10)).await;
    assert!(t.get("traceparent").is_none(), "{t}");
    let sent = mock.requests(Some("k-untraced")).await;
    assert!(sent[0]["headers"].get("traceparent").is_none(), "{sent:?}");

    // Replay the dead one (by the CLI): a new series, numbered on.
    let (ok, v) = cli(&server, &["timers", "retry", &dead.to_string()]);
    assert_eq!((ok, v["state"].as_str()), (true, Some("pending")), "{v}");
    let t = wait_state(&server, dead, "done", Duration::from_secs(10)).await;
    assert_eq!(t["attempts"], 3);
    let (_, log) = server.get(&format!("/v1/timers/{dead}/deliveries")).await;
    let attempts: Vec<i64> = log["deliveries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["attempt"].as_i64().unwrap())
        .collect();
    assert_eq!(attempts, vec![1, 2, 3]);
    let (s, v) = server
        .post(&format!("/v1/timers/{dead}:retry"), &json!({}))
        .await;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (409, Some("not_retryable")),
        "{v}"
    );
    let (s, v) = server
        .post("/v1/timers:retry", &json!({"state": "dead"}))
        .await;
    assert_eq!((s, v), (200, json!({"retried": 0, "more": false})));
    let (ok, v) = cli(
        &server,
        &["timers", "retry-all", "--channel", "hooks", "--limit", "10"],
    );
    assert_eq!((ok, v), (true, json!({"retried": 0, "more": false})));
    let (s, _) = server
        .post("/v1/timers:retry", &json!({"state": "pending"}))
        .await;
    assert_eq!(s, 400);
}
