//! The subscriber directory on SQLite (SQL in [`crate::directory`]). Writes
//! run in the batch's `apply` transaction; SQLite's single writer makes the
//! version check and the write one step.

use herald_core::TenantId;
use rusqlite::{Connection, params};

use super::error::Ctx;
use crate::directory::sql;
use crate::model::{self, tenant_to_db};
use crate::{PutSubscriber, Result, SubscriberRecord, WriteResult};

fn one(conn: &Connection, tenant: TenantId, user_id: &str) -> Result<Option<SubscriberRecord>> {
    let mut stmt = conn
        .prepare_cached(sql::ONE.sqlite)
        .ctx("preparing subscriber read")?;
    let mut rows = stmt
        .query(params![tenant_to_db(tenant), user_id])
        .ctx("reading subscriber")?;
    match rows.next().ctx("reading subscriber")? {
        Some(row) => model::decode(row).map(Some),
        None => Ok(None),
    }
}

pub(super) fn put(conn: &Connection, put: &PutSubscriber) -> Result<WriteResult> {
    let old = one(conn, put.tenant, &put.user_id)?;
    if !put.allowed(old.as_ref()) {
        return Ok(WriteResult::VersionConflict { current: old });
    }
    let statement = if old.is_some() {
        sql::UPDATE.sqlite
    } else {
        sql::INSERT.sqlite
    };
    conn.prepare_cached(statement)
        .ctx("preparing subscriber write")?
        .execute(params![
            tenant_to_db(put.tenant),
            put.user_id,
            put.profile,
            put.at
        ])
        .ctx("writing subscriber")?;
    Ok(WriteResult::SubscriberPut {
        subscriber: put.record(old.as_ref()),
        created: old.is_none(),
    })
}

pub(super) fn delete(conn: &Connection, tenant: TenantId, user_id: &str) -> Result<WriteResult> {
    let Some(old) = one(conn, tenant, user_id)? else {
        return Ok(WriteResult::NotFound);
    };
    conn.prepare_cached(sql::DELETE.sqlite)
        .ctx("preparing subscriber delete")?
        .execute(params![tenant_to_db(tenant), user_id])
        .ctx("deleting subscriber")?;
    Ok(WriteResult::SubscriberDeleted(old))
}

pub(super) fn get_many(
    conn: &mut Connection,
    tenant: TenantId,
    user_ids: Vec<String>,
) -> Result<Vec<SubscriberRecord>> {
    // One snapshot for all of them.
    let tx = conn.transaction().ctx("beginning get_subscribers")?;
    let mut out = Vec::with_capacity(user_ids.len());
    let mut seen = std::collections::HashSet::with_capacity(user_ids.len());
    for id in user_ids {
        if seen.insert(id.clone())
            && let Some(s) = one(&tx, tenant, &id)?
        {
            out.push(s);
        }
    }
    tx.commit().ctx("ending get_subscribers")?;
    Ok(out)
}

pub(super) fn list(
    conn: &Connection,
    tenant: TenantId,
    after: Option<String>,
    limit: usize,
) -> Result<Vec<SubscriberRecord>> {
    let mut stmt = conn
        .prepare_cached(sql::LIST.sqlite)
        .ctx("preparing list_subscribers")?;
    let mut rows = stmt
        .query(params![
            tenant_to_db(tenant),
            after.unwrap_or_default(),
            model::limit_to_db(limit)
        ])
        .ctx("listing subscribers")?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().ctx("listing subscribers")? {
        out.push(model::decode(row)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite::testing::{migrated, plan};

    /// Every directory statement walks the primary key.
    #[test]
    fn directory_queries_use_the_primary_key() {
        let conn = migrated();
        for q in [sql::ONE, sql::LIST, sql::UPDATE, sql::DELETE].map(|s| s.sqlite) {
            let p = plan(&conn, q);
            assert!(!p.contains("SCAN"), "{q}:\n{p}");
        }
    }
}
