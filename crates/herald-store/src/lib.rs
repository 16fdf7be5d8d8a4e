//! The `Store` seam.
//!
//! Everything Herald keeps goes through [`Store`]. The engine and the API know
//! this trait only; backends (SQLite, the embedded default, and PostgreSQL, for
//! several nodes sharing one database) live in their own modules and are chosen
//! by URL with [`open`]. One conformance suite (`testsuite`, behind the
//! `testsuite` feature) runs unchanged against every backend.

pub mod access;
mod calendars;
pub mod campaign;
mod caps;
mod cluster;
mod digest;
mod directory;
mod grants;
mod migration;
mod model;
mod options;
mod owner;
pub mod postgres;
mod provider;
pub mod redact;
mod refusals;
mod reminders;
mod reports;
mod retention;
mod shared_sql;
pub mod sqlite;
mod subject_query;
pub use subject_query::{FailedReminder, SubjectOutcomes};
mod templates;
#[cfg(any(test, feature = "testsuite"))]
pub mod testsuite;
mod timer_query;
mod timers;

use std::sync::Arc;

use async_trait::async_trait;

pub use access::*;
pub use calendars::{CalendarRecord, CalendarStore};
pub use campaign::*;
pub use caps::{CapStore, CapTake, CapVerdict};
pub use cluster::{ClusterStore, Fence, Holder, NamedLease, NodeInfo, ShardLease};
pub use directory::{DirectoryStore, MAX_USER_ID_BYTES, PutSubscriber, SubscriberRecord};
pub use grants::{
    GrantEnd, GrantGiven, GrantRecord, GrantRecording, GrantSettle, GrantStore, GrantUse,
    GrantsRecorded, MAX_GRANT_COUNT, MAX_GRANTS_HELD, MAX_GRANTS_PER_RECORDING,
};
pub use options::{PostgresOptions, SqliteOptions, StoreOptions, Synchronous};
pub use owner::{Owned, owned_by};
pub use provider::{
    ChannelPause, ChannelToken, FINAL_RECALLED, JobMessage, ProviderStore, ReceiptCounts,
    ReceiptEvent, ReceiptOn,
};
pub use redact::RedactedUrl;
pub use reminders::{
    BatchScope, MergeProbe, NewReminder, PutSubject, ReminderBatch, ReminderStore, ReminderTimer,
    SubjectRecord, SubjectSummary, SubjectTiming, SubscriptionCounts,
};
pub use reports::{MAX_REPORT_ROWS, ReportDim, ReportQuery, ReportRow};
pub use retention::{JobDeletion, PURGE_BATCH, PartitionChanges, PartitionCutoffs, RetentionKind};
pub use templates::{
    NewTemplateVersion, TemplateCensus, TemplateRecord, TemplateStore, TemplateWrite,
};
pub use timer_query::{
    DEAD_LETTER_SAMPLE, DEAD_LETTER_SCAN, DeadLetterGroup, DeadLetters, RetryFilter, SortOrder,
    TimerFilter,
};
pub use timers::{
    Applied, Completion, CompletionOutcome, DeferReason, DeliveryRecord, DueCount, DueCounts,
    DueCursor, DueEntry, FiringMark, InDoubtResolved, NewTimer, NextStep, TimerPatch, TimerRecord,
    TimerStore, Unsendable, WriteOp, WriteResult,
};

/// The store's traits, for callers that hold a concrete store (or call an
/// area's method through a generic bound): `use herald_store::prelude::*;`.
/// A `dyn Store` needs none of them in scope.
pub mod prelude {
    pub use crate::{
        AccessStore, CalendarStore, CampaignStore, CapStore, ClusterStore, DirectoryStore,
        GrantStore, ProviderStore, ReminderStore, Store, TemplateStore, TimerStore,
    };
}

