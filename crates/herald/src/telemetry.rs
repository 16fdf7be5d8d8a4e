//! `[telemetry]`: OpenTelemetry traces exported over OTLP/HTTP (protobuf),
//! and the logging set up around them.
//!
//! Export is off unless an endpoint is configured (here, or through the
//! standard `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `OTEL_EXPORTER_OTLP_ENDPOINT`).
//! When it is on, the spans on `herald_engine::trace::TARGET` go to a
//! batch processor (its own thread) and from there to the collector, through
//! Herald's reqwest client run on the tokio runtime; the log output never
//! sees them. When it is off, no layer takes that target at all, so those
//! spans cost next to nothing. Metrics stay on `/metrics` (Prometheus).

use std::io::IsTerminal;
use std::time::Duration;

use anyhow::Context;
use async_trait::async_trait;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, Sampler, SdkTracerProvider,
};
use serde::{Deserialize, Serialize};
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{EnvFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// `[telemetry]` in the configuration file. Read at start only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TelemetryConfig {
    /// The collector's OTLP/HTTP address (`http://collector:4318`); traces
    /// go to its `/v1/traces` (a URL already ending so is used as it is).
    /// Unset: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, then
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`; none of them: no export.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// `service.name` of the exported spans. Unset: `OTEL_SERVICE_NAME`,
    /// else `herald`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_name: Option<String>,
    /// Share of new traces recorded, 0 to 1. A span whose parent came with a
    /// `traceparent` follows the parent's sampled flag instead.
    pub sample_ratio: f64,
    /// Longest one export request may take.
    pub export_timeout_ms: u64,
    /// Finished spans held for export; past it new ones are dropped (a
    /// collector that cannot keep up never slows deliveries).
    pub queue_size: usize,
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        Self {
            endpoint: None,
            service_name: None,
            sample_ratio: 1.0,
            export_timeout_ms: 10_000,
            queue_size: 16_384,
        }
    }
}

/// Spans per export request.
const BATCH: usize = 1_024;

/// Longest a span waits in the queue before a batch goes.
const BATCH_DELAY: Duration = Duration::from_secs(1);

impl TelemetryConfig {
    pub fn validate(&self) -> Result<(), String> {
        if let Some(e) = &self.endpoint {
            endpoint_url(e).map_err(|why| format!("telemetry.endpoint: {why}"))?;
        }
        if self
            .service_name
            .as_deref()
            .is_some_and(|s| s.trim().is_empty())
        {
            return Err("telemetry.service_name must not be empty".into());
        }
        if !(0.0..=1.0).contains(&self.sample_ratio) {
            return Err("telemetry.sample_ratio must be between 0 and 1".into());
        }
        if self.export_timeout_ms == 0 {
            return Err("telemetry.export_timeout_ms must be at least 1".into());
        }
        if self.queue_size == 0 {
            return Err("telemetry.queue_size must be at least 1".into());
        }
        Ok(())
    }

    /// The traces URL to export to, if export is on: the setting, else the
    /// standard variables.
    fn traces_url(&self) -> anyhow::Result<Option<String>> {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let (raw, from) = if let Some(e) = &self.endpoint {
            (e.clone(), "telemetry.endpoint")
        } else if let Some(e) = env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            // The signal's own variable is the whole URL, as the spec has it.
            return Ok(Some(e));
        } else if let Some(e) = env("OTEL_EXPORTER_OTLP_ENDPOINT") {
            (e, "OTEL_EXPORTER_OTLP_ENDPOINT")
        } else {
            return Ok(None);
        };
        endpoint_url(&raw)
            .map(Some)
            .map_err(|why| anyhow::anyhow!("{from}: {why}"))
    }

    fn service_name(&self) -> String {
        self.service_name
            .clone()
            .or_else(|| std::env::var("OTEL_SERVICE_NAME").ok())
            .filter(|s| !s.trim().is_empty())
            .unwrap_or_else(|| "herald".into())
    }
}

/// `base` as the URL traces are posted to: `<base>/v1/traces`, unless it
/// already ends so.
fn endpoint_url(base: &str) -> Result<String, String> {
    let url =
        reqwest::Url::parse(base.trim()).map_err(|e| format!("{base:?} is not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("{base:?} is not an http or https URL"));
    }
    let s = url.as_str().trim_end_matches('/');
    Ok(if s.ends_with("/v1/traces") {
        s.to_string()
    } else {
        format!("{s}/v1/traces")
    })
}

/// The running exporter; [`Exporter::shutdown`] sends what is queued.
pub struct Exporter {
    provider: SdkTracerProvider,
    url: String,
    sample_ratio: f64,
}

impl Exporter {
    /// Starts the exporter when an endpoint is configured; `None` when not.
    /// Must run inside the tokio runtime (exports are sent on it).
    pub fn start(cfg: &TelemetryConfig, node_id: &str) -> anyhow::Result<Option<Self>> {
        let Some(url) = cfg.traces_url()? else {
            return Ok(None);
        };
        let timeout = Duration::from_millis(cfg.export_timeout_ms);
        let client = OnRuntime {
            client: reqwest::Client::builder()
                .timeout(timeout)
                .build()
                .context("building the OTLP HTTP client")?,
            rt: tokio::runtime::Handle::current(),
        };
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(client)
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(url.clone())
            .with_timeout(timeout)
            .build()
            .context("building the OTLP span exporter")?;
        // The SDK reads the standard `OTEL_BSP_*` variables; the queue is
        // Herald's setting, and the delay Herald's unless the variable sets it.
        let mut batch = BatchConfigBuilder::default()
            .with_max_queue_size(cfg.queue_size)
            .with_max_export_batch_size(BATCH.min(cfg.queue_size));
        if std::env::var_os("OTEL_BSP_SCHEDULE_DELAY").is_none() {
            batch = batch.with_scheduled_delay(BATCH_DELAY);
        }
        let batch = batch.build();
        let processor = BatchSpanProcessor::builder(exporter)
            .with_batch_config(batch)
            .build();
        let resource = Resource::builder()
            .with_service_name(cfg.service_name())
            .with_attribute(opentelemetry::KeyValue::new(
                "service.version",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_attribute(opentelemetry::KeyValue::new(
                "service.instance.id",
                node_id.to_string(),
            ))
            .build();
        let provider = SdkTracerProvider::builder()
            .with_span_processor(processor)
            .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
                cfg.sample_ratio,
            ))))
            .with_resource(resource)
            .build();
        Ok(Some(Self {
            provider,
            url,
            sample_ratio: cfg.sample_ratio,
        }))
    }

    /// Exports what is still queued and stops (the drain on SIGTERM ends here).
    pub async fn shutdown(self) {
        let provider = self.provider;
        let done = tokio::task::spawn_blocking(move || provider.shutdown()).await;
        match done {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "exporting the last spans failed"),
            Err(e) => tracing::warn!(error = %e, "exporting the last spans failed"),
        }
    }
}

/// The OTLP exporter's HTTP client: Herald's reqwest client, each request
/// run on the tokio runtime (the batch processor's own thread has none).
#[derive(Debug)]
struct OnRuntime {
    client: reqwest::Client,
    rt: tokio::runtime::Handle,
}

#[async_trait]
impl HttpClient for OnRuntime {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let client = self.client.clone();
        let sent = self.rt.spawn(async move {
            let request = reqwest::Request::try_from(request)?;
            let answer = client.execute(request).await?;
            let status = answer.status();
            let headers = answer.headers().clone();
            let body = answer.bytes().await?;
            let mut out = Response::new(body);
            *out.status_mut() = status;
            *out.headers_mut() = headers;
            Ok::<_, HttpError>(out)
        });
        sent.await.map_err(|e| Box::new(e) as HttpError)?
    }
}

/// Logs to stderr, and with `exporter` the exported spans to it. Colour
/// codes are written only when stderr is a terminal (and `NO_COLOR` is
/// unset), so a log file or a pipe holds plain text.
pub fn init_logging(exporter: Option<&Exporter>) {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let ansi = std::io::stderr().is_terminal() && !no_color;
    match exporter {
        None => {
            // Exactly the log layer: no subscriber wants the span target,
            // so its call sites stay disabled.
            tracing_subscriber::fmt()
                .with_env_filter(log_filter())
                .with_writer(std::io::stderr)
                .with_ansi(ansi)
                .init();
        }
        Some(e) => {
            let log = tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(ansi)
                .with_filter(log_filter());
            let spans = tracing_opentelemetry::layer()
                .with_tracer(e.provider.tracer("herald"))
                .with_location(false)
                .with_threads(false)
                .with_tracked_inactivity(false)
                .with_target(false)
                .with_filter(
                    Targets::new().with_target(herald_engine::trace::TARGET, tracing::Level::INFO),
                );
            tracing_subscriber::registry().with(log).with(spans).init();
            herald_engine::trace::set_exporting(true);
            tracing::info!(endpoint = %e.url, sample_ratio = e.sample_ratio, "exporting traces over OTLP/HTTP");
        }
    }
}

/// `RUST_LOG` (default `info`), never with the exported spans' target.
fn log_filter() -> EnvFilter {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    match format!("{}=off", herald_engine::trace::TARGET).parse() {
        Ok(off) => filter.add_directive(off),
        Err(_) => filter,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_is_a_base_or_the_traces_url() {
        assert_eq!(
            endpoint_url("http://127.0.0.1:4318").unwrap(),
            "http://127.0.0.1:4318/v1/traces"
        );
        assert_eq!(
            endpoint_url("https://c.example/otlp/").unwrap(),
            "https://c.example/otlp/v1/traces"
        );
        assert_eq!(
            endpoint_url("http://c:4318/v1/traces").unwrap(),
            "http://c:4318/v1/traces"
        );
        assert!(endpoint_url("c:4318").is_err());
        assert!(endpoint_url("ftp://c/").is_err());
    }

    #[test]
    fn a_bad_setting_names_its_field() {
        for (cfg, field) in [
            (
                TelemetryConfig {
                    endpoint: Some("nowhere".into()),
                    ..Default::default()
                },
                "telemetry.endpoint",
            ),
            (
                TelemetryConfig {
                    sample_ratio: 1.5,
                    ..Default::default()
                },
                "telemetry.sample_ratio",
            ),
            (
                TelemetryConfig {
                    service_name: Some(" ".into()),
                    ..Default::default()
                },
                "telemetry.service_name",
            ),
            (
                TelemetryConfig {
                    export_timeout_ms: 0,
                    ..Default::default()
                },
                "telemetry.export_timeout_ms",
            ),
            (
                TelemetryConfig {
                    queue_size: 0,
                    ..Default::default()
                },
                "telemetry.queue_size",
            ),
        ] {
            let err = cfg.validate().unwrap_err();
            assert!(err.contains(field), "{err}");
        }
        assert_eq!(TelemetryConfig::default().validate(), Ok(()));
    }
}
