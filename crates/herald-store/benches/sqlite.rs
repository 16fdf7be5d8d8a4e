//! SQLite store hot paths, through the async API as the engine calls them.
//!
//! `cargo bench -p herald-store --bench sqlite`

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use herald_store::prelude::*;
use herald_store::sqlite::SqliteStore;
use herald_store::testsuite::fixtures::{completion, created, inserts};
use herald_store::{
    CampaignStore, CompletionOutcome, DueCursor, SqliteOptions, StoreOptions, Synchronous,
};
use tokio::runtime::Runtime;

mod common;
use common::{pick, populate, realistic, runtime, send_batch, ten_k_inserts, upload_audience};

fn open(rt: &Runtime, dir: &tempfile::TempDir, name: &str, sync: &str) -> SqliteStore {
    let synchronous = match sync {
        "full" => Synchronous::Full,
        _ => Synchronous::Normal,
    };
    let opts = StoreOptions {
        sqlite: SqliteOptions {
            synchronous,
            read_connections: 2,
            max_page_count: None,
        },
        ..Default::default()
    };
    rt.block_on(SqliteStore::open(dir.path().join(name), &opts))
        .expect("open")
}

fn bench_apply(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut g = c.benchmark_group("apply");
    // Each iteration adds 10k timers: a short run keeps the file at a few 100k rows.
    g.sample_size(10).measurement_time(Duration::from_secs(4));
    for sync in ["normal", "full"] {
        let store = open(&rt, &dir, &format!("apply-{sync}.db"), sync);
        let mut next = 0;
        g.bench_function(format!("10k_inserts_{sync}"), |b| {
            b.iter_batched(
                || ten_k_inserts(&mut next),
                |ops| black_box(rt.block_on(store.apply(ops)).expect("apply")),
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

fn bench_reads(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(&rt, &dir, "reads.db", "normal");
    let ids = populate(&rt, &store, 200_000);
    let mut g = c.benchmark_group("reads");
    g.sample_size(50);

    g.bench_function("load_due_10k_first_page", |b| {
        b.iter(|| {
            let due = rt
                .block_on(store.load_due(
                    &herald_core::ShardSet::all(u16::MAX),
                    None,
                    i64::MAX,
                    10_000,
                ))
                .expect("load_due");
            assert_eq!(due.len(), 10_000);
            black_box(due)
        })
    });
    // Timers are spread over 60,000 ms, ~3 per ms: start mid-millisecond.
    let mid = rt
        .block_on(store.load_due(
            &herald_core::ShardSet::all(u16::MAX),
            None,
            i64::MAX,
            100_001,
        ))
        .expect("load_due")[100_000];
    let cursor = DueCursor {
        due_at: mid.due_at,
        id: mid.id,
    };
    g.bench_function("load_due_10k_after_cursor", |b| {
        b.iter(|| {
            let due = rt
                .block_on(store.load_due(
                    &herald_core::ShardSet::all(u16::MAX),
                    Some(cursor),
                    i64::MAX,
                    10_000,
                ))
                .expect("load_due");
            assert_eq!(due.len(), 10_000);
            black_box(due)
        })
    });

    let mut seed = 0x9e37_79b9_7f4a_7c15;
    g.bench_function("fetch_pending_1k", |b| {
        b.iter_batched(
            || pick(&ids, 1_000, &mut seed),
            |ask| black_box(rt.block_on(store.fetch_pending(&ask)).expect("fetch")),
            BatchSize::SmallInput,
        )
    });
    // Dispatch cost: a point read through the store (full record), versus the bare
    // minimum: tokio's blocking pool, a mutex-guarded connection, one column.
    // The same hot row every time, so the dispatch cost is what differs.
    let hot = ids[ids.len() / 2];
    g.bench_function("get_timer_via_store", |b| {
        b.iter(|| black_box(rt.block_on(store.get_timer(hot)).expect("get")))
    });
    let conn = Arc::new(parking_lot::Mutex::new(
        rusqlite::Connection::open(dir.path().join("reads.db")).expect("conn"),
    ));
    g.bench_function("get_timer_raw_spawn_blocking", |b| {
        b.iter(|| {
            let id = hot;
            let conn = Arc::clone(&conn);
            black_box(
                rt.block_on(rt.spawn_blocking(move || {
                    let conn = conn.lock();
                    let mut stmt = conn
                        .prepare_cached(
                            "SELECT id, shard, due_at, priority, kind, state, channel, \
                                 recipient, message, idempotency_key, attempts, last_error, \
                                 created_at, updated_at, delivered_at FROM timers WHERE id = ?1",
                        )
                        .expect("prepare");
                    stmt.query_row([id], |r| r.get::<_, String>(8))
                        .expect("row")
                }))
                .expect("join"),
            )
        })
    });
    g.finish();
}

fn bench_complete(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut g = c.benchmark_group("complete");
    g.sample_size(30).measurement_time(Duration::from_secs(10));
    for sync in ["normal", "full"] {
        let store = open(&rt, &dir, &format!("complete-{sync}.db"), sync);
        // Some history, so indexes are not trivially small.
        populate(&rt, &store, 100_000);
        let mut next = 1_000_000;
        g.bench_function(format!("2k_done_{sync}"), |b| {
            b.iter_batched(
                || {
                    let timers = (next..next + 2_000).map(realistic);
                    next += 2_000;
                    let r = rt.block_on(store.apply(inserts(timers))).expect("apply");
                    r.iter()
                        .enumerate()
                        .map(|(i, r)| {
                            let t = created(r);
                            let outcome = if i % 10 == 0 {
                                CompletionOutcome::Retry {
                                    next_due_at: t.due_at + 60_000,
                                }
                            } else {
                                CompletionOutcome::Done
                            };
                            completion(&t, 1, outcome, t.due_at + 5)
                        })
                        .collect::<Vec<_>>()
                },
                |batch| black_box(rt.block_on(store.complete(batch)).expect("complete")),
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

/// Campaign send log: one `record_sends` of 500 new recipients per iteration
/// (the engine's batch), each under a fresh claim of a 500-recipient segment of
/// a 1M-recipient job. The log grows through the run, so later batches land
/// in a table of millions of rows. Reported as rows per second.
fn bench_record_sends(c: &mut Criterion) {
    const BATCH: u64 = 500;
    const LEASE: i64 = 60_000;
    let rt = runtime();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut g = c.benchmark_group("campaign");
    g.sample_size(30)
        .measurement_time(Duration::from_secs(10))
        .throughput(Throughput::Elements(BATCH));
    for sync in ["normal", "full"] {
        let store = open(&rt, &dir, &format!("campaign-{sync}.db"), sync);
        let audience = upload_audience(&rt, &store, 1_000_000);
        let new_job = || {
            rt.block_on(store.create_job(
                herald_store::JobSpec {
                    segment_size: BATCH,
                    ..herald_store::testsuite::fixtures::job_spec(audience, BATCH)
                },
                0,
            ))
            .expect("create_job")
            .expect("job")
        };
        new_job();
        let mut now = 1;
        g.bench_function(format!("record_sends_500_{sync}"), |b| {
            b.iter_batched(
                || {
                    now += 1;
                    let claimed = match rt
                        .block_on(store.claim_segment("bench", now, LEASE))
                        .expect("claim")
                    {
                        Some(c) => c,
                        None => {
                            new_job();
                            rt.block_on(store.claim_segment("bench", now, LEASE))
                                .expect("claim")
                                .expect("a segment of the new job")
                        }
                    };
                    let batch = send_batch(claimed.segment.start, claimed.segment.end);
                    (claimed, batch, now)
                },
                |(claimed, batch, now)| {
                    let end = claimed.segment.end;
                    black_box(
                        rt.block_on(store.record_sends(&claimed.claim, end, batch, now, LEASE))
                            .expect("record_sends"),
                    )
                },
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

criterion_group!(
    benches,
    bench_apply,
    bench_reads,
    bench_complete,
    bench_record_sends
);
criterion_main!(benches);
