//! Retention on SQLite: each purge call is one short `BEGIN IMMEDIATE`
//! transaction that finds up to `limit` old rows of one kind through the
//! index on their age (migration 0018) and deletes them with their children,
//! each by its key.

use rusqlite::{Connection, Transaction, TransactionBehavior, params};

use super::error::Ctx;
use crate::retention::sql;
use crate::{JobDeletion, Result, RetentionKind};

// ---- timers ----
pub(super) const OLD_TIMERS: &str = "SELECT id FROM timers \
    WHERE state >= 2 AND kind <> 'reminder' AND updated_at < ?1 \
    ORDER BY updated_at, id LIMIT ?2";
const DELETE_TIMER_RECEIPTS: &str = "DELETE FROM delivery_receipts WHERE delivery_id IN \
    (SELECT id FROM deliveries WHERE timer_id = ?1)";
const DELETE_TIMER_DELIVERIES: &str = "DELETE FROM deliveries WHERE timer_id = ?1";
// Only a finished timer goes, whatever found it.
const DELETE_TIMER: &str = "DELETE FROM timers WHERE id = ?1 AND state >= 2";

// ---- jobs and their send log ----
// Ended, and no follow-up waiting to read the send log.
pub(super) const OLD_JOBS: &str = "SELECT j.id FROM jobs AS j \
    WHERE j.state <> 'running' AND j.finished_at < ?1 \
      AND NOT EXISTS (SELECT 1 FROM job_follow_ups AS f WHERE f.job_id = j.id AND f.state = 0) \
    ORDER BY j.finished_at, j.id LIMIT ?2";
pub(super) const OLD_JOBS_WITH_SENDS: &str = "SELECT j.id FROM jobs AS j \
    WHERE j.state <> 'running' AND j.finished_at < ?1 \
      AND NOT EXISTS (SELECT 1 FROM job_follow_ups AS f WHERE f.job_id = j.id AND f.state = 0) \
      AND EXISTS (SELECT 1 FROM job_sends AS s WHERE s.job_id = j.id) \
    ORDER BY j.finished_at, j.id LIMIT ?2";
const JOB_FINISHED: &str = "SELECT state <> 'running' AND NOT EXISTS \
    (SELECT 1 FROM job_follow_ups AS f WHERE f.job_id = jobs.id AND f.state = 0) \
    FROM jobs WHERE id = ?1";
// ?1 job, ?2 how many. The receipts of the sends about to go, then the sends.
pub(super) const DELETE_SEND_RECEIPTS: &str = "DELETE FROM job_receipts \
    WHERE job_id = ?1 AND idx IN \
      (SELECT idx FROM job_sends WHERE job_id = ?1 ORDER BY idx LIMIT ?2)";
pub(super) const DELETE_SENDS: &str = "DELETE FROM job_sends WHERE job_id = ?1 AND idx IN \
    (SELECT idx FROM job_sends WHERE job_id = ?1 ORDER BY idx LIMIT ?2)";
const DELETE_JOB_RECEIPTS: &str = "DELETE FROM job_receipts WHERE job_id = ?1";
const DELETE_JOB_COUNTS: &str = "DELETE FROM job_receipt_counts WHERE job_id = ?1";
const DELETE_JOB_FOLLOW_UP: &str = "DELETE FROM job_follow_ups WHERE job_id = ?1";
const DELETE_JOB: &str = "DELETE FROM jobs WHERE id = ?1 AND state <> 'running'";

// ---- audiences ----
pub(super) const OLD_AUDIENCES: &str = "SELECT a.id FROM audiences AS a \
    WHERE a.created_at < ?1 \
      AND NOT EXISTS (SELECT 1 FROM jobs AS j WHERE j.audience_id = a.id) \
      AND NOT EXISTS (SELECT 1 FROM rule_versions AS v WHERE v.audience_id = a.id) \
    ORDER BY a.created_at, a.id LIMIT ?2";

