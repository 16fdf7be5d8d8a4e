//! What providers tell us after the send, and what they lend us, on
//! PostgreSQL: the final status of a message (callbacks, recall) on both send
//! logs, and the cluster-wide channel access tokens.
//!
//! Each write is one transaction (or one statement). Setting a final status
//! touches no job counter, so unlike the writers in `campaign/jobs.rs` it does
//! not lock the job row: it locks only the send-log rows of one message id
//! (timer log first, then job log), and no other writer holds rows of both
//! logs, so it cannot close a lock cycle.

use super::{Ctx, PgStore};
use crate::model::{self, Columns};
use crate::provider::sql;
use crate::{ChannelPause, ChannelToken, DeliveryRecord, Result};

// $1 channel, $2 msgid, $3 status, $4 at. A repeat of the same status keeps
// the first time; a recalled row is the user's last word and stays so. The
// `IS NOT NULL` term matches the partial index's predicate, so a generic plan
// can use it too.
pub(crate) const FINAL_DELIVERIES: &str = "UPDATE deliveries SET \
        final_at = CASE WHEN final_status IS NOT DISTINCT FROM $3::text THEN final_at ELSE $4 END, \
        final_status = $3::text \
    WHERE channel = $1 AND provider_msgid = $2 AND provider_msgid IS NOT NULL \
      AND final_status IS DISTINCT FROM 'recalled' RETURNING id";
// The job's channel is checked per matching row through the jobs primary key:
// a scalar subquery stays a per-row SubPlan, where an `EXISTS` would be pulled
// up into a join that may read every job on the channel.
pub(crate) const FINAL_SENDS: &str = "UPDATE job_sends AS s SET \
        final_at = CASE WHEN s.final_status IS NOT DISTINCT FROM $3::text \
                        THEN s.final_at ELSE $4 END, \
        final_status = $3::text \
    WHERE s.msgid = $2 AND s.msgid IS NOT NULL \
      AND s.final_status IS DISTINCT FROM 'recalled' \
      AND (SELECT j.channel FROM jobs AS j WHERE j.id = s.job_id) = $1 \
    RETURNING s.job_id, s.idx";
// $1 id, $2 at.
const RECALL: &str = "UPDATE deliveries SET final_status = 'recalled', final_at = $2 \
    WHERE id = $1 AND outcome = 'delivered' AND provider_msgid IS NOT NULL \
      AND final_status IS DISTINCT FROM 'recalled'";

// $1 job, $2 limit. The job's rows by their primary key.
const JOB_MESSAGES: &str = "SELECT msgid, MIN(updated_at), COUNT(*), \
        COUNT(*) FILTER (WHERE final_status = 'recalled') \
    FROM job_sends WHERE job_id = $1 AND state = 'delivered' AND msgid IS NOT NULL \
    GROUP BY msgid ORDER BY MIN(updated_at), msgid LIMIT $2";
// $1 job, $2 msgid, $3 at. Through the message-id index; like the final
// status above it touches no counter, so it takes no job lock.
const RECALL_JOB_MESSAGE: &str = "UPDATE job_sends SET final_status = 'recalled', final_at = $3 \
    WHERE msgid = $2 AND msgid IS NOT NULL AND job_id = $1 AND state = 'delivered' \
      AND final_status IS DISTINCT FROM 'recalled'";

// Its own row per job and event, so receipts never wait on the job row the
// campaign workers lock.
const JOB_RECEIPT_COUNT: &str = "INSERT INTO job_receipt_counts (job_id, event, n) \
    VALUES ($1, $2, 1) ON CONFLICT (job_id, event) DO UPDATE SET n = job_receipt_counts.n + 1";

const PUT_TOKEN: &str = "INSERT INTO channel_tokens (key, token, expires_at, fetched_at, updated_at) \
    VALUES ($1, $2, $3, $4, $5) \
    ON CONFLICT (key) DO UPDATE SET token = EXCLUDED.token, expires_at = EXCLUDED.expires_at, \
        fetched_at = EXCLUDED.fetched_at, updated_at = EXCLUDED.updated_at";
// $1 key, $2 token, $3 now. The row lock and re-check make it a true
// compare-and-set against a concurrent put.
const EXPIRE_TOKEN: &str = "UPDATE channel_tokens \
    SET expires_at = LEAST(expires_at, $3), updated_at = $3 WHERE key = $1 AND token = $2";

pub(super) async fn get_delivery(store: &PgStore, id: i64) -> Result<Option<DeliveryRecord>> {
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(sql::DELIVERY_BY_ID.pg)
        .await
        .ctx("preparing get_delivery")?;
    match client
        .query_opt(&stmt, &[&id])
        .await
        .ctx("reading delivery")?
    {
        Some(row) => model::decode(&row).map(Some),
        None => Ok(None),
    }
}

