//! Retention: the kinds of rows Herald deletes once they are old, and what
//! "old" means for each. The backends' `retention` modules hold the SQL.

use serde::{Deserialize, Serialize};

/// Rows deleted per purge call when a caller has no reason to pick another
/// number: small enough that one call's transaction is short.
pub const PURGE_BATCH: usize = 1_000;

/// One kind of row retention deletes. Each is deleted by
/// [`Store::purge`](crate::Store::purge) with its own cutoff.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RetentionKind {
    /// Finished timers (done, failed, dead, cancelled, in_doubt; reminders' timers go
    /// with their subject) whose last change is older than the cutoff, with
    /// their send-log rows and receipts.
    Timers,
    /// Finished jobs (done, cancelled, expired) that ended before the
    /// cutoff and have no follow-up waiting, with their segments, send log,
    /// receipts, receipt counts and follow-up.
    Jobs,
    /// The campaign send log (and its receipts) of jobs that ended before
    /// the cutoff and have no follow-up waiting; the jobs stay.
    SendLog,
    /// Audiences created before the cutoff that no stored job and no rule
    /// version names, with their recipients.
    Audiences,
    /// Subjects whose start is before the cutoff and that no pending or
    /// firing reminder timer refers to, with their reminders and the
    /// reminders' finished timers.
    Subjects,
    /// Rule tasks that ended before the cutoff, except the last planned task
    /// of each rule version (the planner plans after it).
    Tasks,
    /// Audit log entries recorded before the cutoff.
    AuditLog,
    /// Cap, pacing and rate-key counter buckets that stopped counting
    /// before the cutoff (their keys were not taken again to prune them).
    CapCounters,
}

impl RetentionKind {
    /// Every kind, in the order a sweep takes them (children before the
    /// rows that keep others alive: jobs before audiences).
    pub const ALL: [RetentionKind; 8] = [
        RetentionKind::Timers,
        RetentionKind::SendLog,
        RetentionKind::Jobs,
        RetentionKind::Audiences,
        RetentionKind::Subjects,
        RetentionKind::Tasks,
        RetentionKind::AuditLog,
        RetentionKind::CapCounters,
    ];

    /// The kind's name in configuration, logs and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            RetentionKind::Timers => "timers",
            RetentionKind::Jobs => "jobs",
            RetentionKind::SendLog => "send_log",
            RetentionKind::Audiences => "audiences",
            RetentionKind::Subjects => "subjects",
            RetentionKind::Tasks => "tasks",
            RetentionKind::AuditLog => "audit_log",
            RetentionKind::CapCounters => "cap_counters",
        }
    }
}

impl std::fmt::Display for RetentionKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What [`CampaignStore::delete_job`](crate::CampaignStore::delete_job) did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobDeletion {
    /// The job and everything it kept are gone.
    Deleted,
    /// No such job.
    NotFound,
    /// The job is still running (or a follow-up of it is waiting).
    NotFinished,
}

/// The cutoffs [`Store::maintain_partitions`](crate::Store::maintain_partitions)
/// drops by: those of the kinds whose rows live in partitions (Unix ms, as
/// for [`Store::purge`](crate::Store::purge)); `None` where the kind is kept
/// for ever.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PartitionCutoffs {
    /// [`RetentionKind::Timers`]: the timer send log goes with its timers.
    pub timers: Option<i64>,
    /// [`RetentionKind::SendLog`]: the campaign send log.
    pub send_log: Option<i64>,
}

/// What one [`Store::maintain_partitions`](crate::Store::maintain_partitions)
/// call did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PartitionChanges {
    /// Partitions made ahead of the rows that will need them.
    pub created: u32,
    /// Partitions dropped, each with every row in it.
    pub dropped: u32,
}

/// The statements both backends run ([`crate::shared_sql::Statement`]).
pub(crate) mod sql {
    use crate::shared_sql::{Statement, statement};

    pub(crate) const DELETE_SEGMENTS: Statement = statement!(
        "DELETE FROM segments WHERE id IN \
         (SELECT id FROM segments WHERE job_id = $1 ORDER BY id LIMIT $2)"
    );
    pub(crate) const DELETE_CHUNKS: Statement = statement!(
        "DELETE FROM audience_chunks WHERE audience_id = $1 AND chunk_no IN \
         (SELECT chunk_no FROM audience_chunks WHERE audience_id = $1 ORDER BY chunk_no LIMIT $2)"
    );
    pub(crate) const DELETE_AUDIENCE: Statement = statement!("DELETE FROM audiences WHERE id = $1");
    pub(crate) const DELETE_SUBJECT: Statement =
        statement!("DELETE FROM subjects WHERE tenant_id = $1 AND subject_id = $2");
}
