//! Per-device frequency control and per-app flow control of the vendor push
//! mocks (Huawei, Honor, Xiaomi, OPPO, vivo).
//!
//! Why per device and silent: Huawei accepts a send whose device is over its
//! daily allowance and drops the message later (receipt 102), so a sender
//! cannot see it in the answer. The mock does the same and shows the drops
//! only in its stats. The windows are rolling 24 h on the mock clock.
//!
//! Cost: one shard lock and amortized O(1) per device token. A device keeps
//! at most a limit's worth of delivery times, and devices silent for a day
//! are pruned when a shard grows, so a 100,000-device run stays small.

use std::collections::{HashMap, VecDeque};

use parking_lot::Mutex;
use xxhash_rust::xxh3::{Xxh3DefaultBuilder, xxh3_64};

use crate::providers::DAY_MS;

const SHARDS: usize = 32;

/// What happens to one device message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    Deliver,
    /// Over `per_device_per_day`.
    DropCap,
    /// A marketing message over `marketing_per_device_per_day`.
    DropMarketing,
}

/// The two daily limits; 0 turns one off.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DeviceLimits {
    pub(crate) per_day: u32,
    pub(crate) marketing_per_day: u32,
}

/// Delivery times of one device, oldest first.
#[derive(Default)]
struct Device {
    all: VecDeque<u64>,
    marketing: VecDeque<u64>,
}

impl Device {
    fn prune(&mut self, now_ms: u64) {
        for q in [&mut self.all, &mut self.marketing] {
            while q
                .front()
                .is_some_and(|t| now_ms.saturating_sub(*t) >= DAY_MS)
            {
                q.pop_front();
            }
        }
    }

    fn idle(&self) -> bool {
        self.all.is_empty() && self.marketing.is_empty()
    }
}

struct Shard {
    map: HashMap<u64, Device, Xxh3DefaultBuilder>,
    prune_at: usize,
}

/// Delivery times per device token (by hash), sharded.
pub(crate) struct DeviceWindows {
    shards: Box<[Mutex<Shard>]>,
}

impl DeviceWindows {
    pub(crate) fn new() -> DeviceWindows {
        DeviceWindows {
            shards: (0..SHARDS)
                .map(|_| {
                    Mutex::new(Shard {
                        map: HashMap::default(),
                        prune_at: 4096,
                    })
                })
                .collect(),
        }
    }

    /// Decides one message to `token` at `now_ms` and, if it is delivered,
    /// counts it, under one lock so concurrent sends cannot overshoot.
    /// Dropped messages count toward nothing: they never reached the device.
    pub(crate) fn admit(
        &self,
        token: &str,
        marketing: bool,
        limits: DeviceLimits,
        now_ms: u64,
    ) -> Verdict {
        let marketing_on = marketing && limits.marketing_per_day > 0;
        if limits.per_day == 0 && !marketing_on {
            return Verdict::Deliver;
        }
        let key = xxh3_64(token.as_bytes());
        let mut s = self.shards[(key % SHARDS as u64) as usize].lock();
        if s.map.len() >= s.prune_at {
            s.map.retain(|_, d| {
                d.prune(now_ms);
                !d.idle()
            });
            s.prune_at = (s.map.len() * 2).max(4096);
        }
        let d = s.map.entry(key).or_default();
        d.prune(now_ms);
        if limits.per_day > 0 && d.all.len() >= limits.per_day as usize {
            return Verdict::DropCap;
        }
        if marketing_on && d.marketing.len() >= limits.marketing_per_day as usize {
            return Verdict::DropMarketing;
        }
        if limits.per_day > 0 {
            d.all.push_back(now_ms);
        }
        if marketing_on {
            d.marketing.push_back(now_ms);
        }
        Verdict::Deliver
    }

    pub(crate) fn clear(&self) {
        for s in self.shards.iter() {
            let mut s = s.lock();
            s.map = HashMap::default();
            s.prune_at = 4096;
        }
    }
}

/// Send calls in the current second of the mock clock.
#[derive(Default)]
pub(crate) struct FlowWindow {
    second: u64,
    used: u64,
}

impl FlowWindow {
    /// Counts one call; false when it is over `per_second` (0 is off).
    pub(crate) fn take(&mut self, now_ms: u64, per_second: u32) -> bool {
        if per_second == 0 {
            return true;
        }
        let second = now_ms / 1000;
        if second != self.second {
            self.second = second;
            self.used = 0;
        }
        if self.used >= u64::from(per_second) {
            return false;
        }
        self.used += 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: DeviceLimits = DeviceLimits {
        per_day: 3,
        marketing_per_day: 2,
    };

    #[test]
    fn marketing_and_cap_roll_over_a_day() {
        let w = DeviceWindows::new();
        let t0 = 1_000_000;
        assert_eq!(w.admit("a", true, LIMITS, t0), Verdict::Deliver);
        assert_eq!(w.admit("a", true, LIMITS, t0 + 1), Verdict::Deliver);
        assert_eq!(w.admit("a", true, LIMITS, t0 + 2), Verdict::DropMarketing);
        assert_eq!(w.admit("b", true, LIMITS, t0 + 2), Verdict::Deliver);
        assert_eq!(w.admit("a", false, LIMITS, t0 + 3), Verdict::Deliver);
        assert_eq!(w.admit("a", false, LIMITS, t0 + 4), Verdict::DropCap);
        // The first delivery leaves the window a day later, not the rest.
        assert_eq!(w.admit("a", true, LIMITS, t0 + DAY_MS), Verdict::Deliver);
        assert_eq!(w.admit("a", false, LIMITS, t0 + DAY_MS), Verdict::DropCap);
        assert_eq!(
            w.admit("a", false, LIMITS, t0 + DAY_MS + 2),
            Verdict::Deliver
        );
    }

    #[test]
    fn zero_turns_limits_off_and_idle_devices_are_pruned() {
        let w = DeviceWindows::new();
        let off = DeviceLimits {
            per_day: 0,
            marketing_per_day: 0,
        };
        for _ in 0..10 {
            assert_eq!(w.admit("a", true, off, 5), Verdict::Deliver);
        }
        // 3000 a shard at t0 stays under the pruning threshold; 2000 more a
        // shard a day later cross it, and the day-old ones are dropped.
        for i in 0..(SHARDS as u64 * 3000) {
            w.admit(&format!("d{i}"), false, LIMITS, 0);
        }
        for i in 0..(SHARDS as u64 * 2000) {
            w.admit(&format!("late{i}"), false, LIMITS, DAY_MS);
        }
        let kept: usize = w.shards.iter().map(|s| s.lock().map.len()).sum();
        assert!(kept < SHARDS * 2500, "{kept} devices kept");
    }

    #[test]
    fn flow_window_counts_per_second() {
        let mut f = FlowWindow::default();
        assert!(f.take(1_000, 2) && f.take(1_500, 2));
        assert!(!f.take(1_999, 2));
        assert!(f.take(2_000, 2));
        assert!(f.take(2_000, 0));
    }
}
