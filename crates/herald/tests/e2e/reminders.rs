//! Reminders end to end: subjects, bitmap subscriptions, merged delivery, bulk
//! subscribe, and a kill -9 in the middle of a 100k-reminder drain. The real
//! `herald serve` and `herald mock` over real HTTP.
//!
//! Leads are at least 5 minutes, so a subject that starts 5 minutes and a few
//! seconds from now has its 5-minute reminders due in a few seconds.

use crate::common;

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use common::*;
use serde_json::{Value, json};

const FIVE_MIN: i64 = 300_000;

/// A server whose `app` and `email` reminders go to the mock's webhook.
async fn pair(merge_window_ms: i64) -> (Mock, Server) {
    let mock = Mock::start(&[]).await;
    let top = format!(
        "[reminders]\nmerge_window_ms = {merge_window_ms}\n[reminders.channels]\napp = \"hooks\"\nemail = \"hooks\"\n"
    );
    let server = Server::start(&Server::webhook_config(&mock.hook(), "", &top)).await;
    (mock, server)
}

async fn subject(server: &Server, id: &str, start_at: i64) -> Value {
    let (s, v) = server
        .put(
            &format!("/v1/subjects/{id}"),
            &json!({"start_at": rfc3339(start_at), "title": format!("Coupon {id}"),
                    "data": {"shop": 42}}),
        )
        .await;
    assert!(s == 200 || s == 201, "{s} {v}");
    v
}

async fn remind(server: &Server, user: &str, subject: &str, t: &str, lead: i64) -> (u16, Value) {
    server
        .post(
            "/v1/reminders",
            &json!({"user_id": user, "subject_id": subject, "channel_type": t, "lead_minutes": lead}),
        )
        .await
}

/// Hook requests received so far, by user.
async fn received(mock: &Mock) -> HashMap<String, Vec<Value>> {
    let mut by_user: HashMap<String, Vec<Value>> = HashMap::new();
    for r in mock.requests(None).await {
        let user = r["body"]["recipient"].as_str().unwrap_or("").to_string();
        by_user.entry(user).or_default().push(r["body"].clone());
    }
    by_user
}

async fn wait_delivered(mock: &Mock, server: &Server, n: u64, timeout: Duration) {
    wait_for("the reminders to be delivered", timeout, || async {
        mock.stats().await["unique_delivered"].as_u64().unwrap_or(0) >= n
    })
    .await;
    let _ = server;
}

