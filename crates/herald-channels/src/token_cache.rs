//! One provider access token per channel, shared by every node.
//!
//! Providers ration token fetches (WeChat: 2000 a day) and a fresh fetch can
//! invalidate the token other nodes are still using, so a token must be
//! fetched by one caller at a time in the whole deployment and then reused by
//! everyone until shortly before it expires. [`TokenCache`] does that in three
//! layers:
//!
//! 1. an in-memory copy, used while it has more than the refresh margin left;
//! 2. the shared [`TokenVault`], where another node may already have stored a
//!    fresh one;
//! 3. a fetch from the provider, made only by the holder of the vault's
//!    refresh lock, after checking the vault once more (double check). Inside
//!    the process a tokio mutex makes it single-flight, so hundreds of
//!    concurrent sends cause one fetch; a node that cannot get the lock polls
//!    the vault until the holder has stored the new token.
//!
//! When a provider rejects a token, [`TokenCache::invalidate`] expires it only
//! if it is still the cached one (compare-and-expire): a caller that saw an old
//! token fail must not throw away the fresh token another caller just fetched.
//!
//! Token values never reach logs: tracing fields are the key and expiry only.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use herald_core::{Clock, SystemClock};
use parking_lot::Mutex;

use crate::tokens::{StoredToken, TokenVault};

/// What a provider call made of the token it carried.
pub enum TokenUse<T> {
    /// An answer that does not depend on the token.
    Answered(T),
    /// The provider rejected the token; `T` is what to report if a fresh one
    /// is rejected too.
    Rejected(T),
}

/// Refresh a token once it has less than this left (5 minutes).
pub const DEFAULT_REFRESH_MARGIN_MS: i64 = 5 * 60 * 1000;
/// How long the vault's refresh lock is held at most, should its holder die.
const LOCK_TTL_MS: i64 = 30_000;

/// Tunables of a [`TokenCache`]; the defaults suit production.
#[derive(Clone)]
pub struct TokenCacheOptions {
    /// Where time comes from (tests move it by hand).
    pub clock: Arc<dyn Clock>,
    /// Refresh this long before expiry.
    pub refresh_margin_ms: i64,
    /// How often a node without the lock looks in the vault for the new token.
    pub poll_interval: Duration,
    /// How long it waits for another node's refresh before giving up.
    pub poll_timeout: Duration,
}

impl Default for TokenCacheOptions {
    fn default() -> Self {
        Self {
            clock: Arc::new(SystemClock),
            refresh_margin_ms: DEFAULT_REFRESH_MARGIN_MS,
            poll_interval: Duration::from_millis(150),
            poll_timeout: Duration::from_secs(5),
        }
    }
}

impl std::fmt::Debug for TokenCacheOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenCacheOptions")
            .field("refresh_margin_ms", &self.refresh_margin_ms)
            .field("poll_interval", &self.poll_interval)
            .field("poll_timeout", &self.poll_timeout)
            .finish()
    }
}

/// A token as a provider's token endpoint returned it.
pub struct FetchedToken {
    pub token: String,
    /// Seconds it is valid from now, as the provider said.
    pub expires_in_secs: i64,
}

/// Why no token could be had. The text never holds a token or a secret.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TokenError {
    /// The token endpoint said "slow down" (quota or frequency limit).
    #[error("token endpoint throttled: {0}")]
    Throttled(String),
    /// Anything else: network, provider error, vault trouble, waiting too long.
    #[error("cannot get an access token: {0}")]
    Failed(String),
}

/// What the fetch closure is told about the refresh it is asked for.
#[derive(Clone, Default)]
pub struct FetchHint {
    /// The token the provider last rejected, if this refresh follows a
    /// rejection. A provider that hands out the same token while it is valid
    /// (WeChat's stable token) may need to be told to force a new one.
    pub rejected: Option<String>,
}

