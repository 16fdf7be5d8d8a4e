//! The answers no handler gives: the fallbacks for an unknown path or
//! method, the framework's own rejections rewritten into the API's error
//! shape, and a handler's panic. Plumbing every route shares, kept apart
//! from the operational endpoints.

use std::any::Any;

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::http::error::ApiError;

pub async fn not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such endpoint")
}

pub async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "method not allowed here",
    )
}

/// Rewrites an error answer that is not JSON (the framework's own
/// rejections: a path segment that is not UTF-8, a query or body its
/// extractor refuses, a body over a `DefaultBodyLimit`) into the API's error
/// shape, so every `4xx`/`5xx` a client sees carries `error.code`. Our own
/// errors are JSON already and pass through untouched.
pub async fn json_errors(resp: Response) -> Response {
    let status = resp.status();
    if !(status.is_client_error() || status.is_server_error()) || is_json(resp.headers()) {
        return resp;
    }
    let (parts, body) = resp.into_parts();
    // Rejection texts are short; more than this is not worth keeping.
    let text = match axum::body::to_bytes(body, 1024).await {
        Ok(b) => String::from_utf8_lossy(&b).trim().to_string(),
        Err(_) => String::new(),
    };
    let (code, field, fallback) = rejection_code(status, &text);
    let message = if text.is_empty() {
        fallback.to_string()
    } else {
        text
    };
    tracing::debug!(status = status.as_u16(), code, %message, "framework rejection rewritten as JSON");
    let mut out = ApiError::new(status, code, message);
    out.body.field = field.map(String::from);
    let mut rewritten = out.into_response();
    // Keep what the original answer said besides its body (`Allow`, `Retry-After`, ...).
    for (name, value) in &parts.headers {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            rewritten.headers_mut().insert(name.clone(), value.clone());
        }
    }
    rewritten
}

fn is_json(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/json"))
}

/// The code (and field) of a rejection, from its status and axum's text,
/// and a message for when the text is empty.
fn rejection_code(
    status: StatusCode,
    text: &str,
) -> (&'static str, Option<&'static str>, &'static str) {
    let starts = |p: &str| text.starts_with(p);
    match status {
        StatusCode::BAD_REQUEST if starts("Failed to deserialize query string") => {
            ("invalid_query", Some("query"), "bad query string")
        }
        StatusCode::BAD_REQUEST if starts("Invalid URL") => {
            ("invalid_path", Some("path"), "bad path parameter")
        }
        StatusCode::BAD_REQUEST if starts("Failed to parse the request body as JSON") => {
            ("malformed_json", Some("body"), "the body is not JSON")
        }
        StatusCode::BAD_REQUEST => ("bad_request", None, "the request could not be read"),
        StatusCode::NOT_FOUND => ("not_found", None, "no such endpoint"),
        StatusCode::METHOD_NOT_ALLOWED => ("method_not_allowed", None, "method not allowed here"),
        StatusCode::REQUEST_TIMEOUT => (
            "request_timeout",
            None,
            "the request took too long to arrive",
        ),
        StatusCode::PAYLOAD_TOO_LARGE => (
            "payload_too_large",
            Some("body"),
            "the request body is too large",
        ),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => (
            "unsupported_media_type",
            Some("content-type"),
            "the content type is not accepted here",
        ),
        StatusCode::UNPROCESSABLE_ENTITY => {
            ("invalid_field", Some("body"), "the body could not be used")
        }
        StatusCode::SERVICE_UNAVAILABLE => ("unavailable", None, "try again later"),
        s if s.is_server_error() => ("internal", None, "internal error"),
        _ => ("bad_request", None, "the request was refused"),
    }
}

/// A panic in a handler is a bug; answer 500 in the API's error shape.
pub fn panic_response(err: Box<dyn Any + Send + 'static>) -> Response {
    let detail = err
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| err.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    tracing::error!(panic = %detail, "handler panicked");
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal",
        "internal error",
    )
    .into_response()
}
