//! Subjects and reminder subscriptions on SQLite.
//!
//! A subscription is one `reminders` row per (user, subject) holding the seed-003
//! bitmap, plus one `reminder_timers` row per set bit naming that bit's timer (an
//! ordinary row of `timers`, kind `reminder`). The two always agree: a bit is set
//! exactly when its `reminder_timers` row exists, and a `reminders` row whose bits
//! drop to zero is deleted. Deleting a subject relies on that to find the
//! subject's `reminders` rows through `reminder_timers_subject` instead of
//! scanning `reminders` (which has no index on the subject, so that a burst of
//! subscriptions pays for one index less).
//!
//! Every function here runs inside the caller's `apply` transaction: SQLite has
//! a single writer, so reading a subscription and then writing it cannot race
//! another writer.

use std::collections::HashSet;

use herald_core::{TenantId, TimerState};
use rusqlite::{Connection, OptionalExtension, params};

use super::error::Ctx;
use super::timers::insert_timer;
use crate::model::{
    self, Columns, due_cols, reminder_timer_cols, subject_cols, tenant_to_db, timer_cols,
};
use crate::reminders::sql;
use crate::{
    DueEntry, MergeProbe, NewReminder, PutSubject, ReminderTimer, Result, SubjectRecord,
    TimerRecord, WriteResult, bit_mask, bits_from_db, bits_to_db,
};

const SUBJECT_BY_ID: &str = concat!(
    "SELECT ",
    subject_cols!(),
    " FROM subjects WHERE tenant_id = ?1 AND subject_id = ?2"
);
const INSERT_SUBJECT: &str = "INSERT INTO subjects \
    (tenant_id, subject_id, start_at, title, data, created_at, updated_at, early_window_ms, \
     send_late, templates) \
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7, ?8, ?9)";
const DELETE_SUBJECT: &str = "DELETE FROM subjects WHERE tenant_id = ?1 AND subject_id = ?2";
// ?1 tenant, ?2 subject, ?3 delta, ?4 at. Only pending timers move: one that
// fired (done, failed, dead) or was cancelled keeps its due time as history.
const MOVE_SUBJECT_TIMERS: &str = concat!(
    "UPDATE timers SET due_at = due_at + ?3, updated_at = ?4 \
     WHERE state = 0 AND id IN (SELECT timer_id FROM reminder_timers \
                                WHERE tenant_id = ?1 AND subject_id = ?2) \
     RETURNING ",
    due_cols!()
);
// ?1 tenant, ?2 subject, ?3 at.
const CANCEL_SUBJECT_TIMERS: &str = "UPDATE timers SET state = 4, updated_at = ?3 \
    WHERE state = 0 AND id IN (SELECT timer_id FROM reminder_timers \
                               WHERE tenant_id = ?1 AND subject_id = ?2) \
    RETURNING id";
// Every `reminders` row of the subject has a `reminder_timers` row (see the
// module doc), so the users found there are all of them; each is then a
// primary-key lookup.
const DELETE_SUBJECT_REMINDERS: &str = "DELETE FROM reminders \
    WHERE tenant_id = ?1 AND subject_id = ?2 AND user_id IN \
        (SELECT user_id FROM reminder_timers WHERE tenant_id = ?1 AND subject_id = ?2)";
const DELETE_SUBJECT_REMINDER_TIMERS: &str =
    "DELETE FROM reminder_timers WHERE tenant_id = ?1 AND subject_id = ?2";
const SUBJECT_START: &str =
    "SELECT start_at FROM subjects WHERE tenant_id = ?1 AND subject_id = ?2";
const REMINDER_BITS: &str =
    "SELECT bits FROM reminders WHERE tenant_id = ?1 AND user_id = ?2 AND subject_id = ?3";
