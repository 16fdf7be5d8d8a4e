//! The subscriber directory against the real binary, on both stores:
//! `herald subscribers import` (with its tally, re-run safely), `get`, `put`,
//! `list` and `rm`, and the HTTP answers behind them; and reminders resolved
//! through the directory when they fire (SMTP and FCM through `herald mock`).

use crate::common;

use std::process::Stdio;

use std::time::Duration;

use common::{BIN, Mock, Server, get_json, now_ms, pg_database, post_raw, rfc3339};
use serde_json::{Value, json};

/// Runs `herald subscribers ARGS --server URL`: exit success, stdout, stderr.
async fn cli(server: &str, args: &[&str]) -> (bool, String, String) {
    let out = tokio::process::Command::new(BIN)
        .arg("subscribers")
        .args(args)
        .args(["--server", server])
        .env_remove("HERALD_KEY")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

async fn scenario(s: &Server) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("users.ndjson");
    let mut lines: Vec<String> = (0..250)
        .map(|i| {
            json!({"user_id": format!("user-{i:03}"), "timezone": "Asia/Shanghai",
                   "addresses": {"email": format!("user+{i}@example.com"),
                                 "app": [format!("token-{i}-a"), format!("token-{i}-b")]}})
            .to_string()
        })
        .collect();
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let path = file.to_str().unwrap();

    // In batches of 100: every line created; again: every line replaced.
    let (ok, out, err) = cli(&s.url, &["import", path, "--batch", "100"]).await;
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("created 250, replaced 0, failed 0"), "{out}");
    let (ok, out, err) = cli(&s.url, &["import", path, "--batch", "100"]).await;
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("created 0, replaced 250, failed 0"), "{out}");

    // A bad line fails alone, is reported with its field, and the exit says so.
    lines.push(json!({"user_id": "user-bad", "addresses": {"sms": "12345"}}).to_string());
    lines.push(json!({"user_id": "user-new", "locale": "en"}).to_string());
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let (ok, out, _) = cli(&s.url, &["import", path]).await;
    assert!(!ok, "a failed line must fail the import: {out}");
    assert!(out.contains("created 1, replaced 250, failed 1"), "{out}");
    assert!(out.contains("addresses.sms"), "{out}");

    let (ok, out, err) = cli(&s.url, &["get", "user-007"]).await;
    assert!(ok, "{err}");
    let got: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(got["addresses"]["email"], "user+7@example.com");
    assert_eq!(got["version"], 3, "imported three times");
    let (ok, out, _) = cli(&s.url, &["get", "user-bad"]).await;
    assert!(!ok, "{out}");

    let (ok, _, err) = cli(
        &s.url,
        &[
            "put",
            "user-007",
            "--profile",
            r#"{"addresses":{"email":"seven@example.com"}}"#,
        ],
    )
    .await;
    assert!(ok, "{err}");
    let (_, out, _) = cli(&s.url, &["list", "--limit", "2", "--cursor", "user-006"]).await;
    let page: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(page["subscribers"][0]["user_id"], "user-007", "{page}");
    assert_eq!(
        page["subscribers"][0]["addresses"]["email"],
        "seven@example.com"
    );
    assert!(
        page["subscribers"][0]["addresses"].get("app").is_none(),
        "{page}"
    );
    assert_eq!(page["next_cursor"], "user-008", "{page}");

    let (ok, _, err) = cli(&s.url, &["rm", "user-007"]).await;
    assert!(ok, "{err}");
    let (ok, _, _) = cli(&s.url, &["rm", "user-007"]).await;
    assert!(!ok, "a second rm finds nothing");
}

#[tokio::test]
async fn the_directory_imports_and_serves_on_sqlite() {
    let s = Server::start("").await;
    scenario(&s).await;
}

