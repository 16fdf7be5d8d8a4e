//! Campaigns on PostgreSQL: audiences, versioned rules and their tasks, jobs,
//! segments claimed under a lease, the job send log and the sweeper.
//!
//! * `audiences` — recipients in 4,096-recipient `bytea` chunks.
//! * `rules` — rules, versions, tasks, and `start_task`.
//! * `jobs` — job creation, claims, `record_sends`, `finish_segment`,
//!   cancelling; its module doc gives the lock order every writer follows.
//! * `sweep` — the single-runner duties (safe when two overlap).
//!
//! Several nodes run all of this against one database at once. Claims use
//! `FOR UPDATE SKIP LOCKED` on the pending-segment index ordered by
//! `(priority DESC, id)`, so concurrent claimers take different segments
//! without waiting; everything that changes a job's counters holds the job row,
//! so the counters stay exactly what the send log says. Batches travel as
//! arrays expanded with `unnest`, and dependent statements of one transaction
//! are pipelined where the result of one is not needed to build the next.
//! Write transactions that hit a deadlock or serialization failure are retried
//! whole (`PgStore::retrying`).
//!
//! Statements are shaped so that their plans stay cheap however stale the
//! statistics were when a connection cached them (a campaign grows a table from
//! nothing to millions of rows faster than autovacuum re-analyzes it); `plans`
//! checks the cached plan of every hot statement over a new database and over a
//! large one.

mod audiences;
mod failed;
mod follow_ups;
mod jobs;
#[cfg(test)]
mod plans;
mod rules;
mod sweep;

use async_trait::async_trait;
use herald_core::TenantId;
use herald_core::campaign::SegmentState;

use super::PgStore;
use crate::Result;
use crate::campaign::*;
use crate::postgres::Ctx;

/// Records `by` as the actor of row `id` with one of the statements of
/// `campaign::sql::actors`, inside the caller's transaction.
async fn stamp(
    tx: &deadpool_postgres::Transaction<'_>,
    statement: crate::shared_sql::Statement,
    id: i64,
    by: &Option<Actor>,
) -> Result<()> {
    let (key_id, key_name) = Actor::columns(by);
    let stmt = tx
        .prepare_cached(statement.pg)
        .await
        .ctx("preparing actor")?;
    tx.execute(&stmt, &[&id, &key_id, &key_name])
        .await
        .ctx("recording who changed it")?;
    Ok(())
}

use crate::model::{bound_to_db, limit_to_db, to_db};

#[async_trait]
impl CampaignStore for PgStore {
    async fn create_audience(
        &self,
        tenant: TenantId,
        name: Option<String>,
        now: i64,
    ) -> Result<i64> {
        self.within("create_audience", async move {
            audiences::create_audience(self, tenant, name.as_deref(), now).await
        })
        .await
    }

    async fn append_audience(&self, id: i64, start: u64, recipients: &[String]) -> Result<()> {
        self.within("append_audience", async move {
            let (chunk_no, count, data) = audiences::chunk_of(start, recipients)?;
            self.retrying("append_audience", || {
                audiences::append_audience(self, id, chunk_no, count, &data)
            })
            .await
        })
        .await
    }

    async fn seal_audience(&self, id: i64, size: u64, now: i64) -> Result<Option<AudienceRecord>> {
        self.within("seal_audience", async move {
            self.retrying("seal_audience", || {
                audiences::seal_audience(self, id, size, now)
            })
            .await
        })
        .await
    }

    async fn delete_job(&self, id: i64) -> Result<crate::JobDeletion> {
        self.delete_job_in_batches(id).await
    }

    async fn drop_audience(&self, id: i64) -> Result<bool> {
        self.within("drop_audience", async move {
            self.retrying("drop_audience", || audiences::drop_audience(self, id))
                .await
        })
        .await
    }

    async fn get_audience(&self, id: i64) -> Result<Option<AudienceRecord>> {
        self.within("get_audience", async move {
            audiences::get_audience(self, id).await
        })
        .await
    }

    async fn list_audiences(
        &self,
        tenant: TenantId,
        after: Option<i64>,
        limit: usize,
    ) -> Result<Vec<AudienceRecord>> {
        self.within("list_audiences", async move {
            if limit == 0 {
                return Ok(Vec::new());
            }
            let after = after.unwrap_or(i64::MIN);
            audiences::list_audiences(self, tenant, after, limit_to_db(limit)).await
        })
        .await
    }

    async fn audience_slice(&self, id: i64, start: u64, end: u64) -> Result<Vec<String>> {
        self.within("audience_slice", async move {
            audiences::audience_slice(self, id, start, end).await
        })
        .await
    }

    async fn create_rule_by(
        &self,
        spec: RuleSpec,
        now: i64,
        by: Option<Actor>,
    ) -> Result<RuleRecord> {
        self.within("create_rule", async move {
            self.retrying("create_rule", || rules::create_rule(self, &spec, now, &by))
                .await
        })
        .await
    }

