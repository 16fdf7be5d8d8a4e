//! Rules, tasks, audiences, jobs, segments and the job send log: the part of
//! the store behind mass sends: segments claimed under a lease and re-issued
//! (docs/architecture.md, "The path of a campaign"), and versioned rules with
//! append-only tasks ("Rules").
//!
//! Every method that writes commits one transaction before it returns `Ok`.
//! Times are unix milliseconds.
//!
//! Every audience, rule, task, job, segment and send belongs to one tenant.
//! Ids stay global and sequential; a read by id returns the record with its
//! tenant, and the service answers "not found" for another tenant's. Lists
//! take the tenant and see only its rows.

use async_trait::async_trait;
use herald_core::TenantId;
use herald_core::campaign::{JobState, RuleStatus, SegmentState, SendState, TaskState};

use crate::Result;

/// Recipients are stored in chunks of this many, so that `[start, end)` reads
/// only the chunks it covers. [`CampaignStore::append_audience`] takes whole
/// chunks (the last one may be short).
pub const AUDIENCE_CHUNK: u64 = 4096;

/// What a rule version says. Schedule and audience are kept as the JSON the API
/// validated; the store does not interpret them (the engine does).
#[derive(Debug, Clone, PartialEq)]
pub struct RuleSpec {
    /// The rule's tenant. A version's spec always carries its rule's.
    pub tenant: TenantId,
    pub name: String,
    /// The schedule object, as JSON text (`{"type":"cron",...}`).
    pub schedule: String,
    /// The audience object, as JSON text (`{"users":[..],"parties":[..],...}`).
    pub audience: String,
    /// The audience a job of this version sends to: the uploaded one the rule
    /// named, or one the API built from its `users`, `parties` and `tags`
    /// (the latter as recipients `party:ID` and `tag:ID`, which a fan-out
    /// channel resolves itself).
    pub audience_id: Option<i64>,
    pub channel: String,
    /// The message object, as JSON text.
    pub message: String,
    /// A job this version starts may send for this long; then it expires.
    pub deadline_secs: Option<i64>,
    /// Higher is claimed first. 0..=9.
    pub priority: u8,
    /// The audience holds user ids, routed through the subscriber directory
    /// when a job of this version sends (`herald_core::timer::Routing` as
    /// JSON); `None` for an audience of raw addresses.
    pub routing: Option<String>,
    /// A follow-up to the unread that every job of this version carries
    /// (`step` is always `None`: a route's steps come from `routing`).
    pub follow_up: Option<FollowUp>,
}

/// One version of a rule, as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleVersion {
    pub rule_id: i64,
    /// 1 for the rule as created; each update adds one.
    pub version: i32,
    pub spec: RuleSpec,
    pub created_at: i64,
}

/// A rule with its current version.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleRecord {
    pub id: i64,
    pub tenant: TenantId,
    pub status: RuleStatus,
    pub created_at: i64,
    pub updated_at: i64,
    /// The key that created it.
    pub created_by: Option<Actor>,
    /// The key that last changed it: a new version, enabling or disabling.
    pub changed_by: Option<Actor>,
    pub current: RuleVersion,
}

/// One planned execution of one rule version.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRecord {
    pub id: i64,
    /// Its rule's tenant.
    pub tenant: TenantId,
    pub rule_id: i64,
    pub version: i32,
    pub planned_at: i64,
    pub state: TaskState,
    /// The job it started, once running.
    pub job_id: Option<i64>,
    /// Recipients of that job.
    pub recipients: Option<u64>,
    /// Why it ended as it did, e.g. "rule was updated to version 3".
    pub detail: Option<String>,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
    /// The key that last changed its rule when the planner planned it (the
    /// planner creates every task, from what that key made).
    pub created_by: Option<Actor>,
    /// The key that ended it early: disabling its rule, cancelling its job.
    pub changed_by: Option<Actor>,
}

/// An enabled rule the planner may need to plan for.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanCandidate {
    pub rule: RuleRecord,
    /// Whether a pending task of the current version exists (then there is
    /// nothing to plan).
    pub has_pending_current: bool,
    /// Tasks of any version that are pending or running.
    pub active_tasks: u64,
    /// The latest `planned_at` among the rule's tasks of the current version,
    /// whatever their state.
    pub last_planned_at: Option<i64>,
}

/// What [`CampaignStore::start_task`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskStart {
    /// The task is running and this job sends it.
    Started { job: Box<JobRecord> },
    /// The rule has a newer version: the task ended `expired`, nothing sent.
    Expired,
    /// The rule is disabled: the task ended `cancelled`.
    Cancelled,
    /// The task's version has no audience the store can index (parties or tags
    /// only): the task ended `failed`.
    NoAudience,
    /// The task was not pending (another planner got there first, or unknown id).
    NotPending,
}

/// What [`CampaignStore::cancel_task`] did; each carries the task as it is
/// afterwards.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskCancel {
    /// It was pending and is now `cancelled`.
    Cancelled(TaskRecord),
    /// It was cancelled before: nothing changed.
    Already(TaskRecord),
    /// It had started or ended otherwise: nothing changed.
    NotPending(TaskRecord),
}

/// An uploaded audience.
#[derive(Debug, Clone, PartialEq)]
pub struct AudienceRecord {
    pub id: i64,
    pub tenant: TenantId,
    pub name: Option<String>,
    /// Recipients; `None` while the upload is still going.
    pub size: Option<u64>,
    pub created_at: i64,
}

/// Who made a change through the API: the API key's id and name (the admin
/// key has a name and no id). Kept on the changed row, so it outlives the
/// audit log's retention. `None` where an actor is expected means open
/// access (no key), or the node's own work (the planner, a follow-up).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Actor {
    pub key_id: Option<i64>,
    pub key_name: Option<String>,
}

impl Actor {
    /// `None` when neither the id nor the name is known.
    pub fn of(key_id: Option<i64>, key_name: Option<String>) -> Option<Actor> {
        (key_id.is_some() || key_name.is_some()).then_some(Actor { key_id, key_name })
    }

    /// An optional actor's two columns, `(key_id, key_name)`.
    pub(crate) fn columns(a: &Option<Actor>) -> (Option<i64>, Option<&str>) {
        match a {
            Some(a) => (a.key_id, a.key_name.as_deref()),
            None => (None, None),
        }
    }
}

/// What a job is called, what kind of business it serves (for lists and
/// filters; both optional, the API checks their form), and who made and
/// last changed it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobMeta {
    /// A job a rule starts takes the rule's name.
    pub name: Option<String>,
    /// The business kind, e.g. `coupon-reminder` or `marketing`.
    pub category: Option<String>,
    /// The key that created it (`None` for a rule's or a follow-up's job).
    pub created_by: Option<Actor>,
    /// The key that last changed it (cancel, retry); ignored on create.
    pub changed_by: Option<Actor>,
}

