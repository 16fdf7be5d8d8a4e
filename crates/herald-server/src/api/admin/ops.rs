//! Operational endpoints: health, readiness, metrics, stats and the cluster's
//! leases. The error fallbacks are request plumbing, in `http::fallback`.

use std::sync::OnceLock;
use std::time::Duration;

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use crate::http::error::ApiError;
use crate::http::request::NoQuery;
use crate::http::state::AppState;

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Installs the process-wide Prometheus recorder (once) and keeps its
/// histograms drained in the background.
pub fn install_metrics() -> Result<PrometheusHandle, String> {
    if let Some(h) = HANDLE.get() {
        return Ok(h.clone());
    }
    let seconds = [
        0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
    ];
    let sizes = [1.0, 10.0, 100.0, 1_000.0, 5_000.0, 10_000.0, 20_000.0];
    let handle = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &seconds)
        .and_then(|b| b.set_buckets_for_metric(Matcher::Suffix("_ops".into()), &sizes))
        .and_then(|b| b.set_buckets_for_metric(Matcher::Suffix("_size".into()), &sizes))
        .map_err(|e| e.to_string())?
        .install_recorder()
        .map_err(|e| e.to_string())?;
    let h = HANDLE.get_or_init(|| handle).clone();
    let upkeep = h.clone();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_secs(5)).await;
            upkeep.run_upkeep();
        }
    });
    Ok(h)
}

pub async fn healthz() -> impl IntoResponse {
    axum::Json(serde_json::json!({ "status": "ok" }))
}

/// How long `/readyz` waits for the store.
const READY_STORE_TIMEOUT: Duration = Duration::from_secs(1);

/// Ready to take traffic: the store answers (a read of one row by its key)
/// within a second, every core loop of the engine runs, this node's leases
/// are current, and its in-flight slots are not stalled (all taken with
/// nothing sending). Otherwise `503` listing the failing parts. Liveness
/// (`/healthz`) asks none of this.
pub async fn readyz(State(st): State<AppState>) -> Response {
    let mut problems = Vec::new();
    let probe = tokio::time::timeout(READY_STORE_TIMEOUT, st.engine.store().get_timer(0));
    match probe.await {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "not ready: the store does not answer");
            problems.push("store: does not answer".to_string());
        }
        Err(_) => {
            tracing::warn!(
                timeout_ms = READY_STORE_TIMEOUT.as_millis() as u64,
                "not ready: the store is too slow"
            );
            problems.push("store: did not answer in time".to_string());
        }
    }
    let health = st.engine.health();
    problems.extend(health.problems());
    if problems.is_empty() {
        return axum::Json(serde_json::json!({ "status": "ready" })).into_response();
    }
    tracing::warn!(problems = ?problems, "not ready");
    // The API's error shape, with the failing parts listed one by one.
    let body = serde_json::json!({ "error": {
        "code": "unavailable",
        "message": format!("not ready: {}", problems.join("; ")),
        "failing": problems,
    }});
    (StatusCode::SERVICE_UNAVAILABLE, axum::Json(body)).into_response()
}

pub async fn metrics(State(st): State<AppState>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        st.metrics.render(),
    )
}

/// Counts by state from the store (every tenant's timers: this is an admin
/// view of the cluster), and this node's wheel and in-flight figures.
pub async fn stats(State(st): State<AppState>, _: NoQuery) -> Result<Response, ApiError> {
    let counts = st.engine.store().count_by_tenant_state().await?;
    let mut timers = serde_json::Map::new();
    for s in herald_core::TimerState::ALL {
        let n: u64 = counts
            .iter()
            .filter(|(_, c, _)| *c == s)
            .map(|(_, _, n)| *n)
            .sum();
        timers.insert(s.as_str().into(), n.into());
    }
    let (wheel, ready, inflight) = st.engine.load_figures();
    Ok(axum::Json(serde_json::json!({
        "timers": timers,
        "node": {
            "wheel": wheel,
            "ready": ready,
            "inflight": inflight,
            "shards": { "total": st.engine.shards(), "owned": st.engine.owned_shards().len() },
        },
    }))
    .into_response())
}

/// Who owns which shards, from the store's lease table: the cluster as every
/// node sees it, whichever node answers.
pub async fn cluster(State(st): State<AppState>, _: NoQuery) -> Result<Response, ApiError> {
    let leases = st.engine.store().shard_leases().await?;
    let now = st.clock.now_ms();
    let mut owners: std::collections::BTreeMap<String, u64> = std::collections::BTreeMap::new();
    let mut unowned = u64::from(st.engine.shards());
    for l in &leases {
        if let Some(o) = &l.owner
            && l.lease_until > now
        {
            *owners.entry(o.clone()).or_default() += 1;
            unowned -= 1;
        }
    }
    Ok(axum::Json(serde_json::json!({
        "node_id": st.engine.node_id(),
        "incarnation": st.engine.incarnation(),
        "shards": st.engine.shards(),
        "owners": owners,
        "unowned": unowned,
        "leases": leases.iter().map(|l| serde_json::json!({
            "shard": l.shard, "owner": l.owner, "lease_until": herald_core::time::format_rfc3339_ms(l.lease_until), "epoch": l.epoch,
            "incarnation": l.incarnation,
        })).collect::<Vec<_>>(),
    }))
    .into_response())
}
