//! Jobs, their segments and the send log: create, claim, record, finish, cancel.

use herald_core::TenantId;
use herald_core::campaign::{
    JobState, SegmentState, SendState, TaskState, plan_segments, task_outcome,
};
use herald_core::time::utc_day;
use rusqlite::{Connection, OptionalExtension, Transaction, params};

use super::{Ctx, audiences, in_tx, query_all, query_opt};
use crate::campaign::sql::{actors, jobs as sql};
use crate::campaign::{
    Actor, ClaimedSegment, JobFilter, JobMeta, JobRecord, JobSpec, JobTotals, LeaseCheck, Progress,
    SegmentClaim, SegmentRecord, SegmentWrite, SendEntry, SendRecord,
};
use crate::model::{
    self, Columns, Stored, Value, job_cols, limit_to_db, segment_cols, send_code, send_cols,
    tenant_to_db, to_db,
};
use crate::reports::SendTally;
use crate::sqlite::reports;
use crate::{Result, StoreError, refusals};

const INSERT_JOB: &str = "INSERT INTO jobs (audience_id, channel, message, segment_size, \
    deadline_at, priority, task_id, state, total, created_at, finished_at, tenant_id, routing, \
    traceparent, name, category, created_by_key_id, created_by_key_name, follows) \
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19) \
    RETURNING id";
/// ?1 job, ?2 start, ?3 end, ?4 now, ?5 priority, ?6 deadline, ?7 parent, ?8 attempt,
/// ?9 not_before, ?10 tenant. The cursor starts at the start.
pub(super) const INSERT_SEGMENT: &str = "INSERT INTO segments (job_id, start_idx, end_idx, \
    cursor_idx, state, epoch, parent_id, attempt, not_before, priority, deadline_at, created_at, \
    updated_at, tenant_id) VALUES (?1, ?2, ?3, ?2, 'pending', 0, ?7, ?8, ?9, ?5, ?6, ?4, ?4, ?10)";
pub(super) const JOBS_BEFORE: &str = concat!(
    "SELECT ",
    job_cols!(),
    " FROM jobs WHERE tenant_id = ?1 AND id < ?2 ORDER BY id DESC LIMIT ?3"
);
/// [`JOBS_BEFORE`] of one category (?4) off `jobs_category`, names starting
/// with ?5 (`''`: any name, none too).
pub(super) const JOBS_IN_CATEGORY: &str = concat!(
    "SELECT ",
    job_cols!(),
    " FROM jobs WHERE tenant_id = ?1 AND category = ?4 AND id < ?2 \
     AND (?5 = '' OR substr(name, 1, length(?5)) = ?5) ORDER BY id DESC LIMIT ?3"
);
/// [`JOBS_BEFORE`] of names starting with ?4.
pub(super) const JOBS_NAMED: &str = concat!(
    "SELECT ",
    job_cols!(),
    " FROM jobs WHERE tenant_id = ?1 AND id < ?2 AND substr(name, 1, length(?4)) = ?4 \
     ORDER BY id DESC LIMIT ?3"
);
pub(super) const SEGMENT_COUNTS: &str =
    "SELECT state, COUNT(*) FROM segments WHERE job_id = ?1 GROUP BY state";
pub(super) const SEGMENTS_AFTER: &str = concat!(
    "SELECT ",
    segment_cols!(),
    " FROM segments INDEXED BY segments_job WHERE job_id = ?1 AND id > ?2 ORDER BY id LIMIT ?3"
);
/// The next claimable segment, straight off the pending index in claim order.
pub(super) const NEXT_CLAIMABLE: &str = "SELECT id FROM segments \
    WHERE state = 'pending' AND not_before <= ?1 AND (deadline_at IS NULL OR deadline_at > ?1) \
    ORDER BY priority DESC, id LIMIT 1";
