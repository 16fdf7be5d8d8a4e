//! `digest` on `POST /v1/timers`: its checks, and where the create path puts
//! a digest timer (its answer's `due_at` is the digest's close).

use axum::http::{Method, StatusCode};
use herald_core::ManualClock;
use serde_json::{Value, json};

use super::{Api, Options, error};
use crate::{Access, AuthConfig};

fn ms(s: &str) -> i64 {
    herald_core::time::parse_rfc3339_ms(s).expect("a time")
}

/// The API on a manual clock set to `now`.
async fn api_at(now: &str) -> Api {
    let options = Options {
        clock: Some(ManualClock::new(ms(now))),
        ..Options::default()
    };
    Api::build_with(options, |_| Access::open(&AuthConfig::default())).await
}

fn timer(digest: Value) -> Value {
    json!({"delay_ms": 1000, "channel": "log", "recipient": "u1", "message": {"n": 1},
           "digest": digest})
}

#[tokio::test]
async fn digest_refusals_name_the_field() {
    let api = Api::new().await;
    let long = "k".repeat(129);
    let cases = [
        (json!({"window_ms": 1000}), "digest.key"),
        (json!({"key": "", "window_ms": 1000}), "digest.key"),
        (json!({"key": long, "window_ms": 1000}), "digest.key"),
        (json!({"key": "k"}), "digest.window_ms"),
        (json!({"key": "k", "window_ms": 0}), "digest.window_ms"),
        (
            json!({"key": "k", "window_ms": 604_800_001}),
            "digest.window_ms",
        ),
        (
            json!({"key": "k", "window_ms": 1000, "max_delay_ms": 999}),
            "digest.max_delay_ms",
        ),
        (
            json!({"key": "k", "window_ms": 1000, "at_local": "09:00"}),
            "digest.at_local",
        ),
        (json!({"key": "k", "at_local": "9am"}), "digest.at_local"),
        (
            json!({"key": "k", "at_local": "09:00", "max_delay_ms": 5}),
            "digest.max_delay_ms",
        ),
        (
            json!({"key": "k", "window_ms": 1000, "since": 5}),
            "digest.since",
        ),
        (json!({"key": "k", "window_ms": 1000, "nope": 5}), "digest"),
    ];
    for (digest, field) in cases {
        let (st, body) = api.post("/v1/timers", timer(digest.clone())).await;
        let e = error(st, &body, StatusCode::BAD_REQUEST, "invalid_field");
        let got = e["field"].as_str().unwrap_or_default();
        assert!(got.starts_with(field), "{digest}: {body}");
    }
    let mut replace = timer(json!({"key": "k", "window_ms": 1000}));
    replace["on_conflict"] = json!("replace");
    replace["idempotency_key"] = json!("k1");
    let (st, body) = api.post("/v1/timers", replace).await;
    let e = error(st, &body, StatusCode::BAD_REQUEST, "invalid_field");
    assert_eq!(e["field"], "digest");
    api.engine.shutdown().await;
}

#[tokio::test]
async fn a_windowed_digest_answers_its_close_and_shows_its_spec() {
    let api = api_at("2026-05-01T10:00:00Z").await;
    let spec = json!({"key": "orders", "window_ms": 60_000, "max_delay_ms": 120_000});
    let mut answers = Vec::new();
    for delay in [1_000, 31_000] {
        let mut body = timer(spec.clone());
        body["delay_ms"] = json!(delay);
        let (st, t) = api.post("/v1/timers", body).await;
        assert_eq!(st, StatusCode::CREATED, "{t}");
        answers.push(t);
    }
    assert_eq!(answers[0]["due_at"], "2026-05-01T10:01:01.000Z");
    // The second slid the window to its own close, and moved the first.
    assert_eq!(answers[1]["due_at"], "2026-05-01T10:01:31.000Z");
    let (st, first) = api.get(&format!("/v1/timers/{}", answers[0]["id"])).await;
    assert_eq!(st, StatusCode::OK);
    assert_eq!(first["due_at"], "2026-05-01T10:01:31.000Z");
    assert_eq!(
        first["digest"],
        json!({"key": "orders", "window_ms": 60_000, "max_delay_ms": 120_000,
               "since": "2026-05-01T10:00:01.000Z"})
    );
    api.engine.shutdown().await;
}

#[tokio::test]
async fn a_daily_digest_closes_at_nine_local_across_spring_forward() {
    // Saturday noon UTC, the day before New York springs forward.
    let api = api_at("2026-03-07T12:00:00Z").await;
    let (st, _) = api
        .call(
            Method::PUT,
            "/v1/subscribers/ny",
            Some(json!({"timezone": "America/New_York",
                        "addresses": {"email": "ny@example.com"}})),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED);
    let daily = |fire_at: &str| {
        json!({"fire_at": fire_at, "channel": "log", "to": {"user_id": "ny",
               "channel_type": "email"}, "message": {"text": fire_at},
               "digest": {"key": "daily", "at_local": "09:00"}})
    };
    let (st, a) = api.post("/v1/timers", daily("2026-03-07T15:00:00Z")).await;
    assert_eq!(st, StatusCode::CREATED, "{a}");
    // 09:00 EDT: 13:00Z, where 09:00 EST the day before was 14:00Z.
    assert_eq!(a["due_at"], "2026-03-08T13:00:00.000Z");
    let line = daily("2026-03-08T03:00:00Z").to_string();
    let (st, lines) = api
        .upload("/v1/timers:bulk", "application/x-ndjson", &line)
        .await;
    assert_eq!(st, StatusCode::OK, "{lines}");
    let b: Value = serde_json::from_str(lines.as_str().unwrap_or_default().trim())
        .unwrap_or_else(|_| lines.clone());
    assert_eq!(b["due_at"], "2026-03-08T13:00:00.000Z", "{lines}");
    let (_, got) = api.get(&format!("/v1/timers/{}", a["id"])).await;
    assert_eq!(got["digest"]["at_local"], "09:00");
    assert_eq!(got["digest"]["since"], "2026-03-07T15:00:00.000Z");
    // After the close: the next day's 09:00 EDT.
    let (_, c) = api
        .post("/v1/timers", daily("2026-03-08T13:00:00.001Z"))
        .await;
    assert_eq!(c["due_at"], "2026-03-09T13:00:00.000Z");
    api.engine.shutdown().await;
}
