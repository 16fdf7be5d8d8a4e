//! The in-flight set: timers fetched for delivery whose outcome is not yet
//! recorded, and the permits that bound them. The fetcher adds to it, the
//! channel workers and the completer take from it.
//!
//! The set records, per timer, whether it holds a permit (taken by the
//! fetcher) or was admitted without one (a timer merged into another's
//! delivery, found in the store). [`Flight::release`] is the only way out,
//! and gives back exactly the permits the timers it removes held, so a
//! caller cannot give back too few (a leak that ends all firing) or too many
//! (a bound that no longer holds), and a second release of a timer gives
//! nothing.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use herald_core::TimerId;
use parking_lot::Mutex;
use tokio::sync::Semaphore;

/// How a timer came into the set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hold {
    /// Fetched: it holds one permit.
    Permit,
    /// Merged into another timer's delivery without a permit.
    Member,
}

pub(crate) struct Flight {
    /// Timers fetched and not yet recorded: a duplicate wheel entry for one of
    /// these is dropped, and `GET` reports them as `firing`.
    ids: Mutex<HashMap<TimerId, Hold>>,
    /// Bounds fetched-but-unrecorded deliveries (memory, and what a crash can
    /// send twice). Free permits, plus those of open rooms, plus those held
    /// in `ids`, make `max`.
    permits: Semaphore,
    max: usize,
    /// Permits given back by [`Flight::release`] since start: the progress
    /// the stall watch looks for.
    returned: AtomicU64,
    /// Deliveries in a sender's hands or waiting for their outcome to be
    /// recorded (see [`Hand`]).
    in_hand: Arc<AtomicUsize>,
    /// Fetch passes between taking permits and routing what they fetched.
    rooms: AtomicUsize,
}

/// The flight set could not give room: the engine is tearing down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Closed;

impl Flight {
    pub fn new(max: usize) -> Self {
        Self {
            ids: Mutex::new(HashMap::new()),
            permits: Semaphore::new(max),
            max,
            returned: AtomicU64::new(0),
            in_hand: Arc::new(AtomicUsize::new(0)),
            rooms: AtomicUsize::new(0),
        }
    }

    /// The bound: most permits there are.
    pub fn max(&self) -> usize {
        self.max
    }

    /// Permits taken: by timers in flight, and by a fetch pass under way.
    pub fn in_flight(&self) -> usize {
        self.max.saturating_sub(self.permits.available_permits())
    }

    /// Permits free now.
    pub fn available(&self) -> usize {
        self.permits.available_permits()
    }

    /// Whether the timer is in the set (being delivered by this node).
    pub fn contains(&self, id: TimerId) -> bool {
        self.ids.lock().contains_key(&id)
    }

    /// Timers in the set, with and without a permit.
    pub fn len(&self) -> usize {
        self.ids.lock().len()
    }

    /// Waits until `want` permits are free at once (at most `max`), without
    /// taking them.
    pub async fn wait_for_room(&self, want: usize) -> Result<(), Closed> {
        let want = u32::try_from(want.clamp(1, self.max.max(1))).unwrap_or(u32::MAX);
        match self.permits.acquire_many(want).await {
            Ok(permit) => {
                drop(permit);
                Ok(())
            }
            Err(_) => Err(Closed),
        }
    }

    /// Takes `want` permits if they are free now, as a room the caller
    /// fills with [`Room::claim`]; what it does not fill goes back when the
    /// room is dropped.
    pub fn room(&self, want: usize) -> Option<Room<'_>> {
        let n = u32::try_from(want).ok()?;
        if n == 0 {
            return None;
        }
        self.permits.try_acquire_many(n).ok()?.forget();
        self.rooms.fetch_add(1, Ordering::AcqRel);
        Some(Room {
            flight: self,
            left: want,
        })
    }

    /// Lets a merged member in without a permit, if it is not in flight yet
    /// and the set holds fewer than `max` timers: members count against the
    /// same bound as other in-flight work. A member refused here is not lost:
    /// it stays pending and fires on its own.
    pub fn admit_member(&self, id: TimerId) -> bool {
        let mut set = self.ids.lock();
        if set.len() >= self.max {
            return false;
        }
        match set.entry(id) {
            Entry::Vacant(e) => {
                e.insert(Hold::Member);
                true
            }
            Entry::Occupied(_) => false,
        }
    }

    /// Takes `ids` out of the set and gives back the permits they held (a
    /// merged member held none). A timer not in the set gives nothing, so
    /// releasing twice is harmless. Returns the permits given back.
    pub fn release(&self, ids: impl IntoIterator<Item = TimerId>) -> usize {
        let mut set = self.ids.lock();
        let n = ids
            .into_iter()
            .filter(|id| set.remove(id) == Some(Hold::Permit))
            .count();
        drop(set);
        if n > 0 {
            self.permits.add_permits(n);
            self.returned.fetch_add(n as u64, Ordering::Relaxed);
        }
        n
    }

    /// Permits [`Flight::release`] gave back since start.
    pub fn returned(&self) -> u64 {
        self.returned.load(Ordering::Relaxed)
    }

    /// Counts a delivery as in hand until the returned guard is dropped.
    pub fn hand(&self) -> Hand {
        self.in_hand.fetch_add(1, Ordering::AcqRel);
        Hand(self.in_hand.clone())
    }

    /// Deliveries in a sender's hands or waiting to be recorded.
    pub fn in_hand(&self) -> usize {
        self.in_hand.load(Ordering::Acquire)
    }

    /// Whether anything may still give permits back of its own accord: a
    /// delivery in hand, or a fetch pass under way.
    pub fn busy(&self) -> bool {
        self.in_hand() > 0 || self.rooms.load(Ordering::Acquire) > 0
    }
}

