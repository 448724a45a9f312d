"""``GET /metrics``: Prometheus text exposition of :mod:`app.metrics` (public, no tenant data)."""

from __future__ import annotations

from litestar import Controller, Response, get
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from app.auth import PUBLIC
from app.metrics import MODEL_LOADED, REGISTRY, refresh_memory
from app.runtime import Runtime

__all__ = ["MetricsController"]

#: The exposition format's media type without its charset: Litestar appends ``charset=utf-8``
#: to every ``text/*`` type itself (given the full type, the header named the charset twice).
_MEDIA_TYPE = CONTENT_TYPE_LATEST.split(";charset")[0].split("; charset")[0].strip()


class MetricsController(Controller):
    tags = ("health",)
    opt = PUBLIC

    @get("/metrics", operation_id="get_metrics", summary="Prometheus metrics", media_type=_MEDIA_TYPE)
    async def get_metrics(self, runtime: Runtime) -> Response[bytes]:
        MODEL_LOADED.set(1 if runtime.ready else 0)
        refresh_memory(runtime.model.model if runtime.model is not None else None)
        return Response(content=generate_latest(REGISTRY), media_type=_MEDIA_TYPE)
