//! Timers and their send log: the group-commit write path (`apply`), the
//! loader's reads, delivery outcomes, and the operator's searches and counts.
//!
//! [`TimerStore`] is one area of [`crate::Store`]; its rows are read through
//! `model::timers` and written by each backend's `timers`, `timer_ops`,
//! `digests` and `apply` modules.

use async_trait::async_trait;
use herald_core::{Priority, TenantId, TimerId, TimerKind, TimerState};

use crate::{
    DeadLetters, Fence, MergeProbe, NewReminder, PutSubject, Result, SortOrder, SubjectRecord,
    TimerFilter,
};
/// Pending timers due in one bucket of a forecast, on one channel, as
/// [`TimerStore::due_counts`] counts them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DueCount {
    pub tenant: TenantId,
    pub channel: String,
    /// Reminders (`kind = reminder`) apart from every other kind.
    pub reminder: bool,
    /// Index of the bucket: `(due_at - from) / bucket_ms`.
    pub bucket: u32,
    pub count: u64,
}

/// What [`TimerStore::due_counts`] counted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DueCounts {
    pub counts: Vec<DueCount>,
    /// Set when the count stopped at its row limit: the due time of the last
    /// timer counted. Every timer due before it is counted; from it on, only
    /// some (or none) are.
    pub cut_at: Option<i64>,
}

impl DueCounts {
    /// The answer from grouped rows, each with the latest due time it
    /// counted: when `max_rows` were counted the scan may have stopped, and
    /// the latest due time counted is where.
    pub(crate) fn from_groups(groups: Vec<(DueCount, i64)>, max_rows: u64) -> Self {
        let total: u64 = groups.iter().map(|(c, _)| c.count).sum();
        let cut_at = (total >= max_rows)
            .then(|| groups.iter().map(|(_, at)| *at).max())
            .flatten();
        Self {
            counts: groups.into_iter().map(|(c, _)| c).collect(),
            cut_at,
        }
    }
}

/// A timer to create.
#[derive(Debug, Clone, PartialEq)]
pub struct NewTimer {
    /// The tenant it belongs to: its idempotency key is unique within it.
    pub tenant: TenantId,
    pub shard: u16,
    /// Unix milliseconds.
    pub due_at: i64,
    pub priority: Priority,
    pub kind: TimerKind,
    /// Name of a configured channel.
    pub channel: String,
    pub recipient: String,
    /// The message object, as JSON text.
    pub message: String,
    /// Caller-supplied key; unique among the tenant's timers that have one.
    pub idempotency_key: Option<String>,
    pub created_at: i64,
    /// The W3C `traceparent` of the request that created it, sent on with
    /// each webhook delivery.
    pub traceparent: Option<String>,
    /// How the subscriber directory routes it when it fires (JSON; see
    /// `herald_core::timer::Routing`); `None` sends to `recipient` as stored.
    pub routing: Option<String>,
}

impl NewTimer {
    /// The record this timer becomes once stored under `id`: pending, no attempts yet.
    pub fn into_record(self, id: TimerId) -> TimerRecord {
        TimerRecord {
            id,
            tenant: self.tenant,
            shard: self.shard,
            due_at: self.due_at,
            priority: self.priority,
            kind: self.kind,
            state: TimerState::Pending,
            channel: self.channel,
            recipient: self.recipient,
            message: self.message,
            idempotency_key: self.idempotency_key,
            attempts: 0,
            last_error: None,
            created_at: self.created_at,
            updated_at: self.created_at,
            delivered_at: None,
            attempt_base: 0,
            traceparent: self.traceparent,
            routing: self.routing,
        }
    }
}

