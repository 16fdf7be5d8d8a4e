//! Timers, the send log, subjects and reminder links.

use herald_core::{TimerKind, TimerState};

use super::{Columns, Decode, Reader, Stored, Value};
use crate::{DeliveryRecord, DueEntry, ReminderTimer, Result, SubjectRecord, TimerRecord};

/// The columns of a full `timers` row, as [`TimerRecord`] reads them;
/// `timer_cols!("t")` qualifies each with the alias `t`.
macro_rules! timer_cols {
    ($($t:literal)?) => {
        $crate::model::columns!($($t)?;
            "id", "tenant_id", "shard", "due_at", "priority", "kind", "state", "channel", "recipient",
            "message", "idempotency_key", "attempts", "last_error", "created_at",
            "updated_at", "delivered_at", "attempt_base", "traceparent", "routing")
    };
}
pub(crate) use timer_cols;

/// What the loader needs of a timer, as [`DueEntry`] reads it.
macro_rules! due_cols {
    ($($t:literal)?) => {
        $crate::model::columns!($($t)?; "id", "due_at", "shard", "priority", "tenant_id")
    };
}
pub(crate) use due_cols;

/// A `deliveries` (timer send log) row, as [`DeliveryRecord`] reads it.
macro_rules! delivery_cols {
    ($($t:literal)?) => {
        $crate::model::columns!($($t)?;
            "id", "timer_id", "tenant_id", "attempt", "channel", "outcome", "idempotency_key",
            "provider_msgid", "status", "error", "started_at", "finished_at", "final_status",
            "final_at", "step")
    };
}
pub(crate) use delivery_cols;

/// A `subjects` row, as [`SubjectRecord`] reads it.
macro_rules! subject_cols {
    ($($t:literal)?) => {
        $crate::model::columns!($($t)?;
            "tenant_id", "subject_id", "start_at", "title", "data", "created_at", "updated_at",
            "early_window_ms", "send_late", "templates")
    };
}
pub(crate) use subject_cols;

/// A reminder's timer with its place in the subscription, as [`ReminderTimer`]
/// reads it: `timers AS t` joined with `reminder_timers AS r`.
macro_rules! reminder_timer_cols {
    () => {
        concat!($crate::model::timer_cols!("t"), ", r.subject_id, r.bit")
    };
}
pub(crate) use reminder_timer_cols;

/// Timer states are stored as `TimerState::code()` on both backends.
impl Stored for TimerState {
    fn from_stored(v: Value<'_>) -> Option<Self> {
        match v {
            Value::Int(c) => TimerState::from_code(c),
            _ => None,
        }
    }
}

impl Decode for TimerRecord {
    fn decode<R: Columns + ?Sized>(r: &mut Reader<'_, R>) -> Result<Self> {
        Ok(TimerRecord {
            id: r.int("timers.id")?,
            tenant: r.tenant("timers.tenant_id")?,
            shard: r.narrow("timers.shard")?,
            due_at: r.int("timers.due_at")?,
            priority: r.narrow("timers.priority")?,
            kind: r.parsed("timers.kind", TimerKind::parse)?,
            state: r.state("timers.state")?,
            channel: r.string("timers.channel")?,
            recipient: r.string("timers.recipient")?,
            message: r.string("timers.message")?,
            idempotency_key: r.opt_string("timers.idempotency_key")?,
            attempts: r.narrow("timers.attempts")?,
            last_error: r.opt_string("timers.last_error")?,
            created_at: r.int("timers.created_at")?,
            updated_at: r.int("timers.updated_at")?,
            delivered_at: r.opt_int("timers.delivered_at")?,
            attempt_base: r.narrow("timers.attempt_base")?,
            traceparent: r.opt_string("timers.traceparent")?,
            routing: r.opt_string("timers.routing")?,
        })
    }
}

/// `id, due_at, state, channel, last_error`, as the dead-letter summary reads them.
impl Decode for crate::timer_query::DeadRow {
    fn decode<R: Columns + ?Sized>(r: &mut Reader<'_, R>) -> Result<Self> {
        Ok(crate::timer_query::DeadRow {
            id: r.int("timers.id")?,
            due_at: r.int("timers.due_at")?,
            state: r.state("timers.state")?,
            channel: r.string("timers.channel")?,
            last_error: r.opt_string("timers.last_error")?,
        })
    }
}

