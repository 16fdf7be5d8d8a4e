//! Hierarchical timing wheel: the in-memory index of pending timers.
//!
//! A node holds millions of timers and many are cancelled or moved before
//! they fire, so insert and cancel should be O(1) (a binary heap makes both
//! O(log n) and needs a position index to cancel at all), and `advance` should
//! only touch slots that actually hold entries.
//!
//! # Layout
//!
//! Six levels of 64 slots. A level-`L` slot spans `64^L` ms, so the wheel
//! reaches `2^36` ms (~2.2 years) past `now`. An entry is filed by the highest
//! bit in which its due time differs from `now`: level `L` holds the entries
//! that agree with `now` on every bit above that level's 6 bits. Three facts
//! follow, and the code leans on them:
//!
//! * every occupied slot lies strictly *ahead* of `now` in the current
//!   rotation of its level, so a level's earliest slot is the lowest set bit of
//!   its occupancy bitmap (no wrap-around, so no rotate is needed);
//! * every occupied slot of level `L` expires before any slot of level `L + 1`,
//!   so the next expiry is on the lowest non-empty level;
//! * all pending entries with the same due time sit in the same list, so
//!   appending at the tail and cascading in list order keeps them FIFO.
//!
//! Entries beyond the top level's reach wait in an overflow list, which is
//! re-filed when `now` reaches the rotation holding the earliest of them.
//! Entries inserted already due wait in a "ready" list drained by the next
//! `advance`.
//!
//! # Memory
//!
//! Entries live in an arena of fixed-size chunks, so growth never leaves more
//! than one chunk of slack (a doubling `Vec` can leave 2x). Lists are threaded
//! through the arena by `u32` index; freed cells go on a free list and carry a
//! generation so stale [`WheelKey`]s are recognised.

use std::fmt;
use std::mem::size_of;

const LEVEL_BITS: u32 = 6;
const SLOTS: usize = 1 << LEVEL_BITS;
const SLOT_MASK: u64 = SLOTS as u64 - 1;
const LEVELS: usize = 6;
/// Bits of time covered by the whole wheel: one top-level rotation is `2^36` ms.
const WHEEL_BITS: u32 = LEVEL_BITS * LEVELS as u32;
const ROTATION_MASK: u64 = (1 << WHEEL_BITS) - 1;

/// "No entry" in the intrusive links. Never a valid arena index.
const NIL: u32 = u32::MAX;

/// Arena chunk size. 4096 cells of 40 bytes is 160 KiB: small enough that the
/// one partly filled chunk is negligible, large enough that the chunk table
/// stays tiny even at 10M entries.
const CHUNK_BITS: u32 = 12;
const CHUNK_LEN: usize = 1 << CHUNK_BITS;
const CHUNK_MASK: usize = CHUNK_LEN - 1;

/// Handle to an entry, for O(1) [`Wheel::cancel`].
///
/// The generation makes a handle go stale once its entry has fired or been
/// cancelled, even after the arena cell is reused by another entry. It is a
/// `u32` that wraps, so a handle kept across 2^32 reuses of one cell could
/// alias; callers drop their handles when an entry fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WheelKey {
    idx: u32,
    generation: u32,
}

/// Which list an entry is linked into; needed to fix the list's head/tail and
/// the occupancy bitmap on O(1) removal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Home {
    Slot { level: u8, slot: u8 },
    Overflow,
    Ready,
}

struct Entry<T> {
    due: u64,
    next: u32,
    prev: u32,
    generation: u32,
    home: Home,
    item: T,
}

/// An arena cell. `Free` fits in the niche of `Home`, so a cell costs no more
/// than an entry (40 bytes with a 16-byte `T`).
enum Cell<T> {
    Live(Entry<T>),
    Free { next_free: u32, generation: u32 },
}

#[derive(Debug, Clone, Copy)]
struct List {
    head: u32,
    tail: u32,
}

impl List {
    const EMPTY: List = List {
        head: NIL,
        tail: NIL,
    };

    fn is_empty(&self) -> bool {
        self.head == NIL
    }
}

/// Chunked storage for entries, addressed by `u32`.
struct Arena<T> {
    chunks: Vec<Vec<Cell<T>>>,
    free_head: u32,
}

impl<T> Arena<T> {
    fn new() -> Self {
        Arena {
            chunks: Vec::new(),
            free_head: NIL,
        }
    }

    fn cell(&self, idx: u32) -> Option<&Cell<T>> {
        let i = idx as usize;
        self.chunks.get(i >> CHUNK_BITS)?.get(i & CHUNK_MASK)
    }

