//! Timers, the send log and meta on PostgreSQL.

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use futures_util::future::{try_join, try_join_all};
use herald_core::{TenantId, TimerId, TimerState};

use super::{Ctx, Param, PgStore, col};
use crate::model::{self, Columns, due_cols, tenant_to_pg, timer_cols};
use crate::timers::sql;
use crate::{
    Applied, Completion, CompletionOutcome, DeliveryRecord, DueCursor, DueEntry, Fence, FiringMark,
    InDoubtResolved, NewTimer, Result, StoreError, TimerRecord, WriteResult,
};

// The SQL writes state codes as literals (the partial index needs `state = 0`
// literally); a unit test checks they match `TimerState::code()`.

/// See `queries/insert_timers.sql`.
const INSERT_TIMERS: &str = include_str!("queries/insert_timers.sql");
// Keys are unique per tenant: the index leads with the key, the tenants then
// narrow it down, and the caller matches the exact pairs.
pub(super) const TIMERS_BY_KEYS: &str = concat!(
    "SELECT ",
    timer_cols!(),
    " FROM timers WHERE idempotency_key = ANY($1::text[]) AND tenant_id = ANY($2::int4[])"
);
const TIMERS_BY_IDS: &str = concat!(
    "SELECT ",
    timer_cols!(),
    " FROM timers WHERE id = ANY($1::int8[])"
);
// The batch updates join the timers with arrays. `t.id = ANY($1)`, redundant for
// the result, makes the planner look the timers up by primary key: knowing the
// array's length, it otherwise prefers to hash-join it with a scan of the whole
// table (measured: 84 ms against 28 ms for 2,000 of 80,000 timers, and the gap
// grows with the table).

// $1 ids (distinct), $2 cancel times, $3 the tenants asking: another tenant's
// timer is left alone.
const CANCEL_TIMERS: &str = concat!(
    "UPDATE timers AS t SET state = 4, updated_at = u.at \
     FROM unnest($1::int8[], $2::int8[], $3::int4[]) AS u(id, at, tenant_id) \
     WHERE t.id = ANY($1::int8[]) AND t.id = u.id AND t.tenant_id = u.tenant_id \
       AND t.state = 0 RETURNING ",
    timer_cols!("t")
);
// Keyset paging over `(due_at, id)`: the row comparison seeks the pending index
// directly. $1 until, $2 limit, then the cursor.
const LOAD_DUE_FIRST: &str = concat!(
    "SELECT ",
    due_cols!(),
    " FROM timers WHERE state = 0 AND due_at < $1 ORDER BY due_at, id LIMIT $2"
);
const LOAD_DUE_AFTER: &str = concat!(
    "SELECT ",
    due_cols!(),
    " FROM timers WHERE state = 0 AND due_at < $1 AND (due_at, id) > ($3, $4) \
     ORDER BY due_at, id LIMIT $2"
);
/// How many shard ranges a node's due scan walks (`ShardSet::ranges`).
const DUE_RANGES: usize = 4;
/// The due scan of a node that owns some of the shards: one walk of the pending
/// index per range of its shards, merged in due order (a `Merge Append` that
/// stops at the limit). `shard` is a key column of the index, so a range is
/// tested on the index entry itself and the rows of other nodes' shards are
/// never fetched; a filter on `shard` alone is applied only after the fetch,
/// and with three nodes each node fetched three rows for every one it owned
/// (measured in a three-node burst). The bitmap test keeps the answer exact
/// when the ranges also hold shards the node does not own.
///
/// Parameters: $1 until, $2 limit, then the cursor if `after`, then the owned
/// bitmap (`ShardSet::to_bytes`: shard `s` at bit `s % 8` of byte `s / 8`, as
/// `get_bit` numbers them), then a first and last shard for each of the
/// `ranges` ranges. There is a statement for each number of ranges: a range
/// with nothing in it is not free, since its walk reads every due entry of the
/// other shards looking for one of its own.
fn due_by_ranges(after: bool, ranges: usize) -> String {
    let (cursor, bitmap) = if after {
        (" AND (due_at, id) > ($3, $4)", 5)
    } else {
        ("", 3)
    };
    // The `CASE` keeps `get_bit` from ever seeing a shard outside the bitmap.
    let owned = format!(
        "CASE WHEN shard >= 0 AND shard < 8 * length(${bitmap}::bytea) \
         THEN get_bit(${bitmap}::bytea, shard) = 1 ELSE false END"
    );
    let cols = due_cols!();
    let walks: Vec<String> = (0..ranges)
        .map(|k| {
            let first = bitmap + 1 + 2 * k;
            let last = first + 1;
            format!(
                "(SELECT {cols} FROM timers WHERE state = 0 AND due_at < $1{cursor} \
                 AND shard BETWEEN ${first}::int4 AND ${last}::int4 AND {owned} \
                 ORDER BY due_at, id LIMIT $2)"
            )
        })
        .collect();
    format!(
        "SELECT {cols} FROM ({}) AS due ORDER BY due_at, id LIMIT $2",
        walks.join(" UNION ALL ")
    )
}
/// `due_by_ranges` for 1 to `DUE_RANGES` ranges: the first scans, then the
/// scans after a cursor.
static LOAD_DUE_SHARDS: LazyLock<[Vec<String>; 2]> = LazyLock::new(|| {
    [false, true].map(|after| (1..=DUE_RANGES).map(|n| due_by_ranges(after, n)).collect())
});
const INSERT_DELIVERIES: &str = "INSERT INTO deliveries \
    (timer_id, attempt, channel, outcome, idempotency_key, provider_msgid, status, error, \
     started_at, finished_at, tenant_id, step) \
    SELECT * FROM unnest($1::int8[], $2::int8[], $3::text[], $4::text[], $5::text[], \
                         $6::text[], $7::int8[], $8::text[], $9::int8[], $10::int8[], \
                         $11::int4[], $12::int8[])";
