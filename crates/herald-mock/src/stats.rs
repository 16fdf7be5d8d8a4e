//! Serializable views of what the mocks have seen, and the histogram helper behind them.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Summary of a latency-like distribution, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Percentiles {
    pub count: u64,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
    pub min: u64,
    pub mean: f64,
}

impl Percentiles {
    pub(crate) fn from_histogram(h: &Histogram<u64>) -> Percentiles {
        if h.is_empty() {
            return Percentiles::default();
        }
        Percentiles {
            count: h.len(),
            p50: h.value_at_quantile(0.50),
            p90: h.value_at_quantile(0.90),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            max: h.max(),
            min: h.min(),
            mean: h.mean(),
        }
    }
}

/// What `GET /_mock/stats` answers for the webhook sink.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WebhookStats {
    /// Requests that reached a hook route, valid or not.
    pub received: u64,
    /// Requests answered with a 2xx status.
    pub delivered: u64,
    /// Distinct Idempotency-Keys answered 2xx at least once.
    pub unique_delivered: u64,
    /// 2xx answers for a key that had already been answered 2xx before.
    pub duplicates: u64,
    /// Answer counts by status code, e.g. `{"200": 10, "500": 2}`.
    pub by_status: BTreeMap<String, u64>,
    /// Requests rejected because the signature was missing or wrong.
    pub bad_signatures: u64,
    /// Receipt time minus `due_at`, first 2xx delivery of each key, clamped at 0.
    pub lateness_ms: Percentiles,
    /// `fired_at` minus `due_at`, first 2xx delivery of each key, clamped at 0.
    pub fire_lateness_ms: Percentiles,
    /// Wall clock (unix ms) of the first 2xx answer, if any.
    pub first_delivered_at_ms: Option<u64>,
    /// Wall clock (unix ms) of the last 2xx answer, if any.
    pub last_delivered_at_ms: Option<u64>,
}

impl WebhookStats {
    /// Count of answers with one status code.
    pub fn status_count(&self, status: u16) -> u64 {
        self.by_status
            .get(&status.to_string())
            .copied()
            .unwrap_or(0)
    }
}

/// What one Idempotency-Key has seen; `GET /_mock/keys/{key}`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct KeyStats {
    /// Valid requests carrying this key (those that passed signature and body checks).
    pub requests: u64,
    /// Of those, how many were answered 2xx.
    pub delivered: u64,
}

/// One entry of the recent-request ring; `GET /_mock/requests`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RecordedRequest {
    /// Arrival order across all hook requests since start (not reset by `/_mock/reset`).
    pub seq: u64,
    /// Request path, e.g. `/hook` or `/hook/team-a`.
    pub path: String,
    /// The Idempotency-Key header, if sent.
    pub key: Option<String>,
    /// Headers of interest (lower-case names): idempotency-key, x-herald-signature,
    /// content-type. Absent headers are left out.
    pub headers: BTreeMap<String, String>,
    /// The body as JSON; a body that is not JSON is kept as a string.
    pub body: serde_json::Value,
    /// The status the mock answered.
    pub status: u16,
    /// Wall clock (unix ms) when the request arrived.
    pub received_at_ms: u64,
}

/// A histogram for millisecond values that grows as needed.
pub(crate) fn new_histogram() -> Histogram<u64> {
    // 1 ms .. 1 h to start, 3 significant figures; auto-resize covers anything larger.
    let mut h = Histogram::new_with_bounds(1, 3_600_000, 3).expect("valid histogram bounds");
    h.auto(true);
    h
}

/// Values beyond this (about 35 years) are clamped; keeps absurd inputs from growing
/// the histogram without bound.
const HISTOGRAM_CEILING: u64 = 1 << 40;

pub(crate) fn record(h: &mut Histogram<u64>, value: u64) {
    let v = value.min(HISTOGRAM_CEILING);
    if h.record(v).is_err() {
        h.saturating_record(v);
    }
}
