//! Fallback routes (issue 39 §2) against the real binary and the mock sink,
//! on both stores: a timer `to` a user with a `route` goes on to the next
//! step when its step ends in an outcome the next one lists (no address,
//! opted out, a failed send, unread after `after`), and stops there
//! otherwise; a read receipt stops an `unread` step; each step's outcome is
//! in the send log with its step; a `kill -9` between steps loses no step
//! and sends none twice.

use crate::common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};

/// Webhook channels standing for a WeChat account, e-mail and SMS (each to
/// its own path of the mock), and one whose sends the mock refuses.
fn config(mock: &Mock, top: &str) -> String {
    let hook = mock.hook();
    let mut cfg = format!("{top}\n");
    for name in ["wechat", "email", "sms"] {
        cfg.push_str(&format!(
            "[[channels]]\nname = \"{name}\"\nkind = \"webhook\"\nurl = \"{hook}/{name}\"\n"
        ));
    }
    cfg.push_str(&format!(
        "[[channels]]\nname = \"broken\"\nkind = \"webhook\"\nurl = \"{}/refused\"\n",
        mock.url
    ));
    cfg
}

async fn subscriber(s: &Server, user: &str, profile: Value) {
    let (st, v) = s.put(&format!("/v1/subscribers/{user}"), &profile).await;
    assert!(st == 200 || st == 201, "{user}: {st} {v}");
}

/// Creates a timer to `user` through `route`, due in `delay_ms`.
async fn routed(s: &Server, user: &str, route: Value, delay_ms: i64) -> i64 {
    let (st, v) = s
        .post(
            "/v1/timers",
            &json!({"delay_ms": delay_ms, "to": {"user_id": user},
                    "message": {"text": "your parcel is at the door"}, "route": route}),
        )
        .await;
    assert_eq!(st, 201, "{v}");
    v["id"].as_i64().unwrap()
}

