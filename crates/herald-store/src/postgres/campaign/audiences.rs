//! Uploaded audiences: recipients stored in chunks of [`AUDIENCE_CHUNK`], each
//! one `bytea` of the chunk's recipients joined by `\n`, so 10M recipients are
//! about 2,450 rows (TOAST compresses them) and a slice reads only the chunks
//! it covers.
//!
//! Locks on the `audiences` row keep uploads, sealing and dropping apart:
//! `append` holds `FOR SHARE` (so a seal waits for it, and it sees a seal that
//! committed first), `seal` takes `FOR NO KEY UPDATE`, `drop` `FOR UPDATE`; a
//! job or rule that names the audience holds `FOR KEY SHARE` while it is
//! created, which only `drop` waits for.

use herald_core::TenantId;

use crate::campaign::sql::audiences as sql;
use crate::model::{self, Columns, audience_cols, tenant_to_pg, to_db};
use crate::postgres::{Ctx, PgStore};
use crate::{AUDIENCE_CHUNK, AudienceRecord, Result, StoreError, refusals};

const SHARE_AUDIENCE: &str = "SELECT size FROM audiences WHERE id = $1 FOR SHARE";
const PUT_CHUNK: &str = "INSERT INTO audience_chunks (audience_id, chunk_no, count, data) \
    VALUES ($1, $2, $3, $4) ON CONFLICT (audience_id, chunk_no) \
    DO UPDATE SET count = EXCLUDED.count, data = EXCLUDED.data";
const LOCK_OPEN: &str = "SELECT 1 FROM audiences WHERE id = $1 AND size IS NULL FOR NO KEY UPDATE";
// $2 chunk size, $3 number of the last chunk. What a seal checks: how many
// chunks, how many recipients, the highest chunk number, and how many chunks
// before the last one are short.
const CHUNK_SUMMARY: &str = "SELECT count(*), COALESCE(sum(count), 0)::int8, \
        COALESCE(max(chunk_no), -1), count(*) FILTER (WHERE count <> $2 AND chunk_no < $3) \
    FROM audience_chunks WHERE audience_id = $1";
const SEAL: &str = concat!(
    "UPDATE audiences SET size = $2, sealed_at = $3 WHERE id = $1 RETURNING ",
    audience_cols!()
);
const LOCK_ANY: &str = "SELECT 1 FROM audiences WHERE id = $1 FOR UPDATE";

pub(super) async fn create_audience(
    store: &PgStore,
    tenant: TenantId,
    name: Option<&str>,
    now: i64,
) -> Result<i64> {
    let tenant = tenant_to_pg(tenant)?;
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(sql::CREATE.pg)
        .await
        .ctx("preparing audience insert")?;
    let row = client
        .query_one(&stmt, &[&tenant, &name, &now])
        .await
        .ctx("creating an audience")?;
    row.int(0, "audiences.id")
}

/// The chunk a valid `append` writes as `(chunk_no, count, data)` (count 0
/// when `recipients` is empty: the chunk is removed), or why it is refused.
pub(super) fn chunk_of(start: u64, recipients: &[String]) -> Result<(i64, i32, Vec<u8>)> {
    let chunk_no = refusals::audience_chunk(start, recipients)?;
    // At most AUDIENCE_CHUNK, checked above.
    let count = i32::try_from(recipients.len())
        .map_err(|_| StoreError::Internal("postgres: a chunk's count exceeds an INTEGER".into()))?;
    let bytes = recipients.iter().map(|r| r.len() + 1).sum();
    let mut data = Vec::with_capacity(bytes);
    for (i, r) in recipients.iter().enumerate() {
        if i > 0 {
            data.push(b'\n');
        }
        data.extend_from_slice(r.as_bytes());
    }
    Ok((chunk_no, count, data))
}

