//! The sweeper: deadlines, expired leases, partial segments, finished jobs.
//!
//! Each kind of work is one transaction and reads its candidates from an index
//! that holds only them (running jobs, running segments by lease, unhandled
//! partial segments), at most `limit` per call. Deadlines go first, so a job
//! past its deadline is expired rather than having its segments re-issued.
//! A second sweep finds nothing the first one handled: an abandoned segment is
//! no longer running, a handled partial segment leaves the partial index, an
//! ended job is no longer running.

use herald_core::campaign::{JobState, SegmentState};
use rusqlite::{Connection, OptionalExtension, Transaction, params};

use super::jobs::{self, END_LIVE_SEGMENTS, INSERT_SEGMENT};
use super::{Ctx, in_tx, query_all};
use crate::Result;
use crate::campaign::{SegmentRecord, SweepOptions, SweepReport};
use crate::model::{self, Columns, Reader, from_db, limit_to_db, segment_cols, to_db};

pub(super) const JOBS_PAST_DEADLINE: &str = "SELECT id FROM jobs \
    WHERE state = 'running' AND deadline_at <= ?1 ORDER BY deadline_at, id LIMIT ?2";
/// Every `retry` row of a job ends `expired` (code 3). Pinned to the partial
/// index: without statistics SQLite prefers the primary key, which would walk
/// every row the job ever logged.
pub(super) const EXPIRE_RETRIES: &str = "UPDATE job_sends INDEXED BY job_sends_retry \
    SET state = 3, updated_at = ?2 WHERE job_id = ?1 AND state = 1";
pub(super) const LEASES_EXPIRED: &str = concat!(
    "SELECT ",
    segment_cols!(),
    ", priority, deadline_at, tenant_id FROM segments \
     WHERE state = 'running' AND lease_until < ?1 \
     ORDER BY lease_until, id LIMIT ?2"
);
/// ?1 the re-issuing segment, ?2 ?3 the range it resolves first.
const DOUBT: &str = "UPDATE segments SET doubt_from = ?2, doubt_to = ?3 WHERE id = ?1";
const ABANDON: &str = "UPDATE segments SET state = 'abandoned', updated_at = ?2, finished_at = ?2 \
    WHERE id = ?1 AND state = 'running'";
/// The lowest index of `[?2, ?3)` of a job still `retry`.
pub(super) const FIRST_RETRY: &str = "SELECT idx FROM job_sends \
    WHERE job_id = ?1 AND state = 1 AND idx >= ?2 AND idx < ?3 ORDER BY idx LIMIT 1";
pub(super) const UNHANDLED_PARTIAL: &str = concat!(
    "SELECT ",
    segment_cols!(),
    ", priority, deadline_at, tenant_id FROM segments WHERE state = 'partial' AND handled = 0 \
     ORDER BY id LIMIT ?1"
);
const HANDLED: &str = "UPDATE segments SET handled = 1, updated_at = ?2 WHERE id = ?1";
const JOB_STATE: &str = "SELECT state FROM jobs WHERE id = ?1";
/// Retries used up: the `retry` rows of `[?2, ?3)` end `failed` (code 2).
pub(super) const FAIL_RETRIES: &str = "UPDATE job_sends INDEXED BY job_sends_retry \
    SET state = 2, updated_at = ?4 WHERE job_id = ?1 AND state = 1 AND idx >= ?2 AND idx < ?3";
const RETRIES_FAILED: &str =
    "UPDATE jobs SET retrying = retrying - ?2, failed = failed + ?2 WHERE id = ?1";
/// See `queries/sweep_jobs_idle.sql`.
pub(super) const JOBS_IDLE: &str = include_str!("queries/sweep_jobs_idle.sql");

pub(super) fn sweep(conn: &mut Connection, now: i64, opts: SweepOptions) -> Result<SweepReport> {
    let mut report = SweepReport::default();
    in_tx(conn, "expiring jobs", |tx| {
        expire_jobs(tx, now, opts, &mut report)
    })?;
    in_tx(conn, "abandoning segments", |tx| {
        abandon_segments(tx, now, opts, &mut report)
    })?;
    in_tx(conn, "retrying partial segments", |tx| {
        retry_partials(tx, now, opts, &mut report)
    })?;
    in_tx(conn, "finishing jobs", |tx| {
        finish_jobs(tx, now, opts, &mut report)
    })?;
    Ok(report)
}

