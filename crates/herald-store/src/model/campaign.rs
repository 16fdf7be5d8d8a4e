//! Audiences, rules and their versions, tasks, jobs, segments and the job send log.

use herald_core::campaign::{JobState, RuleStatus, SegmentState, SendState, TaskState};

use super::{Columns, Decode, Reader, Stored, Value};
use crate::{
    Actor, AudienceRecord, JobRecord, JobTotals, Result, RuleRecord, RuleSpec, RuleVersion,
    SegmentRecord, SendRecord, TaskRecord,
};

/// An `audiences` row, as [`AudienceRecord`] reads it.
macro_rules! audience_cols {
    ($($t:literal)?) => {
        $crate::model::columns!($($t)?; "id", "tenant_id", "name", "size", "created_at")
    };
}
pub(crate) use audience_cols;

/// A `jobs` row, as [`JobRecord`] reads it.
macro_rules! job_cols {
    ($($t:literal)?) => {
        $crate::model::columns!($($t)?;
            "id", "tenant_id", "audience_id", "channel", "message", "segment_size", "deadline_at",
            "priority", "task_id", "state", "total", "delivered", "failed", "retrying",
            "expired", "cancelled", "in_doubt", "created_at", "started_at", "finished_at",
            "routing", "traceparent", "name", "category", "created_by_key_id",
            "created_by_key_name", "changed_by_key_id", "changed_by_key_name", "follows",
            "last_sent_at")
    };
}
pub(crate) use job_cols;

/// A `segments` row, as [`SegmentRecord`] reads it. Index columns end in
/// `_idx` on both backends (`end` is reserved in SQL).
macro_rules! segment_cols {
    ($($t:literal)?) => {
        $crate::model::columns!($($t)?;
            "id", "job_id", "start_idx", "end_idx", "cursor_idx", "state", "owner",
            "lease_until", "epoch", "parent_id", "attempt", "not_before", "created_at",
            "sent_to", "doubt_from", "doubt_to", "finished_at")
    };
}
pub(crate) use segment_cols;

/// A `tasks` row, as [`TaskRecord`] reads it.
macro_rules! task_cols {
    ($($t:literal)?) => {
        $crate::model::columns!($($t)?;
            "id", "tenant_id", "rule_id", "version", "planned_at", "state", "job_id", "recipients",
            "detail", "created_at", "started_at", "finished_at", "created_by_key_id",
            "created_by_key_name", "changed_by_key_id", "changed_by_key_name")
    };
}
pub(crate) use task_cols;

/// A `rule_versions` row, as [`RuleVersion`] reads it.
macro_rules! version_cols {
    ($($t:literal)?) => {
        $crate::model::columns!($($t)?;
            "rule_id", "version", "tenant_id", "name", "schedule", "audience", "audience_id",
            "channel",
            "message", "deadline_secs", "priority", "created_at", "routing",
            "follow_up_after_ms", "follow_up_message")
    };
}
pub(crate) use version_cols;

/// A rule with its current version, as [`RuleRecord`] reads it: `rules AS r`
/// joined with `rule_versions AS v`.
macro_rules! rule_cols {
    () => {
        concat!(
            $crate::model::columns!("r"; "id", "tenant_id", "status", "created_at", "updated_at",
                "created_by_key_id", "created_by_key_name", "changed_by_key_id",
                "changed_by_key_name"),
            ", ",
            $crate::model::version_cols!("v")
        )
    };
}
pub(crate) use rule_cols;

/// A `job_sends` row, as [`SendRecord`] reads it.
macro_rules! send_cols {
    ($($t:literal)?) => {
        $crate::model::columns!($($t)?;
            "job_id", "idx", "recipient", "state", "attempts", "msgid", "error", "updated_at",
            "final_status", "final_at")
    };
}
pub(crate) use send_cols;

/// The send log's state as SQLite stores it: a one-byte code, since a job's
/// log can hold ten million rows (PostgreSQL stores the name). SQLite's SQL
/// writes `1` (`retry`) as a literal, for its partial index; a test checks it.
pub(crate) fn send_code(s: SendState) -> i64 {
    match s {
        SendState::Delivered => 0,
        SendState::Retry => 1,
        SendState::Failed => 2,
        SendState::Expired => 3,
        SendState::InDoubt => 4,
    }
}

impl Stored for SendState {
    fn from_stored(v: Value<'_>) -> Option<Self> {
        match v {
            Value::Int(c) => SendState::ALL.iter().copied().find(|s| send_code(*s) == c),
            Value::Text(s) => SendState::parse(s),
            _ => None,
        }
    }
}

