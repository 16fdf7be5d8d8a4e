//! The tenants the configuration names (`[tenants.NAME]`, a channel's
//! `tenants`), made in the store at start and turned into ids for the
//! engine's dispatch limits, the quotas and the channels' tenant lists.

use std::collections::HashMap;

use anyhow::Context;
use herald_core::TenantId;
use herald_engine::TenantLimits;
use herald_server::ChannelTenants;
use herald_store::Store;

use crate::config::Config;

/// The configured tenant settings, by id.
pub struct Tenancy {
    /// Dispatch weight and delivery rate.
    pub limits: HashMap<TenantId, TenantLimits>,
    /// Most pending timers.
    pub max_pending: HashMap<TenantId, u64>,
    /// The channels limited to some tenants.
    pub channels: ChannelTenants,
    /// The frequency caps, their tenants resolved.
    pub caps: Vec<herald_core::caps::CapRule>,
    /// The rate limits per key, their tenants resolved.
    pub rate_limits: Vec<herald_core::pacing::RateRule>,
    /// The default fallback routes (`[routing]`), their tenants resolved.
    pub default_routes: herald_server::default_routes::DefaultRoutes,
}

/// Makes every tenant the configuration names (if it does not exist yet;
/// several nodes starting at once agree on the ids) and resolves the
/// settings to ids.
pub async fn resolve(cfg: &Config, store: &dyn Store) -> anyhow::Result<Tenancy> {
    let mut limits = HashMap::new();
    let mut max_pending = HashMap::new();
    for (name, t) in &cfg.tenants {
        let id = tenant(store, name).await?;
        limits.insert(id, t.limits());
        if let Some(max) = t.max_pending {
            max_pending.insert(id, max);
        }
    }
    let mut channels = ChannelTenants::everyone();
    for c in &cfg.channels {
        let Some(names) = &c.common.tenants else {
            continue;
        };
        let mut ids = Vec::with_capacity(names.len());
        for name in names {
            ids.push(tenant(store, name).await?);
        }
        channels = channels.limit(c.name(), ids);
    }
    let mut caps = Vec::with_capacity(cfg.caps.len());
    for (i, c) in cfg.caps.iter().enumerate() {
        caps.push(c.rule(i, tenants(store, c.tenants.as_deref()).await?)?);
    }
    let mut rate_limits = Vec::with_capacity(cfg.rate_limits.len());
    for (i, r) in cfg.rate_limits.iter().enumerate() {
        rate_limits.push(r.rule(i, tenants(store, r.tenants.as_deref()).await?)?);
    }
    let mut default_routes = herald_server::default_routes::DefaultRoutes {
        default: cfg.routing.default.as_ref().map(|d| d.route.clone()),
        ..Default::default()
    };
    for (name, d) in &cfg.routing.tenants {
        let id = tenant(store, name).await?;
        default_routes.by_tenant.insert(id, d.route.clone());
    }
    Ok(Tenancy {
        limits,
        max_pending,
        channels,
        caps,
        rate_limits,
        default_routes,
    })
}

/// The ids of the tenants a list names (`None`: every tenant).
async fn tenants(
    store: &dyn Store,
    names: Option<&[String]>,
) -> anyhow::Result<Option<Vec<TenantId>>> {
    let Some(names) = names else {
        return Ok(None);
    };
    let mut ids = Vec::with_capacity(names.len());
    for name in names {
        ids.push(tenant(store, name).await?);
    }
    Ok(Some(ids))
}

async fn tenant(store: &dyn Store, name: &str) -> anyhow::Result<TenantId> {
    store
        .tenant_id(name, true)
        .await
        .with_context(|| format!("making tenant {name:?}"))?
        .with_context(|| format!("the store made no tenant {name:?}"))
}
