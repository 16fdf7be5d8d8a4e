//! Timers, the send log and meta on SQLite.

use std::collections::HashMap;
use std::sync::LazyLock;

use herald_core::{TenantId, TimerId, TimerState};
use rusqlite::{Connection, TransactionBehavior, params};

use super::cluster;
use super::error::Ctx;
use crate::model::{self, due_cols, tenant_to_db, timer_cols};
use crate::timers::sql;
use crate::{
    Applied, Completion, CompletionOutcome, DeliveryRecord, DueCursor, DueEntry, Fence, FiringMark,
    InDoubtResolved, Result, StoreError, TimerRecord, WriteResult,
};

// The SQL below writes state codes as literals (partial indexes need literals to be
// usable); a unit test checks they match `TimerState::code()`.

// ?13 `filed`: 0 for a timer the filer adds to the search indexes later
// (migration 0042), 1 for one a read must find through them at once.
const INSERT_TIMER: &str = "INSERT INTO timers \
    (shard, due_at, priority, kind, state, channel, recipient, message, idempotency_key, \
     attempts, created_at, updated_at, tenant_id, traceparent, routing, filed) \
    VALUES (?1, ?2, ?3, ?4, 0, ?5, ?6, ?7, ?8, 0, ?9, ?9, ?10, ?11, ?12, ?13) \
    ON CONFLICT DO NOTHING";
const TIMER_BY_KEY: &str = concat!(
    "SELECT ",
    timer_cols!(),
    " FROM timers WHERE idempotency_key = ?1 AND tenant_id = ?2"
);
const CANCEL_TIMER: &str = concat!(
    "UPDATE timers SET state = 4, updated_at = ?2 \
     WHERE id = ?1 AND tenant_id = ?3 AND state = 0 RETURNING ",
    timer_cols!()
);
// Keyset paging over `(due_at, id)`. SQLite cannot seek an index with the row value
// `(due_at, id) > (?, ?)` when `id` is the rowid (it seeks on `due_at` alone and then
// filters, re-reading every timer due at the cursor's millisecond on each page: quadratic
// for a burst of timers due at the same moment). So a page after a cursor is read with
// two seeks: the rest of the cursor's millisecond, then the later ones.
//
// ?9 is the owned-shard bitmap (`ShardSet::to_bytes`), or NULL when every shard is
// owned, which skips the per-row test.
const LOAD_DUE_FIRST: &str = concat!(
    "SELECT ",
    due_cols!(),
    " FROM timers WHERE state = 0 AND due_at < ?1 \
     AND (?9 IS NULL OR herald_shard_in(shard, ?9)) ORDER BY due_at, id LIMIT ?2"
);
// ?1 cursor due_at, ?2 cursor id, ?3 limit.
const LOAD_DUE_SAME: &str = concat!(
    "SELECT ",
    due_cols!(),
    " FROM timers WHERE state = 0 AND due_at = ?1 AND id > ?2 \
     AND (?9 IS NULL OR herald_shard_in(shard, ?9)) ORDER BY due_at, id LIMIT ?3"
);
// ?1 cursor due_at, ?2 until, ?3 limit.
const LOAD_DUE_LATER: &str = concat!(
    "SELECT ",
    due_cols!(),
    " FROM timers WHERE state = 0 AND due_at > ?1 AND due_at < ?2 \
     AND (?9 IS NULL OR herald_shard_in(shard, ?9)) ORDER BY due_at, id LIMIT ?3"
);
const INSERT_DELIVERY: &str = "INSERT INTO deliveries \
    (timer_id, attempt, channel, outcome, idempotency_key, provider_msgid, status, error, \
     started_at, finished_at, tenant_id, step) \
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)";
// A completion applies to a timer pending or marked firing (state 1, see
// `MARK_FIRING`).
// ?1 id, ?2 attempt, ?3 finished_at, ?4 expected previous attempts.
const COMPLETE_DONE: &str = "UPDATE timers SET state = 2, attempts = ?2, delivered_at = ?3, \
    last_error = NULL, updated_at = ?3 \
    WHERE id = ?1 AND state IN (0, 1) AND attempts = ?4";
