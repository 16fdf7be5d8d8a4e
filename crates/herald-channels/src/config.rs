//! `[[channels]]` blocks of the configuration.

use serde::{Deserialize, Serialize};

use crate::ChannelError;

/// Provider kinds this build can deliver through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChannelKind {
    Log,
    Webhook,
    /// WeChat Official Account template messages.
    Wechat,
    /// WeCom (企业微信) app messages.
    Wecom,
    /// Firebase Cloud Messaging, HTTP v1.
    Fcm,
    /// Email over SMTP.
    Smtp,
}

impl ChannelKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ChannelKind::Log => "log",
            ChannelKind::Webhook => "webhook",
            ChannelKind::Wechat => "wechat",
            ChannelKind::Wecom => "wecom",
            ChannelKind::Fcm => "fcm",
            ChannelKind::Smtp => "smtp",
        }
    }
}

/// One configured channel: where it delivers and how hard it may be pushed.
///
/// Its `Debug` output shows secrets (`secret`, `corpsecret`, `password`) as
/// `<redacted>`, so a logged configuration never leaks one.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChannelConfig {
    /// What timers name in their `channel` field.
    pub name: String,
    pub kind: ChannelKind,
    /// Webhook target.
    #[serde(default)]
    pub url: Option<String>,
    /// HMAC-SHA256 key for `X-Herald-Signature`, given inline...
    #[serde(default)]
    pub secret: Option<String>,
    /// ...or read from this environment variable at start-up.
    #[serde(default)]
    pub secret_env: Option<String>,
    /// Sustained deliveries per second; unset means unlimited.
    #[serde(default)]
    pub rate_per_sec: Option<f64>,
    /// Deliveries in flight at once.
    #[serde(default = "default_concurrency")]
    pub concurrency: usize,
    /// Per-attempt timeout.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    /// Attempts before a timer is `dead`, the first included.
    #[serde(default = "default_max_attempts")]
    pub max_attempts: u32,
    /// First retry delay; doubles each attempt, with jitter.
    #[serde(default = "default_backoff_base_ms")]
    pub backoff_base_ms: u64,
    /// Cap on any one retry delay.
    #[serde(default = "default_backoff_max_ms")]
    pub backoff_max_ms: u64,
    /// Share of each retry delay that is random, 0.0 to 1.0 (default 0.5:
    /// half fixed, half random), so a failed burst does not come back at once.
    #[serde(default = "default_backoff_jitter")]
    pub backoff_jitter: f64,
    /// PEM file of extra CA certificates to trust for `https://` (a private CA),
    /// beside the bundled web PKI roots.
    #[serde(default)]
    pub ca_file: Option<String>,

    /// Provider API root (`wechat`, `wecom`, `fcm`); defaults to the real
    /// provider, and points at `herald mock` in tests.
    #[serde(default)]
    pub api_base: Option<String>,
    /// `wechat`: the Official Account's appid (`secret`/`secret_env` is its AppSecret).
    #[serde(default)]
    pub appid: Option<String>,
    /// `wechat`: `stable` (`/cgi-bin/stable_token`, the default) or `classic` (`/cgi-bin/token`).
    #[serde(default)]
    pub token_mode: Option<TokenMode>,
    /// `wecom`: the corp id.
    #[serde(default)]
    pub corpid: Option<String>,
    /// `wecom`: the app's secret, inline...
    #[serde(default)]
    pub corpsecret: Option<String>,
    /// ...or from this environment variable.
    #[serde(default)]
    pub corpsecret_env: Option<String>,
    /// `wecom`: the app's agent id.
    #[serde(default)]
    pub agentid: Option<i64>,
    /// `fcm`: the Firebase project.
    #[serde(default)]
    pub project_id: Option<String>,
    /// `fcm`: path to the service account's JSON key.
    #[serde(default)]
    pub service_account: Option<String>,
    /// `fcm`: the OAuth2 token endpoint (defaults to the key file's `token_uri`).
    #[serde(default)]
    pub token_url: Option<String>,
    /// `smtp`: server host.
    #[serde(default)]
    pub host: Option<String>,
    /// `smtp`: server port (default 587 with STARTTLS, 25 without).
    #[serde(default)]
    pub port: Option<u16>,
    /// `smtp`: login user, if the server wants one.
    #[serde(default)]
    pub username: Option<String>,
    /// `smtp`: login password, inline...
    #[serde(default)]
    pub password: Option<String>,
    /// ...or from this environment variable.
    #[serde(default)]
    pub password_env: Option<String>,
    /// `smtp`: the sender address.
    #[serde(default)]
    pub from: Option<String>,
    /// `smtp`: `starttls` (the default) or `none`.
    #[serde(default)]
    pub tls: Option<SmtpTls>,
    /// Do-not-disturb window, if any.
    #[serde(default)]
    pub quiet_hours: Option<QuietHours>,
    /// How a reminder's fields become this channel's message: any JSON value
    /// whose strings may name the reminder message's top-level fields in
    /// braces: `{subject}`, `{subject_id}`, `{start_at}`, `{lead_minutes}`,
    /// `{user_id}`, `{channel_type}`, `{count}`.
    #[serde(default)]
    pub reminder_template: Option<serde_json::Value>,
}

