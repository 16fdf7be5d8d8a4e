//! Membership, shard leases and named leases on SQLite.
//!
//! Every function runs in one `IMMEDIATE` transaction, so two processes on
//! the same file see each other's claims in order.

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::error::Ctx;
use crate::cluster::sql;
use crate::model::{self, named_lease_cols, shard_lease_cols};
use crate::{Fence, Holder, NamedLease, NodeInfo, Result, ShardLease};

// ?1 shard, ?2 node, ?3 new lease_until, ?4 now, ?5 incarnation. A shard
// changes hands (and epoch) only when it is free or expired; the holder (node
// and incarnation) renews without a bump.
const ACQUIRE_SHARD: &str = "INSERT INTO shard_leases (shard, owner, lease_until, epoch, incarnation) \
    VALUES (?1, ?2, ?3, 1, ?5) \
    ON CONFLICT (shard) DO UPDATE SET \
        epoch = CASE WHEN shard_leases.owner IS ?2 AND shard_leases.incarnation = ?5 \
                     THEN shard_leases.epoch ELSE shard_leases.epoch + 1 END, \
        owner = ?2, lease_until = ?3, incarnation = ?5 \
    WHERE shard_leases.owner IS NULL OR shard_leases.lease_until <= ?4 \
       OR (shard_leases.owner = ?2 AND shard_leases.incarnation = ?5)";
const LEASE_OF: &str = concat!(
    "SELECT ",
    shard_lease_cols!(),
    " FROM shard_leases WHERE shard = ?1"
);
const RENEW_SHARD: &str = "UPDATE shard_leases SET lease_until = ?4 \
    WHERE shard = ?1 AND owner = ?2 AND epoch = ?3 AND incarnation = ?5";
const RELEASE_SHARD: &str = "UPDATE shard_leases \
    SET owner = NULL, lease_until = 0, epoch = epoch + 1, incarnation = 0 \
    WHERE shard = ?1 AND owner = ?2 AND incarnation = ?3";
const RELEASE_ALL: &str = "UPDATE shard_leases \
    SET owner = NULL, lease_until = 0, epoch = epoch + 1, incarnation = 0 \
    WHERE owner = ?1 AND incarnation = ?2";
// Two incarnations beating under one node id take turns in its row; the
// start time is that of the incarnation that beat last.
const BEAT: &str = "INSERT INTO nodes (node_id, started_at, expires_at, incarnation) \
    VALUES (?1, ?2, ?3, ?4) \
    ON CONFLICT (node_id) DO UPDATE SET expires_at = ?3, \
        started_at = CASE WHEN nodes.incarnation = ?4 THEN nodes.started_at ELSE ?2 END, \
        incarnation = ?4";
const ACQUIRE_NAMED: &str = "INSERT INTO named_leases (name, holder, lease_until, epoch, incarnation) \
    VALUES (?1, ?2, ?3, 1, ?5) \
    ON CONFLICT (name) DO UPDATE SET \
        epoch = CASE WHEN named_leases.holder = ?2 AND named_leases.incarnation = ?5 \
                     THEN named_leases.epoch ELSE named_leases.epoch + 1 END, \
        holder = ?2, lease_until = ?3, incarnation = ?5 \
    WHERE (named_leases.holder = ?2 AND named_leases.incarnation = ?5) \
       OR named_leases.lease_until <= ?4";
const NAMED_OF: &str = concat!(
    "SELECT ",
    named_lease_cols!(),
    " FROM named_leases WHERE name = ?1"
);

pub(super) fn heartbeat(
    conn: &mut Connection,
    node: &Holder,
    now: i64,
    ttl_ms: i64,
) -> Result<Vec<NodeInfo>> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("beginning heartbeat")?;
    tx.prepare_cached(BEAT)
        .ctx("preparing heartbeat")?
        .execute(params![
            node.node_id,
            now,
            now.saturating_add(ttl_ms),
            node.incarnation
        ])
        .ctx("recording heartbeat")?;
    let mut out = Vec::new();
    {
        let mut stmt = tx
            .prepare_cached(sql::LIVE_NODES.sqlite)
            .ctx("preparing live nodes")?;
        let mut rows = stmt.query([now]).ctx("querying live nodes")?;
        while let Some(row) = rows.next().ctx("reading live nodes")? {
            out.push(model::decode::<NodeInfo, _>(row)?);
        }
    }
    tx.commit().ctx("committing heartbeat")?;
    Ok(out)
}

pub(super) fn leave(conn: &mut Connection, node: &Holder) -> Result<()> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("beginning leave")?;
    tx.execute(RELEASE_ALL, params![node.node_id, node.incarnation])
        .ctx("releasing shards")?;
    tx.execute(
        "DELETE FROM nodes WHERE node_id = ?1 AND incarnation = ?2",
        params![node.node_id, node.incarnation],
    )
    .ctx("removing node")?;
    tx.commit().ctx("committing leave")
}

