//! The sink of `herald bench fairness`: the provider mock's webhook sink,
//! served behind a thin layer that notes, for every first delivery, which
//! tenant it belongs to and when it arrived. One channel serves every tenant
//! (fairness is about sharing it); the tenant is read from the recipient,
//! which the bench writes as `{tenant}-{i}`.

use std::collections::{BTreeMap, HashSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::serve::ListenerExt;
use herald_core::{Clock, SystemClock};
use herald_mock::{MockConfig, MockState};
use serde::Deserialize;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Larger than any delivery the bench sends.
const MAX_BODY: usize = 64 * 1024;

/// One first delivery at the sink.
#[derive(Clone, Copy, Debug)]
pub(super) struct Arrival {
    pub(super) due_ms: i64,
    pub(super) at_ms: i64,
}

#[derive(Default)]
struct Book {
    /// Idempotency keys already delivered: a retry is not a new arrival.
    seen: HashSet<Box<str>>,
    by_tenant: BTreeMap<String, Vec<Arrival>>,
}

/// What the sink has received, by tenant.
#[derive(Default)]
pub(super) struct Arrivals(Mutex<Book>);

impl Arrivals {
    fn book(&self) -> MutexGuard<'_, Book> {
        // A panic elsewhere cannot leave the book half-written: keep reading.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn note(&self, key: &str, tenant: &str, arrival: Arrival) {
        let mut book = self.book();
        if !book.seen.insert(key.into()) {
            return;
        }
        book.by_tenant
            .entry(tenant.to_string())
            .or_default()
            .push(arrival);
    }

    /// First deliveries of `tenant` so far.
    pub(super) fn count(&self, tenant: &str) -> usize {
        self.book().by_tenant.get(tenant).map_or(0, Vec::len)
    }

    /// `tenant`'s first deliveries, in arrival order.
    pub(super) fn of(&self, tenant: &str) -> Vec<Arrival> {
        self.book()
            .by_tenant
            .get(tenant)
            .cloned()
            .unwrap_or_default()
    }
}

/// The fields of a delivery the layer reads.
#[derive(Deserialize)]
struct Delivery<'a> {
    #[serde(borrow)]
    due_at: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    recipient: std::borrow::Cow<'a, str>,
}

/// (tenant, due ms) of a delivery body.
fn tenant_and_due(body: &[u8]) -> Option<(String, i64)> {
    let d: Delivery<'_> = serde_json::from_slice(body).ok()?;
    let (tenant, _) = d.recipient.split_once('-')?;
    let due = herald_core::time::parse_rfc3339_ms(&d.due_at).ok()?;
    Some((tenant.to_string(), due))
}

async fn note_arrival(State(arrivals): State<Arc<Arrivals>>, req: Request, next: Next) -> Response {
    if req.uri().path() != "/hook" {
        return next.run(req).await;
    }
    let (parts, body) = req.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY).await else {
        return StatusCode::PAYLOAD_TOO_LARGE.into_response();
    };
    let at_ms = SystemClock.now_ms();
    let key = parts
        .headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let seen = tenant_and_due(&bytes);
    let resp = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    if resp.status().is_success()
        && let (Some(key), Some((tenant, due_ms))) = (key, seen)
    {
        arrivals.note(&key, &tenant, Arrival { due_ms, at_ms });
    }
    resp
}

/// The mock, with the layer, serving on a loopback port of its own.
pub(super) struct TenantSink {
    addr: SocketAddr,
    pub(super) arrivals: Arc<Arrivals>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl TenantSink {
    pub(super) async fn start() -> anyhow::Result<TenantSink> {
        let state = MockState::try_new(MockConfig::default())?;
        let arrivals = Arc::new(Arrivals::default());
        let app = herald_mock::router(state).layer(middleware::from_fn_with_state(
            arrivals.clone(),
            note_arrival,
        ));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        // As the mock's own server: no Nagle delay on small answers.
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let serving = axum::serve(listener, app).with_graceful_shutdown(async move {
                let _ = stopped.await;
            });
            if let Err(e) = serving.await {
                tracing::warn!(error = %e, "fairness sink stopped with an error");
            }
        });
        Ok(TenantSink {
            addr,
            arrivals,
            stop: Some(stop),
            task: Some(task),
        })
    }

    /// The `[[channels]]` block, named `sink`, shared by every tenant.
    pub(super) fn channel_toml(&self, concurrency: usize) -> String {
        format!(
            "[[channels]]\nname = \"sink\"\nkind = \"webhook\"\nurl = \"http://{}/hook\"\nconcurrency = {concurrency}\n",
            self.addr
        )
    }

    pub(super) async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tenant_is_the_recipient_prefix() {
        let body = br#"{"id":1,"kind":"timer","due_at":"2026-01-01T00:00:01.000Z","fired_at":"2026-01-01T00:00:01.002Z","attempt":1,"recipient":"b-17","message":{}}"#;
        assert_eq!(
            tenant_and_due(body),
            Some(("b".to_string(), 1_767_225_601_000))
        );
        assert_eq!(tenant_and_due(br#"{"due_at":"x","recipient":"b-1"}"#), None);
        assert_eq!(tenant_and_due(b"not json"), None);
    }

    #[test]
    fn a_retry_is_not_a_second_arrival() {
        let a = Arrivals::default();
        let at = Arrival {
            due_ms: 1,
            at_ms: 2,
        };
        a.note("k1", "a", at);
        a.note("k1", "a", at);
        a.note("k2", "b", at);
        assert_eq!((a.count("a"), a.count("b"), a.count("c")), (1, 1, 0));
    }
}
