//! Jobs, their segments and the send log: creating, claiming, recording,
//! finishing and cancelling. The sweeper's side is in `sweep.rs`.
//!
//! # Locking
//!
//! Every transaction that changes a job's send log, counters or segment states
//! locks the job row first (`FOR NO KEY UPDATE`; several jobs in id order), and
//! only then the job's segments and send-log rows, so two such writers of one
//! job never hold parts of it at once. One exception: `record_sends` inserts
//! the send-log rows a batch adds before it takes the job, since no writer
//! holding a job ever waits on a row that is not yet committed; it takes the
//! job before touching any stored row or the segment. The job lock is also
//! what keeps the counters exact: each writer reads what it changes in a
//! statement that starts after the lock was granted, so it sees everything
//! the previous holder committed.
//!
//! The one path that does not lock the job first is the claim: it takes its
//! segment with `FOR UPDATE SKIP LOCKED` (never waiting on another claimer),
//! then sets the job's `started_at` if unset. Only the very first claims of a
//! job wait for the job row there: every later claim sees `started_at` set in
//! its snapshot and locks nothing. A first claim racing a cancel or an expiry
//! of the same job (which hold the job and wait for the pending segment the
//! claim holds) is the one cycle left; PostgreSQL's deadlock detector breaks it
//! after `deadlock_timeout` and the aborted side is retried whole.

use std::collections::{HashMap, HashSet};

use futures_util::future::{try_join, try_join_all, try_join3};
use herald_core::TenantId;
use herald_core::campaign::{
    JobState, SegmentState, SendState, TaskState, plan_segments, task_outcome,
};
use herald_core::time::utc_day;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::{ToSql, Type};

use crate::campaign::sql::{actors, jobs as sql};
use crate::postgres::error::pg_error;
use crate::postgres::{Ctx, PgStore, col, reports};
use crate::reports::SendTally;
use crate::{
    Actor, ClaimedSegment, JobFilter, JobRecord, JobSpec, LeaseCheck, Progress, Result,
    SegmentClaim, SegmentRecord, SegmentWrite, SendEntry, SendRecord, StoreError, refusals,
};

use crate::model::{self, Columns, job_cols, segment_cols, send_cols, tenant_to_pg, to_db};

type Tx<'a> = deadpool_postgres::Transaction<'a>;

/// Segments inserted per statement by `create_job` (two `int8` arrays of this
/// many elements): 10M recipients in segments of 1000 is one statement.
const SEGMENT_BATCH: usize = 50_000;

const AUDIENCE_SIZE: &str = "SELECT size, tenant_id FROM audiences WHERE id = $1 FOR KEY SHARE";
const INSERT_JOB: &str = concat!(
    "INSERT INTO jobs (audience_id, channel, message, segment_size, deadline_at, priority, \
                       task_id, state, total, created_at, finished_at, tenant_id, routing, \
                       traceparent, name, category, created_by_key_id, created_by_key_name, \
                       follows) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, \
             $19) \
     RETURNING ",
    job_cols!()
);
// Ids follow the array order, so they grow with `start`.
pub(super) const INSERT_SEGMENTS: &str = "INSERT INTO segments (job_id, start_idx, end_idx, cursor_idx, \
        state, attempt, not_before, priority, deadline_at, created_at, updated_at, tenant_id) \
    SELECT $1, s, e, s, 'pending', 1, $4, $5, $6, $4, $4, $7 \
    FROM unnest($2::int8[], $3::int8[]) AS u(s, e)";
// $1 before, $2 limit, $3 tenant. Written as a range of `jobs_tenant`
// `(tenant_id, id)` that only that index can serve in this order: with
// `tenant_id = $3 AND id < $1` a generic plan walks the primary key backwards
// and filters, reading every other tenant's newer jobs (all of them, for a
// small tenant beside a busy one). The two bounds still select exactly the
// tenant's jobs below `before`.
pub(super) const LIST_JOBS: &str = concat!(
    "SELECT ",
    job_cols!(),
    " FROM jobs WHERE tenant_id >= $3 AND (tenant_id, id) < ($3, $1) \
     ORDER BY tenant_id DESC, id DESC LIMIT $2"
);
/// [`LIST_JOBS`] of one category ($4) off `jobs_category`, names starting
/// with $5 (`''`: any name, none too).
pub(super) const LIST_JOBS_IN_CATEGORY: &str = concat!(
    "SELECT ",
    job_cols!(),
    " FROM jobs WHERE tenant_id = $3 AND category = $4 AND id < $1 \
     AND ($5 = '' OR substr(name, 1, length($5)) = $5) ORDER BY id DESC LIMIT $2"
);
/// [`LIST_JOBS`] of names starting with $4.
pub(super) const LIST_JOBS_NAMED: &str = concat!(
    "SELECT ",
    job_cols!(),
    " FROM jobs WHERE tenant_id >= $3 AND (tenant_id, id) < ($3, $1) \
     AND substr(name, 1, length($4)) = $4 ORDER BY tenant_id DESC, id DESC LIMIT $2"
);
pub(super) const SEGMENT_COUNTS: &str =
    "SELECT state, count(*) FROM segments WHERE job_id = $1 GROUP BY state";
pub(super) const JOB_SEGMENTS: &str = concat!(
    "SELECT ",
    segment_cols!(),
    " FROM segments WHERE job_id = $1 AND id > $2 ORDER BY id LIMIT $3"
);
pub(super) const LOCK_JOB: &str = concat!(
    "SELECT ",
    job_cols!(),
    " FROM jobs WHERE id = $1 FOR NO KEY UPDATE"
);
const LOCK_JOB_STATE: &str = "SELECT state, tenant_id FROM jobs WHERE id = $1 FOR NO KEY UPDATE";
pub(super) const CANCEL_SEGMENTS: &str = "UPDATE segments SET state = 'cancelled', updated_at = $2, \
    finished_at = $2 \
    WHERE job_id = $1 AND state IN ('pending', 'running')";
// Whatever has no final outcome counts as cancelled, retrying ones included.
const CANCEL_JOB: &str = concat!(
    "UPDATE jobs SET state = 'cancelled', cancelled = total - delivered - failed - expired - in_doubt, \
        retrying = 0, finished_at = $2 WHERE id = $1 RETURNING ",
    job_cols!()
);
/// Ends the running tasks of ended jobs. $1 task ids, $2 states, $3 details, $4 at.
/// `t.id = ANY($1)` has the planner find the tasks by primary key.
pub(super) const END_TASKS: &str = "UPDATE tasks AS t \
    SET state = u.state, detail = u.detail, finished_at = $4 \
    FROM unnest($1::int8[], $2::text[], $3::text[]) AS u(id, state, detail) \
    WHERE t.id = ANY($1::int8[]) AND t.id = u.id AND t.state = 'running'";
