//! Per-tenant quotas on pending timers (`[tenants.NAME] max_pending`).
//!
//! Counting a tenant's pending timers in the store on every create would
//! cost a query per request, so each node keeps a count instead: the
//! tenant's pending timers as the store last counted them (every
//! `engine.quota_refresh_ms`), plus the timers this node accepted since.
//! A create that would take the count past the limit is refused with `429`.
//! What other nodes accepted since the last count is not seen here, so a
//! tenant can pass its limit by at most what the other nodes accept within
//! one refresh interval. Timers that fire or are cancelled free their room
//! at the next count.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use herald_core::{TenantId, TimerState};
use herald_store::{Store, StoreError};

use crate::http::error::ApiError;

/// What a tenant's quota counts, and from where.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Count {
    /// Pending timers at the last count of the store.
    counted: u64,
    /// Timers this node accepted since that count began.
    accepted: u64,
}

/// The counting core: limits, counts, and what a refresh does to them.
/// Pure, so its arithmetic is tested on its own.
#[derive(Debug, Default)]
struct Book {
    limits: HashMap<TenantId, u64>,
    counts: HashMap<TenantId, Count>,
}

impl Book {
    /// Takes room for `n` timers of `tenant` if it has that much.
    fn admit(&mut self, tenant: TenantId, n: u64) -> bool {
        let Some(&limit) = self.limits.get(&tenant) else {
            return true;
        };
        let c = self.counts.entry(tenant).or_default();
        let after = c.counted.saturating_add(c.accepted).saturating_add(n);
        if after > limit {
            return false;
        }
        c.accepted += n;
        true
    }

    /// Gives back room taken for timers that were not created after all.
    fn give_back(&mut self, tenant: TenantId, n: u64) {
        if let Some(c) = self.counts.get_mut(&tenant) {
            c.accepted = c.accepted.saturating_sub(n);
        }
    }

    /// What each tenant had accepted when a count of the store began.
    fn count_started(&self) -> HashMap<TenantId, u64> {
        self.counts.iter().map(|(t, c)| (*t, c.accepted)).collect()
    }

    /// A count of the store that began at `started` came back as `pending`:
    /// it holds what was accepted before it began; what was accepted since
    /// stays on top of it.
    fn counted(&mut self, started: &HashMap<TenantId, u64>, pending: &HashMap<TenantId, u64>) {
        for (tenant, c) in self.counts.iter_mut() {
            c.counted = pending.get(tenant).copied().unwrap_or(0);
            c.accepted = c
                .accepted
                .saturating_sub(started.get(tenant).copied().unwrap_or(0));
        }
        for (tenant, n) in pending {
            if self.limits.contains_key(tenant) {
                self.counts.entry(*tenant).or_default().counted = *n;
            }
        }
    }
}

/// A tenant's quota is used up: `429 quota_exceeded` with `Retry-After: 1`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaExceeded {
    pub limit: u64,
}

impl QuotaExceeded {
    pub fn error(&self) -> ApiError {
        ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "quota_exceeded",
            format!(
                "the tenant has its limit of {} pending timers; retry once some have fired \
                 or been cancelled",
                self.limit
            ),
        )
    }
}

impl IntoResponse for QuotaExceeded {
    fn into_response(self) -> Response {
        let mut resp = self.error().into_response();
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        resp
    }
}

/// The quotas of this node. Tenants without `max_pending` are never
/// counted or refused.
#[derive(Debug, Default)]
pub struct Quotas {
    book: Mutex<Book>,
}

impl Quotas {
    /// Quotas with these limits of pending timers.
    pub fn new(limits: HashMap<TenantId, u64>) -> Self {
        Self {
            book: Mutex::new(Book {
                limits,
                counts: HashMap::new(),
            }),
        }
    }

    /// No quotas at all.
    pub fn none() -> Self {
        Self::default()
    }

