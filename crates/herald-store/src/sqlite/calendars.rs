//! Stored calendars on SQLite.

use rusqlite::{Connection, OptionalExtension, params};

use super::error::Ctx;
use crate::calendars::sql;
use crate::model::{self, tenant_to_db};
use crate::{CalendarRecord, Result};
use herald_core::TenantId;

/// One statement: its own transaction.
pub(super) fn put(conn: &mut Connection, cal: &CalendarRecord) -> Result<CalendarRecord> {
    conn.prepare_cached(sql::PUT.sqlite)
        .ctx("preparing calendar write")?
        .query_row(
            params![
                tenant_to_db(cal.tenant),
                cal.name,
                cal.body,
                cal.updated_at,
                cal.updated_by
            ],
            |row| Ok(model::decode::<CalendarRecord, _>(row)),
        )
        .ctx("writing calendar")?
}

pub(super) fn get(
    conn: &mut Connection,
    tenant: TenantId,
    name: &str,
) -> Result<Option<CalendarRecord>> {
    conn.prepare_cached(sql::GET.sqlite)
        .ctx("preparing calendar read")?
        .query_row(params![tenant_to_db(tenant), name], |row| {
            Ok(model::decode::<CalendarRecord, _>(row))
        })
        .optional()
        .ctx("reading calendar")?
        .transpose()
}

pub(super) fn list(conn: &mut Connection, tenant: TenantId) -> Result<Vec<CalendarRecord>> {
    let mut stmt = conn
        .prepare_cached(sql::LIST.sqlite)
        .ctx("preparing calendars")?;
    let mut rows = stmt
        .query(params![tenant_to_db(tenant)])
        .ctx("reading calendars")?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().ctx("reading calendars")? {
        out.push(model::decode(row)?);
    }
    Ok(out)
}
