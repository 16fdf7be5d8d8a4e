//! The one way a request's JSON is read: every route with a JSON body, and
//! every NDJSON line of the bulk routes, goes through [`object`].
//!
//! What it holds every body to: the top level is an object; a struct at any
//! depth is an object too, never a positional array ([`ObjectsOnly`]);
//! nothing but JSON whitespace may follow the object; and a refusal names
//! the field at fault by its path (`to.user_id`, `list[2].a`). Strings may
//! be written with any JSON escape (`"\u002b08:00"` is `"+08:00"`): fields
//! that keep text take it owned or as `Cow`, never as a borrowed `&str`,
//! which an escape cannot fill.

mod objects_only;

use std::borrow::Cow;

use serde::Deserialize;

use crate::http::error::{ApiError, from_serde};
pub use objects_only::ObjectsOnly;

/// The JSON whitespace bytes (RFC 8259 §2), which alone may surround a body.
fn is_json_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// A 400 on the body as a whole.
fn body_error(message: impl Into<String>) -> ApiError {
    ApiError::field("body", "malformed_json", message)
}

/// Reads `bytes` as one JSON object into `T`; see the module's rules.
pub fn object<'de, T: Deserialize<'de>>(bytes: &'de [u8]) -> Result<T, ApiError> {
    match bytes.iter().copied().find(|b| !is_json_space(*b)) {
        Some(b'{') => {}
        None => return Err(body_error("empty: expected a JSON object")),
        Some(b'[') => return Err(body_error("expected a JSON object, not an array")),
        Some(_) => return Err(body_error("expected a JSON object")),
    }
    // Tracking the path costs an allocation per field, a sixth of a bulk
    // line's CPU; only a refusal needs it. So a body is read untracked, and
    // read again with the path tracked only when that fails: the same bytes
    // fail the same way, and now the error names the field.
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = match T::deserialize(ObjectsOnly(&mut de)) {
        Ok(value) => value,
        Err(_) => {
            de = serde_json::Deserializer::from_slice(bytes);
            serde_path_to_error::deserialize(ObjectsOnly(&mut de)).map_err(from_serde)?
        }
    };
    de.end().map_err(|e| {
        body_error(format!(
            "more follows the JSON object ({e}); send one object"
        ))
    })?;
    Ok(value)
}

/// Like [`object`], where a body may be left out: an empty (or all
/// whitespace) body is `T::default()`.
pub fn object_or_empty<'de, T: Deserialize<'de> + Default>(
    bytes: &'de [u8],
) -> Result<T, ApiError> {
    if bytes.iter().all(|b| is_json_space(*b)) {
        return Ok(T::default());
    }
    object(bytes)
}

/// For `#[serde(deserialize_with)]` on an `Option<Cow<'de, str>>`: the text
/// borrowed from the body when it has no escape, owned when it has one
/// (serde's own `Cow` is always owned, and a `&str` cannot take an escape).
pub fn opt_cow_str<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Cow<'de, str>>, D::Error> {
    struct Text;
    impl<'de> serde::de::Visitor<'de> for Text {
        type Value = Option<Cow<'de, str>>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a string")
        }
        fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Borrowed(v)))
        }
        fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(v.to_string())))
        }
        fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(v)))
        }
        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_str(self)
        }
    }
    d.deserialize_option(Text)
}

/// Reads an already parsed JSON value into `T` by the same rules (structs
/// are objects), naming the path of a refusal.
pub fn from_value<T: serde::de::DeserializeOwned>(
    v: serde_json::Value,
) -> Result<T, serde_path_to_error::Error<serde_json::Error>> {
    serde_path_to_error::deserialize(ObjectsOnly(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize, Default)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)] // read by `Debug` only
    struct Body<'a> {
        #[serde(default, borrow, deserialize_with = "opt_cow_str")]
        at: Option<Cow<'a, str>>,
        #[serde(default)]
        n: Option<i64>,
        #[serde(default)]
        to: Option<To>,
    }

    #[derive(Debug, Deserialize, Default)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)] // read by `Debug` only
    struct To {
        user_id: String,
    }

    fn refused(text: &str) -> ApiError {
        object::<Body<'_>>(text.as_bytes()).unwrap_err()
    }

    #[test]
    fn an_object_with_escapes_is_read() {
        let b: Body<'_> = object(br#" {"at": "09:00\u002b08:00", "n": 1} "#).unwrap();
        assert_eq!(b.at.as_deref(), Some("09:00+08:00"));
        assert_eq!(b.n, Some(1));
        assert!(matches!(b.at, Some(Cow::Owned(_))));
        // Without an escape the text is borrowed, as before.
        let b: Body<'_> = object(br#"{"at": "x"}"#).unwrap();
        assert!(matches!(b.at, Some(Cow::Borrowed("x"))));
        let b: Body<'_> = object(br#"{"at": null}"#).unwrap();
        assert!(b.at.is_none());
        let e = object::<Body<'_>>(br#"{"at": 5}"#).unwrap_err();
        assert_eq!(e.body.field.as_deref(), Some("at"));
    }

    #[test]
    fn arrays_trailing_bytes_and_non_objects_are_refused() {
        for (text, field) in [
            (r#"[null, 1]"#, "body"),
            (r#""text""#, "body"),
            ("", "body"),
            ("  \n", "body"),
            (r#"{"n": 1} xyz"#, "body"),
            (r#"{"n": 1}{"n": 2}"#, "body"),
            (r#"{"to": ["alice"]}"#, "to"),
            (r#"{"n": "1"}"#, "n"),
            (r#"{"to": {"user_id": 5}}"#, "to.user_id"),
            (r#"{"nope": 1}"#, "nope"),
        ] {
            let e = refused(text);
            assert_eq!(e.body.field.as_deref(), Some(field), "{text}: {e:?}");
            assert_eq!(e.status, axum::http::StatusCode::BAD_REQUEST);
        }
        let e = refused(r#"{"n": 1} xyz"#);
        assert_eq!(e.body.code, "malformed_json");
        assert!(
            e.body.message.contains("more follows"),
            "{}",
            e.body.message
        );
        // Whitespace after the object is fine.
        assert!(object::<Body<'_>>(b"{\"n\": 1}\r\n\t ").is_ok());
    }

    #[test]
    fn an_empty_body_may_be_the_default() {
        let b: Body<'_> = object_or_empty(b" \n").unwrap();
        assert!(b.n.is_none());
        assert!(object_or_empty::<Body<'_>>(b"[]").is_err());
    }
}