/// See `queries/finish_idle_jobs.sql`.
pub(super) const FINISH_IDLE_JOBS: &str = include_str!("queries/finish_idle_jobs.sql");
/// See `queries/claim.sql`.
pub(super) const CLAIM: &str = concat!(include_str!("queries/claim.sql"), segment_cols!());
// Only the first claim of a job finds `started_at` unset in its snapshot and
// so waits for the job row at all (see the module doc).
const SET_STARTED: &str = "UPDATE jobs SET started_at = $2 WHERE id = $1 AND started_at IS NULL";
/// A job's send-log rows in one state, `idx > $2`, at most $3. The state is
/// written into the text, so a plan can use the state's partial index.
macro_rules! sends_in {
    ($state:literal) => {
        concat!(
            "SELECT ",
            send_cols!(),
            " FROM job_sends WHERE job_id = $1 AND state = '",
            $state,
            "' AND idx > $2 ORDER BY idx LIMIT $3"
        )
    };
}
pub(super) const SENDS_IN_DOUBT: &str = sends_in!("in_doubt");

/// The statement of [`job_sends_in_state`] for `state`.
fn sends_in_state(state: SendState) -> &'static str {
    match state {
        SendState::Delivered => sends_in!("delivered"),
        SendState::Retry => sends_in!("retry"),
        SendState::Failed => sends_in!("failed"),
        SendState::Expired => sends_in!("expired"),
        SendState::InDoubt => SENDS_IN_DOUBT,
    }
}
pub(super) const SEGMENT_RANGE: &str =
    "SELECT start_idx, end_idx, tenant_id FROM segments WHERE id = $1 AND job_id = $2";
// $3, $4: the batch's lowest and highest index. The bounds keep every plan
// cheap: a plan cached while the log was small checks `idx = ANY` as a filter
// over the job's index range rather than probing each element, and without
// bounds that range is the job's whole log (measured: 0.5 ms per 500-row batch
// at first, growing to 350 ms as a 300k job progressed, until an ANALYZE
// replanned). With them it is at most the batch's span.
pub(super) const LOCK_SENDS: &str = "SELECT idx, state, attempts FROM job_sends \
    WHERE job_id = $1 AND idx >= $3 AND idx <= $4 AND idx = ANY($2::int8[]) \
    ORDER BY idx FOR UPDATE";
/// [`LOCK_SENDS`] without the lock: which of a batch's rows are stored.
pub(super) const EXISTING_SENDS: &str = "SELECT idx, state, attempts FROM job_sends \
    WHERE job_id = $1 AND idx >= $3 AND idx <= $4 AND idx = ANY($2::int8[])";
// $1 job, $2 idx, $3 recipient, $4 state, $5 attempts, $6 msgid, $7 error, $8 at,
// $9 the job's tenant.
const INSERT_SENDS: &str = "INSERT INTO job_sends \
        (job_id, idx, recipient, state, attempts, msgid, error, updated_at, tenant_id) \
    SELECT $1, u.idx, u.recipient, u.state, u.attempts, u.msgid, u.error, $8, $9 \
    FROM unnest($2::int8[], $3::text[], $4::text[], $5::int4[], $6::text[], $7::text[]) \
        AS u(idx, recipient, state, attempts, msgid, error)";
/// See `queries/update_sends.sql`.
pub(super) const UPDATE_SENDS: &str = include_str!("queries/update_sends.sql");
// The cursor never moves back. By id alone (the caller checks the job): given
// `job_id` too, a plan cached while `segments` was small reads the job's
// active segments through `segments_active` instead of the primary key.
pub(super) const RENEW: &str = "UPDATE segments SET cursor_idx = GREATEST(cursor_idx, $4), \
        sent_to = LEAST(GREATEST(sent_to, $7), end_idx), lease_until = $5, updated_at = $6 \
    WHERE id = $1 AND owner = $2 AND epoch = $3 AND state = 'running' \
    RETURNING lease_until";
/// [`RENEW`] for a write with no entries: no job lock and no transaction.
/// It matches nothing when the cursor is outside the segment or the segment
/// is not the job's; the full path then says which. `job_id + 0` keeps the
/// job test off `segments_active` (see [`RENEW`]): the primary key finds the row.
pub(super) const RENEW_ONLY: &str = "UPDATE segments SET cursor_idx = GREATEST(cursor_idx, $4), \
        sent_to = LEAST(GREATEST(sent_to, $7), end_idx), lease_until = $5, updated_at = $6 \
    WHERE id = $1 AND owner = $2 AND epoch = $3 AND state = 'running' \
        AND job_id + 0 = $8 AND $4 BETWEEN start_idx AND end_idx \
    RETURNING lease_until";
pub(super) const CURRENT_SEGMENT: &str = "SELECT job_id, end_idx, cursor_idx, lease_until \
    FROM segments WHERE id = $1 AND owner = $2 AND epoch = $3 AND state = 'running' \
    FOR UPDATE";
/// See `queries/end_segment.sql`.
pub(super) const END_SEGMENT: &str = include_str!("queries/end_segment.sql");

/// How a job's task ends once the job has, and why.
pub(super) fn task_end(
    job_id: i64,
    state: JobState,
    delivered: i64,
    failed: i64,
    expired: i64,
) -> (TaskState, String) {
    let outcome = task_outcome(
        state,
        u64::try_from(failed).unwrap_or(0),
        u64::try_from(expired).unwrap_or(0),
    );
    let detail = match state {
        JobState::Cancelled => format!("job {job_id} was cancelled"),
        JobState::Expired => format!(
            "job {job_id} passed its deadline: {delivered} delivered, {failed} failed, \
             {expired} expired"
        ),
        JobState::Done | JobState::Running => {
            format!("job {job_id} done: {delivered} delivered, {failed} failed, {expired} expired")
        }
    };
    (outcome, detail)
}

