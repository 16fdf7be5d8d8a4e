//! The one error shape of the API: `{"error": {"code", "message", "field"?}}`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use herald_engine::campaign::CampaignError;
use serde::Serialize;

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    pub code: &'static str,
    pub message: String,
    /// The request field at fault, when one is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    pub body: ErrorBody,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            body: ErrorBody {
                code,
                message: message.into(),
                field: None,
            },
        }
    }

    /// A 400 about one field.
    pub fn field(field: &str, code: &'static str, message: impl Into<String>) -> Self {
        let mut e = Self::new(StatusCode::BAD_REQUEST, code, message);
        e.body.field = Some(field.to_string());
        e
    }

    /// A 422 about one field: well formed, but it names something that
    /// cannot serve (an unknown template, a template lacking a part or a
    /// variable the request needs).
    pub fn unprocessable(field: &str, code: &'static str, message: impl Into<String>) -> Self {
        let mut e = Self::new(StatusCode::UNPROCESSABLE_ENTITY, code, message);
        e.body.field = Some(field.to_string());
        e
    }

    pub fn not_found(what: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("{what} not found"),
        )
    }

    /// A tenant named by a query or header that does not exist: a `404`,
    /// as for any other name that finds nothing, with the field that named it.
    pub fn unknown_tenant(field: &str, name: &str) -> Self {
        let mut e = Self::new(
            StatusCode::NOT_FOUND,
            "unknown_tenant",
            format!("no tenant named {name:?}"),
        );
        e.body.field = Some(field.to_string());
        e
    }

    pub fn too_large(limit: usize) -> Self {
        let mut e = Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            format!("request body is over the limit of {limit} bytes"),
        );
        e.body.field = Some("body".into());
        e
    }

    /// Herald's own fault (a stored row it cannot read back).
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }

    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", message)
    }
}

impl From<herald_engine::EngineError> for ApiError {
    fn from(e: herald_engine::EngineError) -> Self {
        match e {
            herald_engine::EngineError::ShuttingDown => {
                tracing::warn!("request refused: the engine is shutting down");
                ApiError::unavailable("shutting down")
            }
            herald_engine::EngineError::Store(e) => ApiError::from(&*e),
        }
    }
}

/// A store error as the client sees it: what the store refused is the
/// caller's to fix (`4xx`, naming the field); only a store that cannot answer
/// is `503`; a corrupt row or a broken invariant is Herald's fault (`500`).
impl From<herald_store::StoreError> for ApiError {
    fn from(e: herald_store::StoreError) -> Self {
        ApiError::from(&e)
    }
}

impl From<&herald_store::StoreError> for ApiError {
    fn from(e: &herald_store::StoreError) -> Self {
        use herald_store::StoreError as E;
        match e {
            E::NotFound { what } => ApiError::not_found(what),
            E::Conflict { what, why } => {
                let mut e = ApiError::new(StatusCode::CONFLICT, "conflict", why.clone());
                e.body.field = Some(what.clone());
                e
            }
            E::Refused { what, why } => {
                let mut e = ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "refused", why.clone());
                e.body.field = Some(what.clone());
                e
            }
            E::Unavailable { code, message } => {
                tracing::warn!(error = %message, code = ?code, "store unavailable");
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "store_unavailable",
                    "the store is not answering; nothing was written (a write retried \
                     with the same idempotency key is applied at most once)",
                )
            }
            E::Full { message } => {
                tracing::error!(error = %message, "store full");
                ApiError::new(
                    StatusCode::INSUFFICIENT_STORAGE,
                    "insufficient_storage",
                    "the store is out of space; nothing was written",
                )
            }
            e @ (E::UnsupportedUrl(_) | E::Corrupt(_) | E::Internal(_)) => {
                tracing::error!(error = %e, "store failed");
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal",
                    "the store failed; nothing was written",
                )
            }
        }
    }
}

/// For `.map_err(store_err)` where `?` cannot convert on its own.
pub fn store_err(e: herald_store::StoreError) -> ApiError {
    e.into()
}

