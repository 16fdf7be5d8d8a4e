//! Store calls the timer, reminder and cluster cases share; each panics on
//! a failed call.

use std::collections::HashMap;
use std::sync::Arc;

use herald_core::TimerState;

use super::fixtures::*;
use crate::{DueEntry, NewTimer, Store, TimerRecord, WriteOp, WriteResult};

/// The store a case runs against.
pub(super) type S = Arc<dyn Store>;

pub(crate) async fn insert_all(
    store: &S,
    timers: impl IntoIterator<Item = NewTimer>,
) -> Vec<TimerRecord> {
    let results = store.apply(inserts(timers)).await.expect("apply");
    results.iter().map(created).collect()
}

pub(super) async fn insert_one(store: &S, t: NewTimer) -> TimerRecord {
    insert_all(store, [t]).await.remove(0)
}

pub(super) async fn get(store: &S, id: i64) -> TimerRecord {
    store
        .get_timer(id)
        .await
        .expect("get_timer")
        .unwrap_or_else(|| panic!("timer {id} missing"))
}

pub(super) async fn cancel(store: &S, id: i64, at: i64) -> WriteResult {
    let mut r = store
        .apply(vec![WriteOp::CancelTimer {
            tenant: DEFAULT_TENANT,
            id,
            at,
        }])
        .await
        .expect("apply cancel");
    assert_eq!(r.len(), 1);
    r.remove(0)
}

pub(super) async fn all_due(store: &S, until: i64) -> Vec<DueEntry> {
    store
        .load_due(&all_shards(), None, until, 1_000_000)
        .await
        .expect("load_due")
}

pub(super) fn ids(entries: &[DueEntry]) -> Vec<i64> {
    entries.iter().map(|e| e.id).collect()
}

/// The default tenant's timers by state.
pub(super) async fn counts(store: &S) -> HashMap<TimerState, u64> {
    counts_of(store, DEFAULT_TENANT).await
}

/// One tenant's timers by state, checking the whole count's shape on the way.
pub(super) async fn counts_of(store: &S, tenant: TenantId) -> HashMap<TimerState, u64> {
    let counts = store
        .count_by_tenant_state()
        .await
        .expect("count_by_tenant_state");
    let pairs: HashMap<_, _> = counts.iter().map(|&(t, s, n)| ((t, s), n)).collect();
    assert_eq!(pairs.len(), counts.len(), "a pair listed twice: {counts:?}");
    assert!(
        counts.iter().all(|&(_, _, n)| n > 0),
        "zero counts: {counts:?}"
    );
    let mut sorted = counts.clone();
    sorted.sort_by_key(|&(t, s, _)| (t, s.code()));
    assert_eq!(sorted, counts, "not ordered by tenant, then state");
    counts
        .iter()
        .filter(|&&(t, _, _)| t == tenant)
        .map(|&(_, s, n)| (s, n))
        .collect()
}

/// A sealed audience of `n` fixture recipients, made at `at`.
pub(crate) async fn sealed_audience(store: &S, n: u64, at: i64) -> i64 {
    sealed_audience_of(store, DEFAULT_TENANT, n, at).await
}

/// [`sealed_audience`] of `tenant`.
pub(crate) async fn sealed_audience_of(
    store: &S,
    tenant: herald_core::TenantId,
    n: u64,
    at: i64,
) -> i64 {
    let id = store
        .create_audience(tenant, Some(format!("audience of {n}")), at)
        .await
        .expect("create_audience");
    for start in chunk_starts(n) {
        let end = (start + crate::AUDIENCE_CHUNK).min(n);
        store
            .append_audience(id, start, &recipients(start..end))
            .await
            .expect("append_audience");
    }
    let sealed = store
        .seal_audience(id, n, at)
        .await
        .expect("seal_audience")
        .expect("sealed");
    assert_eq!(sealed.size, Some(n));
    id
}
