//! Pieces shared by the WeChat-family mocks: a clock tests can move, the `errcode`
//! answer every Tencent API gives (HTTP 200 with a JSON body, `errmsg` ending in
//! ` rid: ...`), error tallies, a generic ring of recent records, and a de-dup map
//! that forgets entries by age.
//!
//! Why a movable clock: the behaviours worth testing (5-minute token overlap, 10-minute
//! `client_msg_id` window, per-member hourly limits, 24 h recall) are about time, and
//! tests cannot wait hours. The real server runs on the system clock plus an offset that
//! is zero unless a test moves it through `POST /_mock/{provider}/clock`.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::Body;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;
use parking_lot::Mutex;
use serde::{Deserialize, Deserializer};
use xxhash_rust::xxh3::Xxh3DefaultBuilder;

pub(crate) const MINUTE_MS: u64 = 60_000;
pub(crate) const HOUR_MS: u64 = 60 * MINUTE_MS;
pub(crate) const DAY_MS: u64 = 24 * HOUR_MS;
/// Tencent's quotas roll over at midnight Beijing time (UTC+8).
const BEIJING_OFFSET_MS: u64 = 8 * HOUR_MS;

/// Wall-clock milliseconds, optionally frozen and/or shifted.
pub(crate) struct Clock {
    /// `Some(ms)`: a frozen clock for unit tests; `None`: the system clock.
    base: Option<u64>,
    offset_ms: AtomicI64,
}

impl Clock {
    pub(crate) fn system() -> Clock {
        Clock {
            base: None,
            offset_ms: AtomicI64::new(0),
        }
    }

    #[cfg(test)]
    pub(crate) fn frozen(at_ms: u64) -> Clock {
        Clock {
            base: Some(at_ms),
            offset_ms: AtomicI64::new(0),
        }
    }

    pub(crate) fn now_ms(&self) -> u64 {
        let base = self.base.unwrap_or_else(system_ms);
        let off = self.offset_ms.load(Ordering::Relaxed);
        base.saturating_add_signed(off)
    }

    /// Moves the clock forward (or back, for negative values) by `ms`.
    pub(crate) fn advance(&self, ms: i64) {
        self.offset_ms.fetch_add(ms, Ordering::Relaxed);
    }

    pub(crate) fn offset_ms(&self) -> i64 {
        self.offset_ms.load(Ordering::Relaxed)
    }
}

fn system_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Index of the Beijing calendar day `ms` falls in; daily quotas reset when it changes.
pub(crate) fn beijing_day(ms: u64) -> u64 {
    (ms + BEIJING_OFFSET_MS) / DAY_MS
}

/// A counter that starts again at zero each Beijing day.
#[derive(Default)]
pub(crate) struct DailyCounter {
    day: u64,
    used: u64,
}

impl DailyCounter {
    /// Takes one unit if fewer than `limit` were used today.
    pub(crate) fn try_take(&mut self, now_ms: u64, limit: u64) -> bool {
        self.roll(now_ms);
        if self.used >= limit {
            return false;
        }
        self.used += 1;
        true
    }

    pub(crate) fn used(&mut self, now_ms: u64) -> u64 {
        self.roll(now_ms);
        self.used
    }

    fn roll(&mut self, now_ms: u64) {
        let day = beijing_day(now_ms);
        if day != self.day {
            self.day = day;
            self.used = 0;
        }
    }
}

/// splitmix64: cheap, well-mixed ids from a counter.
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Request ids for `errmsg` suffixes, shaped like the real ones (`64f1c2a3-0d4e5f6a-1b2c3d4e`).
pub(crate) struct Rids(AtomicU64);

impl Rids {
    pub(crate) fn new(salt: u64) -> Rids {
        Rids(AtomicU64::new(salt))
    }

    pub(crate) fn next(&self, now_ms: u64) -> String {
        let n = mix64(self.0.fetch_add(1, Ordering::Relaxed));
        format!(
            "{:08x}-{:08x}-{:08x}",
            (now_ms / 1000) as u32,
            (n >> 32) as u32,
            n as u32
        )
    }
}

