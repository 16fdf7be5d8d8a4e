//! TLS to PostgreSQL, with rustls.
//!
//! The URL's `sslmode` says how much to trust the server, as libpq reads it:
//!
//! * `disable`: plain TCP.
//! * `prefer` (the default): TLS if the server offers it, else plain; the
//!   certificate is not checked.
//! * `require`: TLS or no connection; the certificate is not checked (the
//!   link is encrypted, but a machine in the middle is not detected).
//! * `verify-full`: TLS, a certificate chain to a trusted root, and the host
//!   name (or IP address) in it. The roots are the `sslrootcert` file (PEM,
//!   for a private CA) or, without one, the Mozilla roots of `webpki-roots`.
//!
//! `verify-ca` is refused: rustls always checks the name, so it would be
//! `verify-full` under another name.

use std::future::Future;
use std::io;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::config::SslMode;
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};

use crate::{Result, StoreError};

/// How the server's certificate is checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Verify {
    /// Not at all (`prefer`, `require`, and `disable`, which never uses it).
    Nothing,
    /// Chain and name (`verify-full`), against these roots (`None`: webpki-roots).
    Full { root_cert: Option<String> },
}

/// The `sslmode` and `sslrootcert` of a URL, taken out before the driver
/// parses the rest (it knows neither `verify-full` nor `sslrootcert`).
pub(super) fn parse_mode(mode: Option<&str>, root_cert: Option<&str>) -> Result<(SslMode, Verify)> {
    let bad = |why: String| StoreError::refused("store", format!("postgres: {why}"));
    let (ssl, verify) = match mode.unwrap_or("prefer") {
        "disable" => (SslMode::Disable, Verify::Nothing),
        "prefer" => (SslMode::Prefer, Verify::Nothing),
        "require" => (SslMode::Require, Verify::Nothing),
        "verify-full" => (
            SslMode::Require,
            Verify::Full {
                root_cert: root_cert.filter(|r| *r != "system").map(str::to_string),
            },
        ),
        "verify-ca" => {
            return Err(bad(
                "sslmode=verify-ca is not supported: use verify-full (the certificate must name the host)".into(),
            ));
        }
        other => {
            return Err(bad(format!(
                "sslmode={other:?}: expected disable, prefer, require or verify-full"
            )));
        }
    };
    if root_cert.is_some() && !matches!(verify, Verify::Full { .. }) {
        return Err(bad(
            "sslrootcert is only read with sslmode=verify-full".to_string()
        ));
    }
    Ok((ssl, verify))
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The TLS connector for `verify`, its roots loaded (so a missing or bad
/// `sslrootcert` is an error at start, not at the first connection).
pub(super) fn connector(verify: &Verify) -> Result<RustlsConnect> {
    let bad = |why: String| StoreError::refused("store", format!("postgres: TLS: {why}"));
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(e.to_string()))?;
    let config = match verify {
        Verify::Nothing => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoCheck(provider())))
            .with_no_client_auth(),
        Verify::Full { root_cert } => {
            let mut roots = RootCertStore::empty();
            match root_cert {
                Some(path) => {
                    let certs = CertificateDer::pem_file_iter(Path::new(path))
                        .map_err(|e| bad(format!("sslrootcert {path}: {e}")))?
                        .collect::<std::result::Result<Vec<_>, _>>()
                        .map_err(|e| bad(format!("sslrootcert {path}: {e}")))?;
                    if certs.is_empty() {
                        return Err(bad(format!("sslrootcert {path}: no certificate in it")));
                    }
                    for c in certs {
                        roots
                            .add(c)
                            .map_err(|e| bad(format!("sslrootcert {path}: {e}")))?;
                    }
                }
                None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
            }
            builder.with_root_certificates(roots).with_no_client_auth()
        }
    };
    Ok(RustlsConnect {
        config: Arc::new(config),
    })
}

/// Accepts any certificate (`prefer`, `require`), but still checks that the
/// server holds its key: the handshake signatures are verified.
#[derive(Debug)]
struct NoCheck(Arc<CryptoProvider>);

impl ServerCertVerifier for NoCheck {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// Makes one TLS connector per connection, for the host being dialled.
#[derive(Clone)]
pub(super) struct RustlsConnect {
    config: Arc<ClientConfig>,
}

impl<S> MakeTlsConnect<S> for RustlsConnect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type TlsConnect = ConnectOne;
    type Error = io::Error;

    fn make_tls_connect(&mut self, domain: &str) -> io::Result<ConnectOne> {
        let name = ServerName::try_from(domain.to_string())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("{domain:?}: {e}")))?;
        Ok(ConnectOne {
            config: self.config.clone(),
            name,
        })
    }
}

/// The TLS handshake with one host.
pub(super) struct ConnectOne {
    config: Arc<ClientConfig>,
    name: ServerName<'static>,
}

impl<S> TlsConnect<S> for ConnectOne
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<RustlsStream<S>>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        Box::pin(async move {
            tokio_rustls::TlsConnector::from(self.config)
                .connect(self.name, stream)
                .await
                .map(|s| RustlsStream(Box::new(s)))
        })
    }
}

/// An established TLS session.
pub(super) struct RustlsStream<S>(Box<tokio_rustls::client::TlsStream<S>>);

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for RustlsStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for RustlsStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut *self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_shutdown(cx)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> TlsStream for RustlsStream<S> {
    /// No channel binding: SCRAM then runs without it, as libpq's default
    /// `channel_binding=prefer` allows.
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_as_libpq_reads_them() {
        assert_eq!(parse_mode(None, None).unwrap().0, SslMode::Prefer);
        assert_eq!(
            parse_mode(Some("disable"), None).unwrap(),
            (SslMode::Disable, Verify::Nothing)
        );
        assert_eq!(
            parse_mode(Some("require"), None).unwrap(),
            (SslMode::Require, Verify::Nothing)
        );
        assert_eq!(
            parse_mode(Some("verify-full"), Some("/ca.pem")).unwrap(),
            (
                SslMode::Require,
                Verify::Full {
                    root_cert: Some("/ca.pem".into())
                }
            )
        );
        assert_eq!(
            parse_mode(Some("verify-full"), Some("system")).unwrap().1,
            Verify::Full { root_cert: None }
        );
        for (mode, root) in [
            (Some("verify-ca"), None),
            (Some("bogus"), None),
            (Some("require"), Some("/ca.pem")),
        ] {
            assert!(parse_mode(mode, root).is_err(), "{mode:?} {root:?}");
        }
    }

    #[test]
    fn a_missing_root_file_is_an_error_at_once() {
        let e = connector(&Verify::Full {
            root_cert: Some("/nonexistent/ca.pem".into()),
        })
        .err()
        .unwrap();
        assert!(e.to_string().contains("sslrootcert"), "{e}");
        assert!(connector(&Verify::Nothing).is_ok());
        assert!(connector(&Verify::Full { root_cert: None }).is_ok());
    }
}
