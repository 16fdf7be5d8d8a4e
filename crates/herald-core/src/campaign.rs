//! Rules, tasks, jobs and segments: their states and the arithmetic of cutting
//! an audience into segments (see "The path of a campaign" and "Rules" in
//! `docs/architecture.md`).
//!
//! A rule is versioned; every execution of it is an append-only task. A task
//! that runs creates a job; a job's audience is addressed by index and cut
//! into segments `[start, end)` that workers claim under a lease.

use serde::{Deserialize, Serialize};

/// Whether a rule keeps producing tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleStatus {
    Enabled,
    Disabled,
    /// The schedule has no occurrence left and its last task has run.
    Finished,
}

/// One planned execution of one rule version. Append-only: a task is never
/// rewritten into another occurrence or version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    Pending,
    /// Its job is sending.
    Running,
    /// Its job reached every recipient.
    Succeeded,
    /// Its job ended with recipients failed or expired.
    Failed,
    /// The rule was disabled (or the job cancelled) before it finished.
    Cancelled,
    /// Planned from a version that is no longer current, or found too late to run.
    Expired,
}

/// A mass send: one audience, one message, one channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    Running,
    /// Every recipient has a final outcome.
    Done,
    Cancelled,
    /// Its deadline passed with recipients left; those were never sent.
    Expired,
}

/// A slice `[start, end)` of a job's audience, claimed by one worker at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SegmentState {
    Pending,
    Running,
    Done,
    /// Finished with some recipients failed retryably; re-issued for those only.
    Partial,
    /// Its lease expired mid-way; the unfinished part was re-issued as a new segment.
    Abandoned,
    /// The job's deadline passed before it finished.
    Expired,
    Cancelled,
}

/// A recipient's outcome in a job's send log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SendState {
    Delivered,
    /// Failed in a way worth another attempt; not final.
    Retry,
    /// Refused permanently, or retries used up.
    Failed,
    /// Still retrying when the job's deadline passed.
    Expired,
    /// Handed to a provider that does not drop repeats by a node that died
    /// before it recorded the answer, and not sent again (`in_doubt = "skip"`):
    /// it may or may not have arrived.
    InDoubt,
}

