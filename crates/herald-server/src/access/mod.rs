//! Who may call what: the node's mode, the admin key, API keys (through the
//! [`KeyResolver`] seam), scopes per route, body types, and the browser
//! checks of open mode.
//!
//! Two layers do the work. [`guard`] is in front of the whole router: it
//! answers `421` (open mode, foreign `Host`), `403 cross_origin` (open mode,
//! a state change from another origin) and `401`, and sets the [`Caller`].
//! [`enforce`] is on each route, with that route's [`Policy`] from
//! `crate::routes`: `403` without the scope, `415` for the wrong body type.

mod caller;
mod channels;
mod guard;
mod host;
mod keys;
mod media;
mod mode;
mod policy;
mod refusal;
mod scope;
mod secret;
mod session;
mod session_secret;
mod settings;
mod stored_keys;

pub use caller::{ADMIN_KEY_NAME, Caller};
pub use channels::ChannelTenants;
pub use guard::{Guard, guard, guard_with};
pub use host::{addressed_to, from_this_origin};
pub use keys::{KeyError, KeyResolver, NoStoredKeys};
pub use media::Payload;
pub use mode::{MIN_ADMIN_KEY_CHARS, Mode, ModeError, is_loopback_listen};
pub use policy::{Need, Policy, Verb, refusal_of};
pub use refusal::{Unrecognised, cross_origin, forbidden};
pub use scope::{Scope, Scopes};
pub use secret::{KEY_PREFIX, KeySecret, PresentedKey, key_hash, new_key, same_hash, stored_hash};
pub use session::{
    CSRF_HEADER, SESSION_COOKIE, SESSION_TTL_MS, Session, clear_cookie, cookie_value, set_cookie,
};
pub use session_secret::{MIN_SESSION_SECRET_CHARS, SessionSecret, SessionSecretError};
pub use settings::{AuthConfig, DEFAULT_ADMIN_KEY_ENV, DEFAULT_SESSION_SECRET_ENV, InlineSecret};
pub use stored_keys::{KEY_CACHE_TTL, StoredKeys};

use std::sync::Arc;

/// The header with which the admin acts for another tenant.
pub const TENANT_HEADER: &str = "x-herald-tenant";

/// A node's access settings, fixed at start.
pub struct Access {
    mode: Mode,
    /// SHA-256 of the admin key, compared in constant time.
    admin_hash: Option<[u8; 32]>,
    /// What console sessions are signed with; `None` in open mode, which
    /// has no sessions.
    session_secret: Option<SessionSecret>,
    /// Host names open mode answers besides the loopback ones, lower-case.
    allowed_hosts: Vec<String>,
    keys: Arc<dyn KeyResolver>,
    /// The channels some tenants only may use.
    channels: ChannelTenants,
}

impl Access {
    /// Open mode: no admin key.
    pub fn open(auth: &AuthConfig) -> Access {
        Access {
            mode: Mode::Open,
            admin_hash: None,
            session_secret: None,
            allowed_hosts: auth.host_names(),
            keys: Arc::new(NoStoredKeys),
            channels: ChannelTenants::everyone(),
        }
    }

    /// Protected mode with this admin key (surrounding blanks are not part
    /// of it). Sessions are signed with a secret derived from it until
    /// [`Access::with_session_secret`] sets another.
    pub fn protected(admin_key: &str, auth: &AuthConfig) -> Access {
        Access {
            mode: Mode::Protected,
            admin_hash: Some(key_hash(admin_key.trim())),
            session_secret: Some(SessionSecret::from_admin_key(admin_key)),
            ..Access::open(auth)
        }
    }

    /// Signs console sessions with `secret` instead of the one derived from
    /// the admin key (protected mode only: open mode has no sessions).
    pub fn with_session_secret(mut self, secret: SessionSecret) -> Access {
        if self.mode == Mode::Protected {
            self.session_secret = Some(secret);
        }
        self
    }

    /// Checks API keys (`hrk_...`) with `keys`; without this, only the admin
    /// key opens a protected node.
    pub fn with_keys(mut self, keys: Arc<dyn KeyResolver>) -> Access {
        self.keys = keys;
        self
    }

    /// Limits channels to the tenants their configuration names.
    pub fn with_channel_tenants(mut self, channels: ChannelTenants) -> Access {
        self.channels = channels;
        self
    }

    /// Which tenants may use which channel.
    pub fn channels(&self) -> &ChannelTenants {
        &self.channels
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Where API keys are checked (to drop a revoked key's cached record).
    pub fn keys(&self) -> &Arc<dyn KeyResolver> {
        &self.keys
    }
}
