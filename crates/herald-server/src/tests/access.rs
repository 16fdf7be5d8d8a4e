//! Access control at the edge: modes, keys, scopes, body types, hosts and
//! readiness, through the whole router.

use std::sync::Arc;

use async_trait::async_trait;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use herald_core::TenantId;
use herald_store::StoreError;
use serde_json::{Value, json};

use super::{Api, error};
use crate::access::{KeyError, KeyResolver, PresentedKey, stored_hash};
use crate::{Access, AuthConfig, Caller, Scope, Scopes};

const ADMIN: &str = "admin-key-for-the-tests-0123456789";

fn timer() -> Value {
    json!({"delay_ms": 60_000, "channel": "log", "recipient": "r", "message": {}})
}

/// A request with these headers and, if given, a body of `content_type`.
fn request(
    method: &str,
    uri: &str,
    headers: &[(&str, &str)],
    body: Option<(&str, String)>,
) -> Request<Body> {
    let mut req = Request::builder().method(method).uri(uri);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    match body {
        Some((ct, b)) => req.header(header::CONTENT_TYPE, ct).body(Body::from(b)),
        None => req.body(Body::empty()),
    }
    .expect("request")
}

fn bearer(key: &str) -> String {
    format!("Bearer {key}")
}

/// Stored keys as a test knows them: `(key, caller)`; `None` is revoked.
struct TestKeys(Vec<(String, Option<Caller>)>);

#[async_trait]
impl KeyResolver for TestKeys {
    async fn caller(&self, key: PresentedKey<'_>, _now: i64) -> Result<Caller, KeyError> {
        self.0
            .iter()
            .find(|(k, _)| PresentedKey::parse(k).is_some_and(|p| p.id == key.id))
            .filter(|(k, _)| stored_hash(k).is_some_and(|h| key.matches(&h)))
            .and_then(|(_, c)| c.clone())
            .ok_or(KeyError::Invalid)
    }

    async fn tenant(&self, name: &str) -> Result<Option<TenantId>, KeyError> {
        Ok(match name {
            "default" => Some(TenantId(1)),
            "shop" => Some(TenantId(2)),
            _ => None,
        })
    }
}

fn shop_key(id: i64, scopes: &[Scope]) -> Caller {
    Caller::api_key(
        TenantId(2),
        "shop",
        id,
        Some(format!("k{id}")),
        scopes.iter().copied().collect(),
    )
}

/// A protected API with three stored keys: read-only, write-only, revoked.
async fn protected() -> (Api, [String; 3]) {
    let keys = [
        crate::access::new_key(1),
        crate::access::new_key(2),
        crate::access::new_key(3),
    ];
    let resolver = TestKeys(vec![
        (keys[0].clone(), Some(shop_key(1, &[Scope::Read]))),
        (keys[1].clone(), Some(shop_key(2, &[Scope::Write]))),
        (keys[2].clone(), None),
    ]);
    let access = Access::protected(ADMIN, &AuthConfig::default()).with_keys(Arc::new(resolver));
    (Api::with_access(access).await, keys)
}

#[tokio::test]
async fn open_mode_answers_loopback_hosts_without_a_key() {
    let api = Api::new().await;
    let (st, body) = api.post("/v1/timers", timer()).await;
    assert_eq!(st, StatusCode::CREATED, "{body}");
    for host in ["localhost:8780", "127.0.0.1:1", "127.3.2.1", "[::1]:8780"] {
        let (st, body) = api
            .send(request("GET", "/v1/stats", &[("host", host)], None))
            .await;
        assert_eq!(st, StatusCode::OK, "{host}: {body}");
    }
    // DNS rebinding: the browser sends the attacker's name.
    for host in ["evil.example", "evil.example:8780", "127.0.0.1.nip.io", ""] {
        for path in ["/v1/stats", "/healthz"] {
            let (st, body) = api
                .send(request("GET", path, &[("host", host)], None))
                .await;
            error(
                st,
                &body,
                StatusCode::MISDIRECTED_REQUEST,
                "misdirected_request",
            );
        }
    }
    let auth = AuthConfig {
        allowed_hosts: vec!["herald.dev.test".into()],
        ..AuthConfig::default()
    };
    let api = Api::with_access(Access::open(&auth)).await;
    let (st, _) = api
        .send(request(
            "GET",
            "/v1/stats",
            &[("host", "Herald.Dev.Test:8780")],
            None,
        ))
        .await;
    assert_eq!(st, StatusCode::OK);
}