/// The timer's send log as `(step, channel, outcome)`.
async fn steps(s: &Server, id: i64) -> Vec<(i64, String, String)> {
    let d = s.get(&format!("/v1/timers/{id}/deliveries")).await.1;
    d["deliveries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["step"].as_i64().unwrap_or(-1),
                r["channel"].as_str().unwrap_or("").to_string(),
                r["outcome"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// Waits until the timer has reached a final state; answers it.
async fn settled(s: &Server, id: i64) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let t = s.timer(id).await;
        if !matches!(t["state"].as_str(), Some("pending" | "firing")) {
            return t;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timer {id} never settled: {t}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The paths of the mock that got a request with `key`.
async fn paths(mock: &Mock, key: &str) -> Vec<String> {
    mock.requests(Some(key))
        .await
        .iter()
        .filter(|r| r["status"].as_u64().is_some_and(|s| s < 300))
        .map(|r| r["path"].as_str().unwrap_or("").to_string())
        .collect()
}

fn step(ch: &str, on: &[&str]) -> Value {
    json!({"channel_type": ch, "on": on})
}

fn row(step: i64, channel: &str, outcome: &str) -> (i64, String, String) {
    (step, channel.to_string(), outcome.to_string())
}

async fn scenario(store: Option<String>) {
    let mock = Mock::start(&[]).await;
    let cfg = config(&mock, "[reminders]\nleads_minutes = [0, 5]\n");
    let s = match store {
        Some(url) => Server::start_on(&url, tempfile::tempdir().unwrap(), &cfg).await,
        None => Server::start(&cfg).await,
    };
    // ann has no WeChat address; bo opted out of WeChat; cy's WeChat is the
    // broken account; di and ed have both.
    subscriber(
        &s,
        "ann",
        json!({"addresses": {"email": "ann@example.com"}}),
    )
    .await;
    subscriber(
        &s,
        "bo",
        json!({"addresses": {"wechat": {"wechat": "o-bo"}, "email": "bo@example.com"},
               "preferences": {"channel_types": {"wechat": false}}}),
    )
    .await;
    subscriber(
        &s,
        "cy",
        json!({"addresses": {"wechat": {"broken": "o-cy"}, "email": "cy@example.com"}}),
    )
    .await;
    for u in ["di", "ed", "fay"] {
        subscriber(
            &s,
            u,
            json!({"addresses": {"wechat": {"wechat": format!("o-{u}")}, "email": format!("{u}@example.com")}}),
        )
        .await;
    }
    let to_email = step("email", &["no_address", "opted_out", "failed"]);
    let no_address = routed(&s, "ann", json!([{"channel_type": "wechat"}, to_email]), 0).await;
    let opted_out = routed(&s, "bo", json!([{"channel_type": "wechat"}, to_email]), 0).await;
    let failed = routed(
        &s,
        "cy",
        json!([{"channel": "broken", "channel_type": "wechat"}, to_email]),
        0,
    )
    .await;
    // Not listed: the first step's outcome is final.
    let final_first = routed(
        &s,
        "ann",
        json!([{"channel_type": "wechat"}, step("email", &["failed"])]),
        0,
    )
    .await;
    let unread_route = json!([{"channel_type": "wechat"},
                              {"channel_type": "email", "on": ["unread"], "after": "2s"}]);
    let unread = routed(&s, "di", unread_route, 0).await;
    // Time enough for the read receipt, on a loaded machine.
    let read_route = json!([{"channel_type": "wechat"},
                            {"channel_type": "email", "on": ["unread"], "after": "6s"}]);
    let read = routed(&s, "ed", read_route, 0).await;

    // A reminder with a route: ann has no WeChat address, so it goes by
    // e-mail, composed for that type.
    let start = rfc3339(now_ms() + 2_000);
    let (st, v) = s
        .put(
            "/v1/subjects/sale-1",
            &json!({"start_at": start, "title": "Flash sale"}),
        )
        .await;
    assert_eq!(st, 201, "{v}");
    let (st, v) = s
        .post(
            "/v1/reminders",
            &json!({"user_id": "ann", "subject_id": "sale-1", "channel_type": "wechat",
                    "lead_minutes": 0, "send_late": true,
                    "route": [{}, {"channel_type": "email", "on": ["no_address"]}]}),
        )
        .await;
    assert_eq!(st, 201, "{v}");
    let reminder = v["timer_id"].as_i64().unwrap();
    let (st, v) = s
        .post(
            "/v1/reminders",
            &json!({"user_id": "ann", "subject_id": "sale-1", "channel_type": "sms",
                    "lead_minutes": 0, "route": [{}, {"channel_type": "email"}]}),
        )
        .await;
    assert_eq!(
        (st, v["error"]["field"].as_str()),
        (400, Some("route[1].on")),
        "{v}"
    );

    // ed reads the WeChat message as soon as it arrives.
    let read_key = format!("herald-timer-{read}");
    wait_for(
        "ed's WeChat message recorded",
        Duration::from_secs(30),
        || async { steps(&s, read).await.first() == Some(&row(0, "wechat", "delivered")) },
    )
    .await;
    let (st, v) = s
        .post(
            "/v1/receipts",
            &json!({"idempotency_key": read_key, "event": "read"}),
        )
        .await;
    assert_eq!(st, 200, "{v}");

    let t = settled(&s, no_address).await;
    assert_eq!(t["state"], "done", "{t}");
    assert_eq!(t["channel"], "email", "{t}");
    assert_eq!(t["step"], 1, "{t}");
    assert_eq!(
        steps(&s, no_address).await,
        [row(0, "wechat", "no_address"), row(1, "email", "delivered")]
    );
    assert_eq!(
        paths(&mock, &format!("herald-timer-{no_address}:s1")).await,
        ["/hook/email"]
    );

    assert_eq!(settled(&s, opted_out).await["state"], "done");
    assert_eq!(
        steps(&s, opted_out).await,
        [row(0, "wechat", "opted_out"), row(1, "email", "delivered")]
    );
    assert!(
        paths(&mock, &format!("herald-timer-{opted_out}"))
            .await
            .is_empty()
    );

    assert_eq!(settled(&s, failed).await["state"], "done");
    assert_eq!(
        steps(&s, failed).await,
        [row(0, "broken", "failed"), row(1, "email", "delivered")]
    );

    let t = settled(&s, final_first).await;
    assert_eq!(t["state"], "failed", "{t}");
    assert_eq!(
        steps(&s, final_first).await,
        [row(0, "wechat", "no_address")]
    );

    let t = settled(&s, unread).await;
    assert_eq!(t["state"], "done", "{t}");
    let log = steps(&s, unread).await;
    assert_eq!(
        log,
        [row(0, "wechat", "delivered"), row(1, "email", "delivered")]
    );
    let d = s.get(&format!("/v1/timers/{unread}/deliveries")).await.1;
    let first = parse_ms(d["deliveries"][0]["finished_at"].as_str().unwrap());
    let second = parse_ms(d["deliveries"][1]["started_at"].as_str().unwrap());
    assert!(
        second - first >= 2_000,
        "the e-mail waited for `after`: {d}"
    );
    assert_eq!(
        paths(&mock, &format!("herald-timer-{unread}:s1")).await,
        ["/hook/email"]
    );

    let t = settled(&s, read).await;
    assert_eq!(t["state"], "done", "{t}");
    assert_eq!(
        steps(&s, read).await,
        [row(0, "wechat", "delivered"), row(1, "email", "read")]
    );
    assert!(
        paths(&mock, &format!("herald-timer-{read}:s1"))
            .await
            .is_empty(),
        "no e-mail after a read receipt"
    );
    // A receipt names a later step by its own key.
    let (st, v) = s
        .post(
            "/v1/receipts",
            &json!({"idempotency_key": format!("herald-timer-{unread}:s1"), "event": "read"}),
        )
        .await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["delivery_id"], d["deliveries"][1]["id"], "{v}");

    let t = settled(&s, reminder).await;
    assert_eq!(t["state"], "done", "{t}");
    assert_eq!(
        steps(&s, reminder).await,
        [row(0, "wechat", "no_address"), row(1, "email", "delivered")]
    );
    let sent = mock
        .requests(Some(&format!("herald-timer-{reminder}:s1")))
        .await;
    let body = &sent[0]["body"]["message"];
    assert_eq!(
        (body["channel_type"].as_str(), body["subject"].as_str()),
        (Some("email"), Some("Flash sale")),
        "{body}"
    );

    // Bad routes are refused naming the field, and nothing is created.
    let before = s.total_timers().await;
    for (route, field) in [
        (
            json!([{"channel_type": "wechat"}, {"channel_type": "email"}]),
            "route[1].on",
        ),
        (
            json!([{"channel_type": "wechat"}, {"channel_type": "email", "on": ["late"]}]),
            "route[1].on[0]",
        ),
        (
            json!([{"channel_type": "wechat"}, {"channel_type": "email", "on": ["unread"]}]),
            "route[1].after",
        ),
        (
            json!([{"channel_type": "wechat", "on": ["failed"]}]),
            "route[0].on",
        ),
        (
            json!([{"channel": "nope", "channel_type": "sms"}]),
            "route[0].channel",
        ),
        (json!([{"channel": "email"}]), "route[0].channel_type"),
        (json!([]), "route"),
    ] {
        let (st, v) = s
            .post(
                "/v1/timers",
                &json!({"delay_ms": 0, "to": {"user_id": "ann"}, "message": {}, "route": route}),
            )
            .await;
        assert_eq!(st, 400, "{route}: {v}");
        assert_eq!(v["error"]["field"], field, "{route}: {v}");
    }
    let (st, v) = s
        .post(
            "/v1/timers",
            &json!({"delay_ms": 0, "recipient": "x", "message": {},
                    "route": [{"channel_type": "wechat"}]}),
        )
        .await;
    assert_eq!(
        (st, v["error"]["field"].as_str()),
        (400, Some("route")),
        "{v}"
    );
    assert_eq!(s.total_timers().await, before);
}

#[tokio::test]
async fn fallback_routes_on_sqlite() {
    scenario(None).await;
}

#[tokio::test]
async fn fallback_routes_on_postgres() {
    let Some((_db, url)) = pg_database("fallback") else {
        eprintln!("PostgreSQL not installed: fallback test on PostgreSQL skipped");
        return;
    };
    scenario(Some(url)).await;
}

/// `kill -9` while timers are between their steps: the first step's outcome
/// and the move to the next were one write, so after the restart every
/// timer sends its next step once, and no first step again.
async fn crash_between_steps(store: Option<String>) {
    let mock = Mock::start(&[]).await;
    let cfg = config(&mock, "");
    let mut s = match store {
        Some(url) => Server::start_on(&url, tempfile::tempdir().unwrap(), &cfg).await,
        None => Server::start(&cfg).await,
    };
    let n = 200;
    for i in 0..n {
        subscriber(
            &s,
            &format!("u{i}"),
            json!({"addresses": {"wechat": {"wechat": format!("o-{i}")}, "email": format!("u{i}@example.com")}}),
        )
        .await;
    }
    // Each WeChat message is delivered; its e-mail follows 20 s later,
    // unread: long enough that none is due (or in flight, which a crash
    // may send again under its key) when the node is killed, even on a
    // loaded machine.
    let route = json!([{"channel_type": "wechat"},
                       {"channel_type": "email", "on": ["unread"], "after": "20s"}]);
    let mut ids = Vec::new();
    for i in 0..n {
        ids.push(routed(&s, &format!("u{i}"), route.clone(), 0).await);
    }
    // Between the steps: every first step recorded, the e-mails not due yet.
    wait_for(
        "every WeChat step recorded",
        Duration::from_secs(60),
        || async {
            for &id in &ids {
                if s.timer(id).await["step"] != 1 {
                    return false;
                }
            }
            true
        },
    )
    .await;
    s.kill9().await;
    let emails_at_kill = mock
        .requests(None)
        .await
        .iter()
        .filter(|r| r["path"] == "/hook/email")
        .count();
    s.restart().await;
    for &id in &ids {
        let t = settled(&s, id).await;
        assert_eq!(t["state"], "done", "{t}");
    }
    let requests = mock.requests(None).await;
    for &id in &ids {
        let key = format!("herald-timer-{id}");
        let wechat = requests
            .iter()
            .filter(|r| r["key"] == key.as_str() && r["path"] == "/hook/wechat")
            .count();
        let email = requests
            .iter()
            .filter(|r| r["key"] == format!("{key}:s1").as_str() && r["path"] == "/hook/email")
            .count();
        assert_eq!((wechat, email), (1, 1), "timer {id}");
        assert_eq!(
            steps(&s, id).await,
            [row(0, "wechat", "delivered"), row(1, "email", "delivered")],
            "timer {id}"
        );
    }
    eprintln!("crash between steps: {emails_at_kill} of {n} e-mails sent at the kill");
    assert!(
        emails_at_kill < n,
        "the kill came after every e-mail: nothing was between steps"
    );
}

#[tokio::test]
async fn kill9_between_steps_loses_none_and_repeats_none_on_sqlite() {
    crash_between_steps(None).await;
}

#[tokio::test]
async fn kill9_between_steps_loses_none_and_repeats_none_on_postgres() {
    let Some((_db, url)) = pg_database("fallback_crash") else {
        eprintln!("PostgreSQL not installed: fallback crash test on PostgreSQL skipped");
        return;
    };
    crash_between_steps(Some(url)).await;
}

/// A job's state once it has ended.
async fn ended_job(s: &Server, id: i64) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let j = s.get(&format!("/v1/jobs/{id}")).await.1;
        if j["state"] != "running" {
            return j;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "job {id} never ended: {j}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The follow-up job a job's route step made, once made.
async fn step_job(s: &Server, id: i64) -> i64 {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let j = s.get(&format!("/v1/jobs/{id}")).await.1;
        if let Some(next) = j["follow_up"]["job_id"].as_i64() {
            return next;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "job {id} made no follow-up: {j}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A job's sends as `(recipient, state)`.
async fn sends(s: &Server, id: i64) -> Vec<(String, String)> {
    let v = s
        .get(&format!("/v1/jobs/{id}/sends?start=0&end=100"))
        .await
        .1;
    v["sends"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["recipient"].as_str().unwrap_or("").to_string(),
                r["state"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

async fn campaign_scenario(store: Option<String>) {
    let mock = Mock::start(&[]).await;
    let cfg = config(&mock, "[jobs]\nsweep_interval_ms = 200\n");
    let s = match store {
        Some(url) => Server::start_on(&url, tempfile::tempdir().unwrap(), &cfg).await,
        None => Server::start(&cfg).await,
    };
    // ann: no WeChat; bo: opted out of WeChat; di, ed: WeChat. ann and bo
    // have a phone too.
    subscriber(
        &s,
        "ann",
        json!({"addresses": {"email": "ann@example.com", "sms": "+8613800000001"}}),
    )
    .await;
    subscriber(
        &s,
        "bo",
        json!({"addresses": {"wechat": {"wechat": "o-bo"}, "email": "bo@example.com",
                             "sms": "+8613800000002"},
               "preferences": {"channel_types": {"wechat": false}}}),
    )
    .await;
    for u in ["di", "ed"] {
        subscriber(
            &s,
            u,
            json!({"addresses": {"wechat": {"wechat": format!("o-{u}")}, "email": format!("{u}@example.com")}}),
        )
        .await;
    }
    // WeChat; then e-mail to whoever WeChat could not reach, with its own
    // message; then an SMS to whoever did not read the e-mail in 3 s.
    let (st, job) = s
        .post(
            "/v1/jobs",
            &json!({"users": ["ann", "bo", "di", "ed"], "channel": "wechat",
                    "to": {"channel_type": "wechat"}, "message": {"text": "20 off today"},
                    "route": [{},
                              {"channel_type": "email", "on": ["no_address", "opted_out"],
                               "message": {"subject": "20 off", "text": "20 off today"}},
                              {"channel_type": "sms", "on": ["unread"], "after": "3s"}]}),
        )
        .await;
    assert_eq!(st, 201, "{job}");
    let first = job["id"].as_i64().unwrap();
    assert_eq!(job["step"], 0, "{job}");
    assert_eq!(ended_job(&s, first).await["state"], "done");
    let mut got = sends(&s, first).await;
    got.sort();
    assert_eq!(
        got,
        [
            ("ann".to_string(), "failed".to_string()),
            ("bo".into(), "failed".into()),
            ("di".into(), "delivered".into()),
            ("ed".into(), "delivered".into())
        ]
    );

    // The e-mail step: a follow-up job of exactly ann and bo.
    let second = step_job(&s, first).await;
    let j = ended_job(&s, second).await;
    assert_eq!(
        (
            j["channel"].as_str(),
            j["to"]["channel_type"].as_str(),
            j["step"].as_i64()
        ),
        (Some("email"), Some("email"), Some(1)),
        "{j}"
    );
    assert_eq!(j["message"]["subject"], "20 off", "{j}");
    assert_eq!(
        sends(&s, second).await,
        [
            ("ann".to_string(), "delivered".to_string()),
            ("bo".into(), "delivered".into())
        ]
    );
    // bo reads the e-mail; ann does not.
    let bo = format!("herald-job-{second}-1");
    let (st, v) = s
        .post(
            "/v1/receipts",
            &json!({"idempotency_key": bo, "event": "read"}),
        )
        .await;
    assert_eq!(st, 200, "{v}");

    // The SMS step: ann only, 3 s after the e-mail job ended.
    let third = step_job(&s, second).await;
    let j = ended_job(&s, third).await;
    assert_eq!(
        (j["channel"].as_str(), j["step"].as_i64()),
        (Some("sms"), Some(2)),
        "{j}"
    );
    assert_eq!(
        sends(&s, third).await,
        [("ann".to_string(), "delivered".to_string())]
    );
    assert!(
        j["follow_up"].is_null(),
        "the last step has nothing after it: {j}"
    );
    let at_sms: Vec<Value> = mock
        .requests(None)
        .await
        .into_iter()
        .filter(|r| r["path"] == "/hook/sms")
        .collect();
    assert_eq!(at_sms.len(), 1, "{at_sms:?}");
    assert_eq!(at_sms[0]["body"]["recipient"], "+8613800000001");

    // A rule's route: each task's job carries it on the same way.
    let (st, rule) = s
        .post(
            "/v1/rules",
            &json!({"name": "flash sale", "schedule": {"type": "at", "at": rfc3339(now_ms() + 1_000)},
                    "audience": {"users": ["ann", "di"]}, "channel": "wechat",
                    "to": {"channel_type": "wechat"}, "message": {"text": "flash sale"},
                    "route": [{}, {"channel_type": "email", "on": ["no_address"]}]}),
        )
        .await;
    assert_eq!(st, 201, "{rule}");
    let rule = rule["id"].as_i64().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let task_job = loop {
        let v = s.get(&format!("/v1/rules/{rule}/tasks")).await.1;
        if let Some(j) = v["tasks"][0]["job_id"].as_i64() {
            break j;
        }
        assert!(std::time::Instant::now() < deadline, "no task started: {v}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let next = step_job(&s, task_job).await;
    ended_job(&s, next).await;
    assert_eq!(
        sends(&s, next).await,
        [("ann".to_string(), "delivered".to_string())]
    );

    // A route's step needs a message its channel can take, and a job's
    // route needs subscribers.
    for (body, field) in [
        (
            json!({"users": ["ann"], "channel": "wechat", "message": {"text": "x"},
                   "route": [{"channel_type": "wechat"}]}),
            "to",
        ),
        (
            json!({"users": ["ann"], "channel": "wechat", "to": {"channel_type": "wechat"},
                   "message": {"text": "x"},
                   "route": [{}, {"channel_type": "email", "on": ["failed"], "message": 3}]}),
            "route[1].message",
        ),
        (
            json!({"users": ["ann"], "channel": "wechat", "to": {"channel_type": "wechat"},
                   "message": {"text": "x"}, "follow_up": {"after_secs": 5, "message": {}, "only": "unread"},
                   "route": [{}, {"channel_type": "email", "on": ["failed"]}]}),
            "follow_up",
        ),
    ] {
        let (st, v) = s.post("/v1/jobs", &body).await;
        assert_eq!(st, 400, "{body}: {v}");
        assert_eq!(v["error"]["field"], field, "{body}: {v}");
    }
}

#[tokio::test]
async fn a_job_route_sends_each_step_to_who_needs_it_on_sqlite() {
    campaign_scenario(None).await;
}

#[tokio::test]
async fn a_job_route_sends_each_step_to_who_needs_it_on_postgres() {
    let Some((_db, url)) = pg_database("fallback_jobs") else {
        eprintln!("PostgreSQL not installed: job route test on PostgreSQL skipped");
        return;
    };
    campaign_scenario(Some(url)).await;
}

const DEFAULT_ROUTE: &str = "[routing.default]\nroute = [{channel_type = \"wechat\"}, \
    {channel_type = \"email\", on = [\"no_address\", \"opted_out\", \"failed\"]}]\n\
    [routing.tenants.default]\nroute = [{channel_type = \"wechat\"}, \
    {channel_type = \"sms\", on = [\"no_address\"]}]\n";

/// `[routing]`: a request to a subscriber that names no channel takes the
/// tenant's default route (`[routing.tenants.NAME]` over
/// `[routing.default]`); naming a channel, or a route, overrides it. A
/// default route that cannot work stops the start, naming the key.
async fn defaults_scenario(store: Option<String>) {
    let mock = Mock::start(&[]).await;
    let cfg = config(
        &mock,
        &format!("{DEFAULT_ROUTE}[jobs]\nsweep_interval_ms = 200\n"),
    );
    let s = match store {
        Some(url) => Server::start_on(&url, tempfile::tempdir().unwrap(), &cfg).await,
        None => Server::start(&cfg).await,
    };
    subscriber(
        &s,
        "ann",
        json!({"addresses": {"email": "ann@example.com", "sms": "+8613800000001"}}),
    )
    .await;
    // The open node's tenant is `default`: its own route, WeChat then SMS.
    let (st, v) = s
        .post(
            "/v1/timers",
            &json!({"delay_ms": 0, "to": {"user_id": "ann"}, "message": {"text": "hi"}}),
        )
        .await;
    assert_eq!(st, 201, "{v}");
    assert_eq!(v["channel"], "wechat", "{v}");
    assert_eq!(v["route"][1]["channel"], "sms", "{v}");
    let by_default = v["id"].as_i64().unwrap();
    // A channel named: that channel only.
    let (st, v) = s
        .post(
            "/v1/timers",
            &json!({"delay_ms": 0, "channel": "email",
                    "to": {"user_id": "ann", "channel_type": "email"}, "message": {"text": "hi"}}),
        )
        .await;
    assert_eq!(st, 201, "{v}");
    assert!(v["route"].is_null(), "{v}");
    let own_channel = v["id"].as_i64().unwrap();
    assert_eq!(settled(&s, by_default).await["state"], "done");
    assert_eq!(
        steps(&s, by_default).await,
        [row(0, "wechat", "no_address"), row(1, "sms", "delivered")]
    );
    assert_eq!(settled(&s, own_channel).await["state"], "done");
    assert_eq!(
        steps(&s, own_channel).await,
        [row(-1, "email", "delivered")]
    );

    // A job to user ids without a channel: the same default.
    let (st, job) = s
        .post(
            "/v1/jobs",
            &json!({"users": ["ann"], "to": {}, "message": {"text": "20 off"}}),
        )
        .await;
    assert_eq!(st, 201, "{job}");
    assert_eq!(job["channel"], "wechat", "{job}");
    let next = step_job(&s, job["id"].as_i64().unwrap()).await;
    ended_job(&s, next).await;
    let j = s.get(&format!("/v1/jobs/{next}")).await.1;
    assert_eq!(j["channel"], "sms", "{j}");
    assert_eq!(
        sends(&s, next).await,
        [("ann".to_string(), "delivered".to_string())]
    );
}

#[tokio::test]
async fn default_routes_from_config_on_sqlite() {
    defaults_scenario(None).await;
}

#[tokio::test]
async fn default_routes_from_config_on_postgres() {
    let Some((_db, url)) = pg_database("fallback_defaults") else {
        eprintln!("PostgreSQL not installed: default route test on PostgreSQL skipped");
        return;
    };
    defaults_scenario(Some(url)).await;
}

#[tokio::test]
async fn a_default_route_that_cannot_work_stops_the_start() {
    let dir = tempfile::tempdir().unwrap();
    for (route, key) in [
        (
            "[{channel_type = \"wechat\"}, {channel_type = \"email\", on = [\"later\"]}]",
            "routing.default.route[1].on[0]",
        ),
        (
            "[{channel_type = \"wechat\"}, {channel = \"nope\", channel_type = \"sms\", on = [\"failed\"]}]",
            "routing.default.route[1].channel",
        ),
        (
            "[{channel = \"email\"}]",
            "routing.default.route[0].channel_type",
        ),
    ] {
        let cfg = dir.path().join("herald.toml");
        std::fs::write(
            &cfg,
            format!(
                "store = \"sqlite::memory:\"\n[routing.default]\nroute = {route}\n\
                 [[channels]]\nname = \"email\"\nkind = \"webhook\"\nurl = \"http://127.0.0.1:9/\"\n\
                 [[channels]]\nname = \"wechat\"\nkind = \"webhook\"\nurl = \"http://127.0.0.1:9/\"\n"
            ),
        )
        .unwrap();
        let out = tokio::process::Command::new(BIN)
            .args(["serve", "--config", cfg.to_str().unwrap()])
            .current_dir(dir.path())
            .output()
            .await
            .unwrap();
        assert!(!out.status.success(), "{route}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(key), "{route}: {err}");
    }
}
