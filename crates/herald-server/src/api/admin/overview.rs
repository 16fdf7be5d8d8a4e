//! `GET /v1/overview`: what the console's first page shows, in one answer
//! that reads nothing from the store. Timer counts are the stats sampler's
//! last ones; deliveries and lateness come from this node's live window.

use axum::extract::{Extension, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use herald_core::TenantId;
use herald_core::time::format_rfc3339_ms;
use herald_engine::{ChannelLive, LiveView};
use serde_json::{Map, Value, json};

use crate::access::{Caller, TENANT_HEADER};
use crate::http::request::NoQuery;
use crate::http::state::AppState;

/// Whose figures a caller sees: `None` for every tenant (the admin, unless
/// it acts for one with `X-Herald-Tenant`), else its tenant's.
fn scope_of(caller: &Caller, headers: &HeaderMap) -> Option<TenantId> {
    (!caller.admin || headers.contains_key(TENANT_HEADER)).then_some(caller.tenant)
}

/// Attempts by outcome, every outcome listed.
pub(crate) fn outcomes_json(c: &ChannelLive) -> Value {
    let map: Map<String, Value> = c
        .outcomes
        .iter()
        .map(|(o, n)| ((*o).to_string(), (*n).into()))
        .collect();
    Value::Object(map)
}

fn live_json(live: &LiveView) -> Value {
    json!({
        "window_s": live.window_s,
        "deliveries_per_s": live.deliveries_per_s,
        "lateness_ms": { "p50": live.p50_ms, "p99": live.p99_ms },
        "series": live.series.iter().map(|s| json!({
            "t": format_rfc3339_ms(s.t_ms),
            "deliveries": s.deliveries,
            "p50_ms": s.p50_ms,
            "p99_ms": s.p99_ms,
        })).collect::<Vec<_>>(),
    })
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
    let timers: Map<String, Value> = sampled
        .as_ref()
        .map(|c| {
            c.by_state(scope)
                .into_iter()
                .map(|(s, n)| (s.as_str().to_string(), n.into()))
                .collect()
        })
        .unwrap_or_default();
    let live = st.engine.live(scope);
    let channels: Vec<Value> = live
        .channels
        .iter()
        .filter(|c| scope.is_none_or(|t| st.access.channels().serves(&c.name, t)))
        .map(|c| {
            json!({
                "name": c.name,
                "outcomes": outcomes_json(c),
                "rate_per_s": c.rate_per_s,
            })
        })
        .collect();
    let nodes: Vec<Value> = if caller.admin {
        st.engine
            .nodes()
            .into_iter()
            .map(|n| {
                json!({
                    "node_id": n.node_id,
                    "alive_until": format_rfc3339_ms(n.alive_until),
                    "shards": n.shards,
                })
            })
            .collect()
    } else {
        Vec::new()
    };
    let (_, _, inflight) = st.engine.load_figures();
    axum::Json(json!({
        "tenant": scope.map(|_| caller.tenant_name.clone()),
        "timers": timers,
        "sampled_at": sampled.map(|c| format_rfc3339_ms(c.at_ms)),
        "live": live_json(&live),
        "inflight": inflight,
        "channels": channels,
        "nodes": nodes,
    }))
    .into_response()
}
