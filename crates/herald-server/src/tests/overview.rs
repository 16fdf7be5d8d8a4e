//! `GET /v1/overview`: live deliveries and sampled counts without a store
//! read per call, scoped to the caller's tenant; and the live rates of
//! `GET /v1/channels`.

use std::time::{Duration, Instant};

use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

use super::keys::{ADMIN, req, stored_keys_api};
use super::{Api, Options};

/// Counts timers often, so a test sees its own at once.
fn options() -> Options {
    Options {
        stats_interval_ms: Some(50),
        ..Options::default()
    }
}

/// Asks for the overview until `done` holds of it (at most 10 s).
async fn overview_until(
    api: &Api,
    key: Option<&str>,
    tenant: Option<&str>,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut r = req(Method::GET, "/v1/overview", key, None);
        if let Some(t) = tenant {
            r.headers_mut()
                .insert("x-herald-tenant", t.parse().expect("a header value"));
        }
        let (st, body) = api.send(r).await;
        assert_eq!(st, StatusCode::OK, "{body}");
        if done(&body) || Instant::now() > deadline {
            return body;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn delivered_in_window(body: &Value) -> u64 {
    body["live"]["series"]
        .as_array()
        .map(|s| s.iter().filter_map(|p| p["deliveries"].as_u64()).sum())
        .unwrap_or(0)
}

#[tokio::test]
async fn shows_live_deliveries_sampled_counts_channels_and_nodes() {
    let api = Api::build_with(options(), |_| {
        crate::Access::open(&crate::AuthConfig::default())
    })
    .await;
    let (st, body) = api
        .post(
            "/v1/timers",
            json!({"delay_ms": 0, "channel": "log", "recipient": "r", "message": {}}),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{body}");
    // The second under way is left out of the window: wait for it to pass.
    let body = overview_until(&api, None, None, |b| {
        delivered_in_window(b) >= 1 && b["timers"]["done"] == 1
    })
    .await;
    assert_eq!(delivered_in_window(&body), 1, "{body}");
    assert_eq!(body["timers"]["done"], 1, "{body}");
    assert_eq!(body["timers"]["pending"], 0, "every state is listed");
    assert!(body["sampled_at"].is_string(), "{body}");
    assert_eq!(body["tenant"], Value::Null, "open mode sees every tenant");
    let live = &body["live"];
    assert_eq!(live["window_s"], 60);
    assert_eq!(live["series"].as_array().map(Vec::len), Some(60));
    assert!(live["series"][0]["t"].is_string());
    assert!(live["lateness_ms"]["p50"].is_number(), "{live}");
    assert!(live["lateness_ms"]["p99"].is_number(), "{live}");
    assert!(live["deliveries_per_s"].as_f64().is_some_and(|r| r > 0.0));
    assert!(body["inflight"].is_u64());
    let log = &body["channels"][0];
    assert_eq!(log["name"], "log", "{body}");
    assert_eq!(log["outcomes"]["delivered"], 1, "{log}");
    assert_eq!(log["outcomes"]["dead"], 0, "every outcome is listed");
    assert!(log["rate_per_s"].as_f64().is_some_and(|r| r > 0.0), "{log}");
    let nodes = body["nodes"].as_array().cloned().unwrap_or_default();
    assert_eq!(nodes.len(), 1, "{body}");
    assert_eq!(nodes[0]["node_id"], "handler-tests");
    assert_eq!(nodes[0]["shards"], 16);
    assert!(nodes[0]["alive_until"].is_string());

    let (st, body) = api.get("/v1/channels").await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let log = &body["channels"][0];
    assert_eq!(log["recent_outcomes"]["delivered"], 1, "{log}");
    assert!(log["rate_per_s"].as_f64().is_some_and(|r| r > 0.0), "{log}");
    assert!(log["outcomes"]["delivered"].is_u64(), "the old counts stay");
}

#[tokio::test]
async fn a_key_sees_its_tenant_and_the_admin_every_tenant() {
    let api = stored_keys_api(options()).await;
    let (_, shop) = api.make_key("shop", &["read", "write"]).await;
    let timer = json!({"delay_ms": 3_600_000, "channel": "log", "recipient": "r", "message": {}});
    for key in [ADMIN, shop.as_str()] {
        let (st, body) = api
            .as_key(key, Method::POST, "/v1/timers", Some(timer.clone()))
            .await;
        assert_eq!(st, StatusCode::CREATED, "{body}");
    }
    let all = overview_until(&api, Some(ADMIN), None, |b| b["timers"]["pending"] == 2).await;
    assert_eq!(all["timers"]["pending"], 2, "{all}");
    assert_eq!(all["tenant"], Value::Null);
    assert_eq!(all["nodes"].as_array().map(Vec::len), Some(1));

    let mine = overview_until(&api, Some(&shop), None, |_| true).await;
    assert_eq!(mine["tenant"], "shop", "{mine}");
    assert_eq!(mine["timers"]["pending"], 1, "{mine}");
    assert_eq!(mine["nodes"], json!([]), "the cluster is the admin's view");

    let acting = overview_until(&api, Some(ADMIN), Some("shop"), |_| true).await;
    assert_eq!(acting["tenant"], "shop", "{acting}");
    assert_eq!(acting["timers"]["pending"], 1, "{acting}");

    let (st, _) = api.send(req(Method::GET, "/v1/overview", None, None)).await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);
}