// ---- subjects ----
// Past, and no reminder of it still to fire.
pub(super) const OLD_SUBJECTS: &str = "SELECT s.tenant_id, s.subject_id FROM subjects AS s \
    WHERE s.start_at < ?1 \
      AND NOT EXISTS (SELECT 1 FROM reminder_timers AS r CROSS JOIN timers AS t \
                      ON t.id = r.timer_id \
                      WHERE r.tenant_id = s.tenant_id AND r.subject_id = s.subject_id \
                        AND t.state < 2) \
    ORDER BY s.start_at LIMIT ?2";
pub(super) const SUBJECT_REMINDERS: &str = "SELECT user_id, bit, timer_id FROM reminder_timers \
    WHERE tenant_id = ?1 AND subject_id = ?2 LIMIT ?3";
const DELETE_REMINDER_TIMER: &str = "DELETE FROM reminder_timers \
    WHERE tenant_id = ?1 AND user_id = ?2 AND subject_id = ?3 AND bit = ?4";
const DELETE_REMINDER: &str =
    "DELETE FROM reminders WHERE tenant_id = ?1 AND user_id = ?2 AND subject_id = ?3";

// ---- tasks ----
// The last task of each rule version stays: the planner plans after it.
pub(super) const OLD_TASKS: &str = "SELECT t.id FROM tasks AS t \
    WHERE t.state NOT IN ('pending', 'running') AND t.finished_at < ?1 \
      AND EXISTS (SELECT 1 FROM tasks AS n WHERE n.rule_id = t.rule_id \
                  AND n.version = t.version AND n.planned_at > t.planned_at) \
    ORDER BY t.finished_at, t.id LIMIT ?2";
const DELETE_TASK: &str = "DELETE FROM tasks WHERE id = ?1";

// ---- audit log ----
pub(super) const DELETE_AUDIT: &str = "DELETE FROM audit_log WHERE id IN \
    (SELECT id FROM audit_log WHERE at < ?1 ORDER BY at, id LIMIT ?2)";

// ---- cap counters ----
const DELETE_CAP_COUNTERS: &str = "DELETE FROM cap_counters WHERE (tenant_id, cap_key, bucket) IN \
    (SELECT tenant_id, cap_key, bucket FROM cap_counters WHERE expires_at < ?1 \
     ORDER BY expires_at LIMIT ?2)";

fn in_tx<R>(
    conn: &mut Connection,
    what: &str,
    f: impl FnOnce(&Transaction<'_>) -> Result<R>,
) -> Result<R> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx(what)?;
    let r = f(&tx)?;
    tx.commit().ctx(what)?;
    Ok(r)
}

fn ids(tx: &Transaction<'_>, sql: &str, cutoff: i64, limit: i64) -> Result<Vec<i64>> {
    let mut stmt = tx
        .prepare_cached(sql)
        .ctx("preparing retention candidates")?;
    let rows = stmt
        .query_map(params![cutoff, limit], |r| r.get(0))
        .ctx("finding retention candidates")?;
    rows.collect::<rusqlite::Result<Vec<i64>>>()
        .ctx("reading retention candidates")
}

fn exec(tx: &Transaction<'_>, sql: &str, p: impl rusqlite::Params, what: &str) -> Result<u64> {
    let n = tx.prepare_cached(sql).ctx(what)?.execute(p).ctx(what)?;
    Ok(n as u64)
}

