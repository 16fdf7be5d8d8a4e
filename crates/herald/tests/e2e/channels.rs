//! Provider channels end to end: the real `herald serve` delivering over real
//! HTTP (and SMTP) to `herald mock`'s WeChat, WeCom, FCM and SMTP mocks.

use crate::common;

use std::time::Duration;

use common::{Mock, Server, get_json, now_ms, post_raw, wait_for};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);
/// Quick retries so the error-class tests finish in seconds.
const FAST_RETRY: &str = "backoff_base_ms = 100\nbackoff_max_ms = 400\nmax_attempts = 4\n";

fn wechat_channel(name: &str, mock: &str, extra: &str) -> String {
    format!(
        "[[channels]]\nname = \"{name}\"\nkind = \"wechat\"\napi_base = \"{mock}\"\n\
         appid = \"wxmockappid\"\nsecret = \"mock-wechat-secret\"\n{FAST_RETRY}{extra}\n"
    )
}

fn wecom_channel(name: &str, mock: &str, extra: &str) -> String {
    format!(
        "[[channels]]\nname = \"{name}\"\nkind = \"wecom\"\napi_base = \"{mock}\"\n\
         corpid = \"wwmockcorp\"\ncorpsecret = \"mock-wecom-secret\"\nagentid = 1000002\n\
         {FAST_RETRY}{extra}\n"
    )
}

