//! The HTTP listener: accepts connections up to `api.max_connections`,
//! gives each a header read timeout, and on shutdown stops accepting, lets
//! connections finish their requests, and stops waiting for them after
//! `engine.drain_timeout_ms`, so a stalled client cannot hold the process.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower::ServiceExt;

/// How connections are held.
pub struct Edge {
    pub header_read_timeout: Duration,
    pub max_connections: usize,
    /// Longest wait for open connections once shutdown begins.
    pub drain_timeout: Duration,
}

/// Serves `app` on `listener` until `shutdown` completes, then drains.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    edge: Edge,
    shutdown: impl Future<Output = ()>,
) {
    let permits = Arc::new(Semaphore::new(edge.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(edge.header_read_timeout);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(Some(edge.header_read_timeout));
    tokio::pin!(shutdown);
    loop {
        // Past the cap, the next connection waits in the kernel's backlog.
        let permit = tokio::select! {
            p = permits.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(conn) => conn,
                Err(e) => {
                    // Out of file descriptors and the like: wait, do not spin.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        stream.set_nodelay(true).ok();
        let router = app.clone();
        let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
            let mut req = req.map(Body::new);
            // The peer's address: what a request without a key is counted by
            // against a caller's share of the body budget.
            req.extensions_mut()
                .insert(axum::extract::ConnectInfo(peer));
            router.clone().oneshot(req)
        });
        let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
        let conn = graceful.watch(conn.into_owned());
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
            drop(permit);
        });
    }
    drop(listener);
    tokio::select! {
        () = graceful.shutdown() => tracing::info!("every connection closed"),
        () = tokio::time::sleep(edge.drain_timeout) => tracing::warn!(
            drain_timeout_ms = edge.drain_timeout.as_millis() as u64,
            "connections still open after the drain timeout; leaving them"
        ),
    }
}
