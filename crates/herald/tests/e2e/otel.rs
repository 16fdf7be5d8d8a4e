//! OpenTelemetry export (issue 38): `herald serve` sends its spans over
//! OTLP/HTTP to a receiver in this test process, which decodes them with the
//! `opentelemetry-proto` definitions. The trace a caller starts runs through
//! the request span, the delivery attempt and on to the webhook's
//! `traceparent`; a campaign's segment run links to its job's request.
//! With export off, the caller's `traceparent` is passed on verbatim
//! (`timers::`'s test of it).

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use prost::Message;
use serde_json::{Value, json};
use tokio::sync::Mutex;

use crate::common::*;
use crate::timers::wait_state;

/// One exported span, flattened: ids in hex, attributes as text.
#[derive(Debug, Clone)]
struct Got {
    name: String,
    trace_id: String,
    span_id: String,
    parent: String,
    links: Vec<(String, String)>,
    attrs: Vec<(String, String)>,
    service: String,
}

impl Got {
    fn attr(&self, key: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

fn text(kv: &KeyValue) -> String {
    match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
        Some(Any::StringValue(s)) => s.clone(),
        Some(Any::IntValue(i)) => i.to_string(),
        Some(Any::BoolValue(b)) => b.to_string(),
        Some(Any::DoubleValue(d)) => d.to_string(),
        other => format!("{other:?}"),
    }
}

/// A minimal OTLP/HTTP traces receiver: `POST /v1/traces` with a protobuf
/// `ExportTraceServiceRequest`, answered as a collector does.
struct Receiver {
    url: String,
    spans: Arc<Mutex<Vec<Got>>>,
    /// Content types of the requests received.
    types: Arc<Mutex<Vec<String>>>,
}

impl Receiver {
    async fn start() -> Receiver {
        let spans: Arc<Mutex<Vec<Got>>> = Arc::default();
        let types: Arc<Mutex<Vec<String>>> = Arc::default();
        let (s, t) = (spans.clone(), types.clone());
        let app = axum::Router::new().route(
            "/v1/traces",
            axum::routing::post(move |headers: HeaderMap, body: Bytes| {
                let (spans, types) = (s.clone(), t.clone());
                async move {
                    let ctype = headers
                        .get("content-type")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_string();
                    types.lock().await.push(ctype);
                    let Ok(req) = ExportTraceServiceRequest::decode(body) else {
                        return (StatusCode::BAD_REQUEST, Vec::new());
                    };
                    let mut got = spans.lock().await;
                    for rs in req.resource_spans {
                        let service = rs
                            .resource
                            .iter()
                            .flat_map(|r| &r.attributes)
                            .find(|kv| kv.key == "service.name")
                            .map(text)
                            .unwrap_or_default();
                        for ss in rs.scope_spans {
                            for sp in ss.spans {
                                got.push(Got {
                                    name: sp.name,
                                    trace_id: hex(&sp.trace_id),
                                    span_id: hex(&sp.span_id),
                                    parent: hex(&sp.parent_span_id),
                                    links: sp
                                        .links
                                        .iter()
                                        .map(|l| (hex(&l.trace_id), hex(&l.span_id)))
                                        .collect(),
                                    attrs: sp
                                        .attributes
                                        .iter()
                                        .map(|kv| (kv.key.clone(), text(kv)))
                                        .collect(),
                                    service: service.clone(),
                                });
                            }
                        }
                    }
                    (
                        StatusCode::OK,
                        ExportTraceServiceResponse::default().encode_to_vec(),
                    )
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the receiver");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        tokio::spawn(async move { axum::serve(listener, app).await });
        Receiver { url, spans, types }
    }

    /// Waits for a span named `name` in `trace_id` that `pick` accepts.
    async fn span(&self, name: &str, pick: impl Fn(&Got) -> bool) -> Got {
        let found = || async {
            self.spans
                .lock()
                .await
                .iter()
                .find(|s| s.name == name && pick(s))
                .cloned()
        };
        wait_for(
            &format!("an exported {name:?} span"),
            Duration::from_secs(20),
            || async { found().await.is_some() },
        )
        .await;
        found().await.expect("found above")
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The parts of a `traceparent`: trace id, parent id, flags.
fn parts(tp: &str) -> (&str, &str, &str) {
    (&tp[3..35], &tp[36..52], &tp[53..55])
}

async fn post_traced(server: &Server, path: &str, traceparent: &str, body: Value) -> Value {
    let resp = client()
        .post(format!("{}{path}", server.url))
        .header("content-type", "application/json")
        .header("traceparent", traceparent)
        .body(body.to_string())
        .send()
        .await
        .expect("post");
    assert_eq!(resp.status().as_u16(), 201);
    resp.json().await.expect("json")
}

#[tokio::test]
async fn a_callers_trace_runs_through_the_request_the_attempt_and_the_webhook() {
    let otlp = Receiver::start().await;
    let mock = Mock::start(&[]).await;
    let top = format!("[telemetry]\nendpoint = \"{}\"\n", otlp.url);
    let server = Server::start(&Server::webhook_config(&mock.hook(), "", &top)).await;
    let (trace, caller) = ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
    let traceparent = format!("00-{trace}-{caller}-01");

    let made = post_traced(
        &server,
        "/v1/timers",
        &traceparent,
        json!({"delay_ms": 0, "channel": "hooks", "recipient": "u-o",
               "idempotency_key": "k-otel", "message": {}}),
    )
    .await;
    let id = made["id"].as_i64().expect("id");

    // The request's span: in the caller's trace, under the caller's span.
    let request = otlp.span("POST /v1/timers", |s| s.trace_id == trace).await;
    assert_eq!(request.parent, caller, "{request:?}");
    assert_eq!(
        request.attr("herald.timer.id"),
        Some(id.to_string().as_str())
    );
    assert_eq!(request.attr("http.response.status_code"), Some("201"));
    assert_eq!(request.attr("http.route"), Some("/v1/timers"));
    assert_eq!(request.service, "herald");
    assert_ne!(request.span_id, caller);

    // The timer keeps the request span's context, not the caller's.
    let t = wait_state(&server, id, "done", Duration::from_secs(20)).await;
    let stored = t["traceparent"].as_str().expect("stored traceparent");
    assert_eq!(
        parts(stored),
        (trace, request.span_id.as_str(), "01"),
        "{t}"
    );

    // The attempt: a child of the request span, with its outcome.
    let attempt = otlp.span("deliver", |s| s.trace_id == trace).await;
    assert_eq!(attempt.parent, request.span_id, "{attempt:?}");
    let want = [
        ("herald.timer.id", id.to_string()),
        ("herald.channel", "hooks".to_string()),
        ("herald.attempt", "1".to_string()),
        ("herald.outcome", "delivered".to_string()),
        ("http.response.status_code", "200".to_string()),
    ];
    for (k, v) in want {
        assert_eq!(attempt.attr(k), Some(v.as_str()), "{k}: {attempt:?}");
    }

    // The webhook carried the attempt's context: the receiver's span hangs
    // under the attempt, in the caller's trace.
    let sent = mock.requests(Some("k-otel")).await;
    let header = sent[0]["headers"]["traceparent"]
        .as_str()
        .unwrap_or_else(|| panic!("no traceparent: {sent:?}"));
    assert_eq!(parts(header), (trace, attempt.span_id.as_str(), "01"));

    // Spans go as protobuf, and the log never shows them.
    assert!(
        otlp.types
            .lock()
            .await
            .iter()
            .all(|t| t == "application/x-protobuf"),
        "{:?}",
        otlp.types.lock().await
    );
    assert!(!server.log().contains("herald_otel"), "{}", server.log());
}

#[tokio::test]
async fn a_bulk_request_and_an_untraced_one_start_traces_of_their_own() {
    let otlp = Receiver::start().await;
    let mock = Mock::start(&[]).await;
    let top = format!("[telemetry]\nendpoint = \"{}/v1/traces\"\n", otlp.url);
    let server = Server::start(&Server::webhook_config(&mock.hook(), "", &top)).await;
    // No caller context: the request span is a root, and the timer holds it.
    let (st, v) = server
        .post(
            "/v1/timers",
            &json!({"delay_ms": 0, "channel": "hooks", "recipient": "u",
                    "idempotency_key": "k-root", "message": {}}),
        )
        .await;
    assert_eq!(st, 201, "{v}");
    let id = v["id"].as_i64().expect("id");
    let t = wait_state(&server, id, "done", Duration::from_secs(20)).await;
    let stored = t["traceparent"].as_str().expect("a trace of its own");
    let root = otlp
        .span("POST /v1/timers", |s| s.span_id == parts(stored).1)
        .await;
    assert_eq!(root.parent, "", "{root:?}");
    let attempt = otlp.span("deliver", |s| s.parent == root.span_id).await;
    let sent = mock.requests(Some("k-root")).await;
    let header = sent[0]["headers"]["traceparent"].as_str().expect("header");
    assert_eq!(parts(header).1, attempt.span_id);

    // A bulk request: one span, every line's attempt under it.
    let trace = "0af7651916cd43dd8448eb211c80319c";
    let lines: String = (0..3)
        .map(|i| {
            json!({"delay_ms": 0, "channel": "hooks", "recipient": "u",
                   "idempotency_key": format!("k-bulk-{i}"), "message": {}})
            .to_string()
                + "\n"
        })
        .collect();
    let resp = client()
        .post(format!("{}/v1/timers:bulk", server.url))
        .header("content-type", "application/x-ndjson")
        .header("traceparent", format!("00-{trace}-b7ad6b7169203331-01"))
        .body(lines)
        .send()
        .await
        .expect("bulk");
    assert_eq!(resp.status().as_u16(), 200);
    let bulk = otlp
        .span("POST /v1/timers:bulk", |s| s.trace_id == trace)
        .await;
    assert_eq!(bulk.parent, "b7ad6b7169203331");
    wait_for(
        "three attempts under the bulk request",
        Duration::from_secs(20),
        || async {
            otlp.spans
                .lock()
                .await
                .iter()
                .filter(|s| s.name == "deliver" && s.parent == bulk.span_id)
                .count()
                == 3
        },
    )
    .await;
}

#[tokio::test]
async fn a_segment_run_links_to_its_jobs_request_and_the_last_spans_go_out_on_sigterm() {
    let otlp = Receiver::start().await;
    let mock = Mock::start(&[]).await;
    // Only the standard variables: the endpoint and the service's name. A
    // long batch delay leaves the flush on SIGTERM to send the last spans.
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("data").join("herald.db");
    let mut server = Server::start_with_env(
        &format!("sqlite://{}", db.display()),
        dir,
        &Server::webhook_config(&mock.hook(), "", ""),
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", otlp.url.as_str()),
            ("OTEL_SERVICE_NAME", "herald-e2e"),
            ("OTEL_BSP_SCHEDULE_DELAY", "600000"),
        ],
    )
    .await;
    let mut body = String::new();
    for i in 0..3 {
        body.push_str(&format!("{{\"recipient\":\"r-{i}\"}}\n"));
    }
    let (st, v) = server
        .post_raw("/v1/audiences", "application/x-ndjson", body)
        .await;
    assert_eq!(st, 201, "{v}");
    let trace = "11112222333344445555666677778888";
    let job = post_traced(
        &server,
        "/v1/jobs",
        &format!("00-{trace}-aaaabbbbccccdddd-01"),
        json!({"audience_id": v["id"], "channel": "hooks", "message": {"m": 1}}),
    )
    .await;
    let job_id = job["id"].as_i64().expect("job id");
    wait_for("the job to end", Duration::from_secs(20), || async {
        server.get(&format!("/v1/jobs/{job_id}")).await.1["state"] == "done"
    })
    .await;
    let sent = mock.requests(None).await;
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert!(
        otlp.spans.lock().await.is_empty(),
        "held for the batch delay"
    );

    server.terminate().await;
    let request = otlp.span("POST /v1/jobs", |s| s.trace_id == trace).await;
    assert_eq!(request.parent, "aaaabbbbccccdddd");
    assert_eq!(
        request.attr("herald.job.id"),
        Some(job_id.to_string().as_str())
    );
    assert_eq!(request.service, "herald-e2e");
    // The run is a trace of its own, linked to the request.
    let run = otlp.span("send segment", |_| true).await;
    assert_eq!(run.links, [(trace.to_string(), request.span_id.clone())]);
    assert_eq!(run.attr("herald.job.id"), Some(job_id.to_string().as_str()));
    assert_eq!(run.attr("herald.outcome"), Some("finished"));
    assert_ne!(run.trace_id, trace);
    // Its sends carry the run's context.
    for s in &sent {
        let header = s["headers"]["traceparent"].as_str().expect("header");
        assert_eq!(
            parts(header),
            (run.trace_id.as_str(), run.span_id.as_str(), "01")
        );
    }
}
