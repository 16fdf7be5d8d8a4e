//! The WeChat Official Account mock over real HTTP.

use std::sync::Arc;
use std::time::{Duration, Instant};

use herald_mock::{MockConfig, MockServer, WechatConfig, WechatMessage, WechatStats};
use serde_json::{Value, json};

struct Wx {
    server: MockServer,
    http: reqwest::Client,
}

impl Wx {
    async fn start(cfg: MockConfig) -> Wx {
        let server = MockServer::start("127.0.0.1:0".parse().unwrap(), cfg)
            .await
            .expect("mock server starts");
        Wx {
            server,
            http: reqwest::Client::new(),
        }
    }

    async fn default() -> Wx {
        Wx::start(MockConfig::default()).await
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.server.base_url())
    }

    async fn get(&self, path: &str) -> Value {
        let resp = self.http.get(self.url(path)).send().await.unwrap();
        assert_eq!(resp.status(), 200, "GET {path}");
        resp.json().await.unwrap()
    }

    async fn post(&self, path: &str, body: Value) -> Value {
        self.post_raw(path, body.to_string()).await
    }

    async fn post_raw(&self, path: &str, body: String) -> Value {
        let resp = self
            .http
            .post(self.url(path))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200, "POST {path}: errors are HTTP 200 too");
        resp.json().await.unwrap()
    }

    async fn token_call(&self, appid: &str, secret: &str) -> Value {
        self.get(&format!(
            "/cgi-bin/token?grant_type=client_credential&appid={appid}&secret={secret}"
        ))
        .await
    }

    async fn token(&self) -> String {
        let v = self.token_call("wxmockappid", "mock-wechat-secret").await;
        assert_eq!(v["expires_in"], 7200, "{v}");
        v["access_token"].as_str().expect("a token").to_owned()
    }

    async fn stable(&self, force: bool) -> Value {
        self.post(
            "/cgi-bin/stable_token",
            json!({"grant_type": "client_credential", "appid": "wxmockappid",
                   "secret": "mock-wechat-secret", "force_refresh": force}),
        )
        .await
    }

    async fn send(&self, token: &str, body: Value) -> Value {
        self.post(
            &format!("/cgi-bin/message/template/send?access_token={token}"),
            body,
        )
        .await
    }

    async fn send_to(&self, token: &str, openid: &str) -> Value {
        self.send(token, message(openid, None)).await
    }

    async fn faults(&self, f: Value) -> Value {
        self.post("/_mock/wechat/faults", f).await
    }

    async fn advance(&self, secs: i64) {
        self.post("/_mock/wechat/clock", json!({ "advance_secs": secs }))
            .await;
    }

    /// Moves the mock's clock to just after the next Beijing midnight, so a
    /// test of a daily quota has a whole day ahead and never straddles the
    /// reset (a fresh mock's clock is the wall clock).
    async fn start_of_beijing_day(&self) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let beijing = now + 8 * 3600;
        self.advance(86_400 - beijing % 86_400 + 1).await;
    }

    async fn stats(&self) -> WechatStats {
        serde_json::from_value(self.get("/_mock/wechat/stats").await).unwrap()
    }

    async fn messages(&self, query: &str) -> Vec<WechatMessage> {
        serde_json::from_value(self.get(&format!("/_mock/wechat/messages{query}")).await).unwrap()
    }
}

fn message(openid: &str, client_msg_id: Option<&str>) -> Value {
    let mut v = json!({
        "touser": openid,
        "template_id": "TPL-1",
        "url": "https://example.com/x",
        "data": {"keyword1": {"value": "巧克力", "color": "#173177"}},
    });
    if let Some(c) = client_msg_id {
        v["client_msg_id"] = json!(c);
    }
    v
}

#[track_caller]
fn assert_code(v: &Value, code: i64) {
    assert_eq!(v["errcode"], code, "{v}");
    if code != 0 {
        let msg = v["errmsg"].as_str().unwrap_or_default();
        assert!(msg.contains(" rid: "), "errmsg carries a rid: {v}");
    }
}

fn msgid(v: &Value) -> u64 {
    assert_code(v, 0);
    assert_eq!(v["errmsg"], "ok");
    v["msgid"].as_u64().expect("numeric msgid")
}

#[tokio::test]
async fn token_credentials_are_checked() {
    let wx = Wx::default().await;
    assert_code(&wx.token_call("wrong", "mock-wechat-secret").await, 40013);
    assert_code(&wx.token_call("wxmockappid", "wrong").await, 40125);
    assert_code(
        &wx.get("/cgi-bin/token?grant_type=password&appid=wxmockappid&secret=mock-wechat-secret")
            .await,
        40002,
    );
    let s = wx.stats().await;
    assert_eq!(s.token_fetches, 0);
    assert_eq!(s.errors.get("40013"), Some(&1));
    assert_eq!(s.errors.get("40125"), Some(&1));
}

