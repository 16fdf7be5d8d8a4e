//! The sweeper: expired jobs, lapsed leases, partial segments, idle jobs, one
//! transaction per kind of work, in that order (so a job past its deadline is
//! expired before any of its segments would be re-issued, and a job whose last
//! segment was just abandoned or given up on ends in the same sweep).
//!
//! Each kind of work picks its candidates with a subquery, locks their jobs in
//! id order (blocking: the same job-first order as every other writer, see
//! `jobs.rs`), and only then, in a new statement and so a new snapshot, takes
//! the segments it changes with `FOR UPDATE SKIP LOCKED` under the same
//! condition that made them candidates. Two sweepers that overlap therefore
//! take turns per job, and the second finds the segments the first handled no
//! longer matching: nothing is re-issued twice.
//!
//! Candidate jobs reach the locking statement as `id = ANY(ARRAY(subquery))`,
//! which makes the planner look each up by primary key; given `id IN
//! (subquery)` it may hash them against a scan of all jobs instead (seen in
//! generic plans with 5,000 jobs). The segment updates keep `id IN (...)`:
//! there the array form makes a plan cached over a small table scan it, and
//! the join form probes the primary key (`campaign/plans.rs` checks both).

use std::collections::BTreeMap;

use futures_util::future::try_join_all;
use herald_core::campaign::JobState;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use crate::postgres::{Ctx, PgStore, col};
use crate::{Result, SweepOptions, SweepReport};

use super::jobs::{end_tasks, finish_idle, task_end};
use crate::model::Columns;

type Tx<'a> = deadpool_postgres::Transaction<'a>;

/// See `queries/sweep_lock_deadline_jobs.sql`.
pub(super) const LOCK_DEADLINE_JOBS: &str = include_str!("queries/sweep_lock_deadline_jobs.sql");
pub(super) const EXPIRE_SEGMENTS: &str = "UPDATE segments SET state = 'expired', updated_at = $2, finished_at = $2 \
    WHERE job_id = ANY($1::int8[]) AND state IN ('pending', 'running')";
pub(super) const EXPIRE_SENDS: &str = "UPDATE job_sends SET state = 'expired', updated_at = $2 \
    WHERE job_id = ANY($1::int8[]) AND state = 'retry'";
/// See `queries/sweep_expire_jobs.sql`.
const EXPIRE_JOBS: &str = include_str!("queries/sweep_expire_jobs.sql");

/// See `queries/sweep_lock_lapsed_jobs.sql`.
pub(super) const LOCK_LAPSED_JOBS: &str = include_str!("queries/sweep_lock_lapsed_jobs.sql");
/// See `queries/sweep_abandon.sql`.
pub(super) const ABANDON: &str = include_str!("queries/sweep_abandon.sql");

/// See `queries/sweep_lock_partial_jobs.sql`.
pub(super) const LOCK_PARTIAL_JOBS: &str = include_str!("queries/sweep_lock_partial_jobs.sql");
/// See `queries/sweep_handle_partials.sql`.
pub(super) const HANDLE_PARTIALS: &str = include_str!("queries/sweep_handle_partials.sql");
pub(super) const FAIL_RETRIES: &str = "UPDATE job_sends SET state = 'failed', updated_at = $4 \
    WHERE job_id = $1 AND idx >= $2 AND idx < $3 AND state = 'retry'";
const GIVE_UP: &str =
    "UPDATE jobs SET failed = failed + $2, retrying = retrying - $2 WHERE id = $1";

/// See `queries/sweep_lock_idle_jobs.sql`.
pub(super) const LOCK_IDLE_JOBS: &str = include_str!("queries/sweep_lock_idle_jobs.sql");

pub(super) const FIRST_RETRY: &str = "SELECT min(idx) FROM job_sends \
    WHERE job_id = $1 AND idx >= $2 AND idx < $3 AND state = 'retry'";
/// See `queries/sweep_reissue.sql`.
const REISSUE: &str = include_str!("queries/sweep_reissue.sql");

pub(super) async fn sweep(store: &PgStore, now: i64, opts: SweepOptions) -> Result<SweepReport> {
    let mut report = SweepReport::default();
    if opts.limit == 0 {
        return Ok(report);
    }
    let limit = i64::try_from(opts.limit).unwrap_or(i64::MAX);
    let done_at_deadline;
    (report.expired_jobs, done_at_deadline) = store
        .retrying("sweep (deadlines)", || expire_jobs(store, now, limit))
        .await?;
    (report.abandoned, report.reissued) = store
        .retrying("sweep (leases)", || abandon(store, now, limit))
        .await?;
    let (reissued, failed) = store
        .retrying("sweep (partials)", || partials(store, now, limit, opts))
        .await?;
    report.reissued += reissued;
    report.failed_recipients = failed;
    report.finished_jobs = done_at_deadline
        + store
            .retrying("sweep (idle jobs)", || finish_jobs(store, now, limit))
            .await?;
    Ok(report)
}

