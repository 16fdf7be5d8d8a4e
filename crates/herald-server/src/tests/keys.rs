//! `/v1/keys` and stored keys at the edge: a key is shown once, works at
//! once with its scopes, and stops working when revoked or expired.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode, header};
use herald_core::{Clock, SystemClock};
use herald_store::AccessStore;
use serde_json::{Value, json};

use super::{Api, Options, error};
use crate::access::{KEY_CACHE_TTL, StoredKeys};
use crate::{Access, AuthConfig};

pub(super) const ADMIN: &str = "admin-key-for-the-key-tests-0123456789";

/// A protected API whose API keys live in its store.
pub(super) async fn stored_keys_api(options: Options) -> Api {
    Api::build_with(options, |store| {
        Access::protected(ADMIN, &AuthConfig::default()).with_keys(Arc::new(StoredKeys::new(store)))
    })
    .await
}

/// A request with `key` (if any) and a JSON body (if any).
pub(super) fn req(
    method: Method,
    uri: &str,
    key: Option<&str>,
    body: Option<Value>,
) -> Request<Body> {
    let mut r = Request::builder().method(method).uri(uri);
    if let Some(k) = key {
        r = r.header(header::AUTHORIZATION, format!("Bearer {k}"));
    }
    match body {
        Some(b) => r
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(b.to_string())),
        None => r.body(Body::empty()),
    }
    .expect("request")
}

impl Api {
    /// Sends as the holder of `key`.
    pub(super) async fn as_key(
        &self,
        key: &str,
        method: Method,
        uri: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        self.send(req(method, uri, Some(key), body)).await
    }

    /// A new key of `tenant` with `scopes`, made by the admin: `(id, key)`.
    pub(super) async fn make_key(&self, tenant: &str, scopes: &[&str]) -> (i64, String) {
        let (st, body) = self
            .as_key(
                ADMIN,
                Method::POST,
                "/v1/keys",
                Some(json!({"tenant": tenant, "scopes": scopes})),
            )
            .await;
        assert_eq!(st, StatusCode::CREATED, "{body}");
        let key = body["key"].as_str().expect("a key").to_string();
        (body["id"].as_i64().expect("an id"), key)
    }
}

#[tokio::test]
async fn a_new_key_is_shown_once_and_works_with_its_scopes() {
    let api = stored_keys_api(Options::default()).await;
    let (st, headers, body): (StatusCode, HeaderMap, Value) = api
        .exchange(req(
            Method::POST,
            "/v1/keys",
            Some(ADMIN),
            Some(json!({"tenant": "shop", "scopes": ["write", "read"], "name": "ci"})),
        ))
        .await;
    assert_eq!(st, StatusCode::CREATED, "{body}");
    assert_eq!(headers[header::CACHE_CONTROL], "no-store");
    let id = body["id"].as_i64().unwrap();
    let key = body["key"].as_str().unwrap().to_string();
    assert!(key.starts_with(&format!("hrk_{id}_")), "{key}");
    assert_eq!(body["tenant"], "shop");
    assert_eq!(body["scopes"], json!(["read", "write"]));
    assert_eq!(body["name"], "ci");
    assert_eq!(body["expires_at"], Value::Null);
    assert!(
        body["created_at"].as_str().unwrap().ends_with('Z'),
        "{body}"
    );

    // Listed without its secret or hash.
    let (st, list) = api.as_key(ADMIN, Method::GET, "/v1/keys", None).await;
    assert_eq!(st, StatusCode::OK, "{list}");
    let secret = &key[format!("hrk_{id}_").len()..];
    assert!(!list.to_string().contains(secret), "{list}");
    let listed = &list["keys"][0];
    assert_eq!(listed["id"], id);
    assert_eq!(listed["tenant"], "shop");
    assert_eq!(listed["revoked_at"], Value::Null);
    let mut fields: Vec<&str> = listed
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    fields.sort_unstable();
    assert_eq!(
        fields,
        [
            "created_at",
            "expires_at",
            "id",
            "name",
            "revoked_at",
            "scopes",
            "tenant"
        ]
    );

    // It opens what its scopes allow, and nothing else.
    let (st, body) = api.as_key(&key, Method::GET, "/v1/jobs", None).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let (st, body) = api
        .as_key(&key, Method::POST, "/v1/jobs", Some(json!({})))
        .await;
    let e = error(st, &body, StatusCode::FORBIDDEN, "forbidden");
    assert!(
        e["message"].as_str().unwrap().contains("\"campaign\""),
        "{e}"
    );
    let (st, body) = api.as_key(&key, Method::GET, "/v1/keys", None).await;
    let e = error(st, &body, StatusCode::FORBIDDEN, "forbidden");
    assert!(e["message"].as_str().unwrap().contains("\"admin\""), "{e}");
    // A made-up secret for its id opens nothing.
    let forged = crate::access::new_key(id);
    let (st, body) = api.as_key(&forged, Method::GET, "/v1/jobs", None).await;
    error(st, &body, StatusCode::UNAUTHORIZED, "unauthorized");
}

