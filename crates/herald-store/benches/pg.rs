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
use herald_core::campaign::SendState;
use herald_pgtemp::{Options, PgTemp};
use herald_store::postgres::PgStore;
use herald_store::prelude::*;
use herald_store::testsuite::fixtures::{completion, created, inserts, job_spec};
use herald_store::{CampaignStore, CompletionOutcome, DueCursor, JobSpec, SendEntry, StoreOptions};
use tokio::runtime::Runtime;

mod common;
use common::{pick, populate, realistic, runtime, send_batch, ten_k_inserts, upload_audience};

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

/// Campaign send log, as in the SQLite bench: one `record_sends` of 500
/// recipients per iteration (the engine's batch), each under a fresh claim of a
/// 500-recipient segment of a 1M-recipient job, so the log grows through the
/// run. `new` writes 500 new rows (mostly delivered); `retried` re-records 500
/// rows that were `retry` (the update path: each row locked, read and
/// rewritten). Reported as rows per second.
fn bench_record_sends(c: &mut Criterion, pgs: &Clusters) {
    const BATCH: u64 = 500;
    const LEASE: i64 = 60_000;
    let rt = runtime();
    let mut g = c.benchmark_group("pg_record_sends");
    g.sample_size(30)
        .measurement_time(Duration::from_secs(10))
        .throughput(Throughput::Elements(BATCH));
    for (label, pg) in [("fast", &pgs.fast), ("durable", &pgs.durable)] {
        let store = open(&rt, pg, &format!("record_{label}"));
        let audience = upload_audience(&rt, &store, 1_000_000);
        let mut now = 1;
        // A fresh segment of the job, or of a new one once it is all claimed.
        let claim = |now: i64| {
            let c = rt
                .block_on(store.claim_segment("bench", now, LEASE))
                .expect("claim");
            c.unwrap_or_else(|| {
                let spec = JobSpec {
                    segment_size: BATCH,
                    ..job_spec(audience, BATCH)
                };
                rt.block_on(store.create_job(spec, 0))
                    .expect("create_job")
                    .expect("job");
                rt.block_on(store.claim_segment("bench", now, LEASE))
                    .expect("claim")
                    .expect("a segment of the new job")
            })
        };
        let variants: &[(&str, bool)] = if label == "fast" {
            &[("new", false), ("retried", true)]
        } else {
            &[("new", false)]
        };
        for &(variant, retried) in variants {
            g.bench_function(format!("500_{variant}_{label}"), |b| {
                b.iter_batched(
                    || {
                        now += 1;
                        let claimed = claim(now);
                        let (start, end) = (claimed.segment.start, claimed.segment.end);
                        let mut batch = send_batch(start, end);
                        if retried {
                            let first = batch
                                .iter()
                                .map(|e| SendEntry {
                                    state: SendState::Retry,
                                    ..e.clone()
                                })
                                .collect();
                            rt.block_on(store.record_sends(
                                &claimed.claim,
                                start,
                                first,
                                now,
                                LEASE,
                            ))
                            .expect("record_sends");
                            for e in &mut batch {
                                e.error = None;
                                e.state = SendState::Delivered;
                            }
                        }
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
