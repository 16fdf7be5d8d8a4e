//! Subjects and reminder subscriptions: a (user, subject) bitmap of
//! reminder bits, each set bit with its timer, fired at the subject's start
//! less the bit's lead.
//!
//! [`ReminderStore`] is one area of [`crate::Store`] (reminders are added and
//! cancelled through [`crate::TimerStore::apply`], with the other writes);
//! its rows are read through `model::timers` and written by each backend's
//! `reminders` and `subjects` modules.

use async_trait::async_trait;
use herald_core::TenantId;

use herald_core::TimerId;

use crate::{DueEntry, NewTimer, Result, TimerRecord};

/// A subject as the API gives it. Subject ids are unique per tenant.
#[derive(Debug, Clone, PartialEq)]
pub struct PutSubject {
    pub tenant: TenantId,
    pub subject_id: String,
    /// Unix ms when the subject starts (the coupon opens).
    pub start_at: i64,
    pub title: Option<String>,
    /// A JSON object, as text.
    pub data: Option<String>,
    /// How its reminders are timed (early window, late sends).
    pub timing: SubjectTiming,
    /// Its own reminder templates: a JSON object from channel type to
    /// template reference, as text (`None`: it has none).
    pub templates: Option<String>,
    pub at: i64,
}

/// A subject's own say in when its reminders go (issue 39 §4): `None` and
/// `false` leave it to the configuration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SubjectTiming {
    /// How far before their due time its reminders may start when a burst
    /// cannot be sent in time at the channel's rate; `None` takes the
    /// configured `[reminders] early_window_ms`.
    pub early_window_ms: Option<i64>,
    /// Its reminders still go out after it started, instead of ending
    /// `expired`.
    pub send_late: bool,
}

impl PutSubject {
    /// The subject as this put leaves it, first created at `created_at`.
    pub fn record(&self, created_at: i64) -> SubjectRecord {
        SubjectRecord {
            tenant: self.tenant,
            subject_id: self.subject_id.clone(),
            start_at: self.start_at,
            title: self.title.clone(),
            data: self.data.clone(),
            timing: self.timing,
            templates: self.templates.clone(),
            created_at,
            updated_at: self.at,
        }
    }
}

/// A stored subject.
#[derive(Debug, Clone, PartialEq)]
pub struct SubjectRecord {
    pub tenant: TenantId,
    pub subject_id: String,
    pub start_at: i64,
    pub title: Option<String>,
    /// A JSON object, as text.
    pub data: Option<String>,
    pub timing: SubjectTiming,
    /// Its own reminder templates: a JSON object from channel type to
    /// template reference, as text (`None`: it has none).
    pub templates: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// A subject's subscriptions, counted up to a cap: a read of a subject with a
/// million subscribers walks at most `cap` index entries, never all of them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubscriptionCounts {
    /// Distinct users among the counted reminders.
    pub subscribers: u64,
    /// Reminders (set bits, pending or sent), at most the cap.
    pub reminders: u64,
    /// The subject has more reminders than the cap: both figures are lower
    /// bounds.
    pub capped: bool,
    /// Counted reminders per bit, in bit order (only when asked for).
    pub by_bit: Vec<(u8, u64)>,
}

/// A subject with its subscriptions counted.
#[derive(Debug, Clone, PartialEq)]
pub struct SubjectSummary {
    pub subject: SubjectRecord,
    pub counts: SubscriptionCounts,
}

/// One reminder to add: a bit of the (user, subject) bitmap and its timer.
/// It belongs to its timer's tenant (see [`NewReminder::tenant`]): user and
/// subject ids are those of that tenant.
#[derive(Debug, Clone, PartialEq)]
pub struct NewReminder {
    pub user_id: String,
    pub subject_id: String,
    /// The bitmap bit (`herald_core::reminder::Slot::bit`), 0..60.
    pub bit: u8,
    /// How long before the subject's start it fires.
    pub lead_ms: i64,
    /// The timer to create. The store sets its `due_at` to the subject's
    /// `start_at - lead_ms`, read in the same transaction.
    pub timer: NewTimer,
    /// A fire time at or before this is refused as [`crate::WriteResult::TooLate`].
    pub not_before: i64,
    /// The subscribe grant the tap that asked for the reminder gave (a
    /// mini-program's "remind me"): recorded in the same transaction, first,
    /// and whatever becomes of the reminder, because the provider granted it.
    pub grant: Option<crate::GrantRecording>,
}

impl NewReminder {
    /// The tenant of the subscription: its timer's.
    pub fn tenant(&self) -> TenantId {
        self.timer.tenant
    }
}

/// A reminder timer with its place in a subscription.
#[derive(Debug, Clone, PartialEq)]
pub struct ReminderTimer {
    pub subject_id: String,
    pub bit: u8,
    pub timer: TimerRecord,
}

/// "Pending reminders of `user_id` (of `tenant`) on `channel`, due in
/// `[from, until]`": the candidates to merge into one delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeProbe {
    pub tenant: TenantId,
    pub user_id: String,
    pub channel: String,
    pub from: i64,
    pub until: i64,
}

