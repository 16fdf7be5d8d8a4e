//! The retention sweeper: it deletes what is older than the `[retention]`
//! settings (see `mod.rs`). It runs on one node at a time (the store's named
//! lease [`RETENTION_LEASE`]), every `interval`, and for each kind calls
//! [`Store::purge`] in batches of `batch` rows, each its own short
//! transaction, until the kind has nothing older than its cutoff. After each
//! batch it pauses as long as the batch took: deleting never takes more than
//! half of the store's writer (SQLite has one) or of a core, so timers keep
//! firing on time while millions of old rows go (`herald bench purge`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use herald_core::Clock;
use herald_store::{Holder, PartitionCutoffs, RetentionKind, Store};

use super::RetentionConfig;
use crate::loops::stop::Stop;

/// Name of the store lease under which one node deletes what is old.
pub const RETENTION_LEASE: &str = "retention";

/// Rows of one kind per sweep at most, so one busy kind cannot starve the
/// others; what is left waits for the next sweep.
const MAX_ROWS: usize = 10_000_000;

/// The shortest pause between two batches.
const MIN_PAUSE: Duration = Duration::from_millis(1);

/// What the retention sweeper needs.
pub(crate) struct Sweeper {
    pub store: Arc<dyn Store>,
    pub clock: Arc<dyn Clock>,
    /// `[retention]`; a reload replaces it.
    pub cfg: crate::loops::tuned::Tuned<RetentionConfig>,
    pub holder: Holder,
    pub stop: Arc<Stop>,
}

impl Sweeper {
    /// Sweeps every `interval` while this node holds the lease. The settings
    /// are read each round, so a reload changes what is kept and how often.
    pub(crate) async fn run(self: Arc<Self>) {
        let mut held = false;
        while !self.stop.is_stopped() {
            let cfg = self.cfg.get();
            let interval = cfg.interval_ms.max(100);
            // Long enough to outlast a sweep between renewals, short enough that
            // another node takes over soon after this one dies.
            let ttl = i64::try_from(interval.saturating_mul(3))
                .unwrap_or(i64::MAX)
                .max(30_000);
            // Never idle, even when every configured kind is kept for ever:
            // spent cap counters always go.
            let now = self.clock.now_ms();
            let lease = self
                .store
                .acquire_lease(RETENTION_LEASE, &self.holder, now, ttl)
                .await;
            match lease {
                Ok(Some(_)) => {
                    if !held {
                        tracing::info!(node = %self.holder.node_id, incarnation = self.holder.incarnation, "this node now deletes what retention lets go");
                        held = true;
                    }
                    self.sweep_once().await;
                }
                Ok(None) => held = false,
                Err(e) => tracing::warn!(error = %e, "taking the retention lease failed"),
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(interval)) => {}
                _ = self.stop.wait() => {}
            }
        }
        if held {
            let _ = self
                .store
                .release_lease(RETENTION_LEASE, &self.holder)
                .await;
        }
    }

    /// One pass over every kind; returns the rows deleted per kind.
    pub(crate) async fn sweep_once(&self) -> Vec<(RetentionKind, u64)> {
        self.maintain_partitions().await;
        let mut out = Vec::new();
        for kind in RetentionKind::ALL {
            let Some(cutoff) = self.cfg.get().keep(kind).cutoff(self.clock.now_ms()) else {
                continue;
            };
            let deleted = self.purge_kind(kind, cutoff).await;
            if deleted > 0 {
                tracing::info!(kind = kind.as_str(), deleted, cutoff, "retention deleted");
            }
            out.push((kind, deleted));
        }
        out
    }

    /// Partitions first (PostgreSQL): a partition dropped whole is rows
    /// the batches below need not delete one by one.
    async fn maintain_partitions(&self) {
        let now = self.clock.now_ms();
        let cfg = self.cfg.get();
        let cutoffs = PartitionCutoffs {
            timers: cfg.keep(RetentionKind::Timers).cutoff(now),
            send_log: cfg.keep(RetentionKind::SendLog).cutoff(now),
        };
        match self.store.maintain_partitions(cutoffs).await {
            Ok(c) if c.created > 0 || c.dropped > 0 => {
                tracing::info!(
                    created = c.created,
                    dropped = c.dropped,
                    "retention kept the send-log partitions"
                );
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "keeping the send-log partitions failed"),
        }
    }

    /// Batches of `kind` until one comes back short (nothing older is left).
    async fn purge_kind(&self, kind: RetentionKind, cutoff: i64) -> u64 {
        let counter =
            metrics::counter!(crate::observe::metrics::RETENTION_DELETED, "kind" => kind.as_str());
        let mut total = 0;
        let batch = self.cfg.get().batch.max(1);
        for _ in 0..MAX_ROWS / batch {
            if self.stop.is_stopped() {
                break;
            }
            let began = Instant::now();
            match self.store.purge(kind, cutoff, batch).await {
                Ok(n) => {
                    counter.increment(n);
                    total += n;
                    tracing::debug!(kind = kind.as_str(), deleted = n, "retention batch");
                    if n < batch as u64 {
                        break;
                    }
                }
                Err(e) => {
                    tracing::warn!(kind = kind.as_str(), error = %e, "retention batch failed");
                    break;
                }
            }
            // As long as the batch took: the writer and the CPU are the fire
            // path's at least half of the time.
            tokio::select! {
                _ = tokio::time::sleep(began.elapsed().max(MIN_PAUSE)) => {}
                _ = self.stop.wait() => break,
            }
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_sweeper_deletes_only_under_its_lease() {
        use herald_core::ManualClock;
        use herald_store::NewAuditEntry;
        let store: Arc<dyn Store> = Arc::new(
            herald_store::sqlite::SqliteStore::open_memory(&Default::default())
                .await
                .unwrap(),
        );
        let now = 1_700_000_000_000;
        let clock = Arc::new(ManualClock::new(now));
        let entry = |at| NewAuditEntry {
            at,
            key_id: None,
            key_name: None,
            tenant: herald_core::TenantId(1),
            method: "DELETE".into(),
            route: "/v1/jobs/{id}".into(),
            resource_id: None,
            status: 200,
            count: 1,
            reason: None,
        };
        let day = 86_400_000;
        store
            .append_audit(vec![entry(now - 200 * day), entry(now - day)])
            .await
            .unwrap();
        let other = Holder::new("other", 1);
        store
            .acquire_lease(RETENTION_LEASE, &other, now, 60_000)
            .await
            .unwrap()
            .expect("the other node's lease");
        let sweeper = Arc::new(Sweeper {
            store: store.clone(),
            clock: clock.clone(),
            cfg: crate::loops::tuned::Tuned::new(RetentionConfig {
                interval_ms: 100,
                ..Default::default()
            }),
            holder: Holder::new("me", 2),
            stop: Arc::new(Stop::default()),
        });
        let task = tokio::spawn(sweeper.clone().run());
        let count = || async {
            store
                .list_audit(Default::default(), None, 10)
                .await
                .unwrap()
                .len()
        };
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(count().await, 2, "the lease is another node's");
        clock.advance(61_000);
        let mut left = count().await;
        for _ in 0..50 {
            if left == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
            left = count().await;
        }
        assert_eq!(
            left, 1,
            "the 200-day-old entry goes, the 1-day-old one stays"
        );
        sweeper.stop.stop();
        task.await.unwrap();
        // Released at shutdown: the other node may take it at once.
        assert!(
            store
                .acquire_lease(RETENTION_LEASE, &other, clock.now_ms(), 60_000)
                .await
                .unwrap()
                .is_some()
        );
    }
}
