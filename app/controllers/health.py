"""Liveness (``/healthz``) and readiness (``/readyz``); both public, both answer ``HEAD`` too
(the same status without a body, for probes and load balancers that send ``HEAD``)."""

from __future__ import annotations

from litestar import Controller, get, head

from app.auth import PUBLIC
from app.runtime import Runtime
from app.schemas.health import Health, Readiness
from reasoning.errors import Unavailable

__all__ = ["HealthController"]


class HealthController(Controller):
    tags = ("health",)
    opt = PUBLIC

    @get("/healthz", operation_id="get_health", summary="Liveness: the process answers")
    async def get_health(self) -> Health:
        return Health(status="ok")

    @head("/healthz", operation_id="head_health", summary="Liveness without a body")
    async def head_health(self) -> None:
        """200 while the process answers."""

    @head(
        "/readyz",
        operation_id="head_readiness",
        summary="Readiness without a body: 200 ready, 503 not",
        status_code=200,
    )
    async def head_readiness(self, runtime: Runtime) -> None:
        report = await runtime.readiness()
        if not report["ready"]:
            missing = [part for part in _PARTS if not _part_ok(report, part)]
            raise Unavailable(f"not ready: {', '.join(missing)} not available")

    @get(
        "/readyz",
        operation_id="get_readiness",
        summary="Readiness: model loaded and database reachable",
    )
    async def get_readiness(self, runtime: Runtime) -> Readiness:
        report = await runtime.readiness()
        if not report["ready"]:
            missing = [part for part in _PARTS if not _part_ok(report, part)]
            raise Unavailable(f"not ready: {', '.join(missing)} not available", **report)
        return Readiness(**report)


_PARTS = ("model", "database", "rate_limits", "workers")


def _part_ok(report: dict[str, object], part: str) -> bool:
    if part == "workers":
        return report.get("workers", "local") in ("local", "ok")
    if part == "rate_limits":
        return report.get("rate_limits") != "unreachable"
    if part == "database":
        return report["database"] == "ok"
    model = report["model"]
    return isinstance(model, dict) and model.get("state") == "loaded"
