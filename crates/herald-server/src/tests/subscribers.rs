//! `/v1/subscribers`: create, replace, merge, read, list, delete and bulk
//! import of profiles, with every refusal naming its field and changing
//! nothing.

use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

use super::{Api, error};

fn full() -> Value {
    json!({
        "timezone": "Asia/Shanghai",
        "locale": "zh-CN",
        "addresses": {
            "email": "li.lei+coupons@example.cn",
            "sms": "+8613800138000",
            "wechat": {"wx": "oAbC-123"},
            "wecom": "LiLei",
            "app": ["fcm-token-1", "fcm-token-2"],
            "webhook": {"crm_id": 42}
        },
        "preferences": {"channel_types": {"sms": false}, "topics": {"marketing": false}},
        "quiet_hours": {"start": "22:00", "end": "08:00"}
    })
}

#[tokio::test]
async fn profiles_are_created_replaced_merged_listed_and_deleted() {
    let api = Api::new().await;
    let (st, a) = api
        .call(Method::PUT, "/v1/subscribers/li-lei", Some(full()))
        .await;
    assert_eq!(st, StatusCode::CREATED, "{a}");
    assert_eq!(a["user_id"], "li-lei");
    assert_eq!(a["version"], 1);
    assert_eq!(a["addresses"]["email"], "li.lei+coupons@example.cn");
    assert_eq!(a["addresses"]["app"], json!(["fcm-token-1", "fcm-token-2"]));

    // A merge patch: change the email, drop the SMS number, add a topic.
    let (st, b) = api
        .call(
            Method::PATCH,
            "/v1/subscribers/li-lei",
            Some(
                json!({"addresses": {"email": "new@example.cn", "sms": null},
                        "preferences": {"topics": {"orders": true}}}),
            ),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{b}");
    assert_eq!(b["version"], 2);
    assert_eq!(b["addresses"]["email"], "new@example.cn");
    assert!(b["addresses"].get("sms").is_none(), "{b}");
    assert_eq!(b["addresses"]["wecom"], "LiLei");
    assert_eq!(
        b["preferences"]["topics"],
        json!({"marketing": false, "orders": true})
    );
    assert_eq!(b["timezone"], "Asia/Shanghai");

    // A PUT replaces: what it leaves out is gone.
    let (st, c) = api
        .call(
            Method::PUT,
            "/v1/subscribers/li-lei",
            Some(json!({"addresses": {"email": "only@example.cn"}})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{c}");
    assert_eq!(c["version"], 3);
    assert!(c.get("timezone").is_none(), "{c}");
    let (st, got) = api.get("/v1/subscribers/li-lei").await;
    assert_eq!(st, StatusCode::OK);
    assert_eq!(got, c);

    for u in ["han-mei", "bob"] {
        let (st, _) = api
            .call(
                Method::PUT,
                &format!("/v1/subscribers/{u}"),
                Some(json!({})),
            )
            .await;
        assert_eq!(st, StatusCode::CREATED);
    }
    let (_, page) = api.get("/v1/subscribers?limit=2").await;
    let ids: Vec<&str> = page["subscribers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["user_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["bob", "han-mei"]);
    assert_eq!(page["next_cursor"], "han-mei");
    let (_, rest) = api.get("/v1/subscribers?limit=2&cursor=han-mei").await;
    assert_eq!(rest["subscribers"][0]["user_id"], "li-lei");
    assert_eq!(rest["next_cursor"], Value::Null);

    let (st, gone) = api
        .call(Method::DELETE, "/v1/subscribers/li-lei", None)
        .await;
    assert_eq!(st, StatusCode::OK, "{gone}");
    assert_eq!(gone["version"], 3);
    for (method, body) in [
        (Method::GET, None),
        (Method::DELETE, None),
        (Method::PATCH, Some(json!({"locale": "en"}))),
    ] {
        let (st, body) = api.call(method, "/v1/subscribers/li-lei", body).await;
        error(st, &body, StatusCode::NOT_FOUND, "not_found");
    }
    api.engine.shutdown().await;
}

#[tokio::test]
async fn bad_profiles_name_the_field_and_change_nothing() {
    let api = Api::new().await;
    let (st, _) = api
        .call(Method::PUT, "/v1/subscribers/u1", Some(full()))
        .await;
    assert_eq!(st, StatusCode::CREATED);
    for (body, field) in [
        (json!({"timezone": "Mars/Olympus"}), "timezone"),
        (json!({"locale": "zh CN"}), "locale"),
        (
            json!({"addresses": {"email": "no-at-sign"}}),
            "addresses.email",
        ),
        (
            json!({"addresses": {"email": "a..b@example.com"}}),
            "addresses.email",
        ),
        (
            json!({"addresses": {"sms": "13800138000"}}),
            "addresses.sms",
        ),
        (
            json!({"addresses": {"app": ["t", "t"]}}),
            "addresses.app[1]",
        ),
        (
            json!({"addresses": {"app": (0..11).map(|i| format!("t{i}")).collect::<Vec<_>>()}}),
            "addresses.app",
        ),
        (json!({"addresses": {"webhook": "x"}}), "addresses.webhook"),
        (json!({"addresses": {"fax": "1"}}), "addresses.fax"),
        (
            json!({"preferences": {"channel_types": {"pigeon": false}}}),
            "preferences.channel_types",
        ),
        (
            json!({"quiet_hours": {"start": "22:00", "end": "22:00"}}),
            "quiet_hours",
        ),
        (
            json!({"quiet_hours": {"start": "22:61", "end": "08:00"}}),
            "quiet_hours.start",
        ),
        (json!({"nickname": "x"}), "nickname"),
    ] {
        for method in [Method::PUT, Method::PATCH] {
            let (st, answer) = api
                .call(method.clone(), "/v1/subscribers/u1", Some(body.clone()))
                .await;
            let e = error(st, &answer, StatusCode::BAD_REQUEST, "invalid_field");
            assert!(
                e["field"].as_str().is_some_and(|f| f.starts_with(field)),
                "{method} {body}: {answer}"
            );
        }
    }
    // A PUT replaces: quiet hours without an end are incomplete (a PATCH
    // would merge them with the stored end).
    let (st, answer) = api
        .call(
            Method::PUT,
            "/v1/subscribers/u1",
            Some(json!({"quiet_hours": {"start": "22:00"}})),
        )
        .await;
    let e = error(st, &answer, StatusCode::BAD_REQUEST, "invalid_field");
    assert_eq!(e["field"], "quiet_hours", "{answer}");
    for (uri, field) in [
        ("/v1/subscribers/a%20b", "user_id"),
        ("/v1/subscribers?limit=0", "limit"),
        ("/v1/subscribers?cursor=%2F", "cursor"),
    ] {
        let (st, body) = api.get(uri).await;
        let e = error(st, &body, StatusCode::BAD_REQUEST, "invalid_field");
        assert_eq!(e["field"], field, "{uri}: {body}");
    }
    let (_, still) = api.get("/v1/subscribers/u1").await;
    assert_eq!(still["version"], 1, "{still}");
    assert_eq!(still["addresses"]["email"], "li.lei+coupons@example.cn");
    api.engine.shutdown().await;
}

/// The NDJSON answer of a bulk request, one value per line.
fn answer_lines(out: &Value) -> Vec<Value> {
    out.as_str()
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("an answer line"))
        .collect()
}

#[tokio::test]
async fn a_bulk_import_answers_per_line_and_can_run_again() {
    let api = Api::new().await;
    let lines = [
        json!({"user_id": "u1", "addresses": {"email": "u1@example.com"}}).to_string(),
        json!({"user_id": "u2", "addresses": {"sms": "not-a-phone"}}).to_string(),
        json!({"addresses": {}}).to_string(),
        json!({"user_id": "u3", "timezone": "Europe/Berlin"}).to_string(),
    ]
    .join("\n");
    let (st, out) = api
        .upload("/v1/subscribers:bulk", "application/x-ndjson", &lines)
        .await;
    assert_eq!(st, StatusCode::OK, "{out}");
    let answers = answer_lines(&out);
    let statuses: Vec<u64> = answers
        .iter()
        .map(|a| a["status"].as_u64().unwrap())
        .collect();
    assert_eq!(statuses, [201, 400, 400, 201], "{out}");
    assert_eq!(answers[1]["error"]["field"], "addresses.sms", "{out}");
    assert_eq!(answers[2]["error"]["field"], "user_id", "{out}");
    // Again: the same profiles are written over (200), versions move on.
    let (_, out) = api
        .upload("/v1/subscribers:bulk", "application/x-ndjson", &lines)
        .await;
    let again = answer_lines(&out);
    assert_eq!(again[0]["status"], 200, "{out}");
    assert_eq!(again[0]["version"], 2, "{out}");
    let (_, page) = api.get("/v1/subscribers").await;
    assert_eq!(
        page["subscribers"].as_array().map(Vec::len),
        Some(2),
        "{page}"
    );
    api.engine.shutdown().await;
}

#[tokio::test]
async fn a_timer_addressed_to_a_subscriber_is_checked_and_shown() {
    let api = Api::new().await;
    let base = json!({"delay_ms": 60_000, "channel": "log", "message": {"text": "hi"}});
    let with = |extra: Value| {
        let mut b = base.clone();
        for (k, v) in extra.as_object().unwrap() {
            b[k] = v.clone();
        }
        b
    };
    for (extra, field, code) in [
        (json!({}), "recipient", "missing_field"),
        (
            json!({"recipient": "r", "to": {"user_id": "u1", "channel_type": "email"}}),
            "to",
            "invalid_field",
        ),
        // A log channel takes any address: which of the subscriber's?
        (
            json!({"to": {"user_id": "u1"}}),
            "to.channel_type",
            "missing_field",
        ),
        (
            json!({"to": {"user_id": "u1", "channel_type": "fax"}}),
            "to.channel_type",
            "invalid_field",
        ),
        (
            json!({"to": {"user_id": "", "channel_type": "email"}}),
            "to.user_id",
            "invalid_field",
        ),
        (
            json!({"recipient": "r", "topic": "no spaces"}),
            "topic",
            "invalid_field",
        ),
    ] {
        let (st, body) = api.post("/v1/timers", with(extra.clone())).await;
        let e = error(st, &body, StatusCode::BAD_REQUEST, code);
        assert_eq!(e["field"], field, "{extra}: {body}");
    }
    let (_, list) = api.get("/v1/timers?limit=10").await;
    assert_eq!(list["timers"], json!([]), "refusals change nothing: {list}");

    let (st, made) = api
        .post(
            "/v1/timers",
            with(json!({"to": {"user_id": "u1", "channel_type": "email"},
                        "topic": "coupons", "critical": true})),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{made}");
    let (_, t) = api.get(&format!("/v1/timers/{}", made["id"])).await;
    assert_eq!(t["recipient"], "u1");
    assert_eq!(t["to"], json!({"user_id": "u1", "channel_type": "email"}));
    assert_eq!(t["topic"], "coupons");
    assert_eq!(t["critical"], true);
    // A plain timer shows none of it.
    let (_, plain) = api
        .post("/v1/timers", with(json!({"recipient": "r"})))
        .await;
    let (_, t) = api.get(&format!("/v1/timers/{}", plain["id"])).await;
    assert!(
        t.get("to").is_none() && t.get("topic").is_none() && t.get("critical").is_none(),
        "{t}"
    );
}
