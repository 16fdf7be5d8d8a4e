//! Open or protected: decided once, at start, from the listen address and
//! whether an admin key is set.

use std::net::{IpAddr, SocketAddr};

/// How a node treats requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// No admin key, loopback only: every request is tenant `default` with
    /// every scope, and only loopback `Host` names are answered. For
    /// development.
    Open,
    /// An admin key is set: every route but `/healthz` and `/readyz` needs a
    /// bearer key.
    Protected,
}

/// A node that must not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModeError {
    #[error(
        "refusing to serve {listen} without an admin key: anyone who can reach that address \
         could send through every channel. Set the environment variable {env} to a secret of \
         at least {MIN_ADMIN_KEY_CHARS} characters (for example `export {env}=$(openssl rand \
         -base64 32)`), or listen on 127.0.0.1 for development"
    )]
    NeedsAdminKey { listen: String, env: String },
    #[error(
        "the admin key in {env} is too short: use at least {MIN_ADMIN_KEY_CHARS} characters \
         (for example `export {env}=$(openssl rand -base64 32)`)"
    )]
    WeakAdminKey { env: String },
}

/// The shortest admin key accepted.
pub const MIN_ADMIN_KEY_CHARS: usize = 16;

impl Mode {
    /// The mode of a node listening on `listen` with `admin_key` (the value
    /// of the variable `admin_key_env`, if set). Without a key, only a
    /// loopback address may be served.
    pub fn decide(
        listen: &str,
        admin_key: Option<&str>,
        admin_key_env: &str,
    ) -> Result<Mode, ModeError> {
        match admin_key {
            Some(k) if k.trim().chars().count() < MIN_ADMIN_KEY_CHARS => {
                Err(ModeError::WeakAdminKey {
                    env: admin_key_env.to_string(),
                })
            }
            Some(_) => Ok(Mode::Protected),
            None if is_loopback_listen(listen) => Ok(Mode::Open),
            None => Err(ModeError::NeedsAdminKey {
                listen: listen.to_string(),
                env: admin_key_env.to_string(),
            }),
        }
    }
}

/// Whether a listen address (`HOST:PORT`) only accepts connections from
/// this machine: 127.0.0.0/8, `::1` or `localhost`. Any other name may
/// resolve anywhere, so it is not.
pub fn is_loopback_listen(listen: &str) -> bool {
    if let Ok(addr) = listen.parse::<SocketAddr>() {
        return addr.ip().is_loopback();
    }
    let host = listen.rsplit_once(':').map_or(listen, |(h, _)| h);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_addresses() {
        for a in [
            "127.0.0.1:8780",
            "127.0.0.1:0",
            "127.1.2.3:1",
            "[::1]:8780",
            "localhost:8780",
            "LOCALHOST:1",
        ] {
            assert!(is_loopback_listen(a), "{a}");
        }
        for a in [
            "0.0.0.0:8780",
            "[::]:8780",
            "10.0.0.5:8780",
            "herald.internal:8780",
            "localhost.example.com:1",
            "",
        ] {
            assert!(!is_loopback_listen(a), "{a}");
        }
    }

    #[test]
    fn modes() {
        let env = "HERALD_ADMIN_KEY";
        let key = Some("0123456789abcdef");
        assert_eq!(Mode::decide("127.0.0.1:0", None, env), Ok(Mode::Open));
        assert_eq!(Mode::decide("127.0.0.1:0", key, env), Ok(Mode::Protected));
        assert_eq!(Mode::decide("0.0.0.0:0", key, env), Ok(Mode::Protected));
        let e = Mode::decide("0.0.0.0:8780", None, env).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("0.0.0.0:8780") && msg.contains("export HERALD_ADMIN_KEY="),
            "{msg}"
        );
        let e = Mode::decide("127.0.0.1:0", Some("s3cr3t"), "MY_KEY").unwrap_err();
        assert_eq!(
            e,
            ModeError::WeakAdminKey {
                env: "MY_KEY".into()
            }
        );
        assert!(!e.to_string().contains("s3cr3t"));
    }
}