// For the due scan's transaction only: walk the pending index in due order and
// stop at the limit, never collect every due entry into a bitmap and sort it.
// With statistics older than a bulk load (all timers due at one instant) the
// planner expects a few hundred due rows and picks the bitmap: the first scan
// of a 1,000,000-timer burst then read and sorted all of them, 380 ms, on every
// node. In index order it takes 4 ms. And no JIT: the estimate of a
// walk that may read far past the limit made PostgreSQL compile the scan's
// expressions, 11 ms a scan.
pub(super) const DUE_PLAN: &str =
    "SET LOCAL enable_bitmapscan = off; SET LOCAL enable_sort = off; SET LOCAL jit = off";
// For the completion batch's transaction only: `UPDATE_COMPLETED` joins the
// batch to `timers` by a primary-key probe per row, never by hashing a scan of
// the table. Given the batch's size, the planner otherwise weighs a scan of
// every pending timer against the probes and, with a few thousand in a
// batch, can choose the scan, whose cost grows with the timers pending
// (during a 1,000,000-timer burst it made completions cost PostgreSQL
// 79 µs a timer; with the probes, 30 µs).
pub(super) const COMPLETE_PLAN: &str =
    "SET LOCAL enable_hashjoin = off; SET LOCAL enable_mergejoin = off";
// Locks the leases read, so none changes hands before the batch commits.
// `FOR KEY SHARE`, not `FOR SHARE`: every statement that changes a lease's
// hands or epoch locks the row `FOR UPDATE` first and so waits for it
// (`cluster.rs`), while a renewal, a plain update of `lease_until`, does not.
const SHARD_EPOCHS: &str = "SELECT shard, epoch FROM shard_leases \
    WHERE shard = ANY($1::int4[]) ORDER BY shard FOR KEY SHARE";
/// See `queries/update_completed.sql`.
const UPDATE_COMPLETED: &str = include_str!("queries/update_completed.sql");
// $1 ids (distinct), $2 attempts about to be made, $3 times: a timer still
// pending at the attempt before is marked firing (state 1), which takes it out
// of the pending index. By primary-key probes, as `UPDATE_COMPLETED`.
const MARK_FIRING: &str = "UPDATE timers AS t SET state = 1, updated_at = u.at \
    FROM unnest($1::int8[], $2::int8[], $3::int8[]) AS u(id, attempt, at) \
    WHERE t.id = u.id AND t.state = 0 AND t.attempts = u.attempt - 1 RETURNING t.id";
// The firing timers of some shards, through the partial index `timers_firing`
// (migration 0026), locked until the resolution commits.
const FIRING_IN_SHARDS: &str = concat!(
    "SELECT ",
    timer_cols!(),
    " FROM timers WHERE state = 1 AND shard = ANY($1::int4[]) ORDER BY id FOR UPDATE"
);
// $1 ids, $2 at: firing timers back to pending, due when they were.
const UNMARK_FIRING: &str = "UPDATE timers SET state = 0, updated_at = $2 \
    WHERE id = ANY($1::int8[]) AND state = 1";
// As [`UNMARK_FIRING`], answering the ids put back.
const UNMARK_FIRING_RETURNING: &str = "UPDATE timers SET state = 0, updated_at = $2 \
    WHERE id = ANY($1::int8[]) AND state = 1 RETURNING id";

fn record_of(result: &WriteResult) -> Option<&TimerRecord> {
    match result {
        WriteResult::Created(r)
        | WriteResult::Existing(r)
        | WriteResult::Cancelled(r)
        | WriteResult::NotCancellable(r) => Some(r),
        _ => None,
    }
}

/// The timers with the given `(tenant, key)` pairs, by pair (a new statement:
/// it sees a timer another node just committed).
pub(super) async fn keyed_timers(
    tx: &deadpool_postgres::Transaction<'_>,
    keys: &[(TenantId, &str)],
) -> Result<HashMap<(TenantId, String), TimerRecord>> {
    let mut found = HashMap::with_capacity(keys.len());
    if keys.is_empty() {
        return Ok(found);
    }
    let wanted: HashSet<(TenantId, &str)> = keys.iter().copied().collect();
    let names: Vec<&str> = keys.iter().map(|k| k.1).collect();
    let mut tenants = keys
        .iter()
        .map(|k| tenant_to_pg(k.0))
        .collect::<Result<Vec<i32>>>()?;
    tenants.sort_unstable();
    tenants.dedup();
    let stmt = tx
        .prepare_cached(TIMERS_BY_KEYS)
        .await
        .ctx("preparing timers by key")?;
    for row in tx
        .query(&stmt, &[&names, &tenants])
        .await
        .ctx("reading timers by key")?
    {
        let rec: TimerRecord = model::decode(&row)?;
        if let Some(k) = rec.idempotency_key.clone()
            && wanted.contains(&(rec.tenant, k.as_str()))
        {
            found.insert((rec.tenant, k), rec);
        }
    }
    Ok(found)
}

/// For each timer of a run, the earlier one whose key (in its tenant) it
/// repeats: a key repeated within the run resolves to its first occurrence,
/// so each key is sent at most once.
fn repeats_in_run(timers: &[&NewTimer]) -> Vec<Option<usize>> {
    let mut first_with_key: HashMap<(TenantId, &str), usize> = HashMap::new();
    let mut repeat_of: Vec<Option<usize>> = Vec::with_capacity(timers.len());
    for (i, t) in timers.iter().enumerate() {
        let earlier = t
            .idempotency_key
            .as_deref()
            .map(|k| (t.tenant, k))
            .and_then(|k| match first_with_key.get(&k) {
                Some(&j) => Some(j),
                None => {
                    first_with_key.insert(k, i);
                    None
                }
            });
        repeat_of.push(earlier);
    }
    repeat_of
}

