//! China's vendor push end to end: the real `herald serve` pushing through
//! `huawei_push` to `herald mock`'s Huawei Push Kit, which checks the OAuth
//! token, the app, the message, the device tokens and the quotas as Huawei
//! does. On SQLite and on PostgreSQL.

use crate::common;

use std::time::Duration;

use common::{Mock, Server, pg_database, wait_for};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);

fn config(mock: &str) -> String {
    format!(
        "[reminders.channels]\napp = \"hms\"\n\n\
         [[channels]]\nname = \"hms\"\nkind = \"huawei_push\"\n\
         app_id = \"100000001\"\napp_secret = \"mock-huawei-app-secret\"\n\
         category = \"SUBSCRIPTION\"\napi_base = \"{mock}\"\n\
         reminder_template = {{ notification = {{ title = \"{{subject}}\", body = \"opens at {{start_at}}\" }} }}\n\
         token_url = \"{mock}/oauth2/v3/token\"\n\
         backoff_base_ms = 200\nbackoff_max_ms = 1000\nmax_attempts = 5\n\n\
         [[channels]]\nname = \"hms-wrong-secret\"\nkind = \"huawei_push\"\n\
         app_id = \"100000002\"\napp_secret = \"not-the-secret\"\n\
         api_base = \"{mock}\"\ntoken_url = \"{mock}/oauth2/v3/token\"\n\
         backoff_base_ms = 200\nbackoff_max_ms = 1000\nmax_attempts = 2\n"
    )
}

async fn stats(m: &Mock) -> Value {
    m.get("/_mock/huawei/stats").await
}

fn push(title: &str) -> Value {
    json!({"notification": {"title": title, "body": "opens at 10:00"}, "data": {"coupon": "42"}})
}

async fn timer(s: &Server, body: Value) -> i64 {
    let (st, v) = s.post("/v1/timers", &body).await;
    assert_eq!(st, 201, "{v}");
    v["id"].as_i64().unwrap()
}

async fn settled(s: &Server, id: i64, state: &str) -> Value {
    s.settled(id, state, WAIT).await
}

/// Delivered device messages the mock recorded for `token`.
async fn delivered_to(m: &Mock, token: &str) -> Vec<Value> {
    m.get(&format!("/_mock/huawei/messages?token={token}&limit=100"))
        .await
        .as_array()
        .cloned()
        .unwrap_or_default()
}

async fn a_push_reaches_a_device_and_the_token_is_refreshed(s: &Server, m: &Mock) {
    let id = timer(
        s,
        json!({"delay_ms": 0, "channel": "hms", "recipient": "dev-1", "message": push("Coupon 42")}),
    )
    .await;
    settled(s, id, "done").await;
    let got = delivered_to(m, "dev-1").await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(
        got[0]["message"],
        json!({"data": "{\"coupon\":\"42\"}", "android": {"category": "SUBSCRIPTION",
               "notification": {"title": "Coupon 42", "body": "opens at 10:00",
                                "click_action": {"type": 3}}}})
    );
    let d = s.get(&format!("/v1/timers/{id}/deliveries")).await.1;
    assert!(d["deliveries"][0]["provider_msgid"].is_string(), "{d}");
    assert_eq!(stats(m).await["tokens_issued"], 1);

    // Huawei expires the token: refreshed once, sent once more.
    m.post("/_mock/huawei/faults", json!({"expire_tokens": true}))
        .await;
    let id = timer(
        s,
        json!({"delay_ms": 0, "channel": "hms", "recipient": "dev-2", "message": push("again")}),
    )
    .await;
    let t = settled(s, id, "done").await;
    assert_eq!(t["attempts"], 1, "a refused token costs no attempt: {t}");
    assert_eq!(stats(m).await["tokens_issued"], 2);
    assert_eq!(delivered_to(m, "dev-2").await.len(), 1);

    // Flow control is a throttle: the push waits and goes, no attempt used.
    m.post("/_mock/huawei/faults", json!({"flow_control_next": 1}))
        .await;
    let id = timer(
        s,
        json!({"delay_ms": 0, "channel": "hms", "recipient": "dev-3", "message": push("busy")}),
    )
    .await;
    let t = settled(s, id, "done").await;
    assert_eq!(t["attempts"], 1, "{t}");
    let d = s.get(&format!("/v1/timers/{id}/deliveries")).await.1;
    assert_eq!(d["deliveries"][0]["outcome"], "throttled", "{d}");

    // Final errors are final: an app whose secret is wrong never gets a
    // token and ends dead after its attempts (a channel of the same app id
    // would share the cluster's token); a message Huawei cannot show never
    // gets in.
    let id = timer(
        s,
        json!({"delay_ms": 0, "channel": "hms-wrong-secret", "recipient": "dev-1", "message": push("x")}),
    )
    .await;
    let t = settled(s, id, "dead").await;
    assert!(t["last_error"].as_str().unwrap().contains("token"), "{t}");
    let (st, v) = s
        .post(
            "/v1/timers",
            &json!({"delay_ms": 0, "channel": "hms", "recipient": "dev-1",
                    "message": {"notification": {"title": "no body"}}}),
        )
        .await;
    assert_eq!(st, 400, "{v}");
    assert!(v.to_string().contains("message.notification.body"), "{v}");
}

