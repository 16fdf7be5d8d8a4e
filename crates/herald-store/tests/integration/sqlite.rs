//! SQLite-specific behaviour the generic conformance suite cannot express:
//! files, reopening, migrations, options, corrupt rows, several stores on one file.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use herald_core::{DEFAULT_TENANT, TimerState};
use herald_store::prelude::*;
use herald_store::sqlite::SqliteStore;
use herald_store::testsuite::fixtures::{
    completion, created, inserts, keyed, reminder, subject, timer,
};
use herald_store::{
    CompletionOutcome, MergeProbe, SqliteOptions, Store, StoreError, StoreOptions, Synchronous,
    WriteOp, WriteResult,
};

fn opts(synchronous: Synchronous, read_connections: usize) -> StoreOptions {
    StoreOptions {
        sqlite: SqliteOptions {
            synchronous,
            read_connections,
            max_page_count: None,
        },
        ..Default::default()
    }
}

fn user_version(path: &Path) -> i64 {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_survives_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("herald.db");
    let (a, b) = {
        let store = SqliteStore::open(&path, &StoreOptions::default())
            .await
            .unwrap();
        assert_eq!(store.init_shards(32).await.unwrap(), 32);
        let r = store
            .apply(inserts([keyed(100, "persist"), timer(200)]))
            .await
            .unwrap();
        let (a, b) = (created(&r[0]), created(&r[1]));
        let c = completion(&b, 1, CompletionOutcome::Done, 250);
        assert_eq!(
            store.complete(vec![c]).await.unwrap(),
            vec![herald_store::Applied::Yes]
        );
        (a, b)
    };
    let version = user_version(&path);
    assert!(version >= 1);
    // The store was dropped: its connections are closed and the WAL checkpointed away.
    assert!(
        !dir.path().join("herald.db-wal").exists(),
        "WAL left behind"
    );

    for _ in 0..2 {
        let store = SqliteStore::open(&path, &StoreOptions::default())
            .await
            .unwrap();
        assert_eq!(store.get_timer(a.id).await.unwrap(), Some(a.clone()));
        let b_now = store.get_timer(b.id).await.unwrap().unwrap();
        assert_eq!(b_now.state, TimerState::Done);
        assert_eq!(store.deliveries_for(b.id).await.unwrap().len(), 1);
        assert_eq!(store.init_shards(8).await.unwrap(), 32);
        // The idempotency index survived too.
        let again = store.apply(inserts([keyed(999, "persist")])).await.unwrap();
        assert_eq!(again, vec![WriteResult::Existing(a.clone())]);
        // Ids keep increasing after a reopen.
        let next = created(&store.apply(inserts([timer(1)])).await.unwrap()[0]);
        assert!(next.id > b.id);
        drop(store);
        assert_eq!(user_version(&path), version, "migrations re-ran");
    }
}

#[tokio::test]
async fn open_creates_missing_directories() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a/b/c/herald.db");
    let store = SqliteStore::open(&path, &StoreOptions::default())
        .await
        .unwrap();
    store.apply(inserts([timer(1)])).await.unwrap();
    assert!(path.exists());
    let conn = rusqlite::Connection::open(&path).unwrap();
    let mode: String = conn
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

#[tokio::test]
async fn open_by_url() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("x/herald.db").display());
    let store = herald_store::open(&url, &StoreOptions::default())
        .await
        .unwrap();
    assert_eq!(store.init_shards(4).await.unwrap(), 4);
    let mem = herald_store::open("sqlite::memory:", &StoreOptions::default())
        .await
        .unwrap();
    let r = mem.apply(inserts([timer(5)])).await.unwrap();
    let t = created(&r[0]);
    assert_eq!(mem.get_timer(t.id).await.unwrap(), Some(t));
    assert!(matches!(
        herald_store::open("mysql://nope", &StoreOptions::default()).await,
        Err(StoreError::UnsupportedUrl(_))
    ));
}

