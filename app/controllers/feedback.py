"""``POST /v1/runs/{run_id}/feedback``: feedback on a run changes its session's next turns (scope ``reason``).

The feedback is always recorded as an audit event; for a run of a session it
also changes the session's constraint weights, priorities and view weights
(visible in ``GET /v1/sessions/{id}/graph``) for the turns that follow.
"""

from __future__ import annotations

from litestar import Controller, post

from app.auth import requires_scope
from app.schemas.sessions import FeedbackCreate, FeedbackResult
from app.services.sessions import SessionService

__all__ = ["FeedbackController"]


class FeedbackController(Controller):
    path = "/v1/runs"
    tags = ["feedback"]
    guards = [requires_scope("reason")]

    @post("/{run_id:str}/feedback", operation_id="create_run_feedback", status_code=200,
          summary="Feedback on a run: a constraint wrong, missing, to weigh more or less; a step wrong")
    async def create_run_feedback(self, run_id: str, data: FeedbackCreate, sessions: SessionService) -> FeedbackResult:
        return await sessions.feedback(run_id, data)