#[tokio::test]
async fn open_mode_refuses_state_changes_from_other_origins() {
    let api = Api::new().await;
    let from = |origin: &'static str| {
        request(
            "POST",
            "/v1/timers",
            &[("origin", origin)],
            Some(("application/json", timer().to_string())),
        )
    };
    for origin in ["http://evil.example", "null", "http://localhost:3000"] {
        let (st, body) = api.send(from(origin)).await;
        error(st, &body, StatusCode::FORBIDDEN, "cross_origin");
    }
    // A body-less action is the request a page can send with no type at all.
    let (st, body) = api
        .send(request(
            "POST",
            "/v1/jobs/1:cancel",
            &[("origin", "http://evil.example")],
            None,
        ))
        .await;
    error(st, &body, StatusCode::FORBIDDEN, "cross_origin");
    let (st, body) = api.send(from("http://localhost")).await;
    assert_eq!(st, StatusCode::CREATED, "{body}");
    let (st, _) = api
        .send(request(
            "GET",
            "/v1/timers/1",
            &[("origin", "http://evil.example")],
            None,
        ))
        .await;
    assert_eq!(st, StatusCode::OK);
    let (st, _) = api.get("/v1/timers/3").await;
    assert_eq!(
        st,
        StatusCode::NOT_FOUND,
        "only one refused timer was written"
    );
}