pub(super) async fn read_at_step(store: &PgStore, timer_id: i64, step: u32) -> Result<bool> {
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(sql::READ_AT_STEP.pg)
        .await
        .ctx("preparing read_at_step")?;
    let row = client
        .query_one(&stmt, &[&timer_id, &i64::from(step)])
        .await
        .ctx("reading read receipts")?;
    Ok(row.int(0, "count")? > 0)
}

pub(super) async fn record_final_status(
    store: &PgStore,
    channel: &str,
    msgid: &str,
    status: &str,
    at: i64,
) -> Result<u64> {
    let mut client = store.client().await?;
    let tx = client
        .transaction()
        .await
        .ctx("beginning record_final_status")?;
    let timers = tx
        .prepare_cached(FINAL_DELIVERIES)
        .await
        .ctx("preparing final status of deliveries")?;
    let sends = tx
        .prepare_cached(FINAL_SENDS)
        .await
        .ctx("preparing final status of job sends")?;
    let args: [&(dyn tokio_postgres::types::ToSql + Sync); 4] = [&channel, &msgid, &status, &at];
    let timers = tx
        .query(&timers, &args)
        .await
        .ctx("setting final status of deliveries")?;
    let sends = tx
        .query(&sends, &args)
        .await
        .ctx("setting final status of job sends")?;
    if let Some(event) = crate::ReceiptEvent::of_final_status(status) {
        for r in &timers {
            let id: i64 = r.try_get(0).ctx("reading delivery id")?;
            receipt_in(&tx, crate::ReceiptOn::Delivery(id), event, at).await?;
        }
        for r in &sends {
            let job_id: i64 = r.try_get(0).ctx("reading job id")?;
            let idx: i64 = r.try_get(1).ctx("reading send index")?;
            let idx = model::from_db(idx, "job_sends.idx")?;
            receipt_in(&tx, crate::ReceiptOn::JobSend { job_id, idx }, event, at).await?;
        }
    }
    tx.commit().await.ctx("committing record_final_status")?;
    Ok((timers.len() + sends.len()) as u64)
}

pub(super) async fn record_receipt(
    store: &PgStore,
    on: crate::ReceiptOn,
    event: crate::ReceiptEvent,
    at: i64,
) -> Result<bool> {
    let mut client = store.client().await?;
    let tx = client.transaction().await.ctx("beginning receipt")?;
    let first = receipt_in(&tx, on, event, at).await?;
    tx.commit().await.ctx("committing receipt")?;
    Ok(first)
}

/// Records a receipt inside the caller's transaction; a job's count goes up
/// only with its first report.
async fn receipt_in(
    tx: &deadpool_postgres::Transaction<'_>,
    on: crate::ReceiptOn,
    event: crate::ReceiptEvent,
    at: i64,
) -> Result<bool> {
    Ok(match on {
        crate::ReceiptOn::JobSend { job_id, idx } => {
            let idx = model::to_db(idx, "job_receipts.idx")?;
            let stmt = tx
                .prepare_cached(sql::JOB_RECEIPT.pg)
                .await
                .ctx("preparing receipt")?;
            let n = tx
                .execute(&stmt, &[&job_id, &idx, &event.as_str(), &at])
                .await
                .ctx("recording receipt")?;
            if n == 1 {
                let count = tx
                    .prepare_cached(JOB_RECEIPT_COUNT)
                    .await
                    .ctx("preparing receipt count")?;
                tx.execute(&count, &[&job_id, &event.as_str()])
                    .await
                    .ctx("counting receipt")?;
            }
            n == 1
        }
        crate::ReceiptOn::Delivery(id) => {
            let stmt = tx
                .prepare_cached(sql::DELIVERY_RECEIPT.pg)
                .await
                .ctx("preparing receipt")?;
            tx.execute(&stmt, &[&id, &event.as_str(), &at])
                .await
                .ctx("recording receipt")?
                == 1
        }
    })
}

pub(super) async fn job_receipt_counts(
    store: &PgStore,
    job_id: i64,
) -> Result<crate::ReceiptCounts> {
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(sql::RECEIPT_COUNTS.pg)
        .await
        .ctx("preparing receipt counts")?;
    let rows = client
        .query(&stmt, &[&job_id])
        .await
        .ctx("reading receipt counts")?;
    let mut c = crate::ReceiptCounts::default();
    for r in rows {
        let event: String = r.try_get(0).ctx("reading receipt event")?;
        let n: i64 = r.try_get(1).ctx("reading receipt count")?;
        c.add(&event, n);
    }
    Ok(c)
}

