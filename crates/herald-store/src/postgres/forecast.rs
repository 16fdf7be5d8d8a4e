//! The forecast's count of what falls due ([`crate::TimerStore::due_counts`])
//! on PostgreSQL: the pending due index, walked in due order up to a row
//! limit.

use super::{Ctx, PgStore};
use crate::model::{self, bound_to_db};
use crate::{DueCount, DueCounts, Result};

// $1 from, $2 until, $3 bucket ms, $4 row limit. The inner query walks
// `timers_pending_due` in order, so the limit keeps the earliest timers.
const DUE_COUNTS: &str = "SELECT tenant_id, channel, kind = 'reminder' AS reminder, \
    (due_at - $1) / $3 AS bucket, count(*) AS count, max(due_at) AS last_due FROM ( \
        SELECT tenant_id, channel, kind, due_at FROM timers \
        WHERE state = 0 AND due_at >= $1 AND due_at < $2 ORDER BY due_at LIMIT $4) AS due \
    GROUP BY 1, 2, 3, 4";

pub(super) async fn due_counts(
    store: &PgStore,
    from: i64,
    until: i64,
    bucket_ms: i64,
    max_rows: u64,
) -> Result<DueCounts> {
    let what = "counting timers due";
    let client = store.client().await?;
    let stmt = client.prepare_cached(DUE_COUNTS).await.ctx(what)?;
    let rows = client
        .query(
            &stmt,
            &[&from, &until, &bucket_ms.max(1), &bound_to_db(max_rows)],
        )
        .await
        .ctx(what)?;
    let groups = rows
        .iter()
        .map(model::decode::<(DueCount, i64), _>)
        .collect::<Result<Vec<_>>>()?;
    Ok(DueCounts::from_groups(groups, max_rows))
}
