//! A job's failed sends: grouped by error, and sent again (docs/architecture.md,
//! "The path of a campaign"). Both
//! read only the `job_sends_failed` index (migration 0011); the retry locks the
//! job row first, like every writer of a job's send log (see `jobs`).

use herald_core::campaign::JobState;

use super::jobs::{INSERT_SEGMENTS, LOCK_JOB};
use crate::campaign::{Actor, FailedRetry, FailureGroups, Resend, retry_runs};
use crate::model::{self, limit_to_db, tenant_to_pg, to_db};
use crate::postgres::{Ctx, PgStore};
use crate::{JobRecord, Result};

const FAILED_ERRORS: &str = "SELECT error FROM job_sends \
    WHERE job_id = $1 AND state = 'failed' ORDER BY idx LIMIT $2";
/// The two statements that send again a job's rows in `$state`, whose
/// total is the jobs column `$total`: the rows back to `retry` (`$1` job,
/// `$2` at), then the totals (`$1` job, `$2` how many).
macro_rules! resend {
    ($state:literal, $total:literal) => {
        [
            concat!(
                "UPDATE job_sends SET state = 'retry', updated_at = $2 \
                 WHERE job_id = $1 AND state = '",
                $state,
                "' RETURNING idx"
            ),
            concat!(
                "UPDATE jobs SET ",
                $total,
                " = ",
                $total,
                " - $2, retrying = retrying + $2, \
                 state = 'running', finished_at = NULL WHERE id = $1 RETURNING ",
                crate::model::job_cols!()
            ),
        ]
    };
}

/// The statements of [`retry_sends`] for `which`: the rows back to `retry`,
/// and the job's totals. A state literal in each, so each row update reads
/// only that state's partial index.
fn resend_statements(which: Resend) -> [&'static str; 2] {
    match which {
        Resend::Failed => resend!("failed", "failed"),
        Resend::InDoubt => resend!("in_doubt", "in_doubt"),
    }
}

pub(super) async fn job_failures(
    store: &PgStore,
    job_id: i64,
    limit: usize,
) -> Result<FailureGroups> {
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(FAILED_ERRORS)
        .await
        .ctx("preparing failed sends")?;
    let errors = client
        .query(&stmt, &[&job_id, &limit_to_db(limit.saturating_add(1))])
        .await
        .ctx("reading failed sends")?
        .iter()
        .map(|r| r.try_get::<_, Option<String>>(0))
        .collect::<std::result::Result<Vec<_>, _>>()
        .ctx("reading job_sends.error")?;
    Ok(FailureGroups::from_errors(errors, limit))
}

pub(super) async fn retry_sends(
    store: &PgStore,
    job_id: i64,
    which: Resend,
    now: i64,
    by: &Option<Actor>,
) -> Result<Option<FailedRetry>> {
    let [to_retry, run_again] = resend_statements(which);
    let mut client = store.client().await?;
    let tx = client.transaction().await.ctx("beginning retry_sends")?;
    let lock = tx
        .prepare_cached(LOCK_JOB)
        .await
        .ctx("preparing job lock")?;
    let Some(row) = tx
        .query_opt(&lock, &[&job_id])
        .await
        .ctx("locking the job")?
    else {
        return Ok(None);
    };
    let job: JobRecord = model::decode(&row)?;
    if matches!(job.state, JobState::Cancelled | JobState::Expired) {
        return Ok(Some(FailedRetry::NotRetryable(job)));
    }
    let to_retry = tx.prepare_cached(to_retry).await.ctx("preparing retry")?;
    let mut idxs = tx
        .query(&to_retry, &[&job_id, &now])
        .await
        .ctx("setting sends to retry")?
        .iter()
        .map(|r| {
            let i: i64 = r.try_get(0).ctx("reading job_sends.idx")?;
            model::from_db(i, "job_sends.idx")
        })
        .collect::<Result<Vec<u64>>>()?;
    if idxs.is_empty() {
        tx.commit().await.ctx("committing retry_sends")?;
        return Ok(Some(FailedRetry::Retried { job, retried: 0 }));
    }
    idxs.sort_unstable();
    let retried = idxs.len() as i64;
    super::stamp(&tx, crate::campaign::sql::actors::JOB_CHANGED, job_id, by).await?;
    let again = tx
        .prepare_cached(run_again)
        .await
        .ctx("preparing job totals")?;
    let row = tx
        .query_one(&again, &[&job_id, &retried])
        .await
        .ctx("moving totals to retrying")?;
    let updated: JobRecord = model::decode(&row)?;
    let mut starts = Vec::new();
    let mut ends = Vec::new();
    for (s, e) in retry_runs(&idxs, job.segment_size, job.state != JobState::Running) {
        starts.push(to_db(s, "start")?);
        ends.push(to_db(e, "end")?);
    }
    let segments = tx
        .prepare_cached(INSERT_SEGMENTS)
        .await
        .ctx("preparing retry segments")?;
    let priority = i16::from(job.priority);
    let tenant = tenant_to_pg(job.tenant)?;
    tx.execute(
        &segments,
        &[
            &job_id,
            &starts,
            &ends,
            &now,
            &priority,
            &job.deadline_at,
            &tenant,
        ],
    )
    .await
    .ctx("inserting retry segments")?;
    tx.commit().await.ctx("committing retry_sends")?;
    Ok(Some(FailedRetry::Retried {
        job: updated,
        retried: retried as u64,
    }))
}
