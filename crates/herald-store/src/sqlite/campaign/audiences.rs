//! Uploaded audiences: recipients stored in chunks of [`AUDIENCE_CHUNK`],
//! addressed by index.

use herald_core::TenantId;
use rusqlite::{Connection, params};

use super::{Ctx, in_read_tx, in_tx, query_all, query_opt};
use crate::campaign::sql::audiences as sql;
use crate::campaign::{AUDIENCE_CHUNK, AudienceRecord};
use crate::model::{self, Columns, from_db, tenant_to_db, to_db};
use crate::{Result, StoreError, refusals};

const TENANT: &str = "SELECT tenant_id FROM audiences WHERE id = ?1";
const PUT_CHUNK: &str = "INSERT INTO audience_chunks (audience_id, chunk_no, count, data) \
    VALUES (?1, ?2, ?3, ?4) \
    ON CONFLICT (audience_id, chunk_no) DO UPDATE SET count = excluded.count, data = excluded.data";
/// Chunks, recipients, last chunk number, and full chunks (?2 = AUDIENCE_CHUNK).
const CHUNK_STATS: &str = "SELECT COUNT(*), COALESCE(SUM(count), 0), COALESCE(MAX(chunk_no), -1), \
    COALESCE(SUM(count = ?2), 0) FROM audience_chunks WHERE audience_id = ?1";
const SEAL: &str = "UPDATE audiences SET size = ?2, sealed_at = ?3 WHERE id = ?1 AND size IS NULL";

pub(super) fn create_audience(
    conn: &mut Connection,
    tenant: TenantId,
    name: Option<String>,
    now: i64,
) -> Result<i64> {
    conn.prepare_cached(sql::CREATE.sqlite)
        .ctx("preparing audience insert")?
        .query_row(params![tenant_to_db(tenant), name, now], |r| r.get(0))
        .ctx("inserting audience")
}

/// Checks a chunk before anything is written; returns its number and its
/// recipients joined for storage.
pub(super) fn chunk_data(start: u64, recipients: &[String]) -> Result<(i64, String)> {
    let chunk_no = refusals::audience_chunk(start, recipients)?;
    Ok((chunk_no, recipients.join("\n")))
}

/// The size column of an audience: `None` if unknown, `Some(None)` while open.
fn size_of(conn: &Connection, id: i64) -> Result<Option<Option<u64>>> {
    query_opt(conn, sql::SIZE.sqlite, [id], "reading audience size", |r| {
        r.opt_int(0, "audiences.size")?
            .map(|v| from_db(v, "audiences.size"))
            .transpose()
    })
}

pub(super) fn append_audience(
    conn: &mut Connection,
    id: i64,
    chunk_no: i64,
    count: usize,
    data: String,
) -> Result<()> {
    in_tx(conn, "appending to audience", |tx| {
        match size_of(tx, id)? {
            None => return Err(refusals::no_audience(id)),
            Some(Some(_)) => return Err(refusals::audience_state(id, "is sealed")),
            Some(None) => {}
        }
        if count == 0 {
            tx.prepare_cached(sql::DROP_CHUNK.sqlite)
                .ctx("preparing chunk delete")?
                .execute(params![id, chunk_no])
                .ctx("deleting chunk")?;
        } else {
            tx.prepare_cached(PUT_CHUNK)
                .ctx("preparing chunk write")?
                .execute(params![id, chunk_no, count as i64, data])
                .ctx("writing chunk")?;
        }
        Ok(())
    })
}

