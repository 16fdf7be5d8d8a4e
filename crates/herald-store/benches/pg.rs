//! PostgreSQL store hot paths, through the async API as the engine calls them,
//! against a throwaway local cluster (skipped when PostgreSQL is not installed).
//!
//! `cargo bench -p herald-store --bench pg`
//!
//! Two clusters: `fast` runs with `fsync=off` (query cost only, as in the tests),
//! `durable` with `fsync`, `synchronous_commit` and `full_page_writes` on (adds
//! the commit flush of this machine's disk).

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput};
use herald_pgtemp::{Options, PgTemp};
use herald_store::conformance::fixtures::{completion, created, inserts};
use herald_store::postgres::PgStore;
use herald_store::{CampaignStore, CompletionOutcome, DueCursor, Store, StoreOptions};
use tokio::runtime::Runtime;

mod common;
use common::{SendFeed, pick, populate, realistic, runtime, ten_k_inserts};

struct Clusters {
    fast: PgTemp,
    durable: PgTemp,
}

fn clusters() -> Option<Clusters> {
    let fast = PgTemp::start().expect("start cluster")?;
    let durable = PgTemp::start_with(
        &Options::default()
            .set("fsync", "on")
            .set("synchronous_commit", "on")
            .set("full_page_writes", "on"),
    )
    .expect("start durable cluster")?;
    Some(Clusters { fast, durable })
}

fn open(rt: &Runtime, pg: &PgTemp, name: &str) -> PgStore {
    let url = pg.create_database(name).expect("create database");
    rt.block_on(PgStore::open(&url, &StoreOptions::default()))
        .expect("open")
}

fn bench_apply(c: &mut Criterion, pgs: &Clusters) {
    let rt = runtime();
    let mut g = c.benchmark_group("pg_apply");
    g.sample_size(10).measurement_time(Duration::from_secs(8));
    for (label, pg) in [("fast", &pgs.fast), ("durable", &pgs.durable)] {
        let store = open(&rt, pg, &format!("apply_{label}"));
        let mut next = 0;
        g.bench_function(format!("10k_inserts_{label}"), |b| {
            b.iter_batched(
                || ten_k_inserts(&mut next),
                |ops| black_box(rt.block_on(store.apply(ops)).expect("apply")),
                BatchSize::PerIteration,
            )
        });
    }
    // The group-commit path at low load: one timer per transaction.
    let store = open(&rt, &pgs.durable, "apply_single");
    let mut n = 0;
    g.sample_size(30).measurement_time(Duration::from_secs(4));
    g.bench_function("1_insert_durable", |b| {
        b.iter(|| {
            n += 1;
            black_box(
                rt.block_on(store.apply(inserts([realistic(n)])))
                    .expect("apply"),
            )
        })
    });
    g.finish();
}

