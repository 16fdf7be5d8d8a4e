//! The API's edge: what every request passes through before its route, as
//! one layer. Outermost first: errors become JSON; a body that stalls is cut
//! off; the request is recorded in the audit log (refusals of the guard
//! too); a panic becomes a `500`; the guard admits the caller; the node's
//! shared services are put in the request's extensions; an action path's
//! unserved method gets its `405`.
//!
//! One layer rather than one per step: each `axum::middleware::from_fn`
//! layer boxes the stack below it and its own future on every request, and
//! with seven of them that was about a sixth of a single create's CPU. Here
//! the steps are plain async functions, each given the rest as a closure, so
//! the whole edge is one future and one allocation.

use std::convert::Infallible;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use futures_util::FutureExt;
use tower::{Layer, Service, ServiceExt};

use crate::access::{Guard, guard_with};
use crate::audit::{Recorder, record};
use crate::http::body_admission::BodyAdmission;
use crate::http::fallback::{json_errors, panic_response};
use crate::http::rate::RateSampler;
use crate::routes::allowed_methods;

/// What the edge's steps need, shared by every request of the node.
pub(crate) struct Edge {
    /// How long a body may pause between pieces (`408` after).
    pub body_pause: Duration,
    pub recorder: Recorder,
    pub guard: Guard,
    pub bodies: Arc<BodyAdmission>,
    /// Job progress samples, for the current rate of `GET /v1/jobs/{id}`.
    pub job_rates: Arc<RateSampler<i64>>,
    /// Answered sends per channel, for the current rate of `GET /v1/channels`.
    pub channel_rates: Arc<RateSampler<String>>,
}

impl Edge {
    pub fn layer(self) -> EdgeLayer {
        EdgeLayer(Arc::new(self))
    }

    async fn serve<S>(self: Arc<Self>, req: Request, inner: S) -> Response
    where
        S: Service<Request, Response = Response, Error = Infallible>,
    {
        let req = req.map(|b| Body::new(tower_http::timeout::TimeoutBody::new(self.body_pause, b)));
        let resp = record(&self.recorder, req, |req| async {
            AssertUnwindSafe(guard_with(&self.guard, req, |mut req| {
                let ext = req.extensions_mut();
                ext.insert(self.channel_rates.clone());
                ext.insert(self.job_rates.clone());
                ext.insert(self.bodies.clone());
                ext.insert(self.bodies.budget.clone());
                allowed_methods(req, |req| async {
                    match inner.oneshot(req).await {
                        Ok(resp) => resp,
                        Err(never) => match never {},
                    }
                })
            }))
            .catch_unwind()
            .await
            .unwrap_or_else(panic_response)
        })
        .await;
        json_errors(resp).await
    }
}

/// [`Edge`] as a tower layer, for `Router::layer`.
#[derive(Clone)]
pub(crate) struct EdgeLayer(Arc<Edge>);

impl<S> Layer<S> for EdgeLayer {
    type Service = EdgeService<S>;

    fn layer(&self, inner: S) -> EdgeService<S> {
        EdgeService {
            edge: self.0.clone(),
            inner,
        }
    }
}

#[derive(Clone)]
pub(crate) struct EdgeService<S> {
    edge: Arc<Edge>,
    inner: S,
}

impl<S> Service<Request> for EdgeService<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // The route below is readied when it is called (`oneshot`).
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request) -> Self::Future {
        let (edge, inner) = (self.edge.clone(), self.inner.clone());
        Box::pin(async move { Ok(edge.serve(req, inner).await) })
    }
}

#[cfg(test)]
mod tests {
    use axum::http::{StatusCode, header};
    use axum::routing::post;
    use herald_core::{Clock, SystemClock};
    use herald_store::{Store, StoreOptions};
    use http_body_util::BodyExt;

    use super::*;
    use crate::{Access, ApiConfig, AuditLog, AuditSettings, AuthConfig};

    fn post_to(path: &str) -> Request {
        Request::builder()
            .method("POST")
            .uri(path)
            .header(header::HOST, "localhost")
            .body(Body::empty())
            .expect("request")
    }

    /// A handler's panic is a JSON `500`, and the node serves on.
    #[tokio::test]
    async fn a_panic_is_a_json_500_and_the_next_request_is_served() {
        let store: Arc<dyn Store> = herald_store::open("sqlite::memory:", &StoreOptions::default())
            .await
            .expect("store");
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let (log, _writer) = AuditLog::start(store, AuditSettings::default());
        let edge = Edge {
            body_pause: Duration::from_secs(5),
            recorder: Recorder {
                log,
                clock: clock.clone(),
            },
            guard: Guard::new(
                Arc::new(Access::open(&AuthConfig::default())),
                clock,
                Vec::new(),
            ),
            bodies: BodyAdmission::new(Arc::new(ApiConfig::default())),
            job_rates: Arc::default(),
            channel_rates: Arc::default(),
        };
        let app = axum::Router::new()
            .route(
                "/boom",
                post(|| async {
                    if std::hint::black_box(true) {
                        panic!("the handler broke");
                    }
                    "unreachable"
                }),
            )
            .route("/fine", post(|| async { "fine" }))
            .layer(edge.layer());

        let resp = app
            .clone()
            .oneshot(post_to("/boom"))
            .await
            .expect("infallible");
        assert_eq!(resp.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let body = resp.into_body().collect().await.expect("body").to_bytes();
        let json: serde_json::Value = serde_json::from_slice(&body).expect("a JSON error");
        assert_eq!(json["error"]["code"], "internal", "{json}");

        let resp = app.oneshot(post_to("/fine")).await.expect("infallible");
        assert_eq!(resp.status(), StatusCode::OK);
        let body = resp.into_body().collect().await.expect("body").to_bytes();
        assert_eq!(&body[..], b"fine");
    }
}