// ?1 tenant, ?2 user, ?3 subject, ?4 the bit's mask, ?5 at.
const SET_REMINDER_BIT: &str = "INSERT INTO reminders \
    (tenant_id, user_id, subject_id, bits, created_at, updated_at) \
    VALUES (?1, ?2, ?3, ?4, ?5, ?5) \
    ON CONFLICT (tenant_id, user_id, subject_id) DO UPDATE \
    SET bits = bits | excluded.bits, updated_at = excluded.updated_at";
const INSERT_REMINDER_TIMER: &str = "INSERT INTO reminder_timers \
    (tenant_id, user_id, subject_id, bit, timer_id) VALUES (?1, ?2, ?3, ?4, ?5)";
const TAKE_REMINDER_TIMER: &str = "DELETE FROM reminder_timers \
    WHERE tenant_id = ?1 AND user_id = ?2 AND subject_id = ?3 AND bit = ?4 RETURNING timer_id";
// ?1 tenant, ?2 user, ?3 subject, ?4 bit: the state of the bit's timer.
const BIT_TIMER_STATE: &str = "SELECT t.state FROM reminder_timers AS r \
    CROSS JOIN timers AS t ON t.id = r.timer_id \
    WHERE r.tenant_id = ?1 AND r.user_id = ?2 AND r.subject_id = ?3 AND r.bit = ?4";
// ?1 tenant, ?2 user, ?3 subject, ?4 bit, ?5 the bit's new timer.
const RELINK_REMINDER_TIMER: &str = "UPDATE reminder_timers SET timer_id = ?5 \
    WHERE tenant_id = ?1 AND user_id = ?2 AND subject_id = ?3 AND bit = ?4";
const CANCEL_IF_PENDING: &str =
    "UPDATE timers SET state = 4, updated_at = ?2 WHERE id = ?1 AND state = 0";
// `CROSS JOIN` makes SQLite keep `reminder_timers` as the outer loop, so the
// user's primary-key range drives the join and each timer is a rowid lookup,
// whatever the planner would guess without statistics.
pub(super) const USER_REMINDERS: &str = concat!(
    "SELECT ",
    reminder_timer_cols!(),
    " FROM reminder_timers AS r CROSS JOIN timers AS t \
     ON t.id = r.timer_id WHERE r.tenant_id = ?1 AND r.user_id = ?2 \
     ORDER BY r.subject_id, r.bit LIMIT ?3"
);
// ?1 tenant, ?2 user, ?3 channel, ?4 from, ?5 until (both inclusive).
pub(super) const PENDING_FOR_PROBE: &str = concat!(
    "SELECT ",
    timer_cols!("t"),
    " FROM reminder_timers AS r CROSS JOIN timers AS t ON t.id = r.timer_id \
     WHERE r.tenant_id = ?1 AND r.user_id = ?2 AND t.state = 0 AND t.kind = 'reminder' \
     AND t.channel = ?3 AND t.due_at >= ?4 AND t.due_at <= ?5"
);

// Batches: the subjects about to start (`subjects_start`), each one's links
// through its subject index (which holds the bit), each linked timer by rowid.
// `CROSS JOIN` keeps that order whatever the planner would guess.
const BATCH_COLS: &str = "s.tenant_id, s.subject_id, s.start_at, s.early_window_ms, r.bit, \
    t.channel, t.due_at, count(*)";
const BATCH_GROUP: &str = " GROUP BY s.tenant_id, s.subject_id, r.bit, t.channel, t.due_at \
    ORDER BY s.tenant_id, s.subject_id, r.bit, t.channel, t.due_at";
// ?1 starts from, ?2 starts until, ?3 due from, ?4 due until.
const BATCHES_DUE: &str = "FROM subjects AS s \
    CROSS JOIN reminder_timers AS r ON r.tenant_id = s.tenant_id AND r.subject_id = s.subject_id \
    CROSS JOIN timers AS t ON t.id = r.timer_id \
    WHERE s.start_at >= ?1 AND s.start_at < ?2 AND t.state = 0 AND t.kind = 'reminder' \
      AND t.due_at >= ?3 AND t.due_at < ?4";
