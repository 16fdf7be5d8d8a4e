//! A subject's pending reminders counted per batch, for the early-start
//! preview of `GET /v1/subjects/{id}`.
//!
//! Counting reads every pending reminder of the subject (a timer lookup
//! each, about two seconds for a million in SQLite), too slow for a page that
//! must answer within 300 ms. A subject with up to [`EXACT_UP_TO`] reminders
//! is counted at every request, so the page is exact right after a
//! subscription. A bigger one is counted once, then answered from its last
//! count while that is fresh ([`FRESH_MS`], or twenty times what the count
//! took), and when it goes stale the page still answers from it while one
//! count per subject runs in the background. So a big subject's page costs
//! one count the first time it is opened on a node, and at most a twentieth
//! of a core while it stays open; its answer says when it was counted.

use std::collections::HashMap;
use std::sync::Arc;

use herald_core::TenantId;
use herald_store::{BatchScope, ReminderBatch, Store, StoreError};
use parking_lot::Mutex;

/// Subjects with at most this many reminders are counted at every request.
pub const EXACT_UP_TO: u64 = 20_000;
/// The shortest time a big subject's count is used before it is redone.
pub const FRESH_MS: i64 = 15_000;
/// Big subjects whose counts are kept; past it the oldest count is dropped.
const KEPT: usize = 64;

/// One count of a subject's batches.
#[derive(Debug, Clone)]
pub struct Counted {
    pub batches: Vec<ReminderBatch>,
    /// When the count started (engine clock, ms).
    pub at: i64,
    /// How long it took (ms).
    took_ms: i64,
}

impl Counted {
    fn fresh_at(&self, now: i64) -> bool {
        let fresh_for = FRESH_MS.max(self.took_ms.saturating_mul(20));
        now >= self.at && now.saturating_sub(self.at) < fresh_for
    }
}

#[derive(Default)]
struct Slot {
    last: Option<Counted>,
    counting: bool,
}

type Key = (TenantId, String);

/// The last counts of big subjects, shared by every request on this node.
#[derive(Default)]
pub struct SubjectCounts {
    by_subject: Mutex<HashMap<Key, Slot>>,
}

impl SubjectCounts {
    /// The batches of `subject_id` of `tenant`: counted now when the subject
    /// is small (`reminders`, as the caller counted them, at most
    /// [`EXACT_UP_TO`]) or was never counted, otherwise its last count
    /// (redone in the background when stale).
    pub async fn batches(
        self: &Arc<Self>,
        store: &Arc<dyn Store>,
        now: impl Fn() -> i64,
        tenant: TenantId,
        subject_id: &str,
        reminders: u64,
    ) -> Result<Counted, StoreError> {
        if reminders <= EXACT_UP_TO {
            return count(store, &now, tenant, subject_id).await;
        }
        let key = (tenant, subject_id.to_string());
        let at = now();
        let kept = {
            let mut map = self.by_subject.lock();
            match map.get_mut(&key) {
                Some(slot) => match &slot.last {
                    Some(last) if last.fresh_at(at) => Some(last.clone()),
                    Some(last) => {
                        if !slot.counting {
                            slot.counting = true;
                            self.recount(store.clone(), now(), key.clone());
                        }
                        Some(last.clone())
                    }
                    None => None,
                },
                None => None,
            }
        };
        if let Some(kept) = kept {
            return Ok(kept);
        }
        let counted = count(store, &now, tenant, subject_id).await?;
        self.keep(key, counted.clone());
        Ok(counted)
    }

    /// Counts `key` again in the background and keeps the result.
    fn recount(self: &Arc<Self>, store: Arc<dyn Store>, start: i64, key: Key) {
        let me = self.clone();
        tokio::spawn(async move {
            let began = std::time::Instant::now();
            let scope = BatchScope::Subject {
                tenant: key.0,
                subject_id: key.1.clone(),
            };
            match store.reminder_batches(&scope).await {
                Ok(batches) => {
                    let took_ms = i64::try_from(began.elapsed().as_millis()).unwrap_or(i64::MAX);
                    me.keep(
                        key,
                        Counted {
                            batches,
                            at: start,
                            took_ms,
                        },
                    );
                }
                Err(e) => {
                    tracing::warn!(subject = %key.1, error = %e, "recounting a subject's reminders failed");
                    if let Some(slot) = me.by_subject.lock().get_mut(&key) {
                        slot.counting = false;
                    }
                }
            }
        });
    }

    fn keep(&self, key: Key, counted: Counted) {
        let mut map = self.by_subject.lock();
        if !map.contains_key(&key) && map.len() >= KEPT {
            let oldest = map
                .iter()
                .filter(|(_, s)| !s.counting)
                .min_by_key(|(_, s)| s.last.as_ref().map_or(i64::MIN, |c| c.at))
                .map(|(k, _)| k.clone());
            if let Some(oldest) = oldest {
                map.remove(&oldest);
            }
        }
        let slot = map.entry(key).or_default();
        slot.counting = false;
        if slot.last.as_ref().is_none_or(|l| l.at <= counted.at) {
            slot.last = Some(counted);
        }
    }
}

async fn count(
    store: &Arc<dyn Store>,
    now: &impl Fn() -> i64,
    tenant: TenantId,
    subject_id: &str,
) -> Result<Counted, StoreError> {
    let at = now();
    let began = std::time::Instant::now();
    let batches = store
        .reminder_batches(&BatchScope::Subject {
            tenant,
            subject_id: subject_id.to_string(),
        })
        .await?;
    let took_ms = i64::try_from(began.elapsed().as_millis()).unwrap_or(i64::MAX);
    Ok(Counted {
        batches,
        at,
        took_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counted(at: i64, took_ms: i64) -> Counted {
        Counted {
            batches: Vec::new(),
            at,
            took_ms,
        }
    }

    #[test]
    fn a_count_stays_fresh_for_twenty_times_what_it_took() {
        assert!(counted(0, 10).fresh_at(FRESH_MS - 1));
        assert!(!counted(0, 10).fresh_at(FRESH_MS));
        assert!(counted(0, 2_000).fresh_at(39_999));
        assert!(!counted(0, 2_000).fresh_at(40_000));
        // A clock that went back makes the count stale, not fresh forever.
        assert!(!counted(100, 10).fresh_at(50));
    }
}
