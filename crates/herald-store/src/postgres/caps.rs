//! Frequency-cap counters on PostgreSQL. One transaction per batch: it
//! takes a transaction-level advisory lock on a hash of each (tenant, key)
//! it touches, in ascending order (so two batches never deadlock), reads
//! those counters in one statement, decides, and writes the changes in one
//! statement. Takes of different users never wait for each other; two
//! nodes taking for the same user serialise, so the cap holds cluster-wide.

use std::collections::{BTreeSet, HashMap};

use herald_core::TenantId;

use super::{Ctx, PgStore};
use crate::caps::{CapTake, CapVerdict, decide};
use crate::model::tenant_to_pg;
use crate::{Result, StoreError};

const LOCK: &str = "SELECT pg_advisory_xact_lock(h) FROM unnest($1::int8[]) AS h ORDER BY h";
const READ: &str = "SELECT c.tenant_id, c.cap_key, c.bucket, c.count FROM cap_counters c \
     JOIN unnest($1::int4[], $2::text[]) AS k(tenant_id, cap_key) \
     ON c.tenant_id = k.tenant_id AND c.cap_key = k.cap_key";
const ADD: &str = "INSERT INTO cap_counters (tenant_id, cap_key, bucket, count, expires_at) \
     SELECT * FROM unnest($1::int4[], $2::text[], $3::int8[], $4::int8[], $5::int8[]) \
     ON CONFLICT (tenant_id, cap_key, bucket) DO UPDATE SET count = cap_counters.count + excluded.count, \
     expires_at = excluded.expires_at";
const PRUNE: &str = "DELETE FROM cap_counters c USING unnest($1::int4[], $2::text[], $3::int8[]) \
     AS k(tenant_id, cap_key, oldest) \
     WHERE c.tenant_id = k.tenant_id AND c.cap_key = k.cap_key AND c.bucket < k.oldest";

/// The advisory lock key of a counter: a stable 64-bit hash (the lock space
/// is shared with nothing else Herald takes transaction-level locks on).
fn lock_key(tenant: TenantId, key: &str) -> i64 {
    let mut bytes = Vec::with_capacity(key.len() + 12);
    bytes.extend_from_slice(b"cap\0");
    bytes.extend_from_slice(&tenant.0.to_le_bytes());
    bytes.extend_from_slice(key.as_bytes());
    xxhash_rust::xxh3::xxh3_64(&bytes) as i64
}

pub(super) async fn take(store: &PgStore, takes: &[CapTake], at: i64) -> Result<Vec<CapVerdict>> {
    let keys: BTreeSet<(TenantId, &str)> = takes
        .iter()
        .flat_map(|t| t.checks.iter().map(move |c| (t.tenant, c.key.as_str())))
        .collect();
    if keys.is_empty() {
        return Ok(vec![CapVerdict::Taken; takes.len()]);
    }
    let locks: BTreeSet<i64> = keys.iter().map(|&(t, k)| lock_key(t, k)).collect();
    let locks: Vec<i64> = locks.into_iter().collect();
    let mut tenants = Vec::with_capacity(keys.len());
    let mut names = Vec::with_capacity(keys.len());
    for &(t, k) in &keys {
        tenants.push(tenant_to_pg(t)?);
        names.push(k.to_string());
    }
    let mut client = store.client().await?;
    let tx = client.transaction().await.ctx("beginning cap take")?;
    let lock = tx.prepare_cached(LOCK).await.ctx("preparing cap locks")?;
    tx.execute(&lock, &[&locks])
        .await
        .ctx("locking cap counters")?;
    let read = tx.prepare_cached(READ).await.ctx("preparing cap read")?;
    let mut found: HashMap<(TenantId, String), Vec<(i64, i64)>> = HashMap::new();
    for row in tx
        .query(&read, &[&tenants, &names])
        .await
        .ctx("reading cap counters")?
    {
        let tenant: i32 = row.try_get(0).ctx("reading cap tenant")?;
        let key: String = row.try_get(1).ctx("reading cap key")?;
        let bucket: i64 = row.try_get(2).ctx("reading cap bucket")?;
        let count: i64 = row.try_get(3).ctx("reading cap count")?;
        let tenant = TenantId(
            u32::try_from(tenant)
                .map_err(|_| StoreError::Corrupt(format!("cap_counters.tenant_id {tenant}")))?,
        );
        found
            .entry((tenant, key))
            .or_default()
            .push((bucket, count));
    }
    let decided = decide(takes, at, |t, k| -> Result<Vec<(i64, i64)>> {
        Ok(found.remove(&(t, k.to_string())).unwrap_or_default())
    })?;
    if !decided.added.is_empty() {
        let n = decided.added.len();
        let (mut ts, mut ks, mut bs, mut ns, mut es) = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        for a in &decided.added {
            ts.push(tenant_to_pg(a.tenant)?);
            ks.push(a.key.as_str());
            bs.push(a.bucket);
            ns.push(a.count);
            es.push(a.expires_at);
        }
        let add = tx.prepare_cached(ADD).await.ctx("preparing cap add")?;
        tx.execute(&add, &[&ts, &ks, &bs, &ns, &es])
            .await
            .ctx("adding to cap counters")?;
    }
    if !decided.stale.is_empty() {
        let (mut ts, mut ks, mut os) = (Vec::new(), Vec::new(), Vec::new());
        for (t, k, o) in &decided.stale {
            ts.push(tenant_to_pg(*t)?);
            ks.push(k.as_str());
            os.push(*o);
        }
        let prune = tx.prepare_cached(PRUNE).await.ctx("preparing cap prune")?;
        tx.execute(&prune, &[&ts, &ks, &os])
            .await
            .ctx("pruning cap counters")?;
    }
    tx.commit().await.ctx("committing cap take")?;
    Ok(decided.verdicts)
}