/// Inserts `sent` in one statement: answers the ids drawn (one per timer,
/// in order) and those of the keyed timers actually inserted (a keyed one
/// whose key is taken is skipped).
async fn insert_timers(
    tx: &deadpool_postgres::Transaction<'_>,
    sent: &[&NewTimer],
) -> Result<(Vec<i64>, HashSet<i64>)> {
    let shard: Vec<i32> = sent.iter().map(|t| i32::from(t.shard)).collect();
    let due_at: Vec<i64> = sent.iter().map(|t| t.due_at).collect();
    let priority: Vec<i16> = sent.iter().map(|t| i16::from(t.priority)).collect();
    let kind: Vec<&str> = sent.iter().map(|t| t.kind.as_str()).collect();
    let channel: Vec<&str> = sent.iter().map(|t| t.channel.as_str()).collect();
    let recipient: Vec<&str> = sent.iter().map(|t| t.recipient.as_str()).collect();
    let message: Vec<&str> = sent.iter().map(|t| t.message.as_str()).collect();
    let key: Vec<Option<&str>> = sent.iter().map(|t| t.idempotency_key.as_deref()).collect();
    let created_at: Vec<i64> = sent.iter().map(|t| t.created_at).collect();
    let tenant = sent
        .iter()
        .map(|t| tenant_to_pg(t.tenant))
        .collect::<Result<Vec<i32>>>()?;

    let stmt = tx
        .prepare_cached(INSERT_TIMERS)
        .await
        .ctx("preparing insert")?;
    let traceparent: Vec<Option<&str>> = sent.iter().map(|t| t.traceparent.as_deref()).collect();
    let routing: Vec<Option<&str>> = sent.iter().map(|t| t.routing.as_deref()).collect();
    let params: [Param<'_>; 12] = [
        &shard,
        &due_at,
        &priority,
        &kind,
        &channel,
        &recipient,
        &message,
        &key,
        &created_at,
        &tenant,
        &traceparent,
        &routing,
    ];
    let row = tx.query_one(&stmt, &params).await.ctx("inserting timers")?;
    let ids: Vec<i64> = col::<Option<Vec<i64>>>(&row, 0, "drawn ids")?.unwrap_or_default();
    let keyed_inserted: HashSet<i64> = col::<Option<Vec<i64>>>(&row, 1, "inserted ids")?
        .unwrap_or_default()
        .into_iter()
        .collect();
    if ids.len() != sent.len() {
        return Err(StoreError::Internal(format!(
            "postgres: insert drew {} ids for {} timers",
            ids.len(),
            sent.len()
        )));
    }
    Ok((ids, keyed_inserted))
}

pub(super) async fn insert_run(
    tx: &deadpool_postgres::Transaction<'_>,
    timers: &[&NewTimer],
    horizon: i64,
    results: &mut Vec<WriteResult>,
    announce: &mut Vec<DueEntry>,
) -> Result<()> {
    let repeat_of = repeats_in_run(timers);
    let sent: Vec<&NewTimer> = timers
        .iter()
        .zip(&repeat_of)
        .filter(|(_, r)| r.is_none())
        .map(|(t, _)| *t)
        .collect();
    let (ids, keyed_inserted) = insert_timers(tx, &sent).await?;
    let inserted =
        |t: &NewTimer, id: i64| t.idempotency_key.is_none() || keyed_inserted.contains(&id);

    // Keys that were taken already: read their timers as they are now (a new
    // statement, so it sees a conflicting timer another node just committed).
    let taken: Vec<(TenantId, &str)> = sent
        .iter()
        .zip(&ids)
        .filter(|(t, id)| !inserted(t, **id))
        .filter_map(|(t, _)| t.idempotency_key.as_deref().map(|k| (t.tenant, k)))
        .collect();
    let existing = keyed_timers(tx, &taken).await?;

    let base = results.len();
    let mut drawn = ids.iter();
    for (t, repeat) in timers.iter().zip(&repeat_of) {
        let result = match repeat {
            Some(j) => {
                let first = results
                    .get(base + j)
                    .and_then(record_of)
                    .ok_or_else(|| StoreError::Internal("postgres: lost a batch result".into()))?;
                WriteResult::Existing(first.clone())
            }
            None => {
                let id = *drawn
                    .next()
                    .ok_or_else(|| StoreError::Internal("postgres: ran out of drawn ids".into()))?;
                if inserted(t, id) {
                    let rec = (*t).clone().into_record(id);
                    if rec.due_at <= horizon {
                        announce.push(rec.due_entry());
                    }
                    WriteResult::Created(rec)
                } else {
                    let found = t
                        .idempotency_key
                        .as_deref()
                        .and_then(|k| existing.get(&(t.tenant, k.to_string())));
                    WriteResult::Existing(found.cloned().ok_or_else(|| {
                        StoreError::Internal(
                            "postgres: insert was skipped but no timer has its key".into(),
                        )
                    })?)
                }
            }
        };
        results.push(result);
    }
    Ok(())
}

pub(super) async fn cancel_run(
    tx: &deadpool_postgres::Transaction<'_>,
    cancels: &[(TenantId, TimerId, i64)],
    results: &mut Vec<WriteResult>,
) -> Result<()> {
    // The first cancel of an id (by its own tenant) can cancel it; a repeat
    // finds it cancelled already. Ids go to the update once each: the first
    // cancel of an id by each tenant asking (only its own can match).
    let mut seen = HashSet::with_capacity(cancels.len());
    let (mut ids, mut ats, mut tenants) = (Vec::new(), Vec::new(), Vec::new());
    for &(tenant, id, at) in cancels {
        if seen.insert((tenant, id)) {
            ids.push(id);
            ats.push(at);
            tenants.push(tenant_to_pg(tenant)?);
        }
    }
    let stmt = tx
        .prepare_cached(CANCEL_TIMERS)
        .await
        .ctx("preparing cancel")?;
    let mut cancelled: HashMap<TimerId, TimerRecord> = HashMap::new();
    for row in tx
        .query(&stmt, &[&ids, &ats, &tenants])
        .await
        .ctx("cancelling timers")?
    {
        let rec: TimerRecord = model::decode(&row)?;
        cancelled.insert(rec.id, rec);
    }
    let rest: Vec<TimerId> = ids
        .iter()
        .copied()
        .filter(|id| !cancelled.contains_key(id))
        .collect();
    let mut others: HashMap<TimerId, TimerRecord> = HashMap::new();
    if !rest.is_empty() {
        let stmt = tx
            .prepare_cached(TIMERS_BY_IDS)
            .await
            .ctx("preparing timers by id")?;
        for row in tx
            .query(&stmt, &[&rest])
            .await
            .ctx("reading timers by id")?
        {
            let rec: TimerRecord = model::decode(&row)?;
            others.insert(rec.id, rec);
        }
    }
    let mut first = HashSet::with_capacity(cancels.len());
    for &(tenant, id, _) in cancels {
        // Another tenant's timer is as good as missing.
        let mine = |rec: &&TimerRecord| rec.tenant == tenant;
        let result = match cancelled.get(&id).filter(mine) {
            Some(rec) if first.insert(id) => WriteResult::Cancelled(rec.clone()),
            Some(rec) => WriteResult::NotCancellable(rec.clone()),
            None => match others.get(&id).filter(mine) {
                Some(rec) => WriteResult::NotCancellable(rec.clone()),
                None => WriteResult::NotFound,
            },
        };
        results.push(result);
    }
    Ok(())
}

