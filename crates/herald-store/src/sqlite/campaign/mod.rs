//! Campaign storage on SQLite: audiences, rules and tasks, jobs, segments, the
//! job send log and the sweeper (the contract is [`crate::CampaignStore`]).
//!
//! SQLite has one writer, and every write here runs in one `BEGIN IMMEDIATE`
//! transaction on it, so reading a row and then writing it inside a method
//! cannot race another writer (another handle on the same file waits for the
//! lock). The guarded `UPDATE ... WHERE state = ...` forms are kept anyway, so
//! the SQL reads the same as on PostgreSQL.
//!
//! Hot paths (claim, record, finish, sweep) each read through an index that
//! holds only the rows they look for: pending segments by priority, running
//! segments by lease, unhandled partial segments, running jobs, and the send
//! log's `retry` rows. The send log itself is `WITHOUT ROWID`, clustered on
//! `(job_id, idx)`, so a segment's rows are one contiguous range and the table
//! carries no second copy of the key.

/// A rule joined with its current version (`r` and `v`), as `RuleRecord` reads it.
macro_rules! rule_select {
    () => {
        concat!(
            "SELECT ",
            $crate::model::rule_cols!(),
            " FROM rules AS r JOIN rule_versions AS v ON v.rule_id = r.id AND v.version = r.version"
        )
    };
}

mod audiences;
mod failed;
mod follow_ups;
mod jobs;
mod rules;
mod sweep;

use async_trait::async_trait;
use herald_core::TenantId;
use herald_core::campaign::SegmentState;
use rusqlite::{Connection, Row, Transaction, TransactionBehavior};

use super::SqliteStore;
use super::error::Ctx;
use crate::campaign::*;
use crate::{Result, refusals};

/// Records `by` as the actor of row `id` with one of the statements of
/// `campaign::sql::actors`, inside the caller's transaction.
fn stamp(
    tx: &Transaction<'_>,
    statement: crate::shared_sql::Statement,
    id: i64,
    by: &Option<Actor>,
) -> Result<()> {
    let (key_id, key_name) = Actor::columns(by);
    tx.prepare_cached(statement.sqlite)
        .ctx("preparing actor")?
        .execute(rusqlite::params![id, key_id, key_name])
        .ctx("recording who changed it")?;
    Ok(())
}

/// Runs `f` in one `BEGIN IMMEDIATE` transaction and commits if it succeeds.
fn in_tx<R>(
    conn: &mut Connection,
    what: &str,
    f: impl FnOnce(&Transaction<'_>) -> Result<R>,
) -> Result<R> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx(what)?;
    let r = f(&tx)?;
    tx.commit().ctx(what)?;
    Ok(r)
}

