//! What each provider's message must hold.
//!
//! One check per channel kind, used twice: when a message is accepted (a
//! timer, a job, a rule, a template's part: the API answers `422` naming the
//! field) and by the channel itself as it sends, so a message that could never
//! be sent is refused at the door instead of failing when it fires.

use serde_json::{Map, Value};

use crate::ChannelKind;
pub use crate::message_fields::ShapeError;
use crate::message_fields::{err, nonempty_string, optional_string};

/// Message types WeCom's `message/send` takes.
pub const WECOM_MSGTYPES: [&str; 11] = [
    "text",
    "textcard",
    "markdown",
    "template_card",
    "news",
    "mpnews",
    "image",
    "voice",
    "video",
    "file",
    "miniprogram_notice",
];

/// Xiaomi MiPush: `title` must be shorter than this many characters
/// (reference §4.3).
pub const XIAOMI_TITLE_CHARS: usize = 50;
/// Xiaomi MiPush: `description` must be shorter than this many characters.
pub const XIAOMI_DESCRIPTION_CHARS: usize = 128;
/// Xiaomi MiPush: `payload` must be shorter than this many bytes.
pub const XIAOMI_PAYLOAD_BYTES: usize = 4096;

/// OPPO Push: `title` may hold at most this many characters
/// [unverified: OPPO's message-body page was not read].
pub const OPPO_TITLE_CHARS: usize = 50;
/// OPPO Push: `content` may hold at most this many characters [unverified].
pub const OPPO_CONTENT_CHARS: usize = 200;
/// OPPO Push: the `data` carried as `actionParameters`, at most these
/// bytes as JSON [unverified].
pub const OPPO_DATA_BYTES: usize = 4000;

/// vivo Push: `title` at most 40 "bytes" as vivo counts them, a CJK
/// character as 2 (20 Chinese characters or 40 letters; reference §4.5).
pub const VIVO_TITLE_WIDTH: usize = 40;
/// vivo Push: `content` at most 100 "bytes" (50 Chinese characters).
pub const VIVO_CONTENT_WIDTH: usize = 100;
/// vivo Push: the `data` carried as `clientCustomMap`, at most these bytes
/// as JSON [unverified: vivo's limit was not read].
pub const VIVO_DATA_BYTES: usize = 4000;

/// Checks that `msg` is a message the provider behind `kind` can send.
pub fn check(kind: ChannelKind, msg: &Value) -> Result<(), ShapeError> {
    let Some(m) = msg.as_object() else {
        return Err(err("", "the message must be a JSON object"));
    };
    match kind {
        ChannelKind::Log | ChannelKind::Webhook => Ok(()),
        ChannelKind::Wechat => wechat(m),
        ChannelKind::Wecom => wecom(m),
        ChannelKind::Fcm => fcm(m),
        ChannelKind::HuaweiPush | ChannelKind::HonorPush => fcm(m).and_then(|()| app_push(m, kind)),
        ChannelKind::XiaomiPush => fcm(m).and_then(|()| app_push(m, kind)).and_then(|()| {
            push_limits(
                m,
                kind,
                Limit::CharsBelow(XIAOMI_TITLE_CHARS),
                Limit::CharsBelow(XIAOMI_DESCRIPTION_CHARS),
                XIAOMI_PAYLOAD_BYTES - 1,
            )
        }),
        ChannelKind::OppoPush => fcm(m)
            .and_then(|()| notification_only(m, kind))
            .and_then(|()| app_push(m, kind))
            .and_then(|()| {
                push_limits(
                    m,
                    kind,
                    Limit::CharsBelow(OPPO_TITLE_CHARS + 1),
                    Limit::CharsBelow(OPPO_CONTENT_CHARS + 1),
                    OPPO_DATA_BYTES,
                )
            }),
        ChannelKind::VivoPush => fcm(m)
            .and_then(|()| notification_only(m, kind))
            .and_then(|()| app_push(m, kind))
            .and_then(|()| {
                push_limits(
                    m,
                    kind,
                    Limit::WidthAtMost(VIVO_TITLE_WIDTH),
                    Limit::WidthAtMost(VIVO_CONTENT_WIDTH),
                    VIVO_DATA_BYTES,
                )
            }),
        ChannelKind::Smtp => email(m),
        ChannelKind::WechatMini => crate::subscribe_rules::message(m),
        ChannelKind::AliyunSms => aliyun_sms(m),
        ChannelKind::TencentSms => tencent_sms(m),
        ChannelKind::WecomRobot | ChannelKind::DingtalkRobot | ChannelKind::FeishuBot => {
            crate::robots::message::check(kind, m)
        }
        ChannelKind::DingtalkWork => crate::dingtalk_work::check_message(m).map(|_| ()),
        ChannelKind::FeishuApp => crate::feishu_app::check_message(m).map(|_| ()),
    }
}

