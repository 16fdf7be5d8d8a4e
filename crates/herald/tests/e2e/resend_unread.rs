//! Follow-ups of rules and resends to the unread (issue 39 §5), against the
//! real binary and the mock's webhook sink, on both stores: a rule's
//! follow-up reaches its job's unread recipients and not the readers; an
//! operator's `:resend-unread` of an ended job reaches exactly its unread,
//! is refused on a running job, while a resend still sends, and when
//! nobody is unread, and names the key that asked; `last_sent_at` tells
//! when a job last sent.

use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::*;
use reqwest::Method;
use serde_json::{Value, json};

const ADMIN: &str = "e2e-resend-admin-key-0123456789abcdef";

/// A node that asks for keys, with quick sweeps (a follow-up starts soon
/// after it is due), on SQLite (`None`) or on `store`.
async fn server(store: Option<&str>, mock: &Mock) -> Server {
    let cfg = Server::webhook_config(
        &mock.hook(),
        "",
        "[jobs]\nsweep_interval_ms = 200\nplanner_interval_ms = 200\nidle_poll_ms = 100\n",
    );
    let dir = tempfile::tempdir().unwrap();
    let url = match store {
        Some(url) => url.to_string(),
        None => format!("sqlite://{}", dir.path().join("data/herald.db").display()),
    };
    Server::start_with_env(&url, dir, &cfg, &[("HERALD_ADMIN_KEY", ADMIN)]).await
}

/// One request with the admin key: status and JSON body.
async fn call(s: &Server, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut req = client()
        .request(method, format!("{}{path}", s.url))
        .bearer_auth(ADMIN);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = req.send().await.unwrap();
    let st = resp.status().as_u16();
    (st, resp.json().await.unwrap_or(Value::Null))
}

async fn post(s: &Server, path: &str, body: Value) -> (u16, Value) {
    call(s, Method::POST, path, Some(body)).await
}

async fn job(s: &Server, id: i64) -> Value {
    let (st, v) = call(s, Method::GET, &format!("/v1/jobs/{id}"), None).await;
    assert_eq!(st, 200, "{v}");
    v
}

async fn wait_state(s: &Server, id: i64, state: &str) -> Value {
    wait_for(
        &format!("job {id} to be {state}"),
        Duration::from_secs(30),
        || async { job(s, id).await["state"] == state },
    )
    .await;
    job(s, id).await
}

/// Marks the given recipients of job `id` read.
async fn read(s: &Server, id: i64, indexes: &[u64]) {
    for i in indexes {
        let key = format!("herald-job-{id}-{i}");
        let (st, v) = post(
            s,
            "/v1/receipts",
            json!({"idempotency_key": key, "event": "read"}),
        )
        .await;
        assert_eq!(st, 200, "{v}");
    }
}