/// States stored by their `as_str()` name.
macro_rules! stored_by_name {
    ($($ty:ty),+) => {$(
        impl Stored for $ty {
            fn from_stored(v: Value<'_>) -> Option<Self> {
                match v {
                    Value::Text(s) => <$ty>::parse(s),
                    _ => None,
                }
            }
        }
    )+};
}
stored_by_name!(JobState, SegmentState, TaskState, RuleStatus);

/// An actor's two columns, `<what>_key_id` and `<what>_key_name`, in order.
fn actor<R: Columns + ?Sized>(r: &mut Reader<'_, R>, what: &str) -> Result<Option<Actor>> {
    let key_id = r.opt_int(what)?;
    let key_name = r.opt_string(what)?;
    Ok(Actor::of(key_id, key_name))
}

impl Decode for AudienceRecord {
    fn decode<R: Columns + ?Sized>(r: &mut Reader<'_, R>) -> Result<Self> {
        Ok(AudienceRecord {
            id: r.int("audiences.id")?,
            tenant: r.tenant("audiences.tenant_id")?,
            name: r.opt_string("audiences.name")?,
            size: r.opt_unsigned("audiences.size")?,
            created_at: r.int("audiences.created_at")?,
        })
    }
}

impl Decode for JobRecord {
    fn decode<R: Columns + ?Sized>(r: &mut Reader<'_, R>) -> Result<Self> {
        Ok(JobRecord {
            id: r.int("jobs.id")?,
            tenant: r.tenant("jobs.tenant_id")?,
            audience_id: r.int("jobs.audience_id")?,
            channel: r.string("jobs.channel")?,
            message: r.string("jobs.message")?,
            segment_size: r.unsigned("jobs.segment_size")?,
            deadline_at: r.opt_int("jobs.deadline_at")?,
            priority: r.narrow("jobs.priority")?,
            task_id: r.opt_int("jobs.task_id")?,
            state: r.state("jobs.state")?,
            totals: JobTotals {
                total: r.unsigned("jobs.total")?,
                delivered: r.unsigned("jobs.delivered")?,
                failed: r.unsigned("jobs.failed")?,
                retrying: r.unsigned("jobs.retrying")?,
                expired: r.unsigned("jobs.expired")?,
                cancelled: r.unsigned("jobs.cancelled")?,
                in_doubt: r.unsigned("jobs.in_doubt")?,
            },
            created_at: r.int("jobs.created_at")?,
            started_at: r.opt_int("jobs.started_at")?,
            finished_at: r.opt_int("jobs.finished_at")?,
            routing: r.opt_string("jobs.routing")?,
            traceparent: r.opt_string("jobs.traceparent")?,
            meta: crate::JobMeta {
                name: r.opt_string("jobs.name")?,
                category: r.opt_string("jobs.category")?,
                created_by: actor(r, "jobs.created_by")?,
                changed_by: actor(r, "jobs.changed_by")?,
            },
            follows: r.opt_int("jobs.follows")?,
            last_sent_at: r.opt_int("jobs.last_sent_at")?,
        })
    }
}

impl Decode for SegmentRecord {
    fn decode<R: Columns + ?Sized>(r: &mut Reader<'_, R>) -> Result<Self> {
        Ok(SegmentRecord {
            id: r.int("segments.id")?,
            job_id: r.int("segments.job_id")?,
            start: r.unsigned("segments.start_idx")?,
            end: r.unsigned("segments.end_idx")?,
            cursor: r.unsigned("segments.cursor_idx")?,
            state: r.state("segments.state")?,
            owner: r.opt_string("segments.owner")?,
            lease_until: r.opt_int("segments.lease_until")?,
            epoch: r.int("segments.epoch")?,
            parent_id: r.opt_int("segments.parent_id")?,
            attempt: r.narrow("segments.attempt")?,
            not_before: r.int("segments.not_before")?,
            created_at: r.int("segments.created_at")?,
            sent_to: r.unsigned("segments.sent_to")?,
            doubt_from: r.unsigned("segments.doubt_from")?,
            doubt_to: r.unsigned("segments.doubt_to")?,
            finished_at: r.opt_int("segments.finished_at")?,
        })
    }
}

