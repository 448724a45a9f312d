"""Prometheus metrics: request latency by route, pipeline stage timings, model state.

Exported at ``GET /metrics`` in the Prometheus text format. The metrics
carry no tenant, key or prompt data, only route templates, status codes
and stage names, so the endpoint is public like the health checks; restrict
it at the network edge if even aggregate latencies are sensitive.

Feature code records a pipeline stage with ``observe_stage("decode", seconds)``
(the reasoning pipeline's ``timings``), which the autoscaling path of the
design reads as ``tenet_stage_seconds``.
"""

from __future__ import annotations

from litestar.enums import ScopeType
from litestar.types import Message, Scope
from prometheus_client import CollectorRegistry, Gauge, Histogram

__all__ = [
    "REGISTRY",
    "REQUEST_SECONDS",
    "STAGE_SECONDS",
    "MODEL_LOADED",
    "observe_stage",
    "record_response",
]

REGISTRY = CollectorRegistry(auto_describe=True)

REQUEST_SECONDS = Histogram(
    "tenet_http_request_seconds",
    "Time from request start to response start, by route template and status.",
    ("method", "route", "status"),
    registry=REGISTRY,
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
)
STAGE_SECONDS = Histogram(
    "tenet_stage_seconds",
    "Wall time of one pipeline stage (parse, extract, graph, evidence, prefill, decode, verify, record).",
    ("stage",),
    registry=REGISTRY,
    buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
MODEL_LOADED = Gauge(
    "tenet_model_loaded", "1 when the model is loaded and warmed up.", registry=REGISTRY
)


def observe_stage(stage: str, seconds: float) -> None:
    """Record one stage's wall time."""
    STAGE_SECONDS.labels(stage=stage).observe(seconds)


def record_response(message: Message, scope: Scope, seconds: float) -> None:
    """Observe one response's latency (called by the access-log hook at response start)."""
    if scope["type"] != ScopeType.HTTP or message["type"] != "http.response.start":
        return
    route = scope.get("path_template") or "<unmatched>"
    REQUEST_SECONDS.labels(
        method=str(scope.get("method", "")), route=route, status=str(message["status"])
    ).observe(seconds)
