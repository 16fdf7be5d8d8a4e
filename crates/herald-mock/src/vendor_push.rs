//! What the Xiaomi, Honor, OPPO and vivo push mocks share: the record of
//! delivered device messages, the unregistered devices, the daily windows,
//! the access-token mint, the injected faults, the counters and the
//! `/_mock/{vendor}/*` control routes.
//!
//! Why shared: the four services differ in their wire format and codes,
//! which each vendor's module keeps, but a test drives them the same way
//! (unregister a device, expire the tokens, inject a throttle, move the
//! clock, read what was delivered), so a test written for one reads the
//! same for the others. Huawei's mock predates this module and keeps its
//! own copies.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use parking_lot::{Mutex, RwLock};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use xxhash_rust::xxh3::xxh3_64_with_seed;

use crate::MockState;
use crate::providers::{Clock, ClockMove, DailyCounter, Ring};
use crate::push_quota::{DeviceLimits, DeviceWindows, FlowWindow, Verdict};
use crate::sms::CodeTally;
use crate::wechat::bad_request;

/// How many delivered device messages each vendor mock keeps for
/// `GET /_mock/{vendor}/messages`.
pub const PUSH_RING_CAPACITY: usize = 100_000;

/// One delivered device message; `GET /_mock/{xiaomi,honor,oppo,vivo}/messages`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PushMessage {
    /// The device's token (registration id).
    pub token: String,
    /// The id the send was answered with.
    pub message_id: String,
    /// The message as the vendor received it (its fields, without the
    /// device list).
    pub message: Value,
    /// Mock clock (unix ms) when it was accepted.
    pub at_ms: u64,
}

/// What the next sends do wrong; `GET|POST /_mock/{vendor}/faults`. A POST
/// replaces all of it; unknown fields are refused so a typo is not ignored.
/// Each vendor answers a fault with its own code (its module says which).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PushFaults {
    /// Armed: the next send carrying a live access token is refused as
    /// expired and every token issued so far expires. Reads back `false`
    /// once it fired. Xiaomi has no access token and ignores it.
    pub expire_tokens: bool,
    /// The next N sends answer the vendor's "too frequent" code.
    pub throttle_next: u32,
    /// The next N sends answer the vendor's internal error.
    pub internal_next: u32,
    /// The next N sends answer the vendor's daily-quota code.
    pub quota_next: u32,
    /// Delay added before every send answer.
    pub latency_ms: u64,
}

/// `GET /_mock/{vendor}/stats`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PushStats {
    /// Access tokens issued (0 for Xiaomi, which has none).
    pub tokens_issued: u64,
    /// Token requests refused (bad credentials, signature, timestamp).
    pub tokens_refused: u64,
    /// Send calls that reached the mock, whatever their answer.
    pub calls: u64,
    /// Send calls accepted (some or all devices taken).
    pub accepted_calls: u64,
    /// Device messages delivered.
    pub delivered: u64,
    /// Device tokens answered as invalid.
    pub invalid_tokens: u64,
    /// Device messages accepted but dropped by the per-device daily quota
    /// (the vendors report these in receipts only, not in the answer).
    pub dropped_quota: u64,
    /// Sends answered as a repeat of an earlier request id (vivo).
    pub duplicates: u64,
    /// Distinct device tokens delivered to.
    pub devices: u64,
    /// Deliveries to a device token already delivered to.
    pub repeated_devices: u64,
    /// Error answers by the vendor's code.
    pub refused: BTreeMap<String, u64>,
}

#[derive(Default)]
pub(crate) struct Tally {
    pub(crate) tokens_issued: AtomicU64,
    pub(crate) tokens_refused: AtomicU64,
    pub(crate) calls: AtomicU64,
    pub(crate) accepted_calls: AtomicU64,
    pub(crate) delivered: AtomicU64,
    pub(crate) invalid_tokens: AtomicU64,
    pub(crate) dropped_quota: AtomicU64,
    pub(crate) duplicates: AtomicU64,
    pub(crate) refused: CodeTally,
    pub(crate) repeats: crate::repeats::Repeats,
}

