//! Timer search, dead letters, and the writes that change a timer in place
//! (patch, replace by key, retry) on PostgreSQL. The search statements come
//! from [`crate::timer_query`]. The writes run one by one in the batch's
//! transaction: each locks the one row it changes.

use deadpool_postgres::Transaction;
use herald_core::{TenantId, TimerId, TimerState};

use super::{Ctx, Param, PgStore};
use crate::model::{self, Decode, due_cols, tenant_to_pg, timer_cols};
use crate::timer_query::{self as q, Arg, DeadRow, Dialect, Query};
use crate::timers::sql;
use crate::{
    DeadLetters, DueCursor, DueEntry, NewTimer, Result, RetryFilter, SortOrder, TimerFilter,
    TimerPatch, TimerRecord, WriteResult,
};

// Locks the row, so the patch below knows the due time it replaces.
const TIMER_FOR_UPDATE: &str = concat!(
    "SELECT ",
    timer_cols!(),
    " FROM timers WHERE id = $1 FOR UPDATE"
);

// $1 ids, $2 at: the picked timers still failed (3), dead (5) or in doubt (6).
pub(super) const RETRY_PICKED: &str = concat!(
    "UPDATE timers SET state = 0, due_at = $2, attempt_base = attempts, updated_at = $2 \
     WHERE id = ANY($1::int8[]) AND state IN (3, 5, 6) RETURNING ",
    due_cols!()
);

/// A query's arguments as values PostgreSQL can bind, in placeholder order.
fn owned_args(query: &Query) -> Vec<Box<dyn tokio_postgres::types::ToSql + Sync + Send>> {
    query
        .args
        .iter()
        .map(|a| -> Box<dyn tokio_postgres::types::ToSql + Sync + Send> {
            match a {
                Arg::Int(v) => Box::new(*v),
                Arg::Text(s) => Box::new(s.clone()),
            }
        })
        .collect()
}

async fn run<T: Decode>(tx: &Transaction<'_>, query: &Query, out: &mut Vec<T>) -> Result<()> {
    let args = owned_args(query);
    let params: Vec<Param<'_>> = args.iter().map(|b| b.as_ref() as Param<'_>).collect();
    let stmt = tx
        .prepare_cached(&query.sql)
        .await
        .ctx("preparing search")?;
    for row in tx.query(&stmt, &params).await.ctx("searching timers")? {
        out.push(model::decode(&row)?);
    }
    Ok(())
}

pub(super) async fn search(
    store: &PgStore,
    tenant: TenantId,
    filter: &TimerFilter,
    after: Option<DueCursor>,
    limit: usize,
    order: SortOrder,
) -> Result<Vec<TimerRecord>> {
    tenant_to_pg(tenant)?;
    let mut client = store.client().await?;
    let tx = client.transaction().await.ctx("beginning search")?;
    let mut out = Vec::new();
    for query in q::search(
        Dialect::Postgres,
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
        run(&tx, &query, &mut page).await?;
        out.extend(page.into_iter().take(left));
    }
    tx.commit().await.ctx("ending search")?;
    Ok(out)
}

pub(super) async fn dead_letters(
    store: &PgStore,
    tenant: TenantId,
    channel: Option<String>,
) -> Result<DeadLetters> {
    let mut client = store.client().await?;
    let tx = client.transaction().await.ctx("beginning dead letters")?;
    let mut rows: Vec<DeadRow> = Vec::new();
    for state in [TimerState::Dead, TimerState::Failed] {
        let query = q::dead_rows(Dialect::Postgres, tenant, state, &channel);
        run(&tx, &query, &mut rows).await?;
    }
    tx.commit().await.ctx("ending dead letters")?;
    Ok(q::group_dead(rows))
}

async fn timer_for_update(tx: &Transaction<'_>, id: TimerId) -> Result<Option<TimerRecord>> {
    let stmt = tx
        .prepare_cached(TIMER_FOR_UPDATE)
        .await
        .ctx("preparing timer read")?;
    match tx.query_opt(&stmt, &[&id]).await.ctx("reading timer")? {
        Some(row) => model::decode(&row).map(Some),
        None => Ok(None),
    }
}

pub(super) async fn patch(tx: &Transaction<'_>, p: &TimerPatch) -> Result<WriteResult> {
    let before = timer_for_update(tx, p.id).await?;
    let Some(before) = before.filter(|b| b.tenant == p.tenant) else {
        return Ok(WriteResult::NotFound);
    };
    let stmt = tx
        .prepare_cached(sql::PATCH_TIMER.pg)
        .await
        .ctx("preparing patch")?;
    let priority = p.priority.map(i16::from);
    let row = tx
        .query_opt(
            &stmt,
            &[
                &p.id,
                &tenant_to_pg(p.tenant)?,
                &p.due_at,
                &p.message,
                &priority,
                &p.at,
            ],
        )
        .await
        .ctx("patching timer")?;
    Ok(match row {
        Some(row) => {
            let timer: TimerRecord = model::decode(&row)?;
            let moved = timer.due_at != before.due_at;
            WriteResult::Updated { timer, moved }
        }
        None => WriteResult::WrongState(before),
    })
}

