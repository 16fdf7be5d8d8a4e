//! Fallback routes by default (`[routing]`): the route a timer to a
//! subscriber, or a job or rule to user ids, takes when the request names
//! no `channel` and no `route` of its own. `[routing.default]` serves every
//! tenant, `[routing.tenants.NAME]` one tenant instead. Checked at start
//! (errors name the key, as `routing.default.route[1].on[0]`) and resolved
//! again per request, for the caller's tenant.

use std::collections::{BTreeMap, HashMap};

use herald_core::ChannelType;
use herald_core::TenantId;
use herald_core::route::StepSpec;
use serde::{Deserialize, Serialize};

use crate::config::RemindersConfig;
use crate::http::route_steps::{self, Channels};

/// `[routing]` of the configuration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RoutingConfig {
    /// Every tenant's route (`[routing.default]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<DefaultRoute>,
    /// A tenant's own, by name (`[routing.tenants.shop]`), instead of the
    /// default.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tenants: BTreeMap<String, DefaultRoute>,
}

/// One default route.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DefaultRoute {
    /// The steps, as a request's `route` gives them.
    pub route: Vec<StepSpec>,
}

impl RoutingConfig {
    /// Every route with the key it is under.
    fn all(&self) -> impl Iterator<Item = (String, &DefaultRoute)> {
        self.default
            .iter()
            .map(|d| ("routing.default.route".to_string(), d))
            .chain(
                self.tenants
                    .iter()
                    .map(|(t, d)| (format!("routing.tenants.{t}.route"), d)),
            )
    }

    /// Checks every route against the configured channels: `type_of` gives
    /// the address type of a configured channel's kind (`Some(None)` for a
    /// webhook or log channel, `None` for no such channel; `configured`
    /// lists them). The error names the key.
    pub fn check(
        &self,
        reminders: &RemindersConfig,
        configured: &[String],
        type_of: impl Fn(&str) -> Option<Option<ChannelType>> + Sync,
    ) -> Result<(), String> {
        let has = |c: &str| type_of(c).is_some();
        let names = || configured.to_vec();
        let kind_type = |c: &str| type_of(c).flatten();
        let for_type = |t: ChannelType| reminders.channel_for_type(t, has);
        let channels = Channels {
            has: &has,
            names: &names,
            type_of: &kind_type,
            for_type: &for_type,
        };
        for (field, d) in self.all() {
            route_steps::resolve_specs(&field, d.route.clone(), (None, None), &channels).map_err(
                |e| {
                    let at = e.body.field.unwrap_or(field);
                    format!("{at}: {}", e.body.message)
                },
            )?;
        }
        Ok(())
    }
}

/// The default routes by tenant id, as the API reads them.
#[derive(Debug, Clone, Default)]
pub struct DefaultRoutes {
    /// Every tenant's.
    pub default: Option<Vec<StepSpec>>,
    /// A tenant's own.
    pub by_tenant: HashMap<TenantId, Vec<StepSpec>>,
}

impl DefaultRoutes {
    /// The route `tenant` takes when a request names none.
    pub fn of(&self, tenant: TenantId) -> Option<&[StepSpec]> {
        self.by_tenant
            .get(&tenant)
            .or(self.default.as_ref())
            .map(Vec::as_slice)
    }
}