pub(super) async fn get_timer(store: &PgStore, id: TimerId) -> Result<Option<TimerRecord>> {
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(sql::TIMER_BY_ID.pg)
        .await
        .ctx("preparing get_timer")?;
    match client.query_opt(&stmt, &[&id]).await.ctx("reading timer")? {
        Some(row) => model::decode(&row).map(Some),
        None => Ok(None),
    }
}

pub(super) async fn load_due(
    store: &PgStore,
    shards: Option<&herald_core::ShardSet>,
    after: Option<DueCursor>,
    until: i64,
    limit: usize,
) -> Result<Vec<DueEntry>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let owned = shards.map(|s| (s.to_bytes(), range_bounds(s)));
    let sql = due_statement(owned.as_ref().map(|(_, b)| b.as_slice()), after.is_some());
    let mut client = store.client().await?;
    let tx = client.transaction().await.ctx("beginning load_due")?;
    tx.batch_execute(DUE_PLAN).await.ctx("planning load_due")?;
    let stmt = tx.prepare_cached(sql).await.ctx("preparing load_due")?;
    let cursor = after.map(|c| (c.due_at, c.id));
    let mut params: Vec<Param<'_>> = vec![&until, &limit];
    if let Some((due_at, id)) = &cursor {
        params.push(due_at);
        params.push(id);
    }
    if let Some((bitmap, bounds)) = &owned {
        params.push(bitmap);
        params.extend(bounds.iter().map(|b| b as Param<'_>));
    }
    let rows = tx.query(&stmt, &params).await.ctx("loading due timers")?;
    tx.commit().await.ctx("ending load_due")?;
    rows.iter().map(model::decode).collect()
}

/// The due scan for a node owning all shards (`None`) or the ranges `bounds`
/// (`range_bounds`), first or after a cursor.
fn due_statement(bounds: Option<&[i32]>, after: bool) -> &'static str {
    match bounds {
        None if after => LOAD_DUE_AFTER,
        None => LOAD_DUE_FIRST,
        Some(b) => {
            let ranges = (b.len() / 2).clamp(1, DUE_RANGES);
            &LOAD_DUE_SHARDS[usize::from(after)][ranges - 1]
        }
    }
}

/// The first and last shard of each range covering `shards`
/// (`ShardSet::ranges`), flattened; a set with no shard gets one empty range
/// (the caller asks for no such scan).
fn range_bounds(shards: &herald_core::ShardSet) -> Vec<i32> {
    let ranges = shards.ranges(DUE_RANGES);
    if ranges.is_empty() {
        return vec![1, 0];
    }
    ranges
        .iter()
        .flat_map(|(first, last)| [i32::from(*first), i32::from(*last)])
        .collect()
}

pub(super) async fn fetch_pending(store: &PgStore, ids: &[TimerId]) -> Result<Vec<TimerRecord>> {
    let mut ids = ids.to_vec();
    ids.sort_unstable();
    ids.dedup();
    let client = store.client().await?;
    // By id alone, and the state checked here: with `AND state = 0` in the
    // statement the planner may AND the primary key's bitmap with a scan of the
    // whole pending index, whose cost grows with the timers still pending
    // (4.6 µs a timer during a 1,000,000-timer burst).
    let stmt = client
        .prepare_cached(TIMERS_BY_IDS)
        .await
        .ctx("preparing fetch_pending")?;
    let mut pending = Vec::with_capacity(ids.len());
    for row in client
        .query(&stmt, &[&ids])
        .await
        .ctx("fetching pending timers")?
    {
        let rec: TimerRecord = model::decode(&row)?;
        if rec.state == TimerState::Pending {
            pending.push(rec);
        }
    }
    Ok(pending)
}

/// The guarded timer update of one segment of a completion batch.
#[derive(Default)]
struct Updates<'a> {
    /// Index of each completion in the batch.
    index: Vec<usize>,
    id: Vec<i64>,
    attempt: Vec<i64>,
    state: Vec<i16>,
    next_due_at: Vec<Option<i64>>,
    delivered_at: Vec<Option<i64>>,
    at: Vec<i64>,
    error: Vec<Option<&'a str>>,
    /// The attempt count each timer is left with.
    attempts: Vec<i64>,
    /// A fallback route's next step: its channel and routing.
    channel: Vec<Option<&'a str>>,
    routing: Vec<Option<&'a str>>,
}

impl<'a> Updates<'a> {
    fn push(&mut self, i: usize, c: &'a Completion) {
        let (state, next_due_at, delivered_at, error) = match c.outcome {
            CompletionOutcome::Done => (TimerState::Done, None, Some(c.finished_at), None),
            CompletionOutcome::Retry { next_due_at } => (
                TimerState::Pending,
                Some(next_due_at),
                None,
                c.error.as_deref(),
            ),
            CompletionOutcome::Failed | CompletionOutcome::Unsendable(_) => {
                (TimerState::Failed, None, None, c.error.as_deref())
            }
            CompletionOutcome::Dead => (TimerState::Dead, None, None, c.error.as_deref()),
            CompletionOutcome::InDoubt => (TimerState::InDoubt, None, None, c.error.as_deref()),
            CompletionOutcome::Read => (TimerState::Done, None, None, c.error.as_deref()),
            CompletionOutcome::Deferred { next_due_at, .. } => (
                TimerState::Pending,
                Some(next_due_at),
                None,
                c.error.as_deref(),
            ),
        };
        // A next step: pending again, due when the step is.
        let (state, next_due_at, delivered_at) = match &c.next {
            Some(n) => (TimerState::Pending, Some(n.due_at), delivered_at),
            None => (state, next_due_at, delivered_at),
        };
        self.channel
            .push(c.next.as_ref().map(|n| n.channel.as_str()));
        self.routing
            .push(c.next.as_ref().map(|n| n.routing.as_str()));
        self.index.push(i);
        self.id.push(c.timer_id);
        self.attempt.push(i64::from(c.attempt));
        self.attempts
            .push(i64::from(c.outcome.attempts_after(c.attempt)));
        // Codes are 0..=6.
        self.state.push(state.code() as i16);
        self.next_due_at.push(next_due_at);
        self.delivered_at.push(delivered_at);
        self.at.push(c.finished_at);
        self.error.push(error);
    }