/// ?1 id, ?2 owner, ?3 lease_until, ?4 now.
const TAKE_SEGMENT: &str = concat!(
    "UPDATE segments SET state = 'running', owner = ?2, lease_until = ?3, epoch = epoch + 1, \
     updated_at = ?4, sent_to = CASE WHEN ?5 > 0 \
     THEN MIN(MAX(sent_to, cursor_idx + ?5), end_idx) ELSE sent_to END \
     WHERE id = ?1 AND state = 'pending' RETURNING ",
    segment_cols!()
);
const JOB_STARTED: &str = concat!(
    "UPDATE jobs SET started_at = COALESCE(started_at, ?2) WHERE id = ?1 RETURNING ",
    job_cols!()
);
/// A job's send-log rows in one state (by its code, `send_code`), `idx > ?2`,
/// at most ?3. The code is written into the text, so SQLite can use the
/// state's partial index.
macro_rules! sends_in {
    ($code:literal) => {
        concat!(
            "SELECT ",
            send_cols!(),
            " FROM job_sends WHERE job_id = ?1 AND state = ",
            $code,
            " AND idx > ?2 ORDER BY idx LIMIT ?3"
        )
    };
}

/// The statement of [`job_sends_in_state`] for `state`.
fn sends_in_state(state: SendState) -> &'static str {
    match state {
        SendState::Delivered => sends_in!("0"),
        SendState::Retry => sends_in!("1"),
        SendState::Failed => sends_in!("2"),
        SendState::Expired => sends_in!("3"),
        SendState::InDoubt => sends_in!("4"),
    }
}
/// What the claim check needs of a segment.
const CLAIM_STATE: &str = "SELECT job_id, start_idx, end_idx, cursor_idx, state, owner, epoch, \
    lease_until FROM segments WHERE id = ?1";
const JOB_STATE: &str = "SELECT state, tenant_id FROM jobs WHERE id = ?1";
/// A new send-log row, or nothing when the index is already logged.
pub(super) const INSERT_SEND: &str = "INSERT INTO job_sends \
    (job_id, idx, recipient, state, attempts, msgid, error, updated_at, tenant_id) \
    VALUES (?1, ?2, ?3, ?4, 1, ?5, ?6, ?7, ?8) ON CONFLICT (job_id, idx) DO NOTHING";
pub(super) const SEND_STATE: &str = "SELECT state FROM job_sends WHERE job_id = ?1 AND idx = ?2";
/// Another attempt of a recipient still `retry` (code 1).
pub(super) const RETRY_SEND: &str = "UPDATE job_sends SET state = ?3, attempts = attempts + 1, \
    recipient = ?4, msgid = ?5, error = ?6, updated_at = ?7 \
    WHERE job_id = ?1 AND idx = ?2 AND state = 1";
/// ?1 id, ?2 cursor, ?3 lease_until, ?4 now, ?5 sent_to. Neither the cursor
/// nor `sent_to` moves back; `sent_to` stops at the end.
const ADVANCE: &str = "UPDATE segments SET cursor_idx = MAX(cursor_idx, ?2), lease_until = ?3, \
    updated_at = ?4, sent_to = MIN(MAX(sent_to, ?5), end_idx) WHERE id = ?1 AND state = 'running'";
/// Whether any of `[?2, ?3)` of a job is still `retry` (the partial index).
pub(super) const ANY_RETRY: &str = "SELECT EXISTS (SELECT 1 FROM job_sends \
    WHERE job_id = ?1 AND state = 1 AND idx >= ?2 AND idx < ?3)";
const END_SEGMENT: &str = "UPDATE segments SET state = ?2, updated_at = ?3, finished_at = ?3 \
     WHERE id = ?1 AND state = 'running'";
pub(super) const HAS_LIVE_SEGMENT: &str = "SELECT EXISTS (SELECT 1 FROM segments \
    WHERE job_id = ?1 AND state IN ('pending', 'running'))";
/// Pending and running segments of a job end in state ?2.
pub(super) const END_LIVE_SEGMENTS: &str = "UPDATE segments SET state = ?2, updated_at = ?3, \
    finished_at = ?3 \
    WHERE job_id = ?1 AND state IN ('pending', 'running')";
