//! Digest timers on PostgreSQL: placing a new one in the batch's transaction,
//! and the fire-time member probe.
//!
//! The candidates are read `FOR UPDATE`: a concurrent create joining the same
//! open digest waits for this one, then sees its close as this one left it.
//! Two creates that both find no open digest each open one; their closes are
//! then a few milliseconds apart and the engine, which takes the members of
//! a firing digest due shortly after it along, still sends them together.
//! Two batches that lock digests in opposite orders deadlock; PostgreSQL
//! aborts one, and `apply` retries it (40P01) like any deadlock.

use std::collections::HashSet;

use deadpool_postgres::Transaction;

use super::{Ctx, PgStore, col, timers};
use crate::digest::{MAX_CANDIDATES, Pending, sql};
use crate::model::{self, due_cols, tenant_to_pg};
use crate::{DueEntry, MergeProbe, NewTimer, Result, StoreError, TimerRecord, WriteResult};

// `sql::CANDIDATES` with a lock (a test checks they agree): `concat!`
// takes literals only.
const CANDIDATES_LOCKED: &str = concat!(
    "SELECT ",
    crate::model::timer_cols!(),
    " FROM timers WHERE tenant_id = $1 AND recipient = $2 \
     AND (recipient, due_at) >= ($2, $4) AND (recipient, due_at) <= ($2, $5) AND state = 0 AND kind = 'timer' \
     AND channel = $3 AND routing IS NOT NULL ORDER BY due_at, id LIMIT $6 FOR UPDATE"
);

// Every probe of a fetch batch in one statement: each probe's range read
// through the recipient's index (the lateral subquery is the shared read's
// shape, its limit per probe).
const PENDING: &str = concat!(
    "SELECT ",
    crate::model::timer_cols!("t"),
    " FROM unnest($1::int4[], $2::text[], $3::text[], $4::int8[], $5::int8[]) \
          AS p(tenant_id, recipient, channel, from_at, until_at) \
     CROSS JOIN LATERAL ( \
        SELECT ",
    crate::model::timer_cols!(),
    " FROM timers WHERE tenant_id = p.tenant_id AND recipient = p.recipient \
        AND (recipient, due_at) >= (p.recipient, p.from_at) \
        AND (recipient, due_at) <= (p.recipient, p.until_at) AND state = 0 \
        AND kind = 'timer' AND channel = p.channel AND routing IS NOT NULL \
        ORDER BY due_at, id LIMIT $6 \
     ) AS t"
);

// $1 ids, $2 new due_at, $3 at. Only still-pending members move.
const SLIDE: &str = concat!(
    "UPDATE timers SET due_at = $2, updated_at = $3 WHERE id = ANY($1::int8[]) AND state = 0 \
     RETURNING ",
    due_cols!()
);

async fn candidates(
    client: &impl deadpool_postgres::GenericClient,
    statement: &str,
    p: &MergeProbe,
) -> Result<Vec<TimerRecord>> {
    let tenant = tenant_to_pg(p.tenant)?;
    let stmt = client
        .prepare_cached(statement)
        .await
        .ctx("preparing digest candidates")?;
    let rows = client
        .query(
            &stmt,
            &[
                &tenant,
                &p.user_id,
                &p.channel,
                &p.from,
                &p.until,
                &MAX_CANDIDATES,
            ],
        )
        .await
        .ctx("reading digest candidates")?;
    rows.iter().map(model::decode).collect()
}

