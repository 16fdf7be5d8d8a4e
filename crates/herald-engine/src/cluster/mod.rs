//! This node among others on a shared store: membership and the shard
//! leases it holds (`membership`), which shards it fires under which lease
//! (`ownership`, read on every fetch and send), and the timers other nodes
//! create for its shards as the store announces them (`listener`).

pub(crate) mod listener;
pub(crate) mod membership;
pub(crate) mod ownership;