pub(super) async fn append_audience(
    store: &PgStore,
    id: i64,
    chunk_no: i64,
    count: i32,
    data: &[u8],
) -> Result<()> {
    let mut client = store.client().await?;
    let tx = client
        .transaction()
        .await
        .ctx("beginning append_audience")?;
    let share = tx
        .prepare_cached(SHARE_AUDIENCE)
        .await
        .ctx("preparing audience lock")?;
    let put = tx
        .prepare_cached(PUT_CHUNK)
        .await
        .ctx("preparing chunk upsert")?;
    let size: Option<i64> = match tx
        .query_opt(&share, &[&id])
        .await
        .ctx("locking the audience")?
    {
        None => return Err(refusals::no_audience(id)),
        Some(row) => row.opt_int(0, "audiences.size")?,
    };
    if size.is_some() {
        return Err(refusals::audience_state(id, "is sealed"));
    }
    if count == 0 {
        let remove = tx
            .prepare_cached(sql::DROP_CHUNK.pg)
            .await
            .ctx("preparing chunk delete")?;
        tx.execute(&remove, &[&id, &chunk_no])
            .await
            .ctx("removing an audience chunk")?;
    } else {
        tx.execute(&put, &[&id, &chunk_no, &count, &data])
            .await
            .ctx("writing an audience chunk")?;
    }
    tx.commit().await.ctx("committing append_audience")
}

pub(super) async fn seal_audience(
    store: &PgStore,
    id: i64,
    size: u64,
    now: i64,
) -> Result<Option<AudienceRecord>> {
    let chunks = size.div_ceil(AUDIENCE_CHUNK);
    let size_db = to_db(size, "size")?;
    let chunks_db = to_db(chunks, "size")?;
    let chunk_db = to_db(AUDIENCE_CHUNK, "size")?;
    let chunk_i32 = i32::try_from(chunk_db)
        .map_err(|_| StoreError::Internal("postgres: AUDIENCE_CHUNK exceeds an INTEGER".into()))?;
    let mut client = store.client().await?;
    let tx = client.transaction().await.ctx("beginning seal_audience")?;
    let lock = tx
        .prepare_cached(LOCK_OPEN)
        .await
        .ctx("preparing audience lock")?;
    let summary = tx
        .prepare_cached(CHUNK_SUMMARY)
        .await
        .ctx("preparing chunk summary")?;
    let seal = tx.prepare_cached(SEAL).await.ctx("preparing seal")?;
    if tx
        .query_opt(&lock, &[&id])
        .await
        .ctx("locking the audience")?
        .is_none()
    {
        return Ok(None);
    }
    let row = tx
        .query_one(&summary, &[&id, &chunk_i32, &(chunks_db - 1)])
        .await
        .ctx("reading the chunks")?;
    let stored = row.int(0, "chunk count")?;
    let recipients = row.int(1, "recipient count")?;
    let last = row.int(2, "last chunk")?;
    let short = row.int(3, "short chunks")?;
    if stored != chunks_db || last != chunks_db - 1 || recipients != size_db || short != 0 {
        return Err(refusals::seal_size(
            id,
            size,
            format!(
                "{recipients} are stored in {stored} chunks (the last is {last}, \
                 {short} short before it)"
            ),
        ));
    }
    let row = tx
        .query_one(&seal, &[&id, &size_db, &now])
        .await
        .ctx("sealing the audience")?;
    let record = model::decode(&row)?;
    tx.commit().await.ctx("committing seal_audience")?;
    Ok(Some(record))
}

pub(super) async fn drop_audience(store: &PgStore, id: i64) -> Result<bool> {
    let mut client = store.client().await?;
    let tx = client.transaction().await.ctx("beginning drop_audience")?;
    let lock = tx
        .prepare_cached(LOCK_ANY)
        .await
        .ctx("preparing audience lock")?;
    let referred = tx
        .prepare_cached(sql::REFERRED.pg)
        .await
        .ctx("preparing reference check")?;
    if tx
        .query_opt(&lock, &[&id])
        .await
        .ctx("locking the audience")?
        .is_none()
    {
        return Ok(false);
    }
    // A new statement, so a job or rule committed while we waited is seen.
    let used = tx
        .query_one(&referred, &[&id])
        .await
        .ctx("checking references")?
        .flag(0, "referred")?;
    if used {
        return Ok(false);
    }
    let drop_chunks = tx
        .prepare_cached(sql::DROP_CHUNKS.pg)
        .await
        .ctx("preparing chunk delete")?;
    let drop_audience = tx
        .prepare_cached(sql::DROP_AUDIENCE.pg)
        .await
        .ctx("preparing audience delete")?;
    tx.execute(&drop_chunks, &[&id])
        .await
        .ctx("deleting chunks")?;
    tx.execute(&drop_audience, &[&id])
        .await
        .ctx("deleting the audience")?;
    tx.commit().await.ctx("committing drop_audience")?;
    Ok(true)
}

