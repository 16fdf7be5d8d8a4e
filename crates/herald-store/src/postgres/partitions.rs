//! Partitions of the send logs (migration 0019): retention drops a whole
//! partition of old rows instead of deleting them one by one.
//!
//! # Layout
//!
//! `deliveries` (the timer send log) and `delivery_receipts` are partitioned
//! by RANGE on the delivery id; `job_sends` (the campaign send log) and
//! `job_receipts` by RANGE on the job id. Ids come from sequences and grow
//! with time, so a range of ids is a stretch of time; and every key that
//! finds a send-log row today holds its partition key, so the primary keys,
//! and every uniqueness they give, are those of before. Lookups by delivery
//! id or by job are pruned to one partition (at plan time or, for a generic
//! plan, when the executor starts). A log and its receipts share bounds and
//! names (`<table>_p<lower bound>`) and are dropped together. A default
//! partition takes any key outside every range, so no insert ever fails for
//! want of a partition. A range's width is `meta.partition_span.<log>`
//! (10,000,000 deliveries, 100 jobs): an operator may change it, and it
//! applies to the partitions made after.
//!
//! # Why not the timers
//!
//! `timers` is not partitioned. Its idempotency key must be unique per
//! tenant across every stored timer, and a unique index of a partitioned
//! table must hold the partition key; the loader claims due timers through
//! one partial index, which would become one probe per partition; and
//! moving a timer to a partitioned history table when it finishes would add
//! a delete and an insert to the fire/complete path. So finished timers are
//! deleted in batches as before ([`super::retention`]); their send log,
//! which is as many rows again and more, is what partitions drop.
//!
//! # Maintenance
//!
//! [`maintain`] runs from the retention sweeper, under its lease, before the
//! batched purge. It keeps one whole range of headroom above the ids handed
//! out so far (a range starts above the sequence's last value, so no row in
//! the default partition can fall in it), and drops a partition whose whole
//! range has been handed out and none of whose rows retention must keep:
//!
//! * a delivery is kept while its timer is stored and is pending, is a
//!   reminder's (those go with their subject), or changed at or after the
//!   timers' cutoff; a delivery whose timer is gone keeps nothing;
//! * a job's sends are kept while the job is running, has a follow-up
//!   waiting, or ended at or after the send log's cutoff.
//!
//! These are the row purge's own rules, so a drop takes only rows the purge
//! would take; rows in a partition something still holds are purged by rows
//! as before. In a steady state the purge takes most rows as they age, and
//! a drop then removes a nearly empty table; where old rows piled up (a
//! store that had no retention, a sweeper that fell behind), a drop removes
//! millions of rows in one statement and gives the space back to the
//! operating system, with no dead rows left for vacuum.
//!
//! A range is a candidate once the sequence has handed out all of it. A
//! `SHARE` lock on the log, had and let go at once, waits out every writer
//! that drew one of its ids, so the check that follows (without locks, and
//! without the statement timeout: it may read a whole range of old rows)
//! sees every row the range will ever hold. The drop then takes the log and
//! its receipts `ACCESS EXCLUSIVE` for a `DROP TABLE` (a campaign range
//! first holds its jobs and checks them again, a few rows by key). Every
//! lock is waited for at most [`LOCK_WAIT`]: a sweep that cannot have it
//! soon leaves the range to the next sweep rather than stall the fire path.
//! What the check cannot hold is a timer: a dead timer past the cutoff
//! that an operator retries in the instant between check and drop keeps its
//! row, but loses its expired attempts' log. (`DETACH PARTITION
//! CONCURRENTLY` would lock less, but PostgreSQL does not allow it on a
//! table with a default partition.)

use deadpool_postgres::{GenericClient, Transaction};
use tokio_postgres::error::SqlState;

use super::{Ctx, PgStore, col};
use crate::{PartitionChanges, PartitionCutoffs, Result};

/// How long a maintenance step waits for a table lock before giving up.
/// Shorter than PostgreSQL's `deadlock_timeout` (1 s by default), so where
/// a wait would close a cycle with a writer, this side gives up first.
const LOCK_WAIT: &str = "SET LOCAL lock_timeout = '500ms'";

/// Partitions made per log and sweep at most, however far behind.
const MAX_CREATED: usize = 4;

