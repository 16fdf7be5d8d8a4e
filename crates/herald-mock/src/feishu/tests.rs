use serde_json::{Value, json};

use super::*;
use crate::test_http::TestMock;

const SEND: &str = "/open-apis/im/v1/messages";

async fn token(m: &TestMock) -> String {
    let v = m
        .post(
            "/open-apis/auth/v3/tenant_access_token/internal",
            &json!({"app_id": DEFAULT_FEISHU_APP_ID, "app_secret": DEFAULT_FEISHU_APP_SECRET}),
        )
        .await;
    assert_eq!(v["code"], 0, "{v}");
    v["tenant_access_token"].as_str().unwrap().to_owned()
}

async fn send(m: &TestMock, token: &str, id_type: &str, body: Value) -> (u16, Value) {
    let resp = m
        .http
        .post(m.url(&format!("{SEND}?receive_id_type={id_type}")))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap())
}

fn text(to: &str, t: &str, uuid: Option<&str>) -> Value {
    let mut b =
        json!({"receive_id": to, "msg_type": "text", "content": json!({"text": t}).to_string()});
    if let Some(u) = uuid {
        b["uuid"] = json!(u);
    }
    b
}

#[tokio::test]
async fn tokens_are_reused_refreshed_and_checked() {
    let m = TestMock::start().await;
    let (st, bad) = m
        .post_raw(
            "/open-apis/auth/v3/tenant_access_token/internal",
            json!({"app_id": DEFAULT_FEISHU_APP_ID, "app_secret": "x"}).to_string(),
        )
        .await;
    assert_eq!(st, 400, "{bad}");
    let t1 = token(&m).await;
    assert_eq!(token(&m).await, t1);
    let (st, v) = send(&m, "t-nope", "open_id", text("ou_1", "x", None)).await;
    assert_eq!((st, v["code"].as_i64()), (400, Some(99991663)), "{v}");
    assert_eq!(
        send(&m, &t1, "open_id", text("ou_1", "x", None)).await.1["code"],
        0
    );
    // With less than 30 minutes left a new token comes; the old one works on.
    m.post("/_mock/feishu/clock", &json!({"advance_secs": 5500}))
        .await;
    let t2 = token(&m).await;
    assert_ne!(t1, t2);
    assert_eq!(
        send(&m, &t1, "open_id", text("ou_1", "y", None)).await.1["code"],
        0
    );
    m.post("/_mock/feishu/faults", &json!({"expire_tokens": true}))
        .await;
    assert_eq!(
        send(&m, &t2, "open_id", text("ou_1", "z", None)).await.1["code"],
        99991663
    );
    let st = m.get("/_mock/feishu/stats").await;
    assert_eq!(st["tokens_issued"], 2, "{st}");
    assert_eq!(st["tokens_refused"], 1, "{st}");
}

#[tokio::test]
async fn a_uuid_sends_once_and_bodies_are_checked() {
    let m = TestMock::start().await;
    let t = token(&m).await;
    let (_, a) = send(&m, &t, "user_id", text("u1", "hi", Some("k1"))).await;
    let (_, b) = send(&m, &t, "user_id", text("u1", "hi", Some("k1"))).await;
    assert_eq!(a["data"]["message_id"], b["data"]["message_id"]);
    let got = m.get("/_mock/feishu/messages?receive_id=u1").await;
    assert_eq!(got.as_array().unwrap().len(), 1, "{got}");
    assert_eq!(got[0]["content"], json!({"text": "hi"}));
    // An hour later the uuid is new again.
    m.post("/_mock/feishu/clock", &json!({"advance_secs": 3601}))
        .await;
    let t = token(&m).await;
    let (_, c) = send(&m, &t, "user_id", text("u1", "hi", Some("k1"))).await;
    assert_ne!(c["data"]["message_id"], a["data"]["message_id"]);

    let (st, v) = send(&m, &t, "phone", text("u1", "x", None)).await;
    assert_eq!((st, v["code"].as_i64()), (400, Some(99992402)), "{v}");
    let obj_content = json!({"receive_id": "u1", "msg_type": "text", "content": {"text": "x"}});
    assert_eq!(
        send(&m, &t, "open_id", obj_content).await.1["code"],
        99992402
    );
    let long_uuid = "u".repeat(51);
    assert_eq!(
        send(&m, &t, "open_id", text("u1", "x", Some(&long_uuid)))
            .await
            .1["code"],
        99992402
    );
    let (st, v) = send(&m, &t, "open_id", text("unknown-ou", "x", None)).await;
    assert_eq!((st, v["code"].as_i64()), (400, Some(230013)), "{v}");
    let st = m.get("/_mock/feishu/stats").await;
    assert_eq!(st["delivered"], 2, "{st}");
    assert_eq!(st["deduplicated"], 1, "{st}");
    assert_eq!(st["refused"]["99992402"], 3, "{st}");
}

#[tokio::test]
async fn rate_limits_per_app_and_per_receiver() {
    let m = TestMock::start().await;
    m.post(
        "/_mock/feishu/config",
        &json!({"calls_per_second": 8, "per_receiver_per_second": 2}),
    )
    .await;
    // A frozen second: move the clock to the start of one.
    let t = token(&m).await;
    let now = m
        .post("/_mock/feishu/clock", &json!({"advance_ms": 0}))
        .await["now_ms"]
        .as_u64()
        .unwrap();
    m.post(
        "/_mock/feishu/clock",
        &json!({"advance_ms": 1000 - now % 1000}),
    )
    .await;
    // Real time moves on; only assert what cannot flake: the codes seen.
    let mut codes = Vec::new();
    for i in 0..12 {
        let to = if i < 4 { "same" } else { "other" };
        codes.push(
            send(&m, &t, "open_id", text(to, &format!("m{i}"), None))
                .await
                .1["code"]
                .as_i64()
                .unwrap(),
        );
    }
    assert!(
        codes.contains(&230020) || codes.contains(&99991400),
        "{codes:?}"
    );
    m.post("/_mock/feishu/faults", &json!({"throttle_next": 1}))
        .await;
    m.post("/_mock/feishu/clock", &json!({"advance_secs": 5}))
        .await;
    let (st, v) = send(&m, &t, "open_id", text("z", "x", None)).await;
    assert_eq!((st, v["code"].as_i64()), (429, Some(99991400)), "{v}");
}
