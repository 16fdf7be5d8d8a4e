//! What a group robot sends, and whom it mentions.
//!
//! A robot takes Herald's own shape, the same for the three providers, so one
//! template part (`robot`) serves them all:
//!
//! - `{"text": "..."}`: a plain message;
//! - `{"markdown": "...", "title": "..."}`: Markdown, `title` optional (DingTalk
//!   shows it in the chat list, Feishu as the card's header).
//!
//! A message with the provider's own type key (`msgtype` for WeCom and
//! DingTalk, `msg_type` for Feishu) is the provider's shape and goes out as
//! written, for the types Herald's shape does not cover (news, link and
//! action cards, Feishu's rich posts and cards).
//!
//! The recipient says whom to mention: `-` nobody, `@all` everyone, else
//! `|`-separated user ids, `mobile:` before a phone number.

use serde_json::{Map, Value};

use crate::ChannelKind;
use crate::message_fields::{ShapeError, err};

/// Longest `text` and `markdown` a WeCom robot takes, in bytes (§7).
pub const WECOM_TEXT_BYTES: usize = 2048;
pub const WECOM_MARKDOWN_BYTES: usize = 4096;
/// A Feishu bot's request body is at most 20 KB (§6.4); the message's own text
/// is held to less, leaving room for the JSON around it and the signature.
pub const FEISHU_TEXT_BYTES: usize = 18 * 1024;

/// Message types each provider's robot takes in its own shape.
const WECOM_TYPES: [&str; 7] = [
    "text",
    "markdown",
    "markdown_v2",
    "news",
    "image",
    "file",
    "template_card",
];
const DINGTALK_TYPES: [&str; 5] = ["text", "markdown", "link", "actionCard", "feedCard"];
const FEISHU_TYPES: [&str; 5] = ["text", "post", "image", "share_chat", "interactive"];

/// A robot message, read and checked.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RobotMessage {
    Text(String),
    Markdown {
        title: Option<String>,
        text: String,
    },
    /// The provider's own shape, sent as written.
    Native(Map<String, Value>),
}

/// The key naming the provider's own message type.
fn native_key(kind: ChannelKind) -> &'static str {
    match kind {
        ChannelKind::FeishuBot => "msg_type",
        _ => "msgtype",
    }
}

/// Checks a message for a robot of `kind`: Herald's shape with that
/// provider's size limits, or the provider's own shape.
pub(crate) fn check(kind: ChannelKind, m: &Map<String, Value>) -> Result<(), ShapeError> {
    read(kind, m).map(|_| ())
}

/// Herald's robot shape without a provider's size limits: a template's
/// `robot` part, which any of the three kinds may send once rendered.
pub(crate) fn check_common(m: &Map<String, Value>) -> Result<(), ShapeError> {
    if m.contains_key("msgtype") || m.contains_key("msg_type") {
        return Err(err(
            "",
            "a template's robot part takes Herald's robot shape ({\"text\"} or {\"markdown\", \"title\"}); put a provider's own message in the timer itself",
        ));
    }
    common(m, None).map(|_| ())
}

/// Reads a message for a robot of `kind`.
pub(crate) fn read(kind: ChannelKind, m: &Map<String, Value>) -> Result<RobotMessage, ShapeError> {
    let key = native_key(kind);
    if m.contains_key(key) {
        return native(kind, key, m).map(|()| RobotMessage::Native(m.clone()));
    }
    let other = if key == "msgtype" {
        "msg_type"
    } else {
        "msgtype"
    };
    if m.contains_key(other) {
        return Err(err(
            other,
            format!("a {kind} message names its type with {key:?}, not {other:?}"),
        ));
    }
    let limits = match kind {
        ChannelKind::WecomRobot => Some((WECOM_TEXT_BYTES, WECOM_MARKDOWN_BYTES)),
        ChannelKind::FeishuBot => Some((FEISHU_TEXT_BYTES, FEISHU_TEXT_BYTES)),
        _ => None,
    };
    common(m, limits)
}

