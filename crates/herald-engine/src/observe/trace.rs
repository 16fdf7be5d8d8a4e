//! OpenTelemetry spans: the target they go on, the switch that says whether
//! they are exported, and the W3C `traceparent` in and out of them.
//!
//! Herald's spans (the API request that creates a timer or a job, each
//! delivery attempt, each segment run) are `tracing` spans on [`TARGET`].
//! The binary gives that target to the exporting layer alone, and only when
//! an OTLP endpoint is configured; otherwise no subscriber wants it,
//! `tracing` caches its call sites as disabled, and a span costs a load and
//! a branch. With export off, [`exporting`] is false and a timer keeps the
//! caller's `traceparent`, passed on verbatim, as before there were spans.

use std::sync::atomic::{AtomicBool, Ordering};

use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The `tracing` target of every span meant for export.
pub const TARGET: &str = "herald_otel";

/// Whether the exporting layer is installed (set once, at start).
static EXPORTING: AtomicBool = AtomicBool::new(false);

/// Says that spans on [`TARGET`] are exported from now on.
pub fn set_exporting(on: bool) {
    EXPORTING.store(on, Ordering::Relaxed);
}

/// Whether spans are exported: the stored and sent `traceparent` is then a
/// span of Herald's own, not the caller's.
pub fn exporting() -> bool {
    EXPORTING.load(Ordering::Relaxed)
}

/// The span context a well-formed `traceparent` names, as a remote parent.
/// `None` for anything else (the API validated it before storing it; a
/// later version's extra fields are ignored, as the W3C text asks).
pub fn remote_context(traceparent: &str) -> Option<SpanContext> {
    let v = traceparent.get(..55).filter(|v| v.is_ascii())?;
    let bytes = v.as_bytes();
    if bytes[2] != b'-' || bytes[35] != b'-' || bytes[52] != b'-' || v.starts_with("ff") {
        return None;
    }
    let trace = TraceId::from_hex(&v[3..35]).ok()?;
    let span = SpanId::from_hex(&v[36..52]).ok()?;
    let flags = u8::from_str_radix(&v[53..55], 16).ok()?;
    let cx = SpanContext::new(
        trace,
        span,
        TraceFlags::new(flags & TraceFlags::SAMPLED.to_u8()),
        true,
        TraceState::default(),
    );
    cx.is_valid().then_some(cx)
}

/// `00-<trace id>-<span id>-<flags>` of a span context.
pub fn format_traceparent(cx: &SpanContext) -> String {
    format!(
        "00-{}-{}-{:02x}",
        cx.trace_id(),
        cx.span_id(),
        cx.trace_flags().to_u8() & TraceFlags::SAMPLED.to_u8()
    )
}

/// Makes `parent` (a `traceparent`) the parent of `span`, which must not
/// have been entered yet. Nothing happens to a disabled span.
pub fn set_parent(span: &tracing::Span, parent: Option<&str>) {
    if span.is_disabled() {
        return;
    }
    if let Some(cx) = parent.and_then(remote_context) {
        let _ = span.set_parent(opentelemetry::Context::new().with_remote_span_context(cx));
    }
}

/// Links `span` to the span a `traceparent` names (a campaign's segment
/// run to the request that created its job).
pub fn add_link(span: &tracing::Span, to: Option<&str>) {
    if span.is_disabled() {
        return;
    }
    if let Some(cx) = to.and_then(remote_context) {
        span.add_link(cx);
    }
}

/// The `traceparent` naming `span` itself, to hand on to what it causes;
/// `None` when the span is not exported.
pub fn traceparent_of(span: &tracing::Span) -> Option<String> {
    if span.is_disabled() {
        return None;
    }
    let cx = span.context();
    let sc = cx.span().span_context().clone();
    sc.is_valid().then(|| format_traceparent(&sc))
}

/// The `traceparent` to store with what a request creates: with export on,
/// the request's own span (a child of the caller's, if it sent one, which
/// is made its parent here); with export off, the caller's, verbatim.
pub fn adopt(request: &tracing::Span, caller: Option<String>) -> Option<String> {
    if !exporting() {
        return caller;
    }
    set_parent(request, caller.as_deref());
    traceparent_of(request).or(caller)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_traceparent_reads_back_as_written() {
        let tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let cx = remote_context(tp).unwrap();
        assert!(cx.is_remote() && cx.is_sampled());
        assert_eq!(format_traceparent(&cx), tp);
        let later = "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00-more";
        let cx = remote_context(later).unwrap();
        assert!(!cx.is_sampled());
        assert_eq!(&format_traceparent(&cx)[3..], &later[3..55]);
        for bad in [
            "",
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c_b7ad6b7169203331-01",
        ] {
            assert!(remote_context(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn without_export_the_callers_context_is_kept_verbatim() {
        let span = tracing::info_span!(target: TARGET, "t");
        let caller = Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".to_string());
        assert_eq!(adopt(&span, caller.clone()), caller);
        assert_eq!(traceparent_of(&span), None);
    }
}
