//! `GET /v1/subjects` and the counts of `GET /v1/subjects/{id}`: paging in id
//! order, counts that follow subscribes and cancels, and the refusals.

use axum::http::{Method, StatusCode};
use herald_core::clock::{Clock, SystemClock};
use serde_json::{Value, json};

use super::{Api, error};

async fn subscribe(api: &Api, user: &str, subject: &str, channel_type: &str, lead: i64) {
    let (st, body) = api
        .post(
            "/v1/reminders",
            json!({"user_id": user, "subject_id": subject, "channel_type": channel_type,
                   "lead_minutes": lead}),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{body}");
}

fn ids(page: &Value) -> Vec<&str> {
    page["subjects"]
        .as_array()
        .expect("subjects")
        .iter()
        .map(|s| s["subject_id"].as_str().expect("subject_id"))
        .collect()
}

#[tokio::test]
async fn subjects_page_in_id_order_with_their_counts() {
    let api = Api::new().await;
    let start = herald_core::time::format_rfc3339_ms(SystemClock.now_ms() + 86_400_000);
    for id in ["launch-b", "launch-a", "launch-c"] {
        let (st, body) = api
            .call(
                Method::PUT,
                &format!("/v1/subjects/{id}"),
                Some(json!({"start_at": start, "title": format!("Title {id}")})),
            )
            .await;
        assert_eq!(st, StatusCode::CREATED, "{body}");
    }
    subscribe(&api, "alice", "launch-a", "app", 5).await;
    subscribe(&api, "alice", "launch-a", "app", 30).await;
    subscribe(&api, "bob", "launch-a", "app", 5).await;
    subscribe(&api, "bob", "launch-a", "sms", 5).await;
    subscribe(&api, "bob", "launch-b", "app", 5).await;

    let (st, first) = api.get("/v1/subjects?limit=2").await;
    assert_eq!(st, StatusCode::OK, "{first}");
    assert_eq!(ids(&first), ["launch-a", "launch-b"]);
    assert_eq!(first["next_cursor"], "launch-b");
    assert_eq!(first["count_cap"], 1000);
    let a = &first["subjects"][0];
    assert_eq!(
        (
            &a["subscribers"],
            &a["reminders"],
            &a["counts_capped"],
            &a["title"]
        ),
        (
            &json!(2),
            &json!(4),
            &json!(false),
            &json!("Title launch-a")
        ),
        "{a}"
    );
    assert_eq!(a["start_at"], start);
    let (st, rest) = api.get("/v1/subjects?limit=2&cursor=launch-b").await;
    assert_eq!(st, StatusCode::OK, "{rest}");
    assert_eq!(ids(&rest), ["launch-c"]);
    assert_eq!(rest["next_cursor"], Value::Null);
    assert_eq!(rest["subjects"][0]["subscribers"], 0);

    let (st, detail) = api.get("/v1/subjects/launch-a").await;
    assert_eq!(st, StatusCode::OK, "{detail}");
    assert_eq!(
        (&detail["subscribers"], &detail["reminders"]),
        (&json!(2), &json!(4))
    );
    assert_eq!(detail["title"], "Title launch-a");
    let mut groups: Vec<(String, i64, i64)> = detail["reminders_by"]
        .as_array()
        .expect("reminders_by")
        .iter()
        .map(|g| {
            (
                g["channel_type"]
                    .as_str()
                    .expect("channel_type")
                    .to_string(),
                g["lead_minutes"].as_i64().expect("lead_minutes"),
                g["count"].as_i64().expect("count"),
            )
        })
        .collect();
    groups.sort();
    assert_eq!(
        groups,
        [
            ("app".to_string(), 5, 2),
            ("app".to_string(), 30, 1),
            ("sms".to_string(), 5, 1)
        ]
    );

    // Cancelling bob's reminders on launch-a leaves alice's two.
    let (st, body) = api
        .call(Method::DELETE, "/v1/reminders/bob/launch-a", None)
        .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let (_, after) = api.get("/v1/subjects?limit=1").await;
    let a = &after["subjects"][0];
    assert_eq!(
        (&a["subscribers"], &a["reminders"]),
        (&json!(1), &json!(2)),
        "{a}"
    );
    api.engine.shutdown().await;
}

#[tokio::test]
async fn bad_subject_listings_name_the_field() {
    let api = Api::new().await;
    for (uri, field) in [
        ("/v1/subjects?limit=0", "limit"),
        ("/v1/subjects?limit=501", "limit"),
        ("/v1/subjects?limit=ten", "limit"),
        ("/v1/subjects?cursor=a%20b", "cursor"),
        ("/v1/subjects?cursor=%2F..%2F", "cursor"),
    ] {
        let (st, body) = api.get(uri).await;
        let e = error(st, &body, StatusCode::BAD_REQUEST, "invalid_field");
        assert_eq!(e["field"], field, "{uri}: {body}");
    }
    let (st, body) = api.get("/v1/subjects").await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert_eq!(body["subjects"], json!([]));
    assert_eq!(body["next_cursor"], Value::Null);
    api.engine.shutdown().await;
}
