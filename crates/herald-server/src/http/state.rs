//! What every handler is given.

use std::sync::Arc;

use herald_core::{Clock, TenantId};
use herald_engine::Engine;
use herald_engine::campaign::Campaigns;
use metrics_exporter_prometheus::PrometheusHandle;

use crate::access::Access;
use crate::audit::AuditLog;
use crate::config::{ApiConfig, RemindersConfig};
use crate::http::quota::Quotas;

/// What every handler gets: its parts behind one `Arc`, so the copy that
/// every request takes is one reference count, not one per part.
#[derive(Clone)]
pub struct AppState(Arc<AppParts>);

impl AppState {
    pub fn new(parts: AppParts) -> Self {
        Self(Arc::new(parts))
    }
}

impl std::ops::Deref for AppState {
    type Target = AppParts;

    fn deref(&self) -> &AppParts {
        &self.0
    }
}

/// The node's engine, configuration and shared services.
pub struct AppParts {
    pub engine: Engine,
    /// The campaign use cases (audiences, jobs, rules); `engine.campaigns()`.
    pub campaigns: Campaigns,
    pub clock: Arc<dyn Clock>,
    pub api: Arc<ApiConfig>,
    pub reminders: Arc<RemindersConfig>,
    /// The route a request to a subscriber takes when it names no channel
    /// (`[routing]`).
    pub default_routes: Arc<crate::default_routes::DefaultRoutes>,
    pub metrics: PrometheusHandle,
    /// The node's mode, admin key and API key seam.
    pub access: Arc<Access>,
    /// Where requests that change state are recorded.
    pub audit: AuditLog,
    /// Pending-timer quotas by tenant.
    pub quotas: Arc<Quotas>,
    /// Re-reads the configuration file (`POST /v1/admin:reload`); `None`
    /// when the node has none.
    pub reload: Option<crate::reload::Reloader>,
    /// The latest counts of what falls due (`GET /v1/forecast`).
    pub forecasts: Arc<crate::forecast_cache::Forecasts>,
}

impl AppParts {
    /// Whether `tenant` may name the channel `name`: it is configured, and
    /// not limited to other tenants. For any other tenant it does not exist.
    pub fn serves_channel(&self, tenant: TenantId, name: &str) -> bool {
        self.engine.has_channel(name) && self.access.channels().serves(name, tenant)
    }

    /// The channel a subscriber address type routes to when nothing names
    /// one (reminders, a route's steps): `[reminders.channels]`, else a
    /// channel named like the type that `tenant` may use, else
    /// `[reminders] default_channel`. Whether the tenant may use the
    /// channel found is the caller's to check (and to say).
    pub fn channel_for_type(
        &self,
        tenant: TenantId,
        t: herald_core::ChannelType,
    ) -> Option<String> {
        self.reminders
            .channel_for_type(t, |c| self.serves_channel(tenant, c))
    }

    /// The channels `tenant` may name, for error messages.
    pub fn channel_names_for(&self, tenant: TenantId) -> Vec<String> {
        self.access
            .channels()
            .visible(&self.engine.channel_names(), tenant)
    }
}