/// Settings that hold a secret value inline.
const SECRET_FIELDS: [&str; 3] = ["secret", "corpsecret", "password"];

impl std::fmt::Debug for ChannelConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut v = serde_json::to_value(self).map_err(|_| std::fmt::Error)?;
        if let Some(m) = v.as_object_mut() {
            for k in SECRET_FIELDS {
                if m.get(k).is_some_and(|x| !x.is_null()) {
                    m.insert(k.to_string(), serde_json::Value::from("<redacted>"));
                }
            }
        }
        write!(f, "ChannelConfig {v}")
    }
}

/// Which WeChat token endpoint to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum TokenMode {
    /// `/cgi-bin/stable_token`: the same token for every caller while valid.
    #[default]
    Stable,
    /// `/cgi-bin/token`: every fetch replaces the previous token.
    Classic,
}

/// SMTP transport security.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum SmtpTls {
    #[default]
    Starttls,
    None,
}

/// A daily do-not-disturb window in a time zone, e.g. 22:00-08:00 Asia/Shanghai.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuietHours {
    /// `HH:MM`, local time; the window may wrap past midnight.
    pub start: String,
    /// `HH:MM`, local time, exclusive.
    pub end: String,
    /// IANA zone name.
    pub timezone: String,
    /// What happens to a delivery due inside the window.
    #[serde(default)]
    pub policy: QuietPolicy,
}

/// What quiet hours do to a delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum QuietPolicy {
    /// Send it when the window ends.
    #[default]
    Defer,
    /// Do not send it; record why.
    Drop,
}

fn default_concurrency() -> usize {
    256
}
fn default_timeout_ms() -> u64 {
    10_000
}
fn default_max_attempts() -> u32 {
    8
}
fn default_backoff_base_ms() -> u64 {
    1_000
}
fn default_backoff_max_ms() -> u64 {
    300_000
}
fn default_backoff_jitter() -> f64 {
    0.5
}

impl ChannelConfig {
    /// A `log` channel with default limits.
    pub fn log(name: &str) -> Self {
        Self {
            name: name.to_string(),
            kind: ChannelKind::Log,
            url: None,
            secret: None,
            secret_env: None,
            rate_per_sec: None,
            concurrency: default_concurrency(),
            timeout_ms: default_timeout_ms(),
            max_attempts: default_max_attempts(),
            backoff_base_ms: default_backoff_base_ms(),
            backoff_max_ms: default_backoff_max_ms(),
            backoff_jitter: default_backoff_jitter(),
            ca_file: None,
            api_base: None,
            appid: None,
            token_mode: None,
            corpid: None,
            corpsecret: None,
            corpsecret_env: None,
            agentid: None,
            project_id: None,
            service_account: None,
            token_url: None,
            host: None,
            port: None,
            username: None,
            password: None,
            password_env: None,
            from: None,
            tls: None,
            quiet_hours: None,
            reminder_template: None,
        }
    }

