//! The error and the small field checks both message checkers use: the
//! per-kind shapes ([`crate::shape`]) and the mini-program's keyword rules
//! ([`crate::subscribe_rules`]), which `shape` calls and so cannot import
//! from.

use serde_json::{Map, Value};

/// Why a message cannot go out on a kind of channel: the field (dotted,
/// relative to the message) and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ShapeError {
    pub field: String,
    pub message: String,
}

pub(crate) fn err(field: impl Into<String>, message: impl Into<String>) -> ShapeError {
    ShapeError {
        field: field.into(),
        message: message.into(),
    }
}

/// `key` holds a string with something other than whitespace in it.
pub(crate) fn nonempty_string(m: &Map<String, Value>, key: &str) -> bool {
    matches!(m.get(key), Some(Value::String(s)) if !s.trim().is_empty())
}

/// `key` is absent or a string; `field` names it in the error.
pub(crate) fn optional_string(
    m: &Map<String, Value>,
    key: &str,
    field: &str,
) -> Result<(), ShapeError> {
    match m.get(key) {
        None | Some(Value::String(_)) => Ok(()),
        Some(_) => Err(err(field, format!("{field} must be a string"))),
    }
}
