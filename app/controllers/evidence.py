"""``POST /v1/evidence/query``: entity linking and evidence subgraphs for a text."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from typing import Any, Final

from anyio import to_thread
from litestar import Controller, Response, post
from litestar.status_codes import HTTP_200_OK
from sqlalchemy.ext.asyncio import AsyncSession

from app.auth import AuthContext
from app.controllers.ontologies import requires_any_scope
from app.runtime import Runtime
from app.schemas.evidence import EvidenceQuery, EvidenceResponse
from app.services.ontologies import load_index
from reasoning.evidence.export import subgraphs_to_turtle
from reasoning.evidence.index import OntologyIndex
from reasoning.evidence.linking import link_mentions
from reasoning.evidence.subgraph import build_evidence

__all__ = ["EvidenceController"]

_CJK: Final = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_LATIN: Final = re.compile(r"[A-Za-z]")


def _lang(body: EvidenceQuery) -> str:
    if body.lang is not None:
        return body.lang
    return "zh" if len(_CJK.findall(body.text)) > len(_LATIN.findall(body.text)) else "en"


def _query(index: OntologyIndex, body: EvidenceQuery) -> EvidenceResponse:
    started = time.perf_counter()
    linked = link_mentions(index, body.text)
    linked_s = time.perf_counter() - started
    today = body.today or datetime.now(UTC).date()
    subgraphs = build_evidence(
        index, linked, hops=body.hops, token_budget=body.token_budget, views=body.views,
        today=today, lang=_lang(body), stale_after_days=body.stale_after_days,
    )
    expand_s = time.perf_counter() - started - linked_s
    return EvidenceResponse(
        domain=body.domain,
        ontology_version=index.version,
        format=body.format,
        linked=list(linked),
        subgraphs=list(subgraphs),
        turtle=subgraphs_to_turtle(subgraphs) if body.format == "turtle" else None,
        timings={"link_ms": round(linked_s * 1000, 3), "expand_ms": round(expand_s * 1000, 3)},
    )


class EvidenceController(Controller):
    path = "/v1/evidence"
    tags = ["evidence"]

    @post(
        "/query",
        operation_id="query_evidence",
        summary="Link a text to the domain ontology and return ranked evidence subgraphs",
        guards=[requires_any_scope("reason", "ontology:read")],
        status_code=HTTP_200_OK,
    )
    async def query_evidence(self, data: EvidenceQuery, auth: AuthContext,
                             db_session: AsyncSession, runtime: Runtime) -> Response[Any]:
        """JSON by default; ``format: turtle`` answers ``text/turtle`` (facts as RDF statements)."""
        index = await load_index(db_session, runtime.ontology_indexes,
                                 auth.tenant_id, data.domain.strip().lower())
        result = await to_thread.run_sync(_query, index, data)
        if data.format == "turtle" and result.turtle is not None:
            return Response(result.turtle, media_type="text/turtle")  # Litestar adds the charset
        return Response(result)
