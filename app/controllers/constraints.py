"""``POST /v1/constraints``: stages 1-3 (no model) so a client can check a prompt first.

A prompt the same tenant sent before (its extraction cached; cache entries
are per tenant, so a hit tells nothing about other tenants' prompts) with
the node-link graph is analysed on the event loop: about 0.1 ms of work.
Everything else (parsing, domain linking, Turtle / JSON-LD export) goes to
the app's :class:`~app.services.analyses.AnalysisBatcher`: the analyses that
arrive together share one spaCy pass on a worker thread, and a check whose
predicted wait exceeds the batcher's bound (or the request's
``X-Tenet-Deadline-S``) is refused with 429 and ``Retry-After``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
from litestar import Controller, Request, post
from litestar.status_codes import HTTP_200_OK
from spacy.tokens import Doc

from app.auth import requires_scope
from app.deps import provide_auth, provide_hints, provide_runtime, provide_services
from app.schemas.constraints import ConflictOut, ConstraintsRequest, ConstraintsResponse, EntropyOut
from app.services.analyses import AnalysisBatcher
from app.services.runs import check_prompt, lookup_domain_index, profile_defaults
from reasoning.analysis import Analysis, analyse, extraction_cached
from reasoning.constraints.model import Constraint
from reasoning.evidence.index import OntologyIndex
from reasoning.graph import node_link, to_jsonld, to_turtle

__all__ = ["ConstraintsController"]

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
        linked=list(analysis.linked),
        unlinked_terms=analysis.unlinked_terms,
        unrecognised=list(analysis.unrecognised),
        readings=list(analysis.readings),
    )


def _run(
    body: ConstraintsRequest,
    defaults: tuple[Constraint, ...],
    index: OntologyIndex | None,
    tenant: str,
    doc: Doc | None = None,
) -> ConstraintsResponse:
    analysis = analyse(body.prompt, defaults=defaults, domain_index=index, cache_scope=tenant, english_doc=doc)
    return _response(analysis, body)


def _cheap(
    body: ConstraintsRequest, defaults: tuple[Constraint, ...], index: OntologyIndex | None, tenant: str
) -> bool:
    """True when the analysis costs about 0.1 ms: worth less than a hand-over to a worker thread.

    That is a prompt whose extraction is cached, no domain to link (linking
    parses the prompt) and the node-link graph (Turtle and JSON-LD take
    milliseconds). Should the extraction be evicted between this check and
    the analysis, that one analysis runs on the event loop at full cost.
    Cache entries are the tenant's own: another tenant's prompt is never a hit.
    """
    return (
        index is None
        and body.graph_format == "json"
        and extraction_cached(body.prompt, defaults, scope=tenant)
    )


#: Analyses that parse a prompt, by tenant, prompt and profile defaults (see ``_analysed``).
_PARSING: dict[tuple[str, str, bytes], asyncio.Future[None]] = {}


async def _analysed(
    data: ConstraintsRequest,
    defaults: tuple[Constraint, ...],
    index: OntologyIndex | None,
    tenant: str,
    batcher: AnalysisBatcher[ConstraintsResponse],
    deadline_s: float | None,
) -> ConstraintsResponse:
    """The response, computed inline when cheap, else in a batch of the batcher.

    Concurrent requests for one prompt that is not cached yet parse it once:
    the first runs the analysis, the others wait for it (whatever its outcome)
    and then find the extraction cached. Without this, every client that sent
    the prompt before the first answer parsed it again, each holding a worker
    thread and the GIL for milliseconds. Only one tenant's requests wait for each other.
    """
    if _cheap(data, defaults, index, tenant):
        # A thread hand-over would cost more than the work and lets the worker
        # take the GIL from the event loop at each of its system calls.
        return _run(data, defaults, index, tenant)
    key = (tenant, data.prompt, msgspec.json.encode(defaults))
    loop = asyncio.get_running_loop()

    def job(doc: Doc | None) -> ConstraintsResponse:
        return _run(data, defaults, index, tenant, doc)

    first = _PARSING.get(key)
    if first is not None and first.get_loop() is loop:
        await asyncio.shield(first)  # shielded: a waiter going away must not cancel it
        if _cheap(data, defaults, index, tenant):
            return _run(data, defaults, index, tenant)
        return await batcher.submit(data.prompt, job, deadline_s=deadline_s)
    done: asyncio.Future[None] = loop.create_future()
    _PARSING[key] = done
    try:
        return await batcher.submit(data.prompt, job, deadline_s=deadline_s)
    finally:
        if _PARSING.get(key) is done:
            del _PARSING[key]
        if not done.done():
            done.set_result(None)


class ConstraintsController(Controller):
    path = "/v1/constraints"
    tags = ("constraints",)
    guards = (requires_scope("reason"),)

    @post(
        operation_id="check_constraints",
        summary="Constraints, premises, graph, conflicts, entropy and budget of a prompt",
        status_code=HTTP_200_OK,
    )
    async def check_constraints(self, data: ConstraintsRequest, request: Request[Any, Any, Any]) -> ConstraintsResponse:
        """Parse, extract, link (with a domain) and build the graph off the event loop.

        A conflict answers ``needs_confirmation`` with both source spans (still
        200: the check itself succeeded). An unknown domain is 404. A check
        that would wait longer than the batcher's bound (or the request's
        ``X-Tenet-Deadline-S``) is 429 with ``Retry-After``. Like the design's
        stages 1-3, a check records no run: nothing is generated.

        The runtime, caller, hints and services come from the same providers as
        the other routes' dependencies, called here: Litestar resolves several
        dependencies of one handler in an anyio task group, one task each, and
        on this route (a few milliseconds a check) those five tasks were about
        a fifth of the event loop's CPU per request.
        """
        runtime = provide_runtime(request.app.state)
        services = provide_services(request.app.state)
        auth = provide_auth(request)
        hints = provide_hints(request)
        check_prompt(data.prompt, runtime.settings.max_prompt_chars)
        index = await lookup_domain_index(runtime, auth.tenant_id, data.domain)
        return await _analysed(
            data, profile_defaults(data.profile), index, auth.tenant_id, services.analyses, hints.deadline_s
        )