/// A timer as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct TimerRecord {
    pub id: TimerId,
    pub tenant: TenantId,
    pub shard: u16,
    pub due_at: i64,
    pub priority: Priority,
    pub kind: TimerKind,
    pub state: TimerState,
    pub channel: String,
    pub recipient: String,
    pub message: String,
    pub idempotency_key: Option<String>,
    /// Attempts made so far (0 until the first outcome is written).
    pub attempts: u32,
    pub last_error: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    /// When the channel acknowledged delivery.
    pub delivered_at: Option<i64>,
    /// `attempts` when the current series of attempts began: 0, or the count
    /// at the last retry. The retry policy counts `attempts - attempt_base`.
    pub attempt_base: u32,
    /// The W3C `traceparent` of the request that created it.
    pub traceparent: Option<String>,
    /// See [`NewTimer::routing`].
    pub routing: Option<String>,
}

impl TimerRecord {
    /// This timer's position in the `(due_at, id)` order used by [`DueCursor`].
    pub fn cursor(&self) -> DueCursor {
        DueCursor {
            due_at: self.due_at,
            id: self.id,
        }
    }

    /// What the wheel and the dispatch queues need of this timer.
    pub fn due_entry(&self) -> DueEntry {
        DueEntry {
            id: self.id,
            due_at: self.due_at,
            shard: self.shard,
            priority: self.priority,
            tenant: self.tenant,
        }
    }

    /// The key passed to providers: the caller's own key, or one derived from
    /// the id under the prefix callers may not use, so the two never meet.
    /// A later step of a fallback route adds `:s{step}`: another message,
    /// which a receiver that drops repeats must not take for the first.
    pub fn delivery_key(&self) -> String {
        let base = match &self.idempotency_key {
            Some(k) => k.clone(),
            None => format!(
                "{}timer-{}",
                herald_core::campaign::INTERNAL_KEY_PREFIX,
                self.id
            ),
        };
        match self.route_step() {
            Some(s) if s > 0 => format!("{base}:s{s}"),
            _ => base,
        }
    }

    /// The fallback route's step the timer is at; `None` without a route.
    pub fn route_step(&self) -> Option<u32> {
        // Most routed timers have no route: skip the parse for them.
        let text = self.routing.as_deref()?;
        if !text.contains("\"route\"") {
            return None;
        }
        let r = herald_core::timer::Routing::parse(Some(text));
        (!r.route.is_empty()).then_some(r.step)
    }
}

/// One write in a group-commit batch.
#[derive(Debug, Clone, PartialEq)]
pub enum WriteOp {
    InsertTimer(NewTimer),
    /// Insert a timer whose routing carries a `digest`: it joins the open
    /// digest of its tenant, recipient, channel and key (due at its close,
    /// which may slide and move the members), or opens one
    /// ([`WriteResult::DigestCreated`], or `Existing` for a taken key).
    InsertDigest(NewTimer),
    /// Cancel a pending timer of `tenant` at time `at`. Another tenant's timer
    /// is [`WriteResult::NotFound`], as if it did not exist.
    CancelTimer {
        tenant: TenantId,
        id: TimerId,
        at: i64,
    },
    /// Create a subject, or change it. A new `start_at` moves every pending
    /// reminder timer of the subject by the same amount, in this transaction.
    PutSubject(PutSubject),
    /// Delete a subject of `tenant`: its pending reminder timers are cancelled
    /// and its subscriptions removed.
    DeleteSubject {
        tenant: TenantId,
        subject_id: String,
        at: i64,
    },
    /// Set one bit of a (user, subject) subscription and create its timer.
    AddReminder(NewReminder),
    /// Clear the bits of `mask` in a (user, subject) subscription of `tenant`
    /// and cancel their pending timers. A subscription left with no bits is removed.
    CancelReminders {
        tenant: TenantId,
        user_id: String,
        subject_id: String,
        mask: u64,
        at: i64,
    },
    /// Change a pending timer of `tenant`: [`WriteResult::Updated`], or
    /// [`WriteResult::WrongState`] once it finished, or `NotFound`.
    PatchTimer(TimerPatch),
    /// Create a timer, or ("latest wins") give the pending timer of its
    /// tenant that holds its idempotency key its due time, message and
    /// priority: `Created`, `Updated`, or `Existing` for a finished one.
    ReplaceTimer(NewTimer),
    /// Replay a dead or failed timer of `tenant`: pending again, due `at`,
    /// a new series of attempts ([`WriteResult::Retried`]); any other state
    /// is [`WriteResult::WrongState`].
    RetryTimer {
        tenant: TenantId,
        id: TimerId,
        at: i64,
    },
    /// Replay at most `limit` dead or failed timers of `tenant` matching
    /// `filter`, oldest due first ([`WriteResult::RetriedMany`]).
    RetryTimers {
        tenant: TenantId,
        filter: crate::RetryFilter,
        at: i64,
        limit: usize,
    },
    /// Create or replace a directory entry ([`WriteResult::SubscriberPut`],
    /// or [`WriteResult::VersionConflict`] when `if_version` no longer holds).
    PutSubscriber(crate::PutSubscriber),
    /// Record the subscribe grants of one tap ([`WriteResult::GrantsRecorded`]):
    /// in a batch with [`WriteOp::AddReminder`], "remind me" and the grant
    /// it needs commit together.
    RecordGrants(crate::GrantRecording),
    /// Remove a directory entry ([`WriteResult::SubscriberDeleted`] or
    /// [`WriteResult::NotFound`]).
    DeleteSubscriber {
        tenant: TenantId,
        user_id: String,
    },
}