/// See `queries/end_job.sql`.
const END_JOB: &str = concat!(include_str!("queries/end_job.sql"), job_cols!());
const TASK_FOLLOWS: &str = "UPDATE tasks SET state = ?2, detail = ?3, finished_at = ?4 \
    WHERE id = ?1 AND state = 'running'";

pub(super) fn job_by_id(conn: &Connection, id: i64) -> Result<Option<JobRecord>> {
    query_opt(conn, sql::GET_JOB.sqlite, [id], "reading job", |r| {
        model::decode(r)
    })
}

/// Creates a job over a sealed audience of `size` and its segments, inside the
/// caller's transaction.
pub(super) fn create_in(
    tx: &Transaction<'_>,
    spec: &JobSpec,
    size: u64,
    now: i64,
) -> Result<JobRecord> {
    let segment_size = spec.segment_size.max(1);
    let (state, finished_at) = if size == 0 {
        (JobState::Done, Some(now))
    } else {
        (JobState::Running, None)
    };
    let created_by = Actor::columns(&spec.meta.created_by);
    let id: i64 = tx
        .prepare_cached(INSERT_JOB)
        .ctx("preparing job insert")?
        .query_row(
            params![
                spec.audience_id,
                spec.channel,
                spec.message,
                to_db(segment_size, "segment_size")?,
                spec.deadline_at,
                spec.priority,
                spec.task_id,
                state.as_str(),
                to_db(size, "total")?,
                now,
                finished_at,
                tenant_to_db(spec.tenant),
                spec.routing,
                spec.traceparent,
                spec.meta.name,
                spec.meta.category,
                created_by.0,
                created_by.1,
                spec.follows.or(spec.resends)
            ],
            |r| r.get(0),
        )
        .ctx("inserting job")?;
    {
        let mut insert = tx
            .prepare_cached(INSERT_SEGMENT)
            .ctx("preparing segment insert")?;
        for (start, end) in plan_segments(0, size, segment_size) {
            insert
                .execute(params![
                    id,
                    to_db(start, "start")?,
                    to_db(end, "end")?,
                    now,
                    spec.priority,
                    spec.deadline_at,
                    None::<i64>,
                    1,
                    now,
                    tenant_to_db(spec.tenant)
                ])
                .ctx("inserting segment")?;
        }
    }
    Ok(JobRecord {
        id,
        tenant: spec.tenant,
        audience_id: spec.audience_id,
        channel: spec.channel.clone(),
        message: spec.message.clone(),
        segment_size,
        deadline_at: spec.deadline_at,
        priority: spec.priority,
        task_id: spec.task_id,
        state,
        totals: JobTotals {
            total: size,
            ..Default::default()
        },
        created_at: now,
        started_at: None,
        finished_at,
        routing: spec.routing.clone(),
        traceparent: spec.traceparent.clone(),
        meta: JobMeta {
            changed_by: None,
            ..spec.meta.clone()
        },
        follows: spec.follows.or(spec.resends),
        last_sent_at: None,
    })
}

pub(super) fn create_job(
    conn: &mut Connection,
    spec: JobSpec,
    now: i64,
) -> Result<Option<JobRecord>> {
    in_tx(conn, "creating job", |tx| {
        let Some(size) = audiences::sealed_size(tx, spec.audience_id, spec.tenant)? else {
            return Ok(None);
        };
        if let Some(of) = spec.follows
            && !super::follow_ups::claim(tx, of, now)?
        {
            return Ok(None);
        }
        if let Some(of) = spec.resends
            && follower_sending(tx, of)?
        {
            return Ok(None);
        }
        let job = create_in(tx, &spec, size, now)?;
        if let Some(of) = spec.follows {
            super::follow_ups::set_job(tx, of, job.id)?;
        }
        if let Some(f) = &spec.follow_up {
            super::follow_ups::insert(tx, job.id, f)?;
        }
        Ok(Some(job))
    })
}

