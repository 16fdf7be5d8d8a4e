//! Tenants, API keys and the audit log on SQLite.

use async_trait::async_trait;
use herald_core::TenantId;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::SqliteStore;
use super::error::Ctx;
use crate::access::sql;
use crate::model::{self, AuditParams, Columns, limit_to_db, scopes_to_db, tenant_to_db};
use crate::{
    AccessStore, ApiKeyRecord, AuditEntry, AuditFilter, NewApiKey, NewAuditEntry, Result, refusals,
    wall_clock_ms,
};

const CREATE_TENANT: &str = "INSERT INTO tenants (name, created_at) VALUES (?1, ?2) \
    ON CONFLICT (name) DO NOTHING";

const INSERT_AUDIT: &str = "INSERT INTO audit_log \
    (at, key_id, key_name, tenant_id, method, route, resource_id, status, count, reason) \
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)";

fn tenant_by_name(conn: &Connection, name: &str) -> Result<Option<TenantId>> {
    let id: Option<i64> = conn
        .prepare_cached(sql::TENANT_BY_NAME.sqlite)
        .ctx("preparing tenant lookup")?
        .query_row([name], |r| r.get(0))
        .optional()
        .ctx("looking up a tenant")?;
    id.map(|id| {
        u32::try_from(id)
            .map(TenantId)
            .map_err(|_| crate::StoreError::Corrupt(format!("tenants.id {id} is out of range")))
    })
    .transpose()
}

fn create_tenant(conn: &mut Connection, name: &str, now: i64) -> Result<Option<TenantId>> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("beginning tenant create")?;
    tx.prepare_cached(CREATE_TENANT)
        .ctx("preparing tenant create")?
        .execute(params![name, now])
        .ctx("creating a tenant")?;
    let id = tenant_by_name(&tx, name)?;
    tx.commit().ctx("committing tenant create")?;
    Ok(id)
}

fn query_all<T, P: rusqlite::Params>(
    conn: &Connection,
    sql: &str,
    params: P,
    what: &str,
    read: impl Fn(&rusqlite::Row<'_>) -> Result<T>,
) -> Result<Vec<T>> {
    let mut stmt = conn.prepare_cached(sql).ctx(what)?;
    let mut rows = stmt.query(params).ctx(what)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().ctx(what)? {
        out.push(read(row)?);
    }
    Ok(out)
}

fn key_by(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
) -> Result<Option<ApiKeyRecord>> {
    let mut stmt = conn.prepare_cached(sql).ctx("preparing key read")?;
    let mut rows = stmt.query(params).ctx("reading a key")?;
    match rows.next().ctx("reading a key")? {
        Some(row) => model::decode(row).map(Some),
        None => Ok(None),
    }
}

fn append_audit(conn: &mut Connection, entries: Vec<NewAuditEntry>) -> Result<()> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("beginning audit append")?;
    {
        let mut insert = tx
            .prepare_cached(INSERT_AUDIT)
            .ctx("preparing audit append")?;
        for e in &entries {
            insert
                .execute(params![
                    e.at,
                    e.key_id,
                    e.key_name,
                    tenant_to_db(e.tenant),
                    e.method,
                    e.route,
                    e.resource_id,
                    e.status,
                    i64::try_from(e.count).unwrap_or(i64::MAX),
                    e.reason,
                ])
                .ctx("appending to the audit log")?;
        }
    }
    tx.commit().ctx("committing audit append")
}

fn list_audit(
    conn: &mut Connection,
    filter: AuditFilter,
    after_id: Option<i64>,
    limit: usize,
) -> Result<Vec<AuditEntry>> {
    // The cursor's position and the page: one snapshot.
    let tx = conn.transaction().ctx("beginning audit read")?;
    let cursor = match after_id {
        None => None,
        Some(id) => {
            let at: Option<i64> = tx
                .prepare_cached(sql::AUDIT_AT.sqlite)
                .ctx("preparing audit cursor")?
                .query_row([id], |r| r.get(0))
                .optional()
                .ctx("reading the audit cursor")?;
            Some((at.ok_or_else(|| refusals::no_audit_entry(id))?, id))
        }
    };
    let p = AuditParams::new(&filter, cursor);
    let statement = sql::audit_page(filter.oldest_first, filter.tenant.is_some());
    use rusqlite::types::Value;
    let mut values: Vec<Value> = vec![
        p.start.0.into(),
        p.start.1.into(),
        limit_to_db(limit).into(),
        p.since.into(),
        p.key_id.into(),
        p.key_name.into(),
        p.route.into(),
        p.route_prefix.into(),
        p.status.0.into(),
        p.status.1.into(),
    ];
    // Only a tenant's statement has a `$11`.
    if let Some(t) = filter.tenant {
        values.push(tenant_to_db(t).into());
    }
    let page = query_all(
        &tx,
        statement.sqlite,
        rusqlite::params_from_iter(values),
        "reading the audit log",
        |r| model::decode(r),
    )?;
    tx.commit().ctx("ending audit read")?;
    Ok(page)
}

