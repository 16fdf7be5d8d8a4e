//! Office-suite app messages end to end: the real `herald serve` sending
//! DingTalk work notifications (`dingtalk_work`) and Feishu app messages
//! (`feishu_app`) to `herald mock`, which checks the tokens, the app's
//! AgentId, the bodies and batch sizes, the rate limits and the users as
//! the providers do. On SQLite and on PostgreSQL.

use crate::common;

use std::time::Duration;

use common::{Mock, Server, pg_database, wait_for};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);

fn config(mock: &str) -> String {
    format!(
        "[[channels]]\nname = \"ding\"\nkind = \"dingtalk_work\"\n\
         appkey = \"dingmockappkey0001\"\nappsecret = \"mock-dingtalk-app-secret\"\n\
         agent_id = 2000001\napi_base = \"{mock}\"\n\
         backoff_base_ms = 200\nbackoff_max_ms = 1000\nmax_attempts = 5\n\n\
         [[channels]]\nname = \"lark\"\nkind = \"feishu_app\"\n\
         app_id = \"cli_mock0000000001\"\napp_secret = \"mock-feishu-app-secret\"\n\
         receive_id_type = \"user_id\"\napi_base = \"{mock}\"\nrate_per_sec = 40\n\
         backoff_base_ms = 200\nbackoff_max_ms = 1000\nmax_attempts = 5\n"
    )
}

async fn timer(s: &Server, body: Value) -> i64 {
    let (st, v) = s.post("/v1/timers", &body).await;
    assert_eq!(st, 201, "{v}");
    v["id"].as_i64().unwrap()
}

async fn ding_stats(m: &Mock) -> Value {
    m.get("/_mock/dingtalk/stats").await
}

async fn ding_to(m: &Mock, userid: &str) -> Vec<Value> {
    m.get(&format!("/_mock/dingtalk/messages?userid={userid}"))
        .await
        .as_array()
        .cloned()
        .unwrap_or_default()
}

async fn a_work_notification_reaches_a_user(s: &Server, m: &Mock) {
    let id = timer(
        s,
        json!({"delay_ms": 0, "channel": "ding", "recipient": "manager4220",
               "message": {"markdown": "## On call\nfrom 20:00", "title": "Rota"}}),
    )
    .await;
    s.settled(id, "done", WAIT).await;
    let got = ding_to(m, "manager4220").await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(
        got[0]["msg"],
        json!({"msgtype": "markdown", "markdown": {"title": "Rota", "text": "## On call\nfrom 20:00"}})
    );
    let d = s.deliveries(id).await;
    assert_eq!(
        d[0]["provider_msgid"],
        got[0]["task_id"].to_string(),
        "the task id is the provider msgid: {d:?}"
    );

    // DingTalk's own shape goes out as written.
    let card = json!({"msgtype": "action_card", "action_card": {"title": "Approve",
                      "markdown": "Leave request", "single_title": "Open", "single_url": "https://oa.example/1"}});
    let id = timer(
        s,
        json!({"delay_ms": 0, "channel": "ding", "recipient": "manager4220", "message": card}),
    )
    .await;
    s.settled(id, "done", WAIT).await;
    assert_eq!(ding_to(m, "manager4220").await[1]["msg"], card);

    // A shape DingTalk cannot take never gets in.
    let (st, v) = s
        .post(
            "/v1/timers",
            &json!({"delay_ms": 0, "channel": "ding", "recipient": "x",
                    "message": {"msgtype": "actionCard", "actionCard": {}}}),
        )
        .await;
    assert_eq!(st, 400, "{v}");
    assert!(v.to_string().contains("message.msgtype"), "{v}");
}

async fn the_token_is_refreshed_and_limits_defer(s: &Server, m: &Mock) {
    let issued = ding_stats(m).await["tokens_issued"].as_u64().unwrap();
    m.post("/_mock/dingtalk/faults", json!({"expire_tokens": true}))
        .await;
    let id = timer(
        s,
        json!({"delay_ms": 0, "channel": "ding", "recipient": "u-refresh", "message": {"text": "after expiry"}}),
    )
    .await;
    let t = s.settled(id, "done", WAIT).await;
    assert_eq!(t["attempts"], 1, "a refused token costs no attempt: {t}");
    assert_eq!(ding_stats(m).await["tokens_issued"], issued + 1);
    assert_eq!(ding_to(m, "u-refresh").await.len(), 1);

    // 143103 (recipients a minute) is a deferral, not a failure.
    m.post("/_mock/dingtalk/faults", json!({"throttle_next": 1}))
        .await;
    let id = timer(
        s,
        json!({"delay_ms": 0, "channel": "ding", "recipient": "u-busy", "message": {"text": "later"}}),
    )
    .await;
    let t = s.settled(id, "done", WAIT).await;
    assert_eq!(t["attempts"], 1, "{t}");
    let d = s.deliveries(id).await;
    assert_eq!(d[0]["outcome"], "throttled", "{d:?}");
    assert!(d[0]["error"].to_string().contains("143103"), "{d:?}");
    assert_eq!(ding_to(m, "u-busy").await.len(), 1);
}