    /// A `webhook` channel to `url` with default limits.
    pub fn webhook(name: &str, url: &str) -> Self {
        Self {
            kind: ChannelKind::Webhook,
            url: Some(url.to_string()),
            ..Self::log(name)
        }
    }

    /// The parsed do-not-disturb window, if one is configured.
    pub fn quiet_window(&self) -> Result<Option<herald_core::QuietWindow>, ChannelError> {
        self.quiet_hours
            .as_ref()
            .map(|q| {
                herald_core::QuietWindow::parse(&q.start, &q.end, &q.timezone)
                    .map_err(|e| self.err(&format!("quiet_hours: {e}")))
            })
            .transpose()
    }

    pub fn retry_policy(&self) -> herald_core::RetryPolicy {
        herald_core::RetryPolicy {
            max_attempts: self.max_attempts,
            base_ms: self.backoff_base_ms,
            max_ms: self.backoff_max_ms,
            // Validated to 0.0..=1.0.
            jitter_pct: (self.backoff_jitter.clamp(0.0, 1.0) * 100.0).round() as u8,
        }
    }

    /// The signing secret (webhook) or AppSecret (wechat), inline or from the environment.
    pub fn resolved_secret(&self) -> Result<Option<String>, ChannelError> {
        self.resolve("secret", &self.secret, &self.secret_env)
    }

    /// The WeCom app secret, inline or from the environment.
    pub fn resolved_corpsecret(&self) -> Result<Option<String>, ChannelError> {
        self.resolve("corpsecret", &self.corpsecret, &self.corpsecret_env)
    }

    /// The SMTP password, inline or from the environment.
    pub fn resolved_password(&self) -> Result<Option<String>, ChannelError> {
        self.resolve("password", &self.password, &self.password_env)
    }

    /// One secret setting: `field` inline or `field_env` naming an
    /// environment variable, never both.
    fn resolve(
        &self,
        field: &str,
        inline: &Option<String>,
        env: &Option<String>,
    ) -> Result<Option<String>, ChannelError> {
        match (inline, env) {
            (Some(_), Some(_)) => {
                Err(self.err(&format!("set either {field} or {field}_env, not both")))
            }
            (Some(s), None) => Ok(Some(s.clone())),
            (None, Some(var)) => match std::env::var(var) {
                Ok(v) if !v.is_empty() => Ok(Some(v)),
                _ => Err(self.err(&format!(
                    "{field}_env: environment variable {var} is not set"
                ))),
            },
            (None, None) => Ok(None),
        }
    }

    pub(crate) fn err(&self, message: &str) -> ChannelError {
        ChannelError::Config {
            name: self.name.clone(),
            message: message.to_string(),
        }
    }

    /// A setting a kind cannot do without.
    fn require(&self, field: &str, v: &Option<String>) -> Result<(), ChannelError> {
        match v.as_deref().map(str::trim) {
            Some(s) if !s.is_empty() => Ok(()),
            _ => Err(self.err(&format!("a {} channel needs {field}", self.kind.as_str()))),
        }
    }

    /// `api_base` and `token_url` are absolute `http(s)://` URLs; `ca_file` loads.
    fn check_provider_urls(&self) -> Result<(), ChannelError> {
        for (field, v) in [("api_base", &self.api_base), ("token_url", &self.token_url)] {
            if let Some(url) = v {
                crate::http::Origin::parse(url).map_err(|e| self.err(&format!("{field}: {e}")))?;
            }
        }
        if let Some(path) = &self.ca_file {
            crate::http::load_pem_certs(path).map_err(|e| self.err(&format!("ca_file: {e}")))?;
        }
        Ok(())
    }

