//! The subject list and a subject's counted subscriptions on SQLite (SQL in
//! [`crate::subject_query`]). `reminder_timers` is `WITHOUT ROWID`, so its
//! subject index holds the primary key's user and bit: counting reads the
//! index alone.

use std::sync::LazyLock;

use herald_core::TenantId;
use rusqlite::{Connection, params};

use super::error::Ctx;
use crate::model::{self, Columns, tenant_to_db};
use crate::subject_query::{self as q, sql};
use crate::{Result, SubjectSummary, SubscriptionCounts};

/// The shared count of a subject's failures, reading the tenant's failed
/// and dead timers through the state index (filed ones) and the index of
/// unfiled finished ones (migration `0042_search_filing`).
static FAILED_COUNT: LazyLock<String> = LazyLock::new(|| {
    let arm = |index: &str, filed: &str| {
        format!(
            "SELECT id, tenant_id, state, due_at, recipient FROM timers INDEXED BY {index} \
             WHERE {filed} AND tenant_id = ?1 AND state IN (3, 5) \
             AND due_at >= ?3 AND due_at <= ?4"
        )
    };
    sql::FAILED_COUNT.sqlite.replacen(
        "FROM timers AS t WHERE",
        &format!(
            "FROM ({} UNION ALL {}) AS t WHERE",
            arm("timers_tenant_state_due", "filed = 1"),
            arm("timers_unfiled_done", "filed = 0 AND state >= 2")
        ),
        1,
    )
});

fn counts(
    conn: &Connection,
    tenant: i64,
    subject_id: &str,
    cap: u64,
    by_bit: bool,
) -> Result<SubscriptionCounts> {
    let mut stmt = conn
        .prepare_cached(sql::COUNT.sqlite)
        .ctx("preparing subject counts")?;
    let mut rows = stmt
        .query(params![tenant, subject_id, q::count_limit(cap)])
        .ctx("counting subscriptions")?;
    let (read, users) = match rows.next().ctx("counting subscriptions")? {
        Some(row) => (
            row.narrow(0, "count(*)")?,
            row.narrow(1, "count(DISTINCT user_id)")?,
        ),
        None => (0, 0),
    };
    let mut out = q::counts(cap, read, users);
    if by_bit && out.reminders > 0 {
        let mut stmt = conn
            .prepare_cached(sql::COUNT_BY_BIT.sqlite)
            .ctx("preparing subject counts by bit")?;
        let mut rows = stmt
            .query(params![tenant, subject_id, q::by_bit_limit(cap)])
            .ctx("counting subscriptions by bit")?;
        while let Some(row) = rows.next().ctx("counting subscriptions by bit")? {
            out.by_bit.push((
                row.narrow(0, "reminder_timers.bit")?,
                row.narrow(1, "count(*)")?,
            ));
        }
    }
    Ok(out)
}

pub(super) fn list(
    conn: &mut Connection,
    tenant: TenantId,
    after: Option<String>,
    limit: usize,
    cap: u64,
) -> Result<Vec<SubjectSummary>> {
    let tenant = tenant_to_db(tenant);
    // One snapshot for the page and its counts.
    let tx = conn.transaction().ctx("beginning list_subjects")?;
    let mut subjects: Vec<crate::SubjectRecord> = Vec::new();
    {
        let mut stmt = tx
            .prepare_cached(sql::LIST.sqlite)
            .ctx("preparing list_subjects")?;
        let mut rows = stmt
            .query(params![
                tenant,
                after.unwrap_or_default(),
                model::limit_to_db(limit)
            ])
            .ctx("listing subjects")?;
        while let Some(row) = rows.next().ctx("listing subjects")? {
            subjects.push(model::decode(row)?);
        }
    }
    let mut out = Vec::with_capacity(subjects.len());
    for subject in subjects {
        let counts = counts(&tx, tenant, &subject.subject_id, cap, false)?;
        out.push(SubjectSummary { subject, counts });
    }
    tx.commit().ctx("ending list_subjects")?;
    Ok(out)
}