async fn an_unknown_user_is_a_final_error(s: &Server, m: &Mock) {
    let id = timer(
        s,
        json!({"delay_ms": 0, "channel": "ding", "recipient": "unknown-ghost", "message": {"text": "hello?"}}),
    )
    .await;
    let t = s.settled(id, "failed", WAIT).await;
    assert!(
        t["last_error"]
            .as_str()
            .unwrap()
            .contains("invalid_user_id_list"),
        "{t}"
    );
    assert_eq!(t["attempts"], 1, "{t}");
    assert!(ding_stats(m).await["invalid_users"].as_u64().unwrap() >= 1);
}

/// A job to 250 userids goes out in calls of up to 100: three calls (a few
/// more if a segment is cut), not 250; the two unknown users fail.
async fn a_job_goes_in_calls_of_a_hundred(s: &Server, m: &Mock) {
    m.post("/_mock/reset", json!({})).await;
    let mut body = String::new();
    for i in 0..250 {
        let user = if i % 125 == 3 {
            format!("unknown-{i}")
        } else {
            format!("staff-{i}")
        };
        body.push_str(&format!("{{\"recipient\":\"{user}\"}}\n"));
    }
    let (st, a) = s
        .post_raw("/v1/audiences", "application/x-ndjson", body)
        .await;
    assert_eq!(st, 201, "{a}");
    let (st, job) = s
        .post(
            "/v1/jobs",
            &json!({"audience_id": a["id"], "channel": "ding",
                    "message": {"text": "Quarterly all-hands at 15:00"}, "segment_size": 250}),
        )
        .await;
    assert_eq!(st, 201, "{job}");
    let id = job["id"].as_i64().unwrap();
    wait_for("the dingtalk job done", WAIT, || async {
        s.get(&format!("/v1/jobs/{id}")).await.1["state"] == "done"
    })
    .await;
    let j = s.get(&format!("/v1/jobs/{id}")).await.1;
    let t = &j["totals"];
    assert_eq!(
        (t["sent"].as_u64(), t["failed"].as_u64()),
        (Some(248), Some(2)),
        "{j}"
    );
    let st = ding_stats(m).await;
    let calls = st["calls"].as_u64().unwrap();
    assert!((3..=6).contains(&calls), "{st}");
    assert_eq!(st["delivered"], 248, "{st}");
    assert_eq!(st["users"], 248, "{st}");
    assert_eq!(st["repeated_users"], 0, "{st}");
}

async fn feishu_stats(m: &Mock) -> Value {
    m.get("/_mock/feishu/stats").await
}

async fn feishu_to(m: &Mock, id: &str) -> Vec<Value> {
    m.get(&format!("/_mock/feishu/messages?receive_id={id}"))
        .await
        .as_array()
        .cloned()
        .unwrap_or_default()
}

async fn a_feishu_message_reaches_a_user(s: &Server, m: &Mock) {
    let id = timer(
        s,
        json!({"delay_ms": 0, "channel": "lark", "recipient": "u-zhang", "message": {"text": "Standup in 5 minutes"}}),
    )
    .await;
    s.settled(id, "done", WAIT).await;
    let got = feishu_to(m, "u-zhang").await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["receive_id_type"], "user_id");
    assert_eq!(got[0]["content"], json!({"text": "Standup in 5 minutes"}));
    assert_eq!(got[0]["uuid"].as_str().unwrap().len(), 32, "{got:?}");
    let d = s.deliveries(id).await;
    assert_eq!(d[0]["provider_msgid"], got[0]["message_id"], "{d:?}");

    let id = timer(
        s,
        json!({"delay_ms": 0, "channel": "lark", "recipient": "u-zhang",
               "message": {"markdown": "**Deploy** at 18:00", "title": "Release"}}),
    )
    .await;
    s.settled(id, "done", WAIT).await;
    let got = feishu_to(m, "u-zhang").await;
    assert_eq!(got[1]["msg_type"], "interactive");
    assert_eq!(got[1]["content"]["header"]["title"]["content"], "Release");

    // Token refresh, a throttle as a deferral, an unknown user as final.
    let issued = feishu_stats(m).await["tokens_issued"].as_u64().unwrap();
    m.post("/_mock/feishu/faults", json!({"expire_tokens": true}))
        .await;
    let id = timer(
        s,
        json!({"delay_ms": 0, "channel": "lark", "recipient": "u-li", "message": {"text": "after expiry"}}),
    )
    .await;
    let t = s.settled(id, "done", WAIT).await;
    assert_eq!(t["attempts"], 1, "{t}");
    assert_eq!(feishu_stats(m).await["tokens_issued"], issued + 1);

    m.post("/_mock/feishu/faults", json!({"throttle_next": 1}))
        .await;
    let id = timer(
        s,
        json!({"delay_ms": 0, "channel": "lark", "recipient": "u-wang", "message": {"text": "later"}}),
    )
    .await;
    let t = s.settled(id, "done", WAIT).await;
    assert_eq!(t["attempts"], 1, "{t}");
    let d = s.deliveries(id).await;
    assert_eq!(d[0]["outcome"], "throttled", "{d:?}");
    assert!(d[0]["error"].to_string().contains("99991400"), "{d:?}");

    let id = timer(
        s,
        json!({"delay_ms": 0, "channel": "lark", "recipient": "unknown-zhao", "message": {"text": "hi"}}),
    )
    .await;
    let t = s.settled(id, "failed", WAIT).await;
    let e = t["last_error"].as_str().unwrap();
    assert!(
        e.contains("user_id \"unknown-zhao\"") && e.contains("230013"),
        "{t}"
    );
}

