//! Retention on PostgreSQL: each purge call is one short transaction that
//! locks up to `limit` old rows of one kind, found through the index on
//! their age (migration 0018), skipping rows another transaction holds, and
//! deletes them with their children by key. A row locked `FOR UPDATE` is
//! checked again against its newest version, so a timer retried or a job
//! resumed meanwhile is left alone.

use deadpool_postgres::Transaction;

use super::{Ctx, PgStore};
use crate::retention::sql;
use crate::{JobDeletion, Result, RetentionKind};

// ---- timers: one statement, the timers with their send log ----
// Old finished timers come from two walks (migration 0044): the state index,
// by due time, for every tenant that has timers (a loose scan of the index's
// first column, one probe a tenant), and `timers_finished_early` for those
// that finished before their due time. A timer finished at or after its due
// time and changed before the cutoff is due before it, so the two together
// find every old finished timer. Each arm is cut at the batch size; the
// lock then checks the newest version of each row again.
pub(super) const PURGE_TIMERS: &str = "WITH RECURSIVE tenant AS ( \
        (SELECT tenant_id AS id FROM timers ORDER BY tenant_id LIMIT 1) \
        UNION ALL \
        SELECT (SELECT t.tenant_id FROM timers AS t WHERE t.tenant_id > tenant.id \
                ORDER BY t.tenant_id LIMIT 1) \
        FROM tenant WHERE tenant.id IS NOT NULL), \
    found AS ( \
        (SELECT f.id FROM tenant \
         CROSS JOIN (VALUES (2), (3), (4), (5), (6)) AS s(state) \
         CROSS JOIN LATERAL ( \
            SELECT t.id FROM timers AS t \
            WHERE t.tenant_id = tenant.id AND t.state = s.state AND t.due_at < $1 \
              AND t.updated_at < $1 AND t.kind <> 'reminder' \
            ORDER BY t.due_at LIMIT $2) AS f \
         WHERE tenant.id IS NOT NULL LIMIT $2) \
        UNION ALL \
        (SELECT id FROM timers \
         WHERE state >= 2 AND kind <> 'reminder' AND updated_at < due_at AND updated_at < $1 \
         ORDER BY updated_at, id LIMIT $2)), \
    old AS ( \
        SELECT id FROM timers \
        WHERE id = ANY(ARRAY(SELECT id FROM found)) \
          AND state >= 2 AND kind <> 'reminder' AND updated_at < $1 \
        ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED), \
    d AS (DELETE FROM deliveries WHERE timer_id IN (SELECT id FROM old) RETURNING id), \
    r AS (DELETE FROM delivery_receipts WHERE delivery_id IN (SELECT id FROM d)) \
    DELETE FROM timers WHERE id IN (SELECT id FROM old)";
// The same for given (reminder) timers, finished only.
const DELETE_TIMERS: &str = "WITH old AS ( \
        SELECT id FROM timers WHERE id = ANY($1) AND state >= 2 FOR UPDATE), \
    d AS (DELETE FROM deliveries WHERE timer_id IN (SELECT id FROM old) RETURNING id), \
    r AS (DELETE FROM delivery_receipts WHERE delivery_id IN (SELECT id FROM d)) \
    DELETE FROM timers WHERE id IN (SELECT id FROM old)";

// ---- jobs and their send log ----
pub(super) const OLD_JOBS: &str = "SELECT j.id FROM jobs AS j \
    WHERE j.state <> 'running' AND j.finished_at < $1 \
      AND NOT EXISTS (SELECT 1 FROM job_follow_ups AS f WHERE f.job_id = j.id AND f.state = 0) \
    ORDER BY j.finished_at, j.id LIMIT $2 FOR UPDATE OF j SKIP LOCKED";
