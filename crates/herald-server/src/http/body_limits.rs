//! Every route's body in one table: how large it may be, and whether it is
//! read whole or streamed. The body layer (`crate::http::body_admission`) reads
//! it to answer a declared length over the limit with `413` before reading
//! anything, and to charge at most the limit to the body budget. The
//! handlers read with the same limits (the constants named here, or the
//! same `[api]` settings). A route of the route table without an entry
//! reads no body.

use crate::access::{Policy, Verb};
use crate::config::ApiConfig;

/// Largest `POST /v1/keys` body: a name, a tenant, scopes and an expiry.
pub const KEYS_MAX_BYTES: usize = 64 * 1024;
/// Largest `:pause` body taken.
pub const PAUSE_MAX_BYTES: usize = 8 * 1024;
/// Largest body of a `POST .../{id}:action` (only `:pause` reads one).
pub const ACTION_MAX_BYTES: usize = PAUSE_MAX_BYTES;
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
enum Limit {
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

/// How a route reads its body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Read {
    /// Whole, then parsed: the body layer charges its bytes as they arrive.
    Whole,
    /// Parsed as it arrives: the handler leases what it holds at once.
    Streamed,
}

use Limit::{Bulk, Bytes, Campaign, Recipients, Timer, TimerPatch};
use Read::{Streamed, Whole};
use Verb::{Patch, Post, Put};

const ACTION: Limit = Bytes(ACTION_MAX_BYTES);

/// The routes that read a body (their patterns as in `crate::routes::ROUTES`).
const BODIES: &[(Verb, &str, Read, Limit)] = &[
    (Post, "/v1/timers", Whole, Timer),
    (Post, "/v1/timers:bulk", Streamed, Bulk),
    (Patch, "/v1/timers/{id}", Whole, TimerPatch),
    (Post, "/v1/timers/{id}", Whole, ACTION),
    (
        Post,
        "/v1/timers:retry",
        Whole,
        Bytes(TIMER_CHANGE_MAX_BYTES),
    ),
    (Put, "/v1/subjects/{subject_id}", Whole, Timer),
    (Post, "/v1/reminders", Whole, Timer),
    (Post, "/v1/reminders:bulk", Streamed, Bulk),
    (Post, "/v1/subscribers:bulk", Streamed, Bulk),
    (Put, "/v1/subscribers/{user_id}", Whole, Timer),
    (Patch, "/v1/subscribers/{user_id}", Whole, Timer),
    (Post, "/v1/audiences", Streamed, Recipients),
    (Post, "/v1/rules", Whole, Campaign),
    (Put, "/v1/rules/{id}", Whole, Campaign),
    (Post, "/v1/rules/{id}", Whole, ACTION),
    (
        Post,
        "/v1/schedules:preview",
        Whole,
        Bytes(PREVIEW_MAX_BYTES),
    ),
    (Post, "/v1/jobs", Whole, Campaign),
    (Post, "/v1/jobs/{id}", Whole, ACTION),
    (Post, "/v1/channels/{name}", Whole, ACTION),
    (
        Post,
        "/v1/channels/{name}/callback",
        Whole,
        Bytes(CALLBACK_MAX_BYTES),
    ),
    (Post, "/v1/deliveries/{id}", Whole, ACTION),
    (Post, "/v1/receipts", Whole, Bytes(RECEIPT_MAX_BYTES)),
    (Post, "/v1/keys", Whole, Bytes(KEYS_MAX_BYTES)),
    (Post, "/v1/admin:reload", Whole, ACTION),
];

/// One route's body, with its limit resolved against the settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyRule {
    /// The most bytes it may have; `None` for an audience upload.
    pub limit: Option<u64>,
    /// Parsed as it arrives, the handler leasing what it holds; otherwise
    /// read whole, its bytes charged as they arrive.
    pub streamed: bool,
}

/// The body `policy`'s route reads, if it reads one.
pub fn rule(policy: &Policy, api: &ApiConfig) -> Option<BodyRule> {
    let (_, _, read, limit) = BODIES
        .iter()
        .find(|(verb, path, _, _)| *verb == policy.verb && *path == policy.path)?;
    let bytes = match *limit {
        Timer => Some(api.max_timer_bytes),
        TimerPatch => Some(api.max_timer_bytes.max(TIMER_CHANGE_MAX_BYTES)),
        Campaign => Some(api.campaign_body_max_bytes),
        Bulk => Some(api.bulk_max_bytes),
        Bytes(n) => Some(n),
        Recipients => None,
    };
    Some(BodyRule {
        limit: bytes.map(|n| n as u64),
        streamed: *read == Streamed,
    })
}

/// The routes the body table names, for the test that holds it against
/// the route table.
#[cfg(test)]
pub fn routes_with_bodies() -> impl Iterator<Item = (Verb, &'static str)> {
    BODIES.iter().map(|(verb, path, _, _)| (*verb, *path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::{Need, Payload};

    #[test]
    fn limits_follow_the_settings() {
        let api = ApiConfig {
            max_timer_bytes: 1000,
            bulk_max_bytes: 5000,
            ..ApiConfig::default()
        };
        let of = |verb, path| {
            let p = Policy {
                verb,
                path,
                need: Need::Nothing,
                payload: Payload::Json,
            };
            rule(&p, &api).expect("takes a body")
        };
        assert_eq!(
            of(Post, "/v1/timers"),
            BodyRule {
                limit: Some(1000),
                streamed: false
            }
        );
        assert_eq!(
            of(Post, "/v1/timers:bulk"),
            BodyRule {
                limit: Some(5000),
                streamed: true
            }
        );
        assert_eq!(of(Patch, "/v1/timers/{id}").limit, Some(1 << 20));
        assert_eq!(of(Post, "/v1/schedules:preview").limit, Some(64 * 1024));
        assert_eq!(of(Post, "/v1/audiences").limit, None);
    }
}