pub(super) fn shard_leases(conn: &mut Connection) -> Result<Vec<ShardLease>> {
    let mut stmt = conn
        .prepare_cached(sql::ALL_LEASES.sqlite)
        .ctx("preparing shard leases")?;
    let mut rows = stmt.query([]).ctx("querying shard leases")?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().ctx("reading shard leases")? {
        out.push(model::decode(row)?);
    }
    Ok(out)
}

pub(super) fn acquire_shards(
    conn: &mut Connection,
    node: &Holder,
    shards: &[u16],
    now: i64,
    lease_ms: i64,
) -> Result<Vec<ShardLease>> {
    let until = now.saturating_add(lease_ms);
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("beginning acquire")?;
    let mut out = Vec::new();
    {
        let mut take = tx.prepare_cached(ACQUIRE_SHARD).ctx("preparing acquire")?;
        let mut read = tx.prepare_cached(LEASE_OF).ctx("preparing lease read")?;
        for &shard in shards {
            take.execute(params![shard, node.node_id, until, now, node.incarnation])
                .ctx("acquiring shard")?;
            let lease = read
                .query_row([shard], |r| Ok(model::decode::<ShardLease, _>(r)))
                .optional()
                .ctx("reading lease")?
                .transpose()?;
            if let Some(l) = lease.filter(|l| node.is(l.owner.as_deref(), l.incarnation)) {
                out.push(l);
            }
        }
    }
    tx.commit().ctx("committing acquire")?;
    Ok(out)
}

pub(super) fn renew_shards(
    conn: &mut Connection,
    node: &Holder,
    held: &[Fence],
    now: i64,
    lease_ms: i64,
) -> Result<Vec<ShardLease>> {
    let until = now.saturating_add(lease_ms);
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("beginning renew")?;
    let mut out = Vec::new();
    {
        let mut renew = tx.prepare_cached(RENEW_SHARD).ctx("preparing renew")?;
        for f in held {
            if renew
                .execute(params![
                    f.shard,
                    node.node_id,
                    f.epoch,
                    until,
                    node.incarnation
                ])
                .ctx("renewing shard")?
                == 1
            {
                out.push(ShardLease {
                    shard: f.shard,
                    owner: Some(node.node_id.clone()),
                    lease_until: until,
                    epoch: f.epoch,
                    incarnation: node.incarnation,
                });
            }
        }
    }
    tx.commit().ctx("committing renew")?;
    Ok(out)
}

pub(super) fn release_shards(conn: &mut Connection, node: &Holder, shards: &[u16]) -> Result<()> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("beginning release")?;
    {
        let mut release = tx.prepare_cached(RELEASE_SHARD).ctx("preparing release")?;
        for &shard in shards {
            release
                .execute(params![shard, node.node_id, node.incarnation])
                .ctx("releasing shard")?;
        }
    }
    tx.commit().ctx("committing release")
}

/// The current epoch of a shard's lease (0 if it was never leased).
pub(super) fn shard_epoch(tx: &rusqlite::Transaction<'_>, shard: u16) -> Result<i64> {
    let epoch: Option<i64> = tx
        .prepare_cached("SELECT epoch FROM shard_leases WHERE shard = ?1")
        .ctx("preparing epoch read")?
        .query_row([shard], |r| r.get(0))
        .optional()
        .ctx("reading epoch")?;
    Ok(epoch.unwrap_or(0))
}

pub(super) fn acquire_lease(
    conn: &mut Connection,
    name: &str,
    holder: &Holder,
    now: i64,
    ttl_ms: i64,
) -> Result<Option<NamedLease>> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("beginning lease")?;
    tx.prepare_cached(ACQUIRE_NAMED)
        .ctx("preparing lease")?
        .execute(params![
            name,
            holder.node_id,
            now.saturating_add(ttl_ms),
            now,
            holder.incarnation
        ])
        .ctx("acquiring lease")?;
    let lease = tx
        .prepare_cached(NAMED_OF)
        .ctx("preparing lease read")?
        .query_row([name], |r| Ok(model::decode::<NamedLease, _>(r)))
        .optional()
        .ctx("reading lease")?
        .transpose()?;
    tx.commit().ctx("committing lease")?;
    // A lease with no time left (ttl <= 0) is not held.
    Ok(lease.filter(|l| holder.is(Some(&l.holder), l.incarnation) && l.lease_until > now))
}

pub(super) fn release_lease(conn: &mut Connection, name: &str, holder: &Holder) -> Result<()> {
    conn.execute(
        sql::RELEASE_NAMED.sqlite,
        params![name, holder.node_id, holder.incarnation],
    )
    .ctx("releasing lease")?;
    Ok(())
}
