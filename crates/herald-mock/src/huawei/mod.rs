//! Huawei Push Kit mock (HMS Push, v1 API), as described in
//! `shared/reference/china-providers.md` §4.0 and §4.1: the OAuth 2.0 token
//! endpoint of `oauth-login.cloud.huawei.com` (`POST /oauth2/v3/token`) and
//! the send endpoint of `push-api.cloud.huawei.com`
//! (`POST /v1/{appId}/messages:send`), both served by the one mock server.
//!
//! Why it behaves as it does: a Huawei sender must cope with what the real
//! service does, so the mock does it too. Errors come with a 4xx/5xx status
//! and a string `code` in a `{code, msg, requestId}` body (401 for a missing
//! or expired token, 400 for a bad message, 503 for flow control); a send to
//! up to 1000 device tokens can succeed for some and name the illegal rest
//! in a JSON string inside `msg` (`80100000`); and per-device frequency
//! control (2 marketing messages a day, 3000 of any class) answers success
//! and drops the message, which only the stats show.
//!
//! Tokens are stateless, like the FCM mock's: sequence number and expiry
//! under a MAC keyed by a per-process secret and bound to the app id, so
//! there is no token table to grow. A new token does not revoke older ones;
//! they live out their hour [assumption: not documented either way].
//! Expiring every token (fault `expire_tokens`) raises the lowest valid
//! sequence number.
//!
//! One clock, movable through `POST /_mock/huawei/clock`, drives token
//! expiry, the per-second flow control and the daily device windows.
//! Delivered device messages go to a fixed ring of
//! [`HUAWEI_RING_CAPACITY`] entries that share one copy of each call's
//! message, so a 100,000-push benchmark costs one ring slot per device and
//! no per-device serialization.

mod config;
mod control;
mod oauth;
mod send;

#[cfg(test)]
mod tests;

pub use config::{
    DEFAULT_HUAWEI_APP_ID, DEFAULT_HUAWEI_APP_SECRET, HUAWEI_MAX_MESSAGE_BYTES, HUAWEI_MAX_TOKENS,
    HUAWEI_RING_CAPACITY, HUAWEI_TOKEN_TTL_SECS, HuaweiConfig, HuaweiFaults, HuaweiMessage,
    HuaweiStats,
};

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use parking_lot::{Mutex, RwLock};
use serde_json::Value;
use xxhash_rust::xxh3::xxh3_64_with_seed;

use crate::MockState;
use crate::providers::Clock;
use crate::sms::CodeTally;

/// What real access tokens start with (`CgB6e3x9...`); the rest is opaque.
const TOKEN_PREFIX: &str = "CgB6e3x9";

/// The configuration plus a set for the invalid-token lookup.
struct Live {
    cfg: HuaweiConfig,
    invalid: HashSet<String>,
}

impl Live {
    fn new(cfg: HuaweiConfig) -> Live {
        let invalid = cfg.invalid_tokens.iter().cloned().collect();
        Live { cfg, invalid }
    }

    /// Whether a device token no longer reaches an app.
    fn is_invalid(&self, token: &str) -> bool {
        token.is_empty() || token.starts_with("invalid-") || self.invalid.contains(token)
    }
}

/// Why a bearer token is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TokenError {
    /// Not one the mock issued for this app (`80200001`).
    Unknown,
    /// Past its hour, or expired by a fault (`80200003`).
    Expired,
}

/// One delivered device message as the ring keeps it: the message and
/// request id are shared by every device of the call.
#[derive(Clone)]
struct Delivered {
    token: Option<String>,
    request_id: Arc<str>,
    message: Arc<Value>,
    at_ms: u64,
}

impl Delivered {
    fn to_public(&self) -> HuaweiMessage {
        HuaweiMessage {
            token: self.token.clone(),
            request_id: self.request_id.to_string(),
            message: (*self.message).clone(),
            at_ms: self.at_ms,
        }
    }
}

#[derive(Default)]
struct Tally {
    tokens_issued: AtomicU64,
    tokens_refused: AtomicU64,
    calls: AtomicU64,
    accepted_calls: AtomicU64,
    partial_calls: AtomicU64,
    validated: AtomicU64,
    delivered: AtomicU64,
    invalid_tokens: AtomicU64,
    dropped_marketing: AtomicU64,
    dropped_cap: AtomicU64,
    refused: CodeTally,
    http_errors: CodeTally,
}

