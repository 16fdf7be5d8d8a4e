//! `GET /v1/forecast`: what falls due in the next hour (per minute) or day
//! (per quarter hour), per channel and kind, against each channel's rate,
//! with a warning where a channel cannot send what falls due in time.
//!
//! The counts come from [`crate::forecast_cache`] (made in the background,
//! at most every 15 s, and dated); the warning from the model of
//! `herald_core::forecast`, run on minutes whatever the view.

use axum::extract::rejection::QueryRejection;
use axum::extract::{Extension, Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use herald_core::forecast::keep_up;
use herald_core::time::format_rfc3339_ms;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use utoipa::ToSchema;

use super::overview::scope_of;
use crate::access::Caller;
use crate::forecast_cache::{BUCKET_MS, Counted, Horizon};
use crate::http::error::ApiError;
use crate::http::request::query;
use crate::http::state::AppState;

/// How long after its minute ends what fell due in it may still be sending
/// before the channel counts as behind.
pub const TOLERANCE_MS: i64 = 60_000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForecastQuery {
    /// `hour` (the default) or `day`.
    horizon: Option<String>,
}

/// Where a channel falls behind.
#[derive(Serialize, ToSchema)]
#[schema(as = ForecastBehind)]
pub(crate) struct BehindJson {
    /// The start of the first minute whose sends still wait a minute after it.
    from: String,
    /// The minute whose sends go out latest after it ends.
    worst_at: String,
    /// How long after that minute the last of them goes, at least (seconds).
    worst_late_s: f64,
    /// Sends waiting at the end of that minute.
    waiting: u64,
}

/// One channel's share of the forecast.
#[derive(Serialize, ToSchema)]
#[schema(as = ForecastChannel)]
pub(crate) struct ChannelJson {
    channel: String,
    /// Whether the node has a channel of that name (a timer may name one
    /// removed since).
    configured: bool,
    /// The channel's cluster-wide rate; `null` when it has none.
    rate_per_sec: Option<f64>,
    /// Everything counted on it in the window.
    total: u64,
    /// Timers (every kind but reminders) per bucket.
    timers: Vec<u64>,
    /// Reminders per bucket.
    reminders: Vec<u64>,
    /// `null` while the rate sends what falls due within a minute of it (or
    /// the channel has no rate).
    behind: Option<BehindJson>,
}

/// `GET /v1/forecast`'s answer.
#[derive(Serialize, ToSchema)]
#[schema(as = Forecast)]
pub(crate) struct ForecastJson {
    horizon: &'static str,
    /// `counting` until the first count of this horizon has finished (ask
    /// again in a second); then `counted`.
    state: &'static str,
    /// The tenant whose timers are counted; `null` for every tenant's.
    tenant: Option<String>,
    /// The window: `[from, until)`; bucket `i` starts at `from + i * bucket_s`.
    from: Option<String>,
    until: Option<String>,
    bucket_s: u64,
    /// When the count was made and how long it took (ms).
    counted_at: Option<String>,
    count_took_ms: Option<i64>,
    /// Whether a newer count is running.
    refreshing: bool,
    /// Set when the count stopped at its limit of timers read: everything
    /// due before this time is counted, after it only some.
    complete_until: Option<String>,
    /// Busiest first.
    channels: Vec<ChannelJson>,
}

/// `GET /v1/forecast?horizon=hour|day`. A key sees its tenant's timers on
/// the channels it may use; the admin every tenant's (or, with
/// `X-Herald-Tenant`, that tenant's).
pub async fn forecast(
    State(st): State<AppState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    q: Result<Query<ForecastQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let q = query(q)?;
    let horizon = match q.horizon.as_deref().map(str::trim) {
        None | Some("") => Horizon::Hour,
        Some(h) => Horizon::parse(h).ok_or_else(|| {
            ApiError::field(
                "horizon",
                "invalid_field",
                format!("horizon must be hour or day, not {h:?}"),
            )
        })?,
    };
    let scope = scope_of(&caller, &headers);
    let latest = st
        .forecasts
        .latest(horizon, st.engine.store(), &st.clock)
        .await;
    let bucket_s = shown_bucket_ms(horizon) as u64 / 1000;
    let tenant = scope.map(|_| caller.tenant_name.clone());
    let Some(counted) = latest.counted else {
        if let Some(e) = latest.error {
            return Err(ApiError::unavailable(format!(
                "the forecast could not be counted: {e}"
            )));
        }
        return Ok(axum::Json(ForecastJson {
            horizon: horizon.as_str(),
            state: "counting",
            tenant,
            from: None,
            until: None,
            bucket_s,
            counted_at: None,
            count_took_ms: None,
            refreshing: true,
            complete_until: None,
            channels: Vec::new(),
        })
        .into_response());
    };
    let channels = channels_json(&st, &counted, scope);
    Ok(axum::Json(ForecastJson {
        horizon: horizon.as_str(),
        state: "counted",
        tenant,
        from: Some(format_rfc3339_ms(counted.from)),
        until: Some(format_rfc3339_ms(
            counted.from.saturating_add(horizon.length_ms()),
        )),
        bucket_s,
        counted_at: Some(format_rfc3339_ms(counted.from)),
        count_took_ms: Some(counted.took_ms),
        refreshing: latest.counting,
        complete_until: counted.counts.cut_at.map(format_rfc3339_ms),
        channels,
    })
    .into_response())
}

/// The view's bucket: a minute for the hour, a quarter hour for the day.
fn shown_bucket_ms(h: Horizon) -> i64 {
    match h {
        Horizon::Hour => BUCKET_MS,
        Horizon::Day => 15 * BUCKET_MS,
    }
}

/// Per minute counts of one channel: timers and reminders.
#[derive(Default)]
struct Minutes {
    timers: Vec<u64>,
    reminders: Vec<u64>,
}

fn channels_json(
    st: &AppState,
    c: &Counted,
    scope: Option<herald_core::TenantId>,
) -> Vec<ChannelJson> {
    let minutes = usize::try_from(c.horizon.length_ms() / BUCKET_MS).unwrap_or(0);
    let mut by_channel: BTreeMap<&str, Minutes> = BTreeMap::new();
    for d in &c.counts.counts {
        if scope.is_some_and(|t| t != d.tenant) {
            continue;
        }
        let Ok(i) = usize::try_from(d.bucket) else {
            continue;
        };
        if i >= minutes {
            continue;
        }
        let m = by_channel
            .entry(d.channel.as_str())
            .or_insert_with(|| Minutes {
                timers: vec![0; minutes],
                reminders: vec![0; minutes],
            });
        let row = if d.reminder {
            &mut m.reminders
        } else {
            &mut m.timers
        };
        row[i] = row[i].saturating_add(d.count);
    }
    let per = usize::try_from(shown_bucket_ms(c.horizon) / BUCKET_MS)
        .unwrap_or(1)
        .max(1);
    let mut out: Vec<ChannelJson> = by_channel
        .into_iter()
        .filter(|(name, _)| scope.is_none_or(|t| st.access.channels().serves(name, t)))
        .map(|(name, m)| {
            let all: Vec<u64> = m
                .timers
                .iter()
                .zip(&m.reminders)
                .map(|(a, b)| a.saturating_add(*b))
                .collect();
            let rate = st.engine.channel_rate(name);
            let behind = rate
                .and_then(|r| keep_up(&all, BUCKET_MS, r, TOLERANCE_MS))
                .and_then(|k| {
                    let from = k.behind_from?;
                    let worst = k.worst_bucket?;
                    let at = |i: usize| {
                        format_rfc3339_ms(
                            c.from
                                .saturating_add(i64::try_from(i).unwrap_or(0) * BUCKET_MS),
                        )
                    };
                    Some(BehindJson {
                        from: at(from),
                        worst_at: at(worst),
                        worst_late_s: k.worst_late_ms as f64 / 1000.0,
                        waiting: k.waiting.get(worst).copied().unwrap_or(0),
                    })
                });
            ChannelJson {
                channel: name.to_string(),
                configured: st.engine.has_channel(name),
                rate_per_sec: rate,
                total: all.iter().sum(),
                timers: sums(&m.timers, per),
                reminders: sums(&m.reminders, per),
                behind,
            }
        })
        .collect();
    out.sort_by(|a, b| {
        b.total
            .cmp(&a.total)
            .then_with(|| a.channel.cmp(&b.channel))
    });
    out
}

/// `xs` summed `per` at a time.
fn sums(xs: &[u64], per: usize) -> Vec<u64> {
    xs.chunks(per).map(|c| c.iter().sum()).collect()
}
