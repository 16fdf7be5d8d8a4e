//! Membership, shard leases and named leases on PostgreSQL.
//!
//! Claims are single `INSERT ... ON CONFLICT DO UPDATE ... WHERE` statements:
//! PostgreSQL locks the conflicting row and evaluates the `WHERE` against its
//! latest committed version, so of two nodes racing for a free shard exactly one
//! sees it free. Shard lists are sorted first so concurrent claims lock rows in
//! the same order and cannot deadlock.

use std::collections::HashMap;

use futures_util::future::join;

use super::{Ctx, PgStore};
use crate::cluster::sql;
use crate::model::{self, named_lease_cols, shard_lease_cols};
use crate::{Fence, Holder, NamedLease, NodeInfo, Result, ShardLease};

// $1 shards (sorted, distinct), $2 node, $3 new lease_until, $4 now, $5
// incarnation. A shard changes hands (and epoch) only when free or expired; the
// holder (node and incarnation) renews without a bump. RETURNING lists exactly
// the rows now held by ($2, $5) among $1.
//
// The rows about to change hands are locked `FOR UPDATE` first (`taken`,
// forced to run by the insert's `WHERE`): that waits for the completion
// batches in flight, which hold their shards `FOR KEY SHARE` until they
// commit, so none commits against an epoch that has moved. A plain update of
// non-key columns would take only `FOR NO KEY UPDATE`, which does not wait
// for them. The holder's own rows are not locked that way, so renewing
// through here does not wait for its own batches.
const ACQUIRE_SHARDS: &str = concat!(
    "WITH taken AS (SELECT shard FROM shard_leases \
         WHERE shard = ANY($1::int4[]) \
           AND NOT (owner IS NOT DISTINCT FROM $2 AND incarnation = $5) \
         ORDER BY shard FOR UPDATE) \
     INSERT INTO shard_leases AS l (shard, owner, lease_until, epoch, incarnation) \
     SELECT s, $2, $3, 1, $5 FROM unnest($1::int4[]) AS s \
     WHERE (SELECT count(*) FROM taken) >= 0 \
     ON CONFLICT (shard) DO UPDATE SET \
         epoch = CASE WHEN l.owner IS NOT DISTINCT FROM EXCLUDED.owner \
                           AND l.incarnation = EXCLUDED.incarnation THEN l.epoch \
                      ELSE l.epoch + 1 END, \
         owner = EXCLUDED.owner, lease_until = EXCLUDED.lease_until, \
         incarnation = EXCLUDED.incarnation \
     WHERE l.owner IS NULL OR l.lease_until <= $4 \
        OR (l.owner = EXCLUDED.owner AND l.incarnation = EXCLUDED.incarnation) \
     RETURNING ",
    shard_lease_cols!("l")
);
// $1 shards, $2 epochs (pairwise), $3 node, $4 new lease_until, $5 incarnation.
const RENEW_SHARDS: &str = concat!(
    "UPDATE shard_leases AS l SET lease_until = $4 \
     FROM unnest($1::int4[], $2::int8[]) AS h(shard, epoch) \
     WHERE l.shard = h.shard AND l.owner = $3 AND l.epoch = h.epoch \
       AND l.incarnation = $5 \
     RETURNING ",
    shard_lease_cols!("l")
);
// Releases lock their rows `FOR UPDATE` first, like a takeover (see
// `ACQUIRE_SHARDS`): the epoch moves only once the batches in flight on
// those shards have committed.
const RELEASE_SHARDS: &str = "UPDATE shard_leases \
    SET owner = NULL, lease_until = 0, epoch = epoch + 1, incarnation = 0 \
    WHERE shard IN (SELECT shard FROM shard_leases \
                    WHERE shard = ANY($1::int4[]) AND owner = $2 AND incarnation = $3 \
                    ORDER BY shard FOR UPDATE) \
      AND owner = $2 AND incarnation = $3";
