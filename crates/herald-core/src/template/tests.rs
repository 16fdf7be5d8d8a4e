use serde_json::json;

use super::*;
use crate::TenantId;

const T: TenantId = TenantId(1);

fn body(v: Value) -> TemplateBody {
    serde_json::from_value(v).expect("body")
}

fn coupon() -> TemplateBody {
    body(json!({
        "description": "coupon opens",
        "locales": {
            "default": {
                "wechat": {"template_id": "TPL_COUPON",
                           "data": {"first": {"value": "{{ subject.title }} opens at {{ subject.start_at | time }}"},
                                    "keyword1": {"value": "{{ subject.data.code }}"}}},
                "email": {"subject": "{{ subject.title }}", "html": "<p>{{ subject.title }}</p>"}
            },
            "zh": {
                "wechat": {"template_id": "TPL_COUPON",
                           "data": {"first": {"value": "{{ subject.title }} {{ subject.start_at | datetime('%m月%d日 %H:%M') }} 开抢"},
                                    "keyword1": {"value": "{{ subject.data.code }}"}}}
            }
        }
    }))
}

fn ctx(tz: &str) -> Value {
    json!({"subject": {"title": "<b>Sale</b>", "start_at": "2026-11-25T02:00:00Z",
                       "data": {"code": "C42"}},
           "timezone": tz})
}

#[test]
fn renders_the_closest_locale_in_the_readers_time_zone() {
    let mut lib = Library::new();
    lib.insert(T, "coupon", 1, &coupon()).expect("insert");
    let r = TemplateRef {
        name: "coupon".into(),
        version: None,
    };
    let zh = lib
        .render(
            T,
            &r,
            PartKey::Type(ChannelType::Wechat),
            Some("zh-Hans-CN"),
            &ctx("Asia/Shanghai"),
        )
        .expect("render");
    assert_eq!(zh.locale, "zh");
    assert_eq!(
        zh.message["data"]["first"]["value"],
        "<b>Sale</b> 11月25日 10:00 开抢"
    );
    assert_eq!(zh.message["template_id"], "TPL_COUPON");
    let en = lib
        .render(
            T,
            &r,
            PartKey::Type(ChannelType::Wechat),
            Some("en-US"),
            &ctx("Europe/London"),
        )
        .expect("render");
    assert_eq!(en.locale, "default");
    assert_eq!(
        en.message["data"]["first"]["value"],
        "<b>Sale</b> opens at 02:00"
    );
    // The zh variant has no e-mail part: the default's is used, HTML escaped.
    let mail = lib
        .render(
            T,
            &r,
            PartKey::Type(ChannelType::Email),
            Some("zh"),
            &ctx("UTC"),
        )
        .expect("render");
    assert_eq!(mail.message["html"], "<p>&lt;b&gt;Sale&lt;&#x2f;b&gt;</p>");
    assert_eq!(mail.message["subject"], "<b>Sale</b>");
}

#[test]
fn a_missing_part_or_variable_is_an_error_not_a_half_message() {
    let mut lib = Library::new();
    lib.insert(T, "coupon", 1, &coupon()).expect("insert");
    let r = TemplateRef {
        name: "coupon".into(),
        version: None,
    };
    let no_part = lib.render(T, &r, PartKey::Type(ChannelType::Wecom), None, &ctx("UTC"));
    assert!(
        matches!(no_part, Err(RenderError::NoPart { .. })),
        "{no_part:?}"
    );
    let missing = lib
        .render(
            T,
            &r,
            PartKey::Type(ChannelType::Wechat),
            None,
            &json!({"subject": {"title": "x"}}),
        )
        .expect_err("no start_at");
    match missing {
        RenderError::Failed { field, .. } => {
            assert_eq!(field, "locales.default.wechat.data.first.value")
        }
        other => panic!("{other:?}"),
    }
    let pinned = TemplateRef {
        name: "coupon".into(),
        version: Some(2),
    };
    assert!(matches!(
        lib.render(T, &pinned, PartKey::Webhook, None, &ctx("UTC")),
        Err(RenderError::UnknownVersion { version: 2, .. })
    ));
    // Other tenants do not see it.
    assert!(matches!(
        lib.render(TenantId(2), &r, PartKey::Webhook, None, &ctx("UTC")),
        Err(RenderError::UnknownTemplate { .. })
    ));
}

