//! The WeCom app-message mock over real HTTP.

use std::sync::Arc;

use herald_mock::{MockConfig, MockServer, WecomMessage, WecomStats};
use serde_json::{Value, json};

struct Wc {
    server: MockServer,
    http: reqwest::Client,
}

impl Wc {
    async fn start() -> Wc {
        let server = MockServer::start("127.0.0.1:0".parse().unwrap(), MockConfig::default())
            .await
            .expect("mock server starts");
        Wc {
            server,
            http: reqwest::Client::new(),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.server.base_url())
    }

    async fn get(&self, path: &str) -> Value {
        let resp = self.http.get(self.url(path)).send().await.unwrap();
        assert_eq!(resp.status(), 200, "GET {path}");
        resp.json().await.unwrap()
    }

    async fn post_status(&self, path: &str, body: String) -> (u16, Value) {
        let resp = self
            .http
            .post(self.url(path))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap())
    }

    async fn post(&self, path: &str, body: Value) -> Value {
        let (status, v) = self.post_status(path, body.to_string()).await;
        assert_eq!(status, 200, "POST {path}: {v}");
        v
    }

    async fn token_call(&self, corpid: &str, secret: &str) -> Value {
        self.get(&format!(
            "/cgi-bin/gettoken?corpid={corpid}&corpsecret={secret}"
        ))
        .await
    }

    async fn token(&self) -> String {
        let v = self.token_call("wwmockcorp", "mock-wecom-secret").await;
        assert_code(&v, 0);
        v["access_token"].as_str().expect("a token").to_owned()
    }

    async fn send(&self, token: &str, body: Value) -> Value {
        self.post(&format!("/cgi-bin/message/send?access_token={token}"), body)
            .await
    }

    async fn recall(&self, token: &str, msgid: &str) -> Value {
        self.post(
            &format!("/cgi-bin/message/recall?access_token={token}"),
            json!({ "msgid": msgid }),
        )
        .await
    }

    async fn faults(&self, f: Value) -> Value {
        self.post("/_mock/wecom/faults", f).await
    }

    async fn advance(&self, secs: i64) {
        self.post("/_mock/wecom/clock", json!({ "advance_secs": secs }))
            .await;
    }

    async fn stats(&self) -> WecomStats {
        serde_json::from_value(self.get("/_mock/wecom/stats").await).unwrap()
    }

    async fn messages(&self, query: &str) -> Vec<WecomMessage> {
        serde_json::from_value(self.get(&format!("/_mock/wecom/messages{query}")).await).unwrap()
    }
}

fn text(touser: &str) -> Value {
    json!({
        "touser": touser, "msgtype": "text", "agentid": 1000002,
        "text": {"content": "hello"}, "safe": 0,
    })
}

#[track_caller]
fn assert_code(v: &Value, code: i64) {
    assert_eq!(v["errcode"], code, "{v}");
    if code != 0 {
        let msg = v["errmsg"].as_str().unwrap_or_default();
        assert!(msg.contains(" rid: "), "errmsg carries a rid: {v}");
    }
}

fn msgid(v: &Value) -> String {
    assert_code(v, 0);
    v["msgid"].as_str().expect("string msgid").to_owned()
}

#[tokio::test]
async fn gettoken_checks_credentials_and_reuses_a_live_token() {
    let wc = Wc::start().await;
    assert_code(&wc.token_call("wrong", "mock-wecom-secret").await, 40013);
    assert_code(&wc.token_call("wwmockcorp", "wrong").await, 40001);
    assert_code(&wc.get("/cgi-bin/gettoken?corpid=wwmockcorp").await, 41004);
    let first = wc.token_call("wwmockcorp", "mock-wecom-secret").await;
    assert_eq!(first["errmsg"], "ok");
    assert_eq!(first["expires_in"], 7200);
    wc.advance(1000).await;
    let second = wc.token_call("wwmockcorp", "mock-wecom-secret").await;
    assert_eq!(second["access_token"], first["access_token"]);
    // Real time passes between the calls too, so allow a second of rounding.
    let left = second["expires_in"].as_i64().unwrap();
    assert!((6199..=6200).contains(&left), "{left}");
    let t = first["access_token"].as_str().unwrap().to_owned();
    msgid(&wc.send(&t, text("u1")).await);

    wc.advance(6200).await;
    assert_code(&wc.send(&t, text("u1")).await, 42001);
    let t2 = wc.token().await;
    assert_ne!(t2, t);
    msgid(&wc.send(&t2, text("u1")).await);
    assert_code(&wc.send("nonsense", text("u1")).await, 40014);
    assert_code(&wc.post("/cgi-bin/message/send", text("u1")).await, 41001);

    let s = wc.stats().await;
    assert_eq!(s.token_fetches, 2);
    assert_eq!(s.token_calls, 3);
    assert_eq!(s.send_calls, 5);
    for (code, n) in [
        ("40013", 1),
        ("40001", 1),
        ("41004", 1),
        ("42001", 1),
        ("40014", 1),
        ("41001", 1),
    ] {
        assert_eq!(s.errors.get(code), Some(&n), "{code}: {:?}", s.errors);
    }
}