fn ids(tx: &Transaction<'_>, sql: &str, p: impl rusqlite::Params, what: &str) -> Result<Vec<i64>> {
    query_all(tx, sql, p, what, |r| r.int(0, "id"))
}

/// A segment with the claim fields a re-issue copies.
struct Candidate {
    seg: SegmentRecord,
    priority: i64,
    deadline_at: Option<i64>,
    tenant: i64,
}

fn candidates(
    tx: &Transaction<'_>,
    sql: &str,
    p: impl rusqlite::Params,
    what: &str,
) -> Result<Vec<Candidate>> {
    query_all(tx, sql, p, what, |r| {
        let mut r = Reader::new(r);
        Ok(Candidate {
            seg: model::Decode::decode(&mut r)?,
            priority: r.int("segments.priority")?,
            deadline_at: r.opt_int("segments.deadline_at")?,
            tenant: r.int("segments.tenant_id")?,
        })
    })
}

fn first_retry(tx: &Transaction<'_>, job_id: i64, start: u64, end: u64) -> Result<Option<u64>> {
    let idx: Option<i64> = tx
        .prepare_cached(FIRST_RETRY)
        .ctx("preparing first retry")?
        .query_row(
            params![job_id, to_db(start, "start")?, to_db(end, "end")?],
            |r| r.get(0),
        )
        .optional()
        .ctx("finding the first retry")?;
    idx.map(|i| from_db(i, "job_sends.idx")).transpose()
}

/// A new pending segment over `[start, c.seg.end)` re-issuing `c`.
fn reissue(
    tx: &Transaction<'_>,
    c: &Candidate,
    start: u64,
    attempt: u32,
    not_before: i64,
    now: i64,
) -> Result<()> {
    tx.prepare_cached(INSERT_SEGMENT)
        .ctx("preparing re-issue")?
        .execute(params![
            c.seg.job_id,
            to_db(start, "start")?,
            to_db(c.seg.end, "end")?,
            now,
            c.priority,
            c.deadline_at,
            c.seg.id,
            attempt,
            not_before,
            c.tenant
        ])
        .ctx("re-issuing segment")?;
    Ok(())
}

fn expire_jobs(
    tx: &Transaction<'_>,
    now: i64,
    opts: SweepOptions,
    report: &mut SweepReport,
) -> Result<()> {
    let due = ids(
        tx,
        JOBS_PAST_DEADLINE,
        params![now, limit_to_db(opts.limit)],
        "finding jobs past their deadline",
    )?;
    for job_id in due {
        tx.prepare_cached(END_LIVE_SEGMENTS)
            .ctx("preparing segment expiry")?
            .execute(params![job_id, SegmentState::Expired.as_str(), now])
            .ctx("expiring segments")?;
        tx.prepare_cached(EXPIRE_RETRIES)
            .ctx("preparing retry expiry")?
            .execute(params![job_id, now])
            .ctx("expiring retries")?;
        let Some(job) = jobs::job_by_id(tx, job_id)? else {
            continue;
        };
        // Every recipient already has a final outcome: nothing expired after all.
        let state = if job.totals.remaining() == 0 {
            JobState::Done
        } else {
            JobState::Expired
        };
        if jobs::end_job(tx, job_id, state, now)?.is_some() {
            match state {
                JobState::Done => report.finished_jobs += 1,
                _ => report.expired_jobs += 1,
            }
        }
    }
    Ok(())
}