impl Tally {
    fn snapshot(&self) -> PushStats {
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        PushStats {
            tokens_issued: n(&self.tokens_issued),
            tokens_refused: n(&self.tokens_refused),
            calls: n(&self.calls),
            accepted_calls: n(&self.accepted_calls),
            delivered: n(&self.delivered),
            invalid_tokens: n(&self.invalid_tokens),
            dropped_quota: n(&self.dropped_quota),
            duplicates: n(&self.duplicates),
            refused: self.refused.snapshot(),
            devices: self.repeats.devices(),
            repeated_devices: self.repeats.repeated(),
        }
    }

    fn clear(&self) {
        for a in [
            &self.tokens_issued,
            &self.tokens_refused,
            &self.calls,
            &self.accepted_calls,
            &self.delivered,
            &self.invalid_tokens,
            &self.dropped_quota,
            &self.duplicates,
        ] {
            a.store(0, Ordering::Relaxed);
        }
        self.refused.clear();
        self.repeats.clear();
    }
}

pub(crate) fn bump(a: &AtomicU64, n: u64) {
    a.fetch_add(n, Ordering::Relaxed);
}

/// Why an access token is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenProblem {
    /// Not one this mock issued for this app.
    Unknown,
    /// Past its lifetime, or expired by the `expire_tokens` fault.
    Expired,
}

/// Stateless access tokens: sequence number and expiry under a MAC keyed
/// by a per-process secret and bound to the app, so there is no table to
/// grow. Expiring all of them raises the lowest valid sequence number.
pub(crate) struct TokenMint {
    prefix: &'static str,
    secret: u64,
    next_seq: AtomicU64,
    valid_from_seq: AtomicU64,
}

impl TokenMint {
    pub(crate) fn new(prefix: &'static str) -> TokenMint {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        TokenMint {
            prefix,
            secret: xxh3_64_with_seed(prefix.as_bytes(), now ^ u64::from(std::process::id())),
            next_seq: AtomicU64::new(1),
            valid_from_seq: AtomicU64::new(0),
        }
    }

    fn mac(&self, seq: u64, expires_ms: u64, app: &str) -> u64 {
        let mut buf = Vec::with_capacity(16 + app.len());
        buf.extend_from_slice(&seq.to_le_bytes());
        buf.extend_from_slice(&expires_ms.to_le_bytes());
        buf.extend_from_slice(app.as_bytes());
        xxh3_64_with_seed(&buf, self.secret)
    }

    /// A new token for `app`, valid for `ttl_ms` from `now_ms`; with its
    /// expiry.
    pub(crate) fn issue(&self, app: &str, now_ms: u64, ttl_ms: u64) -> (String, u64) {
        let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
        let expires_ms = now_ms.saturating_add(ttl_ms);
        let mut raw = [0u8; 24];
        raw[..8].copy_from_slice(&seq.to_le_bytes());
        raw[8..16].copy_from_slice(&expires_ms.to_le_bytes());
        raw[16..].copy_from_slice(&self.mac(seq, expires_ms, app).to_le_bytes());
        (format!("{}{}", self.prefix, B64.encode(raw)), expires_ms)
    }

    /// Checks a token for `app`. An armed `expire_tokens` fault fires here,
    /// on the first live token it meets.
    pub(crate) fn check(
        &self,
        token: &str,
        app: &str,
        now_ms: u64,
        faults: &Mutex<PushFaults>,
    ) -> Result<(), TokenProblem> {
        let raw = token
            .strip_prefix(self.prefix)
            .and_then(|b| B64.decode(b).ok())
            .filter(|r| r.len() == 24)
            .ok_or(TokenProblem::Unknown)?;
        let word = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&raw[i * 8..i * 8 + 8]);
            u64::from_le_bytes(w)
        };
        let (seq, expires_ms, mac) = (word(0), word(1), word(2));
        if mac != self.mac(seq, expires_ms, app) {
            return Err(TokenProblem::Unknown);
        }
        if expires_ms <= now_ms || seq < self.valid_from_seq.load(Ordering::Relaxed) {
            return Err(TokenProblem::Expired);
        }
        let mut f = faults.lock();
        if f.expire_tokens {
            f.expire_tokens = false;
            let next = self.next_seq.load(Ordering::Relaxed);
            self.valid_from_seq.fetch_max(next, Ordering::Relaxed);
            tracing::info!(
                prefix = self.prefix,
                valid_from_seq = next,
                "push mock: expired every token issued so far"
            );
            return Err(TokenProblem::Expired);
        }
        Ok(())
    }
}

