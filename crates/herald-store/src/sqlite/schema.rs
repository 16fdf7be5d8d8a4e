//! The SQLite schema and its migrations.

use rusqlite::{Connection, TransactionBehavior};

use super::error::Ctx;
use crate::{Result, StoreError};

/// Schema migrations, applied in order; `PRAGMA user_version` is the number applied.
/// Append new entries, never edit old ones.
///
/// State codes are `TimerState::code()`: 0 pending, 2 done, 3 failed, 4 cancelled,
/// 5 dead. `timers.id` is `AUTOINCREMENT` so an id is never reused even if old rows
/// are purged one day: `herald-timer-{id}` is the delivery key of timers without an
/// idempotency key, and a reused id would make providers drop a new message as a
/// duplicate of an old one.
pub(super) const MIGRATIONS: &[&str] = &[
    // 1: timers, send log, meta.
    "CREATE TABLE timers (
        id              INTEGER PRIMARY KEY AUTOINCREMENT,
        shard           INTEGER NOT NULL,
        due_at          INTEGER NOT NULL,
        priority        INTEGER NOT NULL,
        kind            TEXT    NOT NULL,
        state           INTEGER NOT NULL,
        channel         TEXT    NOT NULL,
        recipient       TEXT    NOT NULL,
        message         TEXT    NOT NULL,
        idempotency_key TEXT,
        attempts        INTEGER NOT NULL DEFAULT 0,
        last_error      TEXT,
        created_at      INTEGER NOT NULL,
        updated_at      INTEGER NOT NULL,
        delivered_at    INTEGER
    ) STRICT;
    CREATE INDEX timers_pending_due ON timers (due_at, id) WHERE state = 0;
    CREATE UNIQUE INDEX timers_idempotency_key ON timers (idempotency_key)
        WHERE idempotency_key IS NOT NULL;
    CREATE TABLE deliveries (
        id              INTEGER PRIMARY KEY,
        timer_id        INTEGER NOT NULL,
        attempt         INTEGER NOT NULL,
        channel         TEXT    NOT NULL,
        outcome         TEXT    NOT NULL,
        idempotency_key TEXT    NOT NULL,
        provider_msgid  TEXT,
        status          INTEGER,
        error           TEXT,
        started_at      INTEGER NOT NULL,
        finished_at     INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX deliveries_timer ON deliveries (timer_id);
    CREATE TABLE meta (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
    ) STRICT, WITHOUT ROWID;",
    // 2: cluster membership, shard leases, named leases.
    super::cluster::SCHEMA,
    // 3: subjects and reminder subscriptions.
    super::reminders::SCHEMA,
    // 4: audiences, rules, tasks, jobs, segments, job send log.
    super::campaign::SCHEMA,
    // 5: final delivery status on both send logs, channel access tokens.
    super::provider::SCHEMA,
    // 6: index columns end in `_idx` on both backends.
    "ALTER TABLE segments RENAME COLUMN cursor TO cursor_idx;",
];

/// Applies the migrations this database has not seen yet, all in one transaction.
pub(super) fn migrate(conn: &mut Connection) -> Result<()> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("beginning migration")?;
    let current: i64 = tx
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .ctx("reading user_version")?;
    let known = MIGRATIONS.len();
    let current = usize::try_from(current)
        .map_err(|_| StoreError::Corrupt(format!("sqlite: negative schema version {current}")))?;
    if current > known {
        return Err(StoreError::refused(
            "store",
            format!(
                "sqlite: database schema version {current} is newer than this build knows ({known})"
            ),
        ));
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(current) {
        tx.execute_batch(sql)
            .ctx(&format!("applying migration {}", i + 1))?;
        tracing::info!(version = i + 1, "applied sqlite migration");
    }
    if current < known {
        tx.pragma_update(None, "user_version", known as i64)
            .ctx("writing user_version")?;
    }
    tx.commit().ctx("committing migration")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite::provider::{
        get_channel_token, get_delivery, mark_delivery_recalled, record_final_status,
    };
    use crate::sqlite::testing::{configured, migrated};

    #[test]
    fn migrations_are_idempotent() {
        let mut conn = migrated();
        migrate(&mut conn).unwrap();
        let v: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(v, MIGRATIONS.len() as i64);
    }

    /// A database left at migration 4 by the previous release keeps its rows
    /// and gains the new columns (empty), indexes and table.
    #[test]
    fn a_version_4_database_upgrades_in_place() {
        let mut conn = configured();
        for sql in &MIGRATIONS[..4] {
            conn.execute_batch(sql).unwrap();
        }
        conn.pragma_update(None, "user_version", 4).unwrap();
        conn.execute_batch(
            "INSERT INTO deliveries (id, timer_id, attempt, channel, outcome, idempotency_key, \
                 provider_msgid, started_at, finished_at) \
             VALUES (7, 1, 1, 'wechat', 'delivered', 'k', 'm-1', 10, 20); \
             INSERT INTO jobs (id, audience_id, channel, message, segment_size, priority, state, \
                 total, created_at) VALUES (3, 1, 'wechat', '{}', 10, 0, 'running', 1, 0); \
             INSERT INTO job_sends (job_id, idx, recipient, state, attempts, msgid, updated_at) \
             VALUES (3, 0, 'u', 0, 1, 'm-2', 30);",
        )
        .unwrap();
        migrate(&mut conn).unwrap();
        let v: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(v, MIGRATIONS.len() as i64);
        let d = get_delivery(&mut conn, 7).unwrap().unwrap();
        assert_eq!(d.provider_msgid.as_deref(), Some("m-1"));
        assert_eq!((d.final_status, d.final_at), (None, None));
        assert_eq!(
            record_final_status(&mut conn, "wechat", "m-1", "success", 40).unwrap(),
            1
        );
        assert_eq!(
            record_final_status(&mut conn, "wechat", "m-2", "success", 40).unwrap(),
            1
        );
        assert!(mark_delivery_recalled(&mut conn, 7, 50).unwrap());
        assert!(get_channel_token(&mut conn, "k").unwrap().is_none());
    }
}
