"""Session turns: new questions, premise retraction and amendment, partial re-inference.

One :class:`SessionService` per request (the service container builds it
with the caller's identity and scheduling hints); the per-session turn locks
live in one :class:`SessionWorkspace` per app, and every decode goes through
the app's :class:`~app.services.runs.RunService` (the same admission check,
scheduler and recording as ``/v1/reason``).

A turn, whatever its kind, runs as:

1. take the session's in-process lock (turns of one session never overlap in
   this process);
2. read the session in a short transaction, remembering ``last_active_at``;
3. the run service's admission check (an overloaded service refuses before
   planning), then plan and decode with no transaction open (seconds of CPU
   must not hold a SQLite write lock): ``RunService.plan_and_decode`` with
   the session's planning (its profile, premises and feedback policy) as
   the hook;
4. write premises, the run (``store.runs.record_run``: run, steps, PROV
   bundle, audit event), the DAG and the state in one transaction whose
   compare-and-swap on ``last_active_at`` fails with 409 if another replica
   committed a turn meanwhile; then release the lock.

Retraction / amendment (by a natural-language turn or through the API)
recomputes only what depends on the changed premise: each turn that used it
is re-planned without it (or with its new text) and ``Reasoner.rerun`` decodes
only the branches whose prompt changed; a premise no branch saw recomputes
nothing and runs no model at all.

The service is split by job: this module holds the plain reads and writes
and new question turns; :mod:`app.services.session_premises` retraction,
amendment and their re-runs; :mod:`app.services.session_feedback` feedback
and the session policy; :mod:`app.services.session_dag` what a turn records
in the DAG; :mod:`app.services.session_core` what they share (the turn
locks, a turn's stored state, the API shapes, loading, planning, the turn
run's response and record).
"""


from __future__ import annotations

from datetime import timedelta
from typing import Any

import msgspec
from sqlalchemy.ext.asyncio import AsyncSession

from app.schemas.constraints import Profile
from app.schemas.reason import ReasonResponse
from app.schemas.sessions import SessionCreate, SessionOut, TurnCreate, TurnOut, TurnResult
from app.services.ontologies import load_index
from app.services.run_output import TurnRun
from app.services.runs import check_prompt, lookup_domain_index
from app.services.session_core import (
    SessionWorkspace,
    StoredTurn,
    answer_out,
    constraints_doc,
    decode_ms,
    premise_out,
)
from app.services.session_dag import branch_traces, conclusion_traces, policy_marks
from app.services.session_feedback import SessionFeedback
from app.services.session_premises import PremiseChanges
from inference.loader import LoadedModel
from inference.pipeline import ReasonOptions, ReasonResult
from reasoning.dag import record_turn
from reasoning.errors import ConflictError, InvalidInput
from reasoning.premises import match_retraction
from reasoning.provenance.record import RunKind
from store import sessions as repo
from store.audit import append_event
from store.db import transaction
from store.models import Session as SessionRow
from store.models import new_id, utcnow

__all__ = ["GRAPH_MEDIA_TYPES", "SessionService", "SessionWorkspace"]

GRAPH_MEDIA_TYPES = {
    "json": "application/json",
    "turtle": "text/turtle; charset=utf-8",
    "jsonld": "application/ld+json",
}


