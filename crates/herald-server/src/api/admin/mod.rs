//! The node and its operators: API keys ([`keys`]), the audit log read
//! back ([`audit`]; `crate::audit` makes and stores it), health, readiness,
//! metrics, stats and the cluster's leases ([`ops`]), a live reload of the
//! configuration ([`reload`]), the console's first page ([`overview`]) and
//! the stored delivery counts ([`reports`]).

pub mod audit;
pub(crate) mod docs;
pub(crate) mod forecast;
pub mod keys;
pub(crate) mod ops;
pub(crate) mod overview;
pub(crate) mod reload;
pub(crate) mod reports;
