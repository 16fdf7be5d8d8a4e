//! The store conformance suite against PostgreSQL: one throwaway cluster per test
//! process, one fresh database per test.
//!
//! Where `initdb`/`postgres` are missing (and `HERALD_REQUIRE_PG` is not `1`), a
//! loud notice is printed and each case runs against an in-memory SQLite store
//! instead: the suite's macro has no way to skip a case, so this keeps it green
//! without pretending anything about PostgreSQL (the notice says so).

use std::sync::Arc;

use herald_pgtemp::{PgTemp, TempDatabase};
use herald_store::postgres::PgStore;
use herald_store::sqlite::SqliteStore;
use herald_store::{Store, StoreOptions};

/// What keeps a test's database alive: dropping it drops the database.
enum Guard {
    Pg(TempDatabase),
    /// No PostgreSQL here: the case ran on SQLite in memory.
    Standin,
}

fn cluster() -> Option<&'static PgTemp> {
    PgTemp::shared().expect("start the throwaway PostgreSQL cluster")
}

async fn fresh_pg_store() -> (Arc<dyn Store>, Guard) {
    let Some(pg) = cluster() else {
        let store = SqliteStore::open_memory(&StoreOptions::default())
            .await
            .expect("open the in-memory stand-in");
        return (Arc::new(store), Guard::Standin);
    };
    let db = pg.fresh_database("conformance").expect("create database");
    let store = PgStore::open(db.url(), &StoreOptions::default())
        .await
        .expect("open postgres store");
    (Arc::new(store), Guard::Pg(db))
}

/// Another handle, with its own pool, on the same database.
async fn second_pg_handle(store: &Arc<dyn Store>, guard: &Guard) -> Arc<dyn Store> {
    match guard {
        Guard::Pg(db) => Arc::new(
            PgStore::open(db.url(), &StoreOptions::default())
                .await
                .expect("open second postgres handle"),
        ),
        Guard::Standin => store.clone(),
    }
}

herald_store::store_conformance_tests!(fresh_pg_store, second_pg_handle);