#[tokio::test]
async fn bodies_of_the_wrong_type_are_415_and_write_nothing() {
    let api = Api::new().await;
    let cases = [
        ("POST", "/v1/timers", Some("text/plain"), "application/json"),
        ("POST", "/v1/timers", None, "application/json"),
        (
            "POST",
            "/v1/timers",
            Some("application/x-www-form-urlencoded"),
            "application/json",
        ),
        (
            "POST",
            "/v1/timers:bulk",
            Some("application/json"),
            "application/x-ndjson",
        ),
        (
            "POST",
            "/v1/reminders:bulk",
            Some("text/plain"),
            "application/x-ndjson",
        ),
        (
            "PUT",
            "/v1/subjects/s1",
            Some("text/plain"),
            "application/json",
        ),
        (
            "POST",
            "/v1/rules",
            Some("multipart/form-data"),
            "application/json",
        ),
        ("POST", "/v1/jobs", Some("text/plain"), "application/json"),
        (
            "POST",
            "/v1/audiences",
            Some("application/json"),
            "application/x-ndjson or text/csv",
        ),
        (
            "POST",
            "/v1/jobs/1:cancel",
            Some("text/plain"),
            "no body, or application/json",
        ),
        (
            "POST",
            "/v1/channels/log/callback",
            Some("text/plain"),
            "text/xml or application/json",
        ),
    ];
    for (method, path, ct, expected) in cases {
        let body = ct.map(|ct| (ct, timer().to_string()));
        let (st, answer) = api.send(request(method, path, &[], body)).await;
        let e = error(
            st,
            &answer,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
        );
        assert_eq!(e["field"], "content-type", "{path}: {answer}");
        let message = e["message"].as_str().unwrap_or_default();
        assert!(message.contains(expected), "{method} {path}: {message}");
    }
    // A body-less action needs no type; it reaches the handler.
    let (st, body) = api
        .send(request("POST", "/v1/jobs/1:cancel", &[], None))
        .await;
    error(st, &body, StatusCode::NOT_FOUND, "not_found");
    // A type with parameters is the type.
    let (st, body) = api
        .send(request(
            "POST",
            "/v1/timers",
            &[],
            Some(("application/json; charset=utf-8", timer().to_string())),
        ))
        .await;
    assert_eq!(st, StatusCode::CREATED, "{body}");
    let (_, stats) = api.get("/v1/stats").await;
    assert_eq!(stats["timers"]["pending"], 1, "{stats}");
    let (st, _) = api.get("/v1/subjects/s1").await;
    assert_eq!(st, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn protected_mode_needs_a_key_on_every_route_but_health() {
    let (api, keys) = protected().await;
    let (st, headers, body) = api.exchange(request("GET", "/v1/stats", &[], None)).await;
    let e = error(st, &body, StatusCode::UNAUTHORIZED, "unauthorized");
    assert!(
        e["message"].as_str().unwrap_or_default().contains("Bearer"),
        "{e}"
    );
    assert_eq!(headers[header::WWW_AUTHENTICATE], "Bearer realm=\"herald\"");
    let bad = [
        bearer("nope"),
        bearer(&format!("{ADMIN}x")),
        bearer(&keys[2]),
        bearer(&format!("{}x", keys[0])),
        bearer("hrk_99_abc"),
        format!("Basic {ADMIN}"),
        ADMIN.to_string(),
        "Bearer".to_string(),
    ];
    for auth in &bad {
        let (st, headers, body) = api
            .exchange(request(
                "GET",
                "/v1/stats",
                &[("authorization", auth)],
                None,
            ))
            .await;
        error(st, &body, StatusCode::UNAUTHORIZED, "unauthorized");
        assert_eq!(
            headers[header::WWW_AUTHENTICATE],
            "Bearer realm=\"herald\", error=\"invalid_token\"",
            "{auth}"
        );
    }
    // A refused write writes nothing.
    let (st, body) = api
        .send(request(
            "POST",
            "/v1/timers",
            &[],
            Some(("application/json", timer().to_string())),
        ))
        .await;
    error(st, &body, StatusCode::UNAUTHORIZED, "unauthorized");
    let admin = bearer(ADMIN);
    let as_admin = |method, path, body| request(method, path, &[("authorization", &admin)], body);
    let (_, stats) = api.send(as_admin("GET", "/v1/stats", None)).await;
    assert_eq!(
        stats["timers"],
        json!({"pending": 0, "firing": 0, "done": 0, "failed": 0, "cancelled": 0, "dead": 0, "in_doubt": 0})
    );
    // The admin key opens everything; blanks around it do not matter.
    let (st, body) = api
        .send(as_admin(
            "POST",
            "/v1/timers",
            Some(("application/json", timer().to_string())),
        ))
        .await;
    assert_eq!(st, StatusCode::CREATED, "{body}");
    let (st, body) = api
        .send(request(
            "GET",
            "/metrics",
            &[("authorization", &format!("bearer  {ADMIN} "))],
            None,
        ))
        .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    // Health needs nothing.
    for path in ["/healthz", "/readyz"] {
        let (st, body) = api.get(path).await;
        assert_eq!(st, StatusCode::OK, "{path}: {body}");
    }
    // Unknown paths are not told apart without a key.
    let (st, body) = api.get("/v1/nothing-here").await;
    error(st, &body, StatusCode::UNAUTHORIZED, "unauthorized");
    let (st, body) = api.send(as_admin("GET", "/v1/nothing-here", None)).await;
    error(st, &body, StatusCode::NOT_FOUND, "not_found");
    // Hosts are not checked once a key is needed (a proxy may name the node anything).
    let (st, _) = api
        .send(request(
            "GET",
            "/v1/stats",
            &[("authorization", &admin), ("host", "herald.internal:8780")],
            None,
        ))
        .await;
    assert_eq!(st, StatusCode::OK);
}

#[tokio::test]
async fn scopes_are_enforced_per_route() {
    let (api, keys) = protected().await;
    let (read, write) = (bearer(&keys[0]), bearer(&keys[1]));
    let with = |auth: &str, method, path: &str| {
        let body = (method != "GET").then(|| ("application/json", timer().to_string()));
        request(method, path, &[("authorization", auth)], body)
    };
    let (st, body) = api.send(with(&write, "POST", "/v1/timers")).await;
    assert_eq!(st, StatusCode::CREATED, "{body}");
    let (st, body) = api.send(with(&read, "GET", "/v1/timers/1")).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let refused = [
        (&read, "POST", "/v1/timers", "write"),
        (&write, "GET", "/v1/timers/1", "read"),
        (&write, "POST", "/v1/jobs", "campaign"),
        (&read, "GET", "/v1/channels", "admin"),
        (&read, "GET", "/v1/cluster", "admin"),
        (&read, "GET", "/metrics", "metrics"),
    ];
    for (auth, method, path, scope) in refused {
        let (st, body) = api.send(with(auth, method, path)).await;
        let e = error(st, &body, StatusCode::FORBIDDEN, "forbidden");
        let message = e["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(&format!("\"{scope}\"")) && message.contains(method),
            "{method} {path}: {message}"
        );
    }
    // The scope is checked before the body: a key without it learns nothing more.
    let (st, body) = api
        .send(request(
            "POST",
            "/v1/timers",
            &[("authorization", &read)],
            Some(("text/plain", "x".into())),
        ))
        .await;
    error(st, &body, StatusCode::FORBIDDEN, "forbidden");
    let (_, stats) = api.send(with(&bearer(ADMIN), "GET", "/v1/stats")).await;
    assert_eq!(stats["timers"]["pending"], 1, "{stats}");
}