/// Runs several reads on one snapshot.
fn in_read_tx<R>(
    conn: &mut Connection,
    what: &str,
    f: impl FnOnce(&Transaction<'_>) -> Result<R>,
) -> Result<R> {
    let tx = conn.transaction().ctx(what)?;
    let r = f(&tx)?;
    tx.commit().ctx(what)?;
    Ok(r)
}

/// Reads every row `stmt` gives for `params` with `read`.
fn query_all<T, P: rusqlite::Params>(
    conn: &Connection,
    sql: &str,
    params: P,
    what: &str,
    read: impl Fn(&Row<'_>) -> Result<T>,
) -> Result<Vec<T>> {
    let mut stmt = conn.prepare_cached(sql).ctx(what)?;
    let mut rows = stmt.query(params).ctx(what)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().ctx(what)? {
        out.push(read(row)?);
    }
    Ok(out)
}

/// The first row `stmt` gives, read with `read`.
fn query_opt<T, P: rusqlite::Params>(
    conn: &Connection,
    sql: &str,
    params: P,
    what: &str,
    read: impl Fn(&Row<'_>) -> Result<T>,
) -> Result<Option<T>> {
    let mut stmt = conn.prepare_cached(sql).ctx(what)?;
    let mut rows = stmt.query(params).ctx(what)?;
    match rows.next().ctx(what)? {
        Some(row) => read(row).map(Some),
        None => Ok(None),
    }
}

#[async_trait]
impl CampaignStore for SqliteStore {
    async fn create_audience(
        &self,
        tenant: TenantId,
        name: Option<String>,
        now: i64,
    ) -> Result<i64> {
        self.write(move |c| audiences::create_audience(c, tenant, name, now))
            .await
    }

    async fn append_audience(&self, id: i64, start: u64, recipients: &[String]) -> Result<()> {
        let (chunk_no, data) = audiences::chunk_data(start, recipients)?;
        let count = recipients.len();
        self.write(move |c| audiences::append_audience(c, id, chunk_no, count, data))
            .await
    }

    async fn seal_audience(&self, id: i64, size: u64, now: i64) -> Result<Option<AudienceRecord>> {
        self.write(move |c| audiences::seal_audience(c, id, size, now))
            .await
    }

    async fn drop_audience(&self, id: i64) -> Result<bool> {
        self.write(move |c| audiences::drop_audience(c, id)).await
    }

    async fn delete_job(&self, id: i64) -> Result<crate::JobDeletion> {
        self.delete_job_in_batches(id).await
    }

    async fn get_audience(&self, id: i64) -> Result<Option<AudienceRecord>> {
        self.read(move |c| audiences::get_audience(c, id)).await
    }

    async fn list_audiences(
        &self,
        tenant: TenantId,
        after: Option<i64>,
        limit: usize,
    ) -> Result<Vec<AudienceRecord>> {
        self.read(move |c| audiences::list_audiences(c, tenant, after, limit))
            .await
    }

    async fn audience_slice(&self, id: i64, start: u64, end: u64) -> Result<Vec<String>> {
        self.read(move |c| audiences::audience_slice(c, id, start, end))
            .await
    }

    async fn create_rule_by(
        &self,
        spec: RuleSpec,
        now: i64,
        by: Option<Actor>,
    ) -> Result<RuleRecord> {
        self.write(move |c| rules::create_rule(c, spec, now, by))
            .await
    }

    async fn update_rule_by(
        &self,
        id: i64,
        spec: RuleSpec,
        now: i64,
        by: Option<Actor>,
    ) -> Result<Option<RuleRecord>> {
        self.write(move |c| rules::update_rule(c, id, spec, now, by))
            .await
    }

    async fn set_rule_enabled_by(
        &self,
        id: i64,
        enabled: bool,
        now: i64,
        by: Option<Actor>,
    ) -> Result<Option<RuleRecord>> {
        self.write(move |c| rules::set_rule_enabled(c, id, enabled, now, by))
            .await
    }

    async fn get_rule(&self, id: i64) -> Result<Option<RuleRecord>> {
        self.read(move |c| rules::get_rule(c, id)).await
    }

    async fn list_rules(
        &self,
        tenant: TenantId,
        after: Option<i64>,
        limit: usize,
    ) -> Result<Vec<RuleRecord>> {
        self.read(move |c| rules::list_rules(c, tenant, after, limit))
            .await
    }

    async fn rule_versions(
        &self,
        id: i64,
        after: Option<i32>,
        limit: usize,
    ) -> Result<Vec<RuleVersion>> {
        self.read(move |c| rules::rule_versions(c, id, after, limit))
            .await
    }

    async fn rule_tasks(&self, rule_id: i64, limit: usize) -> Result<Vec<TaskRecord>> {
        self.read(move |c| rules::rule_tasks(c, rule_id, limit))
            .await
    }

    async fn plan_candidates(
        &self,
        after: Option<i64>,
        limit: usize,
    ) -> Result<Vec<PlanCandidate>> {
        self.read(move |c| rules::plan_candidates(c, after, limit))
            .await
    }

    async fn plan_task(
        &self,
        rule_id: i64,
        version: i32,
        planned_at: i64,
        now: i64,
    ) -> Result<Option<TaskRecord>> {
        self.write(move |c| rules::plan_task(c, rule_id, version, planned_at, now))
            .await
    }

    async fn finish_rule(&self, rule_id: i64, now: i64) -> Result<bool> {
        self.write(move |c| rules::finish_rule(c, rule_id, now))
            .await
    }

    async fn due_tasks(&self, now: i64, limit: usize) -> Result<Vec<TaskRecord>> {
        self.read(move |c| rules::due_tasks(c, now, limit)).await
    }

    async fn start_task(&self, task_id: i64, now: i64, segment_size: u64) -> Result<TaskStart> {
        self.write(move |c| rules::start_task(c, task_id, now, segment_size))
            .await
    }

    async fn get_task(&self, id: i64) -> Result<Option<TaskRecord>> {
        self.read(move |c| rules::get_task(c, id)).await
    }

    async fn cancel_task(
        &self,
        task_id: i64,
        now: i64,
        by: Option<Actor>,
    ) -> Result<Option<TaskCancel>> {
        self.write(move |c| rules::cancel_task(c, task_id, now, by))
            .await
    }

    async fn create_job(&self, spec: JobSpec, now: i64) -> Result<Option<JobRecord>> {
        self.write(move |c| jobs::create_job(c, spec, now)).await
    }

    async fn get_job(&self, id: i64) -> Result<Option<JobRecord>> {
        self.read(move |c| jobs::get_job(c, id)).await
    }

    async fn get_follow_up(&self, job_id: i64) -> Result<Option<FollowUpRecord>> {
        self.read(move |c| follow_ups::get(c, job_id)).await
    }

    async fn due_follow_ups(&self, now: i64, limit: usize) -> Result<Vec<FollowUpRecord>> {
        self.read(move |c| follow_ups::due(c, now, limit)).await
    }

    async fn unread_sends(
        &self,
        job_id: i64,
        from: u64,
        limit: usize,
    ) -> Result<Vec<(u64, String)>> {
        self.read(move |c| follow_ups::unread(c, job_id, from, limit))
            .await
    }

    async fn step_sends(
        &self,
        job_id: i64,
        from: u64,
        limit: usize,
        on: &[herald_core::route::StepOn],
    ) -> Result<Vec<(u64, String)>> {
        let on = on.to_vec();
        self.read(move |c| follow_ups::step_sends(c, job_id, from, limit, &on))
            .await
    }

    async fn skip_follow_up(&self, job_id: i64, now: i64) -> Result<bool> {
        self.write(move |c| follow_ups::skip(c, job_id, now)).await
    }

    async fn jobs_following(
        &self,
        job_id: i64,
        after: i64,
        limit: usize,
    ) -> Result<Vec<JobRecord>> {
        self.read(move |c| jobs::jobs_following(c, job_id, after, limit))
            .await
    }

    async fn list_jobs_where(
        &self,
        tenant: TenantId,
        filter: JobFilter,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<JobRecord>> {
        self.read(move |c| jobs::list_jobs(c, tenant, filter, before, limit))
            .await
    }

    async fn segment_counts(&self, job_id: i64) -> Result<Vec<(SegmentState, u64)>> {
        self.read(move |c| jobs::segment_counts(c, job_id)).await
    }

    async fn job_segments(
        &self,
        job_id: i64,
        after: Option<i64>,
        limit: usize,
    ) -> Result<Vec<SegmentRecord>> {
        self.read(move |c| jobs::job_segments(c, job_id, after, limit))
            .await
    }

    async fn cancel_job_by(
        &self,
        id: i64,
        now: i64,
        by: Option<Actor>,
    ) -> Result<Option<JobRecord>> {
        self.write(move |c| jobs::cancel_job(c, id, now, by)).await
    }

    async fn retry_sends_by(
        &self,
        job_id: i64,
        which: Resend,
        now: i64,
        by: Option<Actor>,
    ) -> Result<Option<FailedRetry>> {
        self.write(move |c| failed::retry_sends(c, job_id, which, now, by))
            .await
    }

    async fn job_failures(&self, job_id: i64, limit: usize) -> Result<FailureGroups> {
        self.read(move |c| failed::job_failures(c, job_id, limit))
            .await
    }

    async fn claim_segment_ahead(
        &self,
        owner: &str,
        now: i64,
        lease_ms: i64,
        mark_ahead: u64,
    ) -> Result<Option<ClaimedSegment>> {
        let owner = owner.to_string();
        self.write(move |c| jobs::claim_segment(c, owner, now, lease_ms, mark_ahead))
            .await
    }

    async fn recipient_index(&self, job_id: i64, recipient: &str) -> Result<Option<u64>> {
        let recipient = recipient.to_owned();
        self.read(move |c| jobs::recipient_index(c, job_id, &recipient))
            .await
    }

    async fn job_sends(&self, job_id: i64, start: u64, end: u64) -> Result<Vec<SendRecord>> {
        self.read(move |c| jobs::job_sends(c, job_id, start, end))
            .await
    }

    async fn job_sends_in_state(
        &self,
        job_id: i64,
        state: herald_core::campaign::SendState,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<SendRecord>> {
        self.read(move |c| jobs::job_sends_in_state(c, job_id, state, after, limit))
            .await
    }

    async fn record_many(
        &self,
        writes: Vec<SegmentWrite>,
        now: i64,
        lease_ms: i64,
    ) -> Result<Vec<LeaseCheck>> {
        for w in &writes {
            refusals::expired_entry(&w.entries)?;
        }
        self.write(move |c| jobs::record_many(c, &writes, now, lease_ms))
            .await
    }

    async fn finish_segment(&self, claim: &SegmentClaim, now: i64) -> Result<LeaseCheck> {
        let claim = claim.clone();
        self.write(move |c| jobs::finish_segment(c, &claim, now))
            .await
    }

    async fn sweep(&self, now: i64, opts: SweepOptions) -> Result<SweepReport> {
        self.write(move |c| sweep::sweep(c, now, opts)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite::testing::{migrated, plan};

    /// Every hot statement reads through the index meant for it: no table scan,
    /// no sort. (`SCAN ... USING INDEX` is a walk of a partial index in order,
    /// e.g. the claim reading pending segments by priority.)
    #[test]
    fn hot_paths_use_their_indexes() {
        let conn = migrated();
        let cases: &[(&str, &[&str])] = &[
            (
                jobs::NEXT_CLAIMABLE,
                &["USING COVERING INDEX segments_claim"],
            ),
            (
                jobs::SEGMENTS_AFTER,
                &["USING INDEX segments_job (job_id=? AND rowid>?)"],
            ),
            (
                jobs::SEGMENT_COUNTS,
                &["USING COVERING INDEX segments_job_state (job_id=?)"],
            ),
            (
                jobs::HAS_LIVE_SEGMENT,
                &["USING COVERING INDEX segments_job_state (job_id=? AND state=?)"],
            ),
            (
                jobs::END_LIVE_SEGMENTS,
                &["USING INDEX segments_job_state (job_id=? AND state=?)"],
            ),
            (
                crate::campaign::sql::jobs::SENDS.sqlite,
                &["USING PRIMARY KEY (job_id=? AND idx>? AND idx<?)"],
            ),
            (
                jobs::SEND_STATE,
                &["USING PRIMARY KEY (job_id=? AND idx=?)"],
            ),
            (
                jobs::RETRY_SEND,
                &["USING PRIMARY KEY (job_id=? AND idx=?)"],
            ),
            (
                jobs::ANY_RETRY,
                &["USING COVERING INDEX job_sends_retry (job_id=? AND idx>? AND idx<?)"],
            ),
            (
                sweep::FIRST_RETRY,
                &["USING COVERING INDEX job_sends_retry (job_id=? AND idx>? AND idx<?)"],
            ),
            (
                sweep::FAIL_RETRIES,
                &["USING INDEX job_sends_retry (job_id=? AND idx>? AND idx<?)"],
            ),
            (
                sweep::EXPIRE_RETRIES,
                &["USING INDEX job_sends_retry (job_id=?)"],
            ),
            (
                sweep::LEASES_EXPIRED,
                &["USING INDEX segments_lease (lease_until<?)"],
            ),
            (sweep::UNHANDLED_PARTIAL, &["USING INDEX segments_partial"]),
            (
                sweep::JOBS_PAST_DEADLINE,
                &["USING INDEX jobs_running (deadline_at<?)"],
            ),
            (
                sweep::JOBS_IDLE,
                &[
                    "jobs USING INDEX jobs_running",
                    "USING COVERING INDEX segments_job_state (job_id=? AND state=?)",
                ],
            ),
            (
                crate::campaign::sql::rules::DUE_TASKS.sqlite,
                &["USING INDEX tasks_due (planned_at<?)"],
            ),
            (
                rules::RULES_AFTER,
                &["USING INDEX rules_tenant (tenant_id=? AND id>?)"],
            ),
            (
                jobs::JOBS_BEFORE,
                &["USING INDEX jobs_tenant (tenant_id=? AND id<?)"],
            ),
            (
                jobs::JOBS_IN_CATEGORY,
                &["USING INDEX jobs_category (tenant_id=? AND category=? AND id<?)"],
            ),
            (
                jobs::JOBS_NAMED,
                &["USING INDEX jobs_tenant (tenant_id=? AND id<?)"],
            ),
            (
                crate::campaign::sql::rules::RULE_TASKS.sqlite,
                &["USING INDEX tasks_rule (rule_id=?)"],
            ),
            (rules::VERSIONS, &["(rule_id=? AND version>?)"]),
            (
                rules::HAS_PENDING_CURRENT,
                &["USING COVERING INDEX tasks_rule_state (rule_id=? AND state=? AND version=?)"],
            ),
            (
                rules::ACTIVE_TASKS,
                &["USING COVERING INDEX tasks_rule_state (rule_id=? AND state=?)"],
            ),
            (rules::LAST_PLANNED, &["(rule_id=? AND version=?)"]),
            (
                crate::campaign::sql::audiences::CHUNKS.sqlite,
                &["(audience_id=? AND chunk_no>? AND chunk_no<?)"],
            ),
            (
                crate::campaign::sql::audiences::LIST.sqlite,
                &["USING INDEX audiences_tenant (tenant_id=? AND id>?)"],
            ),
            (
                crate::campaign::sql::audiences::REFERRED.sqlite,
                &[
                    "USING COVERING INDEX jobs_audience",
                    "USING COVERING INDEX rule_versions_audience",
                ],
            ),
        ];
        for (sql, wanted) in cases {
            let p = plan(&conn, sql);
            // Covering or not is the planner's choice.
            let loose = p.replace("COVERING INDEX", "INDEX");
            for w in *wanted {
                assert!(
                    loose.contains(&w.replace("COVERING INDEX", "INDEX")),
                    "{sql}\nwanted {w:?} in:\n{p}"
                );
            }
            // A SCAN may only walk a partial index that holds just the rows wanted.
            assert!(
                p.lines().all(|l| !l.contains("SCAN")
                    || l.contains("INDEX")
                    || l.contains("CONSTANT ROW")),
                "table scan: {sql}:\n{p}"
            );
            assert!(!p.contains("TEMP B-TREE"), "must not sort: {sql}:\n{p}");
        }
    }
}