impl Decode for DueEntry {
    fn decode<R: Columns + ?Sized>(r: &mut Reader<'_, R>) -> Result<Self> {
        Ok(DueEntry {
            id: r.int("timers.id")?,
            due_at: r.int("timers.due_at")?,
            shard: r.narrow("timers.shard")?,
            priority: r.narrow("timers.priority")?,
            tenant: r.tenant("timers.tenant_id")?,
        })
    }
}

impl Decode for DeliveryRecord {
    fn decode<R: Columns + ?Sized>(r: &mut Reader<'_, R>) -> Result<Self> {
        Ok(DeliveryRecord {
            id: r.int("deliveries.id")?,
            timer_id: r.int("deliveries.timer_id")?,
            tenant: r.tenant("deliveries.tenant_id")?,
            attempt: r.narrow("deliveries.attempt")?,
            channel: r.string("deliveries.channel")?,
            outcome: r.string("deliveries.outcome")?,
            idempotency_key: r.string("deliveries.idempotency_key")?,
            provider_msgid: r.opt_string("deliveries.provider_msgid")?,
            status: r.opt_int("deliveries.status")?,
            error: r.opt_string("deliveries.error")?,
            started_at: r.int("deliveries.started_at")?,
            finished_at: r.int("deliveries.finished_at")?,
            final_status: r.opt_string("deliveries.final_status")?,
            final_at: r.opt_int("deliveries.final_at")?,
            step: r
                .opt_int("deliveries.step")?
                .and_then(|s| u32::try_from(s).ok()),
        })
    }
}

impl Decode for SubjectRecord {
    fn decode<R: Columns + ?Sized>(r: &mut Reader<'_, R>) -> Result<Self> {
        Ok(SubjectRecord {
            tenant: r.tenant("subjects.tenant_id")?,
            subject_id: r.string("subjects.subject_id")?,
            start_at: r.int("subjects.start_at")?,
            title: r.opt_string("subjects.title")?,
            data: r.opt_string("subjects.data")?,
            created_at: r.int("subjects.created_at")?,
            updated_at: r.int("subjects.updated_at")?,
            timing: crate::SubjectTiming {
                early_window_ms: r.opt_int("subjects.early_window_ms")?,
                send_late: r.flag("subjects.send_late")?,
            },
            templates: r.opt_string("subjects.templates")?,
        })
    }
}

/// A counted batch: `tenant_id, subject_id, start_at, early_window_ms, bit,
/// channel, due_at, count(*)`.
impl Decode for crate::ReminderBatch {
    fn decode<R: Columns + ?Sized>(r: &mut Reader<'_, R>) -> Result<Self> {
        Ok(crate::ReminderBatch {
            tenant: r.tenant("subjects.tenant_id")?,
            subject_id: r.string("subjects.subject_id")?,
            start_at: r.int("subjects.start_at")?,
            early_window_ms: r.opt_int("subjects.early_window_ms")?,
            bit: r.narrow("reminder_timers.bit")?,
            channel: r.string("timers.channel")?,
            due_at: r.int("timers.due_at")?,
            count: r.narrow("count(*)")?,
        })
    }
}

impl Decode for ReminderTimer {
    fn decode<R: Columns + ?Sized>(r: &mut Reader<'_, R>) -> Result<Self> {
        let timer = TimerRecord::decode(r)?;
        Ok(ReminderTimer {
            subject_id: r.string("reminder_timers.subject_id")?,
            bit: r.narrow("reminder_timers.bit")?,
            timer,
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn column_lists_qualify_with_an_alias() {
        assert_eq!(due_cols!(), "id, due_at, shard, priority, tenant_id");
        assert_eq!(
            due_cols!("t"),
            "t.id, t.due_at, t.shard, t.priority, t.tenant_id"
        );
        assert!(reminder_timer_cols!().starts_with("t.id, t.tenant_id, t.shard, "));
        assert!(reminder_timer_cols!().ends_with("t.routing, r.subject_id, r.bit"));
    }
}