#[tokio::test]
async fn only_the_admin_names_another_tenant() {
    let (api, keys) = protected().await;
    let named = |auth: &str, tenant: &str| {
        request(
            "GET",
            "/v1/stats",
            &[("authorization", auth), ("x-herald-tenant", tenant)],
            None,
        )
    };
    let admin = bearer(ADMIN);
    for tenant in ["default", "shop"] {
        let (st, body) = api.send(named(&admin, tenant)).await;
        assert_eq!(st, StatusCode::OK, "{tenant}: {body}");
    }
    let (st, body) = api.send(named(&admin, "nosuch")).await;
    let e = error(st, &body, StatusCode::NOT_FOUND, "unknown_tenant");
    assert_eq!(e["field"], "x-herald-tenant");
    let (st, body) = api.send(named(&admin, "a b")).await;
    error(st, &body, StatusCode::BAD_REQUEST, "invalid_field");
    // A tenant key may name its own tenant, and no other.
    let read = bearer(&keys[0]);
    let req = |tenant| {
        request(
            "GET",
            "/v1/timers/1",
            &[("authorization", &read), ("x-herald-tenant", tenant)],
            None,
        )
    };
    let (st, body) = api.send(req("shop")).await;
    error(st, &body, StatusCode::NOT_FOUND, "not_found");
    let (st, body) = api.send(req("default")).await;
    error(st, &body, StatusCode::FORBIDDEN, "forbidden");
}

/// What the guard hands a handler, seen by a handler that echoes it.
#[tokio::test]
async fn the_guard_sets_the_caller() {
    use axum::Extension;
    use axum::routing::get;
    use herald_core::{Clock, SystemClock};
    use tower::ServiceExt;

    let key = crate::access::new_key(7);
    let resolver = TestKeys(vec![(
        key.clone(),
        Some(shop_key(7, &[Scope::Read, Scope::Write])),
    )]);
    let guarded = |access: Access| {
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let guard = crate::access::Guard::new(Arc::new(access), clock, vec!["/public"]);
        axum::Router::new()
            .route(
                "/who",
                get(|Extension(c): Extension<Caller>| async move {
                    axum::Json(json!({
                        "tenant": c.tenant.0, "tenant_name": c.tenant_name, "key_id": c.key_id,
                        "key_name": c.key_name, "scopes": c.scopes.names(), "admin": c.admin,
                    }))
                }),
            )
            .route(
                "/public",
                get(|c: Option<Extension<Caller>>| async move { c.is_some().to_string() }),
            )
            .layer(axum::middleware::from_fn_with_state(
                guard,
                crate::access::guard,
            ))
    };
    let ask = |router: axum::Router, path: &str, headers: &[(&str, &str)]| {
        let mut req = request("GET", path, headers, None);
        req.headers_mut()
            .insert(header::HOST, "localhost".parse().expect("host"));
        async move {
            let resp = router.oneshot(req).await.expect("infallible");
            let bytes = http_body_util::BodyExt::collect(resp.into_body())
                .await
                .expect("body")
                .to_bytes();
            serde_json::from_slice::<Value>(&bytes).unwrap_or(Value::Null)
        }
    };
    let all = json!(["read", "write", "campaign", "admin", "metrics"]);
    let open = guarded(Access::open(&AuthConfig::default()));
    assert_eq!(
        ask(open.clone(), "/who", &[]).await,
        json!({"tenant": 1, "tenant_name": "default", "key_id": null, "key_name": null, "scopes": all, "admin": true})
    );
    assert_eq!(ask(open, "/public", &[]).await, json!(false));
    let protected =
        guarded(Access::protected(ADMIN, &AuthConfig::default()).with_keys(Arc::new(resolver)));
    let admin = bearer(ADMIN);
    assert_eq!(
        ask(
            protected.clone(),
            "/who",
            &[("authorization", &admin), ("x-herald-tenant", "shop")]
        )
        .await,
        json!({"tenant": 2, "tenant_name": "shop", "key_id": null, "key_name": "admin", "scopes": all, "admin": true})
    );
    assert_eq!(
        ask(protected, "/who", &[("authorization", &bearer(&key))]).await,
        json!({"tenant": 2, "tenant_name": "shop", "key_id": 7, "key_name": "k7", "scopes": ["read", "write"], "admin": false})
    );
    let _ = Scopes::all();
}

