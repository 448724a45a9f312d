"""The human confirmation workflow: open, list, resolve and announce confirmations.

A run that stops in ``needs_confirmation`` because two hard constraints
exclude each other (``/v1/reason``, ``/v1/chat/completions``), or a session
turn that names more than one premise, becomes a pending confirmation of
its tenant: the request needed to continue it, and the candidates with their
source spans. A person resolves it by naming the candidate that stands:

- a constraint conflict is re-planned from the stored request (extraction is
  deterministic, so the constraint ids are those the person saw), the chosen
  constraint ``overrides`` every constraint it conflicted with (an edge of
  origin ``confirmation`` in the constraint graph: the losers become
  inactive and are neither steered nor verified), and the run continues
  through decode, verify and record. Conflicts the choice did not touch
  (a rule's or the domain ontology's) leave the new run in
  ``needs_confirmation`` with a new confirmation, whose stored request
  carries the choices made so far (``settled``): resolving it applies them
  all, so a person settles each conflict once.
- an ambiguous premise match retracts or amends the chosen premise through
  the session, which re-runs only what depended on it.

Opening and announcing confirmations is :mod:`app.services.pending`; the
continued run goes through :class:`app.services.runs.RunService` like any
other, and a premise change through the caller's session service.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
from sqlalchemy.ext.asyncio import AsyncSession

from app.auth import AuthContext
from app.schemas.confirmations import ChoiceOut, ConfirmationOut
from app.schemas.constraints import Profile
from app.schemas.reason import ReasonResponse
from app.schemas.sessions import PremiseAmend, TurnResult
from app.services.runs import RunRequest, RunService, Settlement
from app.services.sessions import SessionService
from inference.pipeline import ReasonOptions
from inference.scheduler import JobHints
from reasoning.errors import ConflictError, InvalidInput
from reasoning.provenance import RunKind
from store import confirmations as store
from store.audit import append_event
from store.db import transaction
from store.models import Confirmation

__all__ = ["ConfirmationService", "confirmation_out"]


def confirmation_out(row: Confirmation) -> ConfirmationOut:
    """A stored confirmation in its public shape."""
    return ConfirmationOut(
        id=row.id,
        kind=row.kind,  # type: ignore[arg-type]
        status=row.status,  # type: ignore[arg-type]
        origin=row.origin,
        prompt=row.prompt,
        detail=row.detail,
        choices=msgspec.convert(row.choices, list[ChoiceOut]),
        run_id=row.run_id,
        session_id=row.session_id,
        created_at=row.created_at,
        resolved_at=row.resolved_at,
        chosen=row.chosen,
        resolution_run_id=row.resolution_run_id,
    )


class ConfirmationService:
    """The caller's confirmations (one per request; every query filters by the caller's tenant).

    A resolution continues through ``runs`` (a constraint conflict) or
    ``sessions`` (an ambiguous premise), under the caller's ``hints``.
    """

    def __init__(
        self, runs: RunService, sessions: SessionService, auth: AuthContext, hints: JobHints
    ) -> None:
        self.runs = runs
        self.sessions = sessions
        self.auth = auth
        self.hints = hints
        self.factory = runs.runtime.sessionmaker

    async def list(self, db_session: AsyncSession, status: str | None, limit: int) -> list[ConfirmationOut]:
        rows = await store.list_confirmations(db_session, self.auth.tenant_id, status=status, limit=limit)
        return [confirmation_out(r) for r in rows]

    async def get(self, db_session: AsyncSession, confirmation_id: str) -> ConfirmationOut:
        return confirmation_out(await store.get_confirmation(db_session, self.auth.tenant_id, confirmation_id))

    async def resolve(self, confirmation_id: str, choose: str) -> ReasonResponse | TurnResult:
        """Let ``choose`` stand and continue the run (409 when already resolved or resolving).

        The claim commits before the pipeline runs, so no write lock is held
        while decoding; a failed continuation returns the confirmation to
        ``pending``.
        """
        async with transaction(self.factory) as db:
            row = await store.get_confirmation(db, self.auth.tenant_id, confirmation_id)
            if row.status == "resolved":
                raise ConflictError(f"confirmation {confirmation_id!r} is already resolved", status=row.status)
            choice = next((c for c in row.choices if c["id"] == choose), None)
            if choice is None:
                raise InvalidInput(
                    f"{choose!r} is not a choice of this confirmation; choose one of "
                    f"{[c['id'] for c in row.choices]}",
                    field="choose",
                )
            row = await store.claim_confirmation(
                db, self.auth.tenant_id, confirmation_id, key_id=self.auth.key_id, chosen=choose
            )
            kind, request, origin, session_id = row.kind, dict(row.request), row.origin, row.session_id
        try:
            if kind == "constraint_conflict":
                return await self._continue_run(confirmation_id, origin, request, choose, choice["conflicts_with"])
            return await self._apply_premise(confirmation_id, session_id or "", request, choice)
        except BaseException:
            async with transaction(self.factory) as db:
                await store.release_confirmation(db, self.auth.tenant_id, confirmation_id)
            raise

    async def _continue_run(
        self, confirmation_id: str, origin: str, request: dict[str, Any], chosen: str, losers: Sequence[str]
    ) -> ReasonResponse:
        """The stored request re-run with every choice so far settled; closed in the run's transaction."""
        settled = (
            *(Settlement(chosen=s["chosen"], losers=tuple(s["losers"])) for s in request.get("settled", [])),
            Settlement(chosen=chosen, losers=tuple(losers)),
        )
        run = RunRequest(
            prompt=str(request["prompt"]),
            options=msgspec.convert({**(request.get("options") or {}), "stream": False}, ReasonOptions),
            stored={**request, "confirmation_id": confirmation_id, "chosen": chosen},
            domain=request.get("domain"),
            profile=msgspec.convert(request["profile"], Profile) if request.get("profile") else None,
            kind=RunKind.CHAT if origin == "chat" else RunKind.REASON,
            origin=origin,
            settled=settled,
        )

        async def close(db: AsyncSession, response: ReasonResponse) -> None:
            await self._finish(db, confirmation_id, chosen, response.run_id)

        return await self.runs.answer(run, auth=self.auth, hints=self.hints, on_recorded=close)

    async def _apply_premise(
        self, confirmation_id: str, session_id: str, request: dict[str, Any], choice: dict[str, Any]
    ) -> TurnResult:
        if request.get("match") == "retract":
            turn = await self.sessions.retract_premise(session_id, choice["id"])
        else:
            value = request.get("new_value")
            old_value = (choice.get("params") or {}).get("value")
            keeps_text = value is not None and old_value and old_value in choice["text"]
            amendment = PremiseAmend(value=value, text=None if keeps_text else str(request["prompt"]).strip())
            turn = await self.sessions.amend_premise(session_id, choice["id"], amendment)
        async with transaction(self.factory) as db:
            await self._finish(db, confirmation_id, choice["id"], turn.run_id)
        return turn

    async def _finish(self, db: AsyncSession, confirmation_id: str, chosen: str, run_id: str | None) -> None:
        await store.finish_confirmation(db, self.auth.tenant_id, confirmation_id, resolution_run_id=run_id)
        await append_event(
            db, tenant_id=self.auth.tenant_id, event_type="confirmation.resolved", subject_type="confirmation",
            subject_id=confirmation_id, payload={"chosen": chosen, "run_id": run_id, "key_id": self.auth.key_id},
        )
