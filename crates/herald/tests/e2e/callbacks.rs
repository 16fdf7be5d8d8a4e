//! Signed provider callbacks and signed webhooks, end to end: the real
//! `herald serve` on a protected node and the real `herald mock`.
//!
//! - A WeChat channel with `callback_token` takes its delivery callbacks
//!   without an API key, on the strength of the signature; unsigned, wrongly
//!   signed and stale callbacks get `401` and change no delivery.
//! - The `GET` handshake echoes `echostr` only when signed.
//! - Safe mode: the mock encrypts with the `EncodingAESKey`, Herald decrypts.
//! - Webhooks carry `X-Herald-Signature: t=..,v1=..`, which the mock checks.

use crate::common;

use std::time::Duration;

use common::{Mock, Server, now_ms, wait_for};
use herald_channels::wechat::crypt::MsgCrypt;
use herald_channels::wechat::verify::signature;
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);
const ADMIN: &str = "e2e-callbacks-admin-key-0123456789";
const TOKEN: &str = "cb-token-42";
const AES_KEY: &str = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG";
const APPID: &str = "wxmockappid";

fn wechat_channel(name: &str, mock: &str, extra: &str) -> String {
    format!(
        "[[channels]]\nname = \"{name}\"\nkind = \"wechat\"\napi_base = \"{mock}\"\n\
         appid = \"{APPID}\"\nsecret = \"mock-wechat-secret\"\n{extra}\n"
    )
}

/// A protected node (admin key set) with `channels`.
async fn protected(channels: &str) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("data").join("herald.db");
    let store = format!("sqlite://{}", db.display());
    Server::start_with_env(&store, dir, channels, &[("HERALD_ADMIN_KEY", ADMIN)]).await
}

/// A request with the admin key; status and JSON (or text) body.
async fn admin(method: reqwest::Method, url: String, body: Option<Value>) -> (u16, Value) {
    let mut req = common::client().request(method, url).bearer_auth(ADMIN);
    if let Some(b) = body {
        req = req.json(&b);
    }
    answer(req.send().await.unwrap()).await
}

