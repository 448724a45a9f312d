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

A new confirmation is announced to ``TENET_WEBHOOK_URL`` after its
transaction commits (never for a rolled-back one), in the background.
"""

from __future__ import annotations

import asyncio
import dataclasses
import weakref
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import msgspec
from anyio import to_thread
from litestar.datastructures import State
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncSession

from app.auth import AuthContext
from app.runtime import Runtime
from app.schemas.confirmations import ChoiceOut, ConfirmationOut
from app.schemas.constraints import Profile
from app.schemas.reason import ReasonResponse
from app.schemas.sessions import PremiseAmend, TurnResult
from app.services import reasoning as reasoning_service
from app.services.regraph import rebuild_graph
from app.tracing import trace_run
from app.webhooks import Announcement, Choice, WebhookNotifier
from inference.pipeline import Plan, ReasonOptions
from reasoning.analysis import Status
from reasoning.constraints.model import Premise
from reasoning.errors import ConflictError, InvalidInput
from reasoning.graph.relations import Edge, EdgeKind
from reasoning.provenance import RunKind
from store import confirmations as store
from store.audit import append_event
from store.db import transaction
from store.models import Confirmation

if TYPE_CHECKING:
    from app.services.sessions import SessionService

__all__ = [
    "ConfirmationService",
    "confirmation_out",
    "conflict_choices",
    "notifier_for",
    "open_premise_confirmation",
    "set_notifier",
    "settle_conflict",
    "with_confirmation",
]

RESOLVE_PATH = "/v1/confirmations/{id}"
_NOTIFIERS: weakref.WeakKeyDictionary[Runtime, WebhookNotifier | None] = weakref.WeakKeyDictionary()


def notifier_for(runtime: Runtime) -> WebhookNotifier | None:
    """The app's webhook notifier (built from its settings on first use); None when unconfigured."""
    if runtime not in _NOTIFIERS:
        settings = runtime.settings
        _NOTIFIERS[runtime] = (
            WebhookNotifier(settings.webhook_url, settings.webhook_format) if settings.webhook_url else None
        )
    return _NOTIFIERS[runtime]


def set_notifier(runtime: Runtime, notifier: WebhookNotifier | None) -> None:
    """Replace the app's notifier (a deployment hook; tests use it for fast back-off)."""
    _NOTIFIERS[runtime] = notifier


def _announce_after_commit(db_session: AsyncSession, runtime: Runtime, row: Confirmation) -> None:
    notifier = notifier_for(runtime)
    if notifier is None:
        return
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
        loop.call_soon_threadsafe(notifier.announce, announcement)

    event.listen(db_session.sync_session, "after_commit", fire, once=True)


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


