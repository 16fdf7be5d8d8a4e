//! Retention: the `[retention]` settings, and the sweeper that deletes what
//! is older than them. It runs on one node at a time (the store's named lease
//! [`RETENTION_LEASE`]), every `interval`, and for each kind calls
//! [`Store::purge`] in batches of `batch` rows, each its own short
//! transaction, until the kind has nothing older than its cutoff. After each
//! batch it pauses as long as the batch took: deleting never takes more than
//! half of the store's writer (SQLite has one) or of a core, so timers keep
//! firing on time while millions of old rows go (`herald bench purge`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use herald_core::Clock;
use herald_store::{Holder, PartitionCutoffs, RetentionKind, Store};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::loops::stop::Stop;

/// Name of the store lease under which one node deletes what is old.
pub const RETENTION_LEASE: &str = "retention";

/// Rows of one kind per sweep at most, so one busy kind cannot starve the
/// others; what is left waits for the next sweep.
const MAX_ROWS: usize = 10_000_000;

const DAY_SECS: u64 = 86_400;

/// Rows of one kind per purge transaction by default. With 5,000,000 expired
/// timers being deleted, batches of 1,000 held SQLite's writer long enough to
/// put fire lateness at p99 5–6 ms; 250 kept it at 4 ms while deleting
/// about 29,000 rows a second (`herald bench purge --batch`, BENCHMARKS.md).
pub const DEFAULT_BATCH: usize = 250;

/// The shortest pause between two batches.
const MIN_PAUSE: Duration = Duration::from_millis(1);

/// How long to keep one kind: whole seconds, 0 for ever. In configuration a
/// human duration (`"30d"`, `"12h"`, `"90m"`, `"0"`) or a number of seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keep(pub Duration);

impl Keep {
    pub fn days(n: u64) -> Self {
        Keep(Duration::from_secs(n * DAY_SECS))
    }

    /// Kept for ever.
    pub fn forever(self) -> bool {
        self.0.is_zero()
    }

    /// The time before which rows are old at `now` (Unix ms); `None` when
    /// kept for ever.
    pub fn cutoff(self, now: i64) -> Option<i64> {
        if self.forever() {
            return None;
        }
        let ms = i64::try_from(self.0.as_millis()).unwrap_or(i64::MAX);
        Some(now.saturating_sub(ms))
    }
}

impl Serialize for Keep {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0.as_secs())
    }
}

impl<'de> Deserialize<'de> for Keep {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Secs(i64),
            Text(String),
        }
        match Raw::deserialize(d).map_err(|_| {
            serde::de::Error::custom("expected a duration such as \"30d\" or a number of seconds")
        })? {
            Raw::Secs(n) => u64::try_from(n)
                .map(|s| Keep(Duration::from_secs(s)))
                .map_err(|_| {
                    serde::de::Error::custom(format!("{n} is negative: use 0 to keep for ever"))
                }),
            Raw::Text(t) => parse_keep(&t).map_err(serde::de::Error::custom),
        }
    }
}

/// Reads `"30d"`, `"12h 30m"`, `"0"` or `"3600"` (seconds).
pub fn parse_keep(text: &str) -> Result<Keep, String> {
    let t = text.trim();
    if let Ok(secs) = t.parse::<u64>() {
        return Ok(Keep(Duration::from_secs(secs)));
    }
    if t.starts_with('-') {
        return Err(format!("{text:?} is negative: use 0 to keep for ever"));
    }
    humantime::parse_duration(t)
        .map(|d| Keep(Duration::from_secs(d.as_secs())))
        .map_err(|e| format!("{text:?} is not a duration such as \"30d\": {e}"))
}

/// `[retention]` settings: how long each kind is kept once it is finished
/// (or past); `0` keeps it for ever.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetentionConfig {
    /// How often the sweeper runs, in milliseconds.
    pub interval_ms: u64,
    /// Rows of one kind deleted per transaction (with their children). Smaller
    /// holds the writer for less time at once; larger deletes faster.
    pub batch: usize,
    /// Finished timers (done, failed, dead, cancelled) with their send log,
    /// after their last change.
    pub timers: Keep,
    /// Ended jobs (done, cancelled, expired) with their segments, send log,
    /// follow-up and receipt counts, after they ended.
    pub jobs: Keep,
    /// Ended jobs' send log (`job_sends`) and receipts, after the job ended;
    /// the job itself stays until `jobs`.
    pub send_log: Keep,
    /// Audiences no stored job and no rule version names, after they were made.
    pub audiences: Keep,
    /// Subjects with no pending reminder, after their start, with their
    /// reminders.
    pub subjects: Keep,
    /// Ended rule tasks (each rule version's last one stays), after they ended.
    pub tasks: Keep,
    /// Audit log entries, after they were recorded.
    pub audit_log: Keep,
}

