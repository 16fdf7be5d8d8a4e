//! Handler tests: the whole router in process (`tower::ServiceExt::oneshot`),
//! over a real engine on an in-memory SQLite store that can be told to fail.
//! Routing, validation and error mapping are checked here; what needs the
//! binary, real HTTP or a provider mock is in `crates/herald/tests`.

mod access;
mod audit;
mod bulk_limits;
mod campaigns;
mod channel_tenants;
mod control_chars;
mod digests;
mod faulty_store;
mod keys;
mod overview;
mod quotas;
mod rejections;
mod route_table;
mod routing;
mod schedules;
mod sessions;
mod store_errors;
mod subjects;
mod subscribers;
mod tenants;

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Method, Request, StatusCode, header};
use herald_channels::LogChannel;
use herald_core::{Clock, RetryPolicy, SystemClock};
use herald_engine::{ChannelSpec, Engine, EngineConfig};
use herald_store::{Store, StoreOptions};
use http_body_util::BodyExt;
use metrics_exporter_prometheus::PrometheusBuilder;
use serde_json::Value;
use tower::ServiceExt;

use crate::{
    Access, ApiConfig, AppParts, AppState, AuditLog, AuditSettings, AuditWriter, AuthConfig,
    Quotas, RemindersConfig, router,
};
use faulty_store::FaultyStore;

/// The API over a fresh store.
struct Api {
    router: Router,
    store: Arc<FaultyStore>,
    engine: Engine,
    /// Kept so its task writes until the test ends.
    _audit: AuditWriter,
}

impl Api {
    async fn new() -> Self {
        Self::with(ApiConfig::default()).await
    }

    async fn with(api: ApiConfig) -> Self {
        Self::build(api, Access::open(&AuthConfig::default())).await
    }

    /// The API in `access`'s mode.
    async fn with_access(access: Access) -> Self {
        Self::build(ApiConfig::default(), access).await
    }

    async fn build(api: ApiConfig, access: Access) -> Self {
        let options = Options {
            api,
            ..Options::default()
        };
        Self::build_with(options, |_| access).await
    }

    /// The API with `options`, in the mode `access` makes (given the store,
    /// for stored keys).
    async fn build_with(options: Options, access: impl FnOnce(Arc<dyn Store>) -> Access) -> Self {
        let Options {
            api,
            quotas,
            channels,
            stats_interval_ms,
            clock,
            data_unaudited,
        } = options;
        let inner = herald_store::open("sqlite::memory:", &StoreOptions::default())
            .await
            .expect("in-memory store");
        let store = Arc::new(FaultyStore::new(inner));
        let access = access(store.clone() as Arc<dyn Store>);
        let shards = store.init_shards(16).await.expect("shards");
        let clock: Arc<dyn Clock> = match clock {
            Some(c) => Arc::new(c),
            None => Arc::new(SystemClock),
        };
        let log = ChannelSpec::new(
            Arc::new(LogChannel::new("log")),
            4,
            None,
            RetryPolicy::default(),
        );
        let mut specs = vec![log];
        for name in channels {
            specs.push(ChannelSpec::new(
                Arc::new(LogChannel::new(name)),
                4,
                None,
                RetryPolicy::default(),
            ));
        }
        let mut cfg = EngineConfig::default();
        cfg.campaign.workers = 1;
        if let Some(ms) = stats_interval_ms {
            cfg.stats_interval_ms = ms;
        }
        let engine = Engine::start(
            store.clone() as Arc<dyn Store>,
            clock.clone(),
            specs,
            cfg,
            shards,
            "handler-tests",
        )
        .await;
        let (audit, audit_writer) = AuditLog::start(
            store.clone() as Arc<dyn Store>,
            AuditSettings {
                flush_every: std::time::Duration::from_millis(10),
                tally_every: std::time::Duration::from_millis(10),
                data_plane: !data_unaudited,
                ..AuditSettings::default()
            },
        );
        let quotas = Quotas::new(quotas);
        quotas
            .refresh(&*store)
            .await
            .expect("counting pending timers");
        let state = AppState::new(AppParts {
            campaigns: engine.campaigns(),
            engine: engine.clone(),
            clock,
            api: Arc::new(api),
            reminders: Arc::new(RemindersConfig {
                default_channel: Some("log".into()),
                ..RemindersConfig::default()
            }),
            default_routes: Default::default(),
            metrics: PrometheusBuilder::new().build_recorder().handle(),
            access: Arc::new(access),
            audit,
            quotas: Arc::new(quotas),
            reload: None,
            forecasts: Default::default(),
        });
        Self {
            router: router(state),
            store,
            engine,
            _audit: audit_writer,
        }
    }

