//! Template versions on SQLite.

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::error::Ctx;
use crate::model::{self, tenant_to_db};
use crate::templates::sql;
use crate::{
    NewTemplateVersion, Result, StoreError, TemplateCensus, TemplateRecord, TemplateWrite,
};

pub(super) fn put(
    conn: &mut Connection,
    new: &NewTemplateVersion,
    how: TemplateWrite,
) -> Result<TemplateRecord> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("beginning template write")?;
    let text = match how {
        TemplateWrite::Create => sql::CREATE.sqlite,
        TemplateWrite::NewVersion => sql::NEXT.sqlite,
    };
    let written = tx
        .prepare_cached(text)
        .ctx("preparing template write")?
        .query_row(
            params![
                tenant_to_db(new.tenant),
                new.name,
                new.body,
                new.created_at,
                new.created_by
            ],
            |row| Ok(model::decode::<TemplateRecord, _>(row)),
        )
        .optional()
        .ctx("writing template")?;
    let record = match written {
        Some(r) => r?,
        None => {
            return Err(StoreError::NotFound {
                what: format!("template {:?}", new.name),
            });
        }
    };
    tx.commit().ctx("committing template write")?;
    Ok(record)
}

pub(super) fn census(conn: &mut Connection) -> Result<TemplateCensus> {
    conn.prepare_cached(sql::CENSUS.sqlite)
        .ctx("preparing template census")?
        .query_row([], |r| {
            Ok(TemplateCensus {
                versions: r.get::<_, i64>(0)?.max(0) as u64,
                max_id: r.get(1)?,
            })
        })
        .ctx("counting templates")
}

pub(super) fn all(conn: &mut Connection) -> Result<Vec<TemplateRecord>> {
    let mut stmt = conn
        .prepare_cached(sql::ALL.sqlite)
        .ctx("preparing templates")?;
    let mut rows = stmt.query([]).ctx("reading templates")?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().ctx("reading templates")? {
        out.push(model::decode(row)?);
    }
    Ok(out)
}
