//! The grant ledger on PostgreSQL (see `crate::grants`). A spend is one
//! guarded `UPDATE` of the user's row, so two nodes spending for the same
//! user and template serialise on its row lock and never both take the
//! last grant.

use herald_core::{TenantId, TimerId};

use super::{Ctx, PgStore};
use crate::Result;
use crate::grants::{
    GrantEnd, GrantRecord, GrantRecording, GrantSettle, GrantUse, GrantsRecorded, MAX_GRANTS_HELD,
    sql,
};
use crate::model::{Columns, tenant_to_pg};

type Tx<'a> = deadpool_postgres::Transaction<'a>;

pub(super) async fn record(store: &PgStore, rec: &GrantRecording) -> Result<GrantsRecorded> {
    let mut client = store.client().await?;
    let tx = client.transaction().await.ctx("beginning record_grants")?;
    let out = record_in(&tx, rec).await?;
    tx.commit().await.ctx("committing record_grants")?;
    Ok(out)
}

/// [`record`] inside the caller's transaction (a write batch's).
pub(super) async fn record_in(tx: &Tx<'_>, rec: &GrantRecording) -> Result<GrantsRecorded> {
    let tenant = tenant_to_pg(rec.tenant)?;
    let key = tx
        .prepare_cached(sql::KEY.pg)
        .await
        .ctx("preparing grant key")?;
    let fresh = tx
        .execute(&key, &[&tenant, &rec.user_id, &rec.key, &rec.at])
        .await
        .ctx("recording the grant key")?
        == 1;
    if fresh {
        let add = tx
            .prepare_cached(sql::ADD.pg)
            .await
            .ctx("preparing grant add")?;
        for g in &rec.grants {
            tx.execute(
                &add,
                &[
                    &tenant,
                    &rec.user_id,
                    &rec.channel,
                    &g.template_id,
                    &i64::from(g.count),
                    &i32::from(g.long_term),
                    &rec.at,
                    &MAX_GRANTS_HELD,
                ],
            )
            .await
            .ctx("adding grants")?;
        }
    }
    let grants = list_in(tx, rec.tenant, &rec.user_id)
        .await?
        .into_iter()
        .filter(|g| g.channel == rec.channel)
        .collect();
    Ok(GrantsRecorded {
        recorded: fresh,
        grants,
    })
}

pub(super) async fn list(
    store: &PgStore,
    tenant: TenantId,
    user: &str,
) -> Result<Vec<GrantRecord>> {
    let mut client = store.client().await?;
    let tx = client.transaction().await.ctx("beginning list_grants")?;
    let out = list_in(&tx, tenant, user).await?;
    tx.commit().await.ctx("ending list_grants")?;
    Ok(out)
}

async fn list_in(tx: &Tx<'_>, tenant: TenantId, user: &str) -> Result<Vec<GrantRecord>> {
    let stmt = tx
        .prepare_cached(sql::LIST.pg)
        .await
        .ctx("preparing grant list")?;
    let rows = tx
        .query(&stmt, &[&tenant_to_pg(tenant)?, &user])
        .await
        .ctx("listing grants")?;
    rows.iter()
        .map(|r| {
            Ok(GrantRecord {
                channel: r.str(0, "grants.channel")?.to_string(),
                template_id: r.str(1, "grants.template_id")?.to_string(),
                remaining: r.int(2, "grants.remaining")?,
                long_term: r.int(3, "grants.long_term")? != 0,
                granted: r.int(4, "grants.granted")?,
                spent: r.int(5, "grants.spent")?,
                updated_at: r.int(6, "grants.updated_at")?,
            })
        })
        .collect()
}

/// Spends the grant `g` for timer `timer` inside `tx`, unless the timer
/// holds one already; whether the send may go.
pub(super) async fn spend(tx: &Tx<'_>, timer: TimerId, g: &GrantUse, at: i64) -> Result<bool> {
    let held = tx
        .prepare_cached(sql::HELD.pg)
        .await
        .ctx("preparing grant hold read")?;
    if tx
        .query_opt(&held, &[&timer])
        .await
        .ctx("reading a grant hold")?
        .is_some()
    {
        return Ok(true);
    }
    let tenant = tenant_to_pg(g.tenant)?;
    let stmt = tx
        .prepare_cached(sql::SPEND.pg)
        .await
        .ctx("preparing grant spend")?;
    let Some(row) = tx
        .query_opt(
            &stmt,
            &[&tenant, &g.user_id, &g.channel, &g.template_id, &at],
        )
        .await
        .ctx("spending a grant")?
    else {
        return Ok(false);
    };
    let one_time = i32::try_from(row.int(0, "grants.long_term")?).unwrap_or(1);
    let hold = tx
        .prepare_cached(sql::HOLD.pg)
        .await
        .ctx("preparing grant hold")?;
    tx.execute(
        &hold,
        &[
            &timer,
            &tenant,
            &g.user_id,
            &g.channel,
            &g.template_id,
            &one_time,
            &at,
        ],
    )
    .await
    .ctx("holding a grant")?;
    Ok(true)
}

/// Ends timer `timer`'s hold inside `tx`, as `end` says; nothing without one.
pub(super) async fn release(tx: &Tx<'_>, timer: TimerId, end: GrantEnd, at: i64) -> Result<()> {
    let stmt = tx
        .prepare_cached(sql::RELEASE.pg)
        .await
        .ctx("preparing grant release")?;
    let Some(row) = tx
        .query_opt(&stmt, &[&timer])
        .await
        .ctx("releasing a grant hold")?
    else {
        return Ok(());
    };
    let tenant = i32::try_from(row.int(0, "grant_holds.tenant_id")?).unwrap_or_default();
    let user = row.str(1, "grant_holds.user_id")?;
    let channel = row.str(2, "grant_holds.channel")?;
    let template = row.str(3, "grant_holds.template_id")?;
    let one_time = row.int(4, "grant_holds.one_time")?;
    match end {
        GrantEnd::Spent => {}
        GrantEnd::Returned => {
            let back = tx
                .prepare_cached(sql::GIVE_BACK.pg)
                .await
                .ctx("preparing grant give-back")?;
            tx.execute(
                &back,
                &[&tenant, &user, &channel, &template, &one_time, &at],
            )
            .await
            .ctx("giving a grant back")?;
        }
        GrantEnd::NoneLeft => {
            let zero = tx
                .prepare_cached(sql::NONE_LEFT.pg)
                .await
                .ctx("preparing grant zeroing")?;
            tx.execute(&zero, &[&tenant, &user, &channel, &template, &at])
                .await
                .ctx("zeroing grants")?;
        }
    }
    Ok(())
}

pub(super) async fn settle(store: &PgStore, settles: &[GrantSettle], at: i64) -> Result<()> {
    let mut client = store.client().await?;
    let tx = client.transaction().await.ctx("beginning settle_grants")?;
    for s in settles {
        release(&tx, s.timer_id, s.end, at).await?;
    }
    tx.commit().await.ctx("committing settle_grants")
}