/// One purge call: see [`crate::Store::purge`].
pub(super) fn purge(
    conn: &mut Connection,
    kind: RetentionKind,
    cutoff: i64,
    limit: usize,
) -> Result<u64> {
    let limit = i64::try_from(limit.max(1)).unwrap_or(i64::MAX);
    in_tx(conn, "purging", |tx| match kind {
        RetentionKind::Timers => purge_timers(tx, cutoff, limit),
        RetentionKind::Jobs => {
            let mut left = limit;
            for job in ids(tx, OLD_JOBS, cutoff, limit)? {
                let (n, gone) = take_job(tx, job, left)?;
                left -= n as i64;
                if left <= 0 || !gone {
                    break;
                }
            }
            Ok((limit - left) as u64)
        }
        RetentionKind::SendLog => {
            let mut left = limit;
            for job in ids(tx, OLD_JOBS_WITH_SENDS, cutoff, limit)? {
                left -= take_sends(tx, job, left)? as i64;
                if left <= 0 {
                    break;
                }
            }
            Ok((limit - left) as u64)
        }
        RetentionKind::Audiences => {
            let mut left = limit;
            for id in ids(tx, OLD_AUDIENCES, cutoff, limit)? {
                left -= exec(
                    tx,
                    sql::DELETE_CHUNKS.sqlite,
                    params![id, left],
                    "deleting chunks",
                )? as i64;
                if left <= 0 {
                    break;
                }
                left -= exec(tx, sql::DELETE_AUDIENCE.sqlite, [id], "deleting audience")? as i64;
                if left <= 0 {
                    break;
                }
            }
            Ok((limit - left) as u64)
        }
        RetentionKind::Subjects => purge_subjects(tx, cutoff, limit),
        RetentionKind::Tasks => {
            let mut n = 0;
            for id in ids(tx, OLD_TASKS, cutoff, limit)? {
                n += exec(tx, DELETE_TASK, [id], "deleting task")?;
            }
            Ok(n)
        }
        RetentionKind::AuditLog => exec(
            tx,
            DELETE_AUDIT,
            params![cutoff, limit],
            "deleting audit log",
        ),
        RetentionKind::CapCounters => exec(
            tx,
            DELETE_CAP_COUNTERS,
            params![cutoff, limit],
            "deleting cap counters",
        ),
    })
}

fn delete_timer(tx: &Transaction<'_>, id: i64) -> Result<u64> {
    exec(tx, DELETE_TIMER_RECEIPTS, [id], "deleting timer receipts")?;
    exec(tx, DELETE_TIMER_DELIVERIES, [id], "deleting deliveries")?;
    exec(tx, DELETE_TIMER, [id], "deleting timer")
}

fn purge_timers(tx: &Transaction<'_>, cutoff: i64, limit: i64) -> Result<u64> {
    let mut n = 0;
    for id in ids(tx, OLD_TIMERS, cutoff, limit)? {
        n += delete_timer(tx, id)?;
    }
    Ok(n)
}

fn purge_subjects(tx: &Transaction<'_>, cutoff: i64, limit: i64) -> Result<u64> {
    let subjects: Vec<(i64, String)> = {
        let mut stmt = tx
            .prepare_cached(OLD_SUBJECTS)
            .ctx("preparing old subjects")?;
        let rows = stmt
            .query_map(params![cutoff, limit], |r| Ok((r.get(0)?, r.get(1)?)))
            .ctx("finding old subjects")?;
        rows.collect::<rusqlite::Result<_>>()
            .ctx("reading old subjects")?
    };
    let mut left = limit;
    for (tenant, subject) in subjects {
        let bits: Vec<(String, i64, i64)> = {
            let mut stmt = tx
                .prepare_cached(SUBJECT_REMINDERS)
                .ctx("preparing subject reminders")?;
            let rows = stmt
                .query_map(params![tenant, subject, left], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })
                .ctx("reading subject reminders")?;
            rows.collect::<rusqlite::Result<_>>()
                .ctx("reading subject reminders")?
        };
        for (user, bit, timer) in &bits {
            delete_timer(tx, *timer)?;
            exec(
                tx,
                DELETE_REMINDER_TIMER,
                params![tenant, user, subject, bit],
                "deleting reminder timer",
            )?;
            exec(
                tx,
                DELETE_REMINDER,
                params![tenant, user, subject],
                "deleting reminder",
            )?;
            left -= 1;
        }
        if left <= 0 {
            break;
        }
        left -= exec(
            tx,
            sql::DELETE_SUBJECT.sqlite,
            params![tenant, subject],
            "deleting subject",
        )? as i64;
        if left <= 0 {
            break;
        }
    }
    Ok((limit - left) as u64)
}

