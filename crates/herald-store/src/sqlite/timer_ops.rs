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
    use crate::sqlite::testing::{migrated, plan, scans_only_unfiled};

    /// Whether the walk of `index` in plan `p` reads it in order (no sort of
    /// its own): a temporary b-tree after the arms sorts only what they read
    /// (at most the limit each) for their merge.
    fn walks_in_order(p: &str, index: &str) -> bool {
        let lines: Vec<&str> = p.lines().map(str::trim_start).collect();
        lines.windows(2).all(|w| {
            !(w[0].contains(&format!("INDEX {index} (")) && w[1].starts_with("USE TEMP B-TREE"))
        })
    }

    /// Every search (each filter, both directions, paged through its
    /// cursor), the dead letters and a retry's pick answer the same whether
    /// the timers are filed or not (migration `0042_search_filing`), and
    /// what a plain scan of the table answers.
    #[test]
    fn searches_answer_the_same_filed_or_not() {
        let mut conn = migrated();
        // Half unfiled; dues tie; states, recipients and tenants mixed.
        for i in 0..48_i64 {
            conn.execute(
                "INSERT INTO timers (shard, due_at, priority, kind, state, channel, recipient, \
                 message, created_at, updated_at, tenant_id, last_error, filed, idempotency_key) \
                 VALUES (0, ?1, 0, 'timer', ?2, ?3, ?4, '{}', 0, 0, ?5, 'HTTP 500', ?6, ?7)",
                params![
                    (i * 7) % 11,
                    [0, 2, 5, 3][(i % 4) as usize],
                    ["hook", "push"][(i % 5 % 2) as usize],
                    format!("u{}", i % 3),
                    1 + i % 7 / 6,
                    (i / 3) % 2,
                    (i % 6 == 0).then(|| format!("k{i}")),
                ],
            )
            .unwrap();
        }
        let filters: Vec<TimerFilter> = vec![
            TimerFilter::default(),
            TimerFilter {
                state: Some(TimerState::Dead),
                ..TimerFilter::default()
            },
            TimerFilter {
                recipient: Some("u1".into()),
                due_after: Some(3),
                ..TimerFilter::default()
            },
            TimerFilter {
                channel: Some("push".into()),
                state: Some(TimerState::Pending),
                due_before: Some(8),
                ..TimerFilter::default()
            },
            TimerFilter {
                idempotency_key: Some("k12".into()),
                ..TimerFilter::default()
            },
        ];
        let answers = |conn: &mut Connection| {
            let mut out = Vec::new();
            for f in &filters {
                for order in [SortOrder::Asc, SortOrder::Desc] {
                    let mut ids = Vec::new();
                    let mut after = None;
                    loop {
                        let page = search(conn, TenantId(1), f, after, 3, order).unwrap();
                        let Some(last) = page.last() else { break };
                        after = Some(last.cursor());
                        ids.extend(page.iter().map(|t| t.id));
                    }
                    out.push(ids);
                }
            }
            let dead = dead_letters(conn, TenantId(1), None).unwrap();
            let picked = run_pick(conn);
            (out, dead, picked)
        };
        fn run_pick(conn: &Connection) -> Vec<i64> {
            let q = q::retry_pick(
                Dialect::Sqlite,
                due_cols!(),
                TenantId(1),
                TimerState::Dead,
                &RetryFilter::default(),
                100,
            );
            let mut rows: Vec<crate::DueEntry> = Vec::new();
            run(conn, &q, &mut rows).unwrap();
            rows.iter().map(|r| r.id).collect()
        }
        let before = answers(&mut conn);
        assert!(
            conn.query_row("SELECT count(*) FROM timers WHERE filed = 0", [], |r| {
                r.get::<_, i64>(0)
            })
            .unwrap()
                > 0
        );
        crate::sqlite::filer::file_batch(&mut conn, 1_000).unwrap();
        let after = answers(&mut conn);
        assert_eq!(before, after);
        // And what a scan of the table says, for the first filter both ways.
        let scan: Vec<i64> = conn
            .prepare("SELECT id FROM timers NOT INDEXED WHERE tenant_id = 1 ORDER BY due_at, id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(after.0[0], scan);
        assert_eq!(after.0[1], scan.iter().rev().copied().collect::<Vec<_>>());
        assert!(after.0.iter().all(|ids| !ids.is_empty()), "{:?}", after.0);
        assert!(!after.1.groups.is_empty() && !after.2.is_empty());
    }

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
                        assert!(scans_only_unfiled(&p), "{}\n{p}", query.sql);
                        if f.idempotency_key.is_none() {
                            assert!(walks_in_order(&p, index), "{}\n{p}", query.sql);
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
                assert!(scans_only_unfiled(&p), "{sql}\n{p}");
                assert!(walks_in_order(&p, "timers_tenant_state_due"), "{sql}\n{p}");
                // The unfiled finished timers: a seek, not the backlog.
                assert!(p.contains("INDEX timers_unfiled_done ("), "{sql}\n{p}");
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
