//! Where access tokens live between nodes.
//!
//! Providers allow few token fetches (WeChat: 2000 a day) and a new fetch can
//! invalidate the previous token, so a deployment keeps **one** token per
//! channel in the store, and one node at a time refreshes it under a named
//! lease. Channels see that through [`TokenVault`]; the engine implements it
//! over the `Store`, and [`MemoryVault`] serves single-process tests.

use std::collections::HashMap;

use async_trait::async_trait;
use parking_lot::Mutex;

/// A token as stored: the secret value and when it stops being valid.
#[derive(Clone, PartialEq, Eq)]
pub struct StoredToken {
    pub token: String,
    /// Unix ms.
    pub expires_at: i64,
    /// Unix ms the provider issued it.
    pub fetched_at: i64,
}

impl std::fmt::Debug for StoredToken {
    // Tokens are credentials: never print them.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredToken")
            .field("token", &"<redacted>")
            .field("expires_at", &self.expires_at)
            .field("fetched_at", &self.fetched_at)
            .finish()
    }
}

/// A vault failure, as text: the channel turns it into a retryable outcome.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("token vault: {0}")]
pub struct VaultError(pub String);

/// Shared token storage with a refresh lock. `key` names the token (one per
/// channel and credential), `holder` names the node asking.
#[async_trait]
pub trait TokenVault: Send + Sync + 'static {
    /// The stored token, valid or not.
    async fn load(&self, key: &str) -> Result<Option<StoredToken>, VaultError>;
    /// Replaces the stored token.
    async fn save(&self, key: &str, token: &StoredToken) -> Result<(), VaultError>;
    /// Marks the stored token expired at `now`, but only if it is still
    /// `token`: a node that saw a token fail must not throw away the fresh one
    /// another node just fetched. Returns whether it did.
    async fn expire_if(&self, key: &str, token: &str, now: i64) -> Result<bool, VaultError>;
    /// Takes the refresh lock for `key` for `ttl_ms` if it is free, expired or
    /// already `holder`'s. Returns whether `holder` has it.
    async fn try_lock(
        &self,
        key: &str,
        holder: &str,
        now: i64,
        ttl_ms: i64,
    ) -> Result<bool, VaultError>;
    /// Gives the refresh lock back early.
    async fn unlock(&self, key: &str, holder: &str) -> Result<(), VaultError>;
}

/// A vault in process memory: one node, or tests.
#[derive(Default)]
pub struct MemoryVault {
    tokens: Mutex<HashMap<String, StoredToken>>,
    locks: Mutex<HashMap<String, (String, i64)>>,
}

impl MemoryVault {
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl TokenVault for MemoryVault {
    async fn load(&self, key: &str) -> Result<Option<StoredToken>, VaultError> {
        Ok(self.tokens.lock().get(key).cloned())
    }

    async fn save(&self, key: &str, token: &StoredToken) -> Result<(), VaultError> {
        self.tokens.lock().insert(key.to_string(), token.clone());
        Ok(())
    }

    async fn expire_if(&self, key: &str, token: &str, now: i64) -> Result<bool, VaultError> {
        let mut tokens = self.tokens.lock();
        match tokens.get_mut(key) {
            Some(t) if t.token == token => {
                t.expires_at = t.expires_at.min(now);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn try_lock(
        &self,
        key: &str,
        holder: &str,
        now: i64,
        ttl_ms: i64,
    ) -> Result<bool, VaultError> {
        let mut locks = self.locks.lock();
        match locks.get(key) {
            Some((h, until)) if h != holder && *until > now => Ok(false),
            _ => {
                locks.insert(key.to_string(), (holder.to_string(), now + ttl_ms));
                Ok(true)
            }
        }
    }

    async fn unlock(&self, key: &str, holder: &str) -> Result<(), VaultError> {
        let mut locks = self.locks.lock();
        if locks.get(key).is_some_and(|(h, _)| h == holder) {
            locks.remove(key);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn expire_if_only_touches_the_token_that_failed() {
        let v = MemoryVault::new();
        let t = StoredToken {
            token: "new".into(),
            expires_at: 10_000,
            fetched_at: 0,
        };
        v.save("k", &t).await.unwrap();
        assert!(!v.expire_if("k", "old", 5).await.unwrap());
        assert_eq!(v.load("k").await.unwrap().unwrap().expires_at, 10_000);
        assert!(v.expire_if("k", "new", 5).await.unwrap());
        assert_eq!(v.load("k").await.unwrap().unwrap().expires_at, 5);
        assert!(!format!("{t:?}").contains("new"));
    }

    #[tokio::test]
    async fn one_holder_at_a_time_until_expiry() {
        let v = MemoryVault::new();
        assert!(v.try_lock("k", "a", 0, 100).await.unwrap());
        assert!(!v.try_lock("k", "b", 50, 100).await.unwrap());
        assert!(v.try_lock("k", "a", 50, 100).await.unwrap());
        assert!(v.try_lock("k", "b", 151, 100).await.unwrap());
        v.unlock("k", "a").await.unwrap();
        assert!(!v.try_lock("k", "a", 160, 100).await.unwrap());
        v.unlock("k", "b").await.unwrap();
        assert!(v.try_lock("k", "a", 160, 100).await.unwrap());
    }
}