async fn answer(resp: reqwest::Response) -> (u16, Value) {
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// A callback POST with `query`, no key.
async fn callback(
    s: &Server,
    channel: &str,
    query: &[(&str, String)],
    body: String,
) -> (u16, Value) {
    let resp = common::client()
        .post(format!("{}/v1/channels/{channel}/callback", s.url))
        .query(query)
        .header("content-type", "text/xml")
        .body(body)
        .send()
        .await
        .unwrap();
    answer(resp).await
}

/// Sends one template message on `channel` to `openid` and waits for it to
/// be delivered; its delivery (with `provider_msgid`).
/// Points the WeChat mock's callbacks at `channel`'s callback route on `s`.
async fn send_callbacks_to(mock: &Mock, s: &Server, channel: &str) {
    let (st, v) = common::post_raw(
        &format!("{}/_mock/wechat/config", mock.url),
        "application/json",
        json!({"callback_url": format!("{}/v1/channels/{channel}/callback", s.url)}).to_string(),
    )
    .await;
    assert!(st < 300, "{v}");
}

async fn delivered(s: &Server, channel: &str, openid: &str) -> (i64, Value) {
    let (st, v) = admin(
        reqwest::Method::POST,
        format!("{}/v1/timers", s.url),
        Some(
            json!({"delay_ms": 0, "channel": channel, "recipient": openid,
            "message": {"template_id": "TPL", "data": {"first": {"value": "hi"}}}}),
        ),
    )
    .await;
    assert_eq!(st, 201, "{v}");
    let id = v["id"].as_i64().unwrap();
    let url = format!("{}/v1/timers/{id}/deliveries", s.url);
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let (_, v) = admin(reqwest::Method::GET, url.clone(), None).await;
        let d = v["deliveries"][0].clone();
        if d["outcome"] == "delivered" {
            return (id, d);
        }
        assert!(std::time::Instant::now() < deadline, "never delivered: {v}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn final_status(s: &Server, id: i64) -> Value {
    let url = format!("{}/v1/timers/{id}/deliveries", s.url);
    admin(reqwest::Method::GET, url, None).await.1["deliveries"][0]["final_status"].clone()
}

fn event(msgid: &str, status: &str) -> String {
    format!(
        "<xml><ToUserName><![CDATA[gh_mockaccount]]></ToUserName><FromUserName><![CDATA[o1]]></FromUserName>\
         <CreateTime>1</CreateTime><MsgType><![CDATA[event]]></MsgType>\
         <Event><![CDATA[TEMPLATESENDJOBFINISH]]></Event><MsgID>{msgid}</MsgID>\
         <Status><![CDATA[{status}]]></Status></xml>"
    )
}

fn signed_query(token: &str, ts: i64, nonce: &str) -> Vec<(&'static str, String)> {
    let t = ts.to_string();
    vec![
        ("signature", signature(&[token, &t, nonce])),
        ("timestamp", t),
        ("nonce", nonce.to_string()),
    ]
}

#[tokio::test]
async fn signed_callbacks_apply_without_a_key_and_forged_ones_change_nothing() {
    let mock = Mock::start(&["--wechat-callback-token", TOKEN]).await;
    let s = protected(&wechat_channel(
        "wx",
        &mock.url,
        &format!("callback_token = \"{TOKEN}\"\n"),
    ))
    .await;
    send_callbacks_to(&mock, &s, "wx").await;

    // The mock's signed callback is applied on a protected node, no key.
    let (id, d) = delivered(&s, "wx", "oSigned").await;
    let msgid = d["provider_msgid"].as_str().unwrap().to_string();
    wait_for("signed callback applied", WAIT, || async {
        final_status(&s, id).await == "success"
    })
    .await;
    let stats = common::get_json(&format!("{}/_mock/wechat/stats", mock.url))
        .await
        .1;
    assert_eq!(stats["callbacks_failed"], 0, "{stats}");

    // Forgeries naming the same message: each refused, nothing changed.
    let now = now_ms() / 1000;
    let forged = event(&msgid, "failed:user block");
    let mut bad_sig = signed_query(TOKEN, now, "n1");
    bad_sig[0].1 = signature(&["wrong-token", &now.to_string(), "n1"]);
    let cases: Vec<(&str, Vec<(&str, String)>)> = vec![
        ("unsigned", vec![]),
        ("bad signature", bad_sig),
        ("stale", signed_query(TOKEN, now - 600, "n2")),
        ("from the future", signed_query(TOKEN, now + 600, "n3")),
        (
            "no nonce",
            signed_query(TOKEN, now, "n4")
                .into_iter()
                .filter(|(k, _)| *k != "nonce")
                .collect(),
        ),
    ];
    for (what, query) in &cases {
        let (st, v) = callback(&s, "wx", query, forged.clone()).await;
        assert_eq!(st, 401, "{what}: {v}");
        assert_eq!(v["error"]["code"], "invalid_signature", "{what}: {v}");
    }
    // The admin key is no substitute for the signature on a signed channel.
    let resp = common::client()
        .post(format!("{}/v1/channels/wx/callback", s.url))
        .bearer_auth(ADMIN)
        .header("content-type", "text/xml")
        .body(forged.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 401);
    assert_eq!(final_status(&s, id).await, "success");

    // A correctly signed one is applied.
    let (st, v) = callback(&s, "wx", &signed_query(TOKEN, now, "n5"), forged).await;
    assert_eq!(
        (st, v.clone()),
        (200, Value::String("success".into())),
        "{v}"
    );
    assert_eq!(final_status(&s, id).await, "user_block");

    // The server-URL handshake.
    let mut q = signed_query(TOKEN, now, "n6");
    q.push(("echostr", "echo-8231".into()));
    let resp = common::client()
        .get(format!("{}/v1/channels/wx/callback", s.url))
        .query(&q)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain")
    );
    assert_eq!(resp.text().await.unwrap(), "echo-8231");
    q[0].1 = "0".repeat(40);
    let resp = common::client()
        .get(format!("{}/v1/channels/wx/callback", s.url))
        .query(&q)
        .send()
        .await
        .unwrap();
    let (st, v) = answer(resp).await;
    assert_eq!(st, 401, "{v}");
    assert_eq!(v["error"]["code"], "invalid_signature", "{v}");

    // Other routes still need the key.
    let (st, _) = common::get_json(&format!("{}/v1/channels", s.url)).await;
    assert_eq!(st, 401);
}

#[tokio::test]
async fn safe_mode_callbacks_are_decrypted_and_plain_ones_refused() {
    let mock = Mock::start(&[
        "--wechat-callback-token",
        TOKEN,
        "--wechat-encoding-aes-key",
        AES_KEY,
    ])
    .await;
    let s = protected(&wechat_channel(
        "wxs",
        &mock.url,
        &format!("callback_token = \"{TOKEN}\"\nencoding_aes_key = \"{AES_KEY}\"\n"),
    ))
    .await;
    send_callbacks_to(&mock, &s, "wxs").await;
    let (id, d) = delivered(&s, "wxs", "oSafe").await;
    wait_for("encrypted callback applied", WAIT, || async {
        final_status(&s, id).await == "success"
    })
    .await;
    let msgid = d["provider_msgid"].as_str().unwrap().to_string();

    // A plain (unencrypted) callback, even correctly signed, is refused:
    // its signature does not cover the body.
    let now = now_ms() / 1000;
    let forged = event(&msgid, "failed: system failed");
    let (st, v) = callback(&s, "wxs", &signed_query(TOKEN, now, "p1"), forged.clone()).await;
    assert_eq!(st, 401, "{v}");

    // Encrypted for another appid: refused.
    let crypt = MsgCrypt::new(AES_KEY).unwrap();
    let seal = |appid: &str, nonce: &str| {
        let enc = crypt.encrypt(forged.as_bytes(), appid, [9; 16]);
        let mut q = signed_query(TOKEN, now, nonce);
        q.push(("encrypt_type", "aes".into()));
        q.push((
            "msg_signature",
            signature(&[TOKEN, &now.to_string(), nonce, &enc]),
        ));
        (
            q,
            format!(
                "<xml><ToUserName><![CDATA[gh_mockaccount]]></ToUserName><Encrypt><![CDATA[{enc}]]></Encrypt></xml>"
            ),
        )
    };
    let (q, body) = seal("wxsomeoneelse", "p2");
    let (st, v) = callback(&s, "wxs", &q, body).await;
    assert_eq!(st, 401, "{v}");
    // A body changed after signing: refused.
    let (q, body) = seal(APPID, "p3");
    let (st, v) = callback(
        &s,
        "wxs",
        &q,
        body.replace("<Encrypt><![CDATA[", "<Encrypt><![CDATA[AAAA"),
    )
    .await;
    assert_eq!(st, 401, "{v}");
    assert_eq!(final_status(&s, id).await, "success");

    // Properly encrypted and signed: applied.
    let (q, body) = seal(APPID, "p4");
    let (st, v) = callback(&s, "wxs", &q, body).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(final_status(&s, id).await, "system_failed");
}

#[tokio::test]
async fn webhooks_are_signed_and_the_mock_verifies_them() {
    let mock = Mock::start(&["--secret", "whsec-e2e"]).await;
    let s = Server::start(&Server::webhook_config(
        &mock.hook(),
        "secret = \"whsec-e2e\"\n",
        "",
    ))
    .await;
    let (st, v) = s
        .post(
            "/v1/timers",
            &json!({"delay_ms": 0, "channel": "hooks", "recipient": "r1", "message": {"n": 1}}),
        )
        .await;
    assert_eq!(st, 201, "{v}");
    wait_for("webhook delivered", WAIT, || async {
        mock.stats().await["delivered"] == 1
    })
    .await;
    assert_eq!(mock.stats().await["bad_signatures"], 0);
    let reqs = mock.requests(None).await;
    let sig = reqs[0]["headers"]["x-herald-signature"]
        .as_str()
        .unwrap_or("");
    let (t, v1) = sig
        .strip_prefix("t=")
        .and_then(|r| r.split_once(",v1="))
        .unwrap_or_else(|| panic!("{sig}"));
    let t: i64 = t.parse().unwrap();
    assert!((now_ms() / 1000 - t).abs() < 120, "{sig}");
    assert_eq!(v1.len(), 64, "{sig}");
}
