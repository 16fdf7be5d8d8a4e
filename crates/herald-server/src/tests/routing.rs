//! Routes, fallbacks and request checks, answered in the API's error shape.

use axum::http::{Method, StatusCode};
use serde_json::json;

use super::{Api, error};

#[tokio::test]
async fn unknown_paths_and_methods_answer_in_the_error_shape() {
    let api = Api::new().await;
    let (st, body) = api.get("/v1/nothing-here").await;
    error(st, &body, StatusCode::NOT_FOUND, "not_found");
    let (st, body) = api.call(Method::DELETE, "/v1/jobs", None).await;
    error(
        st,
        &body,
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
    );
    let (st, body) = api.call(Method::PUT, "/v1/audiences/1", None).await;
    error(
        st,
        &body,
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
    );
    let (st, body) = api.get("/healthz").await;
    assert_eq!((st, body), (StatusCode::OK, json!({"status": "ok"})));
}

#[tokio::test]
async fn actions_need_a_known_verb() {
    let api = Api::new().await;
    let (st, body) = api.post("/v1/jobs/3", json!({})).await;
    let e = error(st, &body, StatusCode::NOT_FOUND, "unknown_action");
    assert_eq!(
        e["message"],
        "POST /v1/jobs/3 needs an action: 3:cancel or 3:retry-failed or 3:retry-in-doubt or 3:recall or 3:resend-unread"
    );
    let (st, body) = api.post("/v1/rules/3:pause", json!({})).await;
    let e = error(st, &body, StatusCode::NOT_FOUND, "unknown_action");
    assert_eq!(
        e["message"],
        "no rule action \"pause\"; use :enable or :disable"
    );
    let (st, body) = api.post("/v1/deliveries/3:undo", json!({})).await;
    error(st, &body, StatusCode::NOT_FOUND, "unknown_action");
    // The verb is right, the id is not.
    let (st, body) = api.post("/v1/jobs/x:cancel", json!({})).await;
    let e = error(st, &body, StatusCode::BAD_REQUEST, "invalid_field");
    assert_eq!(e["field"], "id");
}

#[tokio::test]
async fn validation_errors_name_their_field() {
    let api = Api::new().await;
    let cases = [
        (
            "/v1/timers",
            json!({"channel": "log", "recipient": "r", "message": {}}),
            "missing_field",
            "fire_at",
        ),
        (
            "/v1/timers",
            json!({"delay_ms": 5, "channel": "nope", "recipient": "r", "message": {}}),
            "unknown_channel",
            "channel",
        ),
        (
            "/v1/jobs",
            json!({"users": ["a", ""], "channel": "log", "message": {}}),
            "invalid_field",
            "users[1]",
        ),
        (
            "/v1/jobs",
            json!({"users": ["a"], "channel": "log", "message": {}, "segment_size": 0}),
            "invalid_field",
            "segment_size",
        ),
        (
            "/v1/jobs",
            json!({"users": ["a"], "channel": "log", "message": {}, "extra": 1}),
            "invalid_field",
            "extra",
        ),
        (
            "/v1/rules",
            json!({"name": "r", "schedule": {"type": "immediate"}, "audience": {},
                   "channel": "log", "message": {}}),
            "missing_field",
            "audience",
        ),
    ];
    for (path, body, code, field) in cases {
        let (st, answer) = api.post(path, body).await;
        let e = error(st, &answer, StatusCode::BAD_REQUEST, code);
        assert_eq!(e["field"], field, "{path}: {answer}");
    }
    let (st, body) = api.get("/v1/jobs?limit=0").await;
    assert_eq!(
        error(st, &body, StatusCode::BAD_REQUEST, "invalid_field")["field"],
        "limit"
    );
    let (st, body) = api.get("/v1/rules?after=-1").await;
    assert_eq!(
        error(st, &body, StatusCode::BAD_REQUEST, "invalid_field")["field"],
        "after"
    );
    let (st, body) = api.upload("/v1/audiences", "application/xml", "<a/>").await;
    assert_eq!(
        error(
            st,
            &body,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type"
        )["field"],
        "content-type"
    );
}
