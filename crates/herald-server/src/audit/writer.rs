//! Writes audit entries in batches, off the request path.
//!
//! A request hands its entry to a bounded channel and goes on; one task
//! writes what has gathered in one `append_audit` transaction, at most every
//! [`AuditSettings::flush_every`]. Refusals before any key was recognised go
//! to the [`Tally`] instead, which the same task writes every
//! [`AuditSettings::tally_every`] and when it stops. So the audit log costs the store a few
//! transactions a second however busy the API is, and an entry waits at most
//! that long: a crash loses at most the last ~100 ms of entries. A full
//! channel (the store is slower than the API) drops entries with a warning
//! and a counter rather than slow every request down.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use herald_store::{AccessStore, NewAuditEntry};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::tally::{self, RefusalKey, Tally};

/// Entries dropped because the writer was behind, or because the store
/// refused a batch.
pub const AUDIT_DROPPED: &str = "herald_audit_dropped_total";
/// Entries written.
pub const AUDIT_WRITTEN: &str = "herald_audit_written_total";

/// How the writer batches.
#[derive(Debug, Clone, Copy)]
pub struct AuditSettings {
    /// Entries waiting at most; beyond it new ones are dropped.
    pub capacity: usize,
    /// Most entries per transaction.
    pub max_batch: usize,
    /// Longest an entry waits before its batch is written.
    pub flush_every: Duration,
    /// How often the tally of refusals before any key was recognised is
    /// written (one entry per kind and interval).
    pub tally_every: Duration,
    /// Whether creating timers, reminders and subscribers one at a time is
    /// recorded too (`[audit] data_plane`); see [`super::recorder`].
    pub data_plane: bool,
}

impl Default for AuditSettings {
    fn default() -> Self {
        Self {
            capacity: 65_536,
            max_batch: 4_096,
            flush_every: Duration::from_millis(100),
            tally_every: Duration::from_secs(60),
            data_plane: false,
        }
    }
}

/// Where requests leave their entries. Cheap to clone.
#[derive(Clone)]
pub struct AuditLog {
    tx: mpsc::Sender<NewAuditEntry>,
    dropped: Arc<AtomicU64>,
    tally: Arc<Tally>,
    data_plane: bool,
}

/// The task that writes; [`AuditWriter::shutdown`] writes what is left.
pub struct AuditWriter {
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl AuditLog {
    /// Starts the writer task on `store` (needs a tokio runtime).
    pub fn start(store: Arc<dyn AccessStore>, settings: AuditSettings) -> (AuditLog, AuditWriter) {
        metrics::describe_counter!(
            AUDIT_DROPPED,
            "Audit entries dropped: the writer was behind, or the store refused a batch."
        );
        metrics::describe_counter!(AUDIT_WRITTEN, "Audit entries written.");
        tally::describe();
        let (tx, rx) = mpsc::channel(settings.capacity.max(1));
        let (stop_tx, stop_rx) = oneshot::channel();
        let tally = Arc::new(Tally::default());
        let task = tokio::spawn(run(store, rx, stop_rx, tally.clone(), settings));
        let log = AuditLog {
            tx,
            dropped: Arc::new(AtomicU64::new(0)),
            tally,
            data_plane: settings.data_plane,
        };
        let writer = AuditWriter {
            stop: Some(stop_tx),
            task,
        };
        (log, writer)
    }

    /// Whether single creates of data are recorded ([`AuditSettings::data_plane`]).
    pub fn data_plane(&self) -> bool {
        self.data_plane
    }

    /// Queues an entry; never waits.
    pub fn record(&self, entry: NewAuditEntry) {
        if let Err(e) = self.tx.try_send(entry) {
            metrics::counter!(AUDIT_DROPPED).increment(1);
            let dropped = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            // One warning per power of two keeps a long stall from flooding
            // the log while still saying it goes on.
            if dropped.is_power_of_two() {
                let why = match e {
                    mpsc::error::TrySendError::Full(_) => "the audit writer is behind",
                    mpsc::error::TrySendError::Closed(_) => "the audit writer has stopped",
                };
                tracing::warn!(dropped, why, "audit entry dropped");
            }
        }
    }
}

impl AuditLog {
    /// Counts a request refused before any key was recognised, at `at`
    /// (unix ms): in the metric at once, in the audit log as part of the
    /// next tally. Never waits.
    pub fn refused(&self, key: RefusalKey, at: i64) {
        self.tally.add(key, at);
    }
}

impl AuditWriter {
    /// Writes every entry queued so far, then stops. Entries recorded after
    /// this are dropped (and counted).
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Err(e) = (&mut self.task).await {
            tracing::error!(error = %e, "the audit writer failed");
        }
    }
}

