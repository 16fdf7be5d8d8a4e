//! The grant ledger on SQLite (see `crate::grants`): one writer, so every
//! spend and recording is serialised by its transaction.

use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};

use super::error::Ctx;
use crate::Result;
use crate::grants::{
    GrantEnd, GrantRecord, GrantRecording, GrantSettle, GrantUse, GrantsRecorded, MAX_GRANTS_HELD,
    sql,
};
use crate::model::tenant_to_db;
use herald_core::{TenantId, TimerId};

pub(super) fn record(conn: &mut Connection, rec: &GrantRecording) -> Result<GrantsRecorded> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("beginning record_grants")?;
    let out = record_in(&tx, rec)?;
    tx.commit().ctx("committing record_grants")?;
    Ok(out)
}

/// [`record`] inside the caller's transaction (a write batch's).
pub(super) fn record_in(tx: &Connection, rec: &GrantRecording) -> Result<GrantsRecorded> {
    let tenant = tenant_to_db(rec.tenant);
    let fresh = tx
        .prepare_cached(sql::KEY.sqlite)
        .ctx("preparing grant key")?
        .execute(params![tenant, rec.user_id, rec.key, rec.at])
        .ctx("recording the grant key")?
        == 1;
    if fresh {
        let mut add = tx
            .prepare_cached(sql::ADD.sqlite)
            .ctx("preparing grant add")?;
        for g in &rec.grants {
            add.execute(params![
                tenant,
                rec.user_id,
                rec.channel,
                g.template_id,
                i64::from(g.count),
                i64::from(g.long_term),
                rec.at,
                MAX_GRANTS_HELD
            ])
            .ctx("adding grants")?;
        }
    }
    let grants = list_in(tx, rec.tenant, &rec.user_id)?
        .into_iter()
        .filter(|g| g.channel == rec.channel)
        .collect();
    Ok(GrantsRecorded {
        recorded: fresh,
        grants,
    })
}

pub(super) fn list(
    conn: &mut Connection,
    tenant: TenantId,
    user: &str,
) -> Result<Vec<GrantRecord>> {
    let tx = conn.transaction().ctx("beginning list_grants")?;
    let out = list_in(&tx, tenant, user)?;
    tx.commit().ctx("ending list_grants")?;
    Ok(out)
}

fn list_in(tx: &Connection, tenant: TenantId, user: &str) -> Result<Vec<GrantRecord>> {
    let mut stmt = tx
        .prepare_cached(sql::LIST.sqlite)
        .ctx("preparing grant list")?;
    let rows = stmt
        .query_map(params![tenant_to_db(tenant), user], |r| {
            Ok(GrantRecord {
                channel: r.get(0)?,
                template_id: r.get(1)?,
                remaining: r.get(2)?,
                long_term: r.get::<_, i64>(3)? != 0,
                granted: r.get(4)?,
                spent: r.get(5)?,
                updated_at: r.get(6)?,
            })
        })
        .ctx("listing grants")?;
    rows.collect::<std::result::Result<Vec<_>, _>>()
        .ctx("listing grants")
}

/// Spends the grant `g` for timer `timer` inside `tx`, unless the timer
/// holds one already; whether the send may go.
pub(super) fn spend(tx: &Transaction<'_>, timer: TimerId, g: &GrantUse, at: i64) -> Result<bool> {
    let held: Option<i64> = tx
        .prepare_cached(sql::HELD.sqlite)
        .ctx("preparing grant hold read")?
        .query_row(params![timer], |r| r.get(0))
        .optional()
        .ctx("reading a grant hold")?;
    if held.is_some() {
        return Ok(true);
    }
    let tenant = tenant_to_db(g.tenant);
    let one_time: Option<i64> = tx
        .prepare_cached(sql::SPEND.sqlite)
        .ctx("preparing grant spend")?
        .query_row(
            params![tenant, g.user_id, g.channel, g.template_id, at],
            |r| r.get(0),
        )
        .optional()
        .ctx("spending a grant")?;
    let Some(one_time) = one_time else {
        return Ok(false);
    };
    tx.prepare_cached(sql::HOLD.sqlite)
        .ctx("preparing grant hold")?
        .execute(params![
            timer,
            tenant,
            g.user_id,
            g.channel,
            g.template_id,
            one_time,
            at
        ])
        .ctx("holding a grant")?;
    Ok(true)
}

/// Ends timer `timer`'s hold inside `tx`, as `end` says; nothing without one.
pub(super) fn release(tx: &Transaction<'_>, timer: TimerId, end: GrantEnd, at: i64) -> Result<()> {
    let held: Option<(i64, String, String, String, i64)> = tx
        .prepare_cached(sql::RELEASE.sqlite)
        .ctx("preparing grant release")?
        .query_row(params![timer], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .optional()
        .ctx("releasing a grant hold")?;
    let Some((tenant, user, channel, template, one_time)) = held else {
        return Ok(());
    };
    match end {
        GrantEnd::Spent => {}
        GrantEnd::Returned => {
            tx.prepare_cached(sql::GIVE_BACK.sqlite)
                .ctx("preparing grant give-back")?
                .execute(params![tenant, user, channel, template, one_time, at])
                .ctx("giving a grant back")?;
        }
        GrantEnd::NoneLeft => {
            tx.prepare_cached(sql::NONE_LEFT.sqlite)
                .ctx("preparing grant zeroing")?
                .execute(params![tenant, user, channel, template, at])
                .ctx("zeroing grants")?;
        }
    }
    Ok(())
}

pub(super) fn settle(conn: &mut Connection, settles: &[GrantSettle], at: i64) -> Result<()> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("beginning settle_grants")?;
    for s in settles {
        release(&tx, s.timer_id, s.end, at)?;
    }
    tx.commit().ctx("committing settle_grants")
}
