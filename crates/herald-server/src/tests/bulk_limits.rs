//! Bulk requests stream: a body over `bulk_max_lines` or `bulk_max_bytes`
//! is stopped where it crosses, the lines before it stay committed and are
//! answered in a `413`; past the body budget a request is `503 overloaded`.

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use serde_json::{Value, json};

use super::{Api, error};
use crate::ApiConfig;

fn timer_line(key: &str) -> String {
    format!(
        "{}\n",
        json!({"delay_ms": 600_000, "channel": "log", "recipient": "r",
               "idempotency_key": key, "message": {}})
    )
}

fn bulk(uri: &str, body: String, declare_length: bool) -> Request<Body> {
    let mut r = Request::post(uri).header(header::CONTENT_TYPE, "application/x-ndjson");
    if declare_length {
        r = r.header(header::CONTENT_LENGTH, body.len());
    }
    r.body(Body::from(body)).expect("request")
}

impl Api {
    /// Pending timers in the store.
    async fn timers_stored(&self) -> u64 {
        let counts = self.engine.store().count_by_tenant_state().await;
        counts.expect("counts").iter().map(|(_, _, n)| *n).sum()
    }
}

/// The per-line answers of a cut-short bulk request, after checking its error.
fn cut(status: StatusCode, body: &Value, want: StatusCode, code: &str) -> Vec<Value> {
    error(status, body, want, code);
    let lines = body["lines"].as_array().expect("lines").clone();
    assert_eq!(body["answered"], lines.len(), "{body}");
    lines
}

#[tokio::test]
async fn too_many_lines_stop_the_request_and_keep_what_came_before() {
    let api = Api::with(ApiConfig {
        bulk_max_lines: 3,
        bulk_chunk: 2,
        ..ApiConfig::default()
    })
    .await;
    let body: String = (1..=5).map(|i| timer_line(&format!("l{i}"))).collect();
    let (st, body) = api.send(bulk("/v1/timers:bulk", body, false)).await;
    let lines = cut(st, &body, StatusCode::PAYLOAD_TOO_LARGE, "too_many_lines");
    assert_eq!(lines.len(), 3, "{body}");
    for (i, l) in lines.iter().enumerate() {
        assert_eq!(
            (l["line"].as_u64(), l["status"].as_u64()),
            (Some(i as u64 + 1), Some(201))
        );
    }
    // The three answered 201 are stored; the lines past the limit are not.
    assert_eq!(api.timers_stored().await, 3);
}

#[tokio::test]
async fn too_many_bytes_stop_the_request_where_they_cross() {
    let line = timer_line("b1");
    let api = Api::with(ApiConfig {
        bulk_max_bytes: line.len() * 2 + 10,
        ..ApiConfig::default()
    })
    .await;
    let body: String = (1..=4).map(|i| timer_line(&format!("b{i}"))).collect();
    // Declared: refused before a byte is read.
    let (st, resp) = api.send(bulk("/v1/timers:bulk", body.clone(), true)).await;
    error(
        st,
        &resp,
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload_too_large",
    );
    assert_eq!(api.timers_stored().await, 0);
    // Streamed without a length: stopped as it crosses, the whole lines
    // before it committed.
    let (st, resp) = api.send(bulk("/v1/timers:bulk", body, false)).await;
    let lines = cut(
        st,
        &resp,
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload_too_large",
    );
    assert!(lines.len() <= 2, "{resp}");
    for l in &lines {
        assert_eq!(l["status"], 201, "{resp}");
    }
    assert_eq!(api.timers_stored().await, lines.len() as u64);
}

#[tokio::test]
async fn large_lines_commit_in_smaller_chunks_and_answer_in_order() {
    // A budget this small makes chunks of a few lines; the answers still
    // come one per line, in order, with a bad line in the middle.
    let api = Api::with(ApiConfig {
        max_inflight_body_bytes: 2 * 1024 * 1024,
        ..ApiConfig::default()
    })
    .await;
    let text = "x".repeat(30_000);
    let mut body = String::new();
    for i in 1..=40 {
        if i == 20 {
            body.push_str("{\"channel\": \"nope\"}\n");
        } else {
            body.push_str(&format!(
                "{}\n",
                json!({"delay_ms": 600_000, "channel": "log", "recipient": "r",
                       "idempotency_key": format!("c{i}"), "message": {"text": text}})
            ));
        }
    }
    let (st, headers, resp) = api.exchange(bulk("/v1/timers:bulk", body, false)).await;
    assert_eq!(st, StatusCode::OK, "{resp}");
    assert_eq!(headers[header::CONTENT_TYPE], "application/x-ndjson");
    let text = resp.as_str().expect("ndjson").to_string();
    let answers: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(answers.len(), 40);
    for (i, a) in answers.iter().enumerate() {
        let want = if i == 19 { 400 } else { 201 };
        assert_eq!(
            (a["line"].as_u64(), a["status"].as_u64()),
            (Some(i as u64 + 1), Some(want)),
            "{a}"
        );
    }
    assert_eq!(api.timers_stored().await, 39);
}

