//! A job's failed sends: grouped by error, and sent again (docs/architecture.md,
//! "The path of a campaign"). Both
//! read only the `job_sends_failed` index (migration 0011).

use herald_core::campaign::JobState;
use rusqlite::{Connection, params};

use super::jobs::{INSERT_SEGMENT, job_by_id};
use super::{Ctx, in_read_tx, in_tx, query_all};
use crate::Result;
use crate::campaign::{Actor, FailedRetry, FailureGroups, Resend, retry_runs};
use crate::model::{from_db, limit_to_db, tenant_to_db, to_db};

const FAILED_ERRORS: &str = "SELECT error FROM job_sends INDEXED BY job_sends_failed \
    WHERE job_id = ?1 AND state = 2 ORDER BY idx LIMIT ?2";
/// The three statements that send again a job's rows in state code
/// `$code`, read through the partial index `$index`, whose total is the jobs
/// column `$total`: their indexes, the rows back to `retry` (1), the totals.
macro_rules! resend {
    ($code:literal, $index:literal, $total:literal) => {
        [
            concat!(
                "SELECT idx FROM job_sends INDEXED BY ",
                $index,
                " WHERE job_id = ?1 AND state = ",
                $code,
                " ORDER BY idx"
            ),
            concat!(
                "UPDATE job_sends INDEXED BY ",
                $index,
                " SET state = 1, updated_at = ?2 WHERE job_id = ?1 AND state = ",
                $code
            ),
            concat!(
                "UPDATE jobs SET ",
                $total,
                " = ",
                $total,
                " - ?2, retrying = retrying + ?2, \
                 state = 'running', finished_at = NULL WHERE id = ?1"
            ),
        ]
    };
}

/// The statements of [`retry_sends`] for `which`: the rows' indexes, the
/// rows back to `retry`, and the job's totals (each reads only the state's
/// partial index).
fn resend_statements(which: Resend) -> [&'static str; 3] {
    match which {
        Resend::Failed => resend!(2, "job_sends_failed", "failed"),
        Resend::InDoubt => resend!(4, "job_sends_in_doubt", "in_doubt"),
    }
}

pub(super) fn job_failures(
    conn: &mut Connection,
    job_id: i64,
    limit: usize,
) -> Result<FailureGroups> {
    in_read_tx(conn, "reading failed sends", |tx| {
        let errors = query_all(
            tx,
            FAILED_ERRORS,
            params![job_id, limit_to_db(limit.saturating_add(1))],
            "reading failed sends",
            |r| r.get::<_, Option<String>>(0).ctx("job_sends.error"),
        )?;
        Ok(FailureGroups::from_errors(errors, limit))
    })
}

pub(super) fn retry_sends(
    conn: &mut Connection,
    job_id: i64,
    which: Resend,
    now: i64,
    by: Option<Actor>,
) -> Result<Option<FailedRetry>> {
    let [read_idxs, to_retry, run_again] = resend_statements(which);
    in_tx(conn, "sending again", |tx| {
        let Some(job) = job_by_id(tx, job_id)? else {
            return Ok(None);
        };
        if matches!(job.state, JobState::Cancelled | JobState::Expired) {
            return Ok(Some(FailedRetry::NotRetryable(job)));
        }
        let idxs = query_all(tx, read_idxs, [job_id], "reading sends to retry", |r| {
            from_db(r.get(0).ctx("job_sends.idx")?, "job_sends.idx")
        })?;
        if idxs.is_empty() {
            return Ok(Some(FailedRetry::Retried { job, retried: 0 }));
        }
        let retried = tx
            .prepare_cached(to_retry)
            .ctx("preparing retry")?
            .execute(params![job_id, now])
            .ctx("setting sends to retry")? as i64;
        tx.prepare_cached(run_again)
            .ctx("preparing job totals")?
            .execute(params![job_id, retried])
            .ctx("moving totals to retrying")?;
        let gaps = job.state != JobState::Running;
        for (start, end) in retry_runs(&idxs, job.segment_size, gaps) {
            tx.prepare_cached(INSERT_SEGMENT)
                .ctx("preparing retry segment")?
                .execute(params![
                    job_id,
                    to_db(start, "start")?,
                    to_db(end, "end")?,
                    now,
                    i64::from(job.priority),
                    job.deadline_at,
                    None::<i64>,
                    1,
                    now,
                    tenant_to_db(job.tenant)
                ])
                .ctx("inserting retry segment")?;
        }
        super::stamp(tx, crate::campaign::sql::actors::JOB_CHANGED, job_id, &by)?;
        let Some(job) = job_by_id(tx, job_id)? else {
            return Ok(None);
        };
        Ok(Some(FailedRetry::Retried {
            job,
            retried: retried as u64,
        }))
    })
}
