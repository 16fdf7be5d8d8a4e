//! `POST /v1/schedules:preview`: the planner's instants, with time zones,
//! excluded dates and DST, and the refusals.

use axum::http::StatusCode;
use serde_json::json;

use super::{Api, error};

#[tokio::test]
async fn previews_follow_the_zone_the_exclusions_and_dst() {
    let api = Api::new().await;
    let (st, body) = api
        .post(
            "/v1/schedules:preview",
            json!({"schedule": {"type": "cron", "cron": "0 9 * * *", "timezone": "Asia/Shanghai",
                                "exclude_dates": ["2030-01-02"]},
                   "count": 3, "from": "2030-01-01T00:00:00Z"}),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert_eq!(
        body["instants"],
        json!([
            "2030-01-01T01:00:00.000Z",
            "2030-01-03T01:00:00.000Z",
            "2030-01-04T01:00:00.000Z"
        ])
    );
    // New York moves to daylight time on 2030-03-10: 09:00 local is an hour earlier in UTC.
    let (st, body) = api
        .post(
            "/v1/schedules:preview",
            json!({"schedule": {"type": "cron", "cron": "0 9 * * *", "timezone": "America/New_York"},
                   "count": 2, "from": "2030-03-09T00:00:00Z"}),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert_eq!(
        body["instants"],
        json!(["2030-03-09T14:00:00.000Z", "2030-03-10T13:00:00.000Z"])
    );
    // A one-shot has one instant, whatever the count.
    let (st, body) = api
        .post(
            "/v1/schedules:preview",
            json!({"schedule": {"type": "at", "at": "2030-01-01T08:00:00+08:00"}, "from": "2029-01-01T00:00:00Z"}),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert_eq!(body["instants"], json!(["2030-01-01T00:00:00.000Z"]));
    api.engine.shutdown().await;
}

#[tokio::test]
async fn bad_previews_name_the_field() {
    let api = Api::new().await;
    let cron = json!({"type": "cron", "cron": "0 9 * * *", "timezone": "UTC"});
    for (body, status, code, field) in [
        (
            json!({"schedule": cron, "count": 0}),
            StatusCode::BAD_REQUEST,
            "invalid_field",
            "count",
        ),
        (
            json!({"schedule": cron, "count": 101}),
            StatusCode::BAD_REQUEST,
            "invalid_field",
            "count",
        ),
        (
            json!({"schedule": cron, "from": "soon"}),
            StatusCode::BAD_REQUEST,
            "invalid_field",
            "from",
        ),
        (
            json!({"schedule": {"type": "cron", "cron": "bogus", "timezone": "UTC"}}),
            StatusCode::BAD_REQUEST,
            "invalid_schedule",
            "schedule.cron",
        ),
    ] {
        let (st, got) = api.post("/v1/schedules:preview", body.clone()).await;
        let e = error(st, &got, status, code);
        assert_eq!(e["field"], field, "{body} -> {got}");
    }
    api.engine.shutdown().await;
}