#[tokio::test]
async fn past_the_budget_a_bulk_request_is_overloaded() {
    let api = Api::with(ApiConfig {
        max_inflight_body_bytes: 1024,
        ..ApiConfig::default()
    })
    .await;
    let (st, headers, resp) = api
        .exchange(bulk("/v1/timers:bulk", timer_line("o1"), true))
        .await;
    error(st, &resp, StatusCode::SERVICE_UNAVAILABLE, "overloaded");
    assert_eq!(headers[header::RETRY_AFTER], "1");
    let (st, _, resp) = api
        .exchange(bulk("/v1/reminders:bulk", timer_line("o2"), false))
        .await;
    error(st, &resp, StatusCode::SERVICE_UNAVAILABLE, "overloaded");
    assert_eq!(api.timers_stored().await, 0);
    // Audience uploads stream too, with a fixed share.
    let (st, resp) = api
        .upload(
            "/v1/audiences",
            "application/x-ndjson",
            "{\"recipient\": \"a\"}\n",
        )
        .await;
    error(st, &resp, StatusCode::SERVICE_UNAVAILABLE, "overloaded");
    // A JSON body is charged what it declares.
    let body = json!({"delay_ms": 600_000, "channel": "log", "recipient": "r",
                      "message": {"text": "x".repeat(2000)}})
    .to_string();
    let req = Request::post("/v1/timers")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::CONTENT_LENGTH, body.len())
        .body(Body::from(body))
        .expect("request");
    let (st, headers, resp) = api.exchange(req).await;
    error(st, &resp, StatusCode::SERVICE_UNAVAILABLE, "overloaded");
    assert_eq!(headers[header::RETRY_AFTER], "1");
    // A small one fits.
    let (st, resp) = api
        .post(
            "/v1/timers",
            json!({"delay_ms": 600_000, "channel": "log", "recipient": "r", "message": {}}),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{resp}");
}

/// One chunk commits while the next is read: the answers still come one
/// per line in order, and once the store fails no later chunk is tried
/// (each of its lines is answered with the store's error, and nothing of
/// them is stored).
#[tokio::test]
async fn chunks_commit_while_the_next_is_read_and_stop_when_the_store_fails() {
    let api = Api::with(ApiConfig {
        bulk_chunk: 3,
        ..ApiConfig::default()
    })
    .await;
    let answers = |text: &str| -> Vec<(u64, u64)> {
        text.lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .map(|v| (v["line"].as_u64().unwrap(), v["status"].as_u64().unwrap()))
            .collect()
    };
    let body: String = (1..=10).map(|i| timer_line(&format!("ok{i}"))).collect();
    let (st, _, resp) = api.exchange(bulk("/v1/timers:bulk", body, false)).await;
    assert_eq!(st, StatusCode::OK, "{resp}");
    let got = answers(resp.as_str().expect("ndjson"));
    assert_eq!(got, (1..=10).map(|i| (i, 201)).collect::<Vec<_>>());
    assert_eq!(api.timers_stored().await, 10);

    api.store
        .fail_all(Some(herald_store::StoreError::Unavailable {
            code: None,
            message: "the disk went away".into(),
        }));
    let body: String = (1..=10).map(|i| timer_line(&format!("down{i}"))).collect();
    let (st, _, resp) = api.exchange(bulk("/v1/timers:bulk", body, false)).await;
    assert_eq!(st, StatusCode::OK, "{resp}");
    let got = answers(resp.as_str().expect("ndjson"));
    assert_eq!(got, (1..=10).map(|i| (i, 503)).collect::<Vec<_>>());
    api.store.fail_all(None);
    assert_eq!(api.timers_stored().await, 10);
}