// ... ?5 next due_at, ?6 error.
const COMPLETE_RETRY: &str = "UPDATE timers SET state = 0, attempts = ?2, due_at = ?5, \
    last_error = ?6, updated_at = ?3 \
    WHERE id = ?1 AND state IN (0, 1) AND attempts = ?4";
// ... ?5 final state code, ?6 error.
const COMPLETE_FINAL: &str = "UPDATE timers SET state = ?5, attempts = ?2, last_error = ?6, \
    updated_at = ?3 \
    WHERE id = ?1 AND state IN (0, 1) AND attempts = ?4";
// ... ?5 next due_at, ?6 error, ?7 the step's channel, ?8 its routing, ?9
// delivered_at (a delivered step's): a fallback route's next step, a new
// series of attempts.
const COMPLETE_NEXT_STEP: &str = "UPDATE timers SET state = 0, attempts = ?2, attempt_base = ?2, \
    due_at = ?5, last_error = ?6, channel = ?7, routing = ?8, \
    delivered_at = COALESCE(?9, delivered_at), updated_at = ?3 \
    WHERE id = ?1 AND state IN (0, 1) AND attempts = ?4";
// ?1 id, ?2 attempt about to be made, ?3 at: a timer still pending at the
// attempt before is marked firing, which takes it out of the pending index.
const MARK_FIRING: &str = "UPDATE timers SET state = 1, updated_at = ?3 \
    WHERE id = ?1 AND state = 0 AND attempts = ?2 - 1";
// One shard's firing timers, through the partial index `timers_firing`.
const FIRING_IN_SHARD: &str = concat!(
    "SELECT ",
    timer_cols!(),
    " FROM timers WHERE state = 1 AND shard = ?1 ORDER BY id"
);
// ?1 id, ?2 at: a firing timer back to pending, due when it was.
const UNMARK_FIRING: &str =
    "UPDATE timers SET state = 0, updated_at = ?2 WHERE id = ?1 AND state = 1";

/// `fetch_pending` binds ids in `IN (...)` lists of one of these sizes, padding the
/// last chunk by repeating an id, so only a handful of distinct statements exist
/// and all of them stay in the statement cache.
const IN_LIST_SIZES: [usize; 4] = [8, 32, 128, 512];

static FETCH_PENDING_SQL: LazyLock<Vec<String>> = LazyLock::new(|| {
    IN_LIST_SIZES
        .iter()
        .map(|&n| {
            let mut sql = String::from(concat!(
                "SELECT ",
                timer_cols!(),
                " FROM timers WHERE state = 0 AND id IN ("
            ));
            for i in 0..n {
                sql.push_str(if i == 0 { "?" } else { ",?" });
            }
            sql.push(')');
            sql
        })
        .collect()
});

pub(super) fn get_timer(conn: &Connection, id: TimerId) -> Result<Option<TimerRecord>> {
    let mut stmt = conn
        .prepare_cached(sql::TIMER_BY_ID.sqlite)
        .ctx("preparing get_timer")?;
    let mut rows = stmt.query([id]).ctx("querying timer by id")?;
    match rows.next().ctx("reading timer by id")? {
        Some(row) => model::decode(row).map(Some),
        None => Ok(None),
    }
}

pub(super) fn timer_by_key(
    conn: &Connection,
    tenant: TenantId,
    key: &str,
) -> Result<Option<TimerRecord>> {
    let mut stmt = conn
        .prepare_cached(TIMER_BY_KEY)
        .ctx("preparing timer by key")?;
    let mut rows = stmt
        .query(params![key, tenant_to_db(tenant)])
        .ctx("querying timer by key")?;
    match rows.next().ctx("reading timer by key")? {
        Some(row) => model::decode(row).map(Some),
        None => Ok(None),
    }
}

/// A write batch's prepared [`INSERT_TIMER`] and the pending timers it has
/// added per tenant so far. `timer_counts` has no insert trigger (migration
/// 0022): a row trigger cost more than the insert itself on the bulk path,
/// so the batch adds its counts in one statement per tenant with
/// [`TimerInserts::count`], in the same transaction, before it commits.
pub(super) struct TimerInserts<'c> {
    stmt: rusqlite::CachedStatement<'c>,
    added: HashMap<i64, i64>,
}