/// An HTTP 200 JSON answer, as every WeChat/WeCom API gives, errors included.
pub(crate) fn json_200(body: String) -> Response {
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = StatusCode::OK;
    resp.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/json; encoding=utf-8"),
    );
    resp
}

/// `{"errcode":code,"errmsg":"<msg> rid: <rid>"}` plus `extra` (already-serialized
/// `,"key":value` pairs, may be empty).
pub(crate) fn errcode_body(code: i64, msg: &str, rid: &str, extra: &str) -> String {
    let errmsg = format!("{msg} rid: {rid}");
    let errmsg = serde_json::to_string(&errmsg).unwrap_or_else(|_| "\"error\"".to_owned());
    format!(r#"{{"errcode":{code},"errmsg":{errmsg}{extra}}}"#)
}

/// Answer counts by non-zero `errcode`.
#[derive(Default)]
pub(crate) struct ErrorTally(Mutex<HashMap<i64, u64>>);

impl ErrorTally {
    pub(crate) fn add(&self, code: i64) {
        *self.0.lock().entry(code).or_insert(0) += 1;
    }

    pub(crate) fn snapshot(&self) -> BTreeMap<String, u64> {
        self.0
            .lock()
            .iter()
            .map(|(code, n)| (code.to_string(), *n))
            .collect()
    }

    pub(crate) fn clear(&self) {
        self.0.lock().clear();
    }
}

/// Fixed-size ring of recent records. A writer takes a sequence number and locks only
/// the slot it lands in, so concurrent senders hardly contend.
pub(crate) struct Ring<T> {
    next_seq: AtomicU64,
    slots: Box<[Slot<T>]>,
}

/// One ring slot: the entry and its sequence number.
type Slot<T> = Mutex<Option<(u64, T)>>;

impl<T: Clone> Ring<T> {
    pub(crate) fn new(capacity: usize) -> Ring<T> {
        Ring {
            next_seq: AtomicU64::new(0),
            slots: (0..capacity.max(1)).map(|_| Mutex::new(None)).collect(),
        }
    }

    pub(crate) fn push(&self, entry: T) {
        let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
        let mut slot = self.slots[(seq % self.slots.len() as u64) as usize].lock();
        // A slow writer must not overwrite a newer entry that lapped it.
        if slot.as_ref().is_none_or(|(old, _)| *old < seq) {
            *slot = Some((seq, entry));
        }
    }

    pub(crate) fn clear(&self) {
        for slot in self.slots.iter() {
            *slot.lock() = None;
        }
    }

    /// The newest `limit` entries passing `keep`, oldest first.
    pub(crate) fn snapshot(&self, limit: usize, keep: impl Fn(&T) -> bool) -> Vec<T> {
        let mut out: Vec<(u64, T)> = Vec::new();
        for slot in self.slots.iter() {
            let guard = slot.lock();
            if let Some((seq, e)) = guard.as_ref()
                && keep(e)
            {
                out.push((*seq, e.clone()));
            }
        }
        out.sort_unstable_by_key(|(seq, _)| *seq);
        if out.len() > limit {
            out.drain(..out.len() - limit);
        }
        out.into_iter().map(|(_, e)| e).collect()
    }
}

const DEDUP_SHARDS: usize = 16;

struct DedupShard<V> {
    map: HashMap<u128, (V, u64), Xxh3DefaultBuilder>,
    /// Insertion order with insertion time, for pruning from the front.
    order: VecDeque<(u64, u128)>,
}

/// "Seen within the last `window`" map keyed by a hash, forgetting entries by age so a
/// long load test does not grow it without bound. Each insert prunes what has expired
/// at the front of its shard, so the cost is amortized O(1).
pub(crate) struct TimedDedup<V> {
    shards: Box<[Mutex<DedupShard<V>>]>,
    /// Entries older than this are gone for good.
    horizon_ms: u64,
}

impl<V: Copy> TimedDedup<V> {
    pub(crate) fn new(horizon_ms: u64) -> Self {
        TimedDedup {
            shards: (0..DEDUP_SHARDS)
                .map(|_| {
                    Mutex::new(DedupShard {
                        map: HashMap::default(),
                        order: VecDeque::new(),
                    })
                })
                .collect(),
            horizon_ms,
        }
    }

    fn shard(&self, key: u128) -> &Mutex<DedupShard<V>> {
        &self.shards[(key as u64 % DEDUP_SHARDS as u64) as usize]
    }

    /// If `key` was stored less than `window_ms` ago, returns its value. Otherwise runs
    /// `make`, stores what it returns (if anything) and returns `None`. `make` runs under
    /// the shard lock, so two racing callers with one key cannot both miss; keep it short.
    pub(crate) fn check_or_insert(
        &self,
        key: u128,
        now_ms: u64,
        window_ms: u64,
        make: impl FnOnce() -> Option<V>,
    ) -> Option<V> {
        let mut s = self.shard(key).lock();
        self.prune(&mut s, now_ms);
        if let Some((v, at)) = s.map.get(&key)
            && now_ms.saturating_sub(*at) < window_ms
        {
            return Some(*v);
        }
        if let Some(v) = make() {
            s.map.insert(key, (v, now_ms));
            s.order.push_back((now_ms, key));
        }
        None
    }

    fn prune(&self, s: &mut DedupShard<V>, now_ms: u64) {
        while let Some(&(at, key)) = s.order.front() {
            if now_ms.saturating_sub(at) < self.horizon_ms {
                break;
            }
            s.order.pop_front();
            if s.map.get(&key).is_some_and(|(_, stored)| *stored == at) {
                s.map.remove(&key);
            }
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().map.len()).sum()
    }

    pub(crate) fn clear(&self) {
        for s in self.shards.iter() {
            let mut s = s.lock();
            s.map = HashMap::default();
            s.order = VecDeque::new();
        }
    }
}

/// For `Option<Option<T>>` config fields: absent = keep, `null` = clear, value = set.
pub(crate) fn double_option<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// Body of `POST /_mock/{provider}/clock`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ClockMove {
    #[serde(default)]
    pub(crate) advance_secs: i64,
    #[serde(default)]
    pub(crate) advance_ms: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dedup_forgets_by_age_and_stays_small() {
        let d: TimedDedup<u64> = TimedDedup::new(10 * MINUTE_MS);
        let t0 = 1_000_000;
        assert_eq!(d.check_or_insert(1, t0, 10 * MINUTE_MS, || Some(7)), None);
        assert_eq!(
            d.check_or_insert(1, t0 + 1, 10 * MINUTE_MS, || Some(8)),
            Some(7)
        );
        // A refused attempt (make returns None) stores nothing.
        assert_eq!(d.check_or_insert(2, t0, 10 * MINUTE_MS, || None), None);
        assert_eq!(d.check_or_insert(2, t0, 10 * MINUTE_MS, || Some(3)), None);
        // After the window a new value is stored.
        let later = t0 + 10 * MINUTE_MS;
        assert_eq!(
            d.check_or_insert(1, later, 10 * MINUTE_MS, || Some(9)),
            None
        );
        for k in 3..10_001u128 {
            let _ = d.check_or_insert(k, later, 10 * MINUTE_MS, || Some(0));
        }
        // Key 2 (stored at t0) was pruned by a later insert into its shard.
        assert_eq!(d.len(), 9_999);
        // Much later, every insert prunes its shard's expired front.
        let much_later = later + 11 * MINUTE_MS;
        for k in 0..(DEDUP_SHARDS as u128 * 4) {
            let _ = d.check_or_insert(1_000_000 + k, much_later, 10 * MINUTE_MS, || Some(0));
        }
        assert_eq!(d.len(), DEDUP_SHARDS * 4);
    }

    #[test]
    fn daily_counter_rolls_at_beijing_midnight() {
        let mut c = DailyCounter::default();
        // 15:59:59 UTC is 23:59:59 in Beijing.
        let before = DAY_MS * 20_000 + 16 * HOUR_MS - 1000;
        assert!(c.try_take(before, 1));
        assert!(!c.try_take(before, 1));
        assert!(c.try_take(before + 1000, 1));
    }

    #[test]
    fn clock_moves() {
        let c = Clock::frozen(5_000);
        c.advance(2_000);
        assert_eq!(c.now_ms(), 7_000);
        assert_eq!(c.offset_ms(), 2_000);
    }
}
