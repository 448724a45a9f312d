"""OpenTelemetry traces: one span per request, one GenAI span per run, one span per pipeline stage.

Off by default: without ``TENET_OTLP_ENDPOINT`` (and without an exporter
passed in) there is no tracer provider, the middleware passes requests
straight through and :func:`trace_run` returns at once. With an endpoint,
spans go out over OTLP/HTTP (protobuf) in batches from a background thread.

The tree of a reasoning request::

    POST /v1/reason                    SERVER  http.request.method, http.route, http.response.status_code
    └── chat SmolLM2-135M-Instruct     INTERNAL  gen_ai.* (GenAI semantic conventions)
        ├── tenet.parse
        ├── tenet.extract   ...        one per stage: parse, extract, graph, evidence,
        └── tenet.record               prefill, decode, verify, record

Stage spans are created after the run from the measured stage timings (the
pipeline runs on a worker thread under the decode lock; instrumenting it
would put tracing into the reasoning core): they start at the run's start
and follow each other end to end with their measured durations, so their
lengths are exact and their offsets ignore waits between stages (for the
decode lock, for the database).

Prompt and answer text are recorded (``gen_ai.input.messages`` /
``gen_ai.output.messages``) only with ``TENET_TRACE_CONTENT=true``.
"""

from __future__ import annotations

import contextvars
import json
import time
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send
from opentelemetry import context as otel_context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode, Tracer, set_span_in_context

from app.errors import problem_status
from app.schemas.reason import ReasonResponse
from app.settings import Settings
from reasoning.errors import TenetError

__all__ = ["STAGES", "Tracing", "TracingMiddleware", "trace_run"]

#: Stage order, as ``ReasonResponse.timings`` reports it.
STAGES = ("parse", "extract", "graph", "evidence", "rules", "prefill", "decode", "verify", "record")
_CURRENT: contextvars.ContextVar[Tracing | None] = contextvars.ContextVar("tenet_tracing", default=None)


class Tracing:
    """The tracing of one app: a tracer provider with one exporter, or nothing at all.

    ``exporter`` (tests pass the SDK's ``InMemorySpanExporter``) is used with a
    synchronous processor; otherwise ``settings.otlp_endpoint`` gets a batching
    OTLP/HTTP exporter. The provider is the app's own (the process-global one
    is left alone), so several apps in one process trace independently.
    """

    def __init__(self, settings: Settings, *, exporter: SpanExporter | None = None) -> None:
        self.capture_content = settings.trace_content
        self.provider: TracerProvider | None = None
        self.tracer: Tracer | None = None
        processor: SimpleSpanProcessor | BatchSpanProcessor | None = None
        if exporter is not None:
            processor = SimpleSpanProcessor(exporter)
        elif settings.otlp_endpoint:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            processor = BatchSpanProcessor(OTLPSpanExporter(endpoint=settings.otlp_endpoint))
        if processor is not None:
            self.provider = TracerProvider(resource=Resource.create({"service.name": "tenet"}))
            self.provider.add_span_processor(processor)
            self.tracer = self.provider.get_tracer("tenet")

    @property
    def enabled(self) -> bool:
        return self.tracer is not None

    def shutdown(self) -> None:
        """Flush what is buffered and stop exporting."""
        if self.provider is not None:
            self.provider.shutdown()


