//! The provider part of a channel: one struct per kind, holding only the keys
//! that kind takes.
//!
//! These structs derive serde with `deny_unknown_fields`, but their serde
//! form is internal: a credential is `{"inline": ..}` or `{"env": ..}` there.
//! Users write the flat `[[channels]]` table that [`super::table`] reads.

use serde::{Deserialize, Serialize};

use super::ChannelKind;
use super::secret::SecretSource;

/// The `log` channel takes nothing but the common keys.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogConfig {}

/// A signed `POST` per delivery to one URL.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookConfig {
    /// The receiver, `http://` or `https://`.
    pub url: String,
    /// HMAC-SHA256 key for `X-Herald-Signature`; unsigned without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<SecretSource>,
    /// PEM file of extra CA certificates to trust for `https://` (a private CA),
    /// beside the bundled web PKI roots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<String>,
}

/// WeChat Official Account template messages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WechatConfig {
    /// The Official Account's appid.
    pub appid: String,
    /// Its AppSecret.
    pub secret: SecretSource,
    /// Which token endpoint to use.
    #[serde(default)]
    pub token_mode: TokenMode,
    /// API root; the real provider by default, `herald mock` in tests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_base: Option<String>,
    /// Extra CA roots for `https://`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<String>,
}

/// WeCom (企业微信) app messages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WecomConfig {
    /// The corp id.
    pub corpid: String,
    /// The app's secret.
    pub corpsecret: SecretSource,
    /// The app's agent id.
    pub agentid: i64,
    /// API root; the real provider by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_base: Option<String>,
    /// Extra CA roots for `https://`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<String>,
}

/// Firebase Cloud Messaging, HTTP v1.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FcmConfig {
    /// Path to the service account's JSON key.
    pub service_account: String,
    /// The Firebase project; defaults to the key file's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    /// The OAuth2 token endpoint; defaults to the key file's `token_uri`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_url: Option<String>,
    /// API root; the real provider by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_base: Option<String>,
    /// Extra CA roots for `https://`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<String>,
}

/// Email through an SMTP relay.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SmtpConfig {
    /// Server host.
    pub host: String,
    /// Server port; 587 with STARTTLS, 25 without.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// Transport security.
    #[serde(default)]
    pub tls: SmtpTls,
    /// Login user, if the server wants one (with `password`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// Login password (with `username`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<SecretSource>,
    /// The sender address.
    pub from: String,
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

/// The keys a kind's provider part takes, besides the common ones.
#[derive(Debug, Clone, Copy)]
pub struct ProviderKeys {
    /// Keys that must be set.
    pub required: &'static [&'static str],
    /// Credentials, each written `X` or `X_env`; `true` when one must be set.
    pub secrets: &'static [(&'static str, bool)],
    /// Keys that may be set.
    pub optional: &'static [&'static str],
}

impl ProviderKeys {
    /// Every key a table of this kind may hold (`X` and `X_env` for credentials).
    pub fn accepts(&self, key: &str) -> bool {
        self.required.contains(&key)
            || self.optional.contains(&key)
            || self
                .secrets
                .iter()
                .any(|(s, _)| key == *s || key.strip_suffix("_env").is_some_and(|k| k == *s))
    }

    /// The keys in words: `url (required), secret or secret_env, ca_file`.
    pub fn describe(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        parts.extend(self.required.iter().map(|k| format!("{k} (required)")));
        parts.extend(self.secrets.iter().map(|(k, required)| {
            if *required {
                format!("{k} or {k}_env (one required)")
            } else {
                format!("{k} or {k}_env")
            }
        }));
        parts.extend(self.optional.iter().map(|k| k.to_string()));
        if parts.is_empty() {
            "no keys besides the common ones".into()
        } else {
            parts.join(", ")
        }
    }
}

impl ChannelKind {
    /// The provider keys of this kind.
    pub fn provider_keys(self) -> ProviderKeys {
        match self {
            ChannelKind::Log => ProviderKeys {
                required: &[],
                secrets: &[],
                optional: &[],
            },
            ChannelKind::Webhook => ProviderKeys {
                required: &["url"],
                secrets: &[("secret", false)],
                optional: &["ca_file"],
            },
            ChannelKind::Wechat => ProviderKeys {
                required: &["appid"],
                secrets: &[("secret", true)],
                optional: &["token_mode", "api_base", "ca_file"],
            },
            ChannelKind::Wecom => ProviderKeys {
                required: &["corpid", "agentid"],
                secrets: &[("corpsecret", true)],
                optional: &["api_base", "ca_file"],
            },
            ChannelKind::Fcm => ProviderKeys {
                required: &["service_account"],
                secrets: &[],
                optional: &["project_id", "token_url", "api_base", "ca_file"],
            },
            ChannelKind::Smtp => ProviderKeys {
                required: &["host", "from"],
                secrets: &[("password", false)],
                optional: &["port", "tls", "username"],
            },
        }
    }
}

/// `field` holds something other than blanks.
fn non_empty(field: &str, v: &str) -> Result<(), String> {
    if v.trim().is_empty() {
        return Err(format!("{field} must not be empty"));
    }
    Ok(())
}