/// The recipients job `id` delivered to.
async fn delivered_to(s: &Server, id: i64) -> BTreeSet<String> {
    let (st, v) = call(s, Method::GET, &format!("/v1/jobs/{id}/sends"), None).await;
    assert_eq!(st, 200, "{v}");
    v["sends"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["state"] == "delivered")
        .map(|r| r["recipient"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| n.to_string()).collect()
}

fn id(v: &Value) -> i64 {
    v["id"].as_i64().unwrap_or_else(|| panic!("no id in {v}"))
}

fn error_code(v: &Value) -> &str {
    v["error"]["code"].as_str().unwrap_or_default()
}

async fn pause(s: &Server) {
    let (st, v) = post(s, "/v1/channels/hooks:pause", json!({})).await;
    assert_eq!(st, 200, "{v}");
}

async fn resume(s: &Server) {
    let (st, v) = call(s, Method::POST, "/v1/channels/hooks:resume", None).await;
    assert_eq!(st, 200, "{v}");
}

// ---- A rule's follow-up ----

async fn rule_follow_up(store: Option<&str>) {
    let mock = Mock::start(&[]).await;
    let s = server(store, &mock).await;
    let rule = |follow_up: Value| {
        json!({"name": "sale", "channel": "hooks", "message": {"m": "sale"},
               "audience": {"users": ["r0", "r1", "r2", "r3"]},
               "schedule": {"type": "immediate"}, "follow_up": follow_up})
    };
    // Checked as a job's, naming the field.
    for (f, field) in [
        (
            json!({"after_secs": 0, "message": {"m": "x"}, "only": "unread"}),
            "follow_up.after_secs",
        ),
        (
            json!({"after_secs": 5, "message": {"m": "x"}, "only": "all"}),
            "follow_up.only",
        ),
        (
            json!({"after_secs": 5, "message": "x", "only": "unread"}),
            "follow_up.message",
        ),
        (
            json!({"after_secs": 5, "message": {"m": "x"}, "only": "unread", "x": 1}),
            "follow_up",
        ),
    ] {
        let (st, v) = post(&s, "/v1/rules", rule(f.clone())).await;
        assert_eq!(st, 400, "{f}: {v}");
        assert!(
            v["error"]["field"]
                .as_str()
                .is_some_and(|x| x.starts_with(field)),
            "{f}: {v}"
        );
    }
    let (_, rules) = call(&s, Method::GET, "/v1/rules", None).await;
    assert_eq!(rules["rules"].as_array().map(Vec::len), Some(0), "{rules}");

    let follow_up = json!({"after_secs": 3, "message": {"m": "last day"}, "only": "unread"});
    let (st, r) = post(&s, "/v1/rules", rule(follow_up.clone())).await;
    assert_eq!(st, 201, "{r}");
    assert_eq!(r["follow_up"], follow_up, "{r}");
    let rid = id(&r);
    let (_, got) = call(&s, Method::GET, &format!("/v1/rules/{rid}"), None).await;
    assert_eq!(got["follow_up"], follow_up, "{got}");
    let (_, versions) = call(&s, Method::GET, &format!("/v1/rules/{rid}/versions"), None).await;
    assert_eq!(
        versions["versions"][0]["follow_up"], follow_up,
        "{versions}"
    );

    // The rule's job carries it; r1 and r2 read theirs in time.
    let tasks = format!("/v1/rules/{rid}/tasks");
    wait_for("the rule's job", Duration::from_secs(30), || async {
        call(&s, Method::GET, &tasks, None).await.1["tasks"][0]["job_id"].is_i64()
    })
    .await;
    let (_, t) = call(&s, Method::GET, &tasks, None).await;
    let jid = t["tasks"][0]["job_id"].as_i64().unwrap();
    let j = wait_state(&s, jid, "done").await;
    assert_eq!(j["totals"]["sent"], 4, "{j}");
    assert_eq!(j["follow_up"]["after_secs"], 3, "{j}");
    assert!(j["last_sent_at"].is_string(), "{j}");
    read(&s, jid, &[1, 2]).await;

    wait_for(
        "the follow-up to be sent",
        Duration::from_secs(30),
        || async { job(&s, jid).await["follow_up"]["state"] == "sent" },
    )
    .await;
    let j = job(&s, jid).await;
    let fid = j["follow_up"]["job_id"]
        .as_i64()
        .unwrap_or_else(|| panic!("{j}"));
    assert_eq!(j["followed_by"], json!([fid]), "{j}");
    let f = wait_state(&s, fid, "done").await;
    assert_eq!(
        (&f["follows"], &f["message"], &f["totals"]["total"]),
        (&json!(jid), &json!({"m": "last day"}), &json!(2)),
        "{f}"
    );
    assert_eq!(delivered_to(&s, fid).await, set(&["r0", "r3"]));
    // The readers got the sale only.
    let stats = mock.stats().await;
    assert_eq!(stats["unique_delivered"], 6, "{stats}");

    // A new version without it: its jobs carry none.
    let mut v2 = rule(Value::Null);
    v2.as_object_mut().unwrap().remove("follow_up");
    let (st, r) = call(&s, Method::PUT, &format!("/v1/rules/{rid}"), Some(v2)).await;
    assert_eq!(st, 200, "{r}");
    assert!(r.get("follow_up").is_none(), "{r}");
    let (_, versions) = call(&s, Method::GET, &format!("/v1/rules/{rid}/versions"), None).await;
    assert_eq!(
        versions["versions"][0]["follow_up"], follow_up,
        "{versions}"
    );
    assert!(
        versions["versions"][1].get("follow_up").is_none(),
        "{versions}"
    );
}

#[tokio::test]
async fn a_rules_follow_up_reaches_its_jobs_unread_on_sqlite() {
    rule_follow_up(None).await;
}

#[tokio::test]
async fn a_rules_follow_up_reaches_its_jobs_unread_on_postgres() {
    let Some((_db, url)) = pg_database("resend_rule") else {
        eprintln!("PostgreSQL not installed: rule follow-up on PostgreSQL skipped");
        return;
    };
    rule_follow_up(Some(&url)).await;
}

// ---- An operator's resend to the unread ----

async fn resend(store: Option<&str>) {
    let mock = Mock::start(&[]).await;
    let s = server(store, &mock).await;
    let resend = |id: i64| format!("/v1/jobs/{id}:resend-unread");
    let (st, v) = post(&s, &resend(999), json!({})).await;
    assert_eq!((st, error_code(&v)), (404, "not_found"), "{v}");

    // Held by a paused channel, the job runs and has not sent: refused.
    pause(&s).await;
    let (st, j) = post(
        &s,
        "/v1/jobs",
        json!({"users": ["a0", "a1", "a2", "a3"], "channel": "hooks",
               "message": {"m": "sale"}, "name": "spring sale", "category": "marketing"}),
    )
    .await;
    assert_eq!(st, 201, "{j}");
    let jid = id(&j);
    assert_eq!(j["last_sent_at"], Value::Null, "{j}");
    assert_eq!(
        (&j["follows"], &j["followed_by"]),
        (&Value::Null, &json!([]))
    );
    let (st, v) = post(&s, &resend(jid), json!({})).await;
    assert_eq!((st, error_code(&v)), (409, "not_resendable"), "{v}");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("running"),
        "{v}"
    );
    resume(&s).await;
    let j = wait_state(&s, jid, "done").await;
    assert!(j["last_sent_at"].is_string(), "{j}");
    assert!(
        j["last_sent_at"].as_str() >= j["started_at"].as_str(),
        "{j}"
    );

    // Bad bodies name their field and start nothing.
    for (body, field) in [
        (json!({"message": "plain"}), "message"),
        (json!({"message": {"m": "x"}, "extra": 1}), "extra"),
    ] {
        let (st, v) = post(&s, &resend(jid), body.clone()).await;
        assert_eq!(st, 400, "{body}: {v}");
        assert_eq!(v["error"]["field"], field, "{body}: {v}");
    }

    // a1 and a2 read it: the resend (no body) reaches a0 and a3, with the
    // job's own message, made by the admin key.
    read(&s, jid, &[1, 2]).await;
    let resp = client()
        .post(format!("{}{}", s.url, resend(jid)))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 201);
    let r1: Value = resp.json().await.unwrap();
    let r1id = id(&r1);
    assert_eq!(
        (
            &r1["follows"],
            &r1["message"],
            &r1["channel"],
            &r1["totals"]["total"]
        ),
        (
            &json!(jid),
            &json!({"m": "sale"}),
            &json!("hooks"),
            &json!(2)
        ),
        "{r1}"
    );
    assert_eq!(
        (&r1["name"], &r1["category"]),
        (&json!("spring sale"), &json!("marketing")),
        "{r1}"
    );
    assert_eq!(
        r1["created_by"],
        json!({"key_id": null, "key_name": "admin"}),
        "{r1}"
    );
    wait_state(&s, r1id, "done").await;
    assert_eq!(delivered_to(&s, r1id).await, set(&["a0", "a3"]));

    // While a resend still sends, another is refused; once it ended, a
    // resend with a new message goes to whoever is still unread.
    pause(&s).await;
    let (st, r2) = post(&s, &resend(jid), json!({"message": {"m": "second"}})).await;
    assert_eq!(st, 201, "{r2}");
    let r2id = id(&r2);
    assert_eq!(r2["message"], json!({"m": "second"}), "{r2}");
    let (st, v) = post(&s, &resend(jid), json!({})).await;
    assert_eq!((st, error_code(&v)), (409, "resend_running"), "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains(&format!("job {r2id}")),
        "{v}"
    );
    resume(&s).await;
    wait_state(&s, r2id, "done").await;
    assert_eq!(delivered_to(&s, r2id).await, set(&["a0", "a3"]));
    assert_eq!(job(&s, jid).await["followed_by"], json!([r1id, r2id]));

    // Everyone read it: nothing to send.
    read(&s, jid, &[0, 3]).await;
    let (st, v) = post(&s, &resend(jid), json!({})).await;
    assert_eq!((st, error_code(&v)), (409, "nobody_unread"), "{v}");
    let jid_text = jid.to_string();
    let (ok, out, err) = herald_cli(
        "jobs",
        &s.url,
        &[
            "resend-unread",
            &jid_text,
            "--key",
            ADMIN,
            "--message",
            r#"{"m": "cli"}"#,
        ],
    )
    .await;
    assert!(
        !ok && out.is_empty() && err.contains("409 nobody_unread"),
        "{out}\n{err}"
    );
    // a0..a3 once, then a0 and a3 twice more.
    let stats = mock.stats().await;
    assert_eq!(stats["unique_delivered"], 8, "{stats}");

    // A cancelled job is not resent.
    pause(&s).await;
    let (st, c) = post(
        &s,
        "/v1/jobs",
        json!({"users": ["c0"], "channel": "hooks", "message": {"m": "x"}}),
    )
    .await;
    assert_eq!(st, 201, "{c}");
    let cid = id(&c);
    let (st, v) = post(&s, &format!("/v1/jobs/{cid}:cancel"), json!({})).await;
    assert_eq!((st, &v["state"]), (200, &json!("cancelled")), "{v}");
    let (st, v) = post(&s, &resend(cid), json!({})).await;
    assert_eq!((st, error_code(&v)), (409, "not_resendable"), "{v}");
    resume(&s).await;
}

#[tokio::test]
async fn a_resend_reaches_exactly_the_unread_on_sqlite() {
    resend(None).await;
}

#[tokio::test]
async fn a_resend_reaches_exactly_the_unread_on_postgres() {
    let Some((_db, url)) = pg_database("resend_unread") else {
        eprintln!("PostgreSQL not installed: resend to the unread on PostgreSQL skipped");
        return;
    };
    resend(Some(&url)).await;
}
