//! How the real binary reads what a caller sends (docs/api.md): every JSON
//! body is one object whose strings may use any escape;
//! stored documents are refused when they would not deliver as stored;
//! unknown or repeated query parameters are named and refused; a rule that
//! could never fire, or would fire more often than the floor, is refused;
//! offsets are RFC 3339's; the console shows hidden characters escaped and
//! answers its errors in the API's shape.

use crate::common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};

/// JSON text of `v` with every character of every string, keys included,
/// written as a `\uXXXX` escape (a non-BMP character as its surrogate pair).
fn escape_all(v: &Value) -> String {
    fn text(s: &str) -> String {
        let mut out = String::from("\"");
        for unit in s.encode_utf16() {
            out.push_str(&format!("\\u{unit:04x}"));
        }
        out.push('"');
        out
    }
    match v {
        Value::String(s) => text(s),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(escape_all).collect();
            format!("[{}]", items.join(","))
        }
        Value::Object(map) => {
            let members: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}:{}", text(k), escape_all(v)))
                .collect();
            format!("{{{}}}", members.join(","))
        }
        other => other.to_string(),
    }
}

/// `method path` with `body` as `ctype`: the status and the answer.
async fn send(s: &Server, method: &str, path: &str, ctype: &str, body: String) -> (u16, Value) {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    send_raw(method, &format!("{}{path}", s.url), ctype, body).await
}

const JSON: &str = "application/json";
const NDJSON: &str = "application/x-ndjson";

/// `ms` as RFC 3339 with a `+08:00` offset, as a caller in Shanghai writes it.
fn at_plus_8(ms: i64) -> String {
    let offset = jiff::tz::Offset::constant(8);
    let t = jiff::Timestamp::from_millisecond(ms)
        .unwrap()
        .to_zoned(jiff::tz::TimeZone::fixed(offset));
    t.strftime("%Y-%m-%dT%H:%M:%S%:z").to_string()
}

#[track_caller]
fn ok(status: u16, body: &Value, want: u16) {
    assert_eq!(status, want, "{body}");
}

#[track_caller]
fn refused(status: u16, body: &Value, code: &str, field: &str) {
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], code, "{body}");
    assert_eq!(body["error"]["field"], field, "{body}");
}

// ---- Item 6: any valid JSON string, everywhere ----

