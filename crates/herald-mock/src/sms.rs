//! What the two SMS mocks share: phone number rules, per-number rolling
//! limits, error tallies by string code, signing primitives, and the
//! receipt pusher.
//!
//! Both providers count a number's sends in windows (Aliyun: rolling
//! minute, hour and day; Tencent: 30 s for the same content, and a calendar
//! day in Beijing). [`NumberWindows`] keeps, per key, only the newest send
//! times a limit can need, in sharded maps pruned as they grow, so a
//! million-number load test stays within a few tens of MB.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use hmac::{Hmac, Mac};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use smallvec::SmallVec;
use xxhash_rust::xxh3::Xxh3DefaultBuilder;

use crate::providers::{DAY_MS, beijing_day};

const SHARDS: usize = 32;

/// One per-number limit: at most `max` sends in any `window_secs`
/// (rolling), or in one Beijing calendar day when `calendar_day`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SmsLimit {
    pub max: u32,
    #[serde(default)]
    pub window_secs: u64,
    #[serde(default)]
    pub calendar_day: bool,
}

impl SmsLimit {
    pub const fn rolling(max: u32, window_secs: u64) -> SmsLimit {
        SmsLimit {
            max,
            window_secs,
            calendar_day: false,
        }
    }

    pub const fn daily(max: u32) -> SmsLimit {
        SmsLimit {
            max,
            window_secs: 0,
            calendar_day: true,
        }
    }

    /// How many of `times` (send times, ms) count against it at `now`.
    fn used(&self, times: &[u64], now: u64) -> usize {
        if self.calendar_day {
            let today = beijing_day(now);
            times.iter().filter(|t| beijing_day(**t) == today).count()
        } else {
            let w = self.window_secs.saturating_mul(1000);
            times.iter().filter(|t| now.saturating_sub(**t) < w).count()
        }
    }

    fn span_ms(&self) -> u64 {
        if self.calendar_day {
            DAY_MS
        } else {
            self.window_secs.saturating_mul(1000)
        }
    }
}

/// A key's send times: inline for the one or two most limits keep, so a
/// million numbers seen once cost no allocation each.
type Times = SmallVec<[u64; 2]>;

struct Shard {
    map: HashMap<u64, Times, Xxh3DefaultBuilder>,
    prune_at: usize,
}

/// Send times per key (a number, or a number and a content), sharded.
pub(crate) struct NumberWindows {
    shards: Box<[Mutex<Shard>]>,
}

impl NumberWindows {
    pub(crate) fn new() -> NumberWindows {
        NumberWindows {
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

    /// The first of `limits` that one more send to `key` at `now` would
    /// break; `None` when it may go. Counts nothing.
    pub(crate) fn over(&self, key: u64, limits: &[SmsLimit], now: u64) -> Option<SmsLimit> {
        let s = self.shards[(key % SHARDS as u64) as usize].lock();
        let times = s.map.get(&key)?;
        limits
            .iter()
            .find(|l| l.used(times, now) >= l.max as usize)
            .copied()
    }

    /// Counts one send to `key` at `now`, keeping only what `limits` need.
    pub(crate) fn record(&self, key: u64, limits: &[SmsLimit], now: u64) {
        let keep = limits.iter().map(|l| l.max as usize).max().unwrap_or(0);
        if keep == 0 {
            return;
        }
        let span = limits.iter().map(SmsLimit::span_ms).max().unwrap_or(0);
        let mut s = self.shards[(key % SHARDS as u64) as usize].lock();
        if s.map.len() >= s.prune_at {
            s.map
                .retain(|_, t| t.last().is_some_and(|l| now.saturating_sub(*l) < span));
            s.prune_at = (s.map.len() * 2).max(4096);
        }
        let times = s.map.entry(key).or_default();
        times.push(now);
        if times.len() > keep {
            let drop = times.len() - keep;
            times.drain(..drop);
        }
    }

    pub(crate) fn clear(&self) {
        for s in self.shards.iter() {
            let mut s = s.lock();
            s.map = HashMap::default();
            s.prune_at = 4096;
        }
    }
}

/// Answer counts by string error code.
#[derive(Default)]
pub(crate) struct CodeTally(Mutex<BTreeMap<String, u64>>);

impl CodeTally {
    pub(crate) fn add(&self, code: &str, n: u64) {
        *self.0.lock().entry(code.to_owned()).or_insert(0) += n;
    }
    pub(crate) fn snapshot(&self) -> BTreeMap<String, u64> {
        self.0.lock().clone()
    }
    pub(crate) fn clear(&self) {
        self.0.lock().clear();
    }
}

/// A number as the providers read it: `(country code + number digits,
/// domestic)`, or `None` when it is no phone number at all. Mainland mobiles
/// must be `1[3-9]` and 11 digits.
pub(crate) fn parse_number(raw: &str) -> Option<(String, bool)> {
    let s = raw.trim();
    let (explicit, rest) = if let Some(r) = s.strip_prefix('+') {
        (true, r)
    } else if let Some(r) = s.strip_prefix("00") {
        (true, r)
    } else {
        (false, s)
    };
    if rest.is_empty() || !rest.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let digits = if !explicit && rest.len() == 11 && rest.starts_with('1') {
        format!("86{rest}")
    } else {
        rest.to_owned()
    };
    if let Some(national) = digits.strip_prefix("86") {
        let b = national.as_bytes();
        let ok = b.len() == 11 && b[0] == b'1' && (b'3'..=b'9').contains(&b[1]);
        return ok.then_some((digits, true));
    }
    (7..=15).contains(&digits.len()).then_some((digits, false))
}

/// A 64-bit key for a number (and optionally a content).
pub(crate) fn key(parts: &[&str]) -> u64 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update(&[0]);
    }
    h.digest()
}

