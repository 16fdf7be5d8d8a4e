//! The seam where stored API keys plug into authentication.
//!
//! The guard checks the admin key itself. Every other bearer token that has
//! the shape of an API key (`hrk_<id>_<secret>`) goes to a [`KeyResolver`].
//! Until keys live in the store, [`NoStoredKeys`] refuses them all, so the
//! admin key is the only key that works.

use async_trait::async_trait;
use herald_core::{DEFAULT_TENANT, DEFAULT_TENANT_NAME, TenantId};

use super::caller::Caller;
use super::secret::PresentedKey;

/// Why a key or a tenant name could not be turned into a caller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// Unknown, revoked or expired, or the secret does not match: `401`.
    /// Callers are not told which.
    #[error("the API key is unknown, revoked or expired")]
    Invalid,
    /// The keys could not be read (the store does not answer): `503`.
    #[error("the keys could not be read: {0}")]
    Unavailable(String),
}

/// Turns stored API keys into callers. The store-backed implementation
/// looks the key up by `key.id`, refuses a revoked or expired one, compares
/// with [`PresentedKey::matches`] (constant time), and caches a record for
/// at most 1 s so a revoke reaches every node within 2 s: see
/// [`super::StoredKeys`].
#[async_trait]
pub trait KeyResolver: Send + Sync + 'static {
    /// The caller `key` stands for at `now_ms` (Unix ms).
    async fn caller(&self, key: PresentedKey<'_>, now_ms: i64) -> Result<Caller, KeyError>;

    /// The tenant named `name`, for a request of the admin that names it in
    /// `X-Herald-Tenant`; `None` when there is no such tenant. `name` has
    /// passed the tenant name rule.
    async fn tenant(&self, name: &str) -> Result<Option<TenantId>, KeyError>;

    /// The caller key `key_id` stands for and its stored hash, for a console
    /// session signed with that hash; `Invalid` once the key is revoked or
    /// expired. Without stored keys, no session but the admin's exists.
    async fn session_key(
        &self,
        _key_id: i64,
        _now_ms: i64,
    ) -> Result<(Caller, [u8; 32]), KeyError> {
        Err(KeyError::Invalid)
    }

    /// Drops what is cached about key `key_id` (this node just revoked it),
    /// so the revoke holds here at once.
    fn forget(&self, _key_id: i64) {}
}

/// No stored keys: every API key is refused, and `default` is the only
/// tenant.
pub struct NoStoredKeys;

#[async_trait]
impl KeyResolver for NoStoredKeys {
    async fn caller(&self, _key: PresentedKey<'_>, _now_ms: i64) -> Result<Caller, KeyError> {
        Err(KeyError::Invalid)
    }

    async fn tenant(&self, name: &str) -> Result<Option<TenantId>, KeyError> {
        Ok((name == DEFAULT_TENANT_NAME).then_some(DEFAULT_TENANT))
    }
}