impl std::fmt::Debug for FetchHint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FetchHint")
            .field("rejected", &self.rejected.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// One channel's access token (see the module docs).
pub struct TokenCache {
    key: String,
    vault: Arc<dyn TokenVault>,
    node_id: String,
    opts: TokenCacheOptions,
    current: Mutex<Option<StoredToken>>,
    /// The last token the provider rejected, for [`FetchHint`].
    rejected: Mutex<Option<String>>,
    /// Single flight inside the process: one caller refreshes, the rest wait.
    flight: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for TokenCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenCache")
            .field("key", &self.key)
            .field("node_id", &self.node_id)
            .field("valid_until", &self.cached_valid_until())
            .finish()
    }
}

impl TokenCache {
    pub fn new(
        key: impl Into<String>,
        vault: Arc<dyn TokenVault>,
        node_id: impl Into<String>,
        opts: TokenCacheOptions,
    ) -> Self {
        Self {
            key: key.into(),
            vault,
            node_id: node_id.into(),
            opts,
            current: Mutex::new(None),
            rejected: Mutex::new(None),
            flight: tokio::sync::Mutex::new(()),
        }
    }

    /// The vault key this cache keeps its token under.
    pub fn key(&self) -> &str {
        &self.key
    }

    fn now(&self) -> i64 {
        self.opts.clock.now_ms()
    }

    /// Whether `t` needs no refresh yet. A token whose whole life is shorter
    /// than twice the margin refreshes at half-life instead, so a short-lived
    /// token is still used rather than re-fetched on every call.
    fn is_fresh(&self, t: &StoredToken, now: i64) -> bool {
        let life = (t.expires_at - t.fetched_at).max(0);
        let margin = self.opts.refresh_margin_ms.min(life / 2);
        now < t.expires_at - margin
    }

    fn fresh_in_memory(&self, now: i64) -> Option<String> {
        let cur = self.current.lock();
        cur.as_ref()
            .filter(|t| self.is_fresh(t, now))
            .map(|t| t.token.clone())
    }

    /// The in-memory token if it has not actually expired (margin ignored): a
    /// fallback when a refresh fails while the old token still works.
    fn unexpired_in_memory(&self, now: i64) -> Option<String> {
        let cur = self.current.lock();
        cur.as_ref()
            .filter(|t| now < t.expires_at)
            .map(|t| t.token.clone())
    }

    /// Unix ms the token in use stops being valid, from memory only.
    pub fn cached_valid_until(&self) -> Option<i64> {
        self.current.lock().as_ref().map(|t| t.expires_at)
    }

    /// Unix ms the token stops being valid: the in-memory copy, else the vault's.
    pub async fn valid_until(&self) -> Option<i64> {
        if let Some(t) = self.cached_valid_until() {
            return Some(t);
        }
        self.vault
            .load(&self.key)
            .await
            .ok()
            .flatten()
            .map(|t| t.expires_at)
    }

    /// A valid token, fetching one with `fetch` only if nobody has a fresh one.
    pub async fn get<F, Fut>(&self, fetch: F) -> Result<String, TokenError>
    where
        F: FnOnce(FetchHint) -> Fut,
        Fut: Future<Output = Result<FetchedToken, TokenError>>,
    {
        if let Some(t) = self.fresh_in_memory(self.now()) {
            return Ok(t);
        }
        let _flight = self.flight.lock().await;
        // Someone in this process may have refreshed while we waited.
        if let Some(t) = self.fresh_in_memory(self.now()) {
            return Ok(t);
        }
        let result = self.refresh(fetch).await;
        if result.is_err() {
            crate::metrics::token_refresh_failed(&self.key);
        }
        match result {
            Ok(t) => Ok(t),
            Err(e) => match self.unexpired_in_memory(self.now()) {
                Some(t) => {
                    tracing::warn!(key = %self.key, error = %e, "token refresh failed; the current token has not expired yet and stays in use");
                    Ok(t)
                }
                None => Err(e),
            },
        }
    }