/// Which jobs [`CampaignStore::list_jobs_where`] lists; the default lists all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobFilter {
    /// Only jobs of exactly this category.
    pub category: Option<String>,
    /// Only jobs whose name starts with this.
    pub name_prefix: Option<String>,
}

/// A job to create.
#[derive(Debug, Clone, PartialEq)]
pub struct JobSpec {
    pub tenant: TenantId,
    /// An audience of the same tenant.
    pub audience_id: i64,
    pub channel: String,
    pub message: String,
    /// Recipients per segment, at least 1.
    pub segment_size: u64,
    /// Nothing is sent at or after this time.
    pub deadline_at: Option<i64>,
    pub priority: u8,
    /// The rule task that started it, if any.
    pub task_id: Option<i64>,
    /// A follow-up to send after the job ends (see [`FollowUp`]).
    pub follow_up: Option<FollowUp>,
    /// This job is the follow-up of that job: it is created only while that
    /// follow-up is still waiting, and marks it sent in the same transaction,
    /// so a follow-up goes out once whatever crashes.
    pub follows: Option<i64>,
    /// This job resends that job's message to its unread recipients (an
    /// operator's `:resend-unread`): it is created only while no job that
    /// follows that job (a follow-up or an earlier resend) is running (else
    /// `None`, nothing written). Never given with `follows`.
    pub resends: Option<i64>,
    /// The audience holds user ids, routed through the subscriber directory
    /// (`herald_core::timer::Routing` as JSON); `None` for raw addresses.
    pub routing: Option<String>,
    /// The W3C `traceparent` of the request that created it: its segments'
    /// spans link to it.
    pub traceparent: Option<String>,
    pub meta: JobMeta,
}

/// A job's follow-up: `after_ms` after the job ends, `message` goes to the
/// recipients it delivered to that sent no `read` receipt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FollowUp {
    pub after_ms: i64,
    pub message: String,
    /// The step of the job's fallback route it sends: to the recipients
    /// whose outcome that step's `on` lists, on that step's channel (see
    /// [`route_follow_up`]); `None` for a follow-up to the unread.
    pub step: Option<u32>,
}

/// The follow-up that carries a job's fallback route on: the step after the
/// one `routing` (the job's) is at, due `after` (its wait for a read
/// receipt, if it has one) after the job ends, with the step's own message
/// or else `message` (the job's). `None` when the route has no more steps.
pub fn route_follow_up(routing: Option<&str>, message: &str) -> Option<FollowUp> {
    let r = herald_core::timer::Routing::parse(routing);
    let step = r.step.checked_add(1)?;
    let next = r.route.get(usize::try_from(step).ok()?)?;
    Some(FollowUp {
        after_ms: next.after_ms.unwrap_or(0),
        message: next.message.clone().unwrap_or_else(|| message.to_string()),
        step: Some(step),
    })
}

/// Where a job's follow-up stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FollowUpState {
    /// The job has not ended, or ended less than `after_ms` ago.
    Waiting,
    /// The follow-up job was created.
    Sent,
    /// Nothing to send: every recipient read it, none was delivered to, or
    /// the job was cancelled.
    Skipped,
}

impl TaskCancel {
    /// What [`CampaignStore::cancel_task`] answers when its guarded write
    /// changed nothing: the task as it is.
    pub(crate) fn unchanged(task: TaskRecord) -> TaskCancel {
        if task.state == TaskState::Cancelled {
            TaskCancel::Already(task)
        } else {
            TaskCancel::NotPending(task)
        }
    }
}

impl FollowUpState {
    pub fn as_str(self) -> &'static str {
        match self {
            FollowUpState::Waiting => "waiting",
            FollowUpState::Sent => "sent",
            FollowUpState::Skipped => "skipped",
        }
    }

    /// As both stores keep it: 0, 1, 2 in declaration order.
    pub(crate) fn from_code(c: i64) -> crate::Result<Self> {
        match c {
            0 => Ok(FollowUpState::Waiting),
            1 => Ok(FollowUpState::Sent),
            2 => Ok(FollowUpState::Skipped),
            _ => Err(crate::StoreError::Corrupt(format!(
                "follow-up state {c} is unknown"
            ))),
        }
    }
}

/// A job's stored follow-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FollowUpRecord {
    pub job_id: i64,
    pub after_ms: i64,
    pub message: String,
    pub state: FollowUpState,
    /// The job that sent it, once sent.
    pub follow_up_job_id: Option<i64>,
    /// When it was sent or skipped.
    pub done_at: Option<i64>,
    /// See [`FollowUp::step`].
    pub step: Option<u32>,
}

/// Counts of a job's recipients by outcome; see [`JobTotals::remaining`].
/// Kept exact by the store in the same transaction as each send-log change.
/// A job that ended (`done`, `cancelled`, `expired`) has `remaining() == 0`
/// and `retrying == 0`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JobTotals {
    /// Recipients in the audience.
    pub total: u64,
    pub delivered: u64,
    pub failed: u64,
    /// Failed retryably and waiting for another attempt.
    pub retrying: u64,
    /// Never sent (or still retrying) when the deadline passed.
    pub expired: u64,
    /// Never sent because the job was cancelled.
    pub cancelled: u64,
    /// Handed to the provider by a node that died before it recorded the
    /// answer, and not sent again (the channel's `in_doubt = "skip"`).
    pub in_doubt: u64,
}

impl JobTotals {
    /// Recipients without a final outcome yet (retrying ones included).
    pub fn remaining(&self) -> u64 {
        self.total.saturating_sub(
            self.delivered + self.failed + self.expired + self.cancelled + self.in_doubt,
        )
    }
}

/// A job as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct JobRecord {
    pub id: i64,
    pub tenant: TenantId,
    pub audience_id: i64,
    pub channel: String,
    pub message: String,
    pub segment_size: u64,
    pub deadline_at: Option<i64>,
    pub priority: u8,
    pub task_id: Option<i64>,
    pub state: JobState,
    pub totals: JobTotals,
    pub created_at: i64,
    /// First claim of any of its segments.
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
    /// See [`JobSpec::routing`].
    pub routing: Option<String>,
    /// See [`JobSpec::traceparent`].
    pub traceparent: Option<String>,
    pub meta: JobMeta,
    /// The job it follows: the one whose follow-up (or route step) it sends,
    /// or whose unread recipients it resends to ([`JobSpec::follows`],
    /// [`JobSpec::resends`]).
    pub follows: Option<i64>,
    /// When it last recorded an attempt's outcome (delivered, failed, to be
    /// retried): set by [`CampaignStore::record_sends`] with the totals.
    pub last_sent_at: Option<i64>,
}