pub(super) fn summary(
    conn: &mut Connection,
    tenant: TenantId,
    subject_id: String,
    cap: u64,
) -> Result<Option<SubjectSummary>> {
    let tenant = tenant_to_db(tenant);
    let tx = conn.transaction().ctx("beginning subject_summary")?;
    let subject = {
        let mut stmt = tx
            .prepare_cached(sql::ONE.sqlite)
            .ctx("preparing subject read")?;
        let mut rows = stmt
            .query(params![tenant, subject_id])
            .ctx("reading subject")?;
        match rows.next().ctx("reading subject")? {
            Some(row) => model::decode(row)?,
            None => return Ok(None),
        }
    };
    let counts = counts(&tx, tenant, &subject_id, cap, true)?;
    tx.commit().ctx("ending subject_summary")?;
    Ok(Some(SubjectSummary { subject, counts }))
}

/// [`crate::ReminderStore::subject_outcomes`]: one snapshot for the counts
/// and the failures listed.
pub(super) fn outcomes(
    conn: &mut Connection,
    tenant: TenantId,
    subject_id: &str,
    cap: u64,
    errors: usize,
    failed: usize,
) -> Result<q::SubjectOutcomes> {
    let tenant = tenant_to_db(tenant);
    let tx = conn.transaction().ctx("beginning subject_outcomes")?;
    let rows: Vec<q::OutcomeRow> = {
        let mut stmt = tx
            .prepare_cached(sql::OUTCOMES.sqlite)
            .ctx("preparing subject outcomes")?;
        let mut rows = stmt
            .query(params![tenant, subject_id, q::count_limit(cap)])
            .ctx("counting subject outcomes")?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().ctx("counting subject outcomes")? {
            out.push(model::decode(row)?);
        }
        out
    };
    let mut out = q::outcomes(cap, rows.into_iter().map(|r| (r.0, r.1, r.2)), errors);
    if failed > 0 && out.by_state.iter().any(|(s, _)| q::is_failure(*s)) {
        let mut stmt = tx
            .prepare_cached(sql::FAILED.sqlite)
            .ctx("preparing failed reminders")?;
        let mut rows = stmt
            .query(params![
                tenant,
                subject_id,
                q::by_bit_limit(cap),
                model::limit_to_db(failed)
            ])
            .ctx("reading failed reminders")?;
        while let Some(row) = rows.next().ctx("reading failed reminders")? {
            out.failed.push(model::decode(row)?);
        }
    }
    tx.commit().ctx("ending subject_outcomes")?;
    Ok(out)
}

/// [`crate::ReminderStore::subject_failures`].
pub(super) fn failures(
    conn: &mut Connection,
    tenant: TenantId,
    subject_id: &str,
    (from, until): (i64, i64),
    cap: u64,
) -> Result<u64> {
    let mut stmt = conn
        .prepare_cached(&FAILED_COUNT)
        .ctx("preparing subject failures")?;
    let mut rows = stmt
        .query(params![
            tenant_to_db(tenant),
            subject_id,
            from,
            until,
            q::by_bit_limit(cap)
        ])
        .ctx("counting subject failures")?;
    match rows.next().ctx("counting subject failures")? {
        Some(row) => row.narrow(0, "count(*)"),
        None => Ok(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite::testing::{migrated, plan};

    /// The list walks the subjects' primary key; counting reads only the
    /// subject index, never the table.
    #[test]
    fn subject_queries_use_their_indexes() {
        let conn = migrated();
        for one in [sql::LIST, sql::ONE].map(|s| s.sqlite) {
            let p = plan(&conn, one);
            assert!(!p.contains("SCAN"), "{one}:\n{p}");
        }
        // Failures: the tenant's state index and the unfiled timers, each
        // checked by primary key.
        let p = plan(&conn, &FAILED_COUNT);
        assert!(p.contains("INDEX timers_tenant_state_due ("), "{p}");
        assert!(p.contains("INDEX timers_unfiled_done ("), "{p}");
        assert!(!p.contains("SCAN t") && !p.contains("SCAN r"), "{p}");
        for one in [sql::OUTCOMES, sql::FAILED].map(|s| s.sqlite) {
            let p = plan(&conn, one);
            assert!(p.contains("reminder_timers_subject"), "{one}:\n{p}");
            assert!(!p.contains("SCAN timers"), "{one}:\n{p}");
        }
        for count in [sql::COUNT, sql::COUNT_BY_BIT].map(|s| s.sqlite) {
            let p = plan(&conn, count);
            assert!(
                p.contains("COVERING INDEX reminder_timers_subject"),
                "{count}:\n{p}"
            );
            assert!(!p.contains("SCAN reminder_timers"), "{count}:\n{p}");
        }
    }
}
