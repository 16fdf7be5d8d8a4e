//! The forecast's count of what falls due ([`crate::TimerStore::due_counts`])
//! on SQLite: the pending due index, walked in due order up to a row limit.

use rusqlite::{Connection, params};

use super::error::Ctx;
use crate::model::{self, bound_to_db};
use crate::{DueCount, DueCounts, Result};

// ?1 from, ?2 until, ?3 bucket ms, ?4 row limit. The inner query walks
// `timers_pending_due` in order, so the limit keeps the earliest timers.
const DUE_COUNTS: &str = "SELECT tenant_id, channel, kind = 'reminder' AS reminder, \
    (due_at - ?1) / ?3 AS bucket, count(*) AS count, max(due_at) AS last_due FROM ( \
        SELECT tenant_id, channel, kind, due_at FROM timers \
        WHERE state = 0 AND due_at >= ?1 AND due_at < ?2 ORDER BY due_at LIMIT ?4) \
    GROUP BY 1, 2, 3, 4";

pub(super) fn due_counts(
    conn: &Connection,
    from: i64,
    until: i64,
    bucket_ms: i64,
    max_rows: u64,
) -> Result<DueCounts> {
    let what = "counting timers due";
    let mut stmt = conn.prepare_cached(DUE_COUNTS).ctx(what)?;
    let mut rows = stmt
        .query(params![
            from,
            until,
            bucket_ms.max(1),
            bound_to_db(max_rows)
        ])
        .ctx(what)?;
    let mut groups: Vec<(DueCount, i64)> = Vec::new();
    while let Some(r) = rows.next().ctx(what)? {
        groups.push(model::decode(r)?);
    }
    Ok(DueCounts::from_groups(groups, max_rows))
}