/// A message template's `robot` part: Herald's robot shape (`text`, or
/// `markdown` and `title`), which any robot kind sends once rendered.
pub fn robot_part(msg: &Value) -> Result<(), ShapeError> {
    let Some(m) = msg.as_object() else {
        return Err(err("", "the message must be a JSON object"));
    };
    crate::robots::message::check_common(m)
}

/// [`check`] of message text, as channels hold it when they send.
pub fn check_text(kind: ChannelKind, msg: &str) -> Result<Value, String> {
    let v: Value =
        serde_json::from_str(msg).map_err(|e| format!("the message is not JSON: {e}"))?;
    check(kind, &v).map_err(|e| e.message)?;
    Ok(v)
}

/// A WeChat official-account template message: `template_id`, `data` of
/// `{field: {value}}`, and optionally `url` and `miniprogram`.
fn wechat(m: &Map<String, Value>) -> Result<(), ShapeError> {
    if !nonempty_string(m, "template_id") {
        return Err(err(
            "template_id",
            "the wechat message needs template_id (a non-empty string)",
        ));
    }
    let Some(Value::Object(data)) = m.get("data") else {
        return Err(err(
            "data",
            "the wechat message needs data (an object of template fields)",
        ));
    };
    for (k, v) in data {
        let ok = v
            .as_object()
            .is_some_and(|f| matches!(f.get("value"), Some(Value::String(_))));
        if !ok {
            return Err(err(
                format!("data.{k}"),
                format!("data.{k} must be an object with a string value: {{\"value\": \"...\"}}"),
            ));
        }
    }
    optional_string(m, "url", "url")?;
    if let Some(mp) = m.get("miniprogram") {
        let ok = mp.as_object().is_some_and(|o| nonempty_string(o, "appid"));
        if !ok {
            return Err(err(
                "miniprogram",
                "miniprogram must be an object with appid (and optionally pagepath)",
            ));
        }
    }
    Ok(())
}

/// A WeCom application message: `msgtype` and the object it names, with the
/// fields WeCom requires for the common types.
fn wecom(m: &Map<String, Value>) -> Result<(), ShapeError> {
    let msgtype = match m.get("msgtype") {
        Some(Value::String(s)) if WECOM_MSGTYPES.contains(&s.as_str()) => s.as_str(),
        Some(Value::String(s)) => {
            return Err(err(
                "msgtype",
                format!(
                    "the wecom message has msgtype {s:?}; use one of {}",
                    WECOM_MSGTYPES.join(", ")
                ),
            ));
        }
        _ => {
            return Err(err(
                "msgtype",
                "the wecom message needs msgtype (e.g. \"text\")",
            ));
        }
    };
    let Some(Value::Object(body)) = m.get(msgtype) else {
        return Err(err(
            msgtype,
            format!("the wecom message of msgtype {msgtype:?} needs a {msgtype:?} object"),
        ));
    };
    let required: &[&str] = match msgtype {
        "text" | "markdown" => &["content"],
        "textcard" => &["title", "description", "url"],
        _ => &[],
    };
    for key in required {
        if !nonempty_string(body, key) {
            return Err(err(
                format!("{msgtype}.{key}"),
                format!("the wecom {msgtype} message needs {msgtype}.{key} (a non-empty string)"),
            ));
        }
    }
    Ok(())
}

/// An FCM message: optional `notification` (title, body) and `data` of
/// string values.
fn fcm(m: &Map<String, Value>) -> Result<(), ShapeError> {
    if let Some(data) = m.get("data") {
        let ok = data
            .as_object()
            .is_some_and(|d| d.values().all(Value::is_string));
        if !ok {
            return Err(err(
                "data",
                "the fcm message's data must be an object of string values",
            ));
        }
    }
    if let Some(n) = m.get("notification") {
        let Some(n) = n.as_object() else {
            return Err(err(
                "notification",
                "the fcm message's notification must be an object",
            ));
        };
        optional_string(n, "title", "notification.title")?;
        optional_string(n, "body", "notification.body")?;
    }
    Ok(())
}

/// Checks an `app` message for a vendor push kind (Huawei, Xiaomi, ...):
/// FCM's shape, and a notification has a title and a body (the vendors
/// refuse one without).
fn app_push(m: &Map<String, Value>, kind: ChannelKind) -> Result<(), ShapeError> {
    if let Some(Value::Object(n)) = m.get("notification") {
        for k in ["title", "body"] {
            if !matches!(n.get(k), Some(Value::String(s)) if !s.trim().is_empty()) {
                return Err(err(
                    format!("notification.{k}"),
                    format!("a {kind} notification needs {k} (a non-empty string)"),
                ));
            }
        }
    } else if !m.contains_key("data") {
        return Err(err(
            "notification",
            format!("a {kind} message needs a notification (title and body) or data"),
        ));
    }
    if let Some(c) = m
        .get("android")
        .and_then(|a| a.get("notification"))
        .and_then(|n| n.get("click_action"))
        && !c.is_string()
    {
        return Err(err(
            "android.notification.click_action",
            "click_action must be a string: the intent action the tap starts",
        ));
    }
    Ok(())
}

