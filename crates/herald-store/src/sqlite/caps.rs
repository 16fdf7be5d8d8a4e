//! Frequency-cap counters on SQLite: one writer, so a transaction per
//! batch serialises every take.

use rusqlite::{Connection, TransactionBehavior, params};

use super::error::Ctx;
use crate::Result;
use crate::caps::{CapTake, CapVerdict, decide, sql};
use crate::model::tenant_to_db;

pub(super) fn take(conn: &mut Connection, takes: &[CapTake], at: i64) -> Result<Vec<CapVerdict>> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("beginning cap take")?;
    let decided = {
        let mut read = tx
            .prepare_cached(sql::READ.sqlite)
            .ctx("preparing cap read")?;
        decide(takes, at, |tenant, key| -> Result<Vec<(i64, i64)>> {
            let rows = read
                .query_map(params![tenant_to_db(tenant), key], |r| {
                    Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))
                })
                .ctx("reading cap counters")?;
            rows.collect::<std::result::Result<Vec<_>, _>>()
                .ctx("reading cap counters")
        })?
    };
    {
        let mut add = tx
            .prepare_cached(sql::ADD.sqlite)
            .ctx("preparing cap add")?;
        for a in &decided.added {
            add.execute(params![
                tenant_to_db(a.tenant),
                a.key,
                a.bucket,
                a.count,
                a.expires_at
            ])
            .ctx("adding to cap counters")?;
        }
        let mut prune = tx
            .prepare_cached(sql::PRUNE.sqlite)
            .ctx("preparing cap prune")?;
        for (tenant, key, oldest) in &decided.stale {
            prune
                .execute(params![tenant_to_db(*tenant), key, oldest])
                .ctx("pruning cap counters")?;
        }
    }
    tx.commit().ctx("committing cap take")?;
    Ok(decided.verdicts)
}
