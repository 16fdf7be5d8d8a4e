//! The one check of control characters in request text, so every field of
//! every route refuses them the same way (a `400 invalid_field` naming the
//! field). PostgreSQL cannot store NUL in `text` or `jsonb` at all, and one
//! such value would otherwise fail a whole group-commit batch; other control
//! characters have no business in ids, keys, names or recipients.
//!
//! Kept apart from `validate` and `fields` so both can use it without
//! importing each other.

use crate::http::error::ApiError;

/// What a text field may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Text {
    /// Ids, keys, names, recipients, channels, time zones: no control
    /// character at all (C0, DEL, C1).
    Id,
    /// Human text (titles): tab, line feed and carriage return are allowed,
    /// every other control character is not.
    Free,
}

/// The first control character `s` may not hold as `kind`, with its byte
/// offset.
pub fn forbidden_control(s: &str, kind: Text) -> Option<(usize, char)> {
    s.char_indices()
        .find(|&(_, c)| c.is_control() && !(kind == Text::Free && matches!(c, '\t' | '\n' | '\r')))
}

/// Why `s` cannot be a `kind` text, if it cannot (`"contains a control
/// character U+0000 at byte 3"`).
pub fn control_problem(s: &str, kind: Text) -> Option<String> {
    forbidden_control(s, kind).map(|(at, c)| {
        format!(
            "contains a control character U+{:04X} at byte {at}",
            u32::from(c)
        )
    })
}

/// `Ok` when `s` holds no control character forbidden for `kind`; otherwise
/// a 400 on `field`.
pub fn check_text(field: &str, s: &str, kind: Text) -> Result<(), ApiError> {
    match control_problem(s, kind) {
        None => Ok(()),
        Some(p) => Err(ApiError::field(
            field,
            "invalid_field",
            format!("{field} {p}"),
        )),
    }
}

/// `Ok` when `s` is 1 to `max` characters with no control character: what
/// a parameter documented as `Takes::Printable(max)` takes; otherwise a 400
/// on `field` saying which.
pub fn check_printable(field: &str, s: &str, max: usize) -> Result<(), ApiError> {
    let chars = s.chars().count();
    let problem = if chars == 0 {
        Some("is empty".to_string())
    } else if chars > max {
        Some(format!("is {chars} characters; at most {max}"))
    } else {
        control_problem(s, Text::Id)
    };
    match problem {
        None => Ok(()),
        Some(p) => Err(ApiError::field(
            field,
            "invalid_field",
            format!("{field} {p}"),
        )),
    }
}

/// Like [`check_text`] on an optional field.
pub fn check_opt_text(field: &str, s: Option<&str>, kind: Text) -> Result<(), ApiError> {
    s.map_or(Ok(()), |s| check_text(field, s, kind))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printable_counts_characters_and_refuses_controls() {
        assert!(check_printable("recipient", "alice", 256).is_ok());
        // 256 characters of three bytes each: characters are counted.
        assert!(check_printable("recipient", &"券".repeat(256), 256).is_ok());
        for bad in ["", "a\u{7f}b", "a\u{85}", &"x".repeat(257)] {
            let e = check_printable("recipient", bad, 256).expect_err(bad);
            assert_eq!(e.body.field.as_deref(), Some("recipient"), "{bad:?}");
        }
    }

    #[test]
    fn ids_refuse_every_control_character() {
        for s in [
            "a\0b", "a\tb", "a\nb", "a\rb", "a\u{1f}", "a\u{7f}", "a\u{85}",
        ] {
            let e = check_text("recipient", s, Text::Id).unwrap_err();
            assert_eq!(e.body.field.as_deref(), Some("recipient"), "{s:?}");
            assert_eq!(e.body.code, "invalid_field");
        }
        assert!(check_text("recipient", "alice@example.com", Text::Id).is_ok());
        assert!(check_text("recipient", "名前 ok", Text::Id).is_ok());
    }

    #[test]
    fn free_text_keeps_whitespace_but_not_nul() {
        assert!(check_text("title", "line one\n\tline two\r\n", Text::Free).is_ok());
        let e = check_text("title", "a\0", Text::Free).unwrap_err();
        assert!(
            e.body.message.contains("U+0000 at byte 1"),
            "{}",
            e.body.message
        );
        assert!(check_text("title", "bell\u{7}", Text::Free).is_err());
        assert!(check_text("title", "del\u{7f}", Text::Free).is_err());
    }
}
