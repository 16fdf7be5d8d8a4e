//! The `fcm` channel: Firebase Cloud Messaging, HTTP v1.
//!
//! Authentication is the OAuth2 service-account flow: sign an RS256 JWT with
//! the service account's private key (`iss` = its `client_email`, `scope` =
//! `firebase.messaging`, `aud` = the token URL, one hour of life), exchange it
//! at the token URL for a bearer token, and share that token through
//! [`TokenCache`] like every provider token. Signing uses `ring` (already the
//! TLS crypto backend), so no separate JWT crate is needed.
//!
//! One `POST /v1/projects/{project}/messages:send` per delivery (v1 has no
//! batch endpoint). The outcome follows `error.details[].errorCode`, else the
//! HTTP status:
//!
//! | errorCode / HTTP | outcome |
//! |---|---|
//! | 200 | delivered, `name` recorded |
//! | UNREGISTERED (404) | permanent: the device token is invalid |
//! | QUOTA_EXCEEDED / 429 | throttled, `Retry-After` honoured |
//! | UNAVAILABLE / INTERNAL / 5xx | retryable, `Retry-After` honoured |
//! | 401 UNAUTHENTICATED | expire the token, refresh once, send once more |
//! | INVALID_ARGUMENT, SENDER_ID_MISMATCH, THIRD_PARTY_AUTH_ERROR, other 4xx | permanent |

use std::sync::Arc;

use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use herald_core::Clock;
use ring::rand::SystemRandom;
use ring::signature::{RSA_PKCS1_SHA256, RsaKeyPair};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::provider_http::{Answer, ProviderHttp, retryable, token_outcome};
use crate::token_cache::{FetchedToken, TokenCache, TokenCacheOptions, TokenError, TokenUse};
use crate::{
    BuildContext, Channel, ChannelError, ChannelKind, CommonSettings, Delivery, FcmConfig,
    ProviderStatus, SendOutcome,
};

/// The real API.
pub const DEFAULT_API_BASE: &str = "https://fcm.googleapis.com";
/// Google's token endpoint, if neither config nor key file names one.
pub const DEFAULT_TOKEN_URL: &str = "https://oauth2.googleapis.com/token";
/// The OAuth2 scope FCM sends need.
pub const SCOPE: &str = "https://www.googleapis.com/auth/firebase.messaging";
/// Seconds an assertion JWT is valid.
const JWT_LIFETIME_SECS: i64 = 3600;

/// The parts of a service-account key file the channel uses.
#[derive(Deserialize)]
struct ServiceAccount {
    client_email: String,
    private_key: String,
    #[serde(default)]
    private_key_id: Option<String>,
    #[serde(default)]
    token_uri: Option<String>,
    #[serde(default)]
    project_id: Option<String>,
}

/// Why a service-account key cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ServiceAccountError {
    #[error("cannot read {path}: {reason}")]
    Read { path: String, reason: String },
    #[error("{path} is not a service-account JSON key: {reason}")]
    Parse { path: String, reason: String },
    #[error("{path}: private_key: {reason}")]
    Key { path: String, reason: String },
}

/// Signs assertion JWTs with a service account's RSA key.
pub struct JwtSigner {
    client_email: String,
    key_id: Option<String>,
    key: RsaKeyPair,
    rng: SystemRandom,
}

impl std::fmt::Debug for JwtSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtSigner")
            .field("client_email", &self.client_email)
            .field("key", &"<redacted>")
            .finish()
    }
}

impl JwtSigner {
    /// A signer for `client_email` from a PEM private key (PKCS#8 or PKCS#1).
    pub fn from_pem(client_email: &str, key_id: Option<String>, pem: &str) -> Result<Self, String> {
        use tokio_rustls::rustls::pki_types::PrivateKeyDer;
        use tokio_rustls::rustls::pki_types::pem::PemObject;
        let der = PrivateKeyDer::from_pem_slice(pem.as_bytes())
            .map_err(|e| format!("not a PEM private key ({e})"))?;
        let key = match &der {
            PrivateKeyDer::Pkcs8(k) => RsaKeyPair::from_pkcs8(k.secret_pkcs8_der()),
            PrivateKeyDer::Pkcs1(k) => RsaKeyPair::from_der(k.secret_pkcs1_der()),
            _ => return Err("not an RSA private key".into()),
        }
        .map_err(|e| format!("not a usable RSA key ({e})"))?;
        Ok(Self {
            client_email: client_email.to_string(),
            key_id,
            key,
            rng: SystemRandom::new(),
        })
    }