const ADD_PENDING: &str = "INSERT INTO timer_counts (tenant_id, state, n) VALUES (?1, 0, ?2) \
    ON CONFLICT (tenant_id, state) DO UPDATE SET n = n + excluded.n";

impl<'c> TimerInserts<'c> {
    pub(super) fn prepare(conn: &'c Connection) -> Result<Self> {
        Ok(Self {
            stmt: conn.prepare_cached(INSERT_TIMER).ctx("preparing insert")?,
            added: HashMap::new(),
        })
    }

    /// Adds the batch's inserts to `timer_counts`. Must run in the
    /// transaction of the inserts, before it commits.
    pub(super) fn count(self, conn: &Connection) -> Result<()> {
        if self.added.is_empty() {
            return Ok(());
        }
        let mut stmt = conn
            .prepare_cached(ADD_PENDING)
            .ctx("preparing timer count")?;
        for (tenant, n) in self.added {
            stmt.execute(params![tenant, n])
                .ctx("counting inserted timers")?;
        }
        Ok(())
    }
}

/// Inserts one timer with the batch's [`TimerInserts`]: `Created`, or
/// `Existing` when its idempotency key is taken in its tenant. The filer
/// adds it to the search indexes later (see [`super::filer`]), except a
/// timer with routing: a digest's next timer must find it by recipient at
/// once, and routed timers are few.
pub(super) fn insert_timer(
    conn: &Connection,
    insert: &mut TimerInserts<'_>,
    t: crate::NewTimer,
) -> Result<WriteResult> {
    let filed = t.routing.is_some();
    let inserted = insert
        .stmt
        .execute(params![
            t.shard,
            t.due_at,
            t.priority,
            t.kind.as_str(),
            t.channel,
            t.recipient,
            t.message,
            t.idempotency_key,
            t.created_at,
            tenant_to_db(t.tenant),
            t.traceparent,
            t.routing,
            filed,
        ])
        .ctx("inserting timer")?;
    if inserted == 1 {
        *insert.added.entry(tenant_to_db(t.tenant)).or_insert(0) += 1;
        return Ok(WriteResult::Created(
            t.into_record(conn.last_insert_rowid()),
        ));
    }
    // Only the (idempotency key, tenant) pair can conflict.
    let existing = match &t.idempotency_key {
        Some(key) => timer_by_key(conn, t.tenant, key)?,
        None => None,
    };
    Ok(WriteResult::Existing(existing.ok_or_else(|| {
        StoreError::Internal("sqlite: insert was ignored but no timer has its key".into())
    })?))
}

/// Row counts of the multi-row inserts of plain timers, largest first: one
/// statement's fixed cost (among it a cursor opened and closed on each of
/// the table's nine indexes) is shared by its rows. Fewer rows than the
/// smallest go one by one.
const MULTI_ROWS: [usize; 2] = [64, 8];

/// The multi-row insert of `rows` plain timers (eleven values each). No
/// `RETURNING`: SQLite gathers returned rows in a table of their own before
/// handing them back, which measured a fifth of the insert's time.
fn multi_insert_sql(rows: usize) -> String {
    let row = "(?, ?, ?, ?, 0, ?, ?, ?, NULL, 0, ?, ?, ?, ?, NULL, 0)";
    format!(
        "INSERT INTO timers \
         (shard, due_at, priority, kind, state, channel, recipient, message, idempotency_key, \
          attempts, created_at, updated_at, tenant_id, traceparent, routing, filed) VALUES {}",
        vec![row; rows].join(", ")
    )
}