/// A signed channel's callback path passes the guard without a key (the
/// handler checks the signature instead); other channels' need the key.
#[tokio::test]
async fn signed_callbacks_pass_the_guard_without_a_key() {
    use axum::Extension;
    use axum::routing::get;
    use herald_core::{Clock, SystemClock};
    use tower::ServiceExt;

    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let access = Access::protected(ADMIN, &AuthConfig::default());
    let guard = crate::access::Guard::new(Arc::new(access), clock, vec![])
        .with_signed_callbacks(["wx".to_string()]);
    let router = axum::Router::new()
        .route(
            "/v1/channels/{name}/callback",
            get(|c: Option<Extension<Caller>>| async move {
                axum::Json(json!({"caller": c.is_some()}))
            }),
        )
        .layer(axum::middleware::from_fn_with_state(
            guard,
            crate::access::guard,
        ));
    let ask = |path: &str, headers: &[(&str, &str)]| {
        let req = request("GET", path, headers, None);
        let router = router.clone();
        async move {
            let resp = router.oneshot(req).await.expect("infallible");
            let status = resp.status();
            let bytes = http_body_util::BodyExt::collect(resp.into_body())
                .await
                .expect("body")
                .to_bytes();
            (
                status,
                serde_json::from_slice::<Value>(&bytes).unwrap_or(Value::Null),
            )
        }
    };
    let admin = bearer(ADMIN);
    assert_eq!(
        ask("/v1/channels/wx/callback", &[]).await,
        (StatusCode::OK, json!({"caller": false}))
    );
    // A key sent along changes nothing: the signature is what counts.
    assert_eq!(
        ask("/v1/channels/wx/callback", &[("authorization", &admin)]).await,
        (StatusCode::OK, json!({"caller": false}))
    );
    let (st, body) = ask("/v1/channels/wx2/callback", &[]).await;
    error(st, &body, StatusCode::UNAUTHORIZED, "unauthorized");
    assert_eq!(
        ask("/v1/channels/wx2/callback", &[("authorization", &admin)]).await,
        (StatusCode::OK, json!({"caller": true}))
    );
}

#[tokio::test]
async fn readyz_follows_the_store() {
    let api = Api::new().await;
    let (st, body) = api.get("/readyz").await;
    assert_eq!((st, body), (StatusCode::OK, json!({"status": "ready"})));
    api.store.fail_all(Some(StoreError::Unavailable {
        code: None,
        message: "down".into(),
    }));
    let (st, body) = api.get("/readyz").await;
    error(st, &body, StatusCode::SERVICE_UNAVAILABLE, "unavailable");
    // Liveness is not readiness: the process is still up.
    let (st, _) = api.get("/healthz").await;
    assert_eq!(st, StatusCode::OK);
    api.store.fail_all(None);
    let (st, _) = api.get("/readyz").await;
    assert_eq!(st, StatusCode::OK);
}

#[tokio::test]
async fn readyz_names_a_dead_core_loop_until_it_restarts() {
    let api = Api::new().await;
    assert!(api.engine.health().ok(), "{:?}", api.engine.health());
    assert_eq!(api.engine.inject_loop_fault("loader", true), 1);
    let mut seen = None;
    for _ in 0..200 {
        let (st, body) = api.get("/readyz").await;
        if st == StatusCode::SERVICE_UNAVAILABLE {
            seen = Some(body);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let body = seen.expect("readyz turns 503 while the loader is dead");
    assert_eq!(body["error"]["code"], "unavailable");
    assert_eq!(
        body["error"]["failing"],
        json!(["loop loader is not running"])
    );
    let (st, _) = api.get("/healthz").await;
    assert_eq!(st, StatusCode::OK, "liveness is not readiness");
    api.engine.inject_loop_fault("loader", false);
    let mut ready = false;
    for _ in 0..1_000 {
        if api.get("/readyz").await.0 == StatusCode::OK {
            ready = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(ready, "the loader restarts and readyz is 200 again");
    let loader = api
        .engine
        .health()
        .loops
        .into_iter()
        .find(|l| l.name == "loader");
    assert!(loader.is_some_and(|l| l.alive && l.restarts >= 1));
}
