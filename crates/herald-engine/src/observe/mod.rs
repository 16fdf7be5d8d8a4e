//! What the engine tells about itself: metric names and handles (`metrics`),
//! what `/readyz` asks (`health`), the last minute of deliveries and fire
//! lateness (`live`), the stats sampler (`stats`) and what it last read of
//! the store and the cluster (`sampled`), and the spans it exports
//! (`trace`). Nothing here is stored.

pub(crate) mod health;
pub(crate) mod live;
pub mod metrics;
pub(crate) mod sampled;
pub(crate) mod stats;
pub mod trace;
