//! What bounds a route's body, and the fixed sizes some routes take. Each
//! route's entry in the route table (`crate::routes`) declares its
//! [`BodySpec`]; the body layer (`crate::http::body_admission`) resolves it
//! against the settings to answer a declared length over the limit with
//! `413` before reading anything, and to charge at most the limit to the
//! body budget. The handlers read with the same limits (the constants named
//! here, or the same `[api]` settings).

use crate::config::ApiConfig;

/// Largest `POST /v1/keys` body: a name, a tenant, scopes and an expiry.
pub const KEYS_MAX_BYTES: usize = 64 * 1024;
/// Largest `:pause` body taken.
pub const PAUSE_MAX_BYTES: usize = 8 * 1024;
/// Largest body of a `POST .../{id}:action`: a template's `:preview` (its
/// data and a subscriber); `:pause` reads at most [`PAUSE_MAX_BYTES`] of it.
pub const ACTION_MAX_BYTES: usize = 64 * 1024;
/// Largest body of a timer patch or a filtered retry (a patch carries a
/// message).
pub const TIMER_CHANGE_MAX_BYTES: usize = 1 << 20;
/// Largest preview body taken (a schedule with 1,000 excluded dates fits).
pub const PREVIEW_MAX_BYTES: usize = 64 * 1024;
/// Largest callback body taken; WeChat's events are a few hundred bytes.
pub const CALLBACK_MAX_BYTES: usize = 64 * 1024;
/// Largest receipt body; a receipt is a handful of short fields.
pub const RECEIPT_MAX_BYTES: usize = 4 * 1024;

/// What bounds a route's body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// `api.max_timer_bytes`.
    Timer,
    /// `api.max_timer_bytes`, but at least 1 MiB (a `PATCH` may carry a
    /// whole message besides its other fields).
    TimerPatch,
    /// `api.campaign_body_max_bytes`.
    Campaign,
    /// `api.bulk_max_bytes`.
    Bulk,
    /// A fixed size.
    Bytes(usize),
    /// No size: an audience upload is bounded by its recipients
    /// (`api.audience_max_recipients`) and by the body deadline.
    Recipients,
}

/// The body of an action route (only `:pause` reads one).
pub const ACTION: Limit = Limit::Bytes(ACTION_MAX_BYTES);

/// A route's body as its entry in the route table declares it (see
/// `crate::routes`): what bounds it, and whether it is streamed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodySpec {
    pub limit: Limit,
    /// Parsed as it arrives (NDJSON, recipients); otherwise read whole.
    pub streamed: bool,
}

/// One route's body, with its limit resolved against the settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyRule {
    /// The most bytes it may have; `None` for an audience upload.
    pub limit: Option<u64>,
    /// Parsed as it arrives, the handler leasing what it holds; otherwise
    /// read whole, its bytes charged as they arrive.
    pub streamed: bool,
}

impl BodySpec {
    /// The limit under the settings `api`.
    pub fn resolve(self, api: &ApiConfig) -> BodyRule {
        let bytes = match self.limit {
            Limit::Timer => Some(api.max_timer_bytes),
            Limit::TimerPatch => Some(api.max_timer_bytes.max(TIMER_CHANGE_MAX_BYTES)),
            Limit::Campaign => Some(api.campaign_body_max_bytes),
            Limit::Bulk => Some(api.bulk_max_bytes),
            Limit::Bytes(n) => Some(n),
            Limit::Recipients => None,
        };
        BodyRule {
            limit: bytes.map(|n| n as u64),
            streamed: self.streamed,
        }
    }
}
