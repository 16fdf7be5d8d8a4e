//! Subjects and reminder subscriptions on PostgreSQL.
//!
//! # Shape
//!
//! A subscription is one `reminders` row per (user, subject) holding the seed-003
//! bitmap, plus one `reminder_timers` row per set bit naming that bit's timer (an
//! ordinary row of `timers`, kind `reminder`). The two always agree: a bit is set
//! exactly when its `reminder_timers` row exists, and a `reminders` row whose bits
//! drop to zero is deleted. Deleting a subject relies on that to find the
//! subject's `reminders` rows through `reminder_timers_subject` (there is no index
//! on `reminders.subject_id`, which would cost every subscription one more index
//! entry during a burst).
//!
//! # Concurrency (READ COMMITTED)
//!
//! * The `reminder_timers` primary key decides who sets a bit: adders insert the
//!   link with `ON CONFLICT DO NOTHING`, which waits for a concurrent inserter of
//!   the same key and then skips, so of two nodes adding the same bit exactly one
//!   inserts the link and creates the timer; the other answers `ReminderExists`.
//!   Bits are then OR-ed into `reminders` with `ON CONFLICT DO UPDATE`, which
//!   works on the latest committed row.
//! * Adders hold `FOR SHARE` on their subjects until they commit; moving or
//!   deleting a subject locks it for update first and only then, in a new
//!   statement (so a new snapshot), touches its timers. So a move sees every
//!   reminder added before it, and a reminder added after it reads the new
//!   start time (or finds the subject gone).
//! * Cancelling locks the `reminders` row (`FOR UPDATE`) before unlinking bits.
//! * Within a batch, link inserts and bitmap updates go in (user, subject, bit)
//!   order, so two batches lock rows in the same order. Whatever deadlock is
//!   still possible (a batch mixing subjects and moves in opposite orders) is
//!   retried whole by `PgStore::retrying`.
//!
//! # Batching
//!
//! Consecutive `AddReminder` ops (a bulk subscribe sends thousands) are applied
//! together with a fixed handful of statements over arrays; the subject ops and
//! `CancelReminders` run one by one.

use std::collections::{HashMap, HashSet};

use herald_core::{TenantId, TimerState};

use super::timers::keyed_timers;
use super::{Ctx, Param, PgStore, col};
use crate::model::{
    self, Columns, due_cols, reminder_timer_cols, subject_cols, tenant_to_pg, timer_cols,
};
use crate::reminders::sql;
use crate::{
    DueEntry, MergeProbe, NewReminder, PutSubject, ReminderTimer, Result, StoreError,
    SubjectRecord, TimerRecord, WriteResult, bit_mask, bits_from_db, bits_to_db,
};

type Tx<'a> = deadpool_postgres::Transaction<'a>;

const LOCK_SUBJECT: &str = concat!(
    "SELECT ",
    subject_cols!(),
    " FROM subjects WHERE tenant_id = $1 AND subject_id = $2 FOR UPDATE"
);
const CREATE_SUBJECT: &str = "INSERT INTO subjects \
    (tenant_id, subject_id, start_at, title, data, created_at, updated_at, early_window_ms, \
     send_late, templates) \
    VALUES ($1, $2, $3, $4, $5, $6, $6, $7, $8, $9) ON CONFLICT (tenant_id, subject_id) DO NOTHING";
// The statements that touch a subject's (or a subscription's) timers hand them
// to the update as an array, `id = ANY(ARRAY(...))`: the planner then looks each
// one up by primary key. Given a join instead, it knows how many rows to expect
// and hashes them against a scan of the whole `timers` table once they are a
// percent or so of it (measured) — a hot subject's 200k reminders among 10M
// timers would pay for reading all 10M.

// $1 tenant, $2 subject, $3 delta, $4 at. Only pending timers move: one that
// fired (done, failed, dead) or was cancelled keeps its due time as history.
const MOVE_SUBJECT_TIMERS: &str = concat!(
    "UPDATE timers SET due_at = due_at + $3, updated_at = $4 \
     WHERE id = ANY(ARRAY(SELECT timer_id FROM reminder_timers \
                          WHERE tenant_id = $1 AND subject_id = $2)) \
       AND state = 0 \
     RETURNING ",
    due_cols!()
);
const DELETE_SUBJECT: &str = concat!(
    "DELETE FROM subjects WHERE tenant_id = $1 AND subject_id = $2 RETURNING ",
    subject_cols!()
);
/// See `queries/drop_subject_reminders.sql`.
const DROP_SUBJECT_REMINDERS: &str = include_str!("queries/drop_subject_reminders.sql");
const LOCK_BITS: &str = "SELECT bits FROM reminders \
    WHERE tenant_id = $1 AND user_id = $2 AND subject_id = $3 FOR UPDATE";
/// See `queries/cancel_bits.sql`.
const CANCEL_BITS: &str = include_str!("queries/cancel_bits.sql");

// ---- Adding reminders in bulk ----

// $1 the batch's tenants, $2 its subjects (each distinct and sorted): every
// pair is a primary-key probe. Pairs no op asked for (a batch of several
// tenants) are locked too, harmlessly, and ignored.
const SHARE_SUBJECTS: &str = "SELECT tenant_id, subject_id, start_at FROM subjects \
    WHERE tenant_id = ANY($1::int4[]) AND subject_id = ANY($2::text[]) \
    ORDER BY tenant_id, subject_id FOR SHARE";
const BITS_OF_PAIRS: &str = "SELECT r.tenant_id, r.user_id, r.subject_id, r.bits \
    FROM unnest($1::int4[], $2::text[], $3::text[]) AS p(tenant_id, user_id, subject_id) \
    JOIN reminders AS r ON r.tenant_id = p.tenant_id AND r.user_id = p.user_id \
        AND r.subject_id = p.subject_id";
// Rows distinct and sorted by key; a timer id is drawn for each. Answers the
// links inserted: those not answered were set by someone else meanwhile.
const CLAIM_BITS: &str = "INSERT INTO reminder_timers \
        (tenant_id, user_id, subject_id, bit, timer_id) \
    SELECT t, u, s, b, nextval('timers_id_seq') \
    FROM unnest($1::int4[], $2::text[], $3::text[], $4::int2[]) AS x(t, u, s, b) \
    ON CONFLICT DO NOTHING RETURNING tenant_id, user_id, subject_id, bit, timer_id";
// $1 tenant, $2 user, $3 subject, $4 bit: the bit's timer state, its link
// locked so two renewals of one spent bit take turns. `subject_id || ''`
// keeps the subject index (which a popular subject makes long) out, as in
// `cancel_bits.sql`: the primary key finds the one row.
const SPENT_BIT: &str = "SELECT t.state FROM reminder_timers AS r \
    JOIN timers AS t ON t.id = r.timer_id \
    WHERE r.tenant_id = $1 AND r.user_id = $2 AND r.subject_id || '' = $3 AND r.bit = $4 \
    FOR UPDATE OF r";
