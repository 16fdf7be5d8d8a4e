//! Control characters in request text, and keys in Herald's own namespace:
//! every write route refuses them with a 400 naming the field, and writes
//! nothing.

use axum::http::{Method, StatusCode};
use herald_store::prelude::*;
use serde_json::{Value, json};

use super::{Api, error, rule_body};

/// Timers stored, in every state.
async fn timers(api: &Api) -> u64 {
    api.store
        .count_by_tenant_state()
        .await
        .expect("counting")
        .iter()
        .map(|(_, _, n)| n)
        .sum()
}

#[track_caller]
fn refused(status: StatusCode, body: &Value, field: &str) {
    let e = error(status, body, StatusCode::BAD_REQUEST, "invalid_field");
    assert_eq!(e["field"], field, "{body}");
}

fn timer(recipient: &str) -> Value {
    json!({"delay_ms": 60_000, "channel": "log", "recipient": recipient, "message": {"text": "hi"}})
}

#[tokio::test]
async fn timer_fields_refuse_control_characters() {
    let api = Api::new().await;
    for (body, field) in [
        (timer("a\0b"), "recipient"),
        (timer("a\u{1}b"), "recipient"),
        (timer("a\nb"), "recipient"),
        (timer("a\u{7f}"), "recipient"),
        (
            json!({"delay_ms": 1, "channel": "lo\0g", "recipient": "r", "message": {}}),
            "channel",
        ),
        (
            json!({"delay_ms": 1, "channel": "log", "recipient": "r", "message": {"t": {"x": "a\0"}}}),
            "message.t.x",
        ),
        (
            json!({"delay_ms": 1, "channel": "log", "recipient": "r", "message": {}, "idempotency_key": "k\0"}),
            "idempotency_key",
        ),
    ] {
        let (s, b) = api.post("/v1/timers", body).await;
        refused(s, &b, field);
    }
    for key in ["herald-timer-1", "HERALD-job-1-0", "Herald-x"] {
        let mut body = timer("r");
        body["idempotency_key"] = json!(key);
        let (s, b) = api.post("/v1/timers", body).await;
        refused(s, &b, "idempotency_key");
        assert!(
            b["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("herald-"))
        );
    }
    // Text in a message may hold line breaks and other escaped controls.
    let (s, b) = api
        .post(
            "/v1/timers",
            json!({"delay_ms": 60_000, "channel": "log", "recipient": "r", "message": {"text": "a\nb\u{1}"}}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{b}");
    assert_eq!(timers(&api).await, 1);
}

#[tokio::test]
async fn a_bulk_line_with_a_nul_fails_alone() {
    let api = Api::new().await;
    let body = [timer("ok-1"), timer("bad\0"), timer("ok-2")]
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n");
    let (s, b) = api
        .upload("/v1/timers:bulk", "application/x-ndjson", &body)
        .await;
    assert_eq!(s, StatusCode::OK, "{b}");
    let lines: Vec<Value> = b
        .as_str()
        .expect("NDJSON text")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let statuses: Vec<u64> = lines.iter().filter_map(|l| l["status"].as_u64()).collect();
    assert_eq!(statuses, [201, 400, 201], "{b}");
    assert_eq!(lines[1]["error"]["field"], "recipient");
    assert_eq!(timers(&api).await, 2);
}

#[tokio::test]
async fn subject_and_reminder_fields_refuse_control_characters() {
    let api = Api::new().await;
    let start = herald_core::time::format_rfc3339_ms(
        herald_core::Clock::now_ms(&herald_core::SystemClock) + 3_600_000,
    );
    let put = |path: &'static str, body: Value| {
        let api = &api;
        async move { api.call(Method::PUT, path, Some(body)).await }
    };
    let (s, b) = put(
        "/v1/subjects/s1",
        json!({"start_at": start, "title": "a\0"}),
    )
    .await;
    refused(s, &b, "title");
    let (s, b) = put(
        "/v1/subjects/s1",
        json!({"start_at": start, "title": "bell\u{7}"}),
    )
    .await;
    refused(s, &b, "title");
    let (s, b) = put(
        "/v1/subjects/s1",
        json!({"start_at": start, "data": {"k": ["x\0"]}}),
    )
    .await;
    refused(s, &b, "data.k[0]");
    let (s, b) = api
        .call(
            Method::PUT,
            "/v1/subjects/s%001",
            Some(json!({"start_at": start})),
        )
        .await;
    refused(s, &b, "subject_id");
    let found = api
        .store
        .get_subjects(herald_core::DEFAULT_TENANT, &["s1".to_string()])
        .await
        .expect("reading");
    assert!(found.is_empty(), "nothing was written");

    // Titles may hold line breaks.
    let (s, b) = put(
        "/v1/subjects/s1",
        json!({"start_at": start, "title": "two\nlines\t"}),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{b}");
    for (body, field) in [
        (
            json!({"user_id": "u\0", "subject_id": "s1", "channel_type": "app", "lead_minutes": 5}),
            "user_id",
        ),
        (
            json!({"user_id": "u", "subject_id": "s1", "channel_type": "app", "lead_minutes": 5, "channel": "log\0"}),
            "channel",
        ),
    ] {
        let (s, b) = api.post("/v1/reminders", body).await;
        refused(s, &b, field);
    }
    assert_eq!(timers(&api).await, 0);
}

#[tokio::test]
async fn rule_job_audience_and_key_fields_refuse_control_characters() {
    let api = Api::new().await;
    let mut cases = Vec::new();
    let mut r = rule_body();
    r["name"] = json!("da\0ily");
    cases.push(("/v1/rules", r, "name"));
    let mut r = rule_body();
    r["schedule"]["timezone"] = json!("UTC\0");
    cases.push(("/v1/rules", r, "schedule.timezone"));
    let mut r = rule_body();
    r["schedule"]["cron"] = json!("0 9 * * *\0");
    cases.push(("/v1/rules", r, "schedule.cron"));
    let mut r = rule_body();
    r["audience"]["users"] = json!(["u1", "u\0"]);
    cases.push(("/v1/rules", r, "audience.users[1]"));
    let mut r = rule_body();
    r["message"] = json!({"text": "\0"});
    cases.push(("/v1/rules", r, "message.text"));
    let job = json!({"users": ["u1"], "channel": "log", "message": {"text": "hi"}});
    let mut j = job.clone();
    j["users"] = json!(["\0"]);
    cases.push(("/v1/jobs", j, "users[0]"));
    let mut j = job.clone();
    j["channel"] = json!("log\0");
    cases.push(("/v1/jobs", j, "channel"));
    let mut j = job.clone();
    j["message"] = json!({"a": [{"b": "\0"}]});
    cases.push(("/v1/jobs", j, "message.a[0].b"));
    for (path, body, field) in cases {
        let (s, b) = api.post(path, body).await;
        refused(s, &b, field);
    }
    let (_, b) = api.get("/v1/rules").await;
    assert_eq!(b["rules"].as_array().map(Vec::len), Some(0), "{b}");
    let (_, b) = api.get("/v1/jobs").await;
    assert_eq!(b["jobs"].as_array().map(Vec::len), Some(0), "{b}");

    for (ct, body) in [
        (
            "application/x-ndjson",
            "{\"recipient\":\"a\"}\n{\"recipient\":\"b\\u0000\"}\n",
        ),
        ("text/csv", "recipient\na\nb\u{1}c\n"),
    ] {
        let (s, b) = api.upload("/v1/audiences", ct, body).await;
        error(s, &b, StatusCode::BAD_REQUEST, "invalid_line");
    }
    let (s, b) = api
        .upload("/v1/audiences?name=a%00b", "text/csv", "recipient\na\n")
        .await;
    refused(s, &b, "name");
}