    /// Checks what can be checked without contacting the provider.
    pub fn validate(&self) -> Result<(), ChannelError> {
        let name_ok = !self.name.is_empty()
            && self.name.len() <= 64
            && self
                .name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.');
        if !name_ok {
            return Err(self.err("name must be 1-64 characters of [A-Za-z0-9._-]"));
        }
        if self.concurrency == 0 {
            return Err(self.err("concurrency must be at least 1"));
        }
        if self.max_attempts == 0 {
            return Err(self.err("max_attempts must be at least 1"));
        }
        if !(0.0..=1.0).contains(&self.backoff_jitter) {
            return Err(self.err("backoff_jitter must be between 0.0 and 1.0"));
        }
        if self.timeout_ms == 0 {
            return Err(self.err("timeout_ms must be at least 1"));
        }
        if let Some(r) = self.rate_per_sec
            && !(r.is_finite() && r > 0.0)
        {
            return Err(self.err("rate_per_sec must be a positive number"));
        }
        match self.kind {
            ChannelKind::Log => {
                if self.url.is_some() {
                    return Err(self.err("a log channel takes no url"));
                }
            }
            ChannelKind::Webhook => {
                let url = self.url.as_deref().unwrap_or("");
                crate::http::Origin::parse(url).map_err(|e| self.err(&format!("url: {e}")))?;
                if let Some(path) = &self.ca_file {
                    crate::http::load_pem_certs(path)
                        .map_err(|e| self.err(&format!("ca_file: {e}")))?;
                }
            }
            ChannelKind::Wechat => {
                self.require("appid", &self.appid)?;
                if self.resolved_secret()?.is_none() {
                    return Err(
                        self.err("a wechat channel needs secret or secret_env (the AppSecret)")
                    );
                }
                self.check_provider_urls()?;
            }
            ChannelKind::Wecom => {
                self.require("corpid", &self.corpid)?;
                if self.resolved_corpsecret()?.is_none() {
                    return Err(self.err(
                        "a wecom channel needs corpsecret or corpsecret_env (the app's secret)",
                    ));
                }
                if self.agentid.is_none() {
                    return Err(self.err("a wecom channel needs agentid"));
                }
                self.check_provider_urls()?;
            }
            ChannelKind::Fcm => {
                self.require("service_account", &self.service_account)?;
                self.check_provider_urls()?;
            }
            // Checks its own settings when it is built.
            ChannelKind::Smtp => {}
        }
        self.quiet_window()?;
        self.resolved_secret()?;
        self.resolved_corpsecret()?;
        self.resolved_password()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validates_names_urls_and_limits() {
        assert!(ChannelConfig::log("log").validate().is_ok());
        assert!(
            ChannelConfig::webhook("h", "http://127.0.0.1:9/x")
                .validate()
                .is_ok()
        );
        assert!(ChannelConfig::webhook("h", "ftp://x").validate().is_err());
        assert!(ChannelConfig::webhook("h", "not a url").validate().is_err());
        assert!(ChannelConfig::log("bad name").validate().is_err());
        let mut c = ChannelConfig::log("x");
        c.concurrency = 0;
        assert!(c.validate().is_err());
        let mut c = ChannelConfig::log("x");
        c.rate_per_sec = Some(-1.0);
        assert!(c.validate().is_err());
        let mut c = ChannelConfig::webhook("h", "http://x");
        c.secret_env = Some("HERALD_TEST_SURELY_UNSET_VAR".into());
        assert!(c.validate().is_err());
    }

    #[test]
    fn parses_toml_shape_and_rejects_unknown_fields() {
        let c: ChannelConfig = serde_json::from_str(
            r#"{"name":"hooks","kind":"webhook","url":"http://127.0.0.1:9000/hook","concurrency":8}"#,
        )
        .unwrap();
        assert_eq!(c.kind, ChannelKind::Webhook);
        assert_eq!(c.concurrency, 8);
        assert_eq!(c.max_attempts, 8);
        let bad = serde_json::from_str::<ChannelConfig>(r#"{"name":"h","kind":"log","colour":1}"#);
        assert!(bad.is_err());
    }
}