impl Default for RetentionConfig {
    fn default() -> Self {
        Self {
            interval_ms: 60_000,
            batch: DEFAULT_BATCH,
            timers: Keep::days(30),
            jobs: Keep::days(30),
            send_log: Keep::days(30),
            audiences: Keep::days(30),
            subjects: Keep::days(30),
            tasks: Keep::days(30),
            audit_log: Keep::days(180),
        }
    }
}

impl RetentionConfig {
    /// How long `kind` is kept.
    pub fn keep(&self, kind: RetentionKind) -> Keep {
        match kind {
            RetentionKind::Timers => self.timers,
            RetentionKind::Jobs => self.jobs,
            RetentionKind::SendLog => self.send_log,
            RetentionKind::Audiences => self.audiences,
            RetentionKind::Subjects => self.subjects,
            RetentionKind::Tasks => self.tasks,
            RetentionKind::AuditLog => self.audit_log,
        }
    }

    /// Whether every kind is kept for ever (the sweeper then does not run).
    pub fn keeps_everything(&self) -> bool {
        RetentionKind::ALL.iter().all(|&k| self.keep(k).forever())
    }
}

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
        let mut idle = false;
        let mut held = false;
        while !self.stop.is_stopped() {
            let cfg = self.cfg.get();
            let interval = cfg.interval_ms.max(100);
            // Long enough to outlast a sweep between renewals, short enough that
            // another node takes over soon after this one dies.
            let ttl = i64::try_from(interval.saturating_mul(3))
                .unwrap_or(i64::MAX)
                .max(30_000);
            if cfg.keeps_everything() {
                if !idle {
                    tracing::info!("retention keeps everything; the retention sweeper idles");
                    idle = true;
                }
            } else {
                idle = false;
            }
            let now = self.clock.now_ms();
            let lease = match idle {
                true => {
                    if held {
                        let _ = self
                            .store
                            .release_lease(RETENTION_LEASE, &self.holder)
                            .await;
                    }
                    Ok(None)
                }
                false => {
                    self.store
                        .acquire_lease(RETENTION_LEASE, &self.holder, now, ttl)
                        .await
                }
            };
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

    #[test]
    fn durations_read_as_text_or_seconds() {
        assert_eq!(parse_keep("30d").unwrap(), Keep::days(30));
        assert_eq!(parse_keep("0").unwrap(), Keep(Duration::ZERO));
        assert_eq!(parse_keep("3600").unwrap(), Keep(Duration::from_secs(3600)));
        assert_eq!(
            parse_keep("1h 30m").unwrap(),
            Keep(Duration::from_secs(5400))
        );
        assert!(parse_keep("-5d").unwrap_err().contains("negative"));
        assert!(parse_keep("soon").is_err());
        let c: RetentionConfig =
            serde_json::from_str(r#"{"timers": "7d", "audit_log": 0, "jobs": 60}"#).unwrap();
        assert_eq!(c.timers, Keep::days(7));
        assert!(c.audit_log.forever());
        assert_eq!(c.jobs, Keep(Duration::from_secs(60)));
        assert_eq!(c.subjects, Keep::days(30));
        let err = serde_json::from_str::<RetentionConfig>(r#"{"timers": -1}"#).unwrap_err();
        assert!(err.to_string().contains("negative"), "{err}");
    }

    /// Runs under its lease on a manual clock: while another node holds the
    /// lease nothing goes; once it is this node's, the old audit entry goes
    /// and the recent one stays.
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
        let count = || async { store.list_audit(None, None, None, 10).await.unwrap().len() };
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

    #[test]
    fn cutoffs() {
        assert_eq!(
            Keep::days(1).cutoff(100_000_000),
            Some(100_000_000 - 86_400_000)
        );
        assert_eq!(Keep(Duration::ZERO).cutoff(5), None);
        assert!(
            RetentionConfig {
                timers: Keep(Duration::ZERO),
                jobs: Keep(Duration::ZERO),
                send_log: Keep(Duration::ZERO),
                audiences: Keep(Duration::ZERO),
                subjects: Keep(Duration::ZERO),
                tasks: Keep(Duration::ZERO),
                audit_log: Keep(Duration::ZERO),
                ..Default::default()
            }
            .keeps_everything()
        );
    }
}