    /// Looks in the vault, then fetches under the vault's lock or waits for
    /// the node that holds it. Called with the flight mutex held.
    async fn refresh<F, Fut>(&self, fetch: F) -> Result<String, TokenError>
    where
        F: FnOnce(FetchHint) -> Fut,
        Fut: Future<Output = Result<FetchedToken, TokenError>>,
    {
        if let Some(t) = self.load_fresh().await? {
            return Ok(t);
        }
        let deadline = tokio::time::Instant::now() + self.opts.poll_timeout;
        let mut fetch = Some(fetch);
        loop {
            let locked = self
                .vault
                .try_lock(&self.key, &self.node_id, self.now(), LOCK_TTL_MS)
                .await
                .map_err(|e| TokenError::Failed(e.to_string()))?;
            if locked {
                let result = self.refresh_locked(&mut fetch).await;
                if let Err(e) = self.vault.unlock(&self.key, &self.node_id).await {
                    tracing::warn!(key = %self.key, error = %e, "cannot release the token refresh lock; it expires by itself");
                }
                return result;
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(TokenError::Failed(format!(
                    "another node is refreshing token {} and has not stored it within {} ms",
                    self.key,
                    self.opts.poll_timeout.as_millis()
                )));
            }
            tokio::time::sleep(self.opts.poll_interval).await;
            if let Some(t) = self.load_fresh().await? {
                return Ok(t);
            }
        }
    }

    /// The vault's token if it is fresh, also kept in memory.
    async fn load_fresh(&self) -> Result<Option<String>, TokenError> {
        let stored = self
            .vault
            .load(&self.key)
            .await
            .map_err(|e| TokenError::Failed(e.to_string()))?;
        let now = self.now();
        match stored {
            Some(t) if self.is_fresh(&t, now) => {
                let token = t.token.clone();
                *self.current.lock() = Some(t);
                Ok(Some(token))
            }
            _ => Ok(None),
        }
    }

    async fn refresh_locked<F, Fut>(&self, fetch: &mut Option<F>) -> Result<String, TokenError>
    where
        F: FnOnce(FetchHint) -> Fut,
        Fut: Future<Output = Result<FetchedToken, TokenError>>,
    {
        // Double check: the previous lock holder may have stored one just now.
        if let Some(t) = self.load_fresh().await? {
            return Ok(t);
        }
        let Some(fetch) = fetch.take() else {
            return Err(TokenError::Failed("token fetch already attempted".into()));
        };
        let hint = FetchHint {
            rejected: self.rejected.lock().clone(),
        };
        let started = self.now();
        let fetched = fetch(hint).await?;
        if fetched.token.is_empty() {
            return Err(TokenError::Failed(
                "the token endpoint returned an empty token".into(),
            ));
        }
        let stored = StoredToken {
            token: fetched.token,
            fetched_at: started,
            expires_at: started.saturating_add(fetched.expires_in_secs.max(0).saturating_mul(1000)),
        };
        tracing::info!(key = %self.key, expires_at = stored.expires_at, "fetched a new access token");
        if let Err(e) = self.vault.save(&self.key, &stored).await {
            // Still usable here; other nodes will fetch their own.
            tracing::warn!(key = %self.key, error = %e, "cannot store the new access token in the vault");
        }
        let token = stored.token.clone();
        *self.current.lock() = Some(stored);
        *self.rejected.lock() = None;
        Ok(token)
    }

    /// Runs one provider call with a token. If the provider rejects that
    /// token, it is expired (only where it is still the token on record), a
    /// fresh one is fetched, and the call runs once more; a second rejection
    /// is the answer. `token` gets a token (through [`Self::get`]); `call`
    /// says whether its answer was a token rejection.
    pub async fn with_refresh<T, G, GF, C, CF>(
        &self,
        mut token: G,
        mut call: C,
    ) -> Result<T, TokenError>
    where
        G: FnMut() -> GF,
        GF: Future<Output = Result<String, TokenError>>,
        C: FnMut(String) -> CF,
        CF: Future<Output = TokenUse<T>>,
    {
        let mut refreshed = false;
        loop {
            let t = token().await?;
            match call(t.clone()).await {
                TokenUse::Answered(v) => return Ok(v),
                TokenUse::Rejected(v) => {
                    self.invalidate(&t).await;
                    if refreshed {
                        return Ok(v);
                    }
                    refreshed = true;
                }
            }
        }
    }