#[tokio::test]
async fn a_new_token_retires_the_old_one_after_five_minutes() {
    let wx = Wx::default().await;
    let t1 = wx.token().await;
    let t2 = wx.token().await;
    assert_ne!(t1, t2);
    // Both work during the overlap.
    msgid(&wx.send_to(&t1, "o1").await);
    msgid(&wx.send_to(&t2, "o1").await);
    wx.advance(299).await;
    msgid(&wx.send_to(&t1, "o1").await);
    wx.advance(1).await;
    assert_code(&wx.send_to(&t1, "o1").await, 40001);
    msgid(&wx.send_to(&t2, "o1").await);
    // The current one runs out after its 7200 s.
    wx.advance(7200).await;
    assert_code(&wx.send_to(&t2, "o1").await, 42001);
    assert_code(&wx.send_to("nonsense", "o1").await, 40001);
    assert_code(
        &wx.post("/cgi-bin/message/template/send", message("o1", None))
            .await,
        41001,
    );
    let s = wx.stats().await;
    assert_eq!(s.token_fetches, 2);
    assert_eq!(s.delivered, 4);
    assert_eq!(s.received, 8);
    assert_eq!(s.errors.get("40001"), Some(&2));
    assert_eq!(s.errors.get("42001"), Some(&1));
    assert_eq!(s.errors.get("41001"), Some(&1));
}

#[tokio::test]
async fn token_daily_quota_answers_45009_until_beijing_midnight() {
    let wx = Wx::default().await;
    wx.start_of_beijing_day().await;
    wx.post("/_mock/wechat/config", json!({"token_daily_quota": 3}))
        .await;
    for _ in 0..3 {
        wx.token().await;
    }
    let over = wx.token_call("wxmockappid", "mock-wechat-secret").await;
    assert_code(&over, 45009);
    assert_eq!(wx.stats().await.token_quota_used, 3);
    wx.advance(24 * 3600).await;
    wx.token().await;
    assert_eq!(wx.stats().await.token_fetches, 4);
}

#[tokio::test]
async fn stable_token_is_shared_until_five_minutes_are_left() {
    let wx = Wx::default().await;
    let a = wx.stable(false).await;
    let tok = a["access_token"].as_str().unwrap().to_owned();
    assert_eq!(a["expires_in"], 7200);
    wx.advance(600).await;
    let b = wx.stable(false).await;
    assert_eq!(
        b["access_token"],
        tok.as_str(),
        "same token while > 5 min left"
    );
    // Real time passes between the calls too, so allow a second of rounding.
    let left = b["expires_in"].as_i64().unwrap();
    assert!(
        (6599..=6600).contains(&left),
        "expires_in is what is left: {left}"
    );
    // /token is isolated: fetching it does not retire the stable token.
    wx.token().await;
    wx.advance(300).await;
    msgid(&wx.send_to(&tok, "o1").await);

    // With 5 minutes or less left, a normal call hands out a new token; the old one
    // keeps working until its own end.
    wx.advance(7200 - 900 - 300).await;
    let c = wx.stable(false).await;
    assert_ne!(c["access_token"], tok.as_str());
    assert_eq!(c["expires_in"], 7200);
    msgid(&wx.send_to(&tok, "o1").await);
    wx.advance(300).await;
    assert_code(&wx.send_to(&tok, "o1").await, 42001);

    assert_code(
        &wx.post_raw(
            "/cgi-bin/stable_token",
            "grant_type=client_credential".into(),
        )
        .await,
        47001,
    );
    assert_eq!(wx.stats().await.stable_token_fetches, 3);
}