fn ids(rows: &[Row]) -> Result<Vec<i64>> {
    rows.iter().map(|r| col(r, 0, "jobs.id")).collect()
}

/// The running ones of locked `(id, state)` rows.
fn running(rows: &[Row]) -> Result<Vec<i64>> {
    let mut out = Vec::new();
    for row in rows {
        let id: i64 = col(row, 0, "jobs.id")?;
        if row.state::<JobState>(1, "jobs.state")? == JobState::Running {
            out.push(id);
        }
    }
    Ok(out)
}

/// Jobs past their deadline end `expired` (or `done`, when every recipient
/// had a final outcome already). Returns how many ended each way.
async fn expire_jobs(store: &PgStore, now: i64, limit: i64) -> Result<(u64, u64)> {
    let mut client = store.client().await?;
    let tx = client.transaction().await.ctx("beginning sweep")?;
    let lock = tx
        .prepare_cached(LOCK_DEADLINE_JOBS)
        .await
        .ctx("preparing deadline scan")?;
    let jobs = ids(&tx
        .query(&lock, &[&now, &limit])
        .await
        .ctx("locking jobs past their deadline")?)?;
    if jobs.is_empty() {
        return Ok((0, 0));
    }
    let segments = tx
        .prepare_cached(EXPIRE_SEGMENTS)
        .await
        .ctx("preparing segment expiry")?;
    let sends = tx
        .prepare_cached(EXPIRE_SENDS)
        .await
        .ctx("preparing send-log expiry")?;
    let expire = tx
        .prepare_cached(EXPIRE_JOBS)
        .await
        .ctx("preparing job expiry")?;
    let (_, _, rows) = futures_util::future::try_join3(
        tx.execute(&segments, &[&jobs, &now]),
        tx.execute(&sends, &[&jobs, &now]),
        tx.query(&expire, &[&jobs, &now]),
    )
    .await
    .ctx("expiring jobs")?;
    let mut ended = Vec::new();
    let mut expired = 0;
    for row in &rows {
        let id: i64 = col(row, 0, "jobs.id")?;
        let job: JobState = row.state(5, "jobs.state")?;
        if job == JobState::Expired {
            expired += 1;
        }
        if let Some(task) = col::<Option<i64>>(row, 1, "jobs.task_id")? {
            let (state, detail) = task_end(
                id,
                job,
                col(row, 2, "jobs.delivered")?,
                col(row, 3, "jobs.failed")?,
                col(row, 4, "jobs.expired")?,
            );
            ended.push((task, state, detail));
        }
    }
    end_tasks(&tx, &ended, now).await?;
    tx.commit().await.ctx("committing sweep")?;
    Ok((expired, rows.len() as u64 - expired))
}

/// A segment the sweeper took: abandoned or partial.
struct Taken {
    id: i64,
    job_id: i64,
    start: i64,
    end: i64,
    cursor: i64,
    attempt: i32,
    priority: i16,
    deadline_at: Option<i64>,
    tenant: i32,
    /// Indices at or above the cursor and below this may have been sent
    /// without a recorded outcome (0 for a segment that ended normally).
    sent_to: i64,
}

fn taken(rows: &[Row]) -> Result<Vec<Taken>> {
    let mut out: Vec<Taken> = rows
        .iter()
        .map(|r| {
            Ok(Taken {
                id: col(r, 0, "segments.id")?,
                job_id: col(r, 1, "segments.job_id")?,
                start: col(r, 2, "segments.start_idx")?,
                end: col(r, 3, "segments.end_idx")?,
                cursor: col(r, 4, "segments.cursor_idx")?,
                attempt: col(r, 5, "segments.attempt")?,
                priority: col(r, 6, "segments.priority")?,
                deadline_at: col(r, 7, "segments.deadline_at")?,
                tenant: col(r, 8, "segments.tenant_id")?,
                sent_to: col(r, 9, "segments.sent_to")?,
            })
        })
        .collect::<Result<_>>()?;
    out.sort_unstable_by_key(|t| t.id);
    Ok(out)
}

