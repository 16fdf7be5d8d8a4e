//! Frequency-cap counters (`[[caps]]`): check-and-take for a whole fetch
//! batch in one transaction, cluster-wide.
//!
//! Each counter row says when its bucket stops counting (`expires_at`), so
//! the retention sweeper deletes the rows of keys never taken again
//! ([`crate::RetentionKind::CapCounters`]).
//!
//! Counters are keyed by (tenant, key, bucket), where the key names the cap,
//! the user and, for a cap per channel type, the type (see
//! `herald_core::caps`): a popular window spreads over one row per user and
//! bucket, never one hot row. Each backend serialises takes per key (SQLite
//! has one writer; PostgreSQL takes a transaction-level advisory lock on a
//! hash of each key, in a fixed order), so nodes sharing a store never let
//! more than `max` through a window between them.

use async_trait::async_trait;
use herald_core::TenantId;
use herald_core::caps::{CapCheck, CapDecision};

use crate::Result;

/// One send's caps: it goes only if every counter has room, and then takes
/// a slot in each; refused, it takes none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapTake {
    pub tenant: TenantId,
    pub checks: Vec<CapCheck>,
}

/// The answer to one [`CapTake`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CapVerdict {
    /// A slot of every counter was taken (also for a take with no checks).
    Taken,
    /// The cap named had no room; it frees a slot at `free_at` (unix ms).
    /// `defer`: its check asked the send to wait for that rather than drop.
    Full {
        cap: String,
        free_at: i64,
        defer: bool,
    },
}

#[async_trait]
pub trait CapStore: Send + Sync + 'static {
    /// Decides `takes` in order at time `at`, in one transaction: a take
    /// whose counters all have room takes a slot of each (so a later take of
    /// the same batch sees it). Counters' buckets that left their window are
    /// deleted as they are met.
    async fn take_caps(&self, takes: Vec<CapTake>, at: i64) -> Result<Vec<CapVerdict>>;
}

/// Decides `takes` against counts read through `read` (each key once, its
/// buckets as `(bucket, count)`), returning the verdicts and the changes to
/// write: `(tenant, key, bucket, added)` and the keys with buckets out of
/// the window `(tenant, key, oldest counted)`. Shared by both backends.
pub(crate) fn decide<E>(
    takes: &[CapTake],
    at: i64,
    mut read: impl FnMut(TenantId, &str) -> std::result::Result<Vec<(i64, i64)>, E>,
) -> std::result::Result<Decided, E> {
    use std::collections::HashMap;
    let mut counts: HashMap<(TenantId, String), Vec<(i64, i64)>> = HashMap::new();
    let mut verdicts = Vec::with_capacity(takes.len());
    let mut stale = Vec::new();
    for t in takes {
        let mut full = None;
        for c in &t.checks {
            let k = (t.tenant, c.key.clone());
            if !counts.contains_key(&k) {
                let found = read(t.tenant, &c.key)?;
                if found.iter().any(|&(b, _)| b < c.oldest_counted(at)) {
                    stale.push((t.tenant, c.key.clone(), c.oldest_counted(at)));
                }
                counts.insert(k.clone(), found);
            }
            if let CapDecision::Full { free_at } = c.decide(&counts[&k], at) {
                full = Some(CapVerdict::Full {
                    cap: c.cap.clone(),
                    free_at,
                    defer: c.defer,
                });
                break;
            }
        }
        if let Some(v) = full {
            verdicts.push(v);
            continue;
        }
        for c in &t.checks {
            let bucket = c.bucket_of(at);
            let b = counts.entry((t.tenant, c.key.clone())).or_default();
            match b.iter_mut().find(|(s, _)| *s == bucket) {
                Some((_, n)) => *n += 1,
                None => b.push((bucket, 1)),
            }
        }
        verdicts.push(CapVerdict::Taken);
    }
    let mut added: HashMap<(TenantId, String, i64), (i64, i64)> = HashMap::new();
    for (t, v) in takes.iter().zip(&verdicts) {
        if *v == CapVerdict::Taken {
            for c in &t.checks {
                let bucket = c.bucket_of(at);
                let e = added
                    .entry((t.tenant, c.key.clone(), bucket))
                    .or_insert((0, c.counts_until(bucket)));
                e.0 += 1;
            }
        }
    }
    let mut added: Vec<_> = added
        .into_iter()
        .map(|((t, k, b), (n, until))| Added {
            tenant: t,
            key: k,
            bucket: b,
            count: n,
            expires_at: until,
        })
        .collect();
    added.sort();
    Ok(Decided {
        verdicts,
        added,
        stale,
    })
}

/// Sends counted into one bucket of one counter, and when that bucket
/// stops counting.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Added {
    pub tenant: TenantId,
    pub key: String,
    pub bucket: i64,
    pub count: i64,
    pub expires_at: i64,
}

pub(crate) struct Decided {
    pub verdicts: Vec<CapVerdict>,
    pub added: Vec<Added>,
    pub stale: Vec<(TenantId, String, i64)>,
}

/// The statements both backends run.
pub(crate) mod sql {
    use crate::shared_sql::{Statement, statement};

    pub(crate) const READ: Statement =
        statement!("SELECT bucket, count FROM cap_counters WHERE tenant_id = $1 AND cap_key = $2");
    pub(crate) const ADD: Statement = statement!(
        "INSERT INTO cap_counters (tenant_id, cap_key, bucket, count, expires_at) \
         VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (tenant_id, cap_key, bucket) DO UPDATE SET count = cap_counters.count + excluded.count, \
         expires_at = excluded.expires_at"
    );
    pub(crate) const PRUNE: Statement = statement!(
        "DELETE FROM cap_counters WHERE tenant_id = $1 AND cap_key = $2 AND bucket < $3"
    );
}