/// Ends the running tasks `(id, state, detail)` of jobs that just ended.
pub(super) async fn end_tasks(
    tx: &Tx<'_>,
    ended: &[(i64, TaskState, String)],
    now: i64,
) -> Result<()> {
    if ended.is_empty() {
        return Ok(());
    }
    let ids: Vec<i64> = ended.iter().map(|e| e.0).collect();
    let states: Vec<&str> = ended.iter().map(|e| e.1.as_str()).collect();
    let details: Vec<&str> = ended.iter().map(|e| e.2.as_str()).collect();
    let stmt = tx
        .prepare_cached(END_TASKS)
        .await
        .ctx("preparing task end")?;
    tx.execute(&stmt, &[&ids, &states, &details, &now])
        .await
        .ctx("ending tasks")?;
    Ok(())
}

/// Ends `done` those of the given jobs, locked by the caller, that have no
/// pending or running segment and nothing retrying, and their tasks with them.
/// Returns how many ended.
pub(super) async fn finish_idle(tx: &Tx<'_>, job_ids: &[i64], now: i64) -> Result<u64> {
    if job_ids.is_empty() {
        return Ok(0);
    }
    let stmt = tx
        .prepare_cached(FINISH_IDLE_JOBS)
        .await
        .ctx("preparing job finish")?;
    let rows = tx
        .query(&stmt, &[&job_ids, &now])
        .await
        .ctx("finishing jobs")?;
    let mut ended = Vec::new();
    for row in &rows {
        let id: i64 = col(row, 0, "jobs.id")?;
        if let Some(task) = col::<Option<i64>>(row, 1, "jobs.task_id")? {
            let (state, detail) = task_end(
                id,
                JobState::Done,
                col(row, 2, "jobs.delivered")?,
                col(row, 3, "jobs.failed")?,
                col(row, 4, "jobs.expired")?,
            );
            ended.push((task, state, detail));
        }
    }
    end_tasks(tx, &ended, now).await?;
    Ok(rows.len() as u64)
}

/// Creates a job and its segments inside `tx`: `None` if the audience is
/// unknown, not sealed, or another tenant's. The audience is held `FOR KEY
/// SHARE` so it cannot be dropped before the job commits.
pub(super) async fn insert_job(tx: &Tx<'_>, spec: &JobSpec, now: i64) -> Result<Option<JobRecord>> {
    const WHAT: &str = "segment_size";
    let size_stmt = tx
        .prepare_cached(AUDIENCE_SIZE)
        .await
        .ctx("preparing audience lock")?;
    let tenant = tenant_to_pg(spec.tenant)?;
    let size: Option<i64> = match tx
        .query_opt(&size_stmt, &[&spec.audience_id])
        .await
        .ctx("locking the audience")?
    {
        None => return Ok(None),
        Some(row) if col::<i32>(&row, 1, "audiences.tenant_id")? != tenant => return Ok(None),
        Some(row) => col(&row, 0, "audiences.size")?,
    };
    let Some(size) = size else {
        return Ok(None);
    };
    let total = u64::try_from(size)
        .map_err(|_| StoreError::Corrupt(format!("audience {}: size {size}", spec.audience_id)))?;
    let segment_size = spec.segment_size.max(1);
    let (state, finished_at) = if total == 0 {
        (JobState::Done, Some(now))
    } else {
        (JobState::Running, None)
    };
    let priority = i16::from(spec.priority);
    let insert = tx
        .prepare_cached(INSERT_JOB)
        .await
        .ctx("preparing job insert")?;
    let (key_id, key_name) = Actor::columns(&spec.meta.created_by);
    let follows = spec.follows.or(spec.resends);
    let params: [&(dyn ToSql + Sync); 19] = [
        &spec.audience_id,
        &spec.channel,
        &spec.message,
        &to_db(segment_size, WHAT)?,
        &spec.deadline_at,
        &priority,
        &spec.task_id,
        &state.as_str(),
        &size,
        &now,
        &finished_at,
        &tenant,
        &spec.routing,
        &spec.traceparent,
        &spec.meta.name,
        &spec.meta.category,
        &key_id,
        &key_name,
        &follows,
    ];
    let job = model::decode::<JobRecord, _>(
        &tx.query_one(&insert, &params)
            .await
            .ctx("inserting the job")?,
    )?;
    let segments = tx
        .prepare_cached(INSERT_SEGMENTS)
        .await
        .ctx("preparing segment insert")?;
    let mut starts = Vec::with_capacity(SEGMENT_BATCH);
    let mut ends = Vec::with_capacity(SEGMENT_BATCH);
    let mut planned = plan_segments(0, total, segment_size).peekable();
    while planned.peek().is_some() {
        starts.clear();
        ends.clear();
        for (s, e) in planned.by_ref().take(SEGMENT_BATCH) {
            starts.push(to_db(s, WHAT)?);
            ends.push(to_db(e, WHAT)?);
        }
        tx.execute(
            &segments,
            &[
                &job.id,
                &starts,
                &ends,
                &now,
                &priority,
                &spec.deadline_at,
                &tenant,
            ],
        )
        .await
        .ctx("inserting segments")?;
    }
    Ok(Some(job))
}

pub(super) async fn create_job(
    store: &PgStore,
    spec: &JobSpec,
    now: i64,
) -> Result<Option<JobRecord>> {
    let mut client = store.client().await?;
    let tx = client.transaction().await.ctx("beginning create_job")?;
    if let Some(of) = spec.follows
        && !super::follow_ups::claim(&tx, of, now).await?
    {
        return Ok(None);
    }
    if let Some(of) = spec.resends
        && follower_sending(&tx, of).await?
    {
        return Ok(None);
    }
    let job = insert_job(&tx, spec, now).await?;
    if let Some(job) = &job {
        if let Some(of) = spec.follows {
            super::follow_ups::set_job(&tx, of, job.id).await?;
        }
        if let Some(f) = &spec.follow_up {
            super::follow_ups::insert(&tx, job.id, f).await?;
        }
        tx.commit().await.ctx("committing create_job")?;
    }
    Ok(job)
}

/// Whether a job that follows job `of` is running. Takes job
/// `of`'s row lock first, so two resends of one job wait for each other and
/// the second sees the first's job.
async fn follower_sending(tx: &Tx<'_>, of: i64) -> Result<bool> {
    tx.execute("SELECT 1 FROM jobs WHERE id = $1 FOR NO KEY UPDATE", &[&of])
        .await
        .ctx("locking the resent job")?;
    let stmt = tx
        .prepare_cached(sql::FOLLOWER_SENDING.pg)
        .await
        .ctx("preparing follower check")?;
    tx.query_one(&stmt, &[&of])
        .await
        .ctx("checking the job's followers")?
        .try_get(0)
        .ctx("reading the follower check")
}