/// Herald's shape: `text`, or `markdown` with an optional `title`, and
/// nothing else; `limits` are the most bytes of text and of Markdown.
pub(crate) fn common(
    m: &Map<String, Value>,
    limits: Option<(usize, usize)>,
) -> Result<RobotMessage, ShapeError> {
    if let Some(k) = m
        .keys()
        .find(|k| !["text", "markdown", "title"].contains(&k.as_str()))
    {
        return Err(err(
            k.as_str(),
            format!("a robot message takes text, or markdown and title; not {k:?}"),
        ));
    }
    let string = |k: &str| -> Result<Option<String>, ShapeError> {
        match m.get(k) {
            None => Ok(None),
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.clone())),
            Some(_) => Err(err(k, format!("{k} must be a non-empty string"))),
        }
    };
    let too_long = |k: &str, s: &str, most: usize| -> Result<(), ShapeError> {
        if s.len() > most {
            return Err(err(
                k,
                format!(
                    "{k} is {} bytes; the provider takes at most {most}",
                    s.len()
                ),
            ));
        }
        Ok(())
    };
    match (string("text")?, string("markdown")?, string("title")?) {
        (Some(text), None, None) => {
            if let Some((most, _)) = limits {
                too_long("text", &text, most)?;
            }
            Ok(RobotMessage::Text(text))
        }
        (None, Some(text), title) => {
            if let Some((_, most)) = limits {
                too_long("markdown", &text, most)?;
            }
            Ok(RobotMessage::Markdown { title, text })
        }
        (Some(_), None, Some(_)) => Err(err("title", "title goes with markdown, not text")),
        (Some(_), Some(_), _) => Err(err("markdown", "give text or markdown, not both")),
        (None, None, _) => Err(err(
            "text",
            "a robot message needs text (or markdown) as a non-empty string",
        )),
    }
}

/// The provider's own shape: a known type and the object it names (Feishu's
/// `interactive` carries `card`, its other types `content`).
fn native(kind: ChannelKind, key: &str, m: &Map<String, Value>) -> Result<(), ShapeError> {
    let types: &[&str] = match kind {
        ChannelKind::WecomRobot => &WECOM_TYPES,
        ChannelKind::DingtalkRobot => &DINGTALK_TYPES,
        _ => &FEISHU_TYPES,
    };
    let ty = match m.get(key) {
        Some(Value::String(s)) if types.contains(&s.as_str()) => s.as_str(),
        _ => {
            return Err(err(
                key,
                format!("a {kind} message's {key} is one of {}", types.join(", ")),
            ));
        }
    };
    let body = match (kind, ty) {
        (ChannelKind::FeishuBot, "interactive") => "card",
        (ChannelKind::FeishuBot, _) => "content",
        _ => ty,
    };
    if !matches!(m.get(body), Some(Value::Object(_))) {
        return Err(err(
            body,
            format!("a {kind} message of {key} {ty:?} needs a {body:?} object"),
        ));
    }
    Ok(())
}

/// Whom a robot message mentions, from its recipient.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Mentions {
    pub all: bool,
    pub users: Vec<String>,
    pub mobiles: Vec<String>,
}

impl Mentions {
    /// `-`: nobody; `@all`: everyone; else `|`-separated user ids, and
    /// `mobile:` before a phone number.
    pub fn parse(recipient: &str) -> Result<Mentions, String> {
        let r = recipient.trim();
        let mut m = Mentions::default();
        if r == "-" {
            return Ok(m);
        }
        for part in r.split('|').map(str::trim) {
            if part.is_empty() {
                return Err(format!(
                    "recipient {recipient:?} has an empty mention; give \"-\" to mention nobody"
                ));
            }
            if part == "@all" {
                m.all = true;
            } else if let Some(number) = part.strip_prefix("mobile:") {
                let number = number.trim();
                let ok = !number.is_empty()
                    && number
                        .chars()
                        .all(|c| c.is_ascii_digit() || c == '+' || c == '-');
                if !ok {
                    return Err(format!(
                        "recipient {recipient:?}: {part:?} is not a phone number"
                    ));
                }
                m.mobiles.push(number.to_string());
            } else {
                m.users.push(part.to_string());
            }
        }
        Ok(m)
    }