/// Errors a store can give. A method that returns any of them changed nothing.
///
/// The variants say whose fault a failure is, so callers can answer without
/// reading message text: a caller error (`NotFound`, `Conflict`, `Refused`)
/// becomes a `4xx`, an `Unavailable` store a `503`, a `Full` one a `507`, and
/// the rest are Herald's own faults.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The URL names no backend this build knows.
    #[error(
        "unsupported store url {0:?}: expected sqlite://PATH, sqlite::memory: or \
         postgres://USER@HOST[:PORT]/DB (also postgresql://)"
    )]
    UnsupportedUrl(String),
    /// What the operation names does not exist.
    #[error("{what} not found")]
    NotFound {
        /// The thing looked for, e.g. `"audience 7"`.
        what: String,
    },
    /// The operation clashes with what is stored: a unique key another row
    /// holds, or a state that forbids it.
    #[error("{what}: {why}")]
    Conflict { what: String, why: String },
    /// The store refuses the request as given. `what` names the field,
    /// argument or setting at fault.
    #[error("{what}: {why}")]
    Refused { what: String, why: String },
    /// The backend could not be reached, or failed mid-operation. `code` is
    /// the SQLSTATE (PostgreSQL) or the extended result code (SQLite, as a
    /// number) when the driver reported one. Retrying later may succeed.
    #[error("store unavailable: {message}")]
    Unavailable {
        code: Option<String>,
        message: String,
    },
    /// The backend is out of space (SQLite `SQLITE_FULL`, PostgreSQL `53100`
    /// disk full): nothing was written. Reads still work, and writes succeed
    /// again once space returns.
    #[error("store full: {message}")]
    Full { message: String },
    /// A row held a value this version cannot read.
    #[error("corrupt row: {0}")]
    Corrupt(String),
    /// The backend broke one of its own invariants (a bug in Herald).
    #[error("store internal error: {0}")]
    Internal(String),
}

impl StoreError {
    /// A caller error on `what` (a field, argument or setting).
    pub fn refused(what: impl Into<String>, why: impl std::fmt::Display) -> Self {
        StoreError::Refused {
            what: what.into(),
            why: why.to_string(),
        }
    }

    /// A backend failure without a driver code.
    pub fn unavailable(message: impl Into<String>) -> Self {
        StoreError::Unavailable {
            code: None,
            message: message.into(),
        }
    }

    /// The driver's code (SQLSTATE or SQLite extended result code), if any.
    pub fn code(&self) -> Option<&str> {
        match self {
            StoreError::Unavailable { code, .. } => code.as_deref(),
            _ => None,
        }
    }