/// The lowest `retry` index in `[lo, hi)` of each `(job, lo, hi)`, pipelined.
async fn first_retries(tx: &Tx<'_>, ranges: &[(i64, i64, i64)]) -> Result<Vec<Option<i64>>> {
    let stmt = tx
        .prepare_cached(FIRST_RETRY)
        .await
        .ctx("preparing retry lookup")?;
    let params: Vec<[&(dyn ToSql + Sync); 3]> = ranges
        .iter()
        .map(|(job, lo, hi)| [job as _, lo as _, hi as _])
        .collect();
    let rows = try_join_all(params.iter().map(|p| tx.query_one(&stmt, p)))
        .await
        .ctx("finding retrying recipients")?;
    rows.iter().map(|r| col(r, 0, "first retry")).collect()
}

/// A new pending segment `[start, end)` re-issuing `parent`.
struct Reissue {
    job_id: i64,
    start: i64,
    end: i64,
    parent: i64,
    attempt: i32,
    not_before: i64,
    priority: i16,
    deadline_at: Option<i64>,
    tenant: i32,
    /// `[doubt.0, doubt.1)`: see `0026_send_in_doubt.sql`.
    doubt: (i64, i64),
}

async fn reissue(tx: &Tx<'_>, segments: &[Reissue], now: i64) -> Result<u64> {
    if segments.is_empty() {
        return Ok(0);
    }
    let stmt = tx.prepare_cached(REISSUE).await.ctx("preparing re-issue")?;
    let job: Vec<i64> = segments.iter().map(|s| s.job_id).collect();
    let start: Vec<i64> = segments.iter().map(|s| s.start).collect();
    let end: Vec<i64> = segments.iter().map(|s| s.end).collect();
    let parent: Vec<i64> = segments.iter().map(|s| s.parent).collect();
    let attempt: Vec<i32> = segments.iter().map(|s| s.attempt).collect();
    let not_before: Vec<i64> = segments.iter().map(|s| s.not_before).collect();
    let priority: Vec<i16> = segments.iter().map(|s| s.priority).collect();
    let deadline: Vec<Option<i64>> = segments.iter().map(|s| s.deadline_at).collect();
    let tenant: Vec<i32> = segments.iter().map(|s| s.tenant).collect();
    let doubt_from: Vec<i64> = segments.iter().map(|s| s.doubt.0).collect();
    let doubt_to: Vec<i64> = segments.iter().map(|s| s.doubt.1).collect();
    tx.execute(
        &stmt,
        &[
            &now,
            &job,
            &start,
            &end,
            &parent,
            &attempt,
            &not_before,
            &priority,
            &deadline,
            &tenant,
            &doubt_from,
            &doubt_to,
        ],
    )
    .await
    .ctx("re-issuing segments")
}

/// Lapsed leases: the segment ends `abandoned` and its unfinished part, from
/// its first `retry` index below the cursor (or the cursor), is re-issued.
/// Segments of jobs that ended meanwhile are abandoned without a re-issue.
async fn abandon(store: &PgStore, now: i64, limit: i64) -> Result<(u64, u64)> {
    let mut client = store.client().await?;
    let tx = client.transaction().await.ctx("beginning sweep")?;
    let lock = tx
        .prepare_cached(LOCK_LAPSED_JOBS)
        .await
        .ctx("preparing lease scan")?;
    let locked = tx
        .query(&lock, &[&now, &limit])
        .await
        .ctx("locking jobs with lapsed leases")?;
    if locked.is_empty() {
        return Ok((0, 0));
    }
    let all = ids(&locked)?;
    let live = running(&locked)?;
    let stmt = tx.prepare_cached(ABANDON).await.ctx("preparing abandon")?;
    let segments = taken(
        &tx.query(&stmt, &[&all, &now, &limit])
            .await
            .ctx("abandoning segments")?,
    )?;
    let live: Vec<&Taken> = segments
        .iter()
        .filter(|s| live.contains(&s.job_id))
        .collect();
    let ranges: Vec<_> = live.iter().map(|s| (s.job_id, s.start, s.cursor)).collect();
    let firsts = first_retries(&tx, &ranges).await?;
    let fresh: Vec<Reissue> = live
        .iter()
        .zip(firsts)
        .filter_map(|(s, first)| {
            let from = first.map_or(s.cursor, |f| f.min(s.cursor));
            (from < s.end).then_some(Reissue {
                job_id: s.job_id,
                start: from,
                end: s.end,
                parent: s.id,
                attempt: s.attempt,
                not_before: now,
                priority: s.priority,
                deadline_at: s.deadline_at,
                tenant: s.tenant,
                // What the lapsed holder may have sent without recording.
                doubt: if s.sent_to > s.cursor {
                    (s.cursor, s.sent_to)
                } else {
                    (0, 0)
                },
            })
        })
        .collect();
    let reissued = reissue(&tx, &fresh, now).await?;
    tx.commit().await.ctx("committing sweep")?;
    Ok((segments.len() as u64, reissued))
}