// ?1 tenant, ?2 subject.
const BATCHES_OF_SUBJECT: &str = "FROM subjects AS s \
    CROSS JOIN reminder_timers AS r ON r.tenant_id = s.tenant_id AND r.subject_id = s.subject_id \
    CROSS JOIN timers AS t ON t.id = r.timer_id \
    WHERE s.tenant_id = ?1 AND s.subject_id = ?2 AND t.state = 0 AND t.kind = 'reminder'";
// ?1 tenant, ?2 subject, ?3 bit, ?4 due at, ?5 after this timer id, ?6 limit.
const BATCH_DUE: &str = concat!(
    "SELECT ",
    due_cols!("t"),
    " FROM reminder_timers AS r CROSS JOIN timers AS t ON t.id = r.timer_id \
     WHERE r.tenant_id = ?1 AND r.subject_id = ?2 AND r.timer_id > ?5 AND r.bit = ?3 \
       AND t.state = 0 AND t.due_at = ?4 \
     ORDER BY r.timer_id LIMIT ?6"
);

pub(super) fn reminder_batches(
    conn: &Connection,
    scope: &crate::BatchScope,
) -> Result<Vec<crate::ReminderBatch>> {
    let (from, sql) = match scope {
        crate::BatchScope::Due { .. } => (BATCHES_DUE, "batches due"),
        crate::BatchScope::Subject { .. } => (BATCHES_OF_SUBJECT, "batches of a subject"),
    };
    let text = format!("SELECT {BATCH_COLS} {from}{BATCH_GROUP}");
    let mut stmt = conn
        .prepare_cached(&text)
        .ctx("preparing reminder batches")?;
    let mut rows = match scope {
        crate::BatchScope::Due {
            starts_from,
            starts_until,
            due_from,
            due_until,
        } => stmt.query(params![starts_from, starts_until, due_from, due_until]),
        crate::BatchScope::Subject { tenant, subject_id } => {
            stmt.query(params![tenant_to_db(*tenant), subject_id])
        }
    }
    .ctx(sql)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().ctx(sql)? {
        out.push(model::decode(row)?);
    }
    Ok(out)
}

pub(super) fn batch_due(
    conn: &Connection,
    tenant: TenantId,
    subject_id: &str,
    bit: u8,
    due_at: i64,
    after: Option<i64>,
    limit: usize,
) -> Result<Vec<DueEntry>> {
    let mut stmt = conn.prepare_cached(BATCH_DUE).ctx("preparing batch_due")?;
    let mut rows = stmt
        .query(params![
            tenant_to_db(tenant),
            subject_id,
            bit,
            due_at,
            after.unwrap_or(i64::MIN),
            model::limit_to_db(limit)
        ])
        .ctx("reading a batch's timers")?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().ctx("reading a batch's timers")? {
        out.push(model::decode(row)?);
    }
    Ok(out)
}

fn subject_by_id(
    conn: &Connection,
    tenant: TenantId,
    subject_id: &str,
) -> Result<Option<SubjectRecord>> {
    let mut stmt = conn
        .prepare_cached(SUBJECT_BY_ID)
        .ctx("preparing subject read")?;
    let mut rows = stmt
        .query(params![tenant_to_db(tenant), subject_id])
        .ctx("reading subject")?;
    match rows.next().ctx("reading subject")? {
        Some(row) => model::decode(row).map(Some),
        None => Ok(None),
    }
}