#[tokio::test]
async fn a_reminder_fires_lead_minutes_before_the_start_with_its_subject() {
    let (mock, server) = pair(60_000).await;
    let start = now_ms() + FIVE_MIN + 2_000;
    let (s, v) = server
        .put(
            "/v1/subjects/coupon-1",
            &json!({"start_at": rfc3339(start), "title": "20 off", "data": {"shop": 7}}),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    assert_eq!(v["moved_reminders"], 0);
    let (s, v) = remind(&server, "alice", "coupon-1", "app", 5).await;
    assert_eq!(s, 201, "{v}");
    assert_eq!(v["state"], "pending");
    assert_eq!(parse_ms(v["fire_at"].as_str().unwrap()), start - FIVE_MIN);
    let timer_id = v["timer_id"].as_i64().unwrap();
    let t = server.timer(timer_id).await;
    assert_eq!(t["kind"], "reminder");
    assert_eq!(t["recipient"], "alice");

    wait_delivered(&mock, &server, 1, Duration::from_secs(20)).await;
    let got = received(&mock).await;
    let body = &got["alice"][0];
    assert_eq!(body["kind"], "reminder");
    let m = &body["message"];
    assert_eq!(m["user_id"], "alice");
    assert_eq!(m["subject_id"], "coupon-1");
    assert_eq!(m["subject"], "20 off");
    assert_eq!(m["data"]["shop"], 7);
    assert_eq!(parse_ms(m["start_at"].as_str().unwrap()), start);
    assert_eq!(m["lead_minutes"], 5);
    assert_eq!(m["channel_type"], "app");
    assert_eq!(m["count"], 1);
    // It fired at its time, not early.
    assert!(parse_ms(body["fired_at"].as_str().unwrap()) >= start - FIVE_MIN);
    wait_for("done", Duration::from_secs(10), || async {
        server.timer(timer_id).await["state"] == "done"
    })
    .await;
    // The listing decodes the bitmap and shows the timer's state.
    let (s, v) = server.get("/v1/users/alice/reminders").await;
    assert_eq!(s, 200);
    let subj = &v["subjects"][0];
    assert_eq!(subj["subject_id"], "coupon-1");
    assert_eq!(subj["bits"], 1);
    assert_eq!(subj["reminders"][0]["channel_type"], "app");
    assert_eq!(subj["reminders"][0]["lead_minutes"], 5);
    assert_eq!(subj["reminders"][0]["state"], "done");
}

#[tokio::test]
async fn a_duplicate_is_409_and_bad_input_names_its_field() {
    let (_mock, server) = pair(60_000).await;
    let start = now_ms() + 3_600_000;
    subject(&server, "s1", start).await;
    assert_eq!(remind(&server, "bob", "s1", "app", 15).await.0, 201);
    let (s, v) = remind(&server, "bob", "s1", "app", 15).await;
    assert_eq!(s, 409, "{v}");
    assert_eq!(v["error"]["code"], "reminder_exists");
    // Another lead or another type is another bit.
    assert_eq!(remind(&server, "bob", "s1", "app", 20).await.0, 201);
    assert_eq!(remind(&server, "bob", "s1", "email", 15).await.0, 201);
    let (_, v) = server.get("/v1/users/bob/reminders").await;
    let bits = v["subjects"][0]["bits"].as_u64().unwrap();
    // app/15 = bit 2, app/20 = bit 3, email/15 = bit 12 + 2.
    assert_eq!(bits, (1 << 2) | (1 << 3) | (1 << 14));
    // A reminder's priority is kept on its timer (default 5).
    let (s, v) = server
        .post(
            "/v1/reminders",
            &json!({"user_id": "bob", "subject_id": "s1", "channel_type": "app", "lead_minutes": 25,
                    "priority": 9}),
        )
        .await;
    assert_eq!((s, v["priority"].clone()), (201, json!(9)), "{v}");
    let (_, t) = server.get(&format!("/v1/timers/{}", v["timer_id"])).await;
    assert_eq!(t["priority"], 9, "{t}");
    assert_eq!(
        remind(&server, "carol", "s1", "app", 15).await.1["priority"],
        5
    );

    let cases = [
        (
            json!({"user_id": "bob", "subject_id": "s1", "channel_type": "app", "lead_minutes": 7}),
            400,
            "lead_minutes",
        ),
        (
            json!({"user_id": "bob", "subject_id": "s1", "channel_type": "app", "lead_minutes": 65}),
            400,
            "lead_minutes",
        ),
        (
            json!({"user_id": "bob", "subject_id": "s1", "channel_type": "push", "lead_minutes": 5}),
            400,
            "channel_type",
        ),
        (
            json!({"user_id": "bob/x", "subject_id": "s1", "channel_type": "app", "lead_minutes": 5}),
            400,
            "user_id",
        ),
        (
            json!({"user_id": "bob", "subject_id": "nope", "channel_type": "app", "lead_minutes": 5}),
            404,
            "subject_id",
        ),
        (
            json!({"user_id": "bob", "subject_id": "s1", "channel_type": "sms", "lead_minutes": 5}),
            400,
            "channel_type",
        ),
        (
            json!({"user_id": "bob", "subject_id": "s1", "channel_type": "app", "lead_minutes": 5,
                   "channel": "nope"}),
            400,
            "channel",
        ),
        (
            json!({"user_id": "bob", "subject_id": "s1", "channel_type": "app"}),
            400,
            "lead_minutes",
        ),
        (
            json!({"user_id": "bob", "subject_id": "s1", "channel_type": "app", "lead_minutes": 5,
                   "priority": 10}),
            400,
            "priority",
        ),
    ];
    for (body, status, field) in cases {
        let (s, v) = server.post("/v1/reminders", &body).await;
        assert_eq!(s, status, "{body} -> {v}");
        assert_eq!(v["error"]["field"], field, "{body} -> {v}");
    }
    // Its fire time has passed: 422, and nothing was written.
    subject(&server, "soon", now_ms() + 120_000).await;
    let (s, v) = remind(&server, "bob", "soon", "app", 5).await;
    assert_eq!(s, 422, "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("passed"));
    let (_, v) = server.get("/v1/users/bob/reminders").await;
    assert_eq!(v["subjects"].as_array().unwrap().len(), 1);
    // Subjects are checked too.
    let (s, v) = server
        .put("/v1/subjects/bad", &json!({"start_at": "tomorrow"}))
        .await;
    assert_eq!((s, v["error"]["field"].clone()), (400, json!("start_at")));
    let (s, v) = server
        .put(
            "/v1/subjects/bad",
            &json!({"start_at": rfc3339(start), "data": [1]}),
        )
        .await;
    assert_eq!((s, v["error"]["field"].clone()), (400, json!("data")));
    assert_eq!(server.get("/v1/subjects/bad").await.0, 404);
}

#[tokio::test]
async fn cancelling_one_bit_leaves_the_others_firing() {
    // Merging off: each reminder is its own delivery.
    let (mock, server) = pair(0).await;
    let start = now_ms() + FIVE_MIN + 3_000;
    subject(&server, "c", start).await;
    let (_, app) = remind(&server, "carol", "c", "app", 5).await;
    let (_, email) = remind(&server, "carol", "c", "email", 5).await;
    let (s, v) = server
        .delete("/v1/reminders/carol/c?channel_type=email&lead_minutes=5")
        .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        v["cleared"],
        json!([{"channel_type": "email", "lead_minutes": 5}])
    );
    assert_eq!(
        v["remaining"],
        json!([{"channel_type": "app", "lead_minutes": 5}])
    );
    // Cancelling it again: nothing to cancel.
    let (s, _) = server
        .delete("/v1/reminders/carol/c?channel_type=email&lead_minutes=5")
        .await;
    assert_eq!(s, 404);
    let email_id = email["timer_id"].as_i64().unwrap();
    assert_eq!(server.timer(email_id).await["state"], "cancelled");

    wait_delivered(&mock, &server, 1, Duration::from_secs(20)).await;
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let got = received(&mock).await;
    assert_eq!(got["carol"].len(), 1, "{:?}", got["carol"]);
    assert_eq!(got["carol"][0]["message"]["channel_type"], "app");
    assert_eq!(got["carol"][0]["id"], app["timer_id"]);
    // A lead whose time has already passed is refused.
    let (s, _) = remind(&server, "carol", "c", "email", 60).await;
    assert_eq!(s, 422, "its time passed long ago");
    // Cancel everything of a pair.
    let (s, v) = server.delete("/v1/reminders/carol/c").await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["remaining"], json!([]));
    let (_, v) = server.get("/v1/users/carol/reminders").await;
    assert_eq!(v["subjects"], json!([]));
}

