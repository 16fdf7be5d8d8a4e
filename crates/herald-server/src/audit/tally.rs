//! Refusals before any key was recognised, counted rather than recorded one
//! by one.
//!
//! Anyone who can reach the port can be refused as fast as they can send
//! (546,032 keyless POSTs in 20 s, measured, were 44.5 MB of audit rows), so
//! such a refusal costs a counter, not a row: the metric
//! [`UNAUTHENTICATED_REFUSALS`] by reason, and a tally that the writer turns
//! into one entry per reason, method, route and status every
//! [`super::AuditSettings::tally_every`], carrying how many it stands for.
//! The tally holds at most [`MAX_KEYS`] of those; once full, further ones
//! are folded into one per reason and status with method and route `*`. So a
//! flood writes a bounded number of rows a minute, whatever it sends.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use axum::http::Method;
use herald_core::DEFAULT_TENANT;
use herald_store::NewAuditEntry;

use crate::access::Unrecognised;

/// Requests refused before any key was recognised, by `reason`.
pub const UNAUTHENTICATED_REFUSALS: &str = "herald_unauthenticated_refusals_total";

/// Most distinct (reason, method, route, status) counted between two
/// writes before they are folded together.
pub const MAX_KEYS: usize = 64;

/// What stands for unknown routes, odd methods and folded entries.
const ANY: &str = "*";

/// What one tallied entry counts.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RefusalKey {
    pub reason: Unrecognised,
    /// A standard method's name, or `*`.
    pub method: &'static str,
    /// A route pattern (`/v1/timers/{id}`, `/ui/login`), or `*` for a path
    /// no route serves: a flood of made-up paths is one entry.
    pub route: &'static str,
    pub status: u16,
}

impl RefusalKey {
    /// The key of a refusal of `method` on `route` (a pattern, if a route
    /// matched) answered with `status`.
    pub fn new(
        reason: Unrecognised,
        method: &Method,
        route: Option<&'static str>,
        status: u16,
    ) -> Self {
        Self {
            reason,
            method: standard_method(method),
            route: route.unwrap_or(ANY),
            status,
        }
    }

    /// The key a refusal is counted under once the tally is full.
    fn folded(&self) -> Self {
        Self {
            method: ANY,
            route: ANY,
            ..self.clone()
        }
    }
}

/// The method's name if it is one of the standard ones, else `*` (a method
/// is any token; made-up ones must not each become an entry).
fn standard_method(m: &Method) -> &'static str {
    const STANDARD: [&str; 9] = [
        "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT",
    ];
    STANDARD
        .into_iter()
        .find(|s| *s == m.as_str())
        .unwrap_or(ANY)
}

/// How many, since when.
#[derive(Debug, Clone, Copy)]
struct Count {
    first_at: i64,
    n: u64,
}

/// The refusals counted since the last write.
#[derive(Default)]
pub(super) struct Tally {
    counts: Mutex<HashMap<RefusalKey, Count>>,
}

impl Tally {
    /// Counts one refusal at `at` (unix ms), and in the metric.
    pub(super) fn add(&self, key: RefusalKey, at: i64) {
        count(key.reason);
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        let key = if counts.len() >= MAX_KEYS && !counts.contains_key(&key) {
            key.folded()
        } else {
            key
        };
        let c = counts.entry(key).or_insert(Count { first_at: at, n: 0 });
        c.n += 1;
        c.first_at = c.first_at.min(at);
    }

    /// One entry per key counted since the last call, oldest first; the
    /// tally starts again empty.
    pub(super) fn take(&self) -> Vec<NewAuditEntry> {
        let counts =
            std::mem::take(&mut *self.counts.lock().unwrap_or_else(PoisonError::into_inner));
        let mut entries: Vec<(RefusalKey, Count)> = counts.into_iter().collect();
        entries.sort_by(|a, b| (a.1.first_at, &a.0).cmp(&(b.1.first_at, &b.0)));
        entries
            .into_iter()
            .map(|(k, c)| NewAuditEntry {
                at: c.first_at,
                key_id: None,
                key_name: None,
                tenant: DEFAULT_TENANT,
                method: k.method.to_string(),
                route: k.route.to_string(),
                resource_id: None,
                status: k.status,
                count: c.n,
                reason: Some(k.reason.label().to_string()),
            })
            .collect()
    }
}

/// Counts one refusal in the metric only: a `GET` or `HEAD`, which the
/// audit log does not record at all.
pub(super) fn count(reason: Unrecognised) {
    metrics::counter!(UNAUTHENTICATED_REFUSALS, "reason" => reason.label()).increment(1);
}

/// Describes the metric (once, at start), with every reason at zero so a
/// dashboard sees the series before the first refusal.
pub(super) fn describe() {
    metrics::describe_counter!(
        UNAUTHENTICATED_REFUSALS,
        "Requests refused before any key was recognised (no key, an invalid key or session, \
         a foreign Host or Origin, a failed console login, a public route's refusal), by reason."
    );
    for r in Unrecognised::ALL {
        metrics::counter!(UNAUTHENTICATED_REFUSALS, "reason" => r.label()).increment(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(route: &'static str, method: &Method) -> RefusalKey {
        RefusalKey::new(Unrecognised::NoKey, method, Some(route), 401)
    }

    #[test]
    fn refusals_are_counted_per_key_from_the_first() {
        let t = Tally::default();
        for i in 0..1000 {
            t.add(key("/v1/timers", &Method::POST), 5_000 + i);
        }
        t.add(key("/v1/timers/{id}", &Method::DELETE), 4_000);
        let entries = t.take();
        assert_eq!(entries.len(), 2, "{entries:?}");
        let brief: Vec<_> = entries
            .iter()
            .map(|e| (e.at, e.method.as_str(), e.route.as_str(), e.count))
            .collect();
        assert_eq!(
            brief,
            [
                (4_000, "DELETE", "/v1/timers/{id}", 1),
                (5_000, "POST", "/v1/timers", 1000),
            ]
        );
        assert_eq!(entries[0].reason.as_deref(), Some("no_key"));
        assert_eq!((entries[0].key_id, entries[0].status), (None, 401));
        assert!(t.take().is_empty(), "taking empties the tally");
    }

    #[test]
    fn odd_methods_and_unknown_routes_are_one_key_and_a_full_tally_folds() {
        let odd = Method::from_bytes(b"FLOOD").unwrap();
        assert_eq!(
            RefusalKey::new(Unrecognised::NoKey, &odd, None, 401).method,
            "*"
        );
        assert_eq!(
            RefusalKey::new(Unrecognised::NoKey, &odd, None, 401).route,
            "*"
        );
        let t = Tally::default();
        let routes: Vec<&'static str> = (0..MAX_KEYS * 3)
            .map(|i| &*Box::leak(format!("/r{i}").into_boxed_str()))
            .collect();
        for (i, r) in routes.iter().enumerate() {
            t.add(key(r, &Method::POST), i as i64);
        }
        let entries = t.take();
        assert_eq!(entries.len(), MAX_KEYS + 1);
        let folded = entries.iter().find(|e| e.route == "*").unwrap();
        assert_eq!(
            (folded.method.as_str(), folded.count),
            ("*", 2 * MAX_KEYS as u64)
        );
        assert_eq!(
            entries.iter().map(|e| e.count).sum::<u64>(),
            routes.len() as u64
        );
    }
}
