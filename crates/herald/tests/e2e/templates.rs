//! Templates through the real binary and the provider mocks: the coupon
//! centre's walk (a flash-sale subject with templated reminders over app,
//! WeChat and WeCom, each in the subscriber's language and local time), a
//! route that cannot work refused before anything fires, plain messages
//! checked against their provider at create, timers rendered from a template
//! fixed after they were scheduled, and a render error as a final outcome.

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{self, Mock, Server, get_json, now_ms, pg_database, wait_for};

const WAIT: Duration = Duration::from_secs(30);

fn fcm_key() -> String {
    format!(
        "{}/../herald-mock/tests/fixtures/fcm-service-account.json",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// WeChat, WeCom and FCM channels on the mock, each reminder type routed to
/// its channel and rendered with the `coupon` template.
fn config(m: &str) -> String {
    format!(
        "[reminders]\ntimezone = \"Asia/Shanghai\"\n\
         [reminders.channels]\nwechat = \"wx\"\nwecom = \"wc\"\napp = \"push\"\n\
         [reminders.templates]\nwechat = \"coupon\"\nwecom = \"coupon\"\napp = \"coupon\"\n\
         [[channels]]\nname = \"wx\"\nkind = \"wechat\"\napi_base = \"{m}\"\n\
         appid = \"wxmockappid\"\nsecret = \"mock-wechat-secret\"\n\
         [[channels]]\nname = \"wc\"\nkind = \"wecom\"\napi_base = \"{m}\"\n\
         corpid = \"wwmockcorp\"\ncorpsecret = \"mock-wecom-secret\"\nagentid = 1000002\n\
         [[channels]]\nname = \"push\"\nkind = \"fcm\"\napi_base = \"{m}\"\n\
         token_url = \"{m}/token\"\nservice_account = \"{key}\"\nproject_id = \"herald-mock\"\n",
        key = fcm_key()
    )
}

/// The flash-sale reminder template: a default (English) variant with every
/// part and a Chinese one with the WeChat and WeCom parts.
fn coupon_template() -> Value {
    json!({
        "name": "coupon",
        "description": "the coupon opens",
        "locales": {
            "default": {
                "wechat": {"template_id": "TPL_COUPON",
                           "data": {"first": {"value": "{{ subject.title }} opens at {{ subject.start_at | time }}"},
                                    "keyword1": {"value": "{{ subject.data.code }}"}}},
                "wecom": {"msgtype": "text",
                          "text": {"content": "{{ subject.title }} opens at {{ subject.start_at | time }} ({{ subject.data.shop }})"}},
                "app": {"notification": {"title": "{{ subject.title }}",
                                         "body": "Opens at {{ subject.start_at | time }}, code {{ subject.data.code }}"}}
            },
            "zh": {
                "wechat": {"template_id": "TPL_COUPON",
                           "data": {"first": {"value": "{{ subject.title }} 将于 {{ subject.start_at | datetime('%m月%d日 %H:%M') }} 开抢"},
                                    "keyword1": {"value": "{{ subject.data.code }}"}}},
                "wecom": {"msgtype": "text",
                          "text": {"content": "{{ subject.title }} {{ subject.start_at | time }} 开抢（{{ subject.data.shop }}）"}}
            }
        }
    })
}

/// `ms` as local `fmt` in `tz`, the way the template filters print it.
fn local(ms: i64, tz: &str, fmt: &str) -> String {
    let z = jiff::Timestamp::from_millisecond(ms)
        .unwrap()
        .to_zoned(jiff::tz::TimeZone::get(tz).unwrap());
    jiff::fmt::strtime::format(fmt, &z).unwrap()
}

async fn mock_json(m: &Mock, path: &str) -> Value {
    get_json(&format!("{}{path}", m.url)).await.1
}

async fn settled(s: &Server, id: i64, state: &str) -> Value {
    let mut last = Value::Null;
    let deadline = std::time::Instant::now() + WAIT;
    while std::time::Instant::now() < deadline {
        last = s.timer(id).await;
        if last["state"] == state {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timer {id} never became {state}: {last}");
}

async fn field_error(s: &Server, path: &str, body: &Value, status: u16, field: &str) -> Value {
    let (code, v) = s.post(path, body).await;
    assert_eq!(code, status, "{path} {body}: {v}");
    assert_eq!(v["error"]["field"], field, "{path} {body}: {v}");
    v
}

async fn coupon_walk(s: &Server, mock: &Mock) {
    // Before the template exists: the node warns, and a subscription to a
    // route that cannot work is refused instead of failing when it fires.
    let (code, ready) = s.get("/readyz").await;
    assert_eq!(code, 200, "{ready}");
    let warnings: Vec<&str> = ready["warnings"]
        .as_array()
        .map(|w| w.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert_eq!(warnings.len(), 3, "{ready}");
    assert!(
        warnings
            .iter()
            .all(|w| w.contains("no template named \"coupon\" is stored")),
        "{ready}"
    );
    let start_ms = (now_ms() / 1000 + 5 * 60 + 3) * 1000;
    let start = common::rfc3339(start_ms);
    let (code, v) = s
        .put(
            "/v1/subjects/flash-1",
            &json!({"start_at": start, "title": "满100减20",
                    "data": {"code": "C42", "shop": "Jing'an"}}),
        )
        .await;
    assert_eq!(code, 201, "{v}");
    let v = field_error(
        s,
        "/v1/reminders",
        &json!({"user_id": "u-zh", "subject_id": "flash-1", "channel_type": "wechat", "lead_minutes": 5}),
        400,
        "channel_type",
    )
    .await;
    assert_eq!(v["error"]["code"], "unsendable_route", "{v}");

    // Templates are checked as they are written.
    let mut bad = coupon_template();
    bad["locales"]["default"]["wechat"]["data"]["first"]["value"] = json!("{{ subject.title");
    field_error(
        s,
        "/v1/templates",
        &bad,
        400,
        "locales.default.wechat.data.first.value",
    )
    .await;
    let mut bad = coupon_template();
    bad["locales"]["zh"]["wechat"]
        .as_object_mut()
        .unwrap()
        .remove("template_id");
    field_error(
        s,
        "/v1/templates",
        &bad,
        400,
        "locales.zh.wechat.template_id",
    )
    .await;
    let mut bad = coupon_template();
    bad["locales"]["default"]["wecom"]["msgtype"] = json!("fax");
    field_error(
        s,
        "/v1/templates",
        &bad,
        400,
        "locales.default.wecom.msgtype",
    )
    .await;
    let (code, t) = s.post("/v1/templates", &coupon_template()).await;
    assert_eq!(code, 201, "{t}");
    assert_eq!(
        (t["version"].clone(), t["variables"].clone()),
        (json!(1), json!(["subject"])),
        "{t}"
    );
    field_error(s, "/v1/templates", &coupon_template(), 409, "name").await;
    let (code, ready) = s.get("/readyz").await;
    assert_eq!(code, 200, "{ready}");
    assert!(ready.get("warnings").is_none(), "{ready}");

    // Two subscribers: one reads Chinese in Shanghai, one English in New York.
    let (code, v) = s
        .put(
            "/v1/subscribers/u-zh",
            &json!({"locale": "zh-Hans-CN", "timezone": "Asia/Shanghai",
                    "addresses": {"wechat": {"wx": "oZh"}, "wecom": "zhang"}}),
        )
        .await;
    assert!(code == 201 || code == 200, "{v}");
    let (code, v) = s
        .put(
            "/v1/subscribers/u-en",
            &json!({"locale": "en-US", "timezone": "America/New_York",
                    "addresses": {"app": ["tok-en"], "wechat": {"wx": "oEn"}}}),
        )
        .await;
    assert!(code == 201 || code == 200, "{v}");

    // The preview renders what a send would.
    let (code, p) = s
        .post(
            "/v1/templates/coupon:preview",
            &json!({"user_id": "u-zh",
                    "data": {"subject": {"title": "满100减20", "start_at": start,
                                         "data": {"code": "C42", "shop": "Jing'an"}}}}),
        )
        .await;
    assert_eq!(code, 200, "{p}");
    let zh_when = local(start_ms, "Asia/Shanghai", "%m月%d日 %H:%M");
    assert_eq!(
        p["parts"]["wechat"]["message"]["data"]["first"]["value"],
        format!("满100减20 将于 {zh_when} 开抢"),
        "{p}"
    );
    assert_eq!(p["parts"]["wechat"]["locale"], "zh", "{p}");
    assert_eq!(p["parts"]["app"]["locale"], "default", "{p}");

    for (user, ty) in [
        ("u-zh", "wechat"),
        ("u-zh", "wecom"),
        ("u-en", "app"),
        ("u-en", "wechat"),
    ] {
        let (code, v) = s
            .post(
                "/v1/reminders",
                &json!({"user_id": user, "subject_id": "flash-1", "channel_type": ty, "lead_minutes": 5}),
            )
            .await;
        assert_eq!(code, 201, "{user} {ty}: {v}");
    }

    wait_for("the four reminders", WAIT, || async {
        let wx = mock_json(mock, "/_mock/wechat/messages").await;
        let wc = mock_json(mock, "/_mock/wecom/messages").await;
        let fcm = mock_json(mock, "/_mock/fcm/messages").await;
        let n = |v: &Value| v.as_array().map_or(0, Vec::len);
        n(&wx) >= 2 && n(&wc) >= 1 && n(&fcm) >= 1
    })
    .await;
    let zh = mock_json(mock, "/_mock/wechat/messages?touser=oZh").await;
    assert_eq!(zh[0]["template_id"], "TPL_COUPON", "{zh}");
    assert_eq!(
        zh[0]["data"]["first"]["value"],
        format!("满100减20 将于 {zh_when} 开抢"),
        "{zh}"
    );
    assert_eq!(zh[0]["data"]["keyword1"]["value"], "C42", "{zh}");
    let ny = local(start_ms, "America/New_York", "%H:%M");
    let en = mock_json(mock, "/_mock/wechat/messages?touser=oEn").await;
    assert_eq!(
        en[0]["data"]["first"]["value"],
        format!("满100减20 opens at {ny}"),
        "{en}"
    );
    let wc = mock_json(mock, "/_mock/wecom/messages").await;
    let sh = local(start_ms, "Asia/Shanghai", "%H:%M");
    assert_eq!(
        wc[0]["body"]["text"]["content"],
        format!("满100减20 {sh} 开抢（Jing'an）"),
        "{wc}"
    );
    let fcm = mock_json(mock, "/_mock/fcm/messages").await;
    assert_eq!(fcm[0]["token"], "tok-en", "{fcm}");
    assert_eq!(fcm[0]["notification"]["title"], "满100减20", "{fcm}");
    assert_eq!(
        fcm[0]["notification"]["body"],
        format!("Opens at {ny}, code C42"),
        "{fcm}"
    );
}

async fn timers_walk(s: &Server, mock: &Mock) {
    // A plain message its provider cannot send is refused at create.
    field_error(
        s,
        "/v1/timers",
        &json!({"channel": "wx", "recipient": "oA", "delay_ms": 0, "message": {"text": "hi"}}),
        400,
        "message.template_id",
    )
    .await;
    field_error(
        s,
        "/v1/timers",
        &json!({"channel": "wc", "recipient": "zhang", "delay_ms": 0, "message": {"text": "hi"}}),
        400,
        "message.msgtype",
    )
    .await;
    // A template use names what is wrong with it.
    let shipped = json!({"name": "shipped", "locales": {"default": {
        "wechat": {"template_id": "TPL_SHIP", "data": {"first": {"value": "Order {{ order.id }} shipped"}}}}}});
    let (code, v) = s.post("/v1/templates", &shipped).await;
    assert_eq!(code, 201, "{v}");
    field_error(
        s,
        "/v1/timers",
        &json!({"channel": "wx", "recipient": "oA", "delay_ms": 0, "template": {"name": "nope"}}),
        422,
        "template.name",
    )
    .await;
    field_error(
        s,
        "/v1/timers",
        &json!({"channel": "wx", "recipient": "oA", "delay_ms": 0, "template": {"name": "shipped"}}),
        422,
        "template.data.order",
    )
    .await;
    field_error(
        s,
        "/v1/timers",
        &json!({"channel": "wc", "recipient": "zhang", "delay_ms": 0,
                "template": {"name": "shipped", "data": {"order": {"id": 1}}}}),
        422,
        "template.name",
    )
    .await;
    field_error(
        s,
        "/v1/timers",
        &json!({"channel": "wx", "recipient": "oA", "delay_ms": 0,
                "template": {"name": "shipped", "version": 9, "data": {"order": {"id": 1}}}}),
        422,
        "template.version",
    )
    .await;

    // Scheduled against version 1, fixed to version 2 before it fires: the
    // timer sends version 2; one pinned to version 1 keeps it.
    let body = |version: Option<u32>| {
        let mut t = json!({"name": "shipped", "data": {"order": {"id": "A-7"}}});
        if let Some(v) = version {
            t["version"] = json!(v);
        }
        json!({"channel": "wx", "recipient": "oShip", "delay_ms": 1500, "template": t})
    };
    let (code, latest) = s.post("/v1/timers", &body(None)).await;
    assert_eq!(code, 201, "{latest}");
    let (code, pinned) = s.post("/v1/timers", &body(Some(1))).await;
    assert_eq!(code, 201, "{pinned}");
    let fixed = json!({"locales": {"default": {
        "wechat": {"template_id": "TPL_SHIP", "data": {"first": {"value": "Your order {{ order.id }} is on its way"}}}}}});
    let (code, v) = s.put("/v1/templates/shipped", &fixed).await;
    assert_eq!(code, 200, "{v}");
    assert_eq!(
        (v["version"].clone(), v["versions"].clone()),
        (json!(2), json!([1, 2])),
        "{v}"
    );
    for id in [
        latest["id"].as_i64().unwrap(),
        pinned["id"].as_i64().unwrap(),
    ] {
        settled(s, id, "done").await;
    }
    let got = mock_json(mock, "/_mock/wechat/messages?touser=oShip").await;
    let mut texts: Vec<String> = got
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["data"]["first"]["value"].as_str().unwrap().to_string())
        .collect();
    texts.sort();
    assert_eq!(
        texts,
        ["Order A-7 shipped", "Your order A-7 is on its way"],
        "{got}"
    );

    // A value the template cannot render ends the send with template_error:
    // final, the error recorded, nothing sent.
    let (code, t) = s
        .post(
            "/v1/timers",
            &json!({"channel": "wx", "recipient": "oBroken", "delay_ms": 0,
                    "template": {"name": "shipped", "data": {"order": "no id here"}}}),
        )
        .await;
    assert_eq!(code, 201, "{t}");
    let id = t["id"].as_i64().unwrap();
    let done = settled(s, id, "failed").await;
    assert!(
        done["last_error"].as_str().unwrap().contains("shipped"),
        "{done}"
    );
    let d = s.get(&format!("/v1/timers/{id}/deliveries")).await.1;
    assert_eq!(d["deliveries"][0]["outcome"], "template_error", "{d}");
    assert_eq!(
        mock_json(mock, "/_mock/wechat/messages?touser=oBroken").await,
        json!([])
    );
    // The template is listed with its versions.
    let (code, list) = s.get("/v1/templates").await;
    assert_eq!(code, 200, "{list}");
    let names: Vec<&str> = list["templates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["coupon", "shipped"], "{list}");
    let (code, v1) = s.get("/v1/templates/shipped?version=1").await;
    assert_eq!((code, v1["version"].clone()), (200, json!(1)), "{v1}");
}

/// A job given a template renders each recipient's message in their
/// locale and time zone; what it reads must be given, and a plain message
/// its provider cannot send is refused.
async fn campaign_walk(s: &Server, mock: &Mock) {
    let promo = json!({"name": "promo", "locales": {
        "default": {"wechat": {"template_id": "TPL_PROMO",
                               "data": {"first": {"value": "{{ pct }}% off until {{ until | time }}"}}}},
        "zh": {"wechat": {"template_id": "TPL_PROMO",
                          "data": {"first": {"value": "{{ until | time }} 前 {{ pct }}% 折扣"}}}}}});
    let (code, v) = s.post("/v1/templates", &promo).await;
    assert_eq!(code, 201, "{v}");
    field_error(
        s,
        "/v1/jobs",
        &json!({"users": ["u-zh"], "channel": "wx", "to": {"channel_type": "wechat"},
                "template": {"name": "promo", "data": {"pct": 20}}}),
        422,
        "template.data.until",
    )
    .await;
    field_error(
        s,
        "/v1/jobs",
        &json!({"users": ["u-zh"], "channel": "wx", "message": {"text": "hi"}}),
        400,
        "message.template_id",
    )
    .await;
    let until = "2026-12-01T12:00:00Z";
    let (code, job) = s
        .post(
            "/v1/jobs",
            &json!({"users": ["u-zh", "u-en"], "channel": "wx", "to": {"channel_type": "wechat"},
                    "template": {"name": "promo", "data": {"pct": 20, "until": until}}}),
        )
        .await;
    assert_eq!(code, 201, "{job}");
    assert_eq!(job["template"]["name"], "promo", "{job}");
    let id = job["id"].as_i64().unwrap();
    wait_for("the templated job", WAIT, || async {
        s.get(&format!("/v1/jobs/{id}")).await.1["state"] == "done"
    })
    .await;
    let sent = mock_json(mock, "/_mock/wechat/messages").await;
    let promo_to = |openid: &str| {
        sent.as_array()
            .unwrap()
            .iter()
            .find(|m| m["touser"] == openid && m["template_id"] == "TPL_PROMO")
            .map(|m| m["data"]["first"]["value"].clone())
    };
    assert_eq!(promo_to("oZh"), Some(json!("20:00 前 20% 折扣")), "{sent}");
    assert_eq!(
        promo_to("oEn"),
        Some(json!("20% off until 07:00")),
        "{sent}"
    );
}

async fn walk(store: Option<String>) {
    let mock = Mock::start(&["--fcm-service-account", &fcm_key()]).await;
    let cfg = config(&mock.url);
    let s = match store {
        Some(url) => Server::start_on(&url, tempfile::tempdir().unwrap(), &cfg).await,
        None => Server::start(&cfg).await,
    };
    coupon_walk(&s, &mock).await;
    timers_walk(&s, &mock).await;
    campaign_walk(&s, &mock).await;
}

#[tokio::test]
async fn the_coupon_centre_walk_on_sqlite() {
    walk(None).await;
}

#[tokio::test]
async fn the_coupon_centre_walk_on_postgres() {
    let Some((_db, url)) = pg_database("templates") else {
        eprintln!("PostgreSQL not installed: template walk on PostgreSQL skipped");
        return;
    };
    walk(Some(url)).await;
}

/// A reminder route whose channel cannot send Herald's reminder shape, with
/// neither a template nor a `reminder_template`, stops the node at start.
#[tokio::test]
async fn a_reminder_route_that_cannot_work_stops_the_node() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("herald.toml");
    let db = dir.path().join("herald.db");
    std::fs::write(
        &path,
        format!(
            "store = \"sqlite://{}\"\nlisten = \"127.0.0.1:0\"\n\
             [reminders.channels]\nwecom = \"wc\"\n\
             [[channels]]\nname = \"wc\"\nkind = \"wecom\"\napi_base = \"http://127.0.0.1:9\"\n\
             corpid = \"c\"\ncorpsecret = \"s\"\nagentid = 1\n",
            db.display()
        ),
    )
    .unwrap();
    let out = tokio::process::Command::new(common::BIN)
        .args(["serve", "--config", path.to_str().unwrap()])
        .env_remove("HERALD_ADMIN_KEY")
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(60), out)
        .await
        .expect("herald serve should exit at once")
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("reminders of channel_type wecom go to channel \"wc\"")
            && stderr.contains("[reminders.templates]"),
        "{stderr}"
    );
}

/// Templates are per tenant, so `/readyz` checks the reminder routes of
/// every tenant: with the template stored for the default tenant only, the
/// other tenant's routes are still flagged, by name.
#[tokio::test]
async fn readyz_flags_a_tenant_without_the_reminder_template() {
    let mock = Mock::start(&["--fcm-service-account", &fcm_key()]).await;
    let cfg = format!("[tenants.mall]\nweight = 1\n{}", config(&mock.url));
    let s = Server::start(&cfg).await;
    let (code, t) = s.post("/v1/templates", &coupon_template()).await;
    assert_eq!(code, 201, "{t}");
    let (code, ready) = s.get("/readyz").await;
    assert_eq!(code, 200, "{ready}");
    let warnings: Vec<&str> = ready["warnings"]
        .as_array()
        .map(|w| w.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert_eq!(warnings.len(), 3, "{ready}");
    assert!(
        warnings.iter().all(|w| w.starts_with("tenant \"mall\": ")
            && w.contains("no template named \"coupon\" is stored")),
        "{ready}"
    );
}