#[tokio::test]
async fn key_requests_are_checked_field_by_field() {
    let api = stored_keys_api(Options::default()).await;
    let post = |body: Value| api.as_key(ADMIN, Method::POST, "/v1/keys", Some(body));
    let cases = [
        (json!({"tenant": "shop", "scopes": ["root"]}), "scopes"),
        (json!({"tenant": "shop", "scopes": []}), "scopes"),
        (json!({"tenant": "a b", "scopes": ["read"]}), "tenant"),
        (json!({"tenant": "", "scopes": ["read"]}), "tenant"),
        (
            json!({"tenant": "shop", "scopes": ["read"], "name": "x".repeat(65)}),
            "name",
        ),
        (
            json!({"tenant": "shop", "scopes": ["read"], "expires_at": "2001-01-01T00:00:00Z"}),
            "expires_at",
        ),
        (
            json!({"tenant": "shop", "scopes": ["read"], "expires_at": "tomorrow"}),
            "expires_at",
        ),
    ];
    for (body, field) in cases {
        let (st, answer) = post(body.clone()).await;
        let e = error(st, &answer, StatusCode::BAD_REQUEST, "invalid_field");
        assert_eq!(e["field"], field, "{body} -> {answer}");
    }
    let (st, answer) = post(json!({"tenant": "shop", "scopes": ["read"], "owner": "me"})).await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{answer}");
    // Nothing was stored by any of them.
    let (_, list) = api.as_key(ADMIN, Method::GET, "/v1/keys", None).await;
    assert_eq!(list["keys"], json!([]));
}

#[tokio::test]
async fn a_revoked_key_is_refused_at_once_on_the_node_that_revoked_it() {
    let api = stored_keys_api(Options::default()).await;
    let (id, key) = api.make_key("shop", &["read"]).await;
    assert_eq!(
        api.as_key(&key, Method::GET, "/v1/jobs", None).await.0,
        StatusCode::OK
    );
    let uri = format!("/v1/keys/{id}");
    let (st, first) = api.as_key(ADMIN, Method::DELETE, &uri, None).await;
    assert_eq!(st, StatusCode::OK, "{first}");
    assert_eq!(first["id"], id);
    assert!(first["revoked_at"].is_string(), "{first}");
    assert!(first.get("key").is_none(), "{first}");
    let (st, headers, body) = api
        .exchange(req(Method::GET, "/v1/jobs", Some(&key), None))
        .await;
    error(st, &body, StatusCode::UNAUTHORIZED, "unauthorized");
    assert!(
        headers[header::WWW_AUTHENTICATE]
            .to_str()
            .unwrap()
            .starts_with("Bearer"),
        "{headers:?}"
    );
    // Revoking again keeps the first time.
    tokio::time::sleep(Duration::from_millis(5)).await;
    let (st, again) = api.as_key(ADMIN, Method::DELETE, &uri, None).await;
    assert_eq!(st, StatusCode::OK, "{again}");
    assert_eq!(again["revoked_at"], first["revoked_at"]);
    let (_, list) = api
        .as_key(ADMIN, Method::GET, "/v1/keys?tenant=shop", None)
        .await;
    assert_eq!(list["keys"][0]["revoked_at"], first["revoked_at"]);
    let (st, body) = api
        .as_key(ADMIN, Method::DELETE, "/v1/keys/999", None)
        .await;
    error(st, &body, StatusCode::NOT_FOUND, "not_found");
}