/// One partitioned send log and how to tell whether a range of it is kept.
struct Log {
    table: &'static str,
    receipts: &'static str,
    /// The sequence whose values are the partition key.
    sequence: &'static str,
    /// Its width's key in `meta`.
    span: &'static str,
    /// Whether anything in `[$2, $3)` must be kept at cutoff `$1`.
    kept: &'static str,
    /// Locks what `kept` reads that could change under the drop, if any.
    hold: Option<&'static str>,
}

const TIMER_LOG: Log = Log {
    table: "deliveries",
    receipts: "delivery_receipts",
    sequence: "deliveries_id_seq",
    span: "partition_span.deliveries",
    // The range's rows, each probing its timer by key (a scalar subquery
    // is never turned into a join that would read the timers first); a
    // timer that is gone gives null: keeps nothing.
    kept: "SELECT EXISTS (SELECT 1 FROM deliveries AS d WHERE d.id >= $2 AND d.id < $3 \
        AND (SELECT t.state < 2 OR t.kind = 'reminder' OR t.updated_at >= $1 \
             FROM timers AS t WHERE t.id = d.timer_id))",
    hold: None,
};

const JOB_LOG: Log = Log {
    table: "job_sends",
    receipts: "job_receipts",
    sequence: "jobs_id_seq",
    span: "partition_span.job_sends",
    kept: "SELECT EXISTS (SELECT 1 FROM jobs AS j WHERE j.id >= $2 AND j.id < $3 \
        AND (j.state = 'running' OR j.finished_at IS NULL OR j.finished_at >= $1 \
             OR EXISTS (SELECT 1 FROM job_follow_ups AS f WHERE f.job_id = j.id AND f.state = 0)))",
    // A job resumed or a follow-up made meanwhile waits for the drop.
    hold: Some("SELECT 1 FROM jobs WHERE id >= $1 AND id < $2 FOR SHARE"),
};

/// The range partitions of a table with their bounds, lowest first (the
/// default partition has none and is left out).
const RANGES: &str = "SELECT c.relname::text, (b.m)[1]::bigint, (b.m)[2]::bigint \
    FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid, \
    LATERAL (SELECT regexp_match(pg_get_expr(c.relpartbound, c.oid), \
        'FROM \\(''?(-?[0-9]+)''?\\) TO \\(''?(-?[0-9]+)''?\\)') AS m) AS b \
    WHERE i.inhparent = to_regclass($1) AND b.m IS NOT NULL ORDER BY 2";
const LAST_VALUE: &str = "SELECT coalesce(pg_sequence_last_value(to_regclass($1)), 0)";
const SPAN: &str = "SELECT value FROM meta WHERE key = $1";
/// Makes a log's and its receipts' range, indexes named (migration 0019).
const ADD: &str = "SELECT herald_add_partitions($1, $2, $3, $4)";

/// One range partition: its name and `[lo, hi)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Range {
    pub(super) name: String,
    pub(super) lo: i64,
    pub(super) hi: i64,
}

/// See the module's doc: makes what the logs will need, drops what
/// retention lets go.
pub(super) async fn maintain(
    store: &PgStore,
    cutoffs: PartitionCutoffs,
) -> Result<PartitionChanges> {
    let mut out = PartitionChanges::default();
    for (log, cutoff) in [(&TIMER_LOG, cutoffs.timers), (&JOB_LOG, cutoffs.send_log)] {
        out.created += create_ahead(store, log).await?;
        // Without a cutoff nothing is old; ranges whose rows are all gone
        // may still go.
        out.dropped += drop_old(store, log, cutoff.unwrap_or(i64::MIN)).await?;
    }
    Ok(out)
}

/// The range partitions of `table`, lowest first.
pub(super) async fn ranges(client: &impl GenericClient, table: &str) -> Result<Vec<Range>> {
    let stmt = client
        .prepare_cached(RANGES)
        .await
        .ctx("preparing partition list")?;
    client
        .query(&stmt, &[&table])
        .await
        .ctx("listing partitions")?
        .iter()
        .map(|r| {
            Ok(Range {
                name: col(r, 0, "partition name")?,
                lo: col(r, 1, "partition lower bound")?,
                hi: col(r, 2, "partition upper bound")?,
            })
        })
        .collect()
}

