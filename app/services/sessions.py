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
   must not hold a SQLite write lock);
4. write premises, the run (``store.runs.record_run``: run, steps, PROV
   bundle, audit event), the DAG and the state in one transaction whose
   compare-and-swap on ``last_active_at`` fails with 409 if another replica
   committed a turn meanwhile; then release the lock.

Retraction / amendment (by a natural-language turn or through the API)
recomputes only what depends on the changed premise: each turn that used it
is re-planned without it (or with its new text) and ``Reasoner.rerun`` decodes
only the branches whose prompt changed; a premise no branch saw recomputes
nothing and runs no model at all.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import weakref
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Literal

import msgspec
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.runtime import Runtime
from app.schemas.constraints import Profile
from app.schemas.reason import ReasonResponse
from app.schemas.sessions import (
    AnswerOut,
    FeedbackCreate,
    FeedbackResult,
    PolicyChangeOut,
    PremiseAmend,
    PremiseOut,
    ReinferenceOut,
    SessionCreate,
    SessionOut,
    TurnBranchOut,
    TurnCreate,
    TurnOut,
    TurnResult,
    TurnStepOut,
    VerdictOut,
)
from app.services.ontologies import load_index
from app.services.pending import PendingConfirmations
from app.services.run_output import TurnRun, run_record
from app.services.runs import RunService, check_prompt, lookup_domain_index, profile_defaults
from app.settings import Settings
from inference.loader import LoadedModel
from inference.pipeline import Plan, Reasoner, ReasonOptions, ReasonResult
from inference.scheduler import JobHints
from reasoning.analysis import Status
from reasoning.constraints.model import Constraint, Hardness, Kind
from reasoning.dag import (
    BranchTrace,
    ConclusionTrace,
    DagStep,
    NodeKind,
    ReasoningDag,
    node_id,
    record_turn,
)
from reasoning.errors import ConflictError, InvalidInput
from reasoning.feedback import Feedback, FeedbackKind, RunView, SessionPolicy, apply_feedback
from reasoning.premises import RetractionMatch, match_retraction
from reasoning.provenance.record import Reinference, RunKind, RunRecord
from reasoning.regraph import rebuild_graph
from store import runs as run_store
from store import sessions as repo
from store.audit import append_event
from store.db import transaction
from store.models import Premise as PremiseRow
from store.models import Session as SessionRow
from store.models import new_id, utcnow

__all__ = ["GRAPH_MEDIA_TYPES", "SessionService", "SessionWorkspace"]

GRAPH_MEDIA_TYPES = {
    "json": "application/json",
    "turtle": "text/turtle; charset=utf-8",
    "jsonld": "application/ld+json",
}


class SessionWorkspace:
    """What every session request of one app shares: its runtime and the turn locks.

    ``lock`` hands out one asyncio lock per session id, held weakly: a lock
    exists while some turn holds or waits for it. Decodes go through the
    runtime's one reasoner and its scheduler (shared with ``/v1/reason``), so
    session re-runs and plain requests share the tenant-scoped prefix KV cache.
    """

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    def lock(self, session_id: str) -> asyncio.Lock:
        lock = self._locks.get(session_id)
        if lock is None:
            lock = asyncio.Lock()
            self._locks[session_id] = lock
        return lock


def _profile_defaults(profile: Mapping[str, Any] | None) -> tuple[Constraint, ...]:
    if not profile:
        return ()
    return profile_defaults(msgspec.convert(profile, Profile))


def _premise_out(row: PremiseRow) -> PremiseOut:
    data = row.data or {}
    return PremiseOut(
        id=row.id,
        text=row.text,
        topic=row.topic,
        value=row.value,
        status=row.status,  # type: ignore[arg-type]
        turn=int(data.get("turn", 0)),
        run_id=row.run_id,
        created_at=row.created_at,
        updated_at=row.updated_at,
        history=list(data.get("history", [])),
    )


def _step_node(turn: int, view: str, step_id: str) -> str:
    """The DAG node of a step: per turn, keyed ``view/step id``.

    Step ids (``<view>.S<k>``) name their view already; the key keeps the
    view prefix so the DAGs of sessions stored earlier still resolve.
    """
    return node_id(NodeKind.STEP, f"{view}/{step_id}", turn=turn)


