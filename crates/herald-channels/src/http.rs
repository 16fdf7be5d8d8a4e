//! A keep-alive HTTP/1.1 connection pool for one origin, built on hyper's
//! connection API.
//!
//! Webhook delivery is one small `POST` after another to the same origin. A
//! general-purpose client spends most of its time on layers this never uses:
//! per-request URL handling, redirect and proxy policy, and pool bookkeeping.
//! Profiling put them at about a third of the server's CPU in a burst. Here a
//! request takes an idle connection from a stack, or dials a new one. It
//! writes, reads the whole answer, and puts the connection back.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::HeaderValue;
use hyper::{HeaderMap, Request, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};

/// Where requests go: scheme, host and port, and the parts every request repeats.
#[derive(Debug, Clone)]
pub struct Origin {
    pub https: bool,
    pub host: String,
    pub port: u16,
    /// The `Host` header.
    pub authority: HeaderValue,
    /// Path and query every request is sent to.
    pub path: Uri,
}

impl Origin {
    /// Parses an `http://` or `https://` URL.
    pub fn parse(url: &str) -> Result<Origin, String> {
        let uri: Uri = url
            .parse()
            .map_err(|e| format!("{url:?} is not a valid URL: {e}"))?;
        let https = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => return Err(format!("{url:?} must start with http:// or https://")),
        };
        let host = uri
            .host()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| format!("{url:?} has no host"))?;
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let authority = uri.authority().map(|a| a.as_str()).unwrap_or(host);
        let authority = HeaderValue::from_str(authority).map_err(|e| format!("{url:?}: {e}"))?;
        let path: Uri = uri
            .path_and_query()
            .map(|p| p.as_str())
            .unwrap_or("/")
            .parse()
            .map_err(|e| format!("{url:?}: {e}"))?;
        Ok(Origin {
            https,
            // IPv6 literals come bracketed in URLs; sockets want them bare.
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string(),
            port,
            authority,
            path,
        })
    }
}

/// Why a request got no answer.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("connect to {0} failed: {1}")]
    Connect(String, String),
    #[error("TLS handshake with {0} failed: {1}")]
    Tls(String, String),
    #[error("request failed: {0}")]
    Request(String),
}

/// A complete answer.
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

type Conn = SendRequest<Full<Bytes>>;

pub struct Pool {
    origin: Origin,
    idle: Mutex<Vec<Conn>>,
    max_idle: usize,
    connect_timeout: Duration,
    tls: Option<TlsConnector>,
}

impl Pool {
    /// A pool keeping at most `max_idle` idle connections. `extra_roots` are
    /// trusted beside the bundled web PKI roots (for private CAs).
    pub fn new(
        origin: Origin,
        max_idle: usize,
        connect_timeout: Duration,
        extra_roots: Vec<CertificateDer<'static>>,
    ) -> Result<Pool, String> {
        let tls = if origin.https {
            Some(tls_connector(extra_roots)?)
        } else {
            None
        };
        Ok(Pool {
            origin,
            idle: Mutex::new(Vec::new()),
            max_idle,
            connect_timeout,
            tls,
        })
    }

    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    /// Sends the request `make` builds and reads the answer, keeping at most
    /// `max_body` bytes of it. A request that found its pooled connection
    /// already closed, before anything was written, is sent once more on a
    /// new connection.
    pub async fn send(
        &self,
        make: impl Fn() -> Request<Full<Bytes>>,
        max_body: usize,
    ) -> Result<Answer, HttpError> {
        let (mut conn, reused) = match self.take_idle() {
            Some(c) => (c, true),
            None => (self.connect().await?, false),
        };
        let resp = match conn.send_request(make()).await {
            Ok(r) => r,
            Err(e) if reused && e.is_canceled() => {
                conn = self.connect().await?;
                conn.send_request(make())
                    .await
                    .map_err(|e| HttpError::Request(e.to_string()))?
            }
            Err(e) => return Err(HttpError::Request(e.to_string())),
        };
        let (parts, body) = resp.into_parts();
        // Read the whole answer so the connection can carry the next request.
        // One too large to keep is read no further and its connection dropped.
        match Limited::new(body, max_body).collect().await {
            Ok(collected) => {
                self.put_idle(conn);
                Ok(Answer {
                    status: parts.status,
                    headers: parts.headers,
                    body: collected.to_bytes(),
                })
            }
            Err(e)
                if e.downcast_ref::<http_body_util::LengthLimitError>()
                    .is_some() =>
            {
                Ok(Answer {
                    status: parts.status,
                    headers: parts.headers,
                    body: Bytes::new(),
                })
            }
            Err(e) => Err(HttpError::Request(format!("reading the answer: {e}"))),
        }
    }

