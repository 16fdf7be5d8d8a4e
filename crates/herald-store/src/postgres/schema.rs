//! The PostgreSQL schema: the migrations in `migrations/`, numbered as
//! SQLite's are (see [`crate::migration`]). `herald_migrations` records each
//! one applied, by number and name.
//!
//! Releases before this numbering recorded four migrations without names,
//! the first of which held what is now `0001_timers` and `0002_cluster`. A
//! database with such rows is renumbered on open (old `k` is new `k + 1`) in
//! the migrating transaction, before anything is applied, so nothing runs
//! twice.

use crate::migration::{self, Migration};
use crate::{Result, StoreError};

use super::Ctx;

/// Key of the transaction-level advisory lock held while migrating, so nodes
/// starting together migrate one after the other ("herald" + 1).
const MIGRATION_LOCK: i64 = 0x6865_7261_6c64_0001;

/// `name` is null in rows written before migrations had names.
const MIGRATIONS_TABLE: &str = "CREATE TABLE IF NOT EXISTS herald_migrations (
    version    INTEGER PRIMARY KEY,
    applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
ALTER TABLE herald_migrations ADD COLUMN IF NOT EXISTS name TEXT";

const RECORDED: &str =
    "SELECT version, name IS NULL, applied_at::text FROM herald_migrations ORDER BY version";
const FORGET_ALL: &str = "DELETE FROM herald_migrations";
const RECORD_AT: &str = "INSERT INTO herald_migrations (version, name, applied_at) \
    VALUES ($1, $2, CAST($3::text AS timestamptz))";
const RECORD: &str = "INSERT INTO herald_migrations (version, name) VALUES ($1, $2)";

pub(super) const MIGRATIONS: &[Migration] = migration::migrations!();

/// The version of a migration by its place in [`MIGRATIONS`] (0-based).
fn version_of(index: usize) -> Result<i32> {
    i32::try_from(index + 1)
        .map_err(|_| StoreError::Internal("postgres: too many migrations".into()))
}

/// Applies the migrations this database has not seen yet, in one transaction,
/// under an advisory lock so concurrent openers take turns.
pub(super) async fn migrate(client: &mut deadpool_postgres::Object) -> Result<()> {
    let tx = client.transaction().await.ctx("beginning migration")?;
    // A migration of a large table may take longer than any query should:
    // the statement timeout of every session does not apply to it.
    tx.batch_execute("SET LOCAL statement_timeout = 0")
        .await
        .ctx("lifting the statement timeout for the migration")?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .ctx("taking the migration lock")?;
    tx.batch_execute(MIGRATIONS_TABLE)
        .await
        .ctx("creating herald_migrations")?;
    let current = current_version(&tx).await?;
    let known = migration::latest(MIGRATIONS);
    if current > known {
        return Err(StoreError::refused(
            "store",
            format!(
                "postgres: database schema version {current} is newer than this build knows ({known})"
            ),
        ));
    }
    let done = usize::try_from(current)
        .map_err(|_| StoreError::Corrupt(format!("postgres: schema version {current}")))?;
    for (i, m) in MIGRATIONS.iter().enumerate().skip(done) {
        tx.batch_execute(m.sql)
            .await
            .ctx(&format!("applying migration {}", m.name))?;
        tx.execute(RECORD, &[&version_of(i)?, &m.name])
            .await
            .ctx("recording the migration")?;
        tracing::info!(migration = m.name, "applied postgres migration");
    }
    tx.commit().await.ctx("committing migration")
}

/// The schema version the database is at, in this numbering: recorded rows
/// of the old numbering are rewritten first (old `k` is new `k + 1`, each
/// keeping the time its old step was applied).
async fn current_version(tx: &deadpool_postgres::Transaction<'_>) -> Result<i64> {
    let rows = tx
        .query(RECORDED, &[])
        .await
        .ctx("reading the schema version")?;
    let mut recorded = Vec::with_capacity(rows.len());
    for row in &rows {
        let version: i32 = super::col(row, 0, "herald_migrations.version")?;
        let unnamed: bool = super::col(row, 1, "herald_migrations.name")?;
        let applied_at: String = super::col(row, 2, "herald_migrations.applied_at")?;
        recorded.push((i64::from(version), unnamed, applied_at));
    }
    let latest = recorded.last().map_or(0, |r| r.0);
    if !recorded.iter().any(|r| r.1) {
        return Ok(latest);
    }
    let current = latest + 1;
    let known = migration::latest(MIGRATIONS);
    if current > known {
        // Newer than this build either way: `migrate` refuses it.
        return Ok(current);
    }
    tx.execute(FORGET_ALL, &[])
        .await
        .ctx("renumbering the migrations")?;
    let applied_at = |old: i64| {
        recorded
            .iter()
            .find(|r| r.0 == old)
            .map(|r| r.2.clone())
            .ok_or_else(|| {
                StoreError::Corrupt(format!("postgres: herald_migrations has no version {old}"))
            })
    };
    let done = usize::try_from(current).unwrap_or(0);
    for (i, m) in MIGRATIONS.iter().enumerate().take(done) {
        let version = version_of(i)?;
        // New 1 and 2 were old 1; new k + 1 was old k.
        let at = applied_at(i64::from(version - 1).max(1))?;
        tx.execute(RECORD_AT, &[&version, &m.name, &at])
            .await
            .ctx("renumbering the migrations")?;
    }
    tracing::info!(
        from = latest,
        to = current,
        "renumbered the postgres migrations recorded by an older release"
    );
    Ok(current)
}

