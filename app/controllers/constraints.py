"""``POST /v1/constraints``: stages 1-3 (no model) so a client can check a prompt first."""

from __future__ import annotations

from anyio import to_thread
from litestar import Controller, post
from litestar.status_codes import HTTP_200_OK

from app.auth import requires_scope
from app.schemas.constraints import ConflictOut, ConstraintsRequest, ConstraintsResponse, EntropyOut
from app.settings import Settings
from reasoning.analysis import Analysis, analyse
from reasoning.constraints.model import Constraint, Origin
from reasoning.errors import InvalidInput, LimitExceeded
from reasoning.graph import node_link, to_jsonld, to_turtle

__all__ = ["ConstraintsController"]


def _defaults(body: ConstraintsRequest) -> tuple[Constraint, ...]:
    if body.profile is None:
        return ()
    return tuple(
        Constraint(
            id=f"d{i}",
            kind=d.kind,
            params=d.params,
            hardness=d.hardness,
            origin=Origin.PROFILE,
        )
        for i, d in enumerate(body.profile.defaults, start=1)
    )


def _graph(analysis: Analysis, graph_format: str) -> dict[str, object] | str:
    if graph_format == "turtle":
        return to_turtle(analysis.graph, analysis.premises)
    if graph_format == "jsonld":
        return to_jsonld(analysis.graph, analysis.premises)
    return node_link(analysis.graph, analysis.premises)


def _response(analysis: Analysis, body: ConstraintsRequest) -> ConstraintsResponse:
    return ConstraintsResponse(
        status=analysis.status.value,
        language=analysis.language,
        constraints=list(analysis.constraints),
        premises=list(analysis.premises),
        graph=_graph(analysis, body.graph_format),
        graph_format=body.graph_format,
        conflicts=[
            ConflictOut(a=c.a, b=c.b, reason=c.reason, spans=list(c.spans))
            for c in analysis.graph.conflicts
        ],
        inactive=list(analysis.graph.inactive),
        entropy=EntropyOut.of(analysis.entropy),
        budget=analysis.budget,
        timings=analysis.timings,
        cached=analysis.cached,
    )


def _run(body: ConstraintsRequest, max_prompt_chars: int) -> ConstraintsResponse:
    if not body.prompt.strip():
        raise InvalidInput("prompt must not be empty", field="prompt")
    if len(body.prompt) > max_prompt_chars:
        raise LimitExceeded(
            f"prompt has {len(body.prompt)} characters; the limit is {max_prompt_chars}",
            field="prompt",
            limit=max_prompt_chars,
        )
    return _response(analyse(body.prompt, defaults=_defaults(body)), body)


class ConstraintsController(Controller):
    path = "/v1/constraints"
    tags = ["constraints"]
    guards = [requires_scope("reason")]

    @post(
        operation_id="check_constraints",
        summary="Constraints, premises, graph, conflicts, entropy and budget of a prompt",
        status_code=HTTP_200_OK,
    )
    async def check_constraints(
        self, data: ConstraintsRequest, settings: Settings
    ) -> ConstraintsResponse:
        """Parse, extract and build the graph off the event loop; a conflict answers
        ``needs_confirmation`` with both source spans (still 200: the check itself succeeded)."""
        return await to_thread.run_sync(_run, data, settings.max_prompt_chars)