/// Feishu takes one receiver a call (see `feishu_app`'s docs): a job to
/// 250 users is 250 calls, each user reached once.
async fn a_feishu_job_reaches_each_user_once(s: &Server, m: &Mock) {
    m.post("/_mock/reset", json!({})).await;
    let mut body = String::new();
    for i in 0..250 {
        let user = if i % 125 == 3 {
            format!("unknown-{i}")
        } else {
            format!("staff-{i}")
        };
        body.push_str(&format!("{{\"recipient\":\"{user}\"}}\n"));
    }
    let (st, a) = s
        .post_raw("/v1/audiences", "application/x-ndjson", body)
        .await;
    assert_eq!(st, 201, "{a}");
    let (st, job) = s
        .post(
            "/v1/jobs",
            &json!({"audience_id": a["id"], "channel": "lark",
                    "message": {"text": "Office closed on Friday"}, "segment_size": 250}),
        )
        .await;
    assert_eq!(st, 201, "{job}");
    let id = job["id"].as_i64().unwrap();
    wait_for("the feishu job done", WAIT, || async {
        s.get(&format!("/v1/jobs/{id}")).await.1["state"] == "done"
    })
    .await;
    let j = s.get(&format!("/v1/jobs/{id}")).await.1;
    let t = &j["totals"];
    assert_eq!(
        (t["sent"].as_u64(), t["failed"].as_u64()),
        (Some(248), Some(2)),
        "{j}"
    );
    let st = feishu_stats(m).await;
    assert_eq!(st["delivered"], 248, "{st}");
    assert_eq!(st["receivers"], 248, "{st}");
    assert_eq!(st["repeated_receivers"], 0, "{st}");
}

/// A `robot` template part renders for both office apps: DingTalk as a
/// Markdown work notification, Feishu as a card.
async fn a_robot_template_renders_for_both(s: &Server, m: &Mock) {
    let (st, v) = s
        .post(
            "/v1/templates",
            &json!({"name": "rota", "locales": {"default": {
                "robot": {"title": "{{ title }}", "markdown": "**{{ title }}** from {{ at }}"}}}}),
        )
        .await;
    assert_eq!(st, 201, "{v}");
    for (channel, to) in [("ding", "tpl-user-1"), ("lark", "u-tpl")] {
        let id = timer(
            s,
            json!({"delay_ms": 0, "channel": channel, "recipient": to,
                   "template": {"name": "rota", "data": {"title": "On call", "at": "20:00"}}}),
        )
        .await;
        s.settled(id, "done", WAIT).await;
    }
    let ding = serde_json::to_string(&ding_to(m, "tpl-user-1").await).unwrap();
    assert!(ding.contains("**On call** from 20:00"), "{ding}");
    let lark = serde_json::to_string(&feishu_to(m, "u-tpl").await).unwrap();
    assert!(
        lark.contains("On call") && lark.contains("from 20:00"),
        "{lark}"
    );
}

async fn run(store: Option<&str>) {
    let m = Mock::start(&[]).await;
    let cfg = config(&m.url);
    let s = match store {
        None => Server::start(&cfg).await,
        Some(url) => Server::start_on(url, tempfile::tempdir().unwrap(), &cfg).await,
    };
    a_work_notification_reaches_a_user(&s, &m).await;
    the_token_is_refreshed_and_limits_defer(&s, &m).await;
    an_unknown_user_is_a_final_error(&s, &m).await;
    a_job_goes_in_calls_of_a_hundred(&s, &m).await;
    a_feishu_message_reaches_a_user(&s, &m).await;
    a_feishu_job_reaches_each_user_once(&s, &m).await;
    a_robot_template_renders_for_both(&s, &m).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn office_apps_on_sqlite() {
    run(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn office_apps_on_postgres() {
    let Some((_db, url)) = pg_database("office") else {
        return;
    };
    run(Some(&url)).await;
}
