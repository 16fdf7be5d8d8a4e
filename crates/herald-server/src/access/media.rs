//! Which body types a route takes. A browser may send `text/plain`,
//! `application/x-www-form-urlencoded` or `multipart/form-data` to any
//! origin without asking first; no route accepts those, so a web page cannot
//! change state in Herald with a simple request.

use axum::http::{HeaderMap, header};

/// What a route reads from its body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Payload {
    /// `GET`, `DELETE`: no body is read and the type is not looked at.
    None,
    /// A body-less `POST` action (`:cancel`, `:recall`): no content type,
    /// or `application/json` (whose body is ignored).
    Action,
    /// One JSON document.
    Json,
    /// Newline-delimited JSON.
    Ndjson,
    /// Recipients: NDJSON or CSV.
    Recipients,
    /// A provider's callback: XML (WeChat) or JSON (the SMS providers).
    Xml,
}

const JSON: &[&str] = &["application/json"];
const NDJSON: &[&str] = &[
    "application/x-ndjson",
    "application/ndjson",
    "application/jsonl",
];
const RECIPIENTS: &[&str] = &[
    "application/x-ndjson",
    "application/ndjson",
    "application/jsonl",
    "text/csv",
];
const XML: &[&str] = &["text/xml", "application/xml", "application/json"];

impl Payload {
    /// The media types accepted (parameters such as `charset` aside);
    /// empty when any is.
    pub fn accepted(self) -> &'static [&'static str] {
        match self {
            Payload::None => &[],
            Payload::Action | Payload::Json => JSON,
            Payload::Ndjson => NDJSON,
            Payload::Recipients => RECIPIENTS,
            Payload::Xml => XML,
        }
    }

    /// How the 415 names what to send.
    pub fn expected(self) -> &'static str {
        match self {
            Payload::None => "anything",
            Payload::Action => "no body, or application/json",
            Payload::Json => "application/json",
            Payload::Ndjson => "application/x-ndjson",
            Payload::Recipients => "application/x-ndjson or text/csv",
            Payload::Xml => "text/xml or application/json",
        }
    }

    /// Whether a request with these headers may reach the handler. Any
    /// problem is the content type the request sent (`None`: it sent none).
    pub fn check(self, headers: &HeaderMap) -> Result<(), Option<String>> {
        if self == Payload::None {
            return Ok(());
        }
        let Some(raw) = headers.get(header::CONTENT_TYPE) else {
            return if self == Payload::Action {
                Ok(())
            } else {
                Err(None)
            };
        };
        let sent = String::from_utf8_lossy(raw.as_bytes()).into_owned();
        let media = sent
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        if self.accepted().contains(&media.as_str()) {
            Ok(())
        } else {
            Err(Some(sent))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn with(ct: Option<&'static str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(ct) = ct {
            h.insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
        }
        h
    }

    #[test]
    fn each_payload_takes_its_types() {
        let ok = |p: Payload, ct| p.check(&with(ct)).is_ok();
        assert!(ok(Payload::Json, Some("application/json")));
        assert!(ok(Payload::Json, Some("Application/JSON; charset=utf-8")));
        for bad in [
            Some("text/plain"),
            Some("application/x-www-form-urlencoded"),
            Some("multipart/form-data; boundary=x"),
            Some("application/x-ndjson"),
            Some("application/json-seq"),
            None,
        ] {
            assert!(!ok(Payload::Json, bad), "{bad:?}");
        }
        assert!(ok(Payload::Ndjson, Some("application/x-ndjson")));
        assert!(!ok(Payload::Ndjson, Some("application/json")));
        assert!(ok(Payload::Recipients, Some("text/csv; charset=utf-8")));
        assert!(!ok(Payload::Recipients, Some("text/plain")));
        assert!(ok(Payload::Xml, Some("text/xml")));
        assert!(ok(Payload::Xml, Some("application/json")));
        assert!(!ok(Payload::Xml, Some("text/plain")));
        assert!(ok(Payload::Action, None));
        assert!(ok(Payload::Action, Some("application/json")));
        assert!(!ok(Payload::Action, Some("text/plain")));
        assert!(ok(Payload::None, Some("text/plain")));
        assert_eq!(
            Payload::Json.check(&with(Some("text/plain"))),
            Err(Some("text/plain".into()))
        );
        assert_eq!(Payload::Json.check(&with(None)), Err(None));
    }
}
