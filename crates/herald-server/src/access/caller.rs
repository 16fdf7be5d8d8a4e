//! Who is asking: the one value every handler reads to know the tenant and
//! what the request may do.

use herald_core::{DEFAULT_TENANT, DEFAULT_TENANT_NAME, TenantId};

use super::scope::{Scope, Scopes};

/// The authenticated caller, set on every request (except `/healthz` and
/// `/readyz`) by the access guard as a request extension:
/// `Extension<Caller>` in a handler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// Whose data the request reads and writes.
    pub tenant: TenantId,
    pub tenant_name: String,
    /// The stored key's id; `None` for the admin key and in open mode.
    pub key_id: Option<i64>,
    /// The stored key's name, `"admin"` for the admin key, `None` in open mode.
    pub key_name: Option<String>,
    pub scopes: Scopes,
    /// May see every tenant (keys, audit) and act for one with
    /// `X-Herald-Tenant`.
    pub admin: bool,
}

/// What the admin key is called in audit entries.
pub const ADMIN_KEY_NAME: &str = "admin";

impl Caller {
    /// Open mode: tenant `default` with every scope.
    pub fn open() -> Caller {
        Caller {
            tenant: DEFAULT_TENANT,
            tenant_name: DEFAULT_TENANT_NAME.to_string(),
            key_id: None,
            key_name: None,
            scopes: Scopes::all(),
            admin: true,
        }
    }

    /// The admin key: every scope, as tenant `default` until the request
    /// names another.
    pub fn admin_key() -> Caller {
        Caller {
            key_name: Some(ADMIN_KEY_NAME.to_string()),
            ..Caller::open()
        }
    }

    /// A stored API key of `tenant` holding `scopes`.
    pub fn api_key(
        tenant: TenantId,
        tenant_name: impl Into<String>,
        key_id: i64,
        key_name: Option<String>,
        scopes: Scopes,
    ) -> Caller {
        Caller {
            tenant,
            tenant_name: tenant_name.into(),
            key_id: Some(key_id),
            key_name,
            admin: scopes.contains(Scope::Admin),
            scopes,
        }
    }

    pub fn may(&self, scope: Scope) -> bool {
        self.scopes.contains(scope)
    }
}
