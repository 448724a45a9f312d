"""``/v1/confirmations``: runs waiting for a person's choice, and their resolution (scope ``reason``).

Another tenant's confirmation answers 404; resolving one that is already
resolved (or being resolved) answers 409.
"""

from __future__ import annotations

from typing import Annotated, Literal

from litestar import Controller, get, post
from litestar.params import Parameter
from litestar.status_codes import HTTP_200_OK
from sqlalchemy.ext.asyncio import AsyncSession

from app.auth import requires_scope
from app.schemas.confirmations import ConfirmationList, ConfirmationOut, ConfirmationResolve
from app.schemas.reason import ReasonResponse
from app.schemas.sessions import TurnResult
from app.services.confirmations import ConfirmationService

__all__ = ["ConfirmationsController"]


class ConfirmationsController(Controller):
    path = "/v1/confirmations"
    tags = ["confirmations"]
    guards = [requires_scope("reason")]

    @get(operation_id="list_confirmations", summary="The caller's confirmations, newest first (pending by default)")
    async def list_confirmations(
        self,
        confirmations: ConfirmationService,
        db_session: AsyncSession,
        status: Literal["pending", "resolving", "resolved", "all"] = "pending",
        limit: Annotated[int, Parameter(ge=1, le=500)] = 100,
    ) -> ConfirmationList:
        items = await confirmations.list(db_session, None if status == "all" else status, limit)
        return ConfirmationList(items=items)

    @get("/{confirmation_id:str}", operation_id="get_confirmation", summary="One confirmation")
    async def get_confirmation(
        self, confirmation_id: str, confirmations: ConfirmationService, db_session: AsyncSession
    ) -> ConfirmationOut:
        return await confirmations.get(db_session, confirmation_id)

    @post(
        "/{confirmation_id:str}",
        operation_id="resolve_confirmation",
        status_code=HTTP_200_OK,
        summary="Choose the constraint or premise that stands; the run continues",
    )
    async def resolve_confirmation(
        self, confirmation_id: str, data: ConfirmationResolve, confirmations: ConfirmationService
    ) -> ReasonResponse | TurnResult:
        """A constraint conflict answers the continued run in the ``POST /v1/reason`` shape;
        an ambiguous premise answers the session turn that applied the chosen premise."""
        return await confirmations.resolve(confirmation_id, data.choose)
