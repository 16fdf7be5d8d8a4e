//! The rules every stored JSON document keeps: a timer's `message`, a rule's
//! or a job's, a subject's `data`, a subscriber's profile. Each is stored as
//! the caller wrote it and parsed again when it is delivered (into a webhook
//! payload, a merged reminder, a digest, a provider's call), so what the
//! store takes must parse there too. What would not is refused here, with
//! the path of the value at fault:
//!
//! * nesting deeper than [`MAX_DEPTH`] objects and arrays (parsers, serde_json's
//!   among them, stop at 128 levels, and a delivery wraps the document in a
//!   few levels of its own);
//! * a NUL (`\u0000`), which PostgreSQL cannot store in `text` or `jsonb`;
//! * a lone UTF-16 surrogate (`"\ud83d"`, what JavaScript writes when it cuts
//!   a string inside an emoji): no character, so no UTF-8 text can hold it.
//!
//! The request's one parse has already checked the JSON grammar (as a
//! `RawValue`, without building values); this is one pass over the
//! document's bytes that builds nothing. Naming the path is left to the rare
//! refusal, which walks the document again.

use crate::http::error::ApiError;

/// Deepest nesting of objects and arrays a stored document may have: the
/// top-level object is level 1.
pub const MAX_DEPTH: usize = 64;

/// What is wrong with a document, and at which byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Problem {
    /// An object or array opened at this byte is one level too deep.
    TooDeep(usize),
    /// A `\u0000` escape starts at this byte.
    Nul(usize),
    /// A `\uXXXX` escape of a surrogate with no partner starts at this byte.
    LoneSurrogate(usize, u16),
}

/// `Ok` when `raw` (valid JSON text) keeps the rules above; otherwise a 400
/// naming the path under `field` (`message.a.b[1]`; with an empty `field`,
/// the path from the document's top).
pub fn check(field: &str, raw: &str) -> Result<(), ApiError> {
    match scan(raw.as_bytes()) {
        None => Ok(()),
        Some(p) => Err(refusal(field, raw.as_bytes(), p)),
    }
}

/// The value of the four hex digits at `at`, if there are four.
fn hex4(bytes: &[u8], at: usize) -> Option<u16> {
    let digits = bytes.get(at..at + 4)?;
    let text = std::str::from_utf8(digits).ok()?;
    u16::from_str_radix(text, 16).ok()
}

fn is_high(u: u16) -> bool {
    (0xD800..=0xDBFF).contains(&u)
}

fn is_low(u: u16) -> bool {
    (0xDC00..=0xDFFF).contains(&u)
}

/// The first problem of `bytes`, in one pass.
fn scan(bytes: &[u8]) -> Option<Problem> {
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' | b'[' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Some(Problem::TooDeep(i));
                }
                i += 1;
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            b'"' => match scan_string(bytes, i + 1) {
                Ok(next) => i = next,
                Err(p) => return Some(p),
            },
            _ => i += 1,
        }
    }
    None
}

