//! The subscriber directory on PostgreSQL (SQL in [`crate::directory`]).
//! A write locks the row it reads (`FOR UPDATE`), so the version check and
//! the write are one step against concurrent writers of the same user; a
//! first insert that loses a race to another is read again and decided over
//! (see [`put`]).

use deadpool_postgres::Transaction;
use herald_core::TenantId;

use super::{Ctx, PgStore};
use crate::directory::sql;
use crate::model::{self, subscriber_cols, tenant_to_pg};
use crate::{PutSubscriber, Result, SubscriberRecord, WriteResult};

const LOCK_ONE: &str = concat!(
    "SELECT ",
    subscriber_cols!(),
    " FROM subscribers WHERE tenant_id = $1 AND user_id = $2 FOR UPDATE"
);
const MANY: &str = concat!(
    "SELECT ",
    subscriber_cols!(),
    " FROM subscribers WHERE tenant_id = $1 AND user_id = ANY($2::text[])"
);

async fn locked(
    tx: &Transaction<'_>,
    tenant: i32,
    user_id: &str,
) -> Result<Option<SubscriberRecord>> {
    let stmt = tx
        .prepare_cached(LOCK_ONE)
        .await
        .ctx("preparing subscriber read")?;
    match tx
        .query_opt(&stmt, &[&tenant, &user_id])
        .await
        .ctx("reading subscriber")?
    {
        Some(row) => model::decode(&row).map(Some),
        None => Ok(None),
    }
}

pub(super) async fn put(tx: &Transaction<'_>, put: &PutSubscriber) -> Result<WriteResult> {
    let tenant = tenant_to_pg(put.tenant)?;
    // Twice at most: a first insert that another writer beat (it inserted
    // the same user after our read) reads the winner's row, locked, and
    // decides again, instead of failing the whole batch on the key.
    for _ in 0..2 {
        let old = locked(tx, tenant, &put.user_id).await?;
        if !put.allowed(old.as_ref()) {
            return Ok(WriteResult::VersionConflict { current: old });
        }
        let statement = if old.is_some() {
            sql::UPDATE.pg
        } else {
            sql::INSERT.pg
        };
        let stmt = tx
            .prepare_cached(statement)
            .await
            .ctx("preparing subscriber write")?;
        let written = tx
            .execute(&stmt, &[&tenant, &put.user_id, &put.profile, &put.at])
            .await
            .ctx("writing subscriber")?;
        if written == 1 {
            return Ok(WriteResult::SubscriberPut {
                subscriber: put.record(old.as_ref()),
                created: old.is_none(),
            });
        }
    }
    Err(crate::StoreError::unavailable(format!(
        "subscriber {:?}: concurrent writers kept changing it",
        put.user_id
    )))
}

pub(super) async fn delete(
    tx: &Transaction<'_>,
    tenant: TenantId,
    user_id: &str,
) -> Result<WriteResult> {
    let tenant = tenant_to_pg(tenant)?;
    let Some(old) = locked(tx, tenant, user_id).await? else {
        return Ok(WriteResult::NotFound);
    };
    let stmt = tx
        .prepare_cached(sql::DELETE.pg)
        .await
        .ctx("preparing subscriber delete")?;
    tx.execute(&stmt, &[&tenant, &user_id])
        .await
        .ctx("deleting subscriber")?;
    Ok(WriteResult::SubscriberDeleted(old))
}

pub(super) async fn get_many(
    store: &PgStore,
    tenant: TenantId,
    user_ids: &[String],
) -> Result<Vec<SubscriberRecord>> {
    let tenant = tenant_to_pg(tenant)?;
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(MANY)
        .await
        .ctx("preparing get_subscribers")?;
    client
        .query(&stmt, &[&tenant, &user_ids])
        .await
        .ctx("reading subscribers")?
        .iter()
        .map(model::decode)
        .collect()
}

pub(super) async fn list(
    store: &PgStore,
    tenant: TenantId,
    after: &str,
    limit: usize,
) -> Result<Vec<SubscriberRecord>> {
    let tenant = tenant_to_pg(tenant)?;
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(sql::LIST.pg)
        .await
        .ctx("preparing list_subscribers")?;
    client
        .query(&stmt, &[&tenant, &after, &model::limit_to_db(limit)])
        .await
        .ctx("listing subscribers")?
        .iter()
        .map(model::decode)
        .collect()
}