fn fcm_key() -> String {
    format!(
        "{}/../herald-mock/tests/fixtures/fcm-service-account.json",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn fcm_channel(name: &str, mock: &str) -> String {
    format!(
        "[[channels]]\nname = \"{name}\"\nkind = \"fcm\"\napi_base = \"{mock}\"\n\
         token_url = \"{mock}/token\"\nservice_account = \"{}\"\nproject_id = \"herald-mock\"\n\
         {FAST_RETRY}\n",
        fcm_key()
    )
}

fn template() -> Value {
    json!({"template_id": "TPL_ORDER", "url": "https://example.com/o/1",
           "data": {"first": {"value": "Your coupon opens in 5 minutes"}}})
}

async fn timer(s: &Server, channel: &str, recipient: &str, message: Value) -> i64 {
    let (st, v) = s
        .post(
            "/v1/timers",
            &json!({"delay_ms": 0, "channel": channel, "recipient": recipient, "message": message}),
        )
        .await;
    assert_eq!(st, 201, "{v}");
    v["id"].as_i64().unwrap()
}

/// Waits for a timer to reach `state`; returns the timer.
async fn settled(s: &Server, id: i64, state: &str) -> Value {
    let mut last = Value::Null;
    let deadline = std::time::Instant::now() + WAIT;
    while std::time::Instant::now() < deadline {
        last = s.timer(id).await;
        if last["state"] == state {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "timer {id} never became {state}: {last}\n{}",
        deliveries(s, id).await
    );
}

async fn deliveries(s: &Server, id: i64) -> Value {
    s.get(&format!("/v1/timers/{id}/deliveries")).await.1["deliveries"].clone()
}

async fn mock_json(m: &Mock, path: &str) -> Value {
    get_json(&format!("{}{path}", m.url)).await.1
}

async fn mock_post(m: &Mock, path: &str, body: Value) {
    let (st, v) = post_raw(
        &format!("{}{path}", m.url),
        "application/json",
        body.to_string(),
    )
    .await;
    assert!(st < 300, "{path}: {st} {v}");
}

async fn channel_status(s: &Server, name: &str) -> Value {
    let (_, v) = s.get("/v1/channels").await;
    v["channels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("no channel {name} in {v}"))
}

/// `HH:MM` in UTC, `offset_ms` from now.
fn hhmm(offset_ms: i64) -> String {
    common::rfc3339(now_ms() + offset_ms)[11..16].to_string()
}

/// A `[channels.quiet_hours]` block whose window holds now and ends in ~2 h.
fn quiet_now(policy: &str) -> String {
    format!(
        "[channels.quiet_hours]\nstart = \"{}\"\nend = \"{}\"\ntimezone = \"UTC\"\npolicy = \"{policy}\"\n",
        hhmm(-60_000),
        hhmm(2 * 3_600_000)
    )
}

/// Quiet hours with the defer policy: the timer is not sent, stays pending
/// with no attempt used, and is due again at the window's end.
async fn assert_deferred(s: &Server, channel: &str, recipient: &str, message: Value) {
    let id = timer(s, channel, recipient, message).await;
    wait_for("deferred by quiet hours", WAIT, || async {
        deliveries(s, id).await[0]["outcome"] == "deferred"
    })
    .await;
    let t = s.timer(id).await;
    assert_eq!(t["state"], "pending", "{t}");
    assert_eq!(t["attempts"], 0, "{t}");
    let due = common::parse_ms(t["due_at"].as_str().unwrap());
    assert!(due > now_ms() + 3_600_000, "due at the window's end: {t}");
    let st = channel_status(s, channel).await;
    assert_eq!(st["outcomes"]["delivered"], 0, "{st}");
    assert!(
        st["quiet_hours"].as_str().unwrap().ends_with("(defer)"),
        "{st}"
    );
}

/// Runs `herald ARGS --server URL` to completion; its JSON answer.
fn cli(s: &Server, args: &[&str]) -> Value {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_herald"))
        .args(args)
        .args(["--server", &s.url])
        .env_remove("HERALD_KEY")
        .output()
        .expect("run herald");
    assert!(out.status.success(), "herald {args:?}: {out:?}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"))
}

/// An operator's pause: due timers are not sent and use no attempt; the
/// pause shows in `GET /v1/channels`; a resume sends them.
async fn assert_pause_holds_and_resume_sends(s: &Server, mock: &Mock) {
    let (code, v) = s
        .post(
            "/v1/channels/wx_hold:pause",
            &json!({"reason": "provider incident"}),
        )
        .await;
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["paused"]["reason"], "provider incident", "{v}");
    assert_eq!(v["paused"]["until"], Value::Null, "{v}");
    let ids = [
        timer(s, "wx_hold", "oHeld-1", template()).await,
        timer(s, "wx_hold", "oHeld-2", template()).await,
    ];
    // Well past the due time and the engine's pause poll: nothing went out.
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    for id in ids {
        let t = s.timer(id).await;
        // Held in this node's channel queue ("firing" while fetched), never sent.
        assert!(t["state"] == "pending" || t["state"] == "firing", "{t}");
        assert_eq!(t["attempts"], 0, "{t}");
        assert_eq!(deliveries(s, id).await, json!([]));
    }
    assert_eq!(
        mock_json(mock, "/_mock/wechat/messages?touser=oHeld-1").await,
        json!([])
    );
    let st = channel_status(s, "wx_hold").await;
    assert_eq!(st["paused"]["reason"], "provider incident", "{st}");
    assert!(st["paused"]["since"].is_string(), "{st}");
    assert_eq!(st["token"]["valid"], true, "{st}");
    assert_eq!(channel_status(s, "wx").await["paused"], Value::Null);
    // Bad requests change nothing.
    let past = common::rfc3339(now_ms() - 1_000);
    let (code, v) = s
        .post("/v1/channels/wx_hold:pause", &json!({"until": past}))
        .await;
    assert_eq!((code, &v["error"]["field"]), (400, &json!("until")), "{v}");
    let (code, _) = s.post("/v1/channels/nope:pause", &json!({})).await;
    assert_eq!(code, 404);
    let (code, v) = s.post("/v1/channels/wx_hold:stop", &json!({})).await;
    assert_eq!(
        (code, &v["error"]["code"]),
        (404, &json!("unknown_action")),
        "{v}"
    );

    // The CLI resumes it, and previews a rule's schedule on the way.
    let v = cli(s, &["channels", "resume", "wx_hold"]);
    assert_eq!(v["paused"], Value::Null, "{v}");
    let rule = std::env::temp_dir().join(format!("herald-preview-{}.json", std::process::id()));
    let schedule = json!({"schedule": {"type": "cron", "cron": "0 9 * * *", "timezone": "UTC"}});
    std::fs::write(&rule, schedule.to_string()).unwrap();
    let path = rule.to_str().unwrap();
    let v = cli(
        s,
        &[
            "rules",
            "preview",
            "--file",
            path,
            "--count",
            "2",
            "--from",
            "2030-01-01T00:00:00Z",
        ],
    );
    let _ = std::fs::remove_file(&rule);
    assert_eq!(
        v["instants"],
        json!(["2030-01-01T09:00:00.000Z", "2030-01-02T09:00:00.000Z"])
    );
    for id in ids {
        let t = settled(s, id, "done").await;
        assert_eq!(t["attempts"], 1, "{t}");
    }
}

#[tokio::test]
async fn wechat_delivers_classifies_refreshes_throttles_and_hears_callbacks() {
    let mock = Mock::start(&[]).await;
    let m = mock.url.clone();
    let quiet_defer = quiet_now("defer");
    let quiet_drop = quiet_now("drop");
    let cfg = format!(
        "{}{}{}{}{}",
        wechat_channel("wx", &m, "token_mode = \"classic\"\n"),
        wechat_channel("wx_night", &m, &quiet_defer),
        wechat_channel("wx_drop", &m, &quiet_drop),
        wechat_channel("wx_hold", &m, ""),
        wechat_channel(
            "wx_rem",
            &m,
            "reminder_template = { template_id = \"TPL_REMIND\", \
             data = { first = { value = \"{subject} opens at {start_at}\" } } }\n"
        ),
    );
    let s = Server::start(&cfg).await;
    mock_post(
        &mock,
        "/_mock/wechat/config",
        json!({"callback_url": format!("{}/v1/channels/wx/callback", s.url)}),
    )
    .await;

    // A normal delivery: done, with the provider's msgid in the send log and
    // the delivery callback's final status on it.
    let id = timer(&s, "wx", "oUser-ok", template()).await;
    settled(&s, id, "done").await;
    let d = deliveries(&s, id).await;
    let msgid = d[0]["provider_msgid"]
        .as_str()
        .expect("msgid recorded")
        .to_string();
    assert!(msgid.parse::<u64>().is_ok(), "{d}");
    wait_for("callback final status", WAIT, || async {
        deliveries(&s, id).await[0]["final_status"] == "success"
    })
    .await;
    // The key went out as client_msg_id.
    let sent = mock_json(&mock, "/_mock/wechat/messages?touser=oUser-ok").await;
    assert_eq!(sent[0]["client_msg_id"], d[0]["idempotency_key"], "{sent}");

    // Permanent errors: unsubscribed (43004), invalid openid (40003), a user who
    // blocked the account (43019). One attempt each, timer failed.
    mock_post(
        &mock,
        "/_mock/wechat/faults",
        json!({"unsubscribed": ["oGone"], "invalid_openids": ["oBad"], "blocked": ["oBlock"],
               "callback_block": ["oUser-blocks-later"]}),
    )
    .await;
    for openid in ["oGone", "oBad", "oBlock"] {
        let id = timer(&s, "wx", openid, template()).await;
        let t = settled(&s, id, "failed").await;
        assert_eq!(t["attempts"], 1, "{t}");
    }
    // A user block reported later by the callback.
    let id = timer(&s, "wx", "oUser-blocks-later", template()).await;
    settled(&s, id, "done").await;
    wait_for("callback user block", WAIT, || async {
        deliveries(&s, id).await[0]["final_status"] == "user_block"
    })
    .await;

    // A message missing its template is refused when the timer is created,
    // never accepted to fail when it fires.
    let (st, v) = s
        .post(
            "/v1/timers",
            &json!({"delay_ms": 0, "channel": "wx", "recipient": "oUser-x", "message": {"data": {}}}),
        )
        .await;
    assert_eq!(
        (st, v["error"]["field"].as_str()),
        (400, Some("message.template_id")),
        "{v}"
    );

    // -1 (system busy) twice: retried with backoff, delivered on the third attempt.
    mock_post(
        &mock,
        "/_mock/wechat/faults",
        json!({"system_busy_next": 2}),
    )
    .await;
    let id = timer(&s, "wx", "oUser-busy", template()).await;
    let t = settled(&s, id, "done").await;
    assert_eq!(t["attempts"], 3, "{t}");

    // Token expiry mid-run: every token so far answers 42001. Exactly one new
    // fetch (classic mode: a second fetch would retire the first), no message lost.
    let before = mock_json(&mock, "/_mock/wechat/stats").await["token_fetches"]
        .as_u64()
        .unwrap();
    let mut ids = Vec::new();
    for i in 0..20 {
        ids.push(timer(&s, "wx", &format!("oRun-{i}"), template()).await);
    }
    mock_post(
        &mock,
        "/_mock/wechat/faults",
        json!({"expire_tokens": true}),
    )
    .await;
    for i in 20..40 {
        ids.push(timer(&s, "wx", &format!("oRun-{i}"), template()).await);
    }
    for id in &ids {
        settled(&s, *id, "done").await;
    }
    let after = mock_json(&mock, "/_mock/wechat/stats").await["token_fetches"]
        .as_u64()
        .unwrap();
    assert_eq!(after, before + 1, "exactly one refresh");

    // Throttling (45009): the channel pauses; the deliveries go later without
    // using attempts, and nothing ends dead.
    mock_post(&mock, "/_mock/wechat/faults", json!({"quota_next": 3})).await;
    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(timer(&s, "wx", &format!("oThrottled-{i}"), template()).await);
    }
    let mut throttled_rows = 0;
    for id in &ids {
        let t = settled(&s, *id, "done").await;
        let d = deliveries(&s, *id).await;
        let rows = d.as_array().unwrap();
        let throttled = rows.iter().filter(|r| r["outcome"] == "throttled").count();
        throttled_rows += throttled;
        // Throttled attempts are not counted against the timer.
        assert_eq!(t["attempts"], 1, "{t} {d}");
    }
    assert!(throttled_rows >= 1, "the throttles are in the send log");
    let st = channel_status(&s, "wx").await;
    assert!(st["outcomes"]["throttled"].as_u64().unwrap() >= 1, "{st}");
    assert!(st["outcomes"]["delivered"].as_u64().unwrap() >= 45, "{st}");
    assert!(st["token_valid_until"].as_i64().unwrap() > now_ms(), "{st}");

    assert_pause_holds_and_resume_sends(&s, &mock).await;

    // Quiet hours, defer: not sent, due again at the window's end, no attempt used.
    assert_deferred(&s, "wx_night", "oSleeper", template()).await;
    assert_eq!(
        mock_json(&mock, "/_mock/wechat/messages?touser=oSleeper").await,
        json!([])
    );
    // Quiet hours, drop: failed with the reason recorded.
    let id = timer(&s, "wx_drop", "oSleeper2", template()).await;
    let t = settled(&s, id, "failed").await;
    assert!(
        t["last_error"].as_str().unwrap().contains("quiet hours"),
        "{t}"
    );

    // A reminder goes out in the channel's template shape.
    let start = common::rfc3339(now_ms() + 5 * 60_000 + 1_000);
    let (code, v) = s
        .put(
            "/v1/subjects/coupon-9",
            &json!({"start_at": start, "title": "20 off over 100"}),
        )
        .await;
    assert_eq!(code, 201, "{v}");
    let (code, v) = s
        .post(
            "/v1/reminders",
            &json!({"user_id": "oRemind", "subject_id": "coupon-9", "channel_type": "app",
                    "lead_minutes": 5, "channel": "wx_rem"}),
        )
        .await;
    assert_eq!(code, 201, "{v}");
    wait_for("the reminder", WAIT, || async {
        mock_json(&mock, "/_mock/wechat/messages?touser=oRemind")
            .await
            .as_array()
            .is_some_and(|a| !a.is_empty())
    })
    .await;
    let sent = mock_json(&mock, "/_mock/wechat/messages?touser=oRemind").await;
    assert_eq!(sent[0]["template_id"], "TPL_REMIND", "{sent}");
    let start_utc = s.get("/v1/subjects/coupon-9").await.1["start_at"].clone();
    assert_eq!(
        sent[0]["data"]["first"]["value"],
        format!("20 off over 100 opens at {}", start_utc.as_str().unwrap()),
        "{sent}"
    );

    // Callback input is validated.
    let (code, v) = s
        .post_raw(
            "/v1/channels/wx/callback",
            "text/xml",
            "<xml><Event>subscribe</Event></xml>".into(),
        )
        .await;
    assert_eq!(code, 400, "{v}");
    assert_eq!(v["error"]["field"], "body");
    let stats = mock_json(&mock, "/_mock/wechat/stats").await;
    assert_eq!(stats["duplicates"], 0, "{stats}");
}

#[tokio::test]
async fn wecom_campaign_batches_by_1000_marks_invalid_users_and_recalls() {
    let mock = Mock::start(&[]).await;
    let s = Server::start(&format!(
        "{}{}",
        wecom_channel("wc", &mock.url, ""),
        wecom_channel("wc_night", &mock.url, &quiet_now("defer"))
    ))
    .await;
    mock_post(
        &mock,
        "/_mock/wecom/faults",
        json!({"invalid_users": ["user-77"]}),
    )
    .await;

    let users: Vec<String> = (0..10_000).map(|i| format!("user-{i}")).collect();
    let (st, job) = s
        .post(
            "/v1/jobs",
            &json!({"users": users, "channel": "wc",
                    "message": {"msgtype": "text", "text": {"content": "Sale starts at nine"}}}),
        )
        .await;
    assert_eq!(st, 201, "{job}");
    let id = job["id"].as_i64().unwrap();
    wait_for("campaign done", Duration::from_secs(120), || async {
        s.get(&format!("/v1/jobs/{id}")).await.1["state"] == "done"
    })
    .await;
    let stats = mock_json(&mock, "/_mock/wecom/stats").await;
    assert_eq!(stats["send_calls"], 10, "{stats}");
    assert_eq!(stats["delivered_users"], 9_999, "{stats}");
    let job = s.get(&format!("/v1/jobs/{id}")).await.1;
    assert_eq!(job["totals"]["sent"], 9_999, "{job}");
    assert_eq!(job["totals"]["failed"], 1, "{job}");
    let sends = s
        .get(&format!("/v1/jobs/{id}/sends?start=77&end=78"))
        .await
        .1;
    assert_eq!(sends["sends"][0]["state"], "failed", "{sends}");
    assert_eq!(sends["sends"][0]["recipient"], "user-77", "{sends}");

    // Token expiry: one new gettoken, the message still goes out.
    let before = mock_json(&mock, "/_mock/wecom/stats").await["token_fetches"]
        .as_u64()
        .unwrap();
    mock_post(&mock, "/_mock/wecom/faults", json!({"expire_tokens": true})).await;
    let text = json!({"msgtype": "text", "text": {"content": "hello"}});
    let tid = timer(&s, "wc", "alice", text.clone()).await;
    settled(&s, tid, "done").await;
    let after = mock_json(&mock, "/_mock/wecom/stats").await["token_fetches"]
        .as_u64()
        .unwrap();
    assert_eq!(after, before + 1);

    // 45033 (concurrent limit): throttled, then delivered on the same attempt.
    mock_post(&mock, "/_mock/wecom/faults", json!({"busy_next": 1})).await;
    let bid = timer(&s, "wc", "bob", text.clone()).await;
    let t = settled(&s, bid, "done").await;
    assert_eq!(t["attempts"], 1, "{t}");

    // 81013: every recipient invalid: permanent.
    mock_post(
        &mock,
        "/_mock/wecom/faults",
        json!({"invalid_users": ["ghost"]}),
    )
    .await;
    let gid = timer(&s, "wc", "ghost", text.clone()).await;
    settled(&s, gid, "failed").await;

    // Recall: works once within 24 h, then says it was recalled.
    let d = deliveries(&s, tid).await;
    let did = d[0]["id"].as_i64().unwrap();
    let (code, v) = s
        .post(&format!("/v1/deliveries/{did}:recall"), &json!({}))
        .await;
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["final_status"], "recalled");
    assert_eq!(mock_json(&mock, "/_mock/wecom/stats").await["recalled"], 1);
    let (code, v) = s
        .post(&format!("/v1/deliveries/{did}:recall"), &json!({}))
        .await;
    assert_eq!(code, 409, "{v}");
    assert_eq!(v["error"]["code"], "already_recalled");
    assert_eq!(deliveries(&s, tid).await[0]["final_status"], "recalled");
    // A failed delivery cannot be recalled; a missing one is 404; bad ids are 400.
    let fid = deliveries(&s, gid).await[0]["id"].as_i64().unwrap();
    let (code, v) = s
        .post(&format!("/v1/deliveries/{fid}:recall"), &json!({}))
        .await;
    assert_eq!(
        (code, v["error"]["code"].clone()),
        (409, json!("not_recallable"))
    );
    assert_eq!(
        s.post("/v1/deliveries/999999:recall", &json!({})).await.0,
        404
    );
    assert_eq!(s.post("/v1/deliveries/x:recall", &json!({})).await.0, 400);

    // The whole campaign: its ten messages (1,000 users each) come back;
    // again, nothing is left to recall.
    let (code, v) = s.post(&format!("/v1/jobs/{id}:recall"), &json!({})).await;
    assert_eq!(code, 200, "{v}");
    assert_eq!(
        (
            v["messages"].clone(),
            v["recalled"].clone(),
            v["failed"].clone()
        ),
        (json!(10), json!(9_999), json!(0)),
        "{v}"
    );
    assert_eq!(mock_json(&mock, "/_mock/wecom/stats").await["recalled"], 11);
    let sends = s.get(&format!("/v1/jobs/{id}/sends?start=0&end=1")).await.1;
    assert_eq!(sends["sends"][0]["final_status"], "recalled", "{sends}");
    let (code, v) = s.post(&format!("/v1/jobs/{id}:recall"), &json!({})).await;
    assert_eq!(code, 200, "{v}");
    assert_eq!(
        (v["recalled"].clone(), v["already_recalled"].clone()),
        (json!(0), json!(9_999)),
        "{v}"
    );
    assert_eq!(mock_json(&mock, "/_mock/wecom/stats").await["recalled"], 11);
    assert_eq!(s.post("/v1/jobs/999999:recall", &json!({})).await.0, 404);

    assert_deferred(&s, "wc_night", "dave", text).await;
}

