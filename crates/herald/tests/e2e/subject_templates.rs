//! A subject's own reminder templates (issue 39 §1) through the real binary
//! and the WeChat mock: a subject naming a WeChat template has its reminders
//! rendered from it, a subject naming none takes `[reminders.templates]`, a
//! merged delivery of both takes the type's; refs that cannot work are
//! refused at the PUT, naming `templates.TYPE`.

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{self, Mock, Server, get_json, now_ms, pg_database, wait_for};

const WAIT: Duration = Duration::from_secs(30);

/// WeChat reminders go to `wx` on the mock, rendered with `coupon` unless
/// their subject says otherwise.
fn config(m: &str) -> String {
    format!(
        "[reminders]\ntimezone = \"Asia/Shanghai\"\nmerge_window_ms = 60000\n\
         [reminders.channels]\nwechat = \"wx\"\n\
         [reminders.templates]\nwechat = \"coupon\"\n\
         [[channels]]\nname = \"wx\"\nkind = \"wechat\"\napi_base = \"{m}\"\n\
         appid = \"wxmockappid\"\nsecret = \"mock-wechat-secret\"\n"
    )
}

fn wechat_template(name: &str, template_id: &str, first: &str) -> Value {
    json!({
        "name": name,
        "locales": {"default": {"wechat": {
            "template_id": template_id,
            "data": {"first": {"value": first},
                     "keyword1": {"value": "{{ subject.id }} x{{ count }}"}}}}}
    })
}

async fn mock_json(m: &Mock, path: &str) -> Value {
    get_json(&format!("{}{path}", m.url)).await.1
}

async fn refused(s: &Server, templates: Value, status: u16, code: &str, field: &str) {
    let start = common::rfc3339(now_ms() + 3_600_000);
    let body = json!({"start_at": start, "templates": templates});
    let (got, v) = s.put("/v1/subjects/bad", &body).await;
    assert_eq!(got, status, "{body}: {v}");
    assert_eq!(v["error"]["code"], code, "{body}: {v}");
    assert_eq!(v["error"]["field"], field, "{body}: {v}");
}

