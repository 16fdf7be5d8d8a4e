//! A PostgreSQL crash under an open store: calls fail as `Unavailable` (never
//! as anything the caller would take for its own fault), dead connections are
//! replaced by themselves, and the `LISTEN` subscriber is told of the gap.
//!
//! Skipped (with a notice) where PostgreSQL is not installed, unless
//! `HERALD_REQUIRE_PG=1`.

use std::time::Duration;

use herald_pgtemp::{Options, PgTemp};
use herald_store::postgres::PgStore;
use herald_store::prelude::*;
use herald_store::testsuite::fixtures::{created, inserts, keyed};
use herald_store::{Store, StoreError, StoreOptions, WriteResult};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_reconnects_by_itself_after_a_crash() {
    let options = Options::default().set("synchronous_commit", "on");
    let Some(pg) = PgTemp::start_with(&options).expect("start cluster") else {
        return;
    };
    let url = pg.create_database("outage").expect("create database");
    let store = PgStore::open(&format!("{url}?pool_size=4"), &StoreOptions::default())
        .await
        .expect("open");
    store.init_shards(16).await.unwrap();
    let mut rx = store
        .subscribe()
        .await
        .unwrap()
        .expect("a postgres store listens");
    let before = created(
        &store
            .apply(inserts([keyed(1_000, "before")]))
            .await
            .unwrap()[0],
    );

    let pg = std::sync::Arc::new(pg);
    let crash = pg.clone();
    tokio::task::spawn_blocking(move || crash.restart_immediate())
        .await
        .unwrap()
        .expect("restart");

    // The pool's connections all died with the server: each failed call
    // drops one, and new ones are opened on demand.
    let mut failures = 0;
    let after = loop {
        match store.apply(inserts([keyed(2_000, "after")])).await {
            Ok(r) => break r,
            Err(e) => {
                assert!(matches!(e, StoreError::Unavailable { .. }), "{e:?}");
                failures += 1;
                assert!(failures < 50, "still failing: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    assert!(matches!(after[0], WriteResult::Created(_)), "{after:?}");
    let got = store.get_timer(before.id).await.unwrap().expect("kept");
    assert_eq!(got.id, before.id);

    // The listener reconnected and reported the gap with an empty batch.
    let gap = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match rx.recv().await {
                Some(batch) if batch.is_empty() => return true,
                Some(_) => continue,
                None => return false,
            }
        }
    })
    .await
    .expect("no gap reported within 30 s");
    assert!(gap, "the subscription ended");
}
