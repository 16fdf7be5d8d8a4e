//! W3C trace context (`traceparent`) as Herald accepts it, and the span of
//! a request that creates work (a timer, a job).
//!
//! With span export off (`herald_engine::trace::exporting`), a caller's
//! valid `traceparent` is stored with what it creates and sent on verbatim
//! with its webhook deliveries. With export on, the request's own span (a
//! child of the caller's) is stored instead, so deliveries hang under it.

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use crate::http::error::ApiError;

/// The span of a `POST` that creates work, on the exported target; its
/// parent is set from the caller's `traceparent` by
/// `herald_engine::trace::adopt`. `$route` is the route template.
macro_rules! request_span {
    ($route:literal) => {
        tracing::info_span!(
            target: herald_engine::trace::TARGET,
            parent: None,
            concat!("POST ", $route),
            otel.kind = "server",
            http.request.method = "POST",
            http.route = $route,
            http.response.status_code = tracing::field::Empty,
            herald.timer.id = tracing::field::Empty,
            herald.job.id = tracing::field::Empty,
            herald.channel = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
        )
    };
}
pub(crate) use request_span;

/// The request's W3C `traceparent`, if it has a valid one (lower-cased): a
/// bad one is ignored, not refused (tracing must never cost a timer).
pub fn incoming(headers: &HeaderMap) -> Option<String> {
    let raw = headers.get("traceparent")?.to_str().ok()?.trim();
    valid_traceparent(raw).then(|| raw.to_ascii_lowercase())
}

/// Puts the answer's status on a request span (an error status for a 5xx,
/// as the HTTP conventions ask of a server span).
pub fn record_answer(span: &tracing::Span, answer: &Result<Response, ApiError>) {
    record_status(
        span,
        answer.as_ref().map_or_else(|e| e.status, Response::status),
    );
}

/// Puts an answer's status on a request span.
pub fn record_status(span: &tracing::Span, status: StatusCode) {
    if span.is_disabled() {
        return;
    }
    span.record("http.response.status_code", status.as_u16());
    if status.is_server_error() {
        span.record("otel.status_code", "ERROR");
    }
}

/// Whether `v` is a `traceparent` header value: `version-trace_id-parent_id-flags`
/// in hex, version not `ff`, ids not all zero. Version `00` is exactly 55
/// characters; a later version may append fields after a `-`.
pub fn valid_traceparent(v: &str) -> bool {
    let b = v.as_bytes();
    if b.len() < 55 || (b.len() > 55 && (v.starts_with("00") || b[55] != b'-')) || b.len() > 512 {
        return false;
    }
    let hex = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_hexdigit());
    let zero = |s: &str| s.bytes().all(|c| c == b'0');
    let (version, trace, parent, flags) = (&v[0..2], &v[3..35], &v[36..52], &v[53..55]);
    b[2] == b'-'
        && b[35] == b'-'
        && b[52] == b'-'
        && hex(version)
        && !version.eq_ignore_ascii_case("ff")
        && hex(trace)
        && !zero(trace)
        && hex(parent)
        && !zero(parent)
        && hex(flags)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_well_formed_trace_contexts_pass() {
        let good = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        assert!(valid_traceparent(good));
        assert!(valid_traceparent(
            "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra"
        ));
        for bad in [
            "",
            "garbage",
            "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-x",
            "00-0af7651916cd43dd8448eb211c80319g-b7ad6b7169203331-01",
            "00_0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        ] {
            assert!(!valid_traceparent(bad), "{bad:?}");
        }
    }
}