#[tokio::test]
async fn the_directory_imports_and_serves_on_postgres() {
    let Some((_db, url)) = pg_database("subscribers") else {
        eprintln!("PostgreSQL not installed: directory test on PostgreSQL skipped");
        return;
    };
    let s = Server::start_on(&url, tempfile::tempdir().unwrap(), "").await;
    scenario(&s).await;
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Mail and push channels on the mock, reminders at the subject's start
/// (lead 0), and a mock with an SMTP listener and an FCM project.
async fn mail_and_push(store: Option<&str>) -> (Mock, Server) {
    let key = format!(
        "{}/../herald-mock/tests/fixtures/fcm-service-account.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let port = free_port();
    let mock = Mock::start(&[
        "--smtp-listen",
        &format!("127.0.0.1:{port}"),
        "--fcm-service-account",
        &key,
    ])
    .await;
    let m = &mock.url;
    let cfg = format!(
        "[reminders]\nleads_minutes = [0]\n[reminders.channels]\nemail = \"mail\"\napp = \"push\"\n\
         [[channels]]\nname = \"mail\"\nkind = \"smtp\"\nhost = \"127.0.0.1\"\nport = {port}\n\
         tls = \"none\"\nfrom = \"herald@example.com\"\n\
         reminder_template = {{ subject = \"{{subject}} opens\", text = \"{{subject}} starts at {{start_at}}\" }}\n\
         [[channels]]\nname = \"push\"\nkind = \"fcm\"\napi_base = \"{m}\"\ntoken_url = \"{m}/token\"\n\
         service_account = \"{key}\"\nproject_id = \"herald-mock\"\n\
         reminder_template = {{ notification = {{ title = \"{{subject}}\", body = \"starts at {{start_at}}\" }} }}\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let server = match store {
        Some(url) => Server::start_on(url, dir, &cfg).await,
        None => {
            let db = dir.path().join("data").join("herald.db");
            Server::start_on(&format!("sqlite://{}", db.display()), dir, &cfg).await
        }
    };
    (mock, server)
}

/// `HH:MM` in a zone `offset_h` hours east of UTC, `shift_min` from now.
fn local_hhmm(offset_h: i64, shift_min: i64) -> String {
    let m = (now_ms() / 60_000 + offset_h * 60 + shift_min).rem_euclid(24 * 60);
    format!("{:02}:{:02}", m / 60, m % 60)
}

async fn put_subscriber(s: &Server, user: &str, body: Value) {
    let (st, v) = s.put(&format!("/v1/subscribers/{user}"), &body).await;
    assert!(st == 200 || st == 201, "{user}: {st} {v}");
}

async fn remind(s: &Server, user: &str, channel_type: &str) -> i64 {
    let (st, v) = s
        .post(
            "/v1/reminders",
            &json!({"user_id": user, "subject_id": "coupon", "channel_type": channel_type,
                    "lead_minutes": 0}),
        )
        .await;
    assert_eq!(st, 201, "{user}: {v}");
    v["timer_id"].as_i64().unwrap()
}

/// Waits until a timer has a send-log row; its first row's outcome, and the timer.
async fn first_outcome(s: &Server, id: i64) -> (String, Value) {
    let mut last = Value::Null;
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while std::time::Instant::now() < deadline {
        let d = s.get(&format!("/v1/timers/{id}/deliveries")).await.1;
        if let Some(o) = d["deliveries"][0]["outcome"].as_str() {
            let t = s.timer(id).await;
            // A final outcome is recorded with the timer's state in one transaction.
            return (o.to_string(), t);
        }
        last = d;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timer {id} never fired: {last}");
}

async fn routing(s: &Server, mock: &Mock) {
    // Erin's quiet hours hold now in her zone (UTC+8); the same hours in
    // Frank's zone (UTC-4) are twelve hours away.
    let (start, end) = (local_hhmm(8, -30), local_hhmm(8, 60));
    let quiet = json!({"start": start, "end": end});
    put_subscriber(
        s,
        "alice",
        json!({"timezone": "Asia/Shanghai", "addresses": {
        "email": "alice+coupons@example.com", "app": ["tok-a1", "tok-a2", "tok-gone"]}}),
    )
    .await;
    put_subscriber(
        s,
        "bob",
        json!({"addresses": {"email": "bob.old@example.com"}}),
    )
    .await;
    put_subscriber(s, "carol", json!({"addresses": {"app": ["tok-c"]}})).await;
    put_subscriber(
        s,
        "dave",
        json!({"addresses": {"email": "dave@example.com"},
        "preferences": {"channel_types": {"email": false}}}),
    )
    .await;
    put_subscriber(
        s,
        "erin",
        json!({"timezone": "Etc/GMT-8", "quiet_hours": quiet,
        "addresses": {"email": "erin@example.com"}}),
    )
    .await;
    put_subscriber(
        s,
        "frank",
        json!({"timezone": "Etc/GMT+4", "quiet_hours": quiet,
        "addresses": {"email": "frank@example.com"}}),
    )
    .await;
    let (st, v) = post_raw(
        &format!("{}/_mock/fcm/faults", mock.url),
        "application/json",
        json!({"unregistered": ["tok-gone"]}).to_string(),
    )
    .await;
    assert!(st < 300, "{v}");

    let (st, v) = s
        .put(
            "/v1/subjects/coupon",
            &json!({"start_at": rfc3339(now_ms() + 4_000), "title": "Coupon 20 off"}),
        )
        .await;
    assert_eq!(st, 201, "{v}");
    let alice_mail = remind(s, "alice", "email").await;
    let alice_push = remind(s, "alice", "app").await;
    let bob = remind(s, "bob", "email").await;
    let carol = remind(s, "carol", "email").await;
    let dave = remind(s, "dave", "email").await;
    let erin = remind(s, "erin", "email").await;
    let frank = remind(s, "frank", "email").await;
    // Bob's address changes after he subscribed: the new one is used.
    put_subscriber(
        s,
        "bob",
        json!({"addresses": {"email": "bob.new@example.com"}}),
    )
    .await;
    // Timers addressed to subscribers: a topic Gina opted out of, one she
    // did not, one to nobody in the directory, and a critical one for Erin.
    put_subscriber(
        s,
        "gina",
        json!({"addresses": {"email": "gina@example.com"},
        "preferences": {"topics": {"marketing": false}}}),
    )
    .await;
    let to = |user: &str, extra: Value| {
        let mut b = json!({"delay_ms": 0, "channel": "mail", "to": {"user_id": user},
                           "message": {"subject": format!("For {user}"), "text": "hello"}});
        for (k, v) in extra.as_object().unwrap() {
            b[k] = v.clone();
        }
        async move {
            let (st, v) = s.post("/v1/timers", &b).await;
            assert_eq!(st, 201, "{v}");
            v["id"].as_i64().unwrap()
        }
    };
    let gina_marketing = to("gina", json!({"topic": "marketing"})).await;
    let gina_coupons = to("gina", json!({"topic": "coupons"})).await;
    let nobody = to("nobody", json!({})).await;
    let erin_critical = to("erin", json!({"critical": true})).await;

    for (id, want) in [
        (alice_mail, "delivered"),
        (alice_push, "delivered"),
        (bob, "delivered"),
        (carol, "no_address"),
        (dave, "opted_out"),
        (erin, "deferred"),
        (frank, "delivered"),
        (gina_marketing, "opted_out"),
        (gina_coupons, "delivered"),
        (nobody, "no_address"),
        (erin_critical, "delivered"),
    ] {
        let (outcome, t) = first_outcome(s, id).await;
        assert_eq!(outcome, want, "timer {id}: {t}");
        let state = match want {
            "delivered" => "done",
            "deferred" => "pending",
            _ => "failed",
        };
        assert_eq!(t["state"], state, "{t}");
    }
    // Erin's waits for the end of her quiet hours, in her zone.
    let t = s.timer(erin).await;
    let until = common::parse_ms(t["due_at"].as_str().unwrap());
    let wait = until - now_ms();
    assert!(
        (55 * 60_000..=61 * 60_000).contains(&wait),
        "held {wait} ms: {t}"
    );

    let mail = |to: &str| {
        let url = format!(
            "{}/_mock/smtp/messages?to={}",
            mock.url,
            to.replace('+', "%2B")
        );
        async move {
            get_json(&url)
                .await
                .1
                .as_array()
                .cloned()
                .unwrap_or_default()
        }
    };
    let got = mail("alice+coupons@example.com").await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["subject"], "Coupon 20 off opens");
    assert_eq!(mail("bob.new@example.com").await.len(), 1);
    assert!(mail("bob.old@example.com").await.is_empty());
    assert_eq!(mail("frank@example.com").await.len(), 1);
    assert!(mail("dave@example.com").await.is_empty());
    let got = mail("gina@example.com").await;
    assert_eq!(got.len(), 1, "only the topic she kept: {got:?}");
    // Erin's reminder waits; the critical timer went through her quiet hours.
    let got = mail("erin@example.com").await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["subject"], "For erin");
    // One push to each live device; the gone one is pruned and the log says so.
    let pushes = get_json(&format!("{}/_mock/fcm/messages", mock.url))
        .await
        .1;
    let mut tokens: Vec<&str> = pushes
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["token"].as_str())
        .collect();
    tokens.sort();
    assert_eq!(tokens, ["tok-a1", "tok-a2"], "{pushes}");
    let d = s
        .get(&format!("/v1/timers/{alice_push}/deliveries"))
        .await
        .1;
    let note = d["deliveries"][0]["error"].as_str().unwrap_or_default();
    assert!(note.contains("unregistered"), "{d}");
    let (_, v) = s.get("/v1/subscribers/alice").await;
    assert_eq!(v["addresses"]["app"], json!(["tok-a1", "tok-a2"]), "{v}");
    let (_, audit) = s.get("/v1/audit?limit=500").await;
    let pruned = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            e["resource_id"] == "alice" && e["key_name"] == "herald: device token UNREGISTERED"
        })
        .count();
    assert_eq!(pruned, 1, "the pruning is audited: {audit}");
    // The outcomes are counted.
    let metrics = s.metrics().await;
    for outcome in ["no_address", "opted_out"] {
        assert!(
            metrics
                .lines()
                .any(|l| l.contains(&format!("outcome=\"{outcome}\"")) && l.ends_with(" 2")),
            "{outcome} not counted twice"
        );
    }
}

#[tokio::test]
async fn reminders_go_where_the_directory_says_on_sqlite() {
    let (mock, s) = mail_and_push(None).await;
    routing(&s, &mock).await;
}

#[tokio::test]
async fn reminders_go_where_the_directory_says_on_postgres() {
    let Some((_db, url)) = pg_database("routing") else {
        eprintln!("PostgreSQL not installed: routing test on PostgreSQL skipped");
        return;
    };
    let (mock, s) = mail_and_push(Some(&url)).await;
    routing(&s, &mock).await;
}
