//! The body layer of each route that reads a body, after the access checks
//! (so a caller without a key, or without the route's scope, never holds
//! any of the budget): a declared `Content-Length` over the route's limit
//! is `413` before a byte is read; a body read whole is charged to the
//! node's budget as its bytes arrive, to its caller's account (a key, the
//! admin key, or the peer's address); a streamed body's handler leases
//! what it holds, to the same account; and every body has a total deadline.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::access::{Caller, Policy};
use crate::config::ApiConfig;
use crate::http::body_limits::BodySpec;
use crate::http::body_meter::{BodyFailure, Meter, Metered};
use crate::http::budget::{BodyBudget, Holder};
use crate::http::error::ApiError;

/// What the body layer works with, set on every request by the router as
/// an extension.
#[derive(Debug)]
pub struct BodyAdmission {
    /// The node's budget (each request gets it bound to its caller).
    pub budget: Arc<BodyBudget>,
    pub api: Arc<ApiConfig>,
}

impl BodyAdmission {
    pub fn new(api: Arc<ApiConfig>) -> Arc<Self> {
        Arc::new(Self {
            budget: BodyBudget::new(api.max_inflight_body_bytes, api.caller_body_share()),
            api,
        })
    }
}

/// The `Content-Length` a request declares, if it declares one.
fn declared_length(req: &Request) -> Option<u64> {
    req.headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
}

/// The layer (a route layer, inside the route's access policy).
pub async fn admit(
    State((policy, spec)): State<(Policy, Option<BodySpec>)>,
    mut req: Request,
    next: Next,
) -> Response {
    let Some(adm) = req.extensions().get::<Arc<BodyAdmission>>().cloned() else {
        // A router assembled without the body settings would read bodies
        // unbounded: closed instead.
        tracing::error!(
            route = policy.path,
            "a route was reached without the body settings"
        );
        return ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "the body settings are missing",
        )
        .into_response();
    };
    let Some(body) = spec.map(|s| s.resolve(&adm.api)) else {
        // The route reads no body: nothing is read, nothing is charged.
        return next.run(req).await;
    };
    let declared = declared_length(&req);
    if let (Some(limit), Some(n)) = (body.limit, declared)
        && n > limit
    {
        return BodyFailure::TooLarge { limit }.into_response();
    }
    let peer = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip());
    let holder = Holder::of(req.extensions().get::<Caller>(), peer);
    let budget = adm.budget.bound_to(holder);
    let total = Duration::from_millis(adm.api.body_total_timeout_ms);
    if body.streamed {
        // The handler leases what it holds, from the caller's account.
        req.extensions_mut().insert(budget);
        return next
            .run(req.map(|b| Body::new(Metered::new(b, body.limit, total, None))))
            .await;
    }
    if declared == Some(0) {
        return next.run(req).await;
    }
    let Ok(lease) = budget.lease(0) else {
        return BodyFailure::Overloaded.into_response();
    };
    let meter = Meter::new(lease, body.limit.unwrap_or(u64::MAX));
    let charged = meter.clone();
    let resp = next
        .run(req.map(|b| Body::new(Metered::new(b, body.limit, total, Some(charged)))))
        .await;
    // However the handler answered a body that failed, the answer is the
    // failure (an extractor's own rejection would say `400`).
    match meter.failure() {
        Some(f) => f.into_response(),
        None => resp,
    }
}