#[tokio::test]
async fn expire_tokens_and_injected_errors() {
    let wc = Wc::start().await;
    let t = wc.token().await;
    let f = wc
        .faults(
            json!({"system_busy_next": 1, "busy_next": 1, "freq_next": 2, "expire_tokens": true}),
        )
        .await;
    assert_eq!(f["expire_tokens"], false);
    assert_eq!(f["freq_next"], 2);
    assert_code(&wc.send(&t, text("u1")).await, 42001);
    let t = wc.token().await;
    assert_code(&wc.send(&t, text("u1")).await, -1);
    assert_code(&wc.send(&t, text("u1")).await, 45033);
    assert_code(&wc.send(&t, text("u1")).await, 45009);
    assert_eq!(wc.get("/_mock/wecom/faults").await["freq_next"], 1);
    assert_code(&wc.send(&t, text("u1")).await, 45009);
    msgid(&wc.send(&t, text("u1")).await);
    let s = wc.stats().await;
    assert_eq!(s.delivered_users, 1);
    assert_eq!(s.errors.get("45009"), Some(&2));
}

#[tokio::test]
async fn send_validates_agent_type_and_content() {
    let wc = Wc::start().await;
    let t = wc.token().await;
    let mut m = text("u1");
    m["agentid"] = json!(1000003);
    assert_code(&wc.send(&t, m).await, 40056);
    let mut m = text("u1");
    m["agentid"] = json!("1000002");
    msgid(&wc.send(&t, m).await);
    let mut m = text("u1");
    m.as_object_mut().unwrap().remove("agentid");
    assert_code(&wc.send(&t, m).await, 41011);
    let mut m = text("u1");
    m["msgtype"] = json!("hologram");
    assert_code(&wc.send(&t, m).await, 40008);
    let mut m = text("u1");
    m.as_object_mut().unwrap().remove("text");
    assert_code(&wc.send(&t, m).await, 40058);

    // 2048 bytes of content pass, 2049 do not; the field is named.
    let mut m = text("u1");
    m["text"]["content"] = json!("字".repeat(682) + "ab");
    msgid(&wc.send(&t, m).await);
    let mut m = text("u1");
    m["text"]["content"] = json!("a".repeat(2049));
    let v = wc.send(&t, m).await;
    assert_code(&v, 40058);
    assert!(
        v["errmsg"].as_str().unwrap().contains("text.content"),
        "{v}"
    );
    let v = wc
        .send(
            &t,
            json!({"touser": "u1", "msgtype": "markdown", "agentid": 1000002,
                   "markdown": {"content": "x".repeat(3000)}}),
        )
        .await;
    assert_code(&v, 40058);
    assert!(
        v["errmsg"].as_str().unwrap().contains("markdown.content"),
        "{v}"
    );

    for card in [
        json!({"touser": "u1", "msgtype": "textcard", "agentid": 1000002,
               "textcard": {"title": "t", "description": "d", "url": "https://e.x"}}),
        json!({"touser": "u1", "msgtype": "template_card", "agentid": 1000002,
               "template_card": {"card_type": "text_notice"}}),
    ] {
        msgid(&wc.send(&t, card).await);
    }
    let (_, v) = wc
        .post_status(
            &format!("/cgi-bin/message/send?access_token={t}"),
            "{".into(),
        )
        .await;
    assert_code(&v, 47001);
    assert_eq!(wc.stats().await.delivered_users, 4);
}