/// Partial segments: re-issued over `[first retry, end)` with one more attempt
/// after a backoff, or, out of attempts, their retrying recipients fail. Either
/// way the segment is marked handled. Those of ended jobs are only marked.
async fn partials(store: &PgStore, now: i64, limit: i64, opts: SweepOptions) -> Result<(u64, u64)> {
    let mut client = store.client().await?;
    let tx = client.transaction().await.ctx("beginning sweep")?;
    let lock = tx
        .prepare_cached(LOCK_PARTIAL_JOBS)
        .await
        .ctx("preparing partial scan")?;
    let locked = tx
        .query(&lock, &[&limit])
        .await
        .ctx("locking jobs with partial segments")?;
    if locked.is_empty() {
        return Ok((0, 0));
    }
    let all = ids(&locked)?;
    let live = running(&locked)?;
    let stmt = tx
        .prepare_cached(HANDLE_PARTIALS)
        .await
        .ctx("preparing partial handling")?;
    let segments = taken(
        &tx.query(&stmt, &[&all, &limit])
            .await
            .ctx("taking partial segments")?,
    )?;
    let max_attempts = i64::from(opts.max_attempts);
    let (spent, retried): (Vec<&Taken>, Vec<&Taken>) = segments
        .iter()
        .filter(|s| live.contains(&s.job_id))
        .partition(|s| i64::from(s.attempt) >= max_attempts);

    // Out of attempts: retrying recipients fail, counted per job.
    let fail = tx
        .prepare_cached(FAIL_RETRIES)
        .await
        .ctx("preparing give-up")?;
    let params: Vec<[&(dyn ToSql + Sync); 4]> = spent
        .iter()
        .map(|s| [&s.job_id as _, &s.start as _, &s.end as _, &now as _])
        .collect();
    let failed = try_join_all(params.iter().map(|p| tx.execute(&fail, p)))
        .await
        .ctx("failing retrying recipients")?;
    let mut per_job: BTreeMap<i64, i64> = BTreeMap::new();
    for (s, n) in spent.iter().zip(&failed) {
        *per_job.entry(s.job_id).or_default() += i64::try_from(*n).unwrap_or(i64::MAX);
    }
    per_job.retain(|_, n| *n > 0);
    let give_up = tx
        .prepare_cached(GIVE_UP)
        .await
        .ctx("preparing counter update")?;
    let params: Vec<[&(dyn ToSql + Sync); 2]> =
        per_job.iter().map(|(job, n)| [job as _, n as _]).collect();
    try_join_all(params.iter().map(|p| tx.execute(&give_up, p)))
        .await
        .ctx("counting given-up recipients")?;

    // Attempts left: re-issue from the first retrying recipient.
    let ranges: Vec<_> = retried.iter().map(|s| (s.job_id, s.start, s.end)).collect();
    let firsts = first_retries(&tx, &ranges).await?;
    let fresh: Vec<Reissue> = retried
        .iter()
        .zip(firsts)
        .filter_map(|(s, first)| {
            let from = first?;
            let backoff = opts.retry_backoff_ms.saturating_mul(i64::from(s.attempt));
            Some(Reissue {
                job_id: s.job_id,
                start: from,
                end: s.end,
                parent: s.id,
                attempt: s.attempt.saturating_add(1),
                not_before: now.saturating_add(backoff),
                priority: s.priority,
                deadline_at: s.deadline_at,
                tenant: s.tenant,
                doubt: (0, 0),
            })
        })
        .collect();
    let reissued = reissue(&tx, &fresh, now).await?;
    tx.commit().await.ctx("committing sweep")?;
    let failed: i64 = per_job.values().sum();
    Ok((reissued, u64::try_from(failed).unwrap_or(0)))
}

/// Running jobs with nothing pending, running or retrying end `done`.
async fn finish_jobs(store: &PgStore, now: i64, limit: i64) -> Result<u64> {
    let mut client = store.client().await?;
    let tx = client.transaction().await.ctx("beginning sweep")?;
    let lock = tx
        .prepare_cached(LOCK_IDLE_JOBS)
        .await
        .ctx("preparing idle-job scan")?;
    let jobs = ids(&tx.query(&lock, &[&limit]).await.ctx("locking idle jobs")?)?;
    let finished = finish_idle(&tx, &jobs, now).await?;
    if finished > 0 {
        tx.commit().await.ctx("committing sweep")?;
    }
    Ok(finished)
}