pub(super) async fn replace(
    tx: &Transaction<'_>,
    t: &NewTimer,
    horizon: i64,
    results: &mut Vec<WriteResult>,
    announce: &mut Vec<DueEntry>,
) -> Result<()> {
    let mut one = Vec::with_capacity(1);
    super::timers::insert_run(tx, &[t], horizon, &mut one, announce).await?;
    let result = match one.pop() {
        Some(WriteResult::Existing(old)) if old.state == TimerState::Pending => {
            let patch = TimerPatch {
                tenant: old.tenant,
                id: old.id,
                due_at: Some(t.due_at),
                message: Some(t.message.clone()),
                priority: Some(t.priority),
                at: t.created_at,
            };
            let r = patch_then_announce(tx, &patch, horizon, announce).await?;
            // A timer that finished between the insert and the lock is
            // returned as it is, like any finished one.
            match r {
                WriteResult::WrongState(rec) => WriteResult::Existing(rec),
                other => other,
            }
        }
        Some(other) => other,
        None => {
            return Err(crate::StoreError::Internal(
                "postgres: lost a replace".into(),
            ));
        }
    };
    results.push(result);
    Ok(())
}

/// A patch, its moved timer announced like a new one.
pub(super) async fn patch_then_announce(
    tx: &Transaction<'_>,
    p: &TimerPatch,
    horizon: i64,
    announce: &mut Vec<DueEntry>,
) -> Result<WriteResult> {
    let r = patch(tx, p).await?;
    announce.extend(r.scheduled().into_iter().filter(|e| e.due_at <= horizon));
    Ok(r)
}

pub(super) async fn retry(
    tx: &Transaction<'_>,
    tenant: TenantId,
    id: TimerId,
    at: i64,
) -> Result<WriteResult> {
    let stmt = tx
        .prepare_cached(sql::RETRY_TIMER.pg)
        .await
        .ctx("preparing retry")?;
    let row = tx
        .query_opt(&stmt, &[&id, &tenant_to_pg(tenant)?, &at])
        .await
        .ctx("retrying timer")?;
    if let Some(row) = row {
        return Ok(WriteResult::Retried(model::decode(&row)?));
    }
    let stmt = tx
        .prepare_cached(concat!(
            "SELECT ",
            timer_cols!(),
            " FROM timers WHERE id = $1"
        ))
        .await
        .ctx("preparing timer read")?;
    let rec: Option<TimerRecord> = match tx.query_opt(&stmt, &[&id]).await.ctx("reading timer")? {
        Some(row) => Some(model::decode(&row)?),
        None => None,
    };
    Ok(match rec.filter(|r| r.tenant == tenant) {
        Some(rec) => WriteResult::WrongState(rec),
        None => WriteResult::NotFound,
    })
}

pub(super) async fn retry_many(
    tx: &Transaction<'_>,
    tenant: TenantId,
    filter: &RetryFilter,
    at: i64,
    limit: usize,
) -> Result<WriteResult> {
    tenant_to_pg(tenant)?;
    let mut timers: Vec<DueEntry> = Vec::new();
    for state in filter.states() {
        let left = limit.saturating_sub(timers.len());
        if left == 0 {
            break;
        }
        let mut picked: Vec<DueEntry> = Vec::new();
        let query = q::retry_pick(Dialect::Postgres, due_cols!(), tenant, state, filter, left);
        run(tx, &query, &mut picked).await?;
        if picked.is_empty() {
            continue;
        }
        let ids: Vec<TimerId> = picked.iter().map(|e| e.id).collect();
        let stmt = tx
            .prepare_cached(RETRY_PICKED)
            .await
            .ctx("preparing retry")?;
        let mut back: Vec<DueEntry> = Vec::new();
        for row in tx.query(&stmt, &[&ids, &at]).await.ctx("retrying timers")? {
            back.push(model::decode(&row)?);
        }
        // In due order, as picked.
        back.sort_by_key(|e| (e.due_at, e.id));
        timers.extend(back);
    }
    let mut more = false;
    for state in filter.states() {
        let mut found: Vec<DueEntry> = Vec::new();
        let query = q::retry_more(Dialect::Postgres, due_cols!(), tenant, state, filter);
        run(tx, &query, &mut found).await?;
        more |= !found.is_empty();
    }
    Ok(WriteResult::RetriedMany { timers, more })
}

#[cfg(test)]
mod tests {
    use herald_core::TimerKind;

