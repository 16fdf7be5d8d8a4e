//! Workload pieces both store benches share, so their figures compare.

use herald_store::conformance::fixtures::{created, inserts, keyed, timer};
use herald_store::{NewTimer, Store, WriteOp};
use tokio::runtime::Runtime;

/// Two worker threads: the budget machine has two cores.
pub fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// A realistic timer: a webhook with a small JSON body; every other one keyed.
pub fn realistic(n: i64) -> NewTimer {
    let mut t = if n % 2 == 0 {
        keyed(
            1_700_000_000_000 + n % 60_000,
            &format!("bench-{n}-{}", n * 7919),
        )
    } else {
        timer(1_700_000_000_000 + n % 60_000)
    };
    t.message = format!(r#"{{"text":"reminder {n}","url":"https://example.test/r/{n}"}}"#);
    t.recipient = format!("https://hooks.example.test/u/{}", n % 5000);
    t
}

pub fn ten_k_inserts(start: &mut i64) -> Vec<WriteOp> {
    let ops = inserts((*start..*start + 10_000).map(realistic));
    *start += 10_000;
    ops
}

/// Inserts `n` realistic timers in batches of 10,000; returns their ids.
pub fn populate(rt: &Runtime, store: &impl Store, n: i64) -> Vec<i64> {
    let mut ids = Vec::with_capacity(n as usize);
    let mut next = 0;
    while next < n {
        let r = rt
            .block_on(store.apply(ten_k_inserts(&mut next)))
            .expect("apply");
        ids.extend(r.iter().map(|r| created(r).id));
    }
    ids
}

/// Deterministic pseudo-random picks (xorshift), no extra dependency.
pub fn pick(ids: &[i64], n: usize, seed: &mut u64) -> Vec<i64> {
    (0..n)
        .map(|_| {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            ids[(*seed % ids.len() as u64) as usize]
        })
        .collect()
}