/// What [`WriteOp::PatchTimer`] changes; `None` keeps the stored value.
#[derive(Debug, Clone, PartialEq)]
pub struct TimerPatch {
    pub tenant: TenantId,
    pub id: TimerId,
    pub due_at: Option<i64>,
    /// The message object, as JSON text.
    pub message: Option<String>,
    pub priority: Option<Priority>,
    pub at: i64,
}

/// The result of one [`WriteOp`].
#[derive(Debug, Clone, PartialEq)]
pub enum WriteResult {
    /// A new timer was inserted.
    Created(TimerRecord),
    /// A timer with the same idempotency key already existed; nothing was written.
    Existing(TimerRecord),
    /// The timer was pending and is now cancelled.
    Cancelled(TimerRecord),
    /// No timer has that id (or it is another tenant's); for subject and
    /// reminder ops, no such subject or subscription in the tenant.
    NotFound,
    /// The timer is no longer pending; it is returned as it is.
    NotCancellable(TimerRecord),
    /// A subject was created (`created`) or updated; `moved` lists its pending
    /// reminder timers at their new due times (empty unless `start_at` changed).
    SubjectPut {
        subject: SubjectRecord,
        created: bool,
        moved: Vec<DueEntry>,
    },
    /// A subject was deleted, with the ids of the pending timers cancelled.
    SubjectDeleted {
        subject: SubjectRecord,
        cancelled: Vec<TimerId>,
    },
    /// The reminder's subject does not exist.
    SubjectNotFound,
    /// The bit is already set: nothing was written. `bits` is the subscription.
    ReminderExists { bits: u64 },
    /// The reminder would fire at `fire_at`, not after `not_before`: refused.
    /// `start_at` is its subject's start, so the refusal can say whether the
    /// subject itself has already started.
    TooLate { fire_at: i64, start_at: i64 },
    /// Bits were cleared (`cleared`, possibly 0 when none of the mask was set);
    /// `remaining` is what the subscription holds now; `cancelled` the timers
    /// that were still pending.
    RemindersCancelled {
        cleared: u64,
        remaining: u64,
        cancelled: Vec<TimerId>,
    },
    /// A digest timer was inserted, due at its digest's close; `moved` are
    /// the members of the digest it joined, at the later close it slid to.
    DigestCreated {
        timer: TimerRecord,
        moved: Vec<DueEntry>,
    },
    /// A pending timer was changed (patched, or replaced by key); `moved`
    /// when its due time changed.
    Updated { timer: TimerRecord, moved: bool },
    /// The timer is not in a state the op applies to (a patch or replace:
    /// not pending; a retry: neither dead nor failed); it is returned as it is.
    WrongState(TimerRecord),
    /// A dead or failed timer is pending again, due now.
    Retried(TimerRecord),
    /// The timers a filtered retry replayed; `more` when others still match.
    RetriedMany { timers: Vec<DueEntry>, more: bool },
    /// A directory entry was created (`created`) or replaced.
    SubscriberPut {
        subscriber: crate::SubscriberRecord,
        created: bool,
    },
    /// A directory entry was removed; it is returned as it was.
    SubscriberDeleted(crate::SubscriberRecord),
    /// [`WriteOp::RecordGrants`]: whether the key was new, and the user's
    /// grants on the channel afterwards.
    GrantsRecorded(crate::GrantsRecorded),
    /// A conditional write found another version: nothing was written.
    /// `current` is the entry as stored (`None`: there is none).
    VersionConflict {
        current: Option<crate::SubscriberRecord>,
    },
}

