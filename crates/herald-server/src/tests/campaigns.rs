//! Audiences, jobs and rules through the handlers and the engine's campaign
//! service: what is written, what a refusal leaves behind, how lists page.

use axum::http::{Method, StatusCode};
use herald_store::CampaignStore;
use serde_json::{Value, json};

use super::{Api, error, rule_body};
use crate::ApiConfig;

#[tokio::test]
async fn an_upload_over_the_limit_leaves_nothing() {
    let api = Api::with(ApiConfig {
        audience_max_recipients: 3,
        ..ApiConfig::default()
    })
    .await;
    let (st, body) = api
        .upload("/v1/audiences?name=few", "text/csv", "a\nb\nc\n")
        .await;
    assert_eq!(st, StatusCode::CREATED, "{body}");
    assert_eq!(
        (body["size"].clone(), body["name"].clone()),
        (json!(3), json!("few"))
    );
    let first = body["id"].as_i64().unwrap_or_default();

    let (st, body) = api
        .upload("/v1/audiences", "text/csv", "a\nb\nc\nd\n")
        .await;
    let e = error(
        st,
        &body,
        StatusCode::PAYLOAD_TOO_LARGE,
        "too_many_recipients",
    );
    assert_eq!(e["field"], "body");
    let (st, body) = api
        .upload(
            "/v1/audiences",
            "application/x-ndjson",
            "{\"recipient\":\"a\"}\n{}\n",
        )
        .await;
    let e = error(st, &body, StatusCode::BAD_REQUEST, "invalid_line");
    assert_eq!(e["field"], "line 2");
    // Only the first audience remains.
    for id in first + 1..first + 3 {
        assert_eq!(api.store.get_audience(id).await.ok(), Some(None), "{id}");
    }
    let (st, body) = api.get(&format!("/v1/audiences/{first}")).await;
    assert_eq!((st, body["size"].clone()), (StatusCode::OK, json!(3)));
    api.engine.shutdown().await;
}