async fn walk(s: &Server, mock: &Mock) {
    for t in [
        wechat_template("coupon", "TPL_COUPON", "{{ subject.title }} opens"),
        wechat_template(
            "vip",
            "TPL_VIP",
            "VIP: {{ subject.title }} at {{ subject.start_at | time }}",
        ),
        json!({"name": "mail-only", "locales": {"default": {
            "email": {"subject": "{{ subject.title }}", "text": "soon"}}}}),
        json!({"name": "reads-order", "locales": {"default": {"wechat": {
            "template_id": "TPL_ORDER", "data": {"first": {"value": "{{ order.id }}"}}}}}}),
    ] {
        let (code, v) = s.post("/v1/templates", &t).await;
        assert_eq!(code, 201, "{v}");
    }

    // Refs that cannot work are refused, naming the field.
    refused(
        s,
        json!({"wechat": {"name": "nope"}}),
        422,
        "unknown_template",
        "templates.wechat",
    )
    .await;
    refused(
        s,
        json!({"wechat": {"name": "vip", "version": 9}}),
        422,
        "unknown_template",
        "templates.wechat.version",
    )
    .await;
    refused(
        s,
        json!({"wechat": {"name": "mail-only"}}),
        422,
        "invalid_field",
        "templates.wechat",
    )
    .await;
    refused(
        s,
        json!({"wechat": {"name": "reads-order"}}),
        422,
        "invalid_field",
        "templates.wechat",
    )
    .await;
    refused(
        s,
        json!({"fax": {"name": "vip"}}),
        400,
        "invalid_field",
        "templates.fax",
    )
    .await;
    refused(
        s,
        json!({"wechat": {"nam": "vip"}}),
        400,
        "invalid_field",
        "templates.wechat",
    )
    .await;
    refused(
        s,
        json!({"wechat": {"name": "no spaces"}}),
        400,
        "invalid_field",
        "templates.wechat.name",
    )
    .await;
    refused(s, json!(["vip"]), 400, "invalid_field", "templates").await;
    let (code, v) = s.get("/v1/subjects/bad").await;
    assert_eq!(code, 404, "nothing was written: {v}");

    // Fires about three seconds from now (a five-minute lead).
    let start_ms = (now_ms() / 1000 + 5 * 60 + 3) * 1000;
    let start = common::rfc3339(start_ms);
    let (code, v) = s
        .put(
            "/v1/subjects/own",
            &json!({"start_at": start, "title": "VIP sale",
                    "templates": {"wechat": {"name": "vip", "version": 1}}}),
        )
        .await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(
        v["templates"],
        json!({"wechat": {"name": "vip", "version": 1}}),
        "{v}"
    );
    let (code, v) = s
        .put(
            "/v1/subjects/plain",
            &json!({"start_at": start, "title": "Plain sale", "templates": {}}),
        )
        .await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(v["templates"], Value::Null, "{v}");
    let (code, v) = s.get("/v1/subjects/own").await;
    assert_eq!(code, 200, "{v}");
    assert_eq!(
        v["templates"],
        json!({"wechat": {"name": "vip", "version": 1}}),
        "{v}"
    );

    for (user, openid) in [
        ("u-own", "oOwn"),
        ("u-plain", "oPlain"),
        ("u-both", "oBoth"),
    ] {
        let (code, v) = s
            .put(
                &format!("/v1/subscribers/{user}"),
                &json!({"timezone": "Asia/Shanghai", "addresses": {"wechat": {"wx": openid}}}),
            )
            .await;
        assert!(code == 201 || code == 200, "{v}");
    }
    for (user, subject) in [
        ("u-own", "own"),
        ("u-plain", "plain"),
        ("u-both", "own"),
        ("u-both", "plain"),
    ] {
        let (code, v) = s
            .post(
                "/v1/reminders",
                &json!({"user_id": user, "subject_id": subject, "channel_type": "wechat",
                        "lead_minutes": 5}),
            )
            .await;
        assert_eq!(code, 201, "{user} {subject}: {v}");
    }

    wait_for("three WeChat deliveries", WAIT, || async {
        let wx = mock_json(mock, "/_mock/wechat/messages").await;
        wx.as_array().map_or(0, Vec::len) >= 3
    })
    .await;
    let sh = {
        let z = jiff::Timestamp::from_millisecond(start_ms)
            .unwrap()
            .to_zoned(jiff::tz::TimeZone::get("Asia/Shanghai").unwrap());
        jiff::fmt::strtime::format("%H:%M", &z).unwrap()
    };
    // The subject's own template.
    let own = mock_json(mock, "/_mock/wechat/messages?touser=oOwn").await;
    assert_eq!(own[0]["template_id"], "TPL_VIP", "{own}");
    assert_eq!(
        own[0]["data"]["first"]["value"],
        format!("VIP: VIP sale at {sh}"),
        "{own}"
    );
    assert_eq!(own[0]["data"]["keyword1"]["value"], "own x1", "{own}");
    // No template of its own: the type's.
    let plain = mock_json(mock, "/_mock/wechat/messages?touser=oPlain").await;
    assert_eq!(plain[0]["template_id"], "TPL_COUPON", "{plain}");
    assert_eq!(
        plain[0]["data"]["first"]["value"], "Plain sale opens",
        "{plain}"
    );
    // Both merged into one delivery: the subjects disagree, so the type's.
    let both = mock_json(mock, "/_mock/wechat/messages?touser=oBoth").await;
    assert_eq!(both.as_array().map(Vec::len), Some(1), "{both}");
    assert_eq!(both[0]["template_id"], "TPL_COUPON", "{both}");
    assert_eq!(both[0]["data"]["keyword1"]["value"], "own x2", "{both}");

    // A PUT without templates clears them.
    let (code, v) = s
        .put(
            "/v1/subjects/own",
            &json!({"start_at": common::rfc3339(start_ms + 3_600_000), "title": "VIP sale"}),
        )
        .await;
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["templates"], Value::Null, "{v}");
}

#[tokio::test]
async fn a_subjects_own_template_renders_its_reminders_on_sqlite() {
    let mock = Mock::start(&[]).await;
    let s = Server::start(&config(&mock.url)).await;
    walk(&s, &mock).await;
}

#[tokio::test]
async fn a_subjects_own_template_renders_its_reminders_on_postgres() {
    let Some((_db, url)) = pg_database("subject_templates") else {
        eprintln!("PostgreSQL not installed: subject template walk on PostgreSQL skipped");
        return;
    };
    let mock = Mock::start(&[]).await;
    let s = Server::start_on(&url, tempfile::tempdir().unwrap(), &config(&mock.url)).await;
    walk(&s, &mock).await;
}
