"""``GET /v1/diagnostics`` (admin): where the time and memory go; ``layers.svg``: per-layer chart."""

from __future__ import annotations

from litestar import Controller, Response, get
from litestar.params import Parameter

from app.auth import requires_scope
from app.diagnostics import Diagnostics, layers_svg

__all__ = ["DiagnosticsController"]


class DiagnosticsController(Controller):
    path = "/v1/diagnostics"
    tags = ("diagnostics",)
    guards = (requires_scope("admin"),)

    @get(operation_id="get_diagnostics", summary="KV cache, stage latency, layer profile, batching, GPU")
    async def get_diagnostics(
        self,
        diagnostics: Diagnostics,
        profile_layers: bool = Parameter(
            default=False, description="run one short probe forward pass with per-layer hooks"
        ),
    ) -> dict[str, object]:
        """Collected from counters the service keeps anyway; ``profile_layers`` queues one probe
        on the model worker (503 while the model loads)."""
        layers = await diagnostics.probe_layers() if profile_layers else None
        return diagnostics.collect(layers)

    @get(
        "/layers.svg",
        operation_id="get_layer_chart",
        summary="Per-layer forward time as an SVG bar chart",
        media_type="image/svg+xml",
    )
    async def get_layer_chart(self, diagnostics: Diagnostics) -> Response[str]:
        """The last layer profile; a probe runs first when there is none yet."""
        rows = diagnostics.last_profile
        if rows is None:
            rows = await diagnostics.probe_layers()
        return Response(content=layers_svg(rows), media_type="image/svg+xml")