/// Permits a fetch pass took and has not yet given to timers.
pub(crate) struct Room<'a> {
    flight: &'a Flight,
    left: usize,
}

impl Room<'_> {
    /// Lets a fetched timer into the set with one of the room's permits;
    /// `false` (and no permit used) if it is in flight already or the room
    /// is used up.
    pub fn claim(&mut self, id: TimerId) -> bool {
        if self.left == 0 {
            return false;
        }
        match self.flight.ids.lock().entry(id) {
            Entry::Vacant(e) => {
                e.insert(Hold::Permit);
                self.left -= 1;
                true
            }
            Entry::Occupied(_) => false,
        }
    }

    /// Gives back the permits not claimed yet; the room stays open (the
    /// pass is still routing what it claimed).
    pub fn give_back_unclaimed(&mut self) {
        self.flight
            .permits
            .add_permits(std::mem::take(&mut self.left));
    }
}

impl Drop for Room<'_> {
    fn drop(&mut self) {
        self.flight.permits.add_permits(self.left);
        self.flight.rooms.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A delivery a sender took, until its outcome is recorded (or it is let go
/// unsent): what a graceful shutdown waits for, and what tells a stalled
/// node from one whose sends are slow.
pub(crate) struct Hand(Arc<AtomicUsize>);

impl Drop for Hand {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use proptest::prelude::*;

    use super::*;

    #[test]
    fn a_release_gives_back_the_permits_its_timers_held_once() {
        let f = Flight::new(4);
        let mut room = f.room(3).expect("room");
        assert!(room.claim(1));
        assert!(room.claim(2));
        assert!(!room.claim(2), "in flight already");
        drop(room);
        assert_eq!(f.in_flight(), 2, "the unused permit went back");
        assert!(f.admit_member(3));
        assert_eq!(f.release([1, 3]), 1, "a member holds no permit");
        assert_eq!(f.release([1, 3]), 0, "a second release gives nothing");
        assert_eq!(f.release([2]), 1);
        assert_eq!((f.available(), f.len()), (4, 0));
        assert_eq!(f.returned(), 2);
    }

    #[test]
    fn members_count_against_the_bound() {
        let f = Flight::new(2);
        let mut room = f.room(1).expect("room");
        assert!(room.claim(1));
        drop(room);
        assert!(f.admit_member(2));
        assert!(!f.admit_member(3), "the set is full");
        assert!(!f.admit_member(1), "in flight already");
    }

    #[test]
    fn a_hand_counts_until_dropped() {
        let f = Flight::new(1);
        assert!(!f.busy());
        let room = f.room(1).expect("room");
        assert!(f.busy(), "a fetch pass is under way");
        drop(room);
        let h = f.hand();
        assert_eq!(f.in_hand(), 1);
        drop(h);
        assert!(!f.busy());
    }

    /// One step against the flight set, as the pipeline's paths take them.
    #[derive(Debug, Clone)]
    enum Op {
        /// A fetch pass: a room for `want`, filled with these ids.
        Fetch { want: usize, ids: Vec<TimerId> },
        /// A merged member found in the store.
        Member(TimerId),
        /// Whatever ends these ids' flight (recorded, fenced, stale, ...).
        Release(Vec<TimerId>),
    }

    fn op() -> impl Strategy<Value = Op> {
        let id = 0..24i64;
        prop_oneof![
            (0..8usize, prop::collection::vec(id.clone(), 0..8))
                .prop_map(|(want, ids)| Op::Fetch { want, ids }),
            id.clone().prop_map(Op::Member),
            prop::collection::vec(id, 0..6).prop_map(Op::Release),
        ]
    }

    proptest! {
        /// Against a model of what each timer holds: the permits free are
        /// always `max` less those held, never more than `max`, and once
        /// every timer is released all are back.
        #[test]
        fn permits_follow_the_model(ops in prop::collection::vec(op(), 0..60)) {
            let max = 10;
            let f = Flight::new(max);
            let mut model: HashMap<TimerId, Hold> = HashMap::new();
            let mut returned = 0u64;
            for op in ops {
                match op {
                    Op::Fetch { want, ids } => {
                        let held = model.values().filter(|h| **h == Hold::Permit).count();
                        let room = f.room(want);
                        prop_assert_eq!(room.is_some(), want > 0 && want <= max - held);
                        if let Some(mut room) = room {
                            let mut left = want;
                            for id in ids {
                                let fits = left > 0 && !model.contains_key(&id);
                                prop_assert_eq!(room.claim(id), fits);
                                if fits {
                                    model.insert(id, Hold::Permit);
                                    left -= 1;
                                }
                            }
                        }
                    }
                    Op::Member(id) => {
                        let fits = model.len() < max && !model.contains_key(&id);
                        prop_assert_eq!(f.admit_member(id), fits);
                        if fits {
                            model.insert(id, Hold::Member);
                        }
                    }
                    Op::Release(ids) => {
                        let unique: HashSet<TimerId> = ids.iter().copied().collect();
                        let back = unique
                            .iter()
                            .filter(|id| model.remove(id) == Some(Hold::Permit))
                            .count();
                        prop_assert_eq!(f.release(ids), back);
                        returned += back as u64;
                    }
                }
                let held = model.values().filter(|h| **h == Hold::Permit).count();
                prop_assert!(f.available() <= max);
                prop_assert_eq!(f.available(), max - held);
                prop_assert_eq!(f.len(), model.len());
                prop_assert_eq!(f.returned(), returned);
            }
            let all: Vec<TimerId> = model.keys().copied().collect();
            f.release(all);
            prop_assert_eq!((f.available(), f.len()), (max, 0));
            prop_assert!(!f.busy());
        }
    }
}