#[tokio::test]
async fn a_revoke_by_another_node_holds_here_within_the_cache_lifetime() {
    let api = stored_keys_api(Options::default()).await;
    let (id, key) = api.make_key("shop", &["read"]).await;
    assert_eq!(
        api.as_key(&key, Method::GET, "/v1/jobs", None).await.0,
        StatusCode::OK
    );
    // Another node writes the revoke: this one learns it from the store.
    let revoked = Instant::now();
    api.store.revoke_api_key(id, 1).await.unwrap().unwrap();
    loop {
        let (st, body) = api.as_key(&key, Method::GET, "/v1/jobs", None).await;
        if st == StatusCode::UNAUTHORIZED {
            break;
        }
        assert_eq!(st, StatusCode::OK, "{body}");
        assert!(
            revoked.elapsed() < KEY_CACHE_TTL + Duration::from_millis(500),
            "still served {:?} after the revoke",
            revoked.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn an_expired_key_is_refused() {
    let api = stored_keys_api(Options::default()).await;
    let expires = herald_core::time::format_rfc3339_ms(SystemClock.now_ms() + 300);
    let (st, body) = api
        .as_key(
            ADMIN,
            Method::POST,
            "/v1/keys",
            Some(json!({"tenant": "shop", "scopes": ["read"], "expires_at": expires})),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{body}");
    assert_eq!(body["expires_at"], expires);
    let key = body["key"].as_str().unwrap().to_string();
    assert_eq!(
        api.as_key(&key, Method::GET, "/v1/jobs", None).await.0,
        StatusCode::OK
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    let (st, body) = api.as_key(&key, Method::GET, "/v1/jobs", None).await;
    error(st, &body, StatusCode::UNAUTHORIZED, "unauthorized");
}

#[tokio::test]
async fn keys_list_by_tenant() {
    let api = stored_keys_api(Options::default()).await;
    api.make_key("shop", &["read"]).await;
    api.make_key("crm", &["write"]).await;
    let (_, all) = api.as_key(ADMIN, Method::GET, "/v1/keys", None).await;
    let tenants: Vec<&str> = all["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["tenant"].as_str().unwrap())
        .collect();
    assert_eq!(tenants, ["shop", "crm"]);
    let (_, crm) = api
        .as_key(ADMIN, Method::GET, "/v1/keys?tenant=crm", None)
        .await;
    assert_eq!(crm["keys"].as_array().unwrap().len(), 1);
    assert_eq!(crm["keys"][0]["scopes"], json!(["write"]));
    let (st, body) = api
        .as_key(ADMIN, Method::GET, "/v1/keys?tenant=nobody", None)
        .await;
    let e = error(st, &body, StatusCode::NOT_FOUND, "unknown_tenant");
    assert_eq!(e["field"], "tenant");
    // The admin acts for a tenant made by a key, at once.
    let (st, body) = api
        .send({
            let mut r = req(Method::GET, "/v1/jobs", Some(ADMIN), None);
            r.headers_mut()
                .insert("x-herald-tenant", "crm".parse().unwrap());
            r
        })
        .await;
    assert_eq!(st, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn keys_list_in_pages_by_id() {
    let api = stored_keys_api(Options::default()).await;
    let mut ids = Vec::new();
    for tenant in ["shop", "crm", "shop", "crm", "shop"] {
        ids.push(api.make_key(tenant, &["read"]).await.0);
    }
    let api = &api;
    let get = move |uri: String| async move { api.as_key(ADMIN, Method::GET, &uri, None).await };
    let page_ids = |page: &Value| -> Vec<i64> {
        page["keys"]
            .as_array()
            .map(|v| v.iter().filter_map(|k| k["id"].as_i64()).collect())
            .unwrap_or_default()
    };
    let (st, page) = get("/v1/keys?limit=2".into()).await;
    assert_eq!(st, StatusCode::OK, "{page}");
    assert_eq!(page_ids(&page), ids[..2], "{page}");
    assert_eq!(page["next_after"], ids[1], "{page}");
    let (_, page) = get(format!("/v1/keys?limit=2&after={}", ids[1])).await;
    assert_eq!(page_ids(&page), ids[2..4], "{page}");
    let (_, page) = get(format!("/v1/keys?limit=2&after={}", ids[3])).await;
    assert_eq!(page_ids(&page), ids[4..], "{page}");
    assert_eq!(page["next_after"], json!(null), "{page}");

    // One tenant's keys page the same way.
    let (_, page) = get("/v1/keys?tenant=shop&limit=2".into()).await;
    assert_eq!(page_ids(&page), [ids[0], ids[2]], "{page}");
    let (_, page) = get(format!("/v1/keys?tenant=shop&after={}", ids[2])).await;
    assert_eq!(page_ids(&page), [ids[4]], "{page}");
    assert_eq!(page["next_after"], json!(null), "{page}");

    // Without a limit, up to 100 at once: every key here.
    let (_, page) = get("/v1/keys".into()).await;
    assert_eq!(page_ids(&page), ids, "{page}");
    let (_, page) = get("/v1/keys?limit=1000".into()).await;
    assert_eq!(page_ids(&page), ids, "{page}");
    for bad in ["limit=1001", "limit=0", "limit=many"] {
        let (st, body) = get(format!("/v1/keys?{bad}")).await;
        let e = error(st, &body, StatusCode::BAD_REQUEST, "invalid_field");
        assert_eq!(e["field"], "limit", "{bad}: {body}");
    }
    let (st, body) = get("/v1/keys?after=-1".into()).await;
    let e = error(st, &body, StatusCode::BAD_REQUEST, "invalid_field");
    assert_eq!(e["field"], "after", "{body}");
}
