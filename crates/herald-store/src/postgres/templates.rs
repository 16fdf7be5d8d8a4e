//! Template versions on PostgreSQL.

use super::{Ctx, PgStore};
use crate::model::{self, tenant_to_pg};
use crate::templates::sql;
use crate::{
    NewTemplateVersion, Result, StoreError, TemplateCensus, TemplateRecord, TemplateWrite,
};

pub(super) async fn put(
    store: &PgStore,
    new: &NewTemplateVersion,
    how: TemplateWrite,
) -> Result<TemplateRecord> {
    let tenant = tenant_to_pg(new.tenant)?;
    let client = store.client().await?;
    let text = match how {
        TemplateWrite::Create => sql::CREATE.pg,
        TemplateWrite::NewVersion => sql::NEXT.pg,
    };
    let stmt = client
        .prepare_cached(text)
        .await
        .ctx("preparing template write")?;
    // One statement: its own transaction.
    let row = client
        .query_opt(
            &stmt,
            &[
                &tenant,
                &new.name,
                &new.body,
                &new.created_at,
                &new.created_by,
            ],
        )
        .await
        .ctx("writing template")?;
    match row {
        Some(row) => model::decode(&row),
        None => Err(StoreError::NotFound {
            what: format!("template {:?}", new.name),
        }),
    }
}

pub(super) async fn census(store: &PgStore) -> Result<TemplateCensus> {
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(sql::CENSUS.pg)
        .await
        .ctx("preparing template census")?;
    let row = client
        .query_one(&stmt, &[])
        .await
        .ctx("counting templates")?;
    let versions: i64 = super::col(&row, 0, "count")?;
    Ok(TemplateCensus {
        versions: versions.max(0) as u64,
        max_id: super::col(&row, 1, "max_id")?,
    })
}

pub(super) async fn all(store: &PgStore) -> Result<Vec<TemplateRecord>> {
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(sql::ALL.pg)
        .await
        .ctx("preparing templates")?;
    client
        .query(&stmt, &[])
        .await
        .ctx("reading templates")?
        .iter()
        .map(model::decode)
        .collect()
}