    /// The provider rejected `failed`: expire it here and in the vault, but
    /// only where it is still the token on record.
    pub async fn invalidate(&self, failed: &str) {
        let now = self.now();
        let expired_here = {
            let mut cur = self.current.lock();
            match cur.as_mut() {
                Some(t) if t.token == failed => {
                    t.expires_at = t.expires_at.min(now);
                    true
                }
                _ => false,
            }
        };
        if expired_here {
            *self.rejected.lock() = Some(failed.to_string());
        }
        match self.vault.expire_if(&self.key, failed, now).await {
            Ok(expired) => {
                if expired {
                    *self.rejected.lock() = Some(failed.to_string());
                }
                tracing::info!(key = %self.key, expired_here, expired_in_vault = expired, "provider rejected an access token");
            }
            Err(e) => {
                tracing::warn!(key = %self.key, error = %e, "cannot expire the rejected token in the vault");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemoryVault;
    use herald_core::ManualClock;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn cache(vault: Arc<dyn TokenVault>, node: &str, clock: &ManualClock) -> TokenCache {
        TokenCache::new(
            "t:k",
            vault,
            node,
            TokenCacheOptions {
                clock: Arc::new(clock.clone()),
                poll_interval: Duration::from_millis(10),
                ..TokenCacheOptions::default()
            },
        )
    }

    #[tokio::test]
    async fn refreshes_inside_the_margin_and_reuses_before() {
        let clock = ManualClock::new(1_000_000);
        let c = cache(Arc::new(MemoryVault::new()), "a", &clock);
        let n = AtomicUsize::new(0);
        let fetch = |_h: FetchHint| async {
            let i = n.fetch_add(1, Ordering::SeqCst);
            Ok(FetchedToken {
                token: format!("tok{i}"),
                expires_in_secs: 7200,
            })
        };
        assert_eq!(c.get(fetch).await.unwrap(), "tok0");
        clock.advance(7_200_000 - DEFAULT_REFRESH_MARGIN_MS - 1);
        assert_eq!(c.get(fetch).await.unwrap(), "tok0");
        clock.advance(2);
        assert_eq!(c.get(fetch).await.unwrap(), "tok1");
        assert_eq!(n.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_failed_refresh_falls_back_to_the_unexpired_token() {
        let clock = ManualClock::new(0);
        let c = cache(Arc::new(MemoryVault::new()), "a", &clock);
        let ok = |_h: FetchHint| async {
            Ok(FetchedToken {
                token: "t".into(),
                expires_in_secs: 7200,
            })
        };
        c.get(ok).await.unwrap();
        clock.advance(7_100_000);
        let bad = |_h: FetchHint| async { Err(TokenError::Failed("down".into())) };
        assert_eq!(c.get(bad).await.unwrap(), "t");
        clock.advance(200_000);
        assert!(c.get(bad).await.is_err());
    }

    #[tokio::test]
    async fn invalidate_passes_the_rejected_token_as_a_hint() {
        let clock = ManualClock::new(0);
        let c = cache(Arc::new(MemoryVault::new()), "a", &clock);
        let t = c
            .get(|h: FetchHint| async move {
                assert!(h.rejected.is_none());
                Ok(FetchedToken {
                    token: "one".into(),
                    expires_in_secs: 7200,
                })
            })
            .await
            .unwrap();
        c.invalidate(&t).await;
        let t2 = c
            .get(|h: FetchHint| async move {
                assert_eq!(h.rejected.as_deref(), Some("one"));
                Ok(FetchedToken {
                    token: "two".into(),
                    expires_in_secs: 7200,
                })
            })
            .await
            .unwrap();
        assert_eq!(t2, "two");
        assert!(!format!("{c:?}").contains("two"));
    }
}
