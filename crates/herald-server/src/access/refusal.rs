//! The answers access control gives, in the API's error shape.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::caller::Caller;
use crate::http::error::ApiError;

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

/// Why a request was refused before any key was recognised. Anyone can
/// make such refusals, as fast as they can send, so they are counted (a
/// metric by reason, and one audit entry per reason, route and status a
/// minute) rather than recorded one by one: see `crate::audit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Unrecognised {
    /// No `Authorization` header and no session cookie.
    NoKey,
    /// An `Authorization` header that does not read `Bearer <key>`.
    MalformedAuthorization,
    /// A bearer token that is no valid key: unknown, revoked, expired, or
    /// not shaped like one.
    InvalidKey,
    /// A session cookie that is malformed, forged, expired or of a revoked
    /// key.
    InvalidSession,
    /// Open mode, a `Host` that is not loopback (`421`).
    MisdirectedHost,
    /// A state change from a web page of another origin.
    CrossOrigin,
    /// A console login with a key that opens nothing.
    LoginFailed,
    /// Refused by a route served without a key (a provider callback whose
    /// signature does not check out).
    PublicRoute,
}

impl Unrecognised {
    /// Every reason, for describing the metric.
    pub const ALL: [Unrecognised; 8] = [
        Unrecognised::NoKey,
        Unrecognised::MalformedAuthorization,
        Unrecognised::InvalidKey,
        Unrecognised::InvalidSession,
        Unrecognised::MisdirectedHost,
        Unrecognised::CrossOrigin,
        Unrecognised::LoginFailed,
        Unrecognised::PublicRoute,
    ];

    /// The reason as metrics and the audit log name it.
    pub fn label(self) -> &'static str {
        match self {
            Unrecognised::NoKey => "no_key",
            Unrecognised::MalformedAuthorization => "malformed_authorization",
            Unrecognised::InvalidKey => "invalid_key",
            Unrecognised::InvalidSession => "invalid_session",
            Unrecognised::MisdirectedHost => "misdirected_host",
            Unrecognised::CrossOrigin => "cross_origin",
            Unrecognised::LoginFailed => "login_failed",
            Unrecognised::PublicRoute => "public_route",
        }
    }
}

/// Why the guard turned a request away. Its response carries the
/// [`Unrecognised`] reason, or the [`Caller`] that was refused, as an
/// extension for the audit layer.
pub enum Refusal {
    /// `401`, with the challenge.
    Unauthorized {
        message: &'static str,
        reason: Unrecognised,
    },
    /// Another refusal before any key was recognised.
    Unrecognised(ApiError, Unrecognised),
    /// A refusal of a recognised caller (a session without its CSRF token).
    Known(ApiError, Box<Caller>),
    /// Neither (the keys could not be read).
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
            Refusal::Unauthorized { message, reason } => {
                let mut resp = unauthorized(message, reason != Unrecognised::NoKey);
                resp.extensions_mut().insert(reason);
                resp
            }
            Refusal::Unrecognised(e, reason) => {
                let mut resp = e.into_response();
                resp.extensions_mut().insert(reason);
                resp
            }
            Refusal::Known(e, caller) => {
                let mut resp = e.into_response();
                resp.extensions_mut().insert(*caller);
                resp
            }
            Refusal::Error(e) => e.into_response(),
        }
    }
}

/// `403 cross_origin`: a state change sent by a page of another origin.
pub fn cross_origin() -> ApiError {
    ApiError::new(
        StatusCode::FORBIDDEN,
        "cross_origin",
        "a request from a web page of another origin may not change state",
    )
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