/// The send log of job `id` once it holds `n` rows.
async fn job_sends(s: &Server, id: &Value, n: usize) -> Vec<Value> {
    let path = format!("/v1/jobs/{id}/sends");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let rows = s.get(&path).await.1["sends"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if rows.len() >= n {
            return rows;
        }
        assert!(std::time::Instant::now() < deadline, "{path}: {rows:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A server whose reminders go to the `log` channel.
async fn server_on(store: Option<&str>) -> Server {
    let extra = "[reminders]\ndefault_channel = \"log\"\n";
    match store {
        None => Server::start(extra).await,
        Some(url) => Server::start_on(url, tempfile::tempdir().unwrap(), extra).await,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_string_of_every_json_route_may_be_escaped() {
    let s = server_on(None).await;
    let soon = now_ms() + 3_600_000;

    // POST /v1/timers: the .NET way of writing a positive offset, and every
    // other character escaped too. The same key written plainly finds it.
    let timer = json!({"fire_at": "2030-01-01T09:00:00+08:00", "channel": "log",
        "recipient": "r-é😀", "message": {"text": "héllo 😀", "n": 1, "list": ["a", {"b": "c"}]},
        "idempotency_key": "key-1", "priority": 3, "on_conflict": "return"});
    let (st, v) = send(&s, "POST", "/v1/timers", JSON, escape_all(&timer)).await;
    ok(st, &v, 201);
    let id = v["id"].as_i64().unwrap();
    let t = s.timer(id).await;
    assert_eq!(t["due_at"], "2030-01-01T01:00:00.000Z");
    for field in [
        "recipient",
        "message",
        "priority",
        "idempotency_key",
        "channel",
    ] {
        assert_eq!(t[field], timer[field], "{field}");
    }
    let (st, v) = s.post("/v1/timers", &timer).await;
    ok(st, &v, 200);
    assert_eq!(v["id"], id, "the plain key is the escaped one");

    // PATCH /v1/timers/{id}.
    let patch = json!({"fire_at": "2031-01-01T09:00:00+08:00",
        "message": {"text": "ünï 😀"}, "priority": 5});
    let (st, v) = send(
        &s,
        "PATCH",
        &format!("/v1/timers/{id}"),
        JSON,
        escape_all(&patch),
    )
    .await;
    ok(st, &v, 200);
    let t = s.timer(id).await;
    assert_eq!(t["due_at"], "2031-01-01T01:00:00.000Z");
    assert_eq!(
        (&t["message"], &t["priority"]),
        (&patch["message"], &json!(5))
    );

    // POST /v1/timers:bulk: one escaped line.
    let mut line = timer.clone();
    line["idempotency_key"] = json!("key-2");
    let (st, out) = s.bulk(&escape_all(&line)).await;
    assert_eq!((st, &out[0]["status"]), (200, &json!(201)), "{out:?}");
    let t = s.timer(out[0]["id"].as_i64().unwrap()).await;
    assert_eq!(
        (&t["recipient"], &t["message"]),
        (&line["recipient"], &line["message"])
    );

    // POST /v1/timers:retry: the same filter, the same answer.
    let retry = json!({"state": "dead", "channel": "log", "error": "é",
        "due_after": "2020-01-01T00:00:00+08:00", "due_before": "2040-01-01T00:00:00+08:00"});
    let (st, escaped) = send(&s, "POST", "/v1/timers:retry", JSON, escape_all(&retry)).await;
    ok(st, &escaped, 200);
    assert_eq!(escaped, s.post("/v1/timers:retry", &retry).await.1);

    // PUT /v1/subjects/{id}.
    let subject = json!({"start_at": "2030-01-01T09:00:00+08:00", "title": "Sälé 😀",
        "data": {"k": "v😀", "deep": [{"x": "é"}]}});
    let (st, v) = send(&s, "PUT", "/v1/subjects/s-1", JSON, escape_all(&subject)).await;
    ok(st, &v, 201);
    assert_eq!(v["start_at"], "2030-01-01T01:00:00.000Z");
    assert_eq!(
        (&v["title"], &v["data"]),
        (&subject["title"], &subject["data"])
    );

    // POST /v1/reminders and :bulk: the plain request then conflicts.
    let reminder = json!({"user_id": "u-1", "subject_id": "s-1", "channel_type": "app",
        "lead_minutes": 5, "channel": "log"});
    let (st, v) = send(&s, "POST", "/v1/reminders", JSON, escape_all(&reminder)).await;
    ok(st, &v, 201);
    assert_eq!(
        (&v["user_id"], &v["channel"]),
        (&json!("u-1"), &json!("log"))
    );
    ok(
        s.post("/v1/reminders", &reminder).await.0,
        &Value::Null,
        409,
    );
    let mut line = reminder.clone();
    line["user_id"] = json!("u-2");
    let (st, out) = s.bulk_at("/v1/reminders:bulk", &escape_all(&line)).await;
    assert_eq!((st, &out[0]["status"]), (200, &json!(201)), "{out:?}");
    ok(s.post("/v1/reminders", &line).await.0, &Value::Null, 409);

    // PUT, PATCH and :bulk of /v1/subscribers.
    let profile = json!({"timezone": "Asia/Shanghai", "locale": "zh-CN",
        "addresses": {"email": "a@example.com", "webhook": {"x": "ü😀"}}});
    let (st, v) = send(&s, "PUT", "/v1/subscribers/u-1", JSON, escape_all(&profile)).await;
    assert!(st == 200 || st == 201, "{v}");
    assert_eq!(
        (&v["timezone"], &v["addresses"]),
        (&profile["timezone"], &profile["addresses"])
    );
    let (st, v) = send(
        &s,
        "PATCH",
        "/v1/subscribers/u-1",
        JSON,
        escape_all(&json!({"locale": "en-US"})),
    )
    .await;
    ok(st, &v, 200);
    assert_eq!(v["locale"], "en-US");
    let line = json!({"user_id": "u-3", "timezone": "Europe/Berlin"});
    let (st, out) = s.bulk_at("/v1/subscribers:bulk", &escape_all(&line)).await;
    assert_eq!(st, 200, "{out:?}");
    assert!(
        out[0]["status"] == 200 || out[0]["status"] == 201,
        "{out:?}"
    );
    assert_eq!(
        s.get("/v1/subscribers/u-3").await.1["timezone"],
        "Europe/Berlin"
    );

    // POST and PUT /v1/rules; POST /v1/schedules:preview.
    let schedule = json!({"type": "cron", "cron": "0 9 * * 1-5", "timezone": "Asia/Shanghai",
        "exclude_dates": ["2030-01-01"], "start_at": "2029-01-01T00:00:00+08:00"});
    let rule = json!({"name": "rule 😀", "schedule": schedule, "audience": {"users": ["a", "b😀"]},
        "channel": "log", "message": {"t": "x😀"}});
    let (st, v) = send(&s, "POST", "/v1/rules", JSON, escape_all(&rule)).await;
    ok(st, &v, 201);
    for field in ["name", "schedule", "audience", "message"] {
        assert_eq!(v[field], rule[field], "{field}");
    }
    let rule_id = v["id"].as_i64().unwrap();
    let mut renamed = rule.clone();
    renamed["name"] = json!("règle");
    let (st, v) = send(
        &s,
        "PUT",
        &format!("/v1/rules/{rule_id}"),
        JSON,
        escape_all(&renamed),
    )
    .await;
    ok(st, &v, 200);
    assert_eq!((&v["name"], &v["version"]), (&json!("règle"), &json!(2)));
    let preview = json!({"schedule": schedule, "count": 3, "from": "2030-01-01T00:00:00+08:00"});
    let (st, escaped) = send(
        &s,
        "POST",
        "/v1/schedules:preview",
        JSON,
        escape_all(&preview),
    )
    .await;
    ok(st, &escaped, 200);
    assert_eq!(escaped, s.post("/v1/schedules:preview", &preview).await.1);
    assert_eq!(
        escaped["instants"][0], "2030-01-02T01:00:00.000Z",
        "{escaped}"
    );

    // POST /v1/jobs, with a deadline written at +08:00.
    let deadline_ms = (soon / 1000) * 1000;
    let job = json!({"users": ["j-1", "j-2😀"], "channel": "log", "message": {"t": "y😀"},
        "deadline": at_plus_8(deadline_ms), "priority": 4});
    let (st, v) = send(&s, "POST", "/v1/jobs", JSON, escape_all(&job)).await;
    ok(st, &v, 201);
    assert_eq!(
        (&v["message"], &v["priority"]),
        (&job["message"], &json!(4))
    );
    assert_eq!(v["deadline"], rfc3339(deadline_ms));
    let sends = job_sends(&s, &v["id"], 2).await;
    let recipients: Vec<&Value> = sends.iter().map(|r| &r["recipient"]).collect();
    assert_eq!(recipients, [&json!("j-1"), &json!("j-2😀")]);

    // POST /v1/channels/{name}:pause.
    let pause = json!({"until": at_plus_8(deadline_ms), "reason": "maintenance ü😀"});
    let (st, v) = send(
        &s,
        "POST",
        "/v1/channels/log:pause",
        JSON,
        escape_all(&pause),
    )
    .await;
    ok(st, &v, 200);
    assert_eq!(v["paused"]["reason"], pause["reason"], "{v}");
    let (st, v) = send(&s, "POST", "/v1/channels/log:resume", JSON, String::new()).await;
    ok(st, &v, 200);

    // POST /v1/receipts: the plain receipt is then a repeat of the escaped one.
    let (st, v) = s
        .post(
            "/v1/timers",
            &json!({"delay_ms": 0, "channel": "log", "recipient": "rc",
            "message": {}, "idempotency_key": "rcpt-1"}),
        )
        .await;
    ok(st, &v, 201);
    let rid = v["id"].as_i64().unwrap();
    wait_for(
        "the receipt's timer to be delivered",
        Duration::from_secs(20),
        || async { s.timer(rid).await["state"] == "done" },
    )
    .await;
    let receipt = json!({"idempotency_key": "rcpt-1", "event": "delivered",
        "at": at_plus_8(now_ms() - 1_000)});
    let (st, v) = send(&s, "POST", "/v1/receipts", JSON, escape_all(&receipt)).await;
    ok(st, &v, 200);
    assert_eq!(v["recorded"], true, "{v}");
    assert_eq!(s.post("/v1/receipts", &receipt).await.1["recorded"], false);

    // POST /v1/audiences: an escaped NDJSON line is the same recipient.
    let (st, v) = send(
        &s,
        "POST",
        "/v1/audiences",
        NDJSON,
        escape_all(&json!({"recipient": "aud-😀"})),
    )
    .await;
    ok(st, &v, 201);
    let (st, v) = s
        .post(
            "/v1/jobs",
            &json!({"audience_id": v["id"], "channel": "log", "message": {}}),
        )
        .await;
    ok(st, &v, 201);
    let sends = job_sends(&s, &v["id"], 1).await;
    assert_eq!(sends[0]["recipient"], "aud-😀");

    // POST /v1/keys, last: a key protects the server from then on.
    let key = json!({"tenant": "t-esc", "scopes": ["read", "write"], "name": "key é",
        "expires_at": "2030-01-01T09:00:00+08:00"});
    let (st, v) = send(&s, "POST", "/v1/keys", JSON, escape_all(&key)).await;
    ok(st, &v, 201);
    assert_eq!((&v["tenant"], &v["name"]), (&key["tenant"], &key["name"]));
    assert_eq!(v["expires_at"], "2030-01-01T01:00:00.000Z");
}

// ---- Item 8: one object, nothing after it ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_is_one_object_and_nothing_else() {
    let s = server_on(None).await;
    let start = rfc3339(now_ms() + 3_600_000);
    let schedule = json!({"type": "cron", "cron": "0 9 * * *", "timezone": "UTC"});
    // Each route with a JSON body, with a body it takes.
    let routes: Vec<(&str, &str, Value)> = vec![
        (
            "POST",
            "/v1/timers",
            json!({"delay_ms": 1000, "channel": "log", "recipient": "r", "message": {}}),
        ),
        ("POST", "/v1/timers:retry", json!({"state": "dead"})),
        ("PUT", "/v1/subjects/s-1", json!({"start_at": start})),
        (
            "POST",
            "/v1/reminders",
            json!({"user_id": "u", "subject_id": "s-1", "channel_type": "app", "lead_minutes": 5}),
        ),
        ("PUT", "/v1/subscribers/u-1", json!({"timezone": "UTC"})),
        (
            "POST",
            "/v1/rules",
            json!({"name": "r", "schedule": schedule, "audience": {"users": ["a"]}, "channel": "log", "message": {}}),
        ),
        (
            "POST",
            "/v1/schedules:preview",
            json!({"schedule": schedule}),
        ),
        (
            "POST",
            "/v1/jobs",
            json!({"users": ["a"], "channel": "log", "message": {}}),
        ),
        ("POST", "/v1/channels/log:pause", json!({"reason": "x"})),
        (
            "POST",
            "/v1/receipts",
            json!({"delivery_id": 1, "event": "read"}),
        ),
        (
            "POST",
            "/v1/keys",
            json!({"tenant": "t", "scopes": ["read"]}),
        ),
    ];
    for (method, path, body) in &routes {
        let (st, v) = send(&s, method, path, JSON, format!("{body} xyz")).await;
        refused(st, &v, "malformed_json", "body");
        let (st, v) = send(&s, method, path, JSON, format!("{body}{body}")).await;
        refused(st, &v, "malformed_json", "body");
        // The values in declaration order, as serde would have taken them.
        let positional: Vec<&Value> = body.as_object().unwrap().values().collect();
        let (st, v) = send(&s, method, path, JSON, json!(positional).to_string()).await;
        refused(st, &v, "malformed_json", "body");
    }
    // The reported reproductions.
    let (st, v) = send(
        &s,
        "POST",
        "/v1/timers",
        JSON,
        r#"[null,1000,"log","positional",null,null,null,null,{},null,null,null]"#.into(),
    )
    .await;
    refused(st, &v, "malformed_json", "body");
    let (st, v) = send(
        &s,
        "POST",
        "/v1/receipts",
        JSON,
        r#"[null,"herald-job-1-0","read"]"#.into(),
    )
    .await;
    refused(st, &v, "malformed_json", "body");
    // A struct inside the body is an object too.
    let (st, v) = s
        .post(
            "/v1/timers",
            &json!({"delay_ms": 1000, "channel": "log", "to": ["u-1", "email"], "message": {}}),
        )
        .await;
    assert_eq!((st, &v["error"]["field"]), (400, &json!("to")), "{v}");
    let mut rule = routes[5].2.clone();
    rule["schedule"] = json!(["cron", "0 9 * * *", "UTC"]);
    let (st, v) = s.post("/v1/rules", &rule).await;
    assert_eq!((st, &v["error"]["field"]), (400, &json!("schedule")), "{v}");
    rule["schedule"] = schedule.clone();
    rule["audience"] = json!([["a"]]);
    let (st, v) = s.post("/v1/rules", &rule).await;
    assert_eq!((st, &v["error"]["field"]), (400, &json!("audience")), "{v}");

    // NDJSON lines: each one object, alone on its line.
    let good = json!({"delay_ms": 1000, "channel": "log", "recipient": "r", "message": {}});
    let lines = format!("{good}\n{good} xyz\n[1000]\n{good}\n");
    let (st, out) = s.bulk(&lines).await;
    assert_eq!(st, 200);
    let statuses: Vec<&Value> = out.iter().map(|l| &l["status"]).collect();
    assert_eq!(
        statuses,
        [&json!(201), &json!(400), &json!(400), &json!(201)],
        "{out:?}"
    );
    let (st, v) = send(
        &s,
        "POST",
        "/v1/audiences",
        NDJSON,
        "{\"recipient\":\"a\"}\n[\"b\"]\n".into(),
    )
    .await;
    assert_eq!(st, 400, "{v}");

    // Nothing was written by what was refused.
    assert_eq!(s.total_timers().await, 2);
    assert_eq!(s.get("/v1/subjects/s-1").await.0, 404);
    assert_eq!(s.get("/v1/rules").await.1["rules"], json!([]));
    assert_eq!(s.get("/v1/jobs").await.1["jobs"], json!([]));
    assert_eq!(s.get("/v1/subscribers/u-1").await.0, 404);
    assert_eq!(
        s.get("/v1/channels").await.1["channels"][0]["paused"],
        Value::Null
    );
    assert_eq!(s.get("/v1/keys").await.1["keys"], json!([]));
}

// ---- Items 7 and 9: stored documents deliver as stored, or are refused ----

/// `{"a":{"a":...{"z": inner}...}}`, `depth` objects deep.
fn nested(depth: usize, inner: &str) -> String {
    format!(
        "{}{{\"z\":{inner}}}{}",
        "{\"a\":".repeat(depth - 1),
        "}".repeat(depth - 1)
    )
}

async fn documents_that_would_not_deliver_are_refused(s: &Server) {
    let start = rfc3339(now_ms() + 3_600_000);
    let lone = r#"{"t":"cut here \ud83d"}"#;
    let deep = nested(65, "1");
    let nul_deep = nested(200, r#""\u0000""#);
    let timer =
        |m: &str| format!(r#"{{"delay_ms":1000,"channel":"log","recipient":"r","message":{m}}}"#);
    for (doc, field_starts) in [
        (lone, "message.t"),
        (deep.as_str(), "message.a.a"),
        (nul_deep.as_str(), "message.a.a"),
    ] {
        let (st, v) = send(s, "POST", "/v1/timers", JSON, timer(doc)).await;
        assert_eq!(st, 400, "{v}");
        assert_eq!(v["error"]["code"], "invalid_field", "{v}");
        let field = v["error"]["field"].as_str().unwrap();
        assert!(field.starts_with(field_starts), "{field}");
        let (st, out) = s.bulk(&timer(doc)).await;
        assert_eq!((st, &out[0]["status"]), (200, &json!(400)), "{out:?}");
    }
    let (st, v) = send(s, "POST", "/v1/timers", JSON, timer(lone)).await;
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("surrogate"),
        "{st} {v}"
    );
    let (_, v) = send(s, "POST", "/v1/timers", JSON, timer(&deep)).await;
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("deeper than 64"),
        "{v}"
    );
    // A NUL below the limit is named where it is.
    let (st, v) = send(
        s,
        "POST",
        "/v1/timers",
        JSON,
        timer(&nested(60, r#"["ok","\u0000"]"#)),
    )
    .await;
    assert_eq!(st, 400, "{v}");
    let field = v["error"]["field"].as_str().unwrap();
    assert!(
        field.ends_with(".a.z[1]") && field.starts_with("message.a"),
        "{field}"
    );

    // Subject data, where the attack run found it.
    for doc in [lone, deep.as_str(), nul_deep.as_str()] {
        let body = format!(r#"{{"start_at":"{start}","data":{doc}}}"#);
        let (st, v) = send(s, "PUT", "/v1/subjects/s-doc", JSON, body).await;
        assert_eq!(st, 400, "{v}");
        assert!(
            v["error"]["field"].as_str().unwrap().starts_with("data."),
            "{v}"
        );
    }
    assert_eq!(s.get("/v1/subjects/s-doc").await.0, 404);

    // A pending timer's new message, a rule's, a job's, a subscriber's data.
    let (st, v) = s
        .post(
            "/v1/timers",
            &json!({"delay_ms": 3_600_000, "channel": "log",
        "recipient": "r", "message": {"ok": true}}),
        )
        .await;
    ok(st, &v, 201);
    let id = v["id"].as_i64().unwrap();
    let (st, v) = send(
        s,
        "PATCH",
        &format!("/v1/timers/{id}"),
        JSON,
        format!(r#"{{"message":{lone}}}"#),
    )
    .await;
    refused(st, &v, "invalid_field", "message.t");
    assert_eq!(s.timer(id).await["message"], json!({"ok": true}));
    let rule = |m: &str| {
        format!(
            r#"{{"name":"r","schedule":{{"type":"immediate"}},"audience":{{"users":["a"]}},"channel":"log","message":{m}}}"#
        )
    };
    let job = |m: &str| format!(r#"{{"users":["a"],"channel":"log","message":{m}}}"#);
    for doc in [lone, deep.as_str(), nul_deep.as_str()] {
        let (st, v) = send(s, "POST", "/v1/rules", JSON, rule(doc)).await;
        assert!(
            st == 400
                && v["error"]["field"]
                    .as_str()
                    .unwrap()
                    .starts_with("message."),
            "{v}"
        );
        let (st, v) = send(s, "POST", "/v1/jobs", JSON, job(doc)).await;
        assert!(
            st == 400
                && v["error"]["field"]
                    .as_str()
                    .unwrap()
                    .starts_with("message."),
            "{v}"
        );
    }
    let webhook = format!(r#"{{"addresses":{{"webhook":{}}}}}"#, nested(70, "1"));
    let (st, v) = send(s, "PUT", "/v1/subscribers/u-doc", JSON, webhook).await;
    assert_eq!(st, 400, "{v}");
    assert!(
        v["error"]["field"]
            .as_str()
            .unwrap()
            .starts_with("addresses.webhook.a"),
        "{v}"
    );
    assert_eq!(s.get("/v1/rules").await.1["rules"], json!([]));
    assert_eq!(s.get("/v1/jobs").await.1["jobs"], json!([]));
    assert_eq!(s.get("/v1/subscribers/u-doc").await.0, 404);
    assert_eq!(s.total_timers().await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn documents_that_would_not_deliver_are_refused_on_sqlite() {
    let s = server_on(None).await;
    documents_that_would_not_deliver_are_refused(&s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn documents_that_would_not_deliver_are_refused_on_postgres() {
    let Some((_db, store)) = pg_database("input_docs") else {
        eprintln!("PostgreSQL not installed: skipped");
        return;
    };
    let s = server_on(Some(&store)).await;
    documents_that_would_not_deliver_are_refused(&s).await;
}

/// What a subject's data holds at the deepest level allowed reaches the
/// webhook as it was stored, not as `null`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subject_data_at_the_limit_is_delivered_as_stored() {
    let mock = Mock::start(&[]).await;
    let top = "[reminders]\n[reminders.channels]\napp = \"hooks\"\n";
    let s = Server::start(&Server::webhook_config(&mock.hook(), "", top)).await;
    let start = now_ms() + 300_000 + 2_000;
    let data: Value = serde_json::from_str(&nested(64, r#""😀 \ud83d\ude00""#)).unwrap();
    let (st, v) = s
        .put(
            "/v1/subjects/deep",
            &json!({"start_at": rfc3339(start), "data": data}),
        )
        .await;
    ok(st, &v, 201);
    assert_eq!(v["data"], data);
    let (st, v) = s
        .post(
            "/v1/reminders",
            &json!({"user_id": "alice", "subject_id": "deep",
            "channel_type": "app", "lead_minutes": 5}),
        )
        .await;
    ok(st, &v, 201);
    wait_for(
        "the reminder to be delivered",
        Duration::from_secs(30),
        || async { mock.stats().await["unique_delivered"].as_u64().unwrap_or(0) >= 1 },
    )
    .await;
    let got = mock.requests(None).await;
    assert_eq!(got[0]["body"]["message"]["data"], data);
}

// ---- Item 10: query parameters ----

/// A path of the route table with its `{...}` segments filled in.
fn concrete(path: &str) -> String {
    path.replace("/v1/timers/{id}", "/v1/timers/1")
        .replace("{id}", "1")
        .replace("{subject_id}", "s-1")
        .replace("{user_id}", "u-1")
        .replace("{name}", "log")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_and_repeated_query_parameters_are_refused() {
    let s = server_on(None).await;
    let (st, v) = s
        .post(
            "/v1/timers",
            &json!({"delay_ms": 3_600_000, "channel": "log", "recipient": "r", "message": {}}),
        )
        .await;
    ok(st, &v, 201);
    let id = v["id"].as_i64().unwrap();

    // The reported one: a mistyped filter no longer lists everything.
    let (st, v) = s.get("/v1/timers?stat=dead").await;
    refused(st, &v, "invalid_query", "stat");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("`state`"),
        "{v}"
    );
    let (st, v) = s.get("/v1/timers?state=dead&state=pending").await;
    refused(st, &v, "invalid_query", "state");
    let (st, v) = s.get("/v1/timers?state=pending&limit=5").await;
    assert_eq!(
        (st, v["timers"].as_array().map(Vec::len)),
        (200, Some(1)),
        "{v}"
    );
    // A listing paged by `before` does not take `after`.
    let (st, v) = s.get("/v1/jobs?after=1").await;
    refused(st, &v, "invalid_query", "after");
    // A route that takes none refuses any, and does nothing.
    let (st, v) = s.delete(&format!("/v1/timers/{id}?dry_run=1")).await;
    refused(st, &v, "invalid_query", "dry_run");
    assert_eq!(s.timer(id).await["state"], "pending");

    // Every route of the table, but the providers' callbacks (whose
    // parameters the provider chooses).
    for route in herald_server::ROUTES {
        if !route.path.starts_with("/v1/") || route.path.ends_with("/callback") {
            continue;
        }
        let mut path = concrete(route.path);
        let method = route.verb.as_str();
        if method == "POST" && (route.path.ends_with("/{id}") || route.path.ends_with("/{name}")) {
            let verb = match route.path {
                p if p.starts_with("/v1/timers") => "retry",
                p if p.starts_with("/v1/rules") => "enable",
                p if p.starts_with("/v1/jobs") => "cancel",
                p if p.starts_with("/v1/channels") => "resume",
                _ => "recall",
            };
            path = format!("{path}:{verb}");
        }
        let ctype = if route.path.ends_with(":bulk") || route.path == "/v1/audiences" {
            NDJSON
        } else {
            JSON
        };
        let (st, v) = send(&s, method, &format!("{path}?zzz=1"), ctype, "{}".into()).await;
        assert_eq!(
            (st, &v["error"]["code"], &v["error"]["field"]),
            (400, &json!("invalid_query"), &json!("zzz")),
            "{method} {path}: {v}"
        );
    }
    assert_eq!(s.timer(id).await["state"], "pending");
}

// ---- Item 13: rules that could never fire, or fire too often ----

fn rule_with(cron: &str) -> Value {
    json!({"name": "r", "schedule": {"type": "cron", "cron": cron, "timezone": "Europe/Berlin"},
        "audience": {"users": ["a"]}, "channel": "log", "message": {}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_that_cannot_fire_or_fire_too_often_are_refused() {
    let s = server_on(None).await;
    for (cron, says) in [
        ("0 0 30 2 *", "matches no date"),
        ("* * * * * *", "rule_min_interval_secs"),
    ] {
        let (st, v) = s.post("/v1/rules", &rule_with(cron)).await;
        refused(st, &v, "invalid_schedule", "schedule.cron");
        assert!(
            v["error"]["message"].as_str().unwrap().contains(says),
            "{v}"
        );
        let (st, v) = s
            .post(
                "/v1/schedules:preview",
                &json!({"schedule": rule_with(cron)["schedule"]}),
            )
            .await;
        refused(st, &v, "invalid_schedule", "schedule.cron");
    }
    let mut ended = rule_with("0 9 * * *");
    ended["schedule"]["end_at"] = json!(rfc3339(now_ms() - 86_400_000));
    let (st, v) = s.post("/v1/rules", &ended).await;
    refused(st, &v, "invalid_schedule", "schedule.end_at");
    assert_eq!(s.get("/v1/rules").await.1["rules"], json!([]));
    // Once a minute, and rare dates, are fine.
    for cron in ["0 * * * * *", "0 0 29 2 *"] {
        let (st, v) = s.post("/v1/rules", &rule_with(cron)).await;
        ok(st, &v, 201);
    }

    // The CLI goes through the same checks.
    let file = s.dir.path().join("never.json");
    std::fs::write(&file, rule_with("0 0 30 2 *").to_string()).unwrap();
    let file = file.to_str().unwrap();
    for cmd in [
        vec!["create", "--file", file],
        vec!["preview", "--file", file],
    ] {
        let (success, out, err) = herald_cli("rules", &s.url, &cmd).await;
        assert!(!success, "{cmd:?}: {out}");
        assert!(
            format!("{out}{err}").contains("schedule.cron"),
            "{cmd:?}: {out} {err}"
        );
    }
}

/// A rule stored under a lower floor (or none, before the floor existed)
/// keeps sending after the floor rises, and may be edited without changing
/// its schedule; a changed schedule must meet the floor.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rule_below_a_raised_floor_keeps_working() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite://{}", dir.path().join("herald.db").display());
    let mut before = Server::start_on(
        &store,
        tempfile::tempdir().unwrap(),
        "[api]\nrule_min_interval_secs = 0\n",
    )
    .await;
    let every_10s = rule_with("*/10 * * * * *");
    let (st, v) = before.post("/v1/rules", &every_10s).await;
    ok(st, &v, 201);
    let id = v["id"].as_i64().unwrap();
    before.terminate().await;

    let after = Server::start_on(&store, tempfile::tempdir().unwrap(), "").await;
    let (st, v) = after.get(&format!("/v1/rules/{id}")).await;
    ok(st, &v, 200);
    assert_eq!(v["status"], "enabled", "{v}");
    assert!(v["next_run_at"].is_string(), "{v}");
    let ran = || async {
        let (_, t) = after.get(&format!("/v1/rules/{id}/tasks")).await;
        let tasks = t["tasks"].as_array().cloned().unwrap_or_default();
        tasks.iter().filter(|t| t["job_id"].is_i64()).count()
    };
    let before_restart = ran().await;
    wait_for(
        "the rule to run under the new floor",
        Duration::from_secs(40),
        || async { ran().await > before_restart },
    )
    .await;
    let mut renamed = every_10s.clone();
    renamed["name"] = json!("renamed");
    let (st, v) = after.put(&format!("/v1/rules/{id}"), &renamed).await;
    ok(st, &v, 200);
    renamed["schedule"]["cron"] = json!("*/5 * * * * *");
    let (st, v) = after.put(&format!("/v1/rules/{id}"), &renamed).await;
    refused(st, &v, "invalid_schedule", "schedule.cron");
}

// ---- Item 14: offsets, the console's names, its errors ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_are_rfc_3339s() {
    let s = server_on(None).await;
    let timer =
        |at: &str| json!({"fire_at": at, "channel": "log", "recipient": "r", "message": {}});
    for bad in [
        "2030-01-01T09:00:00+25:00",
        "2030-01-01T09:00:00-24:00",
        "2030-01-01T09:00:00+08:00:30",
    ] {
        let (st, v) = s.post("/v1/timers", &timer(bad)).await;
        refused(st, &v, "invalid_field", "fire_at");
        assert!(
            v["error"]["message"].as_str().unwrap().contains("offset"),
            "{v}"
        );
    }
    let (st, v) = s
        .post("/v1/timers", &timer("2030-01-01T09:00:00+23:59"))
        .await;
    ok(st, &v, 201);
    assert_eq!(v["due_at"], "2029-12-31T09:01:00.000Z");
    assert_eq!(s.total_timers().await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_errors_are_json() {
    let s = server_on(None).await;
    let (st, v) = s.get("/ui/assets/nope.js").await;
    assert_eq!((st, &v["error"]["code"]), (404, &json!("not_found")), "{v}");
    let (st, v) = send(&s, "POST", "/ui/timers", JSON, "{}".into()).await;
    assert_eq!(
        (st, &v["error"]["code"]),
        (405, &json!("method_not_allowed")),
        "{v}"
    );
    let (st, v) = send(&s, "DELETE", "/ui/assets/app.js", JSON, String::new()).await;
    assert_eq!(
        (st, &v["error"]["code"]),
        (405, &json!("method_not_allowed")),
        "{v}"
    );
    // The pages people read stay HTML.
    let resp = client()
        .get(format!("{}/ui/timers", s.url))
        .send()
        .await
        .unwrap();
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
}

/// The console's own script, as the binary serves it, run in node against
/// a minimal DOM: what reaches the page shows bidirectional controls and
/// zero-width characters escaped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_shows_hidden_characters_escaped() {
    let node = ["/usr/bin/node", "/usr/local/bin/node"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists());
    let Some(node) = node else {
        eprintln!(
            "\n\n!!!!!!!! SKIPPED: `node` is not installed; the console's escaping is not checked !!!!!!!!\n\n"
        );
        return;
    };
    let s = server_on(None).await;
    let script = client()
        .get(format!("{}/ui/assets/app.js", s.url))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let harness = r#"
function Node() { this.childNodes = []; this.attrs = {}; this.textContent = ""; }
Node.prototype.appendChild = function (c) { this.childNodes.push(c); this.textContent += c.textContent; return c; };
Node.prototype.setAttribute = function (k, v) { this.attrs[k] = v; };
Node.prototype.addEventListener = function () {};
global.Node = Node;
global.window = { addEventListener: function () {} };
global.document = {
  createElement: function () { return new Node(); },
  createTextNode: function (t) { var n = new Node(); n.textContent = t; return n; },
  querySelector: function () { return null; },
  addEventListener: function () {},
};
global.localStorage = { getItem: function () { return null; } };
"#;
    let check = r#"
var out = {
  child: H.el("td", null, "invoice\u202Efdp.exe").textContent,
  text: H.el("td", { text: "zero\u200Bwidth\u2066x\u2069" }).textContent,
  title: H.el("div", { title: "a\u200Fb" }).attrs.title,
  plain: H.el("td", null, "名前 é 😀").textContent,
};
console.log(JSON.stringify(out));
"#;
    let file = s.dir.path().join("console.js");
    std::fs::write(&file, format!("{harness}\n{script}\n{check}")).unwrap();
    let out = tokio::process::Command::new(node)
        .arg(&file)
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        got,
        json!({
            "child": "invoice\\u{202E}fdp.exe",
            "text": "zero\\u{200B}width\\u{2066}x\\u{2069}",
            "title": "a\\u{200F}b",
            "plain": "名前 é 😀",
        })
    );
}