#[tokio::test]
async fn fcm_delivers_and_classifies_by_error_code() {
    let key = fcm_key();
    let mock = Mock::start(&["--fcm-service-account", &key]).await;
    let s = Server::start(&format!(
        "{}{}{}",
        fcm_channel("push", &mock.url),
        fcm_channel("push_night", &mock.url),
        quiet_now("defer")
    ))
    .await;
    let push = json!({"notification": {"title": "Coupon", "body": "Opens in 5 minutes"},
                      "data": {"coupon": "C-1"}});

    let id = timer(&s, "push", "device-ok", push.clone()).await;
    settled(&s, id, "done").await;
    let d = deliveries(&s, id).await;
    assert!(
        d[0]["provider_msgid"]
            .as_str()
            .unwrap()
            .starts_with("projects/herald-mock/messages/"),
        "{d}"
    );

    // UNREGISTERED: the device token is gone for good.
    mock_post(
        &mock,
        "/_mock/fcm/faults",
        json!({"unregistered": ["device-gone"]}),
    )
    .await;
    let id = timer(&s, "push", "device-gone", push.clone()).await;
    let t = settled(&s, id, "failed").await;
    assert!(
        t["last_error"].as_str().unwrap().contains("UNREGISTERED"),
        "{t}"
    );

    // UNAVAILABLE: retried, delivered on the second attempt.
    mock_post(&mock, "/_mock/fcm/faults", json!({"unavailable_next": 1})).await;
    let id = timer(&s, "push", "device-2", push.clone()).await;
    let t = settled(&s, id, "done").await;
    assert_eq!(t["attempts"], 2, "{t}");

    // QUOTA_EXCEEDED with Retry-After: throttled, no attempt used.
    mock_post(
        &mock,
        "/_mock/fcm/faults",
        json!({"quota_next": 1, "retry_after_secs": 1}),
    )
    .await;
    let id = timer(&s, "push", "device-3", push.clone()).await;
    let t = settled(&s, id, "done").await;
    assert_eq!(t["attempts"], 1, "{t}");
    let d = deliveries(&s, id).await;
    assert_eq!(d[0]["outcome"], "throttled", "{d}");

    // Token expiry: one refresh, delivered.
    let before = mock_json(&mock, "/_mock/fcm/stats").await["token_fetches"]
        .as_u64()
        .unwrap();
    mock_post(&mock, "/_mock/fcm/faults", json!({"expire_tokens": true})).await;
    let id = timer(&s, "push", "device-4", push.clone()).await;
    settled(&s, id, "done").await;
    assert_deferred(&s, "push_night", "device-5", push).await;
    let after = mock_json(&mock, "/_mock/fcm/stats").await["token_fetches"]
        .as_u64()
        .unwrap();
    assert_eq!(after, before + 1);
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test]
async fn smtp_mail_reaches_a_real_smtp_server_and_secrets_stay_out_of_logs() {
    let port = free_port();
    let smtp = format!("127.0.0.1:{port}");
    let mock = Mock::start(&[
        "--smtp-listen",
        &smtp,
        "--smtp-username",
        "herald",
        "--smtp-password",
        "smtp-pass-7f3a",
    ])
    .await;
    let night = format!(
        "[[channels]]\nname = \"mail_night\"\nkind = \"smtp\"\nhost = \"127.0.0.1\"\nport = {port}\n\
         tls = \"none\"\nallow_insecure_auth = true\nusername = \"herald\"\npassword_env = \"HERALD_TEST_SMTP_PASSWORD\"\n\
         from = \"herald@example.com\"\n{}",
        quiet_now("defer")
    );
    let cfg = format!(
        "[[channels]]\nname = \"mail\"\nkind = \"smtp\"\nhost = \"127.0.0.1\"\nport = {port}\n\
         tls = \"none\"\nallow_insecure_auth = true\nusername = \"herald\"\npassword_env = \"HERALD_TEST_SMTP_PASSWORD\"\n\
         from = \"Herald <herald@example.com>\"\n{FAST_RETRY}\n{}{}{}",
        wechat_channel("wx", &mock.url, "").replace(
            "secret = \"mock-wechat-secret\"",
            "secret_env = \"HERALD_TEST_WX_SECRET\""
        ),
        wecom_channel("wc", &mock.url, ""),
        night,
    );
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("data").join("herald.db");
    let s = Server::start_with_env(
        &format!("sqlite://{}", db.display()),
        dir,
        &cfg,
        &[
            ("HERALD_TEST_SMTP_PASSWORD", "smtp-pass-7f3a"),
            ("HERALD_TEST_WX_SECRET", "mock-wechat-secret"),
            ("RUST_LOG", "debug"),
        ],
    )
    .await;

    let mail = json!({"subject": "Your coupon opens soon", "text": "In 5 minutes."});
    let id = timer(&s, "mail", "alice@example.com", mail.clone()).await;
    settled(&s, id, "done").await;
    let got = mock_json(&mock, "/_mock/smtp/messages?to=alice@example.com").await;
    assert_eq!(got[0]["subject"], "Your coupon opens soon", "{got}");
    assert!(got[0]["body"].as_str().unwrap().contains("In 5 minutes."));
    assert_eq!(got[0]["auth_user"], "herald");

    // 550 at RCPT: permanent. 451: retried, then delivered.
    mock_post(
        &mock,
        "/_mock/smtp/faults",
        json!({"reject": ["nobody@example.com"]}),
    )
    .await;
    let id = timer(&s, "mail", "nobody@example.com", mail.clone()).await;
    settled(&s, id, "failed").await;
    mock_post(&mock, "/_mock/smtp/faults", json!({"tempfail_next": 1})).await;
    let id = timer(&s, "mail", "bob@example.com", mail.clone()).await;
    let t = settled(&s, id, "done").await;
    assert_eq!(t["attempts"], 2, "{t}");
    // Not an address: permanent, before any connection.
    let id = timer(&s, "mail", "not an address", mail.clone()).await;
    settled(&s, id, "failed").await;
    assert_deferred(&s, "mail_night", "erin@example.com", mail).await;

    // Every provider used once, then look for the secrets everywhere they could leak.
    let id = timer(&s, "wx", "oSecret", template()).await;
    settled(&s, id, "done").await;
    let id = timer(
        &s,
        "wc",
        "carol",
        json!({"msgtype": "markdown", "markdown": {"content": "**hi**"}}),
    )
    .await;
    settled(&s, id, "done").await;
    let channels = s.get("/v1/channels").await.1.to_string();
    let log = s.log();
    assert!(log.contains("herald"), "the log has content");
    for secret in ["smtp-pass-7f3a", "mock-wechat-secret", "mock-wecom-secret"] {
        assert!(!channels.contains(secret), "{secret} in /v1/channels");
        assert!(!log.contains(secret), "{secret} in the server log");
    }
    // Nor the access tokens the mocks issued (theirs carry these markers).
    for marker in ["MOCKWX", "MOCKWC", "ya29."] {
        assert!(
            !log.contains(marker),
            "an access token ({marker}...) in the server log"
        );
        assert!(
            !channels.contains(marker),
            "an access token in /v1/channels"
        );
    }
}

