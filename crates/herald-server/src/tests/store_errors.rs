//! Each kind of store error as the client sees it: a refusal is the
//! caller's `4xx` with `error.code` and `field`, only an unavailable store is
//! `503`, a broken row is `500`. And a refused write leaves nothing behind.

use axum::http::StatusCode;
use herald_store::{CampaignStore, StoreError};
use serde_json::json;

use super::{Api, error, rule_body};

fn unavailable() -> StoreError {
    StoreError::Unavailable {
        code: Some("57P01".into()),
        message: "terminating connection due to administrator command".into(),
    }
}

#[tokio::test]
async fn an_unavailable_store_is_503_and_only_while_it_lasts() {
    let api = Api::new().await;
    let (st, _) = api.get("/v1/jobs").await;
    assert_eq!(st, StatusCode::OK);

    api.store.fail_all(Some(unavailable()));
    let reads = ["/v1/jobs", "/v1/rules/1", "/v1/audiences/1", "/v1/stats"];
    for path in reads {
        let (st, body) = api.get(path).await;
        error(
            st,
            &body,
            StatusCode::SERVICE_UNAVAILABLE,
            "store_unavailable",
        );
        // The driver's words stay in the log, not in the answer.
        assert!(
            !body.to_string().contains("administrator"),
            "{path}: {body}"
        );
    }
    // Writes through the engine's group commit and through the campaign
    // service alike.
    let timer = json!({"delay_ms": 60_000, "channel": "log", "recipient": "r", "message": {}});
    let (st, body) = api.post("/v1/timers", timer.clone()).await;
    error(
        st,
        &body,
        StatusCode::SERVICE_UNAVAILABLE,
        "store_unavailable",
    );
    let (st, body) = api.post("/v1/rules", rule_body()).await;
    error(
        st,
        &body,
        StatusCode::SERVICE_UNAVAILABLE,
        "store_unavailable",
    );
    let (st, body) = api
        .upload("/v1/audiences", "text/csv", "recipient\na\nb\n")
        .await;
    error(
        st,
        &body,
        StatusCode::SERVICE_UNAVAILABLE,
        "store_unavailable",
    );

    api.store.fail_all(None);
    let (st, body) = api.post("/v1/timers", timer).await;
    assert_eq!(st, StatusCode::CREATED, "{body}");
    api.engine.shutdown().await;
}

#[tokio::test]
async fn refusals_conflicts_and_missing_rows_are_the_callers_4xx() {
    let api = Api::new().await;
    api.store.fail(
        "create_rule_by",
        StoreError::Refused {
            what: "schedule".into(),
            why: "the store keeps no schedule this long".into(),
        },
    );
    let (st, body) = api.post("/v1/rules", rule_body()).await;
    let e = error(st, &body, StatusCode::UNPROCESSABLE_ENTITY, "refused");
    assert_eq!(e["field"], "schedule");
    // The audience built from the rule's inline users went with it.
    assert_eq!(
        api.store.get_audience(1).await.ok(),
        Some(None),
        "the inline audience of a refused rule is dropped"
    );

    api.store.fail(
        "create_job",
        StoreError::Conflict {
            what: "idempotency_key".into(),
            why: "another job holds it".into(),
        },
    );
    let job = json!({"users": ["a", "b"], "channel": "log", "message": {}});
    let (st, body) = api.post("/v1/jobs", job).await;
    let e = error(st, &body, StatusCode::CONFLICT, "conflict");
    assert_eq!(e["field"], "idempotency_key");
    for id in [1, 2] {
        assert_eq!(api.store.get_audience(id).await.ok(), Some(None), "{id}");
    }

    api.store.fail(
        "get_job",
        StoreError::NotFound {
            what: "job 7".into(),
        },
    );
    let (st, body) = api.get("/v1/jobs/7").await;
    error(st, &body, StatusCode::NOT_FOUND, "not_found");

    api.store
        .fail("list_rules", StoreError::Corrupt("status \"maybe\"".into()));
    let (st, body) = api.get("/v1/rules").await;
    error(st, &body, StatusCode::INTERNAL_SERVER_ERROR, "internal");
    api.engine.shutdown().await;
}
