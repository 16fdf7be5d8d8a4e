//! Checks of request fields that several endpoints share (recipients,
//! messages, priorities, channels), so each field is refused the same way
//! wherever it appears.

use herald_core::timer::{DEFAULT_PRIORITY, MAX_PRIORITY};
use serde_json::value::RawValue;

use crate::http::document;
use crate::http::error::ApiError;
use crate::http::text::{Text, control_problem};

/// Longest recipient id of an audience, a rule or a job, in bytes.
pub const MAX_RECIPIENT_BYTES: usize = 256;
/// Largest message object of a rule or a job, in bytes.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024;
/// Longest a job may send (its own, or one a rule starts): 30 days.
pub const MAX_DEADLINE_SECS: i64 = 30 * 24 * 3600;

/// Longest user or subject id.
pub const MAX_ID_BYTES: usize = 128;

/// User and subject ids appear in paths: 1..=128 of `A-Z a-z 0-9 _ - . : @`.
pub fn check_id(field: &str, id: &str) -> Result<(), ApiError> {
    check_word(field, id, MAX_ID_BYTES, "_-.:@")
}

/// A word that reads the same in a path, a query and a log line: 1..=`max`
/// of ASCII letters, digits and the characters of `punctuation`.
pub fn check_word(field: &str, s: &str, max: usize, punctuation: &str) -> Result<(), ApiError> {
    let ok = !s.is_empty()
        && s.len() <= max
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || punctuation.as_bytes().contains(&b));
    if ok {
        return Ok(());
    }
    let extra: Vec<String> = punctuation.chars().map(String::from).collect();
    Err(ApiError::field(
        field,
        "invalid_field",
        format!(
            "{field} must be 1..={max} characters of A-Z a-z 0-9 {}",
            extra.join(" ")
        ),
    ))
}

/// Why a recipient id is not acceptable, if it is not.
pub fn recipient_problem(r: &str) -> Option<String> {
    if r.is_empty() {
        return Some("recipient is empty".into());
    }
    if r.len() > MAX_RECIPIENT_BYTES {
        return Some(format!(
            "recipient is {} bytes; at most {MAX_RECIPIENT_BYTES}",
            r.len()
        ));
    }
    control_problem(r, Text::Id).map(|p| format!("recipient {p}"))
}

/// A list of recipient ids given inline: at most `max`, each valid.
pub fn check_users(field: &str, users: &[String], max: usize) -> Result<(), ApiError> {
    if users.len() > max {
        return Err(ApiError::field(
            field,
            "too_many_users",
            format!(
                "{} users; at most {max} inline (upload a larger list to /v1/audiences)",
                users.len()
            ),
        ));
    }
    for (i, u) in users.iter().enumerate() {
        if let Some(p) = recipient_problem(u) {
            return Err(ApiError::field(
                &format!("{field}[{i}]"),
                "invalid_field",
                p,
            ));
        }
    }
    Ok(())
}

/// A rule's or a job's message (or other object) at `field`: a JSON object
/// of at most [`MAX_MESSAGE_BYTES`] that keeps the rules of a stored document.
pub fn check_message_at(field: &str, m: &RawValue) -> Result<(), ApiError> {
    if m.get().len() > MAX_MESSAGE_BYTES {
        return Err(ApiError::field(
            field,
            "invalid_field",
            format!(
                "{field} is {} bytes; at most {MAX_MESSAGE_BYTES}",
                m.get().len()
            ),
        ));
    }
    check_stored_object(field, m)
}

/// A JSON object that is stored and delivered later (a message, a
/// subject's data): see [`document`] for what it may not hold.
pub fn check_stored_object(field: &str, m: &RawValue) -> Result<(), ApiError> {
    if !m.get().trim_start().starts_with('{') {
        return Err(ApiError::field(
            field,
            "invalid_field",
            format!("{field} must be a JSON object"),
        ));
    }
    document::check(field, m.get())
}

/// `priority`, `0..=MAX_PRIORITY`; the default when absent.
pub fn check_priority(p: Option<i64>) -> Result<u8, ApiError> {
    match p {
        None => Ok(DEFAULT_PRIORITY),
        Some(p) if (0..=i64::from(MAX_PRIORITY)).contains(&p) => Ok(p as u8),
        Some(_) => Err(ApiError::field(
            "priority",
            "invalid_field",
            format!("priority must be 0..={MAX_PRIORITY}"),
        )),
    }
}

/// A campaign (a job or a rule) on a mini-program channel: refused, since
/// each subscribe message spends a grant of one user's and the campaign
/// path keeps no ledger (see docs/channels.md, "Subscribe grants").
pub fn no_campaign_on_grants(kind: Option<herald_channels::ChannelKind>) -> Result<(), ApiError> {
    if kind == Some(herald_channels::ChannelKind::WechatMini) {
        return Err(ApiError::unprocessable(
            "channel",
            "grant_channel",
            "a wechat_mini channel sends subscribe messages one grant at a time: \
             send them as reminders or timers to users of the directory, not as a job or rule",
        ));
    }
    Ok(())
}

/// A channel name that is not configured, listing those that are.
pub fn unknown_channel(field: &str, name: &str, configured: &[String]) -> ApiError {
    ApiError::field(
        field,
        "unknown_channel",
        format!("no channel named {name:?}; configured: {configured:?}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recipients() {
        assert_eq!(recipient_problem("alice"), None);
        assert_eq!(recipient_problem("").as_deref(), Some("recipient is empty"));
        assert!(recipient_problem(&"x".repeat(MAX_RECIPIENT_BYTES)).is_none());
        assert!(
            recipient_problem(&"x".repeat(MAX_RECIPIENT_BYTES + 1))
                .is_some_and(|p| p.contains("257 bytes"))
        );
        assert!(recipient_problem("a\nb").is_some_and(|p| p.contains("control")));
    }

    #[test]
    fn inline_users_name_the_bad_entry() {
        let users = vec!["a".to_string(), String::new()];
        let e = check_users("users", &users, 10).unwrap_err();
        assert_eq!(e.body.field.as_deref(), Some("users[1]"));
        let e = check_users("audience.users", &users, 1).unwrap_err();
        assert_eq!(
            (e.body.field.as_deref(), e.body.code),
            (Some("audience.users"), "too_many_users")
        );
    }

    #[test]
    fn messages_and_priorities() {
        let obj = RawValue::from_string("{\"a\":1}".into()).unwrap();
        assert!(check_message_at("message", &obj).is_ok());
        let text = RawValue::from_string("\"hi\"".into()).unwrap();
        assert_eq!(
            check_message_at("message", &text)
                .unwrap_err()
                .body
                .field
                .as_deref(),
            Some("message")
        );
        assert_eq!(check_priority(None).unwrap(), DEFAULT_PRIORITY);
        assert_eq!(check_priority(Some(9)).unwrap(), 9);
        assert!(check_priority(Some(10)).is_err());
        assert!(check_priority(Some(-1)).is_err());
    }
}
