//! API keys kept in the store, read through a short per-node cache.
//!
//! Every request with an API key needs its record, and a store round trip
//! per request would cost more than the request itself. So each node keeps
//! the records it read for at most [`KEY_CACHE_TTL`]: a revoke written by
//! any node reaches every node's next read within that time (the issue's
//! bound is 2 s). Expiry is checked against the request's clock on every
//! request, cached or not. Tenant names never change, so they are kept once
//! read.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use herald_core::TenantId;
use herald_store::{AccessStore, ApiKeyRecord, StoreError};

use super::caller::Caller;
use super::keys::{KeyError, KeyResolver};
use super::scope::{Scope, Scopes};
use super::secret::PresentedKey;

/// Longest a node trusts a key record it read.
pub const KEY_CACHE_TTL: Duration = Duration::from_secs(1);

/// Most key ids cached at once: unknown ids are cached too (so a flood of
/// made-up keys costs one read per id and second), and this bounds them.
const MAX_CACHED_KEYS: usize = 10_000;

/// A key record as read at one instant; `None`: no key has that id.
struct Cached {
    read_at: Instant,
    record: Option<Arc<ApiKeyRecord>>,
}

/// The store-backed [`KeyResolver`].
pub struct StoredKeys {
    store: Arc<dyn AccessStore>,
    ttl: Duration,
    keys: Mutex<HashMap<i64, Cached>>,
    /// Tenant names by id: a tenant is never renamed or removed.
    names: Mutex<HashMap<TenantId, String>>,
}

impl StoredKeys {
    pub fn new(store: Arc<dyn AccessStore>) -> Self {
        Self::with_ttl(store, KEY_CACHE_TTL)
    }

    /// With another cache lifetime (tests; `0` reads the store every time).
    pub fn with_ttl(store: Arc<dyn AccessStore>, ttl: Duration) -> Self {
        Self {
            store,
            ttl,
            keys: Mutex::new(HashMap::new()),
            names: Mutex::new(HashMap::new()),
        }
    }

    /// The record of key `id`, from the cache while it is fresh.
    async fn record(&self, id: i64) -> Result<Option<Arc<ApiKeyRecord>>, KeyError> {
        if let Some(c) = lock(&self.keys).get(&id)
            && c.read_at.elapsed() < self.ttl
        {
            return Ok(c.record.clone());
        }
        let read_at = Instant::now();
        let record = self
            .store
            .get_api_key(id)
            .await
            .map_err(unavailable)?
            .map(Arc::new);
        let mut keys = lock(&self.keys);
        if keys.len() >= MAX_CACHED_KEYS {
            let ttl = self.ttl;
            keys.retain(|_, c| c.read_at.elapsed() < ttl);
            if keys.len() >= MAX_CACHED_KEYS {
                keys.clear();
            }
        }
        keys.insert(
            id,
            Cached {
                read_at,
                record: record.clone(),
            },
        );
        Ok(record)
    }

    /// The name of tenant `id`, read once.
    async fn tenant_name(&self, id: TenantId) -> Result<String, KeyError> {
        if let Some(name) = lock(&self.names).get(&id) {
            return Ok(name.clone());
        }
        let all = self.store.tenants().await.map_err(unavailable)?;
        let mut names = lock(&self.names);
        names.extend(all);
        names.get(&id).cloned().ok_or_else(|| {
            // The store refers to tenants by id under a foreign key.
            KeyError::Unavailable(format!("key of tenant {id}, which has no name"))
        })
    }
}

#[async_trait]
impl KeyResolver for StoredKeys {
    async fn caller(&self, key: PresentedKey<'_>, now_ms: i64) -> Result<Caller, KeyError> {
        let Some(record) = self.record(key.id).await? else {
            return Err(KeyError::Invalid);
        };
        // The hash is compared first and always, so the time taken does not
        // tell a revoked key from a wrong secret.
        let matches = key.matches(&record.hash);
        let revoked = record.revoked_at.is_some();
        let expired = record.expires_at.is_some_and(|at| at <= now_ms);
        if !matches || revoked || expired {
            tracing::debug!(key_id = key.id, matches, revoked, expired, "key refused");
            return Err(KeyError::Invalid);
        }
        let tenant_name = self.tenant_name(record.tenant).await?;
        Ok(Caller::api_key(
            record.tenant,
            tenant_name,
            record.id,
            record.name.clone(),
            known_scopes(&record),
        ))
    }