/// Binds one plain timer's eleven values of a multi-row insert (see
/// [`multi_insert_sql`]) after the first `before` values.
fn bind_plain_row(
    stmt: &mut rusqlite::Statement<'_>,
    before: usize,
    t: &crate::NewTimer,
) -> rusqlite::Result<()> {
    stmt.raw_bind_parameter(before + 1, t.shard)?;
    stmt.raw_bind_parameter(before + 2, t.due_at)?;
    stmt.raw_bind_parameter(before + 3, t.priority)?;
    stmt.raw_bind_parameter(before + 4, t.kind.as_str())?;
    stmt.raw_bind_parameter(before + 5, t.channel.as_str())?;
    stmt.raw_bind_parameter(before + 6, t.recipient.as_str())?;
    stmt.raw_bind_parameter(before + 7, t.message.as_str())?;
    stmt.raw_bind_parameter(before + 8, t.created_at)?;
    stmt.raw_bind_parameter(before + 9, t.created_at)?;
    stmt.raw_bind_parameter(before + 10, tenant_to_db(t.tenant))?;
    stmt.raw_bind_parameter(before + 11, t.traceparent.as_deref())
}

/// What identifies a row, to check an id was given to the right timer.
const ROW_AT: &str = "SELECT due_at, recipient FROM timers WHERE id = ?1";

static MULTI_INSERT: LazyLock<[String; 2]> = LazyLock::new(|| MULTI_ROWS.map(multi_insert_sql));

/// A timer that can share a multi-row insert: with no idempotency key
/// nothing can conflict, and with no routing it is filed later like any.
pub(super) fn plain(t: &crate::NewTimer) -> bool {
    t.idempotency_key.is_none() && t.routing.is_none()
}

/// Inserts plain timers (see [`plain`]), pushing each one's `Created` onto
/// `out` in order: as many multi-row statements as fit, then one by one.
pub(super) fn insert_plain(
    conn: &Connection,
    insert: &mut TimerInserts<'_>,
    ts: Vec<crate::NewTimer>,
    out: &mut Vec<WriteResult>,
) -> Result<()> {
    let mut rest = ts.into_iter();
    loop {
        let left = rest.len();
        let Some(k) = MULTI_ROWS.iter().position(|&n| n <= left) else {
            break;
        };
        let chunk: Vec<crate::NewTimer> = rest.by_ref().take(MULTI_ROWS[k]).collect();
        insert_rows(conn, insert, &MULTI_INSERT[k], chunk, out)?;
    }
    for t in rest {
        out.push(insert_timer(conn, insert, t)?);
    }
    Ok(())
}

/// One multi-row insert. In an `AUTOINCREMENT` table each new row's id is
/// one above the largest ever given, and nothing else inserts into `timers`
/// while the statement runs (it has no insert trigger), so the rows of one
/// statement take consecutive ids in the order of its `VALUES`, the last
/// being `last_insert_rowid()`. The first and last ids are read back and
/// checked against their timers, so should that ever not hold the batch
/// fails rather than give a timer another timer's id.
fn insert_rows(
    conn: &Connection,
    insert: &mut TimerInserts<'_>,
    sql: &str,
    ts: Vec<crate::NewTimer>,
    out: &mut Vec<WriteResult>,
) -> Result<()> {
    let (Some(first_timer), Some(last_timer)) = (ts.first(), ts.last()) else {
        return Ok(());
    };
    let mut stmt = conn.prepare_cached(sql).ctx("preparing multi-row insert")?;
    // Bound value by value with their own types: a quarter of the writer's
    // time went to binding through `&dyn ToSql`.
    for (k, t) in ts.iter().enumerate() {
        bind_plain_row(&mut stmt, 11 * k, t).ctx("binding a multi-row insert")?;
    }
    let inserted = stmt.raw_execute().ctx("inserting timers")?;
    drop(stmt);
    let last = conn.last_insert_rowid();
    let n = i64::try_from(ts.len()).unwrap_or(i64::MAX);
    let first = last - n + 1;
    let mut row_at = conn.prepare_cached(ROW_AT).ctx("preparing ROW_AT")?;
    let mut is = |id: i64, t: &crate::NewTimer| -> Result<bool> {
        let (due_at, recipient): (i64, String) = row_at
            .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
            .ctx("reading an inserted timer back")?;
        Ok(due_at == t.due_at && recipient == t.recipient)
    };
    if inserted != ts.len() || !is(first, first_timer)? || !is(last, last_timer)? {
        return Err(StoreError::Internal(
            "sqlite: a multi-row insert's ids do not match its timers".into(),
        ));
    }
    for (id, t) in (first..).zip(ts) {
        *insert.added.entry(tenant_to_db(t.tenant)).or_insert(0) += 1;
        out.push(WriteResult::Created(t.into_record(id)));
    }
    Ok(())
}

