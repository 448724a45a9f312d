"""``POST /v1/constraints``: stages 1-3 (no model) so a client can check a prompt first."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
from anyio import to_thread
from litestar import Controller, post
from litestar.status_codes import HTTP_200_OK
from sqlalchemy.ext.asyncio import AsyncSession

from app.auth import AuthContext, requires_scope
from app.runtime import Runtime
from app.schemas.constraints import ConflictOut, ConstraintsRequest, ConstraintsResponse, EntropyOut
from app.services.reasoning import domain_index
from app.settings import Settings
from reasoning.analysis import Analysis, analyse
from reasoning.constraints.model import Constraint, Origin
from reasoning.errors import InvalidInput, LimitExceeded
from reasoning.evidence.index import OntologyIndex
from reasoning.graph import node_link, to_jsonld, to_turtle
from reasoning.provenance.record import ActivitySpan, OntologyArtifact, RunKind, RunRecord
from store.models import new_id
from store.runs import record_run

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


def _response(analysis: Analysis, body: ConstraintsRequest, run_id: str) -> ConstraintsResponse:
    return ConstraintsResponse(
        run_id=run_id,
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
        linked=list(analysis.linked),
        unlinked_terms=analysis.unlinked_terms,
    )


def _check_prompt(prompt: str, max_prompt_chars: int) -> None:
    if not prompt.strip():
        raise InvalidInput("prompt must not be empty", field="prompt")
    if len(prompt) > max_prompt_chars:
        raise LimitExceeded(
            f"prompt has {len(prompt)} characters; the limit is {max_prompt_chars}",
            field="prompt",
            limit=max_prompt_chars,
        )


def _run(body: ConstraintsRequest, index: OntologyIndex | None, run_id: str) -> ConstraintsResponse:
    return _response(
        analyse(body.prompt, defaults=_defaults(body), domain_index=index), body, run_id
    )


def _activities(started: datetime, timings: dict[str, float]) -> tuple[ActivitySpan, ...]:
    spans, cursor = [], started
    for stage, ms in timings.items():
        end = cursor + timedelta(milliseconds=ms)
        spans.append(ActivitySpan(name=stage, started_at=cursor, ended_at=end))
        cursor = end
    return tuple(spans)


def _record(
    auth: AuthContext,
    body: ConstraintsRequest,
    response: ConstraintsResponse,
    index: OntologyIndex | None,
    started: datetime,
) -> RunRecord:
    """What the audit trail keeps of a check: request, outcome, constraints, premises."""
    result: dict[str, Any] = {
        "status": response.status,
        "language": response.language,
        "conflicts": msgspec.to_builtins(response.conflicts),
        "inactive": response.inactive,
        "entropy": response.entropy.score,
        "budget": msgspec.to_builtins(response.budget),
        "run_id": response.run_id,
    }
    ontologies = (
        (OntologyArtifact(version=index.version, domain=body.domain or ""),) if index is not None else ()
    )
    return RunRecord(
        tenant_id=auth.tenant_id,
        key_id=auth.key_id,
        kind=RunKind.CONSTRAINTS,
        status=response.status,
        prompt=body.prompt,
        started_at=started,
        finished_at=datetime.now(UTC),
        request=msgspec.to_builtins(body),
        result=result,
        timings=response.timings,
        activities=_activities(started, response.timings),
        constraints=tuple(response.constraints),
        premises=tuple(response.premises),
        ontologies=ontologies,
    )


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
        self,
        data: ConstraintsRequest,
        settings: Settings,
        runtime: Runtime,
        db_session: AsyncSession,
        auth: AuthContext,
    ) -> ConstraintsResponse:
        """Parse, extract, link (with a domain) and build the graph off the event loop.

        A conflict answers ``needs_confirmation`` with both source spans (still
        200: the check itself succeeded). An unknown domain is 404. The check
        is recorded as a ``constraints`` run (run, PROV bundle, audit event)
        in the request's transaction; ``timings["record"]`` is its cost.
        """
        _check_prompt(data.prompt, settings.max_prompt_chars)
        started = datetime.now(UTC)
        index = await domain_index(runtime, db_session, auth, data.domain)
        response = await to_thread.run_sync(_run, data, index, new_id())
        t0 = time.perf_counter()
        await record_run(
            db_session, _record(auth, data, response, index, started), run_id=response.run_id
        )
        record_ms = round((time.perf_counter() - t0) * 1000, 3)
        return msgspec.structs.replace(response, timings={**response.timings, "record": record_ms})