    fn params(&self) -> [Param<'_>; 10] {
        [
            &self.id,
            &self.attempt,
            &self.state,
            &self.next_due_at,
            &self.delivered_at,
            &self.at,
            &self.error,
            &self.attempts,
            &self.channel,
            &self.routing,
        ]
    }
}

pub(super) async fn complete(store: &PgStore, batch: &[Completion]) -> Result<Vec<Applied>> {
    let mut client = store.client().await?;
    let tx = client.transaction().await.ctx("beginning complete")?;
    let applied = complete_in(&tx, batch).await?;
    tx.commit().await.ctx("committing complete")?;
    Ok(applied)
}

/// The current lease epoch of each of `shards` (a shard never leased: 0),
/// locked until the transaction ends (see `SHARD_EPOCHS`).
async fn shard_epochs(
    tx: &deadpool_postgres::Transaction<'_>,
    shards: &[i32],
) -> Result<HashMap<u16, i64>> {
    let mut epochs = HashMap::new();
    if shards.is_empty() {
        return Ok(epochs);
    }
    let stmt = tx
        .prepare_cached(SHARD_EPOCHS)
        .await
        .ctx("preparing epoch read")?;
    for row in tx.query(&stmt, &[&shards]).await.ctx("reading epochs")? {
        epochs.insert(
            row.narrow(0, "shard_leases.shard")?,
            row.int(1, "shard_leases.epoch")?,
        );
    }
    Ok(epochs)
}

/// The distinct shards of some fences, sorted (the order their lease rows
/// are locked in).
fn fence_shards<'a>(fences: impl Iterator<Item = &'a Fence>) -> Vec<i32> {
    let mut shards: Vec<i32> = fences.map(|f| i32::from(f.shard)).collect();
    shards.sort_unstable();
    shards.dedup();
    shards
}

pub(super) async fn mark_firing(store: &PgStore, marks: &[FiringMark]) -> Result<Vec<Applied>> {
    let mut client = store.client().await?;
    let tx = client.transaction().await.ctx("beginning mark_firing")?;
    tx.batch_execute(COMPLETE_PLAN)
        .await
        .ctx("planning mark_firing")?;
    let epochs = shard_epochs(
        &tx,
        &fence_shards(marks.iter().filter_map(|m| m.fence.as_ref())),
    )
    .await?;
    let mut applied = vec![Applied::NotPending; marks.len()];
    let (mut id, mut attempt, mut at) = (Vec::new(), Vec::new(), Vec::new());
    let mut seen = HashSet::with_capacity(marks.len());
    for (i, m) in marks.iter().enumerate() {
        if let Some(f) = m.fence
            && epochs.get(&f.shard).copied().unwrap_or(0) != f.epoch
        {
            applied[i] = Applied::Fenced;
            continue;
        }
        // A repeated id stays `NotPending`: the first mark took the timer.
        if seen.insert(m.timer_id) {
            id.push(m.timer_id);
            attempt.push(i64::from(m.attempt));
            at.push(m.at);
        }
    }
    let mut marked = HashSet::new();
    if !id.is_empty() {
        let stmt = tx
            .prepare_cached(MARK_FIRING)
            .await
            .ctx("preparing mark_firing")?;
        for row in tx
            .query(&stmt, &[&id, &attempt, &at])
            .await
            .ctx("marking timers firing")?
        {
            marked.insert(row.int(0, "timers.id")?);
        }
    }
    let mut no_grant = Vec::new();
    for (i, m) in marks.iter().enumerate() {
        if applied[i] == Applied::NotPending && marked.remove(&m.timer_id) {
            // The grant is spent with the mark; without one the mark is
            // taken back in the same transaction.
            applied[i] = match &m.grant {
                Some(g) if !super::grants::spend(&tx, m.timer_id, g, m.at).await? => {
                    no_grant.push(m.timer_id);
                    Applied::NoGrant
                }
                _ => Applied::Yes,
            };
        }
    }
    if !no_grant.is_empty() {
        let unmark = tx
            .prepare_cached(UNMARK_FIRING)
            .await
            .ctx("preparing unmark")?;
        let at = marks.first().map_or(0, |m| m.at);
        tx.execute(&unmark, &[&no_grant, &at])
            .await
            .ctx("taking marks back")?;
    }
    tx.commit().await.ctx("committing mark_firing")?;
    Ok(applied)
}

pub(super) async fn resolve_in_doubt(
    store: &PgStore,
    fences: &[Fence],
    skip: &[String],
    at: i64,
) -> Result<InDoubtResolved> {
    let mut client = store.client().await?;
    let tx = client
        .transaction()
        .await
        .ctx("beginning resolve_in_doubt")?;
    // Only shards still leased under the epoch given: the lease rows stay
    // locked, so none changes hands before this commits.
    let epochs = shard_epochs(&tx, &fence_shards(fences.iter())).await?;
    let mut shards: Vec<i32> = fences
        .iter()
        .filter(|f| epochs.get(&f.shard).copied().unwrap_or(0) == f.epoch)
        .map(|f| i32::from(f.shard))
        .collect();
    shards.sort_unstable();
    shards.dedup();
    let mut resolved = InDoubtResolved::default();
    if shards.is_empty() {
        tx.commit().await.ctx("ending resolve_in_doubt")?;
        return Ok(resolved);
    }
    let stmt = tx
        .prepare_cached(FIRING_IN_SHARDS)
        .await
        .ctx("preparing firing read")?;
    let mut firing: Vec<TimerRecord> = Vec::new();
    for row in tx
        .query(&stmt, &[&shards])
        .await
        .ctx("reading firing timers")?
    {
        firing.push(model::decode(&row)?);
    }
    let (doubt, again): (Vec<TimerRecord>, Vec<TimerRecord>) =
        firing.into_iter().partition(|t| skip.contains(&t.channel));
    if !doubt.is_empty() {
        let batch: Vec<Completion> = doubt
            .iter()
            .map(|t| crate::in_doubt_completion(t, at))
            .collect();
        let applied = complete_in(&tx, &batch).await?;
        resolved.in_doubt = applied.iter().filter(|a| **a == Applied::Yes).count() as u64;
    }
    if !again.is_empty() {
        let ids: Vec<i64> = again.iter().map(|t| t.id).collect();
        let stmt = tx
            .prepare_cached(UNMARK_FIRING)
            .await
            .ctx("preparing unmark")?;
        resolved.resent = tx
            .execute(&stmt, &[&ids, &at])
            .await
            .ctx("putting firing timers back")?;
    }
    tx.commit().await.ctx("committing resolve_in_doubt")?;
    Ok(resolved)
}