    use super::*;
    use crate::prelude::*;
    use crate::testsuite::fixtures::{self, OTHER_TENANT};
    use crate::{CompletionOutcome, WriteOp};

    /// Every search the API allows (each filter combination, both orders, with
    /// and without a cursor), the dead-letter reads and the filtered retry, on
    /// a table of some size, as custom and as generic plans: none scans the
    /// timers table.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn searches_use_indexes() {
        let Some(pg) = herald_pgtemp::PgTemp::shared().expect("cluster") else {
            return;
        };
        let db = pg.fresh_database("search_plans").expect("database");
        let store = PgStore::open(db.url(), &Default::default())
            .await
            .expect("open");
        for chunk in 0..4i64 {
            let ops = (0..5_000i64)
                .map(|i| {
                    let n = chunk * 5_000 + i;
                    let mut t = fixtures::keyed(n % 7_000, &format!("k{n}"));
                    t.recipient = format!("user-{}", n % 500);
                    if n % 3 == 0 {
                        t.tenant = OTHER_TENANT;
                    }
                    WriteOp::InsertTimer(t)
                })
                .collect();
            let done = store
                .apply(ops)
                .await
                .expect("apply")
                .iter()
                .take(1_500)
                .enumerate()
                .map(|(i, r)| {
                    let t = fixtures::created(r);
                    let outcome = match i % 3 {
                        0 => CompletionOutcome::Done,
                        1 => CompletionOutcome::Dead,
                        _ => CompletionOutcome::Failed,
                    };
                    fixtures::completion(&t, 1, outcome, 9)
                })
                .collect();
            store.complete(done).await.expect("complete");
        }
        let client = store.client().await.expect("client");
        client
            .batch_execute("ANALYZE timers")
            .await
            .expect("analyze");
        let tenant = fixtures::DEFAULT_TENANT;
        let mut queries: Vec<Query> = Vec::new();
        let s = |v: &str| Some(v.to_string());
        for bits in 0..128u32 {
            let on = |b: u32| bits & (1 << b) != 0;
            let f = TimerFilter {
                state: on(0).then_some(TimerState::Dead),
                channel: if on(1) { s("webhook") } else { None },
                recipient: if on(2) { s("user-7") } else { None },
                idempotency_key: if on(3) { s("k77") } else { None },
                kind: on(4).then_some(TimerKind::Timer),
                due_after: on(5).then_some(100),
                due_before: on(6).then_some(6_000),
            };
            for order in [SortOrder::Asc, SortOrder::Desc] {
                for after in [
                    None,
                    Some(DueCursor {
                        due_at: 3_000,
                        id: 9_000,
                    }),
                ] {
                    queries.extend(q::search(
                        Dialect::Postgres,
                        timer_cols!(),
                        tenant,
                        &f,
                        after,
                        50,
                        order,
                    ));
                }
            }
        }
        let rf = RetryFilter {
            channel: s("webhook"),
            error: s("attempt"),
            due_after: Some(1),
            due_before: Some(6_000),
            ..RetryFilter::default()
        };
        for state in [TimerState::Dead, TimerState::Failed] {
            queries.push(q::dead_rows(Dialect::Postgres, tenant, state, &None));
            queries.push(q::dead_rows(
                Dialect::Postgres,
                tenant,
                state,
                &s("webhook"),
            ));
            for f in [&rf, &RetryFilter::default()] {
                queries.push(q::retry_pick(
                    Dialect::Postgres,
                    due_cols!(),
                    tenant,
                    state,
                    f,
                    1_000,
                ));
                queries.push(q::retry_more(
                    Dialect::Postgres,
                    due_cols!(),
                    tenant,
                    state,
                    f,
                ));
            }
        }
        for mode in ["auto", "force_generic_plan"] {
            client
                .batch_execute(&format!("SET plan_cache_mode = {mode}"))
                .await
                .expect("set plan_cache_mode");
            for query in &queries {
                let args = owned_args(query);
                let params: Vec<Param<'_>> = args.iter().map(|b| b.as_ref() as Param<'_>).collect();
                let rows = client
                    .query(&format!("EXPLAIN {}", query.sql), &params)
                    .await
                    .expect("explain");
                let plan: Vec<String> = rows.iter().map(|r| r.get::<_, String>(0)).collect();
                let plan = plan.join("\n");
                assert!(!plan.contains("Seq Scan"), "{mode}: {}\n{plan}", query.sql);
                assert!(plan.contains("Index"), "{mode}: {}\n{plan}", query.sql);
            }
        }
        for sql in [sql::PATCH_TIMER.pg, sql::RETRY_TIMER.pg, TIMER_FOR_UPDATE] {
            let stmt = client
                .prepare(&format!("EXPLAIN {sql}"))
                .await
                .expect("prepare");
            let n = stmt.params().len();
            let _ = n;
        }
    }
}