pub(super) const OLD_JOBS_WITH_SENDS: &str = "SELECT j.id FROM jobs AS j \
    WHERE j.state <> 'running' AND j.finished_at < $1 \
      AND NOT EXISTS (SELECT 1 FROM job_follow_ups AS f WHERE f.job_id = j.id AND f.state = 0) \
      AND EXISTS (SELECT 1 FROM job_sends AS s WHERE s.job_id = j.id) \
    ORDER BY j.finished_at, j.id LIMIT $2 FOR UPDATE OF j SKIP LOCKED";
const LOCK_JOB: &str = "SELECT state <> 'running' AND NOT EXISTS \
    (SELECT 1 FROM job_follow_ups AS f WHERE f.job_id = jobs.id AND f.state = 0) \
    FROM jobs WHERE id = $1 FOR UPDATE";
pub(super) const DELETE_SENDS: &str = "WITH s AS ( \
        DELETE FROM job_sends WHERE job_id = $1 AND idx IN \
          (SELECT idx FROM job_sends WHERE job_id = $1 ORDER BY idx LIMIT $2) \
        RETURNING idx), \
    r AS (DELETE FROM job_receipts WHERE job_id = $1 AND idx IN (SELECT idx FROM s)) \
    SELECT count(*) FROM s";
const DELETE_JOB: &str = "WITH r AS (DELETE FROM job_receipts WHERE job_id = $1), \
    c AS (DELETE FROM job_receipt_counts WHERE job_id = $1), \
    f AS (DELETE FROM job_follow_ups WHERE job_id = $1) \
    DELETE FROM jobs WHERE id = $1 AND state <> 'running'";

// ---- audiences ----
pub(super) const OLD_AUDIENCES: &str = "SELECT a.id FROM audiences AS a \
    WHERE a.created_at < $1 \
      AND NOT EXISTS (SELECT 1 FROM jobs AS j WHERE j.audience_id = a.id) \
      AND NOT EXISTS (SELECT 1 FROM rule_versions AS v WHERE v.audience_id = a.id) \
    ORDER BY a.created_at, a.id LIMIT $2 FOR UPDATE OF a SKIP LOCKED";
// A new statement after the lock: a job or rule that named the audience
// (holding FOR KEY SHARE while it was made) and committed meanwhile is seen.
const REFERRED: &str = "SELECT EXISTS (SELECT 1 FROM jobs WHERE audience_id = $1) \
    OR EXISTS (SELECT 1 FROM rule_versions WHERE audience_id = $1)";

// ---- subjects ----
pub(super) const OLD_SUBJECTS: &str = "SELECT s.tenant_id, s.subject_id FROM subjects AS s \
    WHERE s.start_at < $1 \
      AND NOT EXISTS (SELECT 1 FROM reminder_timers AS r JOIN timers AS t ON t.id = r.timer_id \
                      WHERE r.tenant_id = s.tenant_id AND r.subject_id = s.subject_id \
                        AND t.state < 2) \
    ORDER BY s.start_at LIMIT $2 FOR UPDATE OF s SKIP LOCKED";
// Checked again after the lock, in a new statement.
const STILL_OLD: &str = "SELECT s.start_at < $3 AND NOT EXISTS ( \
        SELECT 1 FROM reminder_timers AS r JOIN timers AS t ON t.id = r.timer_id \
        WHERE r.tenant_id = s.tenant_id AND r.subject_id = s.subject_id AND t.state < 2) \
    FROM subjects AS s WHERE s.tenant_id = $1 AND s.subject_id = $2";
pub(super) const TAKE_REMINDERS: &str = "WITH rt AS ( \
        DELETE FROM reminder_timers WHERE (tenant_id, user_id, subject_id, bit) IN \
          (SELECT tenant_id, user_id, subject_id, bit FROM reminder_timers \
           WHERE tenant_id = $1 AND subject_id = $2 LIMIT $3) \
        RETURNING user_id, timer_id), \
    rm AS (DELETE FROM reminders WHERE tenant_id = $1 AND subject_id = $2 \
           AND user_id IN (SELECT user_id FROM rt)) \
    SELECT timer_id FROM rt";

