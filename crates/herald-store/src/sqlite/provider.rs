//! What providers tell us after the send, and what they lend us, on SQLite:
//! the final status of a message (callbacks, recall) on both send logs, and the
//! cluster-wide channel access tokens.
//!
//! Every write runs in one `IMMEDIATE` transaction on the writer.

use rusqlite::{Connection, TransactionBehavior, params};

use super::error::Ctx;
use crate::model;
use crate::provider::sql;
use crate::{ChannelPause, ChannelToken, DeliveryRecord, Result};

// ?1 channel, ?2 msgid, ?3 status, ?4 at. A repeat of the same status keeps the
// first time; a recalled row is the user's last word and stays so. The
// `provider_msgid IS NOT NULL` term lets the planner use the partial index.
pub(super) const FINAL_DELIVERIES: &str = "UPDATE deliveries \
    SET final_at = CASE WHEN final_status IS ?3 THEN final_at ELSE ?4 END, final_status = ?3 \
    WHERE channel = ?1 AND provider_msgid = ?2 AND provider_msgid IS NOT NULL \
      AND final_status IS NOT 'recalled' RETURNING id";
// The job's channel is checked per matching row through the jobs primary key.
pub(super) const FINAL_SENDS: &str = "UPDATE job_sends \
    SET final_at = CASE WHEN final_status IS ?3 THEN final_at ELSE ?4 END, final_status = ?3 \
    WHERE msgid = ?2 AND msgid IS NOT NULL AND final_status IS NOT 'recalled' \
      AND EXISTS (SELECT 1 FROM jobs WHERE jobs.id = job_sends.job_id AND jobs.channel = ?1) \
    RETURNING job_id, idx";
// ?1 id, ?2 at.
pub(super) const RECALL: &str = "UPDATE deliveries SET final_status = 'recalled', final_at = ?2 \
    WHERE id = ?1 AND outcome = 'delivered' AND provider_msgid IS NOT NULL \
      AND final_status IS NOT 'recalled'";

// $1 job, $2 limit. The job's rows by their primary key; delivered is code 0.
const JOB_MESSAGES: &str = "SELECT msgid, MIN(updated_at), COUNT(*), \
        SUM(CASE WHEN final_status = 'recalled' THEN 1 ELSE 0 END) \
    FROM job_sends WHERE job_id = ?1 AND state = 0 AND msgid IS NOT NULL \
    GROUP BY msgid ORDER BY MIN(updated_at), msgid LIMIT ?2";
// $1 job, $2 msgid, $3 at. Through the message-id index.
const RECALL_JOB_MESSAGE: &str = "UPDATE job_sends SET final_status = 'recalled', final_at = ?3 \
    WHERE msgid = ?2 AND msgid IS NOT NULL AND job_id = ?1 AND state = 0 \
      AND final_status IS NOT 'recalled'";

const JOB_RECEIPT_COUNT: &str = "INSERT INTO job_receipt_counts (job_id, event, n) \
    VALUES (?1, ?2, 1) ON CONFLICT (job_id, event) DO UPDATE SET n = n + 1";

const PUT_TOKEN: &str = "INSERT INTO channel_tokens (key, token, expires_at, fetched_at, updated_at) \
    VALUES (?1, ?2, ?3, ?4, ?5) \
    ON CONFLICT (key) DO UPDATE SET token = excluded.token, expires_at = excluded.expires_at, \
        fetched_at = excluded.fetched_at, updated_at = excluded.updated_at";
// ?1 key, ?2 token, ?3 now.
const EXPIRE_TOKEN: &str = "UPDATE channel_tokens \
    SET expires_at = MIN(expires_at, ?3), updated_at = ?3 WHERE key = ?1 AND token = ?2";

pub(super) fn get_delivery(conn: &mut Connection, id: i64) -> Result<Option<DeliveryRecord>> {
    let mut stmt = conn
        .prepare_cached(sql::DELIVERY_BY_ID.sqlite)
        .ctx("preparing get_delivery")?;
    let mut rows = stmt.query([id]).ctx("querying delivery")?;
    match rows.next().ctx("reading delivery")? {
        Some(row) => model::decode(row).map(Some),
        None => Ok(None),
    }
}

pub(super) fn read_at_step(conn: &mut Connection, timer_id: i64, step: u32) -> Result<bool> {
    let mut stmt = conn
        .prepare_cached(sql::READ_AT_STEP.sqlite)
        .ctx("preparing read_at_step")?;
    let n: i64 = stmt
        .query_row(rusqlite::params![timer_id, step], |r| r.get(0))
        .ctx("reading read receipts")?;
    Ok(n > 0)
}

