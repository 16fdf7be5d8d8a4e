//! Tenants, API keys and the audit log on PostgreSQL.
//!
//! Creating a tenant is `INSERT ... ON CONFLICT DO NOTHING` on the unique
//! name, then (when another node won the race) a read in a new statement,
//! which sees the winner's row once it committed: every node gets one id.
//! A name already there is read first, so repeated lookups draw no sequence
//! values.

use async_trait::async_trait;
use herald_core::TenantId;

use super::{Ctx, Param, PgStore};
use crate::access::sql;
use crate::model::{self, Columns, audit_start, limit_to_db, scopes_to_db, tenant_to_pg};
use crate::{
    AccessStore, ApiKeyRecord, AuditEntry, NewApiKey, NewAuditEntry, Result, StoreError, refusals,
    wall_clock_ms,
};

const CREATE_TENANT: &str = "INSERT INTO tenants (name, created_at) VALUES ($1, $2) \
    ON CONFLICT (name) DO NOTHING RETURNING id";

// Ids follow the order given.
const INSERT_AUDIT: &str = "INSERT INTO audit_log \
    (at, key_id, key_name, tenant_id, method, route, resource_id, status, count, reason) \
    SELECT at, key_id, key_name, tenant_id, method, route, resource_id, status, count, reason \
    FROM unnest($1::int8[], $2::int8[], $3::text[], $4::int4[], $5::text[], $6::text[], \
                $7::text[], $8::int4[], $9::int8[], $10::text[]) WITH ORDINALITY \
         AS u(at, key_id, key_name, tenant_id, method, route, resource_id, status, count, \
              reason, ord) \
    ORDER BY ord";

fn tenant_of(v: i32) -> Result<TenantId> {
    u32::try_from(v)
        .map(TenantId)
        .map_err(|_| StoreError::Corrupt(format!("tenants.id {v} is negative")))
}