pub(crate) fn hmac_sha256(key: &[u8], msg: &[u8]) -> [u8; 32] {
    let mut mac = match Hmac::<Sha256>::new_from_slice(key) {
        Ok(m) => m,
        Err(_) => return [0; 32],
    };
    mac.update(msg);
    mac.finalize().into_bytes().into()
}

pub(crate) fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

/// RFC 3986 encoding: unreserved characters stay, the rest `%XY`.
pub(crate) fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Constant-time comparison of two signatures.
pub(crate) fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// Counts of receipt pushes.
#[derive(Default)]
pub(crate) struct PushCounters {
    pub(crate) sent: AtomicU64,
    pub(crate) failed: AtomicU64,
}

/// Posts `items` (a JSON array) to `url` in the background, in chunks of
/// `chunk`, as the providers push receipts.
pub(crate) fn push_receipts(
    client: &reqwest::Client,
    url: &str,
    items: Vec<serde_json::Value>,
    chunk: usize,
    counters: &Arc<PushCounters>,
) {
    for part in items.chunks(chunk.max(1)) {
        let body = serde_json::Value::Array(part.to_vec()).to_string();
        let (client, url, counters) = (client.clone(), url.to_owned(), counters.clone());
        tokio::spawn(async move {
            let ok = client
                .post(&url)
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await
                .is_ok_and(|r| r.status().is_success());
            let c = if ok { &counters.sent } else { &counters.failed };
            c.fetch_add(1, Ordering::Relaxed);
            if !ok {
                tracing::warn!(url = %url, "sms mock: receipt push failed");
            }
        });
    }
}

/// A client for receipt pushes.
pub(crate) fn push_client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(10))
        .build()
        .unwrap_or_default()
}

/// `2026-11-29 13:00:05` (Beijing time) for `ms`.
pub(crate) fn beijing_text(ms: u64) -> String {
    let ts = jiff::Timestamp::from_millisecond(ms as i64).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    let zoned = ts.to_zoned(jiff::tz::TimeZone::fixed(jiff::tz::offset(8)));
    zoned.strftime("%Y-%m-%d %H:%M:%S").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::HOUR_MS;

    #[test]
    fn numbers_follow_the_mainland_rules() {
        assert_eq!(
            parse_number("+8613800138000"),
            Some(("8613800138000".into(), true))
        );
        assert_eq!(
            parse_number("13800138000"),
            Some(("8613800138000".into(), true))
        );
        assert_eq!(parse_number("+8612345678901"), None);
        assert_eq!(parse_number("+86138001380"), None);
        assert_eq!(
            parse_number("+85261234567"),
            Some(("85261234567".into(), false))
        );
        assert_eq!(parse_number("abc"), None);
    }

    #[test]
    fn windows_roll_and_calendar_days_reset() {
        let w = NumberWindows::new();
        let limits = [SmsLimit::rolling(1, 60), SmsLimit::rolling(2, 3600)];
        let t0 = 100 * DAY_MS;
        assert_eq!(w.over(7, &limits, t0), None);
        w.record(7, &limits, t0);
        assert_eq!(w.over(7, &limits, t0 + 59_999), Some(limits[0]));
        assert_eq!(w.over(7, &limits, t0 + 60_000), None);
        w.record(7, &limits, t0 + 60_000);
        assert_eq!(w.over(7, &limits, t0 + 120_000), Some(limits[1]));
        assert_eq!(w.over(7, &limits, t0 + HOUR_MS), None);
        let daily = [SmsLimit::daily(1)];
        // 15:59 UTC is 23:59 in Beijing; a minute later is a new day.
        let late = 100 * DAY_MS + 16 * HOUR_MS - 60_000;
        w.record(9, &daily, late);
        assert!(w.over(9, &daily, late + 1).is_some());
        assert!(w.over(9, &daily, late + 60_000).is_none());
    }
}