async fn run(
    store: Arc<dyn AccessStore>,
    mut rx: mpsc::Receiver<NewAuditEntry>,
    mut stop: oneshot::Receiver<()>,
    tally: Arc<Tally>,
    settings: AuditSettings,
) {
    let mut tally_due = tokio::time::interval_at(
        Instant::now() + settings.tally_every,
        settings.tally_every.max(Duration::from_millis(1)),
    );
    tally_due.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut batch = Vec::with_capacity(settings.max_batch);
    // A first entry is written at once; after a write, the next waits until
    // `flush_every` has passed, gathering what comes meanwhile.
    let mut next_write = Instant::now();
    let mut stopping = false;
    // Dropping the [`AuditWriter`] without a shutdown leaves the task
    // running until every [`AuditLog`] is gone.
    let mut watch_stop = true;
    while !stopping {
        let mut tally_now = false;
        tokio::select! {
            got = rx.recv_many(&mut batch, settings.max_batch) => stopping = got == 0,
            sent = &mut stop, if watch_stop => (stopping, watch_stop) = (sent.is_ok(), false),
            _ = tally_due.tick() => tally_now = true,
        }
        if tally_now {
            write(&*store, &mut tally.take()).await;
            continue;
        }
        while !stopping && batch.len() < settings.max_batch {
            let room = settings.max_batch - batch.len();
            tokio::select! {
                got = rx.recv_many(&mut batch, room) => stopping = got == 0,
                sent = &mut stop, if watch_stop => (stopping, watch_stop) = (sent.is_ok(), false),
                _ = tokio::time::sleep_until(next_write) => break,
            }
        }
        next_write = Instant::now() + settings.flush_every;
        write(&*store, &mut batch).await;
    }
    // Whatever was queued before the stop is still written.
    rx.close();
    while rx.recv_many(&mut batch, settings.max_batch).await > 0 {
        write(&*store, &mut batch).await;
    }
    write(&*store, &mut batch).await;
    // And what was counted since the last tally.
    write(&*store, &mut tally.take()).await;
}

/// Writes and empties `batch`; a failed batch is dropped, counted and
/// logged (entries are not worth holding requests up for).
async fn write(store: &dyn AccessStore, batch: &mut Vec<NewAuditEntry>) {
    if batch.is_empty() {
        return;
    }
    let n = batch.len() as u64;
    match store.append_audit(std::mem::take(batch)).await {
        Ok(()) => metrics::counter!(AUDIT_WRITTEN).increment(n),
        Err(e) => {
            metrics::counter!(AUDIT_DROPPED).increment(n);
            tracing::warn!(error = %e, entries = n, "audit entries could not be written");
        }
    }
}

#[cfg(test)]
mod tests {
    use herald_core::DEFAULT_TENANT;
    use herald_store::Store;

    use super::*;

    fn entry(i: i64) -> NewAuditEntry {
        NewAuditEntry {
            at: 1_000 + i,
            key_id: None,
            key_name: None,
            tenant: DEFAULT_TENANT,
            method: "POST".into(),
            route: "/v1/timers".into(),
            resource_id: Some(i.to_string()),
            status: 201,
            count: 1,
            reason: None,
        }
    }

    fn oldest_first() -> herald_store::AuditFilter {
        herald_store::AuditFilter {
            oldest_first: true,
            ..Default::default()
        }
    }