    /// The RS256 assertion for `aud`, issued at `iat` (unix seconds).
    pub fn assertion(&self, aud: &str, iat: i64) -> Result<String, String> {
        let mut header = serde_json::json!({"alg": "RS256", "typ": "JWT"});
        if let Some(kid) = &self.key_id {
            header["kid"] = Value::String(kid.clone());
        }
        let claims = serde_json::json!({
            "iss": self.client_email,
            "scope": SCOPE,
            "aud": aud,
            "iat": iat,
            "exp": iat + JWT_LIFETIME_SECS,
        });
        let mut jwt = String::new();
        jwt.push_str(&URL_SAFE_NO_PAD.encode(header.to_string()));
        jwt.push('.');
        jwt.push_str(&URL_SAFE_NO_PAD.encode(claims.to_string()));
        let mut sig = vec![0u8; self.key.public().modulus_len()];
        self.key
            .sign(&RSA_PKCS1_SHA256, &self.rng, jwt.as_bytes(), &mut sig)
            .map_err(|_| "RSA signing failed".to_string())?;
        jwt.push('.');
        jwt.push_str(&URL_SAFE_NO_PAD.encode(sig));
        Ok(jwt)
    }
}

pub struct FcmChannel {
    name: String,
    project_id: String,
    token_url: String,
    signer: JwtSigner,
    http: ProviderHttp,
    tokens: TokenCache,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for FcmChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FcmChannel")
            .field("name", &self.name)
            .field("project_id", &self.project_id)
            .field("token_url", &self.token_url)
            .field("signer", &self.signer)
            .finish()
    }
}

fn read_service_account(path: &str) -> Result<ServiceAccount, ServiceAccountError> {
    let text = std::fs::read_to_string(path).map_err(|e| ServiceAccountError::Read {
        path: path.to_string(),
        reason: e.to_string(),
    })?;
    // serde_json's messages name positions, never the values themselves.
    serde_json::from_str(&text).map_err(|e| ServiceAccountError::Parse {
        path: path.to_string(),
        reason: e.to_string(),
    })
}

impl FcmChannel {
    pub fn new(
        common: &CommonSettings,
        cfg: &FcmConfig,
        ctx: &BuildContext,
    ) -> Result<Self, ChannelError> {
        Self::with_options(common, cfg, ctx, TokenCacheOptions::default())
    }

    /// As [`FcmChannel::new`], with the token cache's clock and margins (the
    /// clock also dates the assertion JWT).
    pub fn with_options(
        common: &CommonSettings,
        cfg: &FcmConfig,
        ctx: &BuildContext,
        opts: TokenCacheOptions,
    ) -> Result<Self, ChannelError> {
        let path = cfg.service_account.as_str();
        let sa =
            read_service_account(path).map_err(|e| common.err(&format!("service_account: {e}")))?;
        let signer =
            JwtSigner::from_pem(&sa.client_email, sa.private_key_id.clone(), &sa.private_key)
                .map_err(|reason| {
                    common.err(&format!(
                        "service_account: {}",
                        ServiceAccountError::Key {
                            path: path.to_string(),
                            reason
                        }
                    ))
                })?;
        let project_id = cfg
            .project_id
            .clone()
            .or(sa.project_id.clone())
            .filter(|p| !p.trim().is_empty())
            .ok_or_else(|| {
                common.err("an fcm channel needs project_id (in the config or the key file)")
            })?;
        let token_url = cfg
            .token_url
            .clone()
            .or(sa.token_uri.clone())
            .unwrap_or_else(|| DEFAULT_TOKEN_URL.to_string());
        reqwest::Url::parse(&token_url).map_err(|e| common.err(&format!("token_url: {e}")))?;
        if !cfg.allow_insecure_http {
            crate::http::Origin::parse(&token_url)
                .and_then(|o| crate::config::plain_http_problem(&o))
                .map_err(|e| common.err(&format!("token_url: {e}")))?;
        }
        let base = cfg.api_base.as_deref().unwrap_or(DEFAULT_API_BASE);
        let http = ProviderHttp::new(common, cfg.ca_file.as_deref(), base)?;
        let clock = opts.clock.clone();
        let tokens = TokenCache::new(
            format!("fcm:{}", sa.client_email),
            ctx.vault.clone(),
            ctx.node_id.clone(),
            opts,
        );
        Ok(Self {
            name: common.name.clone(),
            project_id,
            token_url,
            signer,
            http,
            tokens,
            clock,
        })
    }

