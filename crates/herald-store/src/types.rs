//! Plain data passed across the `Store` seam.

use herald_core::{Priority, TenantId, TimerId, TimerKind, TimerState};
use serde::{Deserialize, Serialize};

use crate::{Fence, NewReminder, PutSubject, SubjectRecord};

/// Backend tuning that is not part of the URL: one part per backend, each
/// read by its own backend only.
///
/// In a config file this is `[store_options.sqlite]` and
/// `[store_options.postgres]`. The flat keys of earlier releases
/// (`sqlite_synchronous`, `read_connections`, `pg_notify_window_ms`) are still
/// read; one given in both forms must agree.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "StoreOptionsToml")]
pub struct StoreOptions {
    #[serde(skip_serializing_if = "is_default")]
    pub sqlite: SqliteOptions,
    #[serde(skip_serializing_if = "is_default")]
    pub postgres: PostgresOptions,
}

/// The SQLite backend's settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SqliteOptions {
    pub synchronous: Synchronous,
    /// Read connections kept open beside the single writer.
    pub read_connections: usize,
    /// A cap on the database's size in pages (`PRAGMA max_page_count`, set on
    /// every connection); past it writes fail as a full disk would
    /// ([`crate::StoreError::Full`]). Unset: only the disk limits it. Mostly
    /// for tests and for keeping a database inside a quota.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_page_count: Option<u64>,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        SqliteOptions {
            synchronous: Synchronous::Full,
            read_connections: 4,
            max_page_count: None,
        }
    }
}

/// SQLite's `synchronous`: `full` fsyncs every commit, so an acknowledged
/// write survives power loss; `normal` survives a process crash only. Read
/// without regard to case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Synchronous {
    #[default]
    Full,
    Normal,
}

impl<'de> Deserialize<'de> for Synchronous {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        match s.trim().to_ascii_lowercase().as_str() {
            "full" => Ok(Synchronous::Full),
            "normal" => Ok(Synchronous::Normal),
            _ => Err(serde::de::Error::custom(format!(
                "expected \"full\" or \"normal\", found {s:?}"
            ))),
        }
    }
}

/// The PostgreSQL backend's settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PostgresOptions {
    /// `apply` announces new timers to other nodes (`NOTIFY`) only when they
    /// fall due within this many milliseconds from now; later ones are found
    /// by the owners' periodic loader scans.
    pub notify_window_ms: i64,
    /// The server ends any statement that runs longer (`statement_timeout`,
    /// set on every session), and every store call gives up on its own a few
    /// seconds after it: either way the call fails as
    /// [`crate::StoreError::Unavailable`].
    pub statement_timeout_ms: u64,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        PostgresOptions {
            notify_window_ms: 120_000,
            statement_timeout_ms: 30_000,
        }
    }
}

fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

