//! What the node last read about the store and the cluster, kept for the
//! API so that a page can show it without reading the store again: timers by
//! tenant and state (the stats sampler), live nodes (membership) and shards
//! per owner (the stats sampler).

use std::collections::BTreeMap;
use std::sync::Arc;

use herald_core::{TenantId, TimerState};
use herald_store::{NodeInfo, ShardLease};
use parking_lot::RwLock;

/// Every tenant's timers by state, as counted at `at_ms`.
#[derive(Debug, Clone, PartialEq)]
pub struct TimerCounts {
    /// Unix ms of the count.
    pub at_ms: i64,
    pub counts: Vec<(TenantId, TimerState, u64)>,
}

impl TimerCounts {
    /// Timers by state, every state listed: `tenant`'s, or with `None` all.
    pub fn by_state(&self, tenant: Option<TenantId>) -> Vec<(TimerState, u64)> {
        TimerState::ALL
            .iter()
            .map(|&s| {
                let n = self
                    .counts
                    .iter()
                    .filter(|(t, st, _)| *st == s && tenant.is_none_or(|id| id == *t))
                    .map(|(_, _, n)| *n)
                    .sum();
                (s, n)
            })
            .collect()
    }
}

/// A node of the cluster as this node last saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeView {
    pub node_id: String,
    /// Unix ms after which it counts as gone unless it beats again.
    pub alive_until: i64,
    /// Shards it holds under a running lease.
    pub shards: u64,
}

#[derive(Default)]
pub(crate) struct Sampled {
    timers: RwLock<Option<Arc<TimerCounts>>>,
    nodes: RwLock<Vec<NodeInfo>>,
    /// Running leases per owner.
    owners: RwLock<BTreeMap<String, u64>>,
}

impl Sampled {
    pub fn set_timers(&self, counts: TimerCounts) {
        *self.timers.write() = Some(Arc::new(counts));
    }

    pub fn timers(&self) -> Option<Arc<TimerCounts>> {
        self.timers.read().clone()
    }

    pub fn set_nodes(&self, nodes: Vec<NodeInfo>) {
        *self.nodes.write() = nodes;
    }

    /// Keeps who holds a running lease at `now`.
    pub fn set_leases(&self, leases: &[ShardLease], now: i64) {
        let mut owners = BTreeMap::new();
        for l in leases {
            if let Some(o) = &l.owner
                && l.lease_until > now
            {
                *owners.entry(o.clone()).or_default() += 1;
            }
        }
        *self.owners.write() = owners;
    }

    /// The live nodes, sorted by id; `this` (with `own_shards`, exact) is
    /// always among them.
    pub fn nodes(&self, this: &str, own_shards: u64, now: i64) -> Vec<NodeView> {
        let owners = self.owners.read();
        let mut out: Vec<NodeView> = self
            .nodes
            .read()
            .iter()
            .filter(|n| n.expires_at > now || n.node_id == this)
            .map(|n| NodeView {
                node_id: n.node_id.clone(),
                alive_until: n.expires_at,
                shards: owners.get(&n.node_id).copied().unwrap_or(0),
            })
            .collect();
        match out.iter_mut().find(|n| n.node_id == this) {
            Some(n) => n.shards = own_shards,
            None => out.push(NodeView {
                node_id: this.to_string(),
                alive_until: now,
                shards: own_shards,
            }),
        }
        out.sort_by(|a, b| a.node_id.cmp(&b.node_id));
        out
    }
}