    /// Sends one request; the answer's status and body (JSON, or the text as
    /// a JSON string).
    async fn send(&self, req: Request<Body>) -> (StatusCode, Value) {
        let (status, _, body) = self.exchange(req).await;
        (status, body)
    }

    /// Sends one request (addressed to `localhost` unless it names a
    /// `Host`, as every HTTP/1.1 client does); the answer's status, headers
    /// and body.
    async fn exchange(&self, mut req: Request<Body>) -> (StatusCode, HeaderMap, Value) {
        if !req.headers().contains_key(header::HOST) {
            req.headers_mut()
                .insert(header::HOST, HeaderValue::from_static("localhost"));
        }
        let resp = self
            .router
            .clone()
            .oneshot(req)
            .await
            .expect("the router is infallible");
        let status = resp.status();
        let headers = resp.headers().clone();
        let bytes = resp.into_body().collect().await.expect("body").to_bytes();
        let body = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
        (status, headers, body)
    }

    async fn call(&self, method: Method, uri: &str, body: Option<Value>) -> (StatusCode, Value) {
        let req = Request::builder().method(method).uri(uri);
        let req = match body {
            Some(b) => req
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(b.to_string())),
            None => req.body(Body::empty()),
        };
        self.send(req.expect("request")).await
    }

    async fn get(&self, uri: &str) -> (StatusCode, Value) {
        self.call(Method::GET, uri, None).await
    }

    async fn post(&self, uri: &str, body: Value) -> (StatusCode, Value) {
        self.call(Method::POST, uri, Some(body)).await
    }

    async fn upload(&self, uri: &str, content_type: &str, body: &str) -> (StatusCode, Value) {
        let req = Request::post(uri)
            .header(header::CONTENT_TYPE, content_type)
            .body(Body::from(body.to_string()))
            .expect("request");
        self.send(req).await
    }
}

/// What a test API is made with besides its mode.
#[derive(Default)]
struct Options {
    api: ApiConfig,
    /// `max_pending` by tenant.
    quotas: std::collections::HashMap<herald_core::TenantId, u64>,
    /// Log channels besides `log`.
    channels: Vec<&'static str>,
    /// How often the engine counts timers by state (the default otherwise).
    stats_interval_ms: Option<u64>,
    /// The time the API and engine read (the system's otherwise).
    clock: Option<herald_core::ManualClock>,
    /// Leave single creates of data out of the audit log, as a server does
    /// by default (these tests record them unless told otherwise).
    data_unaudited: bool,
}

/// Asserts the API's error shape, returning the error object.
#[track_caller]
fn error(status: StatusCode, body: &Value, want_status: StatusCode, want_code: &str) -> Value {
    assert_eq!(status, want_status, "{body}");
    assert_eq!(body["error"]["code"], want_code, "{body}");
    assert!(body["error"]["message"].is_string(), "{body}");
    body["error"].clone()
}

/// A rule body that passes every check.
fn rule_body() -> Value {
    serde_json::json!({
        "name": "daily",
        "schedule": {"type": "cron", "cron": "0 9 * * *", "timezone": "UTC"},
        "audience": {"users": ["u1", "u2"]},
        "channel": "log",
        "message": {"text": "hi"},
    })
}
