//! The PostgreSQL schema and its migrations.

use crate::{Result, StoreError};

use super::Ctx;

/// Key of the transaction-level advisory lock held while migrating, so nodes
/// starting together migrate one after the other ("herald" + 1).
const MIGRATION_LOCK: i64 = 0x6865_7261_6c64_0001;

const MIGRATIONS_TABLE: &str = "CREATE TABLE IF NOT EXISTS herald_migrations (
    version    INTEGER PRIMARY KEY,
    applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
)";

/// Schema migrations, applied in order; `herald_migrations` records each one
/// applied. Append new entries, never edit old ones.
///
/// The tables mirror the SQLite schema. State codes are `TimerState::code()`:
/// 0 pending, 2 done, 3 failed, 4 cancelled, 5 dead. Timer ids come from a
/// sequence and are never reused (`herald-timer-{id}` is the delivery key of
/// timers without an idempotency key). Times are unix milliseconds in `BIGINT`.
/// Shards are `INTEGER` because a `u16` does not fit a `SMALLINT`. Keys, node ids
/// and lease names use the "C" collation: byte order, as in SQLite, whatever the
/// database's default collation is, and cheaper comparisons.
///
/// `timers_pending_due` carries `shard` and `priority` so that `load_due` can be
/// answered from the index alone once the table is vacuumed.
pub(super) const MIGRATIONS: &[&str] = &[
    // 1: timers, send log, meta, cluster membership, shard and named leases.
    r#"
    CREATE TABLE timers (
        id              BIGSERIAL PRIMARY KEY,
        shard           INTEGER  NOT NULL,
        due_at          BIGINT   NOT NULL,
        priority        SMALLINT NOT NULL,
        kind            TEXT     NOT NULL,
        state           SMALLINT NOT NULL,
        channel         TEXT     NOT NULL,
        recipient       TEXT     NOT NULL,
        message         TEXT     NOT NULL,
        idempotency_key TEXT COLLATE "C",
        attempts        BIGINT   NOT NULL DEFAULT 0,
        last_error      TEXT,
        created_at      BIGINT   NOT NULL,
        updated_at      BIGINT   NOT NULL,
        delivered_at    BIGINT
    );
    CREATE INDEX timers_pending_due ON timers (due_at, id) INCLUDE (shard, priority)
        WHERE state = 0;
    CREATE UNIQUE INDEX timers_idempotency_key ON timers (idempotency_key)
        WHERE idempotency_key IS NOT NULL;
    CREATE TABLE deliveries (
        id              BIGSERIAL PRIMARY KEY,
        timer_id        BIGINT NOT NULL,
        attempt         BIGINT NOT NULL,
        channel         TEXT   NOT NULL,
        outcome         TEXT   NOT NULL,
        idempotency_key TEXT   NOT NULL,
        provider_msgid  TEXT,
        status          BIGINT,
        error           TEXT,
        started_at      BIGINT NOT NULL,
        finished_at     BIGINT NOT NULL
    );
    CREATE INDEX deliveries_timer ON deliveries (timer_id, id);
    CREATE TABLE meta (
        key   TEXT COLLATE "C" PRIMARY KEY,
        value TEXT NOT NULL
    );
    CREATE TABLE nodes (
        node_id    TEXT COLLATE "C" PRIMARY KEY,
        started_at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL
    );
    CREATE TABLE shard_leases (
        shard       INTEGER PRIMARY KEY,
        owner       TEXT COLLATE "C",
        lease_until BIGINT NOT NULL,
        epoch       BIGINT NOT NULL
    );
    CREATE TABLE named_leases (
        name        TEXT COLLATE "C" PRIMARY KEY,
        holder      TEXT COLLATE "C" NOT NULL,
        lease_until BIGINT NOT NULL,
        epoch       BIGINT NOT NULL
    );
    "#,
    // 2: subjects and reminder subscriptions (see `reminders.rs`). A set bit of
    // `reminders.bits` has exactly one `reminder_timers` row, whose primary key
    // is what makes two nodes adding the same bit at once create one timer.
    // `reminder_timers_subject` serves moving and deleting a subject.
    r#"
    CREATE TABLE subjects (
        subject_id TEXT COLLATE "C" PRIMARY KEY,
        start_at   BIGINT NOT NULL,
        title      TEXT,
        data       TEXT,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL
    );
    CREATE TABLE reminders (
        user_id    TEXT COLLATE "C" NOT NULL,
        subject_id TEXT COLLATE "C" NOT NULL,
        bits       BIGINT NOT NULL,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        PRIMARY KEY (user_id, subject_id)
    );
    CREATE TABLE reminder_timers (
        user_id    TEXT COLLATE "C" NOT NULL,
        subject_id TEXT COLLATE "C" NOT NULL,
        bit        SMALLINT NOT NULL,
        timer_id   BIGINT NOT NULL,
        PRIMARY KEY (user_id, subject_id, bit)
    );
    CREATE INDEX reminder_timers_subject ON reminder_timers (subject_id) INCLUDE (timer_id);
    "#,
    // 3: campaigns (see `campaign/mod.rs`): audiences in chunks, versioned rules,
    // append-only tasks, jobs with exact counters, segments and the job send log.
    // States are the `as_str()` names of the herald-core enums. Index columns
    // are named `*_idx` (`end` is a reserved word). Every hot path has its
    // index: the claim walks `segments_claim` (pending only, priority first,
    // carrying what the claim filters on), the sweeper `segments_lease`,
    // `segments_partial` and the running-job indexes, retry lookups
    // `job_sends_retry`; nothing on them scans a table. `segments_lease` also
    // requires a lease: the sweeper's `lease_until < now` implies it, a lookup
    // of one running segment by id does not, so that one cannot wander into
    // it (see `campaign/plans.rs`).
    r#"
    CREATE TABLE audiences (
        id         BIGSERIAL PRIMARY KEY,
        name       TEXT,
        size       BIGINT,
        created_at BIGINT NOT NULL,
        sealed_at  BIGINT
    );
    CREATE TABLE audience_chunks (
        audience_id BIGINT  NOT NULL,
        chunk_no    BIGINT  NOT NULL,
        count       INTEGER NOT NULL,
        data        BYTEA   NOT NULL,
        PRIMARY KEY (audience_id, chunk_no)
    );
    CREATE TABLE rules (
        id         BIGSERIAL PRIMARY KEY,
        status     TEXT COLLATE "C" NOT NULL,
        version    INTEGER NOT NULL,
        created_at BIGINT  NOT NULL,
        updated_at BIGINT  NOT NULL
    );
    CREATE INDEX rules_enabled ON rules (id) WHERE status = 'enabled';
    CREATE TABLE rule_versions (
        rule_id       BIGINT   NOT NULL,
        version       INTEGER  NOT NULL,
        name          TEXT     NOT NULL,
        schedule      TEXT     NOT NULL,
        audience      TEXT     NOT NULL,
        audience_id   BIGINT,
        channel       TEXT     NOT NULL,
        message       TEXT     NOT NULL,
        deadline_secs BIGINT,
        priority      SMALLINT NOT NULL,
        created_at    BIGINT   NOT NULL,
        PRIMARY KEY (rule_id, version)
    );
    CREATE INDEX rule_versions_audience ON rule_versions (audience_id)
        WHERE audience_id IS NOT NULL;
    CREATE TABLE tasks (
        id          BIGSERIAL PRIMARY KEY,
        rule_id     BIGINT  NOT NULL,
        version     INTEGER NOT NULL,
        planned_at  BIGINT  NOT NULL,
        state       TEXT COLLATE "C" NOT NULL,
        job_id      BIGINT,
        recipients  BIGINT,
        detail      TEXT,
        created_at  BIGINT  NOT NULL,
        started_at  BIGINT,
        finished_at BIGINT,
        UNIQUE (rule_id, version, planned_at)
    );
    CREATE INDEX tasks_due ON tasks (planned_at, id) WHERE state = 'pending';
    CREATE INDEX tasks_rule ON tasks (rule_id, planned_at DESC, id DESC);
    CREATE INDEX tasks_active ON tasks (rule_id) WHERE state IN ('pending', 'running');
    CREATE TABLE jobs (
        id           BIGSERIAL PRIMARY KEY,
        audience_id  BIGINT   NOT NULL,
        channel      TEXT     NOT NULL,
        message      TEXT     NOT NULL,
        segment_size BIGINT   NOT NULL,
        deadline_at  BIGINT,
        priority     SMALLINT NOT NULL,
        task_id      BIGINT,
        state        TEXT COLLATE "C" NOT NULL,
        total        BIGINT   NOT NULL,
        delivered    BIGINT   NOT NULL DEFAULT 0,
        failed       BIGINT   NOT NULL DEFAULT 0,
        retrying     BIGINT   NOT NULL DEFAULT 0,
        expired      BIGINT   NOT NULL DEFAULT 0,
        cancelled    BIGINT   NOT NULL DEFAULT 0,
        created_at   BIGINT   NOT NULL,
        started_at   BIGINT,
        finished_at  BIGINT
    );
    CREATE INDEX jobs_audience ON jobs (audience_id);
    CREATE INDEX jobs_running ON jobs (id) WHERE state = 'running';
    CREATE INDEX jobs_running_deadline ON jobs (deadline_at, id)
        WHERE state = 'running' AND deadline_at IS NOT NULL;
    CREATE TABLE segments (
        id          BIGSERIAL PRIMARY KEY,
        job_id      BIGINT   NOT NULL,
        start_idx   BIGINT   NOT NULL,
        end_idx     BIGINT   NOT NULL,
        cursor_idx  BIGINT   NOT NULL,
        state       TEXT COLLATE "C" NOT NULL,
        owner       TEXT COLLATE "C",
        lease_until BIGINT,
        epoch       BIGINT   NOT NULL DEFAULT 0,
        parent_id   BIGINT,
        attempt     INTEGER  NOT NULL,
        not_before  BIGINT   NOT NULL,
        priority    SMALLINT NOT NULL,
        deadline_at BIGINT,
        handled     BOOLEAN  NOT NULL DEFAULT false,
        created_at  BIGINT   NOT NULL,
        updated_at  BIGINT   NOT NULL
    );
    CREATE INDEX segments_claim ON segments (priority DESC, id) INCLUDE (not_before, deadline_at)
        WHERE state = 'pending';
    CREATE INDEX segments_job ON segments (job_id, id);
    CREATE INDEX segments_active ON segments (job_id) WHERE state IN ('pending', 'running');
    CREATE INDEX segments_lease ON segments (lease_until, id)
        WHERE state = 'running' AND lease_until IS NOT NULL;
    CREATE INDEX segments_partial ON segments (id) WHERE state = 'partial' AND NOT handled;
    CREATE TABLE job_sends (
        job_id     BIGINT  NOT NULL,
        idx        BIGINT  NOT NULL,
        recipient  TEXT    NOT NULL,
        state      TEXT COLLATE "C" NOT NULL,
        attempts   INTEGER NOT NULL,
        msgid      TEXT,
        error      TEXT,
        updated_at BIGINT  NOT NULL,
        PRIMARY KEY (job_id, idx)
    );
    CREATE INDEX job_sends_retry ON job_sends (job_id, idx) WHERE state = 'retry';
    "#,
    // 4: what providers report after the send (see `provider.rs`): a final
    // status on both send logs, found by message id through partial indexes
    // (rows without a message id never enter them), and the cluster-wide
    // channel access tokens. Adding nullable columns without a default rewrites
    // no row; an existing database builds the two indexes once, here.
    r#"
    ALTER TABLE deliveries ADD COLUMN final_status TEXT, ADD COLUMN final_at BIGINT;
    CREATE INDEX deliveries_msgid ON deliveries (channel, provider_msgid)
        WHERE provider_msgid IS NOT NULL;
    ALTER TABLE job_sends ADD COLUMN final_status TEXT, ADD COLUMN final_at BIGINT;
    CREATE INDEX job_sends_msgid ON job_sends (msgid) WHERE msgid IS NOT NULL;
    CREATE TABLE channel_tokens (
        key        TEXT COLLATE "C" PRIMARY KEY,
        token      TEXT   NOT NULL,
        expires_at BIGINT NOT NULL,
        fetched_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL
    );
    "#,
    // 5: nothing to do here: index columns already end in `_idx` (SQLite
    // renames its `segments.cursor` at this step).
    "-- segments.cursor_idx is already named so",
];