/// Inserts a digest timer: `Existing` for a taken key (nothing else
/// written), else `DigestCreated`, with the members moved when it slid the
/// digest's close. New and moved timers due before `horizon` are announced.
pub(super) async fn insert(
    tx: &Transaction<'_>,
    t: &NewTimer,
    horizon: i64,
    results: &mut Vec<WriteResult>,
    announce: &mut Vec<DueEntry>,
) -> Result<()> {
    let Some(pending) = Pending::of(t) else {
        return timers::insert_run(tx, &[t], horizon, results, announce).await;
    };
    if let Some(key) = &t.idempotency_key {
        let found = timers::keyed_timers(tx, &[(t.tenant, key.as_str())]).await?;
        if let Some(rec) = found.into_values().next() {
            results.push(WriteResult::Existing(rec));
            return Ok(());
        }
    }
    let profile: Option<String> = if pending.needs_zone() {
        let stmt = tx
            .prepare_cached(sql::PROFILE.pg)
            .await
            .ctx("preparing digest zone")?;
        let tenant = tenant_to_pg(t.tenant)?;
        match tx
            .query_opt(&stmt, &[&tenant, &t.recipient])
            .await
            .ctx("reading digest zone")?
        {
            Some(row) => Some(col(&row, 0, "subscribers.profile")?),
            None => None,
        }
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
    let found = candidates(tx, CANDIDATES_LOCKED, &probe).await?;
    let at = t.created_at;
    let (placed_timer, placed, members) = pending.place(t.clone(), own_close, &found);
    let mut one = Vec::with_capacity(1);
    timers::insert_run(tx, &[&placed_timer], horizon, &mut one, announce).await?;
    let timer = match one.pop() {
        Some(WriteResult::Created(timer)) => timer,
        Some(other) => {
            results.push(other);
            return Ok(());
        }
        None => {
            return Err(StoreError::Internal(
                "postgres: lost a digest insert".into(),
            ));
        }
    };
    let mut moved = Vec::new();
    if let Some(to) = placed.slide_to
        && !members.is_empty()
    {
        let stmt = tx
            .prepare_cached(SLIDE)
            .await
            .ctx("preparing digest slide")?;
        for row in tx
            .query(&stmt, &[&members, &to, &at])
            .await
            .ctx("sliding a digest")?
        {
            let e: DueEntry = model::decode(&row)?;
            if e.due_at <= horizon {
                announce.push(e);
            }
            moved.push(e);
        }
        tracing::debug!(
            timer_id = timer.id,
            close = to,
            moved = moved.len(),
            "digest slid"
        );
    }
    results.push(WriteResult::DigestCreated { timer, moved });
    Ok(())
}

/// `Store::pending_digests`: one statement for all probes.
pub(super) async fn pending(store: &PgStore, probes: &[MergeProbe]) -> Result<Vec<TimerRecord>> {
    let tenants = probes
        .iter()
        .map(|p| tenant_to_pg(p.tenant))
        .collect::<Result<Vec<i32>>>()?;
    let users: Vec<&str> = probes.iter().map(|p| p.user_id.as_str()).collect();
    let channels: Vec<&str> = probes.iter().map(|p| p.channel.as_str()).collect();
    let froms: Vec<i64> = probes.iter().map(|p| p.from).collect();
    let untils: Vec<i64> = probes.iter().map(|p| p.until).collect();
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(PENDING)
        .await
        .ctx("preparing pending_digests")?;
    let rows = client
        .query(
            &stmt,
            &[
                &tenants,
                &users,
                &channels,
                &froms,
                &untils,
                &MAX_CANDIDATES,
            ],
        )
        .await
        .ctx("reading pending_digests")?;
    // Overlapping probes find the same timers: keep each once.
    let mut seen = HashSet::with_capacity(rows.len());
    let mut out = Vec::with_capacity(rows.len());
    for row in &rows {
        let t: TimerRecord = model::decode(row)?;
        if seen.insert(t.id) {
            out.push(t);
        }
    }
    out.sort_unstable_by_key(TimerRecord::cursor);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use herald_core::digest::Digest;
    use herald_core::timer::Routing;

    use super::*;
    use crate::WriteOp;
    use crate::postgres::Param;
    use crate::prelude::*;

    #[test]
    fn the_locked_read_is_the_shared_one_with_a_lock() {
        assert_eq!(
            CANDIDATES_LOCKED,
            format!("{} FOR UPDATE", sql::CANDIDATES.pg)
        );
    }

    /// The candidate reads walk the recipient's index over a burst of
    /// timers due at one moment (many recipients, plain timers beside), as
    /// custom and generic plans, before and after statistics: never the due
    /// range of every recipient.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn digest_reads_use_the_recipient_index() {
        let Some(pg) = herald_pgtemp::PgTemp::shared().expect("cluster") else {
            return;
        };
        let db = pg.fresh_database("digest_plans").expect("database");
        let store = PgStore::open(db.url(), &Default::default())
            .await
            .expect("open");
        let routing = Routing {
            digest: Some(Digest {
                key: "k".into(),
                window_ms: Some(1_000),
                max_delay_ms: None,
                at_local: None,
                since: Some(0),
            }),
            ..Routing::default()
        };
        for batch in 0..20 {
            let ops = (0..500)
                .map(|u| {
                    let mut t = crate::testsuite::fixtures::timer(5_000);
                    t.recipient = format!("user-{batch:02}-{u:03}");
                    if u % 2 == 0 {
                        t.routing = routing.stored();
                    }
                    WriteOp::InsertTimer(t)
                })
                .collect();
            store.apply(ops).await.expect("timers");
        }
        let client = store.client().await.expect("client");
        let (tenant, user, channel, from, until) =
            (1i32, "user-07-007", "webhook", 0i64, 10_000i64);
        for (analyze, generic) in [(false, false), (false, true), (true, false), (true, true)] {
            if analyze {
                client.batch_execute("ANALYZE").await.expect("analyze");
            }
            let mode = crate::postgres::set_plan_mode(&client, generic).await;
            let (tenants, users, channels, froms, untils) = (
                vec![tenant; 2],
                vec![user, "user-03-003"],
                vec![channel; 2],
                vec![from; 2],
                vec![until; 2],
            );
            let one: [Param<'_>; 6] = [&tenant, &user, &channel, &from, &until, &MAX_CANDIDATES];
            let many: [Param<'_>; 6] = [
                &tenants,
                &users,
                &channels,
                &froms,
                &untils,
                &MAX_CANDIDATES,
            ];
            for (sql, params) in [
                (sql::CANDIDATES.pg, &one),
                (CANDIDATES_LOCKED, &one),
                (PENDING, &many),
            ] {
                let rows = client
                    .query(&format!("EXPLAIN {sql}"), params)
                    .await
                    .expect("explain");
                let plan: Vec<String> = rows.iter().map(|r| r.get::<_, String>(0)).collect();
                let plan = plan.join("\n");
                assert!(
                    plan.contains("timers_tenant_recipient_due"),
                    "{mode}, analyzed: {analyze}\n{plan}"
                );
                assert!(!plan.contains("Seq Scan"), "{plan}");
            }
        }
    }
}