/// A segment as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct SegmentRecord {
    pub id: i64,
    pub job_id: i64,
    pub start: u64,
    pub end: u64,
    /// Every index below it has been handled by this segment.
    pub cursor: u64,
    pub state: SegmentState,
    pub owner: Option<String>,
    pub lease_until: Option<i64>,
    /// Grows by one with every claim, so a write from an earlier claim is refused.
    pub epoch: i64,
    /// The segment this one re-issues, if any.
    pub parent_id: Option<i64>,
    /// 1 for a segment cut from the job; a re-issue of a partial segment adds one.
    pub attempt: u32,
    /// Not claimable before this time (retry backoff).
    pub not_before: i64,
    pub created_at: i64,
    /// No index at or above it was handed to the channel under this segment.
    pub sent_to: u64,
    /// `[doubt_from, doubt_to)`: the part of the segment this one re-issues
    /// that may have been sent without a recorded outcome (see
    /// `0026_send_in_doubt.sql`); empty for a segment that re-issues none.
    pub doubt_from: u64,
    pub doubt_to: u64,
    /// When it ended (`done`, `partial`, `abandoned`, `expired` or
    /// `cancelled`), set in the transaction that ended it; `None` while
    /// pending or running.
    pub finished_at: Option<i64>,
}

/// How far a segment's holder has got: every index below `cursor` has an
/// outcome, and no index at or above `sent_to` was handed to the channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    pub cursor: u64,
    pub sent_to: u64,
}

/// One write of [`CampaignStore::record_many`].
#[derive(Debug, Clone, PartialEq)]
pub struct SegmentWrite {
    pub claim: SegmentClaim,
    pub at: Progress,
    pub entries: Vec<SendEntry>,
}

/// Proof of one claim of one segment; every write under the claim carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentClaim {
    pub segment_id: i64,
    pub job_id: i64,
    pub owner: String,
    pub epoch: i64,
}

/// A segment a worker now holds, with what it needs to send it.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimedSegment {
    pub claim: SegmentClaim,
    pub segment: SegmentRecord,
    pub job: JobRecord,
    pub lease_until: i64,
}

/// One recipient of a job, found by [`CampaignStore::find_send`].
#[derive(Debug, Clone, PartialEq)]
pub struct RecipientSend {
    /// Its position in the job's audience.
    pub index: u64,
    /// Its send-log row; `None` while the job has not reached it.
    pub send: Option<SendRecord>,
}

/// The first line of a chunk's `data` (recipients joined by newlines) equal
/// to `recipient`, as an index in the audience, the chunk being `chunk_no`.
pub(crate) fn index_in_chunk(chunk_no: u64, data: &[u8], recipient: &[u8]) -> Option<u64> {
    let line = data.split(|b| *b == b'\n').position(|l| l == recipient)?;
    chunk_no
        .checked_mul(AUDIENCE_CHUNK)?
        .checked_add(u64::try_from(line).ok()?)
}

/// One recipient's entry in a job's send log. The idempotency key is
/// `herald_core::campaign::job_recipient_key(job_id, index)`.
#[derive(Debug, Clone, PartialEq)]
pub struct SendRecord {
    pub job_id: i64,
    /// Position of the recipient in the audience.
    pub index: u64,
    pub recipient: String,
    pub state: SendState,
    /// Attempts made so far, 1 after the first.
    pub attempts: u32,
    pub provider_msgid: Option<String>,
    pub error: Option<String>,
    pub updated_at: i64,
    /// What the provider reported later about this message (see
    /// [`crate::ProviderStore::record_final_status`]); `None` until then.
    pub final_status: Option<String>,
    /// When `final_status` was recorded (unix ms).
    pub final_at: Option<i64>,
}

/// The outcome of one attempt, to record.
#[derive(Debug, Clone, PartialEq)]
pub struct SendEntry {
    pub index: u64,
    pub recipient: String,
    /// `Delivered`, `Retry` or `Failed` (`Expired` is the sweeper's).
    pub state: SendState,
    pub provider_msgid: Option<String>,
    pub error: Option<String>,
}

/// What happened to a claim after a write under it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseCheck {
    /// Still ours, now until this time.
    Held { lease_until: i64 },
    /// Re-issued, cancelled or expired meanwhile: stop sending.
    Lost,
}

/// Knobs of [`CampaignStore::sweep`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SweepOptions {
    /// A partial segment is re-issued until its recipients have had this many
    /// attempts; then those still retrying end `failed`.
    pub max_attempts: u32,
    /// A re-issued partial segment waits this long times its attempt number.
    pub retry_backoff_ms: i64,
    /// At most this many segments handled per kind of work per call.
    pub limit: usize,
}

/// What one sweep did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Running segments whose lease had expired, marked `abandoned`.
    pub abandoned: u64,
    /// New segments created for their remainder or for retryable recipients.
    pub reissued: u64,
    /// Jobs whose deadline passed, ended `expired`.
    pub expired_jobs: u64,
    /// Jobs found with every segment final, ended `done`.
    pub finished_jobs: u64,
    /// Recipients given up on after `max_attempts`.
    pub failed_recipients: u64,
}

/// Which of a job's final sends [`CampaignStore::retry_sends`] sends again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resend {
    /// Those that failed (`POST /v1/jobs/{id}:retry-failed`).
    Failed,
    /// Those a crash left in doubt on a `skip` channel, once an operator
    /// has decided they should go (`POST /v1/jobs/{id}:retry-in-doubt`).
    InDoubt,
}

/// What [`CampaignStore::retry_sends`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum FailedRetry {
    /// The failed sends are `retry` again and pending segments cover them; the
    /// job (running again if it had finished) as it is afterwards.
    Retried { job: JobRecord, retried: u64 },
    /// The job was cancelled or expired: nothing changed.
    NotRetryable(JobRecord),
}

/// A job's failed sends grouped by error, largest group first (ties by error).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FailureGroups {
    /// `(error, count)`; a failure without a message is grouped under "".
    pub groups: Vec<(String, u64)>,
    /// Failed sends read.
    pub scanned: u64,
    /// More failed sends exist than were read.
    pub truncated: bool,
}

impl FailureGroups {
    /// Groups the errors read (at most `limit` of them count; one more marks
    /// the answer truncated).
    pub fn from_errors(errors: Vec<Option<String>>, limit: usize) -> Self {
        let truncated = errors.len() > limit;
        let mut counts: std::collections::HashMap<String, u64> = std::collections::HashMap::new();
        let mut scanned = 0;
        for e in errors.into_iter().take(limit) {
            *counts.entry(e.unwrap_or_default()).or_default() += 1;
            scanned += 1;
        }
        let mut groups: Vec<(String, u64)> = counts.into_iter().collect();
        groups.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        FailureGroups {
            groups,
            scanned,
            truncated,
        }
    }
}

/// The segments `[start, end)` that re-send the failed indexes `idxs`
/// (ascending), each at most `segment_size` long. With `gaps` a segment may
/// span indexes between failures (a finished job: every one of them is
/// final, so the worker skips them); without, only consecutive indexes share a
/// segment, so a running job's unsent recipients are never covered twice.
pub fn retry_runs(idxs: &[u64], segment_size: u64, gaps: bool) -> Vec<(u64, u64)> {
    let size = segment_size.max(1);
    let mut runs: Vec<(u64, u64)> = Vec::new();
    for &i in idxs {
        match runs.last_mut() {
            Some((start, end)) if (gaps || i == *end) && i < start.saturating_add(size) => {
                *end = i + 1;
            }
            _ => runs.push((i, i + 1)),
        }
    }
    runs
}

