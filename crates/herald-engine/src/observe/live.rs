//! The live window: this node's deliveries by channel and outcome and its
//! fire lateness, per second over the last minute, per tenant. The overview
//! page and `GET /v1/channels` read it; nothing is stored.
//!
//! Writers touch it once per batch (the completer's batch of outcomes, a
//! campaign worker's send call): one lock, a few additions. Each second holds
//! a compact log-scale histogram of lateness, so quantiles over any run of
//! seconds come from adding histograms up.

use std::collections::HashMap;

use herald_core::TenantId;
use parking_lot::Mutex;

/// Seconds of history the window answers for.
pub const WINDOW_S: i64 = 60;
/// Seconds the current rates and lateness quantiles are taken over.
pub const RECENT_S: i64 = 10;
/// Slots in the ring: the window plus the second being filled.
const SLOTS: usize = WINDOW_S as usize + 1;

/// How one attempt ended, as the `herald_deliveries_total` metric labels it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LiveOutcome {
    Delivered,
    Retry,
    Failed,
    Dead,
    /// Throttled or held by quiet hours: due again later.
    Deferred,
}

impl LiveOutcome {
    pub const ALL: [LiveOutcome; 5] = [
        LiveOutcome::Delivered,
        LiveOutcome::Retry,
        LiveOutcome::Failed,
        LiveOutcome::Dead,
        LiveOutcome::Deferred,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            LiveOutcome::Delivered => "delivered",
            LiveOutcome::Retry => "retry",
            LiveOutcome::Failed => "failed",
            LiveOutcome::Dead => "dead",
            LiveOutcome::Deferred => "deferred",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// One attempt to count.
pub(crate) struct LiveEntry<'a> {
    pub tenant: TenantId,
    pub channel: &'a str,
    pub outcome: LiveOutcome,
    /// Start of a first attempt minus its due time, when it is one.
    pub lateness_ms: Option<i64>,
}

/// Lateness below this many ms has a bucket per millisecond.
const LINEAR: u64 = 8;
/// Buckets per doubling above that (error under 1/8 of the value).
const SUB_BITS: u32 = 2;
/// Lateness is capped here (about 35 years).
const MAX_MS: u64 = (1 << 40) - 1;
/// Buckets of one histogram.
const BUCKETS: usize = bucket(MAX_MS) + 1;

/// The bucket of a lateness of `ms` milliseconds.
const fn bucket(ms: u64) -> usize {
    let ms = if ms > MAX_MS { MAX_MS } else { ms };
    if ms < LINEAR {
        return ms as usize;
    }
    let exp = 63 - ms.leading_zeros(); // >= 3
    let sub = (ms >> (exp - SUB_BITS)) & ((1 << SUB_BITS) - 1);
    (LINEAR + ((exp - 3) as u64) * (1 << SUB_BITS) + sub) as usize
}

/// The middle of bucket `i`, in ms: what a quantile falling in it reads as.
fn bucket_mid(i: usize) -> f64 {
    let i = i as u64;
    if i < LINEAR {
        return i as f64;
    }
    let k = i - LINEAR;
    let exp = k / (1 << SUB_BITS) + 3;
    let sub = k % (1 << SUB_BITS);
    let width = 1u64 << (exp - u64::from(SUB_BITS));
    let low = ((1 << SUB_BITS) + sub) * width;
    low as f64 + (width as f64 - 1.0) / 2.0
}

/// Counts of lateness by bucket.
#[derive(Clone)]
struct Hist(Box<[u32; BUCKETS]>);

impl Hist {
    fn new() -> Self {
        Hist(Box::new([0; BUCKETS]))
    }

    fn add(&mut self, other: &Hist) {
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            *a = a.saturating_add(*b);
        }
    }

