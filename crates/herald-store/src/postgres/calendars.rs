//! Stored calendars on PostgreSQL.

use herald_core::TenantId;

use super::{Ctx, PgStore};
use crate::calendars::sql;
use crate::model::{self, tenant_to_pg};
use crate::{CalendarRecord, Result};

/// One statement: its own transaction.
pub(super) async fn put(store: &PgStore, cal: &CalendarRecord) -> Result<CalendarRecord> {
    let tenant = tenant_to_pg(cal.tenant)?;
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(sql::PUT.pg)
        .await
        .ctx("preparing calendar write")?;
    let row = client
        .query_one(
            &stmt,
            &[
                &tenant,
                &cal.name,
                &cal.body,
                &cal.updated_at,
                &cal.updated_by,
            ],
        )
        .await
        .ctx("writing calendar")?;
    model::decode(&row)
}

pub(super) async fn get(
    store: &PgStore,
    tenant: TenantId,
    name: &str,
) -> Result<Option<CalendarRecord>> {
    let tenant = tenant_to_pg(tenant)?;
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(sql::GET.pg)
        .await
        .ctx("preparing calendar read")?;
    client
        .query_opt(&stmt, &[&tenant, &name])
        .await
        .ctx("reading calendar")?
        .as_ref()
        .map(model::decode)
        .transpose()
}

pub(super) async fn list(store: &PgStore, tenant: TenantId) -> Result<Vec<CalendarRecord>> {
    let tenant = tenant_to_pg(tenant)?;
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(sql::LIST.pg)
        .await
        .ctx("preparing calendars")?;
    client
        .query(&stmt, &[&tenant])
        .await
        .ctx("reading calendars")?
        .iter()
        .map(model::decode)
        .collect()
}