async fn last_value(client: &impl GenericClient, log: &Log) -> Result<i64> {
    let stmt = client
        .prepare_cached(LAST_VALUE)
        .await
        .ctx("preparing sequence read")?;
    col(
        &client
            .query_one(&stmt, &[&log.sequence])
            .await
            .ctx("reading sequence")?,
        0,
        "sequence last value",
    )
}

async fn span(client: &impl GenericClient, log: &Log) -> Result<i64> {
    let stmt = client
        .prepare_cached(SPAN)
        .await
        .ctx("preparing span read")?;
    let value: Option<String> = client
        .query_opt(&stmt, &[&log.span])
        .await
        .ctx("reading partition span")?
        .map(|r| col(&r, 0, "meta.value"))
        .transpose()?;
    match value.as_deref().map(str::parse::<i64>) {
        Some(Ok(n)) if n > 0 => Ok(n),
        _ => Err(crate::StoreError::Corrupt(format!(
            "postgres: meta.{} must be a positive number, not {value:?}",
            log.span
        ))),
    }
}

/// Whether `e` is a lock wait given up on ([`LOCK_WAIT`]).
fn lock_timed_out(e: &tokio_postgres::Error) -> bool {
    e.code() == Some(&SqlState::LOCK_NOT_AVAILABLE)
}

/// Makes partitions until one whole range lies above the last id handed out.
async fn create_ahead(store: &PgStore, log: &Log) -> Result<u32> {
    let mut client = store.client().await?;
    let width = span(&client, log).await?;
    let mut made = 0;
    for _ in 0..MAX_CREATED {
        let last = last_value(&client, log).await?;
        let top = ranges(&client, log.table).await?.last().map(|r| r.hi);
        let lo = match top {
            Some(top) if top > last.saturating_add(width) => break,
            // Above every id handed out, so nothing in the default
            // partition can fall in the new range.
            Some(top) => top.max(last.saturating_add(1)),
            None => last.saturating_add(1),
        };
        let hi = lo.saturating_add(width);
        let tx = client
            .transaction()
            .await
            .ctx("beginning partition create")?;
        tx.batch_execute(LOCK_WAIT).await.ctx("setting lock wait")?;
        match tx
            .execute(ADD, &[&log.table, &log.receipts, &lo, &hi])
            .await
        {
            Ok(_) => {}
            // Or ids drawn meanwhile went to the default partition, in the
            // new range: the next sweep starts above them.
            Err(e) if lock_timed_out(&e) || e.code() == Some(&SqlState::CHECK_VIOLATION) => {
                tracing::info!(
                    table = log.table,
                    lo,
                    hi,
                    "partition create could not have its lock or its range; next sweep"
                );
                return Ok(made);
            }
            Err(e) => return Err(e).ctx("creating partition"),
        }
        tx.commit().await.ctx("committing partition create")?;
        tracing::info!(table = log.table, lo, hi, "created send-log partition");
        made += 1;
    }
    Ok(made)
}

/// Drops each partition of `log` whose range is all handed out and holds
/// nothing kept at `cutoff`.
async fn drop_old(store: &PgStore, log: &Log, cutoff: i64) -> Result<u32> {
    let mut client = store.client().await?;
    let last = last_value(&client, log).await?;
    let candidates: Vec<Range> = ranges(&client, log.table)
        .await?
        .into_iter()
        .take_while(|r| r.hi <= last)
        .collect();
    if candidates.is_empty() {
        return Ok(0);
    }
    // Every id below `last` was drawn by a writer holding the log; once a
    // SHARE lock is had, each of those has ended, so what follows sees
    // every row these ranges will ever hold.
    let tx = client.transaction().await.ctx("beginning barrier")?;
    tx.batch_execute(LOCK_WAIT).await.ctx("setting lock wait")?;
    match tx
        .batch_execute(&format!("LOCK TABLE {} IN SHARE MODE", log.table))
        .await
    {
        Ok(()) => tx.commit().await.ctx("committing barrier")?,
        Err(e) if lock_timed_out(&e) => {
            tracing::info!(
                table = log.table,
                "send-log writers held it too long; partitions drop next sweep"
            );
            return Ok(0);
        }
        Err(e) => return Err(e).ctx("waiting for send-log writers"),
    }
    let receipts = ranges(&client, log.receipts).await?;
    let mut dropped = 0;
    for range in candidates {
        // Unlocked and without the statement timeout: a range of old rows
        // may be long to read, and reading it stops nobody.
        let tx = client
            .transaction()
            .await
            .ctx("beginning partition check")?;
        tx.batch_execute("SET LOCAL statement_timeout = 0")
            .await
            .ctx("lifting the statement timeout")?;
        let keep = kept(&tx, log, cutoff, &range).await?;
        tx.commit().await.ctx("ending partition check")?;
        if keep {
            continue;
        }
        let twin = receipts
            .iter()
            .find(|r| r.lo == range.lo && r.hi == range.hi);
        let tx = client.transaction().await.ctx("beginning partition drop")?;
        match drop_one(&tx, log, cutoff, &range, twin).await {
            Ok(true) => {
                tx.commit().await.ctx("committing partition drop")?;
                tracing::info!(table = log.table, partition = %range.name, lo = range.lo, hi = range.hi, cutoff, "dropped send-log partition");
                dropped += 1;
            }
            Ok(false) => {}
            Err(DropError::Busy) => {
                tracing::info!(table = log.table, partition = %range.name, "partition drop waited too long for its lock; next sweep");
                break;
            }
            Err(DropError::Store(e)) => return Err(e),
        }
    }
    Ok(dropped)
}