    /// Whether running the whole transaction again may succeed: PostgreSQL's
    /// deadlock (`40P01`) and serialization failure (`40001`).
    pub fn is_retryable(&self) -> bool {
        matches!(self.code(), Some("40P01" | "40001"))
    }
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// The single-bit mask of a reminder bit. Callers pass `Slot::bit` (0..60); a
/// bit beyond the 64 of the stored word is a caller bug, refused before
/// anything is written.
pub(crate) fn bit_mask(bit: u8) -> Result<u64> {
    1u64.checked_shl(u32::from(bit)).ok_or_else(|| {
        StoreError::refused(
            "bit",
            format!("reminder bit {bit} is outside the 64-bit subscription word"),
        )
    })
}

/// Reminder bitmaps are stored bit for bit in a signed 64-bit column (both
/// backends' integers are signed), so every bit of the `u64` round-trips.
pub(crate) fn bits_to_db(bits: u64) -> i64 {
    bits as i64
}

/// The inverse of [`bits_to_db`].
pub(crate) fn bits_from_db(v: i64) -> u64 {
    v as u64
}

/// Everything durable.
///
/// The methods are grouped by area, each in a trait of its own file that
/// `Store` requires: [`TimerStore`] (`timers.rs`), [`ReminderStore`]
/// (`reminders.rs`), [`DirectoryStore`] (`directory.rs`), [`ProviderStore`]
/// (`provider.rs`), [`ClusterStore`] (`cluster.rs`), [`CampaignStore`]
/// (`campaign.rs`) and [`AccessStore`] (`access.rs`). `Store` itself keeps
/// what concerns the whole store: shards, settings, retention and reports.
/// A `dyn Store` reaches every area's methods; a concrete store needs the
/// area's trait in scope ([`prelude`]).
///
/// Every method that writes commits one transaction before it returns `Ok`:
/// an `Ok` means the change is on disk. A method that returns `Err` changed nothing.
///
/// Every timer, delivery, subject and subscription belongs to one tenant.
/// Writes and reads by natural key (idempotency key, subject id, user id) and
/// lists take the tenant; reads by numeric id return the record with its
/// tenant, for the caller to check.
#[async_trait]
pub trait Store:
    CalendarStore
    + CampaignStore
    + AccessStore
    + CapStore
    + ClusterStore
    + DirectoryStore
    + GrantStore
    + ProviderStore
    + ReminderStore
    + TemplateStore
    + TimerStore
    + Send
    + Sync
    + 'static
{
    /// The number of virtual shards. Fixed when the store is first created with
    /// `wanted`; later calls return the stored value whatever `wanted` is.
    async fn init_shards(&self, wanted: u16) -> Result<u16>;

    /// A setting the store keeps for the whole cluster (`meta` table), such
    /// as the reminder leads its subscriptions were made under.
    async fn get_meta(&self, key: &str) -> Result<Option<String>>;

    /// Stores (or replaces) a setting of [`Store::get_meta`].
    async fn put_meta(&self, key: &str, value: &str) -> Result<()>;

    // ---- Retention ----

    /// Deletes up to `limit` rows of `kind` older than `cutoff` (Unix ms; what
    /// "older" means is the kind's, see [`RetentionKind`]) in one short
    /// transaction, and returns how many rows it deleted (children counted:
    /// a job's sends, an audience's chunks). Fewer than `limit` means nothing of
    /// `kind` is left before `cutoff`. Candidates are found through an index
    /// on their age, never a scan. Never touches a pending or firing timer, a
    /// running job (or one with a follow-up waiting), an audience a stored job
    /// or a rule version names, or a subject a pending reminder refers to.
    async fn purge(&self, kind: RetentionKind, cutoff: i64, limit: usize) -> Result<u64>;

    /// Keeps the partitions of the send logs, where a store has them
    /// (PostgreSQL; SQLite has none and does nothing): makes those the next
    /// rows will need, and drops each partition none of whose rows
    /// retention must keep at `cutoffs` (the rules of [`Store::purge`]), with
    /// every row in it. The retention sweeper calls it under its lease
    /// before purging. Rows outside a droppable partition are left to
    /// [`Store::purge`].
    async fn maintain_partitions(&self, cutoffs: PartitionCutoffs) -> Result<PartitionChanges>;

    // ---- Reports ----

    /// Delivery outcomes summed as `query` asks, in group order. The counts
    /// are added in the transaction that writes each send-log row (a timer's
    /// attempt, a campaign recipient's new outcome) and are never purged.
    async fn report(&self, query: ReportQuery) -> Result<Vec<ReportRow>>;
}

/// The completion [`TimerStore::resolve_in_doubt`] records for a firing timer it
/// ends `in_doubt`: the attempt it was making, started when it was marked.
pub(crate) fn in_doubt_completion(t: &TimerRecord, at: i64) -> Completion {
    Completion {
        timer_id: t.id,
        tenant: t.tenant,
        attempt: t.attempts.saturating_add(1),
        outcome: CompletionOutcome::InDoubt,
        channel: t.channel.clone(),
        idempotency_key: t.delivery_key(),
        provider_msgid: None,
        status: None,
        error: Some(
            "in doubt: the node sending it stopped before recording an outcome; \
             the channel skips in-doubt sends"
                .to_string(),
        ),
        started_at: t.updated_at,
        finished_at: at,
        fence: None,
        step: t.route_step(),
        next: None,
    }
}

/// Unix milliseconds by the wall clock, for the few rows the store stamps
/// itself (a tenant's `created_at`); everything else gets its time from the
/// caller.
pub(crate) fn wall_clock_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Opens the store a URL names: `sqlite://PATH` (the file and its directory are
/// created if missing), `sqlite::memory:`, or `postgres://USER[:PASSWORD]@HOST[:PORT]/DB`
/// (also `postgresql://`; the database must exist, its schema is created or
/// migrated; `?pool_size=N` sets the connection pool size, and libpq-style
/// parameters such as `connect_timeout` or `application_name` are accepted).
pub async fn open(url: &str, opts: &StoreOptions) -> Result<Arc<dyn Store>> {
    match StoreUrl::parse(url)? {
        StoreUrl::Postgres => Ok(Arc::new(postgres::PgStore::open(url, opts).await?)),
        StoreUrl::SqliteFile(path) => Ok(Arc::new(sqlite::SqliteStore::open(path, opts).await?)),
        StoreUrl::SqliteMemory => Ok(Arc::new(sqlite::SqliteStore::open_memory(opts).await?)),
    }
}

/// Which backend a store URL names, as [`open`] reads it; for commands that
/// work on a store without opening it (`herald backup`, `herald restore`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreUrl<'a> {
    /// `sqlite://PATH`: the database file.
    SqliteFile(&'a str),
    /// `sqlite::memory:`.
    SqliteMemory,
    /// `postgres://...` or `postgresql://...`.
    Postgres,
}

impl<'a> StoreUrl<'a> {
    /// The backend `url` names; [`StoreError::UnsupportedUrl`] for none.
    pub fn parse(url: &'a str) -> Result<StoreUrl<'a>> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(StoreUrl::Postgres);
        }
        if let Some(path) = url.strip_prefix("sqlite://") {
            return Ok(StoreUrl::SqliteFile(path));
        }
        if url == "sqlite::memory:" {
            return Ok(StoreUrl::SqliteMemory);
        }
        Err(StoreError::UnsupportedUrl(redact::redact(url)))
    }
}