const DRAW_TIMER_ID: &str = "SELECT nextval('timers_id_seq')";
// $1 tenant, $2 user, $3 subject, $4 bit, $5 the bit's new timer.
const RELINK_BIT: &str = "UPDATE reminder_timers SET timer_id = $5 \
    WHERE tenant_id = $1 AND user_id = $2 AND subject_id || '' = $3 AND bit = $4";
/// See `queries/insert_reminder_timers.sql`.
const INSERT_REMINDER_TIMERS: &str = include_str!("queries/insert_reminder_timers.sql");
// `subject_id || ''` keeps the subject index out, as in `cancel_bits.sql`.
const UNCLAIM_BITS: &str = "DELETE FROM reminder_timers AS r \
    USING unnest($1::int4[], $2::text[], $3::text[], $4::int2[]) AS x(t, u, s, b) \
    WHERE r.tenant_id = x.t AND r.user_id = x.u AND r.subject_id || '' = x.s \
      AND r.bit = x.b";
// Pairs distinct and sorted. ORs the new bits into the latest committed row.
const SET_BITS: &str = "INSERT INTO reminders AS r \
        (tenant_id, user_id, subject_id, bits, created_at, updated_at) \
    SELECT t, u, s, b, at, at \
    FROM unnest($1::int4[], $2::text[], $3::text[], $4::int8[], $5::int8[]) AS x(t, u, s, b, at) \
    ON CONFLICT (tenant_id, user_id, subject_id) DO UPDATE \
    SET bits = r.bits | EXCLUDED.bits, updated_at = EXCLUDED.updated_at";

// ---- Reads ----

const SUBJECTS_BY_IDS: &str = concat!(
    "SELECT ",
    subject_cols!(),
    " FROM subjects WHERE tenant_id = $1 AND subject_id = ANY($2::text[])"
);
pub(super) const USER_REMINDERS: &str = concat!(
    "SELECT ",
    reminder_timer_cols!(),
    " FROM reminder_timers AS r JOIN timers AS t ON t.id = r.timer_id \
     WHERE r.tenant_id = $1 AND r.user_id = $2 ORDER BY r.subject_id, r.bit LIMIT $3"
);
// All probes in one statement, with the access path pinned: for each probe,
// the user's links (a range of the `reminder_timers` primary key), then each
// linked timer by primary key, then the filters. Each `OFFSET 0` keeps the
// planner from flattening its subquery (and from pushing the filters into it),
// so it cannot pick another order. Left free, it hashes the probes against
// whole-table scans when they cover much of what its statistics say the table
// holds, or (statistics not yet gathered after a bulk subscribe) walks the
// pending-due index over every timer in the range and probes the user for each:
// measured at 8 s for 512 probes over 10,000 reminders, against 3 ms pinned.
// Statistics lag furthest behind during the very burst these probes serve.
pub(super) const PENDING_REMINDERS: &str = concat!(
    "SELECT ",
    timer_cols!("t"),
    " FROM unnest($1::int4[], $2::text[], $3::text[], $4::int8[], $5::int8[]) \
          AS p(tenant_id, user_id, channel, from_at, until_at) \
     CROSS JOIN LATERAL ( \
        SELECT timer_id FROM reminder_timers \
        WHERE tenant_id = p.tenant_id AND user_id = p.user_id OFFSET 0 \
     ) AS r \
     CROSS JOIN LATERAL ( \
        SELECT ",
    timer_cols!(),
    " FROM timers WHERE id = r.timer_id OFFSET 0 \
     ) AS t \
     WHERE t.state = 0 AND t.kind = 'reminder' AND t.channel = p.channel \
       AND t.due_at >= p.from_at AND t.due_at <= p.until_at"
);

/// A subject created and deleted by others this many times in a row while we
/// try to put it is given up on (it takes a pathological race to get there).
const PUT_ATTEMPTS: usize = 4;

/// Bits to the `SMALLINT`s of `reminder_timers.bit` (bit < 64 always fits).
fn bit_list(bits: u64) -> Vec<i16> {
    (0..64i16).filter(|b| bits & (1u64 << b) != 0).collect()
}

pub(super) async fn put_subject(tx: &Tx<'_>, put: &PutSubject) -> Result<WriteResult> {
    let tenant = tenant_to_pg(put.tenant)?;
    let lock = tx
        .prepare_cached(LOCK_SUBJECT)
        .await
        .ctx("preparing subject lock")?;
    for _ in 0..PUT_ATTEMPTS {
        if let Some(row) = tx
            .query_opt(&lock, &[&tenant, &put.subject_id])
            .await
            .ctx("locking subject")?
        {
            return update_subject(tx, tenant, put, model::decode(&row)?).await;
        }
        let created = tx
            .execute(
                CREATE_SUBJECT,
                &[
                    &tenant,
                    &put.subject_id,
                    &put.start_at,
                    &put.title,
                    &put.data,
                    &put.at,
                    &put.timing.early_window_ms,
                    &put.timing.send_late,
                    &put.templates,
                ],
            )
            .await
            .ctx("inserting subject")?;
        if created == 1 {
            return Ok(WriteResult::SubjectPut {
                subject: put.record(put.at),
                created: true,
                moved: Vec::new(),
            });
        }
        // Another transaction created it since our read (the insert waited for
        // it to commit): lock and update it on the next round.
    }
    Err(StoreError::unavailable(format!(
        "postgres: subject {:?} kept being created and deleted by others; gave up",
        put.subject_id
    )))
}

/// Updates a subject locked `FOR UPDATE`, then (a new statement, so it sees
/// every reminder committed before the lock was granted) moves its pending
/// timers by the change of start time.
async fn update_subject(
    tx: &Tx<'_>,
    tenant: i32,
    put: &PutSubject,
    old: SubjectRecord,
) -> Result<WriteResult> {
    let stmt = tx
        .prepare_cached(sql::UPDATE_SUBJECT.pg)
        .await
        .ctx("preparing subject update")?;
    tx.execute(
        &stmt,
        &[
            &tenant,
            &put.subject_id,
            &put.start_at,
            &put.title,
            &put.data,
            &put.at,
            &put.timing.early_window_ms,
            &put.timing.send_late,
            &put.templates,
        ],
    )
    .await
    .ctx("updating subject")?;
    let delta = put.start_at.saturating_sub(old.start_at);
    let mut moved = Vec::new();
    if delta != 0 {
        let stmt = tx
            .prepare_cached(MOVE_SUBJECT_TIMERS)
            .await
            .ctx("preparing timer move")?;
        for row in tx
            .query(&stmt, &[&tenant, &put.subject_id, &delta, &put.at])
            .await
            .ctx("moving the subject's timers")?
        {
            moved.push(model::decode(&row)?);
        }
        moved.sort_unstable_by_key(DueEntry::cursor);
    }
    Ok(WriteResult::SubjectPut {
        subject: put.record(old.created_at),
        created: false,
        moved,
    })
}