pub(super) async fn jobs_following(
    store: &PgStore,
    job_id: i64,
    after: i64,
    limit: i64,
) -> Result<Vec<JobRecord>> {
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(sql::FOLLOWING.pg)
        .await
        .ctx("preparing follower list")?;
    client
        .query(&stmt, &[&job_id, &after, &limit])
        .await
        .ctx("listing a job's followers")?
        .iter()
        .map(model::decode)
        .collect()
}

pub(super) async fn get_job(store: &PgStore, id: i64) -> Result<Option<JobRecord>> {
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(sql::GET_JOB.pg)
        .await
        .ctx("preparing job read")?;
    client
        .query_opt(&stmt, &[&id])
        .await
        .ctx("reading a job")?
        .map(|r| model::decode(&r))
        .transpose()
}

pub(super) async fn list_jobs(
    store: &PgStore,
    tenant: TenantId,
    filter: JobFilter,
    before: i64,
    limit: i64,
) -> Result<Vec<JobRecord>> {
    let tenant = tenant_to_pg(tenant)?;
    let client = store.client().await?;
    let (sql, category, prefix) = match (filter.category, filter.name_prefix) {
        (None, None) => (LIST_JOBS, None, None),
        (Some(c), p) => (LIST_JOBS_IN_CATEGORY, Some(c), Some(p.unwrap_or_default())),
        (None, Some(p)) => (LIST_JOBS_NAMED, None, Some(p)),
    };
    let stmt = client.prepare_cached(sql).await.ctx("preparing job list")?;
    let mut params: Vec<&(dyn ToSql + Sync)> = vec![&before, &limit, &tenant];
    if let Some(c) = &category {
        params.push(c);
    }
    if let Some(p) = &prefix {
        params.push(p);
    }
    client
        .query(&stmt, &params)
        .await
        .ctx("listing jobs")?
        .iter()
        .map(model::decode)
        .collect()
}

pub(super) async fn segment_counts(
    store: &PgStore,
    job_id: i64,
) -> Result<Vec<(SegmentState, u64)>> {
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(SEGMENT_COUNTS)
        .await
        .ctx("preparing segment counts")?;
    let rows = client
        .query(&stmt, &[&job_id])
        .await
        .ctx("counting segments")?;
    let mut counts = rows
        .iter()
        .map(model::decode)
        .collect::<Result<Vec<(SegmentState, u64)>>>()?;
    // In the order the states are declared, whatever order the groups came in.
    counts.sort_by_key(|(s, _)| SegmentState::ALL.iter().position(|a| a == s));
    Ok(counts)
}

pub(super) async fn job_segments(
    store: &PgStore,
    job_id: i64,
    after: i64,
    limit: i64,
) -> Result<Vec<SegmentRecord>> {
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(JOB_SEGMENTS)
        .await
        .ctx("preparing segment list")?;
    client
        .query(&stmt, &[&job_id, &after, &limit])
        .await
        .ctx("listing segments")?
        .iter()
        .map(model::decode)
        .collect()
}

pub(super) async fn cancel_job(
    store: &PgStore,
    id: i64,
    now: i64,
    by: &Option<Actor>,
) -> Result<Option<JobRecord>> {
    let mut client = store.client().await?;
    let tx = client.transaction().await.ctx("beginning cancel_job")?;
    let lock = tx
        .prepare_cached(LOCK_JOB)
        .await
        .ctx("preparing job lock")?;
    let Some(row) = tx.query_opt(&lock, &[&id]).await.ctx("locking the job")? else {
        return Ok(None);
    };
    let job: JobRecord = model::decode(&row)?;
    if job.state.is_final() {
        return Ok(Some(job));
    }
    super::stamp(&tx, actors::JOB_CHANGED, id, by).await?;
    let segments = tx
        .prepare_cached(CANCEL_SEGMENTS)
        .await
        .ctx("preparing segment cancel")?;
    let cancel = tx
        .prepare_cached(CANCEL_JOB)
        .await
        .ctx("preparing job cancel")?;
    let (_, row) = try_join(
        tx.execute(&segments, &[&id, &now]),
        tx.query_one(&cancel, &[&id, &now]),
    )
    .await
    .ctx("cancelling the job")?;
    let job: JobRecord = model::decode(&row)?;
    if let Some(task) = job.task_id {
        let (state, detail) = task_end(id, JobState::Cancelled, 0, 0, 0);
        end_tasks(&tx, &[(task, state, detail)], now).await?;
        super::stamp(&tx, actors::JOB_TASK_CANCELLED, id, by).await?;
    }
    tx.commit().await.ctx("committing cancel_job")?;
    Ok(Some(job))
}

pub(super) async fn claim_segment(
    store: &PgStore,
    owner: &str,
    now: i64,
    lease_ms: i64,
    mark_ahead: u64,
) -> Result<Option<ClaimedSegment>> {
    let lease_until = now.saturating_add(lease_ms);
    let mark_ahead = to_db(mark_ahead, "mark_ahead")?;
    let mut client = store.client().await?;
    let tx = client.transaction().await.ctx("beginning claim_segment")?;
    let Some(row) = tx
        .query_typed_opt(
            CLAIM,
            &[
                (&owner, Type::TEXT),
                (&now, Type::INT8),
                (&lease_until, Type::INT8),
                (&mark_ahead, Type::INT8),
            ],
        )
        .await
        .ctx("claiming a segment")?
    else {
        return Ok(None);
    };
    let segment: SegmentRecord = model::decode(&row)?;
    let started = tx
        .prepare_cached(SET_STARTED)
        .await
        .ctx("preparing job start")?;
    let get = tx
        .prepare_cached(sql::GET_JOB.pg)
        .await
        .ctx("preparing job read")?;
    let (_, job) = try_join(
        tx.execute(&started, &[&segment.job_id, &now]),
        tx.query_one(&get, &[&segment.job_id]),
    )
    .await
    .ctx("starting the job")?;
    let job: JobRecord = model::decode(&job)?;
    tx.commit().await.ctx("committing claim_segment")?;
    Ok(Some(ClaimedSegment {
        claim: SegmentClaim {
            segment_id: segment.id,
            job_id: segment.job_id,
            owner: owner.to_string(),
            epoch: segment.epoch,
        },
        segment,
        job,
        lease_until,
    }))
}