pub(super) fn record_final_status(
    conn: &mut Connection,
    channel: &str,
    msgid: &str,
    status: &str,
    at: i64,
) -> Result<u64> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("beginning record_final_status")?;
    let args = params![channel, msgid, status, at];
    let timers: Vec<i64> = tx
        .prepare_cached(FINAL_DELIVERIES)
        .ctx("preparing final status of deliveries")?
        .query_map(args, |r| r.get(0))
        .ctx("setting final status of deliveries")?
        .collect::<rusqlite::Result<_>>()
        .ctx("reading deliveries set")?;
    let sends: Vec<(i64, i64)> = tx
        .prepare_cached(FINAL_SENDS)
        .ctx("preparing final status of job sends")?
        .query_map(args, |r| Ok((r.get(0)?, r.get(1)?)))
        .ctx("setting final status of job sends")?
        .collect::<rusqlite::Result<_>>()
        .ctx("reading job sends set")?;
    if let Some(event) = crate::ReceiptEvent::of_final_status(status) {
        for id in &timers {
            receipt_in(&tx, crate::ReceiptOn::Delivery(*id), event, at)?;
        }
        for (job_id, idx) in &sends {
            let idx = model::from_db(*idx, "job_sends.idx")?;
            receipt_in(
                &tx,
                crate::ReceiptOn::JobSend {
                    job_id: *job_id,
                    idx,
                },
                event,
                at,
            )?;
        }
    }
    tx.commit().ctx("committing record_final_status")?;
    Ok((timers.len() + sends.len()) as u64)
}

pub(super) fn mark_delivery_recalled(conn: &mut Connection, id: i64, at: i64) -> Result<bool> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("beginning recall")?;
    let n = tx
        .prepare_cached(RECALL)
        .ctx("preparing recall")?
        .execute(params![id, at])
        .ctx("marking delivery recalled")?;
    tx.commit().ctx("committing recall")?;
    Ok(n == 1)
}

pub(super) fn record_receipt(
    conn: &mut Connection,
    on: crate::ReceiptOn,
    event: crate::ReceiptEvent,
    at: i64,
) -> Result<bool> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("beginning receipt")?;
    let first = receipt_in(&tx, on, event, at)?;
    tx.commit().ctx("committing receipt")?;
    Ok(first)
}

/// Records a receipt inside the caller's transaction; a job's count goes up
/// only with its first report.
fn receipt_in(
    tx: &rusqlite::Transaction<'_>,
    on: crate::ReceiptOn,
    event: crate::ReceiptEvent,
    at: i64,
) -> Result<bool> {
    Ok(match on {
        crate::ReceiptOn::JobSend { job_id, idx } => {
            let idx = model::to_db(idx, "job_receipts.idx")?;
            let n = tx
                .prepare_cached(sql::JOB_RECEIPT.sqlite)
                .ctx("preparing receipt")?
                .execute(params![job_id, idx, event.as_str(), at])
                .ctx("recording receipt")?;
            if n == 1 {
                tx.prepare_cached(JOB_RECEIPT_COUNT)
                    .ctx("preparing receipt count")?
                    .execute(params![job_id, event.as_str()])
                    .ctx("counting receipt")?;
            }
            n == 1
        }
        crate::ReceiptOn::Delivery(id) => {
            tx.prepare_cached(sql::DELIVERY_RECEIPT.sqlite)
                .ctx("preparing receipt")?
                .execute(params![id, event.as_str(), at])
                .ctx("recording receipt")?
                == 1
        }
    })
}

pub(super) fn job_receipt_counts(
    conn: &mut Connection,
    job_id: i64,
) -> Result<crate::ReceiptCounts> {
    let mut stmt = conn
        .prepare_cached(sql::RECEIPT_COUNTS.sqlite)
        .ctx("preparing receipt counts")?;
    let rows = stmt
        .query_map(params![job_id], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
        })
        .ctx("reading receipt counts")?;
    let mut c = crate::ReceiptCounts::default();
    for row in rows {
        let (event, n) = row.ctx("reading a receipt count")?;
        c.add(&event, n);
    }
    Ok(c)
}

pub(super) fn job_messages(
    conn: &mut Connection,
    job_id: i64,
    limit: usize,
) -> Result<Vec<crate::JobMessage>> {
    let mut stmt = conn
        .prepare_cached(JOB_MESSAGES)
        .ctx("preparing job messages")?;
    let limit = model::limit_to_db(limit.saturating_add(1));
    let rows = stmt
        .query_map(params![job_id, limit], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, i64>(3)?,
            ))
        })
        .ctx("reading job messages")?;
    let mut out = Vec::new();
    for row in rows {
        let (msgid, sent_at, sends, recalled) = row.ctx("reading a job message")?;
        out.push(crate::JobMessage {
            msgid,
            sent_at,
            sends: sends.max(0) as u64,
            recalled: recalled.max(0) as u64,
        });
    }
    Ok(out)
}

pub(super) fn mark_job_message_recalled(
    conn: &mut Connection,
    job_id: i64,
    msgid: &str,
    at: i64,
) -> Result<u64> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("beginning job recall")?;
    let n = tx
        .prepare_cached(RECALL_JOB_MESSAGE)
        .ctx("preparing job recall")?
        .execute(params![job_id, msgid, at])
        .ctx("marking job sends recalled")?;
    tx.commit().ctx("committing job recall")?;
    Ok(n as u64)
}

