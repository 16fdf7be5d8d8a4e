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

/// Batches for `record_sends` as a worker sends them: fresh indexes of one
/// claimed segment, mostly delivered, some retrying, a few failed. One job
/// over one uploaded audience, cut into a single segment; when it is used up
/// the next batch starts a new job over the same audience.
// Not every bench measures campaigns.
#[allow(dead_code)]
pub struct SendFeed {
    audience_id: i64,
    size: u64,
    /// The claim in use and the next index to send under it.
    claim: Option<(herald_store::SegmentClaim, u64)>,
    now: i64,
}

#[allow(dead_code)]
impl SendFeed {
    /// Uploads an audience of `size` recipients.
    pub fn new(rt: &Runtime, store: &impl Store, size: u64) -> Self {
        use herald_store::AUDIENCE_CHUNK;
        let now = 1_700_000_000_000;
        let audience_id = rt
            .block_on(store.create_audience(Some("bench".into()), now))
            .expect("create_audience");
        let mut start = 0;
        while start < size {
            let end = (start + AUDIENCE_CHUNK).min(size);
            let chunk: Vec<String> = (start..end).map(bench_recipient).collect();
            rt.block_on(store.append_audience(audience_id, start, &chunk))
                .expect("append_audience");
            start = end;
        }
        rt.block_on(store.seal_audience(audience_id, size, now))
            .expect("seal_audience")
            .expect("sealed");
        SendFeed {
            audience_id,
            size,
            claim: None,
            now,
        }
    }

    /// The next `n` recipients' outcomes (90% delivered, 7% retrying, 3%
    /// failed) in state `retry` only when `all_retry`, with the claim and
    /// cursor to record them under.
    pub fn batch(
        &mut self,
        rt: &Runtime,
        store: &impl Store,
        n: u64,
        all_retry: bool,
    ) -> (
        herald_store::SegmentClaim,
        u64,
        Vec<herald_store::SendEntry>,
    ) {
        use herald_core::campaign::SendState;
        self.now += 1;
        let (claim, at) = match self.claim.take() {
            Some((claim, at)) if at + n <= self.size => (claim, at),
            _ => {
                let spec = herald_store::JobSpec {
                    audience_id: self.audience_id,
                    channel: "log".into(),
                    message: r#"{"text":"bench"}"#.into(),
                    segment_size: self.size,
                    deadline_at: None,
                    priority: 0,
                    task_id: None,
                };
                rt.block_on(store.create_job(spec, self.now))
                    .expect("create_job")
                    .expect("sealed audience");
                let c = rt
                    .block_on(store.claim_segment("bench", self.now, 3_600_000))
                    .expect("claim_segment")
                    .expect("a segment");
                (c.claim, 0)
            }
        };
        let entries = (at..at + n)
            .map(|i| {
                let state = match i % 100 {
                    _ if all_retry => SendState::Retry,
                    0..=89 => SendState::Delivered,
                    90..=96 => SendState::Retry,
                    _ => SendState::Failed,
                };
                herald_store::SendEntry {
                    index: i,
                    recipient: bench_recipient(i),
                    state,
                    provider_msgid: (state == SendState::Delivered)
                        .then(|| format!("msg-{:016x}", i.wrapping_mul(0x9e37_79b9_7f4a_7c15))),
                    error: (state != SendState::Delivered)
                        .then(|| "503 Service Unavailable: try later".to_string()),
                }
            })
            .collect();
        self.claim = Some((claim.clone(), at + n));
        (claim, at + n, entries)
    }

    pub fn now(&self) -> i64 {
        self.now
    }
}

/// A realistic recipient id: a user id of a messaging platform.
#[allow(dead_code)]
fn bench_recipient(i: u64) -> String {
    format!(
        "wx-user-{:012}",
        i.wrapping_mul(2_654_435_761) % 1_000_000_000_000
    )
}

/// A sealed audience of `n` recipients (`user-00000042`-style ids), uploaded a
/// chunk at a time as the API does.
// Only the SQLite bench records campaign sends so far; the PostgreSQL one can reuse it.
#[allow(dead_code)]
pub fn upload_audience(rt: &Runtime, store: &impl Store, n: u64) -> i64 {
    use herald_store::AUDIENCE_CHUNK;
    use herald_store::conformance_campaign::fixtures::{chunk_starts, recipients};
    let id = rt
        .block_on(store.create_audience(Some("bench".into()), 0))
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
    use herald_store::conformance_campaign::fixtures::send;
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
