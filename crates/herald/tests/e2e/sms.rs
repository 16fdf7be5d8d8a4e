//! The SMS channels end to end: the real `herald serve` sending through
//! `aliyun_sms` and `tencent_sms` to `herald mock`'s Aliyun and Tencent SMS
//! mocks, which check the signatures, the numbers, the templates and the
//! per-number limits as the providers do, and push receipts back to the
//! channel's callback route. On SQLite and on PostgreSQL.

use crate::common;

use std::time::Duration;

use common::{Mock, Server, pg_database, post_raw, wait_for};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(90);
/// Retries every second at most, so a per-number limit's wait (30 s, a
/// minute) is cut short by `backoff_max_ms` and the test moves the mock's
/// clock past the window instead of sleeping through it.
const RETRY: &str = "backoff_base_ms = 200\nbackoff_max_ms = 1000\nmax_attempts = 12\n";

fn channels(mock: &str) -> String {
    format!(
        "[[channels]]\nname = \"ali\"\nkind = \"aliyun_sms\"\napi_base = \"{mock}/aliyun\"\n\
         access_key_id = \"LTAImockaccesskeyid\"\naccess_key_secret = \"mock-aliyun-access-key-secret\"\n\
         sign_name = \"Herald\"\ntemplate_code = \"SMS_100001\"\ncallback_secret = \"ali-cb\"\n\
         pacing = []\n{RETRY}\n\
         [[channels]]\nname = \"tx\"\nkind = \"tencent_sms\"\napi_base = \"{mock}/tencent\"\n\
         secret_id = \"AKIDmocksecretid\"\nsecret_key = \"mock-tencent-secret-key\"\n\
         sms_sdk_app_id = \"1400000001\"\nsign_name = \"Herald\"\ntemplate_id = \"100001\"\n\
         callback_secret = \"tx-cb\"\npacing = []\n{RETRY}\n"
    )
}