#[cfg(test)]
mod tests {
    use super::MIGRATIONS;
    use crate::StoreOptions;
    use crate::migration;
    use crate::postgres::PgStore;
    use crate::prelude::*;

    #[test]
    fn migrations_are_numbered_in_order() {
        migration::check_numbering(MIGRATIONS);
    }

    /// A database the release before the numbering left at its migration 3
    /// (now 4) keeps its rows, is renumbered, and gains what 5 and 6 add.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_old_numbered_database_upgrades_in_place() {
        let Some(pg) = herald_pgtemp::PgTemp::shared().expect("cluster") else {
            return;
        };
        let db = pg.fresh_database("upgrade").expect("database");
        let (client, conn) = tokio_postgres::connect(db.url(), tokio_postgres::NoTls)
            .await
            .expect("connect");
        tokio::spawn(conn);
        // As the old release left it: its migrations 1..=3, recorded without names.
        client
            .batch_execute(
                "CREATE TABLE herald_migrations (
                    version    INTEGER PRIMARY KEY,
                    applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
                );
                INSERT INTO herald_migrations (version, applied_at) VALUES
                    (1, '2026-01-01 00:00:00+00'), (2, '2026-01-02 00:00:00+00'),
                    (3, '2026-01-03 00:00:00+00');",
            )
            .await
            .unwrap();
        for m in &MIGRATIONS[..4] {
            client.batch_execute(m.sql).await.unwrap();
        }
        client
            .batch_execute(
                "INSERT INTO deliveries (id, timer_id, attempt, channel, outcome, \
                     idempotency_key, provider_msgid, started_at, finished_at) \
                 VALUES (7, 1, 1, 'wechat', 'delivered', 'k', 'm-1', 10, 20); \
                 INSERT INTO jobs (id, audience_id, channel, message, segment_size, priority, \
                     state, total, created_at) VALUES (3, 1, 'wechat', '{}', 10, 0, 'running', 1, 0); \
                 INSERT INTO job_sends (job_id, idx, recipient, state, attempts, msgid, updated_at) \
                 VALUES (3, 0, 'u', 'delivered', 1, 'm-1', 30);",
            )
            .await
            .unwrap();
        let store = PgStore::open(db.url(), &StoreOptions::default())
            .await
            .expect("open migrates");
        let recorded: Vec<(i32, String, String)> = client
            .query(
                "SELECT version, name, applied_at::date::text FROM herald_migrations \
                 ORDER BY version",
                &[],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect();
        let names: Vec<(i32, &str)> = recorded.iter().map(|r| (r.0, r.1.as_str())).collect();
        let want: Vec<(i32, &str)> = MIGRATIONS
            .iter()
            .enumerate()
            .map(|(i, m)| (i as i32 + 1, m.name))
            .collect();
        assert_eq!(names, want);
        let dates: Vec<&str> = recorded[..4].iter().map(|r| r.2.as_str()).collect();
        assert_eq!(
            dates,
            ["2026-01-01", "2026-01-01", "2026-01-02", "2026-01-03"]
        );
        let d = store.get_delivery(7).await.unwrap().unwrap();
        assert_eq!(d.provider_msgid.as_deref(), Some("m-1"));
        assert_eq!((d.final_status, d.final_at), (None, None));
        assert_eq!(
            store
                .record_final_status("wechat", "m-1", "success", 40)
                .await
                .unwrap(),
            2
        );
        let sends = crate::CampaignStore::job_sends(&store, 3, 0, 1)
            .await
            .unwrap();
        assert_eq!(sends[0].final_status.as_deref(), Some("success"));
        assert!(store.mark_delivery_recalled(7, 50).await.unwrap());
        assert!(store.get_channel_token("k").await.unwrap().is_none());
        // Opening again changes nothing.
        drop(store);
        PgStore::open(db.url(), &StoreOptions::default())
            .await
            .expect("open again");
        let n: i64 = client
            .query_one("SELECT count(*) FROM herald_migrations", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, MIGRATIONS.len() as i64);
    }
}