impl WriteResult {
    /// Timers this result put on the schedule: created, or moved to a new due
    /// time. The engine wheels them; shared stores announce them to other nodes.
    pub fn scheduled(&self) -> Vec<DueEntry> {
        match self {
            WriteResult::Created(t) => vec![t.due_entry()],
            WriteResult::DigestCreated { timer, moved } => std::iter::once(timer.due_entry())
                .chain(moved.iter().copied())
                .collect(),
            WriteResult::SubjectPut { moved, .. } => moved.clone(),
            WriteResult::Updated { timer, moved: true } | WriteResult::Retried(timer) => {
                vec![timer.due_entry()]
            }
            WriteResult::RetriedMany { timers, .. } => timers.clone(),
            _ => Vec::new(),
        }
    }
}

/// Position in the `(due_at, id)` order of pending timers, for keyset paging.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct DueCursor {
    pub due_at: i64,
    pub id: TimerId,
}

/// What the loader needs to place a timer in the wheel: small on purpose. It
/// carries the tenant so the engine can dispatch fairly before it reads rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DueEntry {
    pub id: TimerId,
    pub due_at: i64,
    pub shard: u16,
    pub priority: Priority,
    pub tenant: TenantId,
}

impl DueEntry {
    pub fn cursor(&self) -> DueCursor {
        DueCursor {
            due_at: self.due_at,
            id: self.id,
        }
    }
}

/// How one delivery attempt ended, and what it does to the timer.
#[derive(Debug, Clone, PartialEq)]
pub enum CompletionOutcome {
    /// Delivered: the timer becomes `done`.
    Done,
    /// Failed retryably: the timer stays pending, due again at `next_due_at`.
    Retry { next_due_at: i64 },
    /// Refused permanently: the timer becomes `failed`.
    Failed,
    /// Failed retryably with no attempts left: the timer becomes `dead`.
    Dead,
    /// Not sent for a reason that is no fault of the delivery: the provider
    /// throttled the channel, or the channel is in quiet hours. The timer stays
    /// pending, due again at `next_due_at`, and the attempt is **not** counted,
    /// so throttling can never make a timer `dead`.
    Deferred {
        next_due_at: i64,
        reason: DeferReason,
    },
    /// Not sent, and never will be: the recipient's directory entry has no
    /// address for the channel's type, the recipient opted out, or the
    /// reminder's subject has started (`expired`). The timer becomes
    /// `failed`; nothing reached a provider. The send log's outcome says which.
    Unsendable(Unsendable),
    /// Written by [`crate::TimerStore::resolve_in_doubt`] only: the node sending it
    /// died before recording an outcome, on a channel configured
    /// `in_doubt = "skip"`. The timer becomes `in_doubt` and is not sent again.
    InDoubt,
    /// A fallback route's `unread` step found the step before read: it is
    /// not sent, and the timer becomes `done` (its `delivered_at` stays the
    /// read send's).
    Read,
}