// ---- tasks ----
pub(super) const PURGE_TASKS: &str = "DELETE FROM tasks WHERE id IN ( \
    SELECT t.id FROM tasks AS t \
    WHERE t.state NOT IN ('pending', 'running') AND t.finished_at < $1 \
      AND EXISTS (SELECT 1 FROM tasks AS n WHERE n.rule_id = t.rule_id \
                  AND n.version = t.version AND n.planned_at > t.planned_at) \
    ORDER BY t.finished_at, t.id LIMIT $2 FOR UPDATE OF t SKIP LOCKED)";

// ---- audit log ----
pub(super) const PURGE_AUDIT: &str = "DELETE FROM audit_log WHERE id IN ( \
    SELECT id FROM audit_log WHERE at < $1 ORDER BY at, id LIMIT $2 FOR UPDATE SKIP LOCKED)";

// ---- cap counters ----
const PURGE_CAP_COUNTERS: &str = "DELETE FROM cap_counters WHERE (tenant_id, cap_key, bucket) IN ( \
    SELECT tenant_id, cap_key, bucket FROM cap_counters WHERE expires_at < $1 \
    ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)";

async fn exec(
    tx: &Transaction<'_>,
    sql: &str,
    p: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    what: &str,
) -> Result<u64> {
    let stmt = tx.prepare_cached(sql).await.ctx(what)?;
    tx.execute(&stmt, p).await.ctx(what)
}

async fn ids(tx: &Transaction<'_>, sql: &str, cutoff: i64, limit: i64) -> Result<Vec<i64>> {
    let stmt = tx
        .prepare_cached(sql)
        .await
        .ctx("preparing retention candidates")?;
    let rows = tx
        .query(&stmt, &[&cutoff, &limit])
        .await
        .ctx("finding retention candidates")?;
    rows.iter()
        .map(|r| r.try_get(0).ctx("reading retention candidates"))
        .collect()
}

/// One purge call: see [`crate::Store::purge`].
pub(super) async fn purge(
    store: &PgStore,
    kind: RetentionKind,
    cutoff: i64,
    limit: usize,
) -> Result<u64> {
    let limit = i64::try_from(limit.max(1)).unwrap_or(i64::MAX);
    let mut client = store.client().await?;
    let tx = client.transaction().await.ctx("beginning purge")?;
    let n = match kind {
        RetentionKind::Timers => {
            exec(&tx, PURGE_TIMERS, &[&cutoff, &limit], "purging timers").await?
        }
        RetentionKind::Jobs => {
            let mut left = limit;
            for job in ids(&tx, OLD_JOBS, cutoff, limit).await? {
                let (n, gone) = take_job(&tx, job, left).await?;
                left -= n as i64;
                if left <= 0 || !gone {
                    break;
                }
            }
            (limit - left) as u64
        }
        RetentionKind::SendLog => {
            let mut left = limit;
            for job in ids(&tx, OLD_JOBS_WITH_SENDS, cutoff, limit).await? {
                left -= take_sends(&tx, job, left).await? as i64;
                if left <= 0 {
                    break;
                }
            }
            (limit - left) as u64
        }
        RetentionKind::Audiences => purge_audiences(&tx, cutoff, limit).await?,
        RetentionKind::Subjects => purge_subjects(&tx, cutoff, limit).await?,
        RetentionKind::Tasks => exec(&tx, PURGE_TASKS, &[&cutoff, &limit], "purging tasks").await?,
        RetentionKind::AuditLog => {
            exec(&tx, PURGE_AUDIT, &[&cutoff, &limit], "purging audit log").await?
        }
        RetentionKind::CapCounters => {
            exec(
                &tx,
                PURGE_CAP_COUNTERS,
                &[&cutoff, &limit],
                "purging cap counters",
            )
            .await?
        }
    };
    tx.commit().await.ctx("committing purge")?;
    Ok(n)
}

