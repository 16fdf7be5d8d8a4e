//! The webhook sink: receives Herald webhook deliveries the way a real service would,
//! injects faults, and records what it saw.
//!
//! Hot-path notes: counters are atomics, per-key records live in a sharded map (one
//! short lock per request, never held across an await), lateness goes into per-shard
//! HDR histograms that are merged only when stats are read, and the recent-request ring
//! locks a single slot per write.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE, RETRY_AFTER};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use axum::routing::post;
use hdrhistogram::Histogram;
use hmac::{Hmac, Mac};
use parking_lot::Mutex;
use serde::Deserialize;
use serde_json::value::RawValue;
use sha2::Sha256;
use xxhash_rust::xxh3::{Xxh3DefaultBuilder, xxh3_64};

use crate::MockState;
use crate::faults::{FaultState, Faults};
use crate::stats::{self, KeyStats, Percentiles, RecordedRequest, WebhookStats};

/// How many recent requests `GET /_mock/requests` can show.
pub const RING_CAPACITY: usize = 10_000;

/// Largest body the sink reads; bigger ones are answered 413.
const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

const SHARDS: usize = 64;
const STATUS_SLOTS: usize = 600;

const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");
const SIGNATURE: HeaderName = HeaderName::from_static("x-herald-signature");
const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");
/// How far a signature's timestamp may be from now, either way.
pub const SIGNATURE_TOLERANCE_S: u64 = 300;

const OK_BODY: &str = r#"{"ok":true}"#;
const INJECTED_BODY: &str = r#"{"ok":false,"error":"injected fault"}"#;
const BAD_SIGNATURE_BODY: &str = r#"{"ok":false,"error":"missing or invalid X-Herald-Signature"}"#;
const MISSING_KEY_BODY: &str = r#"{"ok":false,"error":"missing or invalid Idempotency-Key"}"#;
const TOO_LARGE_BODY: &str = r#"{"ok":false,"error":"body too large"}"#;
const UNREADABLE_BODY: &str = r#"{"ok":false,"error":"could not read body (broken or too large)"}"#;

/// Routes of the webhook sink.
pub(crate) fn routes() -> Router<MockState> {
    Router::new()
        .route("/hook", post(hook))
        .route("/hook/{*rest}", post(hook))
}

/// The payload Herald sends. Only the timestamps and `attempt` are type-checked; the
/// other fields must be present but may hold any JSON. Unknown fields are accepted.
#[derive(Deserialize)]
#[allow(dead_code)] // fields are parsed to validate the contract, not all are read
struct Delivery<'a> {
    #[serde(borrow)]
    id: &'a RawValue,
    #[serde(borrow)]
    kind: &'a RawValue,
    #[serde(borrow)]
    due_at: Cow<'a, str>,
    #[serde(borrow)]
    fired_at: Cow<'a, str>,
    attempt: u64,
    #[serde(borrow)]
    recipient: &'a RawValue,
    #[serde(borrow)]
    message: &'a RawValue,
}

/// Keeps a hot value on its own cache line so shards and counters don't false-share.
#[repr(align(128))]
struct Padded<T>(T);

#[derive(Default, Clone, Copy)]
struct KeyEntry {
    requests: u32,
    delivered: u32,
}

struct Shard {
    keys: HashMap<Box<str>, KeyEntry, Xxh3DefaultBuilder>,
    lateness: Histogram<u64>,
    fire_lateness: Histogram<u64>,
}

impl Shard {
    fn new() -> Shard {
        Shard {
            keys: HashMap::default(),
            lateness: stats::new_histogram(),
            fire_lateness: stats::new_histogram(),
        }
    }
}

struct Counters {
    received: Padded<AtomicU64>,
    delivered: Padded<AtomicU64>,
    unique_delivered: Padded<AtomicU64>,
    duplicates: Padded<AtomicU64>,
    bad_signatures: Padded<AtomicU64>,
    first_delivered_at_ms: Padded<AtomicU64>,
    last_delivered_at_ms: Padded<AtomicU64>,
}