impl Decode for TaskRecord {
    fn decode<R: Columns + ?Sized>(r: &mut Reader<'_, R>) -> Result<Self> {
        Ok(TaskRecord {
            id: r.int("tasks.id")?,
            tenant: r.tenant("tasks.tenant_id")?,
            rule_id: r.int("tasks.rule_id")?,
            version: r.narrow("tasks.version")?,
            planned_at: r.int("tasks.planned_at")?,
            state: r.state("tasks.state")?,
            job_id: r.opt_int("tasks.job_id")?,
            recipients: r.opt_unsigned("tasks.recipients")?,
            detail: r.opt_string("tasks.detail")?,
            created_at: r.int("tasks.created_at")?,
            started_at: r.opt_int("tasks.started_at")?,
            finished_at: r.opt_int("tasks.finished_at")?,
            created_by: actor(r, "tasks.created_by")?,
            changed_by: actor(r, "tasks.changed_by")?,
        })
    }
}

impl Decode for RuleVersion {
    fn decode<R: Columns + ?Sized>(r: &mut Reader<'_, R>) -> Result<Self> {
        // Columns are read in order: routing comes after created_at.
        let rule_id = r.int("rule_versions.rule_id")?;
        let version = r.narrow("rule_versions.version")?;
        let mut spec = RuleSpec {
            tenant: r.tenant("rule_versions.tenant_id")?,
            name: r.string("rule_versions.name")?,
            schedule: r.string("rule_versions.schedule")?,
            audience: r.string("rule_versions.audience")?,
            audience_id: r.opt_int("rule_versions.audience_id")?,
            channel: r.string("rule_versions.channel")?,
            message: r.string("rule_versions.message")?,
            deadline_secs: r.opt_int("rule_versions.deadline_secs")?,
            priority: r.narrow("rule_versions.priority")?,
            routing: None,
            follow_up: None,
        };
        let created_at = r.int("rule_versions.created_at")?;
        spec.routing = r.opt_string("rule_versions.routing")?;
        let after_ms = r.opt_int("rule_versions.follow_up_after_ms")?;
        let message = r.opt_string("rule_versions.follow_up_message")?;
        spec.follow_up = match (after_ms, message) {
            (Some(after_ms), Some(message)) => Some(crate::FollowUp {
                after_ms,
                message,
                step: None,
            }),
            _ => None,
        };
        Ok(RuleVersion {
            rule_id,
            version,
            spec,
            created_at,
        })
    }
}

impl Decode for RuleRecord {
    fn decode<R: Columns + ?Sized>(r: &mut Reader<'_, R>) -> Result<Self> {
        Ok(RuleRecord {
            id: r.int("rules.id")?,
            tenant: r.tenant("rules.tenant_id")?,
            status: r.state("rules.status")?,
            created_at: r.int("rules.created_at")?,
            updated_at: r.int("rules.updated_at")?,
            created_by: actor(r, "rules.created_by")?,
            changed_by: actor(r, "rules.changed_by")?,
            current: RuleVersion::decode(r)?,
        })
    }
}

impl Decode for SendRecord {
    fn decode<R: Columns + ?Sized>(r: &mut Reader<'_, R>) -> Result<Self> {
        Ok(SendRecord {
            job_id: r.int("job_sends.job_id")?,
            index: r.unsigned("job_sends.idx")?,
            recipient: r.string("job_sends.recipient")?,
            state: r.state("job_sends.state")?,
            attempts: r.narrow("job_sends.attempts")?,
            provider_msgid: r.opt_string("job_sends.msgid")?,
            error: r.opt_string("job_sends.error")?,
            updated_at: r.int("job_sends.updated_at")?,
            final_status: r.opt_string("job_sends.final_status")?,
            final_at: r.opt_int("job_sends.final_at")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn send_codes_round_trip_and_retry_is_one() {
        for s in SendState::ALL {
            assert_eq!(SendState::from_stored(Value::Int(send_code(*s))), Some(*s));
            assert_eq!(SendState::from_stored(Value::Text(s.as_str())), Some(*s));
        }
        assert_eq!(send_code(SendState::Retry), 1);
        assert_eq!(SendState::from_stored(Value::Int(9)), None);
    }

    #[test]
    fn the_rule_list_joins_the_version_list() {
        assert!(rule_cols!().starts_with(
            "r.id, r.tenant_id, r.status, r.created_at, r.updated_at, \
                 r.created_by_key_id, r.created_by_key_name, r.changed_by_key_id, \
                 r.changed_by_key_name, v.rule_id"
        ));
        assert!(rule_cols!().ends_with(
            "v.priority, v.created_at, v.routing, v.follow_up_after_ms, v.follow_up_message"
        ));
    }
}
