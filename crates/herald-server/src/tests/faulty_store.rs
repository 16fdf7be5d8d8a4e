//! A store that fails on demand: every call goes to an in-memory SQLite
//! store unless the test has said that call, or every call, fails with a
//! given error. Shows how each store error reaches the client.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use herald_core::campaign::SegmentState;
use herald_core::{TenantId, TimerId};
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
        StoreError::Full { message } => StoreError::Full {
            message: message.clone(),
        },
        other => StoreError::Internal(other.to_string()),
    }
}

/// Implements `$trait` for [`FaultyStore`]: each call is checked, then passed on.
macro_rules! faulty {
    ($trait:ident: $(fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)*) => {
        #[async_trait]
        impl $trait for FaultyStore {
            $(
                async fn $name(&self, $($arg: $ty),*) -> $ret {
                    self.check(stringify!($name))?;
                    self.inner.$name($($arg),*).await
                }
            )*
        }
    };
}

faulty! { Store:
    fn init_shards(wanted: u16) -> Result<u16>;
    fn get_meta(key: &str) -> Result<Option<String>>;
    fn put_meta(key: &str, value: &str) -> Result<()>;
    fn purge(kind: RetentionKind, cutoff: i64, limit: usize) -> Result<u64>;
    fn maintain_partitions(cutoffs: herald_store::PartitionCutoffs) -> Result<herald_store::PartitionChanges>;
    fn report(query: ReportQuery) -> Result<Vec<ReportRow>>;
}

faulty! { TimerStore:
    fn apply(ops: Vec<WriteOp>) -> Result<Vec<WriteResult>>;
    fn get_timer(id: TimerId) -> Result<Option<TimerRecord>>;
    fn load_due(shards: &herald_core::ShardSet, after: Option<DueCursor>, until: i64, limit: usize) -> Result<Vec<DueEntry>>;
    fn fetch_pending(ids: &[TimerId]) -> Result<Vec<TimerRecord>>;
    fn complete(batch: Vec<Completion>) -> Result<Vec<Applied>>;
    fn mark_firing(marks: Vec<FiringMark>) -> Result<Vec<Applied>>;
    fn unmark_firing(ids: Vec<TimerId>, at: i64) -> Result<u64>;
    fn resolve_in_doubt(fences: &[Fence], skip: &[String], at: i64) -> Result<InDoubtResolved>;
    fn deliveries_for(timer_id: TimerId) -> Result<Vec<DeliveryRecord>>;
    fn pending_digests(probes: &[MergeProbe]) -> Result<Vec<TimerRecord>>;
    fn search_timers(tenant: TenantId, filter: &herald_store::TimerFilter, after: Option<herald_store::DueCursor>, limit: usize, order: herald_store::SortOrder) -> Result<Vec<TimerRecord>>;
    fn dead_letters(tenant: TenantId, channel: Option<&str>) -> Result<herald_store::DeadLetters>;
    fn count_by_tenant_state() -> Result<Vec<(TenantId, herald_core::TimerState, u64)>>;
    fn scan_by_tenant_state() -> Result<Vec<(TenantId, herald_core::TimerState, u64)>>;
    fn fold_timer_counts() -> Result<u64>;
    fn unfiled_since() -> Result<Option<i64>>;
    fn due_counts(from: i64, until: i64, bucket_ms: i64, max_rows: u64) -> Result<herald_store::DueCounts>;
}

faulty! { DirectoryStore:
    fn get_subscribers(tenant: TenantId, user_ids: &[String]) -> Result<Vec<herald_store::SubscriberRecord>>;
    fn list_subscribers(tenant: TenantId, after: Option<&str>, limit: usize) -> Result<Vec<herald_store::SubscriberRecord>>;
}

faulty! { ReminderStore:
    fn get_subjects(tenant: TenantId, ids: &[String]) -> Result<Vec<SubjectRecord>>;
    fn list_subjects(tenant: TenantId, after: Option<&str>, limit: usize, cap: u64) -> Result<Vec<herald_store::SubjectSummary>>;
    fn subject_summary(tenant: TenantId, subject_id: &str, cap: u64) -> Result<Option<herald_store::SubjectSummary>>;
    fn subject_outcomes(tenant: TenantId, subject_id: &str, cap: u64, errors: usize, failed: usize) -> Result<herald_store::SubjectOutcomes>;
    fn subject_failures(tenant: TenantId, subject_id: &str, from: i64, until: i64, cap: u64) -> Result<u64>;
    fn user_reminders(tenant: TenantId, user_id: &str, limit: usize) -> Result<Vec<ReminderTimer>>;
    fn pending_reminders(probes: &[MergeProbe]) -> Result<Vec<TimerRecord>>;
    fn reminder_batches(scope: &BatchScope) -> Result<Vec<ReminderBatch>>;
    fn batch_due(tenant: TenantId, subject_id: &str, bit: u8, due_at: i64, after: Option<TimerId>, limit: usize) -> Result<Vec<DueEntry>>;
}