    async fn store() -> Arc<dyn Store> {
        herald_store::open("sqlite::memory:", &Default::default())
            .await
            .expect("sqlite store")
    }

    async fn stored(store: &Arc<dyn Store>) -> Vec<i64> {
        let all = store
            .list_audit(oldest_first(), None, 10_000)
            .await
            .unwrap();
        all.iter().map(|e| e.at - 1_000).collect()
    }

    #[tokio::test]
    async fn entries_are_written_soon_and_in_order() {
        let store = store().await;
        let (log, writer) = AuditLog::start(store.clone(), AuditSettings::default());
        for i in 0..10 {
            log.record(entry(i));
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        while stored(&store).await.len() < 10 {
            assert!(std::time::Instant::now() < deadline, "not written");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(stored(&store).await, (0..10).collect::<Vec<_>>());
        writer.shutdown().await;
    }

    #[tokio::test]
    async fn shutdown_writes_what_was_queued() {
        let store = store().await;
        let settings = AuditSettings {
            flush_every: Duration::from_secs(3600),
            ..AuditSettings::default()
        };
        let (log, writer) = AuditLog::start(store.clone(), settings);
        log.record(entry(0));
        // The first is written at once; the rest wait for the hour...
        tokio::time::sleep(Duration::from_millis(50)).await;
        for i in 1..5 {
            log.record(entry(i));
        }
        // ...unless the node stops.
        writer.shutdown().await;
        assert_eq!(stored(&store).await, (0..5).collect::<Vec<_>>());
        // Late entries are dropped, not waited on.
        log.record(entry(9));
        assert_eq!(stored(&store).await.len(), 5);
    }

    #[tokio::test]
    async fn a_full_queue_drops_instead_of_waiting() {
        let store = store().await;
        let settings = AuditSettings {
            capacity: 4,
            max_batch: 2,
            flush_every: Duration::from_secs(3600),
            tally_every: Duration::from_secs(3600),
            data_plane: false,
        };
        let (log, writer) = AuditLog::start(store.clone(), settings);
        for i in 0..100 {
            log.record(entry(i));
        }
        assert!(log.dropped.load(Ordering::Relaxed) >= 90);
        writer.shutdown().await;
        let kept = stored(&store).await;
        assert!(!kept.is_empty() && kept.len() <= 10, "{kept:?}");
    }

    /// A flood of refusals before any key was recognised is one entry per
    /// kind and interval, written at the interval and when the node stops.
    #[tokio::test]
    async fn refusals_are_written_as_tallies() {
        use axum::http::Method;

        use crate::access::Unrecognised;

        let store = store().await;
        let settings = AuditSettings {
            tally_every: Duration::from_millis(200),
            ..AuditSettings::default()
        };
        let (log, writer) = AuditLog::start(store.clone(), settings);
        let key = |reason| RefusalKey::new(reason, &Method::POST, Some("/v1/timers"), 401);
        for i in 0..10_000 {
            log.refused(key(Unrecognised::NoKey), 1_000 + i);
        }
        log.refused(key(Unrecognised::InvalidKey), 5_000);
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        let tallies = loop {
            let all = store.list_audit(oldest_first(), None, 100).await.unwrap();
            if !all.is_empty() {
                break all;
            }
            assert!(std::time::Instant::now() < deadline, "no tally written");
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let brief: Vec<_> = tallies
            .iter()
            .map(|e| (e.at, e.count, e.reason.as_deref(), e.status))
            .collect();
        assert_eq!(
            brief,
            [
                (1_000, 10_000, Some("no_key"), 401),
                (5_000, 1, Some("invalid_key"), 401)
            ]
        );
        // What is counted after the last interval is written at shutdown.
        log.refused(key(Unrecognised::NoKey), 9_000);
        writer.shutdown().await;
        let all = store.list_audit(oldest_first(), None, 100).await.unwrap();
        assert_eq!(all.len(), 3, "{all:?}");
        assert_eq!((all[2].at, all[2].count), (9_000, 1));
    }
}
