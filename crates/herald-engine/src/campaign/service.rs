//! The campaign use cases the API offers: audiences, jobs and rules.
//!
//! Handlers check the request; this decides what is written, undoes what a
//! later step makes useless (an audience built from an inline `users` list is
//! dropped when the job or rule that needed it is refused), and wakes this
//! node's campaign loops so that a change is acted on at once rather than at
//! the next poll. The path a campaign takes from here is in
//! `docs/architecture.md` ("The path of a campaign", "Rules").
//!
//! Every use case acts for one tenant: what it creates is that tenant's, its
//! lists hold only that tenant's records, and another tenant's audience, job
//! or rule is [`CampaignError::NotFound`] (or an unknown audience) exactly as
//! if it did not exist.

use std::collections::HashSet;
use std::sync::Arc;

use herald_core::TenantId;
use herald_core::campaign::{JobState, RuleStatus, SegmentState, TaskState};
use herald_core::schedule::{Schedule, ScheduleSpec};
use herald_store::{
    AUDIENCE_CHUNK, Actor, AudienceRecord, FailedRetry, FailureGroups, JobDeletion, JobRecord,
    JobSpec, Resend, RuleRecord, RuleSpec, RuleVersion, SegmentRecord, SendRecord, StoreError,
    TaskCancel, TaskRecord, owned_by,
};

use super::follow_ups::recipients_audience;
use super::planner::plan_after;
use super::upload::{AudienceUpload, drop_audience};
use super::{CampaignError, Shared};
use crate::engine::Engine;

type Result<T, E = CampaignError> = std::result::Result<T, E>;

/// Tasks read to tell when a rule sends next.
const NEXT_RUN_TASKS: usize = 16;

/// The campaign use cases over the engine's store, clock and loops. Cheap to
/// clone.
#[derive(Clone)]
pub struct Campaigns {
    sh: Arc<Shared>,
}

impl Engine {
    /// The campaign use cases, wired to this engine's loops.
    pub fn campaigns(&self) -> Campaigns {
        Campaigns::new(self.inner.campaign.clone())
    }
}

/// Whom a new job sends to.
#[derive(Debug, Clone, PartialEq)]
pub enum AudienceSource {
    /// An uploaded audience, by id; it must be sealed.
    Uploaded(i64),
    /// Recipients given inline (already checked); stored as a new audience,
    /// each recipient once.
    Inline(Vec<String>),
}

/// A job to create; the request is already checked.
#[derive(Debug, Clone, PartialEq)]
pub struct NewJob {
    pub audience: AudienceSource,
    pub channel: String,
    /// The message object, as JSON text.
    pub message: String,
    /// `None` takes the configured `[jobs].segment_size`.
    pub segment_size: Option<u64>,
    pub deadline_at: Option<i64>,
    pub priority: u8,
    /// Sent after the job ends to the recipients who did not read it.
    pub follow_up: Option<herald_store::FollowUp>,
    /// The audience holds user ids routed through the subscriber directory
    /// (`herald_core::timer::Routing` as JSON); `None` for raw addresses.
    pub routing: Option<String>,
    /// The W3C `traceparent` to store with it (see `crate::trace::adopt`).
    pub traceparent: Option<String>,
    /// Its name and category.
    pub meta: herald_store::JobMeta,
}

/// A rule, or a rule's next version, to write; the request is already checked.
#[derive(Debug, Clone, PartialEq)]
pub struct NewRule {
    /// With `audience_id` set when the rule names an uploaded audience. Its
    /// `tenant` is set to the tenant the use case acts for.
    pub spec: RuleSpec,
    /// Recipients given inline, to store as an audience that then becomes
    /// `spec.audience_id`. Never given together with `spec.audience_id`.
    pub users: Option<Vec<String>>,
}

/// A rule and when it sends next.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleView {
    pub rule: RuleRecord,
    /// The pending task of the current version, or the occurrence the planner
    /// will plan next; `None` unless the rule is enabled.
    pub next_run_at: Option<i64>,
}

/// One execution of a rule and the job it started, if any.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskView {
    pub task: TaskRecord,
    pub job: Option<JobRecord>,
}

impl Campaigns {
    pub(crate) fn new(sh: Arc<Shared>) -> Self {
        Self { sh }
    }

    fn now(&self) -> i64 {
        self.sh.clock.now_ms()
    }

    /// A job may have claimable segments.
    fn wake_workers(&self) {
        self.sh.work.notify_waiters();
    }

    /// A rule or job changed: plan and sweep now.
    fn wake_planner(&self) {
        self.sh.plan.notify_waiters();
        self.sh.sweep.notify_waiters();
    }

    // ---- Audiences ----