pub(super) fn cancel_timer(
    conn: &Connection,
    tenant: TenantId,
    id: TimerId,
    at: i64,
) -> Result<WriteResult> {
    {
        let mut stmt = conn.prepare_cached(CANCEL_TIMER).ctx("preparing cancel")?;
        let mut rows = stmt
            .query(params![id, at, tenant_to_db(tenant)])
            .ctx("cancelling timer")?;
        if let Some(row) = rows.next().ctx("cancelling timer")? {
            return Ok(WriteResult::Cancelled(model::decode(row)?));
        }
    }
    // Another tenant's timer is as good as missing.
    Ok(match get_timer(conn, id)?.filter(|r| r.tenant == tenant) {
        Some(record) => WriteResult::NotCancellable(record),
        None => WriteResult::NotFound,
    })
}

pub(super) fn load_due(
    conn: &mut Connection,
    shards: Option<Vec<u8>>,
    after: Option<DueCursor>,
    until: i64,
    limit: usize,
) -> Result<Vec<DueEntry>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut out = Vec::with_capacity(usize::try_from(limit.min(65_536)).unwrap_or(0));
    if limit == 0 {
        return Ok(out);
    }
    let Some(cursor) = after else {
        let mut stmt = conn
            .prepare_cached(LOAD_DUE_FIRST)
            .ctx("preparing load_due")?;
        stmt.raw_bind_parameter(9, &shards).ctx("binding shards")?;
        read_due(bind_and_query(&mut stmt, &[&until, &limit]), &mut out)?;
        return Ok(out);
    };
    // Both seeks read one snapshot.
    let tx = conn.transaction().ctx("beginning load_due")?;
    if cursor.due_at < until {
        let mut stmt = tx.prepare_cached(LOAD_DUE_SAME).ctx("preparing load_due")?;
        stmt.raw_bind_parameter(9, &shards).ctx("binding shards")?;
        read_due(
            bind_and_query(&mut stmt, &[&cursor.due_at, &cursor.id, &limit]),
            &mut out,
        )?;
    }
    let left = limit - out.len() as i64;
    if left > 0 {
        let mut stmt = tx
            .prepare_cached(LOAD_DUE_LATER)
            .ctx("preparing load_due")?;
        stmt.raw_bind_parameter(9, &shards).ctx("binding shards")?;
        read_due(
            bind_and_query(&mut stmt, &[&cursor.due_at, &until, &left]),
            &mut out,
        )?;
    }
    tx.commit().ctx("ending load_due")?;
    Ok(out)
}

/// Binds the leading positional parameters (the shard bitmap is bound apart,
/// as ?9) and runs the statement.
fn bind_and_query<'s>(
    stmt: &'s mut rusqlite::CachedStatement<'_>,
    values: &[&dyn rusqlite::ToSql],
) -> rusqlite::Result<rusqlite::Rows<'s>> {
    for (i, v) in values.iter().enumerate() {
        stmt.raw_bind_parameter(i + 1, v)?;
    }
    Ok(stmt.raw_query())
}

fn read_due(rows: rusqlite::Result<rusqlite::Rows<'_>>, out: &mut Vec<DueEntry>) -> Result<()> {
    let mut rows = rows.ctx("querying load_due")?;
    while let Some(row) = rows.next().ctx("reading load_due")? {
        out.push(model::decode(row)?);
    }
    Ok(())
}

fn sorted_unique(mut ids: Vec<TimerId>) -> Vec<TimerId> {
    // Sorted ids also make the rowid lookups walk the table B-tree in order.
    ids.sort_unstable();
    ids.dedup();
    ids
}

