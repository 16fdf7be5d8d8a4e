//! Group-commit isolation on PostgreSQL, where one bad row fails its whole
//! transaction: a NUL in a text column (validation bypassed, as if a check
//! were missing) among 1,000 writes fails that write alone. Skipped with a
//! notice where PostgreSQL is not installed (unless `HERALD_REQUIRE_PG=1`).

use std::sync::Arc;

use herald_channels::LogChannel;
use herald_core::{Clock, DEFAULT_TENANT, RetryPolicy, SystemClock, TimerKind};
use herald_engine::{ChannelSpec, Engine, EngineConfig, EngineError};
use herald_pgtemp::{PgTemp, TempDatabase};
use herald_store::{NewTimer, StoreError, StoreOptions, WriteOp, WriteResult};

const N: usize = 1000;
const BAD: usize = 617;

async fn engine(prefix: &str) -> Option<(Engine, TempDatabase)> {
    let pg = PgTemp::shared().expect("start the throwaway PostgreSQL cluster")?;
    let db = pg.fresh_database(prefix).expect("create database");
    let store = herald_store::open(db.url(), &StoreOptions::default())
        .await
        .expect("open postgres store");
    let shards = store.init_shards(4).await.expect("shards");
    let spec = ChannelSpec::new(
        Arc::new(LogChannel::new("log")),
        1,
        None,
        RetryPolicy::default(),
    );
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let engine = Engine::start(
        store,
        clock,
        vec![spec],
        EngineConfig::default(),
        shards,
        "isolation",
    )
    .await;
    Some((engine, db))
}

/// A timer an hour out; the `BAD`th has a NUL in its recipient.
fn timer(i: usize) -> WriteOp {
    let recipient = if i == BAD {
        "bad\0row".to_string()
    } else {
        format!("r-{i}")
    };
    WriteOp::InsertTimer(NewTimer {
        tenant: DEFAULT_TENANT,
        shard: (i % 4) as u16,
        due_at: SystemClock.now_ms() + 3_600_000,
        priority: 5,
        kind: TimerKind::Timer,
        channel: "log".into(),
        recipient,
        message: "{}".into(),
        idempotency_key: None,
        created_at: SystemClock.now_ms(),
        traceparent: None,
        routing: None,
    })
}

async fn stored(engine: &Engine) -> u64 {
    engine
        .store()
        .count_by_tenant_state()
        .await
        .expect("count")
        .iter()
        .map(|(_, _, n)| n)
        .sum()
}

#[track_caller]
fn refused(e: &EngineError) {
    assert!(
        matches!(e, EngineError::Store(s) if matches!(**s, StoreError::Refused { .. })),
        "{e:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_bad_line_of_a_bulk_write_fails_alone() {
    let Some((engine, _db)) = engine("iso_each").await else {
        eprintln!("PostgreSQL not installed: skipped");
        return;
    };
    let results = engine
        .submit_each((0..N).map(timer).collect())
        .await
        .expect("the engine runs");
    assert_eq!(results.len(), N);
    for (i, r) in results.iter().enumerate() {
        match r {
            Err(e) if i == BAD => refused(e),
            Ok(WriteResult::Created(_)) if i != BAD => {}
            other => panic!("op {i}: {other:?}"),
        }
    }
    assert_eq!(stored(&engine).await, (N - 1) as u64);
    engine.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_bad_request_among_concurrent_ones_fails_alone() {
    let Some((engine, _db)) = engine("iso_whole").await else {
        eprintln!("PostgreSQL not installed: skipped");
        return;
    };
    let tasks: Vec<_> = (0..N)
        .map(|i| {
            let engine = engine.clone();
            tokio::spawn(async move { engine.submit(vec![timer(i)]).await })
        })
        .collect();
    for (i, t) in tasks.into_iter().enumerate() {
        match t.await.expect("task") {
            Err(e) if i == BAD => refused(&e),
            Ok(r) if i != BAD => assert!(matches!(r[..], [WriteResult::Created(_)])),
            other => panic!("request {i}: {other:?}"),
        }
    }
    assert_eq!(stored(&engine).await, (N - 1) as u64);
    engine.shutdown().await;
}
