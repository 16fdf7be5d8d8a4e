//! The wheel this node fires from (the driver in `driver.rs` turns it).
//!
//! Invariant (the "horizon"): every pending timer of an owned shard whose due
//! time is before `horizon` is either in the wheel or still ahead of the
//! loader's cursor. The loader raises the horizon *before* it reads a page,
//! and every other path (API writes, retries) inserts directly when the due
//! time is below the horizon, so no timer falls between the two. A timer may
//! land in the wheel twice; the fetch step drops the copy that is stale.
//!
//! The wheel holds at most `max_loaded` timers whatever path inserts. A timer
//! turned away at the cap stays pending in the store: the schedule then asks
//! the loader to read its window again from the start, which keeps the
//! invariant above (the timer is ahead of the loader's cursor again).

use std::sync::atomic::{AtomicBool, Ordering};

use herald_core::{Priority, TenantId, TimerId, Wheel};
use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::timers::queue::{DueTimer, FairQueue};

/// What the wheel holds per timer: 16 bytes, the due time is kept by the wheel.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Slot {
    id: TimerId,
    tenant: TenantId,
    shard: u16,
    priority: Priority,
}

const _: () = assert!(std::mem::size_of::<Slot>() == 16);

/// Longest the driver sleeps without looking at the clock, so that a clock
/// that jumps (or a missed wake-up) costs at most this much lateness.
const MAX_SLEEP_MS: u64 = 250;

struct State {
    wheel: Wheel<Slot>,
    horizon: i64,
    /// When the driver plans to wake next; an insert due earlier wakes it.
    planned_wake: i64,
}

pub(crate) struct Schedule {
    state: Mutex<State>,
    wake: Notify,
    /// Most timers the wheel holds (`max_loaded`).
    cap: usize,
    /// A timer was turned away at the cap: the loader must re-read its window.
    overflowed: AtomicBool,
}

fn to_wheel_ms(ms: i64) -> u64 {
    u64::try_from(ms).unwrap_or(0)
}

impl Schedule {
    pub fn new(now_ms: i64, cap: usize) -> Self {
        Self {
            cap: cap.max(1),
            overflowed: AtomicBool::new(false),
            state: Mutex::new(State {
                wheel: Wheel::new(to_wheel_ms(now_ms)),
                horizon: i64::MIN,
                planned_wake: i64::MAX,
            }),
            wake: Notify::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.state.lock().wheel.len()
    }

    pub fn horizon(&self) -> i64 {
        self.state.lock().horizon
    }

    /// Raises the horizon; never lowers it.
    pub fn raise_horizon(&self, to: i64) {
        let mut st = self.state.lock();
        st.horizon = st.horizon.max(to);
    }

    /// Whether the wheel is at its cap.
    pub fn full(&self) -> bool {
        self.len() >= self.cap
    }

    /// Whether timers were turned away at the cap since the last call: the
    /// loader then re-reads its window from the start.
    pub fn take_overflow(&self) -> bool {
        self.overflowed.swap(false, Ordering::AcqRel)
    }

    /// Records that pending timers below the horizon were left out (the wheel
    /// is full): the loader re-reads its window.
    pub fn mark_overflow(&self) {
        self.overflowed.store(true, Ordering::Release);
    }

    /// Inserts timers below the cap, whatever their due time (the loader's pages).
    pub fn load(&self, timers: impl IntoIterator<Item = DueTimer>) {
        self.insert_where(timers, |_, _| true);
    }

    /// Inserts the timers that fall below the horizon; the loader will find the
    /// rest. Returns how many were inserted.
    pub fn offer(&self, timers: impl IntoIterator<Item = DueTimer>) -> usize {
        self.insert_where(timers, |t, horizon| t.due_at < horizon)
    }

    fn insert_where(
        &self,
        timers: impl IntoIterator<Item = DueTimer>,
        keep: impl Fn(&DueTimer, i64) -> bool,
    ) -> usize {
        let mut st = self.state.lock();
        let horizon = st.horizon;
        let mut earliest = i64::MAX;
        let (mut n, mut turned_away) = (0, 0u64);
        for t in timers {
            if !keep(&t, horizon) {
                continue;
            }
            if st.wheel.len() >= self.cap {
                turned_away += 1;
                continue;
            }
            earliest = earliest.min(t.due_at);
            st.wheel.insert(
                to_wheel_ms(t.due_at),
                Slot {
                    id: t.id,
                    tenant: t.tenant,
                    shard: t.shard,
                    priority: t.priority,
                },
            );
            n += 1;
        }
        let wake = earliest < st.planned_wake;
        drop(st);
        if turned_away > 0 {
            self.overflowed.store(true, Ordering::Release);
            metrics::counter!(crate::observe::metrics::WHEEL_FULL).increment(turned_away);
        }
        if wake {
            self.wake.notify_one();
        }
        n
    }

    /// Drops the timers of shards this node no longer owns.
    pub fn retain_shards(&self, keep: impl Fn(u16) -> bool) {
        self.state.lock().wheel.retain(|s| keep(s.shard));
    }

    /// Fires everything due at `now` into `ready`; returns when to look next.
    pub fn tick(&self, now: i64, ready: &FairQueue<DueTimer>, buf: &mut Vec<(u64, Slot)>) -> i64 {
        let next = {
            let mut st = self.state.lock();
            st.wheel.advance(to_wheel_ms(now), buf);
            let next = st
                .wheel
                .next_deadline()
                .map(|d| i64::try_from(d).unwrap_or(i64::MAX))
                .unwrap_or(i64::MAX)
                .min(now.saturating_add(MAX_SLEEP_MS as i64))
                .max(now + 1);
            st.planned_wake = next;
            next
        };
        if !buf.is_empty() {
            ready.push_many(buf.drain(..).map(|(due, s)| DueTimer {
                id: s.id,
                due_at: i64::try_from(due).unwrap_or(i64::MAX),
                shard: s.shard,
                priority: s.priority,
                tenant: s.tenant,
            }));
        }
        next
    }

    /// Completes when an insert lands before the driver's planned wake-up.
    pub fn woken(&self) -> tokio::sync::futures::Notified<'_> {
        self.wake.notified()
    }
}
