//! A request body as the body layer hands it to a handler: it counts the
//! bytes that arrive, stops at the route's limit, stops at the body's total
//! deadline (`api.body_total_timeout_ms`), and, for a body read whole,
//! charges each piece to the request's [`Lease`] as it arrives, so a body
//! holds the budget for what it has sent, not for what it declared.
//!
//! A failure is an error of the body (a [`BodyFailure`] in its source
//! chain, which `crate::http::request::body_error` turns into the answer) and is
//! also kept on the [`Meter`], so the body layer answers it whatever the
//! handler made of the error.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::BoxError;
use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use http_body::{Frame, SizeHint};
use tokio::time::Sleep;

use crate::http::budget::{Lease, Overloaded};
use crate::http::error::ApiError;

/// Why a body stopped being read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BodyFailure {
    /// More bytes than the route takes.
    #[error("request body is over the limit of {limit} bytes")]
    TooLarge { limit: u64 },
    /// The body budget (the node's, or the caller's share) is spent.
    #[error("the body budget is spent")]
    Overloaded,
    /// The whole body did not arrive within the total deadline.
    #[error("the body did not arrive within {ms} ms")]
    Deadline { ms: u64 },
}

impl BodyFailure {
    pub fn error(self) -> ApiError {
        match self {
            BodyFailure::TooLarge { limit } => {
                ApiError::too_large(usize::try_from(limit).unwrap_or(usize::MAX))
            }
            BodyFailure::Overloaded => Overloaded.error(),
            BodyFailure::Deadline { ms } => ApiError::new(
                StatusCode::REQUEST_TIMEOUT,
                "request_timeout",
                format!(
                    "the body did not arrive within {ms} ms (api.body_total_timeout_ms); \
                     send it faster or in smaller requests"
                ),
            ),
        }
    }
}

impl IntoResponse for BodyFailure {
    fn into_response(self) -> Response {
        let mut resp = self.error().into_response();
        if self == BodyFailure::Overloaded {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        resp
    }
}

/// What a body read whole is charged, shared by the body and the layer
/// that answers for it (which holds it until the answer: the handler still
/// holds the bytes after the body is read).
#[derive(Debug)]
pub struct Meter {
    lease: Mutex<Lease>,
    /// Charged at most this much: past it the body fails as too large.
    limit: u64,
    failure: Mutex<Option<BodyFailure>>,
}

impl Meter {
    pub fn new(lease: Lease, limit: u64) -> Arc<Self> {
        Arc::new(Self {
            lease: Mutex::new(lease),
            limit,
            failure: Mutex::new(None),
        })
    }

    /// What stopped the body, if something did.
    pub fn failure(&self) -> Option<BodyFailure> {
        *self.failure.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn fail(&self, f: BodyFailure) {
        self.failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert(f);
    }

    /// Covers `received` bytes (at most the limit).
    fn charge(&self, received: u64) -> Result<(), BodyFailure> {
        self.lease
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .cover(received.min(self.limit))
            .map_err(|Overloaded| BodyFailure::Overloaded)
    }
}

/// The body a handler reads.
pub struct Metered {
    inner: Body,
    deadline: Pin<Box<Sleep>>,
    deadline_ms: u64,
    limit: Option<u64>,
    /// `None` for a streamed body (its handler leases what it holds).
    meter: Option<Arc<Meter>>,
    received: u64,
    failed: bool,
}

impl Metered {
    /// `inner`, stopped past `limit` bytes or after `total`, and charged to
    /// `meter` if given.
    pub fn new(
        inner: Body,
        limit: Option<u64>,
        total: Duration,
        meter: Option<Arc<Meter>>,
    ) -> Self {
        Self {
            inner,
            deadline: Box::pin(tokio::time::sleep(total)),
            deadline_ms: u64::try_from(total.as_millis()).unwrap_or(u64::MAX),
            limit,
            meter,
            received: 0,
            failed: false,
        }
    }

    fn fail(&mut self, f: BodyFailure) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        self.failed = true;
        if let Some(m) = &self.meter {
            m.fail(f);
        }
        Poll::Ready(Some(Err(Box::new(f))))
    }

