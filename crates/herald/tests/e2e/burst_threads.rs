//! What a burst leaves behind in an idle node, on the real binary (issue
//! 35, item 5): 260 concurrent audience uploads on SQLite queue for the
//! store's connections as tasks, not as threads, so the process's thread
//! count stays bounded during the burst and falls back after it; and the
//! process uses no transparent huge pages, which had an idle node's RSS
//! climb to about 1 GB after such a burst.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use common::Server;

/// Concurrent uploads in the burst (the figure).
const UPLOADS: usize = 260;
/// Recipients per upload.
const RECIPIENTS: usize = 2_000;
/// Most threads the process may run during the burst: the runtime's
/// workers and the main thread, the checkpointer, one blocking thread per
/// store connection (a writer and four readers) and a few to spare. Before
/// the fix a thread was started per waiting store call: about 220.
const MOST_THREADS: usize = 24;

fn threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// `key` of `/proc/PID/status`, as it is written (e.g. `THP_enabled`).
fn status_field(pid: u32, key: &str) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    Some(line[key.len()..].trim_start_matches(':').trim().to_string())
}

/// Anonymous memory backed by transparent huge pages, in KiB, over every
/// mapping of the process.
fn anon_huge_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/smaps"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.strip_prefix("AnonHugePages:"))
        .filter_map(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

#[tokio::test]
async fn a_burst_of_uploads_leaves_few_threads_and_no_huge_pages() {
    // Every upload is admitted: the burst is what reaches the store.
    let server = Server::start(
        "[api]\nmax_inflight_body_bytes = 1073741824\nmax_caller_body_bytes = 1073741824",
    )
    .await;
    let pid = server.child.as_ref().and_then(|c| c.id()).expect("pid");
    let at_start = threads(pid);
    let peak = Arc::new(AtomicUsize::new(at_start));
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (peak, stop) = (peak.clone(), stop.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                peak.fetch_max(threads(pid), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
    };
    let body: String = (0..RECIPIENTS).map(|i| format!("user-{i}\n")).collect();
    let uploads: Vec<_> = (0..UPLOADS)
        .map(|k| {
            let (url, body) = (server.url.clone(), body.clone());
            tokio::spawn(async move {
                let resp = common::client()
                    .post(format!("{url}/v1/audiences?name=burst-{k}"))
                    .header("content-type", "text/csv")
                    .body(body)
                    .send()
                    .await
                    .expect("upload sent");
                resp.status().as_u16()
            })
        })
        .collect();
    let mut statuses = Vec::new();
    for u in uploads {
        statuses.push(u.await.expect("upload task"));
    }
    stop.store(true, Ordering::Relaxed);
    sampler.await.ok();
    assert!(
        statuses.iter().all(|s| *s == 201),
        "every upload is stored: {statuses:?}\n{}",
        server.log()
    );
    let peak = peak.load(Ordering::Relaxed);
    // Idle blocking threads go after a couple of seconds.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let after = threads(pid);
    let huge = anon_huge_kib(pid);
    let thp = status_field(pid, "THP_enabled");
    println!(
        "burst threads: {UPLOADS} uploads of {RECIPIENTS} recipients: threads at start \
         {at_start}, peak {peak}, 6 s after {after}; AnonHugePages {huge} KiB; THP_enabled {thp:?}; \
         VmRSS {:?}",
        status_field(pid, "VmRSS")
    );
    assert!(
        peak <= MOST_THREADS,
        "{peak} threads during the burst (at most {MOST_THREADS})"
    );
    // The background polls (channel pauses, templates, stats, early-start
    // planning) each run a store call on a blocking thread now and then;
    // when two meet, a second blocking thread lives out its keep-alive. So
    // idle is the count at start, give or take those two.
    assert!(
        after <= at_start.max(MOST_THREADS / 2) + 2,
        "{after} threads once idle (at start {at_start})"
    );
    assert_eq!(huge, 0, "no transparent huge pages are used");
    if let Some(flag) = thp {
        assert_eq!(flag, "0", "transparent huge pages are off for the process");
    }
}