pub(super) async fn job_sends(
    store: &PgStore,
    job_id: i64,
    start: i64,
    end: i64,
) -> Result<Vec<SendRecord>> {
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(sql::SENDS.pg)
        .await
        .ctx("preparing send-log read")?;
    client
        .query(&stmt, &[&job_id, &start, &end])
        .await
        .ctx("reading the send log")?
        .iter()
        .map(model::decode)
        .collect()
}

/// [`crate::CampaignStore::recipient_index`].
pub(super) async fn recipient_index(
    store: &PgStore,
    job_id: i64,
    recipient: &str,
) -> Result<Option<u64>> {
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(sql::CHUNKS_WITH_PG)
        .await
        .ctx("preparing recipient search")?;
    let needle = recipient.as_bytes();
    for row in client
        .query(&stmt, &[&job_id, &needle])
        .await
        .ctx("searching the audience")?
    {
        let chunk_no: u64 = row.narrow(0, "audience_chunks.chunk_no")?;
        let data = row.bytes(1, "audience_chunks.data")?;
        if let Some(i) = crate::campaign::index_in_chunk(chunk_no, data, needle) {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

pub(super) async fn job_sends_in_state(
    store: &PgStore,
    job_id: i64,
    state: SendState,
    after: i64,
    limit: i64,
) -> Result<Vec<SendRecord>> {
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(sends_in_state(state))
        .await
        .ctx("preparing send-log read")?;
    client
        .query(&stmt, &[&job_id, &after, &limit])
        .await
        .ctx("reading the send log")?
        .iter()
        .map(model::decode)
        .collect()
}

/// One send-log row as a batch leaves it.
struct Written<'a> {
    entry: &'a SendEntry,
    state: SendState,
    attempts: i32,
    /// Already in the table (an update) rather than new (an insert).
    stored: bool,
}

/// How many log rows a batch moved into (or out of) each state.
#[derive(Default, Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Moves {
    pub delivered: i64,
    pub failed: i64,
    pub retrying: i64,
    pub expired: i64,
    pub in_doubt: i64,
}

impl Moves {
    fn add(&mut self, state: SendState, n: i64) {
        match state {
            SendState::Delivered => self.delivered += n,
            SendState::Failed => self.failed += n,
            SendState::InDoubt => self.in_doubt += n,
            SendState::Retry => self.retrying += n,
            SendState::Expired => self.expired += n,
        }
    }

    /// The change to the job's counters `(delivered, failed, retrying,
    /// expired, cancelled, in_doubt)`. A running job counts rows as they are.
    /// An ended job has nothing retrying and counts what is left unsettled as
    /// cancelled (or expired), so a late outcome moves a recipient out of that
    /// bucket.
    pub(super) fn counters(self, job: JobState) -> [i64; 6] {
        let (d, f, x, q) = (self.delivered, self.failed, self.expired, self.in_doubt);
        match job {
            JobState::Running | JobState::Done => [d, f, self.retrying, x, 0, q],
            JobState::Cancelled => [d, f, 0, x, -(d + f + x + q), q],
            JobState::Expired => [d, f, 0, -(d + f + q), 0, q],
        }
    }
}

/// Applies a batch to the rows it touches, in order: a new index is inserted
/// with one attempt; a `retry` row takes the new state with one more attempt;
/// a final row is left alone. Returns the rows to write, by index, and what
/// moved.
fn apply_batch<'a>(
    entries: impl IntoIterator<Item = &'a SendEntry>,
    stored: &HashMap<i64, (SendState, i32)>,
    reported: &mut SendTally,
) -> Result<(Vec<(i64, Written<'a>)>, Moves)> {
    let mut rows: HashMap<i64, Written<'a>> = HashMap::new();
    let mut moves = Moves::default();
    for entry in entries {
        let idx = to_db(entry.index, "entries")?;
        let state = entry.state;
        let before = match rows.get(&idx) {
            Some(w) => Some((w.state, w.attempts, w.stored)),
            None => stored.get(&idx).map(|&(s, a)| (s, a, true)),
        };
        let (attempts, stored) = match before {
            None => (1, false),
            Some((SendState::Retry, attempts, stored)) => {
                moves.add(SendState::Retry, -1);
                (attempts.saturating_add(1), stored)
            }
            Some(_) => continue,
        };
        moves.add(state, 1);
        reported.add(state);
        rows.insert(
            idx,
            Written {
                entry,
                state,
                attempts,
                stored,
            },
        );
    }
    let mut rows: Vec<_> = rows.into_iter().collect();
    rows.sort_unstable_by_key(|(idx, _)| *idx);
    Ok((rows, moves))
}

/// The column arrays of [`INSERT_SENDS`] / [`UPDATE_SENDS`], by index.
#[derive(Default)]
struct SendColumns<'a> {
    idx: Vec<i64>,
    recipient: Vec<&'a str>,
    state: Vec<&'static str>,
    attempts: Vec<i32>,
    msgid: Vec<Option<&'a str>>,
    error: Vec<Option<&'a str>>,
}

impl<'a> SendColumns<'a> {
    fn push(&mut self, idx: i64, w: &Written<'a>) {
        self.idx.push(idx);
        self.recipient.push(&w.entry.recipient);
        self.state.push(w.state.as_str());
        self.attempts.push(w.attempts);
        self.msgid.push(w.entry.provider_msgid.as_deref());
        self.error.push(w.entry.error.as_deref());
    }

    /// The statement's parameters, in order.
    fn params<'p>(&'p self, job_id: &'p i64, now: &'p i64) -> Vec<&'p (dyn ToSql + Sync)> {
        vec![
            job_id,
            &self.idx,
            &self.recipient,
            &self.state,
            &self.attempts,
            &self.msgid,
            &self.error,
            now,
        ]
    }
}

/// The state and attempts of each stored send-log row, by index, as
/// [`EXISTING_SENDS`] and [`LOCK_SENDS`] read them.
fn stored_sends(rows: &[tokio_postgres::Row]) -> Result<HashMap<i64, (SendState, i32)>> {
    let mut stored = HashMap::with_capacity(rows.len());
    for row in rows {
        let idx: i64 = col(row, 0, "job_sends.idx")?;
        let state: SendState = row.state(1, "job_sends.state")?;
        stored.insert(idx, (state, col::<i32>(row, 2, "job_sends.attempts")?));
    }
    Ok(stored)
}

/// Most times `record_sends` starts again after another claim added rows of
/// its batch first; each time, the rows that claim committed are found stored.
const RECORD_RACES: usize = 5;

