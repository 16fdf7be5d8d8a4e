//! The node and its operators: API keys ([`keys`]), health, readiness,
//! metrics, stats and the cluster's leases ([`ops`]), a live reload of the
//! configuration ([`reload`]), the console's first page ([`overview`]) and
//! the stored delivery counts ([`reports`]). The audit log's route is with
//! the log, in `crate::audit`.

pub mod keys;
pub(crate) mod ops;
pub(crate) mod overview;
pub(crate) mod reload;
pub(crate) mod reports;