/// Reads the string whose text starts at `i` (after its quote): the index
/// after its closing quote, or the problem found in it.
fn scan_string(bytes: &[u8], mut i: usize) -> Result<usize, Problem> {
    while i < bytes.len() {
        match bytes[i] {
            b'"' => return Ok(i + 1),
            b'\\' if bytes.get(i + 1) == Some(&b'u') => {
                let Some(u) = hex4(bytes, i + 2) else {
                    // Not valid JSON: the parse before us would have said so.
                    return Ok(bytes.len());
                };
                if u == 0 {
                    return Err(Problem::Nul(i));
                }
                if is_low(u) {
                    return Err(Problem::LoneSurrogate(i, u));
                }
                if is_high(u) {
                    let pair = bytes.get(i + 6..i + 8) == Some(b"\\u")
                        && hex4(bytes, i + 8).is_some_and(is_low);
                    if !pair {
                        return Err(Problem::LoneSurrogate(i, u));
                    }
                    i += 12;
                } else {
                    i += 6;
                }
            }
            // Any other escape is two bytes.
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
    Ok(i)
}

/// The refusal of `p`, with the path of the value at its byte.
#[cold]
fn refusal(field: &str, bytes: &[u8], p: Problem) -> ApiError {
    let (at, what) = match p {
        Problem::TooDeep(at) => (
            at,
            format!("nests deeper than {MAX_DEPTH} levels of objects and arrays"),
        ),
        Problem::Nul(at) => (at, "contains a NUL character (U+0000)".to_string()),
        Problem::LoneSurrogate(at, u) => (
            at,
            format!(
                "holds a lone UTF-16 surrogate \\u{u:04x}, half of a character: send the \
                 whole character (both halves) or neither"
            ),
        ),
    };
    let path = path_at(field, bytes, at);
    let shown = if path.is_empty() {
        "the document"
    } else {
        &path
    };
    let mut e = ApiError::field(&path, "invalid_field", format!("{shown} {what}"));
    if path.is_empty() {
        e.body.field = None;
    }
    e
}

/// One open container on the way to a byte.
enum Frame {
    /// An object, with the key of the member being read (`None` between
    /// members).
    Object(Option<String>),
    Array(usize),
}

/// The path, under `field`, of the value at byte `target` of `bytes`: the
/// member or element that holds it (for a key, the object that holds it).
fn path_at(field: &str, bytes: &[u8], target: usize) -> String {
    let mut stack: Vec<Frame> = Vec::new();
    let mut i = 0;
    while i < bytes.len() && i < target {
        match bytes[i] {
            b'{' => stack.push(Frame::Object(None)),
            b'[' => stack.push(Frame::Array(0)),
            b'}' | b']' => {
                stack.pop();
            }
            b',' => match stack.last_mut() {
                Some(Frame::Array(n)) => *n += 1,
                Some(Frame::Object(key)) => *key = None,
                None => {}
            },
            b'"' => {
                let end = scan_string(bytes, i + 1).unwrap_or(bytes.len());
                if let Some(Frame::Object(key @ None)) = stack.last_mut() {
                    if end > target {
                        // The target is inside this key: name the object.
                        break;
                    }
                    let text = bytes.get(i..end).unwrap_or_default();
                    *key = Some(
                        serde_json::from_slice::<String>(text)
                            .unwrap_or_else(|_| String::from_utf8_lossy(text).into_owned()),
                    );
                }
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    let mut path = field.to_string();
    for frame in &stack {
        match frame {
            Frame::Object(Some(key)) => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
            }
            Frame::Object(None) => {}
            Frame::Array(n) => path.push_str(&format!("[{n}]")),
        }
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_of(raw: &str) -> Option<String> {
        check("message", raw).unwrap_err().body.field
    }

    #[test]
    fn plain_documents_pass() {
        for ok in [
            r#"{}"#,
            r#"{"a":"x\ny\u0001","b":[1,{"c":"\\u0000"}]}"#,
            r#"{"emoji":"\ud83d\ude00","bmp":"\u00e9\u4e2d","brackets":"{[[{"}"#,
            r#"{"q":"a \" [ { \\"}"#,
        ] {
            assert!(check("message", ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn a_nul_is_found_and_named() {
        assert_eq!(
            field_of(r#"{"a":{"b":["ok","x\u0000"]}}"#).as_deref(),
            Some("message.a.b[1]")
        );
        // In a key: the object holding it.
        assert_eq!(
            field_of(r#"{"o":{"k\u0000":1}}"#).as_deref(),
            Some("message.o")
        );
        let e = check("", r#"{"addresses":{"webhook":{"x":"\u0000"}}}"#).unwrap_err();
        assert_eq!(e.body.field.as_deref(), Some("addresses.webhook.x"));
        assert!(e.body.message.contains("NUL"), "{}", e.body.message);
    }

    #[test]
    fn lone_surrogates_are_refused() {
        for (raw, at) in [
            (r#"{"t":"cut \ud83d"}"#, "message.t"),
            (r#"{"t":["ok","\ude00 alone"]}"#, "message.t[1]"),
            (r#"{"t":"\ud83d\u0041"}"#, "message.t"),
            (r#"{"t":"\ud83d\ud83d\ude00"}"#, "message.t"),
        ] {
            let e = check("message", raw).unwrap_err();
            assert_eq!(e.body.field.as_deref(), Some(at), "{raw}");
            assert!(e.body.message.contains("surrogate"), "{}", e.body.message);
        }
    }

    #[test]
    fn nesting_stops_at_the_limit_and_a_nul_below_it_is_found() {
        let nest = |n: usize, inner: &str| {
            let mut s = String::new();
            for _ in 0..n - 1 {
                s.push_str("{\"a\":");
            }
            s.push_str(&format!("{{\"z\":{inner}}}"));
            for _ in 0..n - 1 {
                s.push('}');
            }
            s
        };
        assert!(check("data", &nest(MAX_DEPTH, "1")).is_ok());
        let e = check("data", &nest(MAX_DEPTH + 1, "1")).unwrap_err();
        assert!(
            e.body.message.contains("deeper than 64"),
            "{}",
            e.body.message
        );
        let deep = format!("data{}", ".a".repeat(MAX_DEPTH));
        assert_eq!(e.body.field.as_deref(), Some(deep.as_str()));
        // Arrays count as levels too.
        let arrays = format!(
            "{}1{}",
            "[".repeat(MAX_DEPTH + 1),
            "]".repeat(MAX_DEPTH + 1)
        );
        assert!(check("data", &arrays).is_err());
        // A NUL at the deepest allowed level is still found.
        let e = check("data", &nest(MAX_DEPTH, r#""\u0000""#)).unwrap_err();
        assert!(e.body.message.contains("NUL"), "{}", e.body.message);
        assert!(e.body.field.unwrap().ends_with(".a.z"));
    }
}