pub(super) async fn record_many(
    store: &PgStore,
    writes: &[SegmentWrite],
    now: i64,
    lease_ms: i64,
) -> Result<Vec<LeaseCheck>> {
    if let [w] = writes
        && w.entries.is_empty()
        && let Some(check) = renew_only(store, &w.claim, w.at, now, lease_ms).await?
    {
        return Ok(vec![check]);
    }
    // Jobs, then segments, in one order everywhere: two nodes' batches take
    // their jobs' locks in the same order, so they cannot deadlock.
    let mut order: Vec<usize> = (0..writes.len()).collect();
    order.sort_by_key(|&i| (writes[i].claim.job_id, writes[i].claim.segment_id));
    for _ in 0..RECORD_RACES {
        if let Some(checks) = record_many_once(store, writes, &order, now, lease_ms).await? {
            return Ok(checks);
        }
    }
    Err(StoreError::Conflict {
        what: "record_sends".into(),
        why: "another claim kept adding rows of the batch first".into(),
    })
}

/// A write with no entries (a worker marking what it is about to send, or
/// renewing its lease): one statement. `None` when it matched nothing, for
/// the full path to tell a lost claim from a refused cursor.
async fn renew_only(
    store: &PgStore,
    claim: &SegmentClaim,
    at: Progress,
    now: i64,
    lease_ms: i64,
) -> Result<Option<LeaseCheck>> {
    let cursor = to_db(at.cursor, "cursor")?;
    let sent_to = to_db(at.sent_to, "sent_to")?;
    let lease_until = now.saturating_add(lease_ms);
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(RENEW_ONLY)
        .await
        .ctx("preparing renew")?;
    let row = client
        .query_opt(
            &stmt,
            &[
                &claim.segment_id,
                &claim.owner,
                &claim.epoch,
                &cursor,
                &lease_until,
                &now,
                &sent_to,
                &claim.job_id,
            ],
        )
        .await
        .ctx("renewing the segment")?;
    Ok(row.map(|_| LeaseCheck::Held { lease_until }))
}

/// One attempt of `record_many`: every write in one transaction, or `None`
/// (nothing written) when another claim added one of their rows first.
async fn record_many_once(
    store: &PgStore,
    writes: &[SegmentWrite],
    order: &[usize],
    now: i64,
    lease_ms: i64,
) -> Result<Option<Vec<LeaseCheck>>> {
    for w in writes {
        refusals::expired_entry(&w.entries)?;
    }
    let mut client = store.client().await?;
    let tx = client.transaction().await.ctx("beginning record_sends")?;
    let mut checks: Vec<Option<LeaseCheck>> = vec![None; writes.len()];
    // One job at a time, in order; a job's writes together, pipelined on the
    // connection (a batch is mostly one job's, so it costs the round trips
    // of one write, not of each).
    for group in order.chunk_by(|&x, &y| writes[x].claim.job_id == writes[y].claim.job_id) {
        let ws: Vec<&SegmentWrite> = group.iter().map(|&i| &writes[i]).collect();
        match record_job(&tx, &ws, now, lease_ms).await? {
            Some(answers) => {
                for (&i, check) in group.iter().zip(answers) {
                    checks[i] = Some(check);
                }
            }
            None => return Ok(None),
        }
    }
    tx.commit().await.ctx("committing record_sends")?;
    Ok(Some(checks.into_iter().flatten().collect()))
}

/// The send-log entries of a job's writes, in order.
fn entries_of<'a>(group: &[&'a SegmentWrite]) -> impl Iterator<Item = &'a SendEntry> {
    group.iter().flat_map(|w| w.entries.iter())
}

/// The bounds of sorted indexes, for the range condition of the send-log
/// reads (`0, -1` when there are none: an empty range).
fn index_bounds(indexes: &[i64]) -> (i64, i64) {
    (
        indexes.first().copied().unwrap_or(0),
        indexes.last().copied().unwrap_or(-1),
    )
}

/// The writes of one job in a batch (at least one), in its transaction, as
/// one: one read, one insert, one lock, one counter move and one report
/// count for all of them, and a lease check per segment. The answers are in
/// the order of `group`; `None` when another claim added one of their rows
/// first (the transaction must start again).
async fn record_job(
    tx: &Tx<'_>,
    group: &[&SegmentWrite],
    now: i64,
    lease_ms: i64,
) -> Result<Option<Vec<LeaseCheck>>> {
    let Some(first) = group.first() else {
        return Ok(Some(Vec::new()));
    };
    let job_id = first.claim.job_id;
    let mut indexes: Vec<i64> = entries_of(group)
        .map(|e| to_db(e.index, "entries"))
        .collect::<Result<_>>()?;
    indexes.sort_unstable();
    indexes.dedup();
    let Some(new) = insert_new_sends(tx, group, job_id, &indexes, now).await? else {
        return Ok(None);
    };
    let locked = lock_job(tx, group, first, &indexes, &new.inserted).await?;
    let checks = write_under_lock(tx, group, job_id, &new, &locked, now, lease_ms).await?;
    Ok(Some(checks))
}

/// What [`insert_new_sends`] did.
struct NewSends {
    /// The job's tenant, as its segments hold it.
    tenant: i32,
    /// The send-log indexes it inserted.
    inserted: HashSet<i64>,
    /// [`INSERT_SENDS`], for the rows found new only under the lock.
    insert: tokio_postgres::Statement,
}