#[tokio::test]
async fn moving_a_subject_moves_its_reminders() {
    let (mock, server) = pair(0).await;
    // Earlier: due in ~60 s, moved to ~2 s from now.
    let early = now_ms() + FIVE_MIN + 60_000;
    subject(&server, "earlier", early).await;
    let (_, a) = remind(&server, "dan", "earlier", "app", 5).await;
    // Later: due in ~3 s, moved an hour on.
    let late = now_ms() + FIVE_MIN + 3_000;
    subject(&server, "later", late).await;
    let (_, b) = remind(&server, "erin", "later", "app", 5).await;

    let moved_to = now_ms() + FIVE_MIN + 2_000;
    let v = subject(&server, "earlier", moved_to).await;
    assert_eq!(v["moved_reminders"], 1);
    let v = subject(&server, "later", late + 3_600_000).await;
    assert_eq!(v["moved_reminders"], 1);
    let a_id = a["timer_id"].as_i64().unwrap();
    let b_id = b["timer_id"].as_i64().unwrap();
    assert_eq!(
        parse_ms(server.timer(a_id).await["due_at"].as_str().unwrap()),
        moved_to - FIVE_MIN
    );
    assert_eq!(
        parse_ms(server.timer(b_id).await["due_at"].as_str().unwrap()),
        late + 3_600_000 - FIVE_MIN
    );

    wait_delivered(&mock, &server, 1, Duration::from_secs(20)).await;
    // Past the old due time of "later": still nothing for erin.
    let wait = (late - FIVE_MIN + 2_000 - now_ms()).max(0) as u64;
    tokio::time::sleep(Duration::from_millis(wait)).await;
    let got = received(&mock).await;
    let dan = &got["dan"];
    assert_eq!(dan.len(), 1);
    let fired = parse_ms(dan[0]["fired_at"].as_str().unwrap());
    assert!(
        fired >= moved_to - FIVE_MIN && fired < early - FIVE_MIN - 30_000,
        "fired at the new time"
    );
    assert_eq!(
        parse_ms(dan[0]["message"]["start_at"].as_str().unwrap()),
        moved_to,
        "the message carries the subject as it is now"
    );
    assert!(!got.contains_key("erin"), "fired at the old time: {got:?}");
    assert_eq!(server.timer(b_id).await["state"], "pending");

    // Deleting a subject cancels its pending reminders.
    let (s, v) = server.delete("/v1/subjects/later").await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["cancelled_reminders"], 1);
    assert_eq!(server.timer(b_id).await["state"], "cancelled");
    assert_eq!(server.get("/v1/subjects/later").await.0, 404);
    let (_, v) = server.get("/v1/users/erin/reminders").await;
    assert_eq!(v["subjects"], json!([]));
}