/// Why a delivery to a subscriber cannot be made (decided when it fires).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unsendable {
    /// No address of the channel's type.
    NoAddress,
    /// Opted out of the channel type or of the message's topic.
    OptedOut,
    /// Its template could not be rendered (the error says why).
    TemplateError,
    /// Over a frequency cap of the recipient (`[[caps]]`; the error names it).
    Capped,
    /// A reminder still unsent when its subject started: worth nothing now
    /// (issue 39 §4). Decided when it comes to be sent; a subject or a
    /// subscription that says `send_late` never expires.
    Expired,
    /// A mini-program subscribe message for which the user has no grant
    /// left: by the ledger, or by the provider's word (`43101`).
    NoGrant,
}

/// Why a delivery was deferred.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeferReason {
    /// The provider said slow down.
    Throttled,
    /// The channel's do-not-disturb window.
    QuietHours,
    /// Over a frequency cap configured `on_cap = "defer"` (reminders):
    /// due again when the cap's window frees a slot.
    Capped,
}

impl CompletionOutcome {
    /// The send-log outcome name.
    pub fn as_str(&self) -> &'static str {
        match self {
            CompletionOutcome::Done => "delivered",
            CompletionOutcome::Retry { .. } => "retry",
            CompletionOutcome::Failed => "failed",
            CompletionOutcome::Dead => "dead",
            CompletionOutcome::Deferred {
                reason: DeferReason::Throttled,
                ..
            } => "throttled",
            CompletionOutcome::Deferred {
                reason: DeferReason::QuietHours,
                ..
            } => "deferred",
            CompletionOutcome::Unsendable(Unsendable::NoAddress) => "no_address",
            CompletionOutcome::Unsendable(Unsendable::OptedOut) => "opted_out",
            CompletionOutcome::Unsendable(Unsendable::TemplateError) => "template_error",
            CompletionOutcome::Unsendable(Unsendable::Capped) => "capped",
            CompletionOutcome::Deferred {
                reason: DeferReason::Capped,
                ..
            } => "cap_deferred",
            CompletionOutcome::Unsendable(Unsendable::Expired) => "expired",
            CompletionOutcome::Unsendable(Unsendable::NoGrant) => "no_grant",
            CompletionOutcome::InDoubt => "in_doubt",
            CompletionOutcome::Read => "read",
        }
    }

    /// The timer's attempt count after this outcome, from the attempt number
    /// just made: a deferral leaves it where it was.
    pub fn attempts_after(&self, attempt: u32) -> u32 {
        match self {
            CompletionOutcome::Deferred { .. } => attempt.saturating_sub(1),
            _ => attempt,
        }
    }
}

/// One finished delivery attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub timer_id: TimerId,
    /// The timer's tenant, copied onto its send-log row.
    pub tenant: TenantId,
    /// 1 for the first attempt.
    pub attempt: u32,
    pub outcome: CompletionOutcome,
    pub channel: String,
    pub idempotency_key: String,
    /// Message id the provider gave, if any.
    pub provider_msgid: Option<String>,
    /// Provider status (HTTP status for webhooks), if any.
    pub status: Option<i64>,
    pub error: Option<String>,
    pub started_at: i64,
    pub finished_at: i64,
    /// The shard lease the sender held when it fired the timer. The store applies
    /// the timer update only while that lease is still the shard's current one;
    /// `None` skips the check (for callers that own no shards).
    pub fence: Option<Fence>,
    /// The fallback route's step this attempt was (kept in the send log);
    /// `None` for a timer without a route.
    pub step: Option<u32>,
    /// The route goes on: instead of what `outcome` does to the timer, it
    /// stays pending for this step (the log row still says `outcome`).
    pub next: Option<NextStep>,
}