#[tokio::test]
async fn stable_token_force_refresh_is_rate_limited_and_overlaps() {
    let wx = Wx::default().await;
    wx.start_of_beijing_day().await;
    wx.post(
        "/_mock/wechat/config",
        json!({"stable_force_daily_quota": 2}),
    )
    .await;
    let old = wx.stable(false).await["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let forced = wx.stable(true).await;
    let new = forced["access_token"].as_str().unwrap().to_owned();
    assert_ne!(new, old);
    assert_eq!(forced["expires_in"], 7200);
    // Within 30 s of the last force: refused.
    assert_code(&wx.stable(true).await, 45009);
    // The old token overlaps for 5 minutes.
    msgid(&wx.send_to(&old, "o1").await);
    wx.advance(300).await;
    assert_code(&wx.send_to(&old, "o1").await, 40001);
    msgid(&wx.send_to(&new, "o1").await);
    // Normal mode now returns the forced token.
    assert_eq!(wx.stable(false).await["access_token"], new.as_str());
    // Second force of the day is fine, the third is over the quota.
    wx.stable(true).await["access_token"].as_str().unwrap();
    wx.advance(31).await;
    assert_code(&wx.stable(true).await, 45009);
    wx.advance(24 * 3600).await;
    assert!(wx.stable(true).await["access_token"].is_string());
}

#[tokio::test]
async fn send_validates_the_body_and_template() {
    let wx = Wx::default().await;
    let t = wx.token().await;
    let path = format!("/cgi-bin/message/template/send?access_token={t}");
    assert_code(&wx.post_raw(&path, "not json".into()).await, 47001);
    for missing in ["touser", "template_id", "data"] {
        let mut m = message("o1", None);
        m.as_object_mut().unwrap().remove(missing);
        assert_code(&wx.send(&t, m).await, 47001);
    }
    let mut m = message("o1", None);
    m["data"] = json!("text");
    assert_code(&wx.send(&t, m).await, 47001);
    let mut m = message("o1", None);
    m["template_id"] = json!("");
    assert_code(&wx.send(&t, m).await, 40037);

    wx.post(
        "/_mock/wechat/config",
        json!({"template_ids": ["TPL-1", "TPL-2"]}),
    )
    .await;
    msgid(&wx.send(&t, message("o1", None)).await);
    let mut m = message("o1", None);
    m["template_id"] = json!("TPL-9");
    assert_code(&wx.send(&t, m).await, 40037);
    let cfg = wx.get("/_mock/wechat/config").await;
    assert_eq!(cfg["template_ids"], json!(["TPL-1", "TPL-2"]));
    // null goes back to "any id".
    wx.post("/_mock/wechat/config", json!({"template_ids": null}))
        .await;
    let mut m = message("o1", None);
    m["template_id"] = json!("TPL-9");
    msgid(&wx.send(&t, m).await);

    let s = wx.stats().await;
    assert_eq!(s.delivered, 2);
    assert_eq!(s.errors.get("47001"), Some(&5));
    assert_eq!(s.errors.get("40037"), Some(&2));
}

#[tokio::test]
async fn injected_faults_answer_their_codes() {
    let wx = Wx::default().await;
    let t = wx.token().await;
    let f = wx
        .faults(json!({
            "system_busy_next": 2, "quota_next": 1,
            "invalid_openids": ["bad"], "unsubscribed": ["gone"], "blocked": ["blk"],
        }))
        .await;
    assert_eq!(f["system_busy_next"], 2);
    assert_code(&wx.send_to(&t, "o1").await, -1);
    assert_eq!(wx.get("/_mock/wechat/faults").await["system_busy_next"], 1);
    assert_code(&wx.send_to(&t, "o1").await, -1);
    assert_code(&wx.send_to(&t, "o1").await, 45009);
    msgid(&wx.send_to(&t, "o1").await);
    assert_code(&wx.send_to(&t, "bad").await, 40003);
    assert_code(&wx.send_to(&t, "gone").await, 43004);
    assert_code(&wx.send_to(&t, "blk").await, 43019);
    let back = wx.get("/_mock/wechat/faults").await;
    assert_eq!(back["system_busy_next"], 0);
    assert_eq!(back["quota_next"], 0);
    assert_eq!(back["blocked"], json!(["blk"]));

    // Unknown fault fields are refused, not ignored.
    let resp = wx
        .http
        .post(wx.url("/_mock/wechat/faults"))
        .body(r#"{"systembusy_next":1}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);

    let s = wx.stats().await;
    assert_eq!(s.delivered, 1);
    for (code, n) in [
        ("-1", 2),
        ("45009", 1),
        ("40003", 1),
        ("43004", 1),
        ("43019", 1),
    ] {
        assert_eq!(s.errors.get(code), Some(&n), "{code}: {:?}", s.errors);
    }
}

#[tokio::test]
async fn expire_tokens_is_one_shot() {
    let wx = Wx::default().await;
    let t = wx.token().await;
    let stable = wx.stable(false).await["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let f = wx.faults(json!({"expire_tokens": true})).await;
    assert_eq!(f["expire_tokens"], false, "one-shot, reads back false");
    assert_code(&wx.send_to(&t, "o1").await, 42001);
    assert_code(&wx.send_to(&stable, "o1").await, 42001);
    // Fresh tokens work; the stable endpoint hands out a new one too.
    let t2 = wx.token().await;
    msgid(&wx.send_to(&t2, "o1").await);
    let s2 = wx.stable(false).await["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(s2, stable);
    msgid(&wx.send_to(&s2, "o1").await);
}

#[tokio::test]
async fn client_msg_id_deduplicates_per_openid_for_ten_minutes() {
    let wx = Wx::default().await;
    let t = wx.token().await;
    let first = msgid(&wx.send(&t, message("o1", Some("MSG_1"))).await);
    let again = msgid(&wx.send(&t, message("o1", Some("MSG_1"))).await);
    assert_eq!(first, again, "a duplicate answers the first msgid");
    let other_user = msgid(&wx.send(&t, message("o2", Some("MSG_1"))).await);
    assert_ne!(other_user, first);
    let no_id = msgid(&wx.send(&t, message("o1", None)).await);
    assert_ne!(no_id, first);
    wx.advance(599).await;
    assert_eq!(
        msgid(&wx.send(&t, message("o1", Some("MSG_1"))).await),
        first
    );
    wx.advance(1).await;
    let after = msgid(&wx.send(&t, message("o1", Some("MSG_1"))).await);
    assert_ne!(after, first, "ten minutes later it is a new message");

    let s = wx.stats().await;
    assert_eq!(s.delivered, 4);
    assert_eq!(s.duplicates, 2);
    assert_eq!(s.received, 6);
    let to_o1 = wx.messages("?touser=o1").await;
    assert_eq!(to_o1.len(), 3);
    assert_eq!(to_o1[0].msgid, first);
    assert_eq!(to_o1[0].client_msg_id.as_deref(), Some("MSG_1"));
    assert_eq!(to_o1[0].template_id, "TPL-1");
    assert_eq!(to_o1[0].url.as_deref(), Some("https://example.com/x"));
    assert_eq!(to_o1[0].data["keyword1"]["value"], "巧克力");
    assert_eq!(wx.messages("?limit=1").await[0].msgid, after);
}

#[tokio::test]
async fn daily_send_quota() {
    let wx = Wx::default().await;
    wx.start_of_beijing_day().await;
    let t = wx.token().await;
    wx.post("/_mock/wechat/config", json!({"send_daily_quota": 2}))
        .await;
    let first = msgid(&wx.send(&t, message("o1", Some("a"))).await);
    msgid(&wx.send_to(&t, "o2").await);
    assert_code(&wx.send_to(&t, "o3").await, 45009);
    // A duplicate of an accepted message still answers its msgid.
    assert_eq!(msgid(&wx.send(&t, message("o1", Some("a"))).await), first);
    // A refused message does not claim its client_msg_id.
    assert_code(&wx.send(&t, message("o4", Some("b"))).await, 45009);
    wx.advance(24 * 3600).await;
    let t = wx.token().await;
    msgid(&wx.send(&t, message("o4", Some("b"))).await);
    let s = wx.stats().await;
    assert_eq!(s.delivered, 3);
    assert_eq!(s.send_quota_used, 1);
}

type Received = Arc<parking_lot::Mutex<Vec<String>>>;

/// A tiny callback receiver; returns its URL and what it got.
async fn receiver(status: u16) -> (String, Received) {
    use axum::routing::post;
    let got: Received = Arc::default();
    let sink = got.clone();
    let app = axum::Router::new().route(
        "/wx",
        post(move |body: String| {
            let sink = sink.clone();
            async move {
                sink.lock().push(body);
                axum::http::StatusCode::from_u16(status).unwrap()
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    (format!("http://{addr}/wx"), got)
}

async fn wait_for(what: &str, mut ok: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !ok().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn tag<'a>(xml: &'a str, name: &str) -> &'a str {
    let open = format!("<{name}>");
    let close = format!("</{name}>");
    let start = xml.find(&open).unwrap() + open.len();
    let end = xml[start..].find(&close).unwrap() + start;
    let v = &xml[start..end];
    v.strip_prefix("<![CDATA[")
        .and_then(|v| v.strip_suffix("]]>"))
        .unwrap_or(v)
}

#[tokio::test]
async fn delivery_callbacks_reach_the_configured_url() {
    let (url, got) = receiver(200).await;
    let wx = Wx::default().await;
    let cfg = wx
        .post("/_mock/wechat/config", json!({"callback_url": url}))
        .await;
    assert_eq!(cfg["callback_url"], url.as_str());
    wx.faults(json!({"callback_block": ["o-block"], "callback_fail": ["o-fail"]}))
        .await;
    let t = wx.token().await;
    let ok = msgid(&wx.send_to(&t, "o-ok").await);
    let blocked = msgid(&wx.send_to(&t, "o-block").await);
    let failed = msgid(&wx.send_to(&t, "o-fail").await);
    // A fourth message makes a callback; its duplicate and a refused send do not.
    wx.send(&t, message("o-ok", Some("x"))).await;
    wx.send(&t, message("o-ok", Some("x"))).await;
    wx.faults(json!({"blocked": ["o-gone"]})).await;
    assert_code(&wx.send_to(&t, "o-gone").await, 43019);

    wait_for("4 callbacks", async || got.lock().len() >= 4).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let got = got.lock().clone();
    assert_eq!(got.len(), 4, "{got:?}");
    let find = |id: u64| {
        got.iter()
            .find(|x| tag(x, "MsgID") == id.to_string())
            .unwrap_or_else(|| panic!("callback for {id} in {got:?}"))
            .clone()
    };
    let x = find(ok);
    assert_eq!(tag(&x, "Event"), "TEMPLATESENDJOBFINISH");
    assert_eq!(tag(&x, "MsgType"), "event");
    assert_eq!(tag(&x, "ToUserName"), "gh_mockaccount");
    assert_eq!(tag(&x, "FromUserName"), "o-ok");
    assert_eq!(tag(&x, "Status"), "success");
    assert!(tag(&x, "CreateTime").parse::<u64>().unwrap() > 1_600_000_000);
    assert_eq!(tag(&find(blocked), "Status"), "failed:user block");
    assert_eq!(tag(&find(failed), "Status"), "failed: system failed");
    let s = wx.stats().await;
    assert_eq!(s.callbacks_sent, 4);
    assert_eq!(s.callbacks_failed, 0);

    // Clearing the URL stops callbacks.
    wx.post("/_mock/wechat/config", json!({"callback_url": null}))
        .await;
    msgid(&wx.send_to(&t, "o-ok").await);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(wx.stats().await.callbacks_sent, 4);
}

#[tokio::test]
async fn callback_url_from_config_and_refused_callbacks_are_counted() {
    let (url, got) = receiver(500).await;
    let cfg = MockConfig {
        wechat: WechatConfig {
            callback_url: Some(url),
            ..WechatConfig::default()
        },
        ..MockConfig::default()
    };
    let wx = Wx::start(cfg).await;
    let t = wx.token().await;
    msgid(&wx.send_to(&t, "o1").await);
    wait_for("a failed callback", async || {
        wx.stats().await.callbacks_failed == 1
    })
    .await;
    assert_eq!(got.lock().len(), 1);
    assert_eq!(wx.stats().await.callbacks_sent, 0);
}

#[tokio::test]
async fn burst_of_messages_keeps_the_ring_bounded() {
    let wx = Arc::new(Wx::default().await);
    let t = Arc::new(wx.token().await);
    let n: usize = 20_000;
    let workers = 32;
    let mut tasks = Vec::new();
    for w in 0..workers {
        let wx = wx.clone();
        let t = t.clone();
        tasks.push(tokio::spawn(async move {
            let mut ids = Vec::new();
            for i in (w..n).step_by(workers) {
                let v = wx
                    .send(&t, message(&format!("o{i}"), Some(&format!("c{i}"))))
                    .await;
                ids.push(msgid(&v));
            }
            ids
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.unwrap());
    }
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), n, "every msgid distinct");
    let s = wx.stats().await;
    assert_eq!(s.delivered, n as u64);
    assert_eq!(s.duplicates, 0);
    let kept = wx.messages("").await;
    assert_eq!(kept.len(), herald_mock::WECHAT_RING_CAPACITY);
}

#[tokio::test]
async fn global_stats_and_reset_include_wechat() {
    let wx = Wx::default().await;
    let t = wx.token().await;
    msgid(&wx.send(&t, message("o1", Some("k"))).await);
    let all = wx.get("/_mock/stats").await;
    assert_eq!(all["wechat"]["delivered"], 1);
    assert_eq!(all["wecom"]["send_calls"], 0);
    assert_eq!(all["received"], 0, "webhook fields are still there");
    assert!(all["lateness_ms"].is_object());

    wx.post("/_mock/reset", json!({})).await;
    let s = wx.stats().await;
    assert_eq!(s, WechatStats::default());
    assert!(wx.messages("").await.is_empty());
    // Tokens survive a reset; the de-dup window does not.
    let again = msgid(&wx.send(&t, message("o1", Some("k"))).await);
    assert_eq!(wx.stats().await.duplicates, 0);
    assert!(again > 0);
}