async def with_confirmation(
    db_session: AsyncSession,
    runtime: Runtime,
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
    _announce_after_commit(db_session, runtime, row)
    return msgspec.structs.replace(response, confirmation_id=row.id)


async def open_premise_confirmation(
    db_session: AsyncSession,
    runtime: Runtime,
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
    _announce_after_commit(db_session, runtime, row)
    return row


def settle_conflict(plan: Plan, chosen: str, losers: Sequence[str]) -> Plan:
    """``plan`` with ``chosen`` overriding each of ``losers`` in its constraint graph.

    The graph is built again with the person's choice added to the edges the
    analysis drew beyond the rules (the domain ontology's, e.g. a disjointness
    ``excludes``), so a conflict the choice did not touch stays a conflict.

    Raises:
        ConflictError: the re-read prompt no longer has these constraints
            (the extraction changed since the confirmation was opened).
    """
    analysis = plan.analysis
    known = {c.id for c in analysis.constraints}
    missing = [cid for cid in (chosen, *losers) if cid not in known]
    if missing:
        raise ConflictError(
            f"the prompt no longer reads as it did (constraints {missing} are gone); send the request again"
        )
    edges = [
        Edge(source=chosen, target=loser, relation=EdgeKind.OVERRIDES, reason="chosen by a person",
             origin="confirmation")
        for loser in losers
    ]
    settled = rebuild_graph(analysis, analysis.constraints, prompt=plan.prompt, extra_edges=edges)
    return dataclasses.replace(plan, analysis=settled)


def confirmation_out(row: Confirmation) -> ConfirmationOut:
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
    """The caller's confirmations (one per request; every query filters by the caller's tenant)."""

    def __init__(self, runtime: Runtime, auth: AuthContext, state: State) -> None:
        self.runtime = runtime
        self.auth = auth
        self.state = state

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
        factory = self.runtime.sessionmaker
        async with transaction(factory) as db:
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
            async with transaction(factory) as db:
                await store.release_confirmation(db, self.auth.tenant_id, confirmation_id)
            raise

    async def _continue_run(
        self, confirmation_id: str, origin: str, request: dict[str, Any], chosen: str, losers: Sequence[str]
    ) -> ReasonResponse:
        runtime, auth = self.runtime, self.auth
        options = msgspec.convert({**(request.get("options") or {}), "stream": False}, ReasonOptions)
        profile = msgspec.convert(request["profile"], Profile) if request.get("profile") else None
        defaults = reasoning_service.profile_defaults(profile)
        prompt = str(request["prompt"])
        domain = request.get("domain")
        index = await reasoning_service.lookup_domain_index(runtime, auth.tenant_id, domain)
        settled = [*request.get("settled", []), {"chosen": chosen, "losers": list(losers)}]
        reasoner = runtime.reasoner()
        runtime.scheduler.check()
        started = datetime.now(UTC)

        def settled_plan() -> Plan:
            plan = reasoner.plan(prompt, options=options, domain_index=index, defaults=defaults)
            for choice in settled:
                plan = settle_conflict(plan, choice["chosen"], choice["losers"])
            return plan

        plan = await to_thread.run_sync(settled_plan)
        result = await reasoning_service.submit_decode(
            runtime, lambda: reasoner.run(plan, tenant=auth.tenant_id)
        )
        run_id = reasoning_service.new_run_id()
        model = msgspec.to_builtins(runtime.require_model().identity.__dict__)
        response = reasoning_service.build_response(run_id, plan, result, model)
        record = reasoning_service.run_record(
            auth, plan, result, response, {**request, "confirmation_id": confirmation_id, "chosen": chosen},
            runtime, started=started, kind=RunKind.CHAT if origin == "chat" else RunKind.REASON,
            domain=request.get("domain"),
        )
        async with transaction(runtime.sessionmaker) as db:
            record_ms = await reasoning_service.record_reason_run(db, record, run_id)
            response = msgspec.structs.replace(response, timings={**response.timings, "record": record_ms})
            response = await with_confirmation(
                db, runtime, auth, response, {**request, "settled": settled}, origin=origin
            )
            await self._finish(db, confirmation_id, chosen, run_id)
        trace_run(response, started=started, prompt=prompt)
        return response

    async def _apply_premise(
        self, confirmation_id: str, session_id: str, request: dict[str, Any], choice: dict[str, Any]
    ) -> TurnResult:
        sessions = self._sessions()
        if request.get("match") == "retract":
            turn = await sessions.retract_premise(session_id, choice["id"])
        else:
            value = request.get("new_value")
            old_value = (choice.get("params") or {}).get("value")
            keeps_text = value is not None and old_value and old_value in choice["text"]
            amendment = PremiseAmend(value=value, text=None if keeps_text else str(request["prompt"]).strip())
            turn = await sessions.amend_premise(session_id, choice["id"], amendment)
        async with transaction(self.runtime.sessionmaker) as db:
            await self._finish(db, confirmation_id, choice["id"], turn.run_id)
        return turn

    def _sessions(self) -> SessionService:
        """The caller's session service on the app's one session workspace (shared turn locks)."""
        # Imported here: the session service opens premise confirmations through this module.
        from app.services.sessions import SessionService, SessionWorkspace

        workspace = getattr(self.state, "session_workspace", None)
        if workspace is None or workspace.runtime is not self.runtime:
            workspace = SessionWorkspace(self.runtime)
            self.state.session_workspace = workspace
        return SessionService(workspace, self.runtime.settings, self.auth.tenant_id, self.auth.key_id)

    async def _finish(self, db: AsyncSession, confirmation_id: str, chosen: str, run_id: str | None) -> None:
        await store.finish_confirmation(db, self.auth.tenant_id, confirmation_id, resolution_run_id=run_id)
        await append_event(
            db, tenant_id=self.auth.tenant_id, event_type="confirmation.resolved", subject_type="confirmation",
            subject_id=confirmation_id, payload={"chosen": chosen, "run_id": run_id, "key_id": self.auth.key_id},
        )
