//! The answers access control gives, in the API's error shape.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// `401 unauthorized` with `WWW-Authenticate: Bearer` (RFC 6750): no key,
/// or one that does not open anything. `presented` says a key was sent, so
/// the challenge names `invalid_token`.
pub fn unauthorized(message: &str, presented: bool) -> Response {
    let challenge = if presented {
        "Bearer realm=\"herald\", error=\"invalid_token\""
    } else {
        "Bearer realm=\"herald\""
    };
    let mut resp = ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", message).into_response();
    resp.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static(challenge),
    );
    resp
}

/// Why the guard turned a request away.
pub enum Refusal {
    /// `401`, with the challenge.
    Unauthorized {
        message: &'static str,
        presented: bool,
    },
    Error(ApiError),
}

impl From<ApiError> for Refusal {
    fn from(e: ApiError) -> Self {
        Refusal::Error(e)
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        match self {
            Refusal::Unauthorized { message, presented } => unauthorized(message, presented),
            Refusal::Error(e) => e.into_response(),
        }
    }
}

/// `403 forbidden`: the caller is known but may not do this.
pub fn forbidden(message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::FORBIDDEN, "forbidden", message)
}

/// `421 misdirected_request`: open mode answers loopback names only.
pub fn misdirected(host: &str) -> ApiError {
    ApiError::new(
        StatusCode::MISDIRECTED_REQUEST,
        "misdirected_request",
        format!(
            "this node has no admin key and only answers requests addressed to localhost; \
             Host {host:?} is not a loopback name (list it in [auth] allowed_hosts, or set an \
             admin key)"
        ),
    )
}

/// `415 unsupported_media_type` naming what the route takes.
pub fn unsupported_media_type(sent: Option<&str>, expected: &str) -> ApiError {
    let message = match sent {
        Some(ct) => format!("content-type {ct:?} is not accepted here; send {expected}"),
        None => format!("this route needs a body with content-type {expected}"),
    };
    let mut e = ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
        message,
    );
    e.body.field = Some("content-type".into());
    e
}
