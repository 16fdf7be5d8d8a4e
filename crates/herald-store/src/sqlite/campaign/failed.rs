//! A job's failed sends: grouped by error, and sent again (issue 15). Both
//! read only the `job_sends_failed` index (migration 0011).

use herald_core::campaign::JobState;
use rusqlite::{Connection, params};

use super::jobs::{INSERT_SEGMENT, job_by_id};
use super::{Ctx, in_read_tx, in_tx, query_all};
use crate::Result;
use crate::campaign::{FailedRetry, FailureGroups, Resend, retry_runs};
use crate::model::{from_db, limit_to_db, tenant_to_db, to_db};

const FAILED_ERRORS: &str = "SELECT error FROM job_sends INDEXED BY job_sends_failed \
    WHERE job_id = ?1 AND state = 2 ORDER BY idx LIMIT ?2";
const FAILED_IDXS: &str = "SELECT idx FROM job_sends INDEXED BY job_sends_failed \
    WHERE job_id = ?1 AND state = 2 ORDER BY idx";
const FAILED_TO_RETRY: &str = "UPDATE job_sends INDEXED BY job_sends_failed \
    SET state = 1, updated_at = ?2 WHERE job_id = ?1 AND state = 2";
const FAILED_RUN_AGAIN: &str = "UPDATE jobs SET failed = failed - ?2, retrying = retrying + ?2, \
    state = 'running', finished_at = NULL WHERE id = ?1";
const IN_DOUBT_IDXS: &str = "SELECT idx FROM job_sends INDEXED BY job_sends_in_doubt \
    WHERE job_id = ?1 AND state = 4 ORDER BY idx";
const IN_DOUBT_TO_RETRY: &str = "UPDATE job_sends INDEXED BY job_sends_in_doubt \
    SET state = 1, updated_at = ?2 WHERE job_id = ?1 AND state = 4";
const IN_DOUBT_RUN_AGAIN: &str = "UPDATE jobs SET in_doubt = in_doubt - ?2, \
    retrying = retrying + ?2, state = 'running', finished_at = NULL WHERE id = ?1";

/// The statements of [`retry_sends`] for `which`: the rows' indexes, the
/// rows back to `retry`, and the job's totals (each reads only the state's
/// partial index).
fn resend_statements(which: Resend) -> [&'static str; 3] {
    match which {
        Resend::Failed => [FAILED_IDXS, FAILED_TO_RETRY, FAILED_RUN_AGAIN],
        Resend::InDoubt => [IN_DOUBT_IDXS, IN_DOUBT_TO_RETRY, IN_DOUBT_RUN_AGAIN],
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
        let Some(job) = job_by_id(tx, job_id)? else {
            return Ok(None);
        };
        Ok(Some(FailedRetry::Retried {
            job,
            retried: retried as u64,
        }))
    })
}
