//! The `[auth]` settings. The admin key itself is never in the file.

use serde::{Deserialize, Serialize};

use super::host::host_name;

/// Who may call: `[auth]`. The admin key itself is never in the file; it is
/// read from the environment variable `admin_key_env` names.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuthConfig {
    /// The environment variable holding the admin key. Set, the node is
    /// protected; unset, it serves loopback addresses only, in open mode.
    pub admin_key_env: String,
    /// The environment variable that may hold the secret console sessions
    /// are signed with. Unset, the secret is derived from the admin key;
    /// changing either ends every session.
    pub session_secret_env: String,
    /// Host names open mode answers besides `localhost`, 127.0.0.0/8 and
    /// `::1` (a port, if given, is not compared).
    pub allowed_hosts: Vec<String>,
    /// Refused when present: secrets come from the environment. Its value is
    /// dropped as it is read, so it is never kept or printed.
    #[serde(skip_serializing)]
    pub admin_key: Option<InlineSecret>,
}

/// The default `admin_key_env`.
pub const DEFAULT_ADMIN_KEY_ENV: &str = "HERALD_ADMIN_KEY";
/// The default `session_secret_env`.
pub const DEFAULT_SESSION_SECRET_ENV: &str = "HERALD_SESSION_SECRET";

impl Default for AuthConfig {
    fn default() -> Self {
        Self {
            admin_key_env: DEFAULT_ADMIN_KEY_ENV.into(),
            session_secret_env: DEFAULT_SESSION_SECRET_ENV.into(),
            allowed_hosts: Vec::new(),
            admin_key: None,
        }
    }
}

/// A secret written into the config file: remembered only as "there was one".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InlineSecret;

impl<'de> Deserialize<'de> for InlineSecret {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(d).map(|_| InlineSecret)
    }
}

impl AuthConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.admin_key.is_some() {
            return Err(format!(
                "auth.admin_key is not accepted: secrets come from the environment. Remove it \
                 from the file and set the environment variable {} instead",
                self.admin_key_env
            ));
        }
        for (field, env) in [
            ("admin_key_env", &self.admin_key_env),
            ("session_secret_env", &self.session_secret_env),
        ] {
            let env_ok = !env.is_empty()
                && !env.starts_with(|c: char| c.is_ascii_digit())
                && env.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !env_ok {
                return Err(format!(
                    "auth.{field} must name an environment variable (A-Z 0-9 _), not {env:?}"
                ));
            }
        }
        if self.session_secret_env == self.admin_key_env {
            return Err(format!(
                "auth.session_secret_env must name another variable than auth.admin_key_env \
                 ({:?}): unset, the session secret is derived from the admin key anyway",
                self.admin_key_env
            ));
        }
        for h in &self.allowed_hosts {
            if host_name(h).is_none() {
                return Err(format!(
                    "auth.allowed_hosts: {h:?} is not a host name (write it as in a Host header, \
                     without scheme or path)"
                ));
            }
        }
        Ok(())
    }

    /// `allowed_hosts` as the open-mode check compares them.
    pub(crate) fn host_names(&self) -> Vec<String> {
        self.allowed_hosts
            .iter()
            .filter_map(|h| host_name(h))
            .collect()
    }
}