    /// An entry reached through the wheel's own links, which only ever point
    /// at live cells; anything else is a bug in this module.
    fn live(&self, idx: u32) -> &Entry<T> {
        match self.cell(idx) {
            Some(Cell::Live(entry)) => entry,
            _ => unreachable!("timing wheel link {idx} points at a free cell"),
        }
    }

    fn live_mut(&mut self, idx: u32) -> &mut Entry<T> {
        let i = idx as usize;
        match self
            .chunks
            .get_mut(i >> CHUNK_BITS)
            .and_then(|c| c.get_mut(i & CHUNK_MASK))
        {
            Some(Cell::Live(entry)) => entry,
            _ => unreachable!("timing wheel link {idx} points at a free cell"),
        }
    }

    fn alloc(&mut self, mut entry: Entry<T>) -> WheelKey {
        if self.free_head != NIL {
            let idx = self.free_head;
            let i = idx as usize;
            let cell = &mut self.chunks[i >> CHUNK_BITS][i & CHUNK_MASK];
            let Cell::Free {
                next_free,
                generation,
            } = *cell
            else {
                unreachable!("timing wheel free list points at a live cell");
            };
            self.free_head = next_free;
            entry.generation = generation;
            *cell = Cell::Live(entry);
            return WheelKey { idx, generation };
        }
        if self.chunks.last().is_none_or(|c| c.len() == CHUNK_LEN) {
            // Exact capacity: this is what bounds the slack to one chunk.
            self.chunks.push(Vec::with_capacity(CHUNK_LEN));
        }
        let chunk_no = self.chunks.len() - 1;
        let chunk = &mut self.chunks[chunk_no];
        let idx = u32::try_from((chunk_no << CHUNK_BITS) | chunk.len())
            .ok()
            .filter(|&idx| idx != NIL)
            .expect("timing wheel holds at most u32::MAX - 1 entries");
        entry.generation = 0;
        chunk.push(Cell::Live(entry));
        WheelKey { idx, generation: 0 }
    }

    /// Frees a live cell (already unlinked) and returns its entry.
    fn release(&mut self, idx: u32) -> Entry<T> {
        let i = idx as usize;
        let cell = &mut self.chunks[i >> CHUNK_BITS][i & CHUNK_MASK];
        let generation = match cell {
            Cell::Live(entry) => entry.generation.wrapping_add(1),
            Cell::Free { .. } => unreachable!("timing wheel released a free cell"),
        };
        let old = std::mem::replace(
            cell,
            Cell::Free {
                next_free: self.free_head,
                generation,
            },
        );
        self.free_head = idx;
        match old {
            Cell::Live(entry) => entry,
            Cell::Free { .. } => unreachable!("timing wheel released a free cell"),
        }
    }
}

/// Level an entry due at `due` (> `now`) belongs to; `>= LEVELS` means overflow.
fn level_for(now: u64, due: u64) -> usize {
    // OR-ing in the low bits makes "differs only within level 0" land on level 0.
    let diff = (now ^ due) | SLOT_MASK;
    let top_bit = u64::BITS - 1 - diff.leading_zeros();
    (top_bit / LEVEL_BITS) as usize
}

fn slot_for(due: u64, level: usize) -> usize {
    ((due >> (level as u32 * LEVEL_BITS)) & SLOT_MASK) as usize
}

/// Start time of `slot` at `level` within the rotation of that level that
/// contains `now`.
fn slot_start(now: u64, level: usize, slot: usize) -> u64 {
    let shift = level as u32 * LEVEL_BITS;
    let rotation = (1u64 << (shift + LEVEL_BITS)) - 1;
    (now & !rotation) | ((slot as u64) << shift)
}

/// A hierarchical timing wheel with millisecond resolution.
///
/// Pure data structure: it has no clock of its own and only moves when
/// [`advance`](Wheel::advance) is called, so it is deterministic under test.
pub struct Wheel<T> {
    arena: Arena<T>,
    now: u64,
    len: usize,
    /// Boxed so that moving a `Wheel` copies a pointer, not 3 KiB of heads.
    slots: Box<[[List; SLOTS]; LEVELS]>,
    /// Bit `s` of `occupied[l]` is set iff `slots[l][s]` is non-empty.
    occupied: [u64; LEVELS],
    overflow: List,
    /// Lower bound on the due times in `overflow`, valid while it is non-empty.
    /// Not raised on cancel: a stale bound only causes an early, harmless re-file.
    overflow_min_due: u64,
    ready: List,
    /// Lower bound on the due times in `ready`, valid while it is non-empty.
    ready_min_due: u64,
}