    async fn update_rule_by(
        &self,
        id: i64,
        spec: RuleSpec,
        now: i64,
        by: Option<Actor>,
    ) -> Result<Option<RuleRecord>> {
        self.within("update_rule", async move {
            self.retrying("update_rule", || {
                rules::update_rule(self, id, &spec, now, &by)
            })
            .await
        })
        .await
    }

    async fn set_rule_enabled_by(
        &self,
        id: i64,
        enabled: bool,
        now: i64,
        by: Option<Actor>,
    ) -> Result<Option<RuleRecord>> {
        self.within("set_rule_enabled", async move {
            self.retrying("set_rule_enabled", || {
                rules::set_rule_enabled(self, id, enabled, now, &by)
            })
            .await
        })
        .await
    }

    async fn get_rule(&self, id: i64) -> Result<Option<RuleRecord>> {
        self.within("get_rule", async move { rules::get_rule(self, id).await })
            .await
    }

    async fn list_rules(
        &self,
        tenant: TenantId,
        after: Option<i64>,
        limit: usize,
    ) -> Result<Vec<RuleRecord>> {
        self.within("list_rules", async move {
            if limit == 0 {
                return Ok(Vec::new());
            }
            rules::list_rules(self, tenant, after.unwrap_or(i64::MIN), limit_to_db(limit)).await
        })
        .await
    }

    async fn rule_versions(
        &self,
        id: i64,
        after: Option<i32>,
        limit: usize,
    ) -> Result<Vec<RuleVersion>> {
        self.within("rule_versions", async move {
            if limit == 0 {
                return Ok(Vec::new());
            }
            let after = after.unwrap_or(i32::MIN);
            rules::rule_versions(self, id, after, limit_to_db(limit)).await
        })
        .await
    }

    async fn rule_tasks(&self, rule_id: i64, limit: usize) -> Result<Vec<TaskRecord>> {
        self.within("rule_tasks", async move {
            if limit == 0 {
                return Ok(Vec::new());
            }
            rules::rule_tasks(self, rule_id, limit_to_db(limit)).await
        })
        .await
    }

    async fn plan_candidates(
        &self,
        after: Option<i64>,
        limit: usize,
    ) -> Result<Vec<PlanCandidate>> {
        self.within("plan_candidates", async move {
            if limit == 0 {
                return Ok(Vec::new());
            }
            rules::plan_candidates(self, after.unwrap_or(i64::MIN), limit_to_db(limit)).await
        })
        .await
    }

    async fn plan_task(
        &self,
        rule_id: i64,
        version: i32,
        planned_at: i64,
        now: i64,
    ) -> Result<Option<TaskRecord>> {
        self.within("plan_task", async move {
            self.retrying("plan_task", || {
                rules::plan_task(self, rule_id, version, planned_at, now)
            })
            .await
        })
        .await
    }

    async fn finish_rule(&self, rule_id: i64, now: i64) -> Result<bool> {
        self.within("finish_rule", async move {
            self.retrying("finish_rule", || rules::finish_rule(self, rule_id, now))
                .await
        })
        .await
    }

    async fn due_tasks(&self, now: i64, limit: usize) -> Result<Vec<TaskRecord>> {
        self.within("due_tasks", async move {
            if limit == 0 {
                return Ok(Vec::new());
            }
            rules::due_tasks(self, now, limit_to_db(limit)).await
        })
        .await
    }

    async fn start_task(&self, task_id: i64, now: i64, segment_size: u64) -> Result<TaskStart> {
        self.within("start_task", async move {
            self.retrying("start_task", || {
                rules::start_task(self, task_id, now, segment_size)
            })
            .await
        })
        .await
    }

    async fn get_task(&self, id: i64) -> Result<Option<TaskRecord>> {
        self.within("get_task", async move { rules::get_task(self, id).await })
            .await
    }
    async fn cancel_task(
        &self,
        task_id: i64,
        now: i64,
        by: Option<Actor>,
    ) -> Result<Option<TaskCancel>> {
        self.within("cancel_task", async move {
            self.retrying("cancel_task", || {
                rules::cancel_task(self, task_id, now, &by)
            })
            .await
        })
        .await
    }

    async fn create_job(&self, spec: JobSpec, now: i64) -> Result<Option<JobRecord>> {
        self.within("create_job", async move {
            self.retrying("create_job", || jobs::create_job(self, &spec, now))
                .await
        })
        .await
    }

    async fn get_job(&self, id: i64) -> Result<Option<JobRecord>> {
        self.within("get_job", async move { jobs::get_job(self, id).await })
            .await
    }

    async fn get_follow_up(&self, job_id: i64) -> Result<Option<FollowUpRecord>> {
        self.within("get_follow_up", follow_ups::get(self, job_id))
            .await
    }

    async fn due_follow_ups(&self, now: i64, limit: usize) -> Result<Vec<FollowUpRecord>> {
        self.within("due_follow_ups", follow_ups::due(self, now, limit))
            .await
    }

    async fn unread_sends(
        &self,
        job_id: i64,
        from: u64,
        limit: usize,
    ) -> Result<Vec<(u64, String)>> {
        self.within(
            "unread_sends",
            follow_ups::unread(self, job_id, from, limit),
        )
        .await
    }