/// Three subjects starting 0, 10 and 20 s apart, one user on each.
async fn three_close_subjects(server: &Server, user: &str) -> Vec<i64> {
    let start = now_ms() + FIVE_MIN + 3_000;
    let mut ids = Vec::new();
    for (i, s) in ["m1", "m2", "m3"].iter().enumerate() {
        subject(server, s, start + i as i64 * 10_000).await;
        let (st, v) = remind(server, user, s, "app", 5).await;
        assert_eq!(st, 201, "{v}");
        ids.push(v["timer_id"].as_i64().unwrap());
    }
    ids
}

#[tokio::test]
async fn close_reminders_merge_into_one_delivery() {
    let (mock, server) = pair(60_000).await;
    let ids = three_close_subjects(&server, "fay").await;
    wait_delivered(&mock, &server, 1, Duration::from_secs(20)).await;
    let server = &server;
    for &id in &ids {
        wait_for(
            "every merged reminder done",
            Duration::from_secs(10),
            || async move { server.timer(id).await["state"] == "done" },
        )
        .await;
    }
    let got = received(&mock).await;
    let fay = &got["fay"];
    assert_eq!(fay.len(), 1, "one message: {fay:?}");
    let m = &fay[0]["message"];
    assert_eq!(m["count"], 3);
    let subjects: Vec<&str> = m["reminders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["subject_id"].as_str().unwrap())
        .collect();
    assert_eq!(subjects, ["m1", "m2", "m3"]);
    // Sent at the earliest member's time, never later.
    let due = parse_ms(fay[0]["due_at"].as_str().unwrap());
    let fired = parse_ms(fay[0]["fired_at"].as_str().unwrap());
    assert_eq!(fay[0]["id"], ids[0]);
    assert!(fired - due < 2_000, "late by {} ms", fired - due);
    // Each member's send log names the merged delivery.
    let (_, log) = server
        .get(&format!("/v1/timers/{}/deliveries", ids[2]))
        .await;
    let log = &log["deliveries"];
    assert_eq!(log.as_array().map(Vec::len), Some(1), "{log}");
    assert_eq!(log[0]["outcome"], "delivered");
    assert_eq!(log[0]["attempt"], 1);
    // Past every member's own due time, still one message.
    tokio::time::sleep(Duration::from_secs(21)).await;
    assert_eq!(received(&mock).await["fay"].len(), 1);
}

#[tokio::test]
async fn without_merging_close_reminders_go_out_alone() {
    let (mock, server) = pair(0).await;
    let ids = three_close_subjects(&server, "gus").await;
    wait_delivered(&mock, &server, 3, Duration::from_secs(40)).await;
    let got = received(&mock).await;
    let gus = &got["gus"];
    assert_eq!(gus.len(), 3);
    let sent: HashSet<i64> = gus.iter().map(|b| b["id"].as_i64().unwrap()).collect();
    assert_eq!(sent, ids.iter().copied().collect());
    assert!(gus.iter().all(|b| b["message"]["count"] == 1));
}

/// Subscribes `users` users to `subject` (app, 5 minutes) in bulk.
async fn bulk_subscribe(server: &Server, subject: &str, users: usize) {
    for chunk in (0..users).collect::<Vec<_>>().chunks(10_000) {
        let mut lines = String::new();
        for i in chunk {
            lines.push_str(
                &json!({"user_id": format!("u{i}"), "subject_id": subject,
                        "channel_type": "app", "lead_minutes": 5})
                .to_string(),
            );
            lines.push('\n');
        }
        let (s, out) = server.bulk_at("/v1/reminders:bulk", &lines).await;
        assert_eq!(s, 200);
        assert_eq!(out.len(), chunk.len());
        assert!(
            out.iter().all(|l| l["status"] == 201),
            "{:?}",
            out.iter().find(|l| l["status"] != 201)
        );
    }
}

#[tokio::test]
async fn bulk_subscribe_answers_per_line() {
    let (_mock, server) = pair(60_000).await;
    subject(&server, "hot", now_ms() + 7_200_000).await;
    let lines = [
        json!({"user_id": "a", "subject_id": "hot", "channel_type": "app", "lead_minutes": 5}),
        json!({"user_id": "a", "subject_id": "hot", "channel_type": "app", "lead_minutes": 5}),
        json!({"user_id": "b", "subject_id": "hot", "channel_type": "app", "lead_minutes": 3}),
        json!({"user_id": "c", "subject_id": "cold", "channel_type": "app", "lead_minutes": 5}),
        json!({"user_id": "d", "subject_id": "hot", "channel_type": "email", "lead_minutes": 60}),
    ]
    .iter()
    .map(|l| l.to_string())
    .collect::<Vec<_>>()
    .join("\n");
    let (s, out) = server
        .bulk_at("/v1/reminders:bulk", &format!("{lines}\n\nnot json\n"))
        .await;
    assert_eq!(s, 200);
    let statuses: Vec<u64> = out.iter().map(|l| l["status"].as_u64().unwrap()).collect();
    assert_eq!(statuses, [201, 409, 400, 404, 201, 400]);
    assert_eq!(out[2]["error"]["field"], "lead_minutes");
    assert_eq!(out[5]["line"], 7);
    let (_, v) = server.get("/v1/users/d/reminders").await;
    assert_eq!(v["subjects"][0]["reminders"][0]["lead_minutes"], 60);
}

#[tokio::test]
async fn a_hundred_thousand_subscribers_of_one_subject_all_get_it() {
    let (mock, server) = pair(60_000).await;
    let n = 100_000;
    // Room to subscribe everyone (a debug build) before they fall due.
    let start = now_ms() + FIVE_MIN + 25_000;
    subject(&server, "hot", start).await;
    bulk_subscribe(&server, "hot", n).await;
    assert!(now_ms() < start - FIVE_MIN, "subscribing took too long");
    wait_delivered(&mock, &server, n as u64, Duration::from_secs(180)).await;
    let s = mock.stats().await;
    assert_eq!(s["unique_delivered"], n);
    assert_eq!(s["duplicates"], 0);
    wait_for("every reminder done", Duration::from_secs(30), || async {
        let (_, v) = server.get("/v1/stats").await;
        v["timers"]["done"].as_u64().unwrap_or(0) == n as u64
    })
    .await;
}

#[tokio::test]
async fn kill_9_during_a_reminder_drain_loses_nothing() {
    let (mock, mut server) = pair(60_000).await;
    let n = 100_000;
    let start = now_ms() + FIVE_MIN + 25_000;
    subject(&server, "hot", start).await;
    bulk_subscribe(&server, "hot", n).await;
    wait_for(
        "the drain to be under way",
        Duration::from_secs(60),
        || async { mock.stats().await["unique_delivered"].as_u64().unwrap_or(0) >= 5_000 },
    )
    .await;
    server.kill9().await;
    let at_kill = mock.stats().await["unique_delivered"].as_u64().unwrap();
    assert!(at_kill < n as u64, "killed too late to prove anything");
    server.restart().await;
    wait_delivered(&mock, &server, n as u64, Duration::from_secs(180)).await;
    let s = mock.stats().await;
    assert_eq!(s["unique_delivered"], n, "a reminder is missing");
    wait_for("every reminder done", Duration::from_secs(30), || async {
        let (_, v) = server.get("/v1/stats").await;
        v["timers"]["done"].as_u64().unwrap_or(0) == n as u64
    })
    .await;
}

/// `[reminders] leads_minutes`: "at the start" and "1 minute before" are
/// reminders; a lead off the list is refused with the list; the store keeps
/// the list, and a node whose list does not extend it refuses to start.
#[tokio::test]
async fn configured_leads_are_reminders_and_the_store_keeps_them() {
    let leads = "[reminders]\nleads_minutes = [0, 1, 5]\n";
    let mut s = Server::start(leads).await;
    let start = now_ms() + 3_600_000;
    subject(&s, "launch", start).await;
    let (st, at_start) = remind(&s, "alice", "launch", "app", 0).await;
    assert_eq!(st, 201, "{at_start}");
    assert_eq!(at_start["fire_at"], rfc3339(start));
    let (st, one) = remind(&s, "alice", "launch", "email", 1).await;
    assert_eq!(st, 201, "{one}");
    assert_eq!(one["fire_at"], rfc3339(start - 60_000));
    let (st, off) = remind(&s, "alice", "launch", "app", 10).await;
    assert_eq!(st, 400, "{off}");
    assert_eq!(off["error"]["field"], "lead_minutes", "{off}");
    assert!(
        off["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("[0, 1, 5]"),
        "{off}"
    );
    let (_, subject) = s.get("/v1/subjects/launch").await;
    let leads_seen: Vec<i64> = subject["reminders_by"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["lead_minutes"].as_i64().unwrap())
        .collect();
    assert_eq!(leads_seen, [0, 1], "{subject}");
    let (_, mine) = s.get("/v1/users/alice/reminders").await;
    assert_eq!(
        mine["subjects"][0]["reminders"][1]["lead_minutes"], 1,
        "{mine}"
    );

    // Another list that reorders the stored one: refused before serving.
    s.terminate().await;
    let config = std::fs::read_to_string(s.config_path()).unwrap();
    std::fs::write(
        s.config_path(),
        config.replace("leads_minutes = [0, 1, 5]", "leads_minutes = [5, 0, 1]"),
    )
    .unwrap();
    let out = tokio::process::Command::new(BIN)
        .args(["serve", "--config", s.config_path().to_str().unwrap()])
        .env_remove("HERALD_ADMIN_KEY")
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(60), out)
        .await
        .expect("refused at once")
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("does not extend"), "{stderr}");
    // The same list again serves, and the subscriptions mean what they meant.
    s.restart().await;
    let (_, again) = s.get("/v1/users/alice/reminders").await;
    assert_eq!(again, mine);
}