pub(super) fn get_channel_token(conn: &mut Connection, key: &str) -> Result<Option<ChannelToken>> {
    let mut stmt = conn
        .prepare_cached(sql::TOKEN_OF.sqlite)
        .ctx("preparing token read")?;
    let mut rows = stmt.query([key]).ctx("querying token")?;
    let Some(row) = rows.next().ctx("reading token")? else {
        return Ok(None);
    };
    model::decode(row).map(Some)
}

pub(super) fn put_channel_token(conn: &mut Connection, key: &str, t: &ChannelToken) -> Result<()> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("beginning token put")?;
    tx.prepare_cached(PUT_TOKEN)
        .ctx("preparing token put")?
        .execute(params![
            key,
            t.token,
            t.expires_at,
            t.fetched_at,
            t.updated_at
        ])
        .ctx("storing token")?;
    tx.commit().ctx("committing token put")
}

pub(super) fn expire_channel_token(
    conn: &mut Connection,
    key: &str,
    token: &str,
    now: i64,
) -> Result<bool> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("beginning token expiry")?;
    let n = tx
        .prepare_cached(EXPIRE_TOKEN)
        .ctx("preparing token expiry")?
        .execute(params![key, token, now])
        .ctx("expiring token")?;
    tx.commit().ctx("committing token expiry")?;
    Ok(n == 1)
}

// ?1 channel, ?2 since, ?3 until, ?4 reason, ?5 now.
const PUT_PAUSE: &str = "INSERT INTO channel_pauses (channel, since, until, reason, updated_at) \
    VALUES (?1, ?2, ?3, ?4, ?5) \
    ON CONFLICT (channel) DO UPDATE SET since = excluded.since, until = excluded.until, \
        reason = excluded.reason, updated_at = excluded.updated_at";

pub(super) fn pause_channel(
    conn: &mut Connection,
    channel: &str,
    p: &ChannelPause,
    now: i64,
) -> Result<()> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("beginning channel pause")?;
    tx.prepare_cached(PUT_PAUSE)
        .ctx("preparing channel pause")?
        .execute(params![channel, p.since, p.until, p.reason, now])
        .ctx("storing channel pause")?;
    tx.commit().ctx("committing channel pause")
}

pub(super) fn resume_channel(conn: &mut Connection, channel: &str) -> Result<bool> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("beginning channel resume")?;
    let n = tx
        .prepare_cached(sql::DELETE_PAUSE.sqlite)
        .ctx("preparing channel resume")?
        .execute([channel])
        .ctx("deleting channel pause")?;
    tx.commit().ctx("committing channel resume")?;
    Ok(n == 1)
}

pub(super) fn channel_pauses(conn: &mut Connection) -> Result<Vec<(String, ChannelPause)>> {
    let mut stmt = conn
        .prepare_cached(sql::PAUSES.sqlite)
        .ctx("preparing channel pauses")?;
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                ChannelPause {
                    since: r.get(1)?,
                    until: r.get(2)?,
                    reason: r.get(3)?,
                },
            ))
        })
        .ctx("querying channel pauses")?;
    let mut out = Vec::new();
    for row in rows {
        out.push(row.ctx("reading channel pause")?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite::testing::{migrated, plan};

    #[test]
    fn the_sql_writes_the_recalled_status_the_api_names() {
        let quoted = format!("'{}'", crate::FINAL_RECALLED);
        for sql in [RECALL, FINAL_DELIVERIES, FINAL_SENDS] {
            assert!(sql.contains(&quoted), "{sql}");
        }
    }

    #[test]
    fn lookups_by_message_id_use_the_partial_indexes() {
        let conn = migrated();
        for (sql, want) in [
            (
                FINAL_DELIVERIES,
                "USING INDEX deliveries_msgid (channel=? AND provider_msgid=?)",
            ),
            (FINAL_SENDS, "USING INDEX job_sends_msgid (msgid=?)"),
            (FINAL_SENDS, "USING INTEGER PRIMARY KEY (rowid=?)"),
            (RECALL, "USING INTEGER PRIMARY KEY (rowid=?)"),
            (
                sql::DELIVERY_BY_ID.sqlite,
                "USING INTEGER PRIMARY KEY (rowid=?)",
            ),
            (sql::TOKEN_OF.sqlite, "USING PRIMARY KEY (key=?)"),
        ] {
            let p = plan(&conn, sql);
            let loose = p.replace("COVERING INDEX", "INDEX");
            assert!(loose.contains(want), "{sql}\nwanted {want:?} in:\n{p}");
            assert!(
                p.lines().all(|l| !l.contains("SCAN")),
                "table scan: {sql}:\n{p}"
            );
        }
    }
}