#[tokio::test]
async fn in_memory_stores_are_separate() {
    let a = SqliteStore::open_memory(&StoreOptions::default())
        .await
        .unwrap();
    let b = SqliteStore::open_memory(&StoreOptions::default())
        .await
        .unwrap();
    a.apply(inserts([timer(5)])).await.unwrap();
    assert_eq!(a.count_by_tenant_state().await.unwrap().len(), 1);
    assert!(b.count_by_tenant_state().await.unwrap().is_empty());
}

#[tokio::test]
async fn reads_work_without_reader_connections() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("h.db"), &opts(Synchronous::Normal, 0))
        .await
        .unwrap();
    let t = created(&store.apply(inserts([timer(5)])).await.unwrap()[0]);
    assert_eq!(store.get_timer(t.id).await.unwrap(), Some(t.clone()));
    assert_eq!(
        store
            .load_due(&herald_core::ShardSet::all(u16::MAX), None, 10, 10)
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(store.fetch_pending(&[t.id]).await.unwrap(), vec![t]);
}

#[tokio::test]
async fn refuses_a_newer_schema() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.db");
    drop(
        SqliteStore::open(&path, &StoreOptions::default())
            .await
            .unwrap(),
    );
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", 999).unwrap();
    }
    let err = SqliteStore::open(&path, &StoreOptions::default())
        .await
        .err()
        .unwrap();
    assert!(
        matches!(err, StoreError::Refused { ref why, .. } if why.contains("newer")),
        "{err}"
    );
}

#[tokio::test]
async fn corrupt_rows_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.db");
    let store = SqliteStore::open(&path, &opts(Synchronous::Normal, 1))
        .await
        .unwrap();
    let r = store.apply(inserts([timer(1), timer(2)])).await.unwrap();
    let (bad_state, bad_kind) = (created(&r[0]), created(&r[1]));
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute("UPDATE timers SET state = 99 WHERE id = ?1", [bad_state.id])
            .unwrap();
        conn.execute(
            "UPDATE timers SET kind = 'bogus' WHERE id = ?1",
            [bad_kind.id],
        )
        .unwrap();
    }
    for id in [bad_state.id, bad_kind.id] {
        let err = store.get_timer(id).await.err().unwrap();
        assert!(matches!(err, StoreError::Corrupt(_)), "{err}");
    }
    let err = store.count_by_tenant_state().await.err().unwrap();
    assert!(matches!(err, StoreError::Corrupt(_)), "{err}");
    let err = store.fetch_pending(&[bad_kind.id]).await.err().unwrap();
    assert!(matches!(err, StoreError::Corrupt(_)), "{err}");
    // A cancel that finds the corrupt row fails the whole batch: nothing commits.
    let err = store
        .apply(vec![
            WriteOp::InsertTimer(keyed(3, "rolled-back")),
            WriteOp::CancelTimer {
                tenant: DEFAULT_TENANT,
                id: bad_state.id,
                at: 5,
            },
        ])
        .await
        .err()
        .unwrap();
    assert!(matches!(err, StoreError::Corrupt(_)), "{err}");
    let r = store
        .apply(inserts([keyed(4, "rolled-back")]))
        .await
        .unwrap();
    assert!(
        matches!(r[0], WriteResult::Created(_)),
        "first batch was committed"
    );
}