impl Counters {
    fn new() -> Counters {
        Counters {
            received: Padded(AtomicU64::new(0)),
            delivered: Padded(AtomicU64::new(0)),
            unique_delivered: Padded(AtomicU64::new(0)),
            duplicates: Padded(AtomicU64::new(0)),
            bad_signatures: Padded(AtomicU64::new(0)),
            first_delivered_at_ms: Padded(AtomicU64::new(u64::MAX)),
            last_delivered_at_ms: Padded(AtomicU64::new(0)),
        }
    }

    fn clear(&self) {
        self.received.0.store(0, Ordering::Relaxed);
        self.delivered.0.store(0, Ordering::Relaxed);
        self.unique_delivered.0.store(0, Ordering::Relaxed);
        self.duplicates.0.store(0, Ordering::Relaxed);
        self.bad_signatures.0.store(0, Ordering::Relaxed);
        self.first_delivered_at_ms
            .0
            .store(u64::MAX, Ordering::Relaxed);
        self.last_delivered_at_ms.0.store(0, Ordering::Relaxed);
    }
}

/// A request as kept in the ring; converted to [`RecordedRequest`] only when read.
/// Everything is copied out of the request so the ring never pins connection buffers.
#[derive(Clone)]
struct RingEntry {
    seq: u64,
    received_at_ms: u64,
    status: u16,
    path: Box<str>,
    key: Option<Box<str>>,
    signature: Option<Box<str>>,
    content_type: Option<Box<str>>,
    traceparent: Option<Box<str>>,
    body: Bytes,
}

impl RingEntry {
    fn into_recorded(self) -> RecordedRequest {
        let mut headers = BTreeMap::new();
        if let Some(k) = &self.key {
            headers.insert("idempotency-key".to_owned(), k.to_string());
        }
        if let Some(s) = self.signature {
            headers.insert("x-herald-signature".to_owned(), s.into());
        }
        if let Some(c) = self.content_type {
            headers.insert("content-type".to_owned(), c.into());
        }
        if let Some(t) = self.traceparent {
            headers.insert("traceparent".to_owned(), t.into());
        }
        let body = serde_json::from_slice(&self.body).unwrap_or_else(|_| {
            serde_json::Value::String(String::from_utf8_lossy(&self.body).into_owned())
        });
        RecordedRequest {
            seq: self.seq,
            path: self.path.into(),
            key: self.key.map(Into::into),
            headers,
            body,
            status: self.status,
            received_at_ms: self.received_at_ms,
        }
    }
}

/// Fixed-size ring of recent requests. A writer takes a sequence number and locks only
/// the slot it lands in.
struct Ring {
    next_seq: AtomicU64,
    slots: Box<[Mutex<Option<RingEntry>>]>,
}

impl Ring {
    fn new(capacity: usize) -> Ring {
        Ring {
            next_seq: AtomicU64::new(0),
            slots: (0..capacity).map(|_| Mutex::new(None)).collect(),
        }
    }

    fn push(&self, mut entry: RingEntry) {
        let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
        entry.seq = seq;
        let mut slot = self.slots[(seq % self.slots.len() as u64) as usize].lock();
        // A slow writer must not overwrite a newer entry that lapped it.
        if slot.as_ref().is_none_or(|old| old.seq < seq) {
            *slot = Some(entry);
        }
    }

    fn clear(&self) {
        for slot in self.slots.iter() {
            *slot.lock() = None;
        }
    }

    /// The newest `limit` entries (optionally only those with `key`), oldest first.
    fn snapshot(&self, limit: usize, key: Option<&str>) -> Vec<RingEntry> {
        let mut out: Vec<RingEntry> = Vec::new();
        for slot in self.slots.iter() {
            let guard = slot.lock();
            if let Some(e) = guard.as_ref()
                && key.is_none_or(|k| e.key.as_deref() == Some(k))
            {
                out.push(e.clone());
            }
        }
        out.sort_unstable_by_key(|e| e.seq);
        if out.len() > limit {
            out.drain(..out.len() - limit);
        }
        out
    }
}

/// Everything the webhook sink records.
pub(crate) struct WebhookState {
    counters: Counters,
    by_status: Box<[AtomicU64]>,
    shards: Box<[Padded<Mutex<Shard>>]>,
    ring: Ring,
    /// Keyed MAC, cloned per request, when signatures are checked.
    mac: Option<Hmac<Sha256>>,
}

