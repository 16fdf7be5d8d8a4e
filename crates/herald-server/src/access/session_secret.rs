//! The server's own secret that signs console sessions and their CSRF
//! tokens. It is never in the store: whoever can read the store (a copy of
//! `herald.db`, a backup, `SELECT` on `api_keys`) holds every key's stored
//! hash, so a MAC keyed with a stored value could be forged by them.
//!
//! By default it is derived from the admin key, which a protected node
//! always has, which is never stored, and which every node of a cluster
//! shares, so sessions need no setting and work on any node. An operator
//! who wants to end every session without changing the admin key sets its
//! own variable (`[auth] session_secret_env`, default
//! `HERALD_SESSION_SECRET`); either way a change ends every session.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The shortest session secret accepted from its variable: a MAC key an
/// attacker must not guess (`openssl rand -base64 32` gives 44).
pub const MIN_SESSION_SECRET_CHARS: usize = 32;

/// What the admin key is mixed with, so the session secret is not the admin
/// key's plain hash (which the node also keeps to check the admin key).
const FROM_ADMIN_KEY: &[u8] = b"herald console session secret, derived from the admin key, v1";
/// What a configured secret is mixed with, so any length gives 32 bytes.
const FROM_SETTING: &[u8] = b"herald console session secret, set by the operator, v1";

/// 32 bytes that key every session MAC. Never printed.
#[derive(Clone)]
pub struct SessionSecret([u8; 32]);

/// A session secret that may not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionSecretError {
    #[error(
        "the session secret in {env} is too short: use at least {MIN_SESSION_SECRET_CHARS} \
         characters (for example `export {env}=$(openssl rand -base64 32)`), or unset it to \
         derive the secret from the admin key"
    )]
    TooShort { env: String },
}

/// HMAC-SHA256 of `msg` under `key`; a key of any length is accepted.
pub(super) fn hmac(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC accepts any key length"));
    for p in parts {
        m.update(p);
    }
    m.finalize().into_bytes().into()
}

impl SessionSecret {
    /// The secret of a node whose admin key is `admin_key` (surrounding
    /// blanks are not part of it, as for the admin key itself).
    pub fn from_admin_key(admin_key: &str) -> SessionSecret {
        SessionSecret(hmac(admin_key.trim().as_bytes(), &[FROM_ADMIN_KEY]))
    }

    /// The secret an operator set in the variable `env`; refused when
    /// shorter than [`MIN_SESSION_SECRET_CHARS`].
    pub fn from_setting(value: &str, env: &str) -> Result<SessionSecret, SessionSecretError> {
        let value = value.trim();
        if value.chars().count() < MIN_SESSION_SECRET_CHARS {
            return Err(SessionSecretError::TooShort {
                env: env.to_string(),
            });
        }
        Ok(SessionSecret(hmac(value.as_bytes(), &[FROM_SETTING])))
    }

    /// The MAC of `fields` under this secret.
    pub(super) fn mac(&self, fields: &[&[u8]]) -> [u8; 32] {
        hmac(&self.0, fields)
    }
}

/// Never prints the secret.
impl std::fmt::Debug for SessionSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionSecret(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::secret::key_hash;

    #[test]
    fn derived_and_set_secrets_differ_from_each_other_and_from_the_key_hash() {
        let key = "an admin key of some length";
        let derived = SessionSecret::from_admin_key(key);
        assert_eq!(
            derived.0,
            SessionSecret::from_admin_key(&format!(" {key}\n")).0
        );
        assert_ne!(derived.0, key_hash(key));
        let set = SessionSecret::from_setting(&"s".repeat(32), "X").unwrap();
        assert_ne!(set.0, derived.0);
        assert_ne!(
            set.0,
            SessionSecret::from_setting(&"t".repeat(32), "X").unwrap().0
        );
        assert_eq!(format!("{set:?}"), "SessionSecret(..)");
    }

    #[test]
    fn a_short_setting_is_refused_naming_its_variable() {
        let e = SessionSecret::from_setting(&"s".repeat(31), "MY_SECRET").unwrap_err();
        assert!(e.to_string().contains("MY_SECRET"), "{e}");
        assert!(SessionSecret::from_setting(&format!("  {}  ", "s".repeat(31)), "X").is_err());
    }
}
