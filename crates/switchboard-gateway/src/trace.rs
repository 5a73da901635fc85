//! OpenTelemetry traces over OTLP/HTTP (protobuf), for `serve --otlp-endpoint URL`.
//!
//! Each client request is a span (`mcp.method.name`, and `gen_ai.tool.name` for a call), a
//! child of the client's own `traceparent` when its `_meta` carries one; a call's upstream
//! request is a child span (`mcp.server`), whose W3C `traceparent` goes upstream in the call's
//! `_meta`. Spans are batched and exported on the Tokio runtime, so the request path only
//! records them.
//!
//! With an audit log (`--audit-log`), each of its lines is also an OTLP log record (event
//! `switchboard.audit`, the line as its body), exported to the same collector (`/v1/logs`)
//! from the log's writer thread.

use opentelemetry::logs::LoggerProvider as _;
use opentelemetry::trace::{
    Span as _, SpanContext, SpanId, SpanKind, Status, TraceContextExt as _, TraceFlags, TraceId,
    TraceState, Tracer as _, TracerProvider as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::logs::{SdkLogger, SdkLoggerProvider};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};

/// Why traces cannot be exported.
#[derive(Debug, thiserror::Error)]
#[error("--otlp-endpoint {endpoint}: {source}")]
pub struct TraceError {
    endpoint: String,
    #[source]
    source: opentelemetry_otlp::ExporterBuildError,
}

/// Where the gateway's spans go. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Traces {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
    /// The audit log's records (`/v1/logs`).
    logs: SdkLoggerProvider,
}

impl Traces {
    /// Spans exported to the OTLP/HTTP collector at `endpoint` (its base URL, to which
    /// `/v1/traces` is added, or the full URL ending in `/v1/traces`), and the audit log's
    /// records to its `/v1/logs`. Needs a Tokio runtime.
    pub fn otlp(endpoint: &str) -> Result<Traces, TraceError> {
        let failed = |source| TraceError {
            endpoint: switchboard::redact_url(endpoint),
            source,
        };
        let base = endpoint
            .strip_suffix("/v1/traces")
            .unwrap_or(endpoint)
            .trim_end_matches('/');
        let url = format!("{base}/v1/traces");
        use opentelemetry_otlp::WithExportConfig as _;
        // The exporter's HTTP client is rustls without a provider of its own: ring, as the
        // library's, unless the program chose one already.
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_endpoint(url)
            .build()
            .map_err(failed)?;
        let processor =
            opentelemetry_sdk::trace::span_processor_with_async_runtime::BatchSpanProcessor::builder(
                exporter,
                opentelemetry_sdk::runtime::Tokio,
            )
            .build();
        let resource = opentelemetry_sdk::Resource::builder()
            .with_service_name("switchboard")
            .build();
        let provider = SdkTracerProvider::builder()
            .with_span_processor(processor)
            .with_resource(resource.clone())
            .build();
        let tracer = provider.tracer("switchboard-gateway");
        let exporter = opentelemetry_otlp::LogExporter::builder()
            .with_http()
            .with_endpoint(format!("{base}/v1/logs"))
            .build()
            .map_err(failed)?;
        let processor =
            opentelemetry_sdk::logs::log_processor_with_async_runtime::BatchLogProcessor::builder(
                exporter,
                opentelemetry_sdk::runtime::Tokio,
            )
            .build();
        let logs = SdkLoggerProvider::builder()
            .with_log_processor(processor)
            .with_resource(resource)
            .build();
        Ok(Traces {
            provider,
            tracer,
            logs,
        })
    }

    /// Where the audit log's lines go as log records.
    pub(crate) fn audit_logger(&self) -> SdkLogger {
        self.logs.logger("switchboard-gateway")
    }

    /// Exports what is left and stops (bounded by the exporter's timeout).
    pub fn shutdown(&self) {
        self.flush();
        if let Err(e) = self.provider.shutdown() {
            tracing::debug!("the trace exporter did not stop cleanly: {e}");
        }
        if let Err(e) = self.logs.shutdown() {
            tracing::debug!("the log exporter did not stop cleanly: {e}");
        }
    }

    /// Sends every finished span (and audit record) now.
    pub fn flush(&self) {
        if let Err(e) = self.provider.force_flush() {
            tracing::debug!("traces not flushed: {e}");
        }
        if let Err(e) = self.logs.force_flush() {
            tracing::debug!("audit records not flushed: {e}");
        }
    }

    /// The span of a client request (`method`; `tool` for a call), under the client's own
    /// trace when its `_meta` names one (`traceparent`).
    pub(crate) fn request(
        &self,
        method: &str,
        tool: Option<&str>,
        traceparent: Option<&str>,
    ) -> Context {
        let parent = traceparent
            .and_then(parse_traceparent)
            .map(|remote| Context::new().with_remote_span_context(remote))
            .unwrap_or_default();
        let mut attributes = vec![KeyValue::new("mcp.method.name", method.to_owned())];
        if let Some(tool) = tool {
            attributes.push(KeyValue::new("gen_ai.tool.name", tool.to_owned()));
        }
        let name = match tool {
            Some(tool) => format!("{method} {tool}"),
            None => method.to_owned(),
        };
        let span = self
            .tracer
            .span_builder(name)
            .with_kind(SpanKind::Server)
            .with_attributes(attributes)
            .start_with_context(&self.tracer, &parent);
        parent.with_span(span)
    }

    /// The span of an upstream request under `parent`, and its `traceparent` for the
    /// request's `_meta`.
    pub(crate) fn upstream(
        &self,
        parent: &Context,
        method: &str,
        server: &str,
        tool: &str,
    ) -> (Context, String) {
        let span = self
            .tracer
            .span_builder(format!("{method} {tool}"))
            .with_kind(SpanKind::Client)
            .with_attributes([
                KeyValue::new("mcp.method.name", method.to_owned()),
                KeyValue::new("mcp.server", server.to_owned()),
                KeyValue::new("gen_ai.tool.name", tool.to_owned()),
            ])
            .start_with_context(&self.tracer, parent);
        let context = span.span_context();
        let traceparent = format!(
            "00-{}-{}-{:02x}",
            context.trace_id(),
            context.span_id(),
            context.trace_flags().to_u8()
        );
        (parent.with_span(span), traceparent)
    }
}

/// Ends the span of `context`, marked as an error when `failed`.
pub(crate) fn end(context: &Context, failed: Option<String>) {
    let span = context.span();
    if let Some(why) = failed {
        span.set_status(Status::error(why));
    }
    span.end();
}

/// A W3C `traceparent` (`00-<trace>-<span>-<flags>`) as a remote span context.
fn parse_traceparent(text: &str) -> Option<SpanContext> {
    let mut parts = text.trim().split('-');
    let (version, trace, span, flags) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if version != "00" || parts.next().is_some() || trace.len() != 32 || span.len() != 16 {
        return None;
    }
    let trace = TraceId::from_hex(trace).ok()?;
    let span = SpanId::from_hex(span).ok()?;
    let flags = u8::from_str_radix(flags, 16).ok()?;
    (trace != TraceId::INVALID && span != SpanId::INVALID).then(|| {
        SpanContext::new(
            trace,
            span,
            TraceFlags::new(flags),
            true,
            TraceState::default(),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparents_parse_and_bad_ones_do_not() {
        let context =
            parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
        assert_eq!(
            context.trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert!(context.is_remote() && context.is_sampled());
        for bad in [
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "garbage",
        ] {
            assert!(parse_traceparent(bad).is_none(), "{bad}");
        }
    }
}
