//! `max_pending` quotas: a create past the limit is `429 quota_exceeded`
//! with `Retry-After: 1` and writes nothing; bulk requests answer per line;
//! one tenant's quota does not touch another's.

use std::collections::HashMap;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use herald_core::{DEFAULT_TENANT, TenantId};
use serde_json::{Value, json};

use super::keys::{ADMIN, req, stored_keys_api};
use super::{Api, Options, error};

fn timer() -> Value {
    json!({"delay_ms": 600_000, "channel": "log", "recipient": "r", "message": {}})
}

fn quota(tenant: TenantId, max: u64) -> Options {
    Options {
        quotas: HashMap::from([(tenant, max)]),
        ..Options::default()
    }
}

impl Api {
    async fn pending(&self) -> u64 {
        let (st, stats) = self.get("/v1/stats").await;
        assert_eq!(st, StatusCode::OK, "{stats}");
        stats["timers"]["pending"].as_u64().unwrap()
    }

    async fn bulk(&self, uri: &str, lines: &[Value]) -> (StatusCode, Vec<Value>, bool) {
        let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let r = Request::post(uri)
            .header(header::CONTENT_TYPE, "application/x-ndjson")
            .body(Body::from(body))
            .unwrap();
        let (st, headers, body) = self.exchange(r).await;
        let text = body
            .as_str()
            .map(str::to_string)
            .unwrap_or(body.to_string());
        let answers = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        (st, answers, headers.contains_key(header::RETRY_AFTER))
    }
}

#[tokio::test]
async fn a_timer_past_the_quota_is_refused_and_not_stored() {
    let api = Api::build_with(quota(DEFAULT_TENANT, 2), |_| {
        crate::Access::open(&crate::AuthConfig::default())
    })
    .await;
    for _ in 0..2 {
        let (st, body) = api.post("/v1/timers", timer()).await;
        assert_eq!(st, StatusCode::CREATED, "{body}");
    }
    let (st, headers, body) = api
        .exchange(req(Method::POST, "/v1/timers", None, Some(timer())))
        .await;
    error(st, &body, StatusCode::TOO_MANY_REQUESTS, "quota_exceeded");
    assert_eq!(headers[header::RETRY_AFTER], "1");
    assert_eq!(api.pending().await, 2);
    // The same idempotency key as a stored timer is no new timer, but the
    // quota is checked before the store is asked: refused as well.
    let mut again = timer();
    again["idempotency_key"] = json!("k1");
    let (st, _) = api.post("/v1/timers", again).await;
    assert_eq!(st, StatusCode::TOO_MANY_REQUESTS);
}

#[tokio::test]
async fn bulk_lines_past_the_quota_are_refused_one_by_one() {
    let api = Api::build_with(quota(DEFAULT_TENANT, 3), |_| {
        crate::Access::open(&crate::AuthConfig::default())
    })
    .await;
    let (st, body) = api.post("/v1/timers", timer()).await;
    assert_eq!(st, StatusCode::CREATED, "{body}");
    let bad = json!({"delay_ms": 1, "channel": "nope", "recipient": "r", "message": {}});
    let (st, answers, retry_after) = api
        .bulk("/v1/timers:bulk", &[timer(), bad, timer(), timer()])
        .await;
    assert_eq!(st, StatusCode::OK);
    let statuses: Vec<u64> = answers
        .iter()
        .map(|a| a["status"].as_u64().unwrap())
        .collect();
    assert_eq!(statuses, [201, 400, 201, 429], "{answers:?}");
    assert_eq!(answers[3]["error"]["code"], "quota_exceeded");
    assert!(retry_after);
    assert_eq!(api.pending().await, 3);
}

#[tokio::test]
async fn reminders_count_against_the_quota() {
    let api = Api::build_with(quota(DEFAULT_TENANT, 1), |_| {
        crate::Access::open(&crate::AuthConfig::default())
    })
    .await;
    let start = herald_core::time::format_rfc3339_ms(
        herald_core::Clock::now_ms(&herald_core::SystemClock) + 86_400_000,
    );
    let (st, body) = api
        .call(
            Method::PUT,
            "/v1/subjects/coupon-42",
            Some(json!({"start_at": start, "title": "Coupon"})),
        )
        .await;
    assert!(st.is_success(), "{body}");
    let reminder = |lead: u32| json!({"user_id": "alice", "subject_id": "coupon-42", "channel_type": "app", "lead_minutes": lead});
    let (st, body) = api.post("/v1/reminders", reminder(5)).await;
    assert_eq!(st, StatusCode::CREATED, "{body}");
    let (st, headers, body) = api
        .exchange(req(Method::POST, "/v1/reminders", None, Some(reminder(10))))
        .await;
    error(st, &body, StatusCode::TOO_MANY_REQUESTS, "quota_exceeded");
    assert_eq!(headers[header::RETRY_AFTER], "1");
    let (st, answers, _) = api
        .bulk("/v1/reminders:bulk", &[reminder(15), reminder(20)])
        .await;
    assert_eq!(st, StatusCode::OK);
    assert!(answers.iter().all(|a| a["status"] == 429), "{answers:?}");
    let (_, listed) = api.get("/v1/users/alice/reminders").await;
    assert_eq!(
        listed.to_string().matches("\"lead_minutes\"").count(),
        1,
        "{listed}"
    );
}

#[tokio::test]
async fn one_tenants_quota_leaves_the_others_alone() {
    // `shop` is the first tenant made after `default`: id 2.
    let api = stored_keys_api(quota(TenantId(2), 1)).await;
    let (_, shop) = api.make_key("shop", &["write"]).await;
    assert_eq!(
        herald_store::AccessStore::tenant_id(&*api.store, "shop", false)
            .await
            .unwrap(),
        Some(TenantId(2))
    );
    let (st, body) = api
        .as_key(&shop, Method::POST, "/v1/timers", Some(timer()))
        .await;
    assert_eq!(st, StatusCode::CREATED, "{body}");
    let (st, body) = api
        .as_key(&shop, Method::POST, "/v1/timers", Some(timer()))
        .await;
    error(st, &body, StatusCode::TOO_MANY_REQUESTS, "quota_exceeded");
    for _ in 0..3 {
        let (st, body) = api
            .as_key(ADMIN, Method::POST, "/v1/timers", Some(timer()))
            .await;
        assert_eq!(st, StatusCode::CREATED, "{body}");
    }
}