fn bench_reads(c: &mut Criterion, pgs: &Clusters) {
    let rt = runtime();
    let store = open(&rt, &pgs.fast, "reads");
    let ids = populate(&rt, &store, 200_000);
    let mut g = c.benchmark_group("pg_reads");
    g.sample_size(30);
    let all = herald_core::ShardSet::all(u16::MAX);

    g.bench_function("load_due_10k_first_page", |b| {
        b.iter(|| {
            let due = rt
                .block_on(store.load_due(&all, None, i64::MAX, 10_000))
                .expect("load_due");
            assert_eq!(due.len(), 10_000);
            black_box(due)
        })
    });
    let mid = rt
        .block_on(store.load_due(&all, None, i64::MAX, 100_001))
        .expect("load_due")[100_000];
    let cursor = DueCursor {
        due_at: mid.due_at,
        id: mid.id,
    };
    g.bench_function("load_due_10k_after_cursor", |b| {
        b.iter(|| {
            let due = rt
                .block_on(store.load_due(&all, Some(cursor), i64::MAX, 10_000))
                .expect("load_due");
            assert_eq!(due.len(), 10_000);
            black_box(due)
        })
    });
    // A node owning half of 16 shards.
    let mut half = herald_core::ShardSet::none(16);
    for s in (0..16).step_by(2) {
        half.insert(s);
    }
    g.bench_function("load_due_10k_half_the_shards", |b| {
        b.iter(|| {
            let due = rt
                .block_on(store.load_due(&half, Some(cursor), i64::MAX, 10_000))
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
    let hot = ids[ids.len() / 2];
    g.bench_function("get_timer", |b| {
        b.iter(|| black_box(rt.block_on(store.get_timer(hot)).expect("get")))
    });
    g.finish();
}

fn bench_complete(c: &mut Criterion, pgs: &Clusters) {
    let rt = runtime();
    let mut g = c.benchmark_group("pg_complete");
    g.sample_size(20).measurement_time(Duration::from_secs(10));
    for (label, pg) in [("fast", &pgs.fast), ("durable", &pgs.durable)] {
        let store = open(&rt, pg, &format!("complete_{label}"));
        // Some history, so indexes are not trivially small.
        populate(&rt, &store, 100_000);
        let mut next = 1_000_000;
        g.bench_function(format!("2k_done_{label}"), |b| {
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

/// `record_sends` as a worker calls it: 500 outcomes per batch under one
/// claim. `new` writes 500 fresh send-log rows (mostly delivered); `retried`
/// re-records 500 rows that were `retry` (the update path: each row locked,
/// read, rewritten). Reported as rows/s.
fn bench_record_sends(c: &mut Criterion, pgs: &Clusters) {
    const BATCH: u64 = 500;
    let rt = runtime();
    let mut g = c.benchmark_group("pg_record_sends");
    g.sample_size(20)
        .measurement_time(Duration::from_secs(10))
        .throughput(Throughput::Elements(BATCH));
    for (label, pg) in [("fast", &pgs.fast), ("durable", &pgs.durable)] {
        let store = open(&rt, pg, &format!("record_{label}"));
        let mut feed = SendFeed::new(&rt, &store, 1_000_000);
        g.bench_function(format!("500_new_{label}"), |b| {
            b.iter_batched(
                || {
                    let (claim, cursor, entries) = feed.batch(&rt, &store, BATCH, false);
                    (claim, cursor, entries, feed.now())
                },
                |(claim, cursor, entries, now)| {
                    black_box(
                        rt.block_on(store.record_sends(&claim, cursor, entries, now, 60_000))
                            .expect("record_sends"),
                    )
                },
                BatchSize::PerIteration,
            )
        });
        if label == "fast" {
            g.bench_function("500_retried_fast", |b| {
                b.iter_batched(
                    || {
                        let (claim, cursor, mut entries) = feed.batch(&rt, &store, BATCH, true);
                        rt.block_on(store.record_sends(
                            &claim,
                            cursor,
                            entries.clone(),
                            feed.now(),
                            60_000,
                        ))
                        .expect("record_sends");
                        for e in &mut entries {
                            e.state = herald_core::campaign::SendState::Delivered;
                            e.error = None;
                            e.provider_msgid = Some("retried".into());
                        }
                        (claim, cursor, entries, feed.now())
                    },
                    |(claim, cursor, entries, now)| {
                        black_box(
                            rt.block_on(store.record_sends(&claim, cursor, entries, now, 60_000))
                                .expect("record_sends"),
                        )
                    },
                    BatchSize::PerIteration,
                )
            });
        }
    }
    g.finish();
}

fn main() {
    let Some(pgs) = clusters() else {
        eprintln!("=== SKIPPING PostgreSQL benches: initdb/postgres not found ===");
        return;
    };
    let mut c = Criterion::default().configure_from_args();
    bench_apply(&mut c, &pgs);
    bench_reads(&mut c, &pgs);
    bench_complete(&mut c, &pgs);
    bench_record_sends(&mut c, &pgs);
    c.final_summary();
}