pub(super) fn fetch_pending(conn: &Connection, ids: Vec<TimerId>) -> Result<Vec<TimerRecord>> {
    let ids = sorted_unique(ids);
    let mut out = Vec::with_capacity(ids.len());
    let largest = IN_LIST_SIZES[IN_LIST_SIZES.len() - 1];
    for chunk in ids.chunks(largest) {
        // Smallest list that fits; pad with the chunk's last id (IN ignores repeats).
        let slot = IN_LIST_SIZES
            .iter()
            .position(|&n| n >= chunk.len())
            .unwrap_or(IN_LIST_SIZES.len() - 1);
        let size = IN_LIST_SIZES[slot];
        let Some(&pad) = chunk.last() else { continue };
        let mut stmt = conn
            .prepare_cached(&FETCH_PENDING_SQL[slot])
            .ctx("preparing fetch_pending")?;
        let params = chunk
            .iter()
            .chain(std::iter::repeat_n(&pad, size - chunk.len()));
        let mut rows = stmt
            .query(rusqlite::params_from_iter(params))
            .ctx("querying fetch_pending")?;
        while let Some(row) = rows.next().ctx("reading fetch_pending")? {
            out.push(model::decode(row)?);
        }
    }
    Ok(out)
}

pub(super) fn complete(conn: &mut Connection, batch: Vec<Completion>) -> Result<Vec<Applied>> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("beginning complete")?;
    let applied = complete_in(&tx, &batch)?;
    tx.commit().ctx("committing complete")?;
    Ok(applied)
}

/// The current epoch of `shard`, read once per transaction into `epochs`.
fn epoch_of(
    tx: &rusqlite::Transaction<'_>,
    epochs: &mut HashMap<u16, i64>,
    shard: u16,
) -> Result<i64> {
    if let Some(e) = epochs.get(&shard) {
        return Ok(*e);
    }
    let e = cluster::shard_epoch(tx, shard)?;
    epochs.insert(shard, e);
    Ok(e)
}

pub(super) fn mark_firing(conn: &mut Connection, marks: Vec<FiringMark>) -> Result<Vec<Applied>> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("beginning mark_firing")?;
    let mut applied = Vec::with_capacity(marks.len());
    let mut epochs: HashMap<u16, i64> = HashMap::new();
    {
        let mut mark = tx.prepare_cached(MARK_FIRING).ctx("preparing mark")?;
        for m in &marks {
            if let Some(Fence { shard, epoch }) = m.fence
                && epoch_of(&tx, &mut epochs, shard)? != epoch
            {
                applied.push(Applied::Fenced);
                continue;
            }
            let changed = mark
                .execute(params![m.timer_id, m.attempt, m.at])
                .ctx("marking timer firing")?;
            if changed != 1 {
                applied.push(Applied::NotPending);
                continue;
            }
            // The grant is spent with the mark; without one the mark is
            // taken back in the same transaction.
            if let Some(g) = &m.grant
                && !super::grants::spend(&tx, m.timer_id, g, m.at)?
            {
                tx.prepare_cached(UNMARK_FIRING)
                    .ctx("preparing unmark")?
                    .execute(params![m.timer_id, m.at])
                    .ctx("taking a mark back")?;
                applied.push(Applied::NoGrant);
                continue;
            }
            applied.push(Applied::Yes);
        }
    }
    tx.commit().ctx("committing mark_firing")?;
    Ok(applied)
}

pub(super) fn unmark_firing(conn: &mut Connection, ids: &[TimerId], at: i64) -> Result<u64> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("beginning unmark_firing")?;
    let mut back = 0u64;
    {
        let mut unmark = tx.prepare_cached(UNMARK_FIRING).ctx("preparing unmark")?;
        for id in ids {
            let n = unmark
                .execute(params![id, at])
                .ctx("putting a firing timer back")? as u64;
            // Never sent: a grant it spent goes back.
            if n == 1 {
                super::grants::release(&tx, *id, crate::GrantEnd::Returned, at)?;
            }
            back += n;
        }
    }
    tx.commit().ctx("committing unmark_firing")?;
    Ok(back)
}

