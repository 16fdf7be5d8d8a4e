//! Builders for the suite's records, also for the crate's unit tests, its
//! benches, and other crates' tests.

use std::ops::Range;

pub use herald_core::{DEFAULT_TENANT, TenantId};

use herald_core::TimerKind;
use herald_core::campaign::SendState;
use herald_core::reminder::{ChannelType, Slot};
use herald_core::timer::DEFAULT_PRIORITY;

use crate::{
    AUDIENCE_CHUNK, Completion, CompletionOutcome, JobSpec, NewReminder, NewTimer, PutSubject,
    RuleSpec, SendEntry, SweepOptions, TimerRecord, WriteOp, WriteResult,
};

// ---- Timers and reminders ----

/// A tenant besides the default one, for the cases about isolation. The
/// store does not check that a tenant id was handed out by `tenant_id`.
pub const OTHER_TENANT: TenantId = TenantId(2);

/// Every shard a fixture can use.
pub fn all_shards() -> herald_core::ShardSet {
    herald_core::ShardSet::all(u16::MAX)
}

/// A plain timer of the default tenant due at `due_at`, without an
/// idempotency key.
pub fn timer(due_at: i64) -> NewTimer {
    NewTimer {
        tenant: DEFAULT_TENANT,
        shard: (due_at.rem_euclid(16)) as u16,
        due_at,
        priority: DEFAULT_PRIORITY,
        kind: TimerKind::Timer,
        channel: "webhook".into(),
        recipient: "https://example.test/hook".into(),
        message: r#"{"text":"hello"}"#.into(),
        idempotency_key: None,
        created_at: 1_000,
        traceparent: None,
        routing: None,
    }
}

/// A timer with an idempotency key.
pub fn keyed(due_at: i64, key: &str) -> NewTimer {
    NewTimer {
        idempotency_key: Some(key.into()),
        ..timer(due_at)
    }
}

pub fn inserts(timers: impl IntoIterator<Item = NewTimer>) -> Vec<WriteOp> {
    timers.into_iter().map(WriteOp::InsertTimer).collect()
}

/// The record of a `Created` result; panics on anything else.
pub fn created(result: &WriteResult) -> TimerRecord {
    match result {
        WriteResult::Created(r) => r.clone(),
        other => panic!("expected Created, got {other:?}"),
    }
}

/// A subject of the default tenant starting at `start_at`, put at time 1,000.
pub fn subject(subject_id: &str, start_at: i64) -> PutSubject {
    PutSubject {
        tenant: DEFAULT_TENANT,
        subject_id: subject_id.into(),
        start_at,
        title: Some(format!("Coupon {subject_id} opens")),
        data: Some(r#"{"coupon":"50% off","n":[1,2]}"#.into()),
        timing: Default::default(),
        templates: None,
        at: 1_000,
    }
}

/// `user` (of the default tenant) asks to be reminded of `subject` on an app push `lead_minutes`
/// before it starts: the bit is `Slot::bit`, the timer a reminder on
/// channel `app` addressed to the user (its `due_at` is left for the store
/// to set). `not_before` is 0, so only a start before the epoch is too late.
pub fn reminder(user: &str, subject: &str, lead_minutes: i64) -> NewReminder {
    reminder_on(user, subject, ChannelType::App, lead_minutes)
}

/// [`reminder`] on another channel type (the channel name is the type's).
pub fn reminder_on(
    user: &str,
    subject: &str,
    channel_type: ChannelType,
    lead_minutes: i64,
) -> NewReminder {
    let slot = Slot::new(channel_type, lead_minutes).expect("a valid reminder slot");
    NewReminder {
        user_id: user.into(),
        subject_id: subject.into(),
        bit: slot.bit(),
        lead_ms: slot.lead_ms(),
        timer: NewTimer {
            tenant: DEFAULT_TENANT,
            shard: (user.bytes().map(u16::from).sum::<u16>()) % 16,
            due_at: 0,
            priority: DEFAULT_PRIORITY,
            kind: TimerKind::Reminder,
            channel: channel_type.as_str().into(),
            recipient: user.into(),
            message: format!(r#"{{"subject":"{subject}","lead":{lead_minutes}}}"#),
            idempotency_key: None,
            created_at: 2_000,
            traceparent: None,
            routing: None,
        },
        not_before: 0,
        grant: None,
    }
}

/// The mask of one (type, lead) slot.
pub fn slot_mask(channel_type: ChannelType, lead_minutes: i64) -> u64 {
    Slot::new(channel_type, lead_minutes)
        .expect("a valid reminder slot")
        .mask()
}

/// A finished attempt of `timer`, ending at `at`.
pub fn completion(
    timer: &TimerRecord,
    attempt: u32,
    outcome: CompletionOutcome,
    at: i64,
) -> Completion {
    let error = match outcome {
        CompletionOutcome::Done => None,
        _ => Some(format!("attempt {attempt} failed")),
    };
    Completion {
        timer_id: timer.id,
        tenant: timer.tenant,
        attempt,
        outcome,
        channel: timer.channel.clone(),
        idempotency_key: timer.delivery_key(),
        provider_msgid: Some(format!("msg-{}-{attempt}", timer.id)),
        status: Some(if error.is_none() { 200 } else { 503 }),
        error,
        started_at: at - 7,
        finished_at: at,
        fence: None,
        step: None,
        next: None,
    }
}

// ---- Campaigns ----

/// The recipient at `index` of every fixture audience.
pub fn recipient(index: u64) -> String {
    format!("user-{index:08}")
}

pub fn recipients(range: Range<u64>) -> Vec<String> {
    range.map(recipient).collect()
}

/// The chunk starts of an audience of `n` recipients.
pub fn chunk_starts(n: u64) -> impl Iterator<Item = u64> {
    (0..n).step_by(AUDIENCE_CHUNK as usize)
}

pub fn rule_spec(name: &str, audience_id: Option<i64>) -> RuleSpec {
    RuleSpec {
        tenant: DEFAULT_TENANT,
        name: name.into(),
        schedule: r#"{"type":"cron","expr":"0 9 * * *","tz":"UTC"}"#.into(),
        audience: r#"{"users":["a","b"]}"#.into(),
        audience_id,
        channel: "log".into(),
        message: r#"{"text":"hello"}"#.into(),
        deadline_secs: None,
        priority: 0,
        routing: None,
        follow_up: None,
    }
}

pub fn job_spec(audience_id: i64, segment_size: u64) -> JobSpec {
    JobSpec {
        tenant: DEFAULT_TENANT,
        audience_id,
        channel: "log".into(),
        message: r#"{"text":"campaign"}"#.into(),
        segment_size,
        deadline_at: None,
        priority: 0,
        follow_up: None,
        follows: None,
        resends: None,
        task_id: None,
        routing: None,
        traceparent: None,
        meta: Default::default(),
    }
}

/// One attempt's outcome for the fixture recipient at `index`: a provider
/// message id when delivered, an error otherwise.
pub fn send(index: u64, state: SendState) -> SendEntry {
    SendEntry {
        index,
        recipient: recipient(index),
        state,
        provider_msgid: (state == SendState::Delivered).then(|| format!("msg-{index}")),
        error: (state != SendState::Delivered).then(|| format!("error-{index}")),
    }
}

pub fn sends(range: Range<u64>, state: SendState) -> Vec<SendEntry> {
    range.map(|i| send(i, state)).collect()
}

pub fn sweep_opts() -> SweepOptions {
    SweepOptions {
        max_attempts: 3,
        retry_backoff_ms: 1_000,
        limit: 100,
    }
}
