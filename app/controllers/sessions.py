"""``/v1/sessions``: multi-turn sessions, their premises and their reasoning DAG (scope ``reason``).

Another tenant's session, a deleted one and one idle longer than
``TENET_SESSION_IDLE_TTL_S`` all answer 404. A turn that changed the session
while another replica's turn ran answers 409 (retry it).
"""

from __future__ import annotations

from typing import Any, Literal

from litestar import Controller, Response, delete, get, patch, post
from litestar.params import Parameter

from app.auth import requires_scope
from app.media_types import response_media_type
from app.schemas.sessions import PremiseAmend, SessionCreate, SessionOut, TurnCreate, TurnResult
from app.services.sessions import GRAPH_MEDIA_TYPES, SessionService

__all__ = ["SessionsController"]


class SessionsController(Controller):
    path = "/v1/sessions"
    tags = ["sessions"]
    guards = [requires_scope("reason")]

    @post(operation_id="create_session", summary="Open a session (optionally on a domain, with a profile)")
    async def create_session(self, data: SessionCreate, sessions: SessionService) -> SessionOut:
        return await sessions.create(data)

    @get("/{session_id:str}", operation_id="get_session",
         summary="A session: premises with status, turns (runs) and the current answer")
    async def get_session(self, session_id: str, sessions: SessionService) -> SessionOut:
        return await sessions.get(session_id)

    @delete("/{session_id:str}", operation_id="delete_session", status_code=200,
            summary="Close a session (soft delete; its runs and audit events stay)")
    async def delete_session(self, session_id: str, sessions: SessionService) -> SessionOut:
        return await sessions.delete(session_id)

    @post("/{session_id:str}/turns", operation_id="create_turn", status_code=200,
          summary="A new prompt: a question, or a retraction / amendment of an earlier premise")
    async def create_turn(self, session_id: str, data: TurnCreate, sessions: SessionService) -> TurnResult:
        return await sessions.turn(session_id, data)

    @get("/{session_id:str}/graph", operation_id="get_session_graph",
         summary="The session's reasoning DAG as node-link JSON, Turtle or JSON-LD")
    async def get_session_graph(
        self,
        session_id: str,
        sessions: SessionService,
        graph_format: Literal["json", "turtle", "jsonld"] = Parameter(query="format", default="json"),
    ) -> Response[Any]:
        body = await sessions.graph(session_id, graph_format)
        return Response(body, media_type=response_media_type(GRAPH_MEDIA_TYPES[graph_format]))

    @delete("/{session_id:str}/premises/{premise_id:str}", operation_id="retract_premise", status_code=200,
            summary="Retract a premise and re-run only what depended on it")
    async def retract_premise(self, session_id: str, premise_id: str, sessions: SessionService) -> TurnResult:
        return await sessions.retract_premise(session_id, premise_id)

    @patch("/{session_id:str}/premises/{premise_id:str}", operation_id="amend_premise",
           summary="Amend a premise (new value or text) and re-run only what depended on it")
    async def amend_premise(self, session_id: str, premise_id: str, data: PremiseAmend,
                            sessions: SessionService) -> TurnResult:
        return await sessions.amend_premise(session_id, premise_id, data)
