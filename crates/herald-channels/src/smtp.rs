//! The `smtp` channel: email through an SMTP relay, with lettre.
//!
//! A delivery's message is `{subject, text?, html?}` and its recipient an
//! address. The idempotency key becomes the `Message-ID`, so a retried send is
//! recognisably the same mail to anything downstream that de-duplicates.
//! Answers are classified by their SMTP reply: 4xx (and any failure to reach
//! the server) is worth retrying, 5xx is permanent for that recipient, and
//! 421/451 with a rate wording is treated as throttling.

use std::time::Duration;

use async_trait::async_trait;
use lettre::message::header::ContentType;
use lettre::message::{Mailbox, MultiPart, SinglePart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use serde::Deserialize;

use crate::{
    Channel, ChannelError, ChannelKind, CommonSettings, Delivery, SendOutcome, SmtpConfig, SmtpTls,
};

/// The message object of an email delivery.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EmailMessage {
    subject: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    html: Option<String>,
}

pub struct SmtpChannel {
    name: String,
    from: Mailbox,
    transport: AsyncSmtpTransport<Tokio1Executor>,
}

impl SmtpChannel {
    pub fn new(common: &CommonSettings, cfg: &SmtpConfig) -> Result<Self, ChannelError> {
        let host = cfg.host.trim();
        if host.is_empty() {
            return Err(common.err("host must not be empty"));
        }
        let from: Mailbox = cfg
            .from
            .parse()
            .map_err(|e| common.err(&format!("from: not a valid address: {e}")))?;
        let tls = cfg.tls;
        let port = cfg.port.unwrap_or(match tls {
            SmtpTls::Starttls => 587,
            SmtpTls::None => 25,
        });
        let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(host)
            .port(port)
            .timeout(Some(Duration::from_millis(common.timeout_ms)));
        if tls == SmtpTls::Starttls {
            let params = TlsParameters::new(host.to_string())
                .map_err(|e| common.err(&format!("tls: {e}")))?;
            builder = builder.tls(Tls::Required(params));
        }
        match (&cfg.username, &cfg.password) {
            (Some(user), Some(pass)) => {
                if tls == SmtpTls::None && !cfg.allow_insecure_auth {
                    return Err(common.err(
                        "allow_insecure_auth: tls = \"none\" would send the password in the clear; use tls = \"starttls\", or set allow_insecure_auth = true",
                    ));
                }
                let pass = pass.resolve("password").map_err(|e| common.err(&e))?;
                builder = builder.credentials(Credentials::new(user.clone(), pass));
            }
            (None, None) => {}
            _ => return Err(common.err("username and password go together")),
        }
        Ok(Self {
            name: common.name.clone(),
            from,
            transport: builder.build(),
        })
    }

    fn build_message(&self, d: &Delivery) -> Result<Message, String> {
        let msg: EmailMessage =
            serde_json::from_str(&d.message).map_err(|e| format!("message: {e}"))?;
        let to: Mailbox = d
            .recipient
            .parse()
            .map_err(|e| format!("recipient {:?} is not an email address: {e}", d.recipient))?;
        let builder = Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(msg.subject)
            .message_id(Some(message_id(&d.idempotency_key)));
        let built = match (msg.text, msg.html) {
            (Some(text), None) => builder.header(ContentType::TEXT_PLAIN).body(text),
            (None, Some(html)) => builder.header(ContentType::TEXT_HTML).body(html),
            (Some(text), Some(html)) => builder.multipart(
                MultiPart::alternative()
                    .singlepart(SinglePart::plain(text))
                    .singlepart(SinglePart::html(html)),
            ),
            (None, None) => return Err("message: needs text or html".into()),
        };
        built.map_err(|e| format!("message: {e}"))
    }
}

/// `<key@herald>` with anything outside the Message-ID grammar replaced.
fn message_id(key: &str) -> String {
    let clean: String = key
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.+=".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("<{clean}@herald>")
}

#[async_trait]
impl Channel for SmtpChannel {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> ChannelKind {
        ChannelKind::Smtp
    }

    async fn send(&self, d: &Delivery) -> SendOutcome {
        let email = match self.build_message(d) {
            Ok(m) => m,
            Err(error) => {
                return SendOutcome::Permanent {
                    error,
                    status: None,
                };
            }
        };
        match self.transport.send(email).await {
            Ok(resp) => {
                let text = resp.message().collect::<Vec<_>>().join(" ");
                // Servers name their queue id in the 250 answer ("queued as X").
                let msgid = text
                    .split_once("queued as ")
                    .map(|(_, id)| id.trim().to_string())
                    .unwrap_or_else(|| message_id(&d.idempotency_key));
                SendOutcome::Delivered {
                    provider_msgid: Some(msgid),
                    status: Some(i64::from(u16::from(resp.code()))),
                }
            }
            Err(e) => classify(&e),
        }
    }
}

/// SMTP reply classes: 5xx permanent, 4xx retry (a rate wording: throttled),
/// no reply at all (connection, TLS, timeout): retry.
fn classify(e: &lettre::transport::smtp::Error) -> SendOutcome {
    let status = e.status().map(|c| i64::from(u16::from(c)));
    let error = format!("smtp: {e}");
    if e.is_permanent() {
        return SendOutcome::Permanent { error, status };
    }
    let lower = error.to_ascii_lowercase();
    if e.is_transient()
        && (lower.contains("rate") || lower.contains("too many") || lower.contains("throttl"))
    {
        return SendOutcome::Throttled {
            error,
            status,
            retry_after_ms: None,
        };
    }
    SendOutcome::Retryable {
        error,
        status,
        retry_after_ms: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_ids_are_well_formed() {
        assert_eq!(message_id("timer-42"), "<timer-42@herald>");
        assert_eq!(message_id("a b<c>@d"), "<a_b_c__d@herald>");
    }

    // lettre's connection pool needs a runtime when the transport is built.
    #[tokio::test]
    async fn config_errors_name_the_field() {
        let common = CommonSettings::named("mail");
        let mut c = SmtpConfig {
            host: " ".into(),
            port: None,
            tls: SmtpTls::None,
            username: None,
            password: None,
            from: "Herald <noreply@example.com>".into(),
            allow_insecure_auth: false,
        };
        let e = |c: &SmtpConfig| {
            SmtpChannel::new(&common, c)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert!(e(&c).contains("host"), "{}", e(&c));
        c.host = "127.0.0.1".into();
        assert!(SmtpChannel::new(&common, &c).is_ok());
        c.from = "not an address".into();
        assert!(e(&c).contains("from"), "{}", e(&c));
        c.from = "herald@example.com".into();
        c.username = Some("u".into());
        assert!(e(&c).contains("username and password"), "{}", e(&c));
        c.password = Some(crate::SecretSource::Inline("p".into()));
        assert!(e(&c).contains("allow_insecure_auth"), "{}", e(&c));
        c.allow_insecure_auth = true;
        assert!(SmtpChannel::new(&common, &c).is_ok());
    }
}
