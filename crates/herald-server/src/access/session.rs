//! Console sessions: a cookie that stands for an API key, with no table.
//!
//! `herald_session=v2.<key id>.<expires ms>.<mac>`, where the MAC is an
//! HMAC-SHA256 keyed with the node's [`SessionSecret`] (never stored) over
//! the key id, the expiry and the key's stored hash. The secret is what makes
//! a cookie unforgeable: the stored hash is readable by whoever reads the
//! store, so it is only bound in, so that a session ends with its key (a
//! revoked or expired key is refused before its MAC is checked, and a key
//! stored again under the same id would not match). Key id `0` stands for the
//! admin key, bound to the admin key's hash (never stored either).
//!
//! A request authenticated by the cookie that changes state must also carry
//! `X-CSRF-Token`, an HMAC over the same fields under another label: a page
//! of another site can make the browser send the cookie, but cannot read the
//! token, which the console's pages carry in a `<meta>` tag.
//!
//! Version `v1` cookies were keyed with the stored hash alone; they are
//! refused as malformed, so an upgrade asks every console user to log in
//! again.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::Access;
use super::caller::Caller;
use super::keys::KeyError;
use super::secret::{PresentedKey, key_hash, same_hash, stored_hash};
use super::session_secret::SessionSecret;

/// The cookie's name.
pub const SESSION_COOKIE: &str = "herald_session";
/// The header a cookie-authenticated state change must carry.
pub const CSRF_HEADER: &str = "x-csrf-token";
/// How long a session lasts.
pub const SESSION_TTL_MS: i64 = 12 * 3600 * 1000;
/// The key id a session of the admin key carries.
pub const ADMIN_SESSION_ID: i64 = 0;

const VERSION: &str = "v2";

/// The fields of a session cookie, before its MAC has been checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionClaim {
    /// The stored key's id, [`ADMIN_SESSION_ID`] for the admin key.
    pub key_id: i64,
    pub expires_ms: i64,
    mac: [u8; 32],
}

/// Why a session cookie was not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    #[error("the console session is malformed")]
    Malformed,
    #[error("the console session has expired")]
    Expired,
    #[error("the console session's signature does not match")]
    BadSignature,
}

/// What a session's MACs are keyed with and bound to.
#[derive(Clone)]
pub struct SessionKeying {
    secret: SessionSecret,
    /// The stored hash of the key the session stands for (the admin key's
    /// hash for [`ADMIN_SESSION_ID`]).
    key_hash: [u8; 32],
}

impl SessionKeying {
    pub fn new(secret: &SessionSecret, key_hash: [u8; 32]) -> Self {
        Self {
            secret: secret.clone(),
            key_hash,
        }
    }

    fn mac(&self, label: &str, key_id: i64, expires_ms: i64) -> [u8; 32] {
        let fields = format!("herald-{label}|{VERSION}|{key_id}|{expires_ms}|");
        self.secret
            .mac(&[fields.as_bytes(), self.key_hash.as_slice()])
    }
}

/// The cookie value for key `key_id`, valid until `expires_ms`.
pub fn issue(keying: &SessionKeying, key_id: i64, expires_ms: i64) -> String {
    let sig = keying.mac("session", key_id, expires_ms);
    format!(
        "{VERSION}.{key_id}.{expires_ms}.{}",
        URL_SAFE_NO_PAD.encode(sig)
    )
}

impl SessionClaim {
    /// Reads a cookie value; says nothing yet about whether it is genuine.
    pub fn parse(value: &str) -> Result<SessionClaim, SessionError> {
        let mut parts = value.trim().split('.');
        let (Some(VERSION), Some(id), Some(exp), Some(sig), None) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return Err(SessionError::Malformed);
        };
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(id) || !digits(exp) {
            return Err(SessionError::Malformed);
        }
        let key_id = id.parse().map_err(|_| SessionError::Malformed)?;
        let expires_ms = exp.parse().map_err(|_| SessionError::Malformed)?;
        let mac: [u8; 32] = URL_SAFE_NO_PAD
            .decode(sig)
            .ok()
            .and_then(|b| b.try_into().ok())
            .ok_or(SessionError::Malformed)?;
        Ok(SessionClaim {
            key_id,
            expires_ms,
            mac,
        })
    }

    /// Whether the claim was issued with `keying` and is still valid at
    /// `now_ms`. The MAC is compared first and always.
    pub fn verify(&self, keying: &SessionKeying, now_ms: i64) -> Result<(), SessionError> {
        let want = keying.mac("session", self.key_id, self.expires_ms);
        if !same_hash(&want, &self.mac) {
            return Err(SessionError::BadSignature);
        }
        if self.expires_ms <= now_ms {
            return Err(SessionError::Expired);
        }
        Ok(())
    }

    /// The CSRF token of this session (once verified with `keying`).
    pub fn csrf_token(&self, keying: &SessionKeying) -> String {
        URL_SAFE_NO_PAD.encode(keying.mac("csrf", self.key_id, self.expires_ms))
    }

    /// Whether `presented` is this session's CSRF token, in constant time.
    pub fn csrf_matches(&self, keying: &SessionKeying, presented: Option<&str>) -> bool {
        let want = keying.mac("csrf", self.key_id, self.expires_ms);
        let got = presented
            .and_then(|p| URL_SAFE_NO_PAD.decode(p.trim()).ok())
            .unwrap_or_default();
        same_hash(&want, &got)
    }
}