macro_rules! str_enum {
    ($ty:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        impl $ty {
            pub const ALL: &'static [$ty] = &[$($ty::$variant),+];
            pub fn as_str(self) -> &'static str {
                match self { $($ty::$variant => $text),+ }
            }
            pub fn parse(s: &str) -> Option<Self> {
                match s { $($text => Some($ty::$variant),)+ _ => None }
            }
        }
        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

str_enum!(RuleStatus { Enabled => "enabled", Disabled => "disabled", Finished => "finished" });
str_enum!(TaskState {
    Pending => "pending", Running => "running", Succeeded => "succeeded",
    Failed => "failed", Cancelled => "cancelled", Expired => "expired",
});
str_enum!(JobState { Running => "running", Done => "done", Cancelled => "cancelled", Expired => "expired" });
str_enum!(SegmentState {
    Pending => "pending", Running => "running", Done => "done", Partial => "partial",
    Abandoned => "abandoned", Expired => "expired", Cancelled => "cancelled",
});
str_enum!(SendState {
    Delivered => "delivered", Retry => "retry", Failed => "failed", Expired => "expired",
    InDoubt => "in_doubt",
});

impl TaskState {
    pub fn is_final(self) -> bool {
        !matches!(self, TaskState::Pending | TaskState::Running)
    }
    /// Legal moves: pending → running | cancelled | expired; running → any final state.
    pub fn can_become(self, to: TaskState) -> bool {
        match self {
            TaskState::Pending => matches!(
                to,
                TaskState::Running | TaskState::Cancelled | TaskState::Expired
            ),
            TaskState::Running => to.is_final(),
            _ => false,
        }
    }
}

impl JobState {
    pub fn is_final(self) -> bool {
        self != JobState::Running
    }
}

impl SegmentState {
    pub fn is_final(self) -> bool {
        !matches!(self, SegmentState::Pending | SegmentState::Running)
    }
    /// Legal moves: pending → running | expired | cancelled; running → any final state.
    pub fn can_become(self, to: SegmentState) -> bool {
        match self {
            SegmentState::Pending => matches!(
                to,
                SegmentState::Running | SegmentState::Expired | SegmentState::Cancelled
            ),
            SegmentState::Running => to.is_final(),
            _ => false,
        }
    }
}

impl SendState {
    pub fn is_final(self) -> bool {
        self != SendState::Retry
    }
}

/// The segments `[start, end)` that cover `from..to` in steps of `size`
/// (the last one may be shorter). Empty when `from >= to`; `size` 0 counts as 1.
pub fn plan_segments(from: u64, to: u64, size: u64) -> impl Iterator<Item = (u64, u64)> {
    let size = size.max(1);
    let mut at = from;
    std::iter::from_fn(move || {
        if at >= to {
            return None;
        }
        let end = at.saturating_add(size).min(to);
        let seg = (at, end);
        at = end;
        Some(seg)
    })
}

/// How a task ends once its job has ended.
pub fn task_outcome(job: JobState, failed: u64, expired: u64) -> TaskState {
    match job {
        JobState::Running => TaskState::Running,
        JobState::Cancelled => TaskState::Cancelled,
        JobState::Expired => TaskState::Failed,
        JobState::Done if failed > 0 || expired > 0 => TaskState::Failed,
        JobState::Done => TaskState::Succeeded,
    }
}

/// The prefix of every idempotency key Herald makes itself; callers may not
/// use it (any case), so their keys never meet ours.
pub const INTERNAL_KEY_PREFIX: &str = "herald-";

/// Whether `key` starts with [`INTERNAL_KEY_PREFIX`], in any case.
pub fn is_internal_key(key: &str) -> bool {
    key.get(..INTERNAL_KEY_PREFIX.len())
        .is_some_and(|p| p.eq_ignore_ascii_case(INTERNAL_KEY_PREFIX))
}

/// The idempotency key of one recipient of one job: the same across every
/// re-issue of its segment, so a provider that de-duplicates sees one message.
pub fn job_recipient_key(job_id: i64, index: u64) -> String {
    format!("{INTERNAL_KEY_PREFIX}job-{job_id}-{index}")
}

/// The job and recipient index a [`job_recipient_key`] names.
pub fn parse_job_recipient_key(key: &str) -> Option<(i64, u64)> {
    let rest = key
        .strip_prefix(INTERNAL_KEY_PREFIX)?
        .strip_prefix("job-")?;
    let (job, index) = rest.split_once('-')?;
    let plain = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !plain(job) || !plain(index) {
        return None;
    }
    Some((job.parse().ok()?, index.parse().ok()?))
}

/// The timer a `herald-timer-{id}` key (a timer without a caller's key) names.
pub fn parse_timer_key(key: &str) -> Option<i64> {
    let id = key
        .strip_prefix(INTERNAL_KEY_PREFIX)?
        .strip_prefix("timer-")?;
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    id.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn internal_keys_parse_back() {
        assert_eq!(
            parse_job_recipient_key(&job_recipient_key(3, 7)),
            Some((3, 7))
        );
        assert_eq!(parse_timer_key("herald-timer-42"), Some(42));
        for bad in [
            "herald-job-3",
            "herald-job--7",
            "herald-job-3-x",
            "job-3-7",
            "herald-job-+3-7",
        ] {
            assert_eq!(parse_job_recipient_key(bad), None, "{bad}");
        }
        assert_eq!(parse_timer_key("herald-timer-"), None);
        assert_eq!(parse_timer_key("herald-timer-1a"), None);
    }

    #[test]
    fn internal_keys_are_recognised_in_any_case() {
        assert_eq!(job_recipient_key(3, 7), "herald-job-3-7");
        assert!(is_internal_key(&job_recipient_key(3, 7)));
        assert!(is_internal_key("HERALD-timer-1"));
        assert!(is_internal_key("Herald-"));
        assert!(!is_internal_key("herald"));
        assert!(!is_internal_key("my-herald-key"));
        assert!(!is_internal_key("héral"));
    }

    #[test]
    fn names_round_trip() {
        for s in SegmentState::ALL {
            assert_eq!(SegmentState::parse(s.as_str()), Some(*s));
        }
        for s in TaskState::ALL {
            assert_eq!(TaskState::parse(s.as_str()), Some(*s));
        }
        for s in SendState::ALL {
            assert_eq!(SendState::parse(s.as_str()), Some(*s));
        }
        for s in JobState::ALL {
            assert_eq!(JobState::parse(s.as_str()), Some(*s));
        }
        for s in RuleStatus::ALL {
            assert_eq!(RuleStatus::parse(s.as_str()), Some(*s));
        }
        assert_eq!(TaskState::parse("done"), None);
    }

    #[test]
    fn only_legal_transitions() {
        assert!(TaskState::Pending.can_become(TaskState::Expired));
        assert!(!TaskState::Pending.can_become(TaskState::Succeeded));
        assert!(!TaskState::Succeeded.can_become(TaskState::Running));
        assert!(SegmentState::Running.can_become(SegmentState::Abandoned));
        assert!(!SegmentState::Pending.can_become(SegmentState::Abandoned));
        assert!(!SegmentState::Abandoned.can_become(SegmentState::Pending));
    }

    #[test]
    fn task_follows_its_job() {
        assert_eq!(task_outcome(JobState::Done, 0, 0), TaskState::Succeeded);
        assert_eq!(task_outcome(JobState::Done, 1, 0), TaskState::Failed);
        assert_eq!(task_outcome(JobState::Expired, 0, 5), TaskState::Failed);
        assert_eq!(
            task_outcome(JobState::Cancelled, 0, 0),
            TaskState::Cancelled
        );
    }

    #[test]
    fn segments_of_a_small_audience() {
        let segs: Vec<_> = plan_segments(0, 2500, 1000).collect();
        assert_eq!(segs, vec![(0, 1000), (1000, 2000), (2000, 2500)]);
        assert_eq!(plan_segments(5, 5, 10).count(), 0);
    }

    proptest! {
        #[test]
        fn segments_tile_the_range(from in 0u64..10_000, len in 0u64..50_000, size in 0u64..3000) {
            let to = from + len;
            let segs: Vec<_> = plan_segments(from, to, size).collect();
            let mut at = from;
            for (s, e) in &segs {
                prop_assert_eq!(*s, at);
                prop_assert!(e > s);
                prop_assert!(e - s <= size.max(1));
                at = *e;
            }
            prop_assert_eq!(at, to.max(from));
        }
    }
}