async fn one_key(store: &PgStore, sql: &str, params: &[Param<'_>]) -> Result<Option<ApiKeyRecord>> {
    let client = store.client().await?;
    let stmt = client.prepare_cached(sql).await.ctx("preparing key read")?;
    client
        .query_opt(&stmt, params)
        .await
        .ctx("reading a key")?
        .map(|r| model::decode(&r))
        .transpose()
}

#[async_trait]
impl AccessStore for PgStore {
    async fn tenant_id(&self, name: &str, create: bool) -> Result<Option<TenantId>> {
        let client = self.client().await?;
        let lookup = client
            .prepare_cached(sql::TENANT_BY_NAME.pg)
            .await
            .ctx("preparing tenant lookup")?;
        if let Some(row) = client
            .query_opt(&lookup, &[&name])
            .await
            .ctx("looking up a tenant")?
        {
            return tenant_of(row.narrow(0, "tenants.id")?).map(Some);
        }
        if !create {
            return Ok(None);
        }
        refusals::tenant_name(name)?;
        let create = client
            .prepare_cached(CREATE_TENANT)
            .await
            .ctx("preparing tenant create")?;
        let row = match client
            .query_opt(&create, &[&name, &wall_clock_ms()])
            .await
            .ctx("creating a tenant")?
        {
            Some(row) => Some(row),
            // Another node created it meanwhile (and committed: the insert
            // waited for it); a new statement sees its row.
            None => client
                .query_opt(&lookup, &[&name])
                .await
                .ctx("looking up a tenant")?,
        };
        row.map(|r| tenant_of(r.narrow(0, "tenants.id")?))
            .transpose()
    }

    async fn tenants(&self) -> Result<Vec<(TenantId, String)>> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(sql::TENANTS.pg)
            .await
            .ctx("preparing tenant list")?;
        client
            .query(&stmt, &[])
            .await
            .ctx("listing tenants")?
            .iter()
            .map(|r| {
                Ok((
                    tenant_of(r.narrow(0, "tenants.id")?)?,
                    r.str(1, "tenants.name")?.to_owned(),
                ))
            })
            .collect()
    }

    async fn create_api_key(&self, key: NewApiKey) -> Result<ApiKeyRecord> {
        let scopes = scopes_to_db(&key.scopes)?;
        let tenant = tenant_to_pg(key.tenant)?;
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(sql::INSERT_KEY.pg)
            .await
            .ctx("preparing key insert")?;
        let row = client
            .query_one(
                &stmt,
                &[
                    &tenant,
                    &key.name,
                    &scopes,
                    &&key.hash[..],
                    &key.created_at,
                    &key.expires_at,
                ],
            )
            .await
            .ctx("inserting a key")?;
        let id = row.int(0, "api_keys.id")?;
        Ok(key.into_record(id))
    }

    async fn get_api_key(&self, id: i64) -> Result<Option<ApiKeyRecord>> {
        one_key(self, sql::KEY_BY_ID.pg, &[&id]).await
    }

    async fn list_api_keys(
        &self,
        tenant: Option<TenantId>,
        after: Option<i64>,
        limit: usize,
    ) -> Result<Vec<ApiKeyRecord>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let (after, limit) = (after.unwrap_or(i64::MIN), limit_to_db(limit));
        let client = self.client().await?;
        let rows = match tenant {
            None => {
                let stmt = client
                    .prepare_cached(sql::ALL_KEYS.pg)
                    .await
                    .ctx("preparing key list")?;
                client.query(&stmt, &[&after, &limit]).await
            }
            Some(t) => {
                let t = tenant_to_pg(t)?;
                let stmt = client
                    .prepare_cached(sql::TENANT_KEYS.pg)
                    .await
                    .ctx("preparing key list")?;
                client.query(&stmt, &[&after, &limit, &t]).await
            }
        }
        .ctx("listing keys")?;
        rows.iter().map(model::decode).collect()
    }

    async fn revoke_api_key(&self, id: i64, at: i64) -> Result<Option<ApiKeyRecord>> {
        one_key(self, sql::REVOKE_KEY.pg, &[&id, &at]).await
    }

    async fn append_audit(&self, entries: Vec<NewAuditEntry>) -> Result<()> {
        if entries.is_empty() {
            return Ok(());
        }
        let at: Vec<i64> = entries.iter().map(|e| e.at).collect();
        let key_id: Vec<Option<i64>> = entries.iter().map(|e| e.key_id).collect();
        let key_name: Vec<Option<&str>> = entries.iter().map(|e| e.key_name.as_deref()).collect();
        let tenant = entries
            .iter()
            .map(|e| tenant_to_pg(e.tenant))
            .collect::<Result<Vec<i32>>>()?;
        let method: Vec<&str> = entries.iter().map(|e| e.method.as_str()).collect();
        let route: Vec<&str> = entries.iter().map(|e| e.route.as_str()).collect();
        let resource: Vec<Option<&str>> =
            entries.iter().map(|e| e.resource_id.as_deref()).collect();
        let status: Vec<i32> = entries.iter().map(|e| i32::from(e.status)).collect();
        let count: Vec<i64> = entries
            .iter()
            .map(|e| i64::try_from(e.count).unwrap_or(i64::MAX))
            .collect();
        let reason: Vec<Option<&str>> = entries.iter().map(|e| e.reason.as_deref()).collect();
        let params: [Param<'_>; 10] = [
            &at, &key_id, &key_name, &tenant, &method, &route, &resource, &status, &count, &reason,
        ];
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(INSERT_AUDIT)
            .await
            .ctx("preparing audit append")?;
        // One statement: its own transaction.
        client
            .execute(&stmt, &params)
            .await
            .ctx("appending to the audit log")?;
        Ok(())
    }

    async fn list_audit(
        &self,
        tenant: Option<TenantId>,
        since: Option<i64>,
        after_id: Option<i64>,
        limit: usize,
    ) -> Result<Vec<AuditEntry>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let client = self.client().await?;
        let cursor = match after_id {
            None => None,
            Some(id) => {
                let stmt = client
                    .prepare_cached(sql::AUDIT_AT.pg)
                    .await
                    .ctx("preparing audit cursor")?;
                let row = client
                    .query_opt(&stmt, &[&id])
                    .await
                    .ctx("reading the audit cursor")?
                    .ok_or_else(|| refusals::no_audit_entry(id))?;
                Some((row.int(0, "audit_log.at")?, id))
            }
        };
        let (at, id) = audit_start(since, cursor);
        let limit = limit_to_db(limit);
        let rows = match tenant {
            None => {
                let stmt = client
                    .prepare_cached(sql::AUDIT_ALL.pg)
                    .await
                    .ctx("preparing audit read")?;
                client.query(&stmt, &[&at, &id, &limit]).await
            }
            Some(t) => {
                let t = tenant_to_pg(t)?;
                let stmt = client
                    .prepare_cached(sql::AUDIT_TENANT.pg)
                    .await
                    .ctx("preparing audit read")?;
                client.query(&stmt, &[&at, &id, &limit, &t]).await
            }
        }
        .ctx("reading the audit log")?;
        rows.iter().map(model::decode).collect()
    }
}