pub(super) async fn unmark_firing(store: &PgStore, ids: &[TimerId], at: i64) -> Result<u64> {
    let mut client = store.client().await?;
    let tx = client.transaction().await.ctx("beginning unmark_firing")?;
    let stmt = tx
        .prepare_cached(UNMARK_FIRING_RETURNING)
        .await
        .ctx("preparing unmark_firing")?;
    let back = tx
        .query(&stmt, &[&ids, &at])
        .await
        .ctx("putting firing timers back")?;
    // Never sent: a grant one of them spent goes back.
    for row in &back {
        let id = row.int(0, "timers.id")?;
        super::grants::release(&tx, id, crate::GrantEnd::Returned, at).await?;
    }
    tx.commit().await.ctx("committing unmark_firing")?;
    Ok(back.len() as u64)
}

/// [`complete`] inside the caller's transaction, which commits it.
async fn complete_in(
    tx: &deadpool_postgres::Transaction<'_>,
    batch: &[Completion],
) -> Result<Vec<Applied>> {
    tx.batch_execute(COMPLETE_PLAN)
        .await
        .ctx("planning complete")?;
    let epochs = log_completions(tx, batch).await?;
    let update = tx
        .prepare_cached(UPDATE_COMPLETED)
        .await
        .ctx("preparing completion update")?;
    let mut applied = vec![Applied::NotPending; batch.len()];
    let segments = update_segments(batch, &epochs, &mut applied);
    let params: Vec<[Param<'_>; 10]> = segments.iter().map(Updates::params).collect();
    // Pipelined: sent together, run in order.
    let answers = try_join_all(params.iter().map(|p| tx.query(&update, p)))
        .await
        .ctx("updating completed timers")?;
    for (seg, rows) in segments.iter().zip(answers) {
        let mut done = HashSet::with_capacity(rows.len());
        for row in rows {
            done.insert(row.int(0, "timers.id")?);
        }
        for (&i, id) in seg.index.iter().zip(&seg.id) {
            if done.contains(id) {
                applied[i] = Applied::Yes;
            }
        }
    }
    super::reports::count_completions(tx, batch).await?;
    Ok(applied)
}

/// Writes the send log of `batch` (every attempt, whatever happens to its
/// timer) and reads the current epoch of each fenced shard once, together.
/// Answers the epochs by shard (a shard never leased is left out: epoch 0).
async fn log_completions(
    tx: &deadpool_postgres::Transaction<'_>,
    batch: &[Completion],
) -> Result<HashMap<u16, i64>> {
    let log = tx
        .prepare_cached(INSERT_DELIVERIES)
        .await
        .ctx("preparing delivery insert")?;
    let epochs_stmt = tx
        .prepare_cached(SHARD_EPOCHS)
        .await
        .ctx("preparing epoch read")?;
    let timer_id: Vec<i64> = batch.iter().map(|c| c.timer_id).collect();
    let attempt: Vec<i64> = batch.iter().map(|c| i64::from(c.attempt)).collect();
    let channel: Vec<&str> = batch.iter().map(|c| c.channel.as_str()).collect();
    let outcome: Vec<&str> = batch.iter().map(|c| c.outcome.as_str()).collect();
    let key: Vec<&str> = batch.iter().map(|c| c.idempotency_key.as_str()).collect();
    let msgid: Vec<Option<&str>> = batch.iter().map(|c| c.provider_msgid.as_deref()).collect();
    let status: Vec<Option<i64>> = batch.iter().map(|c| c.status).collect();
    let error: Vec<Option<&str>> = batch.iter().map(|c| c.error.as_deref()).collect();
    let started: Vec<i64> = batch.iter().map(|c| c.started_at).collect();
    let finished: Vec<i64> = batch.iter().map(|c| c.finished_at).collect();
    let tenant = batch
        .iter()
        .map(|c| tenant_to_pg(c.tenant))
        .collect::<Result<Vec<i32>>>()?;
    let step: Vec<Option<i64>> = batch.iter().map(|c| c.step.map(i64::from)).collect();
    let log_params: [Param<'_>; 12] = [
        &timer_id, &attempt, &channel, &outcome, &key, &msgid, &status, &error, &started,
        &finished, &tenant, &step,
    ];
    let mut fenced_shards: Vec<i32> = batch
        .iter()
        .filter_map(|c| c.fence.map(|f| i32::from(f.shard)))
        .collect();
    fenced_shards.sort_unstable();
    fenced_shards.dedup();

    let mut epochs: HashMap<u16, i64> = HashMap::new();
    if fenced_shards.is_empty() {
        tx.execute(&log, &log_params)
            .await
            .ctx("inserting deliveries")?;
    } else {
        let (rows, _) = try_join(
            tx.query(&epochs_stmt, &[&fenced_shards]),
            tx.execute(&log, &log_params),
        )
        .await
        .ctx("inserting deliveries and reading epochs")?;
        for row in rows {
            epochs.insert(
                row.narrow(0, "shard_leases.shard")?,
                row.int(1, "shard_leases.epoch")?,
            );
        }
    }
    Ok(epochs)
}

/// The timer updates of `batch`, in segments in which no timer repeats; a
/// repeat starts the next segment, which then sees the state the earlier
/// completion left. A completion whose fence is no longer its shard's
/// current epoch is left out, `Fenced` in `applied`.
fn update_segments<'a>(
    batch: &'a [Completion],
    epochs: &HashMap<u16, i64>,
    applied: &mut [Applied],
) -> Vec<Updates<'a>> {
    let mut segments: Vec<Updates<'_>> = vec![Updates::default()];
    let mut in_segment: HashSet<i64> = HashSet::new();
    for (i, c) in batch.iter().enumerate() {
        if let Some(f) = c.fence
            && epochs.get(&f.shard).copied().unwrap_or(0) != f.epoch
        {
            applied[i] = Applied::Fenced;
            continue;
        }
        if !in_segment.insert(c.timer_id) {
            segments.push(Updates::default());
            in_segment.clear();
            in_segment.insert(c.timer_id);
        }
        if let Some(seg) = segments.last_mut() {
            seg.push(i, c);
        }
    }
    segments.retain(|s| !s.index.is_empty());
    segments
}