    async fn token(&self) -> Result<String, TokenError> {
        self.tokens.get(|_hint| self.fetch_token()).await
    }

    async fn fetch_token(&self) -> Result<FetchedToken, TokenError> {
        let iat = self.clock.now_ms().div_euclid(1000);
        let assertion = self
            .signer
            .assertion(&self.token_url, iat)
            .map_err(TokenError::Failed)?;
        let req = self.http.post(&self.token_url).form(&[
            ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
            ("assertion", assertion.as_str()),
        ]);
        let path = "token endpoint";
        let answer = self
            .http
            .call(req, "POST", path)
            .await
            .map_err(|e| TokenError::Failed(e.to_string()))?;
        let v = answer.json().unwrap_or(Value::Null);
        if answer.status == 429 {
            return Err(TokenError::Throttled(format!("{path}: HTTP 429")));
        }
        if !(200..300).contains(&answer.status) {
            let err = v.get("error").and_then(Value::as_str).unwrap_or("");
            let desc = v
                .get("error_description")
                .and_then(Value::as_str)
                .unwrap_or("");
            return Err(TokenError::Failed(format!(
                "{path}: HTTP {}: {err} {desc}",
                answer.status
            )));
        }
        match (
            v.get("access_token").and_then(Value::as_str),
            v.get("expires_in").and_then(Value::as_i64),
        ) {
            (Some(t), Some(secs)) if !t.is_empty() => Ok(FetchedToken {
                token: t.to_string(),
                expires_in_secs: secs,
            }),
            _ => Err(TokenError::Failed(format!(
                "{path}: answer has no access_token/expires_in"
            ))),
        }
    }

    fn send_path(&self) -> String {
        format!("/v1/projects/{}/messages:send", self.project_id)
    }
}

/// `{"message": {token, notification?, data?, ...}}` for a delivery.
fn send_body(d: &Delivery) -> Result<Value, String> {
    let mut msg: Map<String, Value> = if d.message.trim().is_empty() {
        Map::new()
    } else {
        match serde_json::from_str(&d.message) {
            Ok(Value::Object(m)) => m,
            Ok(_) => return Err("the fcm message must be a JSON object".into()),
            Err(e) => return Err(format!("the fcm message is not JSON: {e}")),
        }
    };
    crate::shape::check(crate::ChannelKind::Fcm, &Value::Object(msg.clone()))
        .map_err(|e| e.message)?;
    if d.recipient.trim().is_empty() {
        return Err("the recipient (a device token) is empty".into());
    }
    msg.remove("topic");
    msg.remove("condition");
    msg.insert("token".into(), Value::String(d.recipient.clone()));
    Ok(serde_json::json!({ "message": Value::Object(msg) }))
}

enum Verdict {
    Done(SendOutcome),
    Unauthenticated(SendOutcome),
}