pub(super) fn put_subject(conn: &Connection, put: &PutSubject) -> Result<WriteResult> {
    let tenant = tenant_to_db(put.tenant);
    let Some(old) = subject_by_id(conn, put.tenant, &put.subject_id)? else {
        conn.prepare_cached(INSERT_SUBJECT)
            .ctx("preparing subject insert")?
            .execute(params![
                tenant,
                put.subject_id,
                put.start_at,
                put.title,
                put.data,
                put.at,
                put.timing.early_window_ms,
                put.timing.send_late,
                put.templates
            ])
            .ctx("inserting subject")?;
        return Ok(WriteResult::SubjectPut {
            subject: put.record(put.at),
            created: true,
            moved: Vec::new(),
        });
    };
    conn.prepare_cached(sql::UPDATE_SUBJECT.sqlite)
        .ctx("preparing subject update")?
        .execute(params![
            tenant,
            put.subject_id,
            put.start_at,
            put.title,
            put.data,
            put.at,
            put.timing.early_window_ms,
            put.timing.send_late,
            put.templates
        ])
        .ctx("updating subject")?;
    let delta = put.start_at.saturating_sub(old.start_at);
    let mut moved = Vec::new();
    if delta != 0 {
        let mut stmt = conn
            .prepare_cached(MOVE_SUBJECT_TIMERS)
            .ctx("preparing timer move")?;
        let mut rows = stmt
            .query(params![tenant, put.subject_id, delta, put.at])
            .ctx("moving the subject's timers")?;
        while let Some(row) = rows.next().ctx("reading moved timers")? {
            moved.push(model::decode(row)?);
        }
        moved.sort_unstable_by_key(DueEntry::cursor);
    }
    Ok(WriteResult::SubjectPut {
        subject: put.record(old.created_at),
        created: false,
        moved,
    })
}

pub(super) fn delete_subject(
    conn: &Connection,
    tenant: TenantId,
    subject_id: &str,
    at: i64,
) -> Result<WriteResult> {
    let Some(subject) = subject_by_id(conn, tenant, subject_id)? else {
        return Ok(WriteResult::NotFound);
    };
    let tenant = tenant_to_db(tenant);
    let mut cancelled = Vec::new();
    {
        let mut stmt = conn
            .prepare_cached(CANCEL_SUBJECT_TIMERS)
            .ctx("preparing subject cancel")?;
        let mut rows = stmt
            .query(params![tenant, subject_id, at])
            .ctx("cancelling the subject's timers")?;
        while let Some(row) = rows.next().ctx("reading cancelled timers")? {
            cancelled.push(row.int(0, "timers.id")?);
        }
    }
    cancelled.sort_unstable();
    // `reminders` first: its delete finds the users through `reminder_timers`.
    for (sql, what) in [
        (DELETE_SUBJECT_REMINDERS, "deleting the subject's reminders"),
        (
            DELETE_SUBJECT_REMINDER_TIMERS,
            "deleting the subject's reminder timers",
        ),
        (DELETE_SUBJECT, "deleting subject"),
    ] {
        conn.prepare_cached(sql)
            .ctx(what)?
            .execute(params![tenant, subject_id])
            .ctx(what)?;
    }
    Ok(WriteResult::SubjectDeleted { subject, cancelled })
}

fn reminder_bits(
    conn: &Connection,
    tenant: i64,
    user_id: &str,
    subject_id: &str,
) -> Result<Option<u64>> {
    let bits: Option<i64> = conn
        .prepare_cached(REMINDER_BITS)
        .ctx("preparing reminder read")?
        .query_row(params![tenant, user_id, subject_id], |r| r.get(0))
        .optional()
        .ctx("reading reminder bits")?;
    Ok(bits.map(bits_from_db))
}

