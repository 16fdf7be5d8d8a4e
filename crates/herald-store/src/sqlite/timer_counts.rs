//! Timer counts per tenant and state on SQLite: `timer_counts`, kept in the
//! transaction of every change to `timers` (triggers for changes of state
//! and deletes, migration 0020; the write batch for inserts, migration
//! 0022), and the full scan that checks it.

use herald_core::{TenantId, TimerState};
use rusqlite::Connection;

use super::error::Ctx;
use crate::Result;
use crate::model;

const COUNTED: &str = "SELECT tenant_id, state, n FROM timer_counts WHERE n > 0 \
    ORDER BY tenant_id, state";
const SCANNED: &str = "SELECT tenant_id, state, COUNT(*) FROM timers \
    GROUP BY tenant_id, state ORDER BY tenant_id, state";

pub(super) fn counted(conn: &Connection) -> Result<Vec<(TenantId, TimerState, u64)>> {
    rows(conn, COUNTED, "reading timer counts")
}

pub(super) fn scanned(conn: &Connection) -> Result<Vec<(TenantId, TimerState, u64)>> {
    rows(conn, SCANNED, "counting timers")
}

fn rows(
    conn: &Connection,
    sql: &str,
    what: &'static str,
) -> Result<Vec<(TenantId, TimerState, u64)>> {
    let mut stmt = conn.prepare_cached(sql).ctx(what)?;
    let mut rows = stmt.query([]).ctx(what)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().ctx(what)? {
        out.push(model::decode(row)?);
    }
    Ok(out)
}
