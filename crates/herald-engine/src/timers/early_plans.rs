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
    /// The current plans of one subject.
    pub fn of_subject(&self, tenant: TenantId, subject_id: &str) -> Vec<EarlyPlan> {
        self.by_key
            .lock()
            .values()
            .filter(|e| e.plan.tenant == tenant && e.plan.subject_id == subject_id)
            .map(|e| e.plan.clone())
            .collect()
    }
}