def _conclusions(result: ReasonResult, mapping: Mapping[str, str]) -> list[ConclusionTrace]:
    """DAG traces of the decision's conclusions, premise ids mapped to the stored premise ids."""
    if result.decision is None:
        return []
    return [
        ConclusionTrace(
            key=f"{c.rule_id}/{c.action.rsplit('#', 1)[-1].rsplit('/', 1)[-1]}", statement=c.statement_en,
            rule_id=c.rule_id, premise_ids=tuple(mapping[p] for p in c.premise_ids if p in mapping),
            evidence_ids=c.evidence_ids,
        )
        for c in result.decision.conclusions
    ]


def _traces(result: ReasonResult, mapping: Mapping[str, str], recomputed: set[str] | None) -> list[BranchTrace]:
    """DAG traces of a result's branches, premise ids mapped to the stored premise ids."""
    out: list[BranchTrace] = []
    for spec, branch in zip(result.branch_specs, result.branches):
        premise_ids = tuple(mapping[p] for p in spec.premise_ids if p in mapping)
        out.append(
            BranchTrace(
                view=spec.view,
                premise_ids=premise_ids,
                evidence_ids=tuple(f.id for f in spec.facts),
                steps=tuple(
                    DagStep(
                        id=f"{spec.view}/{s.id}",
                        text=s.text,
                        confidence=s.confidence,
                        evidence_ids=tuple(dict.fromkeys((*s.evidence_cited, *s.evidence_used))),
                        premise_ids=tuple(mapping[p] for p in s.premise_ids if p in mapping),
                    )
                    for s in branch.steps
                ),
                text=branch.text,
                confidence=branch.confidence,
                recomputed=recomputed is None or spec.view in recomputed,
            )
        )
    return out


def _answer_out(turn: Mapping[str, Any], result: ReasonResult) -> AnswerOut:
    mapping: Mapping[str, str] = turn.get("premises", {})
    recomputed = set(result.recomputed)
    branches = [
        TurnBranchOut(
            view=spec.view,
            relevance=spec.relevance,
            premise_ids=[mapping.get(p, p) for p in spec.premise_ids],
            evidence_ids=[f.id for f in spec.facts],
            text=branch.text,
            confidence=branch.confidence,
            recomputed=spec.view in recomputed,
            steps=[
                TurnStepOut(
                    id=_step_node(int(turn["turn"]), spec.view, s.id),
                    text=s.text,
                    confidence=s.confidence,
                    evidence_ids=list(dict.fromkeys((*s.evidence_cited, *s.evidence_used))),
                    premise_ids=[mapping.get(p, p) for p in s.premise_ids],
                    calibration_hint=s.calibration_hint,
                    kind=s.kind,
                    support=list(s.support),
                )
                for s in branch.steps
            ],
        )
        for spec, branch in zip(result.branch_specs, result.branches)
    ]
    path = [s.id for s in branches[result.answer_branch].steps] if result.answer_branch is not None else []
    return AnswerOut(
        turn=int(turn["turn"]),
        run_id=str(turn["run_id"]),
        status=str(result.status),
        text=result.answer,
        reasoning_path=path,
        branches=branches,
        verdicts=[VerdictOut(constraint_id=v.constraint_id, satisfied=v.satisfied, detail=v.detail)
                  for v in result.verdicts],
    )


def _stored_ids(response: ReasonResponse, mapping: Mapping[str, str]) -> ReasonResponse:
    """``response`` with every premise id the session's stored one (``mapping``: run -> stored).

    A turn's response then names premises as the session's ``premises``, its
    branches and ``DELETE`` / ``PATCH /premises/{id}`` do: a client retracts
    the premise a conclusion used by the id the conclusion gives. An id
    without a stored premise is kept.
    """
    if not mapping:
        return response

    def ids(values: Sequence[str]) -> list[str]:
        return [mapping.get(v, v) for v in values]

    replace = msgspec.structs.replace
    decision = response.decision
    if decision is not None:
        decision = replace(decision, conclusions=[
            replace(c, premise_ids=ids(c.premise_ids)) for c in decision.conclusions
        ])
    return replace(
        response,
        premises=[replace(p, id=mapping.get(p.id, p.id)) for p in response.premises],
        steps=[replace(s, premise_ids=ids(s.premise_ids)) for s in response.steps],
        branches=[replace(b, premise_ids=ids(b.premise_ids)) for b in response.branches],
        decision=decision,
    )