    /// Takes room for `n` new timers of `tenant`, or says the quota is used.
    pub fn admit(&self, tenant: TenantId, n: u64) -> Result<(), QuotaExceeded> {
        let mut book = self.lock();
        if book.admit(tenant, n) {
            return Ok(());
        }
        let limit = book.limits.get(&tenant).copied().unwrap_or(u64::MAX);
        tracing::debug!(tenant = %tenant, n, limit, "quota exceeded");
        Err(QuotaExceeded { limit })
    }

    /// Gives back room [`Quotas::admit`] took for timers that were not
    /// created (refused, duplicates, a failed write).
    pub fn give_back(&self, tenant: TenantId, n: u64) {
        if n > 0 {
            self.lock().give_back(tenant, n);
        }
    }

    /// Whether any tenant has a quota (else there is nothing to count).
    pub fn any(&self) -> bool {
        !self.lock().limits.is_empty()
    }

    /// Counts every tenant's pending timers in the store.
    pub async fn refresh(&self, store: &dyn Store) -> Result<(), StoreError> {
        let started = self.lock().count_started();
        let rows = store.count_by_tenant_state().await?;
        let mut pending: HashMap<TenantId, u64> = HashMap::new();
        for (tenant, state, n) in rows {
            if matches!(state, TimerState::Pending | TimerState::Firing) {
                *pending.entry(tenant).or_default() += n;
            }
        }
        self.lock().counted(&started, &pending);
        Ok(())
    }

    /// Refreshes every `every` while the quotas are in use (the task ends
    /// once they are dropped). Nothing runs when no tenant has a quota.
    pub fn spawn_refresher(self: &Arc<Self>, store: Arc<dyn Store>, every: Duration) {
        if !self.any() {
            return;
        }
        let quotas: Weak<Quotas> = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every.max(Duration::from_millis(10)));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(quotas) = quotas.upgrade() else {
                    return;
                };
                if let Err(e) = quotas.refresh(&*store).await {
                    tracing::warn!(error = %e, "pending timers could not be counted for quotas");
                }
            }
        });
    }

    fn lock(&self) -> MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: TenantId = TenantId(2);
    const B: TenantId = TenantId(3);

    fn book() -> Book {
        Book {
            limits: HashMap::from([(A, 10)]),
            counts: HashMap::new(),
        }
    }

    #[test]
    fn admits_up_to_the_limit_and_no_further() {
        let mut b = book();
        assert!(b.admit(A, 4));
        assert!(b.admit(A, 6));
        assert!(!b.admit(A, 1));
        // A tenant without a limit is not counted.
        assert!(b.admit(B, 1_000_000));
        assert!(!b.counts.contains_key(&B));
        b.give_back(A, 3);
        assert!(b.admit(A, 3));
        assert!(!b.admit(A, 1));
    }

    #[test]
    fn a_count_replaces_what_it_saw_and_keeps_what_came_after() {
        let mut b = book();
        assert!(b.admit(A, 5));
        let started = b.count_started();
        // Accepted while the count runs: not in it.
        assert!(b.admit(A, 2));
        // The store held 5 (ours) + 1 (another node's).
        b.counted(&started, &HashMap::from([(A, 6)]));
        assert_eq!(
            b.counts[&A],
            Count {
                counted: 6,
                accepted: 2
            }
        );
        assert!(b.admit(A, 2));
        assert!(!b.admit(A, 1));
        // Timers fired: the next count frees their room.
        let started = b.count_started();
        b.counted(&started, &HashMap::new());
        assert_eq!(b.counts[&A], Count::default());
        assert!(b.admit(A, 10));
    }

    #[test]
    fn a_first_count_covers_tenants_not_yet_seen() {
        let mut b = book();
        let started = b.count_started();
        b.counted(&started, &HashMap::from([(A, 9), (B, 50)]));
        assert!(b.admit(A, 1));
        assert!(!b.admit(A, 1));
        assert!(!b.counts.contains_key(&B));
    }

    #[test]
    fn refused_answers_say_when_to_retry() {
        let resp = QuotaExceeded { limit: 10 }.into_response();
        assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(resp.headers()[header::RETRY_AFTER], "1");
    }
}