/// What the campaign service refused, as the client sees it.
impl From<CampaignError> for ApiError {
    fn from(e: CampaignError) -> Self {
        let message = e.to_string();
        match e {
            CampaignError::NotFound { what } => ApiError::not_found(what),
            CampaignError::UnknownAudience { field, .. }
            | CampaignError::AudienceUnusable { field, .. } => {
                ApiError::field(field, "unknown_audience", message)
            }
            CampaignError::AudienceNotReady { field, .. } => {
                ApiError::field(field, "audience_not_ready", message)
            }
            CampaignError::NotRetryable { .. } => {
                ApiError::new(StatusCode::CONFLICT, "not_retryable", message)
            }
            CampaignError::TaskNotPending { .. } => {
                ApiError::new(StatusCode::CONFLICT, "task_not_pending", message)
            }
            CampaignError::AudienceInUse { .. } => {
                ApiError::new(StatusCode::CONFLICT, "audience_in_use", message)
            }
            CampaignError::JobNotFinished { .. } => {
                ApiError::new(StatusCode::CONFLICT, "job_not_finished", message)
            }
            CampaignError::JobNotEnded { .. } => {
                ApiError::new(StatusCode::CONFLICT, "not_resendable", message)
            }
            CampaignError::NobodyUnread { .. } => {
                ApiError::new(StatusCode::CONFLICT, "nobody_unread", message)
            }
            CampaignError::ResendRunning { .. } => {
                ApiError::new(StatusCode::CONFLICT, "resend_running", message)
            }
            CampaignError::TooManyRecipients { .. } => {
                let mut e = ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "too_many_recipients",
                    message,
                );
                e.body.field = Some("body".into());
                e
            }
            CampaignError::Interrupted { why } => {
                tracing::warn!(why, "campaign write interrupted");
                ApiError::unavailable(why)
            }
            CampaignError::Store(e) => ApiError::from(&e),
        }
    }
}

/// Every error: `{"error": {"code", "message", "field"?}}`.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ErrorResponse)]
pub(crate) struct Envelope<'a> {
    error: &'a ErrorBody,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut resp = (self.status, axum::Json(Envelope { error: &self.body })).into_response();
        // A 503 is always worth retrying soon: tell well-behaved clients when.
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            resp.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from_static("1"),
            );
        }
        resp
    }
}

/// Turns a serde error into a field error: the field comes from the path where
/// there is one, or from the message for missing and unknown fields. A path
/// with a part serde could not name (`?`, as in the middle of a broken
/// object) names no field; a JSON syntax error then names the `body`, and
/// its message gives the line and column.
pub fn from_serde(err: serde_path_to_error::Error<serde_json::Error>) -> ApiError {
    let unnamed = err
        .path()
        .iter()
        .any(|s| matches!(s, serde_path_to_error::Segment::Unknown));
    let path = err.path().to_string();
    let inner = err.into_inner();
    let msg = inner.to_string();
    let syntax = inner.is_syntax() || inner.is_eof();
    let named = path != "." && !path.is_empty() && !unnamed;
    let field = if named {
        Some(path)
    } else if syntax {
        Some("body".to_string())
    } else {
        backticked(&msg)
    };
    let code = if syntax {
        "malformed_json"
    } else {
        "invalid_field"
    };
    let mut e = ApiError::new(StatusCode::BAD_REQUEST, code, msg);
    e.body.field = field;
    e
}

/// The first `name` in backticks, as serde quotes field names.
fn backticked(msg: &str) -> Option<String> {
    let start = msg.find('`')? + 1;
    let len = msg[start..].find('`')?;
    Some(msg[start..start + len].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use herald_store::StoreError;

    #[test]
    fn an_unavailable_store_is_503_with_retry_after_and_a_full_one_507() {
        let resp = ApiError::from(StoreError::unavailable("connection reset")).into_response();
        assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(resp.headers()[axum::http::header::RETRY_AFTER], "1");
        let e = ApiError::from(StoreError::Full {
            message: "database or disk is full".into(),
        });
        assert_eq!(e.status, StatusCode::INSUFFICIENT_STORAGE);
        assert_eq!(e.body.code, "insufficient_storage");
        assert!(
            !e.body.message.contains("disk is full"),
            "{}",
            e.body.message
        );
    }
}