/// What an injected fault makes of the next send, in the order checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Injected {
    Throttle,
    Internal,
    Quota,
}

/// One device message as the ring keeps it: the message and its id are
/// shared by every device of the call.
#[derive(Clone)]
struct Delivered {
    token: String,
    message_id: Arc<str>,
    message: Arc<Value>,
    at_ms: u64,
}

/// The part of a vendor mock's state every vendor has.
pub(crate) struct Book {
    pub(crate) clock: Clock,
    pub(crate) faults: Mutex<PushFaults>,
    pub(crate) tally: Tally,
    ring: Ring<Delivered>,
    devices: DeviceWindows,
    invalid: RwLock<(Vec<String>, HashSet<String>)>,
    flow: Mutex<FlowWindow>,
    app_day: Mutex<DailyCounter>,
    next_id: AtomicU64,
}

impl Book {
    pub(crate) fn new() -> Book {
        Book {
            clock: Clock::system(),
            faults: Mutex::new(PushFaults::default()),
            tally: Tally::default(),
            ring: Ring::new(PUSH_RING_CAPACITY),
            devices: DeviceWindows::new(),
            invalid: RwLock::new((Vec::new(), HashSet::new())),
            flow: Mutex::new(FlowWindow::default()),
            app_day: Mutex::new(DailyCounter::default()),
            next_id: AtomicU64::new(1),
        }
    }

    /// A fresh number for message ids.
    pub(crate) fn next_seq(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Whether a device token no longer reaches the app: empty, starting
    /// with `invalid-`, or unregistered through `POST /_mock/{vendor}/devices`.
    pub(crate) fn is_invalid(&self, token: &str) -> bool {
        token.is_empty() || token.starts_with("invalid-") || self.invalid.read().1.contains(token)
    }

    /// Unregisters `invalid` and registers `valid` again; the whole list.
    fn set_devices(&self, invalid: Vec<String>, valid: &[String]) -> Vec<String> {
        let mut g = self.invalid.write();
        for t in invalid {
            if g.1.insert(t.clone()) {
                g.0.push(t);
            }
        }
        for t in valid {
            g.1.remove(t);
        }
        let (list, set) = &mut *g;
        list.retain(|t| set.contains(t));
        list.clone()
    }

    fn invalid_list(&self) -> Vec<String> {
        self.invalid.read().0.clone()
    }

    /// Takes one armed fault, if any.
    pub(crate) fn injected(&self) -> Option<Injected> {
        let mut f = self.faults.lock();
        if f.throttle_next > 0 {
            f.throttle_next -= 1;
            return Some(Injected::Throttle);
        }
        if f.internal_next > 0 {
            f.internal_next -= 1;
            return Some(Injected::Internal);
        }
        if f.quota_next > 0 {
            f.quota_next -= 1;
            return Some(Injected::Quota);
        }
        None
    }

    /// Counts a send call against `per_second` (0 is off); false when over.
    pub(crate) fn take_call(&self, now_ms: u64, per_second: u32) -> bool {
        self.flow.lock().take(now_ms, per_second)
    }

    /// Counts `n` device messages against the app's daily total (a Beijing
    /// calendar day; 0 is off); false, and nothing counted, when they do
    /// not all fit.
    pub(crate) fn take_app_day(&self, now_ms: u64, n: u64, limit: u64) -> bool {
        if limit == 0 {
            return true;
        }
        let mut d = self.app_day.lock();
        if d.used(now_ms).saturating_add(n) > limit {
            return false;
        }
        for _ in 0..n {
            d.try_take(now_ms, limit);
        }
        true
    }

    /// Delivers `message` to each of `tokens` unless the device is over
    /// its daily allowance, in which case the message is silently dropped
    /// as the vendors do. Answers how many were delivered. The caller
    /// counts the accepted call (a batch may deliver several messages).
    pub(crate) fn deliver(
        &self,
        tokens: &[String],
        message: Value,
        message_id: &str,
        marketing: bool,
        limits: DeviceLimits,
        now_ms: u64,
    ) -> u64 {
        let message = Arc::new(message);
        let message_id: Arc<str> = Arc::from(message_id);
        let (mut delivered, mut dropped) = (0, 0);
        for t in tokens {
            match self.devices.admit(t, marketing, limits, now_ms) {
                Verdict::Deliver => {
                    delivered += 1;
                    self.tally.repeats.record(t);
                    self.ring.push(Delivered {
                        token: t.clone(),
                        message_id: message_id.clone(),
                        message: message.clone(),
                        at_ms: now_ms,
                    });
                }
                Verdict::DropCap | Verdict::DropMarketing => dropped += 1,
            }
        }
        bump(&self.tally.delivered, delivered);
        bump(&self.tally.dropped_quota, dropped);
        if dropped > 0 {
            tracing::debug!(
                dropped,
                "push mock: accepted, some devices over their daily allowance"
            );
        }
        delivered
    }

    pub(crate) fn stats(&self) -> PushStats {
        self.tally.snapshot()
    }

    /// The newest `limit` delivered device messages (only to `token`, if
    /// given), oldest first.
    pub(crate) fn messages(&self, limit: usize, token: Option<&str>) -> Vec<PushMessage> {
        self.ring
            .snapshot(limit, |m| token.is_none_or(|t| m.token == t))
            .into_iter()
            .map(|d| PushMessage {
                token: d.token,
                message_id: d.message_id.to_string(),
                message: (*d.message).clone(),
                at_ms: d.at_ms,
            })
            .collect()
    }

    /// Forgets deliveries, counters and windows; keeps the configuration,
    /// the unregistered devices, faults, the clock and issued tokens.
    pub(crate) fn reset(&self) {
        self.ring.clear();
        self.devices.clear();
        *self.flow.lock() = FlowWindow::default();
        *self.app_day.lock() = DailyCounter::default();
        self.tally.clear();
    }
}

/// A vendor mock as its control routes see it.
pub(crate) trait VendorMock: Send + Sync + 'static {
    /// The path segment: `/_mock/{NAME}/...`.
    const NAME: &'static str;
    type Config: Serialize + DeserializeOwned;
    fn of(state: &MockState) -> &Self;
    fn book(&self) -> &Book;
    fn config(&self) -> Self::Config;
    fn set_config(&self, cfg: Self::Config) -> Result<(), String>;
}

