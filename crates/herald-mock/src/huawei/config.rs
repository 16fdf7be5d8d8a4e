//! The Huawei mock's public types: the app it serves and its limits, the
//! faults a test can inject, and what the control routes answer.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The app id (`client_id`, and `{appId}` in the send path) `herald mock`
/// serves without configuration. Real ones are numeric, like this.
pub const DEFAULT_HUAWEI_APP_ID: &str = "100000001";
/// Its app secret (`client_secret`).
pub const DEFAULT_HUAWEI_APP_SECRET: &str = "mock-huawei-app-secret";
/// Lifetime of an issued access token, as the real `expires_in`.
pub const HUAWEI_TOKEN_TTL_SECS: u64 = 3600;
/// How many delivered device messages `GET /_mock/huawei/messages` can show:
/// enough for a 100,000-push benchmark to be checked whole.
pub const HUAWEI_RING_CAPACITY: usize = 100_000;
/// Most device tokens one send may carry.
pub const HUAWEI_MAX_TOKENS: usize = 1000;
/// Largest `message` (as JSON, without its `token` list) a send may carry.
pub const HUAWEI_MAX_MESSAGE_BYTES: usize = 4096;

/// The app the mock serves and its limits; `MockConfig::huawei`,
/// `GET|POST /_mock/huawei/config`. Fields left out take their defaults.
///
/// Zero turns a limit off, as for the other mocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HuaweiConfig {
    pub app_id: String,
    pub client_secret: String,
    /// Marketing messages (no `android.category`, or `MARKETING`) delivered
    /// per device in any rolling 24 h; more are accepted and dropped.
    /// Huawei's default is 2 (5 for news apps).
    pub marketing_per_device_per_day: u32,
    /// Messages of any class delivered per device in any rolling 24 h; more
    /// are accepted and dropped (Huawei's receipt 102).
    pub per_device_per_day: u32,
    /// Send calls per app in one second of the mock clock; more answer
    /// HTTP 503.
    pub calls_per_second: u32,
    /// Device tokens that no longer reach an app (uninstalled, stale).
    /// Tokens starting with `invalid-` are invalid too, without listing.
    /// `POST /_mock/huawei/devices` adds to this list.
    pub invalid_tokens: Vec<String>,
}

impl Default for HuaweiConfig {
    fn default() -> Self {
        HuaweiConfig {
            app_id: DEFAULT_HUAWEI_APP_ID.to_owned(),
            client_secret: DEFAULT_HUAWEI_APP_SECRET.to_owned(),
            marketing_per_device_per_day: 2,
            per_device_per_day: 3000,
            calls_per_second: 1000,
            invalid_tokens: Vec::new(),
        }
    }
}

impl HuaweiConfig {
    /// The app id must fit in a path segment and the secret must not be
    /// empty, or no client could ever authenticate.
    pub fn validate(&self) -> Result<(), String> {
        if self.app_id.is_empty() {
            return Err("app_id is empty".to_owned());
        }
        if self.app_id.contains(['/', '?', '#', ':']) {
            return Err(format!("app_id {:?} holds / ? # or :", self.app_id));
        }
        if self.client_secret.is_empty() {
            return Err("client_secret is empty".to_owned());
        }
        Ok(())
    }
}

/// What the next sends do wrong; `GET|POST /_mock/huawei/faults`. A POST
/// replaces all of it; unknown fields are refused so a typo is not ignored.
///
/// Faults apply after the bearer token and app id passed, in the order
/// `expire_tokens`, `flow_control_next`, `internal_next`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HuaweiFaults {
    /// Armed: the next send carrying a live token answers 401 `80200003`
    /// and every token issued so far expires. Reads back `false` once it
    /// fired.
    pub expire_tokens: bool,
    /// The next N sends answer HTTP 500 `81000001`.
    pub internal_next: u32,
    /// The next N sends answer HTTP 503 (flow control).
    pub flow_control_next: u32,
    /// Delay added before every send answer.
    pub latency_ms: u64,
}

/// `GET /_mock/huawei/stats`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HuaweiStats {
    /// Access tokens issued by `POST /oauth2/v3/token`.
    pub tokens_issued: u64,
    /// Token requests refused.
    pub tokens_refused: u64,
    /// Send calls that reached the mock, whatever their answer.
    pub calls: u64,
    /// Sends answered `80000000` or `80100000` (`validate_only` excluded).
    pub accepted_calls: u64,
    /// Of those, the `80100000` (partly invalid tokens) ones.
    pub partial_calls: u64,
    /// `validate_only` sends that passed the checks.
    pub validated: u64,
    /// Device messages delivered (one per valid token not dropped).
    pub delivered: u64,
    /// Distinct device tokens delivered to.
    pub devices: u64,
    /// Deliveries to a device token already delivered to.
    pub repeated_devices: u64,
    /// Device tokens answered as illegal (`80100000` lists, `80300007`).
    pub invalid_tokens: u64,
    /// Device messages accepted but dropped by the marketing quota.
    pub dropped_marketing: u64,
    /// Device messages accepted but dropped by the per-device daily cap.
    pub dropped_cap: u64,
    /// Error answers by code: every code but `80000000` and `80100000`.
    pub refused: BTreeMap<String, u64>,
    /// Send answers other than HTTP 200, by status.
    pub http_errors: BTreeMap<String, u64>,
}

/// One delivered device message; `GET /_mock/huawei/messages`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HuaweiMessage {
    /// The device token; `null` for a `topic` or `condition` send, which is
    /// recorded once.
    pub token: Option<String>,
    /// The `requestId` the send was answered with.
    pub request_id: String,
    /// The `message` object as sent, without its `token` list.
    pub message: Value,
    /// Mock clock (unix ms) when it was accepted.
    pub at_ms: u64,
}