    async fn session_key(&self, key_id: i64, now_ms: i64) -> Result<(Caller, [u8; 32]), KeyError> {
        let Some(record) = self.record(key_id).await? else {
            return Err(KeyError::Invalid);
        };
        let revoked = record.revoked_at.is_some();
        let expired = record.expires_at.is_some_and(|at| at <= now_ms);
        let hash = record.hash;
        if revoked || expired {
            tracing::debug!(key_id, revoked, expired, "session of a refused key");
            return Err(KeyError::Invalid);
        }
        let tenant_name = self.tenant_name(record.tenant).await?;
        let caller = Caller::api_key(
            record.tenant,
            tenant_name,
            record.id,
            record.name.clone(),
            known_scopes(&record),
        );
        Ok((caller, hash))
    }

    async fn tenant(&self, name: &str) -> Result<Option<TenantId>, KeyError> {
        if let Some(id) = lock(&self.names)
            .iter()
            .find_map(|(id, n)| (n == name).then_some(*id))
        {
            return Ok(Some(id));
        }
        let id = self
            .store
            .tenant_id(name, false)
            .await
            .map_err(unavailable)?;
        if let Some(id) = id {
            lock(&self.names).insert(id, name.to_string());
        }
        Ok(id)
    }

    fn forget(&self, key_id: i64) {
        lock(&self.keys).remove(&key_id);
    }
}

/// The scopes of a record this version knows; a name it does not (written
/// by a later version) grants nothing here.
fn known_scopes(record: &ApiKeyRecord) -> Scopes {
    record
        .scopes
        .iter()
        .filter_map(|n| {
            let s = Scope::parse(n);
            if s.is_none() {
                tracing::warn!(key_id = record.id, scope = %n, "key holds an unknown scope");
            }
            s
        })
        .collect()
}

fn unavailable(e: StoreError) -> KeyError {
    KeyError::Unavailable(e.to_string())
}