async fn purge_audiences(tx: &Transaction<'_>, cutoff: i64, limit: i64) -> Result<u64> {
    let referred = tx
        .prepare_cached(REFERRED)
        .await
        .ctx("preparing reference check")?;
    let mut left = limit;
    for id in ids(tx, OLD_AUDIENCES, cutoff, limit).await? {
        let used: bool = tx
            .query_one(&referred, &[&id])
            .await
            .ctx("checking references")?
            .try_get(0)
            .ctx("reading references")?;
        if used {
            continue;
        }
        left -= exec(tx, sql::DELETE_CHUNKS.pg, &[&id, &left], "deleting chunks").await? as i64;
        if left <= 0 {
            break;
        }
        left -= exec(tx, sql::DELETE_AUDIENCE.pg, &[&id], "deleting audience").await? as i64;
        if left <= 0 {
            break;
        }
    }
    Ok((limit - left) as u64)
}

async fn purge_subjects(tx: &Transaction<'_>, cutoff: i64, limit: i64) -> Result<u64> {
    let old = tx
        .prepare_cached(OLD_SUBJECTS)
        .await
        .ctx("preparing old subjects")?;
    let still = tx
        .prepare_cached(STILL_OLD)
        .await
        .ctx("preparing subject check")?;
    let take = tx
        .prepare_cached(TAKE_REMINDERS)
        .await
        .ctx("preparing reminder delete")?;
    let subjects: Vec<(i32, String)> = tx
        .query(&old, &[&cutoff, &limit])
        .await
        .ctx("finding old subjects")?
        .iter()
        .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
        .collect::<std::result::Result<_, tokio_postgres::Error>>()
        .ctx("reading old subjects")?;
    let mut left = limit;
    for (tenant, subject) in subjects {
        let ok: Option<bool> = tx
            .query_opt(&still, &[&tenant, &subject, &cutoff])
            .await
            .ctx("checking subject")?
            .map(|r| r.try_get(0))
            .transpose()
            .ctx("reading subject check")?;
        if ok != Some(true) {
            continue;
        }
        let timers: Vec<i64> = tx
            .query(&take, &[&tenant, &subject, &left])
            .await
            .ctx("deleting reminders")?
            .iter()
            .map(|r| r.try_get(0))
            .collect::<std::result::Result<_, _>>()
            .ctx("reading reminder timers")?;
        if !timers.is_empty() {
            exec(tx, DELETE_TIMERS, &[&timers], "deleting reminder timers").await?;
        }
        left -= timers.len() as i64;
        if left <= 0 {
            break;
        }
        left -= exec(
            tx,
            sql::DELETE_SUBJECT.pg,
            &[&tenant, &subject],
            "deleting subject",
        )
        .await? as i64;
        if left <= 0 {
            break;
        }
    }
    Ok((limit - left) as u64)
}

async fn take_sends(tx: &Transaction<'_>, job: i64, left: i64) -> Result<u64> {
    let stmt = tx
        .prepare_cached(DELETE_SENDS)
        .await
        .ctx("preparing send delete")?;
    let n: i64 = tx
        .query_one(&stmt, &[&job, &left])
        .await
        .ctx("deleting sends")?
        .try_get(0)
        .ctx("reading sends deleted")?;
    Ok(n as u64)
}

/// Up to `left` rows of job `job` (sends, then segments, then the job with
/// its few rows); how many, and whether the job itself went.
async fn take_job(tx: &Transaction<'_>, job: i64, left: i64) -> Result<(u64, bool)> {
    let mut n = take_sends(tx, job, left).await?;
    if n as i64 >= left {
        return Ok((n, false));
    }
    let rest = left - n as i64;
    n += exec(
        tx,
        sql::DELETE_SEGMENTS.pg,
        &[&job, &rest],
        "deleting segments",
    )
    .await?;
    if n as i64 >= left {
        return Ok((n, false));
    }
    let gone = exec(tx, DELETE_JOB, &[&job], "deleting job").await?;
    Ok((n + gone, gone == 1))
}