pub(super) async fn job_messages(
    store: &PgStore,
    job_id: i64,
    limit: usize,
) -> Result<Vec<crate::JobMessage>> {
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(JOB_MESSAGES)
        .await
        .ctx("preparing job messages")?;
    let limit = model::limit_to_db(limit.saturating_add(1));
    let rows = client
        .query(&stmt, &[&job_id, &limit])
        .await
        .ctx("reading job messages")?;
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        let sends: i64 = r.try_get(2).ctx("reading job message sends")?;
        let recalled: i64 = r.try_get(3).ctx("reading job message recalls")?;
        out.push(crate::JobMessage {
            msgid: r.try_get(0).ctx("reading job message id")?,
            sent_at: r.try_get(1).ctx("reading job message time")?,
            sends: sends.max(0) as u64,
            recalled: recalled.max(0) as u64,
        });
    }
    Ok(out)
}

pub(super) async fn mark_job_message_recalled(
    store: &PgStore,
    job_id: i64,
    msgid: &str,
    at: i64,
) -> Result<u64> {
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(RECALL_JOB_MESSAGE)
        .await
        .ctx("preparing job recall")?;
    client
        .execute(&stmt, &[&job_id, &msgid, &at])
        .await
        .ctx("marking job sends recalled")
}

pub(super) async fn mark_delivery_recalled(store: &PgStore, id: i64, at: i64) -> Result<bool> {
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(RECALL)
        .await
        .ctx("preparing recall")?;
    let n = client
        .execute(&stmt, &[&id, &at])
        .await
        .ctx("marking delivery recalled")?;
    Ok(n == 1)
}

pub(super) async fn get_channel_token(store: &PgStore, key: &str) -> Result<Option<ChannelToken>> {
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(sql::TOKEN_OF.pg)
        .await
        .ctx("preparing token read")?;
    let Some(row) = client
        .query_opt(&stmt, &[&key])
        .await
        .ctx("reading token")?
    else {
        return Ok(None);
    };
    model::decode(&row).map(Some)
}

pub(super) async fn put_channel_token(store: &PgStore, key: &str, t: &ChannelToken) -> Result<()> {
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(PUT_TOKEN)
        .await
        .ctx("preparing token put")?;
    client
        .execute(
            &stmt,
            &[&key, &t.token, &t.expires_at, &t.fetched_at, &t.updated_at],
        )
        .await
        .ctx("storing token")?;
    Ok(())
}

pub(super) async fn expire_channel_token(
    store: &PgStore,
    key: &str,
    token: &str,
    now: i64,
) -> Result<bool> {
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(EXPIRE_TOKEN)
        .await
        .ctx("preparing token expiry")?;
    let n = client
        .execute(&stmt, &[&key, &token, &now])
        .await
        .ctx("expiring token")?;
    Ok(n == 1)
}

// $1 channel, $2 since, $3 until, $4 reason, $5 now.
const PUT_PAUSE: &str = "INSERT INTO channel_pauses (channel, since, until, reason, updated_at) \
    VALUES ($1, $2, $3, $4, $5) \
    ON CONFLICT (channel) DO UPDATE SET since = EXCLUDED.since, until = EXCLUDED.until, \
        reason = EXCLUDED.reason, updated_at = EXCLUDED.updated_at";

pub(super) async fn pause_channel(
    store: &PgStore,
    channel: &str,
    p: &ChannelPause,
    now: i64,
) -> Result<()> {
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(PUT_PAUSE)
        .await
        .ctx("preparing channel pause")?;
    client
        .execute(&stmt, &[&channel, &p.since, &p.until, &p.reason, &now])
        .await
        .ctx("storing channel pause")?;
    Ok(())
}

pub(super) async fn resume_channel(store: &PgStore, channel: &str) -> Result<bool> {
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(sql::DELETE_PAUSE.pg)
        .await
        .ctx("preparing channel resume")?;
    let n = client
        .execute(&stmt, &[&channel])
        .await
        .ctx("deleting channel pause")?;
    Ok(n == 1)
}

pub(super) async fn channel_pauses(store: &PgStore) -> Result<Vec<(String, ChannelPause)>> {
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(sql::PAUSES.pg)
        .await
        .ctx("preparing channel pauses")?;
    let rows = client
        .query(&stmt, &[])
        .await
        .ctx("reading channel pauses")?;
    rows.iter()
        .map(|row| {
            Ok((
                super::col(row, 0, "channel_pauses.channel")?,
                ChannelPause {
                    since: super::col(row, 1, "channel_pauses.since")?,
                    until: super::col(row, 2, "channel_pauses.until")?,
                    reason: super::col(row, 3, "channel_pauses.reason")?,
                },
            ))
        })
        .collect()
}