/// A vendor whose server API sends notifications only (no data-only,
/// pass-through messages): the message needs a `notification`.
fn notification_only(m: &Map<String, Value>, kind: ChannelKind) -> Result<(), ShapeError> {
    if m.get("notification").is_some_and(Value::is_object) {
        return Ok(());
    }
    Err(err(
        "notification",
        format!(
            "a {kind} message needs a notification (title and body): {kind} sends no data-only messages"
        ),
    ))
}

/// How a vendor measures a text limit.
#[derive(Debug, Clone, Copy)]
enum Limit {
    /// Fewer than N characters (Xiaomi: "length under 50").
    CharsBelow(usize),
    /// At most N as vivo counts: an ASCII character 1, any other 2 (vivo:
    /// a title of 40, 20 Chinese characters).
    WidthAtMost(usize),
}

impl Limit {
    fn fits(self, s: &str) -> bool {
        match self {
            Limit::CharsBelow(n) => s.chars().count() < n,
            Limit::WidthAtMost(n) => {
                s.chars()
                    .map(|c| if c.is_ascii() { 1 } else { 2 })
                    .sum::<usize>()
                    <= n
            }
        }
    }

    fn describe(self) -> String {
        match self {
            Limit::CharsBelow(n) => format!("under {n} characters"),
            Limit::WidthAtMost(n) => {
                format!("at most {n} bytes as vivo counts them (a Chinese character counts 2)")
            }
        }
    }
}

/// A vendor's limits on the notification's title and body and on the
/// `data` JSON (`data_bytes` at most), which its API refuses past.
fn push_limits(
    m: &Map<String, Value>,
    kind: ChannelKind,
    title: Limit,
    body: Limit,
    data_bytes: usize,
) -> Result<(), ShapeError> {
    if let Some(Value::Object(n)) = m.get("notification") {
        for (k, limit) in [("title", title), ("body", body)] {
            if let Some(Value::String(s)) = n.get(k)
                && !limit.fits(s)
            {
                return Err(err(
                    format!("notification.{k}"),
                    format!("a {kind} notification's {k} must be {}", limit.describe()),
                ));
            }
        }
    }
    if let Some(d) = m.get("data")
        && d.to_string().len() > data_bytes
    {
        return Err(err(
            "data",
            format!("a {kind} message's data must be at most {data_bytes} bytes as JSON"),
        ));
    }
    Ok(())
}

/// An e-mail: `subject`, and `text` and/or `html`; nothing else.
fn email(m: &Map<String, Value>) -> Result<(), ShapeError> {
    if !nonempty_string(m, "subject") {
        return Err(err(
            "subject",
            "the email message needs subject (a non-empty string)",
        ));
    }
    optional_string(m, "text", "text")?;
    optional_string(m, "html", "html")?;
    if let Some(k) = m
        .keys()
        .find(|k| !matches!(k.as_str(), "subject" | "text" | "html"))
    {
        return Err(err(
            k.as_str(),
            format!("the email message takes subject, text and html; not {k:?}"),
        ));
    }
    Ok(())
}

/// Only `template` and `params` (and, for Aliyun, `out_id`).
fn sms_keys(m: &Map<String, Value>, kind: &str, allowed: &[&str]) -> Result<(), ShapeError> {
    if let Some(k) = m.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(err(
            k.as_str(),
            format!("the {kind} message takes {}; not {k:?}", allowed.join(", ")),
        ));
    }
    match m.get("template") {
        None => Ok(()),
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(()),
        Some(_) => Err(err(
            "template",
            format!("the {kind} message's template must be a non-empty string"),
        )),
    }
}

/// An Aliyun SMS: optional `template` (a `TemplateCode` such as
/// `SMS_123`; the channel's `template_code` otherwise), `params`, an object
/// of string values (the `TemplateParam` JSON; Aliyun refuses numbers),
/// and optional `out_id` (echoed in receipts, under 256 characters).
fn aliyun_sms(m: &Map<String, Value>) -> Result<(), ShapeError> {
    sms_keys(m, "aliyun_sms", &["template", "params", "out_id"])?;
    if let Some(p) = m.get("params") {
        let Some(p) = p.as_object() else {
            return Err(err(
                "params",
                "the aliyun_sms message's params must be an object of string values",
            ));
        };
        if let Some((k, _)) = p.iter().find(|(_, v)| !v.is_string()) {
            return Err(err(
                format!("params.{k}"),
                format!("params.{k} must be a string (Aliyun takes template values as strings)"),
            ));
        }
    }
    match m.get("out_id") {
        None => Ok(()),
        Some(Value::String(s)) if s.chars().count() < 256 => Ok(()),
        Some(_) => Err(err(
            "out_id",
            "out_id must be a string of fewer than 256 characters",
        )),
    }
}