#[test]
fn the_latest_version_is_used_unless_one_is_pinned() {
    let mut lib = Library::new();
    let v = |s: &str| body(json!({"locales": {"default": {"webhook": {"text": s}}}}));
    lib.insert(T, "n", 1, &v("one {{ who }}")).expect("v1");
    lib.insert(T, "n", 2, &v("two {{ who }}")).expect("v2");
    let latest = TemplateRef {
        name: "n".into(),
        version: None,
    };
    let first = TemplateRef {
        name: "n".into(),
        version: Some(1),
    };
    let data = json!({"who": "ann"});
    assert_eq!(
        lib.render(T, &latest, PartKey::Webhook, None, &data)
            .expect("r")
            .message["text"],
        "two ann"
    );
    let r1 = lib
        .render(T, &first, PartKey::Webhook, None, &data)
        .expect("r");
    assert_eq!(
        (r1.version, r1.message["text"].as_str()),
        (1, Some("one ann"))
    );
}

#[test]
fn check_names_the_field_and_lists_variables() {
    let err = |v: Value| body(v).check().expect_err("refused").field;
    assert_eq!(
        err(json!({"locales": {"en": {"app": {}}}})),
        "locales.default"
    );
    assert_eq!(
        err(json!({"locales": {"default": {"fax": {}}}})),
        "locales.default.fax"
    );
    assert_eq!(
        err(json!({"locales": {"default": {"app": {"notification": {"title": "{{ oops"}}}}})),
        "locales.default.app.notification.title"
    );
    assert_eq!(
        err(json!({"locales": {"default": {"app": {}}, "zh TW": {"app": {}}}})),
        "locales.zh TW"
    );
    let checked = coupon().check().expect("ok");
    assert_eq!(
        checked.variables.into_iter().collect::<Vec<_>>(),
        ["subject"]
    );
    assert!(
        checked
            .default_parts
            .contains(&PartKey::Type(ChannelType::Email))
    );
    let loops = body(
        json!({"locales": {"default": {"webhook": {"t": "{% for i in items %}{{ i }}{% endfor %} {{ timezone }}"}}}}),
    );
    assert_eq!(
        loops
            .check()
            .expect("ok")
            .variables
            .into_iter()
            .collect::<Vec<_>>(),
        ["items"]
    );
}

#[test]
fn runaway_templates_stop() {
    let mut lib = Library::new();
    let b = body(
        json!({"locales": {"default": {"webhook": {"t": "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}"}}}}),
    );
    lib.insert(T, "loop", 1, &b).expect("insert");
    let r = TemplateRef {
        name: "loop".into(),
        version: None,
    };
    assert!(matches!(
        lib.render(T, &r, PartKey::Webhook, None, &json!({})),
        Err(RenderError::Failed { .. })
    ));
}

#[test]
fn date_filters_take_ms_and_explicit_zones_and_refuse_bad_formats() {
    let mut lib = Library::new();
    let b = body(json!({"locales": {"default": {"webhook": {
        "a": "{{ at | date }} {{ at | time('%H:%M', 'America/New_York') }}",
        "b": "{{ at | datetime('%') }}"}}}}));
    lib.insert(T, "d", 1, &b).expect("insert");
    let r = TemplateRef {
        name: "d".into(),
        version: None,
    };
    let out = lib.render(
        T,
        &r,
        PartKey::Webhook,
        None,
        &json!({"at": 1_764_036_000_000_i64, "timezone": "Asia/Tokyo"}),
    );
    assert!(
        matches!(out, Err(RenderError::Failed { ref field, .. }) if field.ends_with(".b")),
        "{out:?}"
    );
    let b = body(json!({"locales": {"default": {"webhook": {
        "a": "{{ at | date }} {{ at | time('%H:%M', 'America/New_York') }}"}}}}));
    lib.insert(T, "e", 1, &b).expect("insert");
    let r = TemplateRef {
        name: "e".into(),
        version: None,
    };
    let ok = lib
        .render(
            T,
            &r,
            PartKey::Webhook,
            None,
            &json!({"at": 1_764_036_000_000_i64, "timezone": "Asia/Tokyo"}),
        )
        .expect("ok");
    assert_eq!(ok.message["a"], "2025-11-25 21:00");
}