/// Checks, in this order: the subject exists, the bit is free (or spent: its
/// timer fired or was cancelled, so the user may subscribe again, say after
/// the subject moved later), the fire time is after `not_before`. Only then
/// is anything written: the timer (which may turn out `Existing` when its
/// idempotency key is taken, and then nothing else is written), the bit, and
/// the link between them (a spent bit's link points at the new timer).
pub(super) fn add_reminder(
    conn: &Connection,
    insert: &mut super::timers::TimerInserts<'_>,
    r: NewReminder,
) -> Result<WriteResult> {
    if let Some(g) = &r.grant {
        super::grants::record_in(conn, g)?;
    }
    let mask = bit_mask(r.bit)?;
    let tenant = tenant_to_db(r.tenant());
    let start_at: Option<i64> = conn
        .prepare_cached(SUBJECT_START)
        .ctx("preparing subject start read")?
        .query_row(params![tenant, r.subject_id], |row| row.get(0))
        .optional()
        .ctx("reading subject start")?;
    let Some(start_at) = start_at else {
        return Ok(WriteResult::SubjectNotFound);
    };
    let bits = reminder_bits(conn, tenant, &r.user_id, &r.subject_id)?.unwrap_or(0);
    let spent = bits & mask != 0;
    if spent {
        let state: Option<i64> = conn
            .prepare_cached(BIT_TIMER_STATE)
            .ctx("preparing reminder timer read")?
            .query_row(params![tenant, r.user_id, r.subject_id, r.bit], |row| {
                row.get(0)
            })
            .optional()
            .ctx("reading reminder timer state")?;
        if state.is_none_or(|s| s == TimerState::Pending.code()) {
            return Ok(WriteResult::ReminderExists { bits });
        }
    }
    let fire_at = start_at.saturating_sub(r.lead_ms);
    if fire_at <= r.not_before {
        return Ok(WriteResult::TooLate { fire_at, start_at });
    }
    let NewReminder {
        user_id,
        subject_id,
        bit,
        mut timer,
        ..
    } = r;
    timer.due_at = fire_at;
    let at = timer.created_at;
    let record = match insert_timer(conn, insert, timer)? {
        WriteResult::Created(record) => record,
        existing => return Ok(existing),
    };
    conn.prepare_cached(SET_REMINDER_BIT)
        .ctx("preparing reminder upsert")?
        .execute(params![tenant, user_id, subject_id, bits_to_db(mask), at])
        .ctx("setting reminder bit")?;
    let link = if spent {
        RELINK_REMINDER_TIMER
    } else {
        INSERT_REMINDER_TIMER
    };
    conn.prepare_cached(link)
        .ctx("preparing reminder timer link")?
        .execute(params![tenant, user_id, subject_id, bit, record.id])
        .ctx("linking reminder timer")?;
    Ok(WriteResult::Created(record))
}

pub(super) fn cancel_reminders(
    conn: &Connection,
    tenant: TenantId,
    user_id: &str,
    subject_id: &str,
    mask: u64,
    at: i64,
) -> Result<WriteResult> {
    let tenant = tenant_to_db(tenant);
    let Some(bits) = reminder_bits(conn, tenant, user_id, subject_id)? else {
        return Ok(WriteResult::NotFound);
    };
    let cleared = bits & mask;
    let remaining = bits & !mask;
    let mut cancelled = Vec::new();
    if cleared != 0 {
        let mut take = conn
            .prepare_cached(TAKE_REMINDER_TIMER)
            .ctx("preparing reminder timer delete")?;
        let mut cancel = conn
            .prepare_cached(CANCEL_IF_PENDING)
            .ctx("preparing reminder cancel")?;
        for bit in (0..64u8).filter(|b| cleared & (1u64 << b) != 0) {
            let timer_id: Option<i64> = take
                .query_row(params![tenant, user_id, subject_id, bit], |r| r.get(0))
                .optional()
                .ctx("unlinking reminder timer")?;
            let Some(timer_id) = timer_id else { continue };
            if cancel
                .execute(params![timer_id, at])
                .ctx("cancelling reminder timer")?
                == 1
            {
                cancelled.push(timer_id);
            }
        }
        if remaining == 0 {
            conn.prepare_cached(sql::DELETE_REMINDER.sqlite)
                .ctx("preparing reminder delete")?
                .execute(params![tenant, user_id, subject_id])
                .ctx("deleting reminder")?;
        } else {
            conn.prepare_cached(sql::STORE_BITS.sqlite)
                .ctx("preparing reminder update")?
                .execute(params![
                    tenant,
                    user_id,
                    subject_id,
                    bits_to_db(remaining),
                    at
                ])
                .ctx("storing reminder bits")?;
        }
    }
    cancelled.sort_unstable();
    Ok(WriteResult::RemindersCancelled {
        cleared,
        remaining,
        cancelled,
    })
}

