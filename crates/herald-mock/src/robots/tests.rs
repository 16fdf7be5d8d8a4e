//! The robot mocks over real HTTP. Signatures are computed here from the
//! providers' formulas, not with the module's helper, so a mistake in one
//! does not hide in the other.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

use crate::test_http::TestMock;
use crate::{
    DEFAULT_DINGTALK_ROBOT_SECRET, DEFAULT_DINGTALK_ROBOT_TOKEN, DEFAULT_FEISHU_BOT_SECRET,
    DEFAULT_FEISHU_BOT_TOKEN, DEFAULT_WECOM_ROBOT_KEY, RobotMessage, RobotStats,
};

struct Bots {
    mock: TestMock,
}

impl std::ops::Deref for Bots {
    type Target = TestMock;
    fn deref(&self) -> &TestMock {
        &self.mock
    }
}

impl Bots {
    async fn start() -> Bots {
        Bots {
            mock: TestMock::start().await,
        }
    }

    async fn now_ms(&self) -> u64 {
        let v = self
            .post("/_mock/robots/clock", &json!({ "advance_secs": 0 }))
            .await;
        v["now_ms"].as_u64().expect("now_ms")
    }

    async fn advance(&self, secs: i64) {
        self.post("/_mock/robots/clock", &json!({ "advance_secs": secs }))
            .await;
    }

    async fn configure(&self, cfg: Value) {
        self.post("/_mock/robots/config", &cfg).await;
    }

    async fn faults(&self, f: Value) -> Value {
        self.post("/_mock/robots/faults", &f).await
    }

    async fn stats(&self) -> RobotStats {
        serde_json::from_value(self.get("/_mock/robots/stats").await).unwrap()
    }

    async fn messages(&self, query: &str) -> Vec<RobotMessage> {
        serde_json::from_value(self.get(&format!("/_mock/robots/messages{query}")).await).unwrap()
    }

    async fn wecom(&self, key: &str, body: &Value) -> Value {
        self.post(&format!("/cgi-bin/webhook/send?key={key}"), body)
            .await
    }

    /// A DingTalk send, signed at the mock's clock when `secret` is given.
    async fn dingtalk(&self, token: &str, secret: Option<&str>, body: &Value) -> Value {
        match secret {
            Some(secret) => {
                let ts = self.now_ms().await.to_string();
                let sign = dingtalk_sign(secret, &ts);
                self.dingtalk_signed(token, &ts, &sign, body).await
            }
            None => {
                self.post(&format!("/robot/send?access_token={token}"), body)
                    .await
            }
        }
    }

    async fn dingtalk_signed(&self, token: &str, ts: &str, sign: &str, body: &Value) -> Value {
        let path = format!(
            "/robot/send?access_token={token}&timestamp={ts}&sign={}",
            pct(sign)
        );
        self.post(&path, body).await
    }

    /// A Feishu send, signed at the mock's clock when `secret` is given.
    async fn feishu(&self, token: &str, secret: Option<&str>, body: Value) -> Value {
        let mut body = body;
        if let Some(secret) = secret {
            let ts = (self.now_ms().await / 1000).to_string();
            body["sign"] = json!(feishu_sign(secret, &ts));
            body["timestamp"] = json!(ts);
        }
        self.post(&format!("/open-apis/bot/v2/hook/{token}"), &body)
            .await
    }
}

type HmacSha256 = Hmac<Sha256>;

/// base64(HMAC-SHA256(key = secret, message = timestamp + "\n" + secret)).
fn dingtalk_sign(secret: &str, ts_ms: &str) -> String {
    let mut mac = HmacSha256::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{ts_ms}\n{secret}").as_bytes());
    STANDARD.encode(mac.finalize().into_bytes())
}

/// base64(HMAC-SHA256(key = timestamp + "\n" + secret, message = "")).
fn feishu_sign(secret: &str, ts_secs: &str) -> String {
    let mac = HmacSha256::new_from_slice(format!("{ts_secs}\n{secret}").as_bytes()).unwrap();
    STANDARD.encode(mac.finalize().into_bytes())
}