    pub async fn get_audience(&self, tenant: TenantId, id: i64) -> Result<AudienceRecord> {
        owned_by(tenant, self.sh.store.get_audience(id).await?)
            .ok_or(CampaignError::NotFound { what: "audience" })
    }

    /// Deletes an audience with its recipients, and returns it as it was. One
    /// that a job or a rule version names stays: a finished job still reads
    /// its audience for `:retry-failed` and follow-ups, so it is kept until
    /// that job is deleted (by the API or by retention).
    pub async fn delete_audience(&self, tenant: TenantId, id: i64) -> Result<AudienceRecord> {
        // An audience never changes tenant: checked once, it stays the caller's.
        let audience = self.get_audience(tenant, id).await?;
        if self.sh.store.drop_audience(id).await? {
            tracing::info!(audience = id, "audience deleted");
            return Ok(audience);
        }
        // Not removed: in use, or removed meanwhile by another request.
        match self.sh.store.get_audience(id).await? {
            Some(_) => Err(CampaignError::AudienceInUse { id }),
            None => Err(CampaignError::NotFound { what: "audience" }),
        }
    }

    /// Starts an upload of at most `max` recipients into a new audience of
    /// `tenant`.
    pub async fn start_upload(
        &self,
        tenant: TenantId,
        name: Option<String>,
        max: u64,
    ) -> Result<AudienceUpload> {
        let id = self
            .sh
            .store
            .create_audience(tenant, name, self.now())
            .await?;
        Ok(AudienceUpload::new(
            self.sh.store.clone(),
            self.sh.clock.clone(),
            id,
            max,
        ))
    }

    /// The size of a sealed audience named by the request's `field`.
    async fn sealed_size(&self, tenant: TenantId, field: &'static str, id: i64) -> Result<u64> {
        match owned_by(tenant, self.sh.store.get_audience(id).await?) {
            None => Err(CampaignError::UnknownAudience { field, id }),
            Some(a) => a.size.ok_or(CampaignError::AudienceNotReady { field, id }),
        }
    }

    /// Stores `users` as a new sealed audience, each recipient once (the
    /// first occurrence kept), so a user listed twice gets one message. On
    /// failure nothing remains.
    async fn inline_audience(
        &self,
        tenant: TenantId,
        users: &[String],
        name: String,
    ) -> Result<i64> {
        let mut seen = HashSet::with_capacity(users.len());
        let unique: Vec<String> = users
            .iter()
            .filter(|u| seen.insert(u.as_str()))
            .cloned()
            .collect();
        let store = &self.sh.store;
        let id = store
            .create_audience(tenant, Some(name), self.now())
            .await?;
        let written: Result<Option<AudienceRecord>, StoreError> = async {
            for (n, chunk) in unique.chunks(AUDIENCE_CHUNK as usize).enumerate() {
                store
                    .append_audience(id, n as u64 * AUDIENCE_CHUNK, chunk)
                    .await?;
            }
            store
                .seal_audience(id, unique.len() as u64, self.now())
                .await
        }
        .await;
        match written {
            Ok(Some(a)) => Ok(a.id),
            Ok(None) => {
                drop_audience(&**store, id, "an inline audience").await;
                Err(CampaignError::Interrupted {
                    why: "the inline audience vanished while being written",
                })
            }
            Err(e) => {
                drop_audience(&**store, id, "an inline audience").await;
                Err(e.into())
            }
        }
    }

    /// Drops the inline audience of a job or rule that was refused.
    async fn drop_inline(&self, id: Option<i64>) {
        if let Some(id) = id {
            drop_audience(&*self.sh.store, id, "a refused job or rule").await;
        }
    }

    // ---- Jobs ----

    /// Creates a job of `tenant`; sending starts at once.
    pub async fn create_job(&self, tenant: TenantId, job: NewJob) -> Result<JobRecord> {
        let (audience_id, inline) = match &job.audience {
            AudienceSource::Uploaded(id) => {
                self.sealed_size(tenant, "audience_id", *id).await?;
                (*id, None)
            }
            AudienceSource::Inline(users) => {
                let id = self
                    .inline_audience(tenant, users, "users of a job".into())
                    .await?;
                (id, Some(id))
            }
        };
        let spec = JobSpec {
            tenant,
            audience_id,
            channel: job.channel,
            message: job.message,
            segment_size: job
                .segment_size
                .unwrap_or(self.sh.cfg.get().segment_size)
                .max(1),
            deadline_at: job.deadline_at,
            priority: job.priority,
            task_id: None,
            follow_up: job.follow_up,
            follows: None,
            resends: None,
            routing: job.routing,
            traceparent: job.traceparent,
            meta: job.meta,
        };
        let created = match self.sh.store.create_job(spec, self.now()).await {
            Ok(Some(j)) => j,
            Ok(None) => {
                self.drop_inline(inline).await;
                return Err(CampaignError::AudienceUnusable {
                    field: "audience_id",
                    id: audience_id,
                });
            }
            Err(e) => {
                self.drop_inline(inline).await;
                return Err(e.into());
            }
        };
        self.wake_workers();
        Ok(created)
    }

