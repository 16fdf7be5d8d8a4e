//! The token vault of a deployment: channel access tokens kept in the
//! [`Store`], so every node uses the one token and only one node at a time
//! refreshes it.
//!
//! [`StoreVault`] maps [`TokenVault`] onto the store: tokens live in its
//! channel token table (`get_channel_token` / `put_channel_token` /
//! `expire_channel_token`), and the refresh lock of `key` is the store's named
//! lease `token:{key}`, so it works across nodes on a shared store and expires
//! by itself if its holder dies mid-refresh.

use std::sync::Arc;

use async_trait::async_trait;
use herald_channels::{StoredToken, TokenVault, VaultError};
use herald_core::{Clock, SystemClock};
use herald_store::{ChannelToken, Holder, Store, StoreError};

/// The named lease that serializes refreshes of the token `key`.
pub fn token_lease_name(key: &str) -> String {
    format!("token:{key}")
}

/// A [`TokenVault`] over the store.
#[derive(Clone)]
pub struct StoreVault {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for StoreVault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreVault").finish_non_exhaustive()
    }
}

impl StoreVault {
    /// A vault on `store`, stamping rows with the system clock.
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self::with_clock(store, Arc::new(SystemClock))
    }

    /// A vault on `store` whose `updated_at` stamps come from `clock`.
    pub fn with_clock(store: Arc<dyn Store>, clock: Arc<dyn Clock>) -> Self {
        StoreVault { store, clock }
    }
}

fn vault_error(what: &str, key: &str, e: StoreError) -> VaultError {
    // Store errors never carry the token itself: statements bind it as a parameter.
    VaultError(format!("{what} {key:?}: {e}"))
}

#[async_trait]
impl TokenVault for StoreVault {
    async fn load(&self, key: &str) -> Result<Option<StoredToken>, VaultError> {
        let token = self
            .store
            .get_channel_token(key)
            .await
            .map_err(|e| vault_error("loading token", key, e))?;
        Ok(token.map(|t| StoredToken {
            token: t.token,
            expires_at: t.expires_at,
            fetched_at: t.fetched_at,
        }))
    }

    async fn save(&self, key: &str, token: &StoredToken) -> Result<(), VaultError> {
        let row = ChannelToken {
            token: token.token.clone(),
            expires_at: token.expires_at,
            fetched_at: token.fetched_at,
            updated_at: self.clock.now_ms(),
        };
        self.store
            .put_channel_token(key, &row)
            .await
            .map_err(|e| vault_error("saving token", key, e))
    }

    async fn expire_if(&self, key: &str, token: &str, now: i64) -> Result<bool, VaultError> {
        self.store
            .expire_channel_token(key, token, now)
            .await
            .map_err(|e| vault_error("expiring token", key, e))
    }

    async fn try_lock(
        &self,
        key: &str,
        holder: &str,
        now: i64,
        ttl_ms: i64,
    ) -> Result<bool, VaultError> {
        let lease = self
            .store
            .acquire_lease(&token_lease_name(key), &vault_holder(holder), now, ttl_ms)
            .await
            .map_err(|e| vault_error("locking token", key, e))?;
        Ok(lease.is_some())
    }

    async fn unlock(&self, key: &str, holder: &str) -> Result<(), VaultError> {
        self.store
            .release_lease(&token_lease_name(key), &vault_holder(holder))
            .await
            .map_err(|e| vault_error("unlocking token", key, e))
    }
}

/// Token locks are held per node id, whatever process asks: the channel's
/// token cache names its holder, and a lock outlives no fetch.
fn vault_holder(holder: &str) -> Holder {
    Holder::new(holder, 0)
}

#[cfg(test)]
mod tests {
    use herald_core::ManualClock;
    use herald_store::StoreOptions;
    use herald_store::sqlite::SqliteStore;

    use super::*;

    async fn memory_store() -> Arc<dyn Store> {
        Arc::new(
            SqliteStore::open_memory(&StoreOptions::default())
                .await
                .expect("open in-memory store"),
        )
    }

