//! Timer search, dead letters, and the writes that change a timer in place
//! (patch, replace by key, retry) on SQLite. The search statements come from
//! [`crate::timer_query`].

use herald_core::{TenantId, TimerId, TimerState};
use rusqlite::{Connection, params};

use super::error::Ctx;
use super::timers::{get_timer, insert_timer};
use crate::model::{self, Decode, due_cols, tenant_to_db, timer_cols};
use crate::timer_query::{self as q, Arg, DeadRow, Dialect, Query};
use crate::timers::sql;
use crate::{
    DeadLetters, DueCursor, DueEntry, NewTimer, Result, RetryFilter, SortOrder, TimerFilter,
    TimerPatch, TimerRecord, WriteResult,
};

// ?1 id, ?2 at: a picked timer, if still failed (3), dead (5) or in doubt (6).
const RETRY_PICKED: &str = concat!(
    "UPDATE timers SET state = 0, due_at = ?2, attempt_base = attempts, updated_at = ?2 \
     WHERE id = ?1 AND state IN (3, 5, 6) RETURNING ",
    due_cols!()
);

fn bind(args: &[Arg]) -> Vec<rusqlite::types::Value> {
    args.iter()
        .map(|a| match a {
            Arg::Int(v) => rusqlite::types::Value::Integer(*v),
            Arg::Text(s) => rusqlite::types::Value::Text(s.clone()),
        })
        .collect()
}

fn run<T: Decode>(conn: &Connection, query: &Query, out: &mut Vec<T>) -> Result<()> {
    let mut stmt = conn.prepare_cached(&query.sql).ctx("preparing search")?;
    let mut rows = stmt
        .query(rusqlite::params_from_iter(bind(&query.args)))
        .ctx("searching timers")?;
    while let Some(row) = rows.next().ctx("reading timers")? {
        out.push(model::decode(row)?);
    }
    Ok(())
}

pub(super) fn search(
    conn: &mut Connection,
    tenant: TenantId,
    filter: &TimerFilter,
    after: Option<DueCursor>,
    limit: usize,
    order: SortOrder,
) -> Result<Vec<TimerRecord>> {
    let mut out = Vec::new();
    // The seeks of one page read one snapshot.
    let tx = conn.transaction().ctx("beginning search")?;
    for query in q::search(
        Dialect::Sqlite,
        timer_cols!(),
        tenant,
        filter,
        after,
        limit,
        order,
    ) {
        let left = limit.saturating_sub(out.len());
        if left == 0 {
            break;
        }
        let mut page = Vec::new();
        run(&tx, &query, &mut page)?;
        out.extend(page.into_iter().take(left));
    }
    tx.commit().ctx("ending search")?;
    Ok(out)
}

pub(super) fn dead_letters(
    conn: &mut Connection,
    tenant: TenantId,
    channel: Option<String>,
) -> Result<DeadLetters> {
    let tx = conn.transaction().ctx("beginning dead letters")?;
    let mut rows: Vec<DeadRow> = Vec::new();
    for state in [TimerState::Dead, TimerState::Failed] {
        run(
            &tx,
            &q::dead_rows(Dialect::Sqlite, tenant, state, &channel),
            &mut rows,
        )?;
    }
    tx.commit().ctx("ending dead letters")?;
    Ok(q::group_dead(rows))
}

/// The timer `id` as `tenant` may see it: another tenant's is missing.
fn result_for(conn: &Connection, tenant: TenantId, id: TimerId) -> Result<WriteResult> {
    Ok(match get_timer(conn, id)?.filter(|r| r.tenant == tenant) {
        Some(rec) => WriteResult::WrongState(rec),
        None => WriteResult::NotFound,
    })
}

pub(super) fn patch(conn: &Connection, p: &TimerPatch) -> Result<WriteResult> {
    let before = get_timer(conn, p.id)?;
    let mut stmt = conn
        .prepare_cached(sql::PATCH_TIMER.sqlite)
        .ctx("preparing patch")?;
    let mut rows = stmt
        .query(params![
            p.id,
            tenant_to_db(p.tenant),
            p.due_at,
            p.message,
            p.priority,
            p.at
        ])
        .ctx("patching timer")?;
    if let Some(row) = rows.next().ctx("patching timer")? {
        let timer: TimerRecord = model::decode(row)?;
        let moved = before.is_some_and(|b| b.due_at != timer.due_at);
        return Ok(WriteResult::Updated { timer, moved });
    }
    drop(rows);
    result_for(conn, p.tenant, p.id)
}

pub(super) fn replace(
    conn: &Connection,
    insert: &mut super::timers::TimerInserts<'_>,
    t: NewTimer,
) -> Result<WriteResult> {
    let (due_at, message, priority, at) = (t.due_at, t.message.clone(), t.priority, t.created_at);
    match insert_timer(conn, insert, t)? {
        WriteResult::Existing(old) if old.state == TimerState::Pending => patch(
            conn,
            &TimerPatch {
                tenant: old.tenant,
                id: old.id,
                due_at: Some(due_at),
                message: Some(message),
                priority: Some(priority),
                at,
            },
        ),
        other => Ok(other),
    }
}

