//! Column lists and row readers of the campaign tables, and the conversions
//! between the trait's unsigned numbers and PostgreSQL's signed integers.

use herald_core::campaign::{JobState, RuleStatus, SegmentState, SendState, TaskState};
use tokio_postgres::Row;

use crate::postgres::timers::{col, narrow};
use crate::{
    AudienceRecord, JobRecord, JobTotals, Result, RuleRecord, RuleSpec, RuleVersion, SegmentRecord,
    SendRecord, StoreError, TaskRecord,
};

/// The columns [`read_job`] expects, in order.
macro_rules! job_cols {
    () => {
        "id, audience_id, channel, message, segment_size, deadline_at, priority, task_id, \
         state, total, delivered, failed, retrying, expired, cancelled, created_at, \
         started_at, finished_at"
    };
}
/// The columns [`read_segment`] expects, in order.
macro_rules! segment_cols {
    () => {
        "id, job_id, start_idx, end_idx, cursor_idx, state, owner, lease_until, epoch, \
         parent_id, attempt, not_before, created_at"
    };
}
/// The columns [`read_task`] expects, in order.
macro_rules! task_cols {
    () => {
        "id, rule_id, version, planned_at, state, job_id, recipients, detail, created_at, \
         started_at, finished_at"
    };
}
/// The columns [`read_version`] expects, in order (of `rule_versions`).
macro_rules! version_cols {
    () => {
        "rule_id, version, name, schedule, audience, audience_id, channel, message, \
         deadline_secs, priority, created_at"
    };
}
/// The columns [`read_rule`] expects, in order: `rules AS r` joined with its
/// current `rule_versions AS v`.
macro_rules! rule_cols {
    () => {
        "r.id, r.status, r.created_at, r.updated_at, v.rule_id, v.version, v.name, \
         v.schedule, v.audience, v.audience_id, v.channel, v.message, v.deadline_secs, \
         v.priority, v.created_at"
    };
}
pub(super) use {job_cols, rule_cols, segment_cols, task_cols, version_cols};

/// A caller error: the request breaks the contract, nothing was written.
pub(super) fn refused(what: &str, why: impl std::fmt::Display) -> StoreError {
    StoreError::refused(what, why)
}

/// A position or count from the trait as a `BIGINT`.
pub(super) fn to_db(v: u64, what: &str) -> Result<i64> {
    i64::try_from(v).map_err(|_| refused(what, format!("{v} does not fit a BIGINT")))
}

