//! Digest timers on SQLite: placing a new one in the batch's transaction
//! (SQLite's single writer makes the read of the open digest, the insert and
//! the move of its members one step), and the fire-time member probe.

use std::collections::HashSet;
use std::sync::LazyLock;

use rusqlite::{Connection, OptionalExtension, params};

use super::error::Ctx;
use super::timers;
use crate::digest::{MAX_CANDIDATES, Pending, sql};
use crate::model::{self, due_cols, tenant_to_db};
use crate::{DueEntry, MergeProbe, NewTimer, Result, TimerRecord, WriteResult};

// ?1 id, ?2 new due_at, ?3 at. Only a still-pending member moves.
const SLIDE: &str = concat!(
    "UPDATE timers SET due_at = ?2, updated_at = ?3 WHERE id = ?1 AND state = 0 RETURNING ",
    due_cols!()
);

/// The shared statement, on the recipient's index by name. Every timer
/// with routing (a digest among them) is inserted filed, so the index holds
/// every candidate.
static CANDIDATES: LazyLock<String> = LazyLock::new(|| {
    sql::CANDIDATES.sqlite.replacen(
        "FROM timers WHERE",
        "FROM timers INDEXED BY timers_tenant_recipient_due WHERE filed = 1 AND",
        1,
    )
});

fn candidates(conn: &Connection, p: &MergeProbe) -> Result<Vec<TimerRecord>> {
    let mut stmt = conn
        .prepare_cached(&CANDIDATES)
        .ctx("preparing digest candidates")?;
    let mut rows = stmt
        .query(params![
            tenant_to_db(p.tenant),
            p.user_id,
            p.channel,
            p.from,
            p.until,
            MAX_CANDIDATES
        ])
        .ctx("querying digest candidates")?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().ctx("reading digest candidates")? {
        out.push(model::decode(row)?);
    }
    Ok(out)
}

/// Inserts a digest timer: `Existing` for a taken key (nothing else
/// written), else `DigestCreated`, with the members moved when it slid the
/// digest's close.
pub(super) fn insert(
    conn: &Connection,
    insert: &mut super::timers::TimerInserts<'_>,
    t: NewTimer,
) -> Result<WriteResult> {
    let Some(pending) = Pending::of(&t) else {
        return timers::insert_timer(conn, insert, t);
    };
    if let Some(key) = &t.idempotency_key
        && let Some(found) = timers::timer_by_key(conn, t.tenant, key)?
    {
        return Ok(WriteResult::Existing(found));
    }
    let profile: Option<String> = if pending.needs_zone() {
        conn.prepare_cached(sql::PROFILE.sqlite)
            .ctx("preparing digest zone")?
            .query_row(params![tenant_to_db(t.tenant), t.recipient], |r| r.get(0))
            .optional()
            .ctx("reading digest zone")?
    } else {
        None
    };
    let own_close = pending.own_close(t.due_at, profile.as_deref())?;
    let probe = MergeProbe {
        tenant: t.tenant,
        user_id: t.recipient.clone(),
        channel: t.channel.clone(),
        from: t.due_at,
        until: own_close,
    };
    let found = candidates(conn, &probe)?;
    let at = t.created_at;
    let (t, placed, members) = pending.place(t, own_close, &found);
    let timer = match timers::insert_timer(conn, insert, t)? {
        WriteResult::Created(timer) => timer,
        other => return Ok(other),
    };
    let mut moved = Vec::with_capacity(members.len());
    if let Some(to) = placed.slide_to {
        let mut stmt = conn.prepare_cached(SLIDE).ctx("preparing digest slide")?;
        for id in members {
            let mut rows = stmt.query(params![id, to, at]).ctx("sliding a digest")?;
            if let Some(row) = rows.next().ctx("sliding a digest")? {
                moved.push(model::decode::<DueEntry, _>(row)?);
            }
        }
        tracing::debug!(
            timer_id = timer.id,
            close = to,
            moved = moved.len(),
            "digest slid"
        );
    }
    Ok(WriteResult::DigestCreated { timer, moved })
}

/// `Store::pending_digests` on one snapshot.
pub(super) fn pending(conn: &mut Connection, probes: Vec<MergeProbe>) -> Result<Vec<TimerRecord>> {
    let tx = conn.transaction().ctx("beginning pending_digests")?;
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for p in &probes {
        for t in candidates(&tx, p)? {
            if seen.insert(t.id) {
                out.push(t);
            }
        }
    }
    tx.commit().ctx("ending pending_digests")?;
    out.sort_unstable_by_key(TimerRecord::cursor);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite::testing::{migrated, plan};

    /// The probe walks the recipient's index, not the due range.
    #[test]
    fn candidates_use_the_recipient_index() {
        let conn = migrated();
        let p = plan(&conn, &CANDIDATES);
        assert!(p.contains("timers_tenant_recipient_due"), "{p}");
    }
}
