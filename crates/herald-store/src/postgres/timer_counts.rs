//! Timer counts per tenant and state on PostgreSQL (migration 0020):
//! `timer_counts` plus the change rows statement triggers append to
//! `timer_count_deltas`, and the fold that moves those into the totals.
//! Appending takes no lock another writer waits on; the fold is the only
//! writer of `timer_counts`.

use herald_core::{TenantId, TimerState};

use super::{Ctx, PgStore};
use crate::Result;
use crate::model;

/// The totals and the changes not folded yet, as of one snapshot.
const COUNTED: &str = "SELECT tenant_id, state, sum(n)::int8 AS count FROM ( \
        SELECT tenant_id, state, n FROM timer_counts \
        UNION ALL SELECT tenant_id, state, n FROM timer_count_deltas) AS c \
    GROUP BY tenant_id, state HAVING sum(n) > 0 ORDER BY tenant_id, state";
const SCANNED: &str = "SELECT tenant_id, state, count(*) AS count FROM timers \
    GROUP BY tenant_id, state ORDER BY tenant_id, state";
/// Key of the advisory lock one folder holds ("herald" + 0x19, the migration).
const FOLD_LOCK: i64 = 0x6865_7261_6c64_0019;
/// Deletes the change rows this snapshot sees (a change committed meanwhile
/// stays for the next fold) and adds them to the totals, in one statement.
const FOLD: &str = "WITH gone AS (DELETE FROM timer_count_deltas RETURNING tenant_id, state, n), \
    folded AS (INSERT INTO timer_counts (tenant_id, state, n) \
        SELECT tenant_id, state, sum(n) FROM gone GROUP BY tenant_id, state \
        ON CONFLICT (tenant_id, state) DO UPDATE SET n = timer_counts.n + excluded.n) \
    SELECT count(*) FROM gone";

pub(super) async fn counted(store: &PgStore) -> Result<Vec<(TenantId, TimerState, u64)>> {
    rows(store, COUNTED, "reading timer counts").await
}

pub(super) async fn scanned(store: &PgStore) -> Result<Vec<(TenantId, TimerState, u64)>> {
    rows(store, SCANNED, "counting timers").await
}

async fn rows(
    store: &PgStore,
    sql: &str,
    what: &'static str,
) -> Result<Vec<(TenantId, TimerState, u64)>> {
    let client = store.client().await?;
    let stmt = client.prepare_cached(sql).await.ctx(what)?;
    client
        .query(&stmt, &[])
        .await
        .ctx(what)?
        .iter()
        .map(model::decode)
        .collect()
}

/// See [`crate::TimerStore::fold_timer_counts`]. One transaction; a node that
/// finds another folding returns 0 rather than wait for it.
pub(super) async fn fold(store: &PgStore) -> Result<u64> {
    let mut client = store.client().await?;
    let tx = client.transaction().await.ctx("beginning fold")?;
    let locked: bool = tx
        .query_one("SELECT pg_try_advisory_xact_lock($1)", &[&FOLD_LOCK])
        .await
        .ctx("locking the fold")?
        .try_get(0)
        .ctx("locking the fold")?;
    if !locked {
        return Ok(0);
    }
    let stmt = tx.prepare_cached(FOLD).await.ctx("preparing fold")?;
    let n: i64 = tx
        .query_one(&stmt, &[])
        .await
        .ctx("folding timer counts")?
        .try_get(0)
        .ctx("folding timer counts")?;
    tx.commit().await.ctx("committing fold")?;
    Ok(u64::try_from(n).unwrap_or(0))
}
