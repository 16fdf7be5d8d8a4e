//! Credentials in channel settings: given inline, or named by an environment
//! variable that is read at start-up, so a config file need not hold them.

use serde::{Deserialize, Serialize};

/// Where a credential comes from. In a `[[channels]]` table a credential
/// `X` is written `X = "value"` or `X_env = "VARIABLE"`, never both; the
/// table reader turns either into this. Its `Debug` never shows the value.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SecretSource {
    /// The value itself.
    Inline(String),
    /// The environment variable holding the value.
    Env(String),
}

impl SecretSource {
    /// The value. `field` names the setting in the error (`secret` gives
    /// `secret_env: environment variable X is not set`).
    pub fn resolve(&self, field: &str) -> Result<String, String> {
        match self {
            SecretSource::Inline(v) => Ok(v.clone()),
            SecretSource::Env(var) => match std::env::var(var) {
                Ok(v) if !v.is_empty() => Ok(v),
                _ => Err(format!(
                    "{field}_env: environment variable {var} is not set"
                )),
            },
        }
    }
}

impl std::fmt::Debug for SecretSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SecretSource::Inline(_) => f.write_str("<redacted>"),
            SecretSource::Env(var) => write!(f, "Env({var:?})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_values_are_redacted_and_missing_variables_named() {
        let s = SecretSource::Inline("hunter2".into());
        assert_eq!(format!("{s:?}"), "<redacted>");
        assert_eq!(s.resolve("secret").as_deref(), Ok("hunter2"));
        let e = SecretSource::Env("HERALD_TEST_SURELY_UNSET_VAR".into());
        assert_eq!(
            e.resolve("password"),
            Err(
                "password_env: environment variable HERALD_TEST_SURELY_UNSET_VAR is not set".into()
            )
        );
    }
}