const RELEASE_ALL: &str = "UPDATE shard_leases \
    SET owner = NULL, lease_until = 0, epoch = epoch + 1, incarnation = 0 \
    WHERE shard IN (SELECT shard FROM shard_leases \
                    WHERE owner = $1 AND incarnation = $2 ORDER BY shard FOR UPDATE) \
      AND owner = $1 AND incarnation = $2";
// Two incarnations beating under one node id take turns in its row; the
// start time is that of the incarnation that beat last.
const BEAT: &str = "INSERT INTO nodes (node_id, started_at, expires_at, incarnation) \
    VALUES ($1, $2, $3, $4) \
    ON CONFLICT (node_id) DO UPDATE SET expires_at = EXCLUDED.expires_at, \
        started_at = CASE WHEN nodes.incarnation = EXCLUDED.incarnation \
                          THEN nodes.started_at ELSE EXCLUDED.started_at END, \
        incarnation = EXCLUDED.incarnation";
const FORGET_NODE: &str = "DELETE FROM nodes WHERE node_id = $1 AND incarnation = $2";
// $1 name, $2 holder, $3 new lease_until, $4 now, $5 incarnation.
const ACQUIRE_NAMED: &str = concat!(
    "INSERT INTO named_leases AS n (name, holder, lease_until, epoch, incarnation) \
     VALUES ($1, $2, $3, 1, $5) \
     ON CONFLICT (name) DO UPDATE SET \
         epoch = CASE WHEN n.holder = EXCLUDED.holder \
                           AND n.incarnation = EXCLUDED.incarnation THEN n.epoch \
                      ELSE n.epoch + 1 END, \
         holder = EXCLUDED.holder, lease_until = EXCLUDED.lease_until, \
         incarnation = EXCLUDED.incarnation \
     WHERE (n.holder = EXCLUDED.holder AND n.incarnation = EXCLUDED.incarnation) \
        OR n.lease_until <= $4 \
     RETURNING ",
    named_lease_cols!("n")
);

/// Sorted, without repeats: the order every claim locks rows in.
fn sorted_shards(shards: &[u16]) -> Vec<i32> {
    let mut v: Vec<i32> = shards.iter().map(|&s| i32::from(s)).collect();
    v.sort_unstable();
    v.dedup();
    v
}

pub(super) async fn heartbeat(
    store: &PgStore,
    node: &Holder,
    now: i64,
    ttl_ms: i64,
) -> Result<Vec<NodeInfo>> {
    let client = store.client().await?;
    let beat = client
        .prepare_cached(BEAT)
        .await
        .ctx("preparing heartbeat")?;
    let live = client
        .prepare_cached(sql::LIVE_NODES.pg)
        .await
        .ctx("preparing live nodes")?;
    let expires = now.saturating_add(ttl_ms);
    // Pipelined (`join` polls in order, and a query is sent when first polled):
    // the beat commits on its own, then the read sees it.
    let (beat, rows) = join(
        client.execute(&beat, &[&node.node_id, &now, &expires, &node.incarnation]),
        client.query(&live, &[&now]),
    )
    .await;
    beat.ctx("recording heartbeat")?;
    rows.ctx("reading live nodes")?
        .iter()
        .map(model::decode::<NodeInfo, _>)
        .collect()
}

pub(super) async fn leave(store: &PgStore, node: &Holder) -> Result<()> {
    let mut client = store.client().await?;
    let tx = client.transaction().await.ctx("beginning leave")?;
    let release = tx
        .prepare_cached(RELEASE_ALL)
        .await
        .ctx("preparing release")?;
    let forget = tx
        .prepare_cached(FORGET_NODE)
        .await
        .ctx("preparing leave")?;
    let (released, forgotten) = join(
        tx.execute(&release, &[&node.node_id, &node.incarnation]),
        tx.execute(&forget, &[&node.node_id, &node.incarnation]),
    )
    .await;
    released.ctx("releasing shards")?;
    forgotten.ctx("removing node")?;
    tx.commit().await.ctx("committing leave")
}

