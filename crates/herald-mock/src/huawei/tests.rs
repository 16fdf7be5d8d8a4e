//! The Huawei Push Kit mock over real HTTP, as a sender sees it.

use serde_json::{Value, json};

use crate::test_http::TestMock;
use crate::{DEFAULT_HUAWEI_APP_ID, DEFAULT_HUAWEI_APP_SECRET, HuaweiMessage, HuaweiStats};

struct Hw {
    mock: TestMock,
}

impl std::ops::Deref for Hw {
    type Target = TestMock;
    fn deref(&self) -> &TestMock {
        &self.mock
    }
}

impl Hw {
    async fn start() -> Hw {
        Hw {
            mock: TestMock::start().await,
        }
    }

    /// POSTs a token form; the status and JSON answer.
    async fn token_form(&self, form: &str) -> (u16, Value) {
        let resp = self
            .http
            .post(self.server.huawei_token_url())
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form.to_owned())
            .send()
            .await
            .unwrap();
        (resp.status().as_u16(), resp.json().await.unwrap())
    }

    async fn token(&self) -> String {
        let (status, v) = self
            .token_form(&format!(
                "grant_type=client_credentials&client_id={DEFAULT_HUAWEI_APP_ID}&client_secret={DEFAULT_HUAWEI_APP_SECRET}"
            ))
            .await;
        assert_eq!(status, 200, "{v}");
        v["access_token"].as_str().expect("access_token").to_owned()
    }

    /// A send to `app`'s path with an optional bearer token and a raw body.
    async fn send_raw(&self, app: &str, bearer: Option<&str>, body: String) -> (u16, Value) {
        let mut req = self
            .http
            .post(self.url(&format!("/v1/{app}/messages:send")))
            .header("content-type", "application/json")
            .body(body);
        if let Some(t) = bearer {
            req = req.bearer_auth(t);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        let v = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
        (status, v)
    }

    async fn send(&self, bearer: &str, body: &Value) -> (u16, Value) {
        self.send_raw(DEFAULT_HUAWEI_APP_ID, Some(bearer), body.to_string())
            .await
    }

    async fn stats(&self) -> HuaweiStats {
        serde_json::from_value(self.get("/_mock/huawei/stats").await).unwrap()
    }

    async fn messages(&self, query: &str) -> Vec<HuaweiMessage> {
        serde_json::from_value(self.get(&format!("/_mock/huawei/messages{query}")).await).unwrap()
    }

    async fn advance(&self, secs: i64) {
        self.post("/_mock/huawei/clock", &json!({ "advance_secs": secs }))
            .await;
    }
}

/// A notification of the WORK class (not marketing) to `tokens`.
fn work(tokens: &[&str]) -> Value {
    json!({ "message": {
        "notification": { "title": "Build", "body": "green" },
        "android": { "category": "WORK" },
        "token": tokens,
    }})
}

/// A notification with no class, which Huawei treats as marketing.
fn marketing(token: &str) -> Value {
    json!({ "message": {
        "notification": { "title": "Sale", "body": "today" },
        "token": [token],
    }})
}

#[track_caller]
fn assert_answer(got: &(u16, Value), status: u16, code: &str, msg_part: &str) {
    let (s, v) = got;
    assert_eq!(*s, status, "{v}");
    assert_eq!(v["code"], code, "{v}");
    let msg = v["msg"].as_str().unwrap_or_default();
    assert!(msg.contains(msg_part), "msg names {msg_part:?}: {v}");
    let rid = v["requestId"].as_str().expect("requestId is a string");
    assert!(
        rid.len() >= 20 && rid.bytes().all(|b| b.is_ascii_digit()),
        "{v}"
    );
}

#[track_caller]
fn assert_success(got: &(u16, Value)) {
    assert_answer(got, 200, "80000000", "Success");
}