def _constraints_doc(constraints: Sequence[Constraint]) -> list[dict[str, Any]]:
    """Constraints as stored in the session state (plain JSON), so a later plan compares equal."""
    doc: list[dict[str, Any]] = msgspec.json.decode(msgspec.json.encode(constraints))
    return doc


def _decode_ms(result: ReasonResult) -> float:
    return float(result.timings.get("prefill", 0.0)) + float(result.timings.get("decode", 0.0))


class _Turn(msgspec.Struct, kw_only=True):
    """A turn as kept in ``sessions.state["turns"]`` (JSON)."""

    turn: int
    prompt: str
    options: dict[str, Any]
    run_id: str
    premises: dict[str, str]
    result: dict[str, Any]
    constraints: list[dict[str, Any]]
    full_decode_ms: float
    runs: list[str]


class SessionService:
    """The operations behind ``/v1/sessions`` and ``/v1/runs/{id}/feedback`` for one caller."""

    def __init__(
        self,
        workspace: SessionWorkspace,
        runs: RunService,
        pending: PendingConfirmations,
        settings: Settings,
        *,
        tenant_id: str,
        key_id: str | None,
        hints: JobHints,
    ) -> None:
        self.ws = workspace
        self.runs = runs
        self.pending = pending
        self.runtime = workspace.runtime
        self.settings = settings
        self.tenant_id = tenant_id
        self.key_id = key_id
        self.hints = hints
        self.factory: async_sessionmaker[AsyncSession] = self.runtime.sessionmaker
        self.ttl = float(settings.session_idle_ttl_s)

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

    async def _load(self, db: AsyncSession, session_id: str, *, for_update: bool = False) -> SessionRow:
        """The caller's live session; an expired one is closed (in its own transaction) and 404s."""
        try:
            return await repo.get_session(db, self.tenant_id, session_id, idle_ttl_s=self.ttl,
                                          for_update=for_update)
        except repo.SessionExpired:
            async with transaction(self.factory) as other:
                await repo.expire_idle_sessions(other, idle_ttl_s=self.ttl, tenant_id=self.tenant_id)
            raise

    async def _session_out(self, db: AsyncSession, row: SessionRow) -> SessionOut:
        premises = await repo.list_premises(db, self.tenant_id, row.id)
        runs = await repo.list_session_runs(db, self.tenant_id, row.id)
        turns = [msgspec.convert(t, _Turn) for t in row.state.get("turns", [])]
        current = None
        if turns:
            last = turns[-1]
            current = _answer_out(msgspec.to_builtins(last), msgspec.convert(last.result, ReasonResult))
        return SessionOut(
            id=row.id,
            domain=row.domain,
            profile=msgspec.convert(row.state["profile"], Profile) if row.state.get("profile") else None,
            created_at=row.created_at,
            last_active_at=row.last_active_at,
            expires_at=row.last_active_at + timedelta(seconds=self.ttl),
            premises=[_premise_out(p) for p in premises],
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

    async def retract_premise(self, session_id: str, premise_id: str) -> TurnResult:
        async with self.ws.lock(session_id):
            async with transaction(self.factory) as db:
                row = await self._load(db, session_id)
                await repo.get_premise(db, self.tenant_id, session_id, premise_id)
            return await self._change_premise(row, premise_id, "retracted", reason="api")

    async def amend_premise(self, session_id: str, premise_id: str, data: PremiseAmend) -> TurnResult:
        if data.value is None and data.text is None:
            raise InvalidInput("an amendment needs a new value or a new text")
        async with self.ws.lock(session_id):
            async with transaction(self.factory) as db:
                row = await self._load(db, session_id)
                await repo.get_premise(db, self.tenant_id, session_id, premise_id)
            return await self._change_premise(row, premise_id, "amended", value=data.value, text=data.text,
                                              reason="api")

    def _plan(self, reasoner: Reasoner, row: SessionRow, prompt: str, options: ReasonOptions, index: Any,
              excluded: Sequence[str] = (), overrides: Mapping[str, str] | None = None) -> Plan:
        """Plan a turn under the session's profile and feedback policy (the run service's planning hook)."""
        policy = msgspec.convert(row.state.get("policy") or {}, SessionPolicy)
        plan = reasoner.plan(
            prompt, options=options, domain_index=index, defaults=_profile_defaults(row.state.get("profile")),
            excluded_premise_ids=tuple(excluded), premise_overrides=dict(overrides or {}), tenant=self.tenant_id,
        )
        return _apply_policy(plan, policy)

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
            turn = _Turn(
                turn=number, prompt=prompt, options=msgspec.to_builtins(options), run_id=run_id,
                premises=mapping, result=msgspec.to_builtins(result),
                constraints=_constraints_doc(plan.active_constraints), full_decode_ms=_decode_ms(result),
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
                branches=_traces(result, mapping, None) if result.decode is not None else [],
                answer=result.answer, premise_status=statuses, conclusions=_conclusions(result, mapping),
            )
            _policy_marks(dag, number, row.state)
            state = {**session.state, "turns": [*turns, msgspec.to_builtins(turn)]}
            await repo.save_session(db, session, expected_active_at=expected, dag=dag, state=state)
            premises = [_premise_out(r) for r in await repo.list_premises(db, self.tenant_id, row.id)]
        return TurnResult(
            session_id=row.id, kind="reason", status=str(result.status), run_id=run_id,
            answer=_answer_out(msgspec.to_builtins(turn), result), premises=premises,
            message=result.conflict or "",
            response=self._response(run_id, plan, result, model, row.id, record_ms, mapping),
        )

    async def _ask_confirmation(
        self, row: SessionRow, prompt: str, candidates: Sequence[PremiseRow], match: RetractionMatch
    ) -> TurnResult:
        """Record the ambiguity and open a confirmation (listed at /v1/confirmations) instead of guessing."""
        async with transaction(self.factory) as db:
            session = await self._load(db, row.id, for_update=True)
            await self.pending.open_premise(
                db, tenant_id=self.tenant_id, key_id=self.key_id, session_id=row.id,
                prompt=prompt, match_kind=match.kind, new_value=match.new_value,
                candidates=[repo.premise_from_row(c) for c in candidates],
            )
            await append_event(
                db, tenant_id=self.tenant_id, event_type="session.retraction_ambiguous", subject_type="session",
                subject_id=row.id, payload={"prompt": prompt, "candidates": [c.id for c in candidates]},
            )
            premises = [_premise_out(r) for r in await repo.list_premises(db, self.tenant_id, session.id)]
        return TurnResult(
            session_id=row.id, kind="confirmation", status=str(Status.NEEDS_CONFIRMATION), run_id=None,
            answer=None, premises=premises, candidates=[_premise_out(c) for c in candidates],
            message="the turn matches more than one premise; retract or amend one of the candidates by id "
                    "(DELETE or PATCH /v1/sessions/{id}/premises/{premise_id})",
        )

    async def _change_premise(self, row: SessionRow, premise_id: str, status: str, *, value: str | None = None,
                              text: str | None = None, reason: str, model: LoadedModel | None = None
                              ) -> TurnResult:
        """Retract or amend one premise, then partially re-run every turn that used it."""
        started = utcnow()
        expected = row.last_active_at
        turns = [msgspec.convert(t, _Turn) for t in row.state.get("turns", [])]
        dag = repo.load_dag(row)
        premise_node = node_id(NodeKind.PREMISE, premise_id)
        affected = dag.descendants(premise_node) if premise_node in dag else frozenset()
        touched = [t for t in turns if any(n.startswith(f"t{t.turn}:") for n in affected)]
        async with transaction(self.factory) as db:
            stored = await repo.list_premises(db, self.tenant_id, row.id)
        # What each premise will be once the change commits (together with the re-runs).
        now = {p.id: (p.status, p.text) for p in stored}
        target = next(p for p in stored if p.id == premise_id)
        if target.status == "retracted":
            raise ConflictError(f"premise {premise_id!r} is already retracted")
        now[premise_id] = (status, text if text is not None else repo.amended_text(target.text, target.value, value))
        index = None
        if touched:
            index = await lookup_domain_index(self.runtime, self.tenant_id, row.domain)
            self.runs.admit(self.hints)
            model = model if model is not None else self.runtime.require_model()
        reruns: list[tuple[_Turn, Plan, ReasonResult, float]] = []
        for t in turns:
            if t not in touched:
                continue
            excluded = [pid for pid, dbid in t.premises.items() if now[dbid][0] == "retracted"]
            overrides = {pid: now[dbid][1] for pid, dbid in t.premises.items() if now[dbid][0] == "amended"}
            assert model is not None, "a turn to re-run has its model"
            reruns.append((t, *await self._rerun(row, t, model, index, excluded, overrides)))
        finished = utcnow()
        return await self._commit_change(row, expected, premise_id, status, value, text, reason, turns, dag,
                                         reruns, started, finished, model)

    async def _rerun(self, row: SessionRow, turn: _Turn, model: LoadedModel, index: Any, excluded: Sequence[str],
                     overrides: Mapping[str, str]) -> tuple[Plan, ReasonResult, float]:
        """One turn planned again under the changed premises and decoded through the run service;
        the milliseconds are its decode's (planning left out)."""
        options = msgspec.convert(turn.options, ReasonOptions)
        previous = msgspec.convert(turn.result, ReasonResult)
        planned: list[float] = []
        # rerun reuses exactly the branches whose prompt is unchanged (premise texts included)
        # and decodes everything when the shared prefix (constraints after feedback) moved.
        plan, result = await self.runs.plan_and_decode(
            lambda reasoner: self._plan(reasoner, row, turn.prompt, options, index, excluded, overrides),
            model, self.hints, self.tenant_id, index=index,
            on_plan=lambda _: planned.append(time.perf_counter()), previous=previous, session_id=row.id,
        )
        return plan, result, (time.perf_counter() - planned[0]) * 1000

    async def _commit_change(self, row: SessionRow, expected: datetime, premise_id: str, status: str,
                             value: str | None, text: str | None, reason: str, turns: list[_Turn],
                             dag: ReasoningDag, reruns: list[tuple[_Turn, Plan, ReasonResult, float]],
                             started: datetime, finished: datetime, model: LoadedModel | None) -> TurnResult:
        """Store a premise change and its re-runs in one transaction (``model``: the re-runs' model,
        None when nothing was re-run)."""
        kind: Literal["retraction", "amendment"] = "retraction" if status == "retracted" else "amendment"
        recomputed: list[str] = []
        reused: list[str] = []
        elapsed = 0.0
        full_estimate = 0.0
        removed: list[str] = []
        last_run: str | None = None
        record_ms = 0.0
        changed_turn = 0
        async with transaction(self.factory) as db:
            session = await self._load(db, row.id, for_update=True)
            target = await repo.get_premise(db, self.tenant_id, row.id, premise_id)
            await repo.set_premise_status(db, target, status, value=value, text=text, reason=reason)
            by_turn = {t.turn: t for t in turns}
            for t, plan, result, ms in reruns:
                run_id = new_id()
                rec_views = set(result.recomputed)
                rows = await repo.list_premises(db, self.tenant_id, row.id)
                mine = [r for r in rows if r.id in t.premises.values()]
                before = dag.turn_nodes(t.turn)
                record_turn(
                    dag, turn=t.turn, premises=[repo.premise_from_row(r) for r in mine],
                    constraints=plan.active_constraints, evidence=[f for s in plan.branches for f in s.facts],
                    branches=_traces(result, t.premises, rec_views), answer=result.answer,
                    premise_status={r.id: r.status for r in mine},
                    conclusions=_conclusions(result, t.premises),
                )
                gone = sorted(n for n in before - dag.turn_nodes(t.turn) if n.split(":")[1] in ("branch", "step"))
                done, kept = _classify(t.turn, result, rec_views, answer_changed=bool(gone or rec_views))
                recomputed += done
                reused += kept
                removed += gone
                elapsed += ms
                full_estimate += t.full_decode_ms
                assert model is not None, "a re-run has its model"
                record = self._record(RunKind.REINFERENCE, plan, result, started, model, TurnRun(
                    session_id=session.id, prompt=t.prompt, options=msgspec.convert(t.options, ReasonOptions),
                    premises=t.premises, finished=finished,
                    reinference=Reinference(
                        started_at=started, ended_at=finished, retracted_premise_ids=(premise_id,),
                        recomputed=tuple(done), reused=tuple(kept), previous_run_id=t.run_id,
                        saved_ms=max(0.0, t.full_decode_ms - ms),
                    ),
                ))
                record_ms = await self.runs.record(db, record, run_id)
                by_turn[t.turn] = msgspec.structs.replace(
                    t, run_id=run_id, result=msgspec.to_builtins(result), runs=[*t.runs, run_id],
                    constraints=_constraints_doc(plan.active_constraints),
                )
                last_run, changed_turn = run_id, t.turn
            if not reruns:
                await append_event(
                    db, tenant_id=self.tenant_id, event_type=f"session.premise_{status}", subject_type="premise",
                    subject_id=premise_id, payload={"session_id": row.id, "recomputed": [], "reason": reason},
                )
            node = node_id(NodeKind.PREMISE, premise_id)
            if node in dag:
                dag.update(node, status=status, text=target.text, value=target.value)
            state = {**session.state, "turns": [msgspec.to_builtins(by_turn[t.turn]) for t in turns]}
            await repo.save_session(db, session, expected_active_at=expected, dag=dag, state=state)
            premises = [_premise_out(r) for r in await repo.list_premises(db, self.tenant_id, row.id)]
        answer = None
        response = None
        if reruns:
            t = by_turn[changed_turn]
            answer = _answer_out(msgspec.to_builtins(t), msgspec.convert(t.result, ReasonResult))
            _, last_plan, last_result, _ = reruns[-1]
            assert model is not None, "a re-run has its model"
            response = self._response(t.run_id, last_plan, last_result, model, row.id, record_ms, t.premises)
        return TurnResult(
            session_id=row.id, kind=kind, status="ok", run_id=last_run, answer=answer, premises=premises,
            reinference=ReinferenceOut(
                turn=changed_turn, previous_run_id=reruns[0][0].run_id if reruns else "",
                changed_premise_ids=[premise_id], recomputed=recomputed, reused=reused, removed=removed,
                elapsed_ms=round(elapsed, 3), full_rerun_estimate_ms=round(full_estimate, 3),
                saved_ms=round(max(0.0, full_estimate - elapsed), 3),
            ),
            message="" if reruns else "no branch or step depended on this premise; nothing was recomputed",
            response=response,
        )

    def _response(self, run_id: str, plan: Plan, result: ReasonResult, model: LoadedModel, session_id: str,
                  record_ms: float, mapping: Mapping[str, str]) -> ReasonResponse:
        """The run in ``/v1/reason``'s shape, ``timings["record"]`` the time storing it took,
        its premise ids the session's (``mapping``: run id -> stored id; see ``_stored_ids``)."""
        response = self.runs.response(run_id, plan, result, model, session_id=session_id)
        response = _stored_ids(response, mapping)
        return msgspec.structs.replace(response, timings={**response.timings, "record": record_ms})

    def _record(self, kind: RunKind, plan: Plan, result: ReasonResult, started: datetime, model: LoadedModel,
                turn: TurnRun) -> RunRecord:
        """The turn's run record (:func:`~app.services.run_output.run_record`, the one builder)."""
        return run_record(plan, result, model.identity, turn, tenant_id=self.tenant_id,
                          key_id=self.key_id, started=started, kind=kind)

    # -- feedback -------------------------------------------------------------------

    async def feedback(self, run_id: str, data: FeedbackCreate) -> FeedbackResult:
        """Fold feedback on a run into its session's policy; always recorded for audit."""
        async with transaction(self.factory) as db:
            run = await run_store.get_run(db, self.tenant_id, run_id)
            session_id = run.session_id
        items = [_feedback_item(i) for i in data.items]
        if session_id is None:
            async with transaction(self.factory) as db:
                event = await append_event(
                    db, tenant_id=self.tenant_id, event_type="run.feedback", subject_type="run", subject_id=run_id,
                    payload={"items": msgspec.to_builtins(data.items), "applied": False, "key_id": self.key_id},
                )
            return FeedbackResult(run_id=run_id, session_id=None, applied=False, changes=[],
                                  audit_event_id=event.id)
        async with self.ws.lock(session_id), transaction(self.factory) as db:
            session = await self._load(db, session_id, for_update=True)
            turn = _turn_of_run(session, run_id)
            policy = msgspec.convert(session.state.get("policy") or {}, SessionPolicy)
            view = _run_view(turn)
            new_policy, changes = apply_feedback(policy, view, items)
            dag = repo.load_dag(session)
            state = {**session.state, "policy": msgspec.to_builtins(new_policy)}
            _policy_marks(dag, int(turn["turn"]), state)
            event = await append_event(
                db, tenant_id=self.tenant_id, event_type="run.feedback", subject_type="run", subject_id=run_id,
                payload={"session_id": session_id, "items": msgspec.to_builtins(data.items), "applied": True,
                         "changes": msgspec.to_builtins(changes), "key_id": self.key_id},
            )
            await repo.save_session(db, session, expected_active_at=session.last_active_at, dag=dag,
                                    state=state)
        return FeedbackResult(
            run_id=run_id, session_id=session_id, applied=True,
            changes=[PolicyChangeOut(target=c.target, field=c.field, before=c.before, after=c.after,
                                     feedback=str(c.feedback)) for c in changes],
            audit_event_id=event.id,
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


def _classify(turn: int, result: ReasonResult, recomputed_views: set[str], *,
              answer_changed: bool) -> tuple[list[str], list[str]]:
    """DAG node ids of a re-run turn, split into recomputed and reused."""
    done: list[str] = []
    kept: list[str] = []
    for spec, branch in zip(result.branch_specs, result.branches):
        ids = [node_id(NodeKind.BRANCH, spec.view, turn=turn), *(_step_node(turn, spec.view, s.id) for s in branch.steps)]
        (done if spec.view in recomputed_views else kept).extend(ids)
    (done if answer_changed else kept).append(node_id(NodeKind.ANSWER, "answer", turn=turn))
    return done, kept


def _feedback_item(item: Any) -> Feedback:
    constraint = None
    if item.constraint is not None:
        try:
            kind = Kind(item.constraint.kind)
        except ValueError:
            raise InvalidInput(f"unknown constraint kind {item.constraint.kind!r}", field="constraint.kind") from None
        constraint = Constraint(id="feedback", kind=kind, params=dict(item.constraint.params),
                                hardness=Hardness(item.constraint.hardness))
    return Feedback(kind=FeedbackKind(item.kind), constraint_id=item.constraint_id, constraint=constraint,
                    step_id=item.step_id, comment=item.comment)


def _turn_of_run(session: SessionRow, run_id: str) -> dict[str, Any]:
    for t in session.state.get("turns", []):
        if run_id in t.get("runs", []):
            return dict(t)
    raise InvalidInput(f"run {run_id!r} is not a turn of session {session.id!r}")


def _run_view(turn: Mapping[str, Any]) -> RunView:
    """Constraints, verdicts and step ids (as the API shows them) of a turn's latest run."""
    result = msgspec.convert(turn["result"], ReasonResult)
    number = int(turn["turn"])
    step_views = {
        _step_node(number, spec.view, s.id): spec.view
        for spec, branch in zip(result.branch_specs, result.branches)
        for s in branch.steps
    }
    step_views.update({f"{spec.view}/{s.id}": spec.view
                       for spec, branch in zip(result.branch_specs, result.branches) for s in branch.steps})
    return RunView(
        constraints=tuple(msgspec.convert(c, Constraint) for c in turn.get("constraints", [])),
        verdicts=result.verdicts,
        step_views=step_views,
    )


def _policy_marks(dag: ReasoningDag, turn: int, state: Mapping[str, Any]) -> None:
    """Show the session policy on a turn's constraint and branch nodes (weight, priority, disabled)."""
    policy = msgspec.convert(state.get("policy") or {}, SessionPolicy)
    for node in dag.nodes(NodeKind.CONSTRAINT):
        if node.attrs.get("turn") != turn:
            continue
        probe = Constraint(id="probe", kind=Kind(node.attrs["kind"]), params=node.attrs.get("params") or {})
        adj = policy.adjustment(probe)
        dag.update(node.id, priority=adj.priority, weight_factor=adj.weight_factor, disabled=adj.disabled)
    for node in dag.nodes(NodeKind.BRANCH):
        if node.attrs.get("turn") == turn:
            dag.update(node.id, view_weight=policy.view_weight(node.label))


def _apply_policy(plan: Plan, policy: SessionPolicy) -> Plan:
    """The plan with the session's feedback applied to its constraints and branch relevance.

    The graph is built again over the adjusted constraints; the edges the
    analysis drew beyond the rules (the domain ontology's) are kept.
    """
    if not policy.adjustments and not policy.added and not policy.view_weights:
        return plan
    constraints = policy.adjust_constraints(plan.analysis.constraints)
    analysis = rebuild_graph(plan.analysis, constraints, prompt=plan.prompt)
    branches = tuple(
        msgspec.structs.replace(b, relevance=b.relevance * policy.view_weight(b.view)) for b in plan.branches
    )
    return dataclasses.replace(plan, analysis=analysis, branches=branches)