/// A timer's next step of its fallback route, written with the outcome of
/// the step before in one transaction, so no step is lost or sent twice.
#[derive(Debug, Clone, PartialEq)]
pub struct NextStep {
    /// When the step is due (unix ms).
    pub due_at: i64,
    /// The step's channel.
    pub channel: String,
    /// The timer's routing at that step (JSON).
    pub routing: String,
}

/// A timer about to be sent on an `in_doubt = "skip"` channel, for
/// [`crate::TimerStore::mark_firing`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FiringMark {
    pub timer_id: TimerId,
    /// The attempt about to be made (1 for the first): the timer must still
    /// be pending with `attempts == attempt - 1`.
    pub attempt: u32,
    /// The lease the sender holds; `None` skips the check.
    pub fence: Option<Fence>,
    /// When the send starts (the timer's `updated_at`; the in-doubt send-log
    /// row's `started_at` if it is left in doubt).
    pub at: i64,
    /// The subscribe grant the send spends, in the same transaction (see
    /// `grants`): without one left the timer is not marked
    /// ([`Applied::NoGrant`]). A timer holding one from an earlier attempt
    /// spends no other.
    pub grant: Option<crate::GrantUse>,
}

/// What [`crate::TimerStore::resolve_in_doubt`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InDoubtResolved {
    /// Timers ended `in_doubt` (their channel skips in-doubt sends).
    pub in_doubt: u64,
    /// Timers put back to `pending`, to be sent again.
    pub resent: u64,
}

/// What [`crate::TimerStore::complete`] did with one completion's timer update.
/// The send-log row is written in every case: the attempt happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// The timer took its new state.
    Yes,
    /// The timer was no longer pending at that attempt (cancelled meanwhile, or the
    /// attempt was already recorded).
    NotPending,
    /// The sender's shard lease is no longer current: another node owns the shard.
    Fenced,
    /// The mark needed a subscribe grant and the user has none left: the
    /// timer stays pending, for the caller to end `no_grant`.
    NoGrant,
}

/// One row of the send log.
#[derive(Debug, Clone, PartialEq)]
pub struct DeliveryRecord {
    pub id: i64,
    pub timer_id: TimerId,
    /// Its timer's tenant.
    pub tenant: TenantId,
    pub attempt: u32,
    pub channel: String,
    /// `delivered`, `retry`, `failed` or `dead`.
    pub outcome: String,
    pub idempotency_key: String,
    pub provider_msgid: Option<String>,
    pub status: Option<i64>,
    pub error: Option<String>,
    pub started_at: i64,
    pub finished_at: i64,
    /// What the provider reported later about this message (a callback such as
    /// WeChat's `TEMPLATESENDJOBFINISH`: `success`, `user_block`,
    /// `system_failed`), or `recalled`. `None` until something was reported.
    pub final_status: Option<String>,
    /// When `final_status` was recorded (unix ms).
    pub final_at: Option<i64>,
    /// The step of the timer's fallback route this attempt was; `None` for
    /// a timer without a route.
    pub step: Option<u32>,
}

