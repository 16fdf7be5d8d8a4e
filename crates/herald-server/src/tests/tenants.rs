//! Tenants through every handler: what one tenant creates, another cannot
//! see, change or even detect. The admin key acts for each tenant with
//! `X-Herald-Tenant`, as an operator would.

use async_trait::async_trait;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use herald_core::{Clock, SystemClock, TenantId};
use serde_json::{Value, json};

use super::Api;
use crate::access::{KeyError, KeyResolver, PresentedKey, TENANT_HEADER};
use crate::{Access, AuthConfig, Caller};

const ADMIN: &str = "admin-key-for-the-tenant-tests-0123456789";
const SHOP: &str = "shop";
const CRM: &str = "crm";

/// Tenants by name; no stored keys (the admin key does everything here).
struct Tenants;

#[async_trait]
impl KeyResolver for Tenants {
    async fn caller(&self, _key: PresentedKey<'_>, _now: i64) -> Result<Caller, KeyError> {
        Err(KeyError::Invalid)
    }

    async fn tenant(&self, name: &str) -> Result<Option<TenantId>, KeyError> {
        Ok(match name {
            "default" => Some(TenantId(1)),
            SHOP => Some(TenantId(2)),
            CRM => Some(TenantId(3)),
            _ => None,
        })
    }
}

async fn api() -> Api {
    let access =
        Access::protected(ADMIN, &AuthConfig::default()).with_keys(std::sync::Arc::new(Tenants));
    Api::with_access(access).await
}

impl Api {
    /// One request as `tenant` (through the admin key); status and body.
    async fn as_tenant(
        &self,
        tenant: &str,
        method: &str,
        uri: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let req = Request::builder()
            .method(method)
            .uri(uri)
            .header(header::AUTHORIZATION, format!("Bearer {ADMIN}"))
            .header(TENANT_HEADER, tenant);
        let req = match body {
            Some(b) => req
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(b.to_string())),
            None => req.body(Body::empty()),
        };
        self.send(req.expect("request")).await
    }
}

/// `uri` answers `tenant` exactly as a missing record does at `missing`.
#[track_caller]
fn hidden(got: (StatusCode, Value), missing: (StatusCode, Value)) {
    assert_eq!(got.0, StatusCode::NOT_FOUND, "{}", got.1);
    assert_eq!(got, missing);
}

fn timer(key: &str) -> Value {
    json!({"delay_ms": 600_000, "channel": "log", "recipient": "r",
           "message": {"n": 1}, "idempotency_key": key})
}

#[tokio::test]
async fn idempotency_keys_are_per_tenant() {
    let api = api().await;
    let (st, shop) = api
        .as_tenant(SHOP, "POST", "/v1/timers", Some(timer("coupon-42")))
        .await;
    assert_eq!(st, StatusCode::CREATED, "{shop}");
    let (st, crm) = api
        .as_tenant(CRM, "POST", "/v1/timers", Some(timer("coupon-42")))
        .await;
    assert_eq!(st, StatusCode::CREATED, "{crm}");
    assert_ne!(shop["id"], crm["id"]);
    // Again for the shop: its own timer, not the CRM's.
    let (st, again) = api
        .as_tenant(SHOP, "POST", "/v1/timers", Some(timer("coupon-42")))
        .await;
    assert_eq!((st, &again["id"]), (StatusCode::OK, &shop["id"]));
    // The bulk endpoint keys per tenant too.
    let line = format!("{}\n", timer("coupon-42"));
    let req = Request::post("/v1/timers:bulk")
        .header(header::AUTHORIZATION, format!("Bearer {ADMIN}"))
        .header(TENANT_HEADER, CRM)
        .header(header::CONTENT_TYPE, "application/x-ndjson")
        .body(Body::from(line))
        .expect("request");
    let (st, body) = api.send(req).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    // One answer line: it reads back as one JSON object.
    let answer = body;
    assert_eq!(
        (answer["status"].clone(), answer["id"].clone()),
        (json!(200), crm["id"].clone())
    );
    api.engine.shutdown().await;
}

#[tokio::test]
async fn another_tenants_timer_is_not_found_and_stays_pending() {
    let api = api().await;
    let (_, t) = api
        .as_tenant(SHOP, "POST", "/v1/timers", Some(timer("k-1")))
        .await;
    let id = t["id"].as_i64().expect("id");
    let missing = id + 1000;
    for (method, path) in [
        ("GET", "/v1/timers/{}"),
        ("DELETE", "/v1/timers/{}"),
        ("GET", "/v1/timers/{}/deliveries"),
    ] {
        let theirs = api
            .as_tenant(CRM, method, &path.replace("{}", &id.to_string()), None)
            .await;
        let none = api
            .as_tenant(CRM, method, &path.replace("{}", &missing.to_string()), None)
            .await;
        hidden(theirs, none);
    }
    let (st, mine) = api
        .as_tenant(SHOP, "GET", &format!("/v1/timers/{id}"), None)
        .await;
    assert_eq!(
        (st, mine["state"].clone()),
        (StatusCode::OK, json!("pending"))
    );
    api.engine.shutdown().await;
}