    fn take_idle(&self) -> Option<Conn> {
        let mut idle = self.idle.lock();
        while let Some(c) = idle.pop() {
            if c.is_ready() {
                return Some(c);
            }
        }
        None
    }

    fn put_idle(&self, conn: Conn) {
        if conn.is_closed() {
            return;
        }
        let mut idle = self.idle.lock();
        if idle.len() < self.max_idle {
            idle.push(conn);
        }
    }

    async fn connect(&self) -> Result<Conn, HttpError> {
        let o = &self.origin;
        let target = format!("{}:{}", o.host, o.port);
        let tcp = tokio::time::timeout(
            self.connect_timeout,
            TcpStream::connect((o.host.as_str(), o.port)),
        )
        .await
        .map_err(|_| HttpError::Connect(target.clone(), "timed out".into()))?
        .map_err(|e| HttpError::Connect(target.clone(), e.to_string()))?;
        let _ = tcp.set_nodelay(true);
        let io: Box<dyn IoBox> = match &self.tls {
            None => Box::new(tcp),
            Some(tls) => {
                let name = ServerName::try_from(o.host.clone())
                    .map_err(|e| HttpError::Tls(target.clone(), e.to_string()))?;
                let stream = tokio::time::timeout(self.connect_timeout, tls.connect(name, tcp))
                    .await
                    .map_err(|_| HttpError::Tls(target.clone(), "timed out".into()))?
                    .map_err(|e| HttpError::Tls(target.clone(), e.to_string()))?;
                Box::new(stream)
            }
        };
        let (sender, conn) = http1::handshake(TokioIo::new(io))
            .await
            .map_err(|e| HttpError::Connect(target.clone(), e.to_string()))?;
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "webhook connection ended");
            }
        });
        Ok(sender)
    }
}

/// Object-safe stream for plain and TLS connections alike.
trait IoBox: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> IoBox for T {}

fn tls_connector(extra_roots: Vec<CertificateDer<'static>>) -> Result<TlsConnector, String> {
    let mut roots = tokio_rustls::rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    for cert in extra_roots {
        roots
            .add(cert)
            .map_err(|e| format!("bad CA certificate: {e}"))?;
    }
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let mut config = tokio_rustls::rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsConnector::from(Arc::new(config)))
}

/// Reads PEM certificates from `path`.
pub fn load_pem_certs(path: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    let certs: Result<Vec<_>, _> = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("cannot read {path}: {e}"))?
        .collect();
    let certs = certs.map_err(|e| format!("{path}: {e}"))?;
    if certs.is_empty() {
        return Err(format!("{path} holds no PEM certificate"));
    }
    Ok(certs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_origins() {
        let o = Origin::parse("http://127.0.0.1:9000/hook?x=1").unwrap();
        assert!(!o.https);
        assert_eq!((o.host.as_str(), o.port), ("127.0.0.1", 9000));
        assert_eq!(o.authority, "127.0.0.1:9000");
        assert_eq!(o.path, "/hook?x=1");
        let o = Origin::parse("https://example.com").unwrap();
        assert!(o.https);
        assert_eq!(o.port, 443);
        assert_eq!(o.path, "/");
        let o = Origin::parse("http://[::1]:8080/h").unwrap();
        assert_eq!(o.host, "::1");
        assert!(Origin::parse("ftp://x/").is_err());
        assert!(Origin::parse("not a url").is_err());
        assert!(Origin::parse("/relative").is_err());
    }
}