/// Whether a job that follows job `of` is running. Run in the
/// (immediate) transaction that creates a resend, so two resends of one job
/// cannot both pass it.
fn follower_sending(tx: &Transaction<'_>, of: i64) -> Result<bool> {
    tx.prepare_cached(sql::FOLLOWER_SENDING.sqlite)
        .ctx("preparing follower check")?
        .query_row([of], |r| r.get(0))
        .ctx("checking the job's followers")
}

pub(super) fn jobs_following(
    conn: &mut Connection,
    job_id: i64,
    after: i64,
    limit: usize,
) -> Result<Vec<JobRecord>> {
    query_all(
        conn,
        sql::FOLLOWING.sqlite,
        params![job_id, after, limit_to_db(limit)],
        "listing a job's followers",
        |r| model::decode(r),
    )
}

pub(super) fn get_job(conn: &mut Connection, id: i64) -> Result<Option<JobRecord>> {
    job_by_id(conn, id)
}

pub(super) fn list_jobs(
    conn: &mut Connection,
    tenant: TenantId,
    filter: JobFilter,
    before: Option<i64>,
    limit: usize,
) -> Result<Vec<JobRecord>> {
    let (tenant, before, limit) = (
        tenant_to_db(tenant),
        before.unwrap_or(i64::MAX),
        limit_to_db(limit),
    );
    let decode = |r: &rusqlite::Row<'_>| model::decode(r);
    match (filter.category, filter.name_prefix) {
        (None, None) => query_all(
            conn,
            JOBS_BEFORE,
            params![tenant, before, limit],
            "listing jobs",
            decode,
        ),
        (Some(category), prefix) => query_all(
            conn,
            JOBS_IN_CATEGORY,
            params![tenant, before, limit, category, prefix.unwrap_or_default()],
            "listing jobs of a category",
            decode,
        ),
        (None, Some(prefix)) => query_all(
            conn,
            JOBS_NAMED,
            params![tenant, before, limit, prefix],
            "listing jobs by name",
            decode,
        ),
    }
}

pub(super) fn segment_counts(
    conn: &mut Connection,
    job_id: i64,
) -> Result<Vec<(SegmentState, u64)>> {
    let mut counts: Vec<(SegmentState, u64)> =
        query_all(conn, SEGMENT_COUNTS, [job_id], "counting segments", |r| {
            model::decode(r)
        })?;
    counts.sort_by_key(|(s, _)| SegmentState::ALL.iter().position(|x| x == s));
    Ok(counts)
}

pub(super) fn job_segments(
    conn: &mut Connection,
    job_id: i64,
    after: Option<i64>,
    limit: usize,
) -> Result<Vec<SegmentRecord>> {
    query_all(
        conn,
        SEGMENTS_AFTER,
        params![job_id, after.unwrap_or(i64::MIN), limit_to_db(limit)],
        "listing segments",
        |r| model::decode(r),
    )
}

/// Ends a running job in `state` (done, expired or cancelled) and its task
/// with it. Returns the job as it is afterwards, or `None` if it was not running.
pub(super) fn end_job(
    tx: &Transaction<'_>,
    job_id: i64,
    state: JobState,
    now: i64,
) -> Result<Option<JobRecord>> {
    let Some(job) = query_opt(
        tx,
        END_JOB,
        params![job_id, state.as_str(), now],
        "ending job",
        |r| model::decode::<JobRecord, _>(r),
    )?
    else {
        return Ok(None);
    };
    let outcome = task_outcome(
        job.state,
        job.totals.failed + job.totals.in_doubt,
        job.totals.expired,
    );
    task_follows(tx, job.task_id, job.id, outcome, &job.totals, now)?;
    Ok(Some(job))
}