impl Tally {
    fn snapshot(&self) -> HuaweiStats {
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        HuaweiStats {
            tokens_issued: n(&self.tokens_issued),
            tokens_refused: n(&self.tokens_refused),
            calls: n(&self.calls),
            accepted_calls: n(&self.accepted_calls),
            partial_calls: n(&self.partial_calls),
            validated: n(&self.validated),
            delivered: n(&self.delivered),
            invalid_tokens: n(&self.invalid_tokens),
            dropped_marketing: n(&self.dropped_marketing),
            dropped_cap: n(&self.dropped_cap),
            refused: self.refused.snapshot(),
            http_errors: self.http_errors.snapshot(),
            devices: 0,
            repeated_devices: 0,
        }
    }

    fn clear(&self) {
        for a in [
            &self.tokens_issued,
            &self.tokens_refused,
            &self.calls,
            &self.accepted_calls,
            &self.partial_calls,
            &self.validated,
            &self.delivered,
            &self.invalid_tokens,
            &self.dropped_marketing,
            &self.dropped_cap,
        ] {
            a.store(0, Ordering::Relaxed);
        }
        self.refused.clear();
        self.http_errors.clear();
    }
}

fn bump(a: &AtomicU64, n: u64) {
    a.fetch_add(n, Ordering::Relaxed);
}

/// Everything the Huawei mock keeps.
pub(crate) struct HuaweiState {
    pub(crate) clock: Clock,
    live: RwLock<Arc<Live>>,
    faults: Mutex<HuaweiFaults>,
    /// Per-process secret for the token MAC.
    token_secret: u64,
    next_token_seq: AtomicU64,
    /// Tokens with a lower sequence number are expired (raised by the
    /// `expire_tokens` fault).
    valid_from_seq: AtomicU64,
    next_request_seq: AtomicU64,
    flow: Mutex<crate::push_quota::FlowWindow>,
    devices: crate::push_quota::DeviceWindows,
    ring: crate::providers::Ring<Delivered>,
    tally: Tally,
    repeats: crate::repeats::Repeats,
}

impl HuaweiState {
    /// `cfg` should have passed [`HuaweiConfig::validate`].
    pub(crate) fn new(cfg: HuaweiConfig) -> HuaweiState {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        HuaweiState {
            clock: Clock::system(),
            live: RwLock::new(Arc::new(Live::new(cfg))),
            faults: Mutex::new(HuaweiFaults::default()),
            token_secret: xxh3_64_with_seed(&now.to_le_bytes(), std::process::id().into()),
            next_token_seq: AtomicU64::new(1),
            valid_from_seq: AtomicU64::new(0),
            next_request_seq: AtomicU64::new(1),
            flow: Mutex::new(crate::push_quota::FlowWindow::default()),
            devices: crate::push_quota::DeviceWindows::new(),
            ring: crate::providers::Ring::new(HUAWEI_RING_CAPACITY),
            tally: Tally::default(),
            repeats: Default::default(),
        }
    }

    fn live(&self) -> Arc<Live> {
        self.live.read().clone()
    }

    pub(crate) fn config(&self) -> HuaweiConfig {
        self.live.read().cfg.clone()
    }

    /// Replaces the app, limits and invalid tokens. Tokens issued for
    /// another app id stop working; windows and records are kept.
    pub(crate) fn set_config(&self, cfg: HuaweiConfig) -> Result<(), String> {
        cfg.validate()?;
        *self.live.write() = Arc::new(Live::new(cfg));
        Ok(())
    }

    /// Adds device tokens to the invalid list (apps uninstalled); answers
    /// the whole list.
    pub(crate) fn add_invalid_tokens(&self, tokens: Vec<String>) -> Vec<String> {
        let mut live = self.live.write();
        let mut cfg = live.cfg.clone();
        let mut added = HashSet::new();
        for t in tokens {
            if !live.invalid.contains(&t) && added.insert(t.clone()) {
                cfg.invalid_tokens.push(t);
            }
        }
        let list = cfg.invalid_tokens.clone();
        *live = Arc::new(Live::new(cfg));
        list
    }

    pub(crate) fn faults(&self) -> HuaweiFaults {
        self.faults.lock().clone()
    }