pub(super) async fn shard_leases(store: &PgStore) -> Result<Vec<ShardLease>> {
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(sql::ALL_LEASES.pg)
        .await
        .ctx("preparing shard leases")?;
    client
        .query(&stmt, &[])
        .await
        .ctx("reading shard leases")?
        .iter()
        .map(model::decode)
        .collect()
}

pub(super) async fn acquire_shards(
    store: &PgStore,
    node: &Holder,
    shards: &[u16],
    now: i64,
    lease_ms: i64,
) -> Result<Vec<ShardLease>> {
    let shards = sorted_shards(shards);
    let until = now.saturating_add(lease_ms);
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(ACQUIRE_SHARDS)
        .await
        .ctx("preparing acquire")?;
    let rows = client
        .query(
            &stmt,
            &[&shards, &node.node_id, &until, &now, &node.incarnation],
        )
        .await
        .ctx("acquiring shards")?;
    let mut held = rows
        .iter()
        .map(model::decode)
        .collect::<Result<Vec<ShardLease>>>()?;
    held.sort_by_key(|l| l.shard);
    Ok(held)
}

pub(super) async fn renew_shards(
    store: &PgStore,
    node: &Holder,
    held: &[Fence],
    now: i64,
    lease_ms: i64,
) -> Result<Vec<ShardLease>> {
    let until = now.saturating_add(lease_ms);
    let shards: Vec<i32> = held.iter().map(|f| i32::from(f.shard)).collect();
    let epochs: Vec<i64> = held.iter().map(|f| f.epoch).collect();
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(RENEW_SHARDS)
        .await
        .ctx("preparing renew")?;
    let rows = client
        .query(
            &stmt,
            &[&shards, &epochs, &node.node_id, &until, &node.incarnation],
        )
        .await
        .ctx("renewing shards")?;
    let mut renewed: HashMap<u16, ShardLease> = HashMap::with_capacity(rows.len());
    for row in &rows {
        let lease: ShardLease = model::decode(row)?;
        renewed.insert(lease.shard, lease);
    }
    // In the order asked, once per shard.
    Ok(held
        .iter()
        .filter_map(|f| renewed.remove(&f.shard))
        .collect())
}

pub(super) async fn release_shards(store: &PgStore, node: &Holder, shards: &[u16]) -> Result<()> {
    let shards = sorted_shards(shards);
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(RELEASE_SHARDS)
        .await
        .ctx("preparing release")?;
    client
        .execute(&stmt, &[&shards, &node.node_id, &node.incarnation])
        .await
        .ctx("releasing shards")?;
    Ok(())
}

pub(super) async fn acquire_lease(
    store: &PgStore,
    name: &str,
    holder: &Holder,
    now: i64,
    ttl_ms: i64,
) -> Result<Option<NamedLease>> {
    let until = now.saturating_add(ttl_ms);
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(ACQUIRE_NAMED)
        .await
        .ctx("preparing lease")?;
    let row = client
        .query_opt(
            &stmt,
            &[&name, &holder.node_id, &until, &now, &holder.incarnation],
        )
        .await
        .ctx("acquiring lease")?;
    let Some(row) = row else { return Ok(None) };
    let lease: NamedLease = model::decode(&row)?;
    // A lease with no time left (ttl <= 0) is not held.
    Ok((lease.lease_until > now).then_some(lease))
}

pub(super) async fn release_lease(store: &PgStore, name: &str, holder: &Holder) -> Result<()> {
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(sql::RELEASE_NAMED.pg)
        .await
        .ctx("preparing lease release")?;
    client
        .execute(&stmt, &[&name, &holder.node_id, &holder.incarnation])
        .await
        .ctx("releasing lease")?;
    Ok(())
}
