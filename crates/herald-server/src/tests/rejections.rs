//! Every error a client can provoke is JSON with `error.code`, the
//! framework's own rejections included.

use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};

use super::{Api, error};

fn raw(method: Method, uri: &str, content_type: Option<&str>, body: Vec<u8>) -> Request<Body> {
    let mut req = Request::builder().method(method).uri(uri);
    if let Some(ct) = content_type {
        req = req.header(header::CONTENT_TYPE, ct);
    }
    req.body(Body::from(body)).expect("request")
}

#[tokio::test]
async fn unknown_routes_and_methods_are_json() {
    let api = Api::new().await;
    let (st, body) = api.get("/v2/anything").await;
    error(st, &body, StatusCode::NOT_FOUND, "not_found");
    let (st, body) = api.call(Method::PATCH, "/v1/timers", None).await;
    error(
        st,
        &body,
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
    );
}

#[tokio::test]
async fn bad_path_parameters_are_json() {
    let api = Api::new().await;
    let (st, body) = api.get("/v1/timers/abc").await;
    let e = error(st, &body, StatusCode::BAD_REQUEST, "invalid_field");
    assert_eq!(e["field"], "id");
    // Not UTF-8 once percent-decoded: axum's own `Path` rejection.
    let (st, body) = api.get("/v1/timers/%FF").await;
    let e = error(st, &body, StatusCode::BAD_REQUEST, "invalid_path");
    assert_eq!(e["field"], "path");
}

#[tokio::test]
async fn malformed_queries_are_json() {
    let api = Api::new().await;
    let (st, body) = api.get("/v1/jobs?limit=many").await;
    let e = error(st, &body, StatusCode::BAD_REQUEST, "invalid_field");
    assert_eq!(e["field"], "limit");
    // A parameter the route does not take is named.
    let (st, body) = api
        .call(Method::DELETE, "/v1/reminders/u/s?bogus=1", None)
        .await;
    let e = error(st, &body, StatusCode::BAD_REQUEST, "invalid_query");
    assert_eq!(e["field"], "bogus");
}

#[tokio::test]
async fn bad_json_bodies_are_json() {
    let api = Api::new().await;
    let json = Some("application/json");
    let req = raw(Method::POST, "/v1/timers", json, b"{\"channel\":".to_vec());
    let (st, body) = api.send(req).await;
    error(st, &body, StatusCode::BAD_REQUEST, "malformed_json");
    let req = raw(
        Method::POST,
        "/v1/timers",
        json,
        br#"{"channel": 5, "recipient": "r", "fire_at": "2030-01-01T00:00:00Z", "message": {}}"#
            .to_vec(),
    );
    let (st, body) = api.send(req).await;
    error(st, &body, StatusCode::BAD_REQUEST, "invalid_field");
    let req = raw(Method::POST, "/v1/timers", None, b"{}".to_vec());
    let (st, body) = api.send(req).await;
    error(
        st,
        &body,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
    );
}

#[tokio::test]
async fn bodies_over_a_framework_limit_are_json() {
    let api = Api::new().await;
    // The callback route reads its body with axum's `Bytes` under a
    // `DefaultBodyLimit`: over it, axum answers on its own.
    let big = vec![b'x'; crate::http::body_limits::CALLBACK_MAX_BYTES + 10];
    let req = raw(
        Method::POST,
        "/v1/channels/log/callback",
        Some("text/xml"),
        big,
    );
    let (st, body) = api.send(req).await;
    let e = error(
        st,
        &body,
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload_too_large",
    );
    assert_eq!(e["field"], "body");
    let big = vec![b'x'; crate::ApiConfig::default().max_timer_bytes + 10];
    let req = raw(Method::POST, "/v1/timers", Some("application/json"), big);
    let (st, body) = api.send(req).await;
    error(
        st,
        &body,
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload_too_large",
    );
}
