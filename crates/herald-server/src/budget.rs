//! The node-wide budget of request-body bytes in flight
//! (`api.max_inflight_body_bytes`): what bodies being read, parsed and
//! committed hold in memory. A request takes a [`Lease`] before it reads;
//! one that cannot is answered `503 overloaded` with `Retry-After`, so a
//! burst of large uploads is refused instead of exhausting the host.
//!
//! A streamed (bulk) request does not reserve its whole body: its lease
//! covers what it holds at once (a chunk being parsed and committed, and
//! its answers), growing and shrinking as it goes, never below the floor it
//! was admitted with. So a request, once admitted, can always make progress
//! within its floor, and the total held stays under the budget.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

const INFLIGHT_GAUGE: &str = "herald_api_inflight_body_bytes";

/// Bytes of request bodies held by this node, against a limit.
#[derive(Debug)]
pub struct BodyBudget {
    limit: u64,
    used: AtomicU64,
}

impl BodyBudget {
    pub fn new(limit: u64) -> Arc<Self> {
        metrics::describe_gauge!(
            INFLIGHT_GAUGE,
            "Request-body bytes held by requests being read, parsed or committed."
        );
        Arc::new(Self {
            limit,
            used: AtomicU64::new(0),
        })
    }

    /// A lease of `floor` bytes, if the budget has them.
    pub fn lease(self: &Arc<Self>, floor: u64) -> Result<Lease, Overloaded> {
        if !self.take(floor) {
            tracing::warn!(
                wanted = floor,
                in_use = self.in_use(),
                limit = self.limit,
                "request refused: the body budget is spent"
            );
            return Err(Overloaded);
        }
        Ok(Lease {
            budget: self.clone(),
            floor,
            granted: floor,
        })
    }

    /// The most that may be held.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Bytes held now.
    pub fn in_use(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    fn take(&self, n: u64) -> bool {
        let took = self
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(n).filter(|total| *total <= self.limit)
            });
        match took {
            Ok(before) => {
                metrics::gauge!(INFLIGHT_GAUGE).set((before + n) as f64);
                true
            }
            Err(_) => false,
        }
    }

    fn give(&self, n: u64) {
        let before = self.used.fetch_sub(n, Ordering::AcqRel);
        metrics::gauge!(INFLIGHT_GAUGE).set(before.saturating_sub(n) as f64);
    }
}

/// One request's share of the budget; given back when dropped.
#[derive(Debug)]
pub struct Lease {
    budget: Arc<BodyBudget>,
    floor: u64,
    granted: u64,
}

impl Lease {
    /// Makes sure `used` bytes are covered, taking more from the budget if
    /// they are over what the lease holds.
    pub fn cover(&mut self, used: u64) -> Result<(), Overloaded> {
        if used <= self.granted {
            return Ok(());
        }
        let more = used - self.granted;
        if !self.budget.take(more) {
            return Err(Overloaded);
        }
        self.granted = used;
        Ok(())
    }

    /// Gives back what is over `used` (never going below the floor).
    pub fn trim(&mut self, used: u64) {
        let keep = used.max(self.floor);
        if self.granted > keep {
            self.budget.give(self.granted - keep);
            self.granted = keep;
        }
    }

    /// The bytes this lease is admitted with and keeps at least.
    pub fn floor(&self) -> u64 {
        self.floor
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.budget.give(self.granted);
    }
}

/// Charges the budget for the other bodies (JSON, callbacks), which are
/// read whole but are small (`max_timer_bytes`, `campaign_body_max_bytes`):
/// the length they declare, held until the answer. The streaming routes
/// (`:bulk`, `/v1/audiences`) take their own lease. A body without a
/// declared length is still capped by its route's limit and is not charged.
pub async fn charge(
    axum::extract::State(budget): axum::extract::State<Arc<BodyBudget>>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let path = req.uri().path();
    let streams = path.ends_with(":bulk") || path == "/v1/audiences";
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    if streams || declared == 0 {
        return next.run(req).await;
    }
    match budget.lease(declared) {
        Ok(_held) => next.run(req).await,
        Err(over) => over.into_response(),
    }
}

/// The budget is spent: `503 overloaded`, try again in a second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overloaded;

impl Overloaded {
    pub fn error(self) -> ApiError {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "overloaded",
            "too many request bodies are being read right now; retry shortly",
        )
    }
}

impl IntoResponse for Overloaded {
    fn into_response(self) -> Response {
        let mut resp = self.error().into_response();
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        resp
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leases_stay_within_the_limit_and_give_back_on_drop() {
        let budget = BodyBudget::new(100);
        let mut a = budget.lease(40).unwrap();
        let b = budget.lease(50).unwrap();
        assert_eq!(budget.lease(11).err(), Some(Overloaded));
        assert_eq!(budget.in_use(), 90);
        // Growing past what is left fails; within it succeeds.
        assert_eq!(a.cover(51), Err(Overloaded));
        a.cover(50).unwrap();
        assert_eq!(budget.in_use(), 100);
        // Trimming never goes below the floor.
        a.trim(0);
        assert_eq!(budget.in_use(), 90);
        drop(b);
        assert_eq!(budget.in_use(), 40);
        drop(a);
        assert_eq!(budget.in_use(), 0);
    }
}
