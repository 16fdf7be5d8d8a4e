//! herald-store's integration tests, as one test binary (one link of the
//! crate instead of one per file, and all the tests spread over libtest's
//! threads). Run one file's tests with its module name as the filter, e.g.
//! `cargo test -p herald-store --test integration pg_conformance::`.
//!
//! The PostgreSQL tests share one throwaway cluster per process
//! (`PgTemp::shared`), each in its own database; a test that crashes or
//! reconfigures a server starts its own (`pg_outage`, `pg_tls`).

mod pg_conformance;
mod pg_outage;
mod pg_store;
mod pg_tls;
mod refusals;
mod sqlite;
mod sqlite_conformance;
mod upgrade;