/// First, without the job's lock: the rows this batch adds. A new index
/// depends on nothing stored and on no job state, and no other writer
/// takes such a row while holding the job (the sweeper and the cancel
/// change only rows they can see, and these are not committed), so
/// inserting them first cannot deadlock. Two claims adding the same index
/// (a lapsed holder and the new one) insert in index order, so one waits
/// for the other, and the later one starts again (`record_sends`). Writers of one job then hold
/// its lock only for the counters and the commit, not for the whole
/// insert (with four workers, 1,000-row inserts under the lock made them
/// take turns, 6.9 ms of waiting per batch).
///
/// Checks each write against its segment first. `None` when another claim
/// added one of these rows since the read (roll back and start again).
async fn insert_new_sends(
    tx: &Tx<'_>,
    group: &[&SegmentWrite],
    job_id: i64,
    indexes: &[i64],
    now: i64,
) -> Result<Option<NewSends>> {
    let (lo, hi) = index_bounds(indexes);
    let (range, existing, insert) = try_join3(
        tx.prepare_cached(SEGMENT_RANGE),
        tx.prepare_cached(EXISTING_SENDS),
        tx.prepare_cached(INSERT_SENDS),
    )
    .await
    .ctx("preparing record_sends")?;
    let range_params: Vec<[&(dyn ToSql + Sync); 2]> = group
        .iter()
        .map(|w| [&w.claim.segment_id as &(dyn ToSql + Sync), &job_id])
        .collect();
    let (ranges, existing) = try_join(
        try_join_all(range_params.iter().map(|p| tx.query_opt(&range, p))),
        tx.query(&existing, &[&job_id, &indexes, &lo, &hi]),
    )
    .await
    .ctx("reading the segments and their send-log rows")?;
    let mut tenant: i32 = 0;
    for (w, range) in group.iter().zip(&ranges) {
        let claim = &w.claim;
        let Some(range) = range else {
            return Err(refusals::no_segment(claim.segment_id, claim.job_id));
        };
        let start = model::from_db(range.int(0, "segments.start_idx")?, "segments.start_idx")?;
        let end = model::from_db(range.int(1, "segments.end_idx")?, "segments.end_idx")?;
        tenant = col(range, 2, "segments.tenant_id")?;
        refusals::within_segment(claim.segment_id, start, end, w.at.cursor, &w.entries)?;
    }
    let seen = stored_sends(&existing)?;
    let (rows, _) = apply_batch(entries_of(group), &seen, &mut SendTally::default())?;
    let mut new = SendColumns::default();
    for (idx, w) in &rows {
        if !w.stored {
            new.push(*idx, w);
        }
    }
    let inserted: HashSet<i64> = new.idx.iter().copied().collect();
    if !new.idx.is_empty() {
        let mut params = new.params(&job_id, &now);
        params.push(&tenant);
        match tx.execute(&insert, &params).await {
            Ok(_) => {}
            // Another claim added one of these rows since the read above:
            // roll back and start again, when the read finds it stored.
            Err(e) if e.code() == Some(&SqlState::UNIQUE_VIOLATION) => return Ok(None),
            Err(e) => return Err(pg_error("writing the send log", &e)),
        }
    }
    Ok(Some(NewSends {
        tenant,
        inserted,
        insert,
    }))
}

/// What the writes do to the rows stored before them, as [`lock_job`]
/// works it out under the job's lock.
struct Locked<'a> {
    /// The outcomes to count in the reports.
    reported: SendTally,
    /// Rows not there before the lock, yet not inserted by
    /// [`insert_new_sends`] (another claim's row, since gone: never, short
    /// of a deleted job).
    late_new: SendColumns<'a>,
    /// Stored rows to update.
    old: SendColumns<'a>,
    /// The change to the job's counters (see [`Moves::counters`]).
    counters: [i64; 6],
}

/// Then the job's lock, and under it what depends on the job's state and
/// on rows already stored (the rows inserted first count as new again:
/// they are not read back).
async fn lock_job<'a>(
    tx: &Tx<'_>,
    group: &[&'a SegmentWrite],
    first: &SegmentWrite,
    indexes: &[i64],
    inserted: &HashSet<i64>,
) -> Result<Locked<'a>> {
    let job_id = first.claim.job_id;
    let old_indexes: Vec<i64> = indexes
        .iter()
        .copied()
        .filter(|i| !inserted.contains(i))
        .collect();
    let (lo, hi) = index_bounds(&old_indexes);
    let (lock, lock_sends) = try_join(
        tx.prepare_cached(LOCK_JOB_STATE),
        tx.prepare_cached(LOCK_SENDS),
    )
    .await
    .ctx("preparing record_sends")?;
    // Pipelined, in this order: the job lock first, then the stored rows.
    let (job, stored_rows) = try_join(tx.query_opt(&lock, &[&job_id]), async {
        if old_indexes.is_empty() {
            Ok(Vec::new())
        } else {
            tx.query(&lock_sends, &[&job_id, &old_indexes, &lo, &hi])
                .await
        }
    })
    .await
    .ctx("locking the job and its send-log rows")?;
    let Some(job) = job else {
        return Err(refusals::no_segment(first.claim.segment_id, job_id));
    };
    let job: JobState = job.state(0, "jobs.state")?;
    let stored = stored_sends(&stored_rows)?;
    let mut reported = SendTally::default();
    let (rows, moves) = apply_batch(entries_of(group), &stored, &mut reported)?;
    let (mut late_new, mut old) = (SendColumns::default(), SendColumns::default());
    for (idx, w) in &rows {
        if w.stored {
            old.push(*idx, w);
        } else if !inserted.contains(idx) {
            late_new.push(*idx, w);
        }
    }
    Ok(Locked {
        reported,
        late_new,
        old,
        counters: moves.counters(job),
    })
}

/// Last, still under the lock and pipelined in one round trip: the late
/// inserts, the updates, the counters, each segment's lease renewal and the
/// report count. Answers each segment's lease check, in the order of `group`.
async fn write_under_lock(
    tx: &Tx<'_>,
    group: &[&SegmentWrite],
    job_id: i64,
    new: &NewSends,
    locked: &Locked<'_>,
    now: i64,
    lease_ms: i64,
) -> Result<Vec<LeaseCheck>> {
    let [delivered, failed, retrying, expired, cancelled, in_doubt] = locked.counters;
    let (update, counters, renew) = try_join3(
        tx.prepare_cached(UPDATE_SENDS),
        tx.prepare_cached(sql::MOVE_COUNTERS.pg),
        tx.prepare_cached(RENEW),
    )
    .await
    .ctx("preparing record_sends")?;
    let lease_until = now.saturating_add(lease_ms);
    let (late_new, old) = (&locked.late_new, &locked.old);
    let (mut late_params, old_params) = (late_new.params(&job_id, &now), old.params(&job_id, &now));
    late_params.push(&new.tenant);
    let counter_params: Vec<&(dyn ToSql + Sync)> = vec![
        &job_id, &delivered, &failed, &retrying, &expired, &cancelled, &in_doubt, &now,
    ];
    // Each segment is this job's: `SEGMENT_RANGE` found it under the job.
    let progress: Vec<(i64, i64)> = group
        .iter()
        .map(|w| {
            Ok((
                to_db(w.at.cursor, "cursor")?,
                to_db(w.at.sent_to, "sent_to")?,
            ))
        })
        .collect::<Result<_>>()?;
    let renew_params: Vec<[&(dyn ToSql + Sync); 7]> = group
        .iter()
        .zip(&progress)
        .map(|(w, (cursor, sent_to))| {
            [
                &w.claim.segment_id as &(dyn ToSql + Sync),
                &w.claim.owner,
                &w.claim.epoch,
                cursor,
                &lease_until,
                &now,
                sent_to,
            ]
        })
        .collect();
    // Pipelined: one round trip for every write of the batch.
    let mut writes = Vec::new();
    if !late_new.idx.is_empty() {
        writes.push(tx.execute(&new.insert, &late_params));
    }
    if !old.idx.is_empty() {
        writes.push(tx.execute(&update, &old_params));
    }
    // Every entry is an attempt's outcome: it moves `last_sent_at` even when
    // the totals stay (a retry failing again).
    if locked.counters != [0; 6] || group.iter().any(|w| !w.entries.is_empty()) {
        writes.push(tx.execute(&counters, &counter_params));
    }
    let renewed = try_join_all(renew_params.iter().map(|p| tx.query_opt(&renew, p)));
    let report = reports::count_sends(tx, job_id, utc_day(now), &locked.reported);
    let ((_, renewed), ()) = try_join(
        async {
            try_join(try_join_all(writes), renewed)
                .await
                .ctx("writing the send log")
        },
        report,
    )
    .await?;
    Ok(renewed
        .into_iter()
        .map(|r| match r {
            Some(_) => LeaseCheck::Held { lease_until },
            None => LeaseCheck::Lost,
        })
        .collect())
}