fn abandon_segments(
    tx: &Transaction<'_>,
    now: i64,
    opts: SweepOptions,
    report: &mut SweepReport,
) -> Result<()> {
    let lapsed = candidates(
        tx,
        LEASES_EXPIRED,
        params![now, limit_to_db(opts.limit)],
        "finding expired leases",
    )?;
    for c in lapsed {
        let n = tx
            .prepare_cached(ABANDON)
            .ctx("preparing abandon")?
            .execute(params![c.seg.id, now])
            .ctx("abandoning segment")?;
        if n == 0 {
            continue;
        }
        report.abandoned += 1;
        // Retryable failures below the cursor are sent again in the same attempt.
        let from =
            first_retry(tx, c.seg.job_id, c.seg.start, c.seg.cursor)?.unwrap_or(c.seg.cursor);
        if from < c.seg.end {
            reissue(tx, &c, from, c.seg.attempt, now, now)?;
            // What the lapsed holder may have sent without recording.
            let doubt_to = c.seg.sent_to.max(c.seg.doubt_to);
            if doubt_to > c.seg.cursor {
                tx.prepare_cached(DOUBT)
                    .ctx("preparing the in-doubt range")?
                    .execute(params![
                        tx.last_insert_rowid(),
                        to_db(c.seg.cursor, "cursor")?,
                        to_db(doubt_to, "sent_to")?
                    ])
                    .ctx("carrying the in-doubt range")?;
            }
            report.reissued += 1;
        }
    }
    Ok(())
}

fn retry_partials(
    tx: &Transaction<'_>,
    now: i64,
    opts: SweepOptions,
    report: &mut SweepReport,
) -> Result<()> {
    let partial = candidates(
        tx,
        UNHANDLED_PARTIAL,
        [limit_to_db(opts.limit)],
        "finding partial segments",
    )?;
    for c in partial {
        let job_state: Option<JobState> = tx
            .prepare_cached(JOB_STATE)
            .ctx("preparing job state")?
            .query_row([c.seg.job_id], |r| Ok(r.state(0, "jobs.state")))
            .optional()
            .ctx("reading job state")?
            .transpose()?;
        // A cancelled or expired job has already settled its retrying recipients.
        if job_state == Some(JobState::Running) {
            retry_partial(tx, &c, now, opts, report)?;
        }
        tx.prepare_cached(HANDLED)
            .ctx("preparing handled")?
            .execute(params![c.seg.id, now])
            .ctx("marking partial segment handled")?;
    }
    Ok(())
}

/// Re-issues a partial segment for its `retry` recipients, or fails them once
/// its attempts are used up.
fn retry_partial(
    tx: &Transaction<'_>,
    c: &Candidate,
    now: i64,
    opts: SweepOptions,
    report: &mut SweepReport,
) -> Result<()> {
    let seg = &c.seg;
    // Late writes may have settled every retry meanwhile.
    let Some(first) = first_retry(tx, seg.job_id, seg.start, seg.end)? else {
        return Ok(());
    };
    if seg.attempt >= opts.max_attempts {
        let failed = tx
            .prepare_cached(FAIL_RETRIES)
            .ctx("preparing retry failure")?
            .execute(params![
                seg.job_id,
                to_db(seg.start, "start")?,
                to_db(seg.end, "end")?,
                now
            ])
            .ctx("failing retries")?;
        tx.prepare_cached(RETRIES_FAILED)
            .ctx("preparing failed totals")?
            .execute(params![seg.job_id, failed as i64])
            .ctx("counting failed retries")?;
        report.failed_recipients += failed as u64;
        return Ok(());
    }
    // The first re-issue waits one backoff, the next two, and so on.
    let wait = opts.retry_backoff_ms.saturating_mul(i64::from(seg.attempt));
    reissue(tx, c, first, seg.attempt + 1, now.saturating_add(wait), now)?;
    report.reissued += 1;
    Ok(())
}

fn finish_jobs(
    tx: &Transaction<'_>,
    now: i64,
    opts: SweepOptions,
    report: &mut SweepReport,
) -> Result<()> {
    for job_id in ids(
        tx,
        JOBS_IDLE,
        [limit_to_db(opts.limit)],
        "finding finished jobs",
    )? {
        if jobs::end_job(tx, job_id, JobState::Done, now)?.is_some() {
            report.finished_jobs += 1;
        }
    }
    Ok(())
}