/// The cache stays usable after a panic elsewhere: its entries are whole
/// values, never half-written.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use herald_core::DEFAULT_TENANT;
    use herald_store::{NewApiKey, Store};

    use super::*;
    use crate::access::secret::KeySecret;

    const NOW: i64 = 1_800_000_000_000;

    async fn store() -> Arc<dyn Store> {
        herald_store::open("sqlite::memory:", &Default::default())
            .await
            .expect("sqlite store")
    }

    /// Stores a key of tenant `shop` named `ci` and returns it whole.
    async fn make_key(store: &Arc<dyn Store>, scopes: &[&str], expires_at: Option<i64>) -> String {
        let tenant = store.tenant_id("shop", true).await.unwrap().unwrap();
        let secret = KeySecret::generate();
        let rec = store
            .create_api_key(NewApiKey {
                tenant,
                name: Some("ci".into()),
                scopes: scopes.iter().map(|s| s.to_string()).collect(),
                hash: secret.hash(),
                created_at: NOW,
                expires_at,
            })
            .await
            .unwrap();
        secret.key(rec.id)
    }

    async fn resolve(keys: &StoredKeys, key: &str, now: i64) -> Result<Caller, KeyError> {
        let p = PresentedKey::parse(key).expect("a key");
        keys.caller(p, now).await
    }

    #[tokio::test]
    async fn a_stored_key_is_its_tenant_with_its_scopes() {
        let store = store().await;
        let key = make_key(&store, &["write", "read"], None).await;
        let keys = StoredKeys::new(store.clone());
        let c = resolve(&keys, &key, NOW).await.unwrap();
        assert_eq!(c.tenant_name, "shop");
        assert_ne!(c.tenant, DEFAULT_TENANT);
        assert_eq!(c.key_name.as_deref(), Some("ci"));
        assert_eq!(c.scopes.names(), ["read", "write"]);
        assert!(!c.admin);
        let admin = make_key(&store, &["admin"], None).await;
        assert!(resolve(&keys, &admin, NOW).await.unwrap().admin);

        assert_eq!(keys.tenant("shop").await, Ok(Some(c.tenant)));
        assert_eq!(keys.tenant("default").await, Ok(Some(DEFAULT_TENANT)));
        assert_eq!(keys.tenant("nobody").await, Ok(None));
    }

    #[tokio::test]
    async fn wrong_secrets_and_unknown_ids_are_refused() {
        let store = store().await;
        let key = make_key(&store, &["read"], None).await;
        let keys = StoredKeys::new(store.clone());
        let id = PresentedKey::parse(&key).unwrap().id;
        // Right id, another secret.
        let forged = KeySecret::generate().key(id);
        assert_eq!(resolve(&keys, &forged, NOW).await, Err(KeyError::Invalid));
        // A secret one character short.
        assert_eq!(
            resolve(&keys, &key[..key.len() - 1], NOW).await,
            Err(KeyError::Invalid)
        );
        // The secret of this key under another id.
        let moved = key.replacen(&format!("hrk_{id}_"), &format!("hrk_{}_", id + 1), 1);
        assert_eq!(resolve(&keys, &moved, NOW).await, Err(KeyError::Invalid));
        // Still good after all of that.
        assert!(resolve(&keys, &key, NOW).await.is_ok());
        // Malformed tokens never reach the resolver.
        for t in ["hrk_", "hrk_x_abc", "hrk_1_a=b", "Bearer"] {
            assert!(PresentedKey::parse(t).is_none(), "{t}");
        }
    }

    #[tokio::test]
    async fn an_expired_key_is_refused_from_its_expiry_on_even_when_cached() {
        let store = store().await;
        let key = make_key(&store, &["read"], Some(NOW + 1_000)).await;
        let keys = StoredKeys::new(store.clone());
        assert!(resolve(&keys, &key, NOW).await.is_ok());
        assert!(resolve(&keys, &key, NOW + 999).await.is_ok());
        assert_eq!(
            resolve(&keys, &key, NOW + 1_000).await,
            Err(KeyError::Invalid)
        );
    }

    #[tokio::test]
    async fn a_revoke_on_another_node_holds_within_the_cache_lifetime() {
        let store = store().await;
        let key = make_key(&store, &["read"], None).await;
        let id = PresentedKey::parse(&key).unwrap().id;
        let here = StoredKeys::new(store.clone());
        let there = StoredKeys::new(store.clone());
        assert!(resolve(&here, &key, NOW).await.is_ok());
        assert!(resolve(&there, &key, NOW).await.is_ok());
        let revoked_at = Instant::now();
        store.revoke_api_key(id, NOW).await.unwrap().unwrap();
        // The node that revoked forgets at once.
        here.forget(id);
        assert_eq!(resolve(&here, &key, NOW).await, Err(KeyError::Invalid));
        // Another node may still take it from its cache, but not for long.
        loop {
            match resolve(&there, &key, NOW).await {
                Err(KeyError::Invalid) => break,
                Ok(_) => {
                    assert!(
                        revoked_at.elapsed() <= KEY_CACHE_TTL + Duration::from_millis(200),
                        "a revoked key still opens after {:?}",
                        revoked_at.elapsed()
                    );
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => panic!("{e}"),
            }
        }
    }

    #[tokio::test]
    async fn without_a_cache_every_request_reads_the_store() {
        let store = store().await;
        let key = make_key(&store, &["read"], None).await;
        let keys = StoredKeys::with_ttl(store.clone(), Duration::ZERO);
        assert!(resolve(&keys, &key, NOW).await.is_ok());
        let id = PresentedKey::parse(&key).unwrap().id;
        store.revoke_api_key(id, NOW).await.unwrap();
        assert_eq!(resolve(&keys, &key, NOW).await, Err(KeyError::Invalid));
    }
}