impl<T> fmt::Debug for Wheel<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Wheel")
            .field("now", &self.now)
            .field("len", &self.len)
            .field("next_deadline", &self.next_deadline())
            .finish_non_exhaustive()
    }
}

impl<T> Wheel<T> {
    /// Creates an empty wheel whose time starts at `now_ms` (unix ms).
    ///
    /// Due times are only meaningful relative to this clock, so start it at
    /// the real current time rather than 0.
    pub fn new(now_ms: u64) -> Self {
        Wheel {
            arena: Arena::new(),
            now: now_ms,
            len: 0,
            slots: Box::new([[List::EMPTY; SLOTS]; LEVELS]),
            occupied: [0; LEVELS],
            overflow: List::EMPTY,
            overflow_min_due: u64::MAX,
            ready: List::EMPTY,
            ready_min_due: u64::MAX,
        }
    }

    /// Number of pending entries.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The time of the last [`advance`](Wheel::advance) (or the start time).
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Schedules `item` at `due_ms`. O(1).
    ///
    /// Any due time is accepted: one at or before [`now`](Wheel::now) fires at
    /// the next `advance`, and one far beyond the wheel's reach (even
    /// `u64::MAX`) waits in overflow and is cascaded in when its time nears.
    ///
    /// # Panics
    ///
    /// Only if more than `u32::MAX - 1` entries are held at once.
    pub fn insert(&mut self, due_ms: u64, item: T) -> WheelKey {
        let key = self.arena.alloc(Entry {
            due: due_ms,
            next: NIL,
            prev: NIL,
            generation: 0,
            home: Home::Ready,
            item,
        });
        self.len += 1;
        self.file(key.idx, due_ms);
        key
    }

    /// Removes the entry behind `key`. O(1).
    ///
    /// Returns `None` if the entry already fired or was cancelled: callers race
    /// cancellations against firing, and that must not be an error.
    pub fn cancel(&mut self, key: WheelKey) -> Option<T> {
        match self.arena.cell(key.idx) {
            Some(Cell::Live(entry)) if entry.generation == key.generation => {}
            _ => return None,
        }
        self.unlink(key.idx);
        self.len -= 1;
        Some(self.arena.release(key.idx).item)
    }

    /// The earliest time at which [`advance`](Wheel::advance) could have work
    /// to do, or `None` if the wheel is empty. O(levels).
    ///
    /// Never later than the earliest due time, but may be earlier: it can be a
    /// cascade point where entries only move to a finer level. A driver sleeps
    /// until this time, advances, and asks again. It is below `now()` only if
    /// an entry was inserted already due; otherwise it is above `now()`, so
    /// advancing to it always makes progress.
    pub fn next_deadline(&self) -> Option<u64> {
        if !self.ready.is_empty() {
            return Some(self.ready_min_due);
        }
        self.next_expiry().map(|(_, at)| at)
    }

    /// Moves time to `now_ms` and appends every entry due by then to `out` as
    /// `(due_ms, item)`: ordered by due time, FIFO among equal due times.
    ///
    /// Time never goes backwards: an earlier `now_ms` leaves `now()` as it is,
    /// but entries inserted already due are still delivered. The cost is
    /// proportional to the occupied slots passed and the entries moved, not to
    /// the time span, so a jump of hours or years is cheap.
    pub fn advance(&mut self, now_ms: u64, out: &mut Vec<(u64, T)>) {
        let target = now_ms.max(self.now);
        // Ready entries are due at or before the old `now`, hence before
        // everything still in the wheel, so they go out first.
        self.drain_ready(out);
        while let Some((home, at)) = self.next_expiry() {
            if at > target {
                break;
            }
            // Slots are visited in time order, so moving `now` to each one's
            // start keeps every other entry filed correctly relative to `now`.
            self.now = at;
            let mut idx = self.take(home);
            while idx != NIL {
                let (next, due) = {
                    let entry = self.arena.live(idx);
                    (entry.next, entry.due)
                };
                if due <= at {
                    self.fire(idx, out);
                } else {
                    // Always lands on a lower level (or back in overflow, in a
                    // later rotation), so this loop terminates.
                    self.file(idx, due);
                }
                idx = next;
            }
        }
        self.now = target;
    }