#[tokio::test]
async fn at_most_1000_users_100_parties_100_tags() {
    let wc = Wc::start().await;
    let t = wc.token().await;
    let users = |n: usize| {
        (0..n)
            .map(|i| format!("u{i}"))
            .collect::<Vec<_>>()
            .join("|")
    };
    let v = wc.send(&t, text(&users(1001))).await;
    assert_code(&v, 40058);
    assert!(v["errmsg"].as_str().unwrap().contains("touser"), "{v}");
    let v = wc.send(&t, text(&users(1000))).await;
    msgid(&v);
    assert_eq!(v["invaliduser"], "");
    let ids = |n: usize| (0..n).map(|i| i.to_string()).collect::<Vec<_>>().join("|");
    let mut m = text("u1");
    m["toparty"] = json!(ids(101));
    assert_code(&wc.send(&t, m).await, 40058);
    let mut m = text("u1");
    m["totag"] = json!(ids(101));
    assert_code(&wc.send(&t, m).await, 40058);
    let s = wc.stats().await;
    assert_eq!(s.person_times, 1000);
    assert_eq!(s.delivered_users, 1000);
}

#[tokio::test]
async fn invalid_recipients_are_listed_and_all_invalid_is_81013() {
    let wc = Wc::start().await;
    let t = wc.token().await;
    wc.faults(json!({
        "invalid_users": ["Ghost"],
        "parties": {"1": ["p1a", "P1B"], "2": []},
        "tags": {"7": ["t7a", "p1a"]},
    }))
    .await;
    let mut m = text("Alice|GHOST|bob");
    m["toparty"] = json!("1|9");
    m["totag"] = json!("7|8");
    let v = wc.send(&t, m).await;
    let id = msgid(&v);
    assert_eq!(v["invaliduser"], "ghost", "userids come back lower-cased");
    assert_eq!(v["invalidparty"], "9");
    assert_eq!(v["invalidtag"], "8");
    let got = wc.messages("").await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].msgid, id);
    assert_eq!(got[0].msgtype, "text");
    assert_eq!(got[0].touser, vec!["Alice", "GHOST", "bob"]);
    assert_eq!(got[0].toparty, "1|9");
    assert_eq!(got[0].delivered, vec!["alice", "bob", "p1a", "p1b", "t7a"]);
    assert_eq!(wc.messages("?touser=P1B").await.len(), 1);
    assert!(wc.messages("?touser=ghost").await.is_empty());

    let mut m = text("ghost");
    m["toparty"] = json!("9");
    let v = wc.send(&t, m).await;
    assert_code(&v, 81013);
    assert_eq!(v["invaliduser"], "ghost");
    assert_eq!(v["invalidparty"], "9");
    let mut m = text("");
    m["totag"] = json!("8");
    assert_code(&wc.send(&t, m).await, 81013);
    // A valid but empty party is not an error; nobody gets it.
    let mut m = text("");
    m["toparty"] = json!("2");
    msgid(&wc.send(&t, m).await);

    let s = wc.stats().await;
    assert_eq!(s.person_times, 5);
    assert_eq!(s.errors.get("81013"), Some(&2));
}

#[tokio::test]
async fn duplicate_check_answers_the_first_msgid_within_the_interval() {
    let wc = Wc::start().await;
    let t = wc.token().await;
    let mut m = text("u1|u2");
    m["enable_duplicate_check"] = json!(1);
    m["duplicate_check_interval"] = json!(60);
    let first = msgid(&wc.send(&t, m.clone()).await);
    assert_eq!(msgid(&wc.send(&t, m.clone()).await), first);
    // A different body is a different message.
    let mut other = m.clone();
    other["text"]["content"] = json!("hello!");
    assert_ne!(msgid(&wc.send(&t, other).await), first);
    // Without the flag nothing is de-duplicated.
    let plain = text("u1|u2");
    let a = msgid(&wc.send(&t, plain.clone()).await);
    assert_ne!(msgid(&wc.send(&t, plain).await), a);
    wc.advance(59).await;
    assert_eq!(msgid(&wc.send(&t, m.clone()).await), first);
    wc.advance(1).await;
    assert_ne!(msgid(&wc.send(&t, m.clone()).await), first);

    let s = wc.stats().await;
    assert_eq!(s.duplicates, 2);
    assert_eq!(s.delivered_users, 2 * 5, "five deliveries of two users");
    assert_eq!(wc.messages("").await.len(), 5);
}

