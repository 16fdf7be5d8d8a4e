//! Per-tenant dispatch limits: the weight a tenant's turn counts for, and the
//! rate its deliveries may leave this node at.
//!
//! The rate is a token bucket on the engine's clock. A channel worker asks
//! it before taking a tenant's job and passes the tenant over when it says
//! no, so a tenant at its rate never holds up another's sends.

use std::collections::HashMap;

use herald_core::TenantId;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

/// One tenant's limits (`[tenants.NAME]` in the configuration).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TenantLimits {
    /// Its share of dispatch turns against other tenants with due work
    /// (0 counts as 1).
    pub weight: u32,
    /// Most deliveries per second on this node; `None` is unlimited.
    pub rate_per_sec: Option<f64>,
}

impl Default for TenantLimits {
    fn default() -> Self {
        Self {
            weight: 1,
            rate_per_sec: None,
        }
    }
}

/// Dispatch weights by tenant, as the fair queues take them.
pub(crate) fn weights(limits: &HashMap<TenantId, TenantLimits>) -> HashMap<TenantId, u32> {
    limits.iter().map(|(t, l)| (*t, l.weight)).collect()
}

/// One token in the bucket's units: whole numbers keep the arithmetic exact.
const TOKEN: u64 = 1_000_000_000;

/// A token bucket holding up to one second of its rate (at least one send).
#[derive(Debug)]
struct Bucket {
    /// Units gained per millisecond (`rate_per_sec x TOKEN / 1000`).
    per_ms: u64,
    burst: u64,
    units: u64,
    at_ms: i64,
}

impl Bucket {
    fn new(rate_per_sec: f64, now_ms: i64) -> Self {
        // Clamped to what the units can count: one per 1000 s up to 10^9/s.
        let rate = if rate_per_sec.is_finite() {
            rate_per_sec.clamp(0.001, 1e9)
        } else {
            1e9
        };
        let burst = rate.ceil().max(1.0) as u64 * TOKEN;
        Self {
            per_ms: ((rate * TOKEN as f64 / 1000.0).round() as u64).max(1),
            burst,
            units: burst,
            at_ms: now_ms,
        }
    }

    fn refill(&mut self, now_ms: i64) {
        // A clock that steps back refills nothing.
        let elapsed = u64::try_from(now_ms.saturating_sub(self.at_ms)).unwrap_or(0);
        self.units = self
            .units
            .saturating_add(elapsed.saturating_mul(self.per_ms))
            .min(self.burst);
        self.at_ms = self.at_ms.max(now_ms);
    }

    fn try_take(&mut self, now_ms: i64) -> bool {
        self.refill(now_ms);
        match self.units.checked_sub(TOKEN) {
            Some(left) => {
                self.units = left;
                true
            }
            None => false,
        }
    }

    fn wait_ms(&mut self, now_ms: i64) -> u64 {
        self.refill(now_ms);
        TOKEN.saturating_sub(self.units).div_ceil(self.per_ms)
    }

    fn burst_tokens(&self) -> usize {
        usize::try_from(self.burst / TOKEN).unwrap_or(usize::MAX)
    }
}

/// The delivery rate limits of every tenant that has one, shared by all
/// channels of this node.
#[derive(Debug, Default)]
pub(crate) struct TenantRates {
    buckets: HashMap<TenantId, Mutex<Bucket>>,
}

impl TenantRates {
    pub fn new(limits: &HashMap<TenantId, TenantLimits>, now_ms: i64) -> Self {
        let buckets = limits
            .iter()
            .filter_map(|(t, l)| Some((*t, Mutex::new(Bucket::new(l.rate_per_sec?, now_ms)))))
            .collect();
        Self { buckets }
    }

    /// Whether the tenant may send one more delivery now; a yes spends it.
    pub fn try_take(&self, tenant: TenantId, now_ms: i64) -> bool {
        self.buckets
            .get(&tenant)
            .is_none_or(|b| b.lock().try_take(now_ms))
    }

    /// How long until the tenant may send again (0: now).
    pub fn wait_ms(&self, tenant: TenantId, now_ms: i64) -> u64 {
        self.buckets
            .get(&tenant)
            .map_or(0, |b| b.lock().wait_ms(now_ms))
    }

    /// How many of the tenant's deliveries may wait in channel queues at
    /// once, if it has a rate: about one second's worth. More would only
    /// hold in-flight room (and so other tenants' timers) while it waits
    /// for its turn.
    pub fn queue_cap(&self, tenant: TenantId) -> Option<usize> {
        self.buckets.get(&tenant).map(|b| b.lock().burst_tokens())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rates(rate: f64) -> TenantRates {
        let limits = HashMap::from([(
            TenantId(2),
            TenantLimits {
                weight: 1,
                rate_per_sec: Some(rate),
            },
        )]);
        TenantRates::new(&limits, 0)
    }

    #[test]
    fn a_tenant_without_a_rate_always_goes() {
        let r = rates(1.0);
        assert!((0..1000).all(|_| r.try_take(TenantId(1), 0)));
        assert_eq!(r.wait_ms(TenantId(1), 0), 0);
        assert_eq!(r.queue_cap(TenantId(1)), None);
    }

    #[test]
    fn a_burst_of_one_second_then_the_rate() {
        let r = rates(10.0);
        let t = TenantId(2);
        assert_eq!(r.queue_cap(t), Some(10));
        assert_eq!((0..20).filter(|_| r.try_take(t, 0)).count(), 10);
        assert_eq!(r.wait_ms(t, 0), 100);
        assert!(!r.try_take(t, 99));
        assert!(r.try_take(t, 100));
        assert!(!r.try_take(t, 150));
        // A second later the bucket is full again, no fuller.
        assert_eq!((0..20).filter(|_| r.try_take(t, 5_000)).count(), 10);
    }

    #[test]
    fn a_slow_rate_still_allows_one_and_a_clock_stepping_back_refills_nothing() {
        let r = rates(0.5);
        let t = TenantId(2);
        assert_eq!(r.queue_cap(t), Some(1));
        assert!(r.try_take(t, 1_000));
        assert!(!r.try_take(t, 0));
        assert_eq!(r.wait_ms(t, 1_000), 2_000);
        assert!(r.try_take(t, 3_000));
    }
}
