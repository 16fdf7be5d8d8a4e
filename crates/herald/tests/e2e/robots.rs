//! Group robots end to end: the real `herald serve` posting through
//! `wecom_robot`, `dingtalk_robot` and `feishu_bot` to `herald mock`'s
//! robots, which check keys, signatures, shapes and rates as the providers
//! do. On SQLite and on PostgreSQL.

use crate::common;

use std::time::Duration;

use common::{Mock, Server, pg_database, wait_for};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);
const RETRY: &str = "backoff_base_ms = 200\nbackoff_max_ms = 1000\nmax_attempts = 5\n";

/// The mock's default robots (`herald_mock::robots`).
const WECOM_KEY: &str = "mock-wecom-robot";
const DINGTALK_TOKEN: &str = "mock-dingtalk-robot";
const DINGTALK_SECRET: &str = "SECmock-dingtalk-secret";
const FEISHU_TOKEN: &str = "mock-feishu-bot";
const FEISHU_SECRET: &str = "mock-feishu-secret";

fn channels(mock: &str) -> String {
    format!(
        "[[channels]]\nname = \"wc\"\nkind = \"wecom_robot\"\n\
         webhook = \"{mock}/cgi-bin/webhook/send?key={WECOM_KEY}\"\n{RETRY}\n\
         [[channels]]\nname = \"dd\"\nkind = \"dingtalk_robot\"\n\
         webhook = \"{mock}/robot/send?access_token={DINGTALK_TOKEN}\"\n\
         secret = \"{DINGTALK_SECRET}\"\n{RETRY}\n\
         [[channels]]\nname = \"fs\"\nkind = \"feishu_bot\"\n\
         webhook = \"{mock}/open-apis/bot/v2/hook/{FEISHU_TOKEN}\"\n\
         secret = \"{FEISHU_SECRET}\"\n{RETRY}\n\
         [[channels]]\nname = \"dd-wrong-secret\"\nkind = \"dingtalk_robot\"\n\
         webhook = \"{mock}/robot/send?access_token={DINGTALK_TOKEN}\"\n\
         secret = \"SECnot-the-robots\"\n{RETRY}\n\
         [[channels]]\nname = \"wc-gone\"\nkind = \"wecom_robot\"\n\
         webhook = \"{mock}/cgi-bin/webhook/send?key=no-such-robot\"\n{RETRY}\n\
         [[channels]]\nname = \"wc-burst\"\nkind = \"wecom_robot\"\n\
         webhook = \"{mock}/cgi-bin/webhook/send?key={WECOM_KEY}\"\n{RETRY}\n"
    )
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

async fn settled(s: &Server, id: i64, state: &str) -> Value {
    s.settled(id, state, WAIT).await
}

/// The bodies the mock accepted from one provider, oldest first.
async fn received(m: &Mock, provider: &str) -> Vec<Value> {
    m.get(&format!(
        "/_mock/robots/messages?provider={provider}&limit=1000"
    ))
    .await
    .as_array()
    .cloned()
    .unwrap_or_default()
    .into_iter()
    .map(|r| r["body"].clone())
    .collect()
}

async fn each_robot_delivers_mentions_signs_and_classifies(s: &Server, m: &Mock) {
    // Text with mentions, one per provider.
    let wc = timer(
        s,
        "wc",
        "zhangsan|mobile:13800000000",
        json!({"text": "coupon opens"}),
    )
    .await;
    let dd = timer(s, "dd", "u1|@all", json!({"text": "coupon opens"})).await;
    let fs = timer(s, "fs", "ou_1", json!({"text": "coupon opens"})).await;
    for id in [wc, dd, fs] {
        settled(s, id, "done").await;
    }
    let wecom = received(m, "wecom").await;
    assert_eq!(
        wecom.last().unwrap()["text"],
        json!({"content": "coupon opens", "mentioned_list": ["zhangsan"],
               "mentioned_mobile_list": ["13800000000"]})
    );
    let ding = received(m, "dingtalk").await;
    let last = ding.last().unwrap();
    assert_eq!(last["text"]["content"], "coupon opens @u1");
    assert_eq!(
        last["at"],
        json!({"atUserIds": ["u1"], "atMobiles": [], "isAtAll": true})
    );
    let feishu = received(m, "feishu").await;
    let last = feishu.last().unwrap();
    assert_eq!(
        last["content"]["text"],
        "coupon opens <at user_id=\"ou_1\"></at>"
    );
    // The mock checked the signature; the body carried it.
    assert!(
        last["sign"].as_str().is_some_and(|s| !s.is_empty()),
        "{last}"
    );

    // Markdown: DingTalk takes a title from the first line, Feishu a card.
    let dd = timer(
        s,
        "dd",
        "-",
        json!({"markdown": "## Coupon 42\nopens at **10:00**"}),
    )
    .await;
    let fs = timer(
        s,
        "fs",
        "-",
        json!({"markdown": "opens at **10:00**", "title": "Coupon 42"}),
    )
    .await;
    settled(s, dd, "done").await;
    settled(s, fs, "done").await;
    let last = received(m, "dingtalk").await.pop().unwrap();
    assert_eq!(last["markdown"]["title"], "Coupon 42");
    let last = received(m, "feishu").await.pop().unwrap();
    assert_eq!(last["msg_type"], "interactive");
    assert_eq!(last["card"]["header"]["title"]["content"], "Coupon 42");

    // A provider's own shape goes out as written.
    let news = json!({"msgtype": "news", "news": {"articles": [
        {"title": "Coupon 42", "url": "https://shop.example/c/42"}]}});
    let id = timer(s, "wc", "-", news.clone()).await;
    settled(s, id, "done").await;
    assert_eq!(received(m, "wecom").await.pop().unwrap(), news);

    // Final errors are final: a wrong secret, a robot that is gone.
    let bad = timer(s, "dd-wrong-secret", "-", json!({"text": "x"})).await;
    let gone = timer(s, "wc-gone", "-", json!({"text": "x"})).await;
    let t = settled(s, bad, "failed").await;
    assert_eq!(t["attempts"], 1, "{t}");
    assert!(
        s.deliveries(bad).await[0]["error"]
            .as_str()
            .unwrap()
            .contains("310000")
    );
    settled(s, gone, "failed").await;
    assert!(
        s.deliveries(gone).await[0]["error"]
            .as_str()
            .unwrap()
            .contains("93000")
    );

    // A mention the provider cannot make fails, naming why.
    let id = timer(s, "fs", "mobile:13800000000", json!({"text": "x"})).await;
    settled(s, id, "failed").await;
    assert!(
        s.deliveries(id).await[0]["error"]
            .as_str()
            .unwrap()
            .contains("open id")
    );

    // A server error is retried, and then delivered.
    m.post(
        "/_mock/robots/faults",
        json!({"provider": "feishu", "http_status_next": 1, "status": 502}),
    )
    .await;
    let id = timer(s, "fs", "-", json!({"text": "again"})).await;
    let t = settled(s, id, "done").await;
    assert_eq!(t["attempts"], 2, "{t}");

    // Bad messages never get in: `400 invalid_field`, the field named.
    let (st, v) = s
        .post(
            "/v1/timers",
            &json!({"delay_ms": 0, "channel": "wc", "recipient": "-",
                    "message": {"text": "a".repeat(2049)}}),
        )
        .await;
    assert_eq!(st, 400, "{v}");
    assert!(v.to_string().contains("message.text"), "{v}");
    let (st, v) = s
        .post(
            "/v1/timers",
            &json!({"delay_ms": 0, "channel": "fs", "recipient": "-",
                    "message": {"msgtype": "text", "text": {"content": "x"}}}),
        )
        .await;
    assert_eq!(st, 400, "{v}");
    assert!(v.to_string().contains("message.msgtype"), "{v}");
}

/// A `robot` template part renders for each robot kind.
async fn a_template_renders_for_every_robot(s: &Server, m: &Mock) {
    let (st, v) = s
        .post(
            "/v1/templates",
            &json!({"name": "opens", "locales": {"default": {
                "robot": {"title": "{{ title }}", "markdown": "**{{ title }}** opens at {{ at }}"}}}}),
        )
        .await;
    assert_eq!(st, 201, "{v}");
    for (channel, provider) in [("wc", "wecom"), ("dd", "dingtalk"), ("fs", "feishu")] {
        let (st, v) = s
            .post(
                "/v1/timers",
                &json!({"delay_ms": 0, "channel": channel, "recipient": "-",
                        "template": {"name": "opens",
                                     "data": {"title": "Coupon 42", "at": "10:00"}}}),
            )
            .await;
        assert_eq!(st, 201, "{v}");
        settled(s, v["id"].as_i64().unwrap(), "done").await;
        let body = received(m, provider).await.pop().unwrap().to_string();
        assert!(
            body.contains("**Coupon 42** opens at 10:00"),
            "{provider}: {body}"
        );
    }
    // A robot part in a provider's own shape is refused, naming it.
    let (st, v) = s
        .post(
            "/v1/templates",
            &json!({"name": "native", "locales": {"default": {
                "robot": {"msgtype": "text", "text": {"content": "x"}}}}}),
        )
        .await;
    assert_eq!(st, 400, "{v}");
    assert!(v.to_string().contains("locales.default.robot"), "{v}");
}

/// Pacing holds a robot to its provider's rate: the WeCom robot takes 20 a
/// minute, so of 25 sends 20 go and 5 wait, without an attempt used and
/// without the provider ever saying "too fast". (`wc-burst` is the same
/// robot under a channel of its own, so the sends before count on neither
/// side once the mock is reset.)
async fn a_robot_is_paced_not_refused(s: &Server, m: &Mock) {
    m.post("/_mock/reset", json!({})).await;
    let mut ids = Vec::new();
    for i in 0..25 {
        ids.push(timer(s, "wc-burst", "-", json!({"text": format!("burst {i}")})).await);
    }
    wait_for("20 of 25 delivered", WAIT, || async {
        received(m, "wecom").await.len() >= 20
    })
    .await;
    // Give the other five every chance to (wrongly) go.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(received(m, "wecom").await.len(), 20);
    let mut waiting = 0;
    for id in ids {
        let t = s.timer(id).await;
        if t["state"] == "pending" {
            waiting += 1;
            assert_eq!(t["attempts"], 0, "{t}");
        }
    }
    assert_eq!(waiting, 5);
    let stats = m.get("/_mock/robots/stats").await;
    assert!(!stats.to_string().contains("45009"), "{stats}");
}

/// Jobs and rules target a robot like any channel: a job to `@all` is one
/// message mentioning everyone; a weekday rule to the group is taken.
async fn jobs_and_rules_target_a_robot(s: &Server, m: &Mock) {
    let before = received(m, "dingtalk").await.len();
    let (st, job) = s
        .post(
            "/v1/jobs",
            &json!({"users": ["@all"], "channel": "dd", "message": {"text": "stand-up in 5"}}),
        )
        .await;
    assert_eq!(st, 201, "{job}");
    let id = job["id"].as_i64().unwrap();
    wait_for("the job to the robot done", WAIT, || async {
        s.get(&format!("/v1/jobs/{id}")).await.1["state"] == "done"
    })
    .await;
    let got = received(m, "dingtalk").await;
    assert_eq!(got.len(), before + 1);
    let last = got.last().unwrap();
    assert_eq!(last["text"]["content"], "stand-up in 5");
    assert_eq!(last["at"]["isAtAll"], true);
    let (st, r) = s
        .post(
            "/v1/rules",
            &json!({
                "name": "weekday-standup",
                "schedule": {"type": "cron", "cron": "0 9 * * 1-5", "timezone": "Asia/Shanghai"},
                "audience": {"users": ["@all"]},
                "channel": "dd",
                "message": {"markdown": "## Stand-up\nin the big room"},
            }),
        )
        .await;
    assert_eq!(st, 201, "{r}");
}

async fn run(store: Option<&str>) {
    let m = Mock::start(&[]).await;
    let cfg = channels(&m.url);
    let s = match store {
        None => Server::start(&cfg).await,
        Some(url) => Server::start_on(url, tempfile::tempdir().unwrap(), &cfg).await,
    };
    each_robot_delivers_mentions_signs_and_classifies(&s, &m).await;
    a_template_renders_for_every_robot(&s, &m).await;
    jobs_and_rules_target_a_robot(&s, &m).await;
    a_robot_is_paced_not_refused(&s, &m).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn robots_on_sqlite() {
    run(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn robots_on_postgres() {
    let Some((_db, url)) = pg_database("robots") else {
        return;
    };
    run(Some(&url)).await;
}