    pub async fn get_job(&self, tenant: TenantId, id: i64) -> Result<JobRecord> {
        owned_by(tenant, self.sh.store.get_job(id).await?)
            .ok_or(CampaignError::NotFound { what: "job" })
    }

    /// Deletes a finished job (done, cancelled or expired, with no follow-up
    /// waiting) with its segments and send log, and returns it as it was.
    /// Its audience stays (see [`Campaigns::delete_audience`]).
    pub async fn delete_job(&self, tenant: TenantId, id: i64) -> Result<JobRecord> {
        let job = self.get_job(tenant, id).await?;
        match self.sh.store.delete_job(id).await? {
            JobDeletion::Deleted => {
                tracing::info!(job = id, "job deleted");
                Ok(job)
            }
            JobDeletion::NotFound => Err(CampaignError::NotFound { what: "job" }),
            JobDeletion::NotFinished => Err(CampaignError::JobNotFinished { id }),
        }
    }

    /// Cancels a job: its pending and running segments end `cancelled`. A job
    /// already ended is returned as it is.
    pub async fn cancel_job(
        &self,
        tenant: TenantId,
        id: i64,
        by: Option<Actor>,
    ) -> Result<JobRecord> {
        // A job never changes tenant: checked once, it stays the caller's.
        self.get_job(tenant, id).await?;
        let job = self
            .sh
            .store
            .cancel_job_by(id, self.now(), by)
            .await?
            .ok_or(CampaignError::NotFound { what: "job" })?;
        self.wake_planner();
        Ok(job)
    }

    /// Sends a job's failed (or in-doubt, by `which`) recipients again (a new
    /// attempt each); a finished job runs again. Returns the job afterwards
    /// and how many were retried.
    pub async fn retry_sends(
        &self,
        tenant: TenantId,
        id: i64,
        which: Resend,
        by: Option<Actor>,
    ) -> Result<(JobRecord, u64)> {
        self.get_job(tenant, id).await?;
        match self
            .sh
            .store
            .retry_sends_by(id, which, self.now(), by)
            .await?
            .ok_or(CampaignError::NotFound { what: "job" })?
        {
            FailedRetry::Retried { job, retried } => {
                if retried > 0 {
                    tracing::info!(job = id, retried, which = ?which, "sending a job's recipients again");
                    self.wake_workers();
                }
                Ok((job, retried))
            }
            FailedRetry::NotRetryable(job) => Err(CampaignError::NotRetryable { state: job.state }),
        }
    }

    /// Resends job `id` (`done` or `expired`) to the recipients it delivered
    /// to that sent no `read` receipt: a new job, started now on the same
    /// channel and routing, of `message` or else the job's own (its template,
    /// if it used one), made by `by`, that [`JobRecord::follows`] job `id`.
    /// Refused while a job that follows `id` (its follow-up, an earlier
    /// resend) is running, so that a repeated call does not send
    /// twice at once.
    pub async fn resend_unread(
        &self,
        tenant: TenantId,
        id: i64,
        message: Option<String>,
        by: Option<Actor>,
    ) -> Result<JobRecord> {
        let job = self.get_job(tenant, id).await?;
        if !matches!(job.state, JobState::Done | JobState::Expired) {
            return Err(CampaignError::JobNotEnded { state: job.state });
        }
        if let Some(running) = self.sending_follower(id).await? {
            return Err(CampaignError::ResendRunning { job: Some(running) });
        }
        let name = format!("resend to the unread of job {id}");
        let Some((audience, size)) = recipients_audience(&self.sh, &job, name, None).await? else {
            return Err(CampaignError::NobodyUnread { id });
        };
        // A new message is in the channel's shape: the job's template, whose
        // data the stored message was, no longer applies.
        let (message, routing) = match message {
            Some(m) => {
                let mut r = herald_core::timer::Routing::parse(job.routing.as_deref());
                r.template = None;
                (m, r.stored())
            }
            None => (job.message.clone(), job.routing.clone()),
        };
        let spec = JobSpec {
            tenant,
            audience_id: audience,
            channel: job.channel.clone(),
            message,
            segment_size: job.segment_size,
            deadline_at: None,
            priority: job.priority,
            task_id: None,
            follow_up: None,
            follows: None,
            resends: Some(id),
            routing,
            traceparent: job.traceparent.clone(),
            meta: herald_store::JobMeta {
                name: job.meta.name.clone(),
                category: job.meta.category.clone(),
                created_by: by,
                changed_by: None,
            },
        };
        match self.sh.store.create_job(spec, self.now()).await {
            Ok(Some(created)) => {
                tracing::info!(
                    job = id,
                    resend_job = created.id,
                    recipients = size,
                    "resending a job to its unread"
                );
                self.wake_workers();
                Ok(created)
            }
            Ok(None) => {
                drop_audience(&*self.sh.store, audience, "a refused resend").await;
                Err(CampaignError::ResendRunning { job: None })
            }
            Err(e) => {
                drop_audience(&*self.sh.store, audience, "a failed resend").await;
                Err(e.into())
            }
        }
    }