#[tokio::test]
async fn token_issues_and_refuses_bad_credentials() {
    let hw = Hw::start().await;
    let form = format!(
        "grant_type=client_credentials&client_id={DEFAULT_HUAWEI_APP_ID}&client_secret={DEFAULT_HUAWEI_APP_SECRET}"
    );
    let (status, v) = hw.token_form(&form).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["expires_in"], 3600);
    assert_eq!(v["token_type"], "Bearer");
    let first = v["access_token"].as_str().unwrap().to_owned();
    let second = hw.token().await;
    assert_ne!(first, second);
    // A newer token does not revoke the older one.
    assert_success(&hw.send(&first, &work(&["d1"])).await);
    assert_success(&hw.send(&second, &work(&["d1"])).await);

    let bad_secret = json!({
        "error": 1101, "sub_error": 20601, "error_description": "The input secret is invalid.",
    });
    let (status, v) = hw
        .token_form(&format!(
            "grant_type=client_credentials&client_id={DEFAULT_HUAWEI_APP_ID}&client_secret=nope"
        ))
        .await;
    assert_eq!((status, &v), (400, &bad_secret));
    let (status, v) = hw
        .token_form(&format!(
            "grant_type=client_credentials&client_id=999&client_secret={DEFAULT_HUAWEI_APP_SECRET}"
        ))
        .await;
    assert_eq!((status, &v), (400, &bad_secret));
    let (status, v) = hw
        .token_form(&format!(
            "grant_type=password&client_id={DEFAULT_HUAWEI_APP_ID}&client_secret={DEFAULT_HUAWEI_APP_SECRET}"
        ))
        .await;
    assert_eq!(status, 400);
    assert!(
        v["error_description"]
            .as_str()
            .unwrap()
            .contains("\"password\""),
        "{v}"
    );
    let (status, v) = hw.token_form("client_id=1").await;
    assert_eq!(status, 400);
    assert!(
        v["error_description"]
            .as_str()
            .unwrap()
            .contains("grant_type"),
        "{v}"
    );

    let s = hw.stats().await;
    assert_eq!((s.tokens_issued, s.tokens_refused), (2, 4));
}

#[tokio::test]
async fn sends_to_one_and_to_a_thousand_devices() {
    let hw = Hw::start().await;
    let t = hw.token().await;
    let one = hw.send(&t, &work(&["dev-1"])).await;
    assert_success(&one);
    let names: Vec<String> = (0..1000).map(|i| format!("bulk-{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let bulk = hw.send(&t, &work(&refs)).await;
    assert_success(&bulk);

    let got = hw.messages("?token=dev-1").await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].token.as_deref(), Some("dev-1"));
    assert_eq!(got[0].request_id, one.1["requestId"].as_str().unwrap());
    let mut expected = work(&[])["message"].clone();
    expected.as_object_mut().unwrap().remove("token");
    assert_eq!(got[0].message, expected, "recorded without the token list");
    assert!(got[0].at_ms > 1_600_000_000_000);

    let last = hw.messages("?limit=3").await;
    let tokens: Vec<_> = last.iter().filter_map(|m| m.token.as_deref()).collect();
    assert_eq!(tokens, ["bulk-997", "bulk-998", "bulk-999"], "oldest first");
    assert_eq!(last[0].request_id, bulk.1["requestId"].as_str().unwrap());
    assert_eq!(hw.messages("").await.len(), 1001);

    let raw = hw.get("/_mock/huawei/messages?limit=1").await;
    assert_eq!(
        raw[0].as_object().unwrap().keys().collect::<Vec<_>>(),
        ["at_ms", "message", "request_id", "token"],
        "{raw}"
    );

    let s = hw.stats().await;
    assert_eq!((s.calls, s.accepted_calls, s.delivered), (2, 2, 1001));
    assert!(s.refused.is_empty() && s.http_errors.is_empty(), "{s:?}");
    let all = hw.get("/_mock/stats").await;
    assert_eq!(all["huawei"]["delivered"], 1001, "{all}");
}