    /// The `q` quantile (0..=1) in ms; `None` when empty.
    fn quantile(&self, q: f64) -> Option<f64> {
        let total: u64 = self.0.iter().map(|&n| u64::from(n)).sum();
        if total == 0 {
            return None;
        }
        let rank = ((q * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0u64;
        for (i, &n) in self.0.iter().enumerate() {
            seen += u64::from(n);
            if seen >= rank {
                return Some(bucket_mid(i));
            }
        }
        None
    }
}

/// One tenant's share of one second.
#[derive(Clone)]
struct Slot {
    /// Attempts by channel (index into [`Live::names`]) and outcome.
    outcomes: Vec<[u32; 5]>,
    lateness: Option<Hist>,
}

/// One second of the ring.
#[derive(Default)]
struct Second {
    /// The Unix second it holds; a slot of another second is stale.
    t: i64,
    tenants: HashMap<TenantId, Slot>,
}

/// The live window of one node.
pub(crate) struct Live {
    /// Channel names, sorted; a channel's index into `Slot::outcomes`.
    names: Vec<String>,
    index: HashMap<String, usize>,
    ring: Mutex<Vec<Second>>,
}

impl Live {
    pub fn new(mut names: Vec<String>) -> Self {
        names.sort();
        names.dedup();
        let index = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), i))
            .collect();
        Self {
            names,
            index,
            ring: Mutex::new((0..SLOTS).map(|_| Second::default()).collect()),
        }
    }

    /// Counts a batch of attempts in the second of `now_ms`. A channel not
    /// configured here is not counted.
    pub fn record<'a>(&self, now_ms: i64, entries: impl IntoIterator<Item = LiveEntry<'a>>) {
        let t = now_ms.div_euclid(1000);
        let channels = self.names.len();
        let mut ring = self.ring.lock();
        let sec = &mut ring[t.rem_euclid(SLOTS as i64) as usize];
        if sec.t != t {
            sec.t = t;
            sec.tenants.clear();
        }
        for e in entries {
            let Some(&ch) = self.index.get(e.channel) else {
                continue;
            };
            let slot = sec.tenants.entry(e.tenant).or_insert_with(|| Slot {
                outcomes: vec![[0; 5]; channels],
                lateness: None,
            });
            let n = &mut slot.outcomes[ch][e.outcome.index()];
            *n = n.saturating_add(1);
            if let Some(ms) = e.lateness_ms {
                let h = slot.lateness.get_or_insert_with(Hist::new);
                let b = &mut h.0[bucket(ms.max(0) as u64)];
                *b = b.saturating_add(1);
            }
        }
    }

    /// The window as of `now_ms`: the last [`WINDOW_S`] whole seconds (the
    /// one under way is left out), for `tenant` or, with `None`, for all.
    pub fn view(&self, now_ms: i64, tenant: Option<TenantId>) -> LiveView {
        let now_s = now_ms.div_euclid(1000);
        let first = now_s - WINDOW_S;
        let recent_from = now_s - RECENT_S;
        let channels = self.names.len();
        let mut series = Vec::with_capacity(WINDOW_S as usize);
        let mut by_channel = vec![[0u64; 5]; channels];
        let mut recent_by_channel = vec![0u64; channels];
        let mut recent_hist = Hist::new();
        let mut recent_deliveries = 0u64;
        let ring = self.ring.lock();
        for t in first..now_s {
            let sec = &ring[t.rem_euclid(SLOTS as i64) as usize];
            let mut deliveries = 0u64;
            let mut hist: Option<Hist> = None;
            if sec.t == t {
                let slots: Vec<&Slot> = match tenant {
                    Some(id) => sec.tenants.get(&id).into_iter().collect(),
                    None => sec.tenants.values().collect(),
                };
                for slot in slots {
                    for (ch, counts) in slot.outcomes.iter().enumerate() {
                        let n: u64 = counts.iter().map(|&c| u64::from(c)).sum();
                        deliveries += n;
                        for (acc, &c) in by_channel[ch].iter_mut().zip(counts) {
                            *acc += u64::from(c);
                        }
                        if t >= recent_from {
                            recent_by_channel[ch] += n;
                        }
                    }
                    if let Some(h) = &slot.lateness {
                        hist.get_or_insert_with(Hist::new).add(h);
                    }
                }
            }
            if t >= recent_from {
                recent_deliveries += deliveries;
                if let Some(h) = &hist {
                    recent_hist.add(h);
                }
            }
            series.push(LiveSecond {
                t_ms: t * 1000,
                deliveries,
                p50_ms: hist.as_ref().and_then(|h| h.quantile(0.5)),
                p99_ms: hist.as_ref().and_then(|h| h.quantile(0.99)),
            });
        }
        drop(ring);
        let per_s = |n: u64| n as f64 / RECENT_S as f64;
        LiveView {
            window_s: WINDOW_S as u32,
            deliveries_per_s: per_s(recent_deliveries),
            p50_ms: recent_hist.quantile(0.5),
            p99_ms: recent_hist.quantile(0.99),
            series,
            channels: self
                .names
                .iter()
                .enumerate()
                .map(|(i, name)| ChannelLive {
                    name: name.clone(),
                    outcomes: LiveOutcome::ALL
                        .iter()
                        .map(|o| (o.as_str(), by_channel[i][o.index()]))
                        .collect(),
                    rate_per_s: per_s(recent_by_channel[i]),
                })
                .collect(),
        }
    }
}

