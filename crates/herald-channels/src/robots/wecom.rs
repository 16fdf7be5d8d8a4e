//! A WeCom group robot (`POST /cgi-bin/webhook/send?key=`; reference §7).
//!
//! A text message mentions through `mentioned_list` (user ids, `@all`) and
//! `mentioned_mobile_list`; Markdown has no lists and mentions a user by
//! `<@userid>` in its content, so it cannot mention everyone or a number.
//! There is no signature: the key is the only secret.

use serde_json::{Value, json};

use super::message::{Mentions, RobotMessage};

/// `api freq out of limit`: more than 20 messages in a minute. Worth trying
/// in the next minute.
const TOO_FAST: i64 = 45009;

pub(super) fn body(msg: RobotMessage, who: &Mentions) -> Result<Value, String> {
    Ok(match msg {
        RobotMessage::Text(content) => {
            let mut text = json!({ "content": content });
            let mut users = who.users.clone();
            if who.all {
                users.push("@all".into());
            }
            if !users.is_empty() {
                text["mentioned_list"] = json!(users);
            }
            if !who.mobiles.is_empty() {
                text["mentioned_mobile_list"] = json!(who.mobiles);
            }
            json!({ "msgtype": "text", "text": text })
        }
        RobotMessage::Markdown { text, .. } => {
            if who.all || !who.mobiles.is_empty() {
                return Err(
                    "a WeCom robot's Markdown mentions user ids only, not @all or mobile numbers; send text to mention them"
                        .into(),
                );
            }
            let mut content = text;
            if !who.users.is_empty() {
                let tags: Vec<String> = who.users.iter().map(|u| format!("<@{u}>")).collect();
                content.push('\n');
                content.push_str(&tags.join(" "));
            }
            json!({ "msgtype": "markdown", "markdown": { "content": content } })
        }
        RobotMessage::Native(m) => Value::Object(m),
    })
}

pub(super) fn throttle_ms(code: i64) -> Option<u64> {
    (code == TOO_FAST).then_some(60_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_go_in_lists_for_text_and_tags_for_markdown() {
        let who = Mentions::parse("zhangsan|@all|mobile:13800000000").unwrap();
        let b = body(RobotMessage::Text("hi".into()), &who).unwrap();
        assert_eq!(
            b,
            json!({"msgtype": "text", "text": {"content": "hi",
                   "mentioned_list": ["zhangsan", "@all"],
                   "mentioned_mobile_list": ["13800000000"]}})
        );
        let md = || RobotMessage::Markdown {
            title: Some("t".into()),
            text: "**hi**".into(),
        };
        assert!(body(md(), &who).is_err());
        let b = body(md(), &Mentions::parse("a|b").unwrap()).unwrap();
        assert_eq!(b["markdown"]["content"], "**hi**\n<@a> <@b>");
        let b = body(md(), &Mentions::parse("-").unwrap()).unwrap();
        assert_eq!(
            b,
            json!({"msgtype": "markdown", "markdown": {"content": "**hi**"}})
        );
    }
}