class SessionService(PremiseChanges, SessionFeedback):
    """The operations behind ``/v1/sessions`` and ``/v1/runs/{id}/feedback`` for one caller: plain
    reads and writes and new turns here, premise changes and feedback in the parts it inherits."""

    # -- plain reads and writes -----------------------------------------------------

    async def create(self, data: SessionCreate) -> SessionOut:
        async with transaction(self.factory) as db:
            if data.domain is not None:
                await load_index(db, self.runtime.ontology_indexes, self.tenant_id,
                                 data.domain.strip().lower())
            row = await repo.create_session(db, self.tenant_id, domain=data.domain and data.domain.strip().lower())
            row.state = {**row.state, "profile": msgspec.to_builtins(data.profile) if data.profile else None}
            await append_event(db, tenant_id=self.tenant_id, event_type="session.created",
                               subject_type="session", subject_id=row.id,
                               payload={"domain": row.domain, "key_id": self.key_id})
            return await self._session_out(db, row)

    async def get(self, session_id: str) -> SessionOut:
        async with transaction(self.factory) as db:
            row = await self._load(db, session_id)
            return await self._session_out(db, row)

    async def delete(self, session_id: str) -> SessionOut:
        async with self.ws.lock(session_id), transaction(self.factory) as db:
            await self._load(db, session_id)
            row = await repo.delete_session(db, self.tenant_id, session_id, idle_ttl_s=self.ttl)
            await append_event(db, tenant_id=self.tenant_id, event_type="session.deleted",
                               subject_type="session", subject_id=row.id, payload={"key_id": self.key_id})
            return await self._session_out(db, row)

    async def graph(self, session_id: str, fmt: str) -> str | dict[str, Any]:
        if fmt not in GRAPH_MEDIA_TYPES:
            raise InvalidInput(f"format must be one of {sorted(GRAPH_MEDIA_TYPES)}", field="format")
        async with transaction(self.factory) as db:
            row = await self._load(db, session_id)
        dag = repo.load_dag(row)
        base = f"urn:tenet:session:{row.id}/"
        if fmt == "turtle":
            return dag.to_turtle(base)
        if fmt == "jsonld":
            return dag.to_jsonld(base)
        return dag.to_node_link()

    async def _session_out(self, db: AsyncSession, row: SessionRow) -> SessionOut:
        premises = await repo.list_premises(db, self.tenant_id, row.id)
        runs = await repo.list_session_runs(db, self.tenant_id, row.id)
        turns = [msgspec.convert(t, StoredTurn) for t in row.state.get("turns", [])]
        current = None
        if turns:
            last = turns[-1]
            current = answer_out(msgspec.to_builtins(last), msgspec.convert(last.result, ReasonResult))
        return SessionOut(
            id=row.id,
            domain=row.domain,
            profile=msgspec.convert(row.state["profile"], Profile) if row.state.get("profile") else None,
            created_at=row.created_at,
            last_active_at=row.last_active_at,
            expires_at=row.last_active_at + timedelta(seconds=self.ttl),
            premises=[premise_out(p) for p in premises],
            turns=[
                TurnOut(run_id=r.id, kind=r.kind, status=r.status, prompt=r.prompt, created_at=r.created_at,
                        duration_ms=r.duration_ms)
                for r in runs
            ],
            current_answer=current,
        )

    # -- turns ----------------------------------------------------------------------

    async def turn(self, session_id: str, data: TurnCreate, *, model: LoadedModel | None = None) -> TurnResult:
        """A new prompt: a retraction / amendment of earlier premises, or a new question.

        ``model`` is the loaded model when the caller looked it up already; a
        turn that decodes looks it up once when None (a change no turn
        depended on runs no model at all).
        """
        check_prompt(data.prompt, self.settings.max_prompt_chars)
        options = data.options
        async with self.ws.lock(session_id):
            async with transaction(self.factory) as db:
                row = await self._load(db, session_id)
                live = await repo.list_premises(db, self.tenant_id, session_id, statuses=("active", "amended"))
            match = match_retraction(data.prompt, [repo.premise_from_row(p) for p in live]) if live else None
            if match is None or match.kind == "none" or not match.premise_ids:
                return await self._new_question(row, data.prompt, options, model)
            by_id = {p.id: p for p in live}
            if match.ambiguous:
                return await self._ask_confirmation(row, data.prompt, [by_id[i] for i in match.premise_ids], match)
            target = by_id[match.premise_ids[0]]
            if match.kind == "retract":
                return await self._change_premise(row, target.id, "retracted", reason=data.prompt, model=model)
            value = match.new_value
            text = None
            if value is None or not (target.value and target.value in target.text):
                text = data.prompt.strip()
            return await self._change_premise(row, target.id, "amended", value=value, text=text, reason=data.prompt,
                                              model=model)

    async def question(self, session_id: str, data: TurnCreate, *, domain: str | None = None,
                       profile: Profile | None = None, model: LoadedModel | None = None) -> ReasonResponse:
        """A new question turn (``POST /v1/reason`` with a ``session_id``); its run as ``/v1/reason`` answers it.

        It runs exactly as a question turn of :meth:`turn` (premises added, run
        recorded in the session, DAG and state saved), but the prompt is never
        read as a retraction or amendment. ``domain`` and ``profile``, when
        given, must be the session's own: they are fixed when the session is
        created, so a different one is a 409 rather than silently ignored.
        """
        check_prompt(data.prompt, self.settings.max_prompt_chars)
        async with self.ws.lock(session_id):
            async with transaction(self.factory) as db:
                row = await self._load(db, session_id)
            _check_same_setup(row, domain, profile)
            result = await self._new_question(row, data.prompt, data.options, model)
        assert result.response is not None, "a question turn always answers with its run"
        return result.response

    async def _new_question(self, row: SessionRow, prompt: str, options: ReasonOptions,
                            model: LoadedModel | None = None) -> TurnResult:
        model = model if model is not None else self.runtime.require_model()
        self.runs.check_tokens(prompt, model)
        started = utcnow()
        expected = row.last_active_at
        index = await lookup_domain_index(self.runtime, self.tenant_id, row.domain)
        self.runs.admit(self.hints)
        plan, result = await self.runs.plan_and_decode(
            lambda reasoner: self._plan(reasoner, row, prompt, options, index), model, self.hints, self.tenant_id,
            index=index, session_id=row.id,
        )
        finished = utcnow()
        turns = list(row.state.get("turns", []))
        number = len(turns) + 1
        run_id = new_id()
        async with transaction(self.factory) as db:
            session = await self._load(db, row.id, for_update=True)
            rows = await repo.add_premises(db, session, plan.premises, run_id=None, turn=number)
            mapping = {pid: r.id for pid, r in rows.items()}
            turn = StoredTurn(
                turn=number, prompt=prompt, options=msgspec.to_builtins(options), run_id=run_id,
                premises=mapping, result=msgspec.to_builtins(result),
                constraints=constraints_doc(plan.active_constraints), full_decode_ms=decode_ms(result),
                runs=[run_id],
            )
            record = self._record(RunKind.REASON, plan, result, started, model,
                                  TurnRun(session_id=session.id, prompt=prompt, options=options,
                                          premises=mapping, finished=finished))
            record_ms = await self.runs.record(db, record, run_id)
            for r in rows.values():
                r.run_id = run_id
            dag = repo.load_dag(session)
            statuses = {r.id: r.status for r in rows.values()}
            record_turn(
                dag, turn=number, premises=[repo.premise_from_row(r) for r in rows.values()],
                constraints=plan.active_constraints, evidence=[f for s in plan.branches for f in s.facts],
                branches=branch_traces(result, mapping, None) if result.decode is not None else [],
                answer=result.answer, premise_status=statuses, conclusions=conclusion_traces(result, mapping),
            )
            policy_marks(dag, number, row.state)
            state = {**session.state, "turns": [*turns, msgspec.to_builtins(turn)]}
            await repo.save_session(db, session, expected_active_at=expected, dag=dag, state=state)
            premises = [premise_out(r) for r in await repo.list_premises(db, self.tenant_id, row.id)]
        return TurnResult(
            session_id=row.id, kind="reason", status=str(result.status), run_id=run_id,
            answer=answer_out(msgspec.to_builtins(turn), result), premises=premises,
            message=result.conflict or "",
            response=self._response(run_id, plan, result, model, row.id, record_ms, mapping),
        )


def _check_same_setup(row: SessionRow, domain: str | None, profile: Profile | None) -> None:
    """Refuse (409) a domain or profile other than the session's: both are set when it is created."""
    if domain is not None and domain.strip().lower() != row.domain:
        on = f"domain {row.domain!r}" if row.domain else "no domain"
        raise ConflictError(
            f"session {row.id!r} is on {on}, not {domain!r}: a session's domain is set when it is "
            "created; leave domain out (or send the session's own)",
            field="domain",
        )
    stored = row.state.get("profile")
    if profile is not None and msgspec.to_builtins(profile) != stored:
        raise ConflictError(
            f"session {row.id!r} has a different profile: a session's profile is set when it is created; "
            "leave profile out (or send the session's own)",
            field="profile",
        )