/// Why a request was not handed to the fault logic.
enum Rejection {
    BadSignature,
    MissingKey,
    BadBody(String),
}

/// Outcome of the per-key decision.
struct Verdict {
    status: u16,
    injected: bool,
    /// For 2xx answers: whether this was the key's first 2xx.
    first_delivery: Option<bool>,
}

impl WebhookState {
    pub(crate) fn new(secret: Option<&str>) -> WebhookState {
        WebhookState {
            counters: Counters::new(),
            by_status: (0..STATUS_SLOTS).map(|_| AtomicU64::new(0)).collect(),
            shards: (0..SHARDS)
                .map(|_| Padded(Mutex::new(Shard::new())))
                .collect(),
            ring: Ring::new(RING_CAPACITY),
            mac: secret.map(|s| {
                <Hmac<Sha256> as Mac>::new_from_slice(s.as_bytes())
                    .expect("HMAC accepts keys of any length")
            }),
        }
    }

    fn shard(&self, key: &str) -> &Mutex<Shard> {
        // Not keyed: hash flooding is not a concern for a test mock, speed is.
        let h = xxh3_64(key.as_bytes()) >> 32;
        &self.shards[(h % SHARDS as u64) as usize].0
    }

    /// Checks `X-Herald-Signature: t=<unix>,v1=<hex>` as a careful receiver
    /// does: the HMAC of `"<t>.<body>"` must match one `v1`, and `t` must be
    /// within [`SIGNATURE_TOLERANCE_S`] of the mock's clock (a replay of an
    /// old request is refused).
    fn signature_ok(&self, headers: &HeaderMap, body: &[u8]) -> bool {
        let Some(mac) = &self.mac else {
            return true;
        };
        let Some(value) = headers.get(&SIGNATURE).and_then(|v| v.to_str().ok()) else {
            return false;
        };
        let mut t: Option<&str> = None;
        let mut v1: Vec<&str> = Vec::new();
        for part in value.split(',') {
            match part.trim().split_once('=') {
                Some(("t", x)) => t = Some(x),
                Some(("v1", x)) => v1.push(x),
                _ => {}
            }
        }
        let Some(t) = t else {
            return false;
        };
        let Ok(at) = t.parse::<i64>() else {
            return false;
        };
        let now = i64::try_from(now_ms() / 1000).unwrap_or(i64::MAX);
        if at.abs_diff(now) > SIGNATURE_TOLERANCE_S {
            return false;
        }
        let mut signed = mac.clone();
        signed.update(t.as_bytes());
        signed.update(b".");
        signed.update(body);
        v1.iter().any(|hex_sig| {
            let mut got = [0u8; 32];
            hex::decode_to_slice(hex_sig, &mut got).is_ok()
                && signed.clone().verify_slice(&got).is_ok()
        })
    }

