"""Traces: one per utterance, across the gateway and its workers (OpenTelemetry, exported over OTLP/HTTP).

Shared by both ends, like the protocol, and as light: nothing here imports OpenTelemetry until ``start_tracing``
runs (``--otlp-endpoint``). Without it every span is ``NO_SPAN``, whose methods do nothing. The gateway's root span
(``utterance``) travels to the worker as a W3C ``traceparent`` in the engine protocol's ``start``; the worker's spans
continue that trace. Text goes into spans only where the tracer was started with ``text`` (``--trace-text``), through
``Span.text``; audio never does.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlsplit

log = logging.getLogger("chatterbox_fast.traces")
Attribute = str | int | float | bool | None  # None: left out
TRACES_PATH = "/v1/traces"  # OTLP/HTTP's path under a collector's base URL


class Span:
    """A span of a trace, or, this class itself, nothing (tracing off). A context manager too: ended on exit, an
    exception's type as its error. Once ended, nothing more is added to it."""

    traceparent: str | None = None  # this span as a W3C traceparent (what a child in another process continues)

    def child(self, name: str, start_ns: int | None = None, **attributes: Attribute) -> Span:
        """A span under this one (``start_ns``: when it began, epoch nanoseconds; None: now)."""
        return self

    def event(self, name: str, **attributes: Attribute) -> None:
        """Something that happened now, within this span."""

    def set(self, **attributes: Attribute) -> None:
        """Attributes learnt along the way."""

    def text(self, name: str, text: str) -> None:
        """A caller's text, as an event: only with --trace-text."""

    def end(self, error: str | None = None) -> None:
        """Ended now (the first call only), failed with ``error`` (a stable code) when given."""

    def __enter__(self) -> Span:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        self.end(error=kind.__name__ if kind is not None else None)


NO_SPAN = Span()


class Tracer:
    """Starts the root spans of one process; this class itself starts none (tracing off)."""

    on = False

    def span(self, name: str, parent: str | None = None, **attributes: Attribute) -> Span:
        """A span with no parent in this process: under ``parent`` (a traceparent) when given, else a new trace."""
        return NO_SPAN

    def shutdown(self) -> None:
        """Export what is still queued (the process is stopping)."""


NO_TRACES = Tracer()


def traces_url(endpoint: str) -> str:
    """The URL spans are posted to: a collector's base URL (http://HOST:4318) gets OTLP's /v1/traces; a URL with a
    path is taken as it is. ``ValueError`` for anything but an http(s) URL."""
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"--otlp-endpoint must be an http:// or https:// URL (a collector's OTLP/HTTP port, "
                         f"e.g. http://localhost:4318), not {endpoint!r}")
    return endpoint if parts.path not in ("", "/") else endpoint.rstrip("/") + TRACES_PATH


def start_tracing(endpoint: str, service: str, text: bool = False) -> Tracer:
    """This process's tracer: spans batched (a BatchSpanProcessor, its OTEL_BSP_* variables apply) and posted as
    OTLP/HTTP protobuf to ``endpoint`` under ``service.name`` ``service`` (OTEL_RESOURCE_ATTRIBUTES adds to it;
    OTEL_EXPORTER_OTLP_HEADERS, a collector's credentials)."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    url = traces_url(endpoint)
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=url)))
    parts = urlsplit(url)  # said without any user:password@ the URL carries
    log.info("traces to %s://%s%s%s (service %s, %s)", parts.scheme, parts.hostname,
             f":{parts.port}" if parts.port else "", parts.path, service, "text included" if text else "no text")
    return _OtelTracer(provider, text)


def _attributes(attributes: dict[str, Attribute]) -> dict[str, str | int | float | bool]:
    return {key: value for key, value in attributes.items() if value is not None}


class _OtelTracer(Tracer):
    on = True

    def __init__(self, provider: Any, text: bool) -> None:
        from opentelemetry import trace
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
        from opentelemetry.trace.status import Status, StatusCode

        self.provider, self.with_text = provider, text
        self.tracer = provider.get_tracer("chatterbox_fast")
        self.in_context, self.propagator = trace.set_span_in_context, TraceContextTextMapPropagator()
        self.server, self.failed = trace.SpanKind.SERVER, lambda error: Status(StatusCode.ERROR, error)

    def span(self, name: str, parent: str | None = None, **attributes: Attribute) -> Span:
        context = self.propagator.extract({"traceparent": parent}) if parent else None
        return _OtelSpan(self, self.tracer.start_span(name, context=context, kind=self.server,
                                                      attributes=_attributes(attributes)))

    def shutdown(self) -> None:
        self.provider.shutdown()


class _OtelSpan(Span):
    def __init__(self, tracer: _OtelTracer, span: Any) -> None:
        self._tracer, self._span, self._ended = tracer, span, False

    @property
    def traceparent(self) -> str | None:  # type: ignore[override]
        carrier: dict[str, str] = {}
        self._tracer.propagator.inject(carrier, context=self._tracer.in_context(self._span))
        return carrier.get("traceparent")

    def child(self, name: str, start_ns: int | None = None, **attributes: Attribute) -> Span:
        tracer = self._tracer
        return _OtelSpan(tracer, tracer.tracer.start_span(name, context=tracer.in_context(self._span),
                                                          attributes=_attributes(attributes), start_time=start_ns))

    def event(self, name: str, **attributes: Attribute) -> None:
        if not self._ended:  # (an ended span would log a warning)
            self._span.add_event(name, _attributes(attributes))

    def set(self, **attributes: Attribute) -> None:
        if not self._ended:
            self._span.set_attributes(_attributes(attributes))

    def text(self, name: str, text: str) -> None:
        if self._tracer.with_text and not self._ended:
            self._span.add_event(name, {"text": text})

    def end(self, error: str | None = None) -> None:
        if self._ended:
            return
        self._ended = True
        if error is not None:
            self._span.set_status(self._tracer.failed(error))
        self._span.end()