async fn kept(client: &impl GenericClient, log: &Log, cutoff: i64, range: &Range) -> Result<bool> {
    let stmt = client
        .prepare_cached(log.kept)
        .await
        .ctx("preparing partition check")?;
    col(
        &client
            .query_one(&stmt, &[&cutoff, &range.lo, &range.hi])
            .await
            .ctx("checking partition")?,
        0,
        "partition kept",
    )
}

enum DropError {
    /// A lock was not had within [`LOCK_WAIT`].
    Busy,
    Store(crate::StoreError),
}

impl From<crate::StoreError> for DropError {
    fn from(e: crate::StoreError) -> Self {
        DropError::Store(e)
    }
}

/// Under the logs' locks, drops `range` with its receipts' twin; `false`
/// when something came to be kept since the check.
async fn drop_one(
    tx: &Transaction<'_>,
    log: &Log,
    cutoff: i64,
    range: &Range,
    twin: Option<&Range>,
) -> std::result::Result<bool, DropError> {
    let busy = |e: tokio_postgres::Error, what: &str| {
        if lock_timed_out(&e) {
            DropError::Busy
        } else {
            DropError::Store(super::error::pg_error(what, &e))
        }
    };
    tx.batch_execute(LOCK_WAIT).await.ctx("setting lock wait")?;
    // The parents first, as every writer locks them: locking a partition
    // first could deadlock with a writer routed to it.
    tx.batch_execute(&format!(
        "LOCK TABLE {}, {} IN ACCESS EXCLUSIVE MODE",
        log.table, log.receipts
    ))
    .await
    .map_err(|e| busy(e, "locking send log"))?;
    // What the check read about jobs can change (a job resumed): hold
    // the range's jobs and check again, a few rows by key.
    if let Some(hold) = log.hold {
        tx.execute(hold, &[&range.lo, &range.hi])
            .await
            .map_err(|e| busy(e, "holding jobs"))?;
        if kept(tx, log, cutoff, range).await? {
            return Ok(false);
        }
    }
    let names: Vec<&str> = std::iter::once(range.name.as_str())
        .chain(twin.map(|r| r.name.as_str()))
        .collect();
    tx.batch_execute(&format!("DROP TABLE {}", names.join(", ")))
        .await
        .map_err(|e| busy(e, "dropping partition"))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use herald_core::TimerState;
    use tokio_postgres::{Client, NoTls};

    use super::{JOB_LOG, TIMER_LOG};
    use crate::postgres::PgStore;
    use crate::prelude::*;
    use crate::testsuite::fixtures::{completion, created, timer};
    use crate::testsuite::retention::{CUTOFF, DAY, T0, job_with_sends};
    use crate::testsuite::support::insert_all;
    use crate::{
        CampaignStore, CompletionOutcome, PartitionCutoffs, ReceiptEvent, ReceiptOn, Store,
        StoreOptions, WriteOp,
    };

    async fn connect(url: &str) -> Client {
        let (client, conn) = tokio_postgres::connect(url, NoTls).await.expect("connect");
        tokio::spawn(conn);
        client
    }

    /// The partitions of `table` as the catalog has them, by name.
    async fn partitions(sql: &Client, table: &str) -> Vec<String> {
        sql.query(
            "SELECT c.relname::text FROM pg_inherits AS i JOIN pg_class AS c \
             ON c.oid = i.inhrelid WHERE i.inhparent = to_regclass($1) ORDER BY 1",
            &[&table],
        )
        .await
        .expect("pg_inherits")
        .iter()
        .map(|r| r.get(0))
        .collect()
    }

    async fn exists(sql: &Client, table: &str) -> bool {
        sql.query_one("SELECT to_regclass($1) IS NOT NULL", &[&table])
            .await
            .expect("pg_class")
            .get(0)
    }

    async fn count(sql: &Client, query: &str) -> i64 {
        sql.query_one(query, &[]).await.expect(query).get(0)
    }

    /// A database at schema 18 with rows in both send logs and their
    /// receipts migrates: every row is found again, in the partition of its
    /// range, and the keys stay unique.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_schema_18_database_migrates_to_partitions() {
        let Some(pg) = herald_pgtemp::PgTemp::shared().expect("cluster") else {
            return;
        };
        let db = pg.fresh_database("partition_upgrade").expect("database");
        let sql = connect(db.url()).await;
        sql.batch_execute(
            "CREATE TABLE herald_migrations (version INTEGER PRIMARY KEY, \
             applied_at TIMESTAMPTZ NOT NULL DEFAULT now(), name TEXT)",
        )
        .await
        .unwrap();
        for (i, m) in super::super::schema::MIGRATIONS[..18].iter().enumerate() {
            sql.batch_execute(m.sql).await.expect(m.name);
            sql.execute(
                "INSERT INTO herald_migrations (version, name) VALUES ($1, $2)",
                &[&(i as i32 + 1), &m.name],
            )
            .await
            .unwrap();
        }
        // Two timers' send logs ten million ids apart, two jobs' sends two
        // hundred jobs apart, with receipts.
        sql.batch_execute(
            "INSERT INTO timers (id, shard, due_at, priority, kind, state, channel, recipient, \
                 message, created_at, updated_at) VALUES \
                 (1, 0, 10, 0, 'once', 2, 'webhook', 'r', '{}', 1, 20), \
                 (2, 0, 10, 0, 'once', 0, 'webhook', 'r', '{}', 1, 20); \
             SELECT setval('timers_id_seq', 2); \
             INSERT INTO deliveries (id, timer_id, attempt, channel, outcome, idempotency_key, \
                 provider_msgid, started_at, finished_at) VALUES \
                 (5, 1, 1, 'webhook', 'delivered', 'k1', 'm-5', 10, 20), \
                 (15000000, 2, 1, 'webhook', 'retry', 'k2', 'm-6', 30, 40); \
             SELECT setval('deliveries_id_seq', 15000000); \
             INSERT INTO delivery_receipts VALUES (5, 'read', 25), (15000000, 'delivered', 45); \
             INSERT INTO jobs (id, audience_id, channel, message, segment_size, priority, state, \
                 total, created_at, finished_at) VALUES \
                 (3, 1, 'webhook', '{}', 10, 0, 'done', 2, 0, 50), \
                 (250, 1, 'webhook', '{}', 10, 0, 'running', 2, 0, NULL); \
             SELECT setval('jobs_id_seq', 250); \
             INSERT INTO job_sends (job_id, idx, recipient, state, attempts, msgid, updated_at) \
                 VALUES (3, 0, 'a', 'delivered', 1, 'j-1', 30), (3, 1, 'b', 'failed', 1, NULL, 30), \
                        (250, 0, 'c', 'retry', 1, NULL, 30); \
             INSERT INTO job_receipts VALUES (3, 0, 'read', 60);",
        )
        .await
        .unwrap();

        let store = PgStore::open(db.url(), &StoreOptions::default())
            .await
            .expect("open migrates");
        assert_eq!(
            partitions(&sql, "deliveries").await,
            [
                "deliveries_default",
                "deliveries_p0",
                "deliveries_p10000000",
                "deliveries_p20000000"
            ]
        );
        assert_eq!(
            partitions(&sql, "job_receipts").await,
            [
                "job_receipts_default",
                "job_receipts_p0",
                "job_receipts_p100",
                "job_receipts_p200",
                "job_receipts_p300"
            ]
        );
        // Each row in its range's partition.
        assert_eq!(
            count(&sql, "SELECT count(*) FROM deliveries_p0 WHERE id = 5").await,
            1
        );
        assert_eq!(
            count(&sql, "SELECT count(*) FROM delivery_receipts_p10000000").await,
            1
        );
        assert_eq!(count(&sql, "SELECT count(*) FROM job_sends_p200").await, 1);
        assert_eq!(count(&sql, "SELECT count(*) FROM job_receipts_p0").await, 1);
        // And found through the store.
        let d = store.get_delivery(5).await.unwrap().expect("delivery 5");
        assert_eq!(d.provider_msgid.as_deref(), Some("m-5"));
        assert_eq!(store.deliveries_for(2).await.unwrap()[0].id, 15_000_000);
        let sends = store.job_sends(3, 0, 10).await.unwrap();
        assert_eq!(sends.len(), 2);
        assert_eq!(store.job_sends(250, 0, 10).await.unwrap().len(), 1);
        assert!(
            !store
                .record_receipt(
                    ReceiptOn::JobSend { job_id: 3, idx: 0 },
                    ReceiptEvent::Read,
                    70
                )
                .await
                .unwrap(),
            "the job's receipt moved with its send"
        );
        assert!(
            !store
                .record_receipt(ReceiptOn::Delivery(5), ReceiptEvent::Read, 70)
                .await
                .unwrap(),
            "the receipt moved with its delivery: a repeat changes nothing"
        );
        // The keys are still unique, and new rows take the next ids.
        let dup = sql
            .execute(
                "INSERT INTO job_sends (job_id, idx, recipient, state, attempts, updated_at) \
                 VALUES (3, 0, 'x', 'delivered', 1, 1)",
                &[],
            )
            .await;
        assert!(dup.is_err(), "a second (job, idx) is refused");
        let t = created(
            &store
                .apply(vec![WriteOp::InsertTimer(timer(T0))])
                .await
                .unwrap()[0],
        );
        store
            .complete(vec![completion(&t, 1, CompletionOutcome::Done, T0)])
            .await
            .unwrap();
        assert_eq!(store.deliveries_for(t.id).await.unwrap()[0].id, 15_000_001);
    }

    /// Retention drops a partition whose rows are all past the cutoff, with
    /// its receipts' twin, and nothing else: a partition holding a pending
    /// timer's attempt, a recent send log or a running job's sends stays,
    /// and so do the rows in it. Then the plans: the checks and a lookup by
    /// id read one partition, through an index.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn retention_drops_whole_partitions_of_old_rows_only() {
        let Some(pg) = herald_pgtemp::PgTemp::shared().expect("cluster") else {
            return;
        };
        let db = pg.fresh_database("partition_drop").expect("database");
        let store: Arc<dyn Store> = Arc::new(
            PgStore::open(db.url(), &StoreOptions::default())
                .await
                .expect("open"),
        );
        let sql = connect(db.url()).await;
        let cutoffs = PartitionCutoffs {
            timers: Some(CUTOFF),
            send_log: Some(CUTOFF),
        };

        // Timers: the old one's send log alone in [0, 10M), with a receipt.
        let ts = insert_all(&store, (0..4).map(|i| timer(T0 + i))).await;
        let (old, pending, retrying, recent) = (&ts[0], &ts[1], &ts[2], &ts[3]);
        store
            .complete(vec![completion(old, 1, CompletionOutcome::Done, T0 + 5)])
            .await
            .unwrap();
        let old_delivery = store.deliveries_for(old.id).await.unwrap()[0].id;
        store
            .record_receipt(
                ReceiptOn::Delivery(old_delivery),
                ReceiptEvent::Read,
                T0 + 6,
            )
            .await
            .unwrap();
        sql.batch_execute("SELECT setval('deliveries_id_seq', 10000000)")
            .await
            .unwrap();
        // [10M, 20M): a pending timer's failed attempt and a recent send.
        store
            .complete(vec![
                completion(
                    retrying,
                    1,
                    CompletionOutcome::Retry {
                        next_due_at: T0 + DAY,
                    },
                    T0 + 7,
                ),
                completion(recent, 1, CompletionOutcome::Done, CUTOFF + 1),
            ])
            .await
            .unwrap();
        let recent_delivery = store.deliveries_for(recent.id).await.unwrap()[0].id;
        assert!(recent_delivery > 10_000_000);
        store
            .record_receipt(
                ReceiptOn::Delivery(recent_delivery),
                ReceiptEvent::Read,
                CUTOFF + 2,
            )
            .await
            .unwrap();
        sql.batch_execute("SELECT setval('deliveries_id_seq', 20000000)")
            .await
            .unwrap();

        // Jobs: one ended and one running in [0, 100), one running above.
        let ended = job_with_sends(&store, 20, 5, T0).await;
        store.cancel_job(ended.id, T0 + 3).await.unwrap();
        store
            .record_receipt(
                ReceiptOn::JobSend {
                    job_id: ended.id,
                    idx: 0,
                },
                ReceiptEvent::Read,
                T0 + 4,
            )
            .await
            .unwrap();
        let running = job_with_sends(&store, 10, 4, T0 + 4).await;
        sql.batch_execute("SELECT setval('jobs_id_seq', 100)")
            .await
            .unwrap();
        let above = job_with_sends(&store, 10, 3, CUTOFF).await;
        assert!(above.id > 100);

        let changes = store.maintain_partitions(cutoffs).await.unwrap();
        assert_eq!(changes.dropped, 1, "{changes:?}");
        assert!(changes.created >= 1, "{changes:?}");
        assert!(!exists(&sql, "deliveries_p0").await);
        assert!(!exists(&sql, "delivery_receipts_p0").await);
        for kept in [
            "deliveries_p10000000",
            "delivery_receipts_p10000000",
            "job_sends_p0",
        ] {
            assert!(exists(&sql, kept).await, "{kept}");
        }
        let timer_parts = partitions(&sql, "deliveries").await;
        assert!(
            timer_parts.iter().any(|p| p.starts_with("deliveries_p2")),
            "a range above the last id is made ahead: {timer_parts:?}"
        );
        // The rows the dropped partition held are gone, the timer stays for
        // the row purge; everything else is untouched.
        assert!(store.deliveries_for(old.id).await.unwrap().is_empty());
        assert_eq!(
            store.get_timer(old.id).await.unwrap().unwrap().state,
            TimerState::Done
        );
        assert_eq!(store.deliveries_for(retrying.id).await.unwrap().len(), 1);
        assert_eq!(store.deliveries_for(recent.id).await.unwrap().len(), 1);
        assert_eq!(
            count(
                &sql,
                &format!(
                    "SELECT count(*) FROM delivery_receipts WHERE delivery_id = {recent_delivery}"
                )
            )
            .await,
            1
        );
        for t in [pending, retrying] {
            assert_eq!(
                store.get_timer(t.id).await.unwrap().unwrap().state,
                TimerState::Pending
            );
        }
        assert_eq!(store.job_sends(ended.id, 0, 20).await.unwrap().len(), 5);

        // Once the running job ends, its range goes too; the job rows stay
        // for their own retention, the job above keeps its sends.
        store.cancel_job(running.id, T0 + 5).await.unwrap();
        let changes = store.maintain_partitions(cutoffs).await.unwrap();
        assert_eq!(changes.dropped, 1, "{changes:?}");
        assert!(!exists(&sql, "job_sends_p0").await);
        assert!(!exists(&sql, "job_receipts_p0").await);
        assert!(store.job_sends(ended.id, 0, 20).await.unwrap().is_empty());
        assert!(store.job_sends(running.id, 0, 10).await.unwrap().is_empty());
        assert!(store.get_job(ended.id).await.unwrap().is_some());
        assert_eq!(store.job_sends(above.id, 0, 10).await.unwrap().len(), 3);
        // Nothing more goes at these cutoffs; the row purge takes the rest.
        assert_eq!(store.maintain_partitions(cutoffs).await.unwrap().dropped, 0);
        assert_eq!(
            store
                .purge(crate::RetentionKind::Timers, CUTOFF, 1_000)
                .await
                .unwrap(),
            1
        );
        assert!(store.get_timer(old.id).await.unwrap().is_none());
        assert_eq!(store.deliveries_for(recent.id).await.unwrap().len(), 1);

        plans_read_one_partition(&sql, recent_delivery, above.id).await;
    }

    /// The drop checks and a delivery's lookup by id read one partition
    /// (pruned when planned, or when a generic plan starts), through an
    /// index where they look rows up; the purge deletes a timer's send log
    /// through its index in each partition. Rows first, so that the
    /// planner weighs tables of some size.
    async fn plans_read_one_partition(sql: &Client, delivery: i64, job: i64) {
        sql.batch_execute(&format!(
            "INSERT INTO timers (shard, due_at, priority, kind, state, channel, recipient, \
                 message, created_at, updated_at) \
                 SELECT 0, g, 0, 'once', 2, 'webhook', 'r', '{{}}', 1, 1 \
                 FROM generate_series(1, 5000) AS g; \
             INSERT INTO deliveries (id, timer_id, attempt, channel, outcome, idempotency_key, \
                 started_at, finished_at) \
                 SELECT 10000100 + g, g, 1, 'webhook', 'delivered', 'k', 1, 2 \
                 FROM generate_series(1, 5000) AS g; \
             INSERT INTO jobs (id, audience_id, channel, message, segment_size, priority, \
                 state, total, created_at, finished_at) \
                 SELECT 1000 + g, 1, 'webhook', '{{}}', 10, 0, 'done', 1, 0, 1 \
                 FROM generate_series(1, 5000) AS g; \
             INSERT INTO job_sends (job_id, idx, recipient, state, attempts, updated_at) \
                 SELECT {job}, 100 + g, 'r', 'delivered', 1, 1 FROM generate_series(1, 5000) AS g; \
             ANALYZE timers; ANALYZE deliveries; ANALYZE jobs; ANALYZE job_sends;"
        ))
        .await
        .unwrap();
        let (cutoff, lo, hi) = (CUTOFF, 10_000_000i64, 20_000_000i64);
        let (jlo, jhi) = (100i64, 200i64);
        type Param<'a> = &'a (dyn tokio_postgres::types::ToSql + Sync);
        // The query, its parameters, the index it must use, what names each
        // partition it reads, and whether it may read that one whole.
        let cases: Vec<(&str, Vec<Param<'_>>, &str, &str, bool)> = vec![
            (
                crate::provider::sql::DELIVERY_BY_ID.pg,
                vec![&delivery],
                "deliveries_pkey_p10000000",
                "deliveries_",
                false,
            ),
            (
                TIMER_LOG.kept,
                vec![&cutoff, &lo, &hi],
                "timers_pkey",
                "deliveries_",
                true,
            ),
            (
                JOB_LOG.kept,
                vec![&cutoff, &jlo, &jhi],
                "jobs_pkey",
                "jobs",
                false,
            ),
            (
                "SELECT idx FROM job_sends WHERE job_id = $1 AND idx >= $2 AND idx < $3",
                vec![&job, &jlo, &jhi],
                "job_sends_pkey_p100",
                "job_sends_",
                false,
            ),
        ];
        for generic in [false, true] {
            let mode = crate::postgres::set_plan_mode(sql, generic).await;
            for (query, params, index, read, whole) in &cases {
                let plan = explain(sql, query, params).await;
                assert!(plan.contains(index), "{mode}: {query}\n{plan}");
                assert!(
                    *whole || !crate::postgres::scans_rows(&plan),
                    "{mode}: {query}\n{plan}"
                );
                assert_eq!(
                    tables_read(&plan, read).len(),
                    1,
                    "{mode}: one partition only: {query}\n{plan}"
                );
            }
            let ids = vec![1i64, 2, 3];
            let plan = explain(
                sql,
                "DELETE FROM deliveries WHERE timer_id = ANY($1)",
                &[&ids],
            )
            .await;
            assert!(
                plan.contains("deliveries_timer_p10000000"),
                "{mode}\n{plan}"
            );
            assert!(!crate::postgres::scans_rows(&plan), "{mode}\n{plan}");
        }
    }

    /// The tables named `prefix...` that a plan reads (bitmap index scans
    /// name an index, not a table).
    fn tables_read<'a>(plan: &'a str, prefix: &str) -> std::collections::BTreeSet<&'a str> {
        plan.lines()
            .filter(|l| !l.contains("Bitmap Index Scan"))
            .filter_map(|l| l.split(" on ").nth(1))
            .filter_map(|rest| rest.split_whitespace().next())
            .filter(|t| t.starts_with(prefix))
            .collect()
    }

    async fn explain(
        sql: &Client,
        query: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> String {
        let rows = sql
            .query(&format!("EXPLAIN {query}"), params)
            .await
            .expect("explain");
        rows.iter()
            .map(|r| r.get::<_, String>(0))
            .collect::<Vec<_>>()
            .join("\n")
    }
}