/// Pending reminders of one subject, bit, channel and due time, counted:
/// what the engine plans early starts from ([`ReminderStore::reminder_batches`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReminderBatch {
    pub tenant: TenantId,
    pub subject_id: String,
    /// The subject's start and its own early window.
    pub start_at: i64,
    pub early_window_ms: Option<i64>,
    pub bit: u8,
    pub channel: String,
    pub due_at: i64,
    pub count: u64,
}

/// Which batches [`ReminderStore::reminder_batches`] counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchScope {
    /// Every tenant's subjects starting in `[starts_from, starts_until)`,
    /// their pending reminders due in `[due_from, due_until)`.
    Due {
        starts_from: i64,
        starts_until: i64,
        due_from: i64,
        due_until: i64,
    },
    /// Every pending reminder of one subject.
    Subject {
        tenant: TenantId,
        subject_id: String,
    },
}

/// The reads of subjects and reminder subscriptions.
#[async_trait]
pub trait ReminderStore: Send + Sync + 'static {
    /// The subjects of `tenant` among `ids` that exist (any order).
    async fn get_subjects(&self, tenant: TenantId, ids: &[String]) -> Result<Vec<SubjectRecord>>;

    /// One page of `tenant`'s subjects in id order, after `after` when given,
    /// at most `limit`, each with its subscriptions counted up to `cap`
    /// (through the subject index: at most `cap + 1` entries per subject).
    async fn list_subjects(
        &self,
        tenant: TenantId,
        after: Option<&str>,
        limit: usize,
        cap: u64,
    ) -> Result<Vec<SubjectSummary>>;

    /// `tenant`'s subject `subject_id` with its subscriptions counted up to
    /// `cap`, per bit too; `None` when there is no such subject.
    async fn subject_summary(
        &self,
        tenant: TenantId,
        subject_id: &str,
        cap: u64,
    ) -> Result<Option<SubjectSummary>>;

    /// How `tenant`'s subject's reminders turned out: at most `cap` of them,
    /// read through the subject index (each a timer lookup), counted per
    /// state, with the `errors` most common errors of the failures and the
    /// newest `failed` failures. Empty when there is no such subject.
    async fn subject_outcomes(
        &self,
        tenant: TenantId,
        subject_id: &str,
        cap: u64,
        errors: usize,
        failed: usize,
    ) -> Result<crate::SubjectOutcomes>;

    /// `tenant`'s subject's failed and dead reminders due in `from..=until`,
    /// counted up to `cap` through the tenant's state index, so a list of
    /// subjects can mark the failing ones at a cost that grows with the
    /// failures, not with the subscriptions.
    async fn subject_failures(
        &self,
        tenant: TenantId,
        subject_id: &str,
        from: i64,
        until: i64,
        cap: u64,
    ) -> Result<u64>;

    /// Every reminder bit `user_id` of `tenant` holds, with its timer, ordered
    /// by subject then bit. At most `limit` rows.
    async fn user_reminders(
        &self,
        tenant: TenantId,
        user_id: &str,
        limit: usize,
    ) -> Result<Vec<ReminderTimer>>;

    /// The pending reminder timers each probe asks for (a tenant's user's, on
    /// one channel, due within a range), all probes' together, without duplicates.
    /// Uses an index on the user: never a scan of the subject or the due range.
    async fn pending_reminders(&self, probes: &[MergeProbe]) -> Result<Vec<TimerRecord>>;

    /// Pending reminder timers counted per (tenant, subject, bit, channel,
    /// due time), in that order, for the subjects `scope` names (through
    /// `subjects_start` and the subject index). Costs a read of each
    /// counted reminder: the engine asks only for batches about to start.
    async fn reminder_batches(&self, scope: &BatchScope) -> Result<Vec<ReminderBatch>>;

    /// Up to `limit` pending timers of one batch (`tenant`'s subject, bit and
    /// due time), in id order after `after`: what the engine starts early.
    /// Walks the subject index from `after`.
    async fn batch_due(
        &self,
        tenant: TenantId,
        subject_id: &str,
        bit: u8,
        due_at: i64,
        after: Option<TimerId>,
        limit: usize,
    ) -> Result<Vec<DueEntry>>;
}

/// The statements both backends run ([`crate::shared_sql::Statement`]).
pub(crate) mod sql {
    use crate::shared_sql::{Statement, statement};

    pub(crate) const UPDATE_SUBJECT: Statement = statement!(
        "UPDATE subjects \
         SET start_at = $3, title = $4, data = $5, updated_at = $6, \
             early_window_ms = $7, send_late = $8, templates = $9 \
         WHERE tenant_id = $1 AND subject_id = $2"
    );
    pub(crate) const STORE_BITS: Statement = statement!(
        "UPDATE reminders SET bits = $4, updated_at = $5 \
         WHERE tenant_id = $1 AND user_id = $2 AND subject_id = $3"
    );
    pub(crate) const DELETE_REMINDER: Statement = statement!(
        "DELETE FROM reminders WHERE tenant_id = $1 AND user_id = $2 AND subject_id = $3"
    );
}