/// A subscriber's app reminder goes to each of their Huawei devices; a token
/// Huawei calls illegal is pruned from the subscriber.
async fn an_uninstalled_device_is_pruned(s: &Server, m: &Mock) {
    let (st, v) = s
        .put(
            "/v1/subscribers/li",
            &json!({"addresses": {"app": ["li-phone", "invalid-li-old-phone"]}}),
        )
        .await;
    assert!(st == 201 || st == 200, "{v}");
    let id = timer(
        s,
        json!({"delay_ms": 0, "channel": "hms", "to": {"user_id": "li"}, "message": push("For Li")}),
    )
    .await;
    settled(s, id, "done").await;
    assert_eq!(delivered_to(m, "li-phone").await.len(), 1);
    wait_for("the illegal token pruned", WAIT, || async {
        s.get("/v1/subscribers/li").await.1["addresses"]["app"] == json!(["li-phone"])
    })
    .await;
}

/// A campaign to 2,500 device tokens goes out in calls of up to 1,000; the
/// five tokens of uninstalled apps fail, the rest are delivered.
async fn a_campaign_goes_in_calls_of_a_thousand(s: &Server, m: &Mock) {
    common::push_campaign_of_2500(s, m, "hms", "huawei", "t-", push("Sale"), 3..=5).await;
}

