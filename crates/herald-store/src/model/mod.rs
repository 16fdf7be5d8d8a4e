//! Rows as both backends store them, decoded once.
//!
//! Each table has one column list (a `*_cols!` macro that yields a string
//! literal, so SQL constants can `concat!` it) and each record one reader
//! ([`Decode`]) that expects exactly those columns in that order. Both
//! backends select through the same lists and decode through the same
//! readers; only their SQL text (placeholders, locking, batching) differs.
//!
//! Readers see a row through [`Columns`], implemented for `rusqlite::Row`
//! and `tokio_postgres::Row`. It hands over the few shapes Herald stores
//! (integers widened to `i64`, text, booleans, bytes), so the same reader
//! serves an SQLite `INTEGER` and a PostgreSQL `SMALLINT`.

mod access;
mod calendars;
mod campaign;
mod cluster;
mod directory;
mod provider;
mod row;
mod templates;
mod timers;

pub(crate) use access::{AuditParams, api_key_cols, audit_cols, scopes_to_db};
pub(crate) use calendars::calendar_cols;
pub(crate) use campaign::{
    audience_cols, job_cols, rule_cols, segment_cols, send_code, send_cols, task_cols, version_cols,
};
pub(crate) use cluster::{named_lease_cols, node_cols, shard_lease_cols};
pub(crate) use directory::subscriber_cols;
pub(crate) use provider::token_cols;
pub(crate) use row::{Columns, Reader, Stored, Value};
pub(crate) use templates::template_cols;
pub(crate) use timers::{delivery_cols, due_cols, reminder_timer_cols, subject_cols, timer_cols};

use herald_core::{TenantId, TimerState};

use crate::{Result, StoreError};

/// Joins column names into one string literal, each qualified with the table
/// alias when one is given: `columns!(; "a", "b")` is `"a, b"`,
/// `columns!("t"; "a", "b")` is `"t.a, t.b"`.
macro_rules! columns {
    (; $first:literal $(, $rest:literal)* $(,)?) => {
        concat!($first $(, ", ", $rest)*)
    };
    ($t:literal; $first:literal $(, $rest:literal)* $(,)?) => {
        concat!($t, ".", $first $(, ", ", $t, ".", $rest)*)
    };
}
pub(crate) use columns;

/// A record read from the columns of its list, in order.
pub(crate) trait Decode: Sized {
    /// Reads this record's columns from where `r` stands, leaving `r` after them.
    fn decode<R: Columns + ?Sized>(r: &mut Reader<'_, R>) -> Result<Self>;
}

/// Reads a `T` from the first columns of `row`.
pub(crate) fn decode<T: Decode, R: Columns + ?Sized>(row: &R) -> Result<T> {
    T::decode(&mut Reader::new(row))
}

/// A position or count from the trait as a stored (signed) integer; one that
/// does not fit is the caller's to fix.
pub(crate) fn to_db(v: u64, what: &str) -> Result<i64> {
    i64::try_from(v).map_err(|_| StoreError::refused(what, format!("{v} is out of range")))
}

/// An upper bound as a stored integer: anything past the largest is the same bound.
pub(crate) fn bound_to_db(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// A page size as a `LIMIT`.
pub(crate) fn limit_to_db(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

/// A stored count or index back as the trait's unsigned number; a negative
/// one means the row is corrupt.
pub(crate) fn from_db(v: i64, what: &str) -> Result<u64> {
    u64::try_from(v).map_err(|_| StoreError::Corrupt(format!("{what} {v} is negative")))
}

/// A tenant as SQLite binds it.
pub(crate) fn tenant_to_db(t: TenantId) -> i64 {
    i64::from(t.0)
}

/// A tenant as PostgreSQL binds it (`INTEGER`). Tenant ids come from a
/// sequence that starts at 1, so one past `i32::MAX` is a caller's bug.
pub(crate) fn tenant_to_pg(t: TenantId) -> Result<i32> {
    i32::try_from(t.0)
        .map_err(|_| StoreError::refused("tenant", format!("tenant id {t} is out of range")))
}

/// A `(tenant, state, count)` row of a `GROUP BY tenant_id, state`.
impl Decode for (TenantId, TimerState, u64) {
    fn decode<R: Columns + ?Sized>(r: &mut Reader<'_, R>) -> Result<Self> {
        Ok((
            r.tenant("tenant_id")?,
            r.state("state")?,
            r.unsigned("count")?,
        ))
    }
}

/// A row of the forecast's count (`due_counts`): the group and the latest
/// due time it counted.
impl Decode for (crate::DueCount, i64) {
    fn decode<R: Columns + ?Sized>(r: &mut Reader<'_, R>) -> Result<Self> {
        Ok((
            crate::DueCount {
                tenant: r.tenant("tenant_id")?,
                channel: r.string("channel")?,
                reminder: r.flag("reminder")?,
                bucket: r.narrow("bucket")?,
                count: r.unsigned("count")?,
            },
            r.int("last_due")?,
        ))
    }
}

/// A `(state, count)` row of a `GROUP BY state`.
impl<S: Stored> Decode for (S, u64) {
    fn decode<R: Columns + ?Sized>(r: &mut Reader<'_, R>) -> Result<Self> {
        Ok((r.state("state")?, r.unsigned("count")?))
    }
}
