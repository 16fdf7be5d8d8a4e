//! Campaign storage (stub until implemented).
use super::SqliteStore;
use crate::campaign::*;
use crate::{Result, StoreError};
use async_trait::async_trait;
use herald_core::campaign::SegmentState;

#[async_trait]
impl CampaignStore for SqliteStore {
    async fn create_audience(&self, _name: Option<String>, _now: i64) -> Result<i64> {
        Err(StoreError::Backend(
            "create_audience: not implemented".into(),
        ))
    }
    async fn append_audience(&self, _id: i64, _start: u64, _recipients: &[String]) -> Result<()> {
        Err(StoreError::Backend(
            "append_audience: not implemented".into(),
        ))
    }
    async fn seal_audience(
        &self,
        _id: i64,
        _size: u64,
        _now: i64,
    ) -> Result<Option<AudienceRecord>> {
        Err(StoreError::Backend("seal_audience: not implemented".into()))
    }
    async fn drop_audience(&self, _id: i64) -> Result<bool> {
        Err(StoreError::Backend("drop_audience: not implemented".into()))
    }
    async fn get_audience(&self, _id: i64) -> Result<Option<AudienceRecord>> {
        Err(StoreError::Backend("get_audience: not implemented".into()))
    }
    async fn audience_slice(&self, _id: i64, _start: u64, _end: u64) -> Result<Vec<String>> {
        Err(StoreError::Backend(
            "audience_slice: not implemented".into(),
        ))
    }
    async fn create_rule(&self, _spec: RuleSpec, _now: i64) -> Result<RuleRecord> {
        Err(StoreError::Backend("create_rule: not implemented".into()))
    }
    async fn update_rule(
        &self,
        _id: i64,
        _spec: RuleSpec,
        _now: i64,
    ) -> Result<Option<RuleRecord>> {
        Err(StoreError::Backend("update_rule: not implemented".into()))
    }
    async fn set_rule_enabled(
        &self,
        _id: i64,
        _enabled: bool,
        _now: i64,
    ) -> Result<Option<RuleRecord>> {
        Err(StoreError::Backend(
            "set_rule_enabled: not implemented".into(),
        ))
    }
    async fn get_rule(&self, _id: i64) -> Result<Option<RuleRecord>> {
        Err(StoreError::Backend("get_rule: not implemented".into()))
    }
    async fn list_rules(&self, _after: Option<i64>, _limit: usize) -> Result<Vec<RuleRecord>> {
        Err(StoreError::Backend("list_rules: not implemented".into()))
    }
    async fn rule_versions(&self, _id: i64) -> Result<Vec<RuleVersion>> {
        Err(StoreError::Backend("rule_versions: not implemented".into()))
    }
    async fn rule_tasks(&self, _rule_id: i64, _limit: usize) -> Result<Vec<TaskRecord>> {
        Err(StoreError::Backend("rule_tasks: not implemented".into()))
    }
    async fn plan_candidates(
        &self,
        _after: Option<i64>,
        _limit: usize,
    ) -> Result<Vec<PlanCandidate>> {
        Err(StoreError::Backend(
            "plan_candidates: not implemented".into(),
        ))
    }
    async fn plan_task(
        &self,
        _rule_id: i64,
        _version: i32,
        _planned_at: i64,
        _now: i64,
    ) -> Result<Option<TaskRecord>> {
        Err(StoreError::Backend("plan_task: not implemented".into()))
    }
    async fn finish_rule(&self, _rule_id: i64, _now: i64) -> Result<bool> {
        Err(StoreError::Backend("finish_rule: not implemented".into()))
    }
    async fn due_tasks(&self, _now: i64, _limit: usize) -> Result<Vec<TaskRecord>> {
        Err(StoreError::Backend("due_tasks: not implemented".into()))
    }
    async fn start_task(&self, _task_id: i64, _now: i64, _segment_size: u64) -> Result<TaskStart> {
        Err(StoreError::Backend("start_task: not implemented".into()))
    }
    async fn get_task(&self, _id: i64) -> Result<Option<TaskRecord>> {
        Err(StoreError::Backend("get_task: not implemented".into()))
    }
    async fn create_job(&self, _spec: JobSpec, _now: i64) -> Result<Option<JobRecord>> {
        Err(StoreError::Backend("create_job: not implemented".into()))
    }
    async fn get_job(&self, _id: i64) -> Result<Option<JobRecord>> {
        Err(StoreError::Backend("get_job: not implemented".into()))
    }
    async fn list_jobs(&self, _before: Option<i64>, _limit: usize) -> Result<Vec<JobRecord>> {
        Err(StoreError::Backend("list_jobs: not implemented".into()))
    }
    async fn segment_counts(&self, _job_id: i64) -> Result<Vec<(SegmentState, u64)>> {
        Err(StoreError::Backend(
            "segment_counts: not implemented".into(),
        ))
    }
    async fn job_segments(
        &self,
        _job_id: i64,
        _after: Option<i64>,
        _limit: usize,
    ) -> Result<Vec<SegmentRecord>> {
        Err(StoreError::Backend("job_segments: not implemented".into()))
    }
    async fn cancel_job(&self, _id: i64, _now: i64) -> Result<Option<JobRecord>> {
        Err(StoreError::Backend("cancel_job: not implemented".into()))
    }
    async fn claim_segment(
        &self,
        _owner: &str,
        _now: i64,
        _lease_ms: i64,
    ) -> Result<Option<ClaimedSegment>> {
        Err(StoreError::Backend("claim_segment: not implemented".into()))
    }
    async fn job_sends(&self, _job_id: i64, _start: u64, _end: u64) -> Result<Vec<SendRecord>> {
        Err(StoreError::Backend("job_sends: not implemented".into()))
    }
    async fn record_sends(
        &self,
        _claim: &SegmentClaim,
        _cursor: u64,
        _entries: Vec<SendEntry>,
        _now: i64,
        _lease_ms: i64,
    ) -> Result<LeaseCheck> {
        Err(StoreError::Backend("record_sends: not implemented".into()))
    }
    async fn finish_segment(&self, _claim: &SegmentClaim, _now: i64) -> Result<LeaseCheck> {
        Err(StoreError::Backend(
            "finish_segment: not implemented".into(),
        ))
    }
    async fn sweep(&self, _now: i64, _opts: SweepOptions) -> Result<SweepReport> {
        Err(StoreError::Backend("sweep: not implemented".into()))
    }
}