    pub(crate) fn set_faults(&self, f: HuaweiFaults) {
        *self.faults.lock() = f;
    }

    pub(crate) fn stats(&self) -> HuaweiStats {
        HuaweiStats {
            devices: self.repeats.devices(),
            repeated_devices: self.repeats.repeated(),
            ..self.tally.snapshot()
        }
    }

    /// The newest `limit` delivered device messages (only to `token`, if
    /// given), oldest first.
    pub(crate) fn messages(&self, limit: usize, token: Option<&str>) -> Vec<HuaweiMessage> {
        self.ring
            .snapshot(limit, |m| {
                token.is_none_or(|t| m.token.as_deref() == Some(t))
            })
            .iter()
            .map(Delivered::to_public)
            .collect()
    }

    /// Forgets delivered messages, counters, the flow-control second and
    /// the device windows. The configuration (invalid tokens included),
    /// faults, the clock and issued tokens are kept, as in the other mocks.
    pub(crate) fn reset(&self) {
        self.ring.clear();
        self.devices.clear();
        *self.flow.lock() = crate::push_quota::FlowWindow::default();
        self.tally.clear();
        self.repeats.clear();
    }

    fn token_mac(&self, seq: u64, expires_ms: u64, app_id: &str) -> u64 {
        let mut buf = Vec::with_capacity(16 + app_id.len());
        buf.extend_from_slice(&seq.to_le_bytes());
        buf.extend_from_slice(&expires_ms.to_le_bytes());
        buf.extend_from_slice(app_id.as_bytes());
        xxh3_64_with_seed(&buf, self.token_secret)
    }

    /// A new access token for `app_id`, valid for an hour of the mock clock.
    fn issue_token(&self, app_id: &str, now_ms: u64) -> String {
        let seq = self.next_token_seq.fetch_add(1, Ordering::Relaxed);
        let expires_ms = now_ms.saturating_add(HUAWEI_TOKEN_TTL_SECS * 1000);
        let mac = self.token_mac(seq, expires_ms, app_id);
        let mut raw = [0u8; 24];
        raw[..8].copy_from_slice(&seq.to_le_bytes());
        raw[8..16].copy_from_slice(&expires_ms.to_le_bytes());
        raw[16..].copy_from_slice(&mac.to_le_bytes());
        format!("{TOKEN_PREFIX}{}", B64.encode(raw))
    }

    /// Checks a bearer token for `app_id`. An armed `expire_tokens` fault
    /// fires here, on the first live token it meets.
    fn check_token(&self, token: &str, app_id: &str, now_ms: u64) -> Result<(), TokenError> {
        let raw = token
            .strip_prefix(TOKEN_PREFIX)
            .and_then(|b| B64.decode(b).ok())
            .filter(|r| r.len() == 24)
            .ok_or(TokenError::Unknown)?;
        let word = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&raw[i * 8..i * 8 + 8]);
            u64::from_le_bytes(w)
        };
        let (seq, expires_ms, mac) = (word(0), word(1), word(2));
        if mac != self.token_mac(seq, expires_ms, app_id) {
            return Err(TokenError::Unknown);
        }
        if expires_ms <= now_ms || seq < self.valid_from_seq.load(Ordering::Relaxed) {
            return Err(TokenError::Expired);
        }
        let mut f = self.faults.lock();
        if f.expire_tokens {
            f.expire_tokens = false;
            let next = self.next_token_seq.load(Ordering::Relaxed);
            self.valid_from_seq.fetch_max(next, Ordering::Relaxed);
            tracing::info!(
                valid_from_seq = next,
                "huawei mock: expired every token issued so far"
            );
            return Err(TokenError::Expired);
        }
        Ok(())
    }

    /// `requestId`: digits, like the real ones (`160209653167346065000206`).
    fn next_request_id(&self, now_ms: u64) -> String {
        let n = self.next_request_seq.fetch_add(1, Ordering::Relaxed);
        format!("{now_ms:013}{:011}", n % 100_000_000_000)
    }
}

/// The two Huawei hosts' paths and the `/_mock/huawei/*` controls.
pub(crate) fn routes() -> Router<MockState> {
    Router::new()
        .merge(oauth::routes())
        .merge(send::routes())
        .merge(control::routes())
}