pub(super) fn seal_audience(
    conn: &mut Connection,
    id: i64,
    size: u64,
    now: i64,
) -> Result<Option<AudienceRecord>> {
    in_tx(conn, "sealing audience", |tx| {
        if size_of(tx, id)? != Some(None) {
            return Ok(None);
        }
        let (chunks, stored, last, full): (i64, i64, i64, i64) = tx
            .prepare_cached(CHUNK_STATS)
            .ctx("preparing chunk stats")?
            .query_row(params![id, AUDIENCE_CHUNK as i64], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .ctx("reading chunk stats")?;
        // Chunks 0..n, all full but the last, holding `size` in all: then every
        // index below `size` is where a slice will look for it.
        let n = to_db(size.div_ceil(AUDIENCE_CHUNK), "size")?;
        let complete = chunks == n
            && last == n - 1
            && stored == to_db(size, "size")?
            && full >= (n - 1).max(0);
        if !complete {
            return Err(refusals::seal_size(
                id,
                size,
                format!("{stored} are stored in {chunks} chunks (the last is {last})"),
            ));
        }
        tx.prepare_cached(SEAL)
            .ctx("preparing seal")?
            .execute(params![id, to_db(size, "size")?, now])
            .ctx("sealing")?;
        query_opt(tx, sql::GET.sqlite, [id], "reading audience", |r| {
            model::decode(r)
        })
    })
}

pub(super) fn drop_audience(conn: &mut Connection, id: i64) -> Result<bool> {
    in_tx(conn, "dropping audience", |tx| {
        let used: bool = tx
            .prepare_cached(sql::REFERRED.sqlite)
            .ctx("preparing audience use check")?
            .query_row([id], |r| r.get(0))
            .ctx("checking audience use")?;
        if used {
            return Ok(false);
        }
        tx.prepare_cached(sql::DROP_CHUNKS.sqlite)
            .ctx("preparing chunk delete")?
            .execute([id])
            .ctx("deleting chunks")?;
        let n = tx
            .prepare_cached(sql::DROP_AUDIENCE.sqlite)
            .ctx("preparing audience delete")?
            .execute([id])
            .ctx("deleting audience")?;
        Ok(n == 1)
    })
}

pub(super) fn get_audience(conn: &mut Connection, id: i64) -> Result<Option<AudienceRecord>> {
    query_opt(conn, sql::GET.sqlite, [id], "reading audience", |r| {
        model::decode(r)
    })
}

pub(super) fn list_audiences(
    conn: &mut Connection,
    tenant: TenantId,
    after: Option<i64>,
    limit: usize,
) -> Result<Vec<AudienceRecord>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let args = params![tenant_to_db(tenant), after.unwrap_or(i64::MIN), limit];
    query_all(conn, sql::LIST.sqlite, args, "listing audiences", |r| {
        model::decode(r)
    })
}

/// The size of a sealed audience of `tenant`, for a job: `None` if unknown,
/// still open, or another tenant's.
pub(super) fn sealed_size(conn: &Connection, id: i64, tenant: TenantId) -> Result<Option<u64>> {
    let owner = query_opt(conn, TENANT, [id], "reading audience tenant", |r| {
        r.int(0, "audiences.tenant_id")
    })?;
    if owner != Some(tenant_to_db(tenant)) {
        return Ok(None);
    }
    Ok(size_of(conn, id)?.flatten())
}

pub(super) fn audience_slice(
    conn: &mut Connection,
    id: i64,
    start: u64,
    end: u64,
) -> Result<Vec<String>> {
    in_read_tx(conn, "reading audience slice", |tx| {
        let size = match size_of(tx, id)? {
            Some(Some(size)) => size,
            Some(None) => return Err(refusals::audience_state(id, "is not sealed yet")),
            None => return Err(refusals::no_audience(id)),
        };
        let end = end.min(size);
        if start >= end {
            return Ok(Vec::new());
        }
        let (first, last) = (start / AUDIENCE_CHUNK, (end - 1) / AUDIENCE_CHUNK);
        let mut out = Vec::with_capacity((end - start) as usize);
        let mut stmt = tx
            .prepare_cached(sql::CHUNKS.sqlite)
            .ctx("preparing chunk read")?;
        let mut rows = stmt
            .query(params![id, to_db(first, "start")?, to_db(last, "end")?])
            .ctx("reading chunks")?;
        while let Some(row) = rows.next().ctx("reading chunks")? {
            let chunk_no = from_db(row.int(0, "audience_chunks.chunk_no")?, "chunk_no")?;
            let count = from_db(row.int(1, "audience_chunks.count")?, "count")?;
            let data = row.str(2, "audience_chunks.data")?;
            let base = chunk_no * AUDIENCE_CHUNK;
            let lo = start.max(base) - base;
            let hi = end.min(base + count) - base;
            let before = out.len();
            out.extend(
                data.split('\n')
                    .skip(lo as usize)
                    .take(hi.saturating_sub(lo) as usize)
                    .map(str::to_owned),
            );
            if (out.len() - before) as u64 != hi.saturating_sub(lo) {
                return Err(StoreError::Corrupt(format!(
                    "audience {id} chunk {chunk_no} holds fewer than {count} recipients"
                )));
            }
        }
        if out.len() as u64 != end - start {
            return Err(StoreError::Corrupt(format!(
                "audience {id}: {} of recipients {start}..{end} found",
                out.len()
            )));
        }
        Ok(out)
    })
}