/// Percent-encodes all but unreserved characters, as a sender must for `sign`.
fn pct(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn wecom_text(content: &str) -> Value {
    json!({ "msgtype": "text", "text": { "content": content } })
}

fn ding_text(content: &str) -> Value {
    json!({ "msgtype": "text", "text": { "content": content } })
}

fn feishu_text(text: &str) -> Value {
    json!({ "msg_type": "text", "content": { "text": text } })
}

#[track_caller]
fn assert_err(v: &Value, code: i64, msg_part: &str) {
    assert_eq!(v["errcode"], code, "{v}");
    let msg = v["errmsg"].as_str().unwrap_or_default();
    assert!(msg.contains(msg_part), "errmsg names {msg_part:?}: {v}");
}

#[track_caller]
fn assert_ok(v: &Value) {
    assert_eq!(v, &json!({ "errcode": 0, "errmsg": "ok" }));
}

#[track_caller]
fn assert_feishu(v: &Value, code: i64, msg_part: &str) {
    assert_eq!(v["code"], code, "{v}");
    assert_eq!(v["data"], json!({}), "{v}");
    let msg = v["msg"].as_str().unwrap_or_default();
    assert!(msg.contains(msg_part), "msg names {msg_part:?}: {v}");
}

const FEISHU_OK: &str =
    r#"{"code":0,"msg":"success","data":{},"StatusCode":0,"StatusMessage":"success"}"#;

#[tokio::test]
async fn wecom_accepts_records_and_refuses_unknown_keys() {
    let b = Bots::start().await;
    let sent = json!({
        "msgtype": "text",
        "text": { "content": "hello", "mentioned_list": ["wangqing", "@all"],
                  "mentioned_mobile_list": ["13800001111"] },
    });
    assert_ok(&b.wecom(DEFAULT_WECOM_ROBOT_KEY, &sent).await);
    let md = json!({ "msgtype": "markdown", "markdown": { "content": "**hi** <@u1>" } });
    assert_ok(&b.wecom(DEFAULT_WECOM_ROBOT_KEY, &md).await);

    let bad = b.wecom("nope", &sent).await;
    assert_err(&bad, 93000, "invalid webhook url, hint: [");
    let (_, missing) = b.post_raw("/cgi-bin/webhook/send", sent.to_string()).await;
    assert!(missing.contains("93000"), "{missing}");

    let msgs = b.messages("?provider=wecom").await;
    assert_eq!(msgs.len(), 2);
    assert_eq!(msgs[0].token, DEFAULT_WECOM_ROBOT_KEY);
    assert_eq!(msgs[0].msgtype, "text");
    assert_eq!(msgs[0].body, sent);
    assert_eq!(msgs[1].msgtype, "markdown");
    assert!(msgs[0].at_ms <= msgs[1].at_ms && msgs[0].at_ms > 1_600_000_000_000);
    assert_eq!(b.messages("?limit=1").await.len(), 1);
    assert!(b.messages("?token=other").await.is_empty());

    let raw = b.get("/_mock/robots/messages?limit=1").await;
    assert_eq!(raw[0]["provider"], "wecom", "{raw}");

    let s = b.stats().await;
    assert_eq!((s.wecom.calls, s.wecom.accepted), (4, 2));
    assert_eq!(s.wecom.refused.get("93000"), Some(&2));
    let all = b.get("/_mock/stats").await;
    assert_eq!(all["robots"]["wecom"]["accepted"], 2, "{all}");
}

#[tokio::test]
async fn wecom_checks_types_shapes_and_sizes() {
    let b = &Bots::start().await;
    let key = DEFAULT_WECOM_ROBOT_KEY;
    let send = |body: Value| async move { b.wecom(key, &body).await };

    assert_err(
        &send(json!({ "msgtype": "Text", "text": {"content": "x"} })).await,
        40008,
        "invalid message type",
    );
    assert_err(
        &send(json!({ "text": {"content": "x"} })).await,
        40008,
        "invalid message type",
    );
    assert_err(
        &send(json!({ "msgtype": "text" })).await,
        40058,
        "text is required",
    );
    assert_err(
        &send(json!({ "msgtype": "text", "text": {} })).await,
        44004,
        "empty content",
    );
    assert_err(&send(wecom_text("")).await, 44004, "empty content");
    assert_err(
        &send(json!({ "msgtype": "text", "text": {"content": 5} })).await,
        40058,
        "text.content must be a string",
    );
    assert_ok(&send(wecom_text(&"é".repeat(1024))).await);
    assert_err(
        &send(wecom_text(&"a".repeat(2049))).await,
        40058,
        "text.content exceed max length 2048",
    );
    assert_err(
        &send(json!({ "msgtype": "text", "text": {"content": "x", "mentioned_list": [1]} })).await,
        40058,
        "text.mentioned_list must be an array of strings",
    );
    let md = |n: usize| json!({ "msgtype": "markdown", "markdown": {"content": "m".repeat(n)} });
    assert_ok(&send(md(4096)).await);
    assert_err(
        &send(md(4097)).await,
        40058,
        "markdown.content exceed max length 4096",
    );

    let article = json!({ "title": "t", "url": "https://example.com", "picurl": "https://example.com/p.png" });
    let news =
        |n: usize| json!({ "msgtype": "news", "news": {"articles": vec![article.clone(); n]} });
    assert_ok(&send(news(8)).await);
    assert_err(
        &send(news(9)).await,
        40058,
        "news.articles must hold 1 to 8 articles",
    );
    assert_err(
        &send(news(0)).await,
        40058,
        "news.articles must hold 1 to 8 articles",
    );
    let no_url = json!({ "msgtype": "news", "news": {"articles": [article, {"title": "t"}]} });
    assert_err(
        &send(no_url).await,
        40058,
        "news.articles[1].url is required",
    );

    let img = json!({ "msgtype": "image", "image": {"base64": STANDARD.encode(b"png"), "md5": "0123456789abcdef0123456789abcdef"} });
    assert_ok(&send(img).await);
    let bad_img = json!({ "msgtype": "image", "image": {"base64": "***", "md5": "x"} });
    assert_err(
        &send(bad_img).await,
        40058,
        "image.base64 is not valid base64",
    );
    assert_err(
        &send(json!({ "msgtype": "file", "file": {} })).await,
        40058,
        "file.media_id is required",
    );
    let card = json!({ "msgtype": "template_card", "template_card": {"card_type": "text_notice"} });
    assert_ok(&send(card).await);

    let (status, text) = b
        .post_raw(&format!("/cgi-bin/webhook/send?key={key}"), "{not json")
        .await;
    assert_eq!(status, 200);
    assert!(text.contains("\"errcode\":40035"), "{text}");
    let (_, empty) = b
        .post_raw(&format!("/cgi-bin/webhook/send?key={key}"), "")
        .await;
    assert!(empty.contains("\"errcode\":44004"), "{empty}");
}

#[tokio::test]
async fn wecom_rate_limit_rolls_with_the_clock() {
    let b = Bots::start().await;
    for i in 0..20 {
        assert_ok(
            &b.wecom(DEFAULT_WECOM_ROBOT_KEY, &wecom_text(&format!("m{i}")))
                .await,
        );
    }
    let over = b.wecom(DEFAULT_WECOM_ROBOT_KEY, &wecom_text("m20")).await;
    assert_err(&over, 45009, "api freq out of limit");
    // The window is per key.
    b.configure(json!({ "robots": [
        {"provider": "wecom", "token": DEFAULT_WECOM_ROBOT_KEY},
        {"provider": "wecom", "token": "second"},
    ] }))
    .await;
    assert_ok(&b.wecom("second", &wecom_text("other robot")).await);
    b.advance(61).await;
    assert_ok(
        &b.wecom(DEFAULT_WECOM_ROBOT_KEY, &wecom_text("next minute"))
            .await,
    );
    let s = b.stats().await;
    assert_eq!(s.wecom.accepted, 22);
    assert_eq!(s.wecom.refused.get("45009"), Some(&1));
}

#[tokio::test]
async fn dingtalk_checks_the_signature_and_timestamp() {
    let b = Bots::start().await;
    let token = DEFAULT_DINGTALK_ROBOT_TOKEN;
    let secret = DEFAULT_DINGTALK_ROBOT_SECRET;
    assert_ok(&b.dingtalk(token, Some(secret), &ding_text("signed")).await);

    let now = b.now_ms().await.to_string();
    let wrong = dingtalk_sign("SECsomething-else", &now);
    assert_err(
        &b.dingtalk_signed(token, &now, &wrong, &ding_text("x"))
            .await,
        310000,
        "sign not match",
    );
    // Feishu's formula (key and message swapped) must not pass here.
    let swapped = feishu_sign(secret, &now);
    assert_err(
        &b.dingtalk_signed(token, &now, &swapped, &ding_text("x"))
            .await,
        310000,
        "sign not match",
    );
    // A sign left unencoded loses its '+' to a space and fails, as on DingTalk.
    let mut ts = b.now_ms().await;
    let plus = loop {
        let s = dingtalk_sign(secret, &ts.to_string());
        if s.contains('+') {
            break s;
        }
        ts += 1;
    };
    let path = format!("/robot/send?access_token={token}&timestamp={ts}&sign={plus}");
    assert_err(
        &b.post(&path, &ding_text("x")).await,
        310000,
        "sign not match",
    );
    let unsigned = b.dingtalk(token, None, &ding_text("x")).await;
    assert_err(&unsigned, 310000, "timestamp is invalid");
    let path = format!("/robot/send?access_token={token}&timestamp={now}");
    assert_err(
        &b.post(&path, &ding_text("x")).await,
        310000,
        "sign not match",
    );

    let stale = (b.now_ms().await - 3_601_000).to_string();
    let sign = dingtalk_sign(secret, &stale);
    assert_err(
        &b.dingtalk_signed(token, &stale, &sign, &ding_text("x"))
            .await,
        310000,
        "timestamp is invalid",
    );
    let fresh = (b.now_ms().await - 3_500_000).to_string();
    let sign = dingtalk_sign(secret, &fresh);
    assert_ok(
        &b.dingtalk_signed(token, &fresh, &sign, &ding_text("x"))
            .await,
    );
    // Two hours on, a signature made at the old time is stale.
    let old = b.now_ms().await.to_string();
    let sign = dingtalk_sign(secret, &old);
    b.advance(7200).await;
    assert_err(
        &b.dingtalk_signed(token, &old, &sign, &ding_text("x")).await,
        310000,
        "timestamp is invalid",
    );

    let bad = b.dingtalk("nope", Some(secret), &ding_text("x")).await;
    assert_eq!(
        bad,
        json!({ "errcode": 300001, "errmsg": "token is not exist" })
    );

    let s = b.stats().await;
    assert_eq!(s.dingtalk.accepted, 2);
    assert_eq!(s.dingtalk.refused.get("310000"), Some(&7));
    assert_eq!(s.dingtalk.refused.get("300001"), Some(&1));
}

#[tokio::test]
async fn dingtalk_keyword_and_shapes() {
    let b = &Bots::start().await;
    b.configure(json!({ "robots": [
        {"provider": "dingtalk", "token": "kw", "keyword": "Herald"},
    ] }))
    .await;
    let send = |body: Value| async move { b.dingtalk("kw", None, &body).await };
    assert_err(
        &send(ding_text("no word here")).await,
        310000,
        "keywords not in content",
    );
    assert_ok(&send(ding_text("from Herald")).await);
    let md =
        json!({ "msgtype": "markdown", "markdown": {"title": "Herald alert", "text": "### body"} });
    assert_ok(&send(md).await);
    let link = json!({ "msgtype": "link", "link": {"title": "t", "text": "Herald", "messageUrl": "https://example.com"} });
    assert_ok(&send(link).await);
    let card = json!({ "msgtype": "actionCard", "actionCard": {
        "title": "Herald", "text": "t", "btns": [{"title": "ok", "actionURL": "https://example.com"}]
    } });
    assert_ok(&send(card).await);
    let feed = json!({ "msgtype": "feedCard", "feedCard": {"links": [
        {"title": "Herald news", "messageURL": "https://example.com", "picURL": "https://example.com/p"}
    ]} });
    assert_ok(&send(feed).await);
    let at = json!({ "msgtype": "text", "text": {"content": "Herald"},
                     "at": {"atMobiles": ["13800001111"], "atUserIds": ["u1"], "isAtAll": false} });
    assert_ok(&send(at).await);

    assert_err(
        &send(json!({ "text": {"content": "Herald"} })).await,
        400102,
        "msgtype is required",
    );
    assert_err(
        &send(json!({ "msgtype": "image", "image": {} })).await,
        400102,
        "msgtype \"image\" is not one of",
    );
    let no_title = json!({ "msgtype": "markdown", "markdown": {"text": "Herald"} });
    assert_err(&send(no_title).await, 400102, "markdown.title is required");
    let no_url = json!({ "msgtype": "link", "link": {"title": "Herald", "text": "t"} });
    assert_err(&send(no_url).await, 400102, "link.messageUrl is required");
    let bad_at =
        json!({ "msgtype": "text", "text": {"content": "Herald"}, "at": {"isAtAll": "yes"} });
    assert_err(&send(bad_at).await, 400102, "at.isAtAll must be a boolean");
    let bad_card =
        json!({ "msgtype": "actionCard", "actionCard": {"title": "Herald", "text": "t"} });
    assert_err(
        &send(bad_card).await,
        400102,
        "actionCard.singleTitle is required",
    );
    let (_, text) = b.post_raw("/robot/send?access_token=kw", "[1,").await;
    assert!(text.contains("400102"), "{text}");

    let msgs = b.messages("?provider=dingtalk&token=kw").await;
    let types: Vec<&str> = msgs.iter().map(|m| m.msgtype.as_str()).collect();
    assert_eq!(
        types,
        ["text", "markdown", "link", "actionCard", "feedCard", "text"]
    );
}

#[tokio::test]
async fn dingtalk_throttles_for_ten_minutes_after_the_21st() {
    let b = Bots::start().await;
    let token = DEFAULT_DINGTALK_ROBOT_TOKEN;
    let secret = Some(DEFAULT_DINGTALK_ROBOT_SECRET);
    for i in 0..20 {
        assert_ok(
            &b.dingtalk(token, secret, &ding_text(&format!("m{i}")))
                .await,
        );
    }
    let over = b.dingtalk(token, secret, &ding_text("m20")).await;
    assert_eq!(
        over,
        json!({ "errcode": 130101, "errmsg": "send too fast, exceed 20 times per minute" })
    );
    // The minute has passed but the robot is still throttled, for anything.
    b.advance(61).await;
    assert_err(
        &b.dingtalk(token, secret, &ding_text("later")).await,
        130101,
        "send too fast",
    );
    assert_err(
        &b.dingtalk(token, secret, &json!({})).await,
        130101,
        "send too fast",
    );
    b.advance(540).await;
    assert_ok(
        &b.dingtalk(token, secret, &ding_text("after the throttle"))
            .await,
    );
    let s = b.stats().await;
    assert_eq!(s.dingtalk.accepted, 21);
    assert_eq!(s.dingtalk.refused.get("130101"), Some(&3));
}

#[tokio::test]
async fn feishu_signature_token_size_and_shapes() {
    let b = Bots::start().await;
    let token = DEFAULT_FEISHU_BOT_TOKEN;
    let secret = DEFAULT_FEISHU_BOT_SECRET;
    let path = format!("/open-apis/bot/v2/hook/{token}");
    let ok = b.feishu(token, Some(secret), feishu_text("signed")).await;
    assert_eq!(ok, serde_json::from_str::<Value>(FEISHU_OK).unwrap());

    let now = (b.now_ms().await / 1000).to_string();
    let signed = |sign: String, ts: &str| {
        let mut body = feishu_text("x");
        body["timestamp"] = json!(ts);
        body["sign"] = json!(sign);
        body
    };
    let sign_fail = "sign match fail or timestamp is not within one hour from current time";
    let v = b
        .post(&path, &signed(feishu_sign("other", &now), &now))
        .await;
    assert_feishu(&v, 19021, sign_fail);
    // DingTalk's formula (key = secret) must not pass here.
    let v = b
        .post(&path, &signed(dingtalk_sign(secret, &now), &now))
        .await;
    assert_feishu(&v, 19021, sign_fail);
    assert_feishu(
        &b.feishu(token, None, feishu_text("x")).await,
        19021,
        sign_fail,
    );
    let stale = (b.now_ms().await / 1000 - 3700).to_string();
    let v = b
        .post(&path, &signed(feishu_sign(secret, &stale), &stale))
        .await;
    assert_feishu(&v, 19021, sign_fail);
    // Milliseconds are not seconds.
    let ms = b.now_ms().await.to_string();
    let v = b.post(&path, &signed(feishu_sign(secret, &ms), &ms)).await;
    assert_feishu(&v, 19021, sign_fail);

    let v = b.feishu("nope", None, feishu_text("x")).await;
    assert_eq!(
        v,
        json!({ "code": 19001, "msg": "param invalid: incoming webhook access token invalid", "data": {} })
    );

    let big = json!({ "msg_type": "text", "content": {"text": "a".repeat(20_500)} });
    assert_feishu(
        &b.feishu(token, Some(secret), big).await,
        9499,
        "Bad Request",
    );
    let shapes = [
        (json!({ "content": {"text": "x"} }), "msg_type is required"),
        (
            json!({ "msg_type": "file", "content": {} }),
            "msg_type \"file\" is not one of",
        ),
        (
            json!({ "msg_type": "text", "content": {} }),
            "content.text is required",
        ),
        (json!({ "msg_type": "text" }), "content is required"),
        (
            json!({ "msg_type": "post", "content": {"post": {}} }),
            "content.post is empty",
        ),
        (
            json!({ "msg_type": "image", "content": {"image_key": 3} }),
            "content.image_key must be a string",
        ),
        (
            json!({ "msg_type": "share_chat", "content": {} }),
            "content.share_chat_id is required",
        ),
        (
            json!({ "msg_type": "interactive", "content": {"card": {"elements": []}} }),
            "card is required",
        ),
    ];
    for (body, msg) in shapes {
        assert_feishu(&b.feishu(token, Some(secret), body).await, 9499, msg);
    }
    let card = json!({ "msg_type": "interactive", "card": {"elements": [{"tag": "div", "text": {"content": "hi", "tag": "lark_md"}}]} });
    assert_eq!(b.feishu(token, Some(secret), card).await["code"], 0);
    let post = json!({ "msg_type": "post", "content": {"post": {"zh_cn": {"title": "t", "content": [[{"tag": "text", "text": "x"}]]}}} });
    assert_eq!(b.feishu(token, Some(secret), post).await["code"], 0);

    let msgs = b.messages("?provider=feishu").await;
    let types: Vec<&str> = msgs.iter().map(|m| m.msgtype.as_str()).collect();
    assert_eq!(types, ["text", "interactive", "post"]);
    assert!(msgs[0].body["sign"].is_string(), "the body as received");
}

#[tokio::test]
async fn feishu_keyword() {
    let b = Bots::start().await;
    b.configure(json!({ "robots": [
        {"provider": "feishu", "token": "kw", "keyword": "Herald"},
    ] }))
    .await;
    let v = b.feishu("kw", None, feishu_text("nothing")).await;
    assert_feishu(&v, 19024, "Key Words Not Found");
    assert_eq!(
        b.feishu("kw", None, feishu_text("Herald says")).await["code"],
        0
    );
    let post = json!({ "msg_type": "post", "content": {"post": {"zh_cn": {"title": "t",
        "content": [[{"tag": "text", "text": "by Herald"}]]}}} });
    assert_eq!(b.feishu("kw", None, post).await["code"], 0);
    let image = json!({ "msg_type": "image", "content": {"image_key": "img_v2_x"} });
    assert_feishu(
        &b.feishu("kw", None, image).await,
        19024,
        "Key Words Not Found",
    );
}

#[tokio::test]
async fn feishu_limits_per_second_and_per_minute() {
    let b = Bots::start().await;
    let token = DEFAULT_FEISHU_BOT_TOKEN;
    let secret = Some(DEFAULT_FEISHU_BOT_SECRET);
    let started = b.now_ms().await;
    for i in 0..5 {
        assert_eq!(
            b.feishu(token, secret, feishu_text(&format!("m{i}"))).await["code"],
            0
        );
    }
    let sixth = b.feishu(token, secret, feishu_text("m5")).await;
    // On a machine slow enough to spread six sends over a second the sixth
    // may pass; only then.
    if b.now_ms().await - started < 1000 {
        assert_feishu(&sixth, 11232, "frequency limited");
    }
    b.advance(1).await;
    assert_eq!(
        b.feishu(token, secret, feishu_text("next second")).await["code"],
        0
    );

    // 100 a minute, with the per-second limit off.
    b.configure(json!({ "robots": [{"provider": "feishu", "token": "busy"}],
                        "limits": {"feishu_per_second": 0} }))
        .await;
    for i in 0..100 {
        assert_eq!(
            b.feishu("busy", None, feishu_text(&format!("n{i}"))).await["code"],
            0
        );
    }
    assert_feishu(
        &b.feishu("busy", None, feishu_text("n100")).await,
        11232,
        "frequency limited",
    );
    b.advance(60).await;
    assert_eq!(
        b.feishu("busy", None, feishu_text("later")).await["code"],
        0
    );
}

#[tokio::test]
async fn faults_answer_codes_and_gateway_errors() {
    let b = Bots::start().await;
    let f = b
        .faults(json!({ "provider": "wecom", "fail_next": 2, "code": -1 }))
        .await;
    assert_eq!(f["wecom"]["fail_next"], 2, "{f}");
    assert_eq!(f["dingtalk"]["fail_next"], 0, "{f}");
    let key = DEFAULT_WECOM_ROBOT_KEY;
    assert_err(&b.wecom(key, &wecom_text("a")).await, -1, "system busy");
    assert_err(&b.wecom(key, &json!({})).await, -1, "system busy");
    assert_ok(&b.wecom(key, &wecom_text("b")).await);

    // Without a code, the provider's retryable rate-limit code.
    b.faults(json!({ "provider": "dingtalk", "fail_next": 1 }))
        .await;
    let v = b
        .dingtalk(DEFAULT_DINGTALK_ROBOT_TOKEN, None, &ding_text("x"))
        .await;
    assert_err(&v, 130101, "send too fast");

    b.faults(json!({ "provider": "feishu", "http_status_next": 1, "status": 502 }))
        .await;
    let (status, text) = b
        .post_raw(
            &format!("/open-apis/bot/v2/hook/{DEFAULT_FEISHU_BOT_TOKEN}"),
            feishu_text("x").to_string(),
        )
        .await;
    assert_eq!(status, 502);
    assert!(text.contains("502 Bad Gateway"), "{text}");
    assert_eq!(
        b.feishu(
            DEFAULT_FEISHU_BOT_TOKEN,
            Some(DEFAULT_FEISHU_BOT_SECRET),
            feishu_text("x")
        )
        .await["code"],
        0
    );

    // No provider: all three at once.
    let f = b
        .faults(json!({ "fail_next": 1, "code": 9, "msg": "boom" }))
        .await;
    assert_eq!(f["feishu"]["fail_next"], 1, "{f}");
    assert_err(&b.wecom(key, &wecom_text("x")).await, 9, "boom");
    assert_feishu(&b.feishu("any", None, feishu_text("x")).await, 9, "boom");

    let (status, _) = b
        .post_raw(
            "/_mock/robots/faults",
            json!({ "provider": "slack" }).to_string(),
        )
        .await;
    assert_eq!(status, 400);
    let (status, _) = b
        .post_raw(
            "/_mock/robots/faults",
            json!({ "http_status_next": 1, "status": 200 }).to_string(),
        )
        .await;
    assert_eq!(status, 400);

    let s = b.stats().await;
    assert_eq!(s.wecom.refused.get("-1"), Some(&2));
    assert_eq!(s.wecom.refused.get("9"), Some(&1));
    assert_eq!(s.feishu.http_errors.get("502"), Some(&1));
    assert_eq!(s.feishu.calls, 3);
    let kept = b.get("/_mock/robots/faults").await;
    assert_eq!(kept["dingtalk"]["fail_next"], 1, "{kept}");
}

#[tokio::test]
async fn reset_clears_records_windows_and_throttles() {
    let b = Bots::start().await;
    let secret = Some(DEFAULT_DINGTALK_ROBOT_SECRET);
    for _ in 0..21 {
        b.dingtalk(DEFAULT_DINGTALK_ROBOT_TOKEN, secret, &ding_text("x"))
            .await;
    }
    for _ in 0..21 {
        b.wecom(DEFAULT_WECOM_ROBOT_KEY, &wecom_text("x")).await;
    }
    assert_eq!(b.messages("").await.len(), 40);
    b.post("/_mock/reset", &json!({})).await;
    assert!(b.messages("").await.is_empty());
    assert_eq!(b.stats().await, RobotStats::default());
    assert_ok(
        &b.dingtalk(DEFAULT_DINGTALK_ROBOT_TOKEN, secret, &ding_text("x"))
            .await,
    );
    assert_ok(&b.wecom(DEFAULT_WECOM_ROBOT_KEY, &wecom_text("x")).await);
}

#[tokio::test]
async fn config_reads_validates_and_replaces() {
    let b = Bots::start().await;
    let cfg = b.get("/_mock/robots/config").await;
    assert_eq!(cfg["robots"].as_array().map(Vec::len), Some(3), "{cfg}");
    assert_eq!(cfg["robots"][1]["secret"], DEFAULT_DINGTALK_ROBOT_SECRET);
    assert_eq!(cfg["limits"]["dingtalk_throttle_secs"], 600);

    let dup = json!({ "robots": [
        {"provider": "wecom", "token": "a"}, {"provider": "wecom", "token": "a"},
    ] });
    let (status, text) = b.post_raw("/_mock/robots/config", dup.to_string()).await;
    assert_eq!(status, 400, "{text}");
    let (status, _) = b
        .post_raw(
            "/_mock/robots/config",
            json!({ "robots": [{"provider": "slack", "token": "a"}] }).to_string(),
        )
        .await;
    assert_eq!(status, 400);

    b.configure(json!({ "robots": [{"provider": "wecom", "token": "fresh"}],
                        "limits": {"wecom_per_minute": 1} }))
        .await;
    assert_err(
        &b.wecom(DEFAULT_WECOM_ROBOT_KEY, &wecom_text("x")).await,
        93000,
        "invalid webhook url",
    );
    assert_ok(&b.wecom("fresh", &wecom_text("x")).await);
    assert_err(
        &b.wecom("fresh", &wecom_text("x")).await,
        45009,
        "api freq out of limit",
    );
    let cfg = b.get("/_mock/robots/config").await;
    assert_eq!(cfg["limits"]["wecom_per_minute"], 1);
    assert_eq!(cfg["limits"]["feishu_per_minute"], 100);
}