    fn tok(value: &str, expires_at: i64) -> StoredToken {
        StoredToken {
            token: value.into(),
            expires_at,
            fetched_at: expires_at - 7_200_000,
        }
    }

    #[tokio::test]
    async fn tokens_round_trip_through_the_store() {
        let store = memory_store().await;
        let clock = ManualClock::new(5_000);
        let v = StoreVault::with_clock(store.clone(), Arc::new(clock.clone()));
        assert_eq!(v.load("wx").await.unwrap(), None);
        v.save("wx", &tok("first", 10_000_000)).await.unwrap();
        assert_eq!(v.load("wx").await.unwrap(), Some(tok("first", 10_000_000)));
        // The row carries the vault's clock; another vault on the store sees it.
        let row = store.get_channel_token("wx").await.unwrap().unwrap();
        assert_eq!(row.updated_at, 5_000);
        let other = StoreVault::new(store.clone());
        assert_eq!(
            other.load("wx").await.unwrap(),
            Some(tok("first", 10_000_000))
        );
        clock.advance(1_000);
        v.save("wx", &tok("second", 20_000_000)).await.unwrap();
        assert_eq!(
            other.load("wx").await.unwrap(),
            Some(tok("second", 20_000_000))
        );
        assert_eq!(
            store
                .get_channel_token("wx")
                .await
                .unwrap()
                .unwrap()
                .updated_at,
            6_000
        );
        assert_eq!(v.load("wecom").await.unwrap(), None);
    }

    #[tokio::test]
    async fn expire_if_only_touches_the_token_that_failed() {
        let v = StoreVault::new(memory_store().await);
        assert!(!v.expire_if("k", "new", 5).await.unwrap());
        v.save("k", &tok("new", 10_000)).await.unwrap();
        assert!(!v.expire_if("k", "old", 5).await.unwrap());
        assert_eq!(v.load("k").await.unwrap().unwrap().expires_at, 10_000);
        assert!(v.expire_if("k", "new", 5).await.unwrap());
        assert_eq!(v.load("k").await.unwrap().unwrap().expires_at, 5);
        // Never later than it was.
        assert!(v.expire_if("k", "new", 50).await.unwrap());
        assert_eq!(v.load("k").await.unwrap().unwrap().expires_at, 5);
    }

    #[tokio::test]
    async fn one_holder_at_a_time_until_expiry() {
        let store = memory_store().await;
        let v = StoreVault::new(store.clone());
        assert!(v.try_lock("k", "a", 0, 100).await.unwrap());
        assert!(!v.try_lock("k", "b", 50, 100).await.unwrap());
        // Another key is another lock.
        assert!(v.try_lock("k2", "b", 50, 100).await.unwrap());
        assert!(v.try_lock("k", "a", 50, 100).await.unwrap());
        assert!(v.try_lock("k", "b", 151, 100).await.unwrap());
        v.unlock("k", "a").await.unwrap();
        assert!(!v.try_lock("k", "a", 160, 100).await.unwrap());
        v.unlock("k", "b").await.unwrap();
        assert!(v.try_lock("k", "a", 160, 100).await.unwrap());
        // The lock is the store's named lease.
        let lease = store
            .acquire_lease(&token_lease_name("k"), &vault_holder("a"), 170, 100)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(lease.holder, "a");
        assert!(
            store
                .acquire_lease("token:k", &vault_holder("z"), 171, 100)
                .await
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn store_errors_become_vault_errors() {
        let e = vault_error(
            "loading token",
            "wx",
            StoreError::unavailable("disk on fire"),
        );
        assert_eq!(
            e.to_string(),
            "token vault: loading token \"wx\": store unavailable: disk on fire"
        );
    }

    #[test]
    fn debug_shows_no_token() {
        let t = ChannelToken {
            token: "s3cret".into(),
            expires_at: 1,
            fetched_at: 0,
            updated_at: 0,
        };
        assert!(!format!("{t:?}").contains("s3cret"));
    }
}