/// Timers: the batched writes, the loader's and the sender's reads and
/// writes, the send log, and the operator's searches and counts.
#[async_trait]
pub trait TimerStore: Send + Sync + 'static {
    /// Applies a batch of API writes in one transaction (group commit): one
    /// result per op, in order. An op that cannot apply (e.g. cancelling a timer
    /// that already fired) yields its result and does not abort the others.
    async fn apply(&self, ops: Vec<WriteOp>) -> Result<Vec<WriteResult>>;

    /// One timer, whatever its state or tenant.
    async fn get_timer(&self, id: TimerId) -> Result<Option<TimerRecord>>;

    /// Pending timers of the shards in `shards` with `(due_at, id) > after` and
    /// `due_at < until`, ordered by `(due_at, id)`, at most `limit`. Uses an
    /// index: never a full scan. A short page means nothing more is due before
    /// `until` in those shards.
    async fn load_due(
        &self,
        shards: &herald_core::ShardSet,
        after: Option<DueCursor>,
        until: i64,
        limit: usize,
    ) -> Result<Vec<DueEntry>>;

    /// The full rows of those of `ids` that are still pending (any order; unknown or
    /// non-pending ids are left out).
    async fn fetch_pending(&self, ids: &[TimerId]) -> Result<Vec<TimerRecord>>;

    /// Records a batch of delivery attempts in one transaction: one send-log row per
    /// completion, and the timer's new state. A timer update applies only if the
    /// completion's fence (when it has one) is the shard's current lease epoch, and
    /// the timer is still pending (or marked firing, see [`TimerStore::mark_firing`])
    /// with `attempts == completion.attempt - 1`.
    /// Otherwise the send-log row is still written and the timer is left alone.
    /// Returns what happened to each timer update, in order.
    async fn complete(&self, batch: Vec<Completion>) -> Result<Vec<Applied>>;

    /// Marks timers `firing` (state code 1) before their send leaves, in one
    /// transaction for the whole batch (group commit), for channels whose
    /// in-doubt sends are skipped: a node that dies mid-send then leaves them
    /// out of the pending index, for [`TimerStore::resolve_in_doubt`] to find. A
    /// mark applies only under the shard's current lease epoch (when fenced)
    /// to a timer still pending with `attempts == mark.attempt - 1`; returns
    /// what happened to each, in order. [`TimerStore::complete`] accepts a firing
    /// timer as it does a pending one.
    async fn mark_firing(&self, marks: Vec<FiringMark>) -> Result<Vec<Applied>>;

    /// Puts timers this node marked firing and then let go unsent (a clean
    /// shutdown) back to pending, due when they were; ids not firing are left
    /// alone. Returns how many went back.
    async fn unmark_firing(&self, ids: Vec<TimerId>, at: i64) -> Result<u64>;

    /// Resolves the timers left `firing` in the shards of `fences` whose lease
    /// epoch is still the one given (others are left alone, for their current
    /// owner), in one transaction. A timer on a channel named in `skip` ends
    /// `in_doubt`, with a send-log row of outcome `in_doubt` for the attempt
    /// it was making (started when it was marked, finished at `at`); any other
    /// goes back to `pending` at its due time, to be sent again. Found through
    /// a partial index on firing timers: never a scan of the pending ones.
    async fn resolve_in_doubt(
        &self,
        fences: &[Fence],
        skip: &[String],
        at: i64,
    ) -> Result<InDoubtResolved>;

    /// The send log of one timer, oldest attempt first.
    async fn deliveries_for(&self, timer_id: TimerId) -> Result<Vec<DeliveryRecord>>;

    /// The pending timers of kind `timer` with routing (digest members and
    /// others: the caller picks by key) each probe asks for (a tenant's
    /// recipient's, on one channel, due within a range), without duplicates,
    /// in `(due_at, id)` order; at most 512 per probe. Uses the recipient's
    /// index: never a scan of the due range.
    async fn pending_digests(&self, probes: &[MergeProbe]) -> Result<Vec<TimerRecord>>;

    /// A page of `tenant`'s timers matching `filter`, in `(due_at, id)` order
    /// (`order`), after `after` when given, at most `limit`. Walks one index
    /// (the tenant's, its state's, its recipient's, or the idempotency key's):
    /// never a scan of every timer.
    async fn search_timers(
        &self,
        tenant: TenantId,
        filter: &TimerFilter,
        after: Option<DueCursor>,
        limit: usize,
        order: SortOrder,
    ) -> Result<Vec<TimerRecord>>;

    /// `tenant`'s newest (by due time) at most [`DEAD_LETTER_SCAN`] dead and
    /// failed timers (on `channel` when given), grouped by channel, state and
    /// last error, largest groups first. Read through the state index.
    async fn dead_letters(&self, tenant: TenantId, channel: Option<&str>) -> Result<DeadLetters>;

    /// Number of timers of each tenant in each state, ordered by tenant then
    /// state (pairs with none are left out). Read from the counters the
    /// store keeps as timers change (migration 0019), so it costs a few rows
    /// whatever the number of timers, and is exact as of one snapshot.
    async fn count_by_tenant_state(&self) -> Result<Vec<(TenantId, TimerState, u64)>>;

    /// The same figures as [`TimerStore::count_by_tenant_state`], counted from the
    /// timers themselves: a full scan. For checking the counters, never for
    /// a periodic gauge.
    async fn scan_by_tenant_state(&self) -> Result<Vec<(TenantId, TimerState, u64)>>;

    /// Folds the counters' pending changes into their totals, so reading
    /// them stays cheap; returns how many change rows it folded. PostgreSQL
    /// appends a change row per writing statement (one counter row per
    /// state would serialise every writer); SQLite updates its counters in
    /// place and has nothing to fold. Safe from several nodes at once: one
    /// folds, the others return 0 at once.
    async fn fold_timer_counts(&self) -> Result<u64>;

    /// When the oldest timer that searches still find outside the search
    /// indexes was created (clock ms): how far behind SQLite's filer is.
    /// `None` when every timer is filed, and always on a store that files a
    /// timer in its own insert (PostgreSQL). Two probes: the index of unfiled
    /// ids, then the row.
    async fn unfiled_since(&self) -> Result<Option<i64>> {
        Ok(None)
    }

    /// Every tenant's pending timers due in `[from, until)`, counted per
    /// tenant, channel, kind (reminder or not) and bucket of `bucket_ms`,
    /// for the forecast of what falls due. Walks the pending due index in
    /// due order and stops after `max_rows` timers ([`DueCounts::cut_at`]):
    /// its cost is bounded, and it is a scan, so callers cache the answer.
    async fn due_counts(
        &self,
        from: i64,
        until: i64,
        bucket_ms: i64,
        max_rows: u64,
    ) -> Result<DueCounts>;
}