    /// Validates a request; on success returns the key and the parsed timestamps
    /// (unix ms of `due_at`, `fired_at`).
    fn validate<'h>(
        &self,
        headers: &'h HeaderMap,
        body: &[u8],
    ) -> Result<(&'h str, i64, i64), Rejection> {
        if !self.signature_ok(headers, body) {
            return Err(Rejection::BadSignature);
        }
        let key = headers
            .get(&IDEMPOTENCY_KEY)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .ok_or(Rejection::MissingKey)?;
        let delivery: Delivery<'_> =
            serde_json::from_slice(body).map_err(|e| Rejection::BadBody(e.to_string()))?;
        let due = parse_ms("due_at", &delivery.due_at)?;
        let fired = parse_ms("fired_at", &delivery.fired_at)?;
        Ok((key, due, fired))
    }

    /// Counts the request against its key, decides the answer, and records lateness for
    /// a key's first 2xx. Holds one shard lock, briefly.
    fn decide(
        &self,
        key: &str,
        due_ms: i64,
        fired_ms: i64,
        received_at_ms: u64,
        faults: &Faults,
        dice: &FaultState,
    ) -> Verdict {
        let mut shard = self.shard(key).lock();
        let shard = &mut *shard;
        let mut fresh = KeyEntry::default();
        let existing = shard.keys.get_mut(key);
        let is_new = existing.is_none();
        let entry = existing.unwrap_or(&mut fresh);

        entry.requests = entry.requests.saturating_add(1);
        let (status, injected) = if let Some(p) = faults.permanent_status {
            (p, true)
        } else if entry.requests <= faults.fail_first || dice.chance(faults.error_rate) {
            (faults.effective_error_status(), true)
        } else {
            (200, false)
        };

        let first_delivery = if (200..300).contains(&status) {
            let first = entry.delivered == 0;
            entry.delivered = entry.delivered.saturating_add(1);
            if first {
                let late = (received_at_ms as i64).saturating_sub(due_ms).max(0) as u64;
                let fire_late = fired_ms.saturating_sub(due_ms).max(0) as u64;
                stats::record(&mut shard.lateness, late);
                stats::record(&mut shard.fire_lateness, fire_late);
            }
            Some(first)
        } else {
            None
        };

        if is_new {
            shard.keys.insert(key.into(), fresh);
        }
        Verdict {
            status,
            injected,
            first_delivery,
        }
    }

    fn count_status(&self, status: u16) {
        if let Some(c) = self.by_status.get(status as usize) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn remember(
        &self,
        parts: &axum::http::request::Parts,
        key: Option<&str>,
        body: &[u8],
        status: u16,
        received_at_ms: u64,
    ) {
        let header_text = |name: &HeaderName| {
            parts
                .headers
                .get(name)
                .map(|v| Box::from(String::from_utf8_lossy(v.as_bytes()).as_ref()))
        };
        self.ring.push(RingEntry {
            seq: 0,
            received_at_ms,
            status,
            path: parts.uri.path().into(),
            key: key.map(Box::from),
            signature: header_text(&SIGNATURE),
            traceparent: header_text(&TRACEPARENT),
            content_type: header_text(&CONTENT_TYPE),
            body: Bytes::copy_from_slice(body),
        });
    }

    /// Distinct keys answered 2xx so far: one atomic read, for progress polling.
    pub(crate) fn unique_delivered(&self) -> u64 {
        self.counters.unique_delivered.0.load(Ordering::Relaxed)
    }

    pub(crate) fn stats(&self) -> WebhookStats {
        let mut lateness = stats::new_histogram();
        let mut fire_lateness = stats::new_histogram();
        for shard in self.shards.iter() {
            let s = shard.0.lock();
            // Both histograms auto-resize, so merging cannot run out of range.
            let _ = lateness.add(&s.lateness);
            let _ = fire_lateness.add(&s.fire_lateness);
        }
        let by_status = self
            .by_status
            .iter()
            .enumerate()
            .filter_map(|(code, n)| {
                let n = n.load(Ordering::Relaxed);
                (n > 0).then(|| (code.to_string(), n))
            })
            .collect();
        let c = &self.counters;
        let first = c.first_delivered_at_ms.0.load(Ordering::Relaxed);
        let last = c.last_delivered_at_ms.0.load(Ordering::Relaxed);
        WebhookStats {
            received: c.received.0.load(Ordering::Relaxed),
            delivered: c.delivered.0.load(Ordering::Relaxed),
            unique_delivered: c.unique_delivered.0.load(Ordering::Relaxed),
            duplicates: c.duplicates.0.load(Ordering::Relaxed),
            by_status,
            bad_signatures: c.bad_signatures.0.load(Ordering::Relaxed),
            lateness_ms: Percentiles::from_histogram(&lateness),
            fire_lateness_ms: Percentiles::from_histogram(&fire_lateness),
            first_delivered_at_ms: (first != u64::MAX).then_some(first),
            last_delivered_at_ms: (last != 0).then_some(last),
        }
    }

    pub(crate) fn key_stats(&self, key: &str) -> KeyStats {
        let shard = self.shard(key).lock();
        shard
            .keys
            .get(key)
            .map(|e| KeyStats {
                requests: e.requests.into(),
                delivered: e.delivered.into(),
            })
            .unwrap_or_default()
    }

    pub(crate) fn requests(&self, limit: usize, key: Option<&str>) -> Vec<RecordedRequest> {
        self.ring
            .snapshot(limit, key)
            .into_iter()
            .map(RingEntry::into_recorded)
            .collect()
    }

    pub(crate) fn reset(&self) {
        for shard in self.shards.iter() {
            let mut s = shard.0.lock();
            // Drop the map rather than clear it, so a million-key run gives memory back.
            s.keys = HashMap::default();
            s.lateness.reset();
            s.fire_lateness.reset();
        }
        for c in self.by_status.iter() {
            c.store(0, Ordering::Relaxed);
        }
        self.counters.clear();
        self.ring.clear();
    }
}

