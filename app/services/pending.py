"""Opening confirmations: a run's constraint conflict or a turn's ambiguous premise becomes a
pending confirmation of its tenant, announced to the webhook once its transaction commits.

:class:`PendingConfirmations` (one per app, on the service container) writes
the row and its ``confirmation.opened`` audit event in the caller's
transaction and announces it after that commits (never for a rolled-back
one), in the background, through the app's :class:`~app.webhooks.WebhookNotifier`
(``TENET_WEBHOOK_URL``; none when unset). Resolving a confirmation is
:mod:`app.services.confirmations`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import msgspec
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncSession

from app.auth import AuthContext
from app.schemas.confirmations import ChoiceOut
from app.schemas.reason import ReasonResponse
from app.webhooks import Announcement, Choice, WebhookNotifier
from reasoning.analysis import Status
from reasoning.constraints.model import Premise
from reasoning.errors import InvalidInput
from store import confirmations as store
from store.audit import append_event
from store.models import Confirmation

__all__ = ["RESOLVE_PATH", "PendingConfirmations", "conflict_choices"]

RESOLVE_PATH = "/v1/confirmations/{id}"


def conflict_choices(response: ReasonResponse) -> list[dict[str, Any]]:
    """The constraints of ``response``'s conflicts as choices, in the order they were read."""
    partners: dict[str, list[str]] = {}
    for conflict in response.conflicts:
        partners.setdefault(conflict.a, []).append(conflict.b)
        partners.setdefault(conflict.b, []).append(conflict.a)
    by_id = {c.id: c for c in response.constraints}
    choices = []
    for cid, others in partners.items():
        c = by_id[cid]
        text = c.source.text if c.source is not None else f"{c.origin} default {c.kind} {c.params}"
        choices.append(
            msgspec.to_builtins(
                ChoiceOut(
                    id=cid, type="constraint", text=text, source=c.source, kind=c.kind, params=c.params,
                    origin=c.origin, conflicts_with=list(dict.fromkeys(others)),
                )
            )
        )
    return choices


def _conflict_detail(response: ReasonResponse) -> str:
    by_id = {c.id: c for c in response.constraints}

    def said(cid: str) -> str:
        c = by_id[cid]
        return f"{cid} \u201c{c.source.text}\u201d" if c.source is not None else f"{cid} ({c.origin} default {c.kind})"

    return "; ".join(f"{said(c.a)} conflicts with {said(c.b)}: {c.reason}" for c in response.conflicts)


class PendingConfirmations:
    """Opens confirmations and announces each new one through ``notifier`` (None: not announced).

    ``notifier`` may be replaced while the app runs (a deployment hook; tests
    use it for fast back-off); a confirmation is announced through the
    notifier set when its transaction commits.
    """

    def __init__(self, notifier: WebhookNotifier | None) -> None:
        self.notifier = notifier

    async def open_conflict(
        self,
        db_session: AsyncSession,
        auth: AuthContext,
        response: ReasonResponse,
        request: dict[str, Any],
        *,
        origin: str,
    ) -> ReasonResponse:
        """``response`` with a new pending confirmation when its constraints conflict; unchanged otherwise.

        ``request`` is what re-running needs: ``prompt``, ``domain``, ``profile``
        and ``options`` as ``POST /v1/reason`` takes them, and ``settled``, the
        choices earlier confirmations of the request made. A ``needs_confirmation``
        without a conflicting pair (no decode can satisfy the constraints) offers
        nothing to choose between and opens no confirmation. The row is written in
        ``db_session``'s transaction and announced once that commits.
        """
        if response.status != Status.NEEDS_CONFIRMATION or not response.conflicts:
            return response
        stored = {k: request.get(k) for k in ("prompt", "domain", "profile", "options")}
        if request.get("settled"):
            stored["settled"] = request["settled"]
        row = await store.create_confirmation(
            db_session,
            tenant_id=auth.tenant_id,
            key_id=auth.key_id,
            kind="constraint_conflict",
            origin=origin,
            prompt=str(request.get("prompt", "")),
            detail=_conflict_detail(response),
            request=stored,
            choices=conflict_choices(response),
            run_id=response.run_id,
            session_id=response.session_id,
        )
        await append_event(
            db_session, tenant_id=auth.tenant_id, event_type="confirmation.opened", subject_type="confirmation",
            subject_id=row.id, payload={"kind": row.kind, "run_id": row.run_id, "choices": [c["id"] for c in row.choices]},
        )
        self._announce_after_commit(db_session, row)
        return msgspec.structs.replace(response, confirmation_id=row.id)

    async def open_premise(
        self,
        db_session: AsyncSession,
        *,
        tenant_id: str,
        key_id: str | None,
        session_id: str,
        prompt: str,
        match_kind: str,
        new_value: str | None,
        candidates: Sequence[Premise],
    ) -> Confirmation:
        """A pending confirmation for a session turn that matched several premises.

        ``match_kind`` is the match's ``retract`` or ``amend`` (with ``new_value``);
        ``candidates`` are the session's premises (their ids are the session's).
        For the session service to call where it answers ``kind="confirmation"``.
        """
        if match_kind not in ("retract", "amend"):
            raise InvalidInput(f"unknown premise match kind {match_kind!r}")
        choices = [
            msgspec.to_builtins(
                ChoiceOut(id=p.id, type="premise", text=p.text, source=p.source, kind="premise",
                          params={"topic": p.topic, "value": p.value})
            )
            for p in candidates
        ]
        verb = "retract" if match_kind == "retract" else "amend"
        row = await store.create_confirmation(
            db_session,
            tenant_id=tenant_id,
            key_id=key_id,
            kind="premise_ambiguity",
            origin="session",
            prompt=prompt,
            detail=f"\u201c{prompt}\u201d could {verb} any of {len(choices)} premises; choose the one it means",
            request={"prompt": prompt, "match": match_kind, "new_value": new_value},
            choices=choices,
            session_id=session_id,
        )
        await append_event(
            db_session, tenant_id=tenant_id, event_type="confirmation.opened", subject_type="confirmation",
            subject_id=row.id, payload={"kind": row.kind, "session_id": session_id, "choices": [c["id"] for c in choices]},
        )
        self._announce_after_commit(db_session, row)
        return row

    def _announce_after_commit(self, db_session: AsyncSession, row: Confirmation) -> None:
        announcement = Announcement(
            confirmation_id=row.id,
            kind=row.kind,
            detail=row.detail,
            choices=tuple(
                Choice(id=c["id"], label=str(c.get("kind") or c["type"]), text=str(c["text"])) for c in row.choices
            ),
            resolve_path=RESOLVE_PATH.format(id=row.id),
        )
        loop = asyncio.get_running_loop()

        def fire(_: Any) -> None:
            notifier = self.notifier
            if notifier is not None:
                loop.call_soon_threadsafe(notifier.announce, announcement)

        event.listen(db_session.sync_session, "after_commit", fire, once=True)