/// Rules, tasks, audiences, jobs and segments. Part of every [`crate::Store`].
#[async_trait]
pub trait CampaignStore: Send + Sync + 'static {
    // ---- Audiences ----

    /// Starts an upload for `tenant`. The audience cannot be used by a job
    /// until sealed.
    async fn create_audience(
        &self,
        tenant: TenantId,
        name: Option<String>,
        now: i64,
    ) -> Result<i64>;

    /// Stores recipients `start..start + recipients.len()` of an unsealed
    /// audience. `start` is a multiple of [`AUDIENCE_CHUNK`] and at most
    /// [`AUDIENCE_CHUNK`] recipients come per call; recipients hold no `\n`.
    /// Writing the same chunk again replaces it (an empty slice removes it).
    ///
    /// An error, with nothing written, when the audience is unknown or sealed,
    /// `start` is off the chunk grid, the chunk is too long, or a recipient
    /// holds a newline.
    async fn append_audience(&self, id: i64, start: u64, recipients: &[String]) -> Result<()>;

    /// Ends the upload with `size` recipients. `None` if the audience is unknown
    /// or already sealed. An error (the audience stays open) unless the stored
    /// chunks hold exactly `size` recipients: chunks `0..ceil(size / CHUNK)`,
    /// each full but the last. So a sealed audience has every index below its
    /// size, and a slice never comes back short.
    async fn seal_audience(&self, id: i64, size: u64, now: i64) -> Result<Option<AudienceRecord>>;

    /// Removes an audience that no job or rule refers to (an abandoned upload,
    /// or a sealed one never used), with its recipients. A rule refers to it if
    /// any of its versions, current or not, names it. Returns whether it was
    /// removed (`false` when unknown or in use).
    async fn drop_audience(&self, id: i64) -> Result<bool>;

    /// Deletes a finished job (done, cancelled or expired, with no follow-up
    /// waiting) with its segments, send log, receipts, receipt counts and
    /// follow-up. A large job goes in several short transactions of at most
    /// [`PURGE_BATCH`](crate::PURGE_BATCH) rows each, the job row last, each
    /// checking again that the job is still finished.
    async fn delete_job(&self, id: i64) -> Result<crate::JobDeletion>;

    async fn get_audience(&self, id: i64) -> Result<Option<AudienceRecord>>;

    /// Audiences of `tenant` with `id > after` (open ones too), by id, at
    /// most `limit`. Index-backed (`audiences_tenant`).
    async fn list_audiences(
        &self,
        tenant: TenantId,
        after: Option<i64>,
        limit: usize,
    ) -> Result<Vec<AudienceRecord>>;

    /// Recipients `start..end` of a sealed audience, in order (clipped to its
    /// size; empty when nothing is left of the range). An error if the audience
    /// is unknown or not sealed yet: a job only ever reads a sealed one, so
    /// anything else is a bug, never "no recipients".
    async fn audience_slice(&self, id: i64, start: u64, end: u64) -> Result<Vec<String>>;

    // ---- Rules and tasks ----

    /// Creates a rule of `spec.tenant`, enabled, at version 1. The spec is
    /// stored as given (the API validates it; `audience_id` is checked when a
    /// task starts).
    async fn create_rule(&self, spec: RuleSpec, now: i64) -> Result<RuleRecord> {
        self.create_rule_by(spec, now, None).await
    }

    /// [`Self::create_rule`], made by `by` (its `created_by` and `changed_by`).
    async fn create_rule_by(
        &self,
        spec: RuleSpec,
        now: i64,
        by: Option<Actor>,
    ) -> Result<RuleRecord>;

    /// Adds a version and makes it current (re-enabling a finished rule; a
    /// disabled rule stays disabled). Tasks of older versions are left as they
    /// are: they expire when they come to run. `None` if the rule is unknown
    /// or belongs to another tenant than `spec.tenant` (nothing is written).
    async fn update_rule(&self, id: i64, spec: RuleSpec, now: i64) -> Result<Option<RuleRecord>> {
        self.update_rule_by(id, spec, now, None).await
    }

    /// [`Self::update_rule`], by `by` (the rule's `changed_by`, in the same
    /// transaction).
    async fn update_rule_by(
        &self,
        id: i64,
        spec: RuleSpec,
        now: i64,
        by: Option<Actor>,
    ) -> Result<Option<RuleRecord>>;

    /// Enables or disables a rule (whatever its status, a finished one too).
    /// Disabling cancels its pending tasks in the same transaction, with a
    /// detail and `finished_at = now` (running ones finish; a cancelled task is
    /// never revived by enabling again). `None` if the rule is unknown.
    async fn set_rule_enabled(
        &self,
        id: i64,
        enabled: bool,
        now: i64,
    ) -> Result<Option<RuleRecord>> {
        self.set_rule_enabled_by(id, enabled, now, None).await
    }

    /// [`Self::set_rule_enabled`], by `by`: the rule's `changed_by`, and the
    /// `changed_by` of every task a disable cancels.
    async fn set_rule_enabled_by(
        &self,
        id: i64,
        enabled: bool,
        now: i64,
        by: Option<Actor>,
    ) -> Result<Option<RuleRecord>>;

    async fn get_rule(&self, id: i64) -> Result<Option<RuleRecord>>;

    /// Rules of `tenant` with `id > after`, by id, at most `limit`.
    async fn list_rules(
        &self,
        tenant: TenantId,
        after: Option<i64>,
        limit: usize,
    ) -> Result<Vec<RuleRecord>>;

    /// Versions of a rule with `version > after`, oldest first, at most
    /// `limit` (empty if the rule is unknown).
    async fn rule_versions(
        &self,
        id: i64,
        after: Option<i32>,
        limit: usize,
    ) -> Result<Vec<RuleVersion>>;

    /// A rule's tasks, newest `planned_at` first (ties: newest id first), at most `limit`.
    async fn rule_tasks(&self, rule_id: i64, limit: usize) -> Result<Vec<TaskRecord>>;

    /// Enabled rules, by id, with what the planner needs to know, `id > after`,
    /// at most `limit`.
    async fn plan_candidates(&self, after: Option<i64>, limit: usize)
    -> Result<Vec<PlanCandidate>>;

    /// Plans `(rule, version, planned_at)` as a pending task, unless that task
    /// already exists (the store keeps it unique, whatever its state) or the
    /// version is not the rule's current one or the rule is not enabled
    /// (disabled or finished). Returns the task when this call created it.
    async fn plan_task(
        &self,
        rule_id: i64,
        version: i32,
        planned_at: i64,
        now: i64,
    ) -> Result<Option<TaskRecord>>;

    /// Marks an enabled rule `finished` if it has no pending or running task.
    /// Returns whether it did.
    async fn finish_rule(&self, rule_id: i64, now: i64) -> Result<bool>;

    /// Pending tasks with `planned_at <= now`, oldest first (ties: lowest id),
    /// at most `limit`.
    async fn due_tasks(&self, now: i64, limit: usize) -> Result<Vec<TaskRecord>>;

    /// Runs a pending task, in one transaction: checks it against its rule's
    /// current version and status, and either ends it (`expired`, `cancelled`,
    /// `failed` for want of an audience, with a detail) or creates its job and
    /// segments (`segment_size` each, deadline `now + deadline_secs`, priority
    /// and channel from the version) and marks it `running`. A job of an empty
    /// audience is created `done` and its task `succeeded` at once.
    ///
    /// The checks, in order: not pending (or unknown) → `NotPending`, nothing
    /// changes; planned from a version that is no longer current → `Expired`
    /// (even if the rule is also disabled); rule not enabled → `Cancelled`;
    /// version without `audience_id`, or naming an audience that is unknown,
    /// not sealed or another tenant's → `NoAudience` (task `failed`). The job
    /// and its segments belong to the rule's tenant. A started task has `job_id`,
    /// `recipients` (the audience size) and `started_at = now`; the job's
    /// `deadline_at` is `now + deadline_secs * 1000`. A `segment_size` of 0
    /// counts as 1.
    async fn start_task(&self, task_id: i64, now: i64, segment_size: u64) -> Result<TaskStart>;

    async fn get_task(&self, id: i64) -> Result<Option<TaskRecord>>;

    /// Cancels one pending task, whatever its rule does next: `cancelled`
    /// with a detail, `finished_at = now` and `changed_by = by`, in one
    /// guarded write (`state = 'pending'`), so a planner starting it at the
    /// same moment on any node either runs it or finds it cancelled. Its
    /// occurrence is not planned again (tasks are unique per rule, version
    /// and time); the rule's next occurrence is planned as usual. `None` for
    /// an unknown task.
    async fn cancel_task(
        &self,
        task_id: i64,
        now: i64,
        by: Option<Actor>,
    ) -> Result<Option<TaskCancel>>;

    // ---- Jobs and segments ----

    /// Creates a job and its segments over a sealed audience of `spec.tenant`.
    /// `None` if the audience is unknown, not sealed, or another tenant's. An
    /// empty audience gives a job that is `done` at once (`finished_at = now`,
    /// no segments).
    ///
    /// Segments tile `[0, size)` in `segment_size` steps (0 counts as 1, and the
    /// job records the size used), ids increasing with `start`; each is
    /// `pending` with `cursor = start`, `epoch = 0`, `attempt = 1`,
    /// `not_before = now`, no owner or lease.
    ///
    /// `spec.follow_up` is stored with it (waiting). With `spec.follows`, the
    /// job is created only if that job's follow-up is still waiting (else
    /// `None`, nothing written), and the follow-up becomes `sent` with it.
    async fn create_job(&self, spec: JobSpec, now: i64) -> Result<Option<JobRecord>>;

    async fn get_job(&self, id: i64) -> Result<Option<JobRecord>>;

    /// Job `job_id`'s follow-up, if it has one.
    async fn get_follow_up(&self, job_id: i64) -> Result<Option<FollowUpRecord>>;

    /// Waiting follow-ups whose job ended at least `after_ms` before `now`,
    /// by job id, at most `limit`.
    async fn due_follow_ups(&self, now: i64, limit: usize) -> Result<Vec<FollowUpRecord>>;

    /// Job `job_id`'s delivered sends from index `from` on with no `read`
    /// receipt, by index, at most `limit`: `(index, recipient)`.
    async fn unread_sends(
        &self,
        job_id: i64,
        from: u64,
        limit: usize,
    ) -> Result<Vec<(u64, String)>>;

    /// Job `job_id`'s sends from index `from` on whose outcome is one of
    /// `on` (a route step's: `no_address`, `opted_out`, `failed` for any
    /// other failure but a cap, `unread` for delivered with no `read`
    /// receipt), by index, at most `limit`: `(index, recipient)`.
    async fn step_sends(
        &self,
        job_id: i64,
        from: u64,
        limit: usize,
        on: &[herald_core::route::StepOn],
    ) -> Result<Vec<(u64, String)>>;

    /// Ends a waiting follow-up with nothing sent; whether it was waiting.
    async fn skip_follow_up(&self, job_id: i64, now: i64) -> Result<bool>;

    /// The jobs that follow job `job_id` (its follow-up, route steps and
    /// resends: [`JobRecord::follows`]) with `id > after`, by id, at most
    /// `limit`.
    async fn jobs_following(&self, job_id: i64, after: i64, limit: usize)
    -> Result<Vec<JobRecord>>;

    /// Jobs of `tenant` with `id < before` (all when `None`), newest first, at
    /// most `limit`.
    async fn list_jobs(
        &self,
        tenant: TenantId,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<JobRecord>> {
        self.list_jobs_where(tenant, JobFilter::default(), before, limit)
            .await
    }

    /// [`Self::list_jobs`], only those `filter` lets through. A category is
    /// read off its own index (`jobs_category`); a name prefix is compared
    /// case-sensitively, character by character.
    async fn list_jobs_where(
        &self,
        tenant: TenantId,
        filter: JobFilter,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<JobRecord>>;

    /// Number of a job's segments in each state (states with none left out).
    async fn segment_counts(&self, job_id: i64) -> Result<Vec<(SegmentState, u64)>>;

    /// A job's segments by id, `id > after`, at most `limit`.
    async fn job_segments(
        &self,
        job_id: i64,
        after: Option<i64>,
        limit: usize,
    ) -> Result<Vec<SegmentRecord>>;

    /// Cancels a running job: its pending and running segments end `cancelled`,
    /// the recipients they had left count as cancelled, its task (if any) ends
    /// `cancelled`. Returns the job as it is afterwards (`None` if unknown); a job
    /// already final is returned unchanged.
    ///
    /// Every recipient without a final outcome, unsent or retrying, counts as
    /// cancelled (`cancelled = total - delivered - failed - expired`,
    /// `retrying = 0`), so a cancelled job has nothing remaining. Retrying
    /// recipients keep their `retry` row in the log (their last attempt's
    /// outcome); partial segments are left for the sweeper to mark handled.
    async fn cancel_job(&self, id: i64, now: i64) -> Result<Option<JobRecord>> {
        self.cancel_job_by(id, now, None).await
    }

    /// [`Self::cancel_job`], by `by`: the job's `changed_by` (and its task's,
    /// when the cancel ends it), unless the job had already ended.
    async fn cancel_job_by(
        &self,
        id: i64,
        now: i64,
        by: Option<Actor>,
    ) -> Result<Option<JobRecord>>;

    /// Sends a job's `failed` (or `in_doubt`, by `which`) recipients again, in
    /// one transaction: their rows go back to `retry` (the next attempt
    /// continues their numbering), the totals move them from `failed` (or
    /// `in_doubt`) to `retrying`, new pending segments (attempt 1) cover them,
    /// and a `done` job is `running` again (`finished_at` cleared; its task
    /// keeps the outcome it had). `None` for an unknown job; `NotRetryable`
    /// for a cancelled or expired one. No such send: the job unchanged with
    /// `retried = 0`.
    async fn retry_sends(
        &self,
        job_id: i64,
        which: Resend,
        now: i64,
    ) -> Result<Option<FailedRetry>> {
        self.retry_sends_by(job_id, which, now, None).await
    }

    /// [`Self::retry_sends`], by `by`: the job's `changed_by` when anything
    /// was sent again.
    async fn retry_sends_by(
        &self,
        job_id: i64,
        which: Resend,
        now: i64,
        by: Option<Actor>,
    ) -> Result<Option<FailedRetry>>;

    /// Up to `limit` of a job's failed sends (by index) grouped by error,
    /// read from the failed-send index.
    async fn job_failures(&self, job_id: i64, limit: usize) -> Result<FailureGroups>;

    /// Claims one pending segment for `owner` until `now + lease_ms`: the
    /// highest-priority claimable one (ties: lowest segment id) among running
    /// jobs whose deadline has not passed and whose `not_before <= now`. The
    /// claim is a guarded update (`state = 'pending'`), so two claimers never get
    /// the same segment; on PostgreSQL concurrent claimers skip each other's rows
    /// (`FOR UPDATE SKIP LOCKED`). Bumps the epoch, sets the job's `started_at`
    /// on its first claim.
    ///
    /// A deadline has passed when `deadline_at <= now` (nothing is sent at the
    /// deadline). The returned segment and job are as they are after the claim
    /// (segment `running`, epoch ≥ 1; job with `started_at`).
    async fn claim_segment(
        &self,
        owner: &str,
        now: i64,
        lease_ms: i64,
    ) -> Result<Option<ClaimedSegment>> {
        self.claim_segment_ahead(owner, now, lease_ms, 0).await
    }

    /// [`Self::claim_segment`], raising the claimed segment's `sent_to` to
    /// `cursor + mark_ahead` in the same write (never lowering it, never past
    /// the segment's end; 0 leaves it alone): the claimer's first sends then
    /// wait for no write of their own. The returned segment carries the new
    /// `sent_to`.
    async fn claim_segment_ahead(
        &self,
        owner: &str,
        now: i64,
        lease_ms: i64,
        mark_ahead: u64,
    ) -> Result<Option<ClaimedSegment>>;

    /// `recipient`'s index in job `job_id`'s audience, found by searching the
    /// audience's chunks for the text (each a substring test in the database,
    /// then the line in the chunks that hold it). The send log has no
    /// recipient index on purpose: one would cost every campaign insert.
    /// `None` when the job does not exist or the recipient is not in it.
    async fn recipient_index(&self, job_id: i64, recipient: &str) -> Result<Option<u64>>;

    /// Where `recipient` stands in job `job_id`: its index and its send-log
    /// row, which is `None` until the job has tried it.
    async fn find_send(&self, job_id: i64, recipient: &str) -> Result<Option<RecipientSend>> {
        let Some(index) = self.recipient_index(job_id, recipient).await? else {
            return Ok(None);
        };
        let end = index.saturating_add(1);
        let send = self.job_sends(job_id, index, end).await?.into_iter().next();
        Ok(Some(RecipientSend { index, send }))
    }

    /// The send-log rows of a job with `start <= index < end`, by index.
    async fn job_sends(&self, job_id: i64, start: u64, end: u64) -> Result<Vec<SendRecord>>;

    /// A job's send-log rows in `state` with an index above `after` (all, when
    /// `None`), by index, at most `limit`. Rows `failed`, `retry` and
    /// `in_doubt` are read from their own partial indexes; other states walk
    /// the job's log.
    async fn job_sends_in_state(
        &self,
        job_id: i64,
        state: SendState,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<SendRecord>>;

    /// Records a batch of attempts under a claim, in one transaction, and moves
    /// the segment's cursor to `cursor` and its lease to `now + lease_ms`.
    ///
    /// The send-log rows are written whatever the claim's state (the attempts
    /// happened): a new index is inserted with `attempts = 1`; an index already
    /// `retry` takes the new state with `attempts + 1`; an index already final is
    /// left alone. The job's totals move by exactly what the rows changed. The
    /// cursor and lease move only while the claim is current (same owner and
    /// epoch, segment still `running`): otherwise the answer is `Lost`.
    ///
    /// Clarifications:
    /// - An entry's index must lie in the claim's segment `[start, end)` and
    ///   `cursor` in `[start, end]`; an `Expired` entry is refused (only the
    ///   sweeper expires). Any of these, an unknown segment, or a segment of
    ///   another job is an error and nothing is written.
    /// - The cursor never moves back (`max(stored, cursor)`); an empty batch just
    ///   renews the lease. The same index twice in one batch applies in order.
    /// - Counters: while the job runs, a row moves between `retrying`,
    ///   `delivered` and `failed` as its state does. Once the job ended
    ///   `cancelled` or `expired`, every recipient without a final outcome is
    ///   counted in that bucket, so a late write that settles one (a new index,
    ///   or a `retry` row) moves it out of the bucket into `delivered`/`failed`.
    ///   Totals always satisfy `delivered + failed + expired + cancelled <= total`.
    async fn record_sends(
        &self,
        claim: &SegmentClaim,
        cursor: u64,
        entries: Vec<SendEntry>,
        now: i64,
        lease_ms: i64,
    ) -> Result<LeaseCheck> {
        let at = Progress { cursor, sent_to: 0 };
        self.record_progress(claim, at, entries, now, lease_ms)
            .await
    }

    /// [`Self::record_sends`], and raises the segment's `sent_to` to
    /// `at.sent_to` (never lowers it, never past the segment's end) in the
    /// same transaction, while the claim is current. A worker calls it before
    /// a send leaves, so after a crash the store knows which recipients may
    /// have been sent without a recorded outcome: the unfinished ones in
    /// `[cursor, sent_to)`. A call with no entries writes only the segment
    /// row, without the job's lock.
    async fn record_progress(
        &self,
        claim: &SegmentClaim,
        at: Progress,
        entries: Vec<SendEntry>,
        now: i64,
        lease_ms: i64,
    ) -> Result<LeaseCheck> {
        let writes = vec![SegmentWrite {
            claim: claim.clone(),
            at,
            entries,
        }];
        let mut checks = self.record_many(writes, now, lease_ms).await?;
        checks
            .pop()
            .ok_or_else(|| crate::StoreError::Corrupt("record_progress answered nothing".into()))
    }

    /// Several [`Self::record_progress`] writes, of any segments and jobs, in
    /// one transaction: a group commit for a node's segment workers, so each
    /// commit, and each job's lock, serves all of them. The answers are in
    /// the order of `writes`. An error means none was written.
    async fn record_many(
        &self,
        writes: Vec<SegmentWrite>,
        now: i64,
        lease_ms: i64,
    ) -> Result<Vec<LeaseCheck>>;

    /// Ends a claimed segment whose cursor reached its end: `partial` if any of
    /// its range is still `retry` in the send log, else `done`. When that leaves
    /// the job with no pending or running segment and nothing retrying, the job
    /// ends `done` (and its task follows) in the same transaction. `Lost` if the
    /// claim is no longer current (then nothing changes).
    ///
    /// A current claim whose cursor is short of the end is an error (nothing
    /// changes). `Held` carries the lease as it stood; finishing does not extend it.
    async fn finish_segment(&self, claim: &SegmentClaim, now: i64) -> Result<LeaseCheck>;

    /// The single-runner duties, in one transaction per kind of work:
    /// - running segments with `lease_until < now` end `abandoned`, and a new
    ///   pending segment (`parent_id` = the old one, same attempt) covers from
    ///   the lowest index below its cursor still `retry`, or else its cursor, to
    ///   its end, when anything is left;
    /// - `partial` segments get a re-issue over `[first retry index, end)` with
    ///   `attempt + 1` and `not_before = now + retry_backoff_ms * attempt`, or,
    ///   once `attempt >= max_attempts`, their `retry` rows end `failed`; either
    ///   way the partial segment is then marked handled so it is not re-issued twice;
    /// - running jobs past their deadline end `expired`: pending and running
    ///   segments end `expired`, `retry` rows end `expired`, unsent recipients
    ///   count as expired; the task follows;
    /// - running jobs with no pending or running segment and nothing retrying end
    ///   `done`; the task follows.
    ///
    /// Clarifications:
    /// - Order: deadlines first, then leases, partial segments, idle jobs, so a
    ///   job past its deadline is expired, not re-issued. A deadline has passed
    ///   when `deadline_at <= now`. A job past it with every recipient already
    ///   final ends `done` (counted in `finished_jobs`), not `expired`.
    /// - Re-issued segments copy priority and deadline, start `pending` with
    ///   `cursor = start`, `epoch = 0`; after an abandon `not_before = now`.
    /// - The backoff multiplies by the partial segment's own attempt: the first
    ///   re-issue (attempt 2) waits one `retry_backoff_ms`, the next two.
    /// - A partial segment whose job is no longer running, or whose range has no
    ///   `retry` row left, is just marked handled.
    /// - Recipients failed after `max_attempts` keep their last error and count
    ///   in `failed_recipients`; the job's `retrying` moves to `failed`.
    /// - Nothing is done twice: a second sweep at the same time reports zeros.
    async fn sweep(&self, now: i64, opts: SweepOptions) -> Result<SweepReport>;
}

/// The statements both backends run ([`crate::shared_sql::Statement`]).
pub(crate) mod sql {
    /// Audiences (`sqlite/campaign/audiences.rs`, `postgres/campaign/audiences.rs`).
    pub(crate) mod audiences {
        use crate::model::audience_cols;
        use crate::shared_sql::{Statement, statement};

        pub(crate) const CHUNKS: Statement = statement!(
            "SELECT chunk_no, count, data FROM audience_chunks \
             WHERE audience_id = $1 AND chunk_no >= $2 AND chunk_no <= $3 ORDER BY chunk_no"
        );
        /// `Some(size)` per audience: `NULL` while open.
        pub(crate) const LIST: Statement = statement!(concat!(
            "SELECT ",
            audience_cols!(),
            " FROM audiences WHERE tenant_id = $1 AND id > $2 ORDER BY id LIMIT $3"
        ));
        pub(crate) const SIZE: Statement = statement!("SELECT size FROM audiences WHERE id = $1");
        pub(crate) const CREATE: Statement = statement!(
            "INSERT INTO audiences (tenant_id, name, created_at) VALUES ($1, $2, $3) RETURNING id"
        );
        pub(crate) const GET: Statement = statement!(concat!(
            "SELECT ",
            audience_cols!(),
            " FROM audiences WHERE id = $1"
        ));
        pub(crate) const DROP_CHUNK: Statement =
            statement!("DELETE FROM audience_chunks WHERE audience_id = $1 AND chunk_no = $2");
        pub(crate) const REFERRED: Statement = statement!(
            "SELECT EXISTS (SELECT 1 FROM jobs WHERE audience_id = $1) \
             OR EXISTS (SELECT 1 FROM rule_versions WHERE audience_id = $1)"
        );
        pub(crate) const DROP_CHUNKS: Statement =
            statement!("DELETE FROM audience_chunks WHERE audience_id = $1");
        pub(crate) const DROP_AUDIENCE: Statement =
            statement!("DELETE FROM audiences WHERE id = $1");
    }

    /// Follow-ups of finished jobs.
    pub(crate) mod follow_ups {
        use crate::shared_sql::{Statement, statement};

        /// $1 job, $2 now. Only a waiting follow-up moves on.
        pub(crate) const CLAIM: Statement = statement!(
            "UPDATE job_follow_ups SET state = 1, done_at = $2 \
             WHERE job_id = $1 AND state = 0"
        );
        /// The waiting ones come off their partial index; each job by its key.
        pub(crate) const DUE: Statement = statement!(
            "SELECT f.job_id, f.after_ms, f.message, f.state, f.follow_up_job_id, \
             f.done_at, f.step FROM job_follow_ups AS f JOIN jobs AS j ON j.id = f.job_id \
             WHERE f.state = 0 AND j.finished_at IS NOT NULL AND j.finished_at + f.after_ms <= $1 \
             ORDER BY f.job_id LIMIT $2"
        );
        pub(crate) const INSERT: Statement = statement!(
            "INSERT INTO job_follow_ups (job_id, after_ms, message, state, step) \
             VALUES ($1, $2, $3, 0, $4)"
        );
        pub(crate) const SET_JOB: Statement =
            statement!("UPDATE job_follow_ups SET follow_up_job_id = $2 WHERE job_id = $1");
        pub(crate) const SKIP: Statement = statement!(
            "UPDATE job_follow_ups SET state = 2, done_at = $2 \
             WHERE job_id = $1 AND state = 0"
        );
    }

    /// Jobs and their sends.
    pub(crate) mod jobs {
        use crate::model::{job_cols, send_cols};
        use crate::shared_sql::{Statement, statement};

        /// $1 job, $2 a recipient: the job's audience chunks that hold the
        /// text somewhere (maybe inside a longer recipient), in order.
        pub(crate) const CHUNKS_WITH_SQLITE: &str = "SELECT c.chunk_no, c.data FROM jobs AS j \
             CROSS JOIN audience_chunks AS c ON c.audience_id = j.audience_id \
             WHERE j.id = ?1 AND instr(c.data, ?2) > 0 ORDER BY c.chunk_no";
        /// [`CHUNKS_WITH_SQLITE`] on PostgreSQL, where a chunk is `bytea`.
        pub(crate) const CHUNKS_WITH_PG: &str = "SELECT c.chunk_no, c.data FROM jobs AS j \
             JOIN audience_chunks AS c ON c.audience_id = j.audience_id \
             WHERE j.id = $1 AND position($2::bytea IN c.data) > 0 ORDER BY c.chunk_no";
        pub(crate) const SENDS: Statement = statement!(concat!(
            "SELECT ",
            send_cols!(),
            " FROM job_sends WHERE job_id = $1 AND idx >= $2 AND idx < $3 ORDER BY idx"
        ));
        pub(crate) const GET_JOB: Statement =
            statement!(concat!("SELECT ", job_cols!(), " FROM jobs WHERE id = $1"));
        /// $8 now: an attempt's outcome was recorded (`last_sent_at`).
        pub(crate) const MOVE_COUNTERS: Statement = statement!(
            "UPDATE jobs SET delivered = delivered + $2, failed = failed + $3, \
             retrying = retrying + $4, expired = expired + $5, cancelled = cancelled + $6, \
             in_doubt = in_doubt + $7, last_sent_at = CASE WHEN last_sent_at IS NULL \
             OR last_sent_at < $8 THEN $8 ELSE last_sent_at END WHERE id = $1"
        );
        pub(crate) const FOLLOWING: Statement = statement!(concat!(
            "SELECT ",
            job_cols!(),
            " FROM jobs WHERE follows = $1 AND id > $2 ORDER BY id LIMIT $3"
        ));
        /// Whether a job that follows $1 is still running.
        pub(crate) const FOLLOWER_SENDING: Statement = statement!(
            "SELECT EXISTS (SELECT 1 FROM jobs WHERE follows = $1 AND state = 'running')"
        );
    }

    /// Who made or changed a rule, a job or a task ([`crate::Actor`]): $1
    /// the row, $2 the key's id, $3 its name. Run in the transaction of the
    /// change.
    pub(crate) mod actors {
        use crate::shared_sql::{Statement, statement};

        pub(crate) const RULE_CREATED: Statement = statement!(
            "UPDATE rules SET created_by_key_id = $2, created_by_key_name = $3, \
             changed_by_key_id = $2, changed_by_key_name = $3 WHERE id = $1"
        );
        pub(crate) const RULE_CHANGED: Statement = statement!(
            "UPDATE rules SET changed_by_key_id = $2, changed_by_key_name = $3 WHERE id = $1"
        );
        pub(crate) const JOB_CHANGED: Statement = statement!(
            "UPDATE jobs SET changed_by_key_id = $2, changed_by_key_name = $3 WHERE id = $1"
        );
        /// The task a cancelled job $1 ended.
        pub(crate) const JOB_TASK_CANCELLED: Statement = statement!(
            "UPDATE tasks SET changed_by_key_id = $2, changed_by_key_name = $3 \
             WHERE id = (SELECT task_id FROM jobs WHERE id = $1) AND state = 'cancelled'"
        );
    }

    /// Rules, their versions and tasks.
    pub(crate) mod rules {
        use crate::model::task_cols;
        use crate::shared_sql::{Statement, statement};

        pub(crate) const INSERT_RULE: Statement = statement!(
            "INSERT INTO rules (tenant_id, status, version, created_at, updated_at) \
             VALUES ($2, 'enabled', 1, $1, $1) RETURNING id"
        );
        pub(crate) const INSERT_VERSION: Statement = statement!(
            "INSERT INTO rule_versions \
             (rule_id, version, name, schedule, audience, audience_id, channel, message, \
             deadline_secs, priority, created_at, tenant_id, routing, follow_up_after_ms, \
             follow_up_message) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)"
        );
        pub(crate) const RULE_TASKS: Statement = statement!(concat!(
            "SELECT ",
            task_cols!(),
            " FROM tasks WHERE rule_id = $1 ORDER BY planned_at DESC, id DESC LIMIT $2"
        ));
        pub(crate) const SET_STATUS: Statement =
            statement!("UPDATE rules SET status = $2, updated_at = $3 WHERE id = $1");
        /// A new version is current at once; a finished rule comes back, a disabled one
        /// stays disabled (its owner turned it off; editing it does not turn it on).
        /// Only the rule's own tenant may version it.
        pub(crate) const BUMP_RULE: Statement = statement!(
            "UPDATE rules SET version = version + 1, updated_at = $2, \
             status = CASE WHEN status = 'finished' THEN 'enabled' ELSE status END \
             WHERE id = $1 AND tenant_id = $3 RETURNING version"
        );
        pub(crate) const GET_TASK: Statement = statement!(concat!(
            "SELECT ",
            task_cols!(),
            " FROM tasks WHERE id = $1"
        ));
        /// $1 task, $2 now, $3 $4 who. Only a pending task moves.
        pub(crate) const CANCEL_TASK: Statement = statement!(concat!(
            "UPDATE tasks SET state = 'cancelled', detail = 'cancelled by an operator', \
             finished_at = $2, changed_by_key_id = $3, changed_by_key_name = $4 \
             WHERE id = $1 AND state = 'pending' RETURNING ",
            task_cols!()
        ));
        pub(crate) const DUE_TASKS: Statement = statement!(concat!(
            "SELECT ",
            task_cols!(),
            " FROM tasks WHERE state = 'pending' AND planned_at <= $1 ORDER BY planned_at, id LIMIT $2"
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::{AUDIENCE_CHUNK, FailureGroups, index_in_chunk, retry_runs};

    #[test]
    fn index_in_chunk_matches_whole_lines_only() {
        let data = b"malice\nbob\nalice\nalice";
        assert_eq!(index_in_chunk(0, data, b"alice"), Some(2));
        assert_eq!(
            index_in_chunk(2, data, b"bob"),
            Some(2 * AUDIENCE_CHUNK + 1)
        );
        assert_eq!(index_in_chunk(0, data, b"ali"), None);
        assert_eq!(index_in_chunk(0, b"solo", b"solo"), Some(0));
    }

    #[test]
    fn retry_runs_span_gaps_only_when_allowed_and_stay_within_a_segment() {
        let idxs = [1, 2, 4, 9, 10, 11];
        assert_eq!(retry_runs(&idxs, 3, true), vec![(1, 3), (4, 5), (9, 12)]);
        assert_eq!(retry_runs(&idxs, 5, true), vec![(1, 5), (9, 12)]);
        assert_eq!(retry_runs(&idxs, 5, false), vec![(1, 3), (4, 5), (9, 12)]);
        assert_eq!(retry_runs(&[7], 0, true), vec![(7, 8)]);
        assert!(retry_runs(&[], 10, true).is_empty());
    }

    #[test]
    fn failure_groups_count_at_most_the_limit() {
        let e = |s: &str| Some(s.to_string());
        let g = FailureGroups::from_errors(vec![e("b"), None, e("b"), e("a"), e("a")], 4);
        assert_eq!(
            g.groups,
            vec![("b".into(), 2), (String::new(), 1), ("a".into(), 1)]
        );
        assert_eq!((g.scanned, g.truncated), (4, true));
    }
}