/// The value of cookie `name` in a `Cookie` header.
pub fn cookie_value<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header.split(';').find_map(|pair| {
        let (k, v) = pair.trim().split_once('=')?;
        (k.trim() == name).then_some(v.trim())
    })
}

/// The `Set-Cookie` value that starts a session (`secure` behind TLS).
pub fn set_cookie(value: &str, secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!(
        "{SESSION_COOKIE}={value}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}{secure}",
        SESSION_TTL_MS / 1000
    )
}

/// The `Set-Cookie` value that ends a session.
pub fn clear_cookie(secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("{SESSION_COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0{secure}")
}

/// A verified session: who it stands for, and what its CSRF token is.
pub struct Session {
    pub caller: Caller,
    claim: SessionClaim,
    keying: SessionKeying,
}

impl Session {
    /// The token state changes must carry in `X-CSRF-Token`.
    pub fn csrf_token(&self) -> String {
        self.claim.csrf_token(&self.keying)
    }

    pub fn csrf_matches(&self, presented: Option<&str>) -> bool {
        self.claim.csrf_matches(&self.keying, presented)
    }

    pub fn expires_ms(&self) -> i64 {
        self.claim.expires_ms
    }
}

impl Access {
    /// A new session cookie value for `token` (the admin key or an API
    /// key), with the caller it stands for; `Invalid` for a key that opens
    /// nothing (and on a node without sessions: open mode).
    pub async fn login(&self, token: &str, now_ms: i64) -> Result<(String, Caller), KeyError> {
        let secret = self.session_secret.as_ref().ok_or(KeyError::Invalid)?;
        let token = token.trim();
        let expires = now_ms.saturating_add(SESSION_TTL_MS);
        if let Some(admin) = &self.admin_hash
            && same_hash(&key_hash(token), admin)
        {
            let keying = SessionKeying::new(secret, *admin);
            return Ok((
                issue(&keying, ADMIN_SESSION_ID, expires),
                Caller::admin_key(),
            ));
        }
        let (Some(key), Some(hash)) = (PresentedKey::parse(token), stored_hash(token)) else {
            return Err(KeyError::Invalid);
        };
        let caller = self.keys.caller(key, now_ms).await?;
        let keying = SessionKeying::new(secret, hash);
        Ok((issue(&keying, key.id, expires), caller))
    }

