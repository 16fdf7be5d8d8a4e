use serde_json::{Value, json};

use super::*;
use crate::test_http::TestMock;

const SEND: &str = "/topapi/message/corpconversation/asyncsend_v2";
const RESULT: &str = "/topapi/message/corpconversation/getsendresult";

async fn token(m: &TestMock) -> String {
    let v = m
        .get(&format!(
            "/gettoken?appkey={DEFAULT_DINGTALK_APPKEY}&appsecret={DEFAULT_DINGTALK_APPSECRET}"
        ))
        .await;
    assert_eq!(v["errcode"], 0, "{v}");
    assert_eq!(v["expires_in"], 7200);
    v["access_token"].as_str().unwrap().to_owned()
}

async fn send(m: &TestMock, token: &str, body: Value) -> Value {
    m.post(&format!("{SEND}?access_token={token}"), &body).await
}

fn text(users: &str, content: &str) -> Value {
    json!({"agent_id": DEFAULT_DINGTALK_AGENT_ID, "userid_list": users,
           "msg": {"msgtype": "text", "text": {"content": content}}})
}

#[tokio::test]
async fn a_token_is_handed_out_again_and_checked() {
    let m = TestMock::start().await;
    let bad = m
        .get(&format!(
            "/gettoken?appkey={DEFAULT_DINGTALK_APPKEY}&appsecret=nope"
        ))
        .await;
    assert_eq!(bad["errcode"], 40089, "{bad}");
    let t1 = token(&m).await;
    assert_eq!(token(&m).await, t1, "the same token while it is valid");
    assert_eq!(send(&m, "nope", text("u1", "x")).await["errcode"], 40014);
    assert_eq!(send(&m, &t1, text("u1", "x")).await["errcode"], 0);

    m.post("/_mock/dingtalk/faults", &json!({"expire_tokens": true}))
        .await;
    assert_eq!(send(&m, &t1, text("u1", "y")).await["errcode"], 42001);
    let t2 = token(&m).await;
    assert_ne!(t2, t1);
    assert_eq!(send(&m, &t2, text("u1", "y")).await["errcode"], 0);

    // Past 7200 s of the mock clock the token is expired.
    m.post("/_mock/dingtalk/clock", &json!({"advance_secs": 7201}))
        .await;
    assert_eq!(send(&m, &t2, text("u1", "z")).await["errcode"], 42001);
    let st = m.get("/_mock/dingtalk/stats").await;
    assert_eq!(st["tokens_issued"], 2, "{st}");
    assert_eq!(st["tokens_refused"], 1, "{st}");
}

#[tokio::test]
async fn bodies_agent_and_batch_sizes_are_checked() {
    let m = TestMock::start().await;
    let t = token(&m).await;
    let mut wrong_agent = text("u1", "x");
    wrong_agent["agent_id"] = json!(1);
    assert_eq!(send(&m, &t, wrong_agent).await["errcode"], 40056);
    let many: Vec<String> = (0..101).map(|i| format!("u{i}")).collect();
    let v = send(&m, &t, text(&many.join(","), "x")).await;
    assert_eq!(v["errcode"], 40035, "{v}");
    assert!(v["errmsg"].as_str().unwrap().contains("101"), "{v}");
    let big = "x".repeat(DINGTALK_MAX_MSG_BYTES);
    assert_eq!(send(&m, &t, text("u1", &big)).await["errcode"], 40035);
    let v = send(
        &m,
        &t,
        json!({"agent_id": DEFAULT_DINGTALK_AGENT_ID, "userid_list": "u1",
               "msg": {"msgtype": "markdown", "markdown": {"text": "no title"}}}),
    )
    .await;
    assert_eq!(v["errcode"], 40035, "{v}");
    let st = m.get("/_mock/dingtalk/stats").await;
    assert_eq!(st["accepted_calls"], 0, "{st}");
    assert_eq!(st["refused"]["40035"], 3, "{st}");
}

#[tokio::test]
async fn unknown_users_and_repeats_are_taken_and_listed_in_the_result() {
    let m = TestMock::start().await;
    let t = token(&m).await;
    let v = send(&m, &t, text("u1,unknown-9,u2", "rota")).await;
    assert_eq!(v["errcode"], 0, "{v}");
    let task = v["task_id"].as_u64().unwrap();
    // The same content to u1 the same day: taken, and dropped.
    let again = send(&m, &t, text("u1,u3", "rota")).await;
    let task2 = again["task_id"].as_u64().unwrap();

    let r = m
        .post(
            &format!("{RESULT}?access_token={t}"),
            &json!({"agent_id": DEFAULT_DINGTALK_AGENT_ID, "task_id": task}),
        )
        .await;
    assert_eq!(
        r["send_result"]["invalid_user_id_list"],
        json!(["unknown-9"]),
        "{r}"
    );
    assert_eq!(
        r["send_result"]["unread_user_id_list"],
        json!(["u1", "u2"]),
        "{r}"
    );
    let r2 = m
        .post(
            &format!("{RESULT}?access_token={t}"),
            &json!({"agent_id": DEFAULT_DINGTALK_AGENT_ID, "task_id": task2}),
        )
        .await;
    assert_eq!(
        r2["send_result"]["forbidden_user_id_list"],
        json!(["u1"]),
        "{r2}"
    );

    let st = m.get("/_mock/dingtalk/stats").await;
    assert_eq!(st["delivered"], 3, "{st}");
    assert_eq!(st["users"], 3, "{st}");
    assert_eq!(st["invalid_users"], 1, "{st}");
    assert_eq!(st["dropped_same_content"], 1, "{st}");
    let got = m.get("/_mock/dingtalk/messages?userid=u1").await;
    assert_eq!(got.as_array().unwrap().len(), 1, "{got}");
    assert_eq!(got[0]["msg"]["text"]["content"], "rota");

    // The next Beijing day the same content goes again.
    m.post("/_mock/dingtalk/clock", &json!({"advance_secs": 86_400}))
        .await;
    let t = token(&m).await;
    send(&m, &t, text("u1", "rota")).await;
    assert_eq!(m.get("/_mock/dingtalk/stats").await["delivered"], 4);
}

#[tokio::test]
async fn rate_limits_and_faults_refuse_the_whole_call() {
    let m = TestMock::start().await;
    m.post(
        "/_mock/dingtalk/config",
        &json!({"recipients_per_minute": 3}),
    )
    .await;
    let t = token(&m).await;
    assert_eq!(send(&m, &t, text("a,b", "1")).await["errcode"], 0);
    assert_eq!(send(&m, &t, text("c,d", "2")).await["errcode"], 143103);
    m.post("/_mock/dingtalk/clock", &json!({"advance_secs": 60}))
        .await;
    assert_eq!(send(&m, &t, text("c,d", "2")).await["errcode"], 0);
    m.post(
        "/_mock/dingtalk/faults",
        &json!({"throttle_next": 1, "busy_next": 1}),
    )
    .await;
    assert_eq!(send(&m, &t, text("e", "3")).await["errcode"], -1);
    assert_eq!(send(&m, &t, text("e", "3")).await["errcode"], 143103);
    let st = m.get("/_mock/dingtalk/stats").await;
    assert_eq!(st["refused"]["143103"], 2, "{st}");
    assert_eq!(st["refused"]["-1"], 1, "{st}");
    let (status, text) = m
        .post_raw("/_mock/dingtalk/config", json!({"agent_id": 0}).to_string())
        .await;
    assert_eq!(status, 400, "{text}");
}
