//! The store conformance suite against SQLite: one fresh database file per test.

use std::sync::Arc;

use herald_store::sqlite::SqliteStore;
use herald_store::{SqliteOptions, Store, StoreOptions, Synchronous};
use tempfile::TempDir;

async fn fresh_store() -> (Arc<dyn Store>, TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = StoreOptions {
        sqlite: SqliteOptions {
            // Same code paths as `full`, without an fsync per commit on shared test machines.
            synchronous: Synchronous::Normal,
            read_connections: 2,
            max_page_count: None,
        },
        ..Default::default()
    };
    let store = SqliteStore::open(dir.path().join("herald.db"), &opts)
        .await
        .expect("open sqlite store");
    (Arc::new(store), dir)
}

/// Another handle (its own connections) on the same database file.
async fn second_handle(_: &Arc<dyn Store>, dir: &TempDir) -> Arc<dyn Store> {
    let store = SqliteStore::open(dir.path().join("herald.db"), &StoreOptions::default())
        .await
        .expect("open second handle");
    Arc::new(store)
}

herald_store::store_conformance_tests!(fresh_store, second_handle);

/// The same suite against the in-memory store (single connection for everything).
mod memory {
    use super::*;

    async fn fresh_memory_store() -> (Arc<dyn Store>, ()) {
        let store = SqliteStore::open_memory(&StoreOptions::default())
            .await
            .expect("open in-memory store");
        (Arc::new(store), ())
    }

    /// An in-memory database has a single handle; the race runs on it.
    async fn same_handle(store: &Arc<dyn Store>, _: &()) -> Arc<dyn Store> {
        store.clone()
    }

    herald_store::store_conformance_tests!(fresh_memory_store, same_handle);
}
