//! The audit log through the API: what is recorded (state changes, refused
//! ones too), what never is (bodies, secrets), and who may read it.

use std::time::{Duration, Instant};

use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

use super::keys::{ADMIN, req, stored_keys_api};
use super::{Api, Options, error};

fn timer() -> Value {
    json!({"delay_ms": 60_000, "channel": "log", "recipient": "r", "message": {"text": "very private"}})
}

impl Api {
    /// The audit entries the admin sees once there are at least `n`
    /// (the writer flushes every 10 ms in these tests).
    async fn audit_entries(&self, key: Option<&str>, query: &str, n: usize) -> Vec<Value> {
        let started = Instant::now();
        loop {
            let (st, body) = self
                .send(req(Method::GET, &format!("/v1/audit{query}"), key, None))
                .await;
            assert_eq!(st, StatusCode::OK, "{body}");
            let entries = body["entries"].as_array().cloned().unwrap_or_default();
            if entries.len() >= n {
                return entries;
            }
            assert!(
                started.elapsed() < Duration::from_secs(3),
                "{} entries, wanted {n}: {body}",
                entries.len()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// By default (`[audit] data_plane = false`) single creates of data are not
/// recorded, unless access control refused them; everything else is.
#[tokio::test]
async fn single_creates_of_data_are_left_out_unless_asked_for() {
    let api = stored_keys_api(Options {
        data_unaudited: true,
        ..Options::default()
    })
    .await;
    let (_, read_key) = api.make_key("default", &["read"]).await;
    let (st, created) = api
        .as_key(ADMIN, Method::POST, "/v1/timers", Some(timer()))
        .await;
    assert_eq!(st, StatusCode::CREATED, "{created}");
    let (st, body) = api
        .as_key(
            ADMIN,
            Method::PUT,
            "/v1/subscribers/alice",
            Some(json!({"addresses": {"email": "a@example.com"}})),
        )
        .await;
    assert!(st.is_success(), "{body}");
    // Refused by access control: recorded.
    let (st, _) = api
        .as_key(&read_key, Method::POST, "/v1/timers", Some(timer()))
        .await;
    assert_eq!(st, StatusCode::FORBIDDEN);
    // A change of what exists: recorded.
    let uri = format!("/v1/timers/{}", created["id"]);
    let (st, body) = api.as_key(ADMIN, Method::DELETE, &uri, None).await;
    assert!(st.is_success(), "{body}");
    let (st, body) = api
        .as_key(ADMIN, Method::DELETE, "/v1/subscribers/alice", None)
        .await;
    assert!(st.is_success(), "{body}");
    let entries = api.audit_entries(Some(ADMIN), "?order=asc", 4).await;
    let got: Vec<(String, String, u64)> = entries
        .iter()
        .map(|e| {
            (
                e["method"].as_str().unwrap_or_default().to_string(),
                e["route"].as_str().unwrap_or_default().to_string(),
                e["status"].as_u64().unwrap_or_default(),
            )
        })
        .collect();
    let want = |m: &str, r: &str, s: u64| (m.to_string(), r.to_string(), s);
    assert_eq!(
        got,
        vec![
            want("POST", "/v1/keys", 201),
            want("POST", "/v1/timers", 403),
            want("DELETE", "/v1/timers/{id}", 200),
            want("DELETE", "/v1/subscribers/{user_id}", 200),
        ],
        "{entries:#?}"
    );
}

#[tokio::test]
async fn state_changes_are_recorded_and_nothing_secret_is() {
    let api = stored_keys_api(Options::default()).await;
    // 1: a key made (its id is the resource).
    let (key_id, read_key) = api.make_key("default", &["read"]).await;
    // 2: a timer made.
    let (st, created) = api
        .as_key(ADMIN, Method::POST, "/v1/timers", Some(timer()))
        .await;
    assert_eq!(st, StatusCode::CREATED, "{created}");
    let timer_id = created["id"].as_i64().unwrap();
    // Reads are not recorded.
    let uri = format!("/v1/timers/{timer_id}");
    assert_eq!(
        api.as_key(ADMIN, Method::GET, &uri, None).await.0,
        StatusCode::OK
    );
    // 3: cancelled.
    let (st, body) = api.as_key(ADMIN, Method::DELETE, &uri, None).await;
    assert!(st.is_success(), "{body}");
    // 4: refused for want of a scope.
    let (st, _) = api
        .as_key(&read_key, Method::POST, "/v1/timers", Some(timer()))
        .await;
    assert_eq!(st, StatusCode::FORBIDDEN);

    let entries = api.audit_entries(Some(ADMIN), "?order=asc", 4).await;
    assert_eq!(entries.len(), 4, "{entries:#?}");
    // Newest first unless asked otherwise.
    let mut newest = api.audit_entries(Some(ADMIN), "", 4).await;
    newest.reverse();
    assert_eq!(newest, entries);
    let brief: Vec<(&str, &str, Value, u64)> = entries
        .iter()
        .map(|e| {
            (
                e["method"].as_str().unwrap(),
                e["route"].as_str().unwrap(),
                e["resource_id"].clone(),
                e["status"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        brief,
        [
            ("POST", "/v1/keys", json!(key_id.to_string()), 201),
            ("POST", "/v1/timers", json!(timer_id.to_string()), 201),
            (
                "DELETE",
                "/v1/timers/{id}",
                json!(timer_id.to_string()),
                brief[2].3
            ),
            ("POST", "/v1/timers", Value::Null, 403),
        ]
    );
    // Who: the admin, the read key; each entry is one request.
    for e in &entries[..3] {
        assert_eq!(
            (&e["key_id"], &e["key_name"]),
            (&Value::Null, &json!("admin"))
        );
        assert_eq!(e["tenant"], "default");
    }
    assert_eq!(entries[3]["key_id"], key_id);
    for e in &entries {
        assert_eq!((&e["count"], &e["reason"]), (&json!(1), &Value::Null));
    }
    assert!(entries[0]["at"].as_str().unwrap().ends_with('Z'));
    let text = serde_json::to_string(&entries).unwrap();
    for secret in [ADMIN, &read_key[read_key.len() - 20..], "very private"] {
        assert!(!text.contains(secret), "{secret:?} in {text}");
    }
}

#[tokio::test]
async fn entries_page_with_a_cursor() {
    let api = stored_keys_api(Options::default()).await;
    for _ in 0..5 {
        let (st, _) = api
            .as_key(ADMIN, Method::POST, "/v1/timers", Some(timer()))
            .await;
        assert_eq!(st, StatusCode::CREATED);
    }
    let all = api.audit_entries(Some(ADMIN), "", 5).await;
    let mut seen = Vec::new();
    let mut query = "?limit=2".to_string();
    loop {
        let (st, page) = api
            .send(req(
                Method::GET,
                &format!("/v1/audit{query}"),
                Some(ADMIN),
                None,
            ))
            .await;
        assert_eq!(st, StatusCode::OK, "{page}");
        seen.extend(page["entries"].as_array().unwrap().iter().cloned());
        match page["next_cursor"].as_str() {
            Some(c) => query = format!("?limit=2&cursor={c}"),
            None => break,
        }
        assert!(seen.len() <= 6, "{seen:?}");
    }
    assert_eq!(seen, all);
    let ids: Vec<i64> = all.iter().map(|e| e["id"].as_i64().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] > w[1]), "newest first: {ids:?}");
    // Oldest first pages the same entries the other way.
    let mut oldest = Vec::new();
    let mut query = "?limit=2&order=asc".to_string();
    loop {
        let (st, page) = api
            .send(req(
                Method::GET,
                &format!("/v1/audit{query}"),
                Some(ADMIN),
                None,
            ))
            .await;
        assert_eq!(st, StatusCode::OK, "{page}");
        oldest.extend(page["entries"].as_array().unwrap().iter().cloned());
        match page["next_cursor"].as_str() {
            Some(c) => query = format!("?limit=2&order=asc&cursor={c}"),
            None => break,
        }
        assert!(oldest.len() <= 6, "{oldest:?}");
    }
    oldest.reverse();
    assert_eq!(oldest, all);
    let (st, body) = api
        .send(req(
            Method::GET,
            "/v1/audit?since=2999-01-01T00:00:00Z",
            Some(ADMIN),
            None,
        ))
        .await;
    assert_eq!(
        (st, &body["entries"]),
        (StatusCode::OK, &json!([])),
        "{body}"
    );
    for (bad, field) in [
        ("?limit=0", "limit"),
        ("?limit=1001", "limit"),
        ("?cursor=x", "cursor"),
        ("?since=yesterday", "since"),
        ("?order=up", "order"),
        ("?status=4x", "status"),
        ("?status=600", "status"),
        ("?route=timers", "route"),
        ("?route=/v1/*/x", "route"),
        ("?key=", "key"),
        ("?key=%07", "key"),
    ] {
        let (st, body) = api
            .send(req(
                Method::GET,
                &format!("/v1/audit{bad}"),
                Some(ADMIN),
                None,
            ))
            .await;
        assert_eq!(st, StatusCode::BAD_REQUEST, "{bad}: {body}");
        assert_eq!(body["error"]["field"], field, "{bad}: {body}");
    }
    // A cursor naming no entry (one aged out since the page before) finds
    // nothing to continue after.
    let (st, body) = api
        .send(req(
            Method::GET,
            "/v1/audit?cursor=99999",
            Some(ADMIN),
            None,
        ))
        .await;
    assert_eq!(
        (st, body["error"]["code"].as_str()),
        (StatusCode::NOT_FOUND, Some("not_found")),
        "{body}"
    );
}

#[tokio::test]
async fn a_read_key_reads_its_own_tenant_only() {
    let api = stored_keys_api(Options::default()).await;
    let (_, shop_read) = api.make_key("shop", &["read"]).await;
    let (_, shop_write) = api.make_key("shop", &["write"]).await;
    // Entries of tenant shop: a refused delete by its write key (the timer
    // does not exist) and one of its read key's refused creates.
    let (st, _) = api
        .as_key(&shop_write, Method::DELETE, "/v1/timers/424242", None)
        .await;
    assert!(st.is_client_error(), "{st}");
    let (st, _) = api
        .as_key(&shop_read, Method::POST, "/v1/timers", Some(timer()))
        .await;
    assert_eq!(st, StatusCode::FORBIDDEN);
    // All: two key creates by the admin and those two, every one in shop's
    // own log: the admin gave shop its keys.
    api.audit_entries(Some(ADMIN), "", 4).await;
    let own = api.audit_entries(Some(&shop_read), "", 4).await;
    assert_eq!(own.len(), 4, "{own:#?}");
    assert!(own.iter().all(|e| e["tenant"] == "shop"), "{own:#?}");
    let made: Vec<(&Value, &Value, &Value)> = own
        .iter()
        .filter(|e| e["route"] == "/v1/keys")
        .map(|e| (&e["method"], &e["key_name"], &e["status"]))
        .collect();
    assert_eq!(
        made,
        [(&json!("POST"), &json!("admin"), &json!(201)); 2],
        "{own:#?}"
    );
    let same = api.audit_entries(Some(&shop_read), "?tenant=shop", 4).await;
    assert_eq!(same, own);
    let (st, body) = api
        .send(req(
            Method::GET,
            "/v1/audit?tenant=default",
            Some(&shop_read),
            None,
        ))
        .await;
    error(st, &body, StatusCode::FORBIDDEN, "forbidden");
    // The admin picks a tenant, or sees them all.
    let shop = api.audit_entries(Some(ADMIN), "?tenant=shop", 4).await;
    assert_eq!(shop, own);
    let (st, body) = api
        .send(req(
            Method::GET,
            "/v1/audit?tenant=nobody",
            Some(ADMIN),
            None,
        ))
        .await;
    error(st, &body, StatusCode::NOT_FOUND, "unknown_tenant");
    // A write key reads nothing.
    let (st, body) = api
        .send(req(Method::GET, "/v1/audit", Some(&shop_write), None))
        .await;
    error(st, &body, StatusCode::FORBIDDEN, "forbidden");
    // A revoke by the admin is in shop's log too, not in the default tenant's.
    let write_id = shop_write.split('_').nth(1).unwrap();
    let (st, body) = api
        .as_key(ADMIN, Method::DELETE, &format!("/v1/keys/{write_id}"), None)
        .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let own = api.audit_entries(Some(&shop_read), "", 5).await;
    assert_eq!(
        (&own[0]["method"], &own[0]["route"], &own[0]["tenant"]),
        (&json!("DELETE"), &json!("/v1/keys/{id}"), &json!("shop")),
        "{own:#?}"
    );
    assert_eq!(own[0]["resource_id"], json!(write_id));
    let default = api.audit_entries(Some(ADMIN), "?tenant=default", 0).await;
    assert!(
        default
            .iter()
            .all(|e| e["route"] != "/v1/keys/{id}" && e["route"] != "/v1/keys"),
        "{default:#?}"
    );
}

/// Entries narrowed by key (id or name), route (exact or prefix) and status
/// (code or class); an action route keeps the action it served, and one it
/// does not know shows as `:*`.
#[tokio::test]
async fn entries_are_filtered_and_actions_kept() {
    let api = stored_keys_api(Options::default()).await;
    let (key_id, write) = api
        .make_key("default", &["write", "read", "campaign"])
        .await;
    let (st, _) = api
        .as_key(&write, Method::POST, "/v1/timers", Some(timer()))
        .await;
    assert_eq!(st, StatusCode::CREATED);
    for path in ["/v1/jobs/424242:cancel", "/v1/jobs/424243:nonsense"] {
        let (st, body) = api.as_key(&write, Method::POST, path, None).await;
        assert_eq!(st, StatusCode::NOT_FOUND, "{path}: {body}");
    }
    let (st, _) = api
        .as_key(ADMIN, Method::POST, "/v1/jobs/424244:cancel", None)
        .await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    let all = api.audit_entries(Some(ADMIN), "", 5).await;
    let brief = |entries: &[Value]| -> Vec<(String, String, u64)> {
        entries
            .iter()
            .map(|e| {
                (
                    e["key_name"].as_str().unwrap_or("").to_string(),
                    e["route"].as_str().unwrap().to_string(),
                    e["status"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    let row = |k: &str, r: &str, s: u64| (k.to_string(), r.to_string(), s);
    let name = all[1]["key_name"].as_str().unwrap_or("").to_string();
    assert_eq!(
        brief(&all),
        [
            row("admin", "/v1/jobs/{id}:cancel", 404),
            row(&name, "/v1/jobs/{id}:*", 404),
            row(&name, "/v1/jobs/{id}:cancel", 404),
            row(&name, "/v1/timers", 201),
            row("admin", "/v1/keys", 201),
        ]
    );
    let filtered = |q: &'static str, want: Vec<usize>| {
        let all = all.clone();
        let api = &api;
        async move {
            let (st, body) = api
                .send(req(
                    Method::GET,
                    &format!("/v1/audit{q}"),
                    Some(ADMIN),
                    None,
                ))
                .await;
            assert_eq!(st, StatusCode::OK, "{q}: {body}");
            let got = body["entries"].as_array().unwrap().clone();
            let want: Vec<Value> = want.into_iter().map(|i| all[i].clone()).collect();
            assert_eq!(got, want, "{q}");
        }
    };
    filtered("?route=/v1/jobs/%7Bid%7D:cancel", vec![0, 2]).await;
    filtered("?route=/v1/jobs*", vec![0, 1, 2]).await;
    filtered("?status=4xx", vec![0, 1, 2]).await;
    filtered("?status=201", vec![3, 4]).await;
    filtered("?status=2xx&route=/v1/timers", vec![3]).await;
    filtered("?key=admin", vec![0, 4]).await;
    filtered("?status=404&key=admin", vec![0]).await;
    let by_id = format!("?key={key_id}");
    let (_, body) = api
        .send(req(
            Method::GET,
            &format!("/v1/audit{by_id}"),
            Some(ADMIN),
            None,
        ))
        .await;
    assert_eq!(body["entries"], json!(all[1..4]), "{body}");
    filtered("?key=nobody", vec![]).await;
    filtered("?order=asc&status=4xx", vec![2, 1, 0]).await;
}

#[tokio::test]
async fn open_mode_entries_name_no_key() {
    let api = Api::new().await;
    let (st, _) = api.post("/v1/timers", timer()).await;
    assert_eq!(st, StatusCode::CREATED);
    let entries = api.audit_entries(None, "", 1).await;
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["key_id"], Value::Null);
    assert_eq!(entries[0]["key_name"], Value::Null);
    assert_eq!(entries[0]["tenant"], "default");
}

/// Refusals before any key is recognised are counted, one entry per reason
/// and route and interval (the tests' interval is 10 ms), not one per
/// request; refusals of a known key stay one entry each.
#[tokio::test]
async fn refusals_before_a_key_are_tallied_not_logged_one_by_one() {
    let api = stored_keys_api(Options::default()).await;
    let (key_id, read_key) = api.make_key("default", &["read"]).await;
    let flood = 200;
    for _ in 0..flood {
        let (st, _) = api
            .send(req(Method::POST, "/v1/timers", None, Some(timer())))
            .await;
        assert_eq!(st, StatusCode::UNAUTHORIZED);
    }
    for _ in 0..3 {
        let (st, _) = api
            .as_key("hrk_999_nope", Method::DELETE, "/v1/timers/7", None)
            .await;
        assert_eq!(st, StatusCode::UNAUTHORIZED);
    }
    // Made-up paths are one route, `*`.
    for i in 0..20 {
        let (st, _) = api
            .send(req(Method::POST, &format!("/v1/nope-{i}"), None, None))
            .await;
        assert_eq!(st, StatusCode::UNAUTHORIZED);
    }
    let (st, _) = api
        .as_key(&read_key, Method::POST, "/v1/timers", Some(timer()))
        .await;
    assert_eq!(st, StatusCode::FORBIDDEN);

    // The key's creation, the refused read key, and the tallies: one entry
    // per kind and interval, so a kind may span a few of the tests' 10 ms
    // intervals. What they count adds up to every refusal.
    let total = flood + 3 + 20;
    let started = Instant::now();
    let entries = loop {
        let entries = api
            .audit_entries(Some(ADMIN), "?limit=1000&order=asc", 2)
            .await;
        let counted: u64 = entries
            .iter()
            .filter(|e| !e["reason"].is_null())
            .map(|e| e["count"].as_u64().unwrap())
            .sum();
        // The entries of the key's creation and of the refused read key are
        // written apart from the tallies: wait for them too.
        let one_each = entries.iter().filter(|e| e["reason"].is_null()).count();
        if counted >= total && one_each >= 2 {
            break entries;
        }
        assert!(started.elapsed() < Duration::from_secs(5), "{entries:#?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let mut tallies: std::collections::BTreeMap<(String, String, u64, String), u64> =
        Default::default();
    for e in entries.iter().filter(|e| !e["reason"].is_null()) {
        assert_eq!((&e["key_id"], &e["key_name"]), (&Value::Null, &Value::Null));
        let kind = (
            e["method"].as_str().unwrap().to_string(),
            e["route"].as_str().unwrap().to_string(),
            e["status"].as_u64().unwrap(),
            e["reason"].as_str().unwrap().to_string(),
        );
        *tallies.entry(kind).or_default() += e["count"].as_u64().unwrap();
    }
    let t = |m: &str, r: &str, why: &str, n: u64| ((m.into(), r.into(), 401, why.into()), n);
    assert_eq!(
        tallies.into_iter().collect::<Vec<_>>(),
        [
            t("DELETE", "/v1/timers/{id}", "invalid_key", 3),
            t("POST", "*", "no_key", 20),
            t("POST", "/v1/timers", "no_key", flood),
        ]
    );
    let one_each: Vec<&Value> = entries.iter().filter(|e| e["reason"].is_null()).collect();
    assert_eq!(one_each.len(), 2, "{one_each:#?}");
    assert_eq!(one_each[0]["route"], "/v1/keys");
    assert_eq!(
        (
            &one_each[1]["key_id"],
            &one_each[1]["status"],
            &one_each[1]["count"]
        ),
        (&json!(key_id), &json!(403), &json!(1))
    );
}