faulty! { ProviderStore:
    fn get_delivery(id: i64) -> Result<Option<DeliveryRecord>>;
    fn record_final_status(channel: &str, provider_msgid: &str, status: &str, at: i64) -> Result<u64>;
    fn mark_delivery_recalled(id: i64, at: i64) -> Result<bool>;
    fn record_receipt(on: herald_store::ReceiptOn, event: herald_store::ReceiptEvent, at: i64) -> Result<bool>;
    fn read_at_step(timer_id: i64, step: u32) -> Result<bool>;
    fn job_receipt_counts(job_id: i64) -> Result<herald_store::ReceiptCounts>;
    fn job_messages(job_id: i64, limit: usize) -> Result<Vec<herald_store::JobMessage>>;
    fn mark_job_message_recalled(job_id: i64, msgid: &str, at: i64) -> Result<u64>;
    fn get_channel_token(key: &str) -> Result<Option<ChannelToken>>;
    fn put_channel_token(key: &str, token: &ChannelToken) -> Result<()>;
    fn expire_channel_token(key: &str, token: &str, now: i64) -> Result<bool>;
    fn pause_channel(channel: &str, pause: &ChannelPause, now: i64) -> Result<()>;
    fn resume_channel(channel: &str) -> Result<bool>;
    fn channel_pauses() -> Result<Vec<(String, ChannelPause)>>;
}

faulty! { ClusterStore:
    fn heartbeat(node: &Holder, now: i64, ttl_ms: i64) -> Result<Vec<NodeInfo>>;
    fn leave(node: &Holder) -> Result<()>;
    fn shard_leases() -> Result<Vec<ShardLease>>;
    fn acquire_shards(node: &Holder, shards: &[u16], now: i64, lease_ms: i64) -> Result<Vec<ShardLease>>;
    fn renew_shards(node: &Holder, held: &[Fence], now: i64, lease_ms: i64) -> Result<Vec<ShardLease>>;
    fn release_shards(node: &Holder, shards: &[u16]) -> Result<()>;
    fn acquire_lease(name: &str, holder: &Holder, now: i64, ttl_ms: i64) -> Result<Option<NamedLease>>;
    fn release_lease(name: &str, holder: &Holder) -> Result<()>;
    fn subscribe() -> Result<Option<tokio::sync::mpsc::Receiver<Vec<DueEntry>>>>;
}