/// `api_base` and `token_url` are absolute `http(s)://` URLs; `ca_file` loads.
fn check_urls(urls: &[(&str, &Option<String>)], ca_file: &Option<String>) -> Result<(), String> {
    for (field, v) in urls {
        if let Some(url) = v {
            crate::http::Origin::parse(url).map_err(|e| format!("{field}: {e}"))?;
        }
    }
    if let Some(path) = ca_file {
        crate::http::load_pem_certs(path).map_err(|e| format!("ca_file: {e}"))?;
    }
    Ok(())
}

impl WebhookConfig {
    /// A webhook to `url`, unsigned.
    pub fn new(url: &str) -> Self {
        Self {
            url: url.to_string(),
            secret: None,
            ca_file: None,
        }
    }

    /// What can be checked without a request.
    pub fn check(&self) -> Result<(), String> {
        crate::http::Origin::parse(&self.url).map_err(|e| format!("url: {e}"))?;
        check_urls(&[], &self.ca_file)?;
        if let Some(s) = &self.secret {
            s.resolve("secret")?;
        }
        Ok(())
    }
}

impl WechatConfig {
    /// What can be checked without a request.
    pub fn check(&self) -> Result<(), String> {
        non_empty("appid", &self.appid)?;
        self.secret.resolve("secret")?;
        check_urls(&[("api_base", &self.api_base)], &self.ca_file)
    }
}

impl WecomConfig {
    /// What can be checked without a request.
    pub fn check(&self) -> Result<(), String> {
        non_empty("corpid", &self.corpid)?;
        self.corpsecret.resolve("corpsecret")?;
        check_urls(&[("api_base", &self.api_base)], &self.ca_file)
    }
}

impl FcmConfig {
    /// What can be checked without a request (the key file is read when the
    /// channel is built).
    pub fn check(&self) -> Result<(), String> {
        non_empty("service_account", &self.service_account)?;
        check_urls(
            &[("api_base", &self.api_base), ("token_url", &self.token_url)],
            &self.ca_file,
        )
    }
}

impl SmtpConfig {
    /// What can be checked without a connection (the addresses are parsed
    /// when the channel is built).
    pub fn check(&self) -> Result<(), String> {
        non_empty("host", &self.host)?;
        if let Some(p) = &self.password {
            p.resolve("password")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(v: serde_json::Value) -> Vec<String> {
        let mut keys: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        keys.sort_unstable();
        keys
    }

    fn listed(kind: ChannelKind) -> Vec<String> {
        let k = kind.provider_keys();
        let mut keys: Vec<String> = k
            .required
            .iter()
            .chain(k.optional)
            .chain(k.secrets.iter().map(|(s, _)| s))
            .map(|s| s.to_string())
            .collect();
        keys.sort_unstable();
        keys
    }

    /// The key lists that messages quote are exactly the structs' fields.
    #[test]
    fn key_lists_match_the_structs() {
        let secret = || Some(SecretSource::Inline("s".into()));
        let all = |v: &str| Some(v.to_string());
        let cases = [
            (ChannelKind::Log, serde_json::to_value(LogConfig {})),
            (
                ChannelKind::Webhook,
                serde_json::to_value(WebhookConfig {
                    url: "u".into(),
                    secret: secret(),
                    ca_file: all("c"),
                }),
            ),
            (
                ChannelKind::Wechat,
                serde_json::to_value(WechatConfig {
                    appid: "a".into(),
                    secret: SecretSource::Env("V".into()),
                    token_mode: TokenMode::Classic,
                    api_base: all("b"),
                    ca_file: all("c"),
                }),
            ),
            (
                ChannelKind::Wecom,
                serde_json::to_value(WecomConfig {
                    corpid: "c".into(),
                    corpsecret: SecretSource::Env("V".into()),
                    agentid: 1,
                    api_base: all("b"),
                    ca_file: all("c"),
                }),
            ),
            (
                ChannelKind::Fcm,
                serde_json::to_value(FcmConfig {
                    service_account: "k".into(),
                    project_id: all("p"),
                    token_url: all("t"),
                    api_base: all("b"),
                    ca_file: all("c"),
                }),
            ),
            (
                ChannelKind::Smtp,
                serde_json::to_value(SmtpConfig {
                    host: "h".into(),
                    port: Some(25),
                    tls: SmtpTls::None,
                    username: all("u"),
                    password: secret(),
                    from: "f".into(),
                }),
            ),
        ];
        for (kind, v) in cases {
            assert_eq!(sorted(v.unwrap()), listed(kind), "{kind:?}");
        }
    }

    #[test]
    fn describes_keys() {
        assert_eq!(
            ChannelKind::Wechat.provider_keys().describe(),
            "appid (required), secret or secret_env (one required), token_mode, api_base, ca_file"
        );
        assert_eq!(
            ChannelKind::Log.provider_keys().describe(),
            "no keys besides the common ones"
        );
        let k = ChannelKind::Webhook.provider_keys();
        assert!(k.accepts("secret_env") && k.accepts("url") && !k.accepts("url_env"));
        assert!(!k.accepts("corpid"));
    }
}