async fn run(store: Option<&str>) {
    let m = Mock::start(&[]).await;
    let cfg = config(&m.url);
    let s = match store {
        None => Server::start(&cfg).await,
        Some(url) => Server::start_on(url, tempfile::tempdir().unwrap(), &cfg).await,
    };
    a_push_reaches_a_device_and_the_token_is_refreshed(&s, &m).await;
    an_uninstalled_device_is_pruned(&s, &m).await;
    a_campaign_goes_in_calls_of_a_thousand(&s, &m).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huawei_push_on_sqlite() {
    run(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huawei_push_on_postgres() {
    let Some((_db, url)) = pg_database("huawei") else {
        return;
    };
    run(Some(&url)).await;
}

// ---- Devices spread over several push services ----

/// FCM (`push`) and Huawei (`hms`) on one node; no Xiaomi channel.
fn mixed_config(mock: &str) -> String {
    let key = format!(
        "{}/../herald-mock/tests/fixtures/fcm-service-account.json",
        env!("CARGO_MANIFEST_DIR")
    );
    format!(
        "[[channels]]\nname = \"push\"\nkind = \"fcm\"\napi_base = \"{mock}\"\n\
         token_url = \"{mock}/token\"\nservice_account = \"{key}\"\nproject_id = \"herald-mock\"\n\
         backoff_base_ms = 200\nbackoff_max_ms = 1000\nmax_attempts = 3\n\n\
         [[channels]]\nname = \"hms\"\nkind = \"huawei_push\"\n\
         app_id = \"100000001\"\napp_secret = \"mock-huawei-app-secret\"\n\
         api_base = \"{mock}\"\ntoken_url = \"{mock}/oauth2/v3/token\"\n\
         backoff_base_ms = 200\nbackoff_max_ms = 1000\nmax_attempts = 3\n"
    )
}

/// The device tokens of the messages a mock's `messages` route lists.
async fn tokens(m: &Mock, path: &str) -> Vec<String> {
    let mut t: Vec<String> = m
        .get(path)
        .await
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|x| x["token"].as_str().map(str::to_string))
        .collect();
    t.sort();
    t
}

/// The FCM mock's accepted messages, by device token.
async fn fcm_tokens(m: &Mock) -> Vec<String> {
    tokens(m, "/_mock/fcm/messages").await
}

/// The Huawei mock's delivered device messages, by device token.
async fn huawei_tokens(m: &Mock) -> Vec<String> {
    tokens(m, "/_mock/huawei/messages?limit=1000").await
}

async fn put(s: &Server, user: &str, app: Value) {
    let (st, v) = s
        .put(
            &format!("/v1/subscribers/{user}"),
            &json!({"addresses": {"app": app}}),
        )
        .await;
    assert!(st == 200 || st == 201, "{user}: {v}");
}

async fn devices_go_through_their_own_service(s: &Server, m: &Mock) {
    m.post(
        "/_mock/fcm/faults",
        json!({"unregistered": ["sun-old-fcm"]}),
    )
    .await;
    put(
        s,
        "wang",
        json!([{"service": "fcm", "token": "wang-pixel"}, {"service": "huawei", "token": "wang-mate"}]),
    )
    .await;
    // A bare token is the send's own channel's.
    put(
        s,
        "zhao",
        json!(["zhao-bare", {"service": "huawei", "token": "invalid-zhao-old"}]),
    )
    .await;
    put(
        s,
        "sun",
        json!([{"service": "fcm", "token": "sun-old-fcm"}, {"service": "huawei", "token": "sun-honor"}]),
    )
    .await;
    put(
        s,
        "qian",
        json!([{"service": "xiaomi", "token": "qian-mi"}]),
    )
    .await;

    // A bad entry names its field and changes nothing.
    let (st, v) = s
        .put(
            "/v1/subscribers/wang",
            &json!({"addresses": {"app": [{"service": "nokia", "token": "x"}]}}),
        )
        .await;
    assert_eq!(st, 400, "{v}");
    assert!(v.to_string().contains("addresses.app"), "{v}");
    assert!(
        v.to_string().contains("xiaomi"),
        "names the known services: {v}"
    );
    let (_, w) = s.get("/v1/subscribers/wang").await;
    assert_eq!(w["addresses"]["app"][1]["token"], "wang-mate", "{w}");

    let mut ids = Vec::new();
    for user in ["wang", "zhao", "sun", "qian"] {
        ids.push(
            timer(
                s,
                json!({"delay_ms": 0, "channel": "push", "to": {"user_id": user},
                       "message": push(&format!("For {user}"))}),
            )
            .await,
        );
    }
    for id in &ids[..3] {
        settled(s, *id, "done").await;
    }
    // No Xiaomi channel on this node: final, and it says so.
    let t = s.settled(ids[3], "failed", WAIT).await;
    assert!(
        t["last_error"]
            .as_str()
            .unwrap_or_default()
            .contains("xiaomi"),
        "{t}"
    );
    assert_eq!(fcm_tokens(m).await, ["wang-pixel", "zhao-bare"]);
    assert_eq!(huawei_tokens(m).await, ["sun-honor", "wang-mate"]);
    // Each service's gone token is pruned from its subscriber.
    wait_for("the gone tokens pruned", WAIT, || async {
        s.get("/v1/subscribers/zhao").await.1["addresses"]["app"] == json!(["zhao-bare"])
            && s.get("/v1/subscribers/sun").await.1["addresses"]["app"]
                == json!([{"service": "huawei", "token": "sun-honor"}])
    })
    .await;

    // The same through a campaign on the Huawei channel: Wang's FCM device
    // goes through `push`, his Huawei one through `hms`, once each.
    m.post("/_mock/reset", json!({})).await;
    let (st, job) = s
        .post(
            "/v1/jobs",
            &json!({"channel": "hms", "users": ["wang", "zhao"], "to": {"channel_type": "app"},
                    "message": push("Sale")}),
        )
        .await;
    assert_eq!(st, 201, "{job}");
    let id = job["id"].as_i64().unwrap();
    wait_for("the campaign done", WAIT, || async {
        s.get(&format!("/v1/jobs/{id}")).await.1["state"] == "done"
    })
    .await;
    assert_eq!(fcm_tokens(m).await, ["wang-pixel"]);
    // Zhao's bare token is the Huawei channel's in this send.
    assert_eq!(huawei_tokens(m).await, ["wang-mate", "zhao-bare"]);

    // One `app` template part renders for every device, whichever service
    // carries it: title, body and the action a tap starts.
    m.post("/_mock/reset", json!({})).await;
    let (st, v) = s
        .post(
            "/v1/templates",
            &json!({"name": "coupon", "locales": {"default": {"app": {
                "notification": {"title": "{{ title }}", "body": "opens at {{ at }}"},
                "android": {"notification": {"click_action": "com.shop.OPEN_COUPON"}}}}}}),
        )
        .await;
    assert_eq!(st, 201, "{v}");
    let id = timer(
        s,
        json!({"delay_ms": 0, "channel": "push", "to": {"user_id": "wang"},
               "template": {"name": "coupon", "data": {"title": "Coupon 42", "at": "10:00"}}}),
    )
    .await;
    settled(s, id, "done").await;
    let fcm = m.get("/_mock/fcm/messages").await;
    assert_eq!(
        fcm[0]["notification"],
        json!({"title": "Coupon 42", "body": "opens at 10:00"}),
        "{fcm}"
    );
    let hw = delivered_to(m, "wang-mate").await;
    let n = &hw[0]["message"]["android"]["notification"];
    assert_eq!(
        (&n["title"], &n["body"], &n["click_action"]["action"]),
        (
            &json!("Coupon 42"),
            &json!("opens at 10:00"),
            &json!("com.shop.OPEN_COUPON")
        ),
        "{hw:?}"
    );
}

async fn run_mixed(store: Option<&str>) {
    let key = format!(
        "{}/../herald-mock/tests/fixtures/fcm-service-account.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let m = Mock::start(&["--fcm-service-account", &key]).await;
    let cfg = mixed_config(&m.url);
    let s = match store {
        None => Server::start(&cfg).await,
        Some(url) => Server::start_on(url, tempfile::tempdir().unwrap(), &cfg).await,
    };
    devices_go_through_their_own_service(&s, &m).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn devices_over_several_services_on_sqlite() {
    run_mixed(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn devices_over_several_services_on_postgres() {
    let Some((_db, url)) = pg_database("mixed_push") else {
        return;
    };
    run_mixed(Some(&url)).await;
}

/// `herald config check` checks the China vendor push kinds as building
/// them would, naming the channel and the field at fault.
#[tokio::test]
async fn config_check_names_the_vendor_push_field_at_fault() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("herald.toml");
    std::fs::write(
        &cfg,
        "listen = \"127.0.0.1:8780\"\n\
         [[channels]]\nname = \"mi\"\nkind = \"xiaomi_push\"\napp_secret = \"s\"\n\
         package_name = \"com.shop\"\nmax_batch = 5000\n\
         [[channels]]\nname = \"hn\"\nkind = \"honor_push\"\napp_id = \"1\"\nclient_id = \"c\"\n\
         client_secret = \"s\"\nimportance = \"HIGH\"\n\
         [[channels]]\nname = \"op\"\nkind = \"oppo_push\"\napp_key = \"k\"\n\
         master_secret = \"s\"\ncategory = \"PROMO\"\n\
         [[channels]]\nname = \"vv\"\nkind = \"vivo_push\"\napp_id = \"10004\"\napp_key = \"k\"\n\
         app_secret_env = \"HERALD_TEST_SURELY_UNSET_VIVO\"\n",
    )
    .unwrap();
    let out = tokio::process::Command::new(common::BIN)
        .args(["config", "check", "--config"])
        .arg(&cfg)
        .env_remove("HERALD_CONFIG")
        .env_remove("HERALD_ADMIN_KEY")
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    for says in [
        "channel \"mi\": max_batch must be within 1..=1000",
        "channel \"hn\": importance must be NORMAL or LOW",
        "channel \"op\": category must be one of",
        "channel \"vv\": app_secret_env: environment variable HERALD_TEST_SURELY_UNSET_VIVO is not set",
        "4 problems",
    ] {
        assert!(stderr.contains(says), "{says}: {stderr}");
    }
}

/// Every push kind on one node: FCM (`push`), Huawei (`hms`), Xiaomi (`mi`),
/// Honor (`hn`), OPPO (`op`) and vivo (`vv`).
fn every_push_kind(mock: &str) -> String {
    format!(
        "{}\n\
         [[channels]]\nname = \"mi\"\nkind = \"xiaomi_push\"\napp_secret = \"mock-xiaomi-app-secret\"\n\
         package_name = \"com.herald.mock\"\nchannel_id = \"herald_private\"\napi_base = \"{mock}\"\n\n\
         [[channels]]\nname = \"hn\"\nkind = \"honor_push\"\napp_id = \"104400001\"\n\
         client_id = \"mock-honor-client\"\nclient_secret = \"mock-honor-client-secret\"\n\
         importance = \"NORMAL\"\napi_base = \"{mock}\"\ntoken_url = \"{mock}/auth/token\"\n\n\
         [[channels]]\nname = \"op\"\nkind = \"oppo_push\"\napp_key = \"mock-oppo-app-key\"\n\
         master_secret = \"mock-oppo-master-secret\"\ncategory = \"ORDER\"\nchannel_id = \"orders\"\n\
         api_base = \"{mock}\"\n\n\
         [[channels]]\nname = \"vv\"\nkind = \"vivo_push\"\napp_id = \"10004\"\n\
         app_key = \"mock-vivo-app-key\"\napp_secret = \"mock-vivo-app-secret\"\nclassification = 1\n\
         api_base = \"{mock}\"\n",
        mixed_config(mock)
    )
}

/// One `app` template part renders for a device on each push service:
/// title, body and the action a tap starts reach every vendor's mock in
/// that vendor's own fields.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_app_template_renders_for_every_push_kind() {
    let key = format!(
        "{}/../herald-mock/tests/fixtures/fcm-service-account.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let m = Mock::start(&["--fcm-service-account", &key]).await;
    let s = Server::start(&every_push_kind(&m.url)).await;
    let services = ["fcm", "huawei", "xiaomi", "honor", "oppo", "vivo"];
    let devices: Vec<Value> = services
        .iter()
        .map(|svc| json!({"service": svc, "token": format!("li-{svc}-phone")}))
        .collect();
    put(&s, "li", json!(devices)).await;
    let (st, v) = s
        .post(
            "/v1/templates",
            &json!({"name": "coupon", "locales": {"default": {"app": {
                "notification": {"title": "{{ title }}", "body": "opens {{ at }}"},
                "android": {"notification": {"click_action": "com.shop.OPEN_COUPON"}}}}}}),
        )
        .await;
    assert_eq!(st, 201, "{v}");
    let id = timer(
        &s,
        json!({"delay_ms": 0, "channel": "push", "to": {"user_id": "li"},
               "template": {"name": "coupon", "data": {"title": "Coupon 42", "at": "10:00"}}}),
    )
    .await;
    let t = settled(&s, id, "done").await;
    let d = s.get(&format!("/v1/timers/{id}/deliveries")).await.1;
    assert!(
        d.to_string().contains("6 of 6 devices delivered"),
        "{t} {d}"
    );
    for svc in services {
        let got = m.get(&format!("/_mock/{svc}/messages")).await;
        let body = got.to_string();
        assert!(
            body.contains(&format!("li-{svc}-phone")),
            "{svc}: the device: {body}"
        );
        for part in ["Coupon 42", "opens 10:00"] {
            assert!(body.contains(part), "{svc}: {part}: {body}");
        }
        // FCM's own message has no tap action of this form.
        if svc != "fcm" {
            assert!(
                body.contains("com.shop.OPEN_COUPON"),
                "{svc}: the tap action: {body}"
            );
        }
    }
}