    /// The session a cookie value stands for at `now_ms`: its key is still
    /// valid, and its MAC checks out under the node's secret and that key's
    /// stored hash.
    pub async fn session(&self, value: &str, now_ms: i64) -> Result<Session, KeyError> {
        let secret = self.session_secret.as_ref().ok_or(KeyError::Invalid)?;
        let claim = SessionClaim::parse(value).map_err(|e| {
            tracing::debug!(error = %e, "session refused");
            KeyError::Invalid
        })?;
        let (caller, key_hash) = if claim.key_id == ADMIN_SESSION_ID {
            let admin = self.admin_hash.ok_or(KeyError::Invalid)?;
            (Caller::admin_key(), admin)
        } else {
            self.keys.session_key(claim.key_id, now_ms).await?
        };
        let keying = SessionKeying::new(secret, key_hash);
        claim.verify(&keying, now_ms).map_err(|e| {
            tracing::debug!(key_id = claim.key_id, error = %e, "session refused");
            KeyError::Invalid
        })?;
        Ok(Session {
            caller,
            claim,
            keying,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::secret::key_hash;
    use crate::access::session_secret::hmac;

    const NOW: i64 = 1_800_000_000_000;

    fn keying(secret: &str, key: &str) -> SessionKeying {
        SessionKeying::new(&SessionSecret::from_admin_key(secret), key_hash(key))
    }

    #[test]
    fn an_issued_session_verifies_until_it_expires() {
        let k = keying("server", "s");
        let value = issue(&k, 7, NOW + SESSION_TTL_MS);
        assert!(value.starts_with("v2.7."), "{value}");
        let claim = SessionClaim::parse(&value).unwrap();
        assert_eq!((claim.key_id, claim.expires_ms), (7, NOW + SESSION_TTL_MS));
        assert_eq!(claim.verify(&k, NOW), Ok(()));
        assert_eq!(
            claim.verify(&k, NOW + SESSION_TTL_MS),
            Err(SessionError::Expired)
        );
    }

    #[test]
    fn another_secret_another_key_or_changed_fields_do_not_verify() {
        let k = keying("server", "s");
        let value = issue(&k, 7, NOW + 1000);
        let claim = SessionClaim::parse(&value).unwrap();
        // Another node secret (rotated), or a key whose hash changed.
        for other in [keying("rotated", "s"), keying("server", "t")] {
            assert_eq!(claim.verify(&other, NOW), Err(SessionError::BadSignature));
        }
        // Longer expiry or another key id with the same MAC.
        let sig = value.rsplit('.').next().unwrap();
        for forged in [
            format!("v2.7.{}.{sig}", NOW + 10_000),
            format!("v2.8.{}.{sig}", NOW + 1000),
        ] {
            let c = SessionClaim::parse(&forged).unwrap();
            assert_eq!(c.verify(&k, NOW), Err(SessionError::BadSignature));
        }
    }

    /// The weakness this guards against: a MAC keyed with the stored hash
    /// alone could be made by anyone who read the store. Such a cookie
    /// opens nothing now.
    #[test]
    fn a_cookie_made_from_the_stored_hash_alone_is_refused() {
        let stored = key_hash("s");
        let expires = NOW + 1000;
        let old_style = hmac(
            &stored,
            &[format!("herald-session|v2|7|{expires}").as_bytes()],
        );
        for version in ["v1", "v2"] {
            let forged = format!(
                "{version}.7.{expires}.{}",
                URL_SAFE_NO_PAD.encode(old_style)
            );
            let verified =
                SessionClaim::parse(&forged).and_then(|c| c.verify(&keying("server", "s"), NOW));
            assert!(verified.is_err(), "{forged}");
        }
    }

    #[test]
    fn malformed_values_are_refused() {
        for v in [
            "",
            "v1",
            "v1.1.2.abc",
            "v2.x.2.abc",
            "v2.1.-2.abc",
            "v2.1.2.!!",
            "v2.1.2.YWJj",
            "v2.1.2.abc.d",
            "v2.99999999999999999999.2.abc",
        ] {
            assert_eq!(SessionClaim::parse(v), Err(SessionError::Malformed), "{v}");
        }
    }

    #[test]
    fn the_csrf_token_belongs_to_its_session() {
        let k = keying("server", "s");
        let a = SessionClaim::parse(&issue(&k, 7, NOW + 1000)).unwrap();
        let b = SessionClaim::parse(&issue(&k, 7, NOW + 2000)).unwrap();
        let token = a.csrf_token(&k);
        assert!(a.csrf_matches(&k, Some(&token)));
        assert!(!a.csrf_matches(&k, None));
        assert!(!a.csrf_matches(&k, Some("")));
        assert!(!a.csrf_matches(&k, Some("not base64!")));
        assert!(!b.csrf_matches(&k, Some(&token)));
        assert!(!a.csrf_matches(&keying("server", "t"), Some(&token)));
        assert!(!a.csrf_matches(&keying("rotated", "s"), Some(&token)));
        // The token is not the cookie's MAC.
        assert!(!issue(&k, 7, NOW + 1000).ends_with(&token));
    }

    #[test]
    fn cookies_are_read_and_written() {
        assert_eq!(
            cookie_value("a=1; herald_session=v1.2.3.x ; b=2", SESSION_COOKIE),
            Some("v1.2.3.x")
        );
        assert_eq!(cookie_value("herald_sessionx=1", SESSION_COOKIE), None);
        let c = set_cookie("v", true);
        for part in [
            "herald_session=v",
            "HttpOnly",
            "SameSite=Strict",
            "Path=/",
            "Max-Age=43200",
            "Secure",
        ] {
            assert!(c.contains(part), "{c}");
        }
        assert!(!set_cookie("v", false).contains("Secure"));
        assert!(clear_cookie(false).contains("Max-Age=0"));
    }
}
