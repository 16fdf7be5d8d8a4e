//! Cluster membership, shard ownership and named leases: what lets several
//! nodes share one store without two of them sending the same timer.
//!
//! [`ClusterStore`] is one area of [`crate::Store`]; its rows are read through
//! `model::cluster` and written by each backend's `cluster` module.

use async_trait::async_trait;

use crate::{DueEntry, Result};

/// A fencing token: a shard and the epoch of one ownership of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fence {
    pub shard: u16,
    pub epoch: i64,
}

/// Who holds a lease: a node id, and the incarnation one process start drew.
///
/// Leases belong to the pair, so a second process serving under the same node
/// id (a restart beside a stalled old process, or two hosts sharing a name) is
/// another holder: it takes the leases only as they expire, bumping their
/// epochs, and the old process can no longer renew them or write under them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Holder {
    pub node_id: String,
    /// Random per process start; 0 on rows written before incarnations existed.
    pub incarnation: i64,
}

impl Holder {
    pub fn new(node_id: impl Into<String>, incarnation: i64) -> Self {
        Self {
            node_id: node_id.into(),
            incarnation,
        }
    }

    /// Whether a lease recorded for `owner` in `incarnation` is this holder's.
    pub fn is(&self, owner: Option<&str>, incarnation: i64) -> bool {
        owner == Some(self.node_id.as_str()) && incarnation == self.incarnation
    }
}

/// A node of the cluster as its heartbeats show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeInfo {
    pub node_id: String,
    /// Unix ms after which the node counts as gone unless it beats again.
    pub expires_at: i64,
    /// When the incarnation that beat last started beating.
    pub started_at: i64,
    /// The incarnation that beat last.
    pub incarnation: i64,
}

/// Who owns one shard, until when, in which ownership (the epoch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardLease {
    pub shard: u16,
    /// `None` while nobody owns it.
    pub owner: Option<String>,
    pub lease_until: i64,
    /// Grows by one whenever the shard changes hands (holder or incarnation) or
    /// is released, so a write carrying an older epoch comes from a process that
    /// no longer owns the shard.
    pub epoch: i64,
    /// The owner's incarnation (see [`Holder`]); 0 while nobody owns it.
    pub incarnation: i64,
}

/// A named lease for duties that must run on one node at a time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedLease {
    pub name: String,
    pub holder: String,
    pub lease_until: i64,
    /// Grows by one whenever the lease changes holder (or incarnation).
    pub epoch: i64,
    /// The holder's incarnation (see [`Holder`]).
    pub incarnation: i64,
}

/// Cluster membership and shard ownership: heartbeats, shard and named
/// leases, and the announcements of timers other nodes created.
#[async_trait]
pub trait ClusterStore: Send + Sync + 'static {
    /// Records that `node` is alive until `now + ttl_ms` (registering it if new)
    /// and returns every node alive at `now`, ordered by node id. Incarnations
    /// of one node id share its row: the last to beat shows.
    async fn heartbeat(&self, node: &Holder, now: i64, ttl_ms: i64) -> Result<Vec<NodeInfo>>;

    /// Removes `node` from the cluster and releases every shard it owns; an
    /// incarnation that is no longer the node's changes nothing.
    async fn leave(&self, node: &Holder) -> Result<()>;

    /// Every shard's lease, ordered by shard (shards never leased are left out).
    async fn shard_leases(&self) -> Result<Vec<ShardLease>>;

    /// For each of `shards` that is unowned, expired at `now`, or already owned
    /// by `node`: makes `node` the owner until `now + lease_ms`. Taking a shard
    /// from another holder (another node id, or another incarnation of the same
    /// one) or from nobody bumps its epoch; renewing one's own lease does not.
    /// Returns the leases `node` holds among `shards` afterwards.
    async fn acquire_shards(
        &self,
        node: &Holder,
        shards: &[u16],
        now: i64,
        lease_ms: i64,
    ) -> Result<Vec<ShardLease>>;

    /// Extends the leases `node` holds with exactly these epochs to
    /// `now + lease_ms`. A lease that changed hands meanwhile is not touched.
    /// Returns the leases renewed; those missing are lost.
    async fn renew_shards(
        &self,
        node: &Holder,
        held: &[Fence],
        now: i64,
        lease_ms: i64,
    ) -> Result<Vec<ShardLease>>;

    /// Gives up the shards `node` owns among `shards`: no owner, epoch bumped, so
    /// anything `node` still writes under the old epoch is fenced off.
    async fn release_shards(&self, node: &Holder, shards: &[u16]) -> Result<()>;

    /// Takes (or renews) the named lease for `holder` if it is free, expired at
    /// `now`, or already `holder`'s. Returns it when `holder` has it afterwards.
    async fn acquire_lease(
        &self,
        name: &str,
        holder: &Holder,
        now: i64,
        ttl_ms: i64,
    ) -> Result<Option<NamedLease>>;

    /// Gives up a named lease `holder` has; others' leases are left alone.
    async fn release_lease(&self, name: &str, holder: &Holder) -> Result<()>;

    /// Timers other processes created, as they commit: backends shared by several
    /// nodes announce new timers (PostgreSQL: `LISTEN/NOTIFY`) so the owner can
    /// wheel them at once. `None` where no other process can write (SQLite).
    /// An empty batch reports a gap (a reconnect, or entries dropped because the
    /// subscriber was behind): the subscriber should re-read what it owns.
    async fn subscribe(&self) -> Result<Option<tokio::sync::mpsc::Receiver<Vec<DueEntry>>>>;
}

/// The statements both backends run ([`crate::shared_sql::Statement`]).
pub(crate) mod sql {
    use crate::model::{node_cols, shard_lease_cols};
    use crate::shared_sql::{Statement, statement};

    pub(crate) const ALL_LEASES: Statement = statement!(concat!(
        "SELECT ",
        shard_lease_cols!(),
        " FROM shard_leases ORDER BY shard"
    ));
    pub(crate) const LIVE_NODES: Statement = statement!(concat!(
        "SELECT ",
        node_cols!(),
        " FROM nodes WHERE expires_at > $1 ORDER BY node_id"
    ));
    /// Releasing expires the lease rather than deleting it, so the epoch keeps
    /// growing across holders.
    pub(crate) const RELEASE_NAMED: Statement = statement!(
        "UPDATE named_leases SET lease_until = 0 \
         WHERE name = $1 AND holder = $2 AND incarnation = $3"
    );
}