    async fn step_sends(
        &self,
        job_id: i64,
        from: u64,
        limit: usize,
        on: &[herald_core::route::StepOn],
    ) -> Result<Vec<(u64, String)>> {
        self.within(
            "step_sends",
            follow_ups::step_sends(self, job_id, from, limit, on),
        )
        .await
    }

    async fn skip_follow_up(&self, job_id: i64, now: i64) -> Result<bool> {
        self.within("skip_follow_up", follow_ups::skip(self, job_id, now))
            .await
    }

    async fn jobs_following(
        &self,
        job_id: i64,
        after: i64,
        limit: usize,
    ) -> Result<Vec<JobRecord>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.within(
            "jobs_following",
            jobs::jobs_following(self, job_id, after, limit),
        )
        .await
    }

    async fn list_jobs_where(
        &self,
        tenant: TenantId,
        filter: JobFilter,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<JobRecord>> {
        self.within("list_jobs", async move {
            if limit == 0 {
                return Ok(Vec::new());
            }
            let before = before.unwrap_or(i64::MAX);
            jobs::list_jobs(self, tenant, filter, before, limit_to_db(limit)).await
        })
        .await
    }

    async fn segment_counts(&self, job_id: i64) -> Result<Vec<(SegmentState, u64)>> {
        self.within("segment_counts", async move {
            jobs::segment_counts(self, job_id).await
        })
        .await
    }

    async fn job_segments(
        &self,
        job_id: i64,
        after: Option<i64>,
        limit: usize,
    ) -> Result<Vec<SegmentRecord>> {
        self.within("job_segments", async move {
            if limit == 0 {
                return Ok(Vec::new());
            }
            jobs::job_segments(self, job_id, after.unwrap_or(i64::MIN), limit_to_db(limit)).await
        })
        .await
    }

    async fn cancel_job_by(
        &self,
        id: i64,
        now: i64,
        by: Option<Actor>,
    ) -> Result<Option<JobRecord>> {
        self.within("cancel_job", async move {
            self.retrying("cancel_job", || jobs::cancel_job(self, id, now, &by))
                .await
        })
        .await
    }

    async fn retry_sends_by(
        &self,
        job_id: i64,
        which: Resend,
        now: i64,
        by: Option<Actor>,
    ) -> Result<Option<FailedRetry>> {
        self.within("retry_sends", async move {
            self.retrying("retry_sends", || {
                failed::retry_sends(self, job_id, which, now, &by)
            })
            .await
        })
        .await
    }

    async fn job_failures(&self, job_id: i64, limit: usize) -> Result<FailureGroups> {
        self.within("job_failures", async move {
            failed::job_failures(self, job_id, limit).await
        })
        .await
    }

    async fn claim_segment_ahead(
        &self,
        owner: &str,
        now: i64,
        lease_ms: i64,
        mark_ahead: u64,
    ) -> Result<Option<ClaimedSegment>> {
        self.within("claim_segment", async move {
            self.retrying("claim_segment", || {
                jobs::claim_segment(self, owner, now, lease_ms, mark_ahead)
            })
            .await
        })
        .await
    }

    async fn recipient_index(&self, job_id: i64, recipient: &str) -> Result<Option<u64>> {
        self.within("recipient_index", async move {
            jobs::recipient_index(self, job_id, recipient).await
        })
        .await
    }

    async fn job_sends(&self, job_id: i64, start: u64, end: u64) -> Result<Vec<SendRecord>> {
        self.within("job_sends", async move {
            let start = to_db(start, "start")?;
            let end = bound_to_db(end);
            if start >= end {
                return Ok(Vec::new());
            }
            jobs::job_sends(self, job_id, start, end).await
        })
        .await
    }

    async fn job_sends_in_state(
        &self,
        job_id: i64,
        state: herald_core::campaign::SendState,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<SendRecord>> {
        self.within("job_sends_in_state", async move {
            let after = after.map_or(Ok(-1), |a| to_db(a, "after"))?;
            jobs::job_sends_in_state(self, job_id, state, after, limit_to_db(limit)).await
        })
        .await
    }

    async fn record_many(
        &self,
        writes: Vec<SegmentWrite>,
        now: i64,
        lease_ms: i64,
    ) -> Result<Vec<LeaseCheck>> {
        self.within("record_sends", async move {
            self.retrying("record_sends", || {
                jobs::record_many(self, &writes, now, lease_ms)
            })
            .await
        })
        .await
    }

    async fn finish_segment(&self, claim: &SegmentClaim, now: i64) -> Result<LeaseCheck> {
        self.within("finish_segment", async move {
            self.retrying("finish_segment", || jobs::finish_segment(self, claim, now))
                .await
        })
        .await
    }

    async fn sweep(&self, now: i64, opts: SweepOptions) -> Result<SweepReport> {
        self.within("sweep", async move { sweep::sweep(self, now, opts).await })
            .await
    }
}