fn classify(answer: &Answer) -> Verdict {
    let status = Some(i64::from(answer.status));
    let v = answer.json();
    if (200..300).contains(&answer.status) {
        return Verdict::Done(SendOutcome::Delivered {
            provider_msgid: v
                .as_ref()
                .and_then(|v| v.get("name"))
                .and_then(Value::as_str)
                .map(str::to_string),
            status,
        });
    }
    let err = v.as_ref().and_then(|v| v.get("error"));
    let detail_code = err
        .and_then(|e| e.get("details"))
        .and_then(Value::as_array)
        .and_then(|ds| {
            ds.iter()
                .find_map(|d| d.get("errorCode").and_then(Value::as_str))
        });
    let status_name = err.and_then(|e| e.get("status")).and_then(Value::as_str);
    let message = err
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .map(|m| m.chars().take(300).collect::<String>())
        .unwrap_or_else(|| answer.snippet());
    let code = detail_code.or(status_name).unwrap_or("");
    let error = format!("HTTP {} {code}: {message}", answer.status);
    let retry_after_ms = answer.retry_after_ms();
    let outcome = match (code, answer.status) {
        ("UNREGISTERED", _) => SendOutcome::Permanent {
            error: format!("the device token is invalid (UNREGISTERED): {message}"),
            status,
        },
        ("QUOTA_EXCEEDED", _) | (_, 429) => SendOutcome::Throttled {
            error,
            status,
            retry_after_ms,
        },
        ("UNAVAILABLE" | "INTERNAL", _) | (_, 500..=599) => SendOutcome::Retryable {
            error,
            status,
            retry_after_ms,
        },
        ("THIRD_PARTY_AUTH_ERROR", _) => SendOutcome::Permanent { error, status },
        (_, 401) => return Verdict::Unauthenticated(retryable(error, status)),
        _ => SendOutcome::Permanent { error, status },
    };
    Verdict::Done(outcome)
}

#[async_trait]
impl Channel for FcmChannel {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> ChannelKind {
        ChannelKind::Fcm
    }

    async fn send(&self, d: &Delivery) -> SendOutcome {
        let body = match send_body(d) {
            Ok(b) => b,
            Err(error) => {
                return SendOutcome::Permanent {
                    error,
                    status: None,
                };
            }
        };
        let path = self.send_path();
        let url = self.http.url(&path);
        let (url, path, body) = (&url, &path, &body);
        let outcome = self
            .tokens
            .with_refresh(
                || self.token(),
                |token| async move {
                    let req = self.http.post(url).bearer_auth(&token).json(body);
                    match self.http.call(req, "POST", path).await {
                        Ok(answer) => match classify(&answer) {
                            Verdict::Done(o) => TokenUse::Answered(o),
                            Verdict::Unauthenticated(o) => TokenUse::Rejected(o),
                        },
                        Err(e) => TokenUse::Answered(retryable(e.to_string(), None)),
                    }
                },
            )
            .await
            .unwrap_or_else(token_outcome);
        tracing::debug!(channel = %self.name, timer_id = d.timer_id, class = outcome.class(), "fcm send");
        outcome
    }

    async fn provider_status(&self) -> ProviderStatus {
        ProviderStatus {
            token_valid_until: self.tokens.valid_until().await,
        }
    }

    fn token_key(&self) -> Option<&str> {
        Some(self.tokens.key())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delivery(message: &str) -> Delivery {
        Delivery {
            timer_id: 1,
            kind: herald_core::TimerKind::Timer,
            due_at: 0,
            fired_at: 0,
            attempt: 1,
            recipient: "dev-token".into(),
            message: message.into(),
            idempotency_key: "k".into(),
            traceparent: None,
        }
    }

    #[test]
    fn bodies_target_the_device_token() {
        let b = send_body(&delivery(
            r#"{"notification":{"title":"t"},"data":{"a":"1"},"topic":"x"}"#,
        ))
        .unwrap();
        assert_eq!(b["message"]["token"], "dev-token");
        assert!(b["message"].get("topic").is_none());
        assert!(send_body(&delivery(r#"{"data":{"a":1}}"#)).is_err());
        assert!(send_body(&delivery("")).is_ok());
    }
}
