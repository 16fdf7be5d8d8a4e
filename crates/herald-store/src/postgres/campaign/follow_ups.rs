//! Jobs' follow-ups on PostgreSQL: stored with the job, found when due, and
//! the unread recipients they go to.

use tokio_postgres::Row;

use crate::Result;
use crate::campaign::sql::follow_ups as sql;
use crate::campaign::{FollowUp, FollowUpRecord, FollowUpState};
use crate::model::{from_db, limit_to_db, to_db};
use crate::postgres::{Ctx, PgStore};
use herald_core::route::StepOn;

type Tx<'a> = deadpool_postgres::Transaction<'a>;

const GET: &str = "SELECT job_id, after_ms, message, state, follow_up_job_id, done_at, step \
    FROM job_follow_ups WHERE job_id = $1";
// A route step's recipients: $3..$6 say whether it takes no_address,
// opted_out, other failures (not a cap), unread. The job's rows by their
// primary key.
const STEP_SENDS: &str = "SELECT s.idx, s.recipient FROM job_sends AS s \
    WHERE s.job_id = $1 AND s.idx >= $2 AND ( \
      (s.state = 'failed' AND ( \
         ($3 AND s.error = 'no_address') OR ($4 AND s.error = 'opted_out') \
         OR ($5 AND COALESCE(s.error, '') NOT IN ('no_address', 'opted_out', 'capped')))) \
      OR ($6 AND s.state = 'delivered' AND NOT EXISTS (SELECT 1 FROM job_receipts AS r \
                      WHERE r.job_id = s.job_id AND r.idx = s.idx AND r.event = 'read'))) \
    ORDER BY s.idx LIMIT $7";
// The job's rows by their primary key.
const UNREAD: &str = "SELECT s.idx, s.recipient FROM job_sends AS s \
    WHERE s.job_id = $1 AND s.idx >= $2 AND s.state = 'delivered' \
      AND NOT EXISTS (SELECT 1 FROM job_receipts AS r \
                      WHERE r.job_id = s.job_id AND r.idx = s.idx AND r.event = 'read') \
    ORDER BY s.idx LIMIT $3";

fn decode(r: &Row) -> Result<FollowUpRecord> {
    Ok(FollowUpRecord {
        job_id: r.try_get(0).ctx("reading follow-up job")?,
        after_ms: r.try_get(1).ctx("reading follow-up delay")?,
        message: r.try_get(2).ctx("reading follow-up message")?,
        state: FollowUpState::from_code(r.try_get(3).ctx("reading follow-up state")?)?,
        follow_up_job_id: r.try_get(4).ctx("reading follow-up job id")?,
        done_at: r.try_get(5).ctx("reading follow-up time")?,
        step: r
            .try_get::<_, Option<i64>>(6)
            .ctx("reading follow-up step")?
            .and_then(|s| u32::try_from(s).ok()),
    })
}

/// Stores job `job_id`'s follow-up, waiting, in the job's transaction.
pub(super) async fn insert(tx: &Tx<'_>, job_id: i64, f: &FollowUp) -> Result<()> {
    let stmt = tx
        .prepare_cached(sql::INSERT.pg)
        .await
        .ctx("preparing follow-up insert")?;
    let step = f.step.map(i64::from);
    tx.execute(&stmt, &[&job_id, &f.after_ms, &f.message, &step])
        .await
        .ctx("inserting follow-up")?;
    Ok(())
}

/// Marks job `of`'s follow-up sent if it is still waiting; whether it was.
pub(super) async fn claim(tx: &Tx<'_>, of: i64, now: i64) -> Result<bool> {
    let stmt = tx
        .prepare_cached(sql::CLAIM.pg)
        .await
        .ctx("preparing follow-up claim")?;
    let n = tx
        .execute(&stmt, &[&of, &now])
        .await
        .ctx("claiming follow-up")?;
    Ok(n == 1)
}

/// Records the job that sent job `of`'s follow-up.
pub(super) async fn set_job(tx: &Tx<'_>, of: i64, job_id: i64) -> Result<()> {
    let stmt = tx
        .prepare_cached(sql::SET_JOB.pg)
        .await
        .ctx("preparing follow-up job")?;
    tx.execute(&stmt, &[&of, &job_id])
        .await
        .ctx("recording follow-up job")?;
    Ok(())
}

pub(super) async fn get(store: &PgStore, job_id: i64) -> Result<Option<FollowUpRecord>> {
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(GET)
        .await
        .ctx("preparing follow-up read")?;
    client
        .query_opt(&stmt, &[&job_id])
        .await
        .ctx("reading follow-up")?
        .as_ref()
        .map(decode)
        .transpose()
}

pub(super) async fn due(store: &PgStore, now: i64, limit: usize) -> Result<Vec<FollowUpRecord>> {
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(sql::DUE.pg)
        .await
        .ctx("preparing due follow-ups")?;
    client
        .query(&stmt, &[&now, &limit_to_db(limit)])
        .await
        .ctx("finding due follow-ups")?
        .iter()
        .map(decode)
        .collect()
}

pub(super) async fn unread(
    store: &PgStore,
    job_id: i64,
    from: u64,
    limit: usize,
) -> Result<Vec<(u64, String)>> {
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(UNREAD)
        .await
        .ctx("preparing unread sends")?;
    let from = to_db(from, "from")?;
    let rows = client
        .query(&stmt, &[&job_id, &from, &limit_to_db(limit)])
        .await
        .ctx("reading unread sends")?;
    indexed(&rows)
}

pub(super) async fn step_sends(
    store: &PgStore,
    job_id: i64,
    from: u64,
    limit: usize,
    on: &[StepOn],
) -> Result<Vec<(u64, String)>> {
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(STEP_SENDS)
        .await
        .ctx("preparing a route step's sends")?;
    let from = to_db(from, "from")?;
    let takes = |o| on.contains(&o);
    let (no_address, opted_out, failed, unread) = (
        takes(StepOn::NoAddress),
        takes(StepOn::OptedOut),
        takes(StepOn::Failed),
        takes(StepOn::Unread),
    );
    let rows = client
        .query(
            &stmt,
            &[
                &job_id,
                &from,
                &no_address,
                &opted_out,
                &failed,
                &unread,
                &limit_to_db(limit),
            ],
        )
        .await
        .ctx("reading a route step's sends")?;
    indexed(&rows)
}

/// `(index, recipient)` rows of `job_sends`.
fn indexed(rows: &[Row]) -> Result<Vec<(u64, String)>> {
    rows.iter()
        .map(|r| {
            let idx: i64 = r.try_get(0).ctx("reading send index")?;
            let to: String = r.try_get(1).ctx("reading recipient")?;
            Ok((from_db(idx, "job_sends.idx")?, to))
        })
        .collect()
}

pub(super) async fn skip(store: &PgStore, job_id: i64, now: i64) -> Result<bool> {
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(sql::SKIP.pg)
        .await
        .ctx("preparing follow-up skip")?;
    let n = client
        .execute(&stmt, &[&job_id, &now])
        .await
        .ctx("skipping follow-up")?;
    Ok(n == 1)
}
