//! A channel limited to some tenants does not exist for the others: every
//! create that names it is `400 unknown_channel`, and `GET /v1/channels`
//! leaves it out.

use std::sync::Arc;

use axum::http::{Method, StatusCode};
use herald_core::TenantId;
use serde_json::{Value, json};

use super::keys::{ADMIN, req};
use super::{Api, Options, error};
use crate::access::StoredKeys;
use crate::{Access, AuthConfig, ChannelTenants};

/// `mail` serves tenant `shop` only (id 2: the first tenant made after
/// `default`).
async fn api() -> Api {
    let options = Options {
        channels: vec!["mail"],
        ..Options::default()
    };
    Api::build_with(options, |store| {
        Access::protected(ADMIN, &AuthConfig::default())
            .with_keys(Arc::new(StoredKeys::new(store)))
            .with_channel_tenants(ChannelTenants::everyone().limit("mail", [TenantId(2)]))
    })
    .await
}

fn creates() -> Vec<(&'static str, Value)> {
    vec![
        (
            "/v1/timers",
            json!({"delay_ms": 60_000, "channel": "mail", "recipient": "r", "message": {}}),
        ),
        (
            "/v1/jobs",
            json!({"users": ["u1"], "channel": "mail", "message": {"text": "hi"}}),
        ),
        (
            "/v1/rules",
            json!({
                "name": "daily",
                "schedule": {"type": "cron", "cron": "0 9 * * *", "timezone": "UTC"},
                "audience": {"users": ["u1"]},
                "channel": "mail",
                "message": {"text": "hi"},
            }),
        ),
    ]
}

async fn channel_names(api: &Api, key: &str, tenant: Option<&str>) -> Vec<String> {
    let mut r = req(Method::GET, "/v1/channels", Some(key), None);
    if let Some(t) = tenant {
        r.headers_mut()
            .insert("x-herald-tenant", t.parse().unwrap());
    }
    let (st, body) = api.send(r).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    body["channels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn another_tenant_cannot_see_or_use_the_channel() {
    let api = api().await;
    let (_, shop) = api.make_key("shop", &["write", "campaign", "admin"]).await;
    let (_, crm) = api.make_key("crm", &["write", "campaign", "admin"]).await;
    assert_eq!(
        herald_store::AccessStore::tenant_id(&*api.store, "shop", false)
            .await
            .unwrap(),
        Some(TenantId(2))
    );
    for key in [crm.as_str(), ADMIN] {
        for (uri, body) in creates() {
            let (st, answer) = api.as_key(key, Method::POST, uri, Some(body)).await;
            let e = error(st, &answer, StatusCode::BAD_REQUEST, "unknown_channel");
            assert_eq!(e["field"], "channel", "{uri}: {answer}");
            assert!(
                !e["message"].as_str().unwrap().contains("\"mail\"]"),
                "{uri} lists the hidden channel: {answer}"
            );
        }
        let (st, answer) = api
            .as_key(
                key,
                Method::POST,
                "/v1/reminders",
                Some(
                    json!({"user_id": "u", "subject_id": "s", "channel_type": "app",
                            "lead_minutes": 5, "channel": "mail"}),
                ),
            )
            .await;
        error(st, &answer, StatusCode::BAD_REQUEST, "unknown_channel");
    }
    assert_eq!(channel_names(&api, &crm, None).await, ["log"]);
    assert_eq!(channel_names(&api, ADMIN, None).await, ["log"]);

    // Its own tenant uses and sees it.
    for (uri, body) in creates() {
        let (st, answer) = api.as_key(&shop, Method::POST, uri, Some(body)).await;
        assert_eq!(st, StatusCode::CREATED, "{uri}: {answer}");
    }
    assert_eq!(channel_names(&api, &shop, None).await, ["log", "mail"]);
    assert_eq!(
        channel_names(&api, ADMIN, Some("shop")).await,
        ["log", "mail"]
    );
}