#[tokio::test]
async fn another_tenants_delivery_cannot_be_recalled() {
    let api = api().await;
    let soon = json!({"delay_ms": 1, "channel": "log", "recipient": "r", "message": {}});
    let (_, t) = api.as_tenant(SHOP, "POST", "/v1/timers", Some(soon)).await;
    let id = t["id"].as_i64().expect("id");
    let mut delivery = Value::Null;
    for _ in 0..250 {
        let (_, log) = api
            .as_tenant(SHOP, "GET", &format!("/v1/timers/{id}/deliveries"), None)
            .await;
        delivery = log["deliveries"][0]["id"].clone();
        if !delivery.is_null() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let delivery = delivery.as_i64().expect("the timer was delivered");
    hidden(
        api.as_tenant(
            CRM,
            "POST",
            &format!("/v1/deliveries/{delivery}:recall"),
            None,
        )
        .await,
        api.as_tenant(CRM, "POST", "/v1/deliveries/99999:recall", None)
            .await,
    );
    // The shop reaches its own delivery (the log channel cannot recall).
    let (st, body) = api
        .as_tenant(
            SHOP,
            "POST",
            &format!("/v1/deliveries/{delivery}:recall"),
            None,
        )
        .await;
    assert_ne!(st, StatusCode::NOT_FOUND, "{body}");
    api.engine.shutdown().await;
}

#[tokio::test]
async fn another_tenants_job_and_audience_are_not_found() {
    let api = api().await;
    let (st, job) = api
        .as_tenant(
            SHOP,
            "POST",
            "/v1/jobs",
            Some(json!({"users": ["a", "b"], "channel": "log", "message": {},
                        "deadline_secs": 600})),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{job}");
    let (id, audience) = (job["id"].as_i64().expect("id"), job["audience_id"].clone());
    let audience = audience.as_i64().expect("audience id");
    for (method, path) in [
        ("GET", "/v1/jobs/{}"),
        ("POST", "/v1/jobs/{}:cancel"),
        ("GET", "/v1/jobs/{}/segments"),
        ("GET", "/v1/jobs/{}/sends"),
    ] {
        hidden(
            api.as_tenant(CRM, method, &path.replace("{}", &id.to_string()), None)
                .await,
            api.as_tenant(CRM, method, &path.replace("{}", "99999"), None)
                .await,
        );
    }
    hidden(
        api.as_tenant(CRM, "GET", &format!("/v1/audiences/{audience}"), None)
            .await,
        api.as_tenant(CRM, "GET", "/v1/audiences/99999", None).await,
    );
    // Nor can it send to the shop's audience: as if there were none.
    let (st, body) = api
        .as_tenant(
            CRM,
            "POST",
            "/v1/jobs",
            Some(json!({"audience_id": audience, "channel": "log", "message": {}})),
        )
        .await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"]["code"], "unknown_audience");
    // Lists hold only the caller's jobs.
    let (_, crm_jobs) = api.as_tenant(CRM, "GET", "/v1/jobs", None).await;
    assert_eq!(crm_jobs["jobs"], json!([]), "{crm_jobs}");
    let (_, shop_jobs) = api.as_tenant(SHOP, "GET", "/v1/jobs", None).await;
    assert_eq!(shop_jobs["jobs"][0]["id"], id, "{shop_jobs}");
    let (_, still) = api
        .as_tenant(SHOP, "GET", &format!("/v1/jobs/{id}"), None)
        .await;
    assert_ne!(still["state"], "cancelled", "{still}");
    api.engine.shutdown().await;
}

#[tokio::test]
async fn another_tenants_rule_is_not_found_and_unchanged() {
    let api = api().await;
    let (st, rule) = api
        .as_tenant(SHOP, "POST", "/v1/rules", Some(super::rule_body()))
        .await;
    assert_eq!(st, StatusCode::CREATED, "{rule}");
    let id = rule["id"].as_i64().expect("id");
    for (method, path, body) in [
        ("GET", "/v1/rules/{}", None),
        ("PUT", "/v1/rules/{}", Some(super::rule_body())),
        ("POST", "/v1/rules/{}:disable", None),
        ("GET", "/v1/rules/{}/versions", None),
        ("GET", "/v1/rules/{}/tasks", None),
    ] {
        hidden(
            api.as_tenant(
                CRM,
                method,
                &path.replace("{}", &id.to_string()),
                body.clone(),
            )
            .await,
            api.as_tenant(CRM, method, &path.replace("{}", "99999"), body)
                .await,
        );
    }
    let (_, crm_rules) = api.as_tenant(CRM, "GET", "/v1/rules", None).await;
    assert_eq!(crm_rules["rules"], json!([]), "{crm_rules}");
    let (_, mine) = api
        .as_tenant(SHOP, "GET", &format!("/v1/rules/{id}"), None)
        .await;
    assert_eq!(
        (mine["status"].clone(), mine["version"].clone()),
        (json!("enabled"), json!(1)),
        "{mine}"
    );
    api.engine.shutdown().await;
}

#[tokio::test]
async fn subjects_and_reminders_are_per_tenant() {
    let api = api().await;
    let start = herald_core::time::format_rfc3339_ms(SystemClock.now_ms() + 3_600_000);
    let subject = json!({"start_at": start, "title": "Launch"});
    let (st, _) = api
        .as_tenant(SHOP, "PUT", "/v1/subjects/launch", Some(subject.clone()))
        .await;
    assert_eq!(st, StatusCode::CREATED);
    let reminder = json!({"user_id": "alice", "subject_id": "launch", "channel_type": "app", "lead_minutes": 5});
    let (st, body) = api
        .as_tenant(SHOP, "POST", "/v1/reminders", Some(reminder.clone()))
        .await;
    assert_eq!(st, StatusCode::CREATED, "{body}");

    // The CRM has no subject "launch": reading, deleting and subscribing
    // to it answer as for any unknown subject.
    hidden(
        api.as_tenant(CRM, "GET", "/v1/subjects/launch", None).await,
        api.as_tenant(CRM, "GET", "/v1/subjects/nothing", None)
            .await,
    );
    hidden(
        api.as_tenant(CRM, "DELETE", "/v1/subjects/launch", None)
            .await,
        api.as_tenant(CRM, "DELETE", "/v1/subjects/nothing", None)
            .await,
    );
    hidden(
        api.as_tenant(CRM, "DELETE", "/v1/reminders/alice/launch", None)
            .await,
        api.as_tenant(CRM, "DELETE", "/v1/reminders/bob/launch", None)
            .await,
    );
    let (st, body) = api
        .as_tenant(CRM, "POST", "/v1/reminders", Some(reminder.clone()))
        .await;
    assert_eq!(
        (st, body["error"]["code"].clone()),
        (StatusCode::NOT_FOUND, json!("subject_not_found"))
    );
    let (_, theirs) = api
        .as_tenant(CRM, "GET", "/v1/users/alice/reminders", None)
        .await;
    assert_eq!(theirs["subjects"], json!([]), "{theirs}");
    let (st, listed) = api.as_tenant(CRM, "GET", "/v1/subjects", None).await;
    assert_eq!(st, StatusCode::OK, "{listed}");
    assert_eq!(listed["subjects"], json!([]), "{listed}");

    // Its own "launch" and "alice" are its own.
    let (st, _) = api
        .as_tenant(CRM, "PUT", "/v1/subjects/launch", Some(subject))
        .await;
    assert_eq!(st, StatusCode::CREATED);
    let (st, body) = api
        .as_tenant(CRM, "POST", "/v1/reminders", Some(reminder))
        .await;
    assert_eq!(st, StatusCode::CREATED, "{body}");

    // The shop's subscription is untouched.
    let (_, mine) = api
        .as_tenant(SHOP, "GET", "/v1/users/alice/reminders", None)
        .await;
    assert_eq!(mine["subjects"][0]["subject_id"], "launch", "{mine}");
    assert_eq!(
        mine["subjects"][0]["reminders"][0]["state"], "pending",
        "{mine}"
    );
    let (st, body) = api
        .as_tenant(SHOP, "GET", "/v1/subjects/launch", None)
        .await;
    assert_eq!(st, StatusCode::OK);
    assert_eq!(body["subscribers"], 1, "{body}");
    let (_, listed) = api.as_tenant(SHOP, "GET", "/v1/subjects", None).await;
    assert_eq!(listed["subjects"][0]["subject_id"], "launch", "{listed}");
    assert_eq!(listed["subjects"][0]["subscribers"], 1, "{listed}");
    api.engine.shutdown().await;
}