pub(super) async fn delete_subject(
    tx: &Tx<'_>,
    tenant: TenantId,
    subject_id: &str,
    at: i64,
) -> Result<WriteResult> {
    let tenant = tenant_to_pg(tenant)?;
    let stmt = tx
        .prepare_cached(DELETE_SUBJECT)
        .await
        .ctx("preparing subject delete")?;
    let Some(row) = tx
        .query_opt(&stmt, &[&tenant, &subject_id])
        .await
        .ctx("deleting subject")?
    else {
        return Ok(WriteResult::NotFound);
    };
    let subject = model::decode(&row)?;
    let stmt = tx
        .prepare_cached(DROP_SUBJECT_REMINDERS)
        .await
        .ctx("preparing subject reminders delete")?;
    let mut cancelled = tx
        .query(&stmt, &[&tenant, &subject_id, &at])
        .await
        .ctx("dropping the subject's reminders")?
        .iter()
        .map(|r| r.int(0, "timers.id"))
        .collect::<Result<Vec<_>>>()?;
    cancelled.sort_unstable();
    Ok(WriteResult::SubjectDeleted { subject, cancelled })
}

pub(super) async fn cancel_reminders(
    tx: &Tx<'_>,
    tenant: TenantId,
    user_id: &str,
    subject_id: &str,
    mask: u64,
    at: i64,
) -> Result<WriteResult> {
    let tenant = tenant_to_pg(tenant)?;
    let stmt = tx
        .prepare_cached(LOCK_BITS)
        .await
        .ctx("preparing reminder lock")?;
    let Some(row) = tx
        .query_opt(&stmt, &[&tenant, &user_id, &subject_id])
        .await
        .ctx("locking reminder")?
    else {
        return Ok(WriteResult::NotFound);
    };
    let bits = bits_from_db(row.int(0, "reminders.bits")?);
    let cleared = bits & mask;
    let remaining = bits & !mask;
    let mut cancelled = Vec::new();
    if cleared != 0 {
        let stmt = tx
            .prepare_cached(CANCEL_BITS)
            .await
            .ctx("preparing reminder cancel")?;
        for row in tx
            .query(
                &stmt,
                &[&tenant, &user_id, &subject_id, &bit_list(cleared), &at],
            )
            .await
            .ctx("cancelling reminder timers")?
        {
            cancelled.push(row.int(0, "timers.id")?);
        }
        cancelled.sort_unstable();
        if remaining == 0 {
            let stmt = tx
                .prepare_cached(sql::DELETE_REMINDER.pg)
                .await
                .ctx("preparing reminder delete")?;
            tx.execute(&stmt, &[&tenant, &user_id, &subject_id])
                .await
                .ctx("deleting reminder")?;
        } else {
            let stmt = tx
                .prepare_cached(sql::STORE_BITS.pg)
                .await
                .ctx("preparing reminder update")?;
            tx.execute(
                &stmt,
                &[&tenant, &user_id, &subject_id, &bits_to_db(remaining), &at],
            )
            .await
            .ctx("storing reminder bits")?;
        }
    }
    Ok(WriteResult::RemindersCancelled {
        cleared,
        remaining,
        cancelled,
    })
}

/// One bit of one subscription, in the primary key's order.
type BitKey<'a> = (TenantId, &'a str, &'a str, u8);
/// One subscription.
type PairKey<'a> = (TenantId, &'a str, &'a str);

fn bit_key(r: &NewReminder) -> BitKey<'_> {
    (r.tenant(), r.user_id.as_str(), r.subject_id.as_str(), r.bit)
}

fn pair_key(r: &NewReminder) -> PairKey<'_> {
    (r.tenant(), r.user_id.as_str(), r.subject_id.as_str())
}

/// The tenants of `keys`, as bound.
fn pg_tenants<'a>(keys: impl Iterator<Item = &'a TenantId>) -> Result<Vec<i32>> {
    keys.map(|t| tenant_to_pg(*t)).collect()
}

/// Splits consecutive `AddReminder` ops into segments in which no bit and no
/// idempotency key repeats. Each segment is applied whole before the next, so
/// a repeat sees what the earlier op did, as if the ops ran one by one.
fn segments<'a>(reminders: &[&'a NewReminder]) -> Vec<Vec<&'a NewReminder>> {
    let mut out: Vec<Vec<&'a NewReminder>> = Vec::new();
    let mut bits: HashSet<BitKey<'a>> = HashSet::new();
    let mut keys: HashSet<(TenantId, &'a str)> = HashSet::new();
    for &r in reminders {
        let key = r.timer.idempotency_key.as_deref().map(|k| (r.tenant(), k));
        let repeat = bits.contains(&bit_key(r)) || key.is_some_and(|k| keys.contains(&k));
        if repeat || out.is_empty() {
            out.push(Vec::new());
            bits.clear();
            keys.clear();
        }
        bits.insert(bit_key(r));
        if let Some(k) = key {
            keys.insert(k);
        }
        if let Some(seg) = out.last_mut() {
            seg.push(r);
        }
    }
    out
}

/// Applies consecutive `AddReminder` ops: one result each, in order; new timers
/// due by `horizon` are added to `announce`.
pub(super) async fn add_reminders(
    tx: &Tx<'_>,
    reminders: &[&NewReminder],
    horizon: i64,
    results: &mut Vec<WriteResult>,
    announce: &mut Vec<DueEntry>,
) -> Result<()> {
    for seg in segments(reminders) {
        add_segment(tx, &seg, horizon, results, announce).await?;
    }
    Ok(())
}

/// Where one op of a segment stands.
enum Step {
    /// Decided: this is its result.
    Done(WriteResult),
    /// The bit is set (before the segment, or by a concurrent transaction):
    /// `ReminderExists` with the subscription as this op sees it.
    Exists,
    /// Passed the checks; to be claimed, firing at `fire_at`.
    Try { fire_at: i64 },
    /// Claimed: its timer was created.
    Won(TimerRecord),
}