/// A Tencent SMS: optional `template` (a `TemplateId`, digits; the
/// channel's `template_id` otherwise) and `params`, an array of strings in
/// the template's order (`TemplateParamSet`).
fn tencent_sms(m: &Map<String, Value>) -> Result<(), ShapeError> {
    sms_keys(m, "tencent_sms", &["template", "params"])?;
    if let Some(Value::String(t)) = m.get("template")
        && !t.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(err(
            "template",
            format!("the tencent_sms template is a TemplateId of digits, not {t:?}"),
        ));
    }
    if let Some(p) = m.get("params") {
        let Some(p) = p.as_array() else {
            return Err(err(
                "params",
                "the tencent_sms message's params must be an array of strings",
            ));
        };
        if let Some(i) = p.iter().position(|v| !v.is_string()) {
            return Err(err(
                format!("params.{i}"),
                format!("params.{i} must be a string"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn field(kind: ChannelKind, v: Value) -> String {
        check(kind, &v).err().map(|e| e.field).unwrap_or_default()
    }

    #[test]
    fn names_the_field_each_provider_needs() {
        assert_eq!(
            field(ChannelKind::Wechat, json!({"text": "hi"})),
            "template_id"
        );
        assert_eq!(
            field(ChannelKind::Wechat, json!({"template_id": "T"})),
            "data"
        );
        assert_eq!(
            field(
                ChannelKind::Wechat,
                json!({"template_id": "T", "data": {"a": "x"}})
            ),
            "data.a"
        );
        assert!(
            check(
                ChannelKind::Wechat,
                &json!({"template_id": "T", "data": {"a": {"value": "x"}}})
            )
            .is_ok()
        );
        assert_eq!(field(ChannelKind::Wecom, json!({"text": "hi"})), "msgtype");
        assert_eq!(
            field(ChannelKind::Wecom, json!({"msgtype": "text"})),
            "text"
        );
        assert_eq!(
            field(
                ChannelKind::Wecom,
                json!({"msgtype": "textcard", "textcard": {"title": "t"}})
            ),
            "textcard.description"
        );
        assert!(
            check(
                ChannelKind::Wecom,
                &json!({"msgtype": "text", "text": {"content": "hi"}})
            )
            .is_ok()
        );
        assert_eq!(field(ChannelKind::Smtp, json!({"text": "hi"})), "subject");
        assert_eq!(
            field(ChannelKind::Smtp, json!({"subject": "s", "body": "b"})),
            "body"
        );
        assert_eq!(field(ChannelKind::Fcm, json!({"data": {"n": 1}})), "data");
        assert!(check(ChannelKind::Webhook, &json!({"anything": [1]})).is_ok());
        assert_eq!(field(ChannelKind::Log, json!([1])), "");
    }

    #[test]
    fn sms_messages_name_the_bad_field() {
        let ok = json!({"template": "SMS_1", "params": {"code": "1234"}});
        assert!(check(ChannelKind::AliyunSms, &ok).is_ok());
        assert!(check(ChannelKind::AliyunSms, &json!({})).is_ok());
        assert_eq!(
            field(ChannelKind::AliyunSms, json!({"params": {"code": 1234}})),
            "params.code"
        );
        assert_eq!(
            field(ChannelKind::AliyunSms, json!({"params": ["a"]})),
            "params"
        );
        assert_eq!(field(ChannelKind::AliyunSms, json!({"text": "hi"})), "text");
        assert_eq!(
            field(ChannelKind::AliyunSms, json!({"template": ""})),
            "template"
        );
        let ok = json!({"template": "1234", "params": ["a", "b"]});
        assert!(check(ChannelKind::TencentSms, &ok).is_ok());
        assert_eq!(
            field(ChannelKind::TencentSms, json!({"params": ["a", 2]})),
            "params.1"
        );
        assert_eq!(
            field(ChannelKind::TencentSms, json!({"params": {"a": "b"}})),
            "params"
        );
        assert_eq!(
            field(ChannelKind::TencentSms, json!({"template": "SMS_1"})),
            "template"
        );
        assert_eq!(
            field(ChannelKind::TencentSms, json!({"out_id": "x"})),
            "out_id"
        );
    }
}