/// Rules to departments and tags go out through WeCom as `toparty` and
/// `totag`, with the users beside them; a rule with parties only sends too.
/// Each party and tag is a send of its own in the job's totals.
#[tokio::test]
async fn a_rule_sends_to_departments_and_tags_through_wecom() {
    let mock = Mock::start(&[]).await;
    let s = Server::start(&wecom_channel("wc", &mock.url, "")).await;
    // The mock's directory: departments and tags with their members.
    mock_post(
        &mock,
        "/_mock/wecom/faults",
        json!({"parties": {"2": ["li", "wang"], "3": ["zhao"], "9": ["qian"]},
               "tags": {"7": ["sun"]}}),
    )
    .await;
    let mut rules = Vec::new();
    for (name, audience) in [
        (
            "mixed",
            json!({"users": ["zhang"], "parties": ["2", "3"], "tags": ["7"]}),
        ),
        ("parties only", json!({"parties": ["9"]})),
    ] {
        let (st, r) = s
            .post(
                "/v1/rules",
                &json!({"name": name, "schedule": {"type": "immediate"}, "audience": audience,
                        "channel": "wc",
                        "message": {"msgtype": "text", "text": {"content": name}}}),
            )
            .await;
        assert_eq!(st, 201, "{r}");
        rules.push(r["id"].as_i64().unwrap());
    }
    // An uploaded audience does not take parties beside it.
    let (st, refused) = s
        .post(
            "/v1/rules",
            &json!({"name": "x", "schedule": {"type": "immediate"},
                    "audience": {"audience_id": 1, "parties": ["2"]}, "channel": "wc",
                    "message": {"msgtype": "text", "text": {"content": "x"}}}),
        )
        .await;
    assert_eq!(st, 400, "{refused}");
    assert_eq!(
        refused["error"]["field"], "audience.audience_id",
        "{refused}"
    );

    let mut totals = Vec::new();
    for id in &rules {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        let job = loop {
            let tasks = s.get(&format!("/v1/rules/{id}/tasks")).await.1;
            if let Some(job_id) = tasks["tasks"][0]["job"]["id"].as_i64() {
                let job = s.get(&format!("/v1/jobs/{job_id}")).await.1;
                if job["state"] == "done" {
                    break job;
                }
            }
            assert!(
                std::time::Instant::now() < deadline,
                "rule {id}'s job did not finish: {tasks}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        totals.push(job["totals"].clone());
    }
    assert_eq!(totals[0]["sent"], 4, "{:?}", totals);
    assert_eq!(totals[1]["sent"], 1, "{:?}", totals);
    let sent = mock_json(&mock, "/_mock/wecom/messages").await;
    let calls = sent.as_array().unwrap();
    let mixed = calls
        .iter()
        .find(|m| m["body"]["text"]["content"] == "mixed")
        .expect("the mixed rule's call");
    assert_eq!(mixed["touser"], json!(["zhang"]), "{mixed}");
    assert_eq!(mixed["toparty"], "2|3", "{mixed}");
    assert_eq!(mixed["totag"], "7", "{mixed}");
    let parties = calls
        .iter()
        .find(|m| m["body"]["text"]["content"] == "parties only")
        .expect("the parties-only rule's call");
    assert_eq!(parties["toparty"], "9", "{parties}");
}
