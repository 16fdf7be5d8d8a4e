//! Jobs' follow-ups on SQLite: stored with the job, found when due, and the
//! unread recipients they go to.

use rusqlite::{Connection, Row, Transaction, params};

use super::{Ctx, query_all, query_opt};
use crate::Result;
use crate::campaign::sql::follow_ups as sql;
use crate::campaign::{FollowUp, FollowUpRecord, FollowUpState};
use crate::model::{from_db, limit_to_db, to_db};
use herald_core::route::StepOn;

const COLS: &str = "job_id, after_ms, message, state, follow_up_job_id, done_at, step";
// A route step's recipients: ?3..?6 say whether it takes no_address,
// opted_out, other failures (not a cap), unread; delivered is code 0,
// failed 2. The job's rows by their primary key.
const STEP_SENDS: &str = "SELECT s.idx, s.recipient FROM job_sends AS s \
    WHERE s.job_id = ?1 AND s.idx >= ?2 AND ( \
      (s.state = 2 AND ( \
         (?3 AND s.error = 'no_address') OR (?4 AND s.error = 'opted_out') \
         OR (?5 AND COALESCE(s.error, '') NOT IN ('no_address', 'opted_out', 'capped')))) \
      OR (?6 AND s.state = 0 AND NOT EXISTS (SELECT 1 FROM job_receipts AS r \
                      WHERE r.job_id = s.job_id AND r.idx = s.idx AND r.event = 'read'))) \
    ORDER BY s.idx LIMIT ?7";
// Delivered is code 0; the job's rows by their primary key.
const UNREAD: &str = "SELECT s.idx, s.recipient FROM job_sends AS s \
    WHERE s.job_id = ?1 AND s.idx >= ?2 AND s.state = 0 \
      AND NOT EXISTS (SELECT 1 FROM job_receipts AS r \
                      WHERE r.job_id = s.job_id AND r.idx = s.idx AND r.event = 'read') \
    ORDER BY s.idx LIMIT ?3";

fn decode(r: &Row<'_>) -> Result<FollowUpRecord> {
    let read = |e| crate::StoreError::Corrupt(format!("job_follow_ups row: {e}"));
    Ok(FollowUpRecord {
        job_id: r.get(0).map_err(read)?,
        after_ms: r.get(1).map_err(read)?,
        message: r.get(2).map_err(read)?,
        state: FollowUpState::from_code(r.get(3).map_err(read)?)?,
        follow_up_job_id: r.get(4).map_err(read)?,
        done_at: r.get(5).map_err(read)?,
        step: r
            .get::<_, Option<i64>>(6)
            .map_err(read)?
            .and_then(|s| u32::try_from(s).ok()),
    })
}

/// Stores job `job_id`'s follow-up, waiting, in the job's transaction.
pub(super) fn insert(tx: &Transaction<'_>, job_id: i64, f: &FollowUp) -> Result<()> {
    tx.prepare_cached(sql::INSERT.sqlite)
        .ctx("preparing follow-up insert")?
        .execute(params![job_id, f.after_ms, f.message, f.step])
        .ctx("inserting follow-up")?;
    Ok(())
}

/// Marks job `of`'s follow-up sent if it is still waiting; whether it was.
pub(super) fn claim(tx: &Transaction<'_>, of: i64, now: i64) -> Result<bool> {
    let n = tx
        .prepare_cached(sql::CLAIM.sqlite)
        .ctx("preparing follow-up claim")?
        .execute(params![of, now])
        .ctx("claiming follow-up")?;
    Ok(n == 1)
}

/// Records the job that sent job `of`'s follow-up.
pub(super) fn set_job(tx: &Transaction<'_>, of: i64, job_id: i64) -> Result<()> {
    tx.prepare_cached(sql::SET_JOB.sqlite)
        .ctx("preparing follow-up job")?
        .execute(params![of, job_id])
        .ctx("recording follow-up job")?;
    Ok(())
}

pub(super) fn get(conn: &mut Connection, job_id: i64) -> Result<Option<FollowUpRecord>> {
    let sql = format!("SELECT {COLS} FROM job_follow_ups WHERE job_id = ?1");
    query_opt(conn, &sql, [job_id], "reading follow-up", decode)
}

pub(super) fn due(conn: &mut Connection, now: i64, limit: usize) -> Result<Vec<FollowUpRecord>> {
    query_all(
        conn,
        sql::DUE.sqlite,
        params![now, limit_to_db(limit)],
        "finding due follow-ups",
        decode,
    )
}

pub(super) fn unread(
    conn: &mut Connection,
    job_id: i64,
    from: u64,
    limit: usize,
) -> Result<Vec<(u64, String)>> {
    query_all(
        conn,
        UNREAD,
        params![job_id, to_db(from, "from")?, limit_to_db(limit)],
        "reading unread sends",
        |r| {
            let idx: i64 = r.get(0).ctx("reading send index")?;
            Ok((
                from_db(idx, "job_sends.idx")?,
                r.get(1).ctx("reading recipient")?,
            ))
        },
    )
}

pub(super) fn step_sends(
    conn: &mut Connection,
    job_id: i64,
    from: u64,
    limit: usize,
    on: &[StepOn],
) -> Result<Vec<(u64, String)>> {
    let takes = |o| on.contains(&o);
    query_all(
        conn,
        STEP_SENDS,
        params![
            job_id,
            to_db(from, "from")?,
            takes(StepOn::NoAddress),
            takes(StepOn::OptedOut),
            takes(StepOn::Failed),
            takes(StepOn::Unread),
            limit_to_db(limit)
        ],
        "reading a route step's sends",
        |r| {
            let idx: i64 = r.get(0).ctx("reading send index")?;
            Ok((
                from_db(idx, "job_sends.idx")?,
                r.get(1).ctx("reading recipient")?,
            ))
        },
    )
}

pub(super) fn skip(conn: &mut Connection, job_id: i64, now: i64) -> Result<bool> {
    super::in_tx(conn, "skipping follow-up", |tx| {
        let n = tx
            .prepare_cached(sql::SKIP.sqlite)
            .ctx("preparing follow-up skip")?
            .execute(params![job_id, now])
            .ctx("skipping follow-up")?;
        Ok(n == 1)
    })
}