/// Points a mock's receipt pushes at the server's callback route.
async fn push_receipts_to(m: &Mock, provider: &str, url: String) {
    let mut cfg = m.get(&format!("/_mock/{provider}/config")).await;
    cfg["callback_url"] = Value::String(url);
    m.post(&format!("/_mock/{provider}/config"), cfg).await;
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

/// Waits for a timer's first attempt to end with an error holding `code`.
async fn refused_with(s: &Server, id: i64, code: &str) {
    wait_for(&format!("timer {id} refused with {code}"), WAIT, || async {
        s.deliveries(id)
            .await
            .iter()
            .any(|d| d["error"].as_str().is_some_and(|e| e.contains(code)))
    })
    .await;
}

async fn job(s: &Server, channel: &str, users: &[String], message: Value) -> Value {
    let (st, job) = s
        .post(
            "/v1/jobs",
            &json!({"users": users, "channel": channel, "message": message}),
        )
        .await;
    assert_eq!(st, 201, "{job}");
    let id = job["id"].as_i64().unwrap();
    wait_for("campaign done", Duration::from_secs(120), || async {
        s.get(&format!("/v1/jobs/{id}")).await.1["state"] == "done"
    })
    .await;
    s.get(&format!("/v1/jobs/{id}")).await.1
}

async fn tencent(s: &Server, mock: &Mock) {
    push_receipts_to(
        mock,
        "tencent_sms",
        format!("{}/v1/channels/tx/callback?secret=tx-cb", s.url),
    )
    .await;

    // Refused at the door, naming the field.
    let (st, v) = s
        .post(
            "/v1/timers",
            &json!({"delay_ms": 0, "channel": "tx", "recipient": "+8613800000001",
                    "message": {"params": [1234]}}),
        )
        .await;
    assert_eq!(st, 400, "{v}");
    assert_eq!(v["error"]["field"], "message.params.0", "{v}");

    // First send: delivered with its SerialNo, which the receipt names.
    let first = json!({"params": ["1234"]});
    let id = timer(s, "tx", "+8613800000001", first.clone()).await;
    let t = settled(s, id, "done").await;
    assert_eq!(t["attempts"], 1, "{t}");
    let d = s.deliveries(id).await;
    let serial = d[0]["provider_msgid"].as_str().unwrap().to_string();
    let sent = mock
        .get("/_mock/tencent_sms/messages?phone=%2B8613800000001")
        .await;
    assert_eq!(sent[0]["serial_no"], serial.as_str(), "{sent}");
    assert_eq!(sent[0]["params"], json!(["1234"]), "{sent}");
    wait_for("tencent receipt recorded", WAIT, || async {
        s.deliveries(id).await[0]["final_status"] == "success"
    })
    .await;

    // The callback route wants its secret.
    let (st, _) = post_raw(
        &format!("{}/v1/channels/tx/callback?secret=wrong", s.url),
        "application/json",
        "[]".into(),
    )
    .await;
    assert_eq!(st, 401);

    // The same content again within 30 s: that number is deferred (not a
    // failure, the channel not paused), and goes once the window passed.
    let again = timer(s, "tx", "+8613800000001", first.clone()).await;
    refused_with(s, again, "LimitExceeded.PhoneNumberThirtySecondLimit").await;
    let other = timer(s, "tx", "+8613800000009", first.clone()).await;
    settled(s, other, "done").await;
    mock.post("/_mock/tencent_sms/clock", json!({"advance_secs": 31}))
        .await;
    let t = settled(s, again, "done").await;
    assert!(t["attempts"].as_u64().unwrap() >= 2, "{t}");

    // An invalid number fails for good.
    let bad = timer(s, "tx", "+8612345678901", first.clone()).await;
    let t = settled(s, bad, "failed").await;
    assert!(
        t["last_error"]
            .as_str()
            .unwrap()
            .contains("InvalidParameterValue.IncorrectPhoneNumber"),
        "{t}"
    );

    // A request-level error: InternalError is retried, a spent package is final.
    mock.post(
        "/_mock/tencent_sms/faults",
        json!({"internal_error_next": 1}),
    )
    .await;
    let id = timer(s, "tx", "+8613800000002", first.clone()).await;
    let t = settled(s, id, "done").await;
    assert_eq!(t["attempts"], 2, "{t}");
    mock.post(
        "/_mock/tencent_sms/faults",
        json!({"insufficient_balance": true}),
    )
    .await;
    let id = timer(s, "tx", "+8613800000003", first.clone()).await;
    let t = settled(s, id, "failed").await;
    assert!(
        t["last_error"]
            .as_str()
            .unwrap()
            .contains("InsufficientBalanceInSmsPackage"),
        "{t}"
    );
    mock.post("/_mock/tencent_sms/faults", json!({})).await;

    // A campaign of 1,000 numbers: 200 a call, five calls.
    let before = mock.get("/_mock/tencent_sms/stats").await;
    let users: Vec<String> = (0..1000).map(|i| format!("+86139{i:08}")).collect();
    let j = job(
        s,
        "tx",
        &users,
        json!({"template": "100002", "params": ["Sale", "09:00"]}),
    )
    .await;
    assert_eq!(j["totals"]["sent"], 1000, "{j}");
    let after = mock.get("/_mock/tencent_sms/stats").await;
    assert_eq!(
        after["send_calls"].as_u64().unwrap() - before["send_calls"].as_u64().unwrap(),
        5,
        "{after}"
    );
    assert_eq!(after["max_numbers_per_call"], 200, "{after}");
    assert_eq!(
        after["delivered"].as_u64().unwrap() - before["delivered"].as_u64().unwrap(),
        1000
    );
}

async fn aliyun(s: &Server, mock: &Mock) {
    push_receipts_to(
        mock,
        "aliyun_sms",
        format!("{}/v1/channels/ali/callback?secret=ali-cb", s.url),
    )
    .await;

    let (st, v) = s
        .post(
            "/v1/timers",
            &json!({"delay_ms": 0, "channel": "ali", "recipient": "13800000001",
                    "message": {"params": {"code": 1234}}}),
        )
        .await;
    assert_eq!(st, 400, "{v}");
    assert_eq!(v["error"]["field"], "message.params.code", "{v}");

    // First send: delivered under `<BizId>:<number>`, as its receipt names it.
    let code = json!({"params": {"code": "1234"}});
    let id = timer(s, "ali", "13800000001", code.clone()).await;
    let t = settled(s, id, "done").await;
    assert_eq!(t["attempts"], 1, "{t}");
    let d = s.deliveries(id).await;
    let msgid = d[0]["provider_msgid"].as_str().unwrap().to_string();
    let sent = mock
        .get("/_mock/aliyun_sms/messages?phone=13800000001")
        .await;
    assert_eq!(
        format!("{}:8613800000001", sent[0]["biz_id"].as_str().unwrap()),
        msgid,
        "{sent}"
    );
    wait_for("aliyun receipt recorded", WAIT, || async {
        s.deliveries(id).await[0]["final_status"] == "success"
    })
    .await;

    // A second message to the number within a minute: Aliyun's minute
    // flow control defers it, until the mock's clock passes the minute.
    let again = timer(s, "ali", "13800000001", code.clone()).await;
    refused_with(s, again, "isv.BUSINESS_LIMIT_CONTROL").await;
    mock.post("/_mock/aliyun_sms/clock", json!({"advance_secs": 61}))
        .await;
    let t = settled(s, again, "done").await;
    assert!(t["attempts"].as_u64().unwrap() >= 2, "{t}");

    let bad = timer(s, "ali", "+8612345678901", code.clone()).await;
    let t = settled(s, bad, "failed").await;
    assert!(
        t["last_error"]
            .as_str()
            .unwrap()
            .contains("isv.MOBILE_NUMBER_ILLEGAL"),
        "{t}"
    );

    mock.post("/_mock/aliyun_sms/faults", json!({"system_error_next": 1}))
        .await;
    let id = timer(s, "ali", "13800000002", code.clone()).await;
    let t = settled(s, id, "done").await;
    assert_eq!(t["attempts"], 2, "{t}");

    // A campaign of 1,500 numbers with one template: two calls (1000 + 500),
    // one of whose numbers the provider does not know: that call is sent
    // again number by number, and only that number fails.
    mock.post(
        "/_mock/aliyun_sms/faults",
        json!({"invalid_numbers": ["8613700000007"]}),
    )
    .await;
    let before = mock.get("/_mock/aliyun_sms/stats").await;
    let users: Vec<String> = (0..1500).map(|i| format!("137{i:08}")).collect();
    let j = job(
        s,
        "ali",
        &users,
        json!({"template": "SMS_100002", "params": {"subject": "Sale", "time": "09:00"}}),
    )
    .await;
    assert_eq!(j["totals"]["sent"], 1499, "{j}");
    assert_eq!(j["totals"]["failed"], 1, "{j}");
    let after = mock.get("/_mock/aliyun_sms/stats").await;
    let accepted =
        after["accepted_calls"].as_u64().unwrap() - before["accepted_calls"].as_u64().unwrap();
    // The clean call in one, the call with the bad number as 1000 singles.
    assert_eq!(accepted, 1 + 999, "{after}");
    assert_eq!(
        after["delivered"].as_u64().unwrap() - before["delivered"].as_u64().unwrap(),
        1499
    );
}

async fn scenario(s: &Server, mock: &Mock) {
    tencent(s, mock).await;
    aliyun(s, mock).await;
}

#[tokio::test]
async fn sms_channels_on_sqlite() {
    let mock = Mock::start(&[]).await;
    let s = Server::start(&channels(&mock.url)).await;
    scenario(&s, &mock).await;
}

#[tokio::test]
async fn sms_channels_on_postgres() {
    let Some((_db, url)) = pg_database("sms") else {
        eprintln!("PostgreSQL not installed: SMS channel test on PostgreSQL skipped");
        return;
    };
    let mock = Mock::start(&[]).await;
    let s = Server::start_on(&url, tempfile::tempdir().unwrap(), &channels(&mock.url)).await;
    scenario(&s, &mock).await;
}
