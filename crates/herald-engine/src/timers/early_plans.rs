//! The early starts this node planned ([`super::early`]), kept apart from
//! the planner so the pipeline can hold them without the planner's imports.

use std::collections::BTreeMap;

use herald_core::{TenantId, TimerId};
use parking_lot::Mutex;

/// One batch's plan, as `GET /v1/subjects/{id}` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EarlyPlan {
    pub tenant: TenantId,
    pub subject_id: String,
    pub bit: u8,
    pub channel: String,
    pub due_at: i64,
    /// Reminders still pending when it was last counted.
    pub count: u64,
    /// The early window it was planned with.
    pub early_window_ms: i64,
    /// When its first reminder may go (`due_at` when it needs no early start).
    pub start_at: i64,
    /// When the last should have gone at the channel's rate.
    pub done_by: i64,
    /// Whether that is by the due time.
    pub fits: bool,
}

impl EarlyPlan {
    /// The batch this plan was made from, to plan again beside others. The
    /// subject's start is not kept and is not needed to plan.
    pub(crate) fn as_batch(&self) -> herald_store::ReminderBatch {
        herald_store::ReminderBatch {
            tenant: self.tenant,
            subject_id: self.subject_id.clone(),
            start_at: self.due_at,
            early_window_ms: Some(self.early_window_ms),
            bit: self.bit,
            channel: self.channel.clone(),
            due_at: self.due_at,
            count: self.count,
        }
    }

    /// Whether `other` plans the same batch (subject, bit, channel, due).
    pub(crate) fn same_batch(&self, other: &EarlyPlan) -> bool {
        self.tenant == other.tenant
            && self.subject_id == other.subject_id
            && self.bit == other.bit
            && self.channel == other.channel
            && self.due_at == other.due_at
    }
}

pub(super) type Key = (TenantId, String, u8, String, i64);

pub(super) struct Entry {
    pub(super) plan: EarlyPlan,
    /// The last timer id fed, and whether the batch ran out.
    pub(super) cursor: Option<TimerId>,
    pub(super) exhausted: bool,
}

/// The plans this node made, shared with the API.
#[derive(Default)]
pub(crate) struct Plans {
    pub(super) by_key: Mutex<BTreeMap<Key, Entry>>,
}

impl Plans {
    /// The plans that share a rate with one subject's batches: those of
    /// other subjects on `channels`, and this subject's own plans that had
    /// started by `now` (their start is fixed).
    pub fn around(
        &self,
        tenant: TenantId,
        subject_id: &str,
        channels: &[&str],
        now: i64,
    ) -> Around {
        let mut out = Around::default();
        for e in self.by_key.lock().values() {
            let p = &e.plan;
            if p.tenant == tenant && p.subject_id == subject_id {
                if p.start_at <= now {
                    out.started.push(p.clone());
                }
            } else if channels.contains(&p.channel.as_str()) {
                out.others.push(p.clone());
            }
        }
        out
    }
}

/// What [`Plans::around`] found.
#[derive(Debug, Default)]
pub(crate) struct Around {
    pub started: Vec<EarlyPlan>,
    pub others: Vec<EarlyPlan>,
}