/// Reads the bitmaps of `pairs` (sorted) into `into`, by pair index.
async fn read_bits(tx: &Tx<'_>, pairs: &[PairKey<'_>], into: &mut [u64]) -> Result<()> {
    if pairs.is_empty() {
        return Ok(());
    }
    let tenants = pg_tenants(pairs.iter().map(|p| &p.0))?;
    let users: Vec<&str> = pairs.iter().map(|p| p.1).collect();
    let subjects: Vec<&str> = pairs.iter().map(|p| p.2).collect();
    let stmt = tx
        .prepare_cached(BITS_OF_PAIRS)
        .await
        .ctx("preparing reminder reads")?;
    for row in tx
        .query(&stmt, &[&tenants, &users, &subjects])
        .await
        .ctx("reading reminder bits")?
    {
        let tenant = TenantId(row.narrow(0, "reminders.tenant_id")?);
        let user = row.str(1, "reminders.user_id")?;
        let subject = row.str(2, "reminders.subject_id")?;
        let bits = bits_from_db(row.int(3, "reminders.bits")?);
        if let Ok(i) = pairs.binary_search(&(tenant, user, subject))
            && let Some(slot) = into.get_mut(i)
        {
            *slot = bits;
        }
    }
    Ok(())
}

/// What a segment's ops found before claiming anything: the subjects' start
/// times (held still until commit) and the subscriptions as they were.
struct Seen<'a> {
    /// Each op's bit as a mask, in op order.
    masks: Vec<u64>,
    /// The start time of each subject that exists, by tenant.
    starts: HashMap<TenantId, HashMap<String, i64>>,
    /// The subscriptions of the ops whose subject exists, sorted, each once.
    pairs: Vec<PairKey<'a>>,
    /// Each subscription's bits before the segment (by index in `pairs`);
    /// after step 6, without this segment's own bits.
    before: Vec<u64>,
}

impl<'a> Seen<'a> {
    /// Reads the start times of `seg`'s subjects (locking them `FOR SHARE`)
    /// and the bitmaps of its subscriptions (steps 1 and 2).
    async fn read(tx: &Tx<'_>, seg: &[&'a NewReminder]) -> Result<Seen<'a>> {
        let masks = seg
            .iter()
            .map(|r| bit_mask(r.bit))
            .collect::<Result<Vec<u64>>>()?;
        let starts = share_subjects(tx, seg).await?;
        let mut seen = Seen {
            masks,
            starts,
            pairs: Vec::new(),
            before: Vec::new(),
        };
        let mut pairs: Vec<PairKey<'a>> = seg
            .iter()
            .filter(|r| seen.start_of(r).is_some())
            .map(|r| pair_key(r))
            .collect();
        pairs.sort_unstable();
        pairs.dedup();
        seen.before = vec![0u64; pairs.len()];
        read_bits(tx, &pairs, &mut seen.before).await?;
        seen.pairs = pairs;
        Ok(seen)
    }

    /// The start time of `r`'s subject; `None` when it does not exist.
    fn start_of(&self, r: &NewReminder) -> Option<i64> {
        self.starts
            .get(&r.tenant())
            .and_then(|s| s.get(r.subject_id.as_str()))
            .copied()
    }

    /// The index in `pairs` of `r`'s subscription.
    fn pair_index(&self, r: &NewReminder) -> Result<usize> {
        self.pairs
            .binary_search(&pair_key(r))
            .map_err(|_| StoreError::Internal("postgres: lost a reminder's subscription".into()))
    }
}

/// Step 1: the start times of the segment's subjects, read `FOR SHARE` so
/// they hold still until commit.
async fn share_subjects(
    tx: &Tx<'_>,
    seg: &[&NewReminder],
) -> Result<HashMap<TenantId, HashMap<String, i64>>> {
    let mut tenants: Vec<TenantId> = seg.iter().map(|r| r.tenant()).collect();
    tenants.sort_unstable();
    tenants.dedup();
    let tenants = pg_tenants(tenants.iter())?;
    let mut subject_ids: Vec<&str> = seg.iter().map(|r| r.subject_id.as_str()).collect();
    subject_ids.sort_unstable();
    subject_ids.dedup();
    let stmt = tx
        .prepare_cached(SHARE_SUBJECTS)
        .await
        .ctx("preparing subject reads")?;
    let mut starts: HashMap<TenantId, HashMap<String, i64>> = HashMap::new();
    for row in tx
        .query(&stmt, &[&tenants, &subject_ids])
        .await
        .ctx("reading subjects")?
    {
        starts
            .entry(TenantId(row.narrow(0, "subjects.tenant_id")?))
            .or_default()
            .insert(
                row.str(1, "subjects.subject_id")?.to_owned(),
                row.int(2, "subjects.start_at")?,
            );
    }
    Ok(starts)
}

/// Step 2: each op's first step, from one bit test against the
/// subscriptions as they were.
fn first_steps(seg: &[&NewReminder], seen: &Seen<'_>) -> Result<Vec<Step>> {
    let mut steps = Vec::with_capacity(seg.len());
    for (r, &mask) in seg.iter().zip(&seen.masks) {
        let step = match seen.start_of(r) {
            None => Step::Done(WriteResult::SubjectNotFound),
            Some(start) => {
                if seen.before[seen.pair_index(r)?] & mask != 0 {
                    Step::Exists
                } else {
                    let fire_at = start.saturating_sub(r.lead_ms);
                    if fire_at <= r.not_before {
                        Step::Done(WriteResult::TooLate {
                            fire_at,
                            start_at: start,
                        })
                    } else {
                        Step::Try { fire_at }
                    }
                }
            }
        };
        steps.push(step);
    }
    Ok(steps)
}

/// Step 3: claims the bits of the ops that passed their checks, in key order
/// (the lock order), drawing a timer id for each. Answers the ops to try, in
/// that order, and the timer id of each op whose link this transaction
/// inserted (by op index; `None`: not tried, or set by someone else).
async fn claim_bits(
    tx: &Tx<'_>,
    seg: &[&NewReminder],
    steps: &[Step],
) -> Result<(Vec<usize>, Vec<Option<i64>>)> {
    let mut tries: Vec<usize> = (0..seg.len())
        .filter(|&i| matches!(steps[i], Step::Try { .. }))
        .collect();
    tries.sort_unstable_by_key(|&i| bit_key(seg[i]));
    let mut claimed: Vec<Option<i64>> = vec![None; seg.len()];
    if tries.is_empty() {
        return Ok((tries, claimed));
    }
    let tenants = pg_tenants(tries.iter().map(|&i| &seg[i].timer.tenant))?;
    let users: Vec<&str> = tries.iter().map(|&i| seg[i].user_id.as_str()).collect();
    let subjects: Vec<&str> = tries.iter().map(|&i| seg[i].subject_id.as_str()).collect();
    let bits: Vec<i16> = tries.iter().map(|&i| i16::from(seg[i].bit)).collect();
    let stmt = tx
        .prepare_cached(CLAIM_BITS)
        .await
        .ctx("preparing reminder claim")?;
    for row in tx
        .query(&stmt, &[&tenants, &users, &subjects, &bits])
        .await
        .ctx("claiming reminder bits")?
    {
        let timer_id = row.int(4, "reminder_timers.timer_id")?;
        let key: BitKey<'_> = (
            TenantId(row.narrow(0, "reminder_timers.tenant_id")?),
            row.str(1, "reminder_timers.user_id")?,
            row.str(2, "reminder_timers.subject_id")?,
            row.narrow(3, "reminder_timers.bit")?,
        );
        let i = tries
            .binary_search_by(|&i| bit_key(seg[i]).cmp(&key))
            .map_err(|_| StoreError::Internal("postgres: claimed an unknown bit".into()))?;
        if let Some(&op) = tries.get(i) {
            claimed[op] = Some(timer_id);
        }
    }
    Ok((tries, claimed))
}

