//! Operational endpoints: health, readiness, metrics, stats and the cluster's
//! leases. The error fallbacks are request plumbing, in `http::fallback`.

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::Duration;

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use serde::Serialize;

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

/// `{"status": ...}`: the answer of `/healthz`, and of `/readyz` when ready.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = Status)]
pub(crate) struct StatusJson {
    status: &'static str,
    /// What works but not as configured: reminder routes whose template is
    /// not stored or does not fit (their reminders are refused at subscribe).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<String>,
}

pub async fn healthz() -> impl IntoResponse {
    axum::Json(StatusJson {
        status: "ok",
        warnings: Vec::new(),
    })
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
        let warnings = route_warnings(&st).await;
        if !warnings.is_empty() {
            tracing::warn!(warnings = ?warnings, "ready, with warnings");
        }
        return axum::Json(StatusJson {
            status: "ready",
            warnings,
        })
        .into_response();
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

/// Each tenant's reminder routes that cannot send now (templates are per
/// tenant: one may have stored what another lacks). A tenant other than
/// the default is named in its lines. If the store cannot list the tenants
/// in time, only the default tenant is checked.
pub(crate) async fn route_warnings(st: &AppState) -> Vec<String> {
    let default = || vec![(herald_core::DEFAULT_TENANT, String::new())];
    let tenants = match tokio::time::timeout(READY_STORE_TIMEOUT, st.engine.store().tenants()).await
    {
        Ok(Ok(t)) if !t.is_empty() => t,
        _ => default(),
    };
    let lib = st.engine.templates().library();
    let mut out = Vec::new();
    for (tenant, name) in tenants {
        let found = crate::reminder_routes::warnings(
            &st.reminders,
            |c| st.engine.channel_kind(c).is_some(),
            |c| {
                st.engine
                    .channel_kind(c)
                    .map(|k| (k, st.engine.channel_reminder_shape(c)))
            },
            &lib,
            tenant,
        );
        out.extend(found.into_iter().map(|w| {
            if tenant == herald_core::DEFAULT_TENANT {
                w
            } else {
                format!("tenant {name:?}: {w}")
            }
        }));
    }
    out
}

pub async fn metrics(State(st): State<AppState>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        st.metrics.render(),
    )
}

/// This node's shards: how many there are, and how many it holds.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = NodeShards)]
pub(crate) struct NodeShardsJson {
    total: u64,
    owned: u64,
}

/// This node's wheel, ready-queue and in-flight figures.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = NodeFigures)]
pub(crate) struct NodeFiguresJson {
    wheel: u64,
    ready: u64,
    inflight: u64,
    shards: NodeShardsJson,
}

/// `GET /v1/stats`'s answer.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = Stats)]
pub(crate) struct StatsJson {
    /// Count by state over every tenant.
    timers: BTreeMap<String, u64>,
    node: NodeFiguresJson,
}

/// Counts by state from the store (every tenant's timers: this is an admin
/// view of the cluster), and this node's wheel and in-flight figures.
pub async fn stats(State(st): State<AppState>, _: NoQuery) -> Result<Response, ApiError> {
    let counts = st.engine.store().count_by_tenant_state().await?;
    let mut timers = BTreeMap::new();
    for s in herald_core::TimerState::ALL {
        let n: u64 = counts
            .iter()
            .filter(|(_, c, _)| *c == s)
            .map(|(_, _, n)| *n)
            .sum();
        timers.insert(s.as_str().to_string(), n);
    }
    let (wheel, ready, inflight) = st.engine.load_figures();
    Ok(axum::Json(StatsJson {
        timers,
        node: NodeFiguresJson {
            wheel: wheel as u64,
            ready: ready as u64,
            inflight: inflight as u64,
            shards: NodeShardsJson {
                total: u64::from(st.engine.shards()),
                owned: st.engine.owned_shards().len() as u64,
            },
        },
    })
    .into_response())
}

/// One shard's lease, as the store holds it.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = Lease)]
pub(crate) struct LeaseJson {
    shard: u64,
    owner: Option<String>,
    lease_until: String,
    epoch: i64,
    /// The owner's incarnation, a 64-bit number as a decimal string
    /// (JavaScript's numbers would round it); `"0"` while nobody owns the
    /// shard.
    incarnation: String,
}

/// One node's current leases, summed up: what the lease table says of a
/// node process (one per node id and incarnation).
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = NodeLeases)]
pub(crate) struct NodeLeasesJson {
    node_id: String,
    /// The process's incarnation, as a decimal string.
    incarnation: String,
    /// Shards it holds a current lease on.
    shards: u64,
    /// The lowest and highest epoch of those leases.
    epoch_min: i64,
    epoch_max: i64,
    /// When the first and the last of those leases run out unless renewed.
    lease_until_min: String,
    lease_until_max: String,
}

/// `GET /v1/cluster`'s answer.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = Cluster)]
pub(crate) struct ClusterJson {
    node_id: String,
    /// This process's incarnation, a 64-bit number as a decimal string.
    incarnation: String,
    shards: u64,
    /// Shards held per node.
    owners: BTreeMap<String, u64>,
    unowned: u64,
    /// The current leases per node process, by node id and incarnation.
    nodes: Vec<NodeLeasesJson>,
    leases: Vec<LeaseJson>,
}

/// A node process's current leases, while they are gathered.
struct Held {
    shards: u64,
    epochs: (i64, i64),
    until: (i64, i64),
}

/// Who owns which shards, from the store's lease table: the cluster as every
/// node sees it, whichever node answers.
pub async fn cluster(State(st): State<AppState>, _: NoQuery) -> Result<Response, ApiError> {
    let leases = st.engine.store().shard_leases().await?;
    let now = st.clock.now_ms();
    let mut owners: BTreeMap<String, u64> = BTreeMap::new();
    let mut held: BTreeMap<(String, i64), Held> = BTreeMap::new();
    let mut unowned = u64::from(st.engine.shards());
    for l in &leases {
        if let Some(o) = &l.owner
            && l.lease_until > now
        {
            *owners.entry(o.clone()).or_default() += 1;
            unowned -= 1;
            let h = held.entry((o.clone(), l.incarnation)).or_insert(Held {
                shards: 0,
                epochs: (l.epoch, l.epoch),
                until: (l.lease_until, l.lease_until),
            });
            h.shards += 1;
            h.epochs = (h.epochs.0.min(l.epoch), h.epochs.1.max(l.epoch));
            h.until = (h.until.0.min(l.lease_until), h.until.1.max(l.lease_until));
        }
    }
    let time = herald_core::time::format_rfc3339_ms;
    let nodes = held
        .into_iter()
        .map(|((node_id, incarnation), h)| NodeLeasesJson {
            node_id,
            incarnation: incarnation.to_string(),
            shards: h.shards,
            epoch_min: h.epochs.0,
            epoch_max: h.epochs.1,
            lease_until_min: time(h.until.0),
            lease_until_max: time(h.until.1),
        })
        .collect();
    let leases = leases
        .into_iter()
        .map(|l| LeaseJson {
            shard: u64::from(l.shard),
            owner: l.owner,
            lease_until: time(l.lease_until),
            epoch: l.epoch,
            incarnation: l.incarnation.to_string(),
        })
        .collect();
    Ok(axum::Json(ClusterJson {
        node_id: st.engine.node_id().to_string(),
        incarnation: st.engine.incarnation().to_string(),
        shards: u64::from(st.engine.shards()),
        owners,
        unowned,
        nodes,
        leases,
    })
    .into_response())
}