/// The live window as the API shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveView {
    pub window_s: u32,
    /// Attempts per second over the last [`RECENT_S`] whole seconds.
    pub deliveries_per_s: f64,
    /// Fire lateness quantiles over the last [`RECENT_S`] whole seconds.
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    /// One entry per second, oldest first.
    pub series: Vec<LiveSecond>,
    /// Every channel of this node, by name.
    pub channels: Vec<ChannelLive>,
}

/// One second of the live window.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveSecond {
    /// Start of the second, Unix ms.
    pub t_ms: i64,
    pub deliveries: u64,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
}

/// One channel's part of the live window.
#[derive(Debug, Clone, PartialEq)]
pub struct ChannelLive {
    pub name: String,
    /// Attempts over the whole window by outcome, every outcome listed.
    pub outcomes: Vec<(&'static str, u64)>,
    /// Attempts per second over the last [`RECENT_S`] whole seconds.
    pub rate_per_s: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: i64 = 1_700_000_000_000;

    fn entry(tenant: u32, channel: &str, outcome: LiveOutcome, late: Option<i64>) -> LiveEntry<'_> {
        LiveEntry {
            tenant: TenantId(tenant),
            channel,
            outcome,
            lateness_ms: late,
        }
    }

    #[test]
    fn buckets_are_ordered_and_close_to_their_values() {
        let mut last = 0;
        for ms in (0..10_000u64).chain([1 << 20, 1 << 30, MAX_MS, u64::MAX]) {
            let b = bucket(ms);
            assert!(b >= last && b < BUCKETS, "{ms}");
            last = b;
            let mid = bucket_mid(b);
            if ms < MAX_MS {
                assert!(
                    (mid - ms as f64).abs() <= ms as f64 / 8.0 + 0.5,
                    "{ms}: {mid}"
                );
            }
        }
    }

    #[test]
    fn counts_per_second_channel_and_tenant() {
        let live = Live::new(vec!["sms".into(), "log".into()]);
        // 20 seconds of 3 deliveries a second for tenant 1, lateness 10 ms,
        // and one 1 s late delivery of tenant 2 in the last second.
        for s in 0..20 {
            live.record(
                T + s * 1000 + 500,
                (0..3).map(|_| entry(1, "log", LiveOutcome::Delivered, Some(10))),
            );
        }
        live.record(
            T + 19_000,
            [
                entry(2, "sms", LiveOutcome::Failed, Some(1_000)),
                entry(2, "nope", LiveOutcome::Failed, None),
            ],
        );
        let now = T + 20_000;
        let all = live.view(now, None);
        assert_eq!(all.series.len(), 60);
        assert_eq!(all.series.last().map(|s| s.t_ms), Some(T + 19_000));
        assert_eq!(all.series.last().map(|s| s.deliveries), Some(4));
        assert_eq!(all.series[39].deliveries, 0, "before the first record");
        assert!((all.deliveries_per_s - 3.1).abs() < 1e-9);
        let p50 = all.p50_ms.unwrap_or_default();
        assert!(
            (10.0..12.0).contains(&p50),
            "{p50}: the middle of 10 ms's bucket"
        );
        let p99 = all.p99_ms.unwrap_or_default();
        assert!((900.0..=1100.0).contains(&p99), "{p99}");
        let names: Vec<&str> = all.channels.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["log", "sms"]);
        assert_eq!(all.channels[0].outcomes[0], ("delivered", 60));
        assert!((all.channels[0].rate_per_s - 3.0).abs() < 1e-9);
        assert_eq!(all.channels[1].outcomes[2], ("failed", 1));

        let two = live.view(now, Some(TenantId(2)));
        assert!((two.deliveries_per_s - 0.1).abs() < 1e-9);
        assert_eq!(two.channels[0].outcomes[0], ("delivered", 0));
        let none = live.view(now, Some(TenantId(3)));
        assert_eq!(none.deliveries_per_s, 0.0);
        assert_eq!(none.p50_ms, None);

        // A minute later it has all rolled out; a slot reused for a new
        // second starts empty.
        live.record(T + 80_000, [entry(1, "log", LiveOutcome::Retry, None)]);
        let later = live.view(T + 81_000, None);
        assert_eq!(later.series.iter().map(|s| s.deliveries).sum::<u64>(), 1);
        assert_eq!(later.channels[0].outcomes[1], ("retry", 1));
    }
}