/// What step 4 made of the tried ops.
struct Created {
    /// The ops whose timer was created, in op order, with it.
    won: Vec<(usize, TimerRecord)>,
    /// The ops whose bit a transaction that committed after our bit test set.
    raced: Vec<usize>,
}

/// Step 4: creates the timers of the claimed bits. A raced op becomes
/// `Exists`; a keyed timer whose key is taken becomes `Existing`, its bit
/// given back (nothing of that op is written).
async fn create_timers(
    tx: &Tx<'_>,
    seg: &[&NewReminder],
    tries: &[usize],
    claimed: &[Option<i64>],
    steps: &mut [Step],
) -> Result<Created> {
    let mut raced: Vec<usize> = Vec::new();
    let mut won: Vec<(usize, TimerRecord)> = Vec::new();
    for &i in tries {
        let Step::Try { fire_at } = steps[i] else {
            continue;
        };
        match claimed[i] {
            None => raced.push(i),
            Some(id) => {
                let mut timer = seg[i].timer.clone();
                timer.due_at = fire_at;
                won.push((i, timer.into_record(id)));
            }
        }
    }
    for &i in &raced {
        steps[i] = Step::Exists;
    }
    won.sort_unstable_by_key(|(i, _)| *i);
    if !won.is_empty() {
        let keyed_inserted = insert_timers(tx, &won).await?;
        let (taken, kept): (Vec<_>, Vec<_>) = won
            .into_iter()
            .partition(|(_, t)| t.idempotency_key.is_some() && !keyed_inserted.contains(&t.id));
        won = kept;
        if !taken.is_empty() {
            give_back(tx, seg, &taken, steps).await?;
        }
    }
    Ok(Created { won, raced })
}

