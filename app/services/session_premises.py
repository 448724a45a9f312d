"""Session premise changes: retraction and amendment with partial re-inference.

A change (by a natural-language turn or through the API) recomputes only what
depends on the changed premise: each turn that used it is planned again
without it (or with its new text) and decoded through the run service, which
reuses the branches whose prompt is unchanged; a premise no branch saw
recomputes nothing and runs no model at all. A turn that matches more than one
premise opens a confirmation instead of guessing. The change, the re-runs'
records, the DAG and the state are stored in one transaction.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

import msgspec

from app.schemas.sessions import PremiseAmend, ReinferenceOut, TurnResult
from app.services.run_output import TurnRun
from app.services.runs import lookup_domain_index
from app.services.session_core import (
    SessionCore,
    StoredTurn,
    answer_out,
    constraints_doc,
    premise_out,
)
from app.services.session_dag import branch_traces, classify_nodes, conclusion_traces
from inference.loader import LoadedModel
from inference.pipeline import Plan, ReasonOptions, ReasonResult
from reasoning.analysis import Status
from reasoning.dag import NodeKind, ReasoningDag, node_id, record_turn
from reasoning.errors import ConflictError, InvalidInput
from reasoning.premises import RetractionMatch
from reasoning.provenance.record import Reinference, RunKind
from store import sessions as repo
from store.audit import append_event
from store.db import transaction
from store.models import Premise as PremiseRow
from store.models import Session as SessionRow
from store.models import new_id, utcnow

__all__ = ["PremiseChanges"]


class PremiseChanges(SessionCore):
    """Retracting and amending a session's premises, and re-running what depended on them."""

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
            premises = [premise_out(r) for r in await repo.list_premises(db, self.tenant_id, session.id)]
        return TurnResult(
            session_id=row.id, kind="confirmation", status=str(Status.NEEDS_CONFIRMATION), run_id=None,
            answer=None, premises=premises, candidates=[premise_out(c) for c in candidates],
            message="the turn matches more than one premise; retract or amend one of the candidates by id "
                    "(DELETE or PATCH /v1/sessions/{id}/premises/{premise_id})",
        )

    async def _change_premise(self, row: SessionRow, premise_id: str, status: str, *, value: str | None = None,
                              text: str | None = None, reason: str, model: LoadedModel | None = None
                              ) -> TurnResult:
        """Retract or amend one premise, then partially re-run every turn that used it."""
        started = utcnow()
        expected = row.last_active_at
        turns = [msgspec.convert(t, StoredTurn) for t in row.state.get("turns", [])]
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
        reruns: list[tuple[StoredTurn, Plan, ReasonResult, float]] = []
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

    async def _rerun(self, row: SessionRow, turn: StoredTurn, model: LoadedModel, index: Any, excluded: Sequence[str],
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
                             value: str | None, text: str | None, reason: str, turns: list[StoredTurn],
                             dag: ReasoningDag, reruns: list[tuple[StoredTurn, Plan, ReasonResult, float]],
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
                    branches=branch_traces(result, t.premises, rec_views), answer=result.answer,
                    premise_status={r.id: r.status for r in mine},
                    conclusions=conclusion_traces(result, t.premises),
                )
                gone = sorted(n for n in before - dag.turn_nodes(t.turn) if n.split(":")[1] in ("branch", "step"))
                done, kept = classify_nodes(t.turn, result, rec_views, answer_changed=bool(gone or rec_views))
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
                    constraints=constraints_doc(plan.active_constraints),
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
            premises = [premise_out(r) for r in await repo.list_premises(db, self.tenant_id, row.id)]
        answer = None
        response = None
        if reruns:
            t = by_turn[changed_turn]
            answer = answer_out(msgspec.to_builtins(t), msgspec.convert(t.result, ReasonResult))
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
