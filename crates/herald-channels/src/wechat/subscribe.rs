//! Mini-program subscribe messages (`subscribeMessage.send`): the body and
//! what the answer means where it differs from a template message.
//!
//! | errcode | outcome |
//! |---|---|
//! | 0 | delivered (WeChat gives no msgid) |
//! | 43101 | permanent, and [`is_no_grant`]: the user has no grant left |
//! | 47003, 40003, 40037, 41030 | permanent (the errmsg names the field) |
//!
//! Token codes, `-1` and the quota codes behave as for template messages.
//! The API has no idempotency key, so the channel skips in-doubt sends by
//! default (`ChannelKind::default_in_doubt`).

use serde_json::{Map, Value};

use crate::{Delivery, SendOutcome};

/// The send endpoint.
pub(super) const SEND_PATH: &str = "/cgi-bin/message/subscribe/send";
/// "The user refused, unsubscribed, or has no one-time grant left."
pub const NO_GRANT: i64 = 43101;

/// The send body: the message with `touser`, and the channel's
/// `miniprogram_state` and `lang` where the message gives none. The value
/// rules are checked first, so a value WeChat would refuse with `47003`
/// fails here with the field named.
pub(super) fn body(d: &Delivery, state: Option<&str>, lang: Option<&str>) -> Result<Value, String> {
    let mut msg: Map<String, Value> = match serde_json::from_str(&d.message) {
        Ok(Value::Object(m)) => m,
        Ok(_) => return Err("the wechat_mini message must be a JSON object".into()),
        Err(e) => return Err(format!("the wechat_mini message is not JSON: {e}")),
    };
    crate::subscribe_rules::message(&msg).map_err(|e| e.message)?;
    if d.recipient.trim().is_empty() {
        return Err("the recipient (an openid) is empty".into());
    }
    msg.insert("touser".into(), Value::String(d.recipient.clone()));
    if let Some(s) = state {
        msg.entry("miniprogram_state")
            .or_insert_with(|| Value::String(s.to_string()));
    }
    if let Some(l) = lang {
        msg.entry("lang")
            .or_insert_with(|| Value::String(l.to_string()));
    }
    Ok(Value::Object(msg))
}

/// Whether the outcome is WeChat's `43101`.
pub(super) fn is_no_grant(o: &SendOutcome) -> bool {
    matches!(
        o,
        SendOutcome::Permanent {
            status: Some(NO_GRANT),
            ..
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delivery(message: &str) -> Delivery {
        Delivery {
            timer_id: 1,
            kind: herald_core::TimerKind::Reminder,
            due_at: 0,
            fired_at: 0,
            attempt: 1,
            recipient: "oMINI".into(),
            message: message.into(),
            idempotency_key: "k1".into(),
            traceparent: None,
        }
    }

    #[test]
    fn body_adds_touser_and_channel_defaults() {
        let b = body(
            &delivery(r#"{"template_id":"T","data":{"thing1":{"value":"券"}},"lang":"en_US"}"#),
            Some("trial"),
            Some("zh_CN"),
        )
        .unwrap();
        assert_eq!(b["touser"], "oMINI");
        assert_eq!(b["miniprogram_state"], "trial");
        assert_eq!(b["lang"], "en_US");
        assert!(b.get("client_msg_id").is_none());
        let e = body(
            &delivery(r#"{"template_id":"T","data":{"time1":{"value":"soon"}}}"#),
            None,
            None,
        )
        .unwrap_err();
        assert!(e.contains("data.time1"), "{e}");
    }
}