/// Step 5: ORs the won bits into their subscriptions, one row each. Answers
/// the bits set, by index in `seen.pairs`.
async fn set_bits(
    tx: &Tx<'_>,
    seg: &[&NewReminder],
    seen: &Seen<'_>,
    won: &[(usize, TimerRecord)],
) -> Result<Vec<u64>> {
    let pairs = &seen.pairs;
    let mut won_bits = vec![0u64; pairs.len()];
    let mut won_at = vec![0i64; pairs.len()];
    for (i, t) in won {
        let p = seen.pair_index(seg[*i])?;
        won_bits[p] |= seen.masks[*i];
        won_at[p] = won_at[p].max(t.created_at);
    }
    let set: Vec<usize> = (0..pairs.len()).filter(|&p| won_bits[p] != 0).collect();
    if set.is_empty() {
        return Ok(won_bits);
    }
    let tenants = pg_tenants(set.iter().map(|&p| &pairs[p].0))?;
    let users: Vec<&str> = set.iter().map(|&p| pairs[p].1).collect();
    let subjects: Vec<&str> = set.iter().map(|&p| pairs[p].2).collect();
    let bits: Vec<i64> = set.iter().map(|&p| bits_to_db(won_bits[p])).collect();
    let ats: Vec<i64> = set.iter().map(|&p| won_at[p]).collect();
    let stmt = tx
        .prepare_cached(SET_BITS)
        .await
        .ctx("preparing reminder upsert")?;
    let params: [Param<'_>; 5] = [&tenants, &users, &subjects, &bits, &ats];
    tx.execute(&stmt, &params)
        .await
        .ctx("setting reminder bits")?;
    Ok(won_bits)
}

/// Step 6: where another transaction set a bit meanwhile, reads the
/// subscription again (after our own update: our bits taken back out).
async fn reread_raced(
    tx: &Tx<'_>,
    seg: &[&NewReminder],
    raced: &[usize],
    won_bits: &[u64],
    seen: &mut Seen<'_>,
) -> Result<()> {
    if raced.is_empty() {
        return Ok(());
    }
    let mut again: Vec<PairKey<'_>> = raced.iter().map(|&i| pair_key(seg[i])).collect();
    again.sort_unstable();
    again.dedup();
    let mut fresh = vec![0u64; again.len()];
    read_bits(tx, &again, &mut fresh).await?;
    for (p, bits) in again.iter().zip(fresh) {
        if let Ok(i) = seen.pairs.binary_search(p) {
            seen.before[i] = bits & !won_bits[i];
        }
    }
    Ok(())
}

/// Step 7: a set bit whose timer fired (or was cancelled) is spent: the user
/// may subscribe to it again, say after the subject moved later. Rare, so
/// one by one.
async fn renew_spent(
    tx: &Tx<'_>,
    seg: &[&NewReminder],
    seen: &Seen<'_>,
    steps: &mut [Step],
) -> Result<()> {
    for (i, r) in seg.iter().enumerate() {
        if matches!(steps[i], Step::Exists)
            && let Some(start) = seen.start_of(r)
            && let Some(step) = renew(tx, r, start).await?
        {
            steps[i] = step;
        }
    }
    Ok(())
}

/// Step 8: the results in op order, each seeing the bits the ops before it
/// set; the new timers due by `horizon` go to `announce`.
fn segment_results(
    seg: &[&NewReminder],
    seen: &Seen<'_>,
    steps: Vec<Step>,
    horizon: i64,
    announce: &mut Vec<DueEntry>,
) -> Result<Vec<WriteResult>> {
    let mut running = seen.before.clone();
    let mut results = Vec::with_capacity(seg.len());
    for ((r, step), mask) in seg.iter().zip(steps).zip(&seen.masks) {
        let result = match step {
            Step::Done(result) => result,
            Step::Won(t) => {
                running[seen.pair_index(r)?] |= mask;
                if t.due_at <= horizon {
                    announce.push(t.due_entry());
                }
                WriteResult::Created(t)
            }
            Step::Exists => WriteResult::ReminderExists {
                bits: running[seen.pair_index(r)?],
            },
            Step::Try { .. } => {
                return Err(StoreError::Internal(
                    "postgres: a reminder was left undecided".into(),
                ));
            }
        };
        results.push(result);
    }
    Ok(results)
}

/// Applies one segment (no bit or key repeats in it): the steps above, in
/// order.
async fn add_segment(
    tx: &Tx<'_>,
    seg: &[&NewReminder],
    horizon: i64,
    results: &mut Vec<WriteResult>,
    announce: &mut Vec<DueEntry>,
) -> Result<()> {
    let mut seen = Seen::read(tx, seg).await?;
    let mut steps = first_steps(seg, &seen)?;
    let (tries, claimed) = claim_bits(tx, seg, &steps).await?;
    let Created { won, raced } = create_timers(tx, seg, &tries, &claimed, &mut steps).await?;
    let won_bits = set_bits(tx, seg, &seen, &won).await?;
    reread_raced(tx, seg, &raced, &won_bits, &mut seen).await?;
    for (i, t) in won {
        steps[i] = Step::Won(t);
    }
    renew_spent(tx, seg, &seen, &mut steps).await?;
    results.extend(segment_results(seg, &seen, steps, horizon, announce)?);
    Ok(())
}

/// Subscribes `r` again to its spent bit: a new timer, and the bit's link
/// moved to it. `None` when the bit's timer is still pending (the reminder
/// exists), or another writer renewed it first, or its key is taken.
async fn renew(tx: &Tx<'_>, r: &NewReminder, start: i64) -> Result<Option<Step>> {
    let tenant = tenant_to_pg(r.tenant())?;
    let bit = i16::from(r.bit);
    let stmt = tx
        .prepare_cached(SPENT_BIT)
        .await
        .ctx("preparing spent bit read")?;
    let Some(row) = tx
        .query_opt(&stmt, &[&tenant, &r.user_id, &r.subject_id, &bit])
        .await
        .ctx("reading spent bit")?
    else {
        return Ok(None);
    };
    if row.int(0, "timers.state")? == TimerState::Pending.code() {
        return Ok(None);
    }
    let fire_at = start.saturating_sub(r.lead_ms);
    if fire_at <= r.not_before {
        return Ok(Some(Step::Done(WriteResult::TooLate {
            fire_at,
            start_at: start,
        })));
    }
    let stmt = tx
        .prepare_cached(DRAW_TIMER_ID)
        .await
        .ctx("preparing timer id draw")?;
    let id = tx
        .query_one(&stmt, &[])
        .await
        .ctx("drawing a timer id")?
        .int(0, "nextval")?;
    let mut timer = r.timer.clone();
    timer.due_at = fire_at;
    let record = timer.into_record(id);
    let keyed_inserted = insert_timers(tx, &[(0, record.clone())]).await?;
    if record.idempotency_key.is_some() && !keyed_inserted.contains(&id) {
        return Ok(None);
    }
    let stmt = tx
        .prepare_cached(RELINK_BIT)
        .await
        .ctx("preparing reminder relink")?;
    tx.execute(&stmt, &[&tenant, &r.user_id, &r.subject_id, &bit, &id])
        .await
        .ctx("relinking reminder timer")?;
    Ok(Some(Step::Won(record)))
}

/// Inserts the timers of claimed bits; answers the ids of the keyed ones
/// actually inserted (a keyed one whose key is taken is skipped).
async fn insert_timers(tx: &Tx<'_>, won: &[(usize, TimerRecord)]) -> Result<HashSet<i64>> {
    let id: Vec<i64> = won.iter().map(|(_, t)| t.id).collect();
    let shard: Vec<i32> = won.iter().map(|(_, t)| i32::from(t.shard)).collect();
    let due_at: Vec<i64> = won.iter().map(|(_, t)| t.due_at).collect();
    let priority: Vec<i16> = won.iter().map(|(_, t)| i16::from(t.priority)).collect();
    let kind: Vec<&str> = won.iter().map(|(_, t)| t.kind.as_str()).collect();
    let channel: Vec<&str> = won.iter().map(|(_, t)| t.channel.as_str()).collect();
    let recipient: Vec<&str> = won.iter().map(|(_, t)| t.recipient.as_str()).collect();
    let message: Vec<&str> = won.iter().map(|(_, t)| t.message.as_str()).collect();
    let key: Vec<Option<&str>> = won
        .iter()
        .map(|(_, t)| t.idempotency_key.as_deref())
        .collect();
    let created_at: Vec<i64> = won.iter().map(|(_, t)| t.created_at).collect();
    let tenant = pg_tenants(won.iter().map(|(_, t)| &t.tenant))?;
    let routing: Vec<Option<&str>> = won.iter().map(|(_, t)| t.routing.as_deref()).collect();
    let params: [Param<'_>; 12] = [
        &id,
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
        &routing,
    ];
    let stmt = tx
        .prepare_cached(INSERT_REMINDER_TIMERS)
        .await
        .ctx("preparing reminder timer insert")?;
    let row = tx
        .query_one(&stmt, &params)
        .await
        .ctx("inserting reminder timers")?;
    Ok(col::<Option<Vec<i64>>>(&row, 0, "inserted ids")?
        .unwrap_or_default()
        .into_iter()
        .collect())
}

/// Unlinks the bits whose timers were not inserted because their idempotency
/// key is taken, and makes those ops `Existing` with the key's timer.
async fn give_back(
    tx: &Tx<'_>,
    seg: &[&NewReminder],
    taken: &[(usize, TimerRecord)],
    steps: &mut [Step],
) -> Result<()> {
    let tenants = pg_tenants(taken.iter().map(|(_, t)| &t.tenant))?;
    let users: Vec<&str> = taken
        .iter()
        .map(|(i, _)| seg[*i].user_id.as_str())
        .collect();
    let subjects: Vec<&str> = taken
        .iter()
        .map(|(i, _)| seg[*i].subject_id.as_str())
        .collect();
    let bits: Vec<i16> = taken.iter().map(|(i, _)| i16::from(seg[*i].bit)).collect();
    let stmt = tx
        .prepare_cached(UNCLAIM_BITS)
        .await
        .ctx("preparing reminder unclaim")?;
    tx.execute(&stmt, &[&tenants, &users, &subjects, &bits])
        .await
        .ctx("giving back reminder bits")?;
    let keys: Vec<(TenantId, &str)> = taken
        .iter()
        .filter_map(|(_, t)| t.idempotency_key.as_deref().map(|k| (t.tenant, k)))
        .collect();
    let existing = keyed_timers(tx, &keys).await?;
    for (i, t) in taken {
        let found = t
            .idempotency_key
            .as_deref()
            .and_then(|k| existing.get(&(t.tenant, k.to_string())))
            .cloned()
            .ok_or_else(|| {
                StoreError::Internal(
                    "postgres: reminder timer insert was skipped but no timer has its key".into(),
                )
            })?;
        steps[*i] = Step::Done(WriteResult::Existing(found));
    }
    Ok(())
}

pub(super) async fn get_subjects(
    store: &PgStore,
    tenant: TenantId,
    ids: &[String],
) -> Result<Vec<SubjectRecord>> {
    let tenant = tenant_to_pg(tenant)?;
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(SUBJECTS_BY_IDS)
        .await
        .ctx("preparing get_subjects")?;
    client
        .query(&stmt, &[&tenant, &ids])
        .await
        .ctx("reading subjects")?
        .iter()
        .map(model::decode)
        .collect()
}

pub(super) async fn user_reminders(
    store: &PgStore,
    tenant: TenantId,
    user_id: &str,
    limit: usize,
) -> Result<Vec<ReminderTimer>> {
    let tenant = tenant_to_pg(tenant)?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(USER_REMINDERS)
        .await
        .ctx("preparing user_reminders")?;
    let mut out = Vec::new();
    for row in client
        .query(&stmt, &[&tenant, &user_id, &limit])
        .await
        .ctx("reading user_reminders")?
    {
        out.push(model::decode(&row)?);
    }
    Ok(out)
}

// Batches: the subjects about to start (`subjects_start`), each one's links
// through its subject index (which includes the bit), each linked timer by
// primary key: the `LATERAL ... OFFSET 0` pins that nested loop, which the
// planner would otherwise trade for a hash against a scan of every timer
// once a hot subject's links are a percent of them (as in `PENDING_REMINDERS`).
const BATCH_COLS: &str = "s.tenant_id, s.subject_id, s.start_at, s.early_window_ms, r.bit, \
    t.channel, t.due_at, count(*)";
const BATCH_JOIN: &str = " JOIN reminder_timers AS r \
        ON r.tenant_id = s.tenant_id AND r.subject_id = s.subject_id \
    CROSS JOIN LATERAL ( \
        SELECT channel, due_at FROM timers \
        WHERE id = r.timer_id AND state = 0 AND kind = 'reminder' OFFSET 0 \
    ) AS t";
const BATCH_GROUP: &str = " GROUP BY s.tenant_id, s.subject_id, s.start_at, s.early_window_ms, \
    r.bit, t.channel, t.due_at ORDER BY s.tenant_id, s.subject_id, r.bit, t.channel, t.due_at";
// $1 starts from, $2 starts until, $3 due from, $4 due until.
const BATCHES_DUE_WHERE: &str =
    " WHERE s.start_at >= $1 AND s.start_at < $2 AND t.due_at >= $3 AND t.due_at < $4";
// $1 tenant, $2 subject.
const BATCHES_OF_SUBJECT_WHERE: &str = " WHERE s.tenant_id = $1 AND s.subject_id = $2";
// $1 tenant, $2 subject, $3 bit, $4 due at, $5 after this timer id, $6 limit.
const BATCH_DUE: &str = concat!(
    "SELECT ",
    due_cols!("t"),
    " FROM reminder_timers AS r CROSS JOIN LATERAL ( \
        SELECT * FROM timers WHERE id = r.timer_id AND state = 0 AND due_at = $4 OFFSET 0 \
     ) AS t \
     WHERE r.tenant_id = $1 AND r.subject_id = $2 AND r.timer_id > $5 AND r.bit = $3 \
     ORDER BY r.timer_id LIMIT $6"
);

pub(super) async fn reminder_batches(
    store: &PgStore,
    scope: &crate::BatchScope,
) -> Result<Vec<crate::ReminderBatch>> {
    let client = store.client().await?;
    let rows = match scope {
        crate::BatchScope::Due {
            starts_from,
            starts_until,
            due_from,
            due_until,
        } => {
            let text = format!(
                "SELECT {BATCH_COLS} FROM subjects AS s{BATCH_JOIN}{BATCHES_DUE_WHERE}{BATCH_GROUP}"
            );
            let stmt = client
                .prepare_cached(&text)
                .await
                .ctx("preparing reminder batches")?;
            client
                .query(&stmt, &[starts_from, starts_until, due_from, due_until])
                .await
                .ctx("counting reminder batches")?
        }
        crate::BatchScope::Subject { tenant, subject_id } => {
            let tenant = tenant_to_pg(*tenant)?;
            let text = format!(
                "SELECT {BATCH_COLS} FROM subjects AS s{BATCH_JOIN}{BATCHES_OF_SUBJECT_WHERE}{BATCH_GROUP}"
            );
            let stmt = client
                .prepare_cached(&text)
                .await
                .ctx("preparing reminder batches")?;
            client
                .query(&stmt, &[&tenant, subject_id])
                .await
                .ctx("counting reminder batches")?
        }
    };
    rows.iter().map(model::decode).collect()
}

pub(super) async fn batch_due(
    store: &PgStore,
    tenant: TenantId,
    subject_id: &str,
    bit: u8,
    due_at: i64,
    after: Option<i64>,
    limit: usize,
) -> Result<Vec<DueEntry>> {
    let tenant = tenant_to_pg(tenant)?;
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(BATCH_DUE)
        .await
        .ctx("preparing batch_due")?;
    let bit = i16::from(bit);
    let after = after.unwrap_or(i64::MIN);
    let limit = model::limit_to_db(limit);
    client
        .query(
            &stmt,
            &[&tenant, &subject_id, &bit, &due_at, &after, &limit],
        )
        .await
        .ctx("reading a batch's timers")?
        .iter()
        .map(model::decode)
        .collect()
}

pub(super) async fn pending_reminders(
    store: &PgStore,
    probes: &[MergeProbe],
) -> Result<Vec<TimerRecord>> {
    let tenants = pg_tenants(probes.iter().map(|p| &p.tenant))?;
    let users: Vec<&str> = probes.iter().map(|p| p.user_id.as_str()).collect();
    let channels: Vec<&str> = probes.iter().map(|p| p.channel.as_str()).collect();
    let froms: Vec<i64> = probes.iter().map(|p| p.from).collect();
    let untils: Vec<i64> = probes.iter().map(|p| p.until).collect();
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(PENDING_REMINDERS)
        .await
        .ctx("preparing pending_reminders")?;
    let params: [Param<'_>; 5] = [&tenants, &users, &channels, &froms, &untils];
    let rows = client
        .query(&stmt, &params)
        .await
        .ctx("reading pending_reminders")?;
    // Overlapping probes (one user's, twice) find the same timers: keep each once.
    let mut seen = HashSet::with_capacity(rows.len());
    let mut out = Vec::with_capacity(rows.len());
    for row in &rows {
        if seen.insert(row.int(0, "timers.id")?) {
            out.push(model::decode(row)?);
        }
    }
    out.sort_unstable_by_key(TimerRecord::cursor);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WriteOp;
    use crate::prelude::*;
    use crate::testsuite::fixtures::{reminder, subject};

    #[test]
    fn segments_split_at_repeated_bits_and_keys() {
        let a = reminder("u", "s", 5);
        let b = reminder("u", "s", 10);
        let c = reminder("v", "s", 5);
        let mut keyed = reminder("w", "s", 5);
        keyed.timer.idempotency_key = Some("k".into());
        let mut keyed_again = reminder("x", "s", 5);
        keyed_again.timer.idempotency_key = Some("k".into());
        let ops = [&a, &b, &c, &a, &keyed, &b, &keyed_again, &c];
        let shape: Vec<usize> = segments(&ops).iter().map(Vec::len).collect();
        assert_eq!(shape, vec![3, 3, 2]);
        assert!(segments(&[]).is_empty());
        assert_eq!(bit_list(0b1010_0001), vec![0, 5, 7]);
        assert_eq!(bit_list(1 << 63), vec![63]);
    }

    /// The reminder queries' plans on tables of realistic shape (many users,
    /// many subjects, plain timers beside), as custom and as generic plans.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn reminder_queries_use_their_indexes() {
        let Some(pg) = herald_pgtemp::PgTemp::shared().expect("cluster") else {
            return;
        };
        let db = pg.fresh_database("reminder_plans").expect("database");
        let store = PgStore::open(db.url(), &Default::default())
            .await
            .expect("open");
        const SUBJECTS: usize = 50;
        const USERS: usize = 800;
        let puts = (0..SUBJECTS)
            .map(|s| WriteOp::PutSubject(subject(&format!("s{s:02}"), 1_000_000_000)))
            .collect();
        store.apply(puts).await.expect("subjects");
        for s in 0..SUBJECTS {
            let ops = (0..USERS)
                .filter(|u| (u + s) % 2 == 0)
                .map(|u| {
                    WriteOp::AddReminder(reminder(
                        &format!("user-{u:04}"),
                        &format!("s{s:02}"),
                        5 * (1 + (u % 12) as i64),
                    ))
                })
                .chain(
                    (0..400)
                        .map(|i| WriteOp::InsertTimer(crate::testsuite::fixtures::timer(i as i64))),
                )
                .collect();
            store.apply(ops).await.expect("reminders");
        }
        let client = store.client().await.expect("client");
        let users: Vec<String> = (0..512).map(|u| format!("user-{u:04}")).collect();
        let tenants = vec![1i32; users.len()];
        let channels: Vec<&str> = vec!["app"; users.len()];
        let froms = vec![0i64; users.len()];
        let untils = vec![i64::MAX; users.len()];
        let (tenant, user, subject_id, limit, delta, at) =
            (1i32, "user-0007", "s07", 100i64, 60_000i64, 5i64);
        let pair_tenants = vec![1i32, 1];
        let pair_users = vec!["user-0001", "user-0002"];
        let pair_subjects = vec!["s01", "s02"];
        let bits = vec![1i16, 2];
        let one_bit = 1i16;
        let cases: Vec<(&str, Vec<Param<'_>>, &[&str])> = vec![
            (
                PENDING_REMINDERS,
                vec![&tenants, &users, &channels, &froms, &untils],
                &["reminder_timers_pkey", "timers_pkey"],
            ),
            (
                USER_REMINDERS,
                vec![&tenant, &user, &limit],
                &["reminder_timers_pkey", "timers_pkey"],
            ),
            (
                MOVE_SUBJECT_TIMERS,
                vec![&tenant, &subject_id, &delta, &at],
                &["reminder_timers_subject", "timers_pkey"],
            ),
            (
                DROP_SUBJECT_REMINDERS,
                vec![&tenant, &subject_id, &at],
                &["reminder_timers_subject", "reminders_pkey", "timers_pkey"],
            ),
            (
                CANCEL_BITS,
                vec![&tenant, &user, &subject_id, &bits, &at],
                &["reminder_timers_pkey", "timers_pkey"],
            ),
            (
                BITS_OF_PAIRS,
                vec![&pair_tenants, &pair_users, &pair_subjects],
                &["reminders_pkey"],
            ),
            (
                SPENT_BIT,
                vec![&tenant, &user, &subject_id, &one_bit],
                &["reminder_timers_pkey", "timers_pkey"],
            ),
            (
                RELINK_BIT,
                vec![&tenant, &user, &subject_id, &one_bit, &limit],
                &["reminder_timers_pkey"],
            ),
            (
                UNCLAIM_BITS,
                vec![&pair_tenants, &pair_users, &pair_subjects, &bits],
                &["reminder_timers_pkey"],
            ),
            (
                crate::subject_query::sql::COUNT.pg,
                vec![&tenant, &subject_id, &limit],
                &["reminder_timers_subject"],
            ),
            (
                crate::subject_query::sql::COUNT_BY_BIT.pg,
                vec![&tenant, &subject_id, &limit],
                &["reminder_timers_subject"],
            ),
        ];
        // Freshly loaded (no statistics yet, as right after a bulk subscribe),
        // then analyzed; each as custom and as generic plans.
        for (analyze, generic) in [(false, false), (false, true), (true, false), (true, true)] {
            if analyze {
                client.batch_execute("ANALYZE").await.expect("analyze");
            }
            let mode = crate::postgres::set_plan_mode(&client, generic).await;
            for (sql, params, indexes) in &cases {
                let rows = client
                    .query(&format!("EXPLAIN {sql}"), params)
                    .await
                    .expect("explain");
                let plan: Vec<String> = rows.iter().map(|r| r.get::<_, String>(0)).collect();
                let plan = plan.join("\n");
                let mode = format!("{mode}, analyzed: {analyze}");
                for index in *indexes {
                    assert!(plan.contains(index), "{mode}: {sql}\n{plan}");
                }
                // (Sorting one user's subscriptions for `user_reminders` is fine.)
                assert!(!plan.contains("Seq Scan"), "{mode}: {sql}\n{plan}");
                if *sql == PENDING_REMINDERS {
                    // Never driven from the due range: that is the 8-second plan.
                    assert!(
                        !plan.contains("timers_pending_due"),
                        "{mode}: {sql}\n{plan}"
                    );
                }
            }
        }
    }
}
