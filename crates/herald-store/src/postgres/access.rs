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
use crate::model::{self, AuditParams, Columns, limit_to_db, scopes_to_db, tenant_to_pg};
use crate::{
    AccessStore, ApiKeyRecord, AuditEntry, AuditFilter, NewApiKey, NewAuditEntry, Result,
    StoreError, refusals, wall_clock_ms,
};

// For an audit page's transaction only: walk the `(at, id)` index from the
// page's start and stop at the limit, never gather the whole time range
// into a bitmap and sort it. Given a key, route or status filter the planner
// expects a handful of matches and otherwise picks the bitmap, which reads
// every entry between `since` (or the first entry) and the page.
const AUDIT_PLAN: &str =
    "SET LOCAL enable_bitmapscan = off; SET LOCAL enable_sort = off; SET LOCAL jit = off";

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
        filter: AuditFilter,
        after_id: Option<i64>,
        limit: usize,
    ) -> Result<Vec<AuditEntry>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let mut client = self.client().await?;
        let tx = client.transaction().await.ctx("beginning audit read")?;
        tx.batch_execute(AUDIT_PLAN)
            .await
            .ctx("planning the audit read")?;
        let cursor = match after_id {
            None => None,
            Some(id) => {
                let stmt = tx
                    .prepare_cached(sql::AUDIT_AT.pg)
                    .await
                    .ctx("preparing audit cursor")?;
                let row = tx
                    .query_opt(&stmt, &[&id])
                    .await
                    .ctx("reading the audit cursor")?
                    .ok_or_else(|| refusals::no_audit_entry(id))?;
                Some((row.int(0, "audit_log.at")?, id))
            }
        };
        let p = AuditParams::new(&filter, cursor);
        let limit = limit_to_db(limit);
        let tenant = filter.tenant.map(tenant_to_pg).transpose()?;
        let mut params: Vec<Param<'_>> = vec![
            &p.start.0,
            &p.start.1,
            &limit,
            &p.since,
            &p.key_id,
            &p.key_name,
            &p.route,
            &p.route_prefix,
            &p.status.0,
            &p.status.1,
        ];
        // Only a tenant's statement has a `$11`.
        if let Some(t) = &tenant {
            params.push(t);
        }
        let statement = sql::audit_page(filter.oldest_first, tenant.is_some());
        let stmt = tx
            .prepare_cached(statement.pg)
            .await
            .ctx("preparing audit read")?;
        let rows = tx
            .query(&stmt, &params)
            .await
            .ctx("reading the audit log")?;
        tx.commit().await.ctx("ending audit read")?;
        rows.iter().map(model::decode).collect()
    }
}

#[cfg(test)]
mod tests {
    use herald_core::DEFAULT_TENANT;

    use super::*;

    /// Every audit page, oldest or newest first, of one tenant or all, with
    /// or without the key, route and status filters, walks `(at, id)` in an
    /// index from the page's start (under [`AUDIT_PLAN`]): no scan, no sort,
    /// no bitmap. Checked as custom and as generic plans, before and after
    /// `ANALYZE`.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn audit_pages_walk_their_index() {
        let Some(pg) = herald_pgtemp::PgTemp::shared().expect("cluster") else {
            return;
        };
        let db = pg.fresh_database("audit_plans").expect("database");
        let store = PgStore::open(db.url(), &Default::default())
            .await
            .expect("open");
        let shop = store
            .tenant_id("shop", true)
            .await
            .expect("tenant")
            .expect("made");
        for chunk in 0..4i64 {
            let entries = (0..5_000i64)
                .map(|i| NewAuditEntry {
                    at: 1_000_000 + chunk * 5_000 + i,
                    key_id: Some(i % 50),
                    key_name: Some(format!("key {}", i % 50)),
                    tenant: if i % 3 == 0 { shop } else { DEFAULT_TENANT },
                    method: "POST".into(),
                    route: ["/v1/timers", "/v1/jobs/{id}:cancel", "/v1/keys"][(i % 3) as usize]
                        .into(),
                    resource_id: None,
                    status: [201, 404, 200, 500][(i % 4) as usize],
                    count: 1,
                    reason: None,
                })
                .collect();
            store.append_audit(entries).await.expect("append");
        }
        let client = store.client().await.expect("client");
        // As the read's transaction plans it.
        client
            .batch_execute(&AUDIT_PLAN.replace("SET LOCAL", "SET"))
            .await
            .expect("plan settings");
        let (at, id, limit, since) = (1_010_000i64, 10_000i64, 100i64, 1_000_000i64);
        let (top, low) = (i64::MAX, i64::MIN);
        let key_id: Option<i64> = Some(7);
        let no_id: Option<i64> = None;
        let name: Option<String> = Some("key 7".into());
        let route: Option<String> = Some("/v1/jobs/{id}:cancel".into());
        let prefix: Option<String> = Some("/v1/jobs".into());
        let none: Option<String> = None;
        let (any_lo, any_hi, lo4, hi4) = (0i32, 65_535i32, 400i32, 499i32);
        let tenant = tenant_to_pg(shop).expect("tenant");
        let filtered: Vec<Param<'_>> = vec![
            &at, &id, &limit, &since, &key_id, &name, &route, &prefix, &lo4, &hi4,
        ];
        let bare: Vec<Param<'_>> = vec![
            &top, &top, &limit, &low, &no_id, &none, &none, &none, &any_lo, &any_hi,
        ];
        for analyze in [false, true] {
            if analyze {
                client.batch_execute("ANALYZE").await.expect("analyze");
            }
            for generic in [false, true] {
                let mode = crate::postgres::set_plan_mode(&client, generic).await;
                for oldest_first in [false, true] {
                    for one_tenant in [false, true] {
                        for base in [&filtered, &bare] {
                            let mut params = base.clone();
                            if one_tenant {
                                params.push(&tenant);
                            }
                            let sql = sql::audit_page(oldest_first, one_tenant).pg;
                            let rows = client
                                .query(&format!("EXPLAIN {sql}"), &params)
                                .await
                                .expect("explain");
                            let plan: Vec<String> =
                                rows.iter().map(|r| r.get::<_, String>(0)).collect();
                            let plan = plan.join("\n");
                            let why = format!("{mode}, analyzed: {analyze}: {sql}\n{plan}");
                            // One tenant's page walks its tenant's index, or
                            // (the planner's pick when it expects the other
                            // filters to match next to nothing) the time
                            // index, checking the tenant on each entry: in
                            // page order from the page's start either way.
                            let walks = if one_tenant {
                                plan.contains("audit_log_tenant") || plan.contains("audit_log_at")
                            } else {
                                plan.contains("audit_log_at")
                            };
                            assert!(walks, "{why}");
                            assert!(plan.contains("Index Scan"), "{why}");
                            assert!(!plan.contains("Seq Scan"), "{why}");
                            assert!(!plan.contains("Sort"), "{why}");
                            assert!(!plan.contains("Bitmap"), "{why}");
                            assert_eq!(plan.contains("Backward"), !oldest_first, "{why}");
                        }
                    }
                }
            }
        }
    }
}