pub(super) fn retry(
    conn: &Connection,
    tenant: TenantId,
    id: TimerId,
    at: i64,
) -> Result<WriteResult> {
    {
        let mut stmt = conn
            .prepare_cached(sql::RETRY_TIMER.sqlite)
            .ctx("preparing retry")?;
        let mut rows = stmt
            .query(params![id, tenant_to_db(tenant), at])
            .ctx("retrying timer")?;
        if let Some(row) = rows.next().ctx("retrying timer")? {
            return Ok(WriteResult::Retried(model::decode(row)?));
        }
    }
    result_for(conn, tenant, id)
}

pub(super) fn retry_many(
    conn: &Connection,
    tenant: TenantId,
    filter: &RetryFilter,
    at: i64,
    limit: usize,
) -> Result<WriteResult> {
    let mut timers: Vec<DueEntry> = Vec::new();
    for state in filter.states() {
        let left = limit.saturating_sub(timers.len());
        if left == 0 {
            break;
        }
        let mut picked: Vec<DueEntry> = Vec::new();
        let query = q::retry_pick(Dialect::Sqlite, due_cols!(), tenant, state, filter, left);
        run(conn, &query, &mut picked)?;
        let mut stmt = conn.prepare_cached(RETRY_PICKED).ctx("preparing retry")?;
        for e in picked {
            let mut rows = stmt.query(params![e.id, at]).ctx("retrying timers")?;
            if let Some(row) = rows.next().ctx("retrying timers")? {
                timers.push(model::decode(row)?);
            }
        }
    }
    let mut more = false;
    for state in filter.states() {
        let mut found: Vec<DueEntry> = Vec::new();
        let query = q::retry_more(Dialect::Sqlite, due_cols!(), tenant, state, filter);
        run(conn, &query, &mut found)?;
        more |= !found.is_empty();
    }
    Ok(WriteResult::RetriedMany { timers, more })
}

#[cfg(test)]
mod tests {
    use herald_core::TimerKind;

    use super::*;
    use crate::sqlite::testing::{migrated, plan};

    /// Every filter combination the API allows, each direction, with and
    /// without a cursor: each statement searches one index and never sorts.
    #[test]
    fn every_search_walks_an_index() {
        let conn = migrated();
        let c = Some(DueCursor { due_at: 5, id: 7 });
        let s = || Some("x".to_string());
        for bits in 0..128u32 {
            let on = |b: u32| bits & (1 << b) != 0;
            let f = TimerFilter {
                state: on(0).then_some(TimerState::Dead),
                channel: if on(1) { s() } else { None },
                recipient: if on(2) { s() } else { None },
                idempotency_key: if on(3) { s() } else { None },
                kind: on(4).then_some(TimerKind::Timer),
                due_after: on(5).then_some(1),
                due_before: on(6).then_some(9),
            };
            let index = q::search_index(&f);
            for order in [SortOrder::Asc, SortOrder::Desc] {
                for after in [None, c] {
                    for query in q::search(
                        Dialect::Sqlite,
                        timer_cols!(),
                        TenantId(1),
                        &f,
                        after,
                        10,
                        order,
                    ) {
                        let p = plan(&conn, &query.sql);
                        assert!(
                            p.contains(&format!("INDEX {index} (")),
                            "{}\n{p}",
                            query.sql
                        );
                        assert!(!p.contains("SCAN"), "{}\n{p}", query.sql);
                        if f.idempotency_key.is_none() {
                            assert!(!p.contains("TEMP B-TREE"), "{}\n{p}", query.sql);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn dead_letters_and_retries_walk_the_state_index() {
        let conn = migrated();
        let f = RetryFilter {
            channel: Some("hook".into()),
            error: Some("HTTP 5".into()),
            due_after: Some(1),
            due_before: Some(9),
            ..RetryFilter::default()
        };
        for state in [TimerState::Dead, TimerState::Failed] {
            for sql in [
                q::dead_rows(Dialect::Sqlite, TenantId(1), state, &None).sql,
                q::dead_rows(Dialect::Sqlite, TenantId(1), state, &Some("c".into())).sql,
                q::retry_pick(Dialect::Sqlite, due_cols!(), TenantId(1), state, &f, 10).sql,
                q::retry_pick(
                    Dialect::Sqlite,
                    due_cols!(),
                    TenantId(1),
                    state,
                    &RetryFilter::default(),
                    10,
                )
                .sql,
                q::retry_more(Dialect::Sqlite, due_cols!(), TenantId(1), state, &f).sql,
            ] {
                let p = plan(&conn, &sql);
                assert!(p.contains("INDEX timers_tenant_state_due ("), "{sql}\n{p}");
                assert!(!p.contains("SCAN"), "{sql}\n{p}");
                assert!(!p.contains("TEMP B-TREE"), "{sql}\n{p}");
            }
        }
        for sql in [
            sql::PATCH_TIMER.sqlite,
            sql::RETRY_TIMER.sqlite,
            RETRY_PICKED,
        ] {
            let p = plan(&conn, sql);
            assert!(p.contains("INTEGER PRIMARY KEY"), "{sql}\n{p}");
        }
    }
}
