//! Filling a SQLite store with finished timers straight through SQL, for
//! `herald bench purge`: five million done timers take minutes through the
//! API but seconds as `INSERT ... SELECT` over a counter. The rows look like
//! what the engine leaves behind: a done `timer` with one `delivered` row in
//! its send log, finished at the given time.
//!
//! Only for a store no server has open: it writes with its own connection and
//! `synchronous = OFF` (a crash mid-fill leaves a store to throw away).

use std::path::Path;

use rusqlite::{Connection, params};

use super::error::Ctx;
use crate::Result;

/// Rows per transaction, so the WAL stays a few hundred MiB at most.
const CHUNK: u64 = 250_000;

// ?1 how many, ?2 first finish time (ms), ?3 offset of the first row. Each row
// finishes 1 ms after the previous one, so they sit in age order like real ones.
const INSERT_DONE_TIMERS: &str = "INSERT INTO timers \
    (shard, due_at, priority, kind, state, channel, recipient, message, attempts, \
     created_at, updated_at, delivered_at) \
    WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?1) \
    SELECT 0, ?2 + i, 0, 'timer', 2, 'sink', 'seed-' || (?3 + i), \
           '{\"n\":' || (?3 + i) || '}', 1, ?2 + i, ?2 + i, ?2 + i FROM n";
// `timers` has no insert trigger (migration 0022): the engine's write batch
// counts what it inserts, and so does this fill, for the rows above `?1`.
const COUNT_TIMERS: &str = "INSERT INTO timer_counts (tenant_id, state, n) \
    SELECT tenant_id, state, count(*) FROM timers WHERE id > ?1 GROUP BY tenant_id, state \
    ON CONFLICT (tenant_id, state) DO UPDATE SET n = n + excluded.n";
// The send log of the timers above `?1` (the largest id before the chunk).
const INSERT_DELIVERIES: &str = "INSERT INTO deliveries \
    (timer_id, attempt, channel, outcome, idempotency_key, status, started_at, finished_at) \
    SELECT id, 1, channel, 'delivered', 'herald-timer-' || id, 200, updated_at, updated_at \
    FROM timers WHERE id > ?1";

/// Adds `n` done timers, each with its one delivery, finished from
/// `finished_from` (Unix ms) on, 1 ms apart, to the migrated store at `path`.
/// Returns how many timers were written.
pub fn seed_finished_timers(path: &Path, n: u64, finished_from: i64) -> Result<u64> {
    let mut conn = Connection::open(path).ctx("opening the store to seed")?;
    conn.pragma_update(None, "synchronous", "OFF")
        .ctx("setting synchronous")?;
    let mut written = 0;
    while written < n {
        let chunk = CHUNK.min(n - written);
        let tx = conn.transaction().ctx("seeding")?;
        let last: i64 = tx
            .query_row("SELECT coalesce(max(id), 0) FROM timers", [], |r| r.get(0))
            .ctx("reading the last timer id")?;
        let from = finished_from.saturating_add(written as i64);
        let added = tx
            .execute(
                INSERT_DONE_TIMERS,
                params![chunk as i64, from, written as i64],
            )
            .ctx("seeding timers")?;
        tx.execute(INSERT_DELIVERIES, [last])
            .ctx("seeding deliveries")?;
        tx.execute(COUNT_TIMERS, [last])
            .ctx("counting seeded timers")?;
        tx.commit().ctx("seeding")?;
        written += added as u64;
    }
    conn.pragma_update(None, "wal_checkpoint", "TRUNCATE")
        .ctx("checkpointing the seed")?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prelude::*;
    use crate::sqlite::SqliteStore;
    use crate::{RetentionKind, StoreOptions};

    /// Seeded timers are what the timer retention finds and deletes with
    /// their send log, and nothing the API would not have left.
    #[tokio::test]
    async fn seeded_timers_are_finished_timers_retention_deletes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seed.db");
        let opts = StoreOptions::default();
        drop(SqliteStore::open(&path, &opts).await.unwrap());
        let t0 = 1_700_000_000_000;
        assert_eq!(seed_finished_timers(&path, 2_500, t0).unwrap(), 2_500);
        let store = SqliteStore::open(&path, &opts).await.unwrap();
        let timer = store
            .get_timer(2_500)
            .await
            .unwrap()
            .expect("the last seeded timer");
        assert_eq!(timer.state, herald_core::TimerState::Done);
        assert_eq!(store.deliveries_for(timer.id).await.unwrap().len(), 1);
        // The first 1,000 are older than the cutoff, the rest are not.
        let cutoff = t0 + 1_000;
        let mut deleted = 0;
        loop {
            let n = store
                .purge(RetentionKind::Timers, cutoff, 400)
                .await
                .unwrap();
            deleted += n;
            if n < 400 {
                break;
            }
        }
        assert_eq!(deleted, 1_000);
        assert!(store.get_timer(1).await.unwrap().is_none());
        assert!(store.deliveries_for(1).await.unwrap().is_empty());
        assert!(store.get_timer(1_001).await.unwrap().is_some());
    }
}