pub(super) async fn deliveries_for(
    store: &PgStore,
    timer_id: TimerId,
) -> Result<Vec<DeliveryRecord>> {
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(sql::DELIVERIES_FOR.pg)
        .await
        .ctx("preparing deliveries_for")?;
    client
        .query(&stmt, &[&timer_id])
        .await
        .ctx("reading deliveries")?
        .iter()
        .map(model::decode)
        .collect()
}

pub(super) async fn init_shards(store: &PgStore, wanted: u16) -> Result<u16> {
    let mut client = store.client().await?;
    let tx = client.transaction().await.ctx("beginning init_shards")?;
    tx.execute(sql::INIT_SHARDS.pg, &[&wanted.to_string()])
        .await
        .ctx("storing shards")?;
    // A new statement: sees a value another node committed meanwhile.
    let stored = tx
        .query_one(sql::GET_SHARDS.pg, &[])
        .await
        .ctx("reading shards")?
        .str(0, "meta.value")?
        .to_owned();
    tx.commit().await.ctx("committing init_shards")?;
    stored
        .parse()
        .map_err(|_| StoreError::Corrupt(format!("meta shards = {stored:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WriteOp;
    use crate::prelude::*;

    #[test]
    fn state_literals_match_codes() {
        assert_eq!(TimerState::Pending.code(), 0);
        assert_eq!(TimerState::Cancelled.code(), 4);
        assert!(
            TimerState::ALL
                .iter()
                .all(|s| i16::try_from(s.code()).is_ok())
        );
    }

    /// The owned-shard bitmap and range bounds of a node holding the even
    /// shards of 16 (more runs than ranges).
    fn even_shards() -> (Vec<u8>, Vec<i32>) {
        owning((0..16).step_by(2))
    }

    /// The owned-shard bitmap and range bounds of a node holding `shards` of 16.
    fn owning(shards: impl IntoIterator<Item = u16>) -> (Vec<u8>, Vec<i32>) {
        let mut set = herald_core::ShardSet::none(16);
        shards.into_iter().for_each(|s| set.insert(s));
        (set.to_bytes(), range_bounds(&set))
    }

    /// `head`, then the owned-shard parameters.
    fn with_shards<'a>(
        mut head: Vec<Param<'a>>,
        shards: &'a (Vec<u8>, Vec<i32>),
    ) -> Vec<Param<'a>> {
        head.push(&shards.0);
        head.extend(shards.1.iter().map(|b| b as Param<'a>));
        head
    }

    /// Whether a plan has a sort node (a `Merge Append`'s sort key is only the
    /// order it merges in).
    fn sorts(plan: &str) -> bool {
        plan.lines().any(|l| {
            let node = l.trim_start().trim_start_matches("->").trim_start();
            node.contains("(cost=")
                && (node.starts_with("Sort ") || node.starts_with("Incremental Sort "))
        })
    }

    /// The settings a statement's transaction plans it under, if any.
    fn plan_settings(sql: &str) -> Option<&'static str> {
        if sql == UPDATE_COMPLETED {
            Some(COMPLETE_PLAN)
        } else if sql.contains("ORDER BY due_at, id LIMIT") {
            Some(DUE_PLAN)
        } else {
            None
        }
    }

    /// `EXPLAIN` of `sql` under the settings its transaction runs it with.
    async fn explain_as_run(
        client: &tokio_postgres::Client,
        sql: &str,
        params: &[Param<'_>],
    ) -> String {
        let settings = plan_settings(sql);
        if let Some(set) = settings {
            client
                .batch_execute(&set.replace("SET LOCAL", "SET"))
                .await
                .expect("plan settings");
        }
        let rows = client
            .query(&format!("EXPLAIN {sql}"), params)
            .await
            .expect("explain");
        if settings.is_some() {
            client
                .batch_execute(
                    "RESET enable_hashjoin; RESET enable_mergejoin; \
                     RESET enable_bitmapscan; RESET enable_sort; RESET jit",
                )
                .await
                .expect("reset plan settings");
        }
        let plan: Vec<String> = rows.iter().map(|r| r.get::<_, String>(0)).collect();
        plan.join("\n")
    }

    /// The first due scan after a bulk load, before statistics catch up: every
    /// timer is due at one instant and the table was analysed when it was
    /// empty. The planner then expects a handful of due rows; the scan must
    /// still walk the pending index in order and stop at its limit, not
    /// gather every due timer and sort them.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn due_scans_stay_in_index_order_on_stale_statistics() {
        let Some(pg) = herald_pgtemp::PgTemp::shared().expect("cluster") else {
            return;
        };
        let db = pg.fresh_database("stale_plans").expect("database");
        let store = PgStore::open(db.url(), &Default::default())
            .await
            .expect("open");
        let client = store.client().await.expect("client");
        client
            .batch_execute("ALTER TABLE timers SET (autovacuum_enabled = off); ANALYZE timers")
            .await
            .expect("analyse while empty");
        for chunk in 0..5 {
            let ops = (0..20_000)
                .map(|i| {
                    let mut t = crate::testsuite::fixtures::keyed(1_000, &format!("s{chunk}-{i}"));
                    t.shard = (i % 16) as u16;
                    WriteOp::InsertTimer(t)
                })
                .collect();
            store.apply(ops).await.expect("apply");
        }
        let (until, limit, due, id) = (2_000i64, 10_000i64, 1_000i64, 5_000i64);
        let shards = even_shards();
        let low = owning(0..6);
        let cases: Vec<(&str, Vec<Param<'_>>)> = vec![
            (LOAD_DUE_FIRST, vec![&until, &limit]),
            (
                due_statement(Some(&low.1), true),
                with_shards(vec![&until, &limit, &due, &id], &low),
            ),
            (
                due_statement(Some(&shards.1), false),
                with_shards(vec![&until, &limit], &shards),
            ),
            (LOAD_DUE_AFTER, vec![&until, &limit, &due, &id]),
            (
                due_statement(Some(&shards.1), true),
                with_shards(vec![&until, &limit, &due, &id], &shards),
            ),
        ];
        for generic in [false, true] {
            let mode = crate::postgres::set_plan_mode(&client, generic).await;
            for (sql, params) in &cases {
                let plan = explain_as_run(&client, sql, params).await;
                assert!(plan.contains("timers_pending_due"), "{mode}: {sql}\n{plan}");
                assert!(!plan.contains("Bitmap"), "{mode}: {sql}\n{plan}");
                assert!(!sorts(&plan), "{mode}: {sql}\n{plan}");
            }
        }
    }

    /// The plans of the hot queries on a table of realistic size, both as custom
    /// plans (the first executions of a prepared statement) and as the generic
    /// plan PostgreSQL may switch to later.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn hot_queries_use_their_indexes() {
        let Some(pg) = herald_pgtemp::PgTemp::shared().expect("cluster") else {
            return;
        };
        let db = pg.fresh_database("plans").expect("database");
        let store = PgStore::open(db.url(), &Default::default())
            .await
            .expect("open");
        for chunk in 0..5 {
            let ops = (0..10_000)
                .map(|i| {
                    let n = chunk * 10_000 + i;
                    WriteOp::InsertTimer(crate::testsuite::fixtures::keyed(
                        n % 60_000,
                        &format!("k{n}"),
                    ))
                })
                .collect();
            let done: Vec<Completion> = store
                .apply(ops)
                .await
                .expect("apply")
                .iter()
                .take(2_000)
                .map(|r| {
                    let t = crate::testsuite::fixtures::created(r);
                    crate::testsuite::fixtures::completion(&t, 1, CompletionOutcome::Done, 9)
                })
                .collect();
            store.complete(done).await.expect("complete");
        }
        let client = store.client().await.expect("client");
        client
            .batch_execute("ANALYZE timers; ANALYZE deliveries")
            .await
            .expect("analyze");
        let until = i64::MAX;
        // A page much smaller than what is pending, as for a loader paging through
        // a big backlog (with a page near the whole table, a bitmap scan and a
        // sort of the page is a fair plan too).
        let limit = 1_000i64;
        let (due, id) = (30_000i64, 25_000i64);
        let shards = even_shards();
        let low = owning(0..6);
        let key = vec!["k77"];
        let key_tenants = vec![1i32];
        let ids: Vec<i64> = (1..1_000).collect();
        let n = ids.len();
        let (attempts, states, ats) = (vec![1i64; n], vec![2i16; n], vec![5i64; n]);
        let tenants = vec![1i32; n];
        let (no_due, delivered) = (vec![None::<i64>; n], vec![Some(5i64); n]);
        let no_error = vec![None::<&str>; n];
        let (channel, msgid, status) = ("webhook", "msg-77-1", "success");
        let cases: Vec<(&str, Vec<Param<'_>>, &str)> = vec![
            (LOAD_DUE_FIRST, vec![&until, &limit], "timers_pending_due"),
            (
                due_statement(Some(&low.1), false),
                with_shards(vec![&until, &limit], &low),
                "timers_pending_due",
            ),
            (
                due_statement(Some(&shards.1), false),
                with_shards(vec![&until, &limit], &shards),
                "timers_pending_due",
            ),
            (
                LOAD_DUE_AFTER,
                vec![&until, &limit, &due, &id],
                "timers_pending_due",
            ),
            (
                due_statement(Some(&shards.1), true),
                with_shards(vec![&until, &limit, &due, &id], &shards),
                "timers_pending_due",
            ),
            (
                TIMERS_BY_KEYS,
                vec![&key, &key_tenants],
                "timers_idempotency_key",
            ),
            (TIMERS_BY_IDS, vec![&ids], "timers_pkey"),
            (sql::DELIVERIES_FOR.pg, vec![&id], "deliveries_timer"),
            (
                crate::postgres::provider::FINAL_DELIVERIES,
                vec![&channel, &msgid, &status, &due],
                "deliveries_msgid",
            ),
            (CANCEL_TIMERS, vec![&ids, &ats, &tenants], "timers_pkey"),
            (
                UPDATE_COMPLETED,
                vec![
                    &ids, &attempts, &states, &no_due, &delivered, &ats, &no_error, &attempts,
                    &no_error, &no_error,
                ],
                "timers_pkey",
            ),
        ];
        for generic in [false, true] {
            let mode = crate::postgres::set_plan_mode(&client, generic).await;
            for (sql, params, index) in &cases {
                let plan = explain_as_run(&client, sql, params).await;
                assert!(plan.contains(index), "{mode}: {sql}\n{plan}");
                assert!(!crate::postgres::scans_rows(&plan), "{mode}: {sql}\n{plan}");
                assert!(!plan.contains("BitmapAnd"), "{mode}: {sql}\n{plan}");
                if sql.contains("ORDER BY due_at") {
                    assert!(!sorts(&plan), "must not sort: {sql}\n{plan}");
                }
                // A node's ranges of shards are tested on the index entry.
                if sql.contains("shard BETWEEN") {
                    assert!(
                        plan.lines()
                            .any(|l| l.contains("Index Cond") && l.contains("shard >=")),
                        "{mode}: shard range not in the index condition\n{plan}"
                    );
                }
            }
        }
    }
}