/// The statements both backends run ([`crate::shared_sql::Statement`]).
pub(crate) mod sql {
    use crate::model::{delivery_cols, timer_cols};
    use crate::shared_sql::{Statement, statement};

    pub(crate) const TIMER_BY_ID: Statement = statement!(concat!(
        "SELECT ",
        timer_cols!(),
        " FROM timers WHERE id = $1"
    ));
    pub(crate) const DELIVERIES_FOR: Statement = statement!(concat!(
        "SELECT ",
        delivery_cols!(),
        " FROM deliveries WHERE timer_id = $1 ORDER BY id"
    ));
    pub(crate) const INIT_SHARDS: Statement = statement!(
        "INSERT INTO meta (key, value) VALUES ('shards', $1) ON CONFLICT (key) DO NOTHING"
    );
    pub(crate) const GET_SHARDS: Statement =
        statement!("SELECT value FROM meta WHERE key = 'shards'");
    /// $1 id, $2 tenant, $3 due_at, $4 message, $5 priority, $6 at. Only a pending timer.
    pub(crate) const PATCH_TIMER: Statement = statement!(concat!(
        "UPDATE timers SET due_at = COALESCE($3, due_at), message = COALESCE($4, message), \
         priority = COALESCE($5, priority), updated_at = $6 \
         WHERE id = $1 AND tenant_id = $2 AND state = 0 RETURNING ",
        timer_cols!()
    ));
    /// $1 id, $2 tenant, $3 at. Only a failed (3), dead (5) or in-doubt (6) timer.
    pub(crate) const RETRY_TIMER: Statement = statement!(concat!(
        "UPDATE timers SET state = 0, due_at = $3, attempt_base = attempts, updated_at = $3 \
         WHERE id = $1 AND tenant_id = $2 AND state IN (3, 5, 6) RETURNING ",
        timer_cols!()
    ));
}