/// Applies the migrations this database has not seen yet, in one transaction,
/// under an advisory lock so concurrent openers take turns.
pub(super) async fn migrate(client: &mut deadpool_postgres::Object) -> Result<()> {
    let tx = client.transaction().await.ctx("beginning migration")?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .ctx("taking the migration lock")?;
    tx.batch_execute(MIGRATIONS_TABLE)
        .await
        .ctx("creating herald_migrations")?;
    let current: i32 = tx
        .query_one(
            "SELECT COALESCE(max(version), 0) FROM herald_migrations",
            &[],
        )
        .await
        .ctx("reading the schema version")?
        .try_get(0)
        .ctx("reading the schema version")?;
    let known = MIGRATIONS.len();
    let current = usize::try_from(current)
        .map_err(|_| StoreError::Corrupt(format!("postgres: schema version {current}")))?;
    if current > known {
        return Err(StoreError::refused(
            "store",
            format!(
                "postgres: database schema version {current} is newer than this build knows ({known})"
            ),
        ));
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(current) {
        let version = i32::try_from(i + 1)
            .map_err(|_| StoreError::Internal("postgres: too many migrations".into()))?;
        tx.batch_execute(sql)
            .await
            .ctx(&format!("applying migration {version}"))?;
        tx.execute(
            "INSERT INTO herald_migrations (version) VALUES ($1)",
            &[&version],
        )
        .await
        .ctx("recording the migration")?;
        tracing::info!(version, "applied postgres migration");
    }
    tx.commit().await.ctx("committing migration")
}

#[cfg(test)]
mod tests {
    use super::MIGRATIONS;
    use crate::postgres::PgStore;
    use crate::{Store, StoreOptions};

    /// A database the previous release left at migration 3 keeps its rows and
    /// gains the new columns (empty), indexes and table.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_version_3_database_upgrades_in_place() {
        let Some(pg) = herald_pgtemp::PgTemp::shared().expect("cluster") else {
            return;
        };
        let db = pg.fresh_database("upgrade").expect("database");
        let (client, conn) = tokio_postgres::connect(db.url(), tokio_postgres::NoTls)
            .await
            .expect("connect");
        tokio::spawn(conn);
        client.batch_execute(super::MIGRATIONS_TABLE).await.unwrap();
        for (i, sql) in MIGRATIONS[..3].iter().enumerate() {
            client.batch_execute(sql).await.unwrap();
            let v = i as i32 + 1;
            client
                .execute("INSERT INTO herald_migrations (version) VALUES ($1)", &[&v])
                .await
                .unwrap();
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
        let versions: Vec<i32> = client
            .query(
                "SELECT version FROM herald_migrations ORDER BY version",
                &[],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert_eq!(versions, (1..=MIGRATIONS.len() as i32).collect::<Vec<_>>());
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
    }
}
