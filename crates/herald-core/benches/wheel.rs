//! Timing wheel throughput at the scale a node runs at (1M pending timers).
//!
//! `cargo bench -p herald-core --bench wheel` (add `-- --quick` for a smoke run).

use std::hint::black_box;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use herald_core::Wheel;

const N: u64 = 1_000_000;
const START: u64 = 1_700_000_000_000;
const MINUTE_MS: u64 = 60_000;

/// Shaped like the engine's payload (16 bytes).
#[derive(Clone, Copy)]
#[allow(dead_code)]
struct Job {
    id: i64,
    shard: u16,
    priority: u8,
}

fn job(i: u64) -> Job {
    Job {
        id: i as i64,
        shard: (i % 256) as u16,
        priority: (i % 10) as u8,
    }
}

/// A fixed pseudo-random offset in `0..span` (multiplicative hashing), so
/// runs are repeatable without an RNG dependency.
fn offset(i: u64, span: u64) -> u64 {
    (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) % span
}

fn spread_over_a_minute() -> Wheel<Job> {
    let mut wheel = Wheel::new(START);
    for i in 0..N {
        wheel.insert(START + 1 + offset(i, MINUTE_MS), job(i));
    }
    wheel
}

fn insert(c: &mut Criterion) {
    let mut group = c.benchmark_group("wheel");
    group.sample_size(10);
    group.bench_function("insert 1M over 60s", |b| {
        b.iter_batched(
            || Wheel::new(START),
            |mut wheel| {
                for i in 0..N {
                    wheel.insert(START + 1 + offset(i, MINUTE_MS), job(i));
                }
                wheel
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

fn drain(c: &mut Criterion) {
    let mut group = c.benchmark_group("wheel");
    group.sample_size(10);
    // A driver ticking every millisecond through the whole minute.
    group.bench_function("advance 1ms ticks through 1M over 60s", |b| {
        b.iter_batched(
            || (spread_over_a_minute(), Vec::with_capacity(1024)),
            |(mut wheel, mut out)| {
                for t in 1..=MINUTE_MS {
                    wheel.advance(START + t, &mut out);
                    black_box(&out);
                    out.clear();
                }
                assert!(wheel.is_empty());
                wheel
            },
            BatchSize::PerIteration,
        )
    });
    group.bench_function("1M due at the same ms, one advance", |b| {
        b.iter_batched(
            || {
                let mut wheel = Wheel::new(START);
                for i in 0..N {
                    wheel.insert(START + 30_000, job(i));
                }
                (wheel, Vec::with_capacity(N as usize))
            },
            |(mut wheel, mut out)| {
                wheel.advance(START + 30_000, &mut out);
                assert_eq!(out.len(), N as usize);
                (wheel, out)
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

fn insert_cancel(c: &mut Criterion) {
    let mut group = c.benchmark_group("wheel");
    // One insert plus one cancel against a wheel already holding 1M timers.
    let mut wheel = spread_over_a_minute();
    let mut i = N;
    group.bench_function("insert+cancel with 1M pending", |b| {
        b.iter(|| {
            i += 1;
            let key = wheel.insert(START + 1 + offset(i, MINUTE_MS), job(i));
            black_box(wheel.cancel(key))
        })
    });
    group.finish();
}

criterion_group!(benches, insert, drain, insert_cancel);
criterion_main!(benches);