#[async_trait]
impl AccessStore for SqliteStore {
    async fn tenant_id(&self, name: &str, create: bool) -> Result<Option<TenantId>> {
        let name = name.to_string();
        if !create {
            return self.read(move |c| tenant_by_name(c, &name)).await;
        }
        refusals::tenant_name(&name)?;
        let now = wall_clock_ms();
        self.write(move |c| create_tenant(c, &name, now)).await
    }

    async fn tenants(&self) -> Result<Vec<(TenantId, String)>> {
        self.read(|c| {
            query_all(c, sql::TENANTS.sqlite, [], "listing tenants", |r| {
                Ok((
                    TenantId(r.narrow(0, "tenants.id")?),
                    r.str(1, "tenants.name")?.to_owned(),
                ))
            })
        })
        .await
    }

    async fn create_api_key(&self, key: NewApiKey) -> Result<ApiKeyRecord> {
        let scopes = scopes_to_db(&key.scopes)?;
        self.write(move |c| {
            let id: i64 = c
                .prepare_cached(sql::INSERT_KEY.sqlite)
                .ctx("preparing key insert")?
                .query_row(
                    params![
                        tenant_to_db(key.tenant),
                        key.name,
                        scopes,
                        &key.hash[..],
                        key.created_at,
                        key.expires_at
                    ],
                    |r| r.get(0),
                )
                .ctx("inserting a key")?;
            Ok(key.into_record(id))
        })
        .await
    }

    async fn get_api_key(&self, id: i64) -> Result<Option<ApiKeyRecord>> {
        self.read(move |c| key_by(c, sql::KEY_BY_ID.sqlite, [id]))
            .await
    }

    async fn list_api_keys(
        &self,
        tenant: Option<TenantId>,
        after: Option<i64>,
        limit: usize,
    ) -> Result<Vec<ApiKeyRecord>> {
        let (after, limit) = (after.unwrap_or(i64::MIN), limit_to_db(limit));
        self.read(move |c| match tenant {
            None => query_all(
                c,
                sql::ALL_KEYS.sqlite,
                params![after, limit],
                "listing keys",
                |r| model::decode(r),
            ),
            Some(t) => query_all(
                c,
                sql::TENANT_KEYS.sqlite,
                params![after, limit, tenant_to_db(t)],
                "listing keys",
                |r| model::decode(r),
            ),
        })
        .await
    }

    async fn revoke_api_key(&self, id: i64, at: i64) -> Result<Option<ApiKeyRecord>> {
        self.write(move |c| key_by(c, sql::REVOKE_KEY.sqlite, params![id, at]))
            .await
    }

    async fn append_audit(&self, entries: Vec<NewAuditEntry>) -> Result<()> {
        if entries.is_empty() {
            return Ok(());
        }
        self.write(move |c| append_audit(c, entries)).await
    }

    async fn list_audit(
        &self,
        filter: AuditFilter,
        after_id: Option<i64>,
        limit: usize,
    ) -> Result<Vec<AuditEntry>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        self.read(move |c| list_audit(c, filter, after_id, limit))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite::testing::{migrated, plan};

    #[test]
    fn access_reads_use_their_indexes() {
        let conn = migrated();
        for (sql, index) in [
            (sql::AUDIT_ALL.sqlite, "USING INDEX audit_log_at (at>?)"),
            (
                sql::AUDIT_TENANT.sqlite,
                "USING INDEX audit_log_tenant (tenant_id=? AND at>?)",
            ),
            // Newest first walks the same indexes down from the start.
            (sql::AUDIT_ALL_DESC.sqlite, "USING INDEX audit_log_at (at"),
            (
                sql::AUDIT_TENANT_DESC.sqlite,
                "USING INDEX audit_log_tenant (tenant_id=? AND at",
            ),
            (
                sql::TENANT_KEYS.sqlite,
                "USING INDEX api_keys_tenant (tenant_id=? AND id>?)",
            ),
            (sql::ALL_KEYS.sqlite, "USING INTEGER PRIMARY KEY (rowid>?)"),
            (sql::TENANT_BY_NAME.sqlite, "USING COVERING INDEX"),
        ] {
            let p = plan(&conn, sql);
            assert!(p.contains(index), "{sql}\n{p}");
            assert!(!p.contains("TEMP B-TREE"), "must not sort: {sql}:\n{p}");
            assert!(
                p.lines().all(|l| !l.contains("SCAN")),
                "table scan: {sql}:\n{p}"
            );
        }
    }
}