#[derive(Deserialize)]
struct Listing {
    limit: Option<usize>,
    token: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Devices {
    #[serde(default)]
    invalid: Vec<String>,
    #[serde(default)]
    valid: Vec<String>,
}

/// The body as JSON, or the `400` answer naming `what` was wrong.
fn parse<T: DeserializeOwned>(what: &str, body: &[u8]) -> Result<T, Box<Response>> {
    serde_json::from_slice(body).map_err(|e| Box::new(bad_request(format!("{what}: {e}"))))
}

/// `/_mock/{NAME}/{stats,messages,faults,config,devices,clock}`.
pub(crate) fn control_routes<M: VendorMock>() -> Router<MockState> {
    let at = |p: &str| format!("/_mock/{}/{p}", M::NAME);
    Router::new()
        .route(
            &at("stats"),
            get(|State(s): State<MockState>| async move { Json(M::of(&s).book().stats()) }),
        )
        .route(
            &at("messages"),
            get(
                |State(s): State<MockState>, q: Result<Query<Listing>, QueryRejection>| async move {
                    match q {
                        Ok(Query(q)) => {
                            Json(M::of(&s).book().messages(
                                q.limit.unwrap_or(PUSH_RING_CAPACITY),
                                q.token.as_deref(),
                            ))
                            .into_response()
                        }
                        Err(e) => bad_request(format!("{} messages: {e}", M::NAME)),
                    }
                },
            ),
        )
        .route(
            &at("faults"),
            get(|State(s): State<MockState>| async move {
                Json(M::of(&s).book().faults.lock().clone())
            })
            .post(|State(s): State<MockState>, body: Bytes| async move {
                match parse::<PushFaults>(&format!("{} faults", M::NAME), &body) {
                    Ok(f) => {
                        *M::of(&s).book().faults.lock() = f.clone();
                        Json(f).into_response()
                    }
                    Err(r) => *r,
                }
            }),
        )
        .route(
            &at("config"),
            get(|State(s): State<MockState>| async move { Json(M::of(&s).config()) }).post(
                |State(s): State<MockState>, body: Bytes| async move {
                    let what = format!("{} config", M::NAME);
                    let cfg = match parse::<M::Config>(&what, &body) {
                        Ok(c) => c,
                        Err(r) => return *r,
                    };
                    match M::of(&s).set_config(cfg) {
                        Ok(()) => Json(M::of(&s).config()).into_response(),
                        Err(e) => bad_request(format!("{what}: {e}")),
                    }
                },
            ),
        )
        .route(
            &at("devices"),
            get(|State(s): State<MockState>| async move {
                Json(json!({ "invalid": M::of(&s).book().invalid_list() }))
            })
            .post(|State(s): State<MockState>, body: Bytes| async move {
                match parse::<Devices>(&format!("{} devices", M::NAME), &body) {
                    Ok(d) => {
                        let all = M::of(&s).book().set_devices(d.invalid, &d.valid);
                        Json(json!({ "invalid": all })).into_response()
                    }
                    Err(r) => *r,
                }
            }),
        )
        .route(
            &at("clock"),
            post(|State(s): State<MockState>, body: Bytes| async move {
                match parse::<ClockMove>(&format!("{} clock", M::NAME), &body) {
                    Ok(m) => {
                        let c = &M::of(&s).book().clock;
                        c.advance(
                            m.advance_secs
                                .saturating_mul(1000)
                                .saturating_add(m.advance_ms),
                        );
                        Json(json!({ "now_ms": c.now_ms(), "offset_ms": c.offset_ms() }))
                            .into_response()
                    }
                    Err(r) => *r,
                }
            }),
        )
}

/// Length in characters, as Xiaomi and vivo count titles.
pub(crate) fn chars(s: &str) -> usize {
    s.chars().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_expire_by_time_and_by_fault() {
        let mint = TokenMint::new("tk-");
        let faults = Mutex::new(PushFaults::default());
        let (t, exp) = mint.issue("app", 1_000, 60_000);
        assert_eq!(exp, 61_000);
        assert_eq!(mint.check(&t, "app", 2_000, &faults), Ok(()));
        assert_eq!(
            mint.check(&t, "other", 2_000, &faults),
            Err(TokenProblem::Unknown)
        );
        assert_eq!(
            mint.check(&t, "app", 61_000, &faults),
            Err(TokenProblem::Expired)
        );
        assert_eq!(
            mint.check("tk-garbage", "app", 2_000, &faults),
            Err(TokenProblem::Unknown)
        );
        faults.lock().expire_tokens = true;
        assert_eq!(
            mint.check(&t, "app", 2_000, &faults),
            Err(TokenProblem::Expired)
        );
        assert!(!faults.lock().expire_tokens, "the fault fires once");
        assert_eq!(
            mint.check(&t, "app", 2_000, &faults),
            Err(TokenProblem::Expired)
        );
        let (fresh, _) = mint.issue("app", 2_000, 60_000);
        assert_eq!(mint.check(&fresh, "app", 2_000, &faults), Ok(()));
    }

    #[test]
    fn devices_register_again_and_the_app_day_fills() {
        let b = Book::new();
        assert!(b.is_invalid("invalid-x") && b.is_invalid("") && !b.is_invalid("a"));
        assert_eq!(
            b.set_devices(vec!["a".into(), "b".into(), "a".into()], &[]),
            ["a", "b"]
        );
        assert!(b.is_invalid("a"));
        assert_eq!(b.set_devices(vec![], &["a".into()]), ["b"]);
        assert!(!b.is_invalid("a"));
        assert!(b.take_app_day(0, 2, 3));
        assert!(!b.take_app_day(0, 2, 3), "all or nothing");
        assert!(b.take_app_day(0, 1, 3));
        assert!(b.take_app_day(0, 100, 0), "0 is off");
        b.faults.lock().throttle_next = 1;
        b.faults.lock().quota_next = 1;
        assert_eq!(b.injected(), Some(Injected::Throttle));
        assert_eq!(b.injected(), Some(Injected::Quota));
        assert_eq!(b.injected(), None);
    }
}