#[tokio::test]
async fn token_count_must_be_one_to_a_thousand() {
    let hw = Hw::start().await;
    let t = hw.token().await;
    let names: Vec<String> = (0..1001).map(|i| format!("d{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    assert_answer(&hw.send(&t, &work(&refs)).await, 400, "80300010", "1001");
    assert_answer(&hw.send(&t, &work(&[])).await, 400, "80300010", "1 to 1000");
    let s = hw.stats().await;
    assert_eq!(s.refused.get("80300010"), Some(&2));
    assert_eq!(s.http_errors.get("400"), Some(&2));
    assert_eq!(s.delivered, 0);
}

#[tokio::test]
async fn invalid_tokens_answer_partly_or_wholly() {
    let hw = Hw::start().await;
    let t = hw.token().await;
    let added = hw
        .post("/_mock/huawei/devices", &json!({ "invalid": ["gone"] }))
        .await;
    assert_eq!(added, json!({ "invalid": ["gone"] }));
    assert_eq!(
        hw.get("/_mock/huawei/config").await["invalid_tokens"],
        json!(["gone"])
    );

    let partial = hw
        .send(&t, &work(&["ok-1", "invalid-x", "ok-2", "gone"]))
        .await;
    assert_answer(&partial, 200, "80100000", "illegal_tokens");
    let msg = partial.1["msg"].as_str().unwrap();
    assert!(msg.starts_with(r#"{"success":2,"failure":2,"#), "{msg}");
    let detail: Value = serde_json::from_str(msg).unwrap();
    assert_eq!(detail["success"], 2);
    assert_eq!(detail["failure"], 2);
    assert_eq!(detail["illegal_tokens"], json!(["invalid-x", "gone"]));
    let delivered: Vec<_> = hw
        .messages("")
        .await
        .into_iter()
        .filter_map(|m| m.token)
        .collect();
    assert_eq!(delivered, ["ok-1", "ok-2"]);

    assert_answer(
        &hw.send(&t, &work(&["invalid-a", "gone"])).await,
        200,
        "80300007",
        "All the tokens are invalid",
    );

    // A configured list works the same.
    let mut cfg = hw.get("/_mock/huawei/config").await;
    cfg["invalid_tokens"] = json!(["stale"]);
    hw.post("/_mock/huawei/config", &cfg).await;
    assert_answer(
        &hw.send(&t, &work(&["stale"])).await,
        200,
        "80300007",
        "invalid",
    );
    assert_success(&hw.send(&t, &work(&["gone"])).await);

    let s = hw.stats().await;
    assert_eq!(s.invalid_tokens, 5);
    assert_eq!((s.accepted_calls, s.partial_calls), (2, 1));
    assert_eq!(s.refused.get("80300007"), Some(&2));
    assert_eq!(s.delivered, 3);
    assert!(s.http_errors.is_empty(), "200 answers: {s:?}");
}

#[tokio::test]
async fn auth_errors_and_expiry_by_the_clock() {
    let hw = Hw::start().await;
    let body = work(&["d"]).to_string();
    let app = DEFAULT_HUAWEI_APP_ID;
    assert_answer(
        &hw.send_raw(app, None, body.clone()).await,
        401,
        "80200001",
        "Oauth authentication error",
    );
    assert_answer(
        &hw.send_raw(app, Some("CgB6e3x9forged"), body.clone()).await,
        401,
        "80200001",
        "Oauth authentication error",
    );
    let t = hw.token().await;
    assert_answer(
        &hw.send_raw("100000002", Some(&t), body.clone()).await,
        401,
        "80200001",
        "Oauth authentication error",
    );

    hw.advance(3599).await;
    assert_success(&hw.send(&t, &work(&["d"])).await);
    hw.advance(2).await;
    assert_answer(
        &hw.send(&t, &work(&["d"])).await,
        401,
        "80200003",
        "Oauth token expired",
    );
    let fresh = hw.token().await;
    assert_success(&hw.send(&fresh, &work(&["d"])).await);

    let s = hw.stats().await;
    assert_eq!(s.refused.get("80200001"), Some(&3));
    assert_eq!(s.refused.get("80200003"), Some(&1));
    assert_eq!(s.http_errors.get("401"), Some(&4));
}

#[tokio::test]
async fn expire_tokens_fault_fires_once_and_expires_every_token() {
    let hw = Hw::start().await;
    let (a, b) = (hw.token().await, hw.token().await);
    let f = hw
        .post("/_mock/huawei/faults", &json!({ "expire_tokens": true }))
        .await;
    assert_eq!(f["expire_tokens"], true);
    assert_answer(
        &hw.send(&a, &work(&["d"])).await,
        401,
        "80200003",
        "expired",
    );
    assert_eq!(hw.get("/_mock/huawei/faults").await["expire_tokens"], false);
    assert_answer(
        &hw.send(&b, &work(&["d"])).await,
        401,
        "80200003",
        "expired",
    );
    let c = hw.token().await;
    assert_success(&hw.send(&c, &work(&["d"])).await);
}

#[tokio::test]
async fn message_size_excludes_the_token_list() {
    let hw = Hw::start().await;
    let t = hw.token().await;
    let names: Vec<String> = (0..1000).map(|i| format!("{i:0>64}")).collect();
    // `{"data":"…"}` is the data plus 11 bytes.
    let data = |n: usize, tokens: &[String]| json!({ "message": { "data": "x".repeat(n), "token": tokens } });
    assert_success(&hw.send(&t, &data(4096 - 11, &names)).await);
    assert_answer(
        &hw.send(&t, &data(4096 - 10, &names[..1])).await,
        400,
        "80100003",
        "message body size exceeds the default value",
    );
}

#[tokio::test]
async fn shape_errors_name_the_field() {
    let hw = &Hw::start().await;
    let t = &hw.token().await;
    let bad = |body: Value, field: &'static str| async move {
        let got = hw.send(t, &body).await;
        assert_answer(&got, 400, "80100001", field);
    };
    let tok = json!(["d"]);
    let notif = json!({ "title": "t", "body": "b" });
    let (status, v) = hw
        .send_raw(DEFAULT_HUAWEI_APP_ID, Some(t), "{nope".to_owned())
        .await;
    assert_answer(&(status, v), 400, "80100001", "not valid JSON");
    bad(json!({ "validate_only": false }), "message is required").await;
    bad(json!({ "message": [] }), "message must be an object").await;
    bad(
        json!({ "validate_only": "yes", "message": { "data": "x", "token": tok } }),
        "validate_only",
    )
    .await;
    bad(
        json!({ "message": { "data": "x" } }),
        "exactly one of message.token",
    )
    .await;
    bad(
        json!({ "message": { "data": "x", "token": tok, "topic": "news" } }),
        "exactly one of message.token",
    )
    .await;
    bad(
        json!({ "message": { "data": "x", "token": "d" } }),
        "message.token",
    )
    .await;
    bad(
        json!({ "message": { "data": "x", "token": ["d", 5] } }),
        "message.token[1]",
    )
    .await;
    bad(
        json!({ "message": { "data": "x", "topic": "" } }),
        "message.topic",
    )
    .await;
    bad(
        json!({ "message": { "token": tok } }),
        "message.notification",
    )
    .await;
    bad(
        json!({ "message": { "data": { "k": "v" }, "token": tok } }),
        "message.data",
    )
    .await;
    bad(
        json!({ "message": { "notification": { "title": "t" }, "token": tok } }),
        "message.notification.body",
    )
    .await;
    bad(
        json!({ "message": { "notification": { "title": "t", "body": "" }, "token": tok } }),
        "message.notification.body",
    )
    .await;
    bad(
        json!({ "message": { "notification": { "title": 1, "body": "b" }, "token": tok } }),
        "message.notification.title",
    )
    .await;
    bad(
        json!({ "message": { "android": { "notification": { "body": "b" } }, "token": tok } }),
        "message.android.notification.title",
    )
    .await;
    bad(
        json!({ "message": { "notification": notif, "android": { "category": "PROMO" }, "token": tok } }),
        "message.android.category",
    )
    .await;
    bad(
        json!({ "message": { "notification": notif, "android": "x", "token": tok } }),
        "message.android",
    )
    .await;
    let click = |ca: Value| {
        json!({ "message": { "android": { "notification": {
        "title": "t", "body": "b", "click_action": ca } }, "token": ["d"] } })
    };
    bad(
        click(json!({ "type": 9 })),
        "message.android.notification.click_action.type",
    )
    .await;
    bad(
        click(json!({})),
        "message.android.notification.click_action.type",
    )
    .await;
    bad(
        click(json!({ "type": 1 })),
        "message.android.notification.click_action.intent",
    )
    .await;
    bad(
        click(json!({ "type": 2 })),
        "message.android.notification.click_action.url",
    )
    .await;
    bad(
        click(json!("open")),
        "message.android.notification.click_action",
    )
    .await;

    // What passes: either notification place, data alone, each click type.
    for ok in [
        click(json!({ "type": 1, "action": "com.example.OPEN" })),
        click(json!({ "type": 1, "intent": "#Intent;end" })),
        click(json!({ "type": 2, "url": "https://example.com" })),
        click(json!({ "type": 3 })),
        json!({ "message": { "notification": { "title": "t" },
            "android": { "notification": { "body": "b" }, "category": "IM" }, "token": ["d"] } }),
        json!({ "message": { "data": "{\"k\":1}", "android": { "category": "VOIP" }, "token": ["d"] } }),
    ] {
        assert_success(&hw.send(t, &ok).await);
    }
    let s = hw.stats().await;
    assert_eq!(s.refused.get("80100001"), Some(&22));
}

#[tokio::test]
async fn marketing_quota_drops_silently_and_lifts_after_a_day() {
    let hw = Hw::start().await;
    let t = hw.token().await;
    for _ in 0..3 {
        assert_success(&hw.send(&t, &marketing("phone")).await);
    }
    let mut tagged = marketing("phone");
    tagged["message"]["android"] = json!({ "category": "MARKETING" });
    assert_success(&hw.send(&t, &tagged).await);
    assert_success(&hw.send(&t, &work(&["phone"])).await);
    // Another device has its own allowance.
    assert_success(&hw.send(&t, &marketing("tablet")).await);

    assert_eq!(hw.messages("?token=phone").await.len(), 3);
    let s = hw.stats().await;
    assert_eq!((s.delivered, s.dropped_marketing, s.dropped_cap), (4, 2, 0));
    assert_eq!(s.accepted_calls, 6);

    hw.advance(86_401).await;
    let t = hw.token().await;
    assert_success(&hw.send(&t, &marketing("phone")).await);
    assert_eq!(hw.messages("?token=phone").await.len(), 4);

    // The hard cap counts every class.
    let mut cfg = hw.get("/_mock/huawei/config").await;
    cfg["per_device_per_day"] = json!(2);
    hw.post("/_mock/huawei/config", &cfg).await;
    for _ in 0..3 {
        assert_success(&hw.send(&t, &work(&["watch"])).await);
    }
    let s = hw.stats().await;
    assert_eq!((s.delivered, s.dropped_marketing, s.dropped_cap), (7, 2, 1));
}

#[tokio::test]
async fn flow_control_and_injected_faults() {
    let hw = Hw::start().await;
    let t = hw.token().await;
    hw.post(
        "/_mock/huawei/faults",
        &json!({ "flow_control_next": 1, "internal_next": 1 }),
    )
    .await;
    assert_answer(
        &hw.send(&t, &work(&["d"])).await,
        503,
        "81000001",
        "flow control",
    );
    assert_answer(
        &hw.send(&t, &work(&["d"])).await,
        500,
        "81000001",
        "Internal error",
    );
    assert_success(&hw.send(&t, &work(&["d"])).await);
    let f = hw.get("/_mock/huawei/faults").await;
    assert_eq!(
        (f["flow_control_next"].as_u64(), f["internal_next"].as_u64()),
        (Some(0), Some(0))
    );

    let mut cfg = hw.get("/_mock/huawei/config").await;
    cfg["calls_per_second"] = json!(2);
    hw.post("/_mock/huawei/config", &cfg).await;
    // Nine calls within three seconds hold at most three seconds' worth
    // (six), so some are refused however the seconds fall.
    let mut refused = 0;
    for _ in 0..9 {
        let (status, v) = hw.send(&t, &work(&["d"])).await;
        if status == 503 {
            assert_eq!(v["code"], "81000001", "{v}");
            refused += 1;
        }
    }
    assert!(refused >= 3, "the third call in a second is refused");
    hw.advance(1).await;
    assert_success(&hw.send(&t, &work(&["d"])).await);

    let s = hw.stats().await;
    assert_eq!(s.http_errors.get("500"), Some(&1));
    assert_eq!(s.http_errors.get("503"), Some(&(1 + refused)));
    assert_eq!(s.refused.get("81000001"), Some(&(2 + refused)));
}

#[tokio::test]
async fn validate_only_checks_and_records_nothing() {
    let hw = Hw::start().await;
    let t = hw.token().await;
    let mut body = work(&["d", "invalid-x"]);
    body["validate_only"] = json!(true);
    assert_success(&hw.send(&t, &body).await);
    body["message"]["android"]["category"] = json!("NOPE");
    assert_answer(
        &hw.send(&t, &body).await,
        400,
        "80100001",
        "message.android.category",
    );
    assert!(hw.messages("").await.is_empty());
    let s = hw.stats().await;
    assert_eq!((s.validated, s.accepted_calls, s.delivered), (1, 0, 0));
    assert_eq!(s.invalid_tokens, 0);
}

#[tokio::test]
async fn topic_sends_are_recorded_once() {
    let hw = Hw::start().await;
    let t = hw.token().await;
    let body = json!({ "message": { "data": "hi", "topic": "news" } });
    assert_success(&hw.send(&t, &body).await);
    let got = hw.messages("").await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].token, None);
    assert_eq!(got[0].message["topic"], "news");
    assert_eq!(hw.stats().await.accepted_calls, 1);
}

#[tokio::test]
async fn reset_clears_records_and_windows_and_keeps_config_and_faults() {
    let hw = Hw::start().await;
    let t = hw.token().await;
    hw.post("/_mock/huawei/devices", &json!({ "invalid": ["gone"] }))
        .await;
    for _ in 0..3 {
        assert_success(&hw.send(&t, &marketing("phone")).await);
    }
    hw.post("/_mock/huawei/faults", &json!({ "latency_ms": 1 }))
        .await;
    assert_eq!(hw.stats().await.dropped_marketing, 1);

    hw.post("/_mock/reset", &json!({})).await;
    assert_eq!(hw.stats().await, HuaweiStats::default());
    assert!(hw.messages("").await.is_empty());
    assert_eq!(hw.get("/_mock/huawei/faults").await["latency_ms"], 1);
    assert_eq!(
        hw.get("/_mock/huawei/devices").await,
        json!({ "invalid": ["gone"] })
    );
    // Tokens stay valid and the device's window is empty again.
    assert_success(&hw.send(&t, &marketing("phone")).await);
    assert_success(&hw.send(&t, &marketing("phone")).await);
    let s = hw.stats().await;
    assert_eq!((s.delivered, s.dropped_marketing), (2, 0));
}

#[tokio::test]
async fn config_validates_and_moves_the_app() {
    let hw = Hw::start().await;
    let old = hw.token().await;
    let resp = hw
        .http
        .post(hw.url("/_mock/huawei/config"))
        .body(json!({ "app_id": "" }).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let resp = hw
        .http
        .post(hw.url("/_mock/huawei/config"))
        .body(json!({ "app_idd": "1" }).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400, "unknown fields are refused");

    let cfg = hw
        .post(
            "/_mock/huawei/config",
            &json!({ "app_id": "200", "client_secret": "s2" }),
        )
        .await;
    assert_eq!(cfg["marketing_per_device_per_day"], 2, "defaults fill in");
    // A token of the old app is unknown now.
    assert_answer(
        &hw.send_raw("200", Some(&old), work(&["d"]).to_string())
            .await,
        401,
        "80200001",
        "authentication",
    );
    let (status, v) = hw
        .token_form("grant_type=client_credentials&client_id=200&client_secret=s2")
        .await;
    assert_eq!(status, 200);
    let t = v["access_token"].as_str().unwrap();
    assert_success(&hw.send_raw("200", Some(t), work(&["d"]).to_string()).await);
}