/// Up to `left` of job `job`'s sends with their receipts; how many sends.
fn take_sends(tx: &Transaction<'_>, job: i64, left: i64) -> Result<u64> {
    exec(
        tx,
        DELETE_SEND_RECEIPTS,
        params![job, left],
        "deleting send receipts",
    )?;
    exec(tx, DELETE_SENDS, params![job, left], "deleting sends")
}

/// Up to `left` rows of job `job` (sends, then segments, then the job with
/// its few rows); how many, and whether the job itself went.
fn take_job(tx: &Transaction<'_>, job: i64, left: i64) -> Result<(u64, bool)> {
    let mut n = take_sends(tx, job, left)?;
    if n as i64 >= left {
        return Ok((n, false));
    }
    n += exec(
        tx,
        sql::DELETE_SEGMENTS.sqlite,
        params![job, left - n as i64],
        "deleting segments",
    )?;
    if n as i64 >= left {
        return Ok((n, false));
    }
    exec(tx, DELETE_JOB_RECEIPTS, [job], "deleting job receipts")?;
    exec(tx, DELETE_JOB_COUNTS, [job], "deleting receipt counts")?;
    exec(tx, DELETE_JOB_FOLLOW_UP, [job], "deleting follow-up")?;
    let gone = exec(tx, DELETE_JOB, [job], "deleting job")?;
    Ok((n + gone, gone == 1))
}

/// Deletes one finished job in transactions of at most `batch` rows.
pub(super) fn delete_job_step(
    conn: &mut Connection,
    id: i64,
    batch: usize,
) -> Result<Option<JobDeletion>> {
    let batch = i64::try_from(batch.max(1)).unwrap_or(i64::MAX);
    in_tx(conn, "deleting job", |tx| {
        use rusqlite::OptionalExtension;
        let finished: Option<bool> = tx
            .prepare_cached(JOB_FINISHED)
            .ctx("preparing job check")?
            .query_row([id], |r| r.get(0))
            .optional()
            .ctx("checking job")?;
        match finished {
            None => Ok(Some(JobDeletion::NotFound)),
            Some(false) => Ok(Some(JobDeletion::NotFinished)),
            Some(true) => {
                let (_, gone) = take_job(tx, id, batch)?;
                Ok(gone.then_some(JobDeletion::Deleted))
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite::testing::{migrated, plan};

    /// Each kind's candidates come off the index on their age; no table scan.
    #[test]
    fn candidates_use_their_age_indexes() {
        let conn = migrated();
        let cases: &[(&str, &str)] = &[
            (OLD_TIMERS, "USING INDEX timers_finished (updated_at<?)"),
            (OLD_JOBS, "USING INDEX jobs_finished (finished_at<?)"),
            (
                OLD_JOBS_WITH_SENDS,
                "USING INDEX jobs_finished (finished_at<?)",
            ),
            (OLD_AUDIENCES, "INDEX audiences_created (created_at<?)"),
            (OLD_SUBJECTS, "INDEX subjects_start (start_at<?)"),
            (OLD_TASKS, "USING INDEX tasks_ended (finished_at<?)"),
            (DELETE_AUDIT, "INDEX audit_log_at (at<?)"),
            (
                DELETE_CAP_COUNTERS,
                "INDEX cap_counters_expiry (expires_at<?)",
            ),
            (DELETE_SENDS, "PRIMARY KEY (job_id=?)"),
            (sql::DELETE_SEGMENTS.sqlite, "INDEX segments_job (job_id=?)"),
            (
                SUBJECT_REMINDERS,
                "reminder_timers_subject (tenant_id=? AND subject_id=?)",
            ),
        ];
        for (sql, wanted) in cases {
            let p = plan(&conn, sql).replace("COVERING INDEX", "INDEX");
            assert!(p.contains(wanted), "{sql}\nwanted {wanted:?} in:\n{p}");
            assert!(
                p.lines()
                    .all(|l| !l.contains("SCAN") || l.contains("INDEX")),
                "table scan: {sql}:\n{p}"
            );
        }
    }
}
