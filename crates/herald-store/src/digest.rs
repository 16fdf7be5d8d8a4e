//! Placing a new digest timer (`WriteOp::InsertDigest`), shared by both
//! backends: each reads the candidates and writes the result in the create's
//! own transaction; what to write is decided here, once.
//!
//! The open digest of a new timer is the earliest group of pending timers of
//! the same tenant, recipient, channel, address type, topic, criticality and
//! digest key (what the directory decides on is the same for all) whose
//! common due time (the close) falls in `[due, own close]`: joining it never
//! makes the timer later than its own digest would have been.

use herald_core::TimerId;
use herald_core::digest::{Digest, Open, Placement};
use herald_core::timer::Routing;

use crate::{NewTimer, StoreError, TimerRecord};

/// Most candidate rows one placement reads: a recipient with more pending
/// timers on one channel inside one window than this joins among the first.
pub(crate) const MAX_CANDIDATES: i64 = 512;

/// A digest timer about to be placed: its spec and who it is for.
pub(crate) struct Pending {
    pub routing: Routing,
    pub spec: Digest,
}

impl Pending {
    /// The digest of a new timer, `None` when it has none (an ordinary insert).
    pub fn of(t: &NewTimer) -> Option<Self> {
        let routing = Routing::parse(t.routing.as_deref());
        let spec = routing.digest.clone()?;
        Some(Self { routing, spec })
    }

    /// Whether the close depends on the subscriber's time zone.
    pub fn needs_zone(&self) -> bool {
        self.spec.at_local.is_some()
    }

    /// The timer's own close, in the time zone of `profile` (its stored JSON;
    /// UTC without one, or for an entry without a zone).
    pub fn own_close(&self, due: i64, profile: Option<&str>) -> Result<i64, StoreError> {
        self.spec
            .close_from(due, &herald_core::digest::zone_of_profile(profile))
            .map_err(|e| StoreError::Refused {
                what: e.field.into(),
                why: e.message,
            })
    }

    /// Places `t` among `candidates` (pending timers of its tenant, recipient
    /// and channel due in `[t.due_at, own_close]`, in `(due_at, id)` order):
    /// the timer to insert, and the members to move when the window slid.
    pub fn place(
        &self,
        mut t: NewTimer,
        own_close: i64,
        candidates: &[TimerRecord],
    ) -> (NewTimer, Placement, Vec<TimerId>) {
        let mine: Vec<(&TimerRecord, Digest)> = candidates
            .iter()
            .filter_map(|c| {
                let r = Routing::parse(c.routing.as_deref());
                let d = r.digest?;
                let same = d.key == self.spec.key
                    && r.to == self.routing.to
                    && r.topic == self.routing.topic
                    && r.critical == self.routing.critical
                    && c.channel == t.channel;
                same.then_some((c, d))
            })
            .collect();
        let open = mine.first().map(|(c, d)| Open {
            close: c.due_at,
            since: d.since.unwrap_or(c.due_at),
        });
        let placed = self.spec.place(t.due_at, own_close, open);
        let moved = match (placed.slide_to, open) {
            (Some(_), Some(o)) => mine
                .iter()
                .filter(|(c, _)| c.due_at == o.close)
                .map(|(c, _)| c.id)
                .collect(),
            _ => Vec::new(),
        };
        let mut routing = self.routing.clone();
        routing.digest = Some(Digest {
            since: Some(placed.since),
            ..self.spec.clone()
        });
        t.due_at = placed.due_at;
        t.routing = routing.stored().or(t.routing);
        (t, placed, moved)
    }
}

pub(crate) mod sql {
    use crate::model::timer_cols;
    use crate::shared_sql::{Statement, statement};

    /// Pending digest candidates, and at fire time a digest's members: $1
    /// tenant, $2 recipient, $3 channel, $4 from, $5 until (inclusive), $6
    /// limit. Walks the recipient's index (`timers_tenant_recipient_due`)
    /// over the range only. The range is a row comparison on (recipient,
    /// due_at), which only that index can seek: PostgreSQL without
    /// statistics would otherwise walk the pending-due index over every
    /// recipient's timers in the range (a burst), filtering. SQLite names
    /// the index instead.
    pub(crate) const CANDIDATES: Statement = statement!(concat!(
        "SELECT ",
        timer_cols!(),
        " FROM timers WHERE tenant_id = $1 AND recipient = $2 \
         AND (recipient, due_at) >= ($2, $4) AND (recipient, due_at) <= ($2, $5) AND state = 0 AND kind = 'timer' \
         AND channel = $3 AND routing IS NOT NULL ORDER BY due_at, id LIMIT $6"
    ));
    /// The time zone of a daily digest's subscriber: $1 tenant, $2 user.
    pub(crate) const PROFILE: Statement =
        statement!("SELECT profile FROM subscribers WHERE tenant_id = $1 AND user_id = $2");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testsuite::fixtures::timer;

    fn digest_timer(due: i64, key: &str, since: Option<i64>) -> NewTimer {
        let routing = Routing {
            digest: Some(Digest {
                key: key.into(),
                window_ms: Some(1000),
                max_delay_ms: Some(2500),
                at_local: None,
                since,
            }),
            ..Routing::default()
        };
        NewTimer {
            due_at: due,
            routing: routing.stored(),
            ..timer(due)
        }
    }

    #[test]
    fn joins_the_earliest_open_digest_of_its_key_and_slides_it() {
        let new = digest_timer(400, "k", None);
        let p = Pending::of(&new).unwrap();
        let rec = |id, due, key: &str| {
            let mut r = digest_timer(due, key, Some(0)).into_record(id);
            r.channel = new.channel.clone();
            r
        };
        let candidates = [rec(1, 1000, "other"), rec(2, 1000, "k"), rec(3, 1000, "k")];
        let (t, placed, moved) = p.place(new.clone(), 1400, &candidates);
        assert_eq!(
            (t.due_at, placed.since, placed.slide_to),
            (1400, 0, Some(1400))
        );
        assert_eq!(moved, vec![2, 3]);
        let stored = Routing::parse(t.routing.as_deref()).digest.unwrap();
        assert_eq!(stored.since, Some(0));
        // Nothing of its key: it opens its own.
        let (t, placed, moved) = p.place(new, 1400, &candidates[..1]);
        assert_eq!((t.due_at, placed.since), (1400, 400));
        assert!(moved.is_empty());
    }
}