fn parse_ms(field: &str, text: &str) -> Result<i64, Rejection> {
    text.parse::<jiff::Timestamp>()
        .map(|t| t.as_millisecond())
        .map_err(|e| Rejection::BadBody(format!("{field}: {e}")))
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn answer(status: u16, body: Body, retry_after: Option<u64>) -> Response {
    let mut resp = Response::new(body);
    *resp.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = resp.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Some(secs) = retry_after {
        headers.insert(RETRY_AFTER, HeaderValue::from(secs));
    }
    resp
}

async fn hook(State(state): State<MockState>, req: Request) -> Response {
    let received_at_ms = now_ms();
    let wh = &state.shared.webhook;
    let dice = &state.shared.faults;
    wh.counters.received.0.fetch_add(1, Ordering::Relaxed);
    let faults = dice.get();

    let (parts, body) = req.into_parts();
    let body = match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
        Ok(b) => b,
        Err(_) => {
            let declared_len = parts
                .headers
                .get(CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<usize>().ok());
            let (status, text) = if declared_len.is_some_and(|n| n > MAX_BODY_BYTES) {
                (413, TOO_LARGE_BODY)
            } else {
                (400, UNREADABLE_BODY)
            };
            wh.count_status(status);
            wh.remember(&parts, None, &[], status, received_at_ms);
            return finish(&faults, answer(status, Body::from(text), None)).await;
        }
    };

    let resp = match wh.validate(&parts.headers, &body) {
        Ok((key, due_ms, fired_ms)) => {
            let v = wh.decide(key, due_ms, fired_ms, received_at_ms, &faults, dice);
            if let Some(first) = v.first_delivery {
                let c = &wh.counters;
                c.delivered.0.fetch_add(1, Ordering::Relaxed);
                if first {
                    c.unique_delivered.0.fetch_add(1, Ordering::Relaxed);
                } else {
                    c.duplicates.0.fetch_add(1, Ordering::Relaxed);
                }
                c.first_delivered_at_ms
                    .0
                    .fetch_min(received_at_ms, Ordering::Relaxed);
                c.last_delivered_at_ms
                    .0
                    .fetch_max(received_at_ms, Ordering::Relaxed);
            }
            wh.count_status(v.status);
            wh.remember(&parts, Some(key), &body, v.status, received_at_ms);
            if v.first_delivery.is_some() {
                answer(v.status, Body::from(OK_BODY), None)
            } else {
                let retry_after = if v.injected {
                    faults.retry_after_secs
                } else {
                    None
                };
                answer(v.status, Body::from(INJECTED_BODY), retry_after)
            }
        }
        Err(rejection) => {
            let key = parts
                .headers
                .get(&IDEMPOTENCY_KEY)
                .and_then(|v| v.to_str().ok());
            let (status, body_out) = match rejection {
                Rejection::BadSignature => {
                    wh.counters.bad_signatures.0.fetch_add(1, Ordering::Relaxed);
                    (401, Body::from(BAD_SIGNATURE_BODY))
                }
                Rejection::MissingKey => (400, Body::from(MISSING_KEY_BODY)),
                Rejection::BadBody(msg) => {
                    let text =
                        serde_json::json!({ "ok": false, "error": format!("invalid body: {msg}") });
                    (400, Body::from(text.to_string()))
                }
            };
            wh.count_status(status);
            wh.remember(&parts, key, &body, status, received_at_ms);
            answer(status, body_out, None)
        }
    };
    finish(&faults, resp).await
}

/// Applies the configured latency, then hands the answer back.
async fn finish(faults: &Faults, resp: Response) -> Response {
    if faults.latency_ms > 0 {
        tokio::time::sleep(Duration::from_millis(faults.latency_ms)).await;
    }
    resp
}