pub(super) fn get_subjects(
    conn: &mut Connection,
    tenant: TenantId,
    ids: Vec<String>,
) -> Result<Vec<SubjectRecord>> {
    // One snapshot for all of them.
    let tx = conn.transaction().ctx("beginning get_subjects")?;
    let mut seen = HashSet::with_capacity(ids.len());
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        if seen.insert(id.clone())
            && let Some(s) = subject_by_id(&tx, tenant, &id)?
        {
            out.push(s);
        }
    }
    tx.commit().ctx("ending get_subjects")?;
    Ok(out)
}

pub(super) fn user_reminders(
    conn: &Connection,
    tenant: TenantId,
    user_id: &str,
    limit: usize,
) -> Result<Vec<ReminderTimer>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut stmt = conn
        .prepare_cached(USER_REMINDERS)
        .ctx("preparing user_reminders")?;
    let mut rows = stmt
        .query(params![tenant_to_db(tenant), user_id, limit])
        .ctx("querying user_reminders")?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().ctx("reading user_reminders")? {
        out.push(model::decode(row)?);
    }
    Ok(out)
}

pub(super) fn pending_reminders(
    conn: &mut Connection,
    probes: Vec<MergeProbe>,
) -> Result<Vec<TimerRecord>> {
    // One read transaction: every probe sees the same snapshot.
    let tx = conn.transaction().ctx("beginning pending_reminders")?;
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    {
        let mut stmt = tx
            .prepare_cached(PENDING_FOR_PROBE)
            .ctx("preparing pending_reminders")?;
        for p in &probes {
            let mut rows = stmt
                .query(params![
                    tenant_to_db(p.tenant),
                    p.user_id,
                    p.channel,
                    p.from,
                    p.until
                ])
                .ctx("querying pending_reminders")?;
            while let Some(row) = rows.next().ctx("reading pending_reminders")? {
                if seen.insert(row.int(0, "timers.id")?) {
                    out.push(model::decode(row)?);
                }
            }
        }
    }
    tx.commit().ctx("ending pending_reminders")?;
    out.sort_unstable_by_key(TimerRecord::cursor);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite::testing::{migrated, plan};

    /// Every reminder statement finds its rows through an index: the merge
    /// probes and the user listing through the user's primary-key range, moves
    /// and deletes through the subject index.
    #[test]
    fn reminder_queries_use_their_indexes() {
        let conn = migrated();
        for sql in [
            SUBJECT_BY_ID,
            SUBJECT_START,
            REMINDER_BITS,
            MOVE_SUBJECT_TIMERS,
            CANCEL_SUBJECT_TIMERS,
            DELETE_SUBJECT_REMINDERS,
            DELETE_SUBJECT_REMINDER_TIMERS,
            TAKE_REMINDER_TIMER,
            BIT_TIMER_STATE,
            RELINK_REMINDER_TIMER,
            USER_REMINDERS,
            PENDING_FOR_PROBE,
        ] {
            let p = plan(&conn, sql);
            assert!(!p.contains("SCAN"), "{sql}:\n{p}");
        }
        let p = plan(&conn, PENDING_FOR_PROBE);
        assert!(
            p.contains("SEARCH r USING PRIMARY KEY (tenant_id=? AND user_id=?)"),
            "{p}"
        );
        assert!(
            p.contains("SEARCH t USING INTEGER PRIMARY KEY (rowid=?)"),
            "{p}"
        );
        let p = plan(&conn, USER_REMINDERS);
        assert!(
            p.contains("SEARCH r USING PRIMARY KEY (tenant_id=? AND user_id=?)"),
            "{p}"
        );
        assert!(!p.contains("TEMP B-TREE"), "must not sort: {p}");
        for sql in [
            MOVE_SUBJECT_TIMERS,
            CANCEL_SUBJECT_TIMERS,
            DELETE_SUBJECT_REMINDER_TIMERS,
        ] {
            let p = plan(&conn, sql);
            assert!(p.contains("reminder_timers_subject"), "{sql}:\n{p}");
        }
    }
}