/// One step of deleting a finished job: `None` while rows remain.
pub(super) async fn delete_job_step(
    store: &PgStore,
    id: i64,
    batch: usize,
) -> Result<Option<JobDeletion>> {
    let batch = i64::try_from(batch.max(1)).unwrap_or(i64::MAX);
    let mut client = store.client().await?;
    let tx = client.transaction().await.ctx("beginning job delete")?;
    let lock = tx
        .prepare_cached(LOCK_JOB)
        .await
        .ctx("preparing job lock")?;
    let finished: Option<bool> = tx
        .query_opt(&lock, &[&id])
        .await
        .ctx("locking job")?
        .map(|r| r.try_get(0))
        .transpose()
        .ctx("reading job")?;
    let out = match finished {
        None => Some(JobDeletion::NotFound),
        Some(false) => Some(JobDeletion::NotFinished),
        Some(true) => {
            let (_, gone) = take_job(&tx, id, batch).await?;
            gone.then_some(JobDeletion::Deleted)
        }
    };
    tx.commit().await.ctx("committing job delete")?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use herald_core::TimerState;

    use super::PURGE_TIMERS;
    use crate::postgres::PgStore;
    use crate::prelude::*;
    use crate::testsuite::fixtures::{self, OTHER_TENANT};
    use crate::{CompletionOutcome, WriteOp};

    /// The walk of the state index names every finished state.
    #[test]
    fn the_state_walk_names_every_finished_state() {
        let codes: Vec<String> = TimerState::ALL
            .iter()
            .map(|s| s.code())
            .filter(|&c| c >= 2)
            .map(|c| c.to_string())
            .collect();
        assert!(
            PURGE_TIMERS.contains(&format!("(VALUES ({})) AS s(state)", codes.join("), ("))),
            "{codes:?}"
        );
    }

    /// Retention's purge of timers reads indexes only: the state index for
    /// timers finished after their due time, `timers_finished_early` for the
    /// rest, and the tenants by a loose scan, as custom and generic plans.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn purging_timers_uses_indexes() {
        let Some(pg) = herald_pgtemp::PgTemp::shared().expect("cluster") else {
            return;
        };
        let db = pg.fresh_database("retention_plans").expect("database");
        let store = PgStore::open(db.url(), &Default::default())
            .await
            .expect("open");
        let ops = (0..20_000i64)
            .map(|n| {
                let mut t = fixtures::timer(n);
                if n % 3 == 0 {
                    t.tenant = OTHER_TENANT;
                }
                WriteOp::InsertTimer(t)
            })
            .collect();
        let done = store
            .apply(ops)
            .await
            .expect("apply")
            .iter()
            .take(10_000)
            .map(|r| {
                let t = fixtures::created(r);
                fixtures::completion(&t, 1, CompletionOutcome::Done, t.due_at + 5)
            })
            .collect();
        store.complete(done).await.expect("complete");
        let client = store.client().await.expect("client");
        client
            .batch_execute("ANALYZE timers")
            .await
            .expect("analyze");
        for mode in ["auto", "force_generic_plan"] {
            client
                .batch_execute(&format!("SET plan_cache_mode = {mode}"))
                .await
                .expect("set plan_cache_mode");
            let rows = client
                .query(&format!("EXPLAIN {PURGE_TIMERS}"), &[&1_000i64, &100i64])
                .await
                .expect("explain");
            let plan: Vec<String> = rows.iter().map(|r| r.get::<_, String>(0)).collect();
            let plan = plan.join("\n");
            assert!(!plan.contains("Seq Scan on timers"), "{mode}:\n{plan}");
            for index in ["timers_tenant_state_due", "timers_finished_early"] {
                assert!(plan.contains(index), "{mode}: no {index}\n{plan}");
            }
        }
    }
}
