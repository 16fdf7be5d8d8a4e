//! The subscriber directory against the real binary, on both stores:
//! `herald subscribers import` (with its tally, re-run safely), `get`, `put`,
//! `list` and `rm`, and the HTTP answers behind them; and reminders resolved
//! through the directory when they fire (SMTP and FCM through `herald mock`),
//! and so are jobs and rules whose audience holds user ids.

use crate::common;

use std::time::Duration;

use common::{Mock, Server, get_json, now_ms, pg_database, post_raw, rfc3339};
use serde_json::{Value, json};

/// Runs `herald subscribers ARGS --server URL`: exit success, stdout, stderr.
async fn cli(server: &str, args: &[&str]) -> (bool, String, String) {
    common::herald_cli("subscribers", server, args).await
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
         reminder_template = {{ notification = {{ title = \"{{subject}}\", body = \"starts at {{start_at}}\" }} }}\n\
         [[channels]]\nname = \"wc\"\nkind = \"wecom\"\napi_base = \"{m}\"\ncorpid = \"wwmockcorp\"\n\
         corpsecret = \"mock-wecom-secret\"\nagentid = 1000002\n"
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

/// The mails the mock's SMTP server took for `to`.
async fn mail_to(mock: &Mock, to: &str) -> Vec<Value> {
    let url = format!(
        "{}/_mock/smtp/messages?to={}",
        mock.url,
        to.replace('+', "%2B")
    );
    get_json(&url)
        .await
        .1
        .as_array()
        .cloned()
        .unwrap_or_default()
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

    let got = mail_to(mock, "alice+coupons@example.com").await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["subject"], "Coupon 20 off opens");
    assert_eq!(mail_to(mock, "bob.new@example.com").await.len(), 1);
    assert!(mail_to(mock, "bob.old@example.com").await.is_empty());
    assert_eq!(mail_to(mock, "frank@example.com").await.len(), 1);
    assert!(mail_to(mock, "dave@example.com").await.is_empty());
    let got = mail_to(mock, "gina@example.com").await;
    assert_eq!(got.len(), 1, "only the topic she kept: {got:?}");
    // Erin's reminder waits; the critical timer went through her quiet hours.
    let got = mail_to(mock, "erin@example.com").await;
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

/// Waits for a job to end; the job.
async fn job_ended(s: &Server, id: i64) -> Value {
    let mut last = Value::Null;
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while std::time::Instant::now() < deadline {
        last = s.get(&format!("/v1/jobs/{id}")).await.1;
        if last["state"] != "running" {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("job {id} never ended: {last}");
}

/// A job's send log, by recipient: (state, error).
async fn sends_by_user(s: &Server, id: i64) -> std::collections::HashMap<String, (String, String)> {
    let (st, v) = s.get(&format!("/v1/jobs/{id}/sends?start=0&end=100")).await;
    assert_eq!(st, 200, "{v}");
    v["sends"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                x["recipient"].as_str().unwrap().to_string(),
                (
                    x["state"].as_str().unwrap().to_string(),
                    x["error"].as_str().unwrap_or_default().to_string(),
                ),
            )
        })
        .collect()
}

/// Jobs and rules whose audience holds user ids (`to`): each user's address
/// of the channel's type as it is when the job sends, opt-outs of the type and
/// of the job's topic, quiet hours in the user's zone, every device of an app
/// push with a gone token pruned, and a rule whose user changed address after
/// it was created.
async fn campaigns(s: &Server, mock: &Mock) {
    let quiet = json!({"start": local_hhmm(8, -30), "end": local_hhmm(8, 60)});
    put_subscriber(
        s,
        "ja",
        json!({"addresses": {"email": "ja+deals@example.com",
        "app": ["tok-ja1", "tok-ja-gone"]}}),
    )
    .await;
    put_subscriber(s, "jc", json!({"addresses": {"app": ["tok-jc"]}})).await;
    put_subscriber(
        s,
        "jd",
        json!({"addresses": {"email": "jd@example.com"},
        "preferences": {"topics": {"marketing": false}}}),
    )
    .await;
    put_subscriber(
        s,
        "je",
        json!({"timezone": "Etc/GMT-8", "quiet_hours": quiet,
        "addresses": {"email": "je@example.com"}}),
    )
    .await;
    let (st, v) = post_raw(
        &format!("{}/_mock/fcm/faults", mock.url),
        "application/json",
        json!({"unregistered": ["tok-gone", "tok-ja-gone"]}).to_string(),
    )
    .await;
    assert!(st < 300, "{v}");

    // Refusals name their field and create nothing.
    let (st, v) = s
        .post(
            "/v1/jobs",
            &json!({"channel": "mail", "users": ["ja"], "message": {"text": "x"},
                    "to": {"channel_type": "pager"}}),
        )
        .await;
    assert_eq!(
        (st, v["error"]["field"].as_str()),
        (400, Some("to.channel_type")),
        "{v}"
    );
    let (st, v) = s
        .post(
            "/v1/jobs",
            &json!({"channel": "mail", "users": ["ja"], "message": {"text": "x"},
                    "to": {}, "topic": ""}),
        )
        .await;
    assert_eq!(
        (st, v["error"]["field"].as_str()),
        (400, Some("topic")),
        "{v}"
    );

    let (st, mail_job) = s
        .post(
            "/v1/jobs",
            &json!({"channel": "mail", "users": ["ja", "jc", "jd", "je", "j-nobody"],
                    "message": {"subject": "Deals", "text": "50% off"},
                    "to": {}, "topic": "marketing"}),
        )
        .await;
    assert_eq!(st, 201, "{mail_job}");
    assert_eq!(
        mail_job["to"],
        json!({"channel_type": "email"}),
        "{mail_job}"
    );
    assert_eq!(mail_job["topic"], "marketing");
    let (st, push_job) = s
        .post(
            "/v1/jobs",
            &json!({"channel": "push", "users": ["ja"], "to": {},
                    "message": {"notification": {"title": "Deals"}}}),
        )
        .await;
    assert_eq!(st, 201, "{push_job}");

    let done = job_ended(s, mail_job["id"].as_i64().unwrap()).await;
    assert_eq!(done["totals"]["sent"], 1, "{done}");
    assert_eq!(done["totals"]["failed"], 4, "{done}");
    let sends = sends_by_user(s, mail_job["id"].as_i64().unwrap()).await;
    assert_eq!(sends["ja"].0, "delivered", "{sends:?}");
    assert_eq!(sends["jc"], ("failed".into(), "no_address".into()));
    assert_eq!(sends["j-nobody"], ("failed".into(), "no_address".into()));
    assert_eq!(sends["jd"], ("failed".into(), "opted_out".into()));
    assert_eq!(sends["je"].0, "failed");
    assert!(sends["je"].1.starts_with("quiet_hours"), "{sends:?}");
    let got = mail_to(mock, "ja+deals@example.com").await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["subject"], "Deals");
    for nobody in ["jd@example.com", "je@example.com"] {
        assert!(mail_to(mock, nobody).await.is_empty(), "{nobody}");
    }

    let done = job_ended(s, push_job["id"].as_i64().unwrap()).await;
    assert_eq!(done["totals"]["sent"], 1, "{done}");
    let sends = sends_by_user(s, push_job["id"].as_i64().unwrap()).await;
    assert!(sends["ja"].1.contains("unregistered"), "{sends:?}");
    let pushes = get_json(&format!("{}/_mock/fcm/messages", mock.url))
        .await
        .1;
    let to_ja: Vec<&str> = pushes
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["token"].as_str())
        .filter(|t| t.starts_with("tok-ja"))
        .collect();
    assert_eq!(to_ja, ["tok-ja1"], "{pushes}");
    let (_, v) = s.get("/v1/subscribers/ja").await;
    assert_eq!(v["addresses"]["app"], json!(["tok-ja1"]), "{v}");

    // A rule of user ids: the address its user has when it fires.
    put_subscriber(
        s,
        "jb",
        json!({"addresses": {"email": "jb.old@example.com"}}),
    )
    .await;
    let (st, rule) = s
        .post(
            "/v1/rules",
            &json!({"name": "deals", "schedule": {"type": "at", "at": rfc3339(now_ms() + 3_000)},
                    "audience": {"users": ["jb"]}, "channel": "mail", "to": {},
                    "topic": "coupons", "message": {"subject": "Rule deals", "text": "hi"}}),
        )
        .await;
    assert_eq!(st, 201, "{rule}");
    assert_eq!(rule["to"], json!({"channel_type": "email"}), "{rule}");
    put_subscriber(
        s,
        "jb",
        json!({"addresses": {"email": "jb.new@example.com"}}),
    )
    .await;
    let mut got = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while got.is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
        got = mail_to(mock, "jb.new@example.com").await;
    }
    assert_eq!(got.len(), 1, "the rule's mail reached the new address");
    assert_eq!(got[0]["subject"], "Rule deals");
    assert!(mail_to(mock, "jb.old@example.com").await.is_empty());
    wecom(s, mock).await;
}

/// WeCom campaigns: an uploaded audience keeps each recipient once, a job of
/// user ids goes to their WeCom ids in one call, the campaign is recalled,
/// and a rule to a department alone goes out as `toparty`.
async fn wecom(s: &Server, mock: &Mock) {
    let wecom_calls = || async {
        get_json(&format!("{}/_mock/wecom/messages", mock.url))
            .await
            .1
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    let text = |t: &str| json!({"msgtype": "text", "text": {"content": t}});
    let lines = ["w1", "w2", "w1", "w3", "w2"]
        .map(|r| json!({"recipient": r}).to_string())
        .join("\n");
    let (st, aud) = s
        .post_raw("/v1/audiences?name=dups", "application/x-ndjson", lines)
        .await;
    assert_eq!(st, 201, "{aud}");
    assert_eq!(
        (aud["size"].as_u64(), aud["duplicates_removed"].as_u64()),
        (Some(3), Some(2)),
        "{aud}"
    );
    let (st, job) = s
        .post(
            "/v1/jobs",
            &json!({"audience_id": aud["id"], "channel": "wc", "message": text("uploaded")}),
        )
        .await;
    assert_eq!(st, 201, "{job}");
    let id = job["id"].as_i64().unwrap();
    let done = job_ended(s, id).await;
    assert_eq!(done["totals"]["sent"], 3, "{done}");
    let calls = wecom_calls().await;
    let call = calls
        .iter()
        .find(|m| m["body"]["text"]["content"] == "uploaded")
        .expect("the uploaded audience's call");
    let mut to: Vec<&str> = call["touser"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    to.sort();
    assert_eq!(to, ["w1", "w2", "w3"], "each once: {call}");
    let (st, v) = s.post(&format!("/v1/jobs/{id}:recall"), &json!({})).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(
        (v["messages"].as_u64(), v["recalled"].as_u64()),
        (Some(1), Some(3)),
        "{v}"
    );

    // User ids through the directory: their WeCom ids, in one call.
    put_subscriber(s, "wz", json!({"addresses": {"wecom": "zhang.wz"}})).await;
    put_subscriber(s, "wq", json!({"addresses": {"wecom": "qian.wq"}})).await;
    let (st, job) = s
        .post(
            "/v1/jobs",
            &json!({"users": ["wz", "wq", "wnone"], "channel": "wc", "to": {},
                    "message": text("directory")}),
        )
        .await;
    assert_eq!(st, 201, "{job}");
    let done = job_ended(s, job["id"].as_i64().unwrap()).await;
    assert_eq!(
        (
            done["totals"]["sent"].as_u64(),
            done["totals"]["failed"].as_u64()
        ),
        (Some(2), Some(1)),
        "{done}"
    );
    let calls = wecom_calls().await;
    let call = calls
        .iter()
        .find(|m| m["body"]["text"]["content"] == "directory")
        .expect("the directory job's call");
    let mut to: Vec<&str> = call["touser"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    to.sort();
    assert_eq!(to, ["qian.wq", "zhang.wz"], "{call}");

    // A department alone.
    let (st, v) = post_raw(
        &format!("{}/_mock/wecom/faults", mock.url),
        "application/json",
        json!({"parties": {"9": ["qian"]}}).to_string(),
    )
    .await;
    assert!(st < 300, "{v}");
    let (st, rule) = s
        .post(
            "/v1/rules",
            &json!({"name": "dept", "schedule": {"type": "immediate"},
                    "audience": {"parties": ["9"]}, "channel": "wc",
                    "message": text("department")}),
        )
        .await;
    assert_eq!(st, 201, "{rule}");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let call = loop {
        let calls = wecom_calls().await;
        if let Some(c) = calls
            .iter()
            .find(|m| m["body"]["text"]["content"] == "department")
        {
            break c.clone();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the department rule never sent"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(call["toparty"], "9", "{call}");
}

#[tokio::test]
async fn reminders_go_where_the_directory_says_on_sqlite() {
    let (mock, s) = mail_and_push(None).await;
    routing(&s, &mock).await;
    campaigns(&s, &mock).await;
}

#[tokio::test]
async fn reminders_go_where_the_directory_says_on_postgres() {
    let Some((_db, url)) = pg_database("routing") else {
        eprintln!("PostgreSQL not installed: routing test on PostgreSQL skipped");
        return;
    };
    let (mock, s) = mail_and_push(Some(&url)).await;
    routing(&s, &mock).await;
    campaigns(&s, &mock).await;
}
