//! `GET /v1/overview`: what the console's first page shows, in one answer
//! that reads nothing from the store. Timer counts are the stats sampler's
//! last ones; deliveries and lateness come from this node's live window.

use std::collections::BTreeMap;

use axum::extract::{Extension, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use herald_core::TenantId;
use herald_core::time::format_rfc3339_ms;
use herald_engine::{ChannelLive, LiveView};
use serde::Serialize;
use utoipa::ToSchema;

use crate::access::{Caller, TENANT_HEADER};
use crate::http::request::NoQuery;
use crate::http::state::AppState;

/// Whose figures a caller sees: `None` for every tenant (the admin, unless
/// it acts for one with `X-Herald-Tenant`), else its tenant's.
pub(crate) fn scope_of(caller: &Caller, headers: &HeaderMap) -> Option<TenantId> {
    (!caller.admin || headers.contains_key(TENANT_HEADER)).then_some(caller.tenant)
}

/// Attempts by outcome, every outcome listed.
pub(crate) fn outcomes_json(c: &ChannelLive) -> BTreeMap<String, u64> {
    c.outcomes
        .iter()
        .map(|(o, n)| ((*o).to_string(), *n))
        .collect()
}

/// Fire lateness quantiles; `null` while the window holds no delivery.
#[derive(Serialize, ToSchema)]
#[schema(as = Lateness)]
pub(crate) struct LatenessJson {
    p50: Option<f64>,
    p99: Option<f64>,
}

/// One second of the live window.
#[derive(Serialize, ToSchema)]
#[schema(as = LivePoint)]
pub(crate) struct LivePointJson {
    t: String,
    deliveries: u64,
    /// `null` in a second without deliveries.
    p50_ms: Option<f64>,
    p99_ms: Option<f64>,
}

/// This node's live window: deliveries, lateness and their last minute.
#[derive(Serialize, ToSchema)]
#[schema(as = Live)]
pub(crate) struct LiveJson {
    window_s: u64,
    deliveries_per_s: f64,
    lateness_ms: LatenessJson,
    /// The last 60 s, one point per second.
    series: Vec<LivePointJson>,
}

/// A channel's attempts in the live window.
#[derive(Serialize, ToSchema)]
#[schema(as = ChannelLive)]
pub(crate) struct ChannelLiveJson {
    name: String,
    outcomes: BTreeMap<String, u64>,
    rate_per_s: f64,
}

/// A node of the cluster, for the admin.
#[derive(Serialize, ToSchema)]
#[schema(as = NodeLive)]
pub(crate) struct NodeLiveJson {
    node_id: String,
    alive_until: String,
    shards: u64,
}

/// `GET /v1/overview`'s answer.
#[derive(Serialize, ToSchema)]
#[schema(as = Overview)]
pub(crate) struct OverviewJson {
    tenant: Option<String>,
    /// Sampled counts by state.
    timers: BTreeMap<String, u64>,
    /// `null` until the stats sampler has run once.
    #[schema(value_type = String)]
    sampled_at: Option<String>,
    live: LiveJson,
    inflight: u64,
    channels: Vec<ChannelLiveJson>,
    nodes: Vec<NodeLiveJson>,
}

fn live_json(live: &LiveView) -> LiveJson {
    LiveJson {
        window_s: u64::from(live.window_s),
        deliveries_per_s: live.deliveries_per_s,
        lateness_ms: LatenessJson {
            p50: live.p50_ms,
            p99: live.p99_ms,
        },
        series: live
            .series
            .iter()
            .map(|s| LivePointJson {
                t: format_rfc3339_ms(s.t_ms),
                deliveries: s.deliveries,
                p50_ms: s.p50_ms,
                p99_ms: s.p99_ms,
            })
            .collect(),
    }
}

/// `GET /v1/overview`: timers by state (sampled), this node's live
/// deliveries and lateness, in flight, per-channel outcomes, and the nodes.
/// A key sees its tenant's figures and the channels it may use; the admin
/// every tenant's (or, with `X-Herald-Tenant`, that tenant's) and the nodes.
pub async fn overview(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
) -> Response {
    let scope = scope_of(&caller, &headers);
    let sampled = st.engine.timer_counts();
    let timers: BTreeMap<String, u64> = sampled
        .as_ref()
        .map(|c| {
            c.by_state(scope)
                .into_iter()
                .map(|(s, n)| (s.as_str().to_string(), n))
                .collect()
        })
        .unwrap_or_default();
    let live = st.engine.live(scope);
    let channels = live
        .channels
        .iter()
        .filter(|c| scope.is_none_or(|t| st.access.channels().serves(&c.name, t)))
        .map(|c| ChannelLiveJson {
            name: c.name.clone(),
            outcomes: outcomes_json(c),
            rate_per_s: c.rate_per_s,
        })
        .collect();
    let nodes = if caller.admin {
        st.engine
            .nodes()
            .into_iter()
            .map(|n| NodeLiveJson {
                node_id: n.node_id,
                alive_until: format_rfc3339_ms(n.alive_until),
                shards: n.shards,
            })
            .collect()
    } else {
        Vec::new()
    };
    let (_, _, inflight) = st.engine.load_figures();
    axum::Json(OverviewJson {
        tenant: scope.map(|_| caller.tenant_name.clone()),
        timers,
        sampled_at: sampled.map(|c| format_rfc3339_ms(c.at_ms)),
        live: live_json(&live),
        inflight: inflight as u64,
        channels,
        nodes,
    })
    .into_response()
}