faulty! { CampaignStore:
    fn create_audience(tenant: TenantId, name: Option<String>, now: i64) -> Result<i64>;
    fn append_audience(id: i64, start: u64, recipients: &[String]) -> Result<()>;
    fn seal_audience(id: i64, size: u64, now: i64) -> Result<Option<AudienceRecord>>;
    fn drop_audience(id: i64) -> Result<bool>;
    fn delete_job(id: i64) -> Result<JobDeletion>;
    fn get_audience(id: i64) -> Result<Option<AudienceRecord>>;
    fn list_audiences(tenant: TenantId, after: Option<i64>, limit: usize) -> Result<Vec<AudienceRecord>>;
    fn audience_slice(id: i64, start: u64, end: u64) -> Result<Vec<String>>;
    fn create_rule(spec: RuleSpec, now: i64) -> Result<RuleRecord>;
    fn create_rule_by(spec: RuleSpec, now: i64, by: Option<Actor>) -> Result<RuleRecord>;
    fn update_rule(id: i64, spec: RuleSpec, now: i64) -> Result<Option<RuleRecord>>;
    fn update_rule_by(id: i64, spec: RuleSpec, now: i64, by: Option<Actor>) -> Result<Option<RuleRecord>>;
    fn set_rule_enabled(id: i64, enabled: bool, now: i64) -> Result<Option<RuleRecord>>;
    fn set_rule_enabled_by(id: i64, enabled: bool, now: i64, by: Option<Actor>) -> Result<Option<RuleRecord>>;
    fn get_rule(id: i64) -> Result<Option<RuleRecord>>;
    fn list_rules(tenant: TenantId, after: Option<i64>, limit: usize) -> Result<Vec<RuleRecord>>;
    fn rule_versions(id: i64, after: Option<i32>, limit: usize) -> Result<Vec<RuleVersion>>;
    fn rule_tasks(rule_id: i64, limit: usize) -> Result<Vec<TaskRecord>>;
    fn plan_candidates(after: Option<i64>, limit: usize) -> Result<Vec<PlanCandidate>>;
    fn plan_task(rule_id: i64, version: i32, planned_at: i64, now: i64) -> Result<Option<TaskRecord>>;
    fn finish_rule(rule_id: i64, now: i64) -> Result<bool>;
    fn due_tasks(now: i64, limit: usize) -> Result<Vec<TaskRecord>>;
    fn start_task(task_id: i64, now: i64, segment_size: u64) -> Result<TaskStart>;
    fn get_task(id: i64) -> Result<Option<TaskRecord>>;
    fn cancel_task(task_id: i64, now: i64, by: Option<Actor>) -> Result<Option<TaskCancel>>;
    fn create_job(spec: JobSpec, now: i64) -> Result<Option<JobRecord>>;
    fn get_job(id: i64) -> Result<Option<JobRecord>>;
    fn get_follow_up(job_id: i64) -> Result<Option<herald_store::FollowUpRecord>>;
    fn due_follow_ups(now: i64, limit: usize) -> Result<Vec<herald_store::FollowUpRecord>>;
    fn unread_sends(job_id: i64, from: u64, limit: usize) -> Result<Vec<(u64, String)>>;
    fn step_sends(job_id: i64, from: u64, limit: usize, on: &[herald_core::route::StepOn]) -> Result<Vec<(u64, String)>>;
    fn skip_follow_up(job_id: i64, now: i64) -> Result<bool>;
    fn jobs_following(job_id: i64, after: i64, limit: usize) -> Result<Vec<JobRecord>>;
    fn list_jobs(tenant: TenantId, before: Option<i64>, limit: usize) -> Result<Vec<JobRecord>>;
    fn list_jobs_where(tenant: TenantId, filter: JobFilter, before: Option<i64>, limit: usize) -> Result<Vec<JobRecord>>;
    fn segment_counts(job_id: i64) -> Result<Vec<(SegmentState, u64)>>;
    fn job_segments(job_id: i64, after: Option<i64>, limit: usize) -> Result<Vec<SegmentRecord>>;
    fn cancel_job(id: i64, now: i64) -> Result<Option<JobRecord>>;
    fn cancel_job_by(id: i64, now: i64, by: Option<Actor>) -> Result<Option<JobRecord>>;
    fn retry_sends(job_id: i64, which: herald_store::Resend, now: i64) -> Result<Option<FailedRetry>>;
    fn retry_sends_by(job_id: i64, which: herald_store::Resend, now: i64, by: Option<Actor>) -> Result<Option<FailedRetry>>;
    fn job_failures(job_id: i64, limit: usize) -> Result<FailureGroups>;
    fn claim_segment(owner: &str, now: i64, lease_ms: i64) -> Result<Option<ClaimedSegment>>;
    fn claim_segment_ahead(owner: &str, now: i64, lease_ms: i64, mark_ahead: u64) -> Result<Option<ClaimedSegment>>;
    fn recipient_index(job_id: i64, recipient: &str) -> Result<Option<u64>>;
    fn job_sends(job_id: i64, start: u64, end: u64) -> Result<Vec<SendRecord>>;
    fn job_sends_in_state(job_id: i64, state: herald_core::campaign::SendState, after: Option<u64>, limit: usize) -> Result<Vec<SendRecord>>;
    fn record_many(writes: Vec<herald_store::SegmentWrite>, now: i64, lease_ms: i64) -> Result<Vec<LeaseCheck>>;
    fn finish_segment(claim: &SegmentClaim, now: i64) -> Result<LeaseCheck>;
    fn sweep(now: i64, opts: SweepOptions) -> Result<SweepReport>;
}

faulty! { AccessStore:
    fn tenant_id(name: &str, create: bool) -> Result<Option<TenantId>>;
    fn tenants() -> Result<Vec<(TenantId, String)>>;
    fn create_api_key(key: NewApiKey) -> Result<ApiKeyRecord>;
    fn get_api_key(id: i64) -> Result<Option<ApiKeyRecord>>;
    fn list_api_keys(tenant: Option<TenantId>, after: Option<i64>, limit: usize) -> Result<Vec<ApiKeyRecord>>;
    fn revoke_api_key(id: i64, at: i64) -> Result<Option<ApiKeyRecord>>;
    fn append_audit(entries: Vec<NewAuditEntry>) -> Result<()>;
    fn list_audit(filter: herald_store::AuditFilter, after_id: Option<i64>, limit: usize) -> Result<Vec<AuditEntry>>;
}

faulty! { CapStore:
    fn take_caps(takes: Vec<herald_store::CapTake>, at: i64) -> Result<Vec<herald_store::CapVerdict>>;
}

faulty! { GrantStore:
    fn record_grants(rec: herald_store::GrantRecording) -> Result<herald_store::GrantsRecorded>;
    fn list_grants(tenant: herald_core::TenantId, user_id: &str) -> Result<Vec<herald_store::GrantRecord>>;
    fn settle_grants(settles: Vec<herald_store::GrantSettle>, at: i64) -> Result<()>;
}

faulty! { CalendarStore:
    fn put_calendar(cal: &herald_store::CalendarRecord) -> Result<herald_store::CalendarRecord>;
    fn get_calendar(tenant: TenantId, name: &str) -> Result<Option<herald_store::CalendarRecord>>;
    fn list_calendars(tenant: TenantId) -> Result<Vec<herald_store::CalendarRecord>>;
}

faulty! { TemplateStore:
    fn put_template(new: &herald_store::NewTemplateVersion, how: herald_store::TemplateWrite) -> Result<herald_store::TemplateRecord>;
    fn template_census() -> Result<herald_store::TemplateCensus>;
    fn all_templates() -> Result<Vec<herald_store::TemplateRecord>>;
}