/// `store_options` as a config file may spell it: the per-backend tables, or
/// the flat keys of earlier releases.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StoreOptionsToml {
    #[serde(default)]
    sqlite: SqliteToml,
    #[serde(default)]
    postgres: PostgresToml,
    sqlite_synchronous: Option<Synchronous>,
    read_connections: Option<usize>,
    pg_notify_window_ms: Option<i64>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SqliteToml {
    synchronous: Option<Synchronous>,
    read_connections: Option<usize>,
    max_page_count: Option<u64>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PostgresToml {
    notify_window_ms: Option<i64>,
    statement_timeout_ms: Option<u64>,
}

/// The value of a setting given under its new key, its old one, or both
/// (which must agree).
fn either<T: PartialEq + std::fmt::Debug>(
    new: Option<T>,
    old: Option<T>,
    new_key: &str,
    old_key: &str,
) -> Result<Option<T>, String> {
    match (new, old) {
        (Some(n), Some(o)) if n != o => Err(format!(
            "{old_key} = {o:?} (the older name) and {new_key} = {n:?} disagree: keep {new_key}"
        )),
        (n, o) => Ok(n.or(o)),
    }
}

impl TryFrom<StoreOptionsToml> for StoreOptions {
    type Error = String;

    fn try_from(t: StoreOptionsToml) -> Result<Self, String> {
        let (sqlite, postgres) = (SqliteOptions::default(), PostgresOptions::default());
        Ok(StoreOptions {
            sqlite: SqliteOptions {
                synchronous: either(
                    t.sqlite.synchronous,
                    t.sqlite_synchronous,
                    "sqlite.synchronous",
                    "sqlite_synchronous",
                )?
                .unwrap_or(sqlite.synchronous),
                read_connections: either(
                    t.sqlite.read_connections,
                    t.read_connections,
                    "sqlite.read_connections",
                    "read_connections",
                )?
                .unwrap_or(sqlite.read_connections),
                max_page_count: t.sqlite.max_page_count,
            },
            postgres: PostgresOptions {
                notify_window_ms: either(
                    t.postgres.notify_window_ms,
                    t.pg_notify_window_ms,
                    "postgres.notify_window_ms",
                    "pg_notify_window_ms",
                )?
                .unwrap_or(postgres.notify_window_ms),
                statement_timeout_ms: t
                    .postgres
                    .statement_timeout_ms
                    .filter(|&ms| ms > 0)
                    .unwrap_or(postgres.statement_timeout_ms),
            },
        })
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
    pub fn delivery_key(&self) -> String {
        match &self.idempotency_key {
            Some(k) => k.clone(),
            None => format!(
                "{}timer-{}",
                herald_core::campaign::INTERNAL_KEY_PREFIX,
                self.id
            ),
        }
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
    TooLate { fire_at: i64 },
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
    /// address for the channel's type, or the recipient opted out. The timer
    /// becomes `failed`; nothing reached a provider.
    Unsendable(Unsendable),
    /// Written by [`crate::Store::resolve_in_doubt`] only: the node sending it
    /// died before recording an outcome, on a channel configured
    /// `in_doubt = "skip"`. The timer becomes `in_doubt` and is not sent again.
    InDoubt,
}

/// Why a delivery to a subscriber cannot be made (decided when it fires).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unsendable {
    /// No address of the channel's type.
    NoAddress,
    /// Opted out of the channel type or of the message's topic.
    OptedOut,
}

/// Why a delivery was deferred.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeferReason {
    /// The provider said slow down.
    Throttled,
    /// The channel's do-not-disturb window.
    QuietHours,
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
            CompletionOutcome::InDoubt => "in_doubt",
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
}

/// A timer about to be sent on an `in_doubt = "skip"` channel, for
/// [`crate::Store::mark_firing`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
}

/// What [`crate::Store::resolve_in_doubt`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InDoubtResolved {
    /// Timers ended `in_doubt` (their channel skips in-doubt sends).
    pub in_doubt: u64,
    /// Timers put back to `pending`, to be sent again.
    pub resent: u64,
}

/// What [`crate::Store::complete`] did with one completion's timer update.
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
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde::de::IntoDeserializer;
    use serde::de::value::{Error, MapDeserializer};

    use super::*;

    /// Reads `store_options` from string keys and values.
    fn read(pairs: &[(&str, &str)]) -> Result<StoreOptions, Error> {
        let map = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string()));
        StoreOptions::deserialize(MapDeserializer::new(map))
    }

    #[test]
    fn synchronous_is_full_or_normal_in_any_case() {
        let read = |s: &str| Synchronous::deserialize(s.into_deserializer());
        let ok: Result<_, Error> = read("FULL");
        assert_eq!(ok.unwrap(), Synchronous::Full);
        let ok: Result<_, Error> = read(" normal ");
        assert_eq!(ok.unwrap(), Synchronous::Normal);
        for bad in ["off", "extra", ""] {
            let err: Result<_, Error> = read(bad);
            let err = err.unwrap_err().to_string();
            assert!(err.contains("full") && err.contains("normal"), "{err}");
        }
    }

    /// Both forms of every key, and what a file may not hold, are read
    /// through the config loader's tests (`herald/src/config.rs`).
    #[test]
    fn nothing_given_is_the_default_and_unknown_keys_are_refused() {
        assert_eq!(read(&[]).unwrap(), StoreOptions::default());
        assert!(read(&[("bogus", "1")]).is_err());
    }
}