#[tokio::test]
async fn members_beyond_30_a_minute_or_1000_an_hour_are_dropped_silently() {
    let wc = Wc::start().await;
    let t = wc.token().await;
    for _ in 0..31 {
        msgid(&wc.send(&t, text("busy|calm")).await);
    }
    let s = wc.stats().await;
    assert_eq!(s.person_times, 62);
    assert_eq!(
        s.dropped_member_limit, 2,
        "31st message to each member dropped"
    );
    assert_eq!(s.delivered_users, 60);
    let last = wc.messages("?limit=1").await;
    assert!(last[0].delivered.is_empty(), "{last:?}");
    wc.advance(60).await;
    msgid(&wc.send(&t, text("busy")).await);
    assert_eq!(wc.messages("?limit=1").await[0].delivered, vec!["busy"]);

    // Hourly: 30 a minute for 33 more minutes reaches 1000 within the hour.
    let mut sent = 31;
    for _ in 0..33 {
        for _ in 0..30 {
            wc.send(&t, text("hourly")).await;
            sent += 1;
        }
        wc.advance(60).await;
    }
    let before = wc.stats().await;
    assert_eq!(sent, 1021);
    // `hourly` got 990 so far; the next 10 pass, the rest of the hour is dropped.
    for _ in 0..15 {
        wc.send(&t, text("hourly")).await;
    }
    let after = wc.stats().await;
    assert_eq!(after.delivered_users - before.delivered_users, 10);
    assert_eq!(after.dropped_member_limit - before.dropped_member_limit, 5);
}

#[tokio::test]
async fn recall_within_24_hours_only() {
    let wc = Wc::start().await;
    let t = wc.token().await;
    let a = msgid(&wc.send(&t, text("u1")).await);
    let b = msgid(&wc.send(&t, text("u2")).await);
    assert_code(&wc.recall(&t, &a).await, 0);
    assert_code(&wc.recall(&t, &a).await, 0);
    assert_code(&wc.recall(&t, "made-up").await, 301059);
    assert_code(&wc.recall("nonsense", &b).await, 40014);

    let aged = wc
        .post("/_mock/wecom/age", json!({"msgid": b, "secs": 24 * 3600}))
        .await;
    assert_eq!(aged["ok"], true);
    assert_code(&wc.recall(&t, &b).await, 301060);
    let (status, _) = wc
        .post_status(
            "/_mock/wecom/age",
            json!({"msgid": "made-up", "secs": 1}).to_string(),
        )
        .await;
    assert_eq!(status, 404);

    // 23 h 59 min is still within the window.
    let c = msgid(&wc.send(&t, text("u3")).await);
    wc.post(
        "/_mock/wecom/age",
        json!({"msgid": c, "secs": 24 * 3600 - 60}),
    )
    .await;
    assert_code(&wc.recall(&t, &c).await, 0);

    let s = wc.stats().await;
    assert_eq!(s.recalled, 2);
    assert_eq!(s.errors.get("301059"), Some(&1));
    assert_eq!(s.errors.get("301060"), Some(&1));
}

#[tokio::test]
async fn a_10000_user_campaign_in_parallel_calls() {
    let wc = Arc::new(Wc::start().await);
    let t = Arc::new(wc.token().await);
    let mut tasks = Vec::new();
    for batch in 0..10 {
        let wc = wc.clone();
        let t = t.clone();
        tasks.push(tokio::spawn(async move {
            let users = (0..1000)
                .map(|i| format!("user{batch}-{i}"))
                .collect::<Vec<_>>()
                .join("|");
            msgid(&wc.send(&t, text(&users)).await)
        }));
    }
    let mut ids = Vec::new();
    for task in tasks {
        ids.push(task.await.unwrap());
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 10);
    let s = wc.stats().await;
    assert_eq!(s.send_calls, 10);
    assert_eq!(s.delivered_users, 10_000);
    assert_eq!(s.dropped_member_limit, 0);
    let msgs = wc.messages("").await;
    assert_eq!(msgs.len(), 10);
    assert!(msgs.iter().all(|m| m.delivered.len() == 1000));

    let all = wc.get("/_mock/stats").await;
    assert_eq!(all["wecom"]["delivered_users"], 10_000);
    wc.post("/_mock/reset", json!({})).await;
    assert_eq!(wc.stats().await, WecomStats::default());
    assert!(wc.messages("").await.is_empty());
}