/// An upper bound from the trait as a `BIGINT`: anything past the largest is
/// the same bound.
pub(super) fn bound_to_db(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// A page size as a `LIMIT`.
pub(super) fn limit_to_db(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

fn unsigned(v: i64, what: &str, id: i64) -> Result<u64> {
    narrow(v, what, id)
}

fn opt_unsigned(v: Option<i64>, what: &str, id: i64) -> Result<Option<u64>> {
    v.map(|v| unsigned(v, what, id)).transpose()
}

fn parsed<T>(parse: impl Fn(&str) -> Option<T>, text: &str, what: &str, id: i64) -> Result<T> {
    parse(text).ok_or_else(|| StoreError::Corrupt(format!("{what} {text:?} (row {id})")))
}

pub(super) fn job_state(text: &str, id: i64) -> Result<JobState> {
    parsed(JobState::parse, text, "jobs.state", id)
}

pub(super) fn segment_state(text: &str, id: i64) -> Result<SegmentState> {
    parsed(SegmentState::parse, text, "segments.state", id)
}

pub(super) fn send_state(text: &str, id: i64) -> Result<SendState> {
    parsed(SendState::parse, text, "job_sends.state", id)
}

fn priority(v: i16, what: &str, id: i64) -> Result<u8> {
    narrow(i64::from(v), what, id)
}

pub(super) fn read_audience(row: &Row) -> Result<AudienceRecord> {
    let id: i64 = col(row, 0, "audiences.id")?;
    Ok(AudienceRecord {
        id,
        name: col(row, 1, "audiences.name")?,
        size: opt_unsigned(col(row, 2, "audiences.size")?, "audiences.size", id)?,
        created_at: col(row, 3, "audiences.created_at")?,
    })
}

/// Reads a row selected with `job_cols!()`.
pub(super) fn read_job(row: &Row) -> Result<JobRecord> {
    let id: i64 = col(row, 0, "jobs.id")?;
    let n = |i: usize, what: &str| -> Result<u64> { unsigned(col(row, i, what)?, what, id) };
    Ok(JobRecord {
        id,
        audience_id: col(row, 1, "jobs.audience_id")?,
        channel: col(row, 2, "jobs.channel")?,
        message: col(row, 3, "jobs.message")?,
        segment_size: n(4, "jobs.segment_size")?,
        deadline_at: col(row, 5, "jobs.deadline_at")?,
        priority: priority(col(row, 6, "jobs.priority")?, "jobs.priority", id)?,
        task_id: col(row, 7, "jobs.task_id")?,
        state: job_state(col(row, 8, "jobs.state")?, id)?,
        totals: JobTotals {
            total: n(9, "jobs.total")?,
            delivered: n(10, "jobs.delivered")?,
            failed: n(11, "jobs.failed")?,
            retrying: n(12, "jobs.retrying")?,
            expired: n(13, "jobs.expired")?,
            cancelled: n(14, "jobs.cancelled")?,
        },
        created_at: col(row, 15, "jobs.created_at")?,
        started_at: col(row, 16, "jobs.started_at")?,
        finished_at: col(row, 17, "jobs.finished_at")?,
    })
}

pub(super) fn read_segment(row: &Row) -> Result<SegmentRecord> {
    let id: i64 = col(row, 0, "segments.id")?;
    let n = |i: usize, what: &str| -> Result<u64> { unsigned(col(row, i, what)?, what, id) };
    let attempt: i32 = col(row, 10, "segments.attempt")?;
    Ok(SegmentRecord {
        id,
        job_id: col(row, 1, "segments.job_id")?,
        start: n(2, "segments.start_idx")?,
        end: n(3, "segments.end_idx")?,
        cursor: n(4, "segments.cursor_idx")?,
        state: segment_state(col(row, 5, "segments.state")?, id)?,
        owner: col(row, 6, "segments.owner")?,
        lease_until: col(row, 7, "segments.lease_until")?,
        epoch: col(row, 8, "segments.epoch")?,
        parent_id: col(row, 9, "segments.parent_id")?,
        attempt: narrow(i64::from(attempt), "segments.attempt", id)?,
        not_before: col(row, 11, "segments.not_before")?,
        created_at: col(row, 12, "segments.created_at")?,
    })
}

pub(super) fn read_task(row: &Row) -> Result<TaskRecord> {
    let id: i64 = col(row, 0, "tasks.id")?;
    Ok(TaskRecord {
        id,
        rule_id: col(row, 1, "tasks.rule_id")?,
        version: col(row, 2, "tasks.version")?,
        planned_at: col(row, 3, "tasks.planned_at")?,
        state: parsed(
            TaskState::parse,
            col(row, 4, "tasks.state")?,
            "tasks.state",
            id,
        )?,
        job_id: col(row, 5, "tasks.job_id")?,
        recipients: opt_unsigned(col(row, 6, "tasks.recipients")?, "tasks.recipients", id)?,
        detail: col(row, 7, "tasks.detail")?,
        created_at: col(row, 8, "tasks.created_at")?,
        started_at: col(row, 9, "tasks.started_at")?,
        finished_at: col(row, 10, "tasks.finished_at")?,
    })
}

/// Reads `version_cols!()` starting at column `at`.
fn read_version_at(row: &Row, at: usize) -> Result<RuleVersion> {
    let rule_id: i64 = col(row, at, "rule_versions.rule_id")?;
    Ok(RuleVersion {
        rule_id,
        version: col(row, at + 1, "rule_versions.version")?,
        spec: RuleSpec {
            name: col(row, at + 2, "rule_versions.name")?,
            schedule: col(row, at + 3, "rule_versions.schedule")?,
            audience: col(row, at + 4, "rule_versions.audience")?,
            audience_id: col(row, at + 5, "rule_versions.audience_id")?,
            channel: col(row, at + 6, "rule_versions.channel")?,
            message: col(row, at + 7, "rule_versions.message")?,
            deadline_secs: col(row, at + 8, "rule_versions.deadline_secs")?,
            priority: priority(
                col(row, at + 9, "rule_versions.priority")?,
                "rule_versions.priority",
                rule_id,
            )?,
        },
        created_at: col(row, at + 10, "rule_versions.created_at")?,
    })
}

pub(super) fn read_version(row: &Row) -> Result<RuleVersion> {
    read_version_at(row, 0)
}

/// Reads `rule_cols!()`; the columns after them are the caller's.
pub(super) fn read_rule(row: &Row) -> Result<RuleRecord> {
    let id: i64 = col(row, 0, "rules.id")?;
    Ok(RuleRecord {
        id,
        status: parsed(
            RuleStatus::parse,
            col(row, 1, "rules.status")?,
            "rules.status",
            id,
        )?,
        created_at: col(row, 2, "rules.created_at")?,
        updated_at: col(row, 3, "rules.updated_at")?,
        current: read_version_at(row, 4)?,
    })
}

/// Number of columns of `rule_cols!()`.
pub(super) const RULE_COLS: usize = 15;

pub(super) fn read_send(row: &Row) -> Result<SendRecord> {
    let job_id: i64 = col(row, 0, "job_sends.job_id")?;
    let attempts: i32 = col(row, 4, "job_sends.attempts")?;
    Ok(SendRecord {
        job_id,
        index: unsigned(col(row, 1, "job_sends.idx")?, "job_sends.idx", job_id)?,
        recipient: col(row, 2, "job_sends.recipient")?,
        state: send_state(col(row, 3, "job_sends.state")?, job_id)?,
        attempts: narrow(i64::from(attempts), "job_sends.attempts", job_id)?,
        provider_msgid: col(row, 5, "job_sends.msgid")?,
        error: col(row, 6, "job_sends.error")?,
        updated_at: col(row, 7, "job_sends.updated_at")?,
        final_status: col(row, 8, "job_sends.final_status")?,
        final_at: col(row, 9, "job_sends.final_at")?,
    })
}
