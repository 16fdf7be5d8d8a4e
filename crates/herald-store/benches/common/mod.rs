//! Workload pieces both store benches share, so their figures compare.

use herald_store::testsuite::fixtures::{created, inserts, keyed, timer};
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

/// A sealed audience of `n` recipients (`user-00000042`-style ids), uploaded a
/// chunk at a time as the API does.
// Used by the benches that record campaign sends.
#[allow(dead_code)]
pub fn upload_audience(rt: &Runtime, store: &impl Store, n: u64) -> i64 {
    use herald_store::AUDIENCE_CHUNK;
    use herald_store::testsuite::fixtures::{chunk_starts, recipients};
    let id = rt
        .block_on(store.create_audience(herald_core::DEFAULT_TENANT, Some("bench".into()), 0))
        .expect("create_audience");
    for start in chunk_starts(n) {
        let end = (start + AUDIENCE_CHUNK).min(n);
        rt.block_on(store.append_audience(id, start, &recipients(start..end)))
            .expect("append_audience");
    }
    rt.block_on(store.seal_audience(id, n, 0))
        .expect("seal_audience")
        .expect("sealed");
    id
}

/// One batch of outcomes for a claimed segment: mostly delivered (with a
/// provider message id), one in twenty retryable, one in twenty refused.
#[allow(dead_code)]
pub fn send_batch(start: u64, end: u64) -> Vec<herald_store::SendEntry> {
    use herald_core::campaign::SendState;
    use herald_store::testsuite::fixtures::send;
    (start..end)
        .map(|i| {
            let state = match i % 20 {
                7 => SendState::Retry,
                13 => SendState::Failed,
                _ => SendState::Delivered,
            };
            let mut e = send(i, state);
            if let Some(m) = &mut e.provider_msgid {
                *m = format!("prov-{:016x}", i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            }
            e
        })
        .collect()
}