/// A running task takes the outcome of its job.
pub(super) fn task_follows(
    tx: &Transaction<'_>,
    task_id: Option<i64>,
    job_id: i64,
    outcome: TaskState,
    totals: &JobTotals,
    now: i64,
) -> Result<()> {
    let Some(task_id) = task_id else {
        return Ok(());
    };
    let detail = match outcome {
        TaskState::Succeeded => None,
        TaskState::Cancelled => Some(format!("job {job_id} was cancelled")),
        _ => Some(format!(
            "job {job_id}: {} delivered, {} failed, {} expired, {} in doubt of {}",
            totals.delivered, totals.failed, totals.expired, totals.in_doubt, totals.total
        )),
    };
    tx.prepare_cached(TASK_FOLLOWS)
        .ctx("preparing task end")?
        .execute(params![task_id, outcome.as_str(), detail, now])
        .ctx("ending task")?;
    Ok(())
}

/// Ends a running job `done` if it has no pending or running segment and
/// nothing retrying. Returns whether it did.
pub(super) fn maybe_done(tx: &Transaction<'_>, job_id: i64, now: i64) -> Result<bool> {
    let Some(job) = job_by_id(tx, job_id)? else {
        return Ok(false);
    };
    if job.state != JobState::Running || job.totals.retrying > 0 {
        return Ok(false);
    }
    let live: bool = tx
        .prepare_cached(HAS_LIVE_SEGMENT)
        .ctx("preparing live segment check")?
        .query_row([job_id], |r| r.get(0))
        .ctx("checking live segments")?;
    if live {
        return Ok(false);
    }
    Ok(end_job(tx, job_id, JobState::Done, now)?.is_some())
}

pub(super) fn cancel_job(
    conn: &mut Connection,
    id: i64,
    now: i64,
    by: Option<Actor>,
) -> Result<Option<JobRecord>> {
    in_tx(conn, "cancelling job", |tx| {
        let Some(job) = job_by_id(tx, id)? else {
            return Ok(None);
        };
        if job.state != JobState::Running {
            return Ok(Some(job));
        }
        tx.prepare_cached(END_LIVE_SEGMENTS)
            .ctx("preparing segment cancel")?
            .execute(params![id, SegmentState::Cancelled.as_str(), now])
            .ctx("cancelling segments")?;
        super::stamp(tx, actors::JOB_CHANGED, id, &by)?;
        let job = end_job(tx, id, JobState::Cancelled, now)?;
        super::stamp(tx, actors::JOB_TASK_CANCELLED, id, &by)?;
        Ok(job)
    })
}

pub(super) fn claim_segment(
    conn: &mut Connection,
    owner: String,
    now: i64,
    lease_ms: i64,
    mark_ahead: u64,
) -> Result<Option<ClaimedSegment>> {
    let mark_ahead = to_db(mark_ahead, "mark_ahead")?;
    in_tx(conn, "claiming segment", |tx| {
        let Some(id) = tx
            .prepare_cached(NEXT_CLAIMABLE)
            .ctx("preparing claim")?
            .query_row([now], |r| r.get::<_, i64>(0))
            .optional()
            .ctx("finding a claimable segment")?
        else {
            return Ok(None);
        };
        let lease_until = now.saturating_add(lease_ms);
        let Some(segment) = query_opt(
            tx,
            TAKE_SEGMENT,
            params![id, owner, lease_until, now, mark_ahead],
            "taking segment",
            |r| model::decode::<SegmentRecord, _>(r),
        )?
        else {
            return Ok(None);
        };
        let job = query_opt(
            tx,
            JOB_STARTED,
            params![segment.job_id, now],
            "starting job",
            |r| model::decode(r),
        )?
        .ok_or_else(|| {
            StoreError::Corrupt(format!("segment {id} of missing job {}", segment.job_id))
        })?;
        Ok(Some(ClaimedSegment {
            claim: SegmentClaim {
                segment_id: id,
                job_id: segment.job_id,
                owner,
                epoch: segment.epoch,
            },
            segment,
            job,
            lease_until,
        }))
    })
}