    /// Counts a piece that arrived.
    fn take(&mut self, n: usize) -> Result<(), BodyFailure> {
        self.received = self.received.saturating_add(n as u64);
        if let Some(limit) = self.limit
            && self.received > limit
        {
            return Err(BodyFailure::TooLarge { limit });
        }
        match &self.meter {
            Some(m) => m.charge(self.received),
            None => Ok(()),
        }
    }
}

impl http_body::Body for Metered {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if self.failed {
            return Poll::Ready(None);
        }
        if self.deadline.as_mut().poll(cx).is_ready() {
            let ms = self.deadline_ms;
            return self.fail(BodyFailure::Deadline { ms });
        }
        match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                let n = frame.data_ref().map_or(0, Bytes::len);
                match self.take(n) {
                    Ok(()) => Poll::Ready(Some(Ok(frame))),
                    Err(f) => self.fail(f),
                }
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e.into()))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.failed || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::budget::BodyBudget;
    use http_body_util::BodyExt;

    fn chunks(parts: &[&'static [u8]]) -> Body {
        let frames: Vec<Result<Frame<Bytes>, std::io::Error>> = parts
            .iter()
            .map(|p| Ok(Frame::data(Bytes::from_static(p))))
            .collect();
        Body::new(http_body_util::StreamBody::new(futures_util::stream::iter(
            frames,
        )))
    }

    #[tokio::test]
    async fn bytes_are_charged_as_they_arrive_and_at_most_the_limit() {
        let budget = BodyBudget::new(1000, 1000);
        let meter = Meter::new(budget.lease(0).unwrap(), 10);
        let mut body = Metered::new(
            chunks(&[b"abcd", b"efgh"]),
            Some(10),
            Duration::from_secs(60),
            Some(meter.clone()),
        );
        assert_eq!(budget.in_use(), 0, "nothing before the first piece");
        body.frame().await.unwrap().unwrap();
        assert_eq!(budget.in_use(), 4);
        body.frame().await.unwrap().unwrap();
        assert_eq!(budget.in_use(), 8);
        assert!(body.frame().await.is_none());
        assert_eq!(meter.failure(), None);
        drop(body);
        // The layer's share outlives the body: the handler holds the bytes.
        assert_eq!(budget.in_use(), 8);
        drop(meter);
        assert_eq!(budget.in_use(), 0);
    }

    #[tokio::test]
    async fn a_body_over_its_limit_or_the_budget_fails() {
        let budget = BodyBudget::new(1000, 1000);
        let meter = Meter::new(budget.lease(0).unwrap(), 5);
        let body = Metered::new(
            chunks(&[b"abcd", b"efgh"]),
            Some(5),
            Duration::from_secs(60),
            Some(meter.clone()),
        );
        assert!(body.collect().await.is_err());
        assert_eq!(meter.failure(), Some(BodyFailure::TooLarge { limit: 5 }));
        assert_eq!(budget.in_use(), 4, "never charged past the limit");

        let small = BodyBudget::new(6, 6);
        let meter = Meter::new(small.lease(0).unwrap(), 100);
        let body = Metered::new(
            chunks(&[b"abcd", b"efgh"]),
            Some(100),
            Duration::from_secs(60),
            Some(meter.clone()),
        );
        assert!(body.collect().await.is_err());
        assert_eq!(meter.failure(), Some(BodyFailure::Overloaded));
    }

    #[tokio::test]
    async fn a_body_that_keeps_trickling_is_stopped_at_the_deadline() {
        // One byte every 10 ms, for ever.
        let trickle = futures_util::stream::unfold((), |()| async {
            tokio::time::sleep(Duration::from_millis(10)).await;
            Some((
                Ok::<_, std::io::Error>(Frame::data(Bytes::from_static(b"x"))),
                (),
            ))
        });
        let budget = BodyBudget::new(1000, 1000);
        let meter = Meter::new(budget.lease(0).unwrap(), 1000);
        let body = Metered::new(
            Body::new(http_body_util::StreamBody::new(trickle)),
            Some(1000),
            Duration::from_millis(200),
            Some(meter.clone()),
        );
        assert!(body.collect().await.is_err());
        assert_eq!(meter.failure(), Some(BodyFailure::Deadline { ms: 200 }));
        // What arrived before the deadline is what is held.
        let held = budget.in_use();
        assert!((1..=20).contains(&held), "{held}");
    }
}