    pub fn is_empty(&self) -> bool {
        !self.all && self.users.is_empty() && self.mobiles.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    fn field(kind: ChannelKind, v: Value) -> String {
        read(kind, &obj(v)).unwrap_err().field
    }

    #[test]
    fn reads_text_markdown_and_native_shapes() {
        let k = ChannelKind::DingtalkRobot;
        assert_eq!(
            read(k, &obj(json!({"text": "hi"}))).unwrap(),
            RobotMessage::Text("hi".into())
        );
        assert_eq!(
            read(k, &obj(json!({"markdown": "# hi", "title": "T"}))).unwrap(),
            RobotMessage::Markdown {
                title: Some("T".into()),
                text: "# hi".into()
            }
        );
        let link =
            json!({"msgtype": "link", "link": {"title": "a", "text": "b", "messageUrl": "u"}});
        assert!(matches!(
            read(k, &obj(link)).unwrap(),
            RobotMessage::Native(_)
        ));
        let card = json!({"msg_type": "interactive", "card": {"elements": []}});
        assert!(matches!(
            read(ChannelKind::FeishuBot, &obj(card)).unwrap(),
            RobotMessage::Native(_)
        ));
    }

    #[test]
    fn refusals_name_the_field() {
        let k = ChannelKind::WecomRobot;
        assert_eq!(field(k, json!({})), "text");
        assert_eq!(field(k, json!({"text": ""})), "text");
        assert_eq!(field(k, json!({"text": "a", "markdown": "b"})), "markdown");
        assert_eq!(field(k, json!({"text": "a", "title": "b"})), "title");
        assert_eq!(field(k, json!({"text": "a", "url": "b"})), "url");
        assert_eq!(field(k, json!({"text": "a".repeat(2049)})), "text");
        assert!(read(k, &obj(json!({"text": "a".repeat(2048)}))).is_ok());
        assert_eq!(field(k, json!({"markdown": "a".repeat(4097)})), "markdown");
        assert_eq!(field(k, json!({"msgtype": "link", "link": {}})), "msgtype");
        assert_eq!(field(k, json!({"msgtype": "news"})), "news");
        assert_eq!(field(k, json!({"msg_type": "text"})), "msg_type");
        let f = ChannelKind::FeishuBot;
        assert_eq!(
            field(f, json!({"msg_type": "interactive", "content": {}})),
            "card"
        );
        assert_eq!(field(f, json!({"msgtype": "text"})), "msgtype");
        assert_eq!(
            field(f, json!({"text": "a".repeat(FEISHU_TEXT_BYTES + 1)})),
            "text"
        );
        // DingTalk documents no length of its own.
        assert!(
            read(
                ChannelKind::DingtalkRobot,
                &obj(json!({"text": "a".repeat(30_000)}))
            )
            .is_ok()
        );
        assert!(check_common(&obj(json!({"markdown": "{{ x }}", "title": "t"}))).is_ok());
        assert!(check_common(&obj(json!({"msgtype": "text", "text": {}}))).is_err());
    }

    #[test]
    fn recipients_name_mentions() {
        assert!(Mentions::parse("-").unwrap().is_empty());
        let m = Mentions::parse("@all").unwrap();
        assert!(m.all && m.users.is_empty());
        let m = Mentions::parse("zhangsan| mobile:+86-13800000000 |lisi").unwrap();
        assert_eq!(m.users, ["zhangsan", "lisi"]);
        assert_eq!(m.mobiles, ["+86-13800000000"]);
        assert!(Mentions::parse("a||b").is_err());
        assert!(Mentions::parse("mobile:abc").is_err());
        assert!(Mentions::parse("").is_err());
    }
}
