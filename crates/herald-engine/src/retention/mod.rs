//! Retention: the `[retention]` settings (how long each kind of row is
//! kept, how many rows a purge transaction deletes) here, and in
//! `sweeper.rs` the sweeper that deletes what is older than them, on one
//! node at a time. The settings are apart so that the configuration that
//! reads them needs nothing of the sweeper.

mod sweeper;

pub use sweeper::RETENTION_LEASE;
pub(crate) use sweeper::Sweeper;

use std::time::Duration;

use herald_store::RetentionKind;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

const DAY_SECS: u64 = 86_400;

/// Rows of one kind per purge transaction by default. With 5,000,000 expired
/// timers being deleted, batches of 1,000 held SQLite's writer long enough to
/// put fire lateness at p99 5–6 ms; 250 kept it at 4 ms while deleting
/// about 29,000 rows a second (`herald bench purge --batch`, BENCHMARKS.md).
pub const DEFAULT_BATCH: usize = 250;

/// How long a cap counter's bucket is kept after it stopped counting: not
/// configurable, as nothing reads a bucket once its window has passed; a
/// minute's grace so a take racing the sweep never loses a live bucket.
const CAP_COUNTERS: Keep = Keep(Duration::from_secs(60));

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
            RetentionKind::CapCounters => CAP_COUNTERS,
        }
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

    #[test]
    fn cutoffs() {
        assert_eq!(
            Keep::days(1).cutoff(100_000_000),
            Some(100_000_000 - 86_400_000)
        );
        assert_eq!(Keep(Duration::ZERO).cutoff(5), None);
        // Spent cap counters go whatever the configuration keeps.
        let forever = RetentionConfig {
            timers: Keep(Duration::ZERO),
            jobs: Keep(Duration::ZERO),
            send_log: Keep(Duration::ZERO),
            audiences: Keep(Duration::ZERO),
            subjects: Keep(Duration::ZERO),
            tasks: Keep(Duration::ZERO),
            audit_log: Keep(Duration::ZERO),
            ..Default::default()
        };
        assert!(!forever.keep(RetentionKind::CapCounters).forever());
    }
}