/// Two stores (as two processes would) writing the same file at once: the second
/// writer waits on SQLite's lock through busy_timeout instead of failing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_stores_on_one_file_write_concurrently() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.db");
    let a: Arc<dyn Store> = Arc::new(
        SqliteStore::open(&path, &opts(Synchronous::Normal, 1))
            .await
            .unwrap(),
    );
    let b: Arc<dyn Store> = Arc::new(
        SqliteStore::open(&path, &opts(Synchronous::Normal, 1))
            .await
            .unwrap(),
    );
    let mut tasks = Vec::new();
    for (n, store) in [a.clone(), b.clone(), a.clone(), b.clone()]
        .into_iter()
        .enumerate()
    {
        tasks.push(tokio::spawn(async move {
            let mut ids = Vec::new();
            for batch in 0..20 {
                let timers = (0..200).map(|i| keyed(i, &format!("s{n}-b{batch}-{i}")));
                for r in store.apply(inserts(timers)).await.expect("apply") {
                    ids.push(created(&r).id);
                }
            }
            ids
        }));
    }
    let mut all = HashSet::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    assert_eq!(all.len(), 4 * 20 * 200);
    for store in [a, b] {
        assert_eq!(
            store.count_by_tenant_state().await.unwrap(),
            vec![(DEFAULT_TENANT, TimerState::Pending, 16_000)]
        );
    }
}

/// A bulk subscribe: 10,000 `AddReminder` ops in one apply, on a file store.
/// Prints the times; budgets are not asserted in tests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_reminders_in_one_batch() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("r.db"), &opts(Synchronous::Normal, 2))
        .await
        .unwrap();
    store
        .apply(vec![WriteOp::PutSubject(subject("hot", 4_000_000_000_000))])
        .await
        .unwrap();
    let ops: Vec<WriteOp> = (0..10_000)
        .map(|u| WriteOp::AddReminder(reminder(&format!("user-{u:05}"), "hot", 5)))
        .collect();
    let started = std::time::Instant::now();
    let r = store.apply(ops.clone()).await.unwrap();
    let first = started.elapsed();
    assert!(r.iter().all(|r| matches!(r, WriteResult::Created(_))));
    let ids: HashSet<i64> = r.iter().map(|r| created(r).id).collect();
    assert_eq!(ids.len(), 10_000);
    let started = std::time::Instant::now();
    let again = store.apply(ops).await.unwrap();
    let second = started.elapsed();
    assert!(
        again
            .iter()
            .all(|r| matches!(r, WriteResult::ReminderExists { .. }))
    );
    let probes: Vec<MergeProbe> = (0..512)
        .map(|u| MergeProbe {
            tenant: DEFAULT_TENANT,
            user_id: format!("user-{:05}", u * 19),
            channel: "app".into(),
            from: 0,
            until: i64::MAX,
        })
        .collect();
    let started = std::time::Instant::now();
    let found = store.pending_reminders(&probes).await.unwrap();
    let probe_time = started.elapsed();
    assert_eq!(found.len(), 512);
    eprintln!(
        "sqlite: 10,000 AddReminder in one apply: {first:?} (again, all set: {second:?}); \
         pending_reminders with 512 probes: {probe_time:?}"
    );
    assert_eq!(
        store.count_by_tenant_state().await.unwrap(),
        vec![(DEFAULT_TENANT, TimerState::Pending, 10_000)]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_database_refuses_writes_as_full_and_keeps_reading() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("herald.db");
    let mut o = opts(Synchronous::Normal, 1);
    o.sqlite.max_page_count = Some(200);
    let store = SqliteStore::open(&path, &o).await.unwrap();
    let first = created(&store.apply(inserts([timer(1_000)])).await.unwrap()[0]);
    let mut full = None;
    for batch in 0..1_000 {
        let ops = inserts((0..100).map(|i| keyed(2_000, &format!("k-{batch}-{i}"))));
        if let Err(e) = store.apply(ops).await {
            full = Some(e);
            break;
        }
    }
    let e = full.expect("the capped database never filled");
    assert!(matches!(e, StoreError::Full { .. }), "{e:?}");
    // Reads go on, and the refused batch left nothing behind.
    let got = store.get_timer(first.id).await.unwrap().unwrap();
    assert_eq!(got.id, first.id);
    // A smaller write that fits in what is left still works; nothing was
    // half-applied.
    let again = store.apply(inserts([keyed(3_000, "k-0-0")])).await.unwrap();
    assert!(matches!(again[0], WriteResult::Existing(_)), "{again:?}");
}
