//! The SQLite schema: the migrations in `migrations/`, numbered as
//! PostgreSQL's are (see [`crate::migration`]). `PRAGMA user_version` is the
//! number applied.

use rusqlite::{Connection, TransactionBehavior};

use super::error::Ctx;
use crate::migration::{self, Migration};
use crate::{Result, StoreError};

pub(super) const MIGRATIONS: &[Migration] = migration::migrations!();

/// Applies the migrations this database has not seen yet, all in one transaction.
pub(super) fn migrate(conn: &mut Connection) -> Result<()> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("beginning migration")?;
    let current: i64 = tx
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .ctx("reading user_version")?;
    let known = migration::latest(MIGRATIONS);
    if current > known {
        return Err(StoreError::refused(
            "store",
            format!(
                "sqlite: database schema version {current} is newer than this build knows ({known})"
            ),
        ));
    }
    let done = usize::try_from(current)
        .map_err(|_| StoreError::Corrupt(format!("sqlite: negative schema version {current}")))?;
    for m in &MIGRATIONS[done..] {
        tx.execute_batch(m.sql)
            .ctx(&format!("applying migration {}", m.name))?;
        tracing::info!(migration = m.name, "applied sqlite migration");
    }
    if current < known {
        tx.pragma_update(None, "user_version", known)
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
    fn migrations_are_numbered_in_order() {
        migration::check_numbering(MIGRATIONS);
    }

    #[test]
    fn migrations_are_idempotent() {
        let mut conn = migrated();
        migrate(&mut conn).unwrap();
        let v: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(v, migration::latest(MIGRATIONS));
    }

    /// A database left at migration 4 by the previous release keeps its rows
    /// and gains the new columns (empty), indexes and table.
    #[test]
    fn a_version_4_database_upgrades_in_place() {
        let mut conn = configured();
        for m in &MIGRATIONS[..4] {
            conn.execute_batch(m.sql).unwrap();
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
        assert_eq!(v, migration::latest(MIGRATIONS));
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
