//! The filer: adds new timers to the search indexes in the background.
//!
//! A timer is inserted unfiled (migration `0042_search_filing`): into the
//! due index and the short `timers_unfiled`, not into the three search
//! indexes, whose scattered keys (a recipient above all) made every insert
//! dirty pages of its own in SQLite's one writer. The filer sets `filed` on
//! the oldest unfiled timers in batches, so a page of an index takes many
//! rows in one commit. Searches find unfiled timers meanwhile through
//! `timers_unfiled` (see `timer_query::walk`), so filing changes what a
//! search costs, never what it answers.
//!
//! It yields to the store's other writes: a batch starts when nothing holds
//! the writer, or, under a write load that never pauses, once every
//! [`MAX_WAIT`], so the backlog cannot grow for ever; and after a batch it
//! rests at least as long as the batch took, so filing takes at most half of
//! the writer.

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::checkpointer::Checkpointer;
use super::error::Ctx;
use super::pool::ConnPool;
use crate::Result;

/// Timers filed a transaction: large enough that most pages of an index
/// take several rows, small enough that a write waiting behind it waits a
/// few tens of milliseconds.
pub(super) const BATCH: usize = 2_000;

/// How often the filer looks for a free writer.
const TICK: Duration = Duration::from_millis(10);

/// The longest the filer waits for a free writer before it files a batch
/// anyway.
const MAX_WAIT: Duration = Duration::from_millis(250);

/// The rest after a failed batch (the store is failing: no point trying hard).
const AFTER_ERROR: Duration = Duration::from_secs(1);

// ?1 most rows. Oldest first, through the index of unfiled ids.
const FILE: &str = "UPDATE timers SET filed = 1 WHERE id IN \
    (SELECT id FROM timers INDEXED BY timers_unfiled WHERE filed = 0 ORDER BY id LIMIT ?1)";

// The oldest unfiled timer's creation: its id is the least in the index of
// unfiled ids, so this is one probe of that index and one of the table.
const OLDEST: &str = "SELECT created_at FROM timers WHERE id = \
    (SELECT id FROM timers INDEXED BY timers_unfiled WHERE filed = 0 ORDER BY id LIMIT 1)";

/// When the oldest timer not yet filed was created; `None` when the filer
/// has caught up. Its age is the lag the `herald_search_filing_lag_seconds`
/// gauge shows.
pub(super) fn oldest_unfiled(conn: &mut Connection) -> Result<Option<i64>> {
    conn.prepare_cached(OLDEST)
        .ctx("preparing the oldest unfiled timer")?
        .query_row([], |r| r.get(0))
        .optional()
        .ctx("reading the oldest unfiled timer")
}

/// Files up to `limit` of the oldest unfiled timers in one transaction;
/// returns how many it filed (fewer than `limit`: none is left).
pub(super) fn file_batch(conn: &mut Connection, limit: usize) -> Result<usize> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("beginning filing")?;
    let filed = tx
        .prepare_cached(FILE)
        .ctx("preparing filing")?
        .execute(params![i64::try_from(limit).unwrap_or(i64::MAX)])
        .ctx("filing timers")?;
    tx.commit().ctx("committing filing")?;
    Ok(filed)
}

/// The running filer; it stops when dropped (or when its store is gone).
pub(super) struct Filer {
    task: tokio::task::JoinHandle<()>,
}

impl Filer {
    /// Starts filing on the current Tokio runtime; `None` outside one (a
    /// store opened without a runtime files nothing, and its searches stay
    /// right, only slower).
    pub(super) fn start(
        writer: &Arc<ConnPool>,
        checkpointer: Option<&Arc<Checkpointer>>,
    ) -> Option<Self> {
        let handle = tokio::runtime::Handle::try_current().ok()?;
        let writer = Arc::downgrade(writer);
        let checkpointer = checkpointer.map(Arc::downgrade);
        Some(Filer {
            task: handle.spawn(run(writer, checkpointer)),
        })
    }
}

impl Drop for Filer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn run(writer: Weak<ConnPool>, checkpointer: Option<Weak<Checkpointer>>) {
    let mut waited = Duration::ZERO;
    loop {
        tokio::time::sleep(TICK).await;
        let Some(pool) = writer.upgrade() else {
            return;
        };
        if !pool.idle() && waited < MAX_WAIT {
            waited += TICK;
            continue;
        }
        waited = Duration::ZERO;
        let started = Instant::now();
        let filed = pool.call(|c| file_batch(c, BATCH)).await;
        drop(pool);
        if let Some(c) = checkpointer.as_ref().and_then(Weak::upgrade) {
            c.poke();
        }
        match filed {
            // Caught up: look again after a tick.
            Ok(n) if n < BATCH => {}
            Ok(_) => tokio::time::sleep(started.elapsed()).await,
            Err(e) => {
                tracing::warn!(error = %e, "filing timers for search failed");
                tokio::time::sleep(AFTER_ERROR).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite::testing::migrated;

    fn unfiled(conn: &Connection) -> i64 {
        conn.query_row("SELECT count(*) FROM timers WHERE filed = 0", [], |r| {
            r.get(0)
        })
        .unwrap()
    }

    #[test]
    fn batches_file_the_oldest_first_until_none_is_left() {
        let mut conn = migrated();
        conn.execute_batch(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5) \
             INSERT INTO timers (shard, due_at, priority, kind, state, channel, recipient, \
             message, created_at, updated_at, filed) \
             SELECT 0, 1000 - i, 0, 'timer', 0, 'sink', 'u' || i, '{}', 10 * i, 0, 0 FROM n",
        )
        .unwrap();
        assert_eq!(oldest_unfiled(&mut conn).unwrap(), Some(10));
        assert_eq!(file_batch(&mut conn, 3).unwrap(), 3);
        assert_eq!(oldest_unfiled(&mut conn).unwrap(), Some(40));
        let left: Vec<i64> = conn
            .prepare("SELECT id FROM timers WHERE filed = 0 ORDER BY id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(left, vec![4, 5]);
        assert_eq!(file_batch(&mut conn, 3).unwrap(), 2);
        assert_eq!(unfiled(&conn), 0);
        assert_eq!(oldest_unfiled(&mut conn).unwrap(), None);
        assert_eq!(file_batch(&mut conn, 3).unwrap(), 0);
    }

    /// Filing and the oldest unfiled timer both walk `timers_unfiled` and
    /// reach rows by id: no other scan.
    #[test]
    fn filing_and_its_lag_walk_the_unfiled_index() {
        let conn = migrated();
        for sql in [FILE, OLDEST] {
            let p = crate::sqlite::testing::plan(&conn, sql);
            assert!(p.contains("COVERING INDEX timers_unfiled"), "{p}");
            assert!(p.contains("INTEGER PRIMARY KEY"), "{p}");
            assert!(crate::sqlite::testing::scans_only_unfiled(&p), "{p}");
        }
    }
}