    /// A running job that follows job `id`, if any.
    async fn sending_follower(&self, id: i64) -> Result<Option<i64>> {
        const PAGE: usize = 100;
        let mut after = 0;
        loop {
            let page = self.sh.store.jobs_following(id, after, PAGE).await?;
            if let Some(j) = page.iter().find(|j| !j.state.is_final()) {
                return Ok(Some(j.id));
            }
            match page.last() {
                Some(last) if page.len() == PAGE => after = last.id,
                _ => return Ok(None),
            }
        }
    }

    /// The jobs that follow job `id` (its follow-up, route steps and
    /// resends), by id, at most `limit`.
    pub async fn jobs_following(&self, id: i64, limit: usize) -> Result<Vec<JobRecord>> {
        Ok(self.sh.store.jobs_following(id, 0, limit).await?)
    }

    /// A job's failed sends grouped by error, over at most `limit` of them.
    pub async fn job_failures(
        &self,
        tenant: TenantId,
        id: i64,
        limit: usize,
    ) -> Result<FailureGroups> {
        self.get_job(tenant, id).await?;
        Ok(self.sh.store.job_failures(id, limit).await?)
    }

    /// Jobs of `tenant` that `filter` lets through with `id < before`,
    /// newest first.
    pub async fn list_jobs(
        &self,
        tenant: TenantId,
        filter: herald_store::JobFilter,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<JobRecord>> {
        Ok(self
            .sh
            .store
            .list_jobs_where(tenant, filter, before, limit)
            .await?)
    }

    /// How many of the job's segments are in each state: every state, in
    /// [`SegmentState::ALL`] order, 0 when none. The job is one the caller
    /// already read (and so checked) with [`Campaigns::get_job`].
    pub async fn segments_by_state(&self, job_id: i64) -> Result<Vec<(SegmentState, u64)>> {
        let counts = self.sh.store.segment_counts(job_id).await?;
        Ok(SegmentState::ALL
            .iter()
            .map(|s| {
                let n = counts
                    .iter()
                    .filter(|(state, _)| state == s)
                    .map(|(_, n)| *n)
                    .sum::<u64>();
                (*s, n)
            })
            .collect())
    }

    /// A job's segments by id, `id > after`.
    pub async fn job_segments(
        &self,
        tenant: TenantId,
        job_id: i64,
        after: Option<i64>,
        limit: usize,
    ) -> Result<Vec<SegmentRecord>> {
        self.get_job(tenant, job_id).await?;
        Ok(self.sh.store.job_segments(job_id, after, limit).await?)
    }

    /// A job's send log for recipients `start <= index < end`.
    pub async fn job_sends(
        &self,
        tenant: TenantId,
        job_id: i64,
        start: u64,
        end: u64,
    ) -> Result<Vec<SendRecord>> {
        self.get_job(tenant, job_id).await?;
        Ok(self.sh.store.job_sends(job_id, start, end).await?)
    }

    /// Where `recipient` stands in the tenant's job: its index and send-log
    /// row (`None` when it is not in the job's audience). Searches the
    /// audience's text: it costs a read of the audience, not an index.
    pub async fn find_send(
        &self,
        tenant: TenantId,
        job_id: i64,
        recipient: &str,
    ) -> Result<Option<herald_store::RecipientSend>> {
        self.get_job(tenant, job_id).await?;
        Ok(self.sh.store.find_send(job_id, recipient).await?)
    }

    /// `recipient` in the tenant's newest `jobs` jobs: each job that has it,
    /// newest first, with where it stands there.
    pub async fn recipient_in_recent_jobs(
        &self,
        tenant: TenantId,
        recipient: &str,
        jobs: usize,
    ) -> Result<Vec<(JobRecord, herald_store::RecipientSend)>> {
        let recent = self.sh.store.list_jobs(tenant, None, jobs).await?;
        let mut out = Vec::new();
        for job in recent {
            if let Some(found) = self.sh.store.find_send(job.id, recipient).await? {
                out.push((job, found));
            }
        }
        Ok(out)
    }

    /// A job's recipients whose send-log row is in `state`, by index, after
    /// `after`, at most `limit`.
    pub async fn job_sends_in_state(
        &self,
        tenant: TenantId,
        job_id: i64,
        state: herald_core::campaign::SendState,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<SendRecord>> {
        self.get_job(tenant, job_id).await?;
        Ok(self
            .sh
            .store
            .job_sends_in_state(job_id, state, after, limit)
            .await?)
    }

    // ---- Rules ----

    /// The uploaded audience a rule names, if it names one, is sealed.
    async fn check_named_audience(&self, rule: &NewRule) -> Result<()> {
        if rule.users.is_none()
            && let Some(id) = rule.spec.audience_id
        {
            self.sealed_size(rule.spec.tenant, "audience.audience_id", id)
                .await?;
        }
        Ok(())
    }

    /// Stores a rule's inline users as an audience, which becomes its
    /// `audience_id`; returns that id, to drop if the rule is not written.
    async fn materialize(&self, rule: &mut NewRule) -> Result<Option<i64>> {
        let Some(users) = &rule.users else {
            return Ok(None);
        };
        let name = format!("users of rule {:?}", rule.spec.name);
        let id = self.inline_audience(rule.spec.tenant, users, name).await?;
        rule.spec.audience_id = Some(id);
        Ok(Some(id))
    }

    /// One rule of `tenant`, as stored.
    async fn rule_of(&self, tenant: TenantId, id: i64) -> Result<RuleRecord> {
        owned_by(tenant, self.sh.store.get_rule(id).await?)
            .ok_or(CampaignError::NotFound { what: "rule" })
    }

    /// Creates a rule of `tenant`, enabled, at version 1, made by `by`.
    pub async fn create_rule(
        &self,
        tenant: TenantId,
        mut rule: NewRule,
        by: Option<Actor>,
    ) -> Result<RuleView> {
        rule.spec.tenant = tenant;
        self.check_named_audience(&rule).await?;
        let inline = self.materialize(&mut rule).await?;
        let created = match self
            .sh
            .store
            .create_rule_by(rule.spec, self.now(), by)
            .await
        {
            Ok(r) => r,
            Err(e) => {
                self.drop_inline(inline).await;
                return Err(e.into());
            }
        };
        self.wake_planner();
        self.view(created).await
    }

    /// Writes a rule's next version and makes it current.
    pub async fn update_rule(
        &self,
        tenant: TenantId,
        id: i64,
        mut rule: NewRule,
        by: Option<Actor>,
    ) -> Result<RuleView> {
        rule.spec.tenant = tenant;
        self.check_named_audience(&rule).await?;
        self.rule_of(tenant, id).await?;
        let inline = self.materialize(&mut rule).await?;
        let now = self.now();
        let updated = match self.sh.store.update_rule_by(id, rule.spec, now, by).await {
            Ok(Some(r)) => r,
            Ok(None) => {
                self.drop_inline(inline).await;
                return Err(CampaignError::NotFound { what: "rule" });
            }
            Err(e) => {
                self.drop_inline(inline).await;
                return Err(e.into());
            }
        };
        self.wake_planner();
        self.view(updated).await
    }

    /// Enables or disables a rule. Disabling cancels its pending tasks.
    pub async fn set_rule_enabled(
        &self,
        tenant: TenantId,
        id: i64,
        enabled: bool,
        by: Option<Actor>,
    ) -> Result<RuleView> {
        let now = self.now();
        let store = &self.sh.store;
        let was = self.rule_of(tenant, id).await?;
        let mut changed = store
            .set_rule_enabled_by(id, enabled, now, by.clone())
            .await?;
        // Tasks are append-only and unique per (rule, version, planned_at): the
        // occurrence cancelled by the disable cannot be planned again under the
        // same version. Re-enabling therefore starts a new version with the same
        // content, whose occurrences the planner plans afresh.
        if enabled
            && let Some(r) = &changed
            && was.status == RuleStatus::Disabled
        {
            changed = store
                .update_rule_by(id, r.current.spec.clone(), now, by)
                .await?;
        }
        let rule = changed.ok_or(CampaignError::NotFound { what: "rule" })?;
        self.wake_planner();
        self.view(rule).await
    }

    pub async fn get_rule(&self, tenant: TenantId, id: i64) -> Result<RuleView> {
        let rule = self.rule_of(tenant, id).await?;
        self.view(rule).await
    }

    /// Rules of `tenant` with `id > after`, by id.
    pub async fn list_rules(
        &self,
        tenant: TenantId,
        after: Option<i64>,
        limit: usize,
    ) -> Result<Vec<RuleView>> {
        let rules = self.sh.store.list_rules(tenant, after, limit).await?;
        let mut out = Vec::with_capacity(rules.len());
        for r in rules {
            out.push(self.view(r).await?);
        }
        Ok(out)
    }

    /// Versions of a rule with `version > after`, oldest first, at most `limit`.
    pub async fn rule_versions(
        &self,
        tenant: TenantId,
        id: i64,
        after: Option<i32>,
        limit: usize,
    ) -> Result<Vec<RuleVersion>> {
        self.rule_of(tenant, id).await?;
        Ok(self.sh.store.rule_versions(id, after, limit).await?)
    }

    /// A rule's tasks, newest `planned_at` first, each with its job once it
    /// has one.
    pub async fn rule_tasks(
        &self,
        tenant: TenantId,
        id: i64,
        limit: usize,
    ) -> Result<Vec<TaskView>> {
        let store = &self.sh.store;
        self.rule_of(tenant, id).await?;
        let tasks = store.rule_tasks(id, limit).await?;
        let mut out = Vec::with_capacity(tasks.len());
        for task in tasks {
            let job = match task.job_id {
                Some(j) => store.get_job(j).await?,
                None => None,
            };
            out.push(TaskView { task, job });
        }
        Ok(out)
    }

    /// Cancels one pending task of rule `rule_id`, by `by`; the rule plans
    /// its next occurrence as usual. Cancelling a cancelled task again
    /// answers it as it is; a task that started or ended otherwise is
    /// `TaskNotPending`.
    pub async fn cancel_task(
        &self,
        tenant: TenantId,
        rule_id: i64,
        task_id: i64,
        by: Option<Actor>,
    ) -> Result<TaskView> {
        self.rule_of(tenant, rule_id).await?;
        let store = &self.sh.store;
        let not_found = CampaignError::NotFound { what: "task" };
        match store.get_task(task_id).await? {
            Some(t) if t.rule_id == rule_id => {}
            _ => return Err(not_found),
        }
        let task = match store.cancel_task(task_id, self.now(), by).await? {
            Some(TaskCancel::Cancelled(t)) => {
                tracing::info!(rule = rule_id, task = task_id, "task cancelled");
                self.wake_planner();
                t
            }
            Some(TaskCancel::Already(t)) => t,
            Some(TaskCancel::NotPending(t)) => {
                return Err(CampaignError::TaskNotPending { state: t.state });
            }
            None => return Err(not_found),
        };
        Ok(TaskView { task, job: None })
    }

    async fn view(&self, rule: RuleRecord) -> Result<RuleView> {
        let tasks = if rule.status == RuleStatus::Enabled {
            self.sh.store.rule_tasks(rule.id, NEXT_RUN_TASKS).await?
        } else {
            Vec::new()
        };
        let schedule = match serde_json::from_str::<ScheduleSpec>(&rule.current.spec.schedule) {
            Ok(spec) if rule.status == RuleStatus::Enabled => {
                super::calendars::compile(self.sh.store.as_ref(), rule.tenant, &spec)
                    .await?
                    .ok()
            }
            _ => None,
        };
        let next_run_at = next_run_at(
            &rule,
            schedule.as_ref(),
            &tasks,
            self.now(),
            self.sh.cfg.get().misfire_grace_ms,
        );
        Ok(RuleView { rule, next_run_at })
    }
}

/// When an enabled rule sends next: its earliest pending task of the current
/// version, or else the occurrence the planner will plan next (as it would
/// compute it now). `tasks` are the rule's latest tasks.
/// `schedule` is the rule's, compiled with its calendar as that is now.
fn next_run_at(
    r: &RuleRecord,
    schedule: Option<&Schedule>,
    tasks: &[TaskRecord],
    now: i64,
    grace_ms: i64,
) -> Option<i64> {
    if r.status != RuleStatus::Enabled {
        return None;
    }
    let v = &r.current;
    let schedule = schedule?;
    let current = || tasks.iter().filter(|t| t.version == v.version);
    if let Some(p) = current()
        .filter(|t| t.state == TaskState::Pending)
        .map(|t| t.planned_at)
        .min()
    {
        return Some(p);
    }
    let last = current().map(|t| t.planned_at).max();
    let after = plan_after(schedule.is_recurring(), last, v.created_at, now, grace_ms);
    schedule.next_after(v.created_at, after)
}

#[cfg(test)]
mod tests {
    use super::*;
    use herald_core::{Clock, SystemClock};
    use herald_store::StoreOptions;

    use crate::loops::stop::Stop;

    const T: TenantId = herald_core::DEFAULT_TENANT;

    async fn campaigns() -> Campaigns {
        let store = herald_store::open("sqlite::memory:", &StoreOptions::default())
            .await
            .unwrap();
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        Campaigns::new(Arc::new(Shared {
            store,
            clock,
            channels: Default::default(),
            cfg: crate::loops::tuned::Tuned::new(super::super::CampaignConfig::default()),
            holder: herald_store::Holder::new("service-test", 1),
            stop: Arc::new(Stop::default()),
            live: Arc::new(crate::observe::live::Live::new(Vec::new())),
            work: Default::default(),
            plan: Default::default(),
            sweep: Default::default(),
            writes: Default::default(),
            templates: Default::default(),
        }))
    }

    fn spec(schedule: &str) -> RuleSpec {
        RuleSpec {
            tenant: T,
            name: "r".into(),
            schedule: schedule.into(),
            audience: "{}".into(),
            audience_id: None,
            channel: "log".into(),
            message: "{}".into(),
            deadline_secs: None,
            priority: 5,
            routing: None,
            follow_up: None,
        }
    }

    fn rule(status: RuleStatus, schedule: &str, created_at: i64) -> RuleRecord {
        RuleRecord {
            id: 1,
            tenant: T,
            status,
            created_at,
            updated_at: created_at,
            created_by: None,
            changed_by: None,
            current: RuleVersion {
                rule_id: 1,
                version: 2,
                spec: spec(schedule),
                created_at,
            },
        }
    }

    fn task(version: i32, planned_at: i64, state: TaskState) -> TaskRecord {
        TaskRecord {
            id: planned_at,
            tenant: T,
            rule_id: 1,
            version,
            planned_at,
            state,
            job_id: None,
            recipients: None,
            detail: None,
            created_at: 0,
            started_at: None,
            finished_at: None,
            created_by: None,
            changed_by: None,
        }
    }

    fn compiled(r: &RuleRecord) -> Option<Schedule> {
        let spec: ScheduleSpec = serde_json::from_str(&r.current.spec.schedule).ok()?;
        Schedule::compile(&spec).ok()
    }

    const EVERY_MINUTE: &str = r#"{"type":"cron","cron":"* * * * *","timezone":"UTC"}"#;

    #[test]
    fn next_run_is_the_pending_task_of_the_current_version() {
        let r = rule(RuleStatus::Enabled, EVERY_MINUTE, 0);
        let tasks = [
            task(1, 60_000, TaskState::Pending),
            task(2, 180_000, TaskState::Pending),
            task(2, 120_000, TaskState::Succeeded),
        ];
        assert_eq!(
            next_run_at(&r, compiled(&r).as_ref(), &tasks, 130_000, 60_000),
            Some(180_000)
        );
        // Without one, the occurrence after the last planned one.
        assert_eq!(
            next_run_at(&r, compiled(&r).as_ref(), &tasks[2..], 130_000, 60_000),
            Some(180_000)
        );
        // A recurring rule skips what is older than the misfire grace.
        assert_eq!(
            next_run_at(&r, compiled(&r).as_ref(), &tasks[2..], 1_000_000, 60_000),
            Some(960_000)
        );
        let off = rule(RuleStatus::Disabled, EVERY_MINUTE, 0);
        assert_eq!(
            next_run_at(&off, compiled(&off).as_ref(), &tasks, 130_000, 60_000),
            None
        );
    }

    #[test]
    fn an_immediate_rule_runs_once_at_its_version() {
        let r = rule(RuleStatus::Enabled, r#"{"type":"immediate"}"#, 5_000);
        assert_eq!(
            next_run_at(&r, compiled(&r).as_ref(), &[], 9_000, 60_000),
            Some(5_000)
        );
        let done = [task(2, 5_000, TaskState::Succeeded)];
        assert_eq!(
            next_run_at(&r, compiled(&r).as_ref(), &done, 9_000, 60_000),
            None
        );
    }

    #[tokio::test]
    async fn inline_users_become_one_audience_and_unknown_audiences_are_refused() {
        let c = campaigns().await;
        let job = NewJob {
            audience: AudienceSource::Inline(vec!["a".into(), "b".into(), "a".into()]),
            channel: "log".into(),
            message: "{}".into(),
            segment_size: None,
            deadline_at: None,
            priority: 5,
            follow_up: None,
            routing: None,
            traceparent: None,
            meta: Default::default(),
        };
        let created = c.create_job(T, job.clone()).await.unwrap();
        assert_eq!(created.totals.total, 2);
        assert_eq!(created.segment_size, c.sh.cfg.get().segment_size);
        let audience = created.audience_id;
        assert_eq!(c.get_audience(T, audience).await.unwrap().size, Some(2));
        // Another tenant sees neither the job nor its audience.
        let other = TenantId(2);
        assert!(matches!(
            c.get_audience(other, audience).await,
            Err(CampaignError::NotFound { what: "audience" })
        ));
        assert!(matches!(
            c.get_job(other, created.id).await,
            Err(CampaignError::NotFound { what: "job" })
        ));
        assert!(matches!(
            c.cancel_job(other, created.id, None).await,
            Err(CampaignError::NotFound { what: "job" })
        ));
        assert!(
            c.list_jobs(other, Default::default(), None, 10)
                .await
                .unwrap()
                .is_empty()
        );
        // Nor may it send to that audience.
        let theirs = NewJob {
            audience: AudienceSource::Uploaded(audience),
            ..job.clone()
        };
        assert!(matches!(
            c.create_job(other, theirs).await,
            Err(CampaignError::UnknownAudience { .. })
        ));

        let unknown = NewJob {
            audience: AudienceSource::Uploaded(999),
            ..job
        };
        assert!(matches!(
            c.create_job(T, unknown).await,
            Err(CampaignError::UnknownAudience {
                field: "audience_id",
                id: 999
            })
        ));
    }

    #[tokio::test]
    async fn a_job_is_deleted_once_finished_and_its_audience_after_it() {
        let c = campaigns().await;
        let job = NewJob {
            audience: AudienceSource::Inline(vec!["a".into(), "b".into()]),
            channel: "log".into(),
            message: "{}".into(),
            segment_size: None,
            deadline_at: None,
            priority: 5,
            follow_up: None,
            routing: None,
            traceparent: None,
            meta: Default::default(),
        };
        let created = c.create_job(T, job).await.unwrap();
        let (id, audience) = (created.id, created.audience_id);
        // No worker runs here: the job is running until cancelled.
        assert!(matches!(
            c.delete_job(T, id).await,
            Err(CampaignError::JobNotFinished { .. })
        ));
        assert!(matches!(
            c.delete_audience(T, audience).await,
            Err(CampaignError::AudienceInUse { .. })
        ));
        c.cancel_job(T, id, None).await.unwrap();
        // Another tenant can delete neither.
        let other = TenantId(2);
        assert!(matches!(
            c.delete_job(other, id).await,
            Err(CampaignError::NotFound { what: "job" })
        ));
        assert!(matches!(
            c.delete_audience(other, audience).await,
            Err(CampaignError::NotFound { what: "audience" })
        ));
        // The finished job still holds its audience.
        assert!(matches!(
            c.delete_audience(T, audience).await,
            Err(CampaignError::AudienceInUse { .. })
        ));
        assert_eq!(c.delete_job(T, id).await.unwrap().id, id);
        assert!(matches!(
            c.get_job(T, id).await,
            Err(CampaignError::NotFound { what: "job" })
        ));
        assert!(matches!(
            c.delete_job(T, id).await,
            Err(CampaignError::NotFound { what: "job" })
        ));
        assert_eq!(c.delete_audience(T, audience).await.unwrap().id, audience);
        assert!(matches!(
            c.get_audience(T, audience).await,
            Err(CampaignError::NotFound { what: "audience" })
        ));
    }

    #[tokio::test]
    async fn re_enabling_a_disabled_rule_starts_a_new_version() {
        let c = campaigns().await;
        let new = NewRule {
            spec: spec(EVERY_MINUTE),
            users: Some(vec!["u".into()]),
        };
        let v1 = c.create_rule(T, new, None).await.unwrap();
        let id = v1.rule.id;
        assert!(v1.rule.current.spec.audience_id.is_some());
        assert!(v1.next_run_at.is_some());
        // Another tenant can neither see nor change it.
        let other = TenantId(2);
        assert!(matches!(
            c.set_rule_enabled(other, id, false, None).await,
            Err(CampaignError::NotFound { what: "rule" })
        ));
        assert!(matches!(
            c.rule_versions(other, id, None, 10).await,
            Err(CampaignError::NotFound { what: "rule" })
        ));
        assert!(c.list_rules(other, None, 10).await.unwrap().is_empty());
        let off = c.set_rule_enabled(T, id, false, None).await.unwrap();
        assert_eq!(
            (off.rule.status, off.next_run_at),
            (RuleStatus::Disabled, None)
        );
        // Enabling what is enabled changes nothing.
        let on = c.set_rule_enabled(T, id, true, None).await.unwrap();
        assert_eq!(on.rule.current.version, 2);
        let again = c.set_rule_enabled(T, id, true, None).await.unwrap();
        assert_eq!(again.rule.current.version, 2);
        assert!(matches!(
            c.set_rule_enabled(T, 999, true, None).await,
            Err(CampaignError::NotFound { what: "rule" })
        ));
        assert_eq!(c.rule_versions(T, id, None, 10).await.unwrap().len(), 2);
    }
}