pub(super) fn job_sends(
    conn: &mut Connection,
    job_id: i64,
    start: u64,
    end: u64,
) -> Result<Vec<SendRecord>> {
    let (start, end) = (
        to_db(start, "start")?,
        to_db(end.min(i64::MAX as u64), "end")?,
    );
    query_all(
        conn,
        sql::SENDS.sqlite,
        params![job_id, start, end],
        "reading send log",
        |r| model::decode::<SendRecord, _>(r),
    )
}

/// [`crate::CampaignStore::recipient_index`].
pub(super) fn recipient_index(
    conn: &mut Connection,
    job_id: i64,
    recipient: &str,
) -> Result<Option<u64>> {
    let mut stmt = conn
        .prepare_cached(sql::CHUNKS_WITH_SQLITE)
        .ctx("preparing recipient search")?;
    let mut rows = stmt
        .query(params![job_id, recipient])
        .ctx("searching the audience")?;
    while let Some(row) = rows.next().ctx("searching the audience")? {
        let chunk_no: u64 = row.narrow(0, "audience_chunks.chunk_no")?;
        let data = row.str(1, "audience_chunks.data")?;
        if let Some(i) =
            crate::campaign::index_in_chunk(chunk_no, data.as_bytes(), recipient.as_bytes())
        {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

pub(super) fn job_sends_in_state(
    conn: &mut Connection,
    job_id: i64,
    state: SendState,
    after: Option<u64>,
    limit: usize,
) -> Result<Vec<SendRecord>> {
    let after = after.map_or(Ok(-1), |a| to_db(a, "after"))?;
    query_all(
        conn,
        sends_in_state(state),
        params![job_id, after, limit_to_db(limit)],
        "reading send log",
        |r| model::decode::<SendRecord, _>(r),
    )
}

/// A segment as the claim check sees it.
struct ClaimView {
    job_id: i64,
    start: u64,
    end: u64,
    cursor: u64,
    state: SegmentState,
    owner: Option<String>,
    epoch: i64,
    lease_until: Option<i64>,
}

impl ClaimView {
    /// The claim's segment, `None` if no segment has its id under its job.
    fn read(tx: &Transaction<'_>, claim: &SegmentClaim) -> Result<Option<Self>> {
        let view = query_opt(
            tx,
            CLAIM_STATE,
            [claim.segment_id],
            "reading segment",
            |r| {
                Ok(ClaimView {
                    job_id: r.int(0, "segments.job_id")?,
                    start: model::from_db(r.int(1, "segments.start_idx")?, "segments.start_idx")?,
                    end: model::from_db(r.int(2, "segments.end_idx")?, "segments.end_idx")?,
                    cursor: model::from_db(
                        r.int(3, "segments.cursor_idx")?,
                        "segments.cursor_idx",
                    )?,
                    state: r.state(4, "segments.state")?,
                    owner: r.opt_str(5, "segments.owner")?.map(str::to_owned),
                    epoch: r.int(6, "segments.epoch")?,
                    lease_until: r.opt_int(7, "segments.lease_until")?,
                })
            },
        )?;
        Ok(view.filter(|v| v.job_id == claim.job_id))
    }

    /// Still this claim's: same owner and epoch, and running.
    fn current(&self, claim: &SegmentClaim) -> bool {
        self.state == SegmentState::Running
            && self.epoch == claim.epoch
            && self.owner.as_deref() == Some(claim.owner.as_str())
    }
}

#[derive(Clone, Copy)]
enum Bucket {
    Delivered,
    Failed,
    Retrying,
    Expired,
    Cancelled,
    InDoubt,
}

/// How a job's counters move as one recipient's log row changes.
#[derive(Default)]
struct Deltas {
    delivered: i64,
    failed: i64,
    retrying: i64,
    expired: i64,
    cancelled: i64,
    in_doubt: i64,
}

impl Deltas {
    /// The counter a recipient in `state` (`None`: not logged yet) is counted
    /// in while the job is `job`. Once a job ended `expired` or `cancelled`,
    /// every recipient without a final outcome is counted in that bucket.
    fn slot(&mut self, job: JobState, state: Option<SendState>) -> Option<&mut i64> {
        let in_bucket = || match job {
            JobState::Expired => Some(Bucket::Expired),
            JobState::Cancelled => Some(Bucket::Cancelled),
            JobState::Running | JobState::Done => None,
        };
        let which = match state {
            Some(SendState::Delivered) => Some(Bucket::Delivered),
            Some(SendState::Failed) => Some(Bucket::Failed),
            Some(SendState::InDoubt) => Some(Bucket::InDoubt),
            Some(SendState::Expired) => Some(Bucket::Expired),
            Some(SendState::Retry) => in_bucket().or(Some(Bucket::Retrying)),
            None => in_bucket(),
        };
        which.map(|b| match b {
            Bucket::Delivered => &mut self.delivered,
            Bucket::Failed => &mut self.failed,
            Bucket::Retrying => &mut self.retrying,
            Bucket::Expired => &mut self.expired,
            Bucket::Cancelled => &mut self.cancelled,
            Bucket::InDoubt => &mut self.in_doubt,
        })
    }

    fn moved(&mut self, job: JobState, from: Option<SendState>, to: SendState) {
        if let Some(c) = self.slot(job, from) {
            *c -= 1;
        }
        if let Some(c) = self.slot(job, Some(to)) {
            *c += 1;
        }
    }

    fn is_zero(&self) -> bool {
        [
            self.delivered,
            self.failed,
            self.retrying,
            self.expired,
            self.cancelled,
            self.in_doubt,
        ]
        .iter()
        .all(|d| *d == 0)
    }
}

pub(super) fn record_many(
    conn: &mut Connection,
    writes: &[SegmentWrite],
    now: i64,
    lease_ms: i64,
) -> Result<Vec<LeaseCheck>> {
    in_tx(conn, "recording sends", |tx| {
        writes
            .iter()
            .map(|w| record_in(tx, &w.claim, w.at, &w.entries, now, lease_ms))
            .collect()
    })
}

/// One write of `record_many`, in its transaction.
fn record_in(
    tx: &Transaction<'_>,
    claim: &SegmentClaim,
    at: Progress,
    entries: &[SendEntry],
    now: i64,
    lease_ms: i64,
) -> Result<LeaseCheck> {
    let cursor = at.cursor;
    let seg = ClaimView::read(tx, claim)?
        .ok_or_else(|| refusals::no_segment(claim.segment_id, claim.job_id))?;
    refusals::within_segment(claim.segment_id, seg.start, seg.end, cursor, entries)?;
    let (job_state, tenant): (JobState, i64) =
        query_opt(tx, JOB_STATE, [claim.job_id], "reading job state", |r| {
            Ok((r.state(0, "jobs.state")?, r.int(1, "jobs.tenant_id")?))
        })?
        .ok_or_else(|| {
            StoreError::Corrupt(format!(
                "segment {} of missing job {}",
                claim.segment_id, claim.job_id
            ))
        })?;
    let (deltas, reported) = write_sends(tx, claim.job_id, job_state, tenant, entries, now)?;
    // Every entry is an attempt's outcome: it moves `last_sent_at` even when
    // the totals stay (a retry failing again).
    if !deltas.is_zero() || !entries.is_empty() {
        tx.prepare_cached(sql::MOVE_COUNTERS.sqlite)
            .ctx("preparing totals")?
            .execute(params![
                claim.job_id,
                deltas.delivered,
                deltas.failed,
                deltas.retrying,
                deltas.expired,
                deltas.cancelled,
                deltas.in_doubt,
                now
            ])
            .ctx("moving totals")?;
    }
    reports::count_sends(tx, claim.job_id, utc_day(now), &reported)?;
    if !seg.current(claim) {
        return Ok(LeaseCheck::Lost);
    }
    let lease_until = now.saturating_add(lease_ms);
    tx.prepare_cached(ADVANCE)
        .ctx("preparing cursor")?
        .execute(params![
            claim.segment_id,
            to_db(cursor.max(seg.cursor), "cursor")?,
            lease_until,
            now,
            to_db(at.sent_to, "sent_to")?
        ])
        .ctx("moving cursor")?;
    Ok(LeaseCheck::Held { lease_until })
}

/// Writes `entries` to job `job_id`'s send log, in order: a new index is
/// inserted; a `retry` row takes the new outcome; a final row is left alone
/// (the first outcome stands). Answers what moved between the job's
/// counters and the outcomes to count in the reports.
fn write_sends(
    tx: &Transaction<'_>,
    job_id: i64,
    job_state: JobState,
    tenant: i64,
    entries: &[SendEntry],
    now: i64,
) -> Result<(Deltas, SendTally)> {
    let mut deltas = Deltas::default();
    let mut reported = SendTally::default();
    let mut insert = tx
        .prepare_cached(INSERT_SEND)
        .ctx("preparing send insert")?;
    let mut lookup = tx.prepare_cached(SEND_STATE).ctx("preparing send lookup")?;
    let mut retry = tx.prepare_cached(RETRY_SEND).ctx("preparing send retry")?;
    for e in entries {
        let idx = to_db(e.index, "entries")?;
        let code = send_code(e.state);
        let inserted = insert
            .execute(params![
                job_id,
                idx,
                e.recipient,
                code,
                e.provider_msgid,
                e.error,
                now,
                tenant
            ])
            .ctx("inserting send")?;
        if inserted == 1 {
            deltas.moved(job_state, None, e.state);
            reported.add(e.state);
            continue;
        }
        let old: i64 = lookup
            .query_row(params![job_id, idx], |r| r.get(0))
            .ctx("reading send state")?;
        let old = SendState::from_stored(Value::Int(old)).ok_or_else(|| {
            StoreError::Corrupt(format!("job_sends.state: unknown state code {old}"))
        })?;
        if old != SendState::Retry {
            continue; // final: the first outcome stands
        }
        retry
            .execute(params![
                job_id,
                idx,
                code,
                e.recipient,
                e.provider_msgid,
                e.error,
                now
            ])
            .ctx("updating send")?;
        deltas.moved(job_state, Some(old), e.state);
        reported.add(e.state);
    }
    Ok((deltas, reported))
}

/// Whether any of `[start, end)` of a job is still `retry`.
pub(super) fn any_retry(tx: &Transaction<'_>, job_id: i64, start: u64, end: u64) -> Result<bool> {
    tx.prepare_cached(ANY_RETRY)
        .ctx("preparing retry check")?
        .query_row(
            params![job_id, to_db(start, "start")?, to_db(end, "end")?],
            |r| r.get(0),
        )
        .ctx("checking retries")
}

pub(super) fn finish_segment(
    conn: &mut Connection,
    claim: &SegmentClaim,
    now: i64,
) -> Result<LeaseCheck> {
    in_tx(conn, "finishing segment", |tx| {
        // An unknown segment, or another job's, is no claim of this caller's.
        let Some(seg) = ClaimView::read(tx, claim)?.filter(|s| s.current(claim)) else {
            return Ok(LeaseCheck::Lost);
        };
        if seg.cursor < seg.end {
            return Err(refusals::unfinished_segment(
                claim.segment_id,
                seg.cursor,
                seg.end,
            ));
        }
        let state = if any_retry(tx, claim.job_id, seg.start, seg.end)? {
            SegmentState::Partial
        } else {
            SegmentState::Done
        };
        tx.prepare_cached(END_SEGMENT)
            .ctx("preparing segment end")?
            .execute(params![claim.segment_id, state.as_str(), now])
            .ctx("ending segment")?;
        maybe_done(tx, claim.job_id, now)?;
        Ok(LeaseCheck::Held {
            lease_until: seg.lease_until.unwrap_or(now),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_state_reads_its_own_rows() {
        for &state in SendState::ALL {
            let code = format!("state = {} ", send_code(state));
            assert!(sends_in_state(state).contains(&code), "{state}");
        }
    }
}