pub(super) fn resolve_in_doubt(
    conn: &mut Connection,
    fences: &[Fence],
    skip: &[String],
    at: i64,
) -> Result<InDoubtResolved> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("beginning resolve_in_doubt")?;
    let mut epochs: HashMap<u16, i64> = HashMap::new();
    let mut firing: Vec<TimerRecord> = Vec::new();
    let mut shards: Vec<u16> = Vec::new();
    for f in fences {
        // Only shards still leased under the epoch given.
        if epoch_of(&tx, &mut epochs, f.shard)? == f.epoch {
            shards.push(f.shard);
        }
    }
    shards.sort_unstable();
    shards.dedup();
    {
        let mut stmt = tx
            .prepare_cached(FIRING_IN_SHARD)
            .ctx("preparing firing read")?;
        for shard in shards {
            let mut rows = stmt.query([shard]).ctx("querying firing timers")?;
            while let Some(row) = rows.next().ctx("reading firing timers")? {
                firing.push(model::decode(row)?);
            }
        }
    }
    let (doubt, again): (Vec<TimerRecord>, Vec<TimerRecord>) =
        firing.into_iter().partition(|t| skip.contains(&t.channel));
    let mut resolved = InDoubtResolved::default();
    if !doubt.is_empty() {
        let batch: Vec<Completion> = doubt
            .iter()
            .map(|t| crate::in_doubt_completion(t, at))
            .collect();
        let applied = complete_in(&tx, &batch)?;
        resolved.in_doubt = applied.iter().filter(|a| **a == Applied::Yes).count() as u64;
    }
    {
        let mut unmark = tx.prepare_cached(UNMARK_FIRING).ctx("preparing unmark")?;
        for t in &again {
            resolved.resent += unmark
                .execute(params![t.id, at])
                .ctx("putting a firing timer back")? as u64;
        }
    }
    tx.commit().ctx("committing resolve_in_doubt")?;
    Ok(resolved)
}

/// [`complete`] inside the caller's transaction, which commits it.
fn complete_in(tx: &rusqlite::Transaction<'_>, batch: &[Completion]) -> Result<Vec<Applied>> {
    let mut applied = Vec::with_capacity(batch.len());
    // Current epoch per shard, read once per batch.
    let mut epochs: HashMap<u16, i64> = HashMap::new();
    {
        let mut log = tx
            .prepare_cached(INSERT_DELIVERY)
            .ctx("preparing delivery insert")?;
        let mut done = tx.prepare_cached(COMPLETE_DONE).ctx("preparing done")?;
        let mut retry = tx.prepare_cached(COMPLETE_RETRY).ctx("preparing retry")?;
        let mut fin = tx.prepare_cached(COMPLETE_FINAL).ctx("preparing final")?;
        let mut next = tx
            .prepare_cached(COMPLETE_NEXT_STEP)
            .ctx("preparing next step")?;
        for c in batch {
            log.execute(params![
                c.timer_id,
                c.attempt,
                c.channel,
                c.outcome.as_str(),
                c.idempotency_key,
                c.provider_msgid,
                c.status,
                c.error,
                c.started_at,
                c.finished_at,
                tenant_to_db(c.tenant),
                c.step,
            ])
            .ctx("inserting delivery")?;
            if let Some(Fence { shard, epoch }) = c.fence
                && epoch_of(tx, &mut epochs, shard)? != epoch
            {
                applied.push(Applied::Fenced);
                continue;
            }
            // Attempt 0 expects -1 and so never matches: no underflow, no update.
            let previous = i64::from(c.attempt) - 1;
            let (id, attempt, at) = (c.timer_id, c.attempt, c.finished_at);
            let changed = if let Some(n) = &c.next {
                let delivered = (c.outcome == CompletionOutcome::Done).then_some(at);
                next.execute(params![
                    id, attempt, at, previous, n.due_at, c.error, n.channel, n.routing, delivered
                ])
            } else {
                match c.outcome {
                    CompletionOutcome::Done => done.execute(params![id, attempt, at, previous]),
                    CompletionOutcome::Retry { next_due_at } => {
                        retry.execute(params![id, attempt, at, previous, next_due_at, c.error])
                    }
                    CompletionOutcome::Deferred { next_due_at, .. } => {
                        retry.execute(params![id, previous, at, previous, next_due_at, c.error])
                    }
                    CompletionOutcome::Failed | CompletionOutcome::Unsendable(_) => {
                        fin.execute(params![
                            id,
                            attempt,
                            at,
                            previous,
                            TimerState::Failed.code(),
                            c.error
                        ])
                    }
                    CompletionOutcome::Dead => fin.execute(params![
                        id,
                        attempt,
                        at,
                        previous,
                        TimerState::Dead.code(),
                        c.error
                    ]),
                    CompletionOutcome::InDoubt => fin.execute(params![
                        id,
                        attempt,
                        at,
                        previous,
                        TimerState::InDoubt.code(),
                        c.error
                    ]),
                    CompletionOutcome::Read => fin.execute(params![
                        id,
                        attempt,
                        at,
                        previous,
                        TimerState::Done.code(),
                        c.error
                    ]),
                }
            }
            .ctx("updating completed timer")?;
            applied.push(if changed == 1 {
                Applied::Yes
            } else {
                Applied::NotPending
            });
        }
    }
    super::reports::count_completions(tx, batch)?;
    Ok(applied)
}