    /// Removes every entry for which `keep` returns false. O(arena size),
    /// i.e. linear in the most entries ever held at once.
    ///
    /// Used when a node loses a shard: its timers must go without the caller
    /// having to remember every key.
    pub fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) {
        for chunk_no in 0..self.arena.chunks.len() {
            for offset in 0..self.arena.chunks[chunk_no].len() {
                let idx = ((chunk_no << CHUNK_BITS) | offset) as u32;
                let drop = match self.arena.cell(idx) {
                    Some(Cell::Live(entry)) => !keep(&entry.item),
                    _ => false,
                };
                if drop {
                    self.unlink(idx);
                    self.len -= 1;
                    self.arena.release(idx);
                }
            }
        }
    }

    /// Approximate heap bytes held by the wheel itself, for a memory gauge.
    ///
    /// Counts allocated capacity (freed cells are kept for reuse, so this does
    /// not shrink after a burst), but not heap memory owned by the items.
    pub fn heap_bytes(&self) -> usize {
        let cells: usize = self.arena.chunks.iter().map(Vec::capacity).sum();
        size_of::<[[List; SLOTS]; LEVELS]>()
            + self.arena.chunks.capacity() * size_of::<Vec<Cell<T>>>()
            + cells * size_of::<Cell<T>>()
    }

    /// The next list to process and the time it becomes due.
    fn next_expiry(&self) -> Option<(Home, u64)> {
        for (level, &bits) in self.occupied.iter().enumerate() {
            if bits != 0 {
                let slot = bits.trailing_zeros() as usize;
                let at = slot_start(self.now, level, slot);
                return Some((
                    Home::Slot {
                        level: level as u8,
                        slot: slot as u8,
                    },
                    at,
                ));
            }
        }
        if self.overflow.is_empty() {
            return None;
        }
        // The start of the top-level rotation holding the earliest overflow
        // entry: from there on it is within the wheel's reach.
        Some((Home::Overflow, self.overflow_min_due & !ROTATION_MASK))
    }

    /// Links the (unlinked) entry `idx` into the list for `due` relative to `now`.
    fn file(&mut self, idx: u32, due: u64) {
        let home = if due <= self.now {
            self.ready_min_due = if self.ready.is_empty() {
                due
            } else {
                self.ready_min_due.min(due)
            };
            Home::Ready
        } else {
            let level = level_for(self.now, due);
            if level < LEVELS {
                Home::Slot {
                    level: level as u8,
                    slot: slot_for(due, level) as u8,
                }
            } else {
                self.overflow_min_due = if self.overflow.is_empty() {
                    due
                } else {
                    self.overflow_min_due.min(due)
                };
                Home::Overflow
            }
        };
        self.push_back(idx, home);
    }

    fn list_mut(&mut self, home: Home) -> &mut List {
        match home {
            Home::Slot { level, slot } => &mut self.slots[level as usize][slot as usize],
            Home::Overflow => &mut self.overflow,
            Home::Ready => &mut self.ready,
        }
    }

    fn push_back(&mut self, idx: u32, home: Home) {
        let tail = self.list_mut(home).tail;
        let entry = self.arena.live_mut(idx);
        entry.home = home;
        entry.prev = tail;
        entry.next = NIL;
        if tail == NIL {
            self.list_mut(home).head = idx;
        } else {
            self.arena.live_mut(tail).next = idx;
        }
        self.list_mut(home).tail = idx;
        if let Home::Slot { level, slot } = home {
            self.occupied[level as usize] |= 1 << slot;
        }
    }

    fn unlink(&mut self, idx: u32) {
        let (prev, next, home) = {
            let entry = self.arena.live(idx);
            (entry.prev, entry.next, entry.home)
        };
        if prev == NIL {
            self.list_mut(home).head = next;
        } else {
            self.arena.live_mut(prev).next = next;
        }
        if next == NIL {
            self.list_mut(home).tail = prev;
        } else {
            self.arena.live_mut(next).prev = prev;
        }
        if prev == NIL && next == NIL {
            self.mark_empty(home);
        }
    }

    /// Detaches a whole list and returns its head; the entries keep their
    /// stale links, and the caller re-files or fires each one.
    fn take(&mut self, home: Home) -> u32 {
        let list = std::mem::replace(self.list_mut(home), List::EMPTY);
        self.mark_empty(home);
        list.head
    }

    fn mark_empty(&mut self, home: Home) {
        if let Home::Slot { level, slot } = home {
            self.occupied[level as usize] &= !(1 << slot);
        }
    }

    /// Frees a detached entry and reports it.
    fn fire(&mut self, idx: u32, out: &mut Vec<(u64, T)>) {
        self.len -= 1;
        let entry = self.arena.release(idx);
        out.push((entry.due, entry.item));
    }

    fn drain_ready(&mut self, out: &mut Vec<(u64, T)>) {
        let start = out.len();
        let mut idx = self.take(Home::Ready);
        while idx != NIL {
            let next = self.arena.live(idx).next;
            self.fire(idx, out);
            idx = next;
        }
        // The ready list is in insertion order; a stable sort by due time
        // gives "by due, then FIFO". Usually it is already sorted.
        let fired = &mut out[start..];
        if !fired.is_sorted_by_key(|(due, _)| *due) {
            fired.sort_by_key(|(due, _)| *due);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use proptest::test_runner::TestCaseError;
    use std::collections::BTreeMap;

    /// Shaped like the engine's payload: 16 bytes.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    struct Job {
        id: i64,
        shard: u16,
        priority: u8,
    }

    fn job(id: i64) -> Job {
        Job {
            id,
            shard: (id % 64) as u16,
            priority: (id % 10) as u8,
        }
    }

    const T0: u64 = 1_700_000_000_000;

    fn advance<T>(wheel: &mut Wheel<T>, to: u64) -> Vec<(u64, T)> {
        let mut out = Vec::new();
        wheel.advance(to, &mut out);
        out
    }

    #[test]
    fn entry_is_compact() {
        assert_eq!(size_of::<Job>(), 16);
        assert!(
            size_of::<Entry<Job>>() <= 48,
            "entry is {} bytes",
            size_of::<Entry<Job>>()
        );
        assert!(
            size_of::<Cell<Job>>() <= 48,
            "cell is {} bytes",
            size_of::<Cell<Job>>()
        );
    }

    #[test]
    fn a_million_entries_fit_the_memory_budget() {
        let mut wheel = Wheel::new(T0);
        for i in 0..1_000_000i64 {
            let offset = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40;
            wheel.insert(T0 + offset, job(i));
        }
        assert_eq!(wheel.len(), 1_000_000);
        let per_entry = wheel.heap_bytes() as f64 / wheel.len() as f64;
        assert!(per_entry <= 64.0, "{per_entry} bytes per entry");
    }

    #[test]
    fn fires_at_the_exact_ms_and_not_before() {
        let mut wheel = Wheel::new(T0);
        for offset in [1u64, 63, 64, 65, 4_095, 4_096, 4_097, 262_144, 1_000_003] {
            let due = T0 + offset;
            wheel.insert(due, offset);
        }
        let mut fired = Vec::new();
        let mut t = T0;
        while let Some(deadline) = wheel.next_deadline() {
            assert!(deadline > t, "deadline must make progress");
            // One ms before the deadline there is nothing to do.
            assert!(advance(&mut wheel, deadline - 1).is_empty());
            for (due, _) in advance(&mut wheel, deadline) {
                assert_eq!(due, deadline, "fired off its due time");
                fired.push(due);
            }
            t = deadline;
        }
        let want: Vec<u64> = [1u64, 63, 64, 65, 4_095, 4_096, 4_097, 262_144, 1_000_003]
            .iter()
            .map(|o| T0 + o)
            .collect();
        assert_eq!(fired, want);
        assert!(wheel.is_empty());
    }

    #[test]
    fn one_big_step_fires_everything_in_order() {
        let mut wheel = Wheel::new(T0);
        let offsets = [5_000_000u64, 3, 70, 3, 1 << 20, 64, 9_999];
        for (i, offset) in offsets.iter().enumerate() {
            wheel.insert(T0 + offset, i);
        }
        assert!(advance(&mut wheel, T0 + 2).is_empty());
        let fired = advance(&mut wheel, T0 + 10_000_000);
        let order: Vec<usize> = fired.iter().map(|&(_, i)| i).collect();
        assert_eq!(order, vec![1, 3, 5, 2, 6, 4, 0]);
        assert_eq!(wheel.now(), T0 + 10_000_000);
    }

    #[test]
    fn cancel_returns_the_item_and_it_never_fires() {
        let mut wheel = Wheel::new(T0);
        let a = wheel.insert(T0 + 100, job(1));
        let b = wheel.insert(T0 + 100, job(2));
        let c = wheel.insert(T0 + 100_000, job(3));
        assert_eq!(wheel.cancel(b), Some(job(2)));
        assert_eq!(wheel.cancel(c), Some(job(3)));
        assert_eq!(wheel.len(), 1);
        assert_eq!(
            advance(&mut wheel, T0 + 1_000_000),
            vec![(T0 + 100, job(1))]
        );
        assert_eq!(wheel.cancel(a), None);
        assert!(wheel.is_empty());
        assert_eq!(wheel.next_deadline(), None);
    }

    #[test]
    fn stale_keys_are_rejected_and_leave_the_reused_cell_alone() {
        let mut wheel = Wheel::new(T0);
        let fired = wheel.insert(T0 + 1, "fired");
        assert_eq!(advance(&mut wheel, T0 + 1).len(), 1);
        // The freed cell is reused by the next insert.
        let reused = wheel.insert(T0 + 10, "reused");
        assert_eq!(reused.idx, fired.idx);
        assert_eq!(wheel.cancel(fired), None);
        assert_eq!(wheel.len(), 1);

        assert_eq!(wheel.cancel(reused), Some("reused"));
        let again = wheel.insert(T0 + 10, "again");
        assert_eq!(again.idx, reused.idx);
        assert_eq!(wheel.cancel(reused), None);
        assert_eq!(wheel.cancel(fired), None);
        assert_eq!(advance(&mut wheel, T0 + 10), vec![(T0 + 10, "again")]);
    }

    #[test]
    fn past_due_inserts_fire_on_the_next_advance_in_due_order() {
        let mut wheel = Wheel::new(T0);
        wheel.insert(T0 + 1, "future");
        wheel.insert(T0 - 5, "b");
        wheel.insert(T0, "now");
        wheel.insert(T0 - 10, "a");
        wheel.insert(0, "epoch");
        wheel.insert(T0 - 5, "c");
        assert_eq!(wheel.next_deadline(), Some(0));
        // Even a backwards advance delivers them, without moving time back.
        let fired = advance(&mut wheel, T0 - 1_000);
        let names: Vec<&str> = fired.iter().map(|&(_, n)| n).collect();
        assert_eq!(names, vec!["epoch", "a", "b", "c", "now"]);
        assert_eq!(wheel.now(), T0);
        assert_eq!(wheel.next_deadline(), Some(T0 + 1));
        assert_eq!(advance(&mut wheel, T0 + 1), vec![(T0 + 1, "future")]);
    }

    #[test]
    fn same_due_time_fires_in_insertion_order() {
        let mut wheel = Wheel::new(T0);
        let due = T0 + 5_000_000;
        // Inserted from different distances, so first filed on different
        // levels; they must still come out FIFO.
        wheel.insert(due, 0);
        wheel.insert(due, 1);
        advance(&mut wheel, T0 + 4_000_000);
        wheel.insert(due, 2);
        advance(&mut wheel, due - 100);
        wheel.insert(due, 3);
        wheel.insert(due - 1, 99);
        advance(&mut wheel, due - 1);
        wheel.insert(due, 4);
        let fired = advance(&mut wheel, due);
        assert_eq!(fired, (0..5).map(|i| (due, i)).collect::<Vec<_>>());
    }

    #[test]
    fn far_future_cascades_and_never_fires_early() {
        let mut wheel = Wheel::new(T0);
        let beyond_top = T0 + (1 << WHEEL_BITS) + 12_345;
        let century = T0 + 100 * 365 * 24 * 3_600 * 1_000;
        wheel.insert(u64::MAX, "max");
        wheel.insert(century, "century");
        wheel.insert(beyond_top, "beyond");
        wheel.insert(T0 + 1, "soon");

        let mut fired = Vec::new();
        let mut steps = 0;
        while let Some(deadline) = wheel.next_deadline() {
            steps += 1;
            assert!(deadline > wheel.now());
            for (due, name) in advance(&mut wheel, deadline) {
                assert_eq!(due, deadline, "{name} fired off its due time");
                fired.push(name);
            }
        }
        assert_eq!(fired, vec!["soon", "beyond", "century", "max"]);
        // Jumps from occupied slot to occupied slot: a handful of stops per
        // entry, not one per rotation (or per ms).
        assert!(steps <= 4 * (LEVELS + 2), "{steps} steps");
        assert_eq!(wheel.now(), u64::MAX);
    }

    #[test]
    fn far_future_does_not_fire_a_ms_early() {
        let mut wheel = Wheel::new(T0);
        let due = T0 + (3 << WHEEL_BITS) + 777;
        wheel.insert(due, ());
        assert!(advance(&mut wheel, due - 1).is_empty());
        assert_eq!(wheel.len(), 1);
        assert_eq!(wheel.next_deadline(), Some(due));
        assert_eq!(advance(&mut wheel, due), vec![(due, ())]);
    }

    #[test]
    fn survives_the_end_of_time() {
        let start = u64::MAX - 100;
        let mut wheel = Wheel::new(start);
        wheel.insert(u64::MAX, 2);
        wheel.insert(start + 1, 1);
        wheel.insert(start, 0);
        assert_eq!(wheel.next_deadline(), Some(start));
        let fired = advance(&mut wheel, u64::MAX);
        assert_eq!(fired, vec![(start, 0), (start + 1, 1), (u64::MAX, 2)]);
        wheel.insert(u64::MAX, 3);
        assert_eq!(advance(&mut wheel, u64::MAX), vec![(u64::MAX, 3)]);
    }

    #[test]
    fn retain_drops_only_rejected_entries() {
        let mut wheel = Wheel::new(T0);
        let mut keys = Vec::new();
        for i in 0..1_000i64 {
            keys.push(wheel.insert(T0 - 5 + (i as u64) * 7_919, job(i)));
        }
        wheel.insert(T0 + (1 << 40), job(1_000));
        wheel.retain(|j| j.shard != 3);
        let kept = (0..=1_000).filter(|i| i % 64 != 3).count();
        assert_eq!(wheel.len(), kept);
        assert_eq!(wheel.cancel(keys[3]), None);
        assert_eq!(wheel.cancel(keys[4]), Some(job(4)));
        let fired = advance(&mut wheel, u64::MAX);
        assert_eq!(fired.len(), kept - 1);
        assert!(fired.iter().all(|(_, j)| j.shard != 3 && j.id != 4));
        assert!(fired.windows(2).all(|w| w[0].0 <= w[1].0));
    }

    #[test]
    fn next_deadline_is_never_after_the_earliest_due() {
        let mut wheel = Wheel::new(T0);
        assert_eq!(wheel.next_deadline(), None);
        let mut dues = Vec::new();
        for i in 0..200u64 {
            let due = T0 + i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % (1 << 38);
            dues.push(due);
            wheel.insert(due, ());
            let earliest = *dues.iter().min().unwrap_or(&due);
            let next = wheel.next_deadline().unwrap_or(u64::MAX);
            assert!(next <= earliest);
        }
        dues.sort_unstable();
        let mut remaining = dues.as_slice();
        while let Some(next) = wheel.next_deadline() {
            assert!(next <= remaining[0]);
            let fired = advance(&mut wheel, next);
            remaining = &remaining[fired.len()..];
        }
        assert!(remaining.is_empty());
    }

    // ---- model-based property test -------------------------------------

    #[derive(Debug, Clone)]
    enum Due {
        /// `now - x`: already due when inserted.
        Past(u64),
        /// `now + x`.
        After(u64),
        /// The start of a slot at `level` a few slots ahead: exercises entries
        /// that are due exactly at a cascade point.
        SlotStart {
            level: u32,
            ahead: u64,
        },
        Max,
    }

    impl Due {
        fn at(&self, now: u64) -> u64 {
            match *self {
                Due::Past(x) => now.saturating_sub(x),
                Due::After(x) => now.saturating_add(x),
                Due::SlotStart { level, ahead } => {
                    let shift = level * LEVEL_BITS;
                    (now >> shift)
                        .checked_add(ahead)
                        .and_then(|slot| slot.checked_mul(1 << shift))
                        .unwrap_or(u64::MAX)
                }
                Due::Max => u64::MAX,
            }
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(Due),
        Cancel(prop::sample::Index),
        Advance(u64),
        AdvanceBack(u64),
        AdvanceToNextDeadline,
        Retain(u64),
    }

    /// Distances mixing every level and beyond the top one.
    fn distance() -> impl Strategy<Value = u64> {
        prop_oneof![
            4 => 0u64..200,
            3 => 200u64..600_000,
            2 => 600_000u64..864_000_000,
            1 => (1u64 << WHEEL_BITS)..(1u64 << 42),
        ]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            8 => distance().prop_map(|d| Op::Insert(Due::After(d))),
            1 => (0u64..100_000).prop_map(|d| Op::Insert(Due::Past(d))),
            1 => (1u32..=7, 1u64..4)
                .prop_map(|(level, ahead)| Op::Insert(Due::SlotStart { level, ahead })),
            1 => Just(Op::Insert(Due::Max)),
            4 => any::<prop::sample::Index>().prop_map(Op::Cancel),
            5 => distance().prop_map(Op::Advance),
            3 => Just(Op::AdvanceToNextDeadline),
            1 => (0u64..1_000).prop_map(Op::AdvanceBack),
            1 => (2u64..6).prop_map(Op::Retain),
        ]
    }

    fn start() -> impl Strategy<Value = u64> {
        prop_oneof![
            Just(0u64),
            T0..T0 + (1 << 40),
            (u64::MAX - (1 << 40))..=u64::MAX,
        ]
    }

    /// The obvious implementation: pending entries ordered by (due, insertion).
    ///
    /// The item is the insertion sequence number, which is also the position
    /// of its key in the test's key list. The model never compares keys, so a
    /// stale key that aliased a newer entry would show up as a mismatch.
    struct Model {
        now: u64,
        pending: BTreeMap<(u64, u64), u64>,
        due_of: Vec<u64>,
    }

    impl Model {
        fn advance(&mut self, to: u64) -> Vec<(u64, u64)> {
            self.now = self.now.max(to);
            let later = match self.now.checked_add(1) {
                Some(after) => self.pending.split_off(&(after, 0)),
                None => BTreeMap::new(),
            };
            let due = std::mem::replace(&mut self.pending, later);
            due.into_iter().map(|((d, _), item)| (d, item)).collect()
        }
    }

    fn check_advance(
        wheel: &mut Wheel<u64>,
        model: &mut Model,
        to: u64,
    ) -> Result<(), TestCaseError> {
        let mut out = Vec::new();
        wheel.advance(to, &mut out);
        let want = model.advance(to);
        prop_assert_eq!(wheel.now(), model.now);
        prop_assert!(
            out.iter().all(|&(due, _)| due <= model.now),
            "fired early: {:?}",
            out
        );
        prop_assert_eq!(out, want);
        Ok(())
    }

    fn check_state(wheel: &Wheel<u64>, model: &Model) -> Result<(), TestCaseError> {
        prop_assert_eq!(wheel.len(), model.pending.len());
        let earliest = model.pending.keys().next().map(|&(due, _)| due);
        match (wheel.next_deadline(), earliest) {
            (None, None) => {}
            (Some(next), Some(earliest)) => {
                prop_assert!(
                    next <= earliest,
                    "next_deadline {} > earliest due {}",
                    next,
                    earliest
                );
                // Advancing to next_deadline() must always make progress.
                if earliest > model.now {
                    prop_assert!(next > model.now, "next_deadline {} is not ahead", next);
                }
            }
            (next, earliest) => {
                prop_assert!(
                    false,
                    "next_deadline {:?}, earliest due {:?}",
                    next,
                    earliest
                );
            }
        }
        Ok(())
    }

    fn run_against_model(start: u64, ops: Vec<Op>) -> Result<(), TestCaseError> {
        let mut wheel = Wheel::new(start);
        let mut model = Model {
            now: start,
            pending: BTreeMap::new(),
            due_of: Vec::new(),
        };
        let mut keys = Vec::new();
        for op in ops {
            match op {
                Op::Insert(due) => {
                    let due = due.at(model.now);
                    let seq = keys.len() as u64;
                    keys.push(wheel.insert(due, seq));
                    model.pending.insert((due, seq), seq);
                    model.due_of.push(due);
                }
                Op::Cancel(pick) => {
                    if keys.is_empty() {
                        continue;
                    }
                    let i = pick.index(keys.len());
                    let want = model.pending.remove(&(model.due_of[i], i as u64));
                    prop_assert_eq!(wheel.cancel(keys[i]), want);
                }
                Op::Advance(step) => {
                    let to = model.now.saturating_add(step);
                    check_advance(&mut wheel, &mut model, to)?;
                }
                Op::AdvanceBack(step) => {
                    let to = model.now.saturating_sub(step);
                    check_advance(&mut wheel, &mut model, to)?;
                }
                Op::AdvanceToNextDeadline => {
                    let to = wheel.next_deadline().unwrap_or(model.now);
                    check_advance(&mut wheel, &mut model, to)?;
                }
                Op::Retain(m) => {
                    wheel.retain(|item| item % m != 0);
                    model.pending.retain(|_, item| *item % m != 0);
                }
            }
            check_state(&wheel, &model)?;
        }
        // Nothing lost: everything still pending fires exactly once, in order.
        check_advance(&mut wheel, &mut model, u64::MAX)?;
        prop_assert!(wheel.is_empty());
        prop_assert_eq!(wheel.next_deadline(), None);
        for key in keys {
            prop_assert_eq!(wheel.cancel(key), None);
        }
        Ok(())
    }

    proptest! {
        // No regression files: they would land outside this module's files.
        #![proptest_config(ProptestConfig {
            cases: 1024,
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        #[test]
        fn behaves_like_a_sorted_map(start in start(), ops in prop::collection::vec(op(), 0..300)) {
            run_against_model(start, ops)?;
        }
    }
}
