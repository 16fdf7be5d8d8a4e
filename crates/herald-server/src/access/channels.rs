//! Which tenants may use which channel (a channel's `tenants` setting).
//! For any other tenant the channel does not exist: creates that name it
//! are refused as for an unknown channel, and `GET /v1/channels` leaves it
//! out.

use std::collections::{HashMap, HashSet};

use herald_core::TenantId;

/// The channels limited to some tenants; a channel not here serves every
/// tenant.
#[derive(Debug, Clone, Default)]
pub struct ChannelTenants {
    only: HashMap<String, HashSet<TenantId>>,
}

impl ChannelTenants {
    /// Every channel serves every tenant.
    pub fn everyone() -> Self {
        Self::default()
    }

    /// Limits `channel` to `tenants` (ids resolved at start).
    pub fn limit(mut self, channel: &str, tenants: impl IntoIterator<Item = TenantId>) -> Self {
        self.only
            .insert(channel.to_string(), tenants.into_iter().collect());
        self
    }

    /// Whether `tenant` may use (and see) `channel`.
    pub fn serves(&self, channel: &str, tenant: TenantId) -> bool {
        self.only
            .get(channel)
            .is_none_or(|tenants| tenants.contains(&tenant))
    }

    /// Of `names`, those `tenant` may see, in their order.
    pub fn visible(&self, names: &[String], tenant: TenantId) -> Vec<String> {
        names
            .iter()
            .filter(|n| self.serves(n, tenant))
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limited_channel_serves_its_tenants_only() {
        let shop = TenantId(2);
        let crm = TenantId(3);
        let c = ChannelTenants::everyone().limit("mail", [shop]);
        assert!(c.serves("mail", shop));
        assert!(!c.serves("mail", crm));
        assert!(c.serves("log", crm));
        let names = vec!["log".to_string(), "mail".to_string()];
        assert_eq!(c.visible(&names, crm), ["log"]);
        assert_eq!(c.visible(&names, shop), ["log", "mail"]);
    }
}