pub(super) async fn finish_segment(
    store: &PgStore,
    claim: &SegmentClaim,
    now: i64,
) -> Result<LeaseCheck> {
    let mut client = store.client().await?;
    let tx = client.transaction().await.ctx("beginning finish_segment")?;
    let (lock, current) = try_join(
        tx.prepare_cached(LOCK_JOB_STATE),
        tx.prepare_cached(CURRENT_SEGMENT),
    )
    .await
    .ctx("preparing finish_segment")?;
    let (_, segment) = try_join(
        tx.query_opt(&lock, &[&claim.job_id]),
        tx.query_opt(&current, &[&claim.segment_id, &claim.owner, &claim.epoch]),
    )
    .await
    .ctx("locking the job and the segment")?;
    let Some(segment) = segment else {
        return Ok(LeaseCheck::Lost);
    };
    if col::<i64>(&segment, 0, "segments.job_id")? != claim.job_id {
        return Ok(LeaseCheck::Lost);
    }
    let end: i64 = col(&segment, 1, "segments.end_idx")?;
    let cursor: i64 = col(&segment, 2, "segments.cursor_idx")?;
    let lease_until: Option<i64> = col(&segment, 3, "segments.lease_until")?;
    if cursor < end {
        return Err(refusals::unfinished_segment(
            claim.segment_id,
            model::from_db(cursor, "segments.cursor_idx")?,
            model::from_db(end, "segments.end_idx")?,
        ));
    }
    let stmt = tx
        .prepare_cached(END_SEGMENT)
        .await
        .ctx("preparing segment end")?;
    tx.execute(&stmt, &[&claim.segment_id, &now])
        .await
        .ctx("ending the segment")?;
    finish_idle(&tx, &[claim.job_id], now).await?;
    tx.commit().await.ctx("committing finish_segment")?;
    let lease_until = lease_until.ok_or_else(|| {
        StoreError::Corrupt(format!("running segment {} has no lease", claim.segment_id))
    })?;
    Ok(LeaseCheck::Held { lease_until })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(index: u64, state: SendState) -> SendEntry {
        SendEntry {
            index,
            recipient: format!("r{index}"),
            state,
            provider_msgid: None,
            error: None,
        }
    }

    #[test]
    fn a_batch_moves_exactly_what_it_changes() {
        use SendState::*;
        let stored = HashMap::from([(1, (Retry, 1)), (2, (Delivered, 1)), (3, (Retry, 2))]);
        let entries = [
            entry(0, Delivered),
            entry(1, Failed),
            entry(2, Failed),
            entry(3, Retry),
            entry(4, Retry),
            entry(4, Delivered),
        ];
        let (rows, moves) = apply_batch(&entries, &stored, &mut SendTally::default()).unwrap();
        let got: Vec<_> = rows
            .iter()
            .map(|(i, w)| (*i, w.state, w.attempts, w.stored))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, Delivered, 1, false),
                (1, Failed, 2, true),
                (3, Retry, 3, true),
                (4, Delivered, 2, false),
            ]
        );
        assert_eq!(
            moves,
            Moves {
                delivered: 2,
                failed: 1,
                retrying: -1,
                expired: 0,
                in_doubt: 0,
            }
        );
        assert_eq!(moves.counters(JobState::Running), [2, 1, -1, 0, 0, 0]);
        assert_eq!(moves.counters(JobState::Cancelled), [2, 1, 0, 0, -3, 0]);
        assert_eq!(moves.counters(JobState::Expired), [2, 1, 0, -3, 0, 0]);
    }

    #[test]
    fn an_ended_job_counts_late_outcomes_out_of_its_bucket() {
        use SendState::*;
        // A late retry of a new index stays in the bucket; a late delivery of
        // a row left retrying leaves it.
        let stored = HashMap::from([(1, (Retry, 1))]);
        let entries = [entry(0, Retry), entry(1, Delivered)];
        let (_, moves) = apply_batch(&entries, &stored, &mut SendTally::default()).unwrap();
        assert_eq!(moves.counters(JobState::Expired), [1, 0, 0, -1, 0, 0]);
        assert_eq!(moves.counters(JobState::Cancelled), [1, 0, 0, 0, -1, 0]);
    }

    #[test]
    fn each_state_reads_its_own_rows() {
        for &state in SendState::ALL {
            let name = format!("state = '{}'", state.as_str());
            assert!(sends_in_state(state).contains(&name), "{state}");
        }
    }

    #[test]
    fn in_doubt_is_its_own_final_bucket() {
        use SendState::*;
        let stored = HashMap::from([(1, (Retry, 1))]);
        let entries = [entry(0, InDoubt), entry(1, InDoubt), entry(1, Delivered)];
        let (rows, moves) = apply_batch(&entries, &stored, &mut SendTally::default()).unwrap();
        // In doubt is final: the later delivery of index 1 is not applied.
        assert_eq!(rows.len(), 2);
        assert_eq!(moves.counters(JobState::Running), [0, 0, -1, 0, 0, 2]);
        assert_eq!(moves.counters(JobState::Cancelled), [0, 0, 0, 0, -2, 2]);
    }
}
