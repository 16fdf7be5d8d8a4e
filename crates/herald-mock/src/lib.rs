//! Faithful mocks of the providers Herald delivers to, served over real HTTP.
//!
//! For now this is the webhook sink (`POST /hook`, `POST /hook/{*rest}`); other providers
//! will be added as more routes on the same server. Control endpoints live under
//! `/_mock/`: `GET stats`, `GET requests?limit=&key=`, `GET keys/{key}`,
//! `GET|POST faults`, `POST reset`, `GET health`.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use herald_mock::{MockConfig, MockServer};
//! let server = MockServer::start("127.0.0.1:0".parse().unwrap(), MockConfig::default()).await?;
//! println!("deliver to {}", server.hook_url());
//! let stats = server.stats();
//! println!("{} delivered", stats.delivered);
//! server.shutdown();
//! # Ok(()) }
//! ```

mod control;
mod faults;
mod stats;
mod webhook;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::serve::ListenerExt;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub use faults::Faults;
pub use stats::{KeyStats, Percentiles, RecordedRequest, WebhookStats};
pub use webhook::RING_CAPACITY;

/// How a mock server starts out.
#[derive(Debug, Clone, Default)]
pub struct MockConfig {
    /// Initial faults; can be replaced at runtime.
    pub faults: Faults,
    /// If set, webhook requests must carry a valid `X-Herald-Signature`.
    pub secret: Option<String>,
    /// Seed for the `error_rate` dice.
    pub seed: u64,
}

struct Shared {
    faults: faults::FaultState,
    webhook: webhook::WebhookState,
}

/// Shared state behind the mock routes. Cheap to clone.
#[derive(Clone)]
pub struct MockState {
    shared: Arc<Shared>,
}

impl MockState {
    pub fn new(cfg: MockConfig) -> MockState {
        MockState {
            shared: Arc::new(Shared {
                faults: faults::FaultState::new(cfg.faults, cfg.seed),
                webhook: webhook::WebhookState::new(cfg.secret.as_deref()),
            }),
        }
    }

    /// Webhook sink statistics; the same data as `GET /_mock/stats`.
    pub fn stats(&self) -> WebhookStats {
        self.shared.webhook.stats()
    }

    /// Distinct keys delivered so far, without the cost of a full [`Self::stats`].
    pub fn unique_delivered(&self) -> u64 {
        self.shared.webhook.unique_delivered()
    }

    /// What one Idempotency-Key has seen; zeros for an unknown key.
    pub fn key_stats(&self, key: &str) -> KeyStats {
        self.shared.webhook.key_stats(key)
    }

    /// The newest `limit` recorded requests (only those with `key`, if given), oldest first.
    pub fn requests(&self, limit: usize, key: Option<&str>) -> Vec<RecordedRequest> {
        self.shared.webhook.requests(limit, key)
    }

    pub fn faults(&self) -> Faults {
        self.shared.faults.get()
    }

    /// Replaces the faults; out-of-range values are pulled into range.
    pub fn set_faults(&self, f: Faults) {
        self.shared.faults.set(f);
    }

    /// Forgets all records and statistics and restarts the dice from the seed.
    /// Faults are kept.
    pub fn reset(&self) {
        self.shared.webhook.reset();
        self.shared.faults.rewind();
    }
}

/// Builds the router with every mock route, for serving on a listener of your own.
pub fn router(state: MockState) -> Router {
    Router::new()
        .merge(webhook::routes())
        .merge(control::routes())
        .with_state(state)
}

/// A mock server running in a spawned tokio task. Dropping it stops serving.
pub struct MockServer {
    pub addr: SocketAddr,
    state: MockState,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl MockServer {
    /// Binds `listen` (port 0 picks a free port) and serves in a spawned tokio task.
    pub async fn start(listen: SocketAddr, cfg: MockConfig) -> std::io::Result<MockServer> {
        let listener = TcpListener::bind(listen).await?;
        let addr = listener.local_addr()?;
        let state = MockState::new(cfg);
        let app = router(state.clone());
        let (stop, stopped) = oneshot::channel::<()>();
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let task = tokio::spawn(async move {
            let serving = axum::serve(listener, app).with_graceful_shutdown(async move {
                let _ = stopped.await;
            });
            if let Err(e) = serving.await {
                tracing::warn!(error = %e, "mock server stopped with an error");
            }
        });
        tracing::debug!(%addr, "mock server listening");
        Ok(MockServer {
            addr,
            state,
            stop: Some(stop),
            task: Some(task),
        })
    }

    /// `http://<addr>`
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://<addr>/hook`, the webhook sink.
    pub fn hook_url(&self) -> String {
        format!("http://{}/hook", self.addr)
    }

    /// The shared state, e.g. to read stats without HTTP.
    pub fn state(&self) -> &MockState {
        &self.state
    }

    /// Same data as `GET /_mock/stats`.
    pub fn stats(&self) -> WebhookStats {
        self.state.stats()
    }

    /// Distinct keys delivered so far; cheap enough to poll.
    pub fn unique_delivered(&self) -> u64 {
        self.state.unique_delivered()
    }

    pub fn key_stats(&self, key: &str) -> KeyStats {
        self.state.key_stats(key)
    }

    pub fn requests(&self, limit: usize, key: Option<&str>) -> Vec<RecordedRequest> {
        self.state.requests(limit, key)
    }

    pub fn faults(&self) -> Faults {
        self.state.faults()
    }

    pub fn set_faults(&self, f: Faults) {
        self.state.set_faults(f);
    }

    pub fn reset(&self) {
        self.state.reset();
    }

    /// Stops accepting connections; in-flight requests finish in the background.
    pub fn shutdown(mut self) {
        self.signal_stop();
    }

    /// Stops accepting connections and waits until the server task has ended
    /// (open connections finish their current request and close).
    pub async fn shutdown_and_wait(mut self) {
        self.signal_stop();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }

    fn signal_stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.signal_stop();
    }
}
