//! Faithful mocks of the providers Herald delivers to, served over real HTTP.
//!
//! One server serves every provider on the provider's real paths, so a channel's
//! `api_base` is just `http://127.0.0.1:PORT`:
//!
//! - Webhook sink: `POST /hook`, `POST /hook/{*rest}`.
//! - WeChat Official Account ([`wechat`](crate::WechatConfig)): `GET /cgi-bin/token`,
//!   `POST /cgi-bin/stable_token`, `POST /cgi-bin/message/template/send`; delivery
//!   callbacks (`TEMPLATESENDJOBFINISH` XML) to a configured URL.
//! - WeCom app messages ([`wecom`](crate::WecomConfig)): `GET /cgi-bin/gettoken`,
//!   `POST /cgi-bin/message/send`, `POST /cgi-bin/message/recall`.
//!
//! Control endpoints live under `/_mock/`: `GET stats` (webhook fields plus `wechat` and
//! `wecom` members), `GET requests?limit=&key=`, `GET keys/{key}`, `GET|POST faults`,
//! `POST reset` (every provider), `GET health`; per provider
//! `GET|POST wechat/faults`, `GET|POST wechat/config`, `GET wechat/stats`,
//! `GET wechat/messages?limit=&touser=`, `POST wechat/clock`,
//! `GET|POST wecom/faults`, `GET wecom/stats`, `GET wecom/messages?limit=&touser=`,
//! `POST wecom/age {msgid, secs}`, `POST wecom/clock {advance_secs}`.
//! Tencent APIs answer errors as HTTP 200 with `errcode`/`errmsg`; so do these mocks.
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
mod providers;
mod stats;
mod webhook;
mod wechat;
mod wecom;

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
pub use wechat::{WECHAT_RING_CAPACITY, WechatConfig, WechatFaults, WechatMessage, WechatStats};
pub use wecom::{WECOM_RING_CAPACITY, WecomConfig, WecomFaults, WecomMessage, WecomStats};

/// How a mock server starts out.
#[derive(Debug, Clone, Default)]
pub struct MockConfig {
    /// Initial faults; can be replaced at runtime.
    pub faults: Faults,
    /// If set, webhook requests must carry a valid `X-Herald-Signature`.
    pub secret: Option<String>,
    /// Seed for the `error_rate` dice.
    pub seed: u64,
    /// WeChat Official Account mock: credentials, quotas, callback URL, faults.
    pub wechat: WechatConfig,
    /// WeCom app-message mock: credentials, agent id, faults and directory.
    pub wecom: WecomConfig,
}

struct Shared {
    faults: faults::FaultState,
    webhook: webhook::WebhookState,
    wechat: wechat::WechatState,
    wecom: wecom::WecomState,
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
                wechat: wechat::WechatState::new(cfg.wechat),
                wecom: wecom::WecomState::new(cfg.wecom),
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
        self.shared.wechat.reset();
        self.shared.wecom.reset();
    }

    /// WeChat mock statistics; `GET /_mock/wechat/stats`.
    pub fn wechat_stats(&self) -> WechatStats {
        self.shared.wechat.stats()
    }

    /// Newest accepted template messages (only to `touser`, if given), oldest first.
    pub fn wechat_messages(&self, limit: usize, touser: Option<&str>) -> Vec<WechatMessage> {
        self.shared.wechat.messages(limit, touser)
    }

    pub fn wechat_faults(&self) -> WechatFaults {
        self.shared.wechat.faults()
    }

    pub fn set_wechat_faults(&self, f: WechatFaults) {
        self.shared.wechat.set_faults(f);
    }

    /// WeCom mock statistics; `GET /_mock/wecom/stats`.
    pub fn wecom_stats(&self) -> WecomStats {
        self.shared.wecom.stats()
    }

    /// Newest accepted send calls (only those delivered to `touser`, if given).
    pub fn wecom_messages(&self, limit: usize, touser: Option<&str>) -> Vec<WecomMessage> {
        self.shared.wecom.messages(limit, touser)
    }

    pub fn wecom_faults(&self) -> WecomFaults {
        self.shared.wecom.faults()
    }

    pub fn set_wecom_faults(&self, f: WecomFaults) {
        self.shared.wecom.set_faults(f);
    }
}

/// Builds the router with every mock route, for serving on a listener of your own.
pub fn router(state: MockState) -> Router {
    Router::new()
        .merge(webhook::routes())
        .merge(wechat::routes())
        .merge(wecom::routes())
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