class TracingMiddleware:
    """ASGI middleware: a SERVER span around each HTTP request, current while the app handles it."""

    def __init__(self, app: ASGIApp, tracing: Tracing) -> None:
        self.app = app
        self.tracing = tracing

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        tracer = self.tracing.tracer
        if scope["type"] != ScopeType.HTTP or tracer is None:
            await self.app(scope, receive, send)
            return
        method = str(scope.get("method", "GET"))
        span = tracer.start_span(
            method,
            kind=SpanKind.SERVER,
            attributes={
                "http.request.method": method,
                "url.path": str(scope.get("path", "")),
                "url.scheme": str(scope.get("scheme", "http")),
                "network.protocol.version": str(scope.get("http_version", "1.1")),
            },
        )
        token = otel_context.attach(set_span_in_context(span))
        current = _CURRENT.set(self.tracing)

        async def send_traced(message: Message) -> None:
            if message["type"] == "http.response.start":
                status = int(message["status"])
                span.set_attribute("http.response.status_code", status)
                if status >= 500:
                    span.set_status(Status(StatusCode.ERROR))
            await send(message)

        try:
            await self.app(scope, receive, send_traced)
        except BaseException as exc:
            # Raised past this middleware (e.g. 401 from authentication): the app's
            # exception handler answers with the error's own status, or 500.
            status = problem_status(exc) if isinstance(exc, TenetError) else getattr(exc, "status_code", 500)
            span.set_attribute("http.response.status_code", int(status))
            span.set_attribute("error.type", type(exc).__name__)
            if int(status) >= 500:
                span.record_exception(exc)
                span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            raise
        finally:
            route = _route(scope)
            if route:
                span.set_attribute("http.route", route)
                span.update_name(f"{method} {route}")
            _CURRENT.reset(current)
            otel_context.detach(token)
            span.end()


def _route(scope: Scope) -> str | None:
    """The matched route template (``/v1/runs/{run_id:str}``: low cardinality, as the HTTP conventions want)."""
    template = scope.get("path_template")
    return str(template) if template else None


def _clean(attributes: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in attributes.items() if v is not None}


def trace_run(
    response: ReasonResponse,
    *,
    started: datetime,
    prompt: str,
    operation: str = "chat",
    finish_reason: str | None = None,
    temperature: float | None = None,
) -> None:
    """Add the GenAI span of a finished run, with its stage spans, under the current request span.

    No-op when the current request is not traced. ``started`` is when the
    run began (timezone-aware); ``finish_reason`` defaults to ``stop`` for an
    answered run and ``needs_confirmation`` for a stopped one.
    """
    tracing = _CURRENT.get()
    if tracing is None or tracing.tracer is None:
        return
    tracer = tracing.tracer
    model = str(response.model.get("name", "unknown"))
    start_ns = int(started.timestamp() * 1e9)
    reason = finish_reason or ("stop" if response.status == "ok" else response.status)
    span = tracer.start_span(
        f"{operation} {model}",
        kind=SpanKind.INTERNAL,
        start_time=start_ns,
        attributes=_clean(
            {
                "gen_ai.operation.name": operation,
                "gen_ai.provider.name": "tenet",
                "gen_ai.request.model": model,
                "gen_ai.response.model": model,
                "gen_ai.response.id": response.run_id,
                "gen_ai.request.max_tokens": response.budget.max_new_tokens,
                "gen_ai.request.temperature": temperature,
                "gen_ai.usage.input_tokens": response.usage.get("prompt_tokens", 0),
                "gen_ai.usage.output_tokens": response.usage.get("completion_tokens", 0),
                "gen_ai.response.finish_reasons": [reason],
                "tenet.run.status": response.status,
                "tenet.beam_width": response.budget.beam_width,
                "tenet.constraints": len(response.constraints),
                "tenet.conflicts": len(response.conflicts),
                "tenet.entropy": response.entropy.score,
                "tenet.confirmation_id": response.confirmation_id,
                "tenet.session_id": response.session_id,
            }
        ),
    )
    if tracing.capture_content:
        span.set_attribute(
            "gen_ai.input.messages",
            json.dumps([{"role": "user", "parts": [{"type": "text", "content": prompt}]}], ensure_ascii=False),
        )
        span.set_attribute(
            "gen_ai.output.messages",
            json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": response.answer}],
                  "finish_reason": reason}],
                ensure_ascii=False,
            ),
        )
    parent = set_span_in_context(span)
    cursor = start_ns
    for stage in STAGES:
        ms = response.timings.get(stage)
        if ms is None:
            continue
        end = cursor + int(ms * 1e6)
        stage_span = tracer.start_span(
            f"tenet.{stage}", context=parent, start_time=cursor, attributes={"tenet.stage": stage}
        )
        stage_span.end(end_time=end)
        cursor = end
    span.end(end_time=max(cursor, time.time_ns()))