#[tokio::test]
async fn jobs_from_inline_users_and_from_uploads() {
    let api = Api::new().await;
    let (st, job) = api
        .post(
            "/v1/jobs",
            json!({"users": ["a", "b", "a"], "channel": "log", "message": {"t": 1},
                   "segment_size": 1, "deadline_secs": 600}),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{job}");
    // A user listed twice gets one message.
    assert_eq!(job["totals"]["total"], 2, "{job}");
    assert_eq!(job["segment_size"], 1, "{job}");
    assert!(job["deadline"].is_string(), "{job}");

    let (_, upload) = api.upload("/v1/audiences", "text/csv", "x\ny\nz\n").await;
    let (st, job2) = api
        .post(
            "/v1/jobs",
            json!({"audience_id": upload["id"], "channel": "log", "message": {}}),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{job2}");
    assert_eq!(job2["totals"]["total"], 3, "{job2}");
    assert_eq!(job2["audience_id"], upload["id"], "{job2}");

    let (st, body) = api
        .post(
            "/v1/jobs",
            json!({"audience_id": 999, "channel": "log", "message": {}}),
        )
        .await;
    let e = error(st, &body, StatusCode::BAD_REQUEST, "unknown_audience");
    assert_eq!(e["field"], "audience_id");

    // Newest first, one page at a time.
    let (st, page) = api.get("/v1/jobs?limit=1").await;
    assert_eq!(st, StatusCode::OK, "{page}");
    assert_eq!(page["jobs"][0]["id"], job2["id"], "{page}");
    assert_eq!(page["next_before"], job2["id"], "{page}");
    let (_, page) = api
        .get(&format!("/v1/jobs?limit=1&before={}", job2["id"]))
        .await;
    assert_eq!(page["jobs"][0]["id"], job["id"], "{page}");
    let (_, page) = api.get(&format!("/v1/jobs?before={}", job["id"])).await;
    assert_eq!(page, json!({"jobs": [], "next_before": null}));

    let (st, segments) = api
        .get(&format!("/v1/jobs/{}/segments?limit=1", job["id"]))
        .await;
    assert_eq!(st, StatusCode::OK, "{segments}");
    assert_eq!(segments["segments"].as_array().map(Vec::len), Some(1));
    assert!(segments["next_after"].is_i64(), "{segments}");
    let (st, body) = api.get("/v1/jobs/999/segments").await;
    error(st, &body, StatusCode::NOT_FOUND, "not_found");
    let (st, body) = api.get("/v1/jobs/999/sends").await;
    error(st, &body, StatusCode::NOT_FOUND, "not_found");

    // Sends by outcome: paged by index; bad input names the field.
    let id = &job["id"];
    let (st, none) = api
        .get(&format!("/v1/jobs/{id}/sends?outcome=in_doubt"))
        .await;
    assert_eq!(st, StatusCode::OK, "{none}");
    assert_eq!(none, json!({"sends": [], "next_after": null}));
    for (query, field) in [
        ("outcome=maybe", "outcome"),
        ("outcome=in_doubt&start=0", "start"),
        ("outcome=in_doubt&end=5", "end"),
        ("outcome=in_doubt&limit=0", "limit"),
        ("outcome=in_doubt&limit=1001", "limit"),
        ("outcome=in_doubt&after=-1", "after"),
        ("after=3", "after"),
        ("limit=3", "limit"),
    ] {
        let (st, body) = api.get(&format!("/v1/jobs/{id}/sends?{query}")).await;
        let e = error(st, &body, StatusCode::BAD_REQUEST, "invalid_field");
        assert_eq!(e["field"], field, "{query}: {body}");
    }
    let (st, body) = api.get("/v1/jobs/999/sends?outcome=failed").await;
    error(st, &body, StatusCode::NOT_FOUND, "not_found");

    let (st, cancelled) = api
        .post(&format!("/v1/jobs/{}:cancel", job2["id"]), json!({}))
        .await;
    assert_eq!(st, StatusCode::OK, "{cancelled}");
    assert!(
        ["cancelled", "done"].contains(&cancelled["state"].as_str().unwrap_or_default()),
        "{cancelled}"
    );
    let (st, body) = api.post("/v1/jobs/999:cancel", json!({})).await;
    error(st, &body, StatusCode::NOT_FOUND, "not_found");
    api.engine.shutdown().await;
}

#[tokio::test]
async fn rules_are_versioned_and_re_enabling_starts_a_new_version() {
    let api = Api::new().await;
    let (st, rule) = api.post("/v1/rules", rule_body()).await;
    assert_eq!(st, StatusCode::CREATED, "{rule}");
    assert_eq!(
        (rule["version"].clone(), rule["status"].clone()),
        (json!(1), json!("enabled"))
    );
    assert!(
        rule["audience_id"].is_i64(),
        "inline users become an audience: {rule}"
    );
    assert!(rule["next_run_at"].is_string(), "{rule}");
    let id = rule["id"].clone();

    let (st, off) = api
        .post(&format!("/v1/rules/{id}:disable"), json!({}))
        .await;
    assert_eq!(st, StatusCode::OK, "{off}");
    assert_eq!(off["status"], "disabled");
    assert_eq!(off["next_run_at"], json!(null));
    let (_, on) = api.post(&format!("/v1/rules/{id}:enable"), json!({})).await;
    assert_eq!(
        (on["status"].clone(), on["version"].clone()),
        (json!("enabled"), json!(2))
    );

    let mut v3 = rule_body();
    v3["message"] = json!({"text": "v3"});
    let (st, updated) = api
        .call(Method::PUT, &format!("/v1/rules/{id}"), Some(v3.clone()))
        .await;
    assert_eq!(st, StatusCode::OK, "{updated}");
    assert_eq!(updated["version"], 3);
    let (st, body) = api.call(Method::PUT, "/v1/rules/999", Some(v3)).await;
    error(st, &body, StatusCode::NOT_FOUND, "not_found");
    let (_, versions) = api.get(&format!("/v1/rules/{id}/versions")).await;
    assert_eq!(versions["versions"].as_array().map(Vec::len), Some(3));
    let (st, tasks) = api.get(&format!("/v1/rules/{id}/tasks")).await;
    assert_eq!(st, StatusCode::OK, "{tasks}");

    // A rule naming an upload still under way is refused on that field.
    // Made now, not at time 0: retention removes an upload that old.
    let now = herald_core::Clock::now_ms(&herald_core::SystemClock);
    let audience = api
        .store
        .create_audience(herald_core::DEFAULT_TENANT, None, now)
        .await
        .unwrap_or_default();
    let mut pending = rule_body();
    pending["audience"] = json!({"audience_id": audience});
    let (st, body) = api.post("/v1/rules", pending).await;
    let e = error(st, &body, StatusCode::BAD_REQUEST, "audience_not_ready");
    assert_eq!(e["field"], "audience.audience_id");

    let (_, second) = api.post("/v1/rules", rule_body()).await;
    let (_, page) = api.get("/v1/rules?limit=1").await;
    assert_eq!(page["rules"][0]["id"], id, "{page}");
    assert_eq!(page["next_after"], id, "{page}");
    let (_, page) = api.get(&format!("/v1/rules?after={id}")).await;
    assert_eq!(page["rules"][0]["id"], second["id"], "{page}");
    assert_eq!(page["next_after"], json!(null), "{page}");
    let (st, body) = api.get("/v1/rules/999/versions").await;
    error(st, &body, StatusCode::NOT_FOUND, "not_found");
    api.engine.shutdown().await;
}

#[tokio::test]
async fn rule_versions_page_by_version() {
    let api = Api::new().await;
    let (st, rule) = api.post("/v1/rules", rule_body()).await;
    assert_eq!(st, StatusCode::CREATED, "{rule}");
    let id = rule["id"].clone();
    for n in 2..=3 {
        let mut body = rule_body();
        body["message"] = json!({"text": format!("v{n}")});
        let (st, updated) = api
            .call(Method::PUT, &format!("/v1/rules/{id}"), Some(body))
            .await;
        assert_eq!(st, StatusCode::OK, "{updated}");
    }
    let versions = |page: &Value| -> Vec<i64> {
        page["versions"]
            .as_array()
            .map(|v| v.iter().filter_map(|x| x["version"].as_i64()).collect())
            .unwrap_or_default()
    };
    let (st, page) = api.get(&format!("/v1/rules/{id}/versions?limit=2")).await;
    assert_eq!(st, StatusCode::OK, "{page}");
    assert_eq!(versions(&page), [1, 2], "{page}");
    assert_eq!(page["next_after"], 2, "{page}");
    let (_, page) = api
        .get(&format!("/v1/rules/{id}/versions?after=2&limit=2"))
        .await;
    assert_eq!(versions(&page), [3], "{page}");
    assert_eq!(page["next_after"], json!(null), "{page}");
    let (_, page) = api.get(&format!("/v1/rules/{id}/versions")).await;
    assert_eq!(versions(&page), [1, 2, 3], "{page}");
    assert_eq!(page["next_after"], json!(null), "{page}");
    // A cursor past every version (even past `i32`) is an empty last page.
    let (st, page) = api
        .get(&format!("/v1/rules/{id}/versions?after=99999999999"))
        .await;
    assert_eq!(st, StatusCode::OK, "{page}");
    assert_eq!(page, json!({"versions": [], "next_after": null}));
    for bad in ["limit=1001", "limit=0", "limit=x"] {
        let (st, body) = api.get(&format!("/v1/rules/{id}/versions?{bad}")).await;
        let e = error(st, &body, StatusCode::BAD_REQUEST, "invalid_field");
        assert_eq!(e["field"], "limit", "{bad}: {body}");
    }
    let (_, page) = api
        .get(&format!("/v1/rules/{id}/versions?limit=1000"))
        .await;
    assert_eq!(versions(&page), [1, 2, 3], "{page}");
    api.engine.shutdown().await;
}

#[tokio::test]
async fn audiences_page_with_an_opaque_cursor() {
    let api = Api::new().await;
    let mut ids = Vec::new();
    for name in ["one", "two", "three"] {
        let (st, body) = api
            .upload(&format!("/v1/audiences?name={name}"), "text/csv", "a\nb\n")
            .await;
        assert_eq!(st, StatusCode::CREATED, "{body}");
        ids.push(body["id"].clone());
    }
    let (st, page) = api.get("/v1/audiences?limit=2").await;
    assert_eq!(st, StatusCode::OK, "{page}");
    let got: Vec<Value> = page["audiences"]
        .as_array()
        .map(|a| a.iter().map(|x| x["id"].clone()).collect())
        .unwrap_or_default();
    assert_eq!(got, ids[..2]);
    assert_eq!(page["audiences"][0]["size"], 2);
    let cursor = page["next_cursor"].as_str().unwrap_or_default().to_string();
    let (st, rest) = api
        .get(&format!("/v1/audiences?limit=2&cursor={cursor}"))
        .await;
    assert_eq!(st, StatusCode::OK, "{rest}");
    assert_eq!(rest["audiences"][0]["name"], "three");
    assert_eq!(rest["next_cursor"], Value::Null);
    let (st, body) = api.get("/v1/audiences?cursor=zz").await;
    assert_eq!(
        error(st, &body, StatusCode::BAD_REQUEST, "invalid_field")["field"],
        "cursor"
    );
    let (st, body) = api.get("/v1/audiences?limit=0").await;
    assert_eq!(
        error(st, &body, StatusCode::BAD_REQUEST, "invalid_field")["field"],
        "limit"
    );
    api.engine.shutdown().await;
}

#[tokio::test]
async fn failed_sends_are_listed_and_retried_but_not_for_a_cancelled_job() {
    let api = Api::new().await;
    let (st, job) = api
        .post(
            "/v1/jobs",
            json!({"users": ["a", "b"], "channel": "log", "message": {"t": 1}}),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{job}");
    let id = job["id"].as_i64().unwrap_or_default();
    let (st, f) = api.get(&format!("/v1/jobs/{id}/failures")).await;
    assert_eq!(st, StatusCode::OK, "{f}");
    assert_eq!(f["truncated"], false, "{f}");
    assert!(f["groups"].is_array(), "{f}");
    let (st, r) = api
        .post(&format!("/v1/jobs/{id}:retry-failed"), json!({}))
        .await;
    assert_eq!(st, StatusCode::OK, "{r}");
    assert_eq!(
        (r["job"]["id"].as_i64(), r["retried"].as_u64()),
        (Some(id), Some(0))
    );

    let (_, upload) = api.upload("/v1/audiences", "text/csv", "x\ny\n").await;
    let (_, job2) = api
        .post(
            "/v1/jobs",
            json!({"audience_id": upload["id"], "channel": "log", "message": {},
                   "deadline_secs": 600}),
        )
        .await;
    let (_, cancelled) = api
        .post(&format!("/v1/jobs/{}:cancel", job2["id"]), json!({}))
        .await;
    let (st, body) = api
        .post(&format!("/v1/jobs/{}:retry-failed", job2["id"]), json!({}))
        .await;
    if cancelled["state"] == "cancelled" {
        error(st, &body, StatusCode::CONFLICT, "not_retryable");
    } else {
        assert_eq!(st, StatusCode::OK, "{body}");
    }
    let (st, body) = api.post("/v1/jobs/999:retry-failed", json!({})).await;
    error(st, &body, StatusCode::NOT_FOUND, "not_found");
    let (st, body) = api.get("/v1/jobs/999/failures").await;
    error(st, &body, StatusCode::NOT_FOUND, "not_found");
    api.engine.shutdown().await;
}

#[tokio::test]
async fn a_recipient_listed_twice_is_uploaded_once() {
    let api = Api::new().await;
    let (st, body) = api
        .upload("/v1/audiences", "text/csv", "a\nb\na\nc\nb\n")
        .await;
    assert_eq!(st, StatusCode::CREATED, "{body}");
    assert_eq!(body["size"], 3);
    assert_eq!(body["duplicates_removed"], 2);
    let id = body["id"].as_i64().unwrap_or_default();
    let (_, a) = api.get(&format!("/v1/audiences/{id}")).await;
    assert_eq!(a["size"], 3);
    let (st, job) = api
        .post(
            "/v1/jobs",
            json!({"audience_id": id, "channel": "log", "message": {"text": "once"}}),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{job}");
    assert_eq!(job["totals"]["total"], 3, "each recipient once: {job}");
}
