"""What every session job shares: the turn locks, a turn's stored state, the API shapes of
premises and answers, and the service base that loads a session, plans a turn under its policy
and builds a turn run's response and record.

:class:`SessionCore` is the base of :class:`app.services.sessions.SessionService`; the
premise changes (:mod:`app.services.session_premises`) and feedback
(:mod:`app.services.session_feedback`) are its other parts.
"""

from __future__ import annotations

import asyncio
import dataclasses
import weakref
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import msgspec
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.runtime import Runtime
from app.schemas.constraints import Profile
from app.schemas.reason import ReasonResponse
from app.schemas.sessions import AnswerOut, PremiseOut, TurnBranchOut, TurnStepOut, VerdictOut
from app.services.pending import PendingConfirmations
from app.services.run_output import TurnRun, run_record
from app.services.runs import RunService, profile_defaults
from app.services.session_dag import step_node
from app.settings import Settings
from inference.loader import LoadedModel
from inference.pipeline import Plan, Reasoner, ReasonOptions, ReasonResult
from inference.scheduler import JobHints
from reasoning.constraints.model import Constraint
from reasoning.feedback import SessionPolicy
from reasoning.provenance.record import RunKind, RunRecord
from reasoning.regraph import rebuild_graph
from store import sessions as repo
from store.db import transaction
from store.models import Premise as PremiseRow
from store.models import Session as SessionRow

__all__ = [
    "SessionCore",
    "SessionWorkspace",
    "StoredTurn",
    "answer_out",
    "apply_policy",
    "constraints_doc",
    "decode_ms",
    "premise_out",
    "profile_constraints",
    "stored_ids",
]


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


def profile_constraints(profile: Mapping[str, Any] | None) -> tuple[Constraint, ...]:
    """The defaults of the profile a session stores (plain JSON) as constraints."""
    if not profile:
        return ()
    return profile_defaults(msgspec.convert(profile, Profile))


def premise_out(row: PremiseRow) -> PremiseOut:
    """A stored premise as the API shows it (its turn and history from the row's data)."""
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


def answer_out(turn: Mapping[str, Any], result: ReasonResult) -> AnswerOut:
    """A stored turn's answer as the API shows it: step ids as DAG nodes, premise ids the stored ones."""
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
                    id=step_node(int(turn["turn"]), spec.view, s.id),
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


def stored_ids(response: ReasonResponse, mapping: Mapping[str, str]) -> ReasonResponse:
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


def constraints_doc(constraints: Sequence[Constraint]) -> list[dict[str, Any]]:
    """Constraints as stored in the session state (plain JSON), so a later plan compares equal."""
    doc: list[dict[str, Any]] = msgspec.json.decode(msgspec.json.encode(constraints))
    return doc


def decode_ms(result: ReasonResult) -> float:
    """The milliseconds a run spent in prefill and decode (what a partial re-run is compared with)."""
    return float(result.timings.get("prefill", 0.0)) + float(result.timings.get("decode", 0.0))


class StoredTurn(msgspec.Struct, kw_only=True):
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


def apply_policy(plan: Plan, policy: SessionPolicy) -> Plan:
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


class SessionCore:
    """The state and the shared steps of the session operations for one caller."""

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

    async def _load(self, db: AsyncSession, session_id: str, *, for_update: bool = False) -> SessionRow:
        """The caller's live session; an expired one is closed (in its own transaction) and 404s."""
        try:
            return await repo.get_session(db, self.tenant_id, session_id, idle_ttl_s=self.ttl,
                                          for_update=for_update)
        except repo.SessionExpired:
            async with transaction(self.factory) as other:
                await repo.expire_idle_sessions(other, idle_ttl_s=self.ttl, tenant_id=self.tenant_id)
            raise

    def _plan(self, reasoner: Reasoner, row: SessionRow, prompt: str, options: ReasonOptions, index: Any,
              excluded: Sequence[str] = (), overrides: Mapping[str, str] | None = None) -> Plan:
        """Plan a turn under the session's profile and feedback policy (the run service's planning hook)."""
        policy = msgspec.convert(row.state.get("policy") or {}, SessionPolicy)
        plan = reasoner.plan(
            prompt, options=options, domain_index=index, defaults=profile_constraints(row.state.get("profile")),
            excluded_premise_ids=tuple(excluded), premise_overrides=dict(overrides or {}), tenant=self.tenant_id,
        )
        return apply_policy(plan, policy)

    def _response(self, run_id: str, plan: Plan, result: ReasonResult, model: LoadedModel, session_id: str,
                  record_ms: float, mapping: Mapping[str, str]) -> ReasonResponse:
        """The run in ``/v1/reason``'s shape, ``timings["record"]`` the time storing it took,
        its premise ids the session's (``mapping``: run id -> stored id; see ``stored_ids``)."""
        response = self.runs.response(run_id, plan, result, model, session_id=session_id)
        response = stored_ids(response, mapping)
        return msgspec.structs.replace(response, timings={**response.timings, "record": record_ms})

    def _record(self, kind: RunKind, plan: Plan, result: ReasonResult, started: datetime, model: LoadedModel,
                turn: TurnRun) -> RunRecord:
        """The turn's run record (:func:`~app.services.run_output.run_record`, the one builder)."""
        return run_record(plan, result, model.identity, turn, tenant_id=self.tenant_id,
                          key_id=self.key_id, started=started, kind=kind)
