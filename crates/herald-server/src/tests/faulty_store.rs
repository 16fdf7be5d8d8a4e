//! A store that fails on demand: every call goes to an in-memory SQLite
//! store unless the test has said that call, or every call, fails with a
//! given error. Shows how each store error reaches the client.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use herald_core::TimerId;
use herald_core::campaign::SegmentState;
use herald_store::*;

pub struct FaultyStore {
    inner: Arc<dyn Store>,
    /// Fails every call.
    all: Mutex<Option<StoreError>>,
    /// Fails the calls named.
    calls: Mutex<HashMap<&'static str, StoreError>>,
}

impl FaultyStore {
    pub fn new(inner: Arc<dyn Store>) -> Self {
        Self {
            inner,
            all: Mutex::new(None),
            calls: Mutex::new(HashMap::new()),
        }
    }

    /// Every call fails with `e` from now on (`None`: none does).
    pub fn fail_all(&self, e: Option<StoreError>) {
        *lock(&self.all) = e;
    }

    /// Calls of `method` fail with `e` from now on.
    pub fn fail(&self, method: &'static str, e: StoreError) {
        lock(&self.calls).insert(method, e);
    }

    fn check(&self, method: &'static str) -> Result<()> {
        if let Some(e) = &*lock(&self.all) {
            return Err(copy(e));
        }
        match lock(&self.calls).get(method) {
            Some(e) => Err(copy(e)),
            None => Ok(()),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// `StoreError` is not `Clone`; the variants a test injects are rebuilt.
fn copy(e: &StoreError) -> StoreError {
    match e {
        StoreError::NotFound { what } => StoreError::NotFound { what: what.clone() },
        StoreError::Conflict { what, why } => StoreError::Conflict {
            what: what.clone(),
            why: why.clone(),
        },
        StoreError::Refused { what, why } => StoreError::Refused {
            what: what.clone(),
            why: why.clone(),
        },
        StoreError::Unavailable { code, message } => StoreError::Unavailable {
            code: code.clone(),
            message: message.clone(),
        },
        other => StoreError::Internal(other.to_string()),
    }
}

#[async_trait]
impl Store for FaultyStore {
    async fn init_shards(&self, wanted: u16) -> Result<u16> {
        self.check("init_shards")?;
        self.inner.init_shards(wanted).await
    }

    async fn apply(&self, ops: Vec<WriteOp>) -> Result<Vec<WriteResult>> {
        self.check("apply")?;
        self.inner.apply(ops).await
    }

    async fn get_timer(&self, id: TimerId) -> Result<Option<TimerRecord>> {
        self.check("get_timer")?;
        self.inner.get_timer(id).await
    }

    async fn load_due(
        &self,
        shards: &herald_core::ShardSet,
        after: Option<DueCursor>,
        until: i64,
        limit: usize,
    ) -> Result<Vec<DueEntry>> {
        self.check("load_due")?;
        self.inner.load_due(shards, after, until, limit).await
    }

    async fn fetch_pending(&self, ids: &[TimerId]) -> Result<Vec<TimerRecord>> {
        self.check("fetch_pending")?;
        self.inner.fetch_pending(ids).await
    }

    async fn complete(&self, batch: Vec<Completion>) -> Result<Vec<Applied>> {
        self.check("complete")?;
        self.inner.complete(batch).await
    }

    async fn deliveries_for(&self, timer_id: TimerId) -> Result<Vec<DeliveryRecord>> {
        self.check("deliveries_for")?;
        self.inner.deliveries_for(timer_id).await
    }

    async fn get_delivery(&self, id: i64) -> Result<Option<DeliveryRecord>> {
        self.check("get_delivery")?;
        self.inner.get_delivery(id).await
    }

    async fn record_final_status(
        &self,
        channel: &str,
        provider_msgid: &str,
        status: &str,
        at: i64,
    ) -> Result<u64> {
        self.check("record_final_status")?;
        self.inner
            .record_final_status(channel, provider_msgid, status, at)
            .await
    }

    async fn mark_delivery_recalled(&self, id: i64, at: i64) -> Result<bool> {
        self.check("mark_delivery_recalled")?;
        self.inner.mark_delivery_recalled(id, at).await
    }

    async fn get_channel_token(&self, key: &str) -> Result<Option<ChannelToken>> {
        self.check("get_channel_token")?;
        self.inner.get_channel_token(key).await
    }

    async fn put_channel_token(&self, key: &str, token: &ChannelToken) -> Result<()> {
        self.check("put_channel_token")?;
        self.inner.put_channel_token(key, token).await
    }

    async fn expire_channel_token(&self, key: &str, token: &str, now: i64) -> Result<bool> {
        self.check("expire_channel_token")?;
        self.inner.expire_channel_token(key, token, now).await
    }

    async fn get_subjects(&self, ids: &[String]) -> Result<Vec<SubjectRecord>> {
        self.check("get_subjects")?;
        self.inner.get_subjects(ids).await
    }

    async fn user_reminders(&self, user_id: &str, limit: usize) -> Result<Vec<ReminderTimer>> {
        self.check("user_reminders")?;
        self.inner.user_reminders(user_id, limit).await
    }

    async fn pending_reminders(&self, probes: &[MergeProbe]) -> Result<Vec<TimerRecord>> {
        self.check("pending_reminders")?;
        self.inner.pending_reminders(probes).await
    }

    async fn count_by_state(&self) -> Result<Vec<(herald_core::TimerState, u64)>> {
        self.check("count_by_state")?;
        self.inner.count_by_state().await
    }

    async fn heartbeat(&self, node: &str, now: i64, ttl_ms: i64) -> Result<Vec<NodeInfo>> {
        self.check("heartbeat")?;
        self.inner.heartbeat(node, now, ttl_ms).await
    }

    async fn leave(&self, node: &str) -> Result<()> {
        self.check("leave")?;
        self.inner.leave(node).await
    }

    async fn shard_leases(&self) -> Result<Vec<ShardLease>> {
        self.check("shard_leases")?;
        self.inner.shard_leases().await
    }

    async fn acquire_shards(
        &self,
        node: &str,
        shards: &[u16],
        now: i64,
        lease_ms: i64,
    ) -> Result<Vec<ShardLease>> {
        self.check("acquire_shards")?;
        self.inner.acquire_shards(node, shards, now, lease_ms).await
    }

    async fn renew_shards(
        &self,
        node: &str,
        held: &[Fence],
        now: i64,
        lease_ms: i64,
    ) -> Result<Vec<ShardLease>> {
        self.check("renew_shards")?;
        self.inner.renew_shards(node, held, now, lease_ms).await
    }

    async fn release_shards(&self, node: &str, shards: &[u16]) -> Result<()> {
        self.check("release_shards")?;
        self.inner.release_shards(node, shards).await
    }

    async fn acquire_lease(
        &self,
        name: &str,
        holder: &str,
        now: i64,
        ttl_ms: i64,
    ) -> Result<Option<NamedLease>> {
        self.check("acquire_lease")?;
        self.inner.acquire_lease(name, holder, now, ttl_ms).await
    }

    async fn release_lease(&self, name: &str, holder: &str) -> Result<()> {
        self.check("release_lease")?;
        self.inner.release_lease(name, holder).await
    }

    async fn subscribe(&self) -> Result<Option<tokio::sync::mpsc::Receiver<Vec<DueEntry>>>> {
        self.check("subscribe")?;
        self.inner.subscribe().await
    }
}

#[async_trait]
impl CampaignStore for FaultyStore {
    async fn create_audience(&self, name: Option<String>, now: i64) -> Result<i64> {
        self.check("create_audience")?;
        self.inner.create_audience(name, now).await
    }

    async fn append_audience(&self, id: i64, start: u64, recipients: &[String]) -> Result<()> {
        self.check("append_audience")?;
        self.inner.append_audience(id, start, recipients).await
    }

    async fn seal_audience(&self, id: i64, size: u64, now: i64) -> Result<Option<AudienceRecord>> {
        self.check("seal_audience")?;
        self.inner.seal_audience(id, size, now).await
    }

    async fn drop_audience(&self, id: i64) -> Result<bool> {
        self.check("drop_audience")?;
        self.inner.drop_audience(id).await
    }

    async fn get_audience(&self, id: i64) -> Result<Option<AudienceRecord>> {
        self.check("get_audience")?;
        self.inner.get_audience(id).await
    }

    async fn audience_slice(&self, id: i64, start: u64, end: u64) -> Result<Vec<String>> {
        self.check("audience_slice")?;
        self.inner.audience_slice(id, start, end).await
    }

    async fn create_rule(&self, spec: RuleSpec, now: i64) -> Result<RuleRecord> {
        self.check("create_rule")?;
        self.inner.create_rule(spec, now).await
    }

    async fn update_rule(&self, id: i64, spec: RuleSpec, now: i64) -> Result<Option<RuleRecord>> {
        self.check("update_rule")?;
        self.inner.update_rule(id, spec, now).await
    }

    async fn set_rule_enabled(
        &self,
        id: i64,
        enabled: bool,
        now: i64,
    ) -> Result<Option<RuleRecord>> {
        self.check("set_rule_enabled")?;
        self.inner.set_rule_enabled(id, enabled, now).await
    }

    async fn get_rule(&self, id: i64) -> Result<Option<RuleRecord>> {
        self.check("get_rule")?;
        self.inner.get_rule(id).await
    }

    async fn list_rules(&self, after: Option<i64>, limit: usize) -> Result<Vec<RuleRecord>> {
        self.check("list_rules")?;
        self.inner.list_rules(after, limit).await
    }

    async fn rule_versions(&self, id: i64) -> Result<Vec<RuleVersion>> {
        self.check("rule_versions")?;
        self.inner.rule_versions(id).await
    }

    async fn rule_tasks(&self, rule_id: i64, limit: usize) -> Result<Vec<TaskRecord>> {
        self.check("rule_tasks")?;
        self.inner.rule_tasks(rule_id, limit).await
    }

    async fn plan_candidates(
        &self,
        after: Option<i64>,
        limit: usize,
    ) -> Result<Vec<PlanCandidate>> {
        self.check("plan_candidates")?;
        self.inner.plan_candidates(after, limit).await
    }

    async fn plan_task(
        &self,
        rule_id: i64,
        version: i32,
        planned_at: i64,
        now: i64,
    ) -> Result<Option<TaskRecord>> {
        self.check("plan_task")?;
        self.inner
            .plan_task(rule_id, version, planned_at, now)
            .await
    }

    async fn finish_rule(&self, rule_id: i64, now: i64) -> Result<bool> {
        self.check("finish_rule")?;
        self.inner.finish_rule(rule_id, now).await
    }

    async fn due_tasks(&self, now: i64, limit: usize) -> Result<Vec<TaskRecord>> {
        self.check("due_tasks")?;
        self.inner.due_tasks(now, limit).await
    }

    async fn start_task(&self, task_id: i64, now: i64, segment_size: u64) -> Result<TaskStart> {
        self.check("start_task")?;
        self.inner.start_task(task_id, now, segment_size).await
    }

    async fn get_task(&self, id: i64) -> Result<Option<TaskRecord>> {
        self.check("get_task")?;
        self.inner.get_task(id).await
    }

    async fn create_job(&self, spec: JobSpec, now: i64) -> Result<Option<JobRecord>> {
        self.check("create_job")?;
        self.inner.create_job(spec, now).await
    }

    async fn get_job(&self, id: i64) -> Result<Option<JobRecord>> {
        self.check("get_job")?;
        self.inner.get_job(id).await
    }

    async fn list_jobs(&self, before: Option<i64>, limit: usize) -> Result<Vec<JobRecord>> {
        self.check("list_jobs")?;
        self.inner.list_jobs(before, limit).await
    }

    async fn segment_counts(&self, job_id: i64) -> Result<Vec<(SegmentState, u64)>> {
        self.check("segment_counts")?;
        self.inner.segment_counts(job_id).await
    }

    async fn job_segments(
        &self,
        job_id: i64,
        after: Option<i64>,
        limit: usize,
    ) -> Result<Vec<SegmentRecord>> {
        self.check("job_segments")?;
        self.inner.job_segments(job_id, after, limit).await
    }

    async fn cancel_job(&self, id: i64, now: i64) -> Result<Option<JobRecord>> {
        self.check("cancel_job")?;
        self.inner.cancel_job(id, now).await
    }

    async fn claim_segment(
        &self,
        owner: &str,
        now: i64,
        lease_ms: i64,
    ) -> Result<Option<ClaimedSegment>> {
        self.check("claim_segment")?;
        self.inner.claim_segment(owner, now, lease_ms).await
    }

    async fn job_sends(&self, job_id: i64, start: u64, end: u64) -> Result<Vec<SendRecord>> {
        self.check("job_sends")?;
        self.inner.job_sends(job_id, start, end).await
    }

    async fn record_sends(
        &self,
        claim: &SegmentClaim,
        cursor: u64,
        entries: Vec<SendEntry>,
        now: i64,
        lease_ms: i64,
    ) -> Result<LeaseCheck> {
        self.check("record_sends")?;
        self.inner
            .record_sends(claim, cursor, entries, now, lease_ms)
            .await
    }

    async fn finish_segment(&self, claim: &SegmentClaim, now: i64) -> Result<LeaseCheck> {
        self.check("finish_segment")?;
        self.inner.finish_segment(claim, now).await
    }

    async fn sweep(&self, now: i64, opts: SweepOptions) -> Result<SweepReport> {
        self.check("sweep")?;
        self.inner.sweep(now, opts).await
    }
}
