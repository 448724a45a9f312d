"""``GET /v1/diagnostics`` (admin): where the time and memory go; ``layers.svg``: per-layer chart."""

from __future__ import annotations

from litestar import Controller, Response, get
from litestar.params import Parameter

from app.auth import requires_scope
from app.diagnostics import collect, last_profile, layers_svg, probe_layers
from app.runtime import Runtime

__all__ = ["DiagnosticsController"]


class DiagnosticsController(Controller):
    path = "/v1/diagnostics"
    tags = ("diagnostics",)
    guards = (requires_scope("admin"),)

    @get(operation_id="get_diagnostics", summary="KV cache, stage latency, layer profile, batching, GPU")
    async def get_diagnostics(
        self,
        runtime: Runtime,
        profile_layers: bool = Parameter(
            default=False, description="run one short probe forward pass with per-layer hooks"
        ),
    ) -> dict[str, object]:
        """Collected from counters the service keeps anyway; ``profile_layers`` queues one probe
        on the model worker (503 while the model loads)."""
        layers = await probe_layers(runtime) if profile_layers else None
        return collect(runtime, layers)

    @get("/layers.svg", operation_id="get_layer_chart", summary="Per-layer forward time as an SVG bar chart")
    async def get_layer_chart(self, runtime: Runtime) -> Response[str]:
        """The last layer profile; a probe runs first when there is none yet."""
        rows = last_profile(runtime)
        if rows is None:
            rows = await probe_layers(runtime)
        return Response(content=layers_svg(rows), media_type="image/svg+xml")
