//! A Feishu custom bot (`POST /open-apis/bot/v2/hook/{token}`; reference
//! §6.4).
//!
//! With signing on, the body carries `timestamp` (unix seconds, as a string,
//! within an hour) and `sign`: `base64(HMAC-SHA256(key = timestamp + "\n" +
//! secret, message = empty))`, the reverse of DingTalk's. Text mentions with
//! `<at user_id="…"></at>`; Markdown goes out as a card with one Markdown
//! element, which mentions with `<at id=…></at>`. Feishu mentions by open id,
//! not by phone number.

use serde_json::{Value, json};

use super::hmac_b64;
use super::message::{Mentions, RobotMessage};

/// `frequency limited`: past 100 a minute or 5 a second.
const TOO_FAST: i64 = 11232;

pub(super) fn body(
    msg: RobotMessage,
    who: &Mentions,
    secret: Option<&str>,
    now_ms: i64,
) -> Result<Value, String> {
    if !who.mobiles.is_empty() {
        return Err("a Feishu bot mentions by open id, not by mobile number".into());
    }
    let ids: Vec<&str> = who
        .users
        .iter()
        .map(String::as_str)
        .chain(who.all.then_some("all"))
        .collect();
    let mut body = match msg {
        RobotMessage::Text(text) => {
            let tags: String = ids
                .iter()
                .map(|id| format!(" <at user_id=\"{id}\"></at>"))
                .collect();
            json!({ "msg_type": "text", "content": { "text": format!("{text}{tags}") } })
        }
        RobotMessage::Markdown { title, text } => {
            let tags: String = ids.iter().map(|id| format!(" <at id={id}></at>")).collect();
            let mut card = json!({
                "elements": [{ "tag": "markdown", "content": format!("{text}{tags}") }]
            });
            if let Some(t) = title {
                card["header"] = json!({ "title": { "tag": "plain_text", "content": t } });
            }
            json!({ "msg_type": "interactive", "card": card })
        }
        RobotMessage::Native(m) => Value::Object(m),
    };
    if let Some(secret) = secret {
        let ts = (now_ms / 1000).to_string();
        body["timestamp"] = json!(ts);
        body["sign"] = json!(hmac_b64(format!("{ts}\n{secret}").as_bytes(), b""));
    }
    Ok(body)
}

pub(super) fn throttle_ms(code: i64) -> Option<u64> {
    (code == TOO_FAST).then_some(10_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signs_the_body_and_mentions_by_open_id() {
        let who = Mentions::parse("ou_1|@all").unwrap();
        let b = body(
            RobotMessage::Text("hi".into()),
            &who,
            Some("s3"),
            1_700_000_000_999,
        )
        .unwrap();
        assert_eq!(
            b["content"]["text"],
            "hi <at user_id=\"ou_1\"></at> <at user_id=\"all\"></at>"
        );
        assert_eq!(b["timestamp"], "1700000000");
        assert_eq!(b["sign"], hmac_b64(b"1700000000\ns3", b""));
        let b = body(
            RobotMessage::Markdown {
                title: Some("T".into()),
                text: "**x**".into(),
            },
            &Mentions::parse("-").unwrap(),
            None,
            0,
        )
        .unwrap();
        assert_eq!(
            b,
            json!({"msg_type": "interactive", "card": {
                "elements": [{"tag": "markdown", "content": "**x**"}],
                "header": {"title": {"tag": "plain_text", "content": "T"}}}})
        );
        assert!(
            body(
                RobotMessage::Text("x".into()),
                &Mentions::parse("mobile:1").unwrap(),
                None,
                0
            )
            .is_err()
        );
    }
}
