//! Cluster membership and leases.

use super::{Columns, Decode, Reader};
use crate::{NamedLease, NodeInfo, Result, ShardLease};

/// A `nodes` row, as [`NodeInfo`] reads it.
macro_rules! node_cols {
    ($($t:literal)?) => {
        $crate::model::columns!($($t)?; "node_id", "expires_at", "started_at", "incarnation")
    };
}
pub(crate) use node_cols;

/// A `shard_leases` row, as [`ShardLease`] reads it.
macro_rules! shard_lease_cols {
    ($($t:literal)?) => {
        $crate::model::columns!($($t)?; "shard", "owner", "lease_until", "epoch", "incarnation")
    };
}
pub(crate) use shard_lease_cols;

/// A `named_leases` row, as [`NamedLease`] reads it.
macro_rules! named_lease_cols {
    ($($t:literal)?) => {
        $crate::model::columns!($($t)?; "name", "holder", "lease_until", "epoch", "incarnation")
    };
}
pub(crate) use named_lease_cols;

impl Decode for NodeInfo {
    fn decode<R: Columns + ?Sized>(r: &mut Reader<'_, R>) -> Result<Self> {
        Ok(NodeInfo {
            node_id: r.string("nodes.node_id")?,
            expires_at: r.int("nodes.expires_at")?,
            started_at: r.int("nodes.started_at")?,
            incarnation: r.int("nodes.incarnation")?,
        })
    }
}

impl Decode for ShardLease {
    fn decode<R: Columns + ?Sized>(r: &mut Reader<'_, R>) -> Result<Self> {
        Ok(ShardLease {
            shard: r.narrow("shard_leases.shard")?,
            owner: r.opt_string("shard_leases.owner")?,
            lease_until: r.int("shard_leases.lease_until")?,
            epoch: r.int("shard_leases.epoch")?,
            incarnation: r.int("shard_leases.incarnation")?,
        })
    }
}

impl Decode for NamedLease {
    fn decode<R: Columns + ?Sized>(r: &mut Reader<'_, R>) -> Result<Self> {
        Ok(NamedLease {
            name: r.string("named_leases.name")?,
            holder: r.string("named_leases.holder")?,
            lease_until: r.int("named_leases.lease_until")?,
            epoch: r.int("named_leases.epoch")?,
            incarnation: r.int("named_leases.incarnation")?,
        })
    }
}
