//! A DingTalk custom robot (`POST /robot/send?access_token=`; reference §5.2).
//!
//! With signing on, the URL also carries `timestamp` (unix ms, within an
//! hour of DingTalk's clock) and `sign`: `base64(HMAC-SHA256(key = secret,
//! message = timestamp + "\n" + secret))`, percent-encoded. Mentions go in
//! `at` (`atUserIds`, `atMobiles`, `isAtAll`) and, so the group sees them,
//! as `@id` in the text.

use serde_json::{Value, json};

use super::hmac_b64;
use super::message::{Mentions, RobotMessage};

/// `send too fast, exceed 20 times per minute`: DingTalk then refuses the
/// robot for 10 minutes.
const TOO_FAST: i64 = 130101;

/// `url` with `timestamp` and `sign` added when the robot has a secret.
pub(super) fn signed_url(url: String, secret: Option<&str>, now_ms: i64) -> String {
    let Some(secret) = secret else {
        return url;
    };
    let sign = hmac_b64(secret.as_bytes(), format!("{now_ms}\n{secret}").as_bytes());
    let sign: String = reqwest::Url::parse_with_params("x:", [("sign", sign.as_str())])
        .ok()
        .and_then(|u| u.query().map(str::to_string))
        .unwrap_or_default();
    format!("{url}&timestamp={now_ms}&{sign}")
}

pub(super) fn body(msg: RobotMessage, who: &Mentions) -> Value {
    let suffix: String = who
        .users
        .iter()
        .chain(&who.mobiles)
        .map(|id| format!(" @{id}"))
        .collect();
    let at = json!({ "atUserIds": who.users, "atMobiles": who.mobiles, "isAtAll": who.all });
    match msg {
        RobotMessage::Text(content) => json!({
            "msgtype": "text",
            "text": { "content": format!("{content}{suffix}") },
            "at": at,
        }),
        RobotMessage::Markdown { title, text } => {
            let title = title.unwrap_or_else(|| first_line(&text));
            json!({
                "msgtype": "markdown",
                "markdown": { "title": title, "text": format!("{text}{suffix}") },
                "at": at,
            })
        }
        RobotMessage::Native(m) => Value::Object(m),
    }
}

/// A Markdown message's title when none is given (DingTalk requires one: the
/// chat list shows it): its first line that has words, without heading marks.
fn first_line(text: &str) -> String {
    let line = text
        .lines()
        .map(|l| l.trim().trim_start_matches('#').trim())
        .find(|l| !l.is_empty())
        .unwrap_or("Herald");
    line.chars().take(64).collect()
}

pub(super) fn throttle_ms(code: i64) -> Option<u64> {
    (code == TOO_FAST).then_some(600_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signs_the_url_and_mentions_in_at_and_text() {
        let url = signed_url(
            "https://x/robot/send?access_token=T".into(),
            Some("SECk"),
            1_700_000_000_000,
        );
        let expected = hmac_b64(b"SECk", b"1700000000000\nSECk");
        let u = reqwest::Url::parse(&url).unwrap();
        let sign = u
            .query_pairs()
            .find(|(k, _)| k == "sign")
            .unwrap()
            .1
            .into_owned();
        assert_eq!(sign, expected);
        assert!(url.contains("&timestamp=1700000000000&sign="));
        // Base64's `+`, `/` and `=` are percent-encoded in the query.
        let raw = url.split("sign=").nth(1).unwrap();
        assert!(!raw.contains(['+', '/', '=']), "{raw}");
        assert_eq!(signed_url("u".into(), None, 1), "u");

        let who = Mentions::parse("u1|mobile:138").unwrap();
        let b = body(RobotMessage::Text("hi".into()), &who);
        assert_eq!(b["text"]["content"], "hi @u1 @138");
        assert_eq!(
            b["at"],
            json!({"atUserIds": ["u1"], "atMobiles": ["138"], "isAtAll": false})
        );
        let b = body(
            RobotMessage::Markdown {
                title: None,
                text: "\n## Coupon opens\nat 10:00".into(),
            },
            &Mentions::parse("@all").unwrap(),
        );
        assert_eq!(b["markdown"]["title"], "Coupon opens");
        assert_eq!(b["at"]["isAtAll"], true);
    }
}