pub(super) async fn list_audiences(
    store: &PgStore,
    tenant: TenantId,
    after: i64,
    limit: i64,
) -> Result<Vec<AudienceRecord>> {
    let tenant = tenant_to_pg(tenant)?;
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(sql::LIST.pg)
        .await
        .ctx("preparing audience list")?;
    client
        .query(&stmt, &[&tenant, &after, &limit])
        .await
        .ctx("listing audiences")?
        .iter()
        .map(model::decode)
        .collect()
}

pub(super) async fn get_audience(store: &PgStore, id: i64) -> Result<Option<AudienceRecord>> {
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(sql::GET.pg)
        .await
        .ctx("preparing audience read")?;
    client
        .query_opt(&stmt, &[&id])
        .await
        .ctx("reading an audience")?
        .map(|r| model::decode(&r))
        .transpose()
}

pub(super) async fn audience_slice(
    store: &PgStore,
    id: i64,
    start: u64,
    end: u64,
) -> Result<Vec<String>> {
    let client = store.client().await?;
    let size_stmt = client
        .prepare_cached(sql::SIZE.pg)
        .await
        .ctx("preparing audience read")?;
    let size: Option<i64> = match client
        .query_opt(&size_stmt, &[&id])
        .await
        .ctx("reading the audience")?
    {
        None => return Err(refusals::no_audience(id)),
        Some(row) => row.opt_int(0, "audiences.size")?,
    };
    let size = size.ok_or_else(|| refusals::audience_state(id, "is not sealed yet"))?;
    let size = u64::try_from(size)
        .map_err(|_| StoreError::Corrupt(format!("audience {id}: size {size}")))?;
    let end = end.min(size);
    if start >= end {
        return Ok(Vec::new());
    }
    let (first, last) = (start / AUDIENCE_CHUNK, (end - 1) / AUDIENCE_CHUNK);
    let stmt = client
        .prepare_cached(sql::CHUNKS.pg)
        .await
        .ctx("preparing chunk read")?;
    let rows = client
        .query(&stmt, &[&id, &to_db(first, "start")?, &to_db(last, "end")?])
        .await
        .ctx("reading chunks")?;
    let corrupt = |why: String| StoreError::Corrupt(format!("audience {id}: {why}"));
    if rows.len() as u64 != last - first + 1 {
        return Err(corrupt(format!(
            "{} of chunks {first}..={last} stored",
            rows.len()
        )));
    }
    let mut out = Vec::with_capacity((end - start) as usize);
    for (row, chunk) in rows.iter().zip(first..) {
        let no = row.int(0, "audience_chunks.chunk_no")?;
        let count = row.int(1, "audience_chunks.count")?;
        let data = row.bytes(2, "audience_chunks.data")?;
        if u64::try_from(no).ok() != Some(chunk) {
            return Err(corrupt(format!("chunk {chunk} missing")));
        }
        let base = chunk * AUDIENCE_CHUNK;
        let from = start.saturating_sub(base) as usize;
        let to = (end - base).min(AUDIENCE_CHUNK) as usize;
        let pieces = data.split(|&b| b == b'\n');
        let mut seen = 0;
        for (i, piece) in pieces.enumerate() {
            seen = i + 1;
            if i < from || i >= to {
                continue;
            }
            let s = std::str::from_utf8(piece)
                .map_err(|_| corrupt(format!("recipient {} is not UTF-8", base + i as u64)))?;
            out.push(s.to_string());
        }
        if i64::try_from(seen).ok() != Some(count) {
            return Err(corrupt(format!(
                "chunk {chunk} holds {seen} recipients, says {count}"
            )));
        }
    }
    Ok(out)
}
