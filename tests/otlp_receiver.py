"""An OTLP/HTTP trace receiver on 127.0.0.1 for tests and measurements: every ``ExportTraceServiceRequest`` posted
to /v1/traces decoded (opentelemetry-proto) into plain ``ReceivedSpan``s, the raw bodies kept for grepping."""

from __future__ import annotations

import gzip
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (ExportTraceServiceRequest,
                                                                     ExportTraceServiceResponse)


@dataclass(frozen=True)
class ReceivedSpan:
    service: str
    name: str
    trace_id: str  # hex
    span_id: str
    parent_id: str  # "" for a root
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    error: str | None  # the status message of a failed span


def _value(value: Any) -> Any:
    return getattr(value, value.WhichOneof("value")) if value.WhichOneof("value") else None


def _attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: _value(pair.value) for pair in pairs}


class OtlpReceiver:
    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self.bodies: list[bytes] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                receiver._take(body)
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def _take(self, body: bytes) -> None:
        request = ExportTraceServiceRequest.FromString(body)
        spans = []
        for resource in request.resource_spans:
            service = str(_attributes(resource.resource.attributes).get("service.name"))
            for scope in resource.scope_spans:
                for span in scope.spans:
                    spans.append(ReceivedSpan(service, span.name, span.trace_id.hex(), span.span_id.hex(),
                                              span.parent_span_id.hex(), _attributes(span.attributes),
                                              [(e.name, _attributes(e.attributes)) for e in span.events],
                                              span.status.message if span.status.code == 2 else None))
        with self._lock:
            self.bodies.append(body)
            self.spans.extend(spans)

    def wait_for(self, found: Callable[[list[ReceivedSpan]], bool], timeout: float = 30.0) -> list[ReceivedSpan]:
        """The spans received so far, once ``found`` says they hold what is waited for."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                spans = list(self.spans)
            if found(spans):
                return spans
            assert time.monotonic() < deadline, f"not received within {timeout} s: {[s.name for s in spans]}"
            time.sleep(0.05)

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