pub(super) fn deliveries_for(conn: &Connection, timer_id: TimerId) -> Result<Vec<DeliveryRecord>> {
    let mut stmt = conn
        .prepare_cached(sql::DELIVERIES_FOR.sqlite)
        .ctx("preparing deliveries_for")?;
    let mut rows = stmt.query([timer_id]).ctx("querying deliveries")?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().ctx("reading deliveries")? {
        out.push(model::decode(row)?);
    }
    Ok(out)
}

pub(super) fn init_shards(conn: &mut Connection, wanted: u16) -> Result<u16> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("beginning init_shards")?;
    let stored: String = {
        tx.prepare_cached(sql::INIT_SHARDS.sqlite)
            .ctx("preparing init_shards")?
            .execute([wanted.to_string()])
            .ctx("storing shards")?;
        let mut stmt = tx
            .prepare_cached(sql::GET_SHARDS.sqlite)
            .ctx("preparing shards")?;
        stmt.query_row([], |r| r.get(0)).ctx("reading shards")?
    };
    tx.commit().ctx("committing init_shards")?;
    stored
        .parse()
        .map_err(|_| StoreError::Corrupt(format!("meta shards = {stored:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite::testing::{migrated, plan};

    #[test]
    fn state_literals_match_codes() {
        assert_eq!(TimerState::Pending.code(), 0);
        assert_eq!(TimerState::Done.code(), 2);
        assert_eq!(TimerState::Failed.code(), 3);
        assert_eq!(TimerState::Cancelled.code(), 4);
        assert_eq!(TimerState::Dead.code(), 5);
    }

    #[test]
    fn load_due_searches_the_pending_index() {
        let conn = migrated();
        for (sql, range) in [
            // The shard bitmap is ?9, bound like the rest.
            (LOAD_DUE_FIRST, "(due_at<?)"),
            (LOAD_DUE_SAME, "(due_at=? AND id>?)"),
            (LOAD_DUE_LATER, "(due_at>? AND due_at<?)"),
        ] {
            let p = plan(&conn, sql);
            assert!(
                p.contains(&format!(
                    "SEARCH timers USING INDEX timers_pending_due {range}"
                )),
                "{sql}:\n{p}"
            );
            assert!(!p.contains("SCAN"), "{sql}:\n{p}");
            assert!(!p.contains("TEMP B-TREE"), "must not sort: {sql}:\n{p}");
        }
    }

    #[test]
    fn point_lookups_use_indexes() {
        let conn = migrated();
        let p = plan(&conn, TIMER_BY_KEY);
        assert!(p.contains("USING INDEX timers_idempotency_key"), "{p}");
        let p = plan(&conn, sql::DELIVERIES_FOR.sqlite);
        assert!(p.contains("USING INDEX deliveries_timer"), "{p}");
        assert!(!p.contains("TEMP B-TREE"), "{p}");
        for sql in FETCH_PENDING_SQL.iter() {
            let p = plan(&conn, sql);
            assert!(p.contains("INTEGER PRIMARY KEY"), "{p}");
        }
    }
}
